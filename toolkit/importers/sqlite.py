"""Read an editor's ``state.vscdb`` without changing a byte of it (SOURCES.md §1.1, §1.2).

Measured here: any SQLite connection to a WAL-mode database, even ``?mode=ro``, writes read
marks into its ``-shm`` file, and on a WAL database with no ``-wal``/``-shm`` it *creates* both.
So the rule is:

* rollback-journal database: open ``<Path.as_uri()>?mode=ro`` (a shared lock, no file written;
  the URI form keeps a ``#`` or ``?`` in the path from truncating it and creating a database);
* WAL database with no (or an empty) ``-wal``: open with ``immutable=1`` (nothing is in the WAL,
  and nothing is created);
* WAL database with a ``-wal``: snapshot - copy the database and its ``-wal`` into a private
  temp folder (retrying if the editor wrote meanwhile) and open the copy, so rows still in the
  WAL are seen and the source's files are only read.

Values are fetched as bytes and decoded per row: NULL, undecodable or non-JSON values become a
``source-unreadable`` finding with their key.  Key families are listed by key *range*, which
uses the unique index (``LIKE`` scans the table and treats ``_`` as a wildcard).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import LockBusyError, OperationalError, PathNotFoundError, PermissionDeniedError
from ..lines import loads

HEADER = b"SQLite format 3\x00"
FETCH = 512


class SourceUnreadable(ValueError):
    """A value that is NULL, not UTF-8 or not JSON (the finding ``source-unreadable``)."""


def _is_wal(path: Path) -> bool:
    with open(path, "rb") as handle:
        header = handle.read(100)
    if not header.startswith(HEADER):
        raise OperationalError(f"{path} is not an SQLite database")
    return len(header) >= 20 and header[18] == 2 and header[19] == 2


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _snapshot(path: Path, folder: Path) -> Path:
    """Copy ``path`` and its ``-wal`` into ``folder``; retry while the editor writes."""
    wal = path.with_name(path.name + "-wal")
    copy = folder / "state.vscdb"
    for _ in range(5):
        before = [(p.stat().st_size, p.stat().st_mtime_ns) if p.exists() else None for p in (path, wal)]
        shutil.copyfile(path, copy)
        if wal.exists():
            shutil.copyfile(wal, folder / "state.vscdb-wal")
        after = [(p.stat().st_size, p.stat().st_mtime_ns) if p.exists() else None for p in (path, wal)]
        if before == after:
            return copy
    raise LockBusyError(f"{path} kept changing while it was being copied (the editor is writing); close it and retry")


@contextlib.contextmanager
def open_db(path: Path) -> Iterator[sqlite3.Connection]:
    """Yield a read-only connection to ``path`` that never writes to the source's files."""
    path = Path(path)
    if not path.is_file():
        raise PathNotFoundError(str(path))
    try:
        wal_mode = _is_wal(path)
    except PermissionError as exc:
        raise PermissionDeniedError(f"cannot read {path}") from exc
    temp = None
    try:
        if wal_mode and _size(path.with_name(path.name + "-wal")) > 0:
            temp = Path(tempfile.mkdtemp(prefix="levelsess-snapshot-"))
            target, query = _snapshot(path, temp), "?mode=ro"
        else:
            target, query = path, "?mode=ro&immutable=1" if wal_mode else "?mode=ro"
        try:
            conn = _connect(target.resolve().as_uri() + query, target)
        except sqlite3.DatabaseError as exc:
            if is_locked(exc):
                raise locked(path) from exc
            raise OperationalError(f"{path}: cannot read the database ({exc})") from exc
        try:
            yield conn
        finally:
            conn.close()
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def is_locked(exc: BaseException) -> bool:
    """Whether SQLite's error is another process holding the database (the editor writing)."""
    return "locked" in str(exc) or "busy" in str(exc)


def locked(path: Path) -> LockBusyError:
    """The error of a database the editor holds: what to do about it."""
    return LockBusyError(f"{path}: the database is locked by the editor; close it and retry")


class _Connection(sqlite3.Connection):
    """A connection that knows how it was opened: its URI, and the file it read (:func:`reopen`)."""

    opened: tuple[str, Path, tuple[int, int]] | None = None


def _connect(uri: str, target: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=2, factory=_Connection)
    conn.text_factory = bytes
    conn.execute("select count(*) from sqlite_master").fetchone()
    info = os.stat(target)
    conn.opened = (uri, target, (info.st_dev, info.st_ino))
    return conn


def reopen(conn: sqlite3.Connection) -> sqlite3.Connection:
    """A new connection to what ``conn`` (from :func:`open_db`) reads, opened as it was: a forked
    worker's own (an SQLite connection must not be used across a fork).  Refused when the file at
    its path is no longer the one ``conn`` opened (replaced meanwhile)."""
    uri, target, ident = conn.opened
    try:
        info = os.stat(target)
        if (info.st_dev, info.st_ino) != ident:
            raise OperationalError(f"{target} was replaced while it was being imported; import again")
        return _connect(uri, target)
    except (sqlite3.DatabaseError, OSError) as exc:
        if is_locked(exc):  # the editor took it meanwhile: as when it is opened
            raise locked(target) from exc
        raise OperationalError(f"{target}: cannot read the database again ({exc}); import again") from exc


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0].decode() for row in conn.execute("select name from sqlite_master where type = 'table'")}


def _upper(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def keys(conn: sqlite3.Connection, table: str, prefix: str) -> Iterator[str]:
    """Yield the keys of ``table`` that start with ``prefix``, in key order, streaming."""
    cursor = conn.execute(f"select key from {table} where key >= ? and key < ? order by key", (prefix, _upper(prefix)))
    while rows := cursor.fetchmany(FETCH):
        for (key,) in rows:
            yield key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key


def raw_value(conn: sqlite3.Connection, table: str, key: str) -> bytes | None:
    """Return the value stored under ``key`` (bytes), or None when the row or value is missing."""
    row = conn.execute(f"select value from {table} where key = ?", (key,)).fetchone()
    if row is None or row[0] is None:
        return None
    value = row[0]
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def has_key(conn: sqlite3.Connection, table: str, key: str) -> bool:
    return conn.execute(f"select 1 from {table} where key = ?", (key,)).fetchone() is not None


def decode(raw: bytes | None) -> object:
    """Parse a stored value; raise :class:`SourceUnreadable` with the reason."""
    if raw is None:
        raise SourceUnreadable("the value is NULL")
    try:
        return loads(raw)
    except UnicodeDecodeError as exc:
        raise SourceUnreadable("the value is not UTF-8") from exc
    except ValueError as exc:
        raise SourceUnreadable(f"the value is not JSON ({str(exc)[:80]})") from exc


def value(conn: sqlite3.Connection, table: str, key: str) -> object:
    """Fetch and parse one value by exact key; raise :class:`SourceUnreadable` if it is bad."""
    return decode(raw_value(conn, table, key))


def file_state(path: Path) -> dict[str, tuple[int, int] | None]:
    """Size and mtime of a database and its sidecar files (to prove nothing was written)."""
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        candidate = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            info = os.stat(candidate)
            out[suffix] = (info.st_size, info.st_mtime_ns)
    return out
