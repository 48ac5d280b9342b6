"""The top-level scalar fields of a record too large to parse, read from its two ends.

A line over the parse cap (``record-too-large``) is never parsed whole, but its first and last few
KiB usually name it: Claude Code writes ``parentUuid``, ``isSidechain``, ``sessionId`` and ``type``
before the message and ``uuid`` and ``timestamp`` after it.  A key counts only where it is a key of
the record itself (depth 1, outside every string), proven by scanning the window from the line's
own end: forward from its first byte for the head, backward from its last for the tail.  A field
whose value is not a whole scalar inside the window is not reported.
"""

from __future__ import annotations

import re
from pathlib import Path

from .lines import loads, open_regular

WINDOW = 64 * 1024

_FIELD = re.compile(rb'"([A-Za-z_][A-Za-z0-9_]{0,63})"[ \t]*:[ \t]*("(?:[^"\\\n]|\\.){0,4096}"|null|true|false|-?[0-9][0-9.eE+-]{0,31})(?=[ \t]*[,}])')


def _escaped(data: bytes, quote: int) -> bool:
    """True when the ``"`` at ``quote`` follows an odd run of backslashes."""
    run = 0
    while quote - run - 1 >= 0 and data[quote - run - 1] == 0x5C:
        run += 1
    return run % 2 == 1


def _depths_forward(data: bytes) -> dict[int, int]:
    """Depth outside strings at every ``"`` that opens a string, scanning from the line's start."""
    depth, inside, at = 0, False, {}
    for i, byte in enumerate(data):
        if byte == 0x22 and not (inside and _escaped(data, i)):
            if not inside:
                at[i] = depth
            inside = not inside
        elif not inside:
            if byte in (0x7B, 0x5B):
                depth += 1
            elif byte in (0x7D, 0x5D):
                depth -= 1
    return at


def _depths_backward(data: bytes) -> dict[int, int]:
    """The same, scanning from the line's end (the window's last byte closes the record)."""
    depth, inside, at = 0, False, {}
    for i in range(len(data) - 1, -1, -1):
        byte = data[i]
        if byte == 0x22 and not _escaped(data, i):
            inside = not inside
            if not inside:  # this quote opens the string scanned backward over
                at[i] = depth
        elif not inside:
            if byte in (0x7D, 0x5D):
                depth += 1
            elif byte in (0x7B, 0x5B):
                depth -= 1
    return at


def _fields(data: bytes, depths: dict[int, int]) -> dict[str, object]:
    found: dict[str, object] = {}
    for match in _FIELD.finditer(data):
        if depths.get(match.start()) != 1:
            continue
        try:
            found.setdefault(match.group(1).decode(), loads(match.group(2)))
        except ValueError:
            continue
    return found


def top_level(head: bytes, tail: bytes) -> dict[str, object]:
    """The scalar fields of the record whose line starts with ``head`` and ends with ``tail``."""
    head = head.lstrip(b" \t")
    tail = tail.rstrip(b" \t\r")
    found: dict[str, object] = {}
    if head.startswith(b"{"):
        found.update(_fields(head, _depths_forward(head)))
    if tail.endswith(b"}"):
        for key, value in _fields(tail, _depths_backward(tail)).items():
            found.setdefault(key, value)
    return found


def read_ends(path: Path | str, offset: int, length: int, window: int = WINDOW) -> dict[str, object]:
    """The top-level scalar fields of the line of ``length`` bytes at ``offset`` in ``path``
    (empty when it cannot be read)."""
    try:
        with open_regular(Path(path)) as handle:
            handle.seek(offset)
            head = handle.read(min(window, length))
            handle.seek(offset + max(0, length - window))
            tail = handle.read(min(window, length))
    except OSError:
        return {}
    return top_level(head, tail)
