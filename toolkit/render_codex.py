"""Render a Codex CLI rollout for ``show`` and ``export --format md``.

The conversation a user saw (SOURCES-AGENTS §2.8): each typed prompt, answer, reasoning step and
tool call once, in file order, picked by :func:`toolkit.layouts.codex_seen.decide`; injected
context, developer messages and the UI's bookkeeping are left out (``export --format jsonl``
keeps every line).  A fork's replay of its parent is marked.  Two streaming passes: the first
sketches each record (a few digests), the second renders.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .journal import iter_records, scan_journal
from .layouts.codex_seen import as_envelope, decide, message_text, sketch, summary_texts, typed_start, user_item_text
from .render import _demote, _fenced, _summary, _text, dumps, you_and_added


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) and isinstance(b.get("text"), str)
                         else f"[{_text(b.get('type')) if isinstance(b, dict) else 'item'}]" for b in output)
    return dumps(output).decode() if output is not None else ""


def _images(payload: dict) -> list[str]:
    images = payload.get("images") if isinstance(payload.get("images"), list) else []
    local = payload.get("local_images") if isinstance(payload.get("local_images"), list) else []
    return [f"_[image{', ' + _text(p) if isinstance(p, str) and not p.startswith('data:') else ''}]_" for p in images + local]


def _split(text: str) -> list[tuple[bool, str]]:
    """A prompt's text as (added, Markdown) parts: an IDE's context, then what the person typed."""
    start = typed_start(text)
    if start is None:
        return [(True, _demote(text))]
    return ([(True, _demote(text[:start]))] if start else []) + [(False, _demote(text[start:]))]


def _prompt(payload: dict) -> list[tuple[bool, str]]:
    if payload.get("type") == "user_message":
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        return _split(text) + [(False, image) for image in _images(payload)]
    if payload.get("type") == "item_completed":
        return _split(user_item_text(payload.get("item")) or "")
    parts = []
    for block in payload.get("content") if isinstance(payload.get("content"), list) else []:
        if isinstance(block, dict) and block.get("type") == "input_text" and isinstance(block.get("text"), str):
            parts += _split(block["text"])
        elif isinstance(block, dict) and block.get("type") == "input_image":
            parts.append((False, "_[image]_"))
    return parts


def _call(payload: dict) -> str:
    kind = payload.get("type")
    if kind == "web_search_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        return f"> 🔎 **web search** `{_summary(action.get('query') or action.get('url') or action.get('type'), 160)}`"
    arguments = payload.get("arguments", payload.get("input", payload.get("action")))
    return f"> 🔧 **{_text(payload.get('name') or kind)}** `{_summary(arguments, 160)}`"


def _chunk(role: str, record: dict, state: dict) -> str | None:
    payload = record["payload"] if isinstance(record.get("payload"), dict) else {}
    when = _text(record.get("timestamp") or state.get("t"))
    if role == "prompt":
        parts = _prompt(payload)
        if parts and all(added for added, _part in parts):  # only context Codex or the IDE put in: no turn
            state["speaker"] = None
            return f"_(added by the tool · {when})_\n\n" + "\n\n".join(part for _added, part in parts) + "\n\n"
        state["turn"] += 1
        state["speaker"] = "user"
        return f"## Turn {state['turn']} · {when}\n\n{you_and_added(parts)}\n\n"
    if role in ("assistant", "reasoning", "tool_use", "tool_result"):
        heading = ""
        if state["speaker"] != "assistant":
            model = state.get("model")
            heading = f"### Assistant ({_text(model)})\n\n" if model else "### Assistant\n\n"
            state["speaker"] = "assistant"
        return heading + _assistant_part(role, payload) + "\n\n"
    state["speaker"] = None
    if role == "compact":
        message = payload.get("message")
        return "_— conversation compacted —_\n\n" + (f"> {_summary(message, 400)}\n\n" if isinstance(message, str) and message else "")
    if role == "interrupt":
        return f"_— turn interrupted ({_text(payload.get('reason') or 'interrupted')}) —_\n\n"
    if role == "error":
        return f"_error: {_summary(payload.get('message'), 200)}_\n\n"
    return f"_{_text(record.get('type'))}: {_text(payload.get('type') or '')}_\n\n"


def _assistant_part(role: str, payload: dict) -> str:
    if role == "assistant":
        text = payload.get("message") if payload.get("type") == "agent_message" else message_text(payload.get("content"), ("output_text",))
        return _demote(text if isinstance(text, str) else "")
    if role == "reasoning":
        texts = [payload["text"]] if isinstance(payload.get("text"), str) else summary_texts(payload)
        thought = "\n\n".join(texts)
        return f"<details><summary>Reasoning</summary>\n\n{thought}\n\n</details>" if thought else "_(reasoning: encrypted, no summary kept)_"
    if role == "tool_use":
        return _call(payload)
    text = _output_text(payload.get("output"))
    return f"<details><summary>↳ Tool result ({len(text):,} characters)</summary>\n\n{_fenced(text)}\n\n</details>"


def markdown(path: Path, layout, title: object = None) -> Iterator[str]:
    """The rollout as Markdown, chunk by chunk."""
    facts = scan_journal(path, layout).facts
    yield f"# {_text(title) or facts.title or path.stem}\n\n"
    fork = (f"forked from {facts.forked_from_id}" if facts.forked_from_id
            else f"spawned by {facts.parent_id}" if facts.parent_id else None)
    line = " · ".join(_text(part) for part in (facts.cwd, facts.created_at, facts.session_id, facts.source, fork) if part)
    yield f"_{line}_\n\n"
    decisions = decide([sketch(record) for _line, _offset, record in iter_records(path, layout)])
    state = {"turn": 0, "speaker": None, "model": None}
    replay = False
    for (_line, _offset, record), decision in zip(iter_records(path, layout), decisions):
        record = as_envelope(record)  # a pre-envelope rollout's bare line, as the envelope it stands for
        if isinstance(record.get("timestamp"), str):
            state["t"] = record["timestamp"]  # a bare item has no time of its own: the last one seen
        if record.get("type") == "turn_context" and isinstance(record.get("payload"), dict):
            state["model"] = record["payload"].get("model") if isinstance(record["payload"].get("model"), str) else state["model"]
        if decision.inherited != replay:
            replay = decision.inherited
            state["speaker"] = None
            yield ("_— replayed from the parent thread —_\n\n" if replay else "_— this thread's own work starts here —_\n\n")
        if decision.role is None or decision.role == "meta":
            continue
        chunk = _chunk(decision.role, record, state)
        if chunk is not None:
            yield chunk
