"""Keep Gemini CLI sessions (``~/.gemini/tmp/<project>/chats/session-*.jsonl`` and subagent sessions
``chats/<parentId>/<id>.jsonl``) as LevelCode v2 journals (SOURCES-MORE.md §1, DESIGN.md §5), so
they outlive Gemini's start-up sweep.

A file is taken for a session only when its own lines say so (the layout's identification).  It
is read with :class:`~toolkit.importers.sourcelines.SourceReader`: every whole line imports, damage
is counted and reported with its line and offset.  The metadata line is the journal's meta (under
``raw``); every other line becomes one record, in file order, its bytes under ``raw``:

- a ``user`` message -> ``user`` (text exact: a string, or blocks when it held parts other than text);
- a ``gemini`` message -> ``assistant``: ``thinking`` blocks (its thoughts), a ``text`` block, and
  per tool call a ``tool_use`` block followed by its ``tool_result`` (Gemini keeps both in the one line);
- ``info`` / ``error`` / ``warning`` -> ``event`` ``gemini:<type>``;
- a repeated message id is an update: the record carries ``"replaces": true`` and the same
  ``messageId`` (a reader folds it into the first, as Gemini does);
- ``$set`` -> ``event`` ``gemini:set`` (its keys); ``$rewindTo`` -> ``event`` ``gemini:rewind``
  (``to``); a later metadata line -> ``event`` ``gemini:meta``.

So ``source_items`` = the lines read (the metadata line, the meta's raw, included) + skipped.
``sourceKey`` is ``sha256:<16 hex>`` of the line's bytes (``#2``… for a repeat): the file is
append-only, so re-importing appends only new lines.

A legacy whole-file ``session-*.json`` (§1.3: one JSON document, rewritten whole by the Gemini
that wrote it) is read as one document: its metadata (every key but ``messages``) is the meta's
``raw``, each message one record (its object under ``raw``, ``sourceKey`` ``message:<id>``), so
``source_items`` = 1 + its messages, an item that is not a message counted as skipped.  When its
resumed twin ``<name>.jsonl`` (same sessionId) is there too, it is kept as ``gemini-<id>-json``
beside the twin's ``gemini-<id>``.  It is not written back by ``restore`` (Gemini never writes a
``.json`` again).  Never writes the source.

A ``.jsonl`` session that only grew since the last import is *resumed* (issue 27, :func:`resume`):
only its new lines are read, and the records a full re-import would append are appended, then the
source's new state.  What that needs is kept in the unit's import-cache entry (:func:`_capture`):
where the read stopped and the sha256 of the bytes before, the last time, the title as it stands
(the last ``$set`` summary or the first user text, the metadata's summary, the first prompt), the
message ids seen and the digests of the lines (exactly while a session has at most 65,536 of
them, else in Bloom filters: :mod:`toolkit.importers.bloom`; the last ids exactly in any case: an
update of a recent message is common), and the journal as it was left.
Only a journal of this file alone is resumed (after the write, it holds as many keys as the file
has lines: no other; then untouched since).  A resume is refused, and the file read in full, unless it is proven
to write what a full read would: the bytes before unchanged, the new lines whole lines ending in a
newline (nothing damaged), each new line's bytes new (a repeat's ``#n`` is not known here) and each
message id new or one of the recent ones (a filter's "maybe" is never a guess).  A ``$set``
summary, a ``$rewindTo`` and a later metadata line change nothing a full read writes but their own
record (and the title), so they are resumed; a metadata line without ``sessionId`` (which a
``$set`` could then give) is never resumed.  A legacy ``.json`` is always read in full.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path

from ..errors import FileChangedError
from ..findings import Finding
from ..layouts.base import one_line
from ..layouts.gemini import CHATS, GEMINI, project_root, sniff_file
from ..layouts.gemini.chat import MESSAGE, META, OTHER, REWIND, SET, classify, text_of
from ..jsonarray import is_array, parsed_at
from ..lines import open_regular
from .bloom import Digests, Exact, digest_of, dump_kept, keep_last, kept_digests, load_digests
from .output import AT, Options, Outcome, Raw, Resumed, Session, SourceState, first_prompt, safe_id, written_stamp
from .sourcelines import SourceReader, read_on
from .spill import KnownKeys, Records
from .unchanged import Unit, journal_stamp
from .gemini_units import APP, _is_legacy, detect, handle_path, source_files, unit_key, units, units_from  # noqa: F401 (the importer's listing, in a module of its own)
from .uris import apply_map, folder_status

__all__ = ["APP", "Options", "detect", "resume_unit", "scan", "scan_unit", "session_from_file", "source_files", "unit_key",
           "units"]


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every session under ``source`` as a converted :class:`Session`."""
    for unit in units(source, report):
        yield from scan_unit(unit, options, report)


def scan_unit(unit: Unit, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """The session of one file."""
    path = handle_path(unit)
    if path.suffix == ".json" and not _is_legacy(path):
        return
    try:
        session = (legacy_session_from_file if path.suffix == ".json" else session_from_file)(path, options, report)
    except OSError as exc:
        report(Finding("unreadable", "error", str(path), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    if session is not None and not (options.orphans_only and not session.orphaned):
        yield session


def _blocks(content: object) -> object:
    """A user message's content: its text exactly, or blocks when it holds more than text."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content] if isinstance(content, dict) else []
    if all(isinstance(p, dict) and set(p) == {"text"} and isinstance(p["text"], str) for p in parts):
        return "".join(p["text"] for p in parts)
    return [{"type": "text", "text": p["text"]} if isinstance(p, dict) and isinstance(p.get("text"), str) and len(p) == 1
            else p if isinstance(p, dict) else {"type": "text", "text": str(p)} for p in parts]


def _assistant(message: dict) -> list:
    blocks: list = []
    for thought in message.get("thoughts") if isinstance(message.get("thoughts"), list) else []:
        if isinstance(thought, dict):
            blocks.append({"type": "thinking", "thinking": thought.get("description") if isinstance(thought.get("description"), str) else "",
                           "subject": thought.get("subject")})
    text = text_of(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("toolCalls") if isinstance(message.get("toolCalls"), list) else []:
        if isinstance(call, dict):
            blocks.append({"type": "tool_use", "id": call.get("id"), "name": call.get("name"), "input": call.get("args")})
            blocks.append({"type": "tool_result", "tool_use_id": call.get("id"), "content": call.get("result"),
                           "status": call.get("status"), "is_error": call.get("status") == "error"})
    return blocks


def _record(value: dict, kind: str, seen: set[str], t: str) -> dict:
    if kind == MESSAGE:
        mid, role = value["id"], value.get("type")
        t = value["timestamp"] if isinstance(value.get("timestamp"), str) else t
        if role == "user":
            record = {"kind": "user", "t": t, "content": _blocks(value.get("content"))}
        elif role == "gemini":
            record = {"kind": "assistant", "t": t, "content": _assistant(value)}
            if isinstance(value.get("model"), str):
                record["model"] = value["model"]
        else:
            record = {"kind": "event", "t": t, "type": f"gemini:{role}", "content": text_of(value.get("content"))}
        record["messageId"] = mid
        if mid in seen:
            record["replaces"] = True
        seen.add(mid)
        return record
    if kind == REWIND:
        return {"kind": "event", "t": t, "type": "gemini:rewind", "to": value.get("$rewindTo")}
    if kind == SET:
        return {"kind": "event", "t": t, "type": "gemini:set", "keys": sorted(value["$set"])}
    return {"kind": "event", "t": t, "type": "gemini:meta"}


#: A session file up to this size keeps its records from its one read; a larger one is read again
#: for each pass the writer makes (its records converted again, each line checked to be the one
#: the first read saw), so an import's memory stays flat whatever the size of the session.
KEEP_RECORDS = 8 << 20


def _is_line(value: object) -> bool:
    return classify(value) != OTHER


def _records_of(lines: Iterator, created: str | None, seen=None, repeats=None) -> Iterator[tuple[object, str, dict, str]]:
    """(line, its kind, its record, its digest) for each line after the metadata line, in file order.
    The message ids seen and each line digest's count are held in a dict while they are few, then in
    a temporary database (:class:`~toolkit.importers.spill.KnownKeys`): memory stays flat.  A resume
    passes its own (what it kept of the lines before: :class:`_SeenBefore`, :class:`_CountsBefore`)
    and the time it stopped at as ``created``."""
    seen, repeats = seen if seen is not None else _Seen(), repeats if repeats is not None else KnownKeys()
    t = created or ""
    try:
        for line in lines:
            kind = classify(line.value)
            record = _record(line.value, kind, seen, t)
            t = record["t"] or t
            digest = hashlib.sha256(line.data).hexdigest()[:16]
            count = (repeats.get(digest) or 0) + 1
            repeats[digest] = count
            record["sourceKey"] = f"sha256:{digest}" + (f"#{count}" if count > 1 else "")
            record[AT] = line.offset
            record["raw"] = Raw(line.data)
            yield line, kind, record, digest
    finally:
        seen.close()
        repeats.close()


class _Seen(KnownKeys):
    """The message ids seen so far, as a set (``in``, ``add``), spilled to disk when many."""

    def add(self, key: str) -> None:
        self.setdefault(key)


class _Names:
    """What names a session, line by line: ``title`` (the last ``$set`` summary, else the first user
    text) and ``fallback`` (the first prompt, as the writer would name it)."""

    def __init__(self, title: str | None = None, fallback: str | None = None) -> None:
        self.title, self.fallback = title, fallback

    def see(self, value: dict, kind: str, record: dict) -> None:
        if kind == SET and isinstance(value["$set"].get("summary"), str):
            self.title = value["$set"]["summary"]
        if self.title is None and record["kind"] == "user" and not record.get("replaces"):
            text = text_of(value.get("content")).strip()
            self.title = one_line(text) or None
        if self.fallback is None:
            self.fallback = first_prompt([record])  # what the writer names a session by when the source names it not

    def named(self, summary: object) -> str | None:
        """The session's title, ``summary`` the metadata line's."""
        return self.title or (summary if isinstance(summary, str) else None) or self.fallback


class _Facts:
    """What a read of a session file carries on with, line by line, and keeps at its end for a
    resume (:func:`_capture`): the last time, the names, the digest of each message id seen and the
    last ids exactly.  A resume takes them up where the state kept them (``t``, ``names``, ``recent``)."""

    def __init__(self, created: str | None, t: str | None = None, names: _Names | None = None, recent: list = ()) -> None:
        self.t = t if t is not None else created or ""
        self.names = names if names is not None else _Names()
        self.ids = array("q")  # (those it read)
        self.recent: dict[str, None] = dict.fromkeys(recent)
        self.fixed = False  # the metadata line names the session (no $set can)

    def see(self, value: dict, kind: str, record: dict) -> None:
        self.t = record["t"] or self.t
        self.names.see(value, kind, record)
        if kind == MESSAGE:
            self.ids.append(int(digest_of(value["id"]), 16) - (1 << 63))
            keep_last(self.recent, value["id"], limit=RECENT)


def session_from_file(path: Path, options: Options, report: Callable[[Finding], None]) -> Session | None:
    """Convert one session file; None (and a finding) when it is not one.  Read once, streamed: a
    file past :data:`KEEP_RECORDS` keeps only where each line is and its digest, and its records
    are converted again on each pass (:class:`_Records`)."""
    where = str(path)
    if sniff_file(path) != GEMINI.name:
        report(Finding("unknown-format", "error", where, 1, None, "not a Gemini CLI session (its first line says so); skipped"))
        return None
    reader = SourceReader(path, _is_line, report, what="Gemini session line")
    lines = iter(reader)
    first = next(lines, None)
    if first is None:
        report(Finding("source-skipped", "warning", where, None, None, "holds no whole line; nothing to import"))
        return None
    at = _LinesAt()
    if classify(first.value) == META:
        at.add(first.offset, len(first.data))
    else:
        lines, first = chain([first], lines), None
    meta = dict(first.value) if first is not None else {}
    created = meta.get("startTime") if isinstance(meta.get("startTime"), str) else None
    kept: list[dict] | None = []
    digests = array("q")
    facts = _Facts(created)
    set_sid = None
    for line, kind, record, digest in _records_of(lines, created):
        at.add(line.offset, len(line.data))
        digests.append(int(digest, 16) - (1 << 63))
        if kind == SET and "sessionId" in line.value["$set"] and set_sid is None:
            set_sid = line.value["$set"]["sessionId"]  # a resume's $set may carry the id; the metadata line's comes first
        facts.see(line.value, kind, record)
        if kept is not None:
            kept.append(record)
            if line.offset + len(line.data) > KEEP_RECORDS:
                kept = None  # past the size kept in memory: converted again on each pass
    summary = meta.get("summary")
    facts.fixed = "sessionId" in meta  # (else a $set may name it)
    if "sessionId" not in meta and set_sid is not None:
        meta["sessionId"] = set_sid
    subagent = path.parent.name != CHATS
    sid = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) and meta["sessionId"] else (path.stem if subagent else None)
    if sid is None:
        sid = path.stem  # no metadata line: the file name is all that names it (unique in its folder)
        report(Finding("source-skipped", "warning", where, 1, 0, "no metadata line (Gemini cannot load this session); "
                       "imported under its file name"))
    chats = path.parent.parent if subagent else path.parent
    root = project_root(chats.parent, meta.get("projectHash") if isinstance(meta.get("projectHash"), str) else None)
    source = {"app": APP, "path": where, "key": sid, "version": None}
    if subagent:
        source["parent"] = path.parent.name
    if isinstance(meta.get("kind"), str):
        source["kind"] = meta["kind"]
    project = options.project or (apply_map(root, options.mapping) if root else None)
    status, where_not = ("unknown", []) if root is None else folder_status(root)
    session = Session(safe_id("gemini", sid), project, created, None, source, Raw(first.data) if first is not None else None,
                      status=status, orphan=where_not)
    session.raw_at = first.offset if first is not None else None
    session.merged = 1 if first is not None else 0  # the metadata line, carried by the meta record
    session.records = kept if kept is not None else _Records(path, at, digests, first.data if first is not None else None, created)
    session.title = facts.names.named(summary)
    session.source_items = reader.records + sum(reader.skipped.values())
    for reason, count in reader.skipped.items():
        session.skip(reason, count)
    session.too_large = list(reader.too_large)
    session.source_lines = reader.lines
    session.state = SourceState(where, reader.covered, reader.sha256, at, _reader(path))
    session.resume_state = lambda outcome: _capture(path, reader, at, digests, facts, session, outcome, root, summary)
    return session


class _LinesAt:
    """``(offset, length)`` of each line read, 16 bytes a line (a :class:`SourceState`'s ``lines``)."""

    def __init__(self) -> None:
        self.offsets, self.lengths = array("q"), array("q")

    def add(self, offset: int, length: int) -> None:
        self.offsets.append(offset)
        self.lengths.append(length)

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.offsets, self.lengths)


class _Records:
    """A large session file's records, converted again on each pass (re-iterable, sized): each
    line must be the one the first read saw (where it is and its digest), else the file changed
    meanwhile (:class:`FileChangedError`: nothing of it is written); lines it gained since are
    left for the next import."""

    def __init__(self, path: Path, at: _LinesAt, digests: array, meta: bytes | None, created: str | None) -> None:
        self.path, self.at, self.digests, self.meta, self.created = path, at, digests, meta, created

    def __len__(self) -> int:
        return len(self.digests)

    def __iter__(self) -> Iterator[dict]:
        try:  # (what this pass reads is the source's: an OSError here is never the journal's)
            lines = iter(SourceReader(self.path, _is_line, lambda _finding: None, what="Gemini session line"))
            offsets, skip, count = self.at.offsets, int(self.meta is not None), 0
            if skip:  # the metadata line (the meta's raw), as read
                head = next(lines, None)
                if head is None or head.offset != offsets[0] or head.data != self.meta:
                    raise self._changed()
            for line, _kind, record, digest in _records_of(lines, self.created):
                if count == len(self.digests):
                    return  # a line written since the first read: the next import's
                if line.offset != offsets[count + skip] or int(digest, 16) - (1 << 63) != self.digests[count]:
                    raise self._changed()
                count += 1
                yield record
            if count != len(self.digests):
                raise self._changed()
        except OSError as exc:
            raise FileChangedError.read_again(self.path, exc) from exc

    def _changed(self) -> FileChangedError:
        return FileChangedError(f"{self.path} changed while it was being imported (Gemini rewrote it?); import again")


# -- a session file that only grew: read from where the last import stopped (issue 27) ---------------

#: A resume says again what a full read says (nothing) and checks what the last import said: only
#: its torn last line, which the resume reads again, whole (:meth:`~toolkit.importers.unchanged.Kept.grown`).
RESUME_FINDINGS = True
#: A session file with more lines than this is read in full on each import that sees it change.
RESUME_RECORDS = 2_000_000
#: A session file that grew by more than this is read in full (what a resume reads is held in memory).
RESUME_BYTES = 16 << 20
#: Message ids kept exactly, the last ones of the file: Gemini writes a message again (same id) as
#: it updates it, often across where an import stopped.
RECENT = 64


class _Unproven(Exception):
    """What a resume met that it cannot prove a full read would convert alike (a filter's "maybe")."""


class _SeenBefore:
    """The message ids seen, for a resume: the new ones and the recent ones exactly; one the kept
    filter may hold is :class:`_Unproven` (a full read knows whether it makes ``"replaces": true``)."""

    def __init__(self, kept: Exact | Digests, recent: list) -> None:
        self.kept, self.recent, self.new = kept, dict.fromkeys(recent), {}

    def __contains__(self, mid: str) -> bool:
        if mid in self.new or mid in self.recent:
            return True
        if digest_of(mid) in self.kept:
            raise _Unproven(mid)
        return False

    def add(self, mid: str) -> None:
        self.new[mid] = None

    def close(self) -> None:
        pass


class _CountsBefore(dict):
    """Each new line digest's count, for a resume: a digest the kept filter may hold is
    :class:`_Unproven` (its line may repeat one before: its ``#n`` is not known here)."""

    def __init__(self, kept: Exact | Digests) -> None:
        super().__init__()
        self.kept = kept

    def get(self, digest: str, default=None):
        if digest in self:
            return self[digest]
        if digest in self.kept:
            raise _Unproven(digest)
        return default

    def close(self) -> None:
        pass


def _capture(path: Path, reader: SourceReader, at: _LinesAt, digests: array, facts: _Facts, session: Session,
             outcome: Outcome, root: str | None, summary: object) -> dict | None:
    """What resuming ``path`` needs, after its journal was written (``outcome``); None when a resume
    could not be proven to write what a full read would.  Only a journal of this file alone is
    resumed: after the write it holds every line's key (each line's own: a hash of its bytes and
    its count), so when it holds as many keys as the file has lines it holds no other (none of a
    line cut or rewritten since, none of another file of the same session); a line the new bytes
    add then has a key it lacks (a resume proves it new in the file), as a full read would find.
    So does a journal an earlier build or ``--reread`` made, once a full read of it finds it so."""
    torn = reader.skipped.get("torn-tail", 0)  # a last line still being written: a resume reads it again, whole
    if (set(reader.skipped) - {"torn-tail"} or torn > 1 or reader.too_large or reader.sha256 is None
            or reader.covered != reader.end or (torn and at.offsets[-1] >= reader.covered)  # (a record lifted out of it)
            or not facts.fixed or len(at) > RESUME_RECORDS or outcome.after is None or outcome.keys is None):
        return None
    if outcome.keys != len(digests):  # the journal holds a key no line of the file has now: not this file's alone
        return None
    mark = written_stamp(outcome.path)  # (a new journal the import's thread may still be linking)
    if mark is None:
        return None
    return {"path": str(path), "covered": reader.covered, "sha256": reader.sha256, "number": reader.number,
            "root": root, "created": session.created_at, "t": facts.t,
            "title": facts.names.title, "fallback": facts.names.fallback, "summary": summary if isinstance(summary, str) else None,
            "ids": kept_digests(facts.ids), "recent": list(facts.recent),
            "digests": kept_digests(digests), "count": len(at),
            "source_items": session.source_items - torn, "lines": reader.lines - torn, "merged": session.merged, "torn": torn,
            "seq": outcome.after[0], "title_after": outcome.after[1], "keys": outcome.keys, "journal": mark}


def resume_unit(unit: Unit, grown: str, kept: dict) -> list | None:
    """A unit whose ``.jsonl`` session file only grew since the last import (``kept``: that import's
    entry, :mod:`toolkit.importers.unchanged`): its session resumed (:class:`~toolkit.importers.output.Resumed`);
    None when it must be read in full."""
    path = handle_path(unit)
    outcomes = kept["outcomes"]
    if path.suffix != ".jsonl" or str(path) != grown or len(outcomes) != 1 or outcomes[0].status != "unchanged":
        return None
    outcome = outcomes[0]
    state = kept["resume"].get(outcome.id)
    if state is None or state.get("path") != str(path) or state.get("journal") != kept["journals"].get(str(outcome.path)):
        return None
    torn = [f for f in kept["findings"] if f.code == "source-torn" and f.path == str(path)]
    if len(torn) != state["torn"] or len(kept["findings"]) != len(torn):
        return None  # reading it said more than its torn last line: read it all again
    resumed = resume(path, state, outcome)
    return None if resumed is None else [resumed]


def resume(path: Path, state: dict, outcome: Outcome) -> Resumed | None:
    """The session of a file that only grew since ``state`` was kept, from its new lines alone, or
    None when it cannot be proven that a full read would write the same (then it is read in full):
    the bytes before must hash as they did; the new lines must be whole lines ending in a newline,
    nothing damaged; each new line's bytes and each message id not one the filters may hold (a
    recent id, kept exactly, is an update); its project folder as it was."""
    root = state["root"]
    status, orphan = ("unknown", []) if root is None else folder_status(root)
    if (status, tuple(orphan)) != (outcome.source_status, tuple(outcome.orphan)):
        return None  # (--orphans-only may leave it out now)
    reading = read_on(path, state, _is_line, "Gemini session line", RESUME_BYTES)
    if reading is None:
        return None
    reader, said = reading
    ids, digests = load_digests(state["ids"]), load_digests(state["digests"])
    seen, counts = _SeenBefore(ids, state["recent"]), _CountsBefore(digests)
    facts = _Facts(state["created"], state["t"], _Names(state["title"], state["fallback"]), state["recent"])
    records: list[dict] = []
    try:
        for line, kind, record, _digest in _records_of(iter(reader), state["t"], seen, counts):
            facts.see(line.value, kind, record)
            records.append(record)
    except (_Unproven, OSError):
        return None
    if said or reader.skipped or reader.too_large or not records or reader.sha256 is None or reader.covered != reader.end:
        return None
    count = state["count"] + len(records)
    when = facts.t or state["created"]  # the time of the last record a full read looks at
    session = Session(outcome.id, outcome.project, state["created"], facts.names.named(state["summary"]),
                      {"app": APP, "path": str(path)}, None, status=status, orphan=orphan)
    session.records = records
    session.source_items = state["source_items"] + reader.records
    session.source_lines = state["lines"] + reader.lines
    session.merged = state["merged"]
    session.state = SourceState(str(path), reader.covered, reader.sha256, (), lambda _o, _l: b"")

    def keep(written: Outcome) -> dict | None:
        mark = journal_stamp(written.path)
        if written.after is None or written.keys is None or count > RESUME_RECORDS or mark is None:
            return None
        ids.update_numbers(facts.ids)
        digests.update(counts)
        ids_kept, digests_kept = dump_kept(ids), dump_kept(digests)
        if ids_kept is None or digests_kept is None:  # (grown past what is kept exactly: read in full next time)
            return None
        return {**state, "covered": reader.covered, "sha256": reader.sha256, "number": reader.number, "t": facts.t,
                "title": facts.names.title, "fallback": facts.names.fallback, "ids": ids_kept, "recent": list(facts.recent),
                "digests": digests_kept, "count": count, "source_items": session.source_items,
                "lines": session.source_lines, "torn": 0, "seq": written.after[0], "title_after": written.after[1],
                "keys": written.keys, "journal": mark}

    session.resume_state = keep
    return Resumed(session, outcome.path, state["keys"], (state["seq"], state["title_after"]), when)


def _reader(path: Path) -> Callable[[int, int], bytes]:
    def read(offset: int, length: int) -> bytes:
        try:
            with open_regular(path) as handle:
                handle.seek(offset)
                return handle.read(length)
        except OSError as exc:  # (read while the journal is written: the source's, never the journal's)
            raise FileChangedError.read_again(path, exc) from exc
    return read


#: A legacy ``.json`` past this size has its messages read one by one (:func:`_legacy_by_element`).
WHOLE_BYTES = 8 << 20


def _legacy_by_element(path: Path) -> tuple[dict, None] | None:
    """A legacy session past :data:`WHOLE_BYTES` (and within the sweep's cap) parsed but for its
    ``messages``, read as they are converted (:func:`toolkit.jsonarray.parsed_at`: 50 MB of them
    parsed whole peaked at 256 MiB); None to read it as one document."""
    from ..layouts.gemini.sweep import LEGACY_CAP

    try:
        if not WHOLE_BYTES < path.stat().st_size <= LEGACY_CAP:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    found = parsed_at(data, ("messages",))
    return ({**found[0], "messages": found[1]}, None) if found is not None else None


def legacy_session_from_file(path: Path, options: Options, report: Callable[[Finding], None]) -> Session | None:
    """Convert one legacy whole-file ``.json`` session (read as one document); None (and a finding) when it is not one."""
    from ..layouts.gemini.sweep import legacy_session

    where = str(path)
    value, problem = _legacy_by_element(path) or legacy_session(path)
    if problem is not None:
        report(problem)
        return None
    if value is None or not (isinstance(value.get("sessionId"), str) and value["sessionId"] and isinstance(value.get("projectHash"), str)):
        report(Finding("unknown-format", "error", where, None, None,
                       "not a Gemini CLI legacy session (no sessionId and projectHash); skipped"))
        return None
    sid = value["sessionId"]
    metadata = {k: v for k, v in value.items() if k != "messages"}
    twin = path.with_suffix(".jsonl")
    key = sid + "-json" if twin.is_file() and GEMINI.session_of(twin) == sid else sid
    root = project_root(path.parent.parent, value["projectHash"])
    source = {"app": APP, "path": where, "key": sid, "version": None, "legacy": True}
    if isinstance(value.get("kind"), str):
        source["kind"] = value["kind"]
    project = options.project or (apply_map(root, options.mapping) if root else None)
    status = "unknown" if root is None else "live" if Path(root).is_dir() else "orphaned"
    created = value.get("startTime") if isinstance(value.get("startTime"), str) else None
    session = Session(safe_id("gemini", key), project, created, None, source, metadata,
                      status=status, orphan=["folder-missing"] if status == "orphaned" else [])
    messages = value.get("messages") if is_array(value.get("messages")) else []
    session.records = Records()  # (a long session's go to a temporary database as they are made)
    seen: set[str] = set()
    keys: dict[str, int] = {}
    t = created or ""
    title = None
    for message in messages:
        if classify(message) != MESSAGE:
            session.skip("not-a-message")
            report(Finding("source-skipped", "warning", where, None, None,
                           "an item of messages[] that is not a message (no string id); skipped"))
            continue
        record = _record(message, MESSAGE, seen, t)
        t = record["t"] or t
        keys[message["id"]] = keys.get(message["id"], 0) + 1
        record["sourceKey"] = f"message:{message['id']}" + (f"#{keys[message['id']]}" if keys[message["id"]] > 1 else "")
        record["raw"] = Raw(value=message)
        session.records.append(record)
        if title is None and record["kind"] == "user" and not record.get("replaces"):
            title = one_line(text_of(message.get("content"))) or None
    summary = value.get("summary")
    session.title = (one_line(summary) if isinstance(summary, str) else None) or title  # ("" for white space alone)
    session.source_items = 1 + len(messages)
    return session
