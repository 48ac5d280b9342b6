"""Read a long JSON array element by element: its bytes held, where each element is, each element
parsed when it is used (again on each pass).  A task or session file a tool rewrites whole holds
its messages in one array; parsed whole, 16 MB of small messages took 89 MiB of Python objects
(a Cline task), 49 MB of a VS Code chat 86 MiB.  Anything that is not one whole array, every element
of which parses, is refused here (None) and read whole, as before.  Nothing here writes."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence

from .parse import loads

_WS = re.compile(rb"[ \t\n\r]*")
#: Up to the next ``[ ] { } ,`` outside a string (JSON strings hold no raw ``"`` and escape ``\``),
#: which group says (``lastindex``: 1 an opening bracket, 2 a closing one, 3 a comma, 4 a string that
#: never ends or the end of the bytes).  It matches wherever it starts, so a scan never searches: a
#: search past a string cut off would try every byte after it (a 2 MB string: minutes).
_STRUCTURE = re.compile(rb'[^"\[\]{},]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{},]*)*(?:([\[{])|([\]}])|(,)|("|\Z))', re.S)
_OPEN, _CLOSE, _COMMA = 1, 2, 3
_KEY = re.compile(rb'[ \t\n\r]*("[^"\\]*(?:\\.[^"\\]*)*")[ \t\n\r]*:[ \t\n\r]*')
OBJECT, NULL, OTHER = 0, 1, 2  # an element's kind, as :attr:`Elements.kinds` holds it


def kind_of(value: object) -> int:
    """:data:`OBJECT`, :data:`NULL` or :data:`OTHER`: what ``value`` is, as a kind."""
    return OBJECT if isinstance(value, dict) else NULL if value is None else OTHER


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
                if starts or _WS.match(data, start, pos - 1).end() != pos - 1:  # (not the empty array)
                    starts.append(start)
                    ends.append(pos - 1)
                return starts, ends, pos
        elif kind != _COMMA:
            return None  # a string never closed, or the end: not whole
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
            kinds[n] = kind_of(loads(data[first:last]))
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


def parsed_at(data: bytes, path: tuple[str, ...]) -> tuple[dict, Elements] | None:
    """``(the document parsed but for the array at path, which it holds empty; that array's Elements)``
    (:func:`array_at`), when the rest parses too and says what a parse of the whole says there (a
    later member of the same key, which a parse would keep, makes it not an empty list); else None."""
    found = array_at(data, path)
    if found is None:
        return None
    try:
        head = loads(found[0])
    except ValueError:
        return None
    inner: object = head
    for key in path:
        inner = inner.get(key) if isinstance(inner, dict) else None
    return (head, found[1]) if isinstance(head, dict) and type(inner) is list and not inner else None


def array_member(data: bytes, key: str) -> tuple[bytes, Elements] | None:
    """``(the document with that member's value [] instead, the value's Elements)`` when ``data`` is
    one JSON object holding ``key`` once, its value an array whose every element parses; else None."""
    return array_at(data, (key,))


def array_at(data: bytes, path: tuple[str, ...]) -> tuple[bytes, Elements] | None:
    """:func:`array_member` of the array at ``path``: ``("v", "requests")`` is ``data["v"]["requests"]``,
    each key but the last naming an object, each key on the path held once by its object."""
    at = _WS.match(data).end()
    if data[at:at + 1] != b"{":
        return None
    end, last = len(data), len(path) - 1
    depth, pos, member, found = 1, at + 1, at + 1, None
    matched, entered = 0, [False] * len(path)  # path keys matched by the containers open; each key's object seen
    while True:  # (the scan begins again past the array, which _array read)
        for step in _STRUCTURE.finditer(data, pos, end):
            if step.start() != pos:
                return None  # something skipped over (a string never closed): not whole
            pos, kind = step.end(), step.lastindex
            if kind == _OPEN:
                depth += 1
                if depth == matched + 2:  # a member's value, in the last object the path reached
                    named = _KEY.fullmatch(data, member, pos - 1)
                    if named is not None and _name(named.group(1)) == path[matched]:
                        if entered[matched]:
                            return None  # the key twice: a parse keeps the last, read it whole
                        entered[matched] = True
                        bracket = data[pos - 1]
                        if matched == last and bracket == 0x5B:  # "["
                            inner = _array(data, pos - 1, end)
                            if inner is None:
                                return None
                            found, pos, depth = (pos - 1, *inner), inner[2], depth - 1
                            break
                        if matched == last or bracket != 0x7B:  # "{"
                            return None
                        matched, member = matched + 1, pos
            elif kind == _CLOSE:
                depth -= 1
                if depth == 0:
                    return _member(data, pos, found)
                matched = min(matched, depth - 1)
            elif kind != _COMMA:
                return None  # a string never closed, or the end: not whole
            elif depth == matched + 1:  # a comma between two members of the object the path reached
                member = pos
        else:
            return None


def _member(data: bytes, pos: int, found: tuple | None) -> tuple[bytes, Elements] | None:
    """:func:`array_at`'s answer, its object closed at ``pos``."""
    if found is None or data[pos - 1] != 0x7D or _WS.match(data, pos).end() != len(data):  # "}"
        return None
    value, starts, ends, after = found
    parsed = _parsed(data, starts, ends)
    return (b"".join((data[:value], b"[]", data[after:])), parsed) if parsed is not None else None  # (bytes, or a view of them)


def _name(key: bytes) -> object:
    try:
        return loads(key)
    except ValueError:
        return None


def skeleton(data: bytes, start: int = 0, end: int | None = None, budget: int = 1 << 16) -> dict | None:
    """The top-level members of the JSON object ``data[start:end]`` found in its first ``budget``
    bytes, each value that does not end there an empty one of its kind (``{}``, ``[]``): what a
    format's sniffing reads of a line too long to parse to know what wrote it (a compacted VS Code
    log is one line holding the whole chat).  None when those bytes are no object's start."""
    end = len(data) if end is None else end
    stop = min(end, start + budget)
    at = _WS.match(data, start, stop).end()
    if data[at:at + 1] != b"{":
        return None
    out: dict = {}
    pos, member, depth, value = at + 1, at + 1, 1, None  # value: (key, offset of its opening bracket)
    for step in _STRUCTURE.finditer(data, pos, stop):
        if step.start() != pos:  # (a string that does not end in the budget: the head ends here)
            break
        pos, kind = step.end(), step.lastindex
        if kind == _OPEN:
            depth += 1
            if depth == 2:
                named = _KEY.fullmatch(data, member, pos - 1)
                if named is None:
                    return None
                value = (_name(named.group(1)), pos - 1)
        elif kind == _CLOSE:
            depth -= 1
            if depth == 0:
                return _scalar_member(out, data, member, pos - 1)
            if depth == 1 and value is not None:
                try:
                    out[value[0]] = loads(data[value[1]:pos])
                except ValueError:
                    return None
                value = None
        elif kind != _COMMA:
            break  # a string that does not end in the budget, or the budget's end: the head ends here
        elif depth == 1:  # a member ends: a scalar one, unless its value was a container (kept above)
            if value is None and _scalar_member(out, data, member, pos - 1) is None:
                return None
            member, value = pos, None
    if value is not None and depth >= 2:  # a container that does not end in the budget
        out[value[0]] = {} if data[value[1]] == 0x7B else []
    return out


def _scalar_member(out: dict, data: bytes, first: int, last: int) -> dict | None:
    """``out`` with the member ``data[first:last]`` (``"key": scalar``) added; None if it is none."""
    text = bytes(data[first:last])
    if not text.strip(b" \t\n\r"):
        return out
    named = _KEY.match(text)
    try:
        out[loads(named.group(1))] = loads(text[named.end():])
    except (AttributeError, ValueError):
        return None
    return out


class _Unread:
    """An element of a :class:`LazyList` not read yet: its place in the list's :class:`Elements`."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class LazyList(list):
    """A list (for code that asks ``isinstance(x, list)``: a replay's mutations) of an array's
    :class:`Elements`: an element is parsed when it is indexed, and kept then (a mutation changes
    what it gets); one iterated over and not indexed is parsed for that pass only.  Appended values,
    slices deleted and items set are the list's own."""

    def __init__(self, elements: Elements) -> None:
        super().__init__(map(_Unread, range(len(elements))))
        self.elements = elements

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = list.__getitem__(self, index)
        if type(value) is _Unread:
            value = self.elements[value.index]
            list.__setitem__(self, index, value)
        return value

    def __iter__(self) -> Iterator[object]:
        elements = self.elements
        for value in list.__iter__(self):
            yield elements[value.index] if type(value) is _Unread else value

    def __reversed__(self) -> Iterator[object]:
        elements = self.elements
        for value in list.__reversed__(self):
            yield elements[value.index] if type(value) is _Unread else value

    @property
    def kinds(self) -> bytes:
        """Each element's kind (:data:`OBJECT`, :data:`NULL`, :data:`OTHER`), those not read without a parse."""
        kinds = self.elements.kinds
        return bytes(kinds[v.index] if type(v) is _Unread else kind_of(v) for v in list.__iter__(self))

    def objects(self) -> int:
        return self.kinds.count(OBJECT)

    def __reduce_ex__(self, protocol):  # (a copy, a pickle: the elements read, as a plain list)
        return list, (list(self),)
