"""payload_sketch makes the sketch it always made: the same kind, digests, call and ids for every
envelope type and payload, whatever shape its values take (it makes most of them without
``Sketch.__new__``, by a table of the event kinds)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.layouts.codex_seen import (_CONTEXT, _EVENTS, _OTHER, _TOPS, _UI_ONLY, CALLS, ENDS, INJECTED, OUTPUTS, Sketch,
                                        _digest, message_text, parent_of, payload_sketch, summary_texts, user_item_text)

KINDS = sorted({"user_message", "agent_message", "item_completed", "agent_reasoning", "message", "reasoning", "token_count",
                "task_started", "turn_aborted", "error", "brand_new", *ENDS, *CALLS, *OUTPUTS})
TEXT = st.one_of(st.text(max_size=8), st.sampled_from(["<environment_context>x</environment_context>", "# AGENTS.md instructions"]))
VALUE = st.one_of(st.none(), st.integers(), TEXT, st.lists(st.none() | TEXT, max_size=2), st.dictionaries(TEXT, st.none(), max_size=2))
BLOCK = st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text", "text", "image"]), "text": VALUE})
PAYLOAD = st.fixed_dictionaries({}, optional={
    "type": st.one_of(st.sampled_from(KINDS), VALUE), "message": VALUE, "text": VALUE, "call_id": VALUE, "id": VALUE,
    "role": st.one_of(st.sampled_from(["user", "assistant", "developer"]), VALUE), "content": st.one_of(st.lists(BLOCK, max_size=3), VALUE),
    "summary": st.one_of(st.lists(st.fixed_dictionaries({"type": st.just("summary_text"), "text": VALUE}), max_size=3), VALUE),
    "item": st.one_of(st.fixed_dictionaries({"type": st.just("UserMessage"), "content": st.lists(BLOCK, max_size=2)}), VALUE),
    "forked_from_id": VALUE, "source": VALUE})
TOP = st.one_of(st.sampled_from(["event_msg", "response_item", "session_meta", "turn_context", "compacted", "state", "other"]), VALUE)


def _reference(top: object, payload: dict) -> Sketch:
    """payload_sketch as it was written before its sketches were made without Sketch.__new__ (6d2ffba)."""
    kind = payload.get("type")
    if type(kind) is not str:  # (a list or an object there names no kind this knows, and is no set's member)
        kind = None
    if top == "event_msg":
        if kind == "user_message":
            return Sketch("prompt", _digest(payload.get("message")))
        if kind == "agent_message":
            return Sketch("agent", _digest(payload.get("message")))
        if kind in ENDS:
            return Sketch("end", call=payload.get("call_id") if isinstance(payload.get("call_id"), str) else None)
        if kind == "item_completed" and (text := user_item_text(payload.get("item"))) is not None:
            return Sketch("user_item", _digest(text))
        if kind == "agent_reasoning":
            return Sketch("agent_reasoning", _digest(payload.get("text")))
        return _EVENTS.get(kind, _UI_ONLY) if type(kind) is str else _UI_ONLY
    if top == "response_item":
        if kind == "message":
            role = payload.get("role")
            if role == "user":
                text = message_text(payload.get("content"), ("input_text",))
                return Sketch("injected" if text is not None and INJECTED.match(text) else "user", _digest(text))
            if role == "assistant":
                return Sketch("assistant", _digest(message_text(payload.get("content"), ("output_text",))))
            return _CONTEXT  # developer and system messages: never shown
        if kind == "reasoning":
            texts = summary_texts(payload)
            return Sketch("reasoning", _digest("\n".join(texts)) if texts else b"", frozenset(map(_digest, texts)))
        if kind in CALLS:
            return Sketch("call", call=payload.get("call_id") if isinstance(payload.get("call_id"), str) else None)
        if kind in OUTPUTS:
            return Sketch("output", call=payload.get("call_id") if isinstance(payload.get("call_id"), str) else None)
        return _OTHER
    if top == "session_meta":
        ident = payload.get("id") if isinstance(payload.get("id"), str) else None
        return Sketch("session_meta", ident=ident, parent=parent_of(payload))
    return _TOPS.get(top, _OTHER) if type(top) is str else _OTHER  # a type newer than this reader: kept as an event


@settings(max_examples=400, deadline=None)
@given(top=TOP, payload=PAYLOAD)
def test_the_same_sketch_as_before(top, payload):
    assert payload_sketch(top, payload) == _reference(top, payload)
    assert type(payload_sketch(top, payload)) is Sketch
