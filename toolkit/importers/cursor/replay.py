"""A composer's bubble rows, and the records of a large one kept as rows (issue 27).

A composer's ``bubbleId:<cid>:*`` rows are read in one pass over its key range (the unique index)
instead of a query per bubble, which cost as much again as reading them.  A converted record holds
its row's bytes (under ``raw``) and the text taken out of them (its content): the bubble twice.  For
most composers that is a few MB; past :data:`ROWS_IN_MEMORY` bytes of rows (a chat of some seven
thousand bubbles) the rows move to a private temporary database (:func:`..spill.temp_db`) and the session's
records become a :class:`Replay`: per record only what converting its row again takes, converted
when the writer reads it.  So memory stays flat whatever a chat's size, and the journal is the same,
byte for byte: the same conversion of the same bytes, with the times :func:`.convert.settle_times`
settled on the first pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from .. import sqlite as db
from ..output import Raw, first_prompt
from ..spill import guarded, temp_db
from .convert import convert_bubble, orphan_event

KV = "cursorDiskKV"
#: Bytes of one composer's rows held in memory; past it they go to a temporary database.  A chat
#: held costs about its rows' size again in memory (a 31.5 MB one: 87 MiB peak RSS, 58 MiB spilled);
#: a spilled one is read and converted twice, its rows written once more: the 5,000-bubble chats of
#: DESIGN §8's 1 GB mix (22 MB each) are held, the rare larger one spilled.
ROWS_IN_MEMORY = 32 << 20
MISSING = object()


class BubbleRows:
    """One composer's rows: each key's value (bytes, None for NULL) by :meth:`get`, and the keys in
    the order the database wrote them (rowid: a replaced row is re-inserted, so it counts as written
    last), in :attr:`order`."""

    __slots__ = ("values", "order", "size", "ids", "spill")

    def __init__(self, conn: sqlite3.Connection, prefix: str) -> None:
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        self.values: dict[str, bytes | None] = {}
        self.size = 0
        self.ids: dict[str, int] | None = None  # spilled: key -> its row in the temporary database
        self.spill: sqlite3.Connection | None = None
        written: list[tuple[int, str]] = []
        cursor = conn.execute(f"select rowid, key, value from {KV} where key >= ? and key < ?", (prefix, upper))
        values, add = self.values, written.append
        while batch := cursor.fetchmany(db.FETCH):
            for rowid, key, value in batch:
                key = key.decode("utf-8", "surrogateescape") if type(key) is bytes else key
                add((rowid, key))
                if self.ids is None:
                    if key in values:
                        continue  # (a table without a unique key: the first row, as a lookup finds it)
                    values[key] = value = value if type(value) is bytes else _as_bytes(value)
                    if value is not None:
                        self.size += len(value)
                        if self.size > ROWS_IN_MEMORY:
                            self._move_to_disk()
                            values = self.values
                elif key not in self.ids:
                    self._put(key, _as_bytes(value))
        written.sort()
        self.order = [key for _rowid, key in written]

    @property
    def spilled(self) -> bool:
        return self.ids is not None

    def _move_to_disk(self) -> None:
        self.spill = temp_db()
        with guarded("keeping a large chat's rows"):
            self.spill.execute("create table row (id integer primary key, value blob)")
        self.ids = {}
        for key, value in self.values.items():
            self._put(key, value)
        self.values = {}

    def _put(self, key: str, value: bytes | None) -> None:
        assert self.ids is not None and self.spill is not None
        self.ids[key] = row = len(self.ids)
        with guarded("keeping a large chat's rows"):
            self.spill.execute("insert into row values (?, ?)", (row, value))

    def get(self, key: str) -> bytes | None | object:
        """The value under ``key``: bytes, None for NULL, :data:`MISSING` for no row."""
        if self.ids is None:
            return self.values.get(key, MISSING)
        row = self.ids.get(key)
        if row is None:
            return MISSING
        assert self.spill is not None
        return self.spill.execute("select value from row where id = ?", (row,)).fetchone()[0]


def _as_bytes(value: object) -> bytes | None:
    """A row's value as bytes (None for NULL): text as UTF-8, a number as SQLite gives it."""
    return value if value is None or type(value) is bytes else (
        value.encode("utf-8") if isinstance(value, str) else bytes(value))


class _Said:
    """The clock of a replay: the time the first pass's clock gave this bubble."""

    __slots__ = ("when",)

    def __init__(self, when: tuple[str | None, bool]) -> None:
        self.when = when

    def time_of(self, _bubble: dict, _user: bool) -> tuple[str | None, bool]:
        return self.when


class Replay:
    """A large composer's records, converted from its rows each time they are read (a journal is
    written in one pass; an existing one's additions are found in one or two).

    The first pass (:meth:`keep`) gives for each record a stub with its ``kind``, ``t`` and
    ``tInferred``, which :func:`.convert.settle_times` settles in place; reading applies the
    settled times to the records converted again."""

    def __init__(self, rows: BubbleRows) -> None:
        self.rows = rows
        self.items: list[tuple] = []  # per record: key, inline bubble, model, partial, default type, (t, inferred), orphan
        self.stubs: list[dict] = []
        self.tail: list[dict] = []  # records added after the bubbles (an archive event)
        self.title: str | None = None  # the first prompt (what the writer names an unnamed chat by)

    def keep(self, record: dict, key: str, inline: dict | None, model: str | None, partial: bool, default_type: object,
             orphan: bool = False) -> dict:
        """Keep how ``record`` was made (for an orphan: the record its event was made of); return
        the stub to settle times on."""
        when = (record.get("t"), "tInferred" in record)
        self.items.append((key, inline, model, partial, default_type, when, orphan))
        if self.title is None and record.get("kind") == "user" and not orphan:
            self.title = first_prompt([record])
        stub = {"kind": "event" if orphan else record["kind"], "t": record.get("t")}
        if when[1]:
            stub["tInferred"] = True
        self.stubs.append(stub)
        return stub

    def __len__(self) -> int:
        return len(self.stubs) + len(self.tail)

    def __reversed__(self) -> Iterator[dict]:
        yield from reversed(self.tail)
        yield from reversed(self.stubs)

    def append(self, record: dict) -> None:
        self.tail.append(record)

    def __iter__(self) -> Iterator[dict]:
        for (key, inline, model, partial, default_type, when, orphan), stub in zip(self.items, self.stubs):
            if inline is not None:
                bubble, raw = inline, None
            else:
                data = self.rows.get(key)
                bubble = db.decode(data)  # parsed on the first pass: it parses again
                raw = Raw(data, bubble)
            record = convert_bubble(bubble, key, _Said(when), model, partial, default_type, raw)
            if record is None:  # it made one on the first pass, from the same bytes
                raise AssertionError(f"{key}: converted differently on a second pass")
            if orphan:
                record = orphan_event(record)
            record["t"] = stub["t"]  # as settle_times settled it: in place, and tInferred added last
            if "tInferred" in stub and "tInferred" not in record:
                record["tInferred"] = True
            yield record
        yield from self.tail
