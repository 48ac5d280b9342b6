"""Write imported sessions into the LevelCode store as v2 journals, idempotently (DESIGN §5).

A new session is written whole with an atomic write (the journal appears complete or not at
all).  An existing journal is never rewritten: only records whose ``sourceKey`` it does not
hold yet are appended, continuing ``seq``, in one write under the session lock; a changed
title becomes a ``title`` record.  A second import with nothing new changes no byte.  A record imported while it was still
``partial`` (a reply being generated) is superseded, once the source has it complete, by a new
record with the same ``sourceKey`` and ``"replaces": <old seq>`` (SOURCES.md §4.3).

A line-based source (Claude Code, Codex CLI) can be given back byte for byte (``restore``): each
record says where its ``raw`` line was in the source file (``at``: the byte offset; a list for a
merged ``raw``), the lines no record carries are kept as ``source-line`` events, and each import
that saw the source change ends with a ``source-state`` event (its path, the size and sha256 of
what was read as whole lines).  ``--no-raw`` keeps none of that.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta, timezone
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import NamedTuple

from orjson import dumps as _orjson_dumps

from .. import durable
from ..errors import (CorruptionError, DurabilityError, FileChangedError, LevelsessError, LockBusyError, SymlinkedFolderError,
                      TornTailError)
from ..findings import Finding
from ..lines import CHUNK, cap_text, loads, open_regular
from ..stores import slug
from .raw import Raw, _dumps, exact  # noqa: F401 (the importers' names for them, as ever)
from .spill import KnownKeys, Offsets, Records
from .base import NAMES, Options, Outcome  # noqa: F401 (the importers' names for them, as ever)
from .unchanged import journal_mark, journal_stamp

UNASSIGNED = "_unassigned"
#: An extension is appended this many bytes at a time, so a large one is never held whole.
APPEND_BATCH = 8 << 20
_SAFE_ID = re.compile(r"[A-Za-z0-9._-]+")


_LAST_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


def iso_from_ms(ms: object, floor: float = 1e12) -> str | None:
    """Epoch milliseconds -> ISO-8601 UTC with ms and ``Z``; None for anything unusable
    (not a number, before ``floor`` (a relative counter, not a time), or past year 9999)."""
    if type(ms) is int and floor < ms < _EXACT_MS:  # the common case, in whole numbers: what the line below gives
        seconds, milli = divmod(ms, 1000)
        days, seconds = divmod(seconds, 86400)
        day = _DAYS.get(days)
        if day is None:
            if len(_DAYS) > 4096:
                _DAYS.clear()
            day = _DAYS[days] = (_EPOCH_DAY + timedelta(days=days)).isoformat()
        hours, seconds = divmod(seconds, 3600)
        minutes, seconds = divmod(seconds, 60)
        return f"{day}T{hours:02d}:{minutes:02d}:{seconds:02d}.{milli:03d}Z"
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not floor < ms <= _LAST_MS:
        return None
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Below it (2096) a whole number of ms divided by 1000 is within half a microsecond of its value, so
#: ``fromtimestamp`` rounds it to that very millisecond and :func:`iso_from_ms` may count it out in
#: integers (past it the float's error can move the millisecond: that path keeps its answer).
_EXACT_MS = 4_000_000_000_000
_EPOCH_DAY = date(1970, 1, 1)
_DAYS: dict[int, str] = {}  # days since the epoch -> "YYYY-MM-DD" (a chat's times fall on a few days)


def json_object(text: object) -> dict | None:
    """A dict as is, or a JSON string that parses to an object (tool arguments); else None."""
    if isinstance(text, dict):
        return text
    if isinstance(text, str):
        try:
            value = loads(text.encode("utf-8", "surrogatepass"))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def encode(record: dict) -> bytes:
    """One journal line; ``raw`` (a :class:`Raw`) is spliced in as the source's own bytes."""
    if any(k[:1] == "_" for k in record):  # instructions to the writer (see ALIAS, COVERS_PREVIOUS), never written
        record = {k: v for k, v in record.items() if k[:1] != "_"}
    raw = record.get("raw")
    if not isinstance(raw, Raw):
        return _dumps(record)
    line = _dumps({k: v for k, v in record.items() if k != "raw"})
    return line[:-1] + b',"raw":' + raw.data + b"}"


def line_digest(value: object) -> int:
    """A source line's fingerprint, from its parsed value (so the journal's copy under ``raw`` and
    the source's bytes compare alike): 8 bytes of the sha256 of its compact JSON, as a signed int."""
    return int.from_bytes(hashlib.sha256(_dumps(value)).digest()[:8], "big", signed=True)


def _line_values(record: dict, raw: object) -> list | None:
    """The values of the source lines ``record`` carries under ``raw`` (a merged record's list), in
    the order of its line keys; None when it carries none."""
    if raw is None:
        return None
    if isinstance(raw, Raw):
        try:
            raw = loads(raw.data)
        except ValueError:
            return None
    at = record.get(AT)
    if isinstance(at, list) and isinstance(raw, list) and len(raw) == len(at) > 0:
        return raw
    return [raw]


def offset_line_key(value: object) -> str | None:
    """A line's identity when its key is a hash of its bytes (Codex): its time and type
    (``timestamp``, ``type``, ``payload.type``; a journal holding two lines alike holds neither by
    it); None for a line without them."""
    if not isinstance(value, dict):
        return None
    stamp, top, payload = value.get("timestamp"), value.get("type"), value.get("payload")
    if not (isinstance(stamp, str) and isinstance(top, str)):
        return None
    kind = payload.get("type") if isinstance(payload, dict) else None
    return f"line:{stamp}:{top}:{kind if isinstance(kind, str) else ''}"


def line_keys(record: dict) -> list[tuple[str, ...]]:
    keys = record.get(LINE_KEYS)
    if isinstance(keys, list):
        return [tuple(k) for k in keys]
    key, alias = record.get("sourceKey"), record.get(ALIAS)
    parts = record.get(PART_KEYS)
    head = tuple(k for k in (key, alias) if isinstance(k, str))
    return [head] + [(k,) for k in (parts if isinstance(parts, list) else ()) if isinstance(k, str)]


def safe_id(prefix: str, source_id: str) -> str:
    """``prefix-<id>``, or ``prefix-h<sha256>`` when the id has unsafe characters (SOURCES §4.1)."""
    if _SAFE_ID.fullmatch(source_id) and not source_id.startswith("."):
        return f"{prefix}-{source_id}"
    return f"{prefix}-h{hashlib.sha256(source_id.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


#: On a record: another ``sourceKey`` under which the journal may already hold it (a record first
#: imported off the conversation's chain, later on it, or the reverse): then it is not added again.
ALIAS = "_alias"
#: On a record that carries several source items (one API response's parts): the keys of all
#: but the first (which is its ``sourceKey``); the journal then holds each of them.
PART_KEYS = "partKeys"
#: On a ``compact`` record: its ``coversThrough`` is the seq of the record written just before it.
COVERS_PREVIOUS = "_coversPrevious"
#: On a record carrying source lines: per line, the keys under which the journal may hold that
#: line (its own, then an alias); default: ``sourceKey`` (then ``_alias``), then each of ``partKeys``.
LINE_KEYS = "_lineKeys"
#: On a record: when the journal holds its first line only under its ``_alias`` (kept off the
#: conversation's chain, now on it), the kept copy is superseded by this one.
SUPERSEDES_ALIAS = "_supersedesAlias"
#: On a record superseding several kept ones (one response's parts first kept one by one): the
#: seqs, past ``replaces``, that it supersedes too.
ALSO_REPLACES = "alsoReplaces"
#: On a record of a source whose key is a hash of the line's bytes (Codex): the line's identity
#: (:func:`offset_line_key`), so a line whose bytes changed in place supersedes its kept copy.
LINE_ID = "_lineId"
#: On a record superseding one (or new) after the conversation's order changed (a record kept off
#: the chain is on it now: a repaired break): shown where it is appended, not in its copy's place.
MOVED = "moved"


#: The keys that instruct the writer, never written: every record key an importer gives that starts
#: with "_" (:func:`encode` drops any such key; the writer's hot path, :func:`_numbered_line`, these).
WRITER_KEYS = (ALIAS, COVERS_PREVIOUS, LINE_KEYS, SUPERSEDES_ALIAS, LINE_ID)

#: On a record carrying source lines under ``raw``: their byte offsets in the source file.
AT = "at"
#: The events that keep what ``restore`` needs and no record carries (never shown as conversation).
SOURCE_LINE, SOURCE_STATE = "source-line", "source-state"


class SourceState(NamedTuple):
    """A line-based source as this import read it: its path, the size and sha256 of the bytes read as
    whole lines, and the ``(offset, length)`` of each whole line the session stands for, with a way
    to read one (``read(offset, length)``)."""

    path: str
    size: int
    sha256: str | None
    lines: Sequence[tuple[int, int]]
    read: Callable[[int, int], bytes]

    def mark(self) -> dict:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


@dataclass
class Session:
    """One source conversation, converted: meta fields plus records (each with a ``sourceKey``)."""

    id: str
    project: str | None
    created_at: str | None
    title: str | None
    source: dict
    raw: object = None
    records: list[dict] = field(default_factory=list)
    status: str = "live"  # live | orphaned | unknown
    orphan: list[str] = field(default_factory=list)
    first_uri: str | None = None  # a workspace URI seen in the first user message, if any
    # the accounting rule (every source item becomes a record or is counted, by reason, in a
    # finding that names its key): source_items == items that became records + sum(skipped)
    source_items: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    source_lines: int | None = None  # non-empty lines read, for a line-based source (JSONL)
    merged: int = 0  # source items carried inside another item's record (one API message's parts)
    # source lines too large to parse here (sourcelines.TooLarge), counted in ``skipped`` as
    # record-too-large: the writer keeps their bytes beside the store (keep_too_large)
    too_large: list = field(default_factory=list)
    state: SourceState | None = None  # a line-based source: what restore needs to give it back
    # after its write: what a later import needs to read only what the source adds (issue 27), given
    # the write's Outcome; None when that import must read it all
    resume_state: Callable[[Outcome], dict | None] | None = None
    # what the last import kept for resuming this session, when its journal is still as that import
    # left it (set by run_import before a full read's write: an importer may continue it)
    resumed_from: dict | None = None
    raw_at: int | None = None  # the offset of the source line under the meta's raw
    # after a write that found its journal (not one it created): the journal's stamp (inode, size,
    # mtime) when that write proved the journal holds only what this source gives (:class:`_Own`)
    proven: list | None = None
    # the store folder of a session whose project is not known (None: _unassigned), when where its
    # tool keeps it names one: a Claude Code transcript with no working folder in it (summary-only)
    folder: str | None = None
    # after a write that found its journal holding all of it (``unchanged``): the journal's inode,
    # size, mtime and ctime as that write read it (:func:`same_state`)
    seen: list | None = None
    # a session read in full whose journal the next import need not read if it is the same (:func:`same_state`),
    # and the sha256 of what a create of it would write (:func:`write_digest`), taken before a write reads its journal
    keeps_same: bool = False
    digest: str | None = None

    def skip(self, reason: str, count: int = 1) -> None:
        """Count ``count`` source items of this session that became no record, for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    @property
    def orphaned(self) -> bool:
        return self.status == "orphaned"

    def meta(self, no_raw: bool) -> dict:
        source = {**self.source, "status": self.status}
        if self.orphan:
            source["orphan"] = self.orphan
        meta = {"kind": "meta", "v": 2, "id": self.id, "project": self.project, "createdAt": self.created_at,
                "title": self.title, "source": source}
        if self.raw is not None and not no_raw:
            if self.raw_at is not None:
                meta[AT] = self.raw_at
            meta["raw"] = self.raw
        return meta


def _outcome(session: Session, path: Path, records: int, new: int, status: str, keys: int | None = None,
             after: tuple | None = None) -> Outcome:
    return Outcome(session.id, session.project, path, records, new, status, session.orphaned, session.status, tuple(session.orphan),
                   session.source_items, tuple(sorted(session.skipped.items())), session.source_lines, session.merged,
                   session.title if isinstance(session.title, str) else None, keys, after)


#: Keys a write counts in a set before it counts them on disk (:class:`~toolkit.importers.spill.KnownKeys`):
#: memory stays flat whatever the session's size.
COUNT_IN_MEMORY = 20_000


class _KeyCount:
    """The distinct source keys (``sourceKey`` and ``partKeys``) of the records a write adds, as a
    re-read of the journal counts them: in a set, then on disk past :data:`COUNT_IN_MEMORY`."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.spilled: KnownKeys | None = None

    def add(self, record: dict) -> None:
        key = record.get("sourceKey")
        parts = record.get(PART_KEYS)
        if parts is None and self.spilled is None and len(self.keys) < COUNT_IN_MEMORY:  # the common record, inline
            if isinstance(key, str):
                self.keys.add(key)
            return
        found = ([key] if isinstance(key, str) else []) + [p for p in (parts if isinstance(parts, list) else ()) if isinstance(p, str)]
        if self.spilled is not None:
            for one in found:
                self.spilled.setdefault(one)
            return
        self.keys.update(found)
        if len(self.keys) > COUNT_IN_MEMORY:
            self.spilled = KnownKeys()
            for one in self.keys:
                self.spilled.setdefault(one)
            self.keys = set()

    def total(self, known=None) -> int | None:
        """How many keys the journal holds after the write (``known``: those it held before); None
        when that is not counted (an extension past :data:`COUNT_IN_MEMORY` new keys)."""
        try:
            if self.spilled is not None:
                return len(self.spilled) if known is None else None
            if known is None:
                return len(self.keys)
            return len(known) + sum(1 for key in self.keys if key not in known)
        finally:
            self.close()

    def close(self) -> None:
        if self.spilled is not None:
            self.spilled.close()
            self.spilled = None
        self.keys = set()


def journal_path(store: Path, session: Session) -> Path:
    folder = slug(session.project) if session.project else (session.folder or UNASSIGNED)
    return store / _drive_folder(store, folder) / f"{session.id}.jsonl"


def _drive_folder(store: Path, folder: str) -> str:
    """The store folder of a project on a Windows drive: Windows names one folder ``D:\\x`` and
    ``d:\\x`` (Codex records its working folder as the shell gave it, in either case), so one
    store folder takes both: the one of its own case if the store has it, else one of the other
    case it has, else the drive letter upper case, as Windows writes it.  The same folder whatever
    order the sessions come in (worker processes each decide alone); a store that holds both keeps
    both.  Any other folder as it is."""
    if len(folder) > 3 and folder[1:3] == "--" and folder[0].isascii() and folder[0].isalpha() \
            and not os.path.lexists(store / folder):
        other = folder[0].swapcase() + folder[1:]
        return other if os.path.isdir(store / other) else folder[0].upper() + folder[1:]
    return folder


#: Bytes a journal's name leaves for the names levelsess derives from it: its lock's temp file
#: ``.<id>.jsonl.lock.<pid>.tmp``, a saved tail ``<id>.jsonl.<UTC stamp>.tail``, salvage's
#: ``.<id>.jsonl.rejected.map.json.<pid>.tmp``.
_DERIVED_NAMES = 48
_READABLE = 96  # characters of a hashed id's readable prefix


def fit_id(session_id: str, limit: int) -> str:
    """``session_id``, or a readable prefix of it plus a hash of the whole id when its journal
    (``<id>.jsonl``) and the files named after it would pass a file system's ``limit`` bytes
    per name.  Deterministic, so a re-import finds the same journal; the whole id is kept in the
    journal's meta as ``source.id``."""
    room = limit - len(".jsonl") - _DERIVED_NAMES
    whole = session_id.encode("utf-8", "surrogatepass")
    if len(whole) <= room:
        return session_id
    digest = hashlib.sha256(whole).hexdigest()[:32]
    keep = max(0, min(_READABLE, room - len(digest) - 2))
    prefix = whole[:keep].decode("utf-8", "ignore")
    return f"{prefix}-h{digest}" if prefix else f"h{digest}"


class _Stripped:
    """A session's records without ``raw`` (--no-raw), as re-iterable as the records themselves
    (a list, or a reader that converts them from the source on each pass)."""

    def __init__(self, records) -> None:
        self.records = records

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return self._strip(iter(self.records))

    def select(self, known: dict, lines=None):
        select = getattr(self.records, "select", None)
        return self._strip(select(known, lines) if select is not None else iter(self.records))

    @staticmethod
    def _strip(records):
        for record in records:
            yield {k: v for k, v in record.items() if k != "raw"}


def write_session(store: Path, session: Session, *, dry_run: bool = False, no_raw: bool = False) -> tuple[Outcome, list[Finding]]:
    """Create or extend the session's journal and keep the bytes of its source records too large
    to parse here (:func:`keep_too_large`); return what happened and any finding."""
    if session.title is None and isinstance(session.records, (list, Records)):  # the source named it not: VS Code, Cursor, OpenCode
        session.title = first_prompt(session.records)
    outcome, findings = _write_journal(store, session, dry_run=dry_run, no_raw=no_raw)
    return outcome, findings + keep_too_large(store, session, dry_run=dry_run)


def first_prompt(records: list[dict]) -> str | None:
    """The first prompt typed, one line, at most 120 characters (what an editor shows for a chat it
    never named): a user record that is no tool result, text the tool added or a parent's copy."""
    from ..layouts.base import one_line
    from ..layouts.levelcode import preview_of

    for record in records:
        if record.get("kind") == "user" and not (record.get("toolResult") or record.get("injected") or record.get("inherited")):
            prompt = record.get("prompt")  # the typed part an importer took out of a wrapper (Cursor's <user_query>)
            text = one_line(prompt) if isinstance(prompt, str) else preview_of(record.get("content"), record.get("added"))
            if text:
                return text
    return None


def _write_journal(store: Path, session: Session, *, dry_run: bool, no_raw: bool) -> tuple[Outcome, list[Finding]]:
    """Create or extend the session's journal; return what happened and any finding.

    A new journal is linked into place whole, so it never replaces one that appeared
    meanwhile (that one is then extended instead).  An existing journal is extended under the
    session lock: which records it holds and its last ``seq`` are read inside the lock.  A symlinked journal
    is never written through, nor a symlinked folder in the store, and a live writer's session is
    left for the next import.  An id too long for a file name is shortened (:func:`fit_id`), unless an
    earlier import's journal has it whole.
    """
    whole = journal_path(store, session)
    fitted = fit_id(session.id, durable.name_max(whole.parent))
    if fitted != session.id and not os.path.lexists(whole):  # (an earlier import's journal keeps its name)
        session.source, session.id = {**session.source, "id": session.id}, fitted  # the meta keeps the whole id
    path = _same_id(store, journal_path(store, session))
    records = session.records if not no_raw else _Stripped(session.records)
    if path.is_symlink():
        return _outcome(session, path, 0, 0, "skipped"), [Finding("symlink", "warning", str(path), None, None,
                                                                   "not updated: a symlinked journal is never written through")]
    confinement = durable.Confinement.of((store,), (store / ".levelsess",))
    symlinked = confinement.refusal(path.parent)
    if symlinked is not None:
        return _symlinked(session, path, symlinked)
    same = _same_as_kept(session, path, records, no_raw)
    if same is not None:  # read in full, and a create would write what it wrote when its journal was last found whole
        return same, []
    read: list = []  # what the plan read of the journal, for the write to use if it is still as read
    planned = _plan(session, path, records, no_raw, None if dry_run else read)  # read-only: nothing new touches nothing
    try:
        if dry_run or planned[0].status in ("unchanged", "skipped"):
            return planned
        try:
            with durable.confined(confinement):
                return _write(store, session, path, records, planned, no_raw, read)
        except SymlinkedFolderError as exc:  # .levelsess/recovered, or a folder that became a link since: nothing written
            return _symlinked(session, path, exc)
    finally:
        for known, _last_seq, _title, held, _stamp in read:
            known.close()
            held.close()


def _same_id(store: Path, path: Path) -> Path:
    """``path``, or the journal an earlier import wrote for the same session id in another project
    folder (its project since mapped with ``--map``, or chosen with ``--project``): one session id
    is one journal, extended where it is (the most recently written, when an older import left two)."""
    in_place(path)  # (a journal of that name this import is still linking)
    if os.path.lexists(path):
        return path
    names = NAMES.get()
    if names is not None:  # an import's: the store listed once, then kept up to date with what it writes
        if store not in names:
            names[store] = _names_in(store)
        found = [p for p in names[store].get(path.name, ()) if p.parent != path.parent and os.path.isfile(p)]
    else:
        try:
            found = [folder / path.name for folder in store.iterdir()
                     if folder.name[:1] != "." and folder != path.parent and os.path.isfile(folder / path.name)]
        except OSError:
            return path
    if not found:
        return path
    return max(found, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def _names_in(store: Path) -> dict[str, list[Path]]:
    names: dict[str, list[Path]] = {}
    try:
        folders = [store / entry.name for entry in os.scandir(store) if entry.name[:1] != "."]
    except OSError:
        return names
    for folder in folders:
        try:
            with os.scandir(folder) as listed:
                for entry in listed:
                    names.setdefault(entry.name, []).append(folder / entry.name)
        except OSError:  # not a folder, or one it cannot list: as a file not found there
            continue
    return names


def _named(store: Path, path: Path) -> None:
    """A journal the import created, for :func:`_same_id` (when it keeps the store's names)."""
    names = NAMES.get()
    if names is not None and store in names:
        names[store].setdefault(path.name, []).append(path)


def _symlinked(session: Session, path: Path, error: SymlinkedFolderError) -> tuple[Outcome, list[Finding]]:
    where = path if path.exists() else Path(error.link or path.parent)  # a finding names a path that exists
    return _outcome(session, path, 0, 0, "skipped"), [Finding(
        "symlinked-folder", "error", str(where), None, None,
        f"not imported: {error.detail}, and levelsess never writes through a symlinked folder; {error.hint}")]


def _write(store: Path, session: Session, path: Path, records, planned: tuple[Outcome, list[Finding]],
           no_raw: bool, read: list) -> tuple[Outcome, list[Finding]]:
    if planned[0].status == "created":
        with durable.new_dirs(path.parent):  # a failed write leaves no empty project folder
            try:  # linked into place, so it can never replace a journal that appeared meanwhile
                created = _create(session, path, records, no_raw), []
                _named(store, path)
                return created
            except FileExistsError:
                pass  # it did appear: extend it under the lock like any existing journal
    from .. import locks  # (an import that writes nothing never loads them)

    try:
        with locks.holding(path):
            return _extend(store, session, path, records, no_raw, read)
    except LockBusyError as exc:
        return _locked(session, path, exc)


def _locked(session: Session, path: Path, exc: LockBusyError) -> tuple[Outcome, list[Finding]]:
    """A journal a live writer holds: left for the next import, with a ``locked`` finding."""
    return _outcome(session, path, 0, 0, "skipped"), [Finding("locked", "warning", str(path), None, None,
                                                              f"not updated: {exc}; import again when the editor is closed")]


def _plan(session: Session, path: Path, records: list[dict], no_raw: bool, read: list | None = None) -> tuple[Outcome, list[Finding]]:
    """What a write would do, reading only (--dry-run).  Into ``read`` (when given) what it read of
    a journal it would extend, with the journal's stamp, for the write to use (the caller closes it)."""
    if not path.exists():
        return _outcome(session, path, len(records), len(records), "created"), []
    try:
        stamp = _stamp(path)
        known, last_seq, title, held = _existing(path)
        held.lines.same_source = held.path == session.source.get("path")
    except TornTailError:  # an import killed mid-append: the write trims it and carries on
        return _outcome(session, path, 0, 0, "updated"), []
    except DurabilityError:
        raise  # no room for its keys: not the journal's fault
    except LevelsessError as exc:
        return _refused(session, path, exc)
    kept = False
    own = _Own(session, known, held)
    try:
        new, extra = _additions(session, records, known, title, held, no_raw, own)
        had = len(known)
        partials = known.partials() if not (new or extra) else None  # (the seq of each record still partial: a resume supersedes it)
        if (new or extra) and read is not None and stamp is not None:
            read.append((known, last_seq, title, held, stamp))
            kept = True
    finally:
        if not kept:
            known.close()
            held.close()
    status = "updated" if new or extra else "unchanged"
    if status == "unchanged":
        if stamp is not None:  # (its stamp before it was read: anything appended since undoes what was found)
            session.seen = _seen(stamp)
            if own.proven(had):
                session.proven = session.seen[:3]
        return _outcome(session, path, had, 0, status, had, (last_seq, title, partials)), []
    return _outcome(session, path, had + new, new, status), []


# -- a source read in full again, whose journal held all of it last time (issue 27) ----------------------
#
# A source with no lines of its own for ``restore`` (a Cursor or VS Code database, whose records
# carry every byte kept of it) is read in full whenever its file changed: the editor writes to it
# all day.  Each session's journal was read again too, to find it already holds every record.
# Before a write reads a session's journal, :func:`write_digest` hashes what a create of the session
# would write (its meta line, each record's line and the keys that instruct the writer).  After a
# write that found the journal holding all of it (``unchanged``), :func:`same_state` keeps that hash,
# the journal's stamp as read and what the write found.  The next import that reads the session again
# hashes it again: the same hash is the same session in every byte a write compares with its journal,
# and the journal, untouched since (its stamp), is the one the last write read: reading it again
# finds what that write found (:func:`_same_as_kept`), and it is not read.  The outcome's other fields
# (items, skipped, merged) are the current read's, as a full write's are.


def write_digest(session: Session, records: Iterable[dict], no_raw: bool) -> str:
    """The sha256 of what a create of ``session`` with ``records`` would write: its meta line and
    each record's numbered line, and after a record's line its :data:`WRITER_KEYS` (left out of the
    line; a write compares the journal by them).  Kept on the session: taken once."""
    if session.digest is None:
        digest = hashlib.sha256(encode(session.meta(no_raw)))
        digest.update(b"\n")
        update, numbered, writer = digest.update, _numbered_line, WRITER_KEYS
        for seq, record in enumerate(records, start=1):
            update(numbered(record, seq, b"\n")[0])  # (every key but those the line leaves out)
            if not record.keys().isdisjoint(writer):  # (after a NUL: no line starts with one)
                update(b"\0" + _dumps([[key, record[key]] for key in writer if key in record]) + b"\n")
        session.digest = digest.hexdigest()
    return session.digest


def same_state(session: Session | None, outcome: Outcome) -> dict | None:
    """After the write of a session whose journal the next import need not read if it is the same
    (``keeps_same``): when the write found the journal holding all of it (``unchanged``), still as it
    read it, what :func:`_same_as_kept` needs; else None.  ``journal``: the journal's stamp, which the
    import cache checks before it gives a state back."""
    if (session is None or outcome.status != "unchanged" or session.digest is None or session.seen is None
            or outcome.after is None or outcome.keys is None or _seen(_stamp(outcome.path)) != session.seen):
        return None
    last_seq, title, partials = outcome.after
    if not (title is None or type(title) is str):  # (what a journal's title record holds, and a state keeps)
        return None
    return {"journal": session.seen[:3], "same": {
        "path": str(outcome.path), "ctime": session.seen[3], "digest": session.digest, "records": outcome.records,
        "keys": outcome.keys, "seq": last_seq, "title": title, "partials": partials, "proven": session.proven}}


def _seen(stamp: tuple | None) -> list | None:
    """A journal's inode, size, mtime and ctime of its :func:`_stamp`: the import cache's stamp of it,
    and the ctime, which moves when anything rewrote the file and put its times back."""
    return list(stamp[1:]) if stamp is not None else None


def _count(value: object) -> bool:
    """A count or a seq as a state keeps one (a damaged cache's is none: never reported, nor written back)."""
    return type(value) is int and 0 <= value < 1 << 63


def _same_as_kept(session: Session, path: Path, records: Iterable[dict], no_raw: bool) -> Outcome | None:
    """The ``unchanged`` outcome the last import kept of ``session`` (:func:`same_state`), when its
    journal ``path`` is as that import left it and a create would write the same bytes as then
    (:func:`write_digest`, taken here, before any read of the journal): what reading the journal
    again would find.  None: the write reads it."""
    if not session.keeps_same:
        return None
    seen = _seen(_stamp(path))
    if seen is None:  # (a create: nothing to compare)
        return None
    digest = write_digest(session, records, no_raw)
    prior = session.resumed_from
    same = prior.get("same") if isinstance(prior, dict) else None
    journal = prior.get("journal") if type(same) is dict else None
    if type(journal) is not list or same.get("path") != str(path) or [*journal, same.get("ctime")] != seen:
        return None
    count, keys, last_seq, partials, proven = (same.get(name) for name in ("records", "keys", "seq", "partials", "proven"))
    title = same.get("title")
    if not (_count(count) and _count(keys) and _count(last_seq) and type(partials) is dict and (title is None or type(title) is str)
            and all(type(k) is str and _count(v) for k, v in partials.items())
            and (proven is None or proven == seen[:3]) and same.get("digest") == digest):
        return None
    session.seen, session.proven = seen, proven
    return _outcome(session, path, count, 0, "unchanged", keys, (last_seq, title, partials))


#: The :class:`~toolkit.durable.Committer` new journals are handed to (fsynced and linked in the
#: background while the next session converts), while an import sets one; else each is linked here.
COMMITS: contextvars.ContextVar[durable.Committer | None] = contextvars.ContextVar("commits", default=None)
#: While an import sets a list: each new journal's (path, :class:`~toolkit.journal.WrittenScan`, its
#: temp file's stat once written), for its index to be made without reading the journal back.
WRITTEN: contextvars.ContextVar[list | None] = contextvars.ContextVar("written", default=None)


def in_place(path: Path) -> None:
    """Wait until the journal ``path`` this import created is in place (or given up), when the
    background thread still has it: for what must find it there now."""
    commits = COMMITS.get()
    if commits is not None:
        commits.settle(path.name)


def written_stamp(path: Path) -> list | None:
    """The journal ``path``'s stamp (:func:`~toolkit.importers.unchanged.journal_stamp`: inode, size,
    mtime) as a resume state keeps it, without waiting for the background thread to link a new one:
    the file it links is the one written, and a link changes none of those.  (Were it not linked,
    the unit is written again, and its states made again: :func:`~toolkit.importers._again`.)
    A resume state of each unit was taken after waiting for the fsync of its journal: a first
    import of many small rollouts waited a tenth of its time there."""
    commits = COMMITS.get()
    info = commits.written(path) if commits is not None else None
    return journal_mark(info) if info is not None else journal_stamp(path)


def _create(session: Session, path: Path, records: list[dict], no_raw: bool) -> Outcome:
    count = 0
    held = _Held()
    when = session.created_at
    commits, written = COMMITS.get(), WRITTEN.get()
    writer = (commits.new_file(path) if commits is not None  # linked later: the importer waits for it (and its FileExistsError)
              else durable.atomic_writer(path, sync_dir=False, exclusive=True))  # run_import fsyncs each folder once
    from ..journal import WrittenScan  # (an import that writes nothing never loads the reader)

    fed = WrittenScan(path) if written is not None else None
    feed = fed.line if fed is not None else lambda _line, _value=None: None
    feed_terminated = fed.numbered if fed is not None else lambda _line, _value: None  # (each line as _numbered_line makes it)
    plain_events = fed.plain_events if fed is not None else lambda lines, k, _seq, _t, plain=False: len(lines) - k
    with writer as out:
        meta = session.meta(no_raw)
        _carries(meta, held.carried)
        line = encode(meta)
        out.write(line + b"\n")
        feed(line)
        keys = _KeyCount()
        partials = {}
        carried, count_key, write, numbered = held.carried, keys.add, out.write, _numbered_line
        for count, record in enumerate(records, start=1):
            _carries(record, carried)
            count_key(record)
            if record.get("partial") is True:
                partials[record.get("sourceKey")] = count
            when = record.get("t") or when
            line, value = numbered(record, count, b"\n")
            write(line)
            feed_terminated(line, value)
        last = count
        try:
            t = when or ""
            head = _source_line_head(t)
            for item in _source_batches(session, held, when, no_raw):
                if type(item) is list:  # source-line events: [(offset, bytes)], made from a template
                    first = last + 1
                    lines = _source_lines(head, first, item)
                    last += len(lines)
                    write(b"\n".join(lines))
                    write(b"\n")
                    k = 0
                    while k < len(lines):  # plain_events takes what it can, feed (with its record) the one it declines, in order
                        k += plain_events(lines, k, first + k, t, plain=True)  # (made from a template, of rows with no newline)
                        if k < len(lines):
                            feed(lines[k], _source_value(t, item[k][0], first + k))
                            k += 1
                    continue
                last += 1
                line, value = numbered(item, last, b"\n")
                write(line)
                feed_terminated(line, value)
        finally:
            held.close()
        if fed is not None:
            out.flush()
            written.append((path, fed, os.fstat(out.fileno())))
    return _outcome(session, path, count, count, "created", keys.total(), (last, session.title, partials))


_CLOSE = {b"": b"}", b"\n": b"}\n"}  # what ends a line whose raw was spliced in, by what the writer ends it with


def _numbered_line(record: dict, seq: int, end: bytes = b"") -> tuple[bytes, dict]:
    """The journal line of ``record`` numbered ``seq``: ``encode({**record, "seq": seq})``, with
    ``coversThrough`` after it when the record covers the one before, and ``end`` after it (the
    writer's newline: the line is made once, its raw bytes copied once); one copy of the record.
    And that copy: what parsing the line gives, but a :class:`Raw` (spliced in last as its bytes)."""
    out = record.copy()  # (a copy and a few deletions: a filtering comprehension cost 3 % of an import)
    raw = out.get("raw")
    spliced = isinstance(raw, Raw)
    if spliced:
        del out["raw"]
    for key in WRITER_KEYS:
        if key in out:
            del out[key]
    out["seq"] = seq
    if record.get(COVERS_PREVIOUS):
        out["coversThrough"] = seq - 1
    try:
        line = _orjson_dumps(out)
    except TypeError:  # (a lone surrogate: _dumps writes it as a \u escape)
        line = _dumps(out)
    if spliced:  # (a transcript's raw lines are most of what an import writes: joined, not added up in copies)
        return b"".join((memoryview(line)[:-1], b',"raw":', raw.data, _CLOSE.get(end) or b"}" + end)), out
    return (line + end if end else exact(line)), out  # (an append holds a batch of lines: each at its size)


def _source_line_head(t: str) -> bytes:
    """What every ``source-line`` event of time ``t`` starts with, up to its offset (:func:`_source_lines`)."""
    return _dumps({"kind": "event", "t": t, "type": SOURCE_LINE})[:-1] + b"," + _dumps(AT) + b":"


def _source_lines(head: bytes, seq: int, lines: list[tuple[int, bytes]]) -> list[bytes]:
    """The lines :func:`_numbered_line` makes of the ``source-line`` events of ``lines`` (each
    ``(offset, data)``, one line of the source) numbered from ``seq`` (``head``: :func:`_source_line_head`
    of their time), made from a template without their records: a Codex rollout's mirrors may be
    most of its lines."""
    return [b"%s%d,\"seq\":%d,\"raw\":%s}" % (head, offset, n, data) for n, (offset, data) in enumerate(lines, start=seq)]


def _source_value(t: str, offset: int, seq: int) -> dict:
    """The copy of that event's record :func:`_numbered_line` gives with it (its ``raw`` left out)."""
    return {"kind": "event", "t": t, "type": SOURCE_LINE, AT: offset, "seq": seq}


def _stamp(path: Path) -> tuple | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _extend(store: Path, session: Session, path: Path, records: list[dict], no_raw: bool,
            read: list | None = None) -> tuple[Outcome, list[Finding]]:
    """Append what the journal lacks, under the session lock (held by the caller).  ``read``: what
    the plan read of it, used when the journal is still as it was then (else read again)."""
    findings = []
    saved = _trim_torn_tail(store, path)
    if saved is not None:
        saved = Path(os.path.realpath(saved))  # where the bytes are
        findings.append(Finding("torn-tail", "error", str(path), None, None,
                                f"an interrupted append's incomplete record was saved to {saved} and trimmed", repaired=True,
                                saved_to=str(saved)))
    if read and saved is None and _stamp(path) == read[0][4]:
        known, last_seq, title, held, _stamp_then = read.pop()  # (closed here, below)
    else:
        try:
            known, last_seq, title, held = _existing(path)
            held.lines.same_source = held.path == session.source.get("path")
        except DurabilityError:
            raise  # no room for its keys: not the journal's fault
        except LevelsessError as exc:
            return _refused(session, path, exc)
    own = _Own(session, known, held)
    try:
        extra = []
        if session.title is not None and session.title != title:  # the title record goes first: a pass for its time
            extra = _title(session, _when(session, _looked_at(records, known, held)), title)
        after = _After(session.created_at)
        new = (record for record in after.new(_looked_at(records, known, held, own), held.carried) if record is not None)
        partials: dict = {}
        written = _append(path, chain(extra, new, after.source_records(session, held, no_raw)), last_seq, partials)
        had = len(known)
        if own.proven(had):  # (under the lock: what it appended is all that was appended since the journal was read)
            info = os.stat(path)
            session.proven = [info.st_ino, info.st_size, info.st_mtime_ns]
        keys = after.keys.total(known)
    finally:
        known.close()
        held.close()
    if not written:
        return _outcome(session, path, had, 0, "unchanged", had, (last_seq, title, None)), findings
    return _outcome(session, path, had + after.count, after.count, "updated", keys,
                    (last_seq + written, session.title if extra else title, partials)), findings


class Resumed(NamedTuple):
    """A source read from where the last import stopped, as :func:`write_resumed` takes it: the session
    (its ``records`` those a full re-import would append, in order), its journal and what the
    journal must still be (``had`` keys, ``after``: last seq and title), the time of the last record a
    full read looks at, the keys of the records it supersedes, what reading it says (as a full read
    says it) and the ``source-line`` events of its new lines no record carries."""

    session: Session
    journal: Path
    had: int
    after: tuple
    when: str | None
    held: frozenset = frozenset()
    findings: Sequence = ()
    events: Sequence = ()


def write_resumed(store: Path, resumed: Resumed, journal: list,
                  commits: durable.Committer | None = None) -> tuple[Outcome, list[Finding]] | None:
    """Append what a source that only grew adds to its journal, from where the last import left it
    (issue 27): the session's ``records`` are the records a full re-import would append, in its
    order (``when``: the time of the last record it looks at).  The journal must still be as that
    import left it (``journal``: its inode, size and mtime; ``had`` source keys, of which ``held``
    are keys of records it supersedes; ``after``: its last seq and title), checked under the session
    lock, else None (nothing written: read the source in full).  A title change goes first, then the
    records, the ``source-line`` events of the new lines no record carries (``events``) and the
    source's new state last, as :func:`_extend` writes them.  With ``commits``, the appends' fsyncs
    are its thread's (the caller waits for them: :meth:`~toolkit.durable.Committer.wait_through`)."""
    session, path, had, after, when, held, _findings, events = resumed
    records = session.records
    last_seq, title = after[:2]
    confinement = durable.Confinement.of((store,), (store / ".levelsess",))
    if path.is_symlink() or confinement.refusal(path.parent) is not None:
        return None
    from .. import locks

    try:
        with durable.confined(confinement), locks.holding(path):
            info = os.stat(path)
            if [info.st_ino, info.st_size, info.st_mtime_ns] != journal:
                return None
            extra = _title(session, when, title)
            keys = _KeyCount()
            for record in records:
                keys.add(record)
            tail = [*events, _state_event(session.state, when)]
            partials: dict = {}
            written = _append(path, chain(extra, records, tail), last_seq, partials, commits)
    except LockBusyError as exc:
        return _locked(session, path, exc)
    total = None if keys.spilled is not None else len(keys.keys - held)  # ``held``: keys of records superseded, not new
    keys.close()
    return _outcome(session, path, had + len(records), len(records), "updated", None if total is None else had + total,
                    (last_seq + written, session.title if extra else title, partials)), []


def _append(path: Path, records: Iterable[dict], seq: int, partials: dict | None = None,
            commits: durable.Committer | None = None) -> int:
    """Append ``records`` numbered from ``seq`` + 1, about :data:`APPEND_BATCH` bytes at a time;
    return how many (and into ``partials`` the seq of each ``partial`` one, by its key).  A kill
    between two batches leaves whole records, which the next import counts as held and continues after."""
    batch, size, count = [], 0, 0
    for count, record in enumerate(records, start=1):
        if partials is not None and record.get("partial") is True:
            partials[record.get("sourceKey")] = seq + count
        batch.append(_numbered_line(record, seq + count)[0])
        size += len(batch[-1])
        if size >= APPEND_BATCH:
            durable.append_lines(path, batch, commits)
            batch, size = [], 0
    if batch:
        durable.append_lines(path, batch, commits)
    return count


def _looked_at(records, known, held: _Held, own: _Own | None = None) -> Iterator[tuple[dict, dict | None]]:
    """Each record looked at, with what the journal lacks of it: itself, its supersession (a
    partial copy it completes, a kept copy whose source lines changed or grew, or that was kept
    off the chain the record is on now) or None.  Once a record moves onto the conversation, the
    records after it are appended again too (``moved``), so the session reads in its new order."""
    lines = held.lines
    lines.begin()
    select = getattr(records, "select", None)  # a lazy source converts only what may be new
    see = own.see if own is not None and own.keys is not None else None
    for record in select(known, lines) if select is not None else records:
        key = record.get("sourceKey")
        if see is not None:
            see(record)
        if key not in known and record.get(ALIAS) not in known:
            identity = record.get(LINE_ID)
            if isinstance(identity, str) and lines.same_source:  # a new key: a new line, or one whose bytes changed in place
                values = _line_values(record, record.get("raw"))
                entry = lines.held.get(identity)
                seqs = (lines.changed_lines([((identity,), line_digest(values[0]))])
                        if values and len(values) == 1 and entry is not None and entry >= 0 else None)
                if seqs and any(s in lines.seen for s in seqs):
                    seqs = []  # its copy stands for another line still there (a mirror whose key it had): both kept
                if seqs is not None or entry is None or entry < 0:
                    yield record, (lines.superseding(record, seqs) if seqs else record)
                else:
                    yield record, None  # the same line, only spelled otherwise (whitespace): nothing new
                continue
            yield record, (lines.superseding(record, []) if lines.reorder else record)
            continue
        if LINE_ID in record:
            entry = lines.held.get(key)
            if entry is not None and entry >= 0:
                lines.seen.add(entry >> 32)
        partial = known.get(key) if key in known else None
        if partial is not None and (not record.get("partial") or _grew(record, known)):
            # finished since, or grew (more parts): supersede it, and any part kept on its own meanwhile
            seqs = [partial, *(lines.changed(record) or ())]
        else:
            seqs = lines.changed(record, moved=key not in known and bool(record.get(SUPERSEDES_ALIAS)))
        if seqs is None and lines.reorder and record.get(SUPERSEDES_ALIAS):
            seqs = lines.holders(record)  # after a record that moved: appended again, in the new order
        yield record, lines.superseding(record, seqs)


class _Own:
    """Whether a journal this write found (it did not create it) holds only what the session's
    source gives: every key it holds is a key of one of the records read now (so nothing another
    source wrote, nor a line the source no longer has), every source line it carries lies within the
    bytes read (none where the next import's new lines begin), and the only source it names is this
    one, or besides it only files no longer there (:func:`_only_source`) (issue 27: a journal an
    import created is known to be its source's, and the next import reads on from where it stopped;
    one found, after the import cache was lost or made by ``--reread``, was read in full at every
    growth, for good).  The proof needs a pass over every record (a source that converts only what
    may be new gives none) and the journal's keys in memory."""

    def __init__(self, session: Session, known: KnownKeys, held: _Held) -> None:
        state = session.state
        self.known = known.in_memory()
        mine = (state is not None and getattr(session.records, "select", None) is None and self.known is not None
                and _only_source(held, state.path) and not held.carried.reaches(state.size))
        self.keys: set[str] | None = set() if mine else None  # the journal's keys a record read now has

    def see(self, record: dict) -> None:
        keys, known = self.keys, self.known
        for key in (record.get("sourceKey"), record.get(ALIAS)):
            if key in known:
                keys.add(key)
        parts = record.get(PART_KEYS)
        for key in parts if isinstance(parts, list) else ():
            if key in known:
                keys.add(key)

    def proven(self, held: int) -> bool:
        """Whether every one of the journal's ``held`` keys was seen (after a pass over every record)."""
        return self.keys is not None and len(self.keys) == held


def _only_source(held: _Held, path: str) -> bool:
    """Whether the journal names no source file but ``path`` (its meta's, its source states'), or
    besides it only files no longer there: a rollout moved (a thread archived, then continued; a
    home renamed) leaves its journal naming where it was, and was read in full at every growth, for
    good.  What such a journal holds is this file's all the same, which the keys prove; a file it
    names that is still there (a copy in archived_sessions) may write it too: never this one's alone."""
    named = {p for p in held.states if p != path}
    if held.path != path:
        named.add(held.path)
    return all(isinstance(p, str) and not os.path.lexists(p) for p in named)


def _grew(record: dict, known) -> bool:
    """Whether a record still ``partial`` carries source items its partial copy in the journal does
    not (a response whose parts were still being written at both imports)."""
    parts = record.get(PART_KEYS)
    return isinstance(parts, list) and any(key not in known for key in parts)


def _when(session: Session, looked_at: Iterable[tuple[dict, dict | None]]) -> str | None:
    """The time of the last record looked at (a title change and the source events take it)."""
    when = session.created_at
    for record, _addition in looked_at:
        when = record.get("t") or when
    return when


def _title(session: Session, when: str | None, title: object) -> list[dict]:
    return [{"kind": "title", "t": when, "title": session.title}] if session.title is not None and session.title != title else []


class _After:
    """One streamed pass over the records looked at: counts the new ones, adds the source lines
    they carry to a journal's, and keeps the last time; then what the journal lacks of its source."""

    def __init__(self, when: str | None) -> None:
        self.count, self.when = 0, when
        self.keys = _KeyCount()

    def new(self, looked_at: Iterable[tuple[dict, dict | None]], carried: Offsets) -> Iterator[dict | None]:
        for record, addition in looked_at:
            self.when = record.get("t") or self.when
            if addition is not None:
                self.count += 1
                self.keys.add(addition)
                _carries(addition, carried)
            yield addition

    def source_records(self, session: Session, held: _Held, no_raw: bool) -> Iterator[dict]:
        """Evaluated lazily, after :meth:`new` is exhausted (chained after it)."""
        t = self.when or ""
        for item in _source_records(session, held, self.when, no_raw):
            if type(item) is tuple:  # a source line: its event
                item = {"kind": "event", "t": t, "type": SOURCE_LINE, AT: item[0], "raw": Raw(item[1])}
            yield item


def _additions(session: Session, records, known: KnownKeys, title: object, held: _Held,
               no_raw: bool, own: _Own | None = None) -> tuple[int, bool]:
    """How many records a journal lacks (or whose partial copy they complete); and whether it
    lacks anything else: a title change, source lines no record carries, the source's new state."""
    after = _After(session.created_at)
    try:
        for _addition in after.new(_looked_at(records, known, held, own), held.carried):
            pass
    finally:
        after.keys.close()  # (a plan counts no keys)
    state = session.state
    extra = bool(_title(session, after.when, title)) or (
        state is not None and not no_raw and (state.mark() != held.states.get(state.path)
                                              or any(offset not in held.carried for offset, _length in state.lines)))
    return after.count, extra


@dataclass
class _Held:
    """What a journal holds of its line-based source: the offsets of the lines it carries under
    ``raw``, and the last ``source-state`` (its mark) of each source file (a thread's rollout and its
    copy in archived_sessions write one journal: each is compared with its own last state, so an
    import that finds neither changed writes nothing)."""

    carried: Offsets = field(default_factory=Offsets)  # one per source line: on disk past a few thousand
    states: dict = field(default_factory=dict)  # the last source-state (its mark) of each source file it names
    lines: KeptLines = field(default_factory=lambda: KeptLines())
    path: object = None  # the source file its meta names

    def close(self) -> None:
        self.carried.close()
        self.lines.close()


#: A journal's kept lines held in a dict before they move to a temporary database, and its pages in
#: memory (KiB): a re-import holds these beside the journal's keys, so they are kept small.
KNOWN_LINES_IN_MEMORY, LINES_CACHE_KIB = 8192, 1024


class KeptLines:
    """Per source line the journal carries (by its key): the seq of the last record carrying it and
    its :func:`line_digest`; on disk past a few thousand, like :class:`KnownKeys`.  During one pass
    over the source's records (:meth:`begin`): the kept seqs superseded so far, and whether a
    record moved onto the conversation (then the ones after it are appended again, in order)."""

    #: A line's entry: its record's seq above 32 bits of its digest, in one int64 (a seq past 2**31 is not held).
    _SEQ_LIMIT = 1 << 31

    def __init__(self) -> None:
        self.held = KnownKeys(in_memory=KNOWN_LINES_IN_MEMORY, cache_kib=LINES_CACHE_KIB)  # small: beside the journal's keys
        self.replaced: set[int] = set()
        self.reorder = False
        self.seen: set[int] = set()
        self.same_source = False  # the journal's meta names the file read (a line's time and type say which line it is)

    def begin(self) -> None:
        self.replaced, self.reorder = set(), False
        self.seen: set[int] = set()  # kept seqs whose own key a record of this pass has (Codex: a mirror's key)

    #: The sources whose records are compared line by line (their key prefix): Claude Code (by uuid)
    #: and Codex CLI (by time and type); another importer's records cost nothing here.
    COMPARED = ("claude:", "sha256:")

    def keep(self, record: dict) -> None:
        seq = record.get("seq")
        key = record.get("sourceKey")
        if type(seq) is not int or not isinstance(key, str) or not key.startswith(self.COMPARED):
            return
        values = _line_values(record, record.get("raw"))
        keys = line_keys(record)
        if values is None or len(values) != len(keys):
            return
        if seq >= self._SEQ_LIMIT:
            return
        if isinstance(record.get("sourceKey"), str) and record["sourceKey"].startswith("sha256:") and len(values) == 1:
            identity = offset_line_key(values[0])  # a Codex line: also held by its time and type
            if identity is not None:
                before = self.held.get(identity)
                alike = before is not None and (before < 0 or before >> 32 != record.get("replaces"))
                self.held[identity] = -1 if alike else (seq << 32) | (line_digest(values[0]) & 0xFFFFFFFF)
        for alternatives, value in zip(keys, values):
            if alternatives:
                self.held[alternatives[0]] = (seq << 32) | (line_digest(value) & 0xFFFFFFFF)

    def _lines(self, record: dict) -> list[tuple[tuple[str, ...], int]] | None:
        if LINE_KEYS not in record and ALIAS not in record:
            return None  # a source whose key is no line's identity (Codex: a hash of the bytes, shared with a mirror)
        values = _line_values(record, record.get("raw"))
        keys = line_keys(record)
        if values is None or len(values) != len(keys):
            return None
        return list(zip(keys, (line_digest(v) for v in values)))

    def changed(self, record: dict, *, moved: bool = False) -> list[int] | None:
        """The seqs of the kept records carrying ``record``'s lines, when any of those lines is new,
        changed bytes, is held by another record than the rest or by one superseded in this pass,
        or (``moved``) its first is held only under its alias; else None."""
        lines = self._lines(record)
        return None if lines is None else self.changed_lines(lines, moved=moved)

    def holders(self, record: dict) -> list[int] | None:
        lines = self._lines(record)
        if lines is None:
            return None
        return self._walk(lines, False)[0] or None

    def changed_lines(self, lines: list[tuple[tuple[str, ...], int]], *, moved: bool = False) -> list[int] | None:
        seqs, differs = self._walk(lines, moved)
        # lines held by several records (a response's part kept on its own meanwhile) are one record now
        return seqs if seqs and (differs or len(seqs) > 1) else None

    def _walk(self, lines, moved: bool) -> tuple[list[int], bool]:
        seqs, differs = [], False
        for n, (alternatives, digest) in enumerate(lines):
            for rank, key in enumerate(alternatives):
                entry = self.held.get(key)
                if entry is not None:
                    seq = entry >> 32
                    if moved and n == 0 and rank > 0:
                        differs = self.reorder = True  # kept off the chain, on it now
                    differs |= (entry & 0xFFFFFFFF) != (digest & 0xFFFFFFFF) or seq in self.replaced
                    if seq not in seqs:
                        seqs.append(seq)
                    break
            else:
                differs = True  # a line the journal does not hold yet (a response's later part)
        return seqs, differs

    def superseding(self, record: dict, seqs: list[int] | None) -> dict | None:
        """``record`` superseding the kept records ``seqs`` (its first line's first, past those this
        pass superseded already); itself when they all were (its lines' copy gave way to a record
        without them); None for no seqs (nothing changed)."""
        if seqs is None:
            return None
        live = [s for s in seqs if s not in self.replaced]
        out = dict(record)
        if live:
            self.replaced.update(live)
            out["replaces"] = live[0]
            if len(live) > 1:
                out[ALSO_REPLACES] = live[1:]
        if self.reorder and record.get(SUPERSEDES_ALIAS):
            out[MOVED] = True
        return out if live or out.get(MOVED) else record

    def close(self) -> None:
        self.held.close()


def _carries(record: dict, into: Offsets) -> None:
    """Add the source offsets of the lines ``record`` carries under ``raw``."""
    if record.get("raw") is None:
        return
    at = record.get(AT)
    if type(at) is int:
        into.add(at)
    elif isinstance(at, list):
        into.update(a for a in at if type(a) is int)


def _source_records(session: Session, held: _Held, when: str | None, no_raw: bool) -> Iterator[dict | tuple[int, bytes]]:
    """``source-line`` events for the session's source lines no record carries (a Codex mirror, a
    line that joined a response already kept…), then a ``source-state`` event when the source is
    not as the journal's last one says: what ``restore`` rebuilds the file from.  A source-line
    event is given as ``(offset, bytes)``, the bytes its ``raw`` holds."""
    for item in _source_batches(session, held, when, no_raw):
        if type(item) is list:
            yield from item
        else:
            yield item


def _source_batches(session: Session, held: _Held, when: str | None, no_raw: bool, size: int = 1024,
                    budget: int = 1 << 20) -> Iterator[list[tuple[int, bytes]] | dict]:
    """:func:`_source_records`, its source lines given in lists of at most ``size`` lines and about
    ``budget`` bytes (memory stays flat whatever the lines): a rollout's mirrors may be most of its
    lines, and a new journal's writer makes their lines from a template, a list at a time.  Each
    line is read as the pass over the source's lines reaches it."""
    state = session.state
    if state is None or no_raw:
        return
    count, batch, held_bytes = 0, [], 0
    in_memory = held.carried.in_memory()
    carried = in_memory.__contains__ if in_memory is not None else held.carried.__contains__
    for offset, data in _uncarried(state, carried):
        batch.append((offset, data if data.find(b"\n") < 0 and data.find(b"\r") < 0 else Raw(data).data))
        held_bytes += len(data)
        if len(batch) >= size or held_bytes >= budget:
            count += len(batch)
            yield batch
            batch, held_bytes = [], 0
    if batch:
        count += len(batch)
        yield batch
    if count or state.mark() != held.states.get(state.path):
        yield _state_event(state, when)


def _uncarried(state: SourceState, carried: Callable[[int], bool]) -> Iterator[tuple[int, bytes]]:
    """``(offset, bytes)`` of each of the source's lines whose offset is not ``carried``, in order,
    each read as the pass reaches it: by the lines' own ``uncarried`` when they have one (a reader
    that holds the bytes: a Codex rollout's mirrors may be most of its lines), else each read."""
    own = getattr(state.lines, "uncarried", None)
    if own is not None:
        yield from own(carried)
        return
    read = state.read
    for offset, length in state.lines:
        if not carried(offset):
            yield offset, read(offset, length)  # (now: a reader may know the line by where the pass is)


def _state_event(state: SourceState, when: str | None) -> dict:
    """The ``source-state`` event: the source as this import read it."""
    return {"kind": "event", "t": when or "", "type": SOURCE_STATE, **state.mark()}


def trashed(store: Path, session: Session) -> Outcome:
    """A session the user trashed from the store (a tombstone): not imported again, counted."""
    return _outcome(session, journal_path(store, session), 0, 0, "trashed")


def not_written(store: Path, session: Session, exc: LevelsessError) -> tuple[Outcome, list[Finding]]:
    """A session this import could not write (a limit of the machine, a permission): counted as
    skipped, with a ``write-failed`` finding whose message says what to do."""
    path = journal_path(store, session)
    return _outcome(session, path, 0, 0, "skipped"), [Finding("write-failed", "error", str(path), None, None,
                                                              f"not imported: {exc}")]


def _refused(session: Session, path: Path, exc: LevelsessError) -> tuple[Outcome, list[Finding]]:
    code = exc.code if isinstance(exc, CorruptionError) else "unreadable"
    finding = Finding(code, "error", str(path), getattr(exc, "line", None), getattr(exc, "offset", None),
                      f"not updated: {exc}; it needs `levelsess fsck` first")
    return _outcome(session, path, 0, 0, "skipped"), [finding]


def _trim_torn_tail(store: Path, path: Path) -> Path | None:
    """Like a writer resuming its session: save and cut an incomplete final record (an
    import killed mid-append leaves one), so a rerun finishes the job.  Held under the lock."""
    size = path.stat().st_size
    if size == 0:
        return None
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return None
        tail = min(size, 64 << 20)
        handle.seek(size - tail)
        chunk = handle.read(tail)
    cut = chunk.rfind(b"\n")
    if cut < 0 and tail < size:
        return None  # a final line over 64 MiB: leave it to fsck
    keep = size - tail + cut + 1
    return durable.truncate_saving(path, keep, size, store / ".levelsess" / "recovered")  # the save makes the folder


def _existing(path: Path) -> tuple[KnownKeys, int, object, _Held]:
    """Source keys (each mapped to the seq of its record when that record is still
    ``partial``, else None), the last seq, the current title and what it holds of its
    source; raises on damage."""
    known, held = KnownKeys(), _Held()  # a million records' keys and offsets do not stay in memory
    try:
        last_seq, title = _read_journal(path, known, held)
    except BaseException:
        known.close()
        held.close()
        raise
    return known, last_seq, title, held


def _read_journal(path: Path, known: KnownKeys, held: _Held) -> tuple[int, object]:
    last_seq, title = 0, None
    from ..journal import iter_records

    for _line, _offset, record in iter_records(path):
        kind = record.get("kind")
        _carries(record, held.carried)
        held.lines.keep(record)
        if kind == "meta":
            title = record.get("title")
            source = record.get("source")
            held.path = source.get("path") if isinstance(source, dict) else None
            continue
        if isinstance(record.get("seq"), int):
            last_seq = record["seq"]
        if kind == "title":
            title = record.get("title")
        elif kind == "event" and record.get("type") == SOURCE_STATE:
            named = record.get("path")
            held.states[named if isinstance(named, str) else None] = {k: record.get(k) for k in ("path", "size", "sha256")}
        if record.get("sourceKey") is not None:
            partial = record.get("partial") is True and isinstance(record.get("seq"), int)
            known[record["sourceKey"]] = record["seq"] if partial else None
            parts = record.get(PART_KEYS)
            for key in parts if isinstance(parts, list) else ():
                known.setdefault(key, None)  # the other source items this record carries
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                raise TornTailError("the journal ends in an incomplete record", path=str(path), offset=size)
    return last_seq, title


# --- source records too large to parse here --------------------------------------------------

TOO_LARGE = "too-large"


def too_large_path(store: Path, session: Session, item) -> Path:
    """Where the bytes of a source line too large to parse are kept: ``<store>/.levelsess/too-large/
    <session id>/<source name>.line-<N>.<length>-bytes`` (the length in the name: a final line
    still being written is kept again, beside the first copy, once it has grown)."""
    return store / ".levelsess" / TOO_LARGE / session.id / f"{item.path.name}.line-{item.line}.{item.length}-bytes"


def keep_too_large(store: Path, session: Session, *, dry_run: bool = False) -> list[Finding]:
    """Copy each of the session's source lines too large to parse here, byte-exact and streamed,
    beside the store; one ``record-too-large`` finding each, naming the source line and the copy.

    Such a line became no record (it is counted under ``skipped``); this copy is what keeps it
    when the source tool deletes its file.  Kept even with ``--no-raw``: the copy is the record
    itself, not a duplicate of one.  A copy already there with the same length is not rewritten."""
    findings = []
    for item in session.too_large:
        target = too_large_path(store, session, item)
        what = (f"a record of {item.length:,} bytes is" if item.terminated else
                f"the last {item.length:,} bytes, with no newline yet (a record perhaps still being written), are")
        head = (f"{what} too large for levelsess to parse here (over {cap_text()}), so session {session.id} "
                "does not hold it as a record; ")
        try:
            kept = "an import would keep its bytes, exactly, in" if dry_run else _copy_line(item, target)
        except (OSError, LevelsessError) as exc:
            message = f"{head}its bytes could not be kept ({getattr(exc, 'strerror', None) or exc}); import again"
            findings.append(Finding("record-too-large", "error", str(item.path), item.line, item.offset, message))
            continue
        findings.append(Finding("record-too-large", "error", str(item.path), item.line, item.offset,
                                f"{head}{kept} {target}; a person must look at it (nothing was cut)",
                                saved_to=None if dry_run else str(target)))
    return findings


def _copy_line(item, target: Path) -> str:
    """Stream ``item``'s bytes from its source into ``target`` (atomically, through durable)."""
    try:
        if target.stat().st_size == item.length:
            return "its bytes were kept, exactly, earlier in"
    except FileNotFoundError:
        pass
    durable.ensure_dir(target.parent)
    with open_regular(item.path) as source, durable.atomic_writer(target) as out:
        source.seek(item.offset)
        left = item.length
        while left:
            block = source.read(min(CHUNK, left))
            if not block:
                raise FileChangedError(f"{item.path} shrank while its line {item.line} was being kept")
            out.write(block)
            left -= len(block)
        if item.terminated and source.read(1) != b"\n":  # the line still ends where it was measured
            raise FileChangedError(f"{item.path} changed while its line {item.line} was being kept")
    return "its bytes are kept, exactly, in"
