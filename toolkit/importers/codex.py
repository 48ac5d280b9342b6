"""Recover Codex CLI rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and
``archived_sessions/``) as LevelCode v2 journals (SOURCES-AGENTS.md §2, DESIGN.md §5).

A file is taken for a rollout only when its first record says so (:func:`toolkit.identify.sniff`
is ``"codex"``).  It is read with :class:`~toolkit.importers.sourcelines.SourceReader`: every
whole record imports, damage is counted and reported with its line and offset.  Each record
then goes one way, decided by :func:`toolkit.layouts.codex_seen.decide_stream` (one stream per kind,
§2.8 "Decision (import)"):

- a typed prompt -> ``user`` (text exact; images as ``image`` blocks with a ``url`` or ``path`` source);
- assistant text -> ``assistant`` with ``text`` blocks, and ``phase`` when Codex wrote one;
- reasoning -> ``assistant`` with one ``thinking`` block: ``thinking`` (the summary parts joined
  by a blank line, often empty), ``summary`` (the parts as written) and ``encrypted_content``;
- a tool call -> ``assistant`` with a ``tool_use`` block (``id`` = call_id, ``input`` = the
  parsed ``arguments`` object, else the string as written); its output -> a ``user`` record
  marked ``"toolResult": true`` holding a ``tool_result`` block (``exit_code`` added from
  ``exec_command_end``), the API's shape and the one ``import --from claude`` writes (a store
  counts only typed prompts as turns);
- ``compacted`` -> ``compact`` (``briefing`` = its message, or a note when it kept only an
  encrypted history; ``coversThrough`` 0: the seq it covers is not known before writing);
  ``turn_aborted`` -> ``event`` ``interrupt``; ``error`` -> ``event`` ``error``; a record of a
  type newer than this reader -> ``event`` ``codex:<type>[:<payload type>]``, raw kept;
- everything else becomes no record and is counted in ``session.skipped``: ``mirror`` (the
  other stream's copy of an imported item), ``context`` (developer messages, injected user-role
  context, ``turn_context``), ``ui-only`` (task start/complete, token counts…), ``meta-copy``
  (a fork's copy of its parent's ``session_meta``), and SourceReader's damage reasons.  So
  ``source_items`` = merged (the ``session_meta`` line, carried by the meta record) + records + skipped,
  reported as ``converted``, ``merged`` and ``skipped`` like every importer's.

``sourceKey`` is ``sha256:<16 hex>`` of the source line's bytes (``#2``… for a repeat): a
rollout is append-only, and unlike a line number or byte offset the key survives ``fsck
--salvage`` or a trimmed torn tail on the source.  An item and its mirror share the key of the
earlier line, so a copy imported before its mirror was written is not imported twice.  A fork's
replay of its parent is marked ``"inherited": true``.  Never writes the source.

Memory does not grow with the rollout's records: a first read keeps, per record, a row (where it
is, its hash, its time, its sketch) and the call ids, exit codes and facts of the whole file, in
lists for a rollout of at most ROWS_IN_MEMORY records, else in a temporary SQLite database;
:func:`~toolkit.layouts.codex_seen.decide_stream` then keeps two bytes a record; the records are
converted from their lines: those up to KEEP_IN_MEMORY kept as bytes from the first read and
parsed again, the rest re-read at their offsets (and refused if those changed).  Either way the
journals are the same bytes.

A rollout that only grew since the last import is *resumed* (issue 27, :func:`resume`): only its
new lines are read, and the records, ``source-line`` events (its new lines no record carries) and
``source-state`` event a full re-import would append are appended, as it would order and time
them.  What that needs is kept in the unit's import-cache entry (:func:`_capture`): where the read
stopped and the sha256 of the bytes before; the decider's window there (:class:`~toolkit.layouts.
codex_seen.Decider`) and the decisions of the records it had not decided for good; the whole-file
facts (a prompt typed, the replayed range, filters of the call ids, of the end events no call had
and of the exit codes, with the last ones exactly); the lines at the file's latest time; the time,
model and counts a full read carries on with.  Only a journal of this rollout alone is resumed (one
it created, or one a resume or a full read of it continued, untouched since).  A resume is refused,
and the rollout read in full, unless it is proven to write what a full read would: the bytes
before unchanged, the new lines whole records ending in a newline, no whole-file fact changed
(no prompt typed in a rollout with none, no call whose id an end event shown had, a fork's replay
of its parent closed, or, in a thread spawned with none, none begun), every record before decided
as before (a mirror pairing across where the last import stopped), every new line new by its bytes
and identity, every new record keyed by a new line.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

from ..errors import DurabilityError, FileChangedError
from ..findings import Finding
from ..identify import describe, sniff
from ..layouts.base import one_line
from ..layouts.codex import FirstFacts, first_record, legacy_record, thread_id
from ..layouts.codex_seen import (Decider, Replay, Sketch, as_envelope, context_cwd, kept_sketch, payload_sketch, message_text,
                                  parent_of, salted, sketch, summary_texts, typed_start, user_item_text, within_process)
from ..lines import loads, open_regular
from .base import skipped_message, unconverted
from .raw import raw_line
from .output import (AT, LINE_ID, SOURCE_LINE, Options, Outcome, Raw, Resumed, Session, SourceState, json_object,
                     offset_line_key, safe_id, written_stamp)
from .bloom import EXACT_KEYS, Digests, Prints, digest_of, keep_last
from .sourcelines import SourceLine, SourceReader, hashed, read_on
from .unchanged import Unit, journal_stamp
from .codex_units import APP, FIRSTS, detect, source_files, stamp_of, unit_key, units, units_from  # noqa: F401 (the importer's listing, in a module of its own)
from .spill import from_db, guarded, temp_db, to_db
from .uris import apply_map, folder_status, is_foreign

__all__ = ["APP", "Options", "detect", "resume_unit", "scan", "scan_unit", "session_from_rollout", "source_files", "unit_key",
           "units"]

WHY = {"mirror": "the other stream's copy of an imported item", "context": "context Codex injected or never showed",
       "ui-only": "the UI's own bookkeeping", "meta-copy": "a fork's copy of its parent's session_meta"}


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every rollout under ``source`` as a converted :class:`Session`."""
    for unit in units(source, report):
        yield from scan_unit(unit, options, report)


def scan_unit(unit: Unit, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """The session of one rollout."""
    path, home, names = unit.handle
    if home not in names:
        names[home] = thread_names(home / "session_index.jsonl")
    try:
        with guarded("reading a rollout"):
            session = session_from_rollout(path, options, report, names[home])
    except DurabilityError:
        raise  # the temporary folder is full: so it is for the rollouts after this one
    except OSError as exc:  # a permission error among them
        report(Finding("unreadable", "error", str(path), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
        report(Finding("source-unreadable", "error", str(path), None, None,
                       unconverted(exc)))
        return
    if session is not None and not (options.orphans_only and not session.orphaned):
        yield session


def thread_names(path: Path) -> dict[str, str]:
    """``session_index.jsonl``: thread id -> its name, the last entry for an id winning (§2.1)."""
    names: dict[str, str] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return names
    for line in data.split(b"\n"):
        try:
            entry = loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("thread_name"), str):
            names[entry["id"]] = entry["thread_name"]
    return names


# -- conversion ------------------------------------------------------------------------------


def _image(value: object) -> dict | None:
    if isinstance(value, dict):
        value = value.get("image_url") or value.get("url") or value.get("path")
    if not isinstance(value, str):
        return None
    kind = "url" if value.startswith(("data:", "http:", "https:")) else "path"
    return {"type": "image", "source": {"type": kind, kind: value}}


def _prompt(payload: dict) -> object:
    """A prompt's content: its text exactly; a list of blocks when images came with it."""
    kind = payload.get("type")
    if kind == "user_message":
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        extra = [payload.get(k) for k in ("images", "local_images") if isinstance(payload.get(k), list)]
        images = [block for group in extra for item in group if (block := _image(item)) is not None]
        return [{"type": "text", "text": text}, *images] if images else text
    if kind == "item_completed":
        return user_item_text(payload.get("item")) or ""
    blocks = []
    for block in payload.get("content") if isinstance(payload.get("content"), list) else []:
        if isinstance(block, dict) and block.get("type") == "input_text" and isinstance(block.get("text"), str):
            blocks.append({"type": "text", "text": block["text"]})
        elif isinstance(block, dict) and block.get("type") == "input_image" and (image := _image(block)) is not None:
            blocks.append(image)
        elif isinstance(block, dict):
            blocks.append(block)
    return blocks[0]["text"] if len(blocks) == 1 and blocks[0].get("type") == "text" else blocks


def _typed(record: dict) -> dict:
    """Mark what Codex or the IDE added to a prompt (:func:`~toolkit.layouts.codex_seen.typed_start`):
    a text that opens with an IDE's context becomes two text blocks, the context and the request,
    the first listed in ``added``; a prompt with nothing typed is ``injected`` (no turn, no title).
    The blocks joined are the text exactly; ``raw`` keeps the line as written."""
    content = record["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out, added, typed = [], [], False
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        start = typed_start(text) if isinstance(text, str) else 0
        if start is None:
            added.append(len(out))
        elif start:
            added.append(len(out))
            out.append({"type": "text", "text": text[:start]})
            block = {"type": "text", "text": text[start:]}
        typed = typed or start is not None
        out.append(block)
    if not typed and added:
        record["injected"] = True
    elif added:
        record["content"], record["added"] = out, added
    return record


def _answer(payload: dict) -> tuple[list, object]:
    """(text blocks, phase) of assistant text, from a ``message`` or an ``agent_message``."""
    if payload.get("type") == "agent_message":
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        return [{"type": "text", "text": text}], payload.get("phase")
    content = payload.get("content") if isinstance(payload.get("content"), list) else []
    blocks = [{"type": "text", "text": b["text"]} if isinstance(b, dict) and b.get("type") == "output_text"
              and isinstance(b.get("text"), str) else b for b in content]
    return blocks, payload.get("phase")


def _thinking(payload: dict) -> dict:
    if payload.get("type") == "agent_reasoning":
        return {"type": "thinking", "thinking": payload.get("text") if isinstance(payload.get("text"), str) else ""}
    block = {"type": "thinking", "thinking": "\n\n".join(summary_texts(payload)), "summary": payload.get("summary"),
             "encrypted_content": payload.get("encrypted_content")}
    if payload.get("content") is not None:
        block["content"] = payload["content"]
    return block


def _tool_use(payload: dict) -> dict:
    kind = payload.get("type")
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else payload.get("id")
    if kind == "web_search_call":
        name, value = "web_search", payload.get("action")
    elif kind == "local_shell_call":
        name, value = "local_shell", payload.get("action")
    else:
        name = payload.get("name") if isinstance(payload.get("name"), str) else kind
        value = payload.get("arguments", payload.get("input"))
    parsed = json_object(value) if isinstance(value, str) and kind == "function_call" else None
    return {"type": "tool_use", "id": call_id if isinstance(call_id, str) else "", "name": name,
            "input": parsed if parsed is not None else value}


def _tool_result(payload: dict, exits) -> dict:
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else ""
    block = {"type": "tool_result", "tool_use_id": call_id, "content": payload.get("output")}
    code = exits.get(call_id)
    if code is not None:
        block["exit_code"] = code
        block["is_error"] = code != 0
    return block


def _record(role: str, envelope: dict, t: str, model: str | None, exits) -> dict:
    payload = envelope["payload"]
    if role == "prompt":
        return _typed({"kind": "user", "t": t, "content": _prompt(payload)})
    if role == "compact":
        message = payload.get("message")
        history = payload.get("replacement_history")
        briefing = message if isinstance(message, str) and message else (
            "(Codex compacted the conversation here; what it kept is "
            + (f"{len(history)} items of replacement history, encrypted" if isinstance(history, list) else "not in the rollout")
            + "; they repeat earlier turns and are not imported as turns)")
        return {"kind": "compact", "t": t, "briefing": briefing, "coversThrough": 0}
    if role == "interrupt":
        return {"kind": "event", "t": t, "type": "interrupt", "reason": payload.get("reason")}
    if role == "error":
        return {"kind": "event", "t": t, "type": "error", "content": payload.get("message")}
    if role == "other":
        kind = payload.get("type")
        return {"kind": "event", "t": t, "type": f"codex:{envelope['type']}" + (f":{kind}" if isinstance(kind, str) else "")}
    phase = None
    if role == "assistant":
        content, phase = _answer(payload)
    elif role == "reasoning":
        content = [_thinking(payload)]
    elif role == "tool_use":
        content = [_tool_use(payload)]
    else:  # a tool's output: a tool_result block in a user record, as the API has it (as import --from claude does)
        return {"kind": "user", "t": t, "content": [_tool_result(payload, exits)], "toolResult": True}
    record = {"kind": "assistant", "t": t, "content": content}
    if isinstance(phase, str):
        record["phase"] = phase
    if model:
        record["model"] = model
    return record


def _place(cwd: object) -> tuple[str, list[str]]:
    if not isinstance(cwd, str) or not cwd:
        return "unknown", []
    if is_foreign(cwd) or not Path(cwd).is_absolute():
        return "unknown", []  # another OS's path (a Windows cwd read on Linux): cannot be judged here
    return folder_status(cwd)


def _whole_record(obj: object) -> bool:
    """A rollout record as an importer takes one: the envelope, perhaps with a key a newer writer
    adds (a line is never dropped for it).  The splitter of damaged lines looks for the same
    shape; no value nested in a payload carries ``timestamp``, ``type`` and an object ``payload``."""
    return type(obj) is dict and "timestamp" in obj and isinstance(obj.get("type"), str) and isinstance(obj.get("payload"), dict)


def first_facts(path: Path) -> FirstFacts:
    """The facts of the first record of ``path``: those :func:`unit_key` kept, taken once, while
    the file is as it was then (same device, inode, size, mtime and ctime), else read now."""
    kept = FIRSTS.pop(str(path), None)
    if kept is not None:
        try:
            if stamp_of(os.stat(path)) == kept[0]:
                return kept[1]
        except OSError:
            pass  # (read now: the read says why it cannot be)
    return FirstFacts.of(first_record(path)[0])


def session_from_rollout(path: Path, options: Options, report: Callable[[Finding], None],
                         names: dict[str, str] | None = None) -> Session | None:
    """Convert one rollout; None (and a finding) when it is not one or holds no session."""
    where = str(path)
    first = first_facts(path)
    if first.present and first.sniffed != "codex":  # another tool's file: one finding, not one per line
        report(Finding("unknown-format", "error", where, 1, None,
                       f"{describe(first.sniffed)}, not a Codex CLI rollout (its first record says so); skipped"))
        return None
    legacy = first.legacy
    rollout = _Rollout(path, report, legacy=legacy)
    if rollout.first is None:
        report(Finding("source-skipped", "warning", where, None, None, "holds no whole rollout record; nothing to import"))
        for item in rollout.reader.too_large:  # no session to keep it under: said, never silent
            report(Finding("record-too-large", "error", where, item.line, item.offset, f"a line of {item.length:,} bytes is "
                           "too large for levelsess to parse here, and no session could be made of this rollout to keep "
                           "it with: not imported (the source file still holds it)"))
        return None
    if sniff(rollout.first.value) != "codex":
        report(Finding("unknown-format", "error", where, rollout.first.line, rollout.first.offset,
                       "not a Codex CLI rollout (its first whole record says otherwise); skipped"))
        return None
    meta = as_envelope(rollout.meta.value)["payload"] if rollout.meta is not None else {}
    sid = meta.get("id") if isinstance(meta.get("id"), str) and meta["id"] else thread_id(path)
    if sid is None:
        report(Finding("source-unreadable", "error", where, None, None, "no session_meta and no thread id in the file name; skipped"))
        return None
    text = {k: meta.get(k) for k in ("timestamp", "cwd", "cli_version", "originator", "forked_from_id") if isinstance(meta.get(k), str)}
    if "cwd" not in text and rollout.cwd is not None:
        text["cwd"] = rollout.cwd
    source = {"app": APP, "path": where, "key": sid, "version": text.get("cli_version")}
    for key, value in (("originator", text.get("originator")), ("source", meta.get("source")), ("parent", parent_of(meta))):
        if value is not None:
            source[key] = value
    status, orphan = _place(text.get("cwd"))
    created = text.get("timestamp") or rollout.first_time
    session = Session(safe_id("codex", sid), options.project or _mapped(text.get("cwd"), options), created, None, source,
                      Raw(rollout.meta.data) if rollout.meta is not None else None, status=status, orphan=orphan)
    session.raw_at = rollout.meta.offset if rollout.meta is not None else None
    session.state = SourceState(where, rollout.reader.covered, rollout.reader.sha256, _Lines(rollout), rollout.read_line)
    _convert(session, rollout)
    named = (names or {}).get(sid)
    session.title = named or _first_prompt(rollout)
    fixed = (bool(named) or (rollout.own and session.title is not None)) and ("cwd" in text or rollout.cwd is not None)
    said_as = session.id  # (the id its findings name, before a write fits it to a file name)
    written = weakref.ref(session)  # (not the session: a cycle would keep the rollout and its lines until a collection)
    session.resume_state = lambda outcome: _capture(rollout, written(), outcome, said_as) if fixed and not legacy else None
    return session


#: A decision as a rollout keeps it, in two bytes: role and skip (``role * 8 + skip``), and the
#: record keying it (at most MIRROR_WINDOW before: ``n - group``) with ``inherited`` (``+ 8``).
_ROLES = (None, "prompt", "assistant", "reasoning", "tool_use", "tool_result", "compact", "interrupt", "error", "other", "meta")
_SKIPS = (None, "mirror", "context", "ui-only", "meta-copy")
_CODES = {(role, skip): r * 8 + s for r, role in enumerate(_ROLES) for s, skip in enumerate(_SKIPS)}
_DIGEST = 12  # bytes of a sketch's digests (codex_seen._digest)
#: A rollout of at most this many records is held in lists while it is imported (about 0.6 kB a
#: record: 40 MB at most; a rollout of 65,000 small records imported in 0.81 s, peak RSS 84 MiB); a
#: longer one in a temporary database, two bytes a record in memory (:class:`_Tabled`), two thirds
#: slower (that rollout: 1.34 s, 75 MiB, when this was 32,768).
ROWS_IN_MEMORY = 65_536
#: Bytes of a rollout's first lines kept from the first read to the conversion; the lines after
#: them are read again at their offsets, and refused if they changed.  Mostly their bytes: each is
#: parsed again when it is converted.  Every line's parsed value kept from the first read instead
#: (up to 4 MB of lines a rollout) cost more than the second parse it saved: a first import of 814
#: real rollouts took 4.4 s of CPU against 4.9 s, 60 MB of small records 2.6-3.0 s against
#: 3.3-3.6 s (serial, runs interleaved): what a read holds on to is the cache's, and the next
#: line's memory is no longer the memory the last one freed.
KEEP_IN_MEMORY = 8 << 20
#: The kept lines whose parsed value the first read keeps for the conversion (``_Rollout.held_values``):
#: those of a kind that usually becomes a record (a tool's output, a call, an answer, a prompt) and
#: of _HELD_SIZE bytes or more, whose value is a few objects around long strings (a turn_context, a
#: third of a real rollout's bytes, becomes no record).  A real rollout's records are mostly such
#: lines: its first import ran 2 % fewer instructions; small records are parsed twice, as before
#: (held, 60 MB of them took 5 to 10 % more CPU).  The conversion takes each value once: a second
#: pass over the records parses again.
_HELD_KINDS = frozenset({"output", "call", "reasoning", "assistant", "prompt", "user"})
_HELD_SIZE = 1024


def _hash(data: bytes) -> str:
    """The hash a line's key is made of: the first 16 hex digits of the sha256 of its bytes."""
    return hashlib.sha256(data).hexdigest()[:16]


class _Listed:
    """A rollout's rows, in lists, one per whole record in file order: where it is (line number,
    offset, size), the hash its key is made of and which occurrence of those bytes it is, its
    sketch; and the call ids and exec_command_end's last exit code by call id.  What
    :class:`_Tabled` holds in a temporary database, for a rollout of at most ROWS_IN_MEMORY records."""

    def __init__(self) -> None:
        # (n, offset, size, hash, repeat, its timestamp if a string, a turn_context's model if a string)
        self.places: list[tuple[int, int, int, str, int, str | None, str | None]] = []
        self.numbers: list[int] = []  # line numbers
        self.items: list[Sketch] = []
        self.calls: set[str] = set()
        self.ends: set[str] = set()  # the call ids of end events
        self.exits: dict[str, int] = {}  # (its get: the exit codes as _record asks them)
        self._seen: dict[str, int] = {}  # hash -> lines of those bytes so far
        # the lines added with their bytes (:meth:`add_kept`): (size, first bytes) -> [bytes, lines of them so far, bytes, …]
        self._near: dict[tuple[int, bytes], list] = {}
        self._last: dict[int, int] | None = None  # offset -> the last record there (built when asked)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, line: int, offset: int, size: int, digest: str, item: Sketch, stamp: str | None, model: str | None) -> None:
        seen = self._seen
        repeat = seen[digest] = seen.get(digest, 0) + 1
        self.places.append((len(self.items), offset, size, digest, repeat, stamp, model))
        self.numbers.append(line)
        self.items.append(item)

    def add_kept(self, line: int, offset: int, data: bytes, item: Sketch, stamp: str | None, model: str | None) -> None:
        """:meth:`add` of a line whose bytes the rollout keeps: its hash is left to be taken from
        them when it is asked (:func:`_hash`; most lines of a rollout become no record, and only a
        record's key needs one), and its repeat is counted by its bytes."""
        size = len(data)
        key = (size, data[:64])  # (lines that differ rarely share both)
        near = self._near.get(key)
        if near is None:  # the common line: the first of its size and start, one list made
            self._near[key] = [data, 1]
            repeat = 1
        else:  # [bytes, lines of them so far, bytes, lines…] of the lines of that size and start
            for i in range(0, len(near), 2):
                if near[i] == data:
                    repeat = near[i + 1] = near[i + 1] + 1
                    break
            else:
                near += (data, 1)
                repeat = 1
        self.places.append((len(self.items), offset, size, None, repeat, stamp, model))
        self.numbers.append(line)
        self.items.append(item)

    def hash_kept(self) -> None:
        """Before the first line :meth:`add` counts by its hash after lines :meth:`add_kept` counted
        by their bytes: those bytes counted by their hash (one count: the same bytes, the same hash)."""
        seen = self._seen
        for near in self._near.values():
            for i in range(0, len(near), 2):
                digest = _hash(near[i])
                seen[digest] = seen.get(digest, 0) + near[i + 1]
        self._near = {}

    def call(self, call: str) -> None:
        self.calls.add(call)

    def end(self, call: str) -> None:
        self.ends.add(call)

    def exit(self, call: str, code: int) -> None:
        self.exits[call] = code

    def finish(self) -> None:
        self._seen = {}
        self._near = {}

    def tabled(self, kept: list[bytes]) -> _Tabled:
        """The same rows in a temporary database (a rollout past ROWS_IN_MEMORY records); ``kept``:
        the bytes of the first lines, of which a row added by :meth:`add_kept` takes its hash."""
        tabled = _Tabled()
        for (n, offset, size, digest, _repeat, stamp, model), line, item in zip(self.places, self.numbers, self.items):
            tabled.add(line, offset, size, digest if digest is not None else _hash(kept[n]), item, stamp, model)
        for call in self.calls:
            tabled.call(call)
        for call, code in self.exits.items():
            tabled.exit(call, code)
        return tabled

    def sketches(self) -> Iterator[Sketch]:
        return iter(self.items)

    def line(self, n: int) -> int:
        return self.numbers[n]

    def is_call(self, call: str | None) -> bool:
        return call is not None and call in self.calls

    def rows(self) -> Iterator[tuple]:
        """(n, offset, size, hash, repeat, timestamp, model) of each record, in order (:attr:`places`)."""
        return iter(self.places)

    def place(self, n: int) -> tuple[int, int, str]:
        return self.places[n][1:4]

    def last_at(self, offset: int) -> tuple[int, int, str]:
        """(n, size, hash) of the last record at ``offset``."""
        if self._last is None:
            self._last = {place[1]: place[0] for place in self.places}
        n = self._last[offset]
        return n, self.places[n][2], self.places[n][3]

    def reaches(self, offset: int) -> bool:
        """Whether a record starts at ``offset`` or after it."""
        return any(place[1] >= offset for place in self.places)

    def call_ids(self) -> tuple[list[str], int]:
        return list(self.calls), len(self.calls)

    def orphan_ends(self) -> tuple[list[str], int]:
        """The call ids of end events no call has."""
        ends = self.ends - self.calls
        return list(ends), len(ends)

    def exit_ids(self) -> tuple[list[str], int]:
        return list(self.exits), len(self.exits)


class _Tabled:
    """:class:`_Listed`'s rows in a temporary SQLite database: memory does not grow with the
    rollout's records (a 37 GB one is reported, SOURCES-AGENTS §2.10)."""

    def __init__(self) -> None:
        self.db = temp_db()
        self.db.execute("CREATE TABLE line (n INTEGER PRIMARY KEY, line INTEGER NOT NULL, offset INTEGER NOT NULL, "
                        "size INTEGER NOT NULL, hash TEXT NOT NULL, repeat INTEGER NOT NULL DEFAULT 1, kind TEXT NOT NULL, "
                        "text BLOB NOT NULL, alt BLOB NOT NULL, call BLOB, t BLOB, model BLOB)")
        self.db.execute("CREATE TABLE calls (call BLOB PRIMARY KEY) WITHOUT ROWID")
        self.db.execute("CREATE TABLE exits (call BLOB PRIMARY KEY, code INTEGER NOT NULL) WITHOUT ROWID")
        self.count = 0
        self._rows: list[tuple] = []
        self._calls: list[tuple] = []
        self._exits: list[tuple] = []
        self.exits = self  # (its get: the exit codes as _record asks them)

    def __len__(self) -> int:
        return self.count

    def add(self, line: int, offset: int, size: int, digest: str, item: Sketch, stamp: str | None, model: str | None) -> None:
        self._rows.append((self.count, line, offset, size, digest, item.kind, item.text, b"".join(sorted(item.alt)),
                           to_db(item.call), to_db(stamp), to_db(model)))
        self.count += 1
        if len(self._rows) >= 4096:
            self._write()

    def call(self, call: str) -> None:
        self._calls.append((to_db(call),))

    def end(self, call: str) -> None:
        pass  # (its row says it: orphan_ends)

    def exit(self, call: str, code: int) -> None:
        self._exits.append((to_db(call), code))

    def _write(self) -> None:
        self.db.executemany("INSERT INTO line (n, line, offset, size, hash, kind, text, alt, call, t, model) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self._rows)
        self.db.executemany("INSERT OR IGNORE INTO calls VALUES (?)", self._calls)
        self.db.executemany("INSERT OR REPLACE INTO exits VALUES (?, ?)", self._exits)  # the last one wins
        for batch in (self._rows, self._calls, self._exits):
            batch.clear()

    def finish(self) -> None:
        self._write()
        self._number_repeats()
        self.db.execute("CREATE INDEX line_offset ON line (offset, n)")  # restore's lines no record carries, read by offset

    def _number_repeats(self) -> None:
        """A line seen before (same bytes) is keyed ``#<occurrence>``."""
        self.db.execute("CREATE TABLE repeats AS SELECT hash, n FROM line WHERE hash IN "
                        "(SELECT hash FROM line GROUP BY hash HAVING COUNT(*) > 1) ORDER BY hash, n")
        updates, previous, seen = [], None, 0
        for digest, n in self.db.execute("SELECT hash, n FROM repeats ORDER BY rowid"):
            seen = seen + 1 if digest == previous else 1
            previous = digest
            if seen > 1:
                updates.append((seen, n))
            if len(updates) >= 4096:
                self.db.executemany("UPDATE line SET repeat = ? WHERE n = ?", updates)
                updates.clear()
        self.db.executemany("UPDATE line SET repeat = ? WHERE n = ?", updates)

    def sketches(self) -> Iterator[Sketch]:
        for kind, text, alt, call in self.db.execute("SELECT kind, text, alt, call FROM line ORDER BY n"):
            yield Sketch(kind, text, frozenset(alt[k:k + _DIGEST] for k in range(0, len(alt), _DIGEST)), from_db(call))

    def line(self, n: int) -> int:
        return self.db.execute("SELECT line FROM line WHERE n = ?", (n,)).fetchone()[0]

    def is_call(self, call: str | None) -> bool:
        return call is not None and self.db.execute("SELECT 1 FROM calls WHERE call = ?", (to_db(call),)).fetchone() is not None

    def rows(self) -> Iterator[tuple]:
        for n, offset, size, digest, repeat, stamp, model in self.db.execute(
                "SELECT n, offset, size, hash, repeat, t, model FROM line ORDER BY n"):
            yield n, offset, size, digest, repeat, from_db(stamp), from_db(model)

    def place(self, n: int) -> tuple[int, int, str]:
        return self.db.execute("SELECT offset, size, hash FROM line WHERE n = ?", (n,)).fetchone()

    def last_at(self, offset: int) -> tuple[int, int, str]:
        return self.db.execute("SELECT n, size, hash FROM line WHERE offset = ? ORDER BY n DESC LIMIT 1", (offset,)).fetchone()

    def reaches(self, offset: int) -> bool:
        return self.db.execute("SELECT 1 FROM line WHERE offset >= ?", (offset,)).fetchone() is not None

    def get(self, call_id: str) -> int | None:
        """exec_command_end's (last) exit code for ``call_id``."""
        row = self.db.execute("SELECT code FROM exits WHERE call = ?", (to_db(call_id),)).fetchone()
        return None if row is None else row[0]

    def _counted(self, select: str, count: str) -> tuple[Iterator[str], int]:
        return (from_db(c) for (c,) in self.db.execute(select)), self.db.execute(count).fetchone()[0]

    def call_ids(self) -> tuple[Iterator[str], int]:
        return self._counted("SELECT call FROM calls", "SELECT COUNT(*) FROM calls")

    def orphan_ends(self) -> tuple[Iterator[str], int]:
        orphans = "FROM line WHERE kind = 'end' AND call IS NOT NULL AND call NOT IN (SELECT call FROM calls)"
        return self._counted(f"SELECT DISTINCT call {orphans}", f"SELECT COUNT(DISTINCT call) {orphans}")

    def exit_ids(self) -> tuple[Iterator[str], int]:
        return self._counted("SELECT call FROM exits", "SELECT COUNT(*) FROM exits")


class _Rollout:
    """A rollout read once: a row per whole record (where it is, the hash its key is made of, its
    sketch: :class:`_Listed`, or :class:`_Tabled` past ROWS_IN_MEMORY records), the call ids and
    exit codes, and what needs the whole file (typed prompts, the replayed range, the first
    ``session_meta``); the bytes of its first lines, up to KEEP_IN_MEMORY.  :meth:`decide` then
    keeps two bytes a record, and :meth:`records` converts them, the lines past those kept re-read
    at their offsets: memory does not grow with the rollout's records (a 37 GB one is reported,
    SOURCES-AGENTS §2.10)."""

    def __init__(self, path: Path, report: Callable[[Finding], None], legacy: bool = False) -> None:
        self.path, self.legacy = path, legacy
        # a pre-envelope rollout's records are bare items: only in such a file is one a record
        self.reader = SourceReader(path, legacy_record if legacy else _whole_record, report, what="rollout record")
        self.first: SourceLine | None = None
        self.meta: SourceLine | None = None  # the first session_meta
        self.first_time: str | None = None
        self.cwd: str | None = None  # the working folder an <environment_context> message names
        self.prompts_typed = False
        self.recent_calls: dict[str, None] = {}  # the last RECENT call ids, and exec_command_end's last exit codes
        self.recent_exits: dict[str, int] = {}
        self.latest = _Latest.empty()  # the lines at the file's latest time
        self.kept_lines: list[bytes] = []  # the first lines' bytes, within KEEP_IN_MEMORY
        self.held_values: dict[int, dict] = {}  # of those, the values parsed that the conversion takes (n -> value: _HELD_KINDS)
        replay = Replay()
        self.rows = self._read(replay, legacy)
        self.count, self.replay, self.fork = replay.count, replay.range, (replay.fork, replay.start, replay.end)
        self.codes = self.groups = b""
        self._handle = None
        self.listed: tuple | None = None  # the row of the line a pass of _Lines is at
        self.kept: dict | None = None  # the decider before its last records were decided (a resume takes it up)
        self.skip_lines: dict[str, list] = {}  # reason -> [count, its first line numbers]
        self.own = False  # a user record of its own (not a fork's replay): what _first_prompt looks for
        self.walked: tuple | None = None  # after a whole pass of records(): (t, model, when) at its end

    def _read(self, replay: Replay, legacy: bool) -> _Listed | _Tabled:
        """Read the rollout: a row per whole record, its first lines' bytes, and what needs the whole file."""
        rows: _Listed | _Tabled = _Listed()
        first = meta = first_time = cwd = None
        typed = False
        keep, kept, budget, limit, n, watching = True, self.kept_lines, KEEP_IN_MEMORY, ROWS_IN_MEMORY, 0, True
        held_values = self.held_values
        latest, recent_calls, recent_exits = self.latest, self.recent_calls, self.recent_exits
        see_at, latest_time = latest.see_at, latest.time
        add, add_kept = rows.add, rows.add_kept
        lazy = True  # each line kept in its bytes, its hash taken only when asked: until the first line not kept
        texts = self.text_digest = within_process()  # (the sketches' digests of texts: they stay here, but for the kept decider's)
        for line in self.reader:
            number, offset, data, value, _lifted = line
            if legacy:
                value = as_envelope(value)  # a pre-envelope line as its envelope
            top, payload = value["type"], value.get("payload")
            if type(payload) is not dict:  # (a whole record's is; a pre-envelope marker's may not be)
                payload = {}
            item = payload_sketch(top, payload, texts)
            if watching:
                replay.feed(item)
                watching = not replay.settled
            kind = item[0]  # (item.kind, item.call: by index, as a line's fields above)
            if first is None:
                first = line
            if meta is None and top == "session_meta":
                meta = line
            if cwd is None and kind == "injected":  # a pre-envelope meta has no cwd: the context names it
                cwd = context_cwd(message_text(payload.get("content"), ("input_text",)))
            stamp = value.get("timestamp")
            if type(stamp) is not str:
                stamp = None
            if legacy:  # (a legacy line's own time, not its envelope's)
                own = line.value.get("timestamp")
                if type(own) is not str:
                    own = None
            else:
                own = stamp
            if not first_time:
                first_time = stamp
            if not typed and (kind == "prompt" or kind == "user_item"):
                typed = True
            if kind == "call" and item[3] is not None:
                rows.call(item[3])
                keep_last(recent_calls, item[3], None, RECENT)
            elif kind == "end" and item[3] is not None:
                rows.end(item[3])
                if payload.get("type") == "exec_command_end" and top == "event_msg" \
                        and isinstance(payload.get("call_id"), str) and type(payload.get("exit_code")) is int:
                    rows.exit(payload["call_id"], payload["exit_code"])
                    keep_last(recent_exits, payload["call_id"], payload["exit_code"], RECENT)
            model = payload.get("model") if top == "turn_context" else None
            if keep:
                budget -= len(data)
                keep = budget >= 0
                if keep:
                    kept.append(data)
                    if kind in _HELD_KINDS and len(data) >= _HELD_SIZE and not legacy:
                        held_values[n] = value
                elif lazy:  # the first line not kept: read again later, its hash is what proves it the same
                    lazy = False
                    self._hash_kept(rows)
            if lazy:
                digest = n  # (the row: its bytes are kept[n], hashed when the latest lines are, :meth:`_Latest.hash_kept`)
                add_kept(number, offset, data, item, stamp, model if isinstance(model, str) else None)
            else:
                digest = _hash(data)
                add(number, offset, len(data), digest, item, stamp, model if isinstance(model, str) else None)
            if own is not None and (latest_time is None or own > latest_time):  # the common line, inline: the latest yet
                latest.time = latest_time = own  # (what see_at does with it)
                latest._one = (line[3], digest)
            else:
                see_at(own, line[3], digest)
            n += 1
            if n > limit and type(rows) is _Listed:
                if lazy:
                    lazy = False
                    self._hash_kept(rows)
                rows = rows.tabled(kept)
                add = rows.add
        if lazy:
            self.latest.hash_kept(kept)
        replay.skip(n - replay.count)
        rows.finish()
        self.first, self.meta, self.first_time, self.cwd, self.prompts_typed = first, meta, first_time, cwd, typed
        return rows

    def _hash_kept(self, rows: _Listed) -> None:
        """The lines read so far counted by their hashes (:meth:`_Listed.hash_kept`): the lines
        after them are hashed as they are read."""
        rows.hash_kept()
        self.latest.hash_kept(self.kept_lines)

    def decide(self) -> None:
        """Decide every record, in file order, kept in :attr:`codes` and :attr:`groups`."""
        codes, groups = bytearray(self.count), bytearray(self.count)
        decider = Decider(prompts_typed=self.prompts_typed, is_call=self.rows.is_call, replay=self.replay)
        decider.feed_codes(self.rows.sketches(), codes, groups, _CODES)
        self.kept = self._lasting(decider.snapshot())  # what a resume takes up: the records before the last few are decided
        decider.finish_codes(codes, groups, _CODES)
        self.codes, self.groups = codes, groups

    def _lasting(self, kept: dict) -> dict | None:
        """A decider's snapshot as a later import can take it up: the sketches of its window made
        again from their lines with the digest every process makes, when this read's were
        :func:`~toolkit.layouts.codex_seen.salted` (this process's alone).  None (no resume: the
        next import reads the file in full) when a line is no longer what was read."""
        if self.text_digest is not salted:
            return kept
        try:
            for entry in kept["seen"]:
                n, was = entry
                if not was[1] and not was[2]:  # no text digested (a call, an end, the UI's bookkeeping): as every process makes it
                    continue
                try:
                    value, _data = self._parsed(n)
                except (FileChangedError, OSError, ValueError):
                    return None
                if self.legacy:  # (as the read took it: a pre-envelope line as its envelope)
                    value = as_envelope(value)
                payload = value.get("payload")
                item = payload_sketch(value["type"], payload if type(payload) is dict else {})
                if item.kind != was[0]:  # (the same line, the same kind: never, unless it is not the line read)
                    return None
                entry[1] = kept_sketch(item)
            return kept
        finally:
            self.close()

    def skipped(self) -> dict[str, list]:
        """reason -> [count, its first five line numbers] of the records that became no record, by their first line."""
        codes, found = self.codes, []
        for code, reason in enumerate(_SKIPS):  # (a skipped record has no role: its code is its skip's)
            count = codes.count(code) if reason is not None else 0
            if count:
                first, n = [], -1
                while len(first) < 5 and (n := codes.find(code, n + 1)) >= 0:
                    first.append(n)
                found.append((first[0], reason, [count, [self.rows.line(n) for n in first]]))
        return {reason: count_lines for _first, reason, count_lines in sorted(found)}

    def decision(self, n: int) -> tuple[str | None, str | None, int, bool]:
        """(role, skip, group, inherited) of record ``n``, as :meth:`decide` kept it."""
        code, group = self.codes[n], self.groups[n]
        return _ROLES[code >> 3], _SKIPS[code & 7], n - (group & 7), bool(group & 8)

    def value(self, n: int) -> tuple[dict, bytes]:
        """Record ``n`` and its bytes: kept, or re-read at its offset (refused if they are not those read first)."""
        value, data = self._parsed(n)
        return as_envelope(value), data

    def _parsed(self, n: int) -> tuple[dict, bytes]:
        """Record ``n`` as its line parses, and its bytes (:meth:`value`)."""
        if n < len(self.kept_lines):
            return loads(data := self.kept_lines[n]), data
        return loads(data := self._bytes(n, *self.rows.place(n))), data

    def _bytes(self, n: int, offset: int, size: int, digest: str) -> bytes:
        try:
            if self._handle is None:
                self._handle = open_regular(self.path)
            self._handle.seek(offset)
            data = self._handle.read(size)
        except OSError as exc:
            raise FileChangedError.read_again(self.path, exc) from exc
        if _hash(data) != digest:
            self.close()
            raise FileChangedError(f"{self.path} changed while it was being imported (rewritten?): record {n + 1} is no "
                                   "longer the one it was; import again")
        return data

    def read_line(self, offset: int, _length: int) -> bytes:
        """The bytes of the (last) record at ``offset``, kept or re-read; the handle is closed after a pass of :class:`_Lines`."""
        row = self.listed  # the line :class:`_Lines` just listed (a pass of restore's lines)
        if row is not None and row[1] == offset:
            n, _offset, size, digest = row[:4]
        else:
            n, size, digest = self.rows.last_at(offset)
        if n < len(self.kept_lines):
            return self.kept_lines[n]
        return self._bytes(n, offset, size, digest)

    def records(self, created: str | None) -> Iterator[dict]:
        """The journal's records, converted from the lines kept or re-read."""
        t, model = created or "", None
        when = created  # the time of the last record (as the writer takes it for the source's events)
        self.walked = None
        exits, codes, groups, kept, held_values = self.rows.exits, self.codes, self.groups, self.kept_lines, self.held_values
        held, meta = len(kept), _CODES["meta", None]
        last = [None] * 8  # the last rows, by n % 8: a record is keyed by one at most MIRROR_WINDOW (< 8) before it
        try:
            for row in self.rows.rows():
                n, offset, size, digest, _repeat, stamp, changed = row
                last[n & 7] = row
                if stamp is not None:
                    t = stamp
                if changed is not None:  # a turn_context's model
                    model = changed
                code = codes[n]
                if code & 7 or code == meta:  # skipped, or the meta record's line: not read again
                    continue
                if n < held:
                    data = kept[n]
                    value = held_values.pop(n, None)  # (a second pass parses it again: a value is never shared)
                    if value is None:
                        value = loads(data)
                else:
                    value = loads(data := self._bytes(n, offset, size, digest))
                envelope = value if "payload" in value else as_envelope(value)  # (a record is a dict: the common one, an envelope)
                back = groups[n]
                identity = offset_line_key(value) if not back & 7 else None  # (a mirror's key is another line's)
                record = _record(_ROLES[code >> 3], envelope, t, model, exits)
                if back & 8:
                    record["inherited"] = True
                keyed = last[(n - back) & 7]  # (the row n - (back & 7))
                digest = keyed[3] if keyed[3] is not None else _hash(kept[keyed[0]])  # (a line kept: hashed when asked)
                record["sourceKey"] = f"sha256:{digest}#{keyed[4]}" if keyed[4] > 1 else f"sha256:{digest}"
                record[AT] = offset
                record["raw"] = raw_line(data)  # (a line: no newline in it)
                if identity is not None:
                    record[LINE_ID] = identity
                when = t or when
                yield record
            self.walked = (t, model, when)
        finally:
            self.close()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class _Lines:
    """``(offset, size)`` of each whole record of a rollout, in file order, on each pass."""

    def __init__(self, rollout: _Rollout) -> None:
        self.rollout = rollout

    def __iter__(self) -> Iterator[tuple[int, int]]:
        rollout = self.rollout
        try:
            for row in rollout.rows.rows():
                rollout.listed = row  # (several records may share an offset: lifted from one damaged line)
                yield row[1], row[2]
        finally:
            rollout.listed = None
            rollout.close()

    def uncarried(self, carried: Callable[[int], bool]) -> Iterator[tuple[int, bytes]]:
        """``(offset, bytes)`` of each line whose offset is not ``carried``, as a pass of :meth:`__iter__`
        and :meth:`_Rollout.read_line` give them, without a call a line (the writer's ``source-line``
        events: most of a rollout's lines may be mirrors)."""
        rollout = self.rollout
        kept = rollout.kept_lines
        held = len(kept)
        try:
            for row in rollout.rows.rows():
                offset = row[1]
                if not carried(offset):
                    n = row[0]
                    yield offset, kept[n] if n < held else rollout._bytes(n, offset, row[2], row[3])
        finally:
            rollout.close()


class _Records:
    """A rollout's journal records, converted on each pass (re-iterable, sized)."""

    def __init__(self, rollout: _Rollout, count: int, created: str | None) -> None:
        self.rollout, self.count, self.created = rollout, count, created

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        return self.rollout.records(self.created)


def _convert(session: Session, rollout: _Rollout) -> None:
    rollout.decide()
    skipped = rollout.skipped()  # reason -> [count, the first line numbers]
    if rollout.count and rollout.codes[0] == _CODES["meta", None]:  # (only the first record can be)
        session.merged += 1  # carried by the meta record (its raw)
    records = rollout.count - session.merged - sum(count for count, _numbers in skipped.values())
    session.records = _Records(rollout, records, session.created_at)
    rollout.skip_lines = skipped
    reader = rollout.reader
    # an item is a whole record or a damaged piece of a line: two records spliced on one line are two
    session.source_items = reader.records + sum(reader.skipped.values())
    for reason, count in reader.skipped.items():
        session.skip(reason, count)
    session.too_large = list(reader.too_large)  # counted above as record-too-large; the writer keeps their bytes
    for reason, (count, _numbers) in skipped.items():
        session.skip(reason, count)
    if skipped:
        reader.report(_skipped_finding(str(reader.path), session.id, skipped))


def _skipped_finding(where: str, sid: str, skipped: dict[str, list]) -> Finding:
    """The lines that became no record, by reason (``skipped``: reason -> [count, its first five line numbers])."""
    return Finding("source-skipped", "warning", where, None, None, skipped_message(sid, skipped, WHY))


def _first_prompt(rollout: _Rollout) -> str | None:
    """The thread's own first typed prompt, one line, at most 120 characters (a fork's replayed one if none)."""
    def user(n: int) -> bool:  # a record of kind "user": a prompt or a tool's output
        role, skip, _group, _inherited = rollout.decision(n)
        return role in ("prompt", "tool_result") and skip is None

    own = rollout.own = any(user(n) and not rollout.decision(n)[3] for n in range(rollout.count))
    for n in range(rollout.count):
        role, skip, _group, inherited = rollout.decision(n)
        if role != "prompt" or skip is not None or (own and inherited):
            continue
        envelope, _data = rollout.value(n)
        record = _typed({"content": _prompt(envelope["payload"])})
        content, added = record["content"], record.get("added", ())
        text = content if isinstance(content, str) else next((b.get("text") for i, b in enumerate(content) if i not in added
                                                              and isinstance(b, dict) and b.get("type") == "text"), None)
        if not record.get("injected") and isinstance(text, str) and text.strip():
            rollout.close()
            return one_line(text)
    rollout.close()
    return None


def _mapped(project: object, options: Options) -> str | None:
    return apply_map(project, options.mapping) if isinstance(project, str) and project else None


# -- a rollout that only grew: read from where the last import stopped (issue 27) --------------------

#: A resume says again what reading the rollout in full says (the lines that became no record), and
#: checks that the last import said nothing else (:meth:`~toolkit.importers.unchanged.Kept.grown`).
RESUME_FINDINGS = True
#: A rollout with more records than this is read in full on each import that sees it change.
RESUME_RECORDS = 2_000_000
#: A rollout that grew by more than this is read in full (what a resume reads is held in memory).
RESUME_BYTES = 16 << 20
#: Call ids and exit codes kept exactly, the last ones of the file: an output or an end event
#: usually follows its call within a few lines, often across where an import stopped.
RECENT = 32


#: The lines kept of those at a file's latest time (and of those without a time); past this many, a
#: new line at that time is not proven new.
LATEST = 256


class _Latest:
    """The latest time (``timestamp`` as written, compared as a string) of a file's lines, and the
    digests and identities (:func:`~toolkit.importers.output.offset_line_key`) of the lines at it,
    and the digests of the lines without a time.  A new line is surely none of the file's lines
    (not the same bytes: its key is new, never ``#2``; not the same identity: a full read would take
    it for a line rewritten in place) when its time is later, as a string (then it equals no earlier
    one, nor do bytes that hold it), or it is that time and not among those kept."""

    def __init__(self, time: str | None = None, digests: list | None = None, identities: list | None = None,
                 odd: list | None = None) -> None:
        self.time = time
        self._digests: set[str] | None = set(digests) if digests is not None else None
        self._identities: set[str] | None = set(identities) if identities is not None else None
        self.odd: set[str] | None = set(odd) if odd is not None else None
        self.values: list[dict] = []  # the lines at the latest time seen since (their identities, when asked)
        # the one line seen at a later time than the sets say, (value, digest), while it is the only one
        # (most lines of a file are the only one at their time: the sets are made when a second one is seen)
        self._one: tuple[dict, str] | None = None

    def _sets(self) -> None:
        """The sets of the lines at the latest time, with its one line seen (:attr:`_one`)."""
        if self._one is not None:
            value, digest = self._one
            self._one = None
            self._digests, self._identities, self.values = {digest}, set(), [value]

    @property
    def digests(self) -> set[str] | None:
        self._sets()
        return self._digests

    @property
    def identities(self) -> set[str] | None:
        self._sets()
        if self.values and self._identities is not None:
            self._identities.update(offset_line_key(value) for value in self.values)
        self.values = []
        return self._identities

    @classmethod
    def empty(cls) -> _Latest:
        return cls(None, [], [], [])

    def see(self, value: dict, digest: str | int) -> None:
        """A line read (``digest``: its hash, or until :meth:`hash_kept` the number of the kept line whose
        bytes it is: a set of them held the lines' bytes, each hashed whole to be put in it).  Two kept
        lines of the same bytes are two numbers until then: past LATEST of them at one time, a new line
        at that time is not proven new, as it would be past LATEST distinct ones (a resume reads in full)."""
        time = value.get("timestamp")
        self.see_at(time if isinstance(time, str) else None, value, digest)

    def see_at(self, time: str | None, value: dict, digest: str | int) -> None:
        """:meth:`see` of a line whose ``timestamp`` was taken already (None: not a string)."""
        if time is None:
            if self.odd is not None:
                self.odd.add(digest)
                if len(self.odd) > LATEST:
                    self.odd = None
            return
        if self.time is None or time > self.time:
            self.time, self._one = time, (value, digest)
        elif time == self.time:
            self._sets()
            if self._digests is not None:
                self._digests.add(digest)
                self.values.append(value)
                if len(self._digests) > LATEST:
                    self._digests = self._identities = None
                    self.values = []

    def hash_kept(self, lines: list[bytes]) -> None:
        """The lines :meth:`see` was given the number of (in ``lines``, the rollout's kept ones), by their hashes."""
        def hashed(kept: set | None) -> set | None:
            return None if kept is None else {_hash(lines[d]) if type(d) is int else d for d in kept}

        if self._one is not None and type(self._one[1]) is int:
            self._one = (self._one[0], _hash(lines[self._one[1]]))
        self._digests, self.odd = hashed(self._digests), hashed(self.odd)

    def new(self, value: dict, digest: str) -> bool:
        """Whether a line (its value and digest) surely has other bytes than every line of the file."""
        time = value.get("timestamp")
        if not isinstance(time, str):
            return self.odd is not None and digest not in self.odd
        if self.time is None or time > self.time:
            return True
        return time == self.time and self.digests is not None and digest not in self.digests

    def new_identity(self, value: dict) -> bool:
        """Whether a line's identity (its time and type) is surely none of the file's lines'."""
        time = value.get("timestamp")
        if not isinstance(time, str) or self.time is None or time > self.time:
            return True  # (no identity, or a later one)
        return time == self.time and self.identities is not None and offset_line_key(value) not in self.identities

    def dump(self) -> list:
        def listed(kept: set | None) -> list | None:
            return sorted(kept) if kept is not None else None

        return [self.time, listed(self.digests), listed(self.identities), listed(self.odd)]

    @classmethod
    def load(cls, value: object) -> _Latest:
        """Kept lines; ValueError for anything else."""
        def listed(kept: object) -> bool:
            return kept is None or (isinstance(kept, list) and all(isinstance(i, str) for i in kept))

        if not (isinstance(value, list) and len(value) == 4 and (value[0] is None or isinstance(value[0], str))
                and all(listed(v) for v in value[1:]) and (value[1] is None) == (value[2] is None)):
            raise ValueError("not kept lines")
        return cls(*value)


class _Unproven(Exception):
    """What a resume met that it cannot prove a full read would decide alike (a filter's "maybe")."""


def _own_journal(rollout: _Rollout, session: Session, outcome: Outcome) -> bool:
    """Whether the journal holds only what imports of this rollout wrote, of lines it still has: one
    it created; one this write proved so (``session.proven``: output's ``_Own``), untouched since;
    or one a state kept for it (``session.resumed_from``: its journal untouched since) says so,
    when the bytes that state was taken of are still this file's first ones (read again here, with
    the rest, which must be the bytes this read imported)."""
    if outcome.status == "created":
        return True
    if session.proven is not None and outcome.status in ("updated", "unchanged"):  # what this write found it holds, proven
        return session.proven == written_stamp(outcome.path)  # (and nothing appended since)
    prior = session.resumed_from
    reader = rollout.reader
    if outcome.status not in ("updated", "unchanged") or not isinstance(prior, dict) or prior.get("path") != str(rollout.path):
        return False
    covered, sha256 = prior.get("covered"), prior.get("sha256")
    if type(covered) is not int or not 0 < covered <= reader.covered:
        return False
    if covered == reader.covered:
        return sha256 == reader.sha256
    digest = hashed(rollout.path, covered)
    if digest is None or digest.hexdigest() != sha256:
        return False
    digest = hashed(rollout.path, reader.covered, covered, digest)
    return digest is not None and digest.hexdigest() == reader.sha256


def _capture(rollout: _Rollout, session: Session, outcome: Outcome, said_as: str) -> dict | None:
    """What resuming ``rollout`` needs, after its journal was written (``outcome``); None when a
    resume could not be proven to write what a full read would.  Only a journal of this rollout
    alone is resumed (:func:`_own_journal`, and then only while nothing else wrote it): it holds
    this file's records and lines and nothing else, which is what a resume assumes of it."""
    reader, rows = rollout.reader, rollout.rows
    fork, start, end = rollout.fork
    torn = reader.skipped.get("torn-tail", 0)  # a last line still being written: a resume reads it again, whole
    if set(reader.skipped) - {"torn-tail"} or torn > 1 or (torn and rows.reaches(reader.covered)):  # (records lifted out of it)
        return None
    if (not _own_journal(rollout, session, outcome) or reader.sha256 is None or reader.too_large
            or reader.covered != reader.end
            or outcome.after is None or outcome.keys is None or rollout.count > RESUME_RECORDS or rollout.meta is None
            or rollout.kept is None or rollout.walked is None or session.created_at is None
            or (fork and start is not None and end is None)):  # a fork's replay still open: new lines may be inherited
        return None
    mark = written_stamp(outcome.path)  # (a new journal the import's thread may still be linking)
    if mark is None:
        return None
    decided = rollout.kept["decided"]
    tail = [list(rollout.decision(n)) for n in range(decided, rollout.count)]
    calls = dict(rollout.recent_calls)
    for _n, (kind, _text, _alt, call, _ident, _parent) in rollout.kept["seen"]:  # the undecided end events' calls, exactly
        if kind == "end" and rows.is_call(call):
            calls[call] = None

    t, model, when = rollout.walked
    return {"path": str(rollout.path), "sid": said_as, "covered": reader.covered, "sha256": reader.sha256,
            "number": reader.number, "count": rollout.count, "decider": rollout.kept, "tail": tail,
            "typed": rollout.prompts_typed, "replay": [start, end] if fork and start is not None else None,
            "unstarted": fork and start is None,  # (a thread spawned from another: no replay of it yet, one may begin)
            "latest": rollout.latest.dump(),
            "calls": _kept_ids(rows.call_ids()), "ends": _kept_ids(rows.orphan_ends()), "exits": _kept_ids(rows.exit_ids()),
            "recent_calls": list(calls), "recent_exits": [[c, code] for c, code in rollout.recent_exits.items()],
            "t": t, "model": model, "when": when, "created": session.created_at, "title": session.title,
            "source_items": session.source_items - torn, "merged": session.merged, "torn": torn,
            "skipped": {reason: n for reason, n in session.skipped.items() if reason != "torn-tail"},
            "skip_lines": rollout.skip_lines, "seq": outcome.after[0], "title_after": outcome.after[1], "keys": outcome.keys,
            "journal": mark}


def _kept_ids(ids: tuple) -> list:
    """Call ids (``(ids, their count)``, streamed) as a resume keeps them: exactly while few (the
    CRC-32 of each, :class:`~.bloom.Prints`, made at C speed: a SHA-256 and six bits set in Python
    a call id were a thirtieth of the first import of a rollout of short lines), else a filter of
    their digests (:class:`~.bloom.Digests`)."""
    found, count = ids
    if count <= EXACT_KEYS:
        return Prints.of(found).dump()
    return Digests.of((digest_of(call) for call in found), count).dump()


class _Ids:
    """Call ids :func:`_kept_ids` kept (or an earlier build's filter of their digests): "maybe held"
    for each one added, and for few others (a resume then reads the rollout in full); ValueError
    for anything else."""

    __slots__ = ("kept", "exact")

    def __init__(self, value: object) -> None:
        self.exact = isinstance(value, list) and value[:1] == [Prints.TAG]
        self.kept = Prints.load(value) if self.exact else Digests.load(value)

    def __contains__(self, call: str) -> bool:
        return (call if self.exact else digest_of(call)) in self.kept

    def add(self, call: str) -> None:
        self.kept.add(call if self.exact else digest_of(call))

    def dump(self) -> list | None:
        """None when exact ones grew past :data:`~.bloom.EXACT_KEYS`: the next growth is read in full."""
        return None if self.exact and len(self.kept) > EXACT_KEYS else self.kept.dump()


def resume_unit(unit: Unit, grown: str, kept: dict) -> list | None:
    """A unit whose rollout only grew since the last import (``kept``: that import's entry,
    :mod:`toolkit.importers.unchanged`): its session resumed (:class:`Resumed`); None when it must be read in full."""
    path = unit.handle[0]
    outcomes = kept["outcomes"]
    if str(path) != grown or len(outcomes) != 1 or outcomes[0].status != "unchanged":
        return None
    outcome = outcomes[0]
    state = kept["resume"].get(outcome.id)
    if state is None or state.get("path") != str(path) or state.get("journal") != kept["journals"].get(str(outcome.path)):
        return None  # another rollout (a copy in archived_sessions) wrote its journal since
    before = [_skipped_finding(str(path), state["sid"], state["skip_lines"])] if state["skip_lines"] else []
    torn = [f for f in kept["findings"] if f.code == "source-torn" and f.path == str(path)]  # its last line, being written
    if len(torn) != state["torn"] or [f for f in kept["findings"] if f not in torn] != before:
        return None  # reading it said more than what became no record: read it all again
    resumed = resume(path, state, outcome)
    return None if resumed is None else [resumed]


def resume(path: Path, state: dict, outcome: Outcome) -> Resumed | None:
    """The session of a rollout that only grew since ``state`` was kept, from its new lines alone, or
    None when it cannot be proven that a full read would write the same (then it is read in full):
    the bytes before must hash as they did; the new lines must be whole records ending in a
    newline; they must change none of the facts of the whole file the records before were decided
    by (a prompt typed in a rollout with none, a call whose id an end event shown had), nor the
    decision of a record before (a mirror paired across where the last import stopped); their
    keys and identities must be new, and each record keyed by a new line."""
    reading = read_on(path, state, _whole_record, "rollout record", RESUME_BYTES)
    if reading is None:
        return None
    reader, said = reading
    latest = _Latest.load(state["latest"])
    calls, ends, exits = _Ids(state["calls"]), _Ids(state["ends"]), _Ids(state["exits"])
    recent_calls = dict.fromkeys(state["recent_calls"])
    recent_exits = {c: code for c, code in state["recent_exits"]}
    new_calls: dict[str, None] = {}
    new_exits: dict[str, int] = {}
    new_ends: list[str] = []
    items = []  # (line, envelope, sketch, base hash, t, model)
    t, model = state["t"], state["model"]
    try:
        for line in reader:
            value = line.value
            envelope, item = as_envelope(value), sketch(value)
            if line.lifted or (item.kind in ("prompt", "user_item") and not state["typed"]):
                return None  # a prompt typed where none was: the user messages before are context now
            if item.kind == "session_meta" and state.get("unstarted"):
                return None  # a thread with a parent and no replay of it yet: its replay begins here
            base = _hash(line.data)
            if not latest.new(value, base):  # maybe a line before, the same bytes: its key's number is not known here
                return None
            if item.kind == "call" and item.call is not None:
                if item.call in ends:  # maybe an end event shown (no call had its id) that is a mirror now
                    return None
                new_calls[item.call] = None
            elif item.kind == "end" and item.call is not None:
                new_ends.append(item.call)
            payload = envelope["payload"]
            if envelope["type"] == "event_msg" and payload.get("type") == "exec_command_end" \
                    and isinstance(payload.get("call_id"), str) and type(payload.get("exit_code")) is int:
                new_exits.pop(payload["call_id"], None)
                new_exits[payload["call_id"]] = payload["exit_code"]
            if isinstance(envelope.get("timestamp"), str):
                t = envelope["timestamp"]
            if envelope["type"] == "turn_context" and isinstance(payload.get("model"), str):
                model = payload["model"]
            items.append((line, envelope, item, base, t, model))
    except OSError:
        return None
    if said or reader.skipped or reader.too_large or not items or reader.sha256 is None or reader.covered != reader.end:
        return None

    def is_call(call: str | None) -> bool:
        if call is None:
            return False
        if call in new_calls or call in recent_calls:
            return True
        if call in calls:
            raise _Unproven(call)
        return False

    def exit_code(call: str) -> int | None:
        if call in new_exits:
            return new_exits[call]
        if call in recent_exits:
            return recent_exits[call]
        if call in exits:
            raise _Unproven(call)
        return None

    exit_codes = SimpleNamespace(get=exit_code)  # (not a class made here: a class is a cycle, which held the filters until a collection)

    count0, tail = state["count"], state["tail"]
    replay = range(*state["replay"]) if state["replay"] else range(0)
    try:
        decider = Decider.restore(state["decider"], prompts_typed=state["typed"], is_call=is_call, replay=replay)
        if decider.count != count0 or count0 - decider.decided != len(tail):
            return None
        decided = list(decider.feed(item[2] for item in items))
        kept = decider.snapshot()
        decided += decider.finish()
    except _Unproven:
        return None
    if len(decided) != len(tail) + len(items) or [[d.role, d.skip, d.group, d.inherited] for d in decided[:len(tail)]] != tail:
        return None  # a record before is decided otherwise now (its mirror was written after it)
    records: list[dict] = []
    skipped_lines: list = []
    skipped = dict(state["skipped"])
    skip_lines = {reason: [count, list(numbers)] for reason, (count, numbers) in state["skip_lines"].items()}
    keys: dict[int, str] = {}
    seen: dict[str, int] = {}
    when = state["when"]
    try:
        for k, ((line, envelope, _item, base, t, model), decision) in enumerate(zip(items, decided[len(tail):])):
            n = count0 + k
            seen[base] = seen.get(base, 0) + 1
            keys[n] = f"sha256:{base}" + (f"#{seen[base]}" if seen[base] > 1 else "")
            if decision.role == "meta":
                return None
            if decision.skip is not None:
                skipped[decision.skip] = skipped.get(decision.skip, 0) + 1
                count_lines = skip_lines.setdefault(decision.skip, [0, []])
                count_lines[0] += 1
                if len(count_lines[1]) < 5:
                    count_lines[1].append(line.line)
                skipped_lines.append(line)
                continue
            if decision.group < count0:  # keyed by a line before (a mirror written first): not proven here
                return None
            identity = offset_line_key(line.value) if decision.group == n else None
            if identity is not None and not latest.new_identity(line.value):  # maybe a line before, rewritten in
                return None  # place: a full read would supersede its record with this one
            record = _record(decision.role, envelope, t, model, exit_codes)
            if decision.inherited:
                record["inherited"] = True
            record["sourceKey"] = keys[decision.group]
            record[AT] = line.offset
            record["raw"] = Raw(line.data)
            if identity is not None:
                record[LINE_ID] = identity
            when = t or when
            records.append(record)
    except _Unproven:
        return None
    events = [{"kind": "event", "t": when or "", "type": SOURCE_LINE, AT: line.offset, "raw": Raw(line.data)}
              for line in skipped_lines]
    session = Session(outcome.id, outcome.project, state["created"], state["title"], {"app": APP, "path": str(path)}, None,
                      status=outcome.source_status, orphan=list(outcome.orphan))
    session.records = records
    session.source_items = state["source_items"] + len(items)
    session.merged = state["merged"]
    session.skipped = skipped
    session.state = SourceState(str(path), reader.covered, reader.sha256, (), lambda _o, _l: b"")
    findings = [_skipped_finding(str(path), state["sid"], skip_lines)] if skip_lines else []
    count = count0 + len(items)

    def keep(written: Outcome) -> dict | None:
        mark = journal_stamp(written.path)
        if written.after is None or written.keys is None or count > RESUME_RECORDS or mark is None:
            return None
        for line, _envelope, _item, base, _t, _model in items:
            latest.see(line.value, base)
        for call in new_ends:
            if call not in new_calls and call not in recent_calls:  # (else is_call said it had no call before)
                ends.add(call)
        matched = [call for _n, (kind, _text, _alt, call, _ident, _parent) in kept["seen"]  # the undecided end events' calls
                   if kind == "end" and call is not None and (call in new_calls or call in recent_calls)]
        for call in new_calls:
            calls.add(call)
            keep_last(recent_calls, call, None, RECENT)
        for call in matched:
            recent_calls[call] = None
        for call, code in new_exits.items():
            exits.add(call)
            keep_last(recent_exits, call, code, RECENT)
        kept_ids = {"calls": calls.dump(), "ends": ends.dump(), "exits": exits.dump()}
        if None in kept_ids.values():
            return None
        last = items[-1]
        return {**state, "covered": reader.covered, "sha256": reader.sha256, "number": reader.number, "count": count,
                "decider": kept, "tail": [[d.role, d.skip, d.group, d.inherited] for d in decided[kept["decided"] - decider_start:]],
                "latest": latest.dump(), **kept_ids,
                "recent_calls": list(recent_calls), "recent_exits": [[c, code] for c, code in recent_exits.items()],
                "t": last[4], "model": last[5], "when": when, "source_items": session.source_items, "skipped": skipped, "torn": 0,
                "skip_lines": skip_lines, "seq": written.after[0], "title_after": written.after[1], "keys": written.keys,
                "journal": mark}

    decider_start = count0 - len(tail)
    session.resume_state = keep
    return Resumed(session, outcome.path, state["keys"], (state["seq"], state["title_after"]), when, frozenset(), findings, events)
