"""Edit one top-level member of a JSON object line in place, leaving every other byte alone.

Migration steps change a record by splicing bytes, never by re-serialising it: a string
written as ``"caf\\u00e9"`` or ``"a\\/b"`` keeps those exact bytes.  The line has already
been proven to be a valid JSON object by the journal scan, so this scanner only needs to
find where members start and end.
"""

from __future__ import annotations

import orjson

from ..lines import loads  # orjson, or the stdlib for a lone-surrogate escape (valid JSON)

_WS = b" \t\r\n"
_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN, _CLOSE = frozenset(b"{["), frozenset(b"}]")


def _skip_ws(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in _WS:
        i += 1
    return i


def _string_end(data: bytes, i: int) -> int:
    """``data[i]`` is an opening quote; return the index just past the closing one."""
    i += 1
    while True:
        j = data.index(b'"', i)
        backslashes = 0
        k = j - 1
        while data[k] == _BACKSLASH:
            backslashes += 1
            k -= 1
        if backslashes % 2 == 0:
            return j + 1
        i = j + 1


def _value_end(data: bytes, i: int) -> int:
    """Return the index just past the JSON value starting at ``data[i]``."""
    first = data[i]
    if first == _QUOTE:
        return _string_end(data, i)
    if first in _OPEN:
        depth = 0
        while True:
            c = data[i]
            if c == _QUOTE:
                i = _string_end(data, i)
                continue
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while i < len(data) and data[i] not in b",}]" and data[i] not in _WS:
        i += 1
    return i


def members(data: bytes) -> list[tuple[str, int, int, int]]:
    """Return ``(key, member_start, value_start, value_end)`` for each top-level member.

    ``data`` must be one valid JSON object (surrounding whitespace allowed).
    """
    out = []
    i = _skip_ws(data, 0)
    if data[i : i + 1] != b"{":
        raise ValueError("not a JSON object")
    i = _skip_ws(data, i + 1)
    while data[i] != ord("}"):
        start = i
        key_end = _string_end(data, i)
        key = loads(data[i:key_end])
        i = _skip_ws(data, key_end)
        i = _skip_ws(data, i + 1)  # past ':'
        value_start = i
        i = _value_end(data, i)
        out.append((key, start, value_start, i))
        i = _skip_ws(data, i)
        if data[i] == ord(","):
            i = _skip_ws(data, i + 1)
    return out


def set_member(line: bytes, key: str, value: bytes, after: str | None = None) -> bytes:
    """Return ``line`` with top-level ``key`` set to the raw JSON ``value``.

    An existing member keeps its place and only its value bytes change (every copy, should
    the key repeat).  A missing one is inserted right after member ``after`` when given and
    present, else at the end of the object.
    """
    found = members(line)
    hits = [m for m in found if m[0] == key]
    if hits:
        out, last = [], 0
        for _key, _start, value_start, value_end in hits:
            out += [line[last:value_start], value]
            last = value_end
        return b"".join(out) + line[last:]
    member = orjson.dumps(key) + b":" + value
    anchor = next((m for m in found if m[0] == after), None) if after else None
    if anchor is not None:
        return line[: anchor[3]] + b"," + member + line[anchor[3] :]
    return append_member(line, member, bool(found))


def append_member(line: bytes, member: bytes, nonempty: bool = True) -> bytes:
    """Insert the raw ``"key":value`` bytes just before the object's closing brace."""
    body = line.rstrip(_WS)
    return body[:-1] + (b"," if nonempty else b"") + member + b"}" + line[len(body) :]
