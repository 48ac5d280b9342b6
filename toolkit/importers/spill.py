"""Import state that grows with the source, kept out of memory: a private temporary SQLite database.

A transcript of a million records must import in the memory of one of a thousand (issue 28):
what an importer needs per record (where it is, its uuid and parent, its key) goes into a
database that :func:`temp_db` opens on no file name.  SQLite holds at most :data:`CACHE_KIB`
of its pages in memory and writes the rest to a temporary file that it deletes on close, and
that on POSIX is unlinked as soon as it is opened, so a killed import leaves nothing behind.
Nothing is ever committed: the database lives for one session's import and is thrown away.

:class:`KnownKeys` is the journal side: the source keys a journal already holds, in a dict
while they are few, in such a database past :data:`KNOWN_IN_MEMORY`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import DurabilityError
from .raw import Raw, _dumps

if TYPE_CHECKING:
    import sqlite3

#: Pages SQLite keeps in memory per database (KiB); the rest is in its temporary file.
CACHE_KIB = 8 << 10
#: Keys a :class:`KnownKeys` holds in a dict (about 150 bytes each) before it moves them to disk.
KNOWN_IN_MEMORY = 50_000
_MISSING = object()
_INT64 = (-(1 << 63), (1 << 63) - 1)


def to_db(text: str | None) -> str | bytes | None:
    """A string as these databases hold it: ASCII as text, anything else as UTF-8 bytes, lone
    surrogates (valid JSON) included.  Equal strings are held alike, so SQL compares them right."""
    return text if text is None or text.isascii() else text.encode("utf-8", "surrogatepass")


def from_db(value: str | bytes | None) -> str | None:
    return value if value is None or type(value) is str else value.decode("utf-8", "surrogatepass")


@contextmanager
def guarded(what: str) -> Iterator[None]:
    """SQLite's "database or disk is full" while ``what``, as the DurabilityError it is."""
    try:
        yield
    except Exception as exc:  # (sqlite3 is loaded by the first database: an import that finds nothing new opens none)
        sqlite3 = sys.modules.get("sqlite3")
        if sqlite3 is None or not isinstance(exc, sqlite3.OperationalError) or "full" not in str(exc):
            raise
        raise DurabilityError(f"disk full while {what} in a temporary database (in $SQLITE_TMPDIR, $TMPDIR or "
                              "/var/tmp)") from exc


def temp_db() -> sqlite3.Connection:
    """A private temporary database, in one transaction that is never committed."""
    import sqlite3

    conn = sqlite3.connect("", isolation_level=None)
    for pragma in (f"cache_size=-{CACHE_KIB}", "journal_mode=OFF", "synchronous=OFF", "temp_store=FILE"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("BEGIN")
    return conn


class KnownKeys:
    """``sourceKey -> seq | None`` for every record of a journal (the seq when that record is
    still ``partial``), read like a dict: ``in``, ``[]``, ``get``, ``len``."""

    #: A write: the key, its seq, and whether it replaces a seq already there (``known[key] = seq``)
    #: or not (``known.setdefault(key)``).  Writes wait in a short list, in order, until a read.
    _UPSERT = "INSERT INTO known VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET seq = excluded.seq WHERE ?3"

    def __init__(self, in_memory: int | None = None, cache_kib: int | None = None) -> None:
        """``in_memory`` keys in a dict before they move to a database of ``cache_kib`` pages in
        memory (defaults: :data:`KNOWN_IN_MEMORY`, :data:`CACHE_KIB`)."""
        self._dict: dict[str, int | None] | None = {}
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[str | bytes, int | None, bool]] = []
        self._in_memory, self._cache_kib = in_memory, cache_kib

    def __setitem__(self, key: str, seq: int | None) -> None:
        """A later record with the same key wins."""
        self._write(key, seq, True)

    def setdefault(self, key: str, _default: None = None) -> None:
        """A key the journal holds, unless it is there already (with no seq)."""
        self._write(key, None, False)

    def _write(self, key: str, seq: int | None, replace: bool) -> None:
        held = self._dict
        if held is not None and len(held) < self._limit():  # the common case: a dict, no database to guard
            if replace:
                held[key] = seq
            else:
                held.setdefault(key, None)
            return
        with guarded("holding a journal's keys"):
            self._write_guarded(key, seq, replace)

    def _limit(self) -> int:
        return KNOWN_IN_MEMORY if self._in_memory is None else min(self._in_memory, KNOWN_IN_MEMORY)

    def partials(self) -> dict[str, int]:
        """The seq of each key whose record is still ``partial``, by key (few: a response being written)."""
        if self._dict is not None:
            return {key: seq for key, seq in self._dict.items() if seq is not None}
        self._flush()
        return {from_db(key): seq for key, seq in self._db.execute("SELECT key, seq FROM known WHERE seq IS NOT NULL")}

    def in_memory(self) -> dict[str, int | None] | None:
        """The keys as a dict while they are held in one (None once they moved to the database): ``in``
        it says what ``in`` this says."""
        return self._dict

    def _write_guarded(self, key: str, seq: int | None, replace: bool) -> None:
        if self._dict is None:
            self._pending.append((to_db(key), seq, replace))
            if len(self._pending) >= 4096:
                self._flush()
            return
        if replace:
            self._dict[key] = seq
        else:
            self._dict.setdefault(key, None)
        if len(self._dict) > self._limit():
            self._db = temp_db()
            if self._cache_kib is not None and self._cache_kib < CACHE_KIB:
                self._db.execute(f"PRAGMA cache_size=-{int(self._cache_kib)}")
            self._db.execute("CREATE TABLE known (key BLOB PRIMARY KEY, seq INTEGER) WITHOUT ROWID")
            self._db.executemany("INSERT INTO known VALUES (?, ?)", ((to_db(k), v) for k, v in self._dict.items()))
            self._dict = None

    def _flush(self) -> None:
        if self._pending:
            with guarded("holding a journal's keys"):
                self._db.executemany(self._UPSERT, self._pending)
            self._pending.clear()

    def get(self, key: str, default: object = None) -> object:
        if self._dict is not None:
            return self._dict.get(key, default)
        if not isinstance(key, str):
            return default
        self._flush()
        row = self._db.execute("SELECT seq FROM known WHERE key = ?", (to_db(key),)).fetchone()
        return default if row is None else row[0]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING

    def __getitem__(self, key: str) -> int | None:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __len__(self) -> int:
        if self._dict is not None:
            return len(self._dict)
        self._flush()
        return self._db.execute("SELECT COUNT(*) FROM known").fetchone()[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._dict, self._pending = {}, []


class Offsets:
    """A set of source byte offsets (the lines a journal carries), in a set while they are few,
    in a temporary database past :data:`KNOWN_IN_MEMORY`: ``add``, ``update``, ``in``."""

    def __init__(self) -> None:
        self._set: set[int] | None = set()
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[int]] = []

    def add(self, offset: int) -> None:
        if not _INT64[0] <= offset <= _INT64[1]:
            return  # no file has such an offset (a hand-edited journal's): nothing to match, nor for SQLite to refuse
        held = self._set
        if held is not None and len(held) < KNOWN_IN_MEMORY:  # the common case: a set, no database to guard
            held.add(offset)
            return
        with guarded("holding a journal's source offsets"):
            if self._set is not None:
                self._set.add(offset)
                if len(self._set) > KNOWN_IN_MEMORY:
                    self._db = temp_db()
                    self._db.execute("CREATE TABLE offsets (offset INTEGER PRIMARY KEY)")
                    self._db.executemany("INSERT INTO offsets VALUES (?)", ((o,) for o in self._set))
                    self._set = None
                return
            self._pending.append((offset,))
            if len(self._pending) >= 4096:
                self._flush()

    def update(self, offsets) -> None:
        for offset in offsets:
            self.add(offset)

    def _flush(self) -> None:
        if self._pending:
            with guarded("holding a journal's source offsets"):
                self._db.executemany("INSERT OR IGNORE INTO offsets VALUES (?)", self._pending)
            self._pending.clear()

    def in_memory(self) -> set[int] | None:
        """The offsets as a set while they are held in one (None past :data:`KNOWN_IN_MEMORY`): ``in``
        it says what ``in`` this says of a file's offset."""
        return self._set

    def reaches(self, offset: int) -> bool:
        """Whether any offset held is ``offset`` or past it."""
        if self._set is not None:
            return any(held >= offset for held in self._set)
        self._flush()
        return self._db.execute("SELECT 1 FROM offsets WHERE offset >= ? LIMIT 1", (offset,)).fetchone() is not None

    def __contains__(self, offset: object) -> bool:
        if type(offset) is not int or not _INT64[0] <= offset <= _INT64[1]:  # alike before and after the move
            return False
        if self._set is not None:
            return offset in self._set
        self._flush()
        return self._db.execute("SELECT 1 FROM offsets WHERE offset = ?", (offset,)).fetchone() is not None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._set, self._pending = set(), []


#: What a :class:`Records` holds in a list before it moves them to a database, as it counts a record:
#: the bytes of its source row (``raw``) twice (the row, and the text parsed out of it) and 2 kB
#: (tracemalloc: a Cline API message's record 2.3 kB, of which 0.2 raw; an OpenCode message's 5.9, 1.9 raw).
RECORD_BYTES_IN_MEMORY = 32 << 20


class Records:
    """A session's converted records, in their order, as an importer appends them: in a list while
    they are few and small (:data:`RECORD_BYTES_IN_MEMORY`), then in a temporary database (each record's
    JSON and its raw row's bytes), parsed again on each pass.  Sized and re-iterable, as a
    session's ``records`` may be: one OpenCode session of 24,000 messages held 120 MB of them."""

    def __init__(self, bytes_in_memory: int | None = None) -> None:
        self._held: list[dict] | None = []
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[bytes, bytes | None]] = []
        self._count = self._bytes = 0
        self.last: dict | None = None  # the last record appended
        self._limit = RECORD_BYTES_IN_MEMORY if bytes_in_memory is None else bytes_in_memory

    def append(self, record: dict) -> None:
        self._count += 1
        self.last = record
        if self._held is None:
            self._pending.append(_stored(record))
            if len(self._pending) >= 256:
                self._flush()
            return
        self._held.append(record)
        raw = getattr(record.get("raw"), "data", None)
        self._bytes += 2048 + (2 * len(raw) if raw is not None else 0)
        if self._bytes > self._limit:
            held, self._held = self._held, None
            self._db = temp_db()
            with guarded("holding a session's records"):
                self._db.execute("CREATE TABLE records (body BLOB NOT NULL, raw BLOB)")
            for index, record in enumerate(held):  # (each let go as it is stored: never held twice)
                self._pending.append(_stored(record))
                held[index] = None
                if len(self._pending) >= 256:
                    self._flush()
            self._flush()

    @property
    def spilled(self) -> bool:
        return self._held is None

    def _flush(self) -> None:
        if self._pending:
            with guarded("holding a session's records"):
                self._db.executemany("INSERT INTO records VALUES (?, ?)", self._pending)
            self._pending.clear()

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[dict]:
        if self._held is not None:
            return iter(self._held)
        self._flush()
        return self._read()

    def _read(self) -> Iterator[dict]:
        from ..parse import loads

        for body, raw in self._db.execute("SELECT body, raw FROM records ORDER BY rowid"):
            record = loads(body)
            if raw is not None:
                kept = Raw.__new__(Raw)
                kept.data = raw
                record["raw"] = kept
            yield record

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _stored(record: dict) -> tuple[bytes, bytes | None]:
    """A record as :class:`Records` keeps it: its JSON but ``raw``, and the raw row's bytes."""
    raw = record.get("raw")
    if isinstance(raw, Raw):
        return _dumps({k: v for k, v in record.items() if k != "raw"}), raw.data
    return _dumps(record), None
