"""The conversation a user saw in a Codex CLI rollout (SOURCES-AGENTS.md §2.8, §2.9).

A rollout writes most things twice: the UI's ``event_msg`` stream and the model's
``response_item`` history.  :func:`decide` picks one stream per kind and lets the other only
fill gaps, so each prompt, answer, reasoning step and tool call is shown (and imported) once:

==============  ===========================================  ==================================
kind            primary                                      used only when the primary is absent
==============  ===========================================  ==================================
typed prompt    ``event_msg user_message``                   ``item_completed`` UserMessage;
                                                             in a rollout with neither, user
                                                             ``message``s not opening with an
                                                             injected tag
assistant text  assistant ``message`` (with ``phase``)       ``agent_message``
reasoning       ``reasoning``                                ``agent_reasoning``
tools           ``function_call`` / ``custom_tool_call`` /   ``*_end`` events with a call_id no
                ``web_search_call`` and their outputs        call of the file has
==============  ===========================================  ==================================

Two items are mirrors when their texts are equal and they are at most three records apart
(§2.8 "Mirror test"); pairs are matched one to one, nearest first.  A primary's *group* is the
earliest record of its pair: an importer keys the record by it, so a copy imported before its
mirror was written is not imported again once the mirror appears.

A fork (§2.9: ``forked_from_id`` on the first ``session_meta``, or a spawned child's nested
``source.subagent.thread_spawn.parent_thread_id``: :func:`parent_of`) begins with a replay of its
parent: from the parent's ``session_meta`` (the second one) to the ``task_started`` that opens
the child's own work.  Items there are *inherited*.

Memory stays small: :func:`sketch` reduces each record to a few digests, and
:func:`decide_stream` decides record after record holding a window of them (a mirror is at most
MIRROR_WINDOW away), given the three facts that need the whole file; :func:`decide` is the same
over a list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from ..digest import blake2b

MIRROR_WINDOW = 3
#: Text Codex injects as a user-role message (AGENTS.md, environment, aborted-turn markers,
#: shell commands the user ran): never a typed prompt.
INJECTED = re.compile(r"^\s*(<[A-Za-z_][\w-]*[\s>/]|# AGENTS\.md instructions)")
#: Context an IDE extension or an ``@`` file mention puts before a prompt, in the prompt's own
#: text; what the person typed follows REQUEST_MARK.
CONTEXT_HEAD = re.compile(r"^\s*# (Context from my IDE setup|Files mentioned by the user):")
REQUEST_MARK = re.compile(r"^## My request for Codex:[ \t]*(\r?\n)?", re.M)
CALLS = frozenset({"function_call", "custom_tool_call", "web_search_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
ENDS = frozenset({"exec_command_end", "mcp_tool_call_end", "patch_apply_end", "web_search_end", "view_image_tool_call"})
UI_ONLY = frozenset({"task_started", "task_complete", "token_count", "context_compacted", "exec_command_begin",
                     "mcp_tool_call_begin", "patch_apply_begin", "web_search_begin", "item_started", "item_completed",
                     "agent_message_delta", "agent_reasoning_delta", "agent_reasoning_section_break",
                     "agent_reasoning_raw_content", "background_event", "stream_error", "plan_update", "warning"})


class Sketch(NamedTuple):
    """What :func:`decide` needs from one record: its kind and the digest of its text.  (A named
    tuple: one is made per record of every rollout read, and a tuple is the cheapest to make.)"""

    kind: str              # "prompt", "user", "assistant", "agent", "reasoning", "agent_reasoning", "call", …
    text: bytes = b""      # digest of the text a mirror must match ("" when it has none)
    alt: frozenset = frozenset()  # reasoning: digests of its summary parts
    call: str | None = None
    ident: str | None = None  # session_meta: its id; the first one: forked_from_id in ``parent``
    parent: str | None = None


class Decision(NamedTuple):
    """What becomes of one record: ``role`` (a record to write) or ``skip`` (why not)."""

    role: str | None       # prompt | assistant | reasoning | tool_use | tool_result | compact | interrupt | error | other | meta
    skip: str | None       # mirror | context | ui-only | meta-copy
    group: int             # the record that keys it (the earliest of its mirror pair)
    inherited: bool = False


#: The keys of a pre-envelope rollout's first line (Codex before the ``{timestamp, type, payload}``
#: envelope, mid-2025): its session metadata, bare.
LEGACY_META_KEYS = frozenset({"id", "timestamp", "instructions", "git"})
_UUID_TEXT = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def is_legacy_meta(obj: object) -> bool:
    """A pre-envelope rollout's first line: ``{"id", "timestamp", "instructions"?, "git"?}`` and no
    other key (a bare ``{"id", "timestamp"}`` only with a UUID id: a Logician entry carries more)."""
    if type(obj) is not dict or not isinstance(obj.get("id"), str) or not isinstance(obj.get("timestamp"), str):
        return False
    keys = set(obj)
    return keys <= LEGACY_META_KEYS and (len(keys) > 2 or bool(_UUID_TEXT.match(obj["id"])))


def is_legacy_line(obj: object) -> bool:
    """A later line of a pre-envelope rollout: a bare response item (a string ``type``, no
    ``payload``) or a ``{"record_type": "state"}`` marker."""
    if type(obj) is not dict or "payload" in obj:
        return False
    return isinstance(obj.get("record_type"), str) or (isinstance(obj.get("type"), str) and "timestamp" not in obj)


_CWD = re.compile(r"<environment_context>.*?Current working directory: ([^\n<]+)", re.S)


def context_cwd(text: object) -> str | None:
    """The working folder an ``<environment_context>`` message names (a pre-envelope rollout's
    metadata has no cwd: this is where it says its project)."""
    match = _CWD.search(text) if isinstance(text, str) else None
    return match.group(1).strip() or None if match else None


def as_envelope(record: object) -> object:
    """A pre-envelope line as the envelope it stands for (the others as they are): the first line
    is ``session_meta``, a bare item ``response_item``, a ``record_type`` marker ``state``."""
    if type(record) is not dict or "payload" in record:
        return record
    if is_legacy_meta(record):
        return {"timestamp": record["timestamp"], "type": "session_meta", "payload": record}
    if isinstance(record.get("record_type"), str):
        return {"type": "state", "payload": record}
    if isinstance(record.get("type"), str) and "timestamp" not in record:
        return {"type": "response_item", "payload": record}
    return record


def _digest(text: object) -> bytes:
    """A text's digest as every process makes it (BLAKE2b, 12 bytes): what a kept decider holds."""
    if not isinstance(text, str):
        return b""
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).digest()


_M64 = (1 << 64) - 1


def salted(text: object) -> bytes:
    """A text's digest within this process (and the workers it forks): its length and Python's
    keyed ``hash`` (SipHash, its key drawn at random when the interpreter starts), 12 bytes like
    :func:`_digest`'s.  The same texts, the same digest; two texts of one length that differ
    meet with odds of one in 2**64, and no one who writes a rollout can aim at it without the
    key.  A first import of 81 real rollouts ran 2 % fewer instructions with it than with
    :func:`_digest`'s UTF-8 encoding and BLAKE2b of each message (callgrind, the same journals).
    Nothing digested so is kept: a decider kept for a later import holds :func:`kept_sketch`es
    made again with :func:`_digest`."""
    if not isinstance(text, str):
        return b""
    return ((hash(text) & _M64) | (len(text) & 0xFFFFFFFF) << 64).to_bytes(12, "little")


def within_process() -> Callable[[object], bytes]:
    """The digest a reader's sketches use when nothing of them leaves the process but a kept
    decider (:func:`payload_sketch`'s ``digest``): :func:`salted`, unless ``PYTHONHASHSEED``
    fixes the key (a key anyone may know: then :func:`_digest`)."""
    return salted if os.environ.get("PYTHONHASHSEED", "random") == "random" else _digest


def message_text(content: object, kinds: tuple[str, ...]) -> str | None:
    """The text parts of a ``message``'s content, joined (None when it has no text part)."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else None
    parts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)]
    return "\n".join(parts) if parts else None


def user_item_text(item: object) -> str | None:
    """The text of an ``item_completed`` UserMessage item (paginated rollouts), or None."""
    if not isinstance(item, dict) or item.get("type") != "UserMessage":
        return None
    for key in ("text", "message"):
        if isinstance(item.get(key), str):
            return item[key]
    return message_text(item.get("content"), ("text", "input_text"))


def parent_of(payload: object) -> str | None:
    """The thread a rollout was forked or spawned from, by its ``session_meta`` payload:
    ``forked_from_id`` at the top, else a ``parent_thread_id`` nested in ``source`` (a spawned
    subagent: ``source.subagent.thread_spawn.parent_thread_id``); None for a thread of its own."""
    if not isinstance(payload, dict):
        return None
    for key in ("forked_from_id", "parent_thread_id"):
        if isinstance(payload.get(key), str) and payload[key]:
            return payload[key]
    found, depth = [payload.get("source")], 0
    while found and depth < 4:  # a few levels at most: never a walk of an unbounded value
        nested = []
        for value in found:
            if isinstance(value, dict):
                if isinstance(value.get("parent_thread_id"), str) and value["parent_thread_id"]:
                    return value["parent_thread_id"]
                nested += [v for v in value.values() if isinstance(v, dict)]
        found, depth = nested, depth + 1
    return None


def typed_start(text: str) -> int | None:
    """The one rule for a Codex prompt's text (ls, show, import, titles): where what the person
    typed starts in it (0: all of it), or None when all of it was added (``<environment_context>``,
    ``<user_instructions>``, ``# AGENTS.md instructions``, an IDE's context with no request)."""
    if INJECTED.match(text):
        return None
    if CONTEXT_HEAD.match(text):
        mark = REQUEST_MARK.search(text)
        return mark.end() if mark is not None and text[mark.end():].strip() else None
    return 0


def typed_prompt(text: object) -> str | None:
    """What the person typed in a prompt's text, or None (not text, or all of it added)."""
    if not isinstance(text, str):
        return None
    start = typed_start(text)
    return None if start is None else text[start:]


def summary_texts(payload: dict) -> list[str]:
    summary = payload.get("summary")
    return [s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)] if isinstance(summary, list) else []


#: The sketches of records without a text, call or id: one each, shared (a sketch is immutable).
_OTHER, _CONTEXT, _COMPACT, _UI_ONLY = Sketch("other"), Sketch("context"), Sketch("compact"), Sketch("ui-only")
_EVENTS = {"turn_aborted": Sketch("interrupt"), "error": Sketch("error"), "task_started": Sketch("task_started")}
_TOPS = {"turn_context": _CONTEXT, "compacted": _COMPACT, "state": _UI_ONLY}  # (state: a pre-envelope rollout's marker)


def sketch(record: object) -> Sketch:
    """Reduce one rollout record (``{timestamp, type, payload}``, or a pre-envelope line) to what
    :func:`decide` needs."""
    return envelope_sketch(as_envelope(record))


def envelope_sketch(record: object) -> Sketch:
    """:func:`sketch` of a record that is an envelope already (:func:`as_envelope`'s)."""
    if type(record) is not dict:
        return _OTHER
    payload = record.get("payload")
    return payload_sketch(record.get("type"), payload if type(payload) is dict else {})


_new = tuple.__new__  # Sketch(...) without its __new__'s frame: a sketch is made for most lines of every rollout
_NO_ALT = Sketch._field_defaults["alt"]
#: event_msg kinds with a sketch of their own (:func:`payload_sketch`), each by a code: one lookup for every kind.
_EVENT_CODES = {"user_message": 1, "agent_message": 2, "item_completed": 3, "agent_reasoning": 4, **dict.fromkeys(ENDS, 5)}


def payload_sketch(top: object, payload: dict, digest: Callable[[object], bytes] = _digest) -> Sketch:
    """:func:`envelope_sketch` of an envelope of type ``top`` whose ``payload`` is a dict; its
    texts digested by ``digest`` (:func:`within_process` for sketches that stay in the process)."""
    kind = payload.get("type")
    if type(kind) is not str:  # (a list or an object there names no kind this knows, and is no set's member)
        kind = None
    if top == "event_msg":
        code = _EVENT_CODES.get(kind)
        if code == 1:
            return _new(Sketch, ("prompt", digest(payload.get("message")), _NO_ALT, None, None, None))
        if code == 2:
            return _new(Sketch, ("agent", digest(payload.get("message")), _NO_ALT, None, None, None))
        if code == 5:
            call = payload.get("call_id")
            return _new(Sketch, ("end", b"", _NO_ALT, call if isinstance(call, str) else None, None, None))
        if code == 3 and (text := user_item_text(payload.get("item"))) is not None:
            return _new(Sketch, ("user_item", digest(text), _NO_ALT, None, None, None))
        if code == 4:
            return _new(Sketch, ("agent_reasoning", digest(payload.get("text")), _NO_ALT, None, None, None))
        return _EVENTS.get(kind, _UI_ONLY) if kind is not None else _UI_ONLY
    if top == "response_item":
        if kind == "message":
            role = payload.get("role")
            if role == "user":
                text = message_text(payload.get("content"), ("input_text",))
                return _new(Sketch, ("injected" if text is not None and INJECTED.match(text) else "user", digest(text), _NO_ALT,
                                     None, None, None))
            if role == "assistant":
                return _new(Sketch, ("assistant", digest(message_text(payload.get("content"), ("output_text",))), _NO_ALT,
                                     None, None, None))
            return _CONTEXT  # developer and system messages: never shown
        if kind == "reasoning":
            texts = summary_texts(payload)
            return Sketch("reasoning", digest("\n".join(texts)) if texts else b"", frozenset(map(digest, texts)))
        if kind in CALLS:
            call = payload.get("call_id")
            return _new(Sketch, ("call", b"", _NO_ALT, call if isinstance(call, str) else None, None, None))
        if kind in OUTPUTS:
            call = payload.get("call_id")
            return _new(Sketch, ("output", b"", _NO_ALT, call if isinstance(call, str) else None, None, None))
        return _OTHER
    if top == "session_meta":
        ident = payload.get("id") if isinstance(payload.get("id"), str) else None
        return Sketch("session_meta", ident=ident, parent=parent_of(payload))
    return _TOPS.get(top, _OTHER) if type(top) is str else _OTHER  # a type newer than this reader: kept as an event


def _same(a: Sketch, b: Sketch) -> bool:
    return a.text == b.text


def _in_summary(a: Sketch, b: Sketch) -> bool:
    return a.text == b.text or a.text in b.alt


#: (secondary kinds, primary kinds, match), one per kind that has two streams; a kind is the
#: secondary of one pairing at most.  The second is used only when prompts were typed.
_PAIRINGS = (({"user_item"}, {"prompt"}, _same), ({"user", "injected"}, {"prompt", "user_item"}, _same),
             ({"agent"}, {"assistant"}, _same), ({"agent_reasoning"}, {"reasoning"}, _in_summary))


class Replay:
    """Which records a fork replays from its parent, fed one sketch at a time: from the parent's
    ``session_meta`` (the second one) to the ``task_started`` that opens the child's own work."""

    def __init__(self) -> None:
        self.count, self.fork, self.start, self.end, self.seen_turn = 0, False, None, None, False

    def feed(self, item: Sketch) -> None:
        i = self.count
        self.count += 1
        if i == 0:
            self.fork = item.kind == "session_meta" and item.parent is not None
        elif not self.fork or self.end is not None:
            return
        elif self.start is None:
            self.start = i if item.kind == "session_meta" else None
        elif item.kind == "task_started" and self.seen_turn:
            self.end = i
        else:
            self.seen_turn = self.seen_turn or item.kind in ("prompt", "user_item", "agent", "assistant")

    @property
    def settled(self) -> bool:
        """Whether the sketches after those fed change nothing but the count (a rollout that is no
        fork, or a fork's replay closed): a reader may count them (:meth:`skip`) instead."""
        return self.count > 0 and (not self.fork or self.end is not None)

    def skip(self, count: int) -> None:
        """Count ``count`` more sketches, once :attr:`settled`."""
        self.count += count

    @property
    def range(self) -> range:
        if not self.fork or self.start is None:
            return range(0)
        return range(self.start, self.count if self.end is None else self.end)


def _replay(sketches: list[Sketch]) -> range:
    """The records a fork replays from its parent (an empty range for a rollout that is no fork)."""
    replay = Replay()
    for item in sketches:
        replay.feed(item)
    return replay.range


def decide(sketches: list[Sketch]) -> list[Decision]:
    """One decision per record, in file order (see the module docstring for the rules)."""
    prompts_typed = any(s.kind in ("prompt", "user_item") for s in sketches)
    calls = {s.call for s in sketches if s.kind == "call" and s.call is not None}
    return list(decide_stream(sketches, prompts_typed=prompts_typed, is_call=calls.__contains__, replay=_replay(sketches)))


def decide_stream(sketches: Iterable[Sketch], *, prompts_typed: bool, is_call: Callable[[str | None], bool],
                  replay: range) -> Iterator[Decision]:
    """:func:`decide` for records read one at a time, given what needs the whole file: whether
    any prompt was typed, which call ids a call has, the replayed range.  A mirror is at most
    MIRROR_WINDOW records away, so each decision is final once the sketches
    2 * MIRROR_WINDOW records on are read: it holds no more than that."""
    decider = Decider(prompts_typed=prompts_typed, is_call=is_call, replay=replay)
    yield from decider.feed(sketches)
    yield from decider.finish()


class Decider:
    """:func:`decide_stream` in two steps (:meth:`feed` the sketches, then :meth:`finish`).  What it
    holds between two sketches (the undecided window and its pairings) can be kept
    (:meth:`snapshot`) and taken up again (:meth:`restore`): fed the same later sketches with the
    same whole-file facts, it decides as one run over the whole file would (a resumed import)."""

    def __init__(self, *, prompts_typed: bool, is_call: Callable[[str | None], bool], replay: range) -> None:
        self.prompts_typed, self.is_call, self.replay = prompts_typed, is_call, replay
        self.pairings = [p for n, p in enumerate(_PAIRINGS) if n != 1 or prompts_typed]
        self.seen: dict[int, Sketch] = {}  # the sketches still needed, by index
        self.taken: list[set[int]] = [set() for _ in self.pairings]  # primaries paired already, per pairing
        self.mirrors: set[int] = set()
        self.group: dict[int, int] = {}  # primary -> its earliest mirror
        self.paired = self.decided = 0  # next secondary to pair, next record to decide
        self.count = 0

    def feed(self, sketches: Iterable[Sketch]) -> Iterator[Decision]:
        """The decisions final once ``sketches`` are read (all but the last few), in file order."""
        seen, prompts_typed, is_call, replay, state = self.seen, self.prompts_typed, self.is_call, self.replay, \
            (self.taken, self.mirrors, self.group)
        for i in self._ready(sketches):
            yield _decision(i, seen.pop(i), prompts_typed, is_call, state, replay)

    def finish(self) -> Iterator[Decision]:
        for i in self._rest():
            yield _decision(i, self.seen.pop(i), self.prompts_typed, self.is_call, (self.taken, self.mirrors, self.group),
                            self.replay)

    def feed_codes(self, sketches: Iterable[Sketch], codes: bytearray, groups: bytearray, code_of: dict) -> None:
        """:meth:`feed`, each decision written as two bytes instead of made a :class:`Decision`:
        ``codes[i] = code_of[role, skip]`` and ``groups[i] = (i - group) + (8 if inherited else 0)``
        (an importer's hot loop: a rollout's every record)."""
        decide = self._code_maker(code_of)
        for i in self._ready(sketches):
            decide(i, codes, groups)

    def finish_codes(self, codes: bytearray, groups: bytearray, code_of: dict) -> None:
        """:meth:`finish`, written as :meth:`feed_codes` writes."""
        decide = self._code_maker(code_of)
        for i in self._rest():
            decide(i, codes, groups)

    def _ready(self, sketches: Iterable[Sketch]) -> Iterator[int]:
        """Take ``sketches``, pairing each record once its whole window is read; each record's
        index once no mirror of it is left to pair (the caller decides it before asking for the next)."""
        window, seen, pairings, taken, mirrors, group = MIRROR_WINDOW, self.seen, self.pairings, self.taken, self.mirrors, self.group
        paired, decided, count = self.paired, self.decided, self.count
        try:
            for item in sketches:
                seen[count] = item
                count += 1
                while paired + window < count:  # its whole window is read
                    if seen[paired].text:  # (else it pairs with nothing)
                        _pair_one(paired, seen, count, pairings, taken, mirrors, group)
                    paired += 1
                while decided + window < paired:  # no mirror of it is left to pair
                    yield decided
                    decided += 1
        finally:
            self.paired, self.decided, self.count = paired, decided, count

    def _rest(self) -> Iterator[int]:
        """After the last sketch: the rest paired, then each undecided record's index."""
        while self.paired < self.count:
            _pair_one(self.paired, self.seen, self.count, self.pairings, self.taken, self.mirrors, self.group)
            self.paired += 1
        while self.decided < self.count:
            self.decided += 1
            yield self.decided - 1

    def _code_maker(self, code_of: dict) -> Callable[[int, bytearray, bytearray], None]:
        """:func:`_decision` of record ``i`` written as :meth:`feed_codes` writes it: :func:`_role_at`'s
        answer, kept by kind for the kinds whose role is their kind's alone."""
        seen, taken, mirrors, group, is_call, typed = self.seen, self.taken, self.mirrors, self.group, self.is_call, self.prompts_typed
        by_kind, mirror = _kind_codes(code_of, typed)
        replay = self.replay
        start, stop = (replay.start, replay.stop) if replay.step == 1 and len(replay) else (0, 0)

        def decide(i: int, codes: bytearray, groups: bytearray) -> None:
            item = seen.pop(i)
            if not i & _PRUNE:  # the primaries paired before the records decided: no pairing looks at them again
                for used in taken:
                    used.difference_update([j for j in used if j < i])
            if i in mirrors:
                mirrors.discard(i)
                code = mirror
            else:
                code = by_kind.get(item.kind) if i else None
                if code is None:
                    code = code_of[_role_at(i, item, False, typed, is_call)]
            codes[i] = code
            groups[i] = (i - group.pop(i, i)) + (8 if start <= i < stop else 0)

        return decide

    def snapshot(self) -> dict:
        """What it holds now, as JSON values (before :meth:`finish`); its sketches as their texts'
        digests are (:func:`kept_sketch`: a caller whose digests are :func:`salted` makes them again)."""
        return {"count": self.count, "paired": self.paired, "decided": self.decided,
                "seen": [[n, kept_sketch(item)] for n, item in sorted(self.seen.items())],
                "taken": [sorted(j for j in used if j >= self.decided) for used in self.taken], "mirrors": sorted(self.mirrors),
                "group": sorted([j, i] for j, i in self.group.items())}

    @classmethod
    def restore(cls, kept: dict, *, prompts_typed: bool, is_call: Callable[[str | None], bool], replay: range) -> Decider:
        """A decider as :meth:`snapshot` kept it; ValueError (or KeyError, TypeError) for anything else."""
        decider = cls(prompts_typed=prompts_typed, is_call=is_call, replay=replay)
        decider.count, decider.paired, decider.decided = int(kept["count"]), int(kept["paired"]), int(kept["decided"])
        for n, (kind, text, alt, call, ident, parent) in kept["seen"]:
            decider.seen[int(n)] = Sketch(kind, bytes.fromhex(text), frozenset(bytes.fromhex(a) for a in alt), call, ident, parent)
        if len(kept["taken"]) != len(decider.taken):
            raise ValueError("a kept decider of other pairings")
        decider.taken = [set(map(int, used)) for used in kept["taken"]]
        decider.mirrors = set(map(int, kept["mirrors"]))
        decider.group = {int(j): int(i) for j, i in kept["group"]}
        if sorted(decider.seen) != list(range(decider.decided, decider.count)) or not \
                decider.decided <= decider.paired <= decider.count:
            raise ValueError("not a kept decider")
        return decider


def kept_sketch(item: Sketch) -> list:
    """A sketch as :meth:`Decider.snapshot` keeps it (and :meth:`Decider.restore` reads it)."""
    return [item.kind, item.text.hex(), sorted(a.hex() for a in item.alt), item.call, item.ident, item.parent]


#: The records a record may pair with, by their distance: the nearest first, the earlier of two as near.
_NEAREST_FIRST = tuple(step for k in range(1, MIRROR_WINDOW + 1) for step in (-k, k))


def _pair_one(i: int, seen: dict[int, Sketch], count: int, pairings: list, taken: list[set[int]], mirrors: set[int],
              group: dict[int, int]) -> None:
    """Pair record ``i`` with the nearest unpaired primary within the window whose text matches, if it is a secondary."""
    item = seen[i]
    if not item.text:
        return
    for (secondary, primary, match), used in zip(pairings, taken):
        if item.kind not in secondary:
            continue
        for step in _NEAREST_FIRST:
            j = i + step
            if not 0 <= j < count:
                continue
            other = seen[j]
            if j not in used and other.kind in primary and match(item, other):
                used.add(j)
                mirrors.add(i)
                group[j] = min(group.get(j, j), i)
                break


#: :meth:`Decider._code_maker`'s decisions drop the paired primaries they leave behind every this
#: many + 1 records, not one by one (a pairing looks at records at most MIRROR_WINDOW before the
#: one it pairs, and those are never decided yet): four set operations a record fewer.
_PRUNE = 1023


def _decision(i: int, item: Sketch, prompts_typed: bool, is_call, state: tuple, replay: range) -> Decision:
    """Record ``i``'s decision, its pairing state dropped (no record left to pair looks at it)."""
    taken, mirrors, group = state
    for used in taken:
        used.discard(i)
    role, skip = _role_at(i, item, i in mirrors, prompts_typed, is_call)
    mirrors.discard(i)
    return Decision(role, skip, group.pop(i, i), i in replay)


def _role_at(i: int, item: Sketch, mirrored: bool, prompts_typed: bool, is_call) -> tuple[str | None, str | None]:
    """:func:`_role` of record ``i``: the first record's ``session_meta`` is the session's meta."""
    if i == 0 and item.kind == "session_meta":
        return "meta", None
    return _role(item, mirrored, prompts_typed, is_call)


#: The kinds whose record's role is the same whatever else the file holds.
_SIMPLE = {"prompt": "prompt", "user_item": "prompt", "assistant": "assistant", "agent": "assistant", "reasoning": "reasoning",
           "agent_reasoning": "reasoning", "call": "tool_use", "output": "tool_result", "compact": "compact",
           "interrupt": "interrupt", "error": "error", "other": "other"}


#: The kinds whose role (unmirrored, past the first record) is their kind's alone (not an end
#: event's: whether its call is one).
_KIND_ONLY = (*_SIMPLE, "user", "injected", "context", "session_meta")


#: What :func:`_kind_codes` made last, by ``prompts_typed``: (the ``code_of`` it was made for, its answer).
_KIND_CODES: dict[bool, tuple[dict, dict, int]] = {}


def _kind_codes(code_of: dict, prompts_typed: bool) -> tuple[dict, int]:
    """(the code of each of :data:`_KIND_ONLY`'s kinds, a mirror's code), as ``code_of`` codes
    :func:`_role`'s answers: made again only for another ``code_of`` (made for each rollout, it
    took a tenth of a small rollout's decisions)."""
    found = _KIND_CODES.get(prompts_typed)
    if found is None or found[0] is not code_of:
        def never(_call) -> bool:  # (no kind of _KIND_ONLY asks)
            raise AssertionError("a kind-only role asked whether a call is one")
        found = _KIND_CODES[prompts_typed] = (code_of, {kind: code_of[_role(Sketch(kind), False, prompts_typed, never)]
                                                        for kind in _KIND_ONLY}, code_of[_role(_OTHER, True, prompts_typed, never)])
    return found[1], found[2]


def _role(item: Sketch, mirrored: bool, prompts_typed: bool, is_call) -> tuple[str | None, str | None]:
    kind = item.kind
    if mirrored:
        return None, "mirror"
    role = _SIMPLE.get(kind)
    if role is not None:
        return role, None
    if kind == "user":
        return (None, "context") if prompts_typed else ("prompt", None)
    if kind == "injected" or kind == "context":
        return None, "context"
    if kind == "end":
        return (None, "mirror") if is_call(item.call) else ("other", None)
    if kind == "session_meta":
        return None, "meta-copy"
    return None, "ui-only"  # task_started and the UI's own bookkeeping
