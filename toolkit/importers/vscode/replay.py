"""Replay a VS Code chat ``.jsonl`` mutation log, tolerantly (SOURCES.md §3.3).

VS Code (``objectMutationLog.ts``) splits the file on ``\\n``, skips empty lines, parses every
line and gives up on the first error.  We apply the same four entry kinds the same way, but
skip what VS Code would choke on and say so:

* a UTF-8 BOM at the start of the file or of a line is stripped;
* an unparsable *unterminated* last line (a write cut short) is ignored (``torn_tail``);
* any other bad line, unknown kind or unwalkable path is skipped and listed in ``problems``;
* mutations before any kind-0 line are applied to ``fallback`` (the ``.json`` sibling) or to an
  empty v3 session.

``editor_unreadable`` says whether VS Code itself would refuse the file.  Pure functions: no I/O,
no printing, never raise on bad content.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from ...jsonarray import LazyList, parsed_at, skeleton
from ...lines import loads, split_line
from ..sqlite import SourceUnreadable

__all__ = [
    "MAX_PAD",
    "Replayed",
    "SourceUnreadable",
    "choose",
    "last_timestamp",
    "load_json",
    "replay_jsonl",
    "request_count",
]

BOM = b"\xef\xbb\xbf"

#: The most ``None`` slots one entry may add to a list (JavaScript pads with holes when an
#: index or ``i`` is past the end; a corrupt huge number must not exhaust memory).
MAX_PAD = 100_000


@dataclass
class Replayed:
    """The outcome of :func:`replay_jsonl`."""

    state: dict
    problems: list[tuple[int | None, str]] = field(default_factory=list)
    editor_unreadable: bool = False
    torn_tail: bool = False
    mutations: int = 0
    lines: int = 0  # non-empty lines: the log's source items
    skipped: list[int] = field(default_factory=list)  # numbers of the lines not applied (torn tail included)
    bom: list[int] = field(default_factory=list)  # numbers of the lines that began with a UTF-8 BOM
    joined: list[tuple[int, int]] = field(default_factory=list)  # (line, entries) of whole entries run together on one line


def _empty_session() -> dict:
    return {"version": 3, "requests": []}


class _Skip(Exception):
    """An entry that cannot be applied; the message says why."""


def _as_index(value: object) -> int | None:
    """A JSON number usable as an index or length (JavaScript: ``3`` and ``3.0`` are equal)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _show(path: object) -> str:
    text = repr(path)
    return text if len(text) <= 120 else text[:117] + "..."


def _key_for(container: dict | list, key: object) -> str | int:
    """Coerce a path element as JavaScript property access would, or raise :class:`_Skip`."""
    if isinstance(container, dict):
        if isinstance(key, str):
            return key
        number = _as_index(key)
        if number is not None:  # obj[3] is obj["3"]
            return str(number)
        raise _Skip(f"key {key!r} is not a string or number")
    if isinstance(key, str):  # arr["3"] is arr[3]; any other string is not an element
        if key.isdigit() and key.isascii() and (key == "0" or not key.startswith("0")):
            return int(key)
        raise _Skip(f"key {key!r} used on a list")
    number = _as_index(key)
    if number is None:
        raise _Skip(f"index {key!r} is not an integer")
    if number < 0:
        raise _Skip(f"index {number} is negative")
    return number


def _walk(state: dict, path: list) -> tuple[dict | list, str | int]:
    """Follow ``path[:-1]`` from ``state``; return the parent container and the last key."""
    current: object = state
    for depth, raw in enumerate(path[:-1]):
        if not isinstance(current, (dict, list)):
            raise _Skip(f"{_show(path[:depth])} is a {type(current).__name__}, not an object or list")
        key = _key_for(current, raw)
        if isinstance(current, dict):
            if key not in current:
                raise _Skip(f"key {key!r} is missing at {_show(path[:depth])}")
            current = current[key]
        else:
            assert isinstance(key, int)
            if key >= len(current):
                raise _Skip(f"index {key} is out of range (list of {len(current)}) at {_show(path[:depth])}")
            current = current[key]
    if not isinstance(current, (dict, list)):
        raise _Skip(f"{_show(path[:-1])} is a {_nameof(current)}, not an object or list")
    return current, _key_for(current, path[-1])


def _nameof(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _assign(parent: dict | list, key: str | int, value: object) -> None:
    """``parent[key] = value``; past the end of a list, pad with ``None`` as JavaScript does."""
    if isinstance(parent, dict):
        parent[key] = value
        return
    assert isinstance(key, int)
    if key < len(parent):
        parent[key] = value
        return
    if key - len(parent) > MAX_PAD:
        raise _Skip(f"index {key} is far past the end (list of {len(parent)})")
    parent.extend([None] * (key - len(parent)))
    parent.append(value)


def _path(entry: dict) -> list:
    path = entry.get("k")
    if not isinstance(path, list):
        raise _Skip(f"path k is {_nameof(path)}, not a list")
    return path


def _set(state: dict, entry: dict) -> None:
    path = _path(entry)
    if not path:
        return  # VS Code: root replacement is left to the caller, i.e. nothing happens
    if "v" not in entry:  # JSON.stringify drops ``v: undefined``: the value became undefined
        _delete(state, entry)
        return
    parent, key = _walk(state, path)
    _assign(parent, key, entry["v"])


def _delete(state: dict, entry: dict) -> None:
    path = _path(entry)
    if not path:
        return
    parent, key = _walk(state, path)
    if isinstance(parent, dict):
        parent.pop(key, None)
    elif key < len(parent):  # type: ignore[operator]
        parent[key] = None  # type: ignore[index]
    # Past the end of a list JavaScript would only lengthen it with holes: nothing to keep.


def _push(state: dict, entry: dict) -> None:
    path = _path(entry)
    if not path:
        raise _Skip("push with an empty path")
    parent, key = _walk(state, path)
    if isinstance(parent, dict):
        present, existing = key in parent, parent.get(key)  # type: ignore[call-overload]
    else:
        present = key < len(parent)  # type: ignore[operator]
        existing = parent[key] if present else None  # type: ignore[index]
    if isinstance(existing, list):
        array = existing
    elif existing is None or (not isinstance(existing, (dict, list)) and not existing):
        array = []  # ``current[key] || []``: missing, null, false, 0 and "" all start a new array
    else:
        raise _Skip(f"{_show(path)} is a {_nameof(existing)}, not a list")
    length = None
    if "i" in entry:
        length = _as_index(entry["i"])
        if length is None or length < 0:
            raise _Skip(f"push length i={entry['i']!r} is not a non-negative integer")
        if length - len(array) > MAX_PAD:
            raise _Skip(f"push length i={length} is far past the end (list of {len(array)})")
    values = entry.get("v")
    if values is not None and not isinstance(values, list):
        raise _Skip(f"push values v is a {_nameof(values)}, not a list")
    if length is not None:
        if length <= len(array):
            del array[length:]
        else:
            array.extend([None] * (length - len(array)))
    if values:
        array.extend(values)
    if array is not existing or not present:
        _assign(parent, key, array)


_APPLY = {1: _set, 2: _push, 3: _delete}


def _parse(line: bytes) -> tuple[object, str | None]:
    """Parse one line; return (value, note) or raise ValueError.

    VS Code decodes bytes with U+FFFD for invalid UTF-8 before ``JSON.parse``, so a line that is
    only bad in its encoding is still applied, with a note.
    """
    try:
        return loads(line), None
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    except ValueError as exc:
        try:
            str(line, "utf-8")
        except UnicodeDecodeError:
            pass
        else:
            raise exc
    try:
        value = loads(str(line, "utf-8", "replace").encode("utf-8"))
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    return value, "invalid UTF-8 replaced with U+FFFD (line applied)"


def _initial(line) -> tuple[dict, None] | None:
    """A long line that is a kind 0 entry holding ``v.requests``, that array unread (:func:`toolkit.jsonarray.parsed_at`:
    parsed whole, 49 MB of a chat took 150 MiB at its peak); None for any other line (parse it whole)."""
    head = skeleton(line)  # (its first 64 KiB: a long kind 1 or 2 line is not scanned for an array it has not)
    if head is None or _as_index(head.get("kind")) != 0:
        return None
    found = parsed_at(line, ("v", "requests"))
    if found is None or _as_index(found[0].get("kind")) != 0:
        return None
    entry, requests = found
    entry["v"]["requests"] = LazyList(requests)
    return entry, None


def _is_entry(value: object) -> bool:
    return isinstance(value, dict) and _as_index(value.get("kind")) in (0, 1, 2, 3)


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def replay_jsonl(data: bytes, fallback: dict | None = None, long_line: int | None = None) -> Replayed:
    """Rebuild a session from the bytes of a ``.jsonl`` log (see the module docstring).  A line past
    ``long_line`` bytes that is a kind 0 entry (a compacted log: the whole chat on one line) is parsed
    but for its ``v.requests``, a :class:`~toolkit.jsonarray.LazyList` read as it is used."""
    out = Replayed(state={})
    state: list[dict | None] = [None]  # None until a kind 0 or the first mutation

    def start() -> dict:
        return copy.deepcopy(fallback) if fallback is not None else _empty_session()

    view, at, number = memoryview(data), 0, 0  # each line a view of ``data``, never a copy (a compacted log is one line)
    while at <= len(data):  # (as data.split(b"\n") gives them: the last piece is unterminated, b"" after a final "\n")
        number += 1
        end = data.find(b"\n", at)
        final = end < 0
        end = len(data) if final else end
        line, at = view[at:end], end + 1
        if line[:len(BOM)] == BOM:
            out.editor_unreadable = True
            out.bom.append(number)
            while line[:len(BOM)] == BOM:
                line = line[len(BOM):]
        if not line:
            continue
        out.lines += 1
        applied = out.mutations
        _entry_line(out, state, number, line, final, start, long_line)
        if out.mutations == applied:
            out.skipped.append(number)
    if state[0] is None:  # empty log, or nothing but bad lines / a torn tail
        state[0] = start()
        out.editor_unreadable = True
    out.state = state[0]
    return out


def _entry_line(out: Replayed, state: list, number: int, line: bytes, final: bool, start, long_line: int | None = None) -> None:
    """Apply one non-empty line to ``state[0]``; a line not applied leaves ``out.mutations`` as it was."""
    try:
        entry, note = (_initial(line) if long_line is not None and len(line) > long_line else None) or _parse(line)
    except ValueError as exc:
        line = bytes(line)  # (a view of the log, until here)
        pieces = split_line(line, _is_entry)
        whole = [line[p.start:p.end] for p in pieces if p.kind == "record"]
        if len(whole) > 1 or (whole and not final):
            # entries run together on one line (a writer that lost a newline): VS Code cannot open
            # the log; each whole entry is applied in order, the rest of the line named
            out.editor_unreadable = True
            if len(whole) > 1:
                out.joined.append((number, len(whole)))
            for piece in whole:
                _entry_line(out, state, number, piece, False, start)
            cut = sum(p.end - p.start for p in pieces if p.kind != "record")
            if cut and not (final and pieces[-1].kind != "record"):
                out.problems.append((number, f"{cut:,} bytes beside {len(whole)} whole entr{'y' if len(whole) == 1 else 'ies'} "
                                             "are no entry; those bytes skipped"))
            elif final and pieces[-1].kind != "record":
                out.torn_tail = True
            return
        if final:
            out.torn_tail = True
        else:
            out.problems.append((number, f"not JSON ({_reason(exc)}); line skipped"))
            out.editor_unreadable = True
        return
    if note:
        out.problems.append((number, note))
    if not isinstance(entry, dict):
        out.problems.append((number, f"a JSON {_nameof(entry)}, not an entry object; line skipped"))
        out.editor_unreadable = True
        return
    kind = _as_index(entry.get("kind"))
    if kind not in (0, 1, 2, 3):
        out.problems.append((number, f"unknown entry kind {entry.get('kind')!r}; line skipped"))
        out.editor_unreadable = True
        return
    if kind == 0:
        value = entry.get("v")
        if not isinstance(value, dict):
            out.problems.append((number, f"initial entry holds a {_nameof(value)}, not a session object; line skipped"))
            out.editor_unreadable = True
            return
        state[0] = value  # freshly parsed: nothing is shared with earlier lines
        out.mutations += 1
        return
    if state[0] is None:
        state[0] = start()
        out.editor_unreadable = True  # "Log file is missing an initial entry"
    try:
        _APPLY[kind](state[0], entry)
    except _Skip as exc:
        out.problems.append((number, f"kind {kind} at {_show(entry.get('k'))}: {exc}; line skipped"))
        out.editor_unreadable = True
        return
    out.mutations += 1


def load_json(data: bytes) -> dict:
    """Parse a ``.json`` session file (a UTF-8 BOM is allowed); raise :class:`SourceUnreadable`."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        value = loads(data)
    except UnicodeDecodeError as exc:
        raise SourceUnreadable("the file is not UTF-8") from exc
    except RecursionError as exc:
        raise SourceUnreadable("the file is not JSON (nested too deeply)") from exc
    except ValueError as exc:
        raise SourceUnreadable(f"the file is not JSON ({_reason(exc)})") from exc
    if not isinstance(value, dict):
        raise SourceUnreadable(f"the file holds a JSON {_nameof(value)}, not a session object")
    return value


def _requests(state: dict) -> list:
    requests = state.get("requests") if isinstance(state, dict) else None
    return requests if isinstance(requests, list) else []


def request_count(state: dict) -> int:
    """How many requests (objects in ``requests``; null holes left by deletes are not counted)."""
    return sum(1 for r in _requests(state) if isinstance(r, dict))


def last_timestamp(state: dict) -> int | float | None:
    """The latest numeric ``requests[*].timestamp`` (ms), or None."""
    stamps = [r["timestamp"] for r in _requests(state) if isinstance(r, dict)
              and isinstance(r.get("timestamp"), (int, float)) and not isinstance(r.get("timestamp"), bool)
              and not (isinstance(r["timestamp"], float) and math.isnan(r["timestamp"]))]
    return max(stamps) if stamps else None


def _describe(state: dict) -> str:
    count, stamp = request_count(state), last_timestamp(state)
    text = f"{count} request{'s' if count != 1 else ''}"
    return text + (f", last at {stamp}" if stamp is not None else ", no timestamp")


def choose(json_state: dict | None, jsonl: Replayed | None) -> tuple[str, dict, str | None]:
    """Pick between a session's ``.json`` and replayed ``.jsonl`` (SOURCES.md §3.3).

    More requests wins, then the later last timestamp, then the ``.jsonl``.  The note is None
    when both agree on request count and last timestamp (or only one exists).
    """
    if jsonl is None:
        if json_state is None:
            raise ValueError("choose() needs a .json state or a replayed .jsonl")
        return "json", json_state, None
    if json_state is None:
        return "jsonl", jsonl.state, None
    a_count, b_count = request_count(json_state), request_count(jsonl.state)
    a_last, b_last = last_timestamp(json_state), last_timestamp(jsonl.state)
    if a_count == b_count and a_last == b_last:
        return "jsonl", jsonl.state, None
    if a_count != b_count:
        winner = "json" if a_count > b_count else "jsonl"
        why = "it has more requests"
    elif (a_last if a_last is not None else -math.inf) > (b_last if b_last is not None else -math.inf):
        winner, why = "json", "its last request is later"
    else:
        winner, why = "jsonl", "its last request is later"
    note = (f"the .json ({_describe(json_state)}) and .jsonl ({_describe(jsonl.state)}) copies diverge; "
            f"kept the .{winner} because {why}")
    return winner, json_state if winner == "json" else jsonl.state, note
