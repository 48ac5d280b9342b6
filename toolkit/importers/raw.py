"""A source row's bytes as a journal line keeps them (:class:`Raw`), and the JSON the writer makes of a
record: below both the writer (:mod:`.output`) and what holds records for it (:mod:`.spill`)."""

from __future__ import annotations

import json

import orjson


class Raw:
    """A source row's original JSON, kept as bytes (one line) until it is written under "raw".

    Holding bytes instead of parsed objects keeps a 5,000-bubble composer in a few tens of MB.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes | None = None, value: object = None) -> None:
        if data is None or data.find(b"\n") >= 0 or data.find(b"\r") >= 0:  # pretty-printed: compact it onto one line
            # (find, not ``in``: ``bytes in bytes`` first tries the byte as an int, and raises and clears a TypeError)
            data = exact(_dumps(value if data is None else json.loads(data.decode("utf-8"))))
        self.data = data

    def value(self) -> object:
        return json.loads(self.data.decode("utf-8"))


_made = object.__new__


def raw_line(data: bytes) -> Raw:
    """``Raw(data)`` of one line of a source as a reader split it at its newlines (so it holds none):
    only a carriage return is looked for; the common line is kept as it is, without a second look."""
    if data.find(b"\r") >= 0:
        return Raw(data)
    made = _made(Raw)
    made.data = data
    return made


def exact(data: bytes) -> bytes:
    """``data`` in a bytes object of its own size: what ``orjson.dumps`` gives holds a buffer of
    4 kB or more whatever its length, so a value held for long (a row's ``raw`` until its session is
    written, a line in a batch of appends) is copied (10,000 rows of 200 bytes: 40 MB, not 2)."""
    return bytes(memoryview(data))


def _dumps(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # a lone surrogate: write it as a \u escape
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
