"""Read a long JSON array element by element: its bytes held, where each element is, each element
parsed when it is used (again on each pass).  A task or session file a tool rewrites whole holds
its messages in one array; parsed whole, 16 MB of small messages took 89 MiB of Python objects
(a Cline task), 49 MB of a VS Code chat 86 MiB.  Anything that is not one whole array, every element
of which parses, is refused here (None) and read whole, as before.  Nothing here writes."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence

from ..parse import loads

_WS = re.compile(rb"[ \t\n\r]*")
#: Up to the next ``[ ] { } ,`` outside a string (JSON strings hold no raw ``"`` and escape ``\``),
#: which group says (``lastindex``: 1 an opening bracket, 2 a closing one, 3 a comma).
_STRUCTURE = re.compile(rb'[^"\[\]{},]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{},]*)*(?:([\[{])|([\]}])|(,))', re.S)
_OPEN, _CLOSE = 1, 2
_KEY = re.compile(rb'[ \t\n\r]*("[^"\\]*(?:\\.[^"\\]*)*")[ \t\n\r]*:[ \t\n\r]*')
OBJECT, NULL, OTHER = 0, 1, 2  # an element's kind, as :attr:`Elements.kinds` holds it


class Elements(Sequence):
    """The elements of a JSON array as its bytes and where each one is: one parsed when it is read,
    again on each pass.  Made only of an array whose every element parses (:func:`elements`), whose
    ``kinds`` say which are objects (:data:`OBJECT`), nulls and anything else, without a parse."""

    def __init__(self, data: bytes, starts: array, ends: array, kinds: bytes) -> None:
        self.data, self.starts, self.ends, self.kinds = data, starts, ends, kinds

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return loads(self.data[self.starts[index]:self.ends[index]])

    def __iter__(self) -> Iterator[object]:
        data = self.data
        for start, end in zip(self.starts, self.ends):
            yield loads(data[start:end])

    def objects(self) -> int:
        """How many elements are objects."""
        return self.kinds.count(OBJECT)


def _array(data: bytes, at: int, end: int) -> tuple[array, array, int] | None:
    """``(starts, ends, the offset past its "]")`` of the elements of the array whose ``[`` is at
    ``data[at]``; None when it does not end (a string never closed, a bracket never closed)."""
    starts, ends, depth, start, pos = array("q"), array("q"), 1, at + 1, at + 1
    for found in _STRUCTURE.finditer(data, pos, end):  # (one C iterator: a third faster than a match() a step)
        if found.start() != pos:
            return None  # something skipped over (a string never closed): not whole
        pos, kind = found.end(), found.lastindex
        if kind == _OPEN:
            depth += 1
        elif kind == _CLOSE:
            depth -= 1
            if depth == 0:
                if data[pos - 1] != 0x5D:  # "]"
                    return None
                if starts or data[start:pos - 1].strip(b" \t\n\r"):  # (not the empty array)
                    starts.append(start)
                    ends.append(pos - 1)
                return starts, ends, pos
        elif depth == 1:  # a comma between two elements
            starts.append(start)
            ends.append(pos - 1)
            start = pos
    return None


def _parsed(data: bytes, starts: array, ends: array) -> Elements | None:
    """The elements, when every one parses (each parsed once here, its kind kept); else None."""
    kinds = bytearray(len(starts))
    try:
        for n, (first, last) in enumerate(zip(starts, ends)):
            value = loads(data[first:last])
            kinds[n] = OBJECT if type(value) is dict else NULL if value is None else OTHER
    except ValueError:
        return None
    return Elements(data, starts, ends, bytes(kinds))


def elements(data: bytes) -> Elements | None:
    """``data`` (a whole document) as :class:`Elements` when it is one JSON array whose every element
    parses; None for anything else (read it whole, as any document)."""
    at = _WS.match(data).end()
    found = _array(data, at, len(data)) if data[at:at + 1] == b"[" else None
    if found is None or _WS.match(data, found[2]).end() != len(data):
        return None
    return _parsed(data, found[0], found[1])


def is_array(value: object) -> bool:
    return isinstance(value, (list, Elements))


def array_member(data: bytes, key: str) -> tuple[bytes, Elements] | None:
    """``(the document with that member's value [] instead, the value's Elements)`` when ``data`` is
    one JSON object holding ``key`` once, its value an array whose every element parses; else None."""
    at = _WS.match(data).end()
    if data[at:at + 1] != b"{":
        return None
    depth, pos, member, found, end = 1, at + 1, at + 1, None, len(data)
    while True:  # (the scan begins again past the member's array, which _array read)
        for step in _STRUCTURE.finditer(data, pos, end):
            if step.start() != pos:
                return None  # something skipped over (a string never closed): not whole
            pos, kind = step.end(), step.lastindex
            if kind == _OPEN:
                depth += 1
                named = _KEY.fullmatch(data, member, pos - 1) if depth == 2 and data[pos - 1] == 0x5B else None  # "["
                if named is not None and _name(named.group(1)) == key:
                    inner = _array(data, pos - 1, end) if found is None else None  # (the key twice: a parse keeps the last)
                    if inner is None:
                        return None
                    found, pos, depth = (pos - 1, *inner), inner[2], 1
                    break
            elif kind == _CLOSE:
                depth -= 1
                if depth == 0:
                    return _member(data, pos, found)
            elif depth == 1:  # a comma between two members
                member = pos
        else:
            return None


def _member(data: bytes, pos: int, found: tuple | None) -> tuple[bytes, Elements] | None:
    """:func:`array_member`'s answer, its object closed at ``pos``."""
    if found is None or data[pos - 1] != 0x7D or _WS.match(data, pos).end() != len(data):  # "}"
        return None
    value, starts, ends, after = found
    parsed = _parsed(data, starts, ends)
    return (data[:value] + b"[]" + data[after:], parsed) if parsed is not None else None


def _name(key: bytes) -> object:
    try:
        return loads(key)
    except ValueError:
        return None
