"""Read what an OpenCode / Kilo CLI data folder holds: its SQLite databases and its legacy JSON
tree (SOURCES-MORE.md §3.2, §3.4), without writing a byte of either.

Each source is read in two passes.  The first lists only ids (sessions, messages with their
session and time, parts with their message): small, so a data folder's whole listing fits in
memory.  The second loads one session's rows when it is converted.  A database is scanned by
``rowid``; a page SQLite cannot read (SQLITE_CORRUPT) stops a scan only there: the rows after
it are read by probing rowid by rowid, and each run of rows that could not be read is one
``source-unreadable`` finding with its count.  A row whose ids read but whose ``data`` does not
is a finding on its session, with its key.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LevelsessError
from ...findings import Finding
from ...lines import loads
from .. import sqlite as sq

#: Rowids probed one by one past a damaged page when the table's largest rowid cannot be read.
PROBE_LIMIT = 100_000


@dataclass(slots=True)
class Ref:
    """One message or part: where its row or file is (``where``: a rowid or a path).  A part's
    ``id`` is None until its row is read (a database's listing holds only where its parts are)."""

    id: str | None
    owner: str  # the session (a message) or the message (a part)
    time: int
    store: "Store"
    where: object
    table: str = ""  # a database row's table


@dataclass
class Store:
    """One database or one JSON tree, listed (pass one): a message or part is a few words of it
    (a database's: its rowid; a tree's: its file's name), the :class:`Ref` made when it is read."""

    path: Path
    kind: str  # "db" | "json"
    sessions: dict[str, Ref] = field(default_factory=dict)
    projects: set[str] = field(default_factory=set)
    # by session id: a database's [message id, rowid, time_created, ...], a tree's message ids
    messages: dict[str, list] = field(default_factory=dict)
    parts: dict[str, list] = field(default_factory=dict)  # by message id: a database's rowids, a tree's part ids
    conn: sqlite3.Connection | None = None
    has_projects: bool = True  # whether a project table or folder was there to resolve ids against
    keys: dict[str, str] = field(default_factory=dict)  # a table's key column: rowid, or id
    has_sessions: bool = True  # a database with a session table (OpenCode reads it, not the tree)

    def message_ids(self, sid: str) -> list[str]:
        listed = self.messages.get(sid, ())
        return list(listed[::3]) if self.kind == "db" else list(listed)

    def message_refs(self, sid: str) -> list[Ref]:
        listed = self.messages.get(sid, ())
        if self.kind == "db":
            return [Ref(listed[i], sid, listed[i + 2], self, listed[i + 1], "message") for i in range(0, len(listed), 3)]
        folder = self.path / "message" / sid
        return [Ref(mid, sid, 0, self, folder / f"{mid}.json") for mid in listed]

    def part_refs(self, mid: str) -> list[Ref]:
        listed = self.parts.get(mid, ())
        if self.kind == "db":
            named = self.keys.get("part") == "id"  # a table WITHOUT ROWID: its key is the part's id
            return [Ref(where if named else None, mid, 0, self, where, "part") for where in listed]
        folder = self.path / "part" / mid
        return [Ref(pid, mid, 0, self, folder / f"{pid}.json") for pid in listed]

    def load(self, ref: Ref) -> tuple[dict, object]:
        """(the row or file as a dict, the parsed ``data`` object); raises on damage."""
        if self.kind == "json":
            return _load_file(ref)
        if ref.table not in self.keys:
            self.keys[ref.table] = key_column(self.conn, ref.table)
        return load_db_row(self.conn, ref.table, ref.where, self.keys[ref.table])

    def column(self, ref: Ref, name: str) -> object:
        """One column of a database row whose whole row could not be read (None when that cannot either)."""
        if self.kind == "json":
            return None
        try:
            row = self.conn.execute(f"select {name} from {ref.table} where {self.keys.get(ref.table, 'rowid')} = ?", (ref.where,)).fetchone()
        except sqlite3.DatabaseError:
            return None
        return _id(row[0]) if row is not None else None


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else None


def _id(value: object) -> str | None:
    """An id column as text; bytes that are not UTF-8 (a damaged row) spelled out, never a lone
    surrogate that a journal key or a file name could not hold."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return value if isinstance(value, str) else None


# -- databases --------------------------------------------------------------------------------


def _max_rowid(conn: sqlite3.Connection, table: str) -> int | None:
    try:
        return conn.execute(f"select max(rowid) from {table}").fetchone()[0]
    except sqlite3.DatabaseError:
        return None


def key_column(conn: sqlite3.Connection, table: str) -> str:
    """``rowid``, or ``id`` for a table created WITHOUT ROWID (not what OpenCode's schema does)."""
    try:
        conn.execute(f"select rowid from {table} limit 0")
    except sqlite3.OperationalError as exc:
        if "no such column" in str(exc):
            return "id"
    return "rowid"


def salvage(conn: sqlite3.Connection, table: str, columns: str, path: Path, report: Callable[[Finding], None]) -> Iterator[tuple]:
    """Yield ``(rowid, *columns)`` of every row of ``table`` SQLite can read, in rowid order."""
    if key_column(conn, table) == "id":
        yield from _by_id(conn, table, columns, path, report)
        return
    last, top = -(2**63), None
    while True:
        try:
            cursor = conn.execute(f"select rowid, {columns} from {table} where rowid > ? order by rowid", (last,))
            for row in cursor:  # one step at a time: a batch would fail whole at the damaged page
                last = row[0]
                yield row
            return
        except sqlite3.DatabaseError as exc:
            top = _max_rowid(conn, table) if top is None else top
            found = yield from _probe(conn, table, columns, last, top, path, str(exc), report)
            if found is None:
                return
            last = found


def _by_id(conn, table, columns, path, report) -> Iterator[tuple]:
    """A WITHOUT ROWID table, keyed by ``id``: read in key order up to a damaged page (text keys
    cannot be probed one by one), then one finding."""
    try:
        for row in conn.execute(f"select id, {columns} from {table} order by id"):
            yield (_text(row[0]), *row[1:])  # the key as text: a bytes parameter would never equal a text id
    except sqlite3.DatabaseError as exc:
        report(Finding("source-unreadable", "error", str(path), None, None,
                       f"table {table}: the database is damaged ({exc}); the rows after the damage could not be read"))


def _probe(conn, table, columns, last, top, path, why, report) -> Iterator[tuple]:
    """Past a damaged page: try each rowid after ``last``; yield the first readable row and return
    its rowid (None when none is left).  One finding for the run of rowids that failed."""
    start = max(last + 1, 1) if last > -(2**63) else 1
    end = top if isinstance(top, int) else start + PROBE_LIMIT
    failed, rowid = 0, start
    found = None
    while rowid <= end:
        try:
            row = conn.execute(f"select rowid, {columns} from {table} where rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            failed += 1
            rowid += 1
            continue
        if row is not None:
            found = row
            break
        rowid += 1
    if failed:
        report(Finding("source-unreadable", "error", str(path), None, None,
                       f"table {table}: the database is damaged ({why}); {failed} row(s) from rowid {start} to "
                       f"{(found[0] - 1) if found else end} could not be read and are not imported; every other row is"))
    if found is None:
        return None
    yield found
    return found[0]


def open_database(path: Path, stack: contextlib.ExitStack, report: Callable[[Finding], None]) -> Store | None:
    """List one database (pass one); None, with a finding, when it cannot be opened at all."""
    try:
        conn = stack.enter_context(sq.open_db(path))
        names = sq.tables(conn)
    except (LevelsessError, sqlite3.DatabaseError) as exc:
        report(Finding("source-unreadable", "error", str(path), None, None, f"cannot read this database ({exc}); nothing imported from it"))
        return None
    store = Store(path, "db", conn=conn)
    store.has_projects = "project" in names
    if "session" not in names:
        store.has_sessions = False
        report(Finding("unknown-format", "warning", str(path), None, None, "no session table: not an OpenCode database, or not migrated yet"))
        return store
    if "project" in names:
        store.projects = {_id(r[1]) for r in salvage(conn, "project", "id", path, report)}
    for rowid, sid, pid, created in salvage(conn, "session", "id, project_id, time_created", path, report):
        if _id(sid):
            store.sessions[_id(sid)] = Ref(_id(sid), _id(pid) or "", created if isinstance(created, int) else 0, store, rowid, "session")
    if "message" in names:
        listed = store.messages
        for rowid, mid, sid, created in salvage(conn, "message", "id, session_id, time_created", path, report):
            mid, sid = _id(mid), _id(sid)
            if mid and sid:
                held = listed.get(sid)
                if held is None:
                    listed[sid] = held = []
                held += (mid, rowid, created if isinstance(created, int) else 0)
    if "part" in names:
        store.keys["part"] = key_column(conn, "part")
        listed = store.parts
        for rowid, pid, mid in salvage(conn, "part", "id, message_id", path, report):
            mid = _id(mid)
            if _id(pid) and mid:
                held = listed.get(mid)
                if held is None:
                    listed[mid] = held = []
                held.append(rowid)
    return store


def load_db_row(conn: sqlite3.Connection, table: str, key: object, column: str = "rowid") -> tuple[dict, object]:
    """One row as a dict (text decoded, ``data`` parsed); raises :class:`sq.SourceUnreadable`."""
    try:
        cursor = conn.execute(f"select * from {table} where {column} = ?", (key,))
        row = cursor.fetchone()
    except sqlite3.DatabaseError as exc:
        raise sq.SourceUnreadable(f"the row cannot be read ({exc})") from exc
    if row is None:
        raise sq.SourceUnreadable("the row is gone")
    names = [d[0] for d in cursor.description]
    out = {}
    for name, value in zip(names, row):
        if name in ("data", "summary_diffs", "revert", "permission", "model", "sandboxes", "commands"):
            out[name] = sq.decode(value) if name == "data" else _maybe_json(value)
        else:
            out[name] = _text(value) if isinstance(value, bytes) else value
    return out, out.get("data")


def _maybe_json(value: object) -> object:
    if value is None:
        return None
    try:
        return sq.decode(value)
    except sq.SourceUnreadable:
        return _text(value)


# -- the legacy JSON tree -----------------------------------------------------------------------


def _load_file(ref: Ref) -> tuple[dict, object]:
    try:
        data = Path(ref.where).read_bytes()
    except OSError as exc:
        raise sq.SourceUnreadable(f"cannot read: {exc.strerror or exc}") from exc
    try:
        value = loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise sq.SourceUnreadable(f"not JSON ({str(exc)[:80]})") from exc
    if not isinstance(value, dict):
        raise sq.SourceUnreadable("not a JSON object")
    return value, value


def _json_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
    except OSError:
        return []


def _dirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def open_tree(storage: Path, report: Callable[[Finding], None]) -> Store:
    """List a ``storage/`` tree (pass one).  A project file that does not parse does not resolve
    (the migration skips its sessions, §3.5)."""
    store = Store(storage, "json", has_projects=(storage / "project").is_dir())
    for path in _json_files(storage / "project"):
        try:
            _load_file(Ref(path.stem, "", 0, store, path))
        except sq.SourceUnreadable as exc:
            report(Finding("source-unreadable", "error", str(path), None, None, f"project file {exc}; its sessions are imported as orphaned"))
            continue
        store.projects.add(path.stem)
    for project in _dirs(storage / "session"):
        for path in _json_files(project):
            store.sessions.setdefault(path.stem, Ref(path.stem, project.name, 0, store, path))
    for session in _dirs(storage / "message"):
        names = [p.stem for p in _json_files(session)]
        if names:
            store.messages[session.name] = names
    for message in _dirs(storage / "part"):
        names = [p.stem for p in _json_files(message)]
        if names:
            store.parts[message.name] = names
    return store
