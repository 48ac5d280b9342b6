"""Keep every Claude Code session: transcripts (``~/.claude/projects/<slug>/<sessionId>.jsonl``
and their subagents) as LevelCode v2 journals (SOURCES-AGENTS.md §1, DESIGN.md §2.6 and §5).

Claude Code deletes transcripts older than ``cleanupPeriodDays`` (default 30) at start-up; a
nightly ``levelsess import --from claude`` is the copy that survives.  Each transcript becomes
``<store>/<slug(cwd)>/claude-<sessionId>.jsonl``.  What goes where (the shape is documented
in the README):

- **The conversation, in the order resume shows it**: the path from the last main-chain record
  back to its root (across a compaction through ``logicalParentUuid``), with the results of
  parallel tool calls after their call.  A typed prompt or tool result is a ``user`` record
  whose ``content`` is the source's, verbatim (strings, text, images, ``tool_result`` blocks);
  one API response written over several lines (same ``message.id`` and ``requestId``) is one
  ``assistant`` record at its first part's place, its content blocks verbatim and in order
  (text, thinking with its signature, tool_use), ``usage`` from its last part, so counted once;
  a compaction summary is a ``compact`` record; interrupts and API errors are ``event`` records,
  as are the system, progress and attachment records on the chain.
- **Then everything else, in file order**: records off that chain (other branches, what a
  break cut off, records beside the chain) as ``off-chain`` events saying which line they were
  on, their uuid and parent and why; titles (custom-title > ai-title > a summary of this
  conversation) as ``title`` records; other metadata as events.
- **Subagents** (``<session>/subagents/agent-*.jsonl``, and the inline ``isSidechain`` records
  of 1.0.x, one per root) are sessions of their own, ``claude-<sessionId>-agent-<agentId>`` /
  ``claude-<sessionId>-side-<root uuid>``, in the same project folder; their meta ``source``
  names the parent, and the parent holds a ``subagent`` event naming each, after the tool
  result that returned it.
- Every record keeps its source line under ``raw`` (a merged message: the list of its lines).

Every source record has a stable key (its uuid; a metadata line: a hash of its bytes and its
occurrence), so a re-import appends only what is new and never rewrites a journal; a message
still being written is imported ``partial`` and superseded once it is whole.  The source is
opened read-only and never written; damaged lines import every whole record in them and report
the rest (:mod:`toolkit.importers.sourcelines`).

Memory does not grow with a transcript's records (issue 28: a 1,000,000-record transcript took
3.4 GB): what the graph and the conversion need of each record is a row in a private temporary
SQLite database (:func:`toolkit.importers.spill.temp_db`), the walks run over two arrays of
about 11 bytes a record, and each record is converted from its line, re-read at its offset
(or kept from the first pass as bytes, within a fixed budget).  A group of transcripts of at
most :data:`ROWS_IN_MEMORY` records (nearly every session) holds its rows in a list instead,
and answers the same questions without a database (issue 27: a first import's SQL was a fifth
of its time).
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import orjson

from ..errors import DurabilityError, FileChangedError
from ..findings import Finding
from ..layouts.base import one_line
from ..layouts.claude_code import CHAIN, CLAUDE_CODE, PLACEHOLDER_MODELS, SUBAGENTS, TOP_LEVEL_TYPES, prompt_text, split_user
from ..lines import loads, open_regular
from .base import unconverted
from .output import (ALIAS, AT, COVERS_PREVIOUS, LINE_KEYS, PART_KEYS, SUPERSEDES_ALIAS, Options, Outcome, Raw, Resumed,
                     Session, SourceState, exact, line_digest, safe_id)
from . import bloom
from .bloom import Hashed, Prints
from .spill import from_db, guarded, temp_db, to_db
from .unchanged import Unit
from .claude_units import APP, detect, source_files, unit_key, units, units_from  # noqa: F401 (the importer's listing, in a module of its own)
from .uris import apply_map, folder_status, is_foreign

if TYPE_CHECKING:
    import sqlite3

    from .sourcelines import SourceLine, SourceReader

__all__ = ["APP", "Options", "detect", "resume_unit", "scan", "scan_unit", "source_files", "unit_key", "units"]

#: Bytes of source lines an import group (a session with its subagents) keeps between its two
#: passes, as bytes, parsed again when converted; the rest are re-read at their offset.  A budget,
#: not a file size: memory stays the same whatever the transcripts' size or number of records.
#: (Kept parsed instead, they cost more than the parse they saved: 282 MB of real transcripts
#: 3.0-3.3 s of CPU against 3.2-3.8 s, 28 MB of small records 0.69-0.75 s against 0.77-0.87 s.)
KEEP_IN_MEMORY = 4 << 20
#: Records a group (a session with its subagents) holds its rows of in memory, some 0.8 kB each (:func:`_row`:
#: 65,536 of the benchmark's small records, a 38 MB transcript, peak at 95 MiB and import in 1.63 s); a
#: transcript whose rows would take the group past it puts them in a temporary database (:class:`_Transcript`,
#: the rows held so far moved there), which that transcript took 2.29 s to.  A count of records, not of
#: bytes: a transcript of 23 MB of one-line ``progress`` records held 781,000 rows and peaked at 436 MiB
#: while this was 24 MiB of file; real records (~3 kB a line) are held up to some 190 MB of transcript
#: (150 MB: 2.45-2.50 s in the database, 1.96-2.22 s held, 79 MiB).
ROWS_IN_MEMORY = 65_536
#: A kept line of a chain record (a prompt, an answer, a tool's result) of this many bytes or more keeps
#: the value the first read parsed, for the conversion to take (:meth:`_Transcript.value`), not parsed
#: again: a few objects around long strings.  A smaller record (a progress line) is parsed again.
_HELD_SIZE = 1024
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_INTERRUPT = "[Request interrupted by user"
_FINAL = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal", "pause_turn"})  # nothing of the response follows
_ABSENT = object()
_TITLES = {"custom-title": ("customTitle", 3), "ai-title": ("aiTitle", 2), "summary": ("summary", 1)}
#: Metadata fields worth carrying on the event (the whole line stays under raw).
_META_FIELDS = {"queue-operation": ("operation", "content"), "last-prompt": ("lastPrompt", "leafUuid"),
                "permission-mode": ("permissionMode",), "agent-name": ("agentName",), "pr-link": ("prNumber", "prUrl"),
                "file-history-snapshot": ("messageId", "isSnapshotUpdate"), "summary": ("summary", "leafUuid"),
                "ai-title": ("aiTitle",), "custom-title": ("customTitle",), "mode": ("mode",)}


# -- one transcript, read once for its graph ------------------------------------------------------

#: Bits of a record's byte in :attr:`_Transcript.flags`.
_CHAIN, _SIDE, _PNULL, _RESULTS, _STOP, _USER, _ASSISTANT = 1, 2, 4, 8, 16, 32, 64
_KIND_FLAGS = {"user": _USER, "assistant": _ASSISTANT}
_BATCH = 4096  # rows written to the database at a time
_ITEMS = ("(n INTEGER PRIMARY KEY, grp INTEGER NOT NULL, flags INTEGER NOT NULL, line INTEGER NOT NULL, "
          "offset INTEGER NOT NULL, size INTEGER NOT NULL, kind BLOB NOT NULL, uuid BLOB, parent BLOB, stamp BLOB, "
          "logical BLOB, msg BLOB, uses BLOB, results BLOB, agent BLOB, key BLOB NOT NULL)")
_COLUMNS = "n, line, offset, size, kind, uuid, parent, stamp, results, key"


def _ids(ids: list) -> bytes | None:
    """A list of ids as one JSON value (None for none), compared and read back whole.  Held with its
    row until the session is written: in a bytes object of its own size (:func:`.output.exact`; what
    orjson gives holds 4 kB, which made a held transcript's rows some 3 kB a record larger)."""
    if not ids:
        return None
    try:
        return exact(orjson.dumps(ids))
    except TypeError:  # a lone surrogate: as a \u escape
        return json.dumps(ids).encode("ascii")


class _Item(NamedTuple):
    """One whole source record, as a session's records are converted from it (its row in the table)."""

    n: int
    line: int
    offset: int
    size: int
    kind: str
    uuid: str | None  # a chain record's uuid
    parent: str | None  # parentUuid, when a string
    stamp: str | None  # the record's timestamp, else the last one before it in the file
    results: bytes | None  # the tool_use ids its tool_result blocks answer (JSON), None when it has none
    key: str

    @classmethod
    def of(cls, row: tuple) -> _Item:
        n, line, offset, size, kind, uuid, parent, stamp, results, key = row
        return cls(n, line, offset, size, from_db(kind), from_db(uuid), from_db(parent), from_db(stamp), results, from_db(key))


#: A row's fields (:func:`_row`), in the table's column order.
(_R_N, _R_GRP, _R_FLAGS, _R_LINE, _R_OFFSET, _R_SIZE, _R_KIND, _R_UUID, _R_PARENT, _R_STAMP, _R_LOGICAL, _R_MSG, _R_USES, _R_RES,
 _R_AGENT, _R_KEY) = range(16)


def _row(n: int, src: SourceLine, value: dict, stamp: str | None, previous: str | None = None) -> tuple[tuple, int]:
    """The row of one record, and its flags byte: what its graph and merging need.  Held, a row
    keeps few strings of its own (:data:`ROWS_IN_MEMORY`): a known ``type`` is the one string of
    that name, a parent that is the ``previous`` record's uuid is that string, and a record with a
    uuid has no key (``None``: it is ``claude:<uuid>``, :func:`_key_of`)."""
    kind = value["type"]
    kind = _KINDS.get(kind, kind)
    uuid = value.get("uuid")
    uuid = uuid if isinstance(uuid, str) and kind in CHAIN else None
    parent = value.get("parentUuid")
    if previous is not None and parent == previous:
        parent = previous
    flags = (_CHAIN if uuid is not None else 0) | (_SIDE if value.get("isSidechain") is True else 0) \
        | (_PNULL if parent is None else 0) | _KIND_FLAGS.get(kind, 0)
    logical = value.get("logicalParentUuid") if value.get("subtype") == "compact_boundary" else None
    message = value.get("message") if isinstance(value.get("message"), dict) else {}
    content = message.get("content") if isinstance(message.get("content"), list) else ()
    msg = uses = results = agent = None
    if kind == "assistant":
        if isinstance(message.get("id"), str):
            request = value.get("requestId")
            msg = _ids([message["id"], request if isinstance(request, str) else None])
        uses = _ids([b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)])
        if isinstance(stop := message.get("stop_reason"), str) and stop in _FINAL:
            flags |= _STOP
    elif kind == "user":
        results = _ids([b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else "" for b in content
                        if isinstance(b, dict) and b.get("type") == "tool_result"])
        flags |= _RESULTS if results is not None else 0
        result = value.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            agent = result["agentId"]
    key = None if uuid else "claude:h:" + hashlib.sha256(src.data).hexdigest()[:24]
    return (n, 0, flags, src.line, src.offset, len(src.data), kind, uuid, parent if isinstance(parent, str) else None,
            stamp, logical if isinstance(logical, str) else None, msg, uses, results, agent, key), flags


def _key_of(row: tuple) -> str:
    """A row's key before its repeats are numbered: ``claude:<uuid>``, or the hash of its line."""
    key = row[_R_KEY]
    return key if key is not None else "claude:" + row[_R_UUID]


_KINDS = {kind: kind for kind in TOP_LEVEL_TYPES}  # (a held row's kind: the one string of each known name)


class _Db:
    """The temporary database of one import group (a session with its subagents): a table per
    transcript, and a few per conversation; thrown away with it.  Opened only when a transcript
    of the group is spilled (:data:`ROWS_IN_MEMORY`)."""

    def __init__(self) -> None:
        self._conn = None
        self.tables = 0
        self.keep = KEEP_IN_MEMORY  # bytes of source lines the group may still keep
        self.rows = ROWS_IN_MEMORY  # rows the group may still hold in memory (:class:`_HeldTranscript`)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = temp_db()
        return self._conn

    def table(self, columns: str) -> str:
        self.tables += 1
        name = f"t{self.tables}"
        self.conn.execute(f"CREATE TABLE {name} {columns}")
        return name

    def one(self, sql: str, args: tuple = ()) -> object:
        row = self.conn.execute(sql, args).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _Transcript:
    """A transcript file read once: a row per whole record (where it is, its uuid, parent, message
    and key); a byte of flags per record, then its resolved parent (:meth:`parents`) and two bytes
    of the conversation's walk; and the parsed lines the group's :data:`KEEP_IN_MEMORY` budget holds.

    Its rows are in a table of the group's database (this class), or in memory when the group
    is small (:class:`_HeldTranscript`, which answers each question below the same way)."""

    def __init__(self, path: Path, report: Callable[[Finding], None], db: _Db) -> None:
        from .sourcelines import SourceReader  # (here: an import that finds nothing new reads no transcript)

        self.path, self.db = path, db
        self.reader = SourceReader(path, CLAUDE_CODE.is_record, report, what="Claude Code record")
        self.flags = bytearray()
        self.cwd = self.version = self.session_id = None
        self.first_stamp: str | None = None
        self.kept: dict[int, bytes] = {}  # the bytes of lines within the group's KEEP_IN_MEMORY
        self.held: dict[int, dict] = {}  # of those, the values parsed that the conversion takes (n -> value: _HELD_SIZE)
        stamp = previous = None  # (previous: the last record's uuid)
        add, done = self._rows()
        for src in self.reader:
            value = src.value
            if isinstance(value.get("timestamp"), str):
                stamp = value["timestamp"]
                self.first_stamp = self.first_stamp or stamp
            row, flags = _row(len(self.flags), src, value, stamp, previous)
            if row[_R_UUID] is not None:
                previous = row[_R_UUID]
            if flags & _CHAIN and self.session_id is None:
                self.cwd = value.get("cwd") if isinstance(value.get("cwd"), str) else None
                self.version = value.get("version") if isinstance(value.get("version"), str) else None
                self.session_id = value.get("sessionId") if isinstance(value.get("sessionId"), str) else None
            self.flags.append(flags)
            if len(src.data) <= db.keep:
                db.keep -= len(src.data)
                self.kept[row[0]] = src.data
                if row[_R_UUID] is not None and len(src.data) >= _HELD_SIZE and not src.lifted:
                    self.held[row[0]] = value
            add(row)
        done()
        self.count = len(self.flags)
        self._number_repeats()
        from ..index import utc_iso  # (the index's module loads the reader: not for an import with nothing to read)

        try:
            self.mtime: str | None = utc_iso(path.stat().st_mtime)
        except OSError:
            self.mtime = None
        self._par: array | None = None
        self.on = bytearray(self.count)  # on its conversation's shown chain (each record is in one conversation)
        self.memo = bytearray(self.count)  # _Plan._rooted's answers: 1 yes, 2 no, 3 being walked
        self._handle = None
        self._offset_index = False

    def plan(self, grp: int, *, whole_sidechain: bool) -> _Plan:
        return _Plan(self, grp, whole_sidechain=whole_sidechain)

    def _rows(self) -> tuple[Callable[[tuple], None], Callable[[], None]]:
        """(add a row, done): the rows go to a new table of the group's database, a batch at a time."""
        db = self.db
        self.table = db.table(_ITEMS)
        insert = f"INSERT INTO {self.table} VALUES ({', '.join('?' * 16)})"
        rows: list[tuple] = []

        def add(row: tuple) -> None:
            rows.append((*row[:_R_KIND], to_db(row[_R_KIND]), to_db(row[_R_UUID]), to_db(row[_R_PARENT]), to_db(row[_R_STAMP]),
                         to_db(row[_R_LOGICAL]), row[_R_MSG], row[_R_USES], row[_R_RES], to_db(row[_R_AGENT]), to_db(_key_of(row))))
            if len(rows) >= _BATCH:
                db.conn.executemany(insert, rows)
                rows.clear()

        def done() -> None:
            db.conn.executemany(insert, rows)
            db.conn.execute(f"CREATE INDEX {self.table}_uuid ON {self.table} (uuid, grp, n) WHERE uuid IS NOT NULL")
        return add, done

    def _number_repeats(self) -> None:
        """A key seen before in the file gets ``#<occurrence>`` (a copied line, a repeated title)."""
        t = self.table
        repeats = self.db.table("(key BLOB, n INTEGER)")
        self.db.conn.execute(f"INSERT INTO {repeats} SELECT key, n FROM {t} WHERE key IN "
                             f"(SELECT key FROM {t} GROUP BY key HAVING COUNT(*) > 1) ORDER BY key, n")
        updates, previous, seen = [], None, 0
        for key, n in self.db.conn.execute(f"SELECT key, n FROM {repeats} ORDER BY rowid"):
            seen = seen + 1 if key == previous else 1
            previous = key
            if seen > 1:
                updates.append((to_db(f"{from_db(key)}#{seen}"), n))
            if len(updates) >= _BATCH:
                self.db.conn.executemany(f"UPDATE {t} SET key = ? WHERE n = ?", updates)
                updates.clear()
        self.db.conn.executemany(f"UPDATE {t} SET key = ? WHERE n = ?", updates)

    def parents(self) -> array:
        """Each chain record's parent within its conversation (the last record with that uuid), or -1;
        past a compaction (``parentUuid`` null) its ``logicalParentUuid``, kept for display."""
        if self._par is None:
            t = self.table
            self._par = array("q", [-1]) * self.count
            lookup = f"(SELECT MAX(p.n) FROM {t} p WHERE p.uuid = c.{{}} AND p.uuid IS NOT NULL AND p.grp = c.grp)"
            for n, parent in self.db.conn.execute(
                    f"SELECT n, CASE WHEN flags & {_PNULL} THEN {lookup.format('logical')} ELSE {lookup.format('parent')} END "
                    f"FROM {t} c WHERE uuid IS NOT NULL ORDER BY n"):
                if parent is not None:
                    self._par[n] = parent
        return self._par

    def item(self, n: int) -> _Item:
        return _Item.of(self.db.conn.execute(f"SELECT {_COLUMNS} FROM {self.table} WHERE n = ?", (n,)).fetchone())

    def line_bytes(self, item: _Item) -> bytes:
        """The bytes of ``item``'s line: kept, or re-read and checked as :meth:`value` does."""
        data = self.kept.get(item.n)
        return data if data is not None else self.value(item)[1]

    def value(self, item: _Item) -> tuple[dict, bytes]:
        """The record and its bytes: the value the first read parsed and held (:data:`_HELD_SIZE`), taken once;
        else its bytes kept from the first pass and parsed again, or re-read at its offset."""
        data = self.kept.get(item.n)
        if data is not None:
            value = self.held.pop(item.n, None)  # (asked again, it is parsed again: a value is never shared)
            return (value if value is not None else loads(data)), data
        try:
            if self._handle is None:
                self._handle = open_regular(self.path)
            self._handle.seek(item.offset)
            data = self._handle.read(item.size)
        except OSError as exc:
            raise FileChangedError.read_again(self.path, exc) from exc
        try:
            value = loads(data)
        except ValueError:
            value = None
        if type(value) is not dict or value.get("type") != item.kind or (item.uuid is not None and value.get("uuid") != item.uuid):
            raise FileChangedError(f"{self.path} changed while it was being imported (Claude Code rewrote it?): line "
                                   f"{item.line} is no longer the record it was; import again")
        return value, data

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def state(self, grp: int) -> SourceState:
        """The file as read, for ``restore``, with the lines of conversation ``grp`` (one session's),
        listed and read from the rows, not held."""
        if not self._offset_index:  # made before any pass: not while one reads the table
            self.db.conn.execute(f"CREATE INDEX {self.table}_offset ON {self.table} (offset, grp, n)")
            self._offset_index = True
        return SourceState(str(self.path), self.reader.covered, self.reader.sha256, _Lines(self, grp), self._read_line(grp))

    def _read_line(self, grp: int) -> Callable[[int, int], bytes]:
        def read(offset: int, _length: int) -> bytes:
            try:
                return self.line_bytes(self.item(self._last_at(offset, grp)))
            finally:
                self.close()
        return read

    # -- what the conversation asks of the rows (each answered alike by _HeldTranscript) ----------

    def _last_at(self, offset: int, grp: int) -> int:
        """The last record of conversation ``grp`` at ``offset`` (several share a damaged line's)."""
        return self.db.one(f"SELECT MAX(n) FROM {self.table} WHERE offset = ? AND grp = ?", (offset, grp))

    def lines_of(self, grp: int) -> Iterator[tuple[int, int]]:
        """``(offset, size)`` of each record of conversation ``grp``, in file order."""
        yield from self.db.conn.execute(f"SELECT offset, size FROM {self.table} WHERE grp = ? ORDER BY n", (grp,))

    def in_group(self, grp: int) -> int:
        return self.db.one(f"SELECT COUNT(*) FROM {self.table} WHERE grp = ?", (grp,))

    def moved(self) -> int:
        """Records moved to an inline sidechain's conversation."""
        return self.db.one(f"SELECT COUNT(*) FROM {self.table} WHERE grp != 0")

    def distinct_lines(self, grp: int) -> int:
        return self.db.one(f"SELECT COUNT(DISTINCT line) FROM {self.table} WHERE grp = ?", (grp,))

    def first_in(self, grp: int) -> int:
        return self.db.one(f"SELECT MIN(n) FROM {self.table} WHERE grp = ?", (grp,))

    def chain_before(self, n: int) -> int | None:
        """The last chain record of the main conversation before record ``n``."""
        return self.db.one(f"SELECT MAX(n) FROM {self.table} WHERE grp = 0 AND uuid IS NOT NULL AND n < ?", (n,))

    def agents(self) -> Iterator[tuple[int, str]]:
        """(record, agentId) of each tool result of the main conversation that returned a subagent, in order."""
        for n, agent in self.db.conn.execute(f"SELECT n, agent FROM {self.table} WHERE grp = 0 AND length(agent) ORDER BY n"):
            yield n, from_db(agent)

    def titles(self, grp: int) -> Iterator[_Item]:
        """The title lines of conversation ``grp`` (custom, ai, summary), in file order."""
        kinds = tuple(to_db(kind) for kind in _TITLES)
        for row in self.db.conn.execute(f"SELECT {_COLUMNS} FROM {self.table} WHERE grp = ? AND uuid IS NULL "
                                        f"AND kind IN ({', '.join('?' * len(kinds))}) ORDER BY n", (grp, *kinds)):
            yield _Item.of(row)

    def leaf(self, grp: int, whole_sidechain: bool) -> int | None:
        """The last chain record of conversation ``grp`` (its sidechain records only with ``whole_sidechain``)."""
        return self.db.one(f"SELECT MAX(n) FROM {self.table} WHERE grp = ? AND flags & {_CHAIN} AND (? OR NOT flags & {_SIDE})",
                           (grp, whole_sidechain))

    def answers(self, grp: int) -> Iterator[int]:
        """The chain records of conversation ``grp`` that carry tool results and name a parent, in order."""
        mask = _CHAIN | _RESULTS | _PNULL
        for (n,) in self.db.conn.execute(f"SELECT n FROM {self.table} WHERE grp = ? AND flags & {mask} = {_CHAIN | _RESULTS} "
                                         "ORDER BY n", (grp,)):
            yield n

    def uses_msg(self, n: int) -> tuple[bytes | None, bytes | None]:
        """Record ``n``'s tool_use ids and message id (JSON), as :func:`_row` made them."""
        return self.db.conn.execute(f"SELECT uses, msg FROM {self.table} WHERE n = ?", (n,)).fetchone()

    def following(self, grp: int, skip: int) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
        """(record, flags, results, msg) of conversation ``grp``'s records after its first ``skip``."""
        yield from self.db.conn.execute(f"SELECT n, flags, results, msg FROM {self.table} WHERE grp = ? ORDER BY n "
                                        "LIMIT -1 OFFSET ?", (grp, skip))

    def has(self, uuid: str, grp: int) -> bool:
        return self.db.one(f"SELECT 1 FROM {self.table} WHERE uuid = ? AND uuid IS NOT NULL AND grp = ? LIMIT 1",
                           (to_db(uuid), grp)) is not None

    def stamp_in(self, grp: int) -> str | None:
        """The first non-empty time of conversation ``grp``."""
        return from_db(self.db.one(f"SELECT stamp FROM {self.table} WHERE grp = ? AND length(stamp) ORDER BY n LIMIT 1", (grp,)))

    def side_counts(self) -> tuple[int, int]:
        """(distinct uuids of sidechain records, chain records)."""
        side = _CHAIN | _SIDE
        return (self.db.one(f"SELECT COUNT(DISTINCT uuid) FROM {self.table} WHERE flags & {side} = {side}"),
                self.db.one(f"SELECT COUNT(*) FROM {self.table} WHERE flags & {_CHAIN}"))

    def side_links(self) -> Iterator[tuple[int, int, int | None]]:
        """(record, the last sidechain record with its uuid, the last with its parent's or None) of
        each sidechain chain record, in file order."""
        side = _CHAIN | _SIDE
        lookup = f"(SELECT MAX(p.n) FROM {self.table} p WHERE p.uuid = c.{{}} AND p.uuid IS NOT NULL AND p.flags & {side} = {side})"
        yield from self.db.conn.execute(f"SELECT n, {lookup.format('uuid')}, {lookup.format('parent')} FROM {self.table} c "
                                        f"WHERE flags & {side} = {side} ORDER BY n")

    def move(self, rows: list[tuple[int, int]]) -> None:
        """Records to other conversations: ``(grp, record)`` each."""
        self.db.conn.executemany(f"UPDATE {self.table} SET grp = ? WHERE n = ?", rows)

    def moved_all(self) -> None:
        self.db.conn.execute(f"CREATE INDEX {self.table}_grp ON {self.table} (grp, n)")

    def uuid_of(self, n: int) -> str | None:
        return from_db(self.db.one(f"SELECT uuid FROM {self.table} WHERE n = ?", (n,)))

    def last_main_uuid(self) -> str | None:
        """The uuid of the file's last chain record that is not a sidechain's."""
        return from_db(self.db.one(f"SELECT uuid FROM {self.table} WHERE flags & {_CHAIN} AND NOT flags & {_SIDE} "
                                   "ORDER BY n DESC LIMIT 1"))

    def last_stamp(self) -> str | None:
        """The time of the file's last record (its own, else the last one before it)."""
        return from_db(self.db.one(f"SELECT stamp FROM {self.table} ORDER BY n DESC LIMIT 1"))

    def lone_keys(self) -> tuple[Iterator[str], Iterator[str], int]:
        """The keys of the records with no uuid: those of a repeat (``#n``), the others, and how many in all."""
        t = self.table
        keys = f"SELECT key FROM {t} WHERE uuid IS NULL AND {{}} instr(key, '#')"
        repeats = (from_db(key) for (key,) in self.db.conn.execute(keys.format("")))
        firsts = (from_db(key) for (key,) in self.db.conn.execute(keys.format("NOT")))
        return repeats, firsts, self.db.one(f"SELECT COUNT(*) FROM {t} WHERE uuid IS NULL")

    def uuids(self) -> Iterator[str]:
        return (from_db(u) for (u,) in self.db.conn.execute(f"SELECT uuid FROM {self.table} WHERE uuid IS NOT NULL"))

    def msgs(self) -> Iterator[bytes]:
        return (m for (m,) in self.db.conn.execute(f"SELECT DISTINCT msg FROM {self.table} WHERE msg IS NOT NULL"))


class _HeldTranscript(_Transcript):
    """A transcript whose group holds its rows (at most :data:`ROWS_IN_MEMORY`), in a list: each of
    :class:`_Transcript`'s questions answered from it, with no database.  The one whose rows would
    take the group past that becomes a :class:`_Transcript` as it is read (:meth:`_spill`)."""

    def plan(self, grp: int, *, whole_sidechain: bool) -> _Plan:
        return _HeldPlan(self, grp, whole_sidechain=whole_sidechain)

    def _rows(self) -> tuple[Callable[[tuple], None], Callable[[], None]]:
        """(add a row, done): each row held while the group may hold more (:attr:`_Db.rows`); past
        that, this transcript's rows go to the database (:meth:`_spill`)."""
        self.rows: list[tuple] = []
        self.table = None
        self._groups: list[int] | None = None  # each record's conversation, once one was moved (else all 0)
        self._members: dict[int, list[int]] = {}
        db, held, spilled = self.db, self.rows.append, []  # spilled: the database's (add, done), once moved

        def add(row: tuple) -> None:
            if spilled:
                spilled[0](row)
            elif db.rows > 0:
                db.rows -= 1
                held(row)
            else:
                spilled[:] = self._spill()
                spilled[0](row)

        def done() -> None:
            if spilled:
                spilled[1]()
        return add, done

    def _spill(self) -> tuple[Callable[[tuple], None], Callable[[], None]]:
        """Become a :class:`_Transcript` in the middle of the first pass, the rows held so far moved
        to its table: the group holds no more rows than :data:`ROWS_IN_MEMORY` whatever its records."""
        rows = self.rows
        del self.rows, self._groups, self._members
        self.__class__ = _Transcript
        add, done = _Transcript._rows(self)
        for row in rows:
            add(row)
        return add, done

    def _number_repeats(self) -> None:
        """Each repeat's numbered key in :attr:`repeats` (by record); the other keys are the rows' own."""
        self.repeats: dict[int, str] = {}
        seen: dict[str, int] = {}
        for n, row in enumerate(self.rows):  # (counted by the uuid, or the line's hash: a key less its "claude:")
            name = row[_R_UUID] if row[_R_KEY] is None else row[_R_KEY][7:]
            count = seen[name] = seen.get(name, 0) + 1
            if count > 1:
                self.repeats[n] = f"{_key_of(row)}#{count}"

    def _key(self, n: int) -> str:
        repeat = self.repeats.get(n)
        return repeat if repeat is not None else _key_of(self.rows[n])

    def _grp(self, n: int) -> int:
        return 0 if self._groups is None else self._groups[n]

    def members(self, grp: int) -> list[int]:
        """The records of conversation ``grp``, in file order."""
        found = self._members.get(grp)
        if found is None:
            groups = self._groups
            found = (list(range(self.count)) if grp == 0 else []) if groups is None else \
                [n for n in range(self.count) if groups[n] == grp]
            self._members[grp] = found
        return found

    def parents(self) -> array:
        if self._par is None:
            rows, flags, grp = self.rows, self.flags, self._grp
            last = {(row[_R_UUID], grp(n)): n for n, row in enumerate(rows) if row[_R_UUID] is not None}
            self._par = par = array("q", [-1]) * self.count
            for n, row in enumerate(rows):
                if row[_R_UUID] is None:
                    continue
                target = row[_R_LOGICAL] if flags[n] & _PNULL else row[_R_PARENT]
                if target is not None:
                    par[n] = last.get((target, grp(n)), -1)
        return self._par

    def item(self, n: int) -> _Item:
        row = self.rows[n]
        return _Item(n, row[_R_LINE], row[_R_OFFSET], row[_R_SIZE], row[_R_KIND], row[_R_UUID], row[_R_PARENT], row[_R_STAMP],
                     row[_R_RES], self._key(n))

    def state(self, grp: int) -> SourceState:
        return SourceState(str(self.path), self.reader.covered, self.reader.sha256, _Lines(self, grp), self._read_line(grp))

    def _last_at(self, offset: int, grp: int) -> int:
        at = getattr(self, "_at", None)
        if at is None or at[0] != grp:
            self._at = at = (grp, {self.rows[n][_R_OFFSET]: n for n in self.members(grp)})
        return at[1].get(offset)

    def lines_of(self, grp: int) -> Iterator[tuple[int, int]]:
        rows = self.rows
        for n in self.members(grp):
            yield rows[n][_R_OFFSET], rows[n][_R_SIZE]

    def in_group(self, grp: int) -> int:
        return len(self.members(grp))

    def moved(self) -> int:
        return self.count - len(self.members(0))

    def distinct_lines(self, grp: int) -> int:
        return len({self.rows[n][_R_LINE] for n in self.members(grp)})

    def first_in(self, grp: int) -> int:
        members = self.members(grp)
        return members[0] if members else None

    def chain_before(self, n: int) -> int | None:
        return next((m for m in reversed(self.members(0)) if m < n and self.rows[m][_R_UUID] is not None), None)

    def agents(self) -> Iterator[tuple[int, str]]:
        rows = self.rows
        for n in self.members(0):
            if rows[n][_R_AGENT]:
                yield n, rows[n][_R_AGENT]

    def titles(self, grp: int) -> Iterator[_Item]:
        rows = self.rows
        for n in self.members(grp):
            if rows[n][_R_UUID] is None and rows[n][_R_KIND] in _TITLES:
                yield self.item(n)

    def leaf(self, grp: int, whole_sidechain: bool) -> int | None:
        flags = self.flags
        return next((n for n in reversed(self.members(grp)) if flags[n] & _CHAIN and (whole_sidechain or not flags[n] & _SIDE)),
                    None)

    def answers(self, grp: int) -> Iterator[int]:
        flags, mask = self.flags, _CHAIN | _RESULTS | _PNULL
        for n in self.members(grp):
            if flags[n] & mask == _CHAIN | _RESULTS:
                yield n

    def uses_msg(self, n: int) -> tuple[bytes | None, bytes | None]:
        return self.rows[n][_R_USES], self.rows[n][_R_MSG]

    def following(self, grp: int, skip: int) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
        rows, flags = self.rows, self.flags
        for n in self.members(grp)[skip:]:
            yield n, flags[n], rows[n][_R_RES], rows[n][_R_MSG]

    def has(self, uuid: str, grp: int) -> bool:
        rows = self.rows
        return any(rows[n][_R_UUID] == uuid for n in self.members(grp))

    def stamp_in(self, grp: int) -> str | None:
        rows = self.rows
        return next((rows[n][_R_STAMP] for n in self.members(grp) if rows[n][_R_STAMP]), None)

    def side_counts(self) -> tuple[int, int]:
        side, flags = _CHAIN | _SIDE, self.flags
        return (len({row[_R_UUID] for n, row in enumerate(self.rows) if flags[n] & side == side}),
                sum(1 for f in flags if f & _CHAIN))

    def side_links(self) -> Iterator[tuple[int, int, int | None]]:
        side, flags, rows = _CHAIN | _SIDE, self.flags, self.rows
        sides = [n for n in range(self.count) if flags[n] & side == side]
        last = {rows[n][_R_UUID]: n for n in sides}
        for n in sides:
            yield n, last[rows[n][_R_UUID]], last.get(rows[n][_R_PARENT])

    def move(self, rows: list[tuple[int, int]]) -> None:
        if self._groups is None:
            self._groups = [0] * self.count
        for grp, n in rows:
            self._groups[n] = grp
        self._members.clear()

    def moved_all(self) -> None:
        pass

    def uuid_of(self, n: int) -> str | None:
        return self.rows[n][_R_UUID]

    def last_main_uuid(self) -> str | None:
        flags = self.flags
        return next((self.rows[n][_R_UUID] for n in range(self.count - 1, -1, -1) if flags[n] & _CHAIN and not flags[n] & _SIDE),
                    None)

    def last_stamp(self) -> str | None:
        return self.rows[-1][_R_STAMP] if self.rows else None

    def lone_keys(self) -> tuple[Iterator[str], Iterator[str], int]:
        lone = [self._key(n) for n, row in enumerate(self.rows) if row[_R_UUID] is None]
        return (k for k in lone if "#" in k), (k for k in lone if "#" not in k), len(lone)

    def uuids(self) -> Iterator[str]:
        return (row[_R_UUID] for row in self.rows if row[_R_UUID] is not None)

    def msgs(self) -> Iterator[bytes]:
        return iter({row[_R_MSG]: None for row in self.rows if row[_R_MSG] is not None})


class _Lines:
    """``(offset, size)`` of each record of one conversation of a transcript, in file order, on each pass."""

    def __init__(self, transcript: _Transcript, grp: int) -> None:
        self.t, self.grp = transcript, grp

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return self.t.lines_of(self.grp)


# -- the conversation ---------------------------------------------------------------------------


class _Plan:
    """Which records a session's journal gets, in order: units (one record, or a merged message),
    then the rest.  Built in the transcript's database: the shown chain is a table of positions
    (``pos``), each row naming its unit (the ``pos`` of its first part).  :class:`_HeldPlan` builds
    the same in memory."""

    def __init__(self, t: _Transcript, grp: int, *, whole_sidechain: bool) -> None:
        self.t, self.grp = t, grp
        self.size = t.in_group(grp)
        self._build(whole_sidechain)
        self.partial = self._partial()

    def _build(self, whole_sidechain: bool) -> None:
        t = self.t
        db, table = t.db, t.table
        path = db.table("(k INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        self._insert(path, ((-k, n) for k, n in enumerate(self._walk(whole_sidechain))))
        siblings = db.table("(parent INTEGER NOT NULL, n INTEGER NOT NULL)")
        found = self._siblings()
        self._insert(siblings, found)
        self.shown = db.table("(pos INTEGER PRIMARY KEY, n INTEGER NOT NULL, unit INTEGER)")
        db.conn.execute(f"CREATE INDEX {path}_n ON {path} (n)")
        db.conn.execute(f"INSERT INTO {self.shown} (n) SELECT n FROM (SELECT k, 0 AS sibling, n FROM {path} UNION ALL "
                        f"SELECT p.k, 1, s.n FROM {siblings} s JOIN {path} p ON p.n = s.parent) ORDER BY k, sibling, n")
        for _parent, n in found:
            t.on[n] = 1
        heads = db.table("(msg BLOB PRIMARY KEY, head INTEGER NOT NULL) WITHOUT ROWID")
        db.conn.execute(f"INSERT INTO {heads} SELECT i.msg, MIN(s.pos) FROM {self.shown} s JOIN {table} i ON i.n = s.n "
                        f"WHERE i.flags & {_ASSISTANT} AND i.msg IS NOT NULL GROUP BY i.msg")
        db.conn.execute(f"UPDATE {self.shown} SET unit = COALESCE((SELECT h.head FROM {table} i JOIN {heads} h ON h.msg = i.msg "
                        f"WHERE i.n = {self.shown}.n AND i.flags & {_ASSISTANT}), pos)")
        db.conn.execute(f"CREATE INDEX {self.shown}_unit ON {self.shown} (unit, pos)")
        db.conn.execute(f"CREATE INDEX {self.shown}_n ON {self.shown} (n)")
        shown = db.one(f"SELECT COUNT(*) FROM {self.shown}")
        self.units = db.one(f"SELECT COUNT(*) FROM {self.shown} WHERE unit = pos")
        self.rest = self.size - shown
        self.merged = shown - self.units

    def _insert(self, table: str, rows: Iterator[tuple[int, int]]) -> None:
        batch: list[tuple[int, int]] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= _BATCH:
                self.t.db.conn.executemany(f"INSERT INTO {table} VALUES (?, ?)", batch)
                batch.clear()
        self.t.db.conn.executemany(f"INSERT INTO {table} VALUES (?, ?)", batch)

    def _walk(self, whole_sidechain: bool) -> Iterator[int]:
        """The path from the last main-chain record back to its root (across a compaction through
        ``logicalParentUuid``), from that record; each is marked on the chain."""
        t = self.t
        par, on = t.parents(), t.on
        leaf = t.leaf(self.grp, whole_sidechain)
        current = -1 if leaf is None else leaf
        while current >= 0 and not on[current]:
            on[current] = 1
            yield current
            current = par[current]

    def _siblings(self) -> list[tuple[int, int]]:
        """Results of parallel calls beside the chain, collected by resume: each goes after its call
        (``(call, result)``; those whose call is on another conversation's chain are dropped)."""
        t = self.t
        par, on = t.parents(), t.on
        return [(par[n], n) for n in t.answers(self.grp) if not on[n] and par[n] >= 0 and on[par[n]]]

    def units_of(self) -> Iterator[tuple[int, list[_Item]]]:
        """(unit, its parts in order), in the conversation's order."""
        unit, parts = None, []
        columns = ", ".join(f"i.{c}" for c in _COLUMNS.split(", "))
        for row in self.t.db.conn.execute(f"SELECT s.unit, {columns} FROM {self.shown} s JOIN {self.t.table} i ON i.n = s.n "
                                          "ORDER BY s.unit, s.pos"):
            if row[0] != unit and parts:
                yield unit, parts
                parts = []
            unit = row[0]
            parts.append(_Item.of(row[1:]))
        if parts:
            yield unit, parts

    def prompts(self) -> Iterator[_Item]:
        """The first part of each unit that is a user record with no tool result, in the conversation's order."""
        columns = ", ".join(f"i.{c}" for c in _COLUMNS.split(", "))
        for row in self.t.db.conn.execute(f"SELECT {columns} FROM {self.shown} s JOIN {self.t.table} i ON i.n = s.n "
                                          f"WHERE s.unit = s.pos AND i.flags & {_USER} AND i.results IS NULL ORDER BY s.unit"):
            yield _Item.of(row)

    def rest_items(self) -> Iterator[_Item]:
        """The records off the shown chain, in file order."""
        for row in self.t.db.conn.execute(f"SELECT {_COLUMNS} FROM {self.t.table} WHERE grp = ? AND n NOT IN "
                                          f"(SELECT n FROM {self.shown}) ORDER BY n", (self.grp,)):
            yield _Item.of(row)

    def n_at(self, pos: int) -> int | None:
        """The record shown at ``pos`` (counted from 1)."""
        return self.t.db.one(f"SELECT n FROM {self.shown} WHERE pos = ?", (pos,))

    def in_order(self) -> Iterator[int]:
        """The shown records, in the journal's order (each unit's parts at its first part's place)."""
        return (n for (n,) in self.t.db.conn.execute(f"SELECT n FROM {self.shown} ORDER BY unit, pos"))

    def parts(self, unit: int) -> list[int]:
        """The records of ``unit``, in order."""
        return [n for (n,) in self.t.db.conn.execute(f"SELECT n FROM {self.shown} WHERE unit = ? ORDER BY pos", (unit,))]

    def _last_response(self) -> int | None:
        """The last unit that is an assistant message."""
        return self.t.db.one(f"SELECT s.unit FROM {self.shown} s JOIN {self.t.table} i ON i.n = s.n WHERE s.unit = s.pos "
                             f"AND i.flags & {_ASSISTANT} ORDER BY s.unit DESC LIMIT 1")

    def has(self, uuid: str) -> bool:
        """Whether a chain record of this conversation has ``uuid``."""
        return self.t.has(uuid, self.grp)

    def first_stamp(self) -> str | None:
        return self.t.stamp_in(self.grp)

    def _partial(self) -> int | None:
        """The unit of a response that may still be being written: the last assistant message of the
        file, after which nothing but its own tool results was written, unless its last part says
        the turn ended.  (``stop_reason`` is null on most parts, and ``tool_use`` on parts that
        more parts follow when calls run in parallel, so only a final reason proves it whole.)"""
        t = self.t
        head = self._last_response()
        if head is None:
            return None
        parts = self.parts(head)
        if t.flags[parts[-1]] & _STOP:
            return None
        last = max(parts)
        uses, msg = set(), None
        for n in parts:
            part_uses, part_msg = t.uses_msg(n)
            uses.update(loads(part_uses) if part_uses else ())
            msg = part_msg if n == parts[0] else msg
        # what follows it in the conversation's own list of records (a position, as the list was sliced)
        for _n, flags, results, other in t.following(self.grp, last + 1):
            if not flags & _CHAIN or flags & _SIDE or not flags & (_USER | _ASSISTANT):
                continue
            if flags & _USER and results is not None and set(loads(results)) <= uses:
                continue
            if flags & _ASSISTANT and other == msg:
                continue
            return None
        return head

    def reason(self, item: _Item) -> str:
        """Why a chain record is off the resumed chain."""
        flags = self.t.flags[item.n]
        if flags & _SIDE:
            return "sidechain"
        if not flags & (_USER | _ASSISTANT):
            return "beside-the-chain"
        return "other-branch" if self._rooted(item.n) else "cut-off"

    def _rooted(self, n: int) -> bool:
        """Whether walking up from record ``n`` reaches the chain or a root (``parentUuid: null``: a tree
        of its own, a 1.0.x compaction root) rather than a parent that names nothing, or a cycle.
        Memoised along the walk (marked 3 while walked, then walked again to record the answer),
        so every record is walked at most twice (a long branch stays linear)."""
        t = self.t
        memo, on, flags, par = t.memo, t.on, t.flags, t.parents()
        current, answer = n, False
        while current >= 0:
            if memo[current] in (1, 2):
                answer = memo[current] == 1
                break
            if memo[current] == 3:  # a cycle: never reaches a root
                break
            memo[current] = 3
            if on[current] or flags[current] & _PNULL:
                answer = True
                break
            current = par[current]
        current = n
        while current >= 0 and memo[current] == 3:
            memo[current] = 1 if answer else 2
            if flags[current] & _PNULL:
                break
            current = par[current]
        return answer


class _HeldPlan(_Plan):
    """:class:`_Plan` over a :class:`_HeldTranscript`: the shown chain in two lists."""

    t: _HeldTranscript

    def _build(self, whole_sidechain: bool) -> None:
        t = self.t
        path = list(self._walk(whole_sidechain))
        found = self._siblings()
        after: dict[int, list[int]] = {}
        for parent, n in found:
            after.setdefault(parent, []).append(n)
        shown: list[int] = []  # the record at each position (pos - 1)
        for n in reversed(path):
            shown.append(n)
            shown.extend(after.get(n, ()))
        for _parent, n in found:
            t.on[n] = 1
        rows, flags = t.rows, t.flags
        heads: dict[bytes, int] = {}
        unit = []  # each position's unit (the position of its first part)
        for pos, n in enumerate(shown, start=1):
            msg = rows[n][_R_MSG]
            unit.append(heads.setdefault(msg, pos) if flags[n] & _ASSISTANT and msg is not None else pos)
        self._shown, self._unit = shown, unit
        self._at = {n: pos for pos, n in enumerate(shown, start=1)}
        self.units = sum(1 for pos, u in enumerate(unit, start=1) if u == pos)
        self.rest = self.size - len(shown)
        self.merged = len(shown) - self.units

    def _units(self) -> dict[int, list[int]]:
        """Each unit's records, in the journal's order."""
        units: dict[int, list[int]] = {}
        for pos, n in enumerate(self._shown, start=1):
            units.setdefault(self._unit[pos - 1], []).append(n)
        return dict(sorted(units.items()))

    def units_of(self) -> Iterator[tuple[int, list[_Item]]]:
        item = self.t.item
        for unit, members in self._units().items():
            yield unit, [item(n) for n in members]

    def prompts(self) -> Iterator[_Item]:
        t = self.t
        for pos, n in enumerate(self._shown, start=1):
            if self._unit[pos - 1] == pos and t.flags[n] & _USER and t.rows[n][_R_RES] is None:
                yield t.item(n)

    def rest_items(self) -> Iterator[_Item]:
        at = self._at
        for n in self.t.members(self.grp):
            if n not in at:
                yield self.t.item(n)

    def n_at(self, pos: int) -> int | None:
        return self._shown[pos - 1] if 1 <= pos <= len(self._shown) else None

    def in_order(self) -> Iterator[int]:
        return (n for members in self._units().values() for n in members)

    def parts(self, unit: int) -> list[int]:
        return [n for pos, n in enumerate(self._shown, start=1) if self._unit[pos - 1] == unit]

    def _last_response(self) -> int | None:
        flags = self.t.flags
        return next((pos for pos in range(len(self._shown), 0, -1)
                     if self._unit[pos - 1] == pos and flags[self._shown[pos - 1]] & _ASSISTANT), None)



def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _content(content: object) -> object:
    """The source's content as is; anything but a string or a list (never seen) becomes a list of it."""
    if isinstance(content, (str, list)):
        return content
    return [] if content is None else [content]


def _user(value: dict, t: str, item: _Item) -> dict:
    message = value.get("message") if isinstance(value.get("message"), dict) else {}
    content = message.get("content")
    if value.get("isCompactSummary") is True:
        return {"kind": "compact", "t": t, "briefing": _text(content), "content": _content(content), COVERS_PREVIOUS: True}
    text = _text(content)
    if not item.results and text.startswith(_INTERRUPT) and len(text) < 200:
        return {"kind": "event", "t": t, "type": "interrupt", "content": text}
    record: dict = {"kind": "user", "t": t, "content": _content(content)}
    if item.results:
        record["toolResult"] = True
    elif value.get("isMeta") is True:
        record["injected"] = True  # Claude Code's own text (a command's output, a caveat), not typed
    else:
        typed, added = split_user(content)
        if typed is None and (added or isinstance(content, str) and content.strip()):
            record["injected"] = True  # only text the tool or the IDE put in (a command, a reminder)
        elif typed is not None and added:
            record["added"] = list(added)  # the IDE's blocks beside the typed ones (VS Code, JetBrains)
    return record


def _assistant(values: list[dict], t: str) -> dict:
    blocks: list = []
    messages = [v.get("message") if isinstance(v.get("message"), dict) else {} for v in values]
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            blocks += content
        elif isinstance(content, str):
            blocks.append({"type": "text", "text": content})
    last = messages[-1]
    error = next((v for v in values if v.get("isApiErrorMessage") is True), None)
    if error is not None:
        record = {"kind": "event", "t": t, "type": "api-error", "content": _text(blocks)}
        for key in ("error", "apiErrorStatus"):
            if key in error:
                record[key] = error[key]
        return record
    record = {"kind": "assistant", "t": t, "content": blocks}
    model = next((m["model"] for m in messages if isinstance(m.get("model"), str) and m["model"] not in PLACEHOLDER_MODELS), None)
    if model:
        record["model"] = model
    if isinstance(last.get("id"), str):
        record["messageId"] = last["id"]
    if isinstance(last.get("usage"), dict):
        record["usage"] = last["usage"]  # repeated on every part, grown on later ones: the last counts once
    if last.get("stop_reason") is not None:
        record["stopReason"] = last["stop_reason"]
    return record


def _event(value: dict, t: str) -> dict:
    kind = value["type"]
    if kind == "system":
        subtype = value.get("subtype")
        record = {"kind": "event", "t": t, "type": "compact-boundary" if subtype == "compact_boundary" else "system"}
        if isinstance(subtype, str) and subtype != "compact_boundary":
            record["subtype"] = subtype
        if isinstance(value.get("content"), str):
            record["content"] = value["content"]
        return record
    if kind == "progress":
        data = value.get("data") if isinstance(value.get("data"), dict) else {}
        return {"kind": "event", "t": t, "type": "progress", **({"dataType": data["type"]} if isinstance(data.get("type"), str) else {})}
    if kind == "attachment":
        data = value.get("attachment") if isinstance(value.get("attachment"), dict) else {}
        return {"kind": "event", "t": t, "type": "attachment", **({"attachmentType": data["type"]} if isinstance(data.get("type"), str) else {})}
    record = {"kind": "event", "t": t, "type": kind}
    for key in _META_FIELDS.get(kind, ()):
        if key in value and not isinstance(value[key], (dict, list)):
            record[key] = value[key]
    return record


class _Records:
    """A session's journal records, converted from the source on each pass (re-iterable, sized)."""

    def __init__(self, transcript: _Transcript, plan: _Plan, *, title_rank: int, links: list[tuple[_Item | None, dict]],
                 created: str | None) -> None:
        self.t, self.plan, self.title_rank, self.created = transcript, plan, title_rank, created
        self.links = links
        self.count = plan.units + plan.rest + len(links)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        return self.select(None)

    def select(self, known, lines=None) -> Iterator[dict]:
        """The records, converted; with ``known`` (a journal's source keys, a partial record's mapped
        to its seq: a dict or a :class:`~toolkit.importers.spill.KnownKeys`), only those that may
        be new to it: the rest are skipped before conversion, unless ``lines`` (the journal's
        :class:`~toolkit.importers.output.KeptLines`) says their source lines changed since."""
        def maybe_new(key: str, alias: str) -> bool:
            if known is None:
                return True
            seq = known.get(key, _ABSENT)
            if seq is not _ABSENT:
                return seq is not None  # a partial record: its whole version may supersede it
            return alias not in known

        def changed(items: list[_Item], unit: bool) -> bool:
            if lines is None:
                return False
            keys = [(it.key, it.key + ":off") for it in items] if unit else [(items[0].key + ":off", items[0].key)]
            digests = [line_digest(self.t.value(it)[0]) for it in items]
            return lines.changed_lines(list(zip(keys, digests)), moved=unit) is not None

        plan = self.plan
        after: dict[int, list[dict]] = {}
        loose = []
        for anchor, link in self.links:
            (after.setdefault(anchor.n, []) if anchor is not None else loose).append(link)
        self.shown_title = None
        try:
            for unit_id, unit in plan.units_of():
                if maybe_new(unit[0].key, unit[0].key + ":off") or changed(unit, True) or (lines is not None and lines.reorder):
                    yield self._unit(unit, partial=unit_id == plan.partial)
                for it in unit:
                    yield from after.get(it.n, ())
            yield from loose
            for item in plan.rest_items():
                key = item.key + ":off" if item.uuid is not None else item.key
                if maybe_new(key, item.key if item.uuid is not None else key) or (item.uuid is not None and changed([item], False)):
                    yield self._rest(item)
                elif item.uuid is None and item.kind in _TITLES:
                    self._rest(item)  # not new, but the titles after it are judged against it
        finally:
            self.t.close()

    def _when(self, item: _Item) -> str:
        return item.stamp or self.created or ""

    def _unit(self, unit: list[_Item], *, partial: bool) -> dict:
        return _unit_record(unit, [self.t.value(it) for it in unit], self._when(unit[0]), partial=partial)

    def _rest(self, item: _Item) -> dict:
        value, data = self.t.value(item)
        t = self._when(item)
        if item.uuid is not None:  # a chain record off the resumed chain
            record = _event(value, t) if item.kind not in ("user", "assistant") else {"kind": "event", "t": t, "type": "off-chain"}
            record.update({"offChain": self.plan.reason(item), "claudeType": item.kind, "line": item.line, "uuid": item.uuid,
                           "parentUuid": item.parent})
            if isinstance(value.get("message"), dict):
                record["message"] = value["message"]
            record["sourceKey"], record[ALIAS] = item.key + ":off", item.key
        else:
            record, self.shown_title = _meta_record(item, value, t, self.title_rank, self.shown_title,
                                                    lambda: _titles(item, value, self.plan))
        record[AT] = item.offset
        record["raw"] = Raw(data)
        return record


def _meta_record(item: _Item, value: dict, t: str, rank: int, shown: str | None,
                 titles: Callable[[], bool]) -> tuple[dict, str | None]:
    """The record of a line off the chain with no uuid (a title, other metadata), and the title
    shown after it: a title of the file's highest kind that differs from the one shown is a
    ``title`` record (``titles()``: a summary names this conversation)."""
    field_rank = _TITLES.get(item.kind)
    title = value.get(field_rank[0]) if field_rank else None
    if field_rank and field_rank[1] == rank and isinstance(title, str) and title != shown and titles():
        record = {"kind": "title", "t": t, "title": title}
        shown = title
    elif field_rank and title == shown:
        record = {**_event(value, t), "sameTitle": True}  # rewritten unchanged (ai-title, often): no new title
    else:
        record = _event(value, t)
    record["sourceKey"] = item.key
    return record, shown


def _unit_record(unit: list[_Item], pairs: list[tuple[dict, bytes]], t: str, *, partial: bool) -> dict:
    """The journal record of one unit (a record, or the parts of one API response), from its lines."""
    head = unit[0]
    value = pairs[0][0]
    if head.kind == "assistant":
        record = _assistant([v for v, _ in pairs], t)
    elif head.kind == "user":
        record = _user(value, t, head)
    else:
        record = _event(value, t)
    record["sourceKey"] = head.key
    record[ALIAS] = head.key + ":off"
    record[LINE_KEYS] = [(it.key, it.key + ":off") for it in unit]
    record[SUPERSEDES_ALIAS] = True  # kept off the chain before (a break since repaired, a cut): now on it
    if len(unit) > 1:
        record["parts"] = len(unit)
        record[PART_KEYS] = [it.key for it in unit[1:]]
        record[AT] = [it.offset for it in unit]
        record["raw"] = Raw(b"[" + b",".join(data for _, data in pairs) + b"]")
    else:
        record[AT] = head.offset
        record["raw"] = Raw(pairs[0][1])
    if partial:
        record["partial"] = True  # a response still being written: superseded once it is whole
    return record


def _titles(item: _Item, value: dict, plan: _Plan) -> bool:
    """A summary titles this conversation only when its leafUuid is a record of this file."""
    return item.kind != "summary" or (isinstance(value.get("leafUuid"), str) and plan.has(value["leafUuid"]))


def _title_rank(transcript: _Transcript, plan: _Plan) -> tuple[int, str | None]:
    """The highest kind of title the file has (3 custom, 2 ai, 1 summary of this file, 0 none),
    and the title a listing shows: the last of that kind."""
    rank, title = 0, None
    for item in transcript.titles(plan.grp):
        field_rank = _TITLES[item.kind]
        if field_rank[1] < rank:
            continue
        value, _data = transcript.value(item)
        text = value.get(field_rank[0])
        if isinstance(text, str) and _titles(item, value, plan):
            rank, title = field_rank[1], text
    transcript.close()
    return rank, title


def _first_prompt(transcript: _Transcript, plan: _Plan) -> str | None:
    for head in plan.prompts():
        text = _typed(transcript.value(head)[0])
        if text is not None:
            transcript.close()
            return text
    transcript.close()
    return None


def _typed(value: dict) -> str | None:
    """What a person typed in a user record (one line, at most 120 characters), or None: Claude
    Code's own text, a compaction's summary, an interrupt."""
    message = value.get("message") if isinstance(value.get("message"), dict) else {}
    if value.get("isMeta") is True or value.get("isCompactSummary") is True:
        return None
    text = prompt_text(message.get("content"))
    if text is None or text.startswith(_INTERRUPT):
        return None
    return one_line(text)


# -- sessions -------------------------------------------------------------------------------------


def _session_id(path: Path) -> str:
    """The file's stem: Claude Code names a transcript after its sessionId.  A renamed copy keeps
    its own name, so two files never share a journal (their records may say the same sessionId)."""
    return path.stem


def _place(project: str | None) -> tuple[str, list[str]]:
    if not project:
        return "unknown", []
    if is_foreign(project) or not Path(project).is_absolute():
        return "unknown", []  # another OS's path (a Windows cwd read on Linux): cannot be judged here
    return folder_status(project)


def _agent_meta(path: Path) -> dict:
    """``agent-<id>.meta.json`` beside a subagent transcript: its agentType and description."""
    try:
        value = loads((path.parent / (path.stem + ".meta.json")).read_bytes())
    except (OSError, ValueError):
        return {}
    return {k: value[k] for k in ("agentType", "description") if isinstance(value, dict) and isinstance(value.get(k), str)}


def _build(transcript: _Transcript, grp: int, sid: str, session_key: str, project: str | None, options: Options, *,
           whole_sidechain: bool, extra_source: dict, folder: str | None = None, links: list[tuple[_Item | None, dict]] = (),
           title: str | None = None, skipped: dict[str, int] | None = None, lines: int | None = None,
           too_large: list | None = None, sides: tuple[str, ...] = ()) -> Session:
    plan = transcript.plan(grp, whole_sidechain=whole_sidechain)
    rank, line_title = _title_rank(transcript, plan)
    title = line_title or title or _first_prompt(transcript, plan)
    created = plan.first_stamp() or transcript.mtime  # summary-only files have no time
    status, orphan = _place(project)
    source = {"app": APP, "path": str(transcript.path), "key": session_key, "version": transcript.version, **extra_source}
    if transcript.session_id and transcript.session_id != session_key.split("/", 1)[0]:
        source["sessionId"] = transcript.session_id  # a renamed file, or a 1.0.x copy re-stamped on resume
    session = Session(sid, options.project or (apply_map(project, options.mapping) if project else None), created, title,
                      source, None, status=status, orphan=orphan)
    session.folder = folder if session.project is None else None
    session.records = _Records(transcript, plan, title_rank=rank, links=list(links), created=created)
    session.records.line_title = line_title
    if grp == 0 and not whole_sidechain:  # a main conversation: a later import may read only what it adds
        session.resume_state = lambda outcome: _capture(transcript, plan, session.records, session, list(links), outcome,
                                                        sides)
    elif grp != 0:  # an inline sidechain: what grows is its main conversation; it only gets the file's new state
        head = (transcript.item(at) if (at := plan.n_at(plan.partial)) is not None else None) if plan.partial is not None else None
        looked = (head.stamp or created or "") if head is not None else None  # a re-import looks at its partial record again
        session.resume_state = lambda outcome: _side_state(session, outcome, looked)
    session.state = transcript.state(grp)
    session.merged = plan.merged
    session.source_lines = lines
    session.source_items = plan.size + sum((skipped or {}).values())
    for reason, count in (skipped or {}).items():
        session.skip(reason, count)
    session.too_large = list(too_large or ())
    return session


#: A name :func:`toolkit.stores.slug` could give an ASCII project path: never a store's own folder
#: (``.levelsess``, ``_unassigned``), whatever a folder under ``projects`` is called.
_CLAUDE_FOLDER = re.compile(r"[A-Za-z0-9-]{1,200}")


def _project_folder(folder: Path) -> str | None:
    """The store folder of a session whose transcripts name no working folder (summary-only,
    queue-only): the name of the Claude Code project folder they are in (``projects/<slug>``),
    which is the one :func:`toolkit.stores.slug` gives the sessions there that name theirs when it
    is ASCII (both turn every character but a letter or digit into ``-``); None anywhere else."""
    if folder.parent.name != "projects" or not _CLAUDE_FOLDER.fullmatch(folder.name):
        return None
    return folder.name


def _first_cwd(path: Path) -> str | None:
    """The first ``cwd`` of a transcript's chain records (its project), reading no further."""
    from .sourcelines import SourceReader

    try:
        for src in SourceReader(path, CLAUDE_CODE.is_record, lambda _f: None):
            value = src.value
            if value.get("type") in CHAIN and isinstance(value.get("cwd"), str):
                return value["cwd"]
    except OSError:
        return None
    return None


def _sidechains(t: _Transcript) -> dict[str, int]:
    """1.0.x inline subagents of a main transcript: its ``isSidechain`` chain records, moved to a
    conversation (``grp``) of their own per root; returns root uuid -> its ``grp``, in file order."""
    flags = t.flags
    side = _CHAIN | _SIDE
    distinct, chain = t.side_counts()
    if not distinct or distinct == chain:
        return {}
    # canonical: the last sidechain record with a uuid (as a uuid -> record map keeps it);
    # up: the canonical record of its parent (-1: not a sidechain record's uuid)
    canonical, up = array("q", [-1]) * t.count, array("q", [-1]) * t.count
    for n, own, parent in t.side_links():
        canonical[n] = own
        up[n] = -1 if parent is None else parent
    root_of, walker = array("q", [-1]) * t.count, array("q", [-1]) * t.count  # by canonical record, memoised
    groups: dict[int, int] = {}
    rows: list[tuple[int, int]] = []
    for n in range(t.count):
        if flags[n] & side != side:
            continue
        current, steps = n, 0
        while root_of[canonical[current]] < 0 and up[current] >= 0 and walker[canonical[current]] != n:
            walker[canonical[current]] = n
            steps += 1
            current = up[current]
        root = root_of[canonical[current]] if root_of[canonical[current]] >= 0 else canonical[current]
        walked = n
        for _ in range(steps):  # the same walk again, recording its root
            root_of[canonical[walked]] = root
            walked = up[walked]
        if root_of[canonical[current]] < 0:
            root_of[canonical[current]] = root
        rows.append((groups.setdefault(root, len(groups) + 1), n))
        if len(rows) >= _BATCH:
            t.move(rows)
            rows.clear()
    t.move(rows)
    t.moved_all()
    return {t.uuid_of(root): grp for root, grp in groups.items()}


def _anchors(t: _Transcript, agent_ids: set[str]) -> dict[str, _Item]:
    """The tool result that returned each of ``agent_ids`` (the last one, in the main conversation)."""
    anchors = {}
    for n, agent in t.agents():
        if agent in agent_ids:
            anchors[agent] = n
    return {agent: t.item(n) for agent, n in anchors.items()}


def _sessions(main: Path | None, agents: list[Path], options: Options, report: Callable[[Finding], None],
              db: _Db) -> Iterator[Session]:
    parent_sid = None
    project = None
    subagent_sessions: list[tuple[Path, _Transcript, str]] = []
    if main is not None:
        transcript = _HeldTranscript(main, report, db)  # (held while the group may hold its rows: _Db.rows)
        parent_sid = _session_id(main)
        project = transcript.cwd
    else:  # only subagents: the session's transcript is gone, or was not named; its folder is named after it
        parent_sid = agents[0].parent.parent.name
        parent_file = agents[0].parent.parent.parent / f"{parent_sid}.jsonl"
        project = _first_cwd(parent_file) if parent_file.is_file() else None  # file it beside its session
    parent_id = safe_id("claude", parent_sid)
    for agent in agents:
        sub = _HeldTranscript(agent, report, db)
        agent_id = agent.stem[len("agent-"):]
        subagent_sessions.append((agent, sub, agent_id))
        if project is None:
            project = sub.cwd
    folder = None if project is not None else _project_folder(main.parent if main is not None else agents[0].parent.parent.parent)
    if main is not None:
        groups = _sidechains(transcript)
        links: list[tuple[_Item | None, dict]] = []
        anchors = _anchors(transcript, {agent_id for _agent, _sub, agent_id in subagent_sessions})
        for agent, sub, agent_id in subagent_sessions:
            child = safe_id("claude", f"{parent_sid}-agent-{agent_id}")
            anchor = anchors.get(agent_id)
            link = {"kind": "event", "t": (anchor.stamp if anchor else None) or sub.first_stamp or transcript.first_stamp or "",
                    "type": "subagent", "session": child, "agentId": agent_id, "sourceKey": f"claude:subagent:{agent_id}"}
            if anchor is not None and anchor.results:
                link["toolUseId"] = loads(anchor.results)[0]
            links.append((anchor, link))
        for root, grp in groups.items():
            child = safe_id("claude", f"{parent_sid}-side-{root}")
            first = transcript.item(transcript.first_in(grp))
            before = transcript.chain_before(first.n)
            anchor = transcript.item(before) if before is not None else None
            links.append((anchor, {"kind": "event", "t": first.stamp or "", "type": "subagent", "session": child,
                                   "sidechainRoot": root, "sourceKey": f"claude:sidechain:{root}"}))
        skipped = dict(transcript.reader.skipped)
        moved = transcript.moved()
        if moved:
            skipped["in-sidechain-session"] = moved
        yield _build(transcript, 0, parent_id, parent_sid, project, options, whole_sidechain=False,
                     extra_source={}, folder=folder, links=links, skipped=skipped, lines=transcript.reader.lines,
                     too_large=transcript.reader.too_large,
                     sides=tuple(safe_id("claude", f"{parent_sid}-side-{root}") for root in groups))
        for root, grp in groups.items():
            yield _build(transcript, grp, safe_id("claude", f"{parent_sid}-side-{root}"), f"{parent_sid}/sidechain/{root}",
                         project, options, whole_sidechain=True, extra_source={"parent": parent_id, "sidechainRoot": root},
                         folder=folder, lines=transcript.distinct_lines(grp))
    for agent, sub, agent_id in subagent_sessions:
        extra = {"parent": parent_id, "agentId": agent_id, **_agent_meta(agent)}
        if main is None and not (agent.parent.parent.parent / f"{parent_sid}.jsonl").is_file():
            extra["parentMissing"] = True  # the session's transcript is gone (deleted at the source before it was imported)
        yield _build(sub, 0, safe_id("claude", f"{parent_sid}-agent-{agent_id}"), f"{parent_sid}/{SUBAGENTS}/{agent.stem}",
                     project, options, whole_sidechain=True, extra_source=extra, folder=folder, title=extra.get("description"),
                     skipped=dict(sub.reader.skipped), lines=sub.reader.lines, too_large=sub.reader.too_large)


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every Claude Code session under ``source`` (and each of its subagents) as a converted :class:`Session`."""
    for unit in units(source, report):
        yield from scan_unit(unit, options, report)


def scan_unit(unit: Unit, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """The sessions of one unit: a transcript and its subagents."""
    main, agents = unit.handle
    where = main or agents[0]
    db = _Db()  # what the group's sessions hold per record, until the last of them is written
    try:
        try:
            with guarded("reading a transcript"):
                sessions = list(_sessions(main, agents, options, report, db))
        except DurabilityError:
            raise  # the temporary folder is full: so it is for the sessions after this one
        except OSError as exc:
            report(Finding("unreadable", "error", str(where), None, None, f"cannot read: {exc.strerror or exc}; not imported"))
            return
        except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
            report(Finding("source-unreadable", "error", str(where), None, None,
                           unconverted(exc)))
            return
        for session in sessions:
            if not len(session.records) and not session.too_large:  # a record too large to parse is kept all the same
                report(Finding("source-skipped", "warning", session.source["path"], None, None,
                               "holds no whole record (yet): no journal made; an import after it has one picks it up"))
                continue
            if not (options.orphans_only and not session.orphaned):
                yield session
    finally:
        db.close()


# -- a transcript that only grew: read from where the last import stopped (issue 27) -----------------

#: A transcript with more records than this is read in full on each import that sees it change
#: (what a resume keeps of it is a few bytes a record: see :class:`_Seen`).
RESUME_RECORDS = 2_000_000
#: A transcript that grew by more than this is read in full (what a resume reads is held in memory).
RESUME_BYTES = 16 << 20


class _Seen(Hashed):
    """The uuids, message ids and keys a transcript held (:mod:`toolkit.importers.bloom`)."""

    @classmethod
    def sized(cls, count: int) -> _Seen:
        return cls.empty(max(1024, count * 12 + 1024))


def _seen(keys, count: int | None = None, text: bool = True) -> list:
    """``keys`` (at most ``count`` of them, streamed; text when ``text``, else bytes) as a resume
    keeps them: exactly while few (:class:`~.bloom.Prints`), else as a :class:`_Seen` filter with
    room to grow."""
    if count is None:
        keys = list(keys)
        count = len(keys)
    if count <= bloom.EXACT_KEYS:
        return Prints.of(keys, text).dump()
    seen = _Seen.sized(count + count // 4 + 256)
    seen.update(keys)
    return seen.dump()


def _load_seen(value: object) -> Prints | _Seen:
    """What :func:`_seen` kept (or an earlier build's filter); ValueError for anything else."""
    if isinstance(value, list) and value[:1] == [Prints.TAG]:
        return Prints.load(value)
    return _Seen.load(value)


def _kept_seen(*kept: Prints | _Seen) -> bool:
    """Whether these, added to by a resume, can be kept: exact ones grown past
    :data:`~.bloom.EXACT_KEYS` cannot (the transcript is read in full instead, and keeps filters)."""
    return not any(type(seen) is Prints and len(seen) > bloom.EXACT_KEYS for seen in kept)


def _side_state(session: Session, outcome: Outcome, looked: str | None) -> dict | None:
    """What resuming an inline sidechain's journal needs: it gets no record, only the file's new
    state, at the time of the last record a re-import looks at (``looked``: its partial one, if any)."""
    if outcome.after is None or outcome.keys is None:
        return None
    return {"side": True, "created": session.created_at, "when": looked or session.created_at, "seq": outcome.after[0],
            "title": outcome.after[1], "keys": outcome.keys}


def _capture(transcript: _Transcript, plan: _Plan, records: _Records, session: Session, links: list,
             outcome: Outcome, sides: tuple[str, ...] = ()) -> dict | None:
    """What resuming the main conversation of ``transcript`` needs, after its journal was written
    (``outcome``); None when a resume could not be proven to write what a full read would."""
    reader = transcript.reader
    if (reader.sha256 is None or reader.too_large or reader.skipped or outcome.after is None
            or outcome.keys is None or transcript.count > RESUME_RECORDS or reader.covered != reader.end):
        return None
    side_rows = transcript.moved()
    leaf = transcript.last_main_uuid()
    if leaf is None:
        return None
    stamp = transcript.last_stamp()
    repeats: dict[str, int] = {}  # a key seen n > 1 times: its last copy is keyed "#n"
    repeated, firsts, lone = transcript.lone_keys()
    for key in repeated:
        base, _sep, n = key.partition("#")
        repeats[base] = max(repeats.get(base, 0), int(n))
    hkeys = {"repeats": repeats, "seen": _seen(firsts, lone)}
    if plan.first_stamp() is None:  # its time is the file's mtime, which a growth changes
        return None
    order = {n: k for k, n in enumerate(plan.in_order())} if links else {}  # where each record is shown: only the links placed after one need it
    # the subagent links a re-import looks at before the new records: those after a record of the chain
    last_t = lambda found: next((link["t"] for link in reversed(found) if link.get("t")), None)  # noqa: E731
    anchored = [link for _k, _i, link in sorted((order[a.n], i, link) for i, (a, link) in enumerate(links)
                                               if a is not None and a.n in order)]
    loose = [link for anchor, link in links if anchor is None]
    partial = None
    if plan.partial is not None:  # a response still being written: a later import supersedes its record (its seq)
        parts = plan.parts(plan.partial)
        items = [transcript.item(n) for n in parts]
        seq = (outcome.after[2] or {}).get(items[0].key) if len(outcome.after) > 2 and outcome.after[2] else None
        if seq is None:
            return None
        uses: set[str] = set()
        for n in parts:
            found = transcript.uses_msg(n)[0]
            uses.update(loads(found) if found else ())
        later = [link for k, i, link in sorted((order[a.n], i, link) for i, (a, link) in enumerate(links)
                                                if a is not None and a.n in order and order[a.n] >= order[parts[0]])]
        partial = _partial_state(items, seq, uses, transcript.uses_msg(parts[0])[1], last_t(later),
                                 max(parts))
    return {"path": str(transcript.path), "covered": reader.covered, "sha256": reader.sha256, "number": reader.number,
            "lines": reader.lines, "leaf": leaf, "stamp": stamp, "count": transcript.count,
            "rank": records.title_rank, "line_title": records.line_title, "shown": records.shown_title,
            "prompt": _first_prompt(transcript, plan), "created": session.created_at,
            "uuids": _seen(transcript.uuids(), transcript.count),
            "msgs": _seen(transcript.msgs(), transcript.count, text=False),
            "hkeys": hkeys, "links_when": last_t(anchored), "loose_when": last_t(loose), "has_loose": bool(loose),
            "source_items": session.source_items, "merged": session.merged, "source_lines": session.source_lines,
            "seq": outcome.after[0], "title": outcome.after[1], "keys": outcome.keys, "partial": partial,
            "side_rows": side_rows, "sides": list(sides), "skipped": dict(session.skipped)}


def _partial_state(items: list[_Item], seq: int, uses: set[str], msg: bytes | None, after_when: str | None,
                   last: int) -> dict:
    """What a resume needs of the response still being written: its parts (where they are), its
    record's seq, its calls, its message, the time of the links shown after it, and the record
    number of its last part (what follows it is judged from there)."""
    return {"seq": seq, "items": [[it.n, it.line, it.offset, it.size, it.kind, it.uuid, it.parent, it.stamp,
                                   it.results.decode() if it.results else None, it.key] for it in items],
            "uses": sorted(uses), "msg": msg.decode() if msg is not None else None, "after_when": after_when, "last": last}


def resume_unit(unit: Unit, grown: str, kept: dict) -> list | None:
    """A unit whose main transcript only grew since the last import (``kept``: that import's entry,
    :mod:`toolkit.importers.unchanged`): its main session resumed (:class:`Resumed`), then the
    unit's other sessions' outcomes as kept; None when it must be read in full."""
    main, _agents = unit.handle
    if main is None or str(main) != grown:
        return None
    sid = safe_id("claude", _session_id(main))
    outcomes = kept["outcomes"]
    mine = [o for o in outcomes if o.id == sid]
    state = kept["resume"].get(sid)
    if len(mine) != 1 or state is None or mine[0].status != "unchanged" or state.get("path") != str(main):
        return None
    sides = {side: kept["resume"].get(side) for side in state.get("sides", ())}
    if any(side is None or not side.get("side") for side in sides.values()):
        return None
    outcome = mine[0]
    resumed = resume(main, state, outcome.project, sid, {"app": APP, "path": str(main)},
                     (outcome.source_status, outcome.orphan), outcome.path)
    if resumed is None:
        return None
    return [resumed if o is outcome else _side_resumed(o, sides[o.id], resumed.session.state) if o.id in sides else o
            for o in outcomes]


def _side_resumed(outcome: Outcome, state: dict, source_state: SourceState) -> Resumed:
    """An inline sidechain of a transcript that only grew: no record, only the file's new state."""
    session = Session(outcome.id, outcome.project, state["created"], outcome.title, {"app": APP, "path": source_state.path},
                      None, status=outcome.source_status, orphan=list(outcome.orphan))
    session.records = []
    session.source_items, session.skipped = outcome.source_items, dict(outcome.skipped)
    session.source_lines, session.merged = outcome.source_lines, outcome.merged
    session.state = source_state
    session.resume_state = lambda written: {**state, "seq": written.after[0], "title": written.after[1], "keys": written.keys} \
        if written.after is not None and written.keys is not None else None
    return Resumed(session, outcome.path, state["keys"], (state["seq"], state["title"]), state["when"], frozenset())


def resume(path: Path, state: dict, project: str | None, sid: str, source: dict, status: tuple,
           journal: Path) -> Resumed | None:
    """The session of a transcript that only grew since ``state`` was kept, from its new lines
    alone, or None when they do anything but continue its conversation (then it is read in full):
    the bytes before must hash as they did, and every new record must be whole, of a new uuid,
    each the child of the one before (the first, of the last import's leaf), no response's part
    already kept, no subagent's result, no summary."""
    from .sourcelines import read_on

    reading = read_on(path, state, CLAUDE_CODE.is_record, "Claude Code record", RESUME_BYTES)
    if reading is None:
        return None
    reader, said = reading
    try:
        uuids, msgs = _load_seen(state["uuids"]), _load_seen(state["msgs"])
    except (TypeError, ValueError, IndexError):
        return None
    fresh: set[bytes] = set()
    try:
        repeats, once = dict(state["hkeys"]["repeats"]), _load_seen(state["hkeys"]["seen"])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    hkeys: dict[str, int] = {}  # the new lines' keys, with the count of the file's lines before each
    items: list[tuple[_Item, int, dict, bytes]] = []
    stamp, parent = state["stamp"], state["leaf"]
    try:
        for src in reader:
            value = src.value
            if isinstance(value.get("timestamp"), str):
                stamp = value["timestamp"]
            row, flags = _row(len(items), src, value, stamp)
            item = _Item.of((row[0], row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[13], _key_of(row)))
            if item.uuid is not None:
                own = item.uuid
                logical = from_db(row[10])
                effective = logical if flags & _PNULL else item.parent
                if flags & _SIDE or own in uuids or effective != parent or row[14] is not None:
                    return None
                uuids.add(own)
                parent = item.uuid
                if row[11] is not None:  # a response's part: its first part kept already would merge it there
                    if row[11] in msgs and row[11] not in fresh:
                        return None
                    fresh.add(row[11])
            else:
                if item.kind == "summary":
                    return None
                base = item.key
                if base not in hkeys:
                    if base not in repeats and base in once:  # seen before, maybe: its number is not known here
                        return None
                    hkeys[base] = repeats.get(base, 0)
                hkeys[base] += 1
                if hkeys[base] > 1:
                    item = item._replace(key=f"{base}#{hkeys[base]}")
            items.append((item, flags, value, src.data))
    except OSError:
        return None
    if said or reader.skipped or reader.too_large or not items or reader.sha256 is None:
        return None
    for digest in fresh:
        msgs.add(digest)
    for base, count in hkeys.items():
        once.add(base)
        if count > 1:
            repeats[base] = count
    if not _kept_seen(uuids, msgs, once):
        return None
    return _resumed_session(items, state, reader, project, sid, source, status, journal, uuids.dump(), msgs.dump(),
                            {"repeats": repeats, "seen": once.dump()})


def _resumed_session(items: list, state: dict, reader: SourceReader, project: str | None, sid: str, source: dict,
                     status: tuple, journal: Path, uuids: list, msgs: list, hkeys: dict) -> Resumed:
    """The records a full re-import would append for ``items`` (the new lines, all continuing the
    conversation), in its order: the new chain's units, then the new lines off it."""
    created = state["created"]
    chain_items = [(it, flags, value, data) for it, flags, value, data in items if it.uuid is not None]
    heads: dict[bytes, int] = {}
    unit_of = []
    for pos, (it, flags, value, data) in enumerate(chain_items):
        msg = _msg_of(value) if flags & _ASSISTANT else None
        unit_of.append(heads.setdefault(msg, pos) if msg is not None else pos)
    order = sorted(range(len(chain_items)), key=lambda pos: (unit_of[pos], pos))
    units: list[list[int]] = []
    for pos in order:
        if units and unit_of[units[-1][0]] == unit_of[pos]:
            units[-1].append(pos)
        else:
            units.append([pos])
    # what follows a response is judged by position in the conversation's own list of records, which
    # an inline sidechain's records left (as :meth:`_Plan._partial` slices it): the new records sit
    # ``side_rows`` places earlier there than in the file
    side_rows = state.get("side_rows", 0)
    partial = _partial_unit(units, chain_items, items, side_rows)
    old = state.get("partial")
    superseded = None  # the response still being written at the last import, whole now: superseded first
    if old is not None and (partial is not None or any(chain_items[u[0]][0].kind == "assistant" for u in units)
                            or not _still_partial(old, items[max(0, old["last"] + 1 - (state["count"] - side_rows)):])):
        superseded = _superseding(old, reader.path, created)
        if superseded is None:
            return None
    records = [superseded] if superseded is not None else []
    for unit in units:
        parts = [chain_items[pos] for pos in unit]
        record = _unit_record([p[0] for p in parts], [(p[2], p[3]) for p in parts], parts[0][0].stamp or created or "",
                              partial=unit is partial)
        records.append(record)
    rank, line_title, shown = state["rank"], state["line_title"], state["shown"]
    rest = [(it, value, data) for it, _flags, value, data in items if it.uuid is None]
    for it, value, _data in rest:  # the file's highest kind of title, and its last one, with the new lines
        field_rank = _TITLES.get(it.kind)
        text = value.get(field_rank[0]) if field_rank else None
        if field_rank and field_rank[1] >= rank and isinstance(text, str):
            if field_rank[1] > rank:
                shown = None  # no earlier title of that kind: none was shown
            rank, line_title = field_rank[1], text
    for it, value, data in rest:
        record, shown = _meta_record(it, value, it.stamp or created or "", rank, shown, lambda: True)
        record[AT] = it.offset
        record["raw"] = Raw(data)
        records.append(record)
    when = created  # the time of the last record a full re-import looks at (a title change and the source state take it)
    first = 1 if superseded is not None else 0
    head_t = (old["items"][0][7] or created or "") if old is not None else None  # a partial record is looked at, whole or not
    for t in [state["links_when"], *([head_t, old["after_when"]] if old is not None else []),
              *(r.get("t") for r in records[first:first + len(units)]), state["loose_when"],
              *(r.get("t") for r in records[first + len(units):])]:
        when = t or when
    prompt = state["prompt"]
    if prompt is None:
        prompt = _prompt_of([chain_items[unit[0]] for unit in units])
    title = line_title or prompt
    session = Session(sid, project, created, title, source, None, status=status[0], orphan=list(status[1]))
    session.records = records
    session.merged = state["merged"] + len(chain_items) - len(units)
    session.source_lines = state["source_lines"] + reader.lines
    session.source_items = state["source_items"] + len(items)
    session.skipped = dict(state.get("skipped", {}))  # (the records moved to inline sidechains' sessions)
    session.state = SourceState(str(reader.path), reader.covered, reader.sha256, (), lambda _o, _l: b"")
    leaf = chain_items[-1][0].uuid if chain_items else state["leaf"]
    count = state["count"] + len(items)
    stamp = items[-1][0].stamp

    def keep(outcome: Outcome) -> dict | None:
        if outcome.after is None or outcome.keys is None or count > RESUME_RECORDS:
            return None
        kept_partial = old if superseded is None else None
        if partial is not None:
            parts = [chain_items[pos] for pos in partial]
            seq = (outcome.after[2] or {}).get(parts[0][0].key) if len(outcome.after) > 2 else None
            if seq is None:
                return None
            uses = _uses_of(value for _it, _f, value, _d in parts)
            kept_partial = _partial_state([p[0] for p in parts], seq, uses, _msg_of(parts[0][2]), None,
                                          state["count"] + max(p[0].n for p in parts))
        return {**state, "covered": reader.covered, "sha256": reader.sha256, "number": reader.number,
                "lines": state["lines"] + reader.lines, "leaf": leaf, "stamp": stamp, "count": count, "rank": rank,
                "line_title": line_title, "shown": shown, "prompt": prompt, "uuids": uuids, "msgs": msgs,
                "hkeys": hkeys, "source_items": session.source_items, "merged": session.merged,
                "source_lines": session.source_lines, "seq": outcome.after[0], "title": outcome.after[1],
                "keys": outcome.keys, "partial": kept_partial}

    session.resume_state = keep
    held = frozenset([superseded["sourceKey"], *superseded.get(PART_KEYS, ())]) if superseded is not None else frozenset()
    return Resumed(session, journal, state["keys"], (state["seq"], state["title"]), when, held)


def _uses_of(values) -> set[str]:
    """The tool_use ids a response's parts call."""
    uses = set()
    for value in values:
        message = value.get("message") if isinstance(value.get("message"), dict) else {}
        content = message.get("content") if isinstance(message.get("content"), list) else ()
        uses.update(b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str))
    return uses


def _still_partial(old: dict, items: list) -> bool:
    """Whether the response still being written at the last import still may be: nothing but its
    own tool results (or its own parts) came after it."""
    return _only_its_own(items, set(old["uses"]), old["msg"].encode() if old["msg"] is not None else None)


def _only_its_own(items: list, uses: set, msg: bytes | None) -> bool:
    """Whether nothing follows a response among ``items`` but its own tool results (``uses``: its
    calls) and its own parts (``msg``: its message and request ids), as :meth:`_Plan._partial`
    judges: then it may still be being written."""
    for it, flags, value, _data in items:
        if not flags & _CHAIN or flags & _SIDE or not flags & (_USER | _ASSISTANT):
            continue
        if flags & _USER and it.results is not None and set(loads(it.results)) <= uses:
            continue
        if flags & _ASSISTANT and _msg_of(value) == msg:
            continue
        return False
    return True


def _superseding(old: dict, path: Path, created: str | None) -> dict | None:
    """The record of the response kept ``partial`` at the last import, whole now, superseding its
    kept copy (``replaces`` its seq), converted from its lines re-read; None if they changed."""
    items = [_Item(n, line, offset, size, kind, uuid, parent, stamp, results.encode() if results else None, key)
             for n, line, offset, size, kind, uuid, parent, stamp, results, key in old["items"]]
    pairs = []
    try:
        with open_regular(path) as handle:
            for item in items:
                handle.seek(item.offset)
                data = handle.read(item.size)
                try:
                    value = loads(data)
                except ValueError:
                    return None
                if type(value) is not dict or value.get("type") != item.kind or value.get("uuid") != item.uuid:
                    return None
                pairs.append((value, data))
    except OSError:
        return None
    record = dict(_unit_record(items, pairs, items[0].stamp or created or "", partial=False))
    record["replaces"] = old["seq"]
    return record


def _msg_of(value: dict) -> bytes | None:
    message = value.get("message") if isinstance(value.get("message"), dict) else {}
    if not isinstance(message.get("id"), str):
        return None
    request = value.get("requestId")
    return _ids([message["id"], request if isinstance(request, str) else None])


def _partial_unit(units: list[list[int]], chain_items: list, items: list, side_rows: int = 0) -> list[int] | None:
    """The new unit of a response that may still be being written (as :meth:`_Plan._partial`
    judges it; a unit kept whole before stays whole: more lines after it cannot make it partial)."""
    head = next((unit for unit in reversed(units) if chain_items[unit[0]][0].kind == "assistant"), None)
    if head is None:
        return None
    if chain_items[head[-1]][1] & _STOP:
        return None
    last = max(chain_items[pos][0].n for pos in head)
    uses = _uses_of(chain_items[pos][2] for pos in head)
    return head if _only_its_own(items[last + 1 + side_rows:], uses, _msg_of(chain_items[head[0]][2])) else None


def _prompt_of(heads: list) -> str | None:
    """The first prompt typed among these unit heads (as :func:`_first_prompt`)."""
    for it, flags, value, _data in heads:
        if flags & _USER and it.results is None and (text := _typed(value)) is not None:
            return text
    return None
