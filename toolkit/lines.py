"""Split a journal into lines in bounded memory, and split a damaged line into pieces.

Both work on raw bytes and report byte offsets; nothing here re-serialises JSON.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from .encode import dumps  # noqa: F401  (caches are serialised by the encoder that never fails)
from .parse import _LIMIT, BeyondLimits, loads  # noqa: F401  (every reader's parser: a module of its own, which an unchanged import loads alone)

CHUNK = 4 << 20


def open_regular(path: Path, *, buffered: bool = True) -> BinaryIO:
    """Open ``path`` for reading, refusing anything but a regular file.

    The open is non-blocking, so a FIFO named like a journal, cache or lock is refused at once
    instead of waiting forever for a writer: a folder raises IsADirectoryError, anything else
    that is not a regular file an OSError whose ``strerror`` says so.  ``buffered=False``: the
    file itself (each ``read`` one system call, which may give fewer bytes than asked only at the
    end of the file), for a reader that reads in large blocks anyway: no buffer is made (three
    system calls of its own, a file of each of hundreds of transcripts)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb") if buffered else os.fdopen(fd, "rb", buffering=0)


#: What :func:`first_line` reads first, and at most: a first record (a Codex session_meta, a
#: Claude Code summary) is a few kB, rarely more; one longer than the cap is given cut there.
FIRST_READ, FIRST_CAP = 1 << 14, 1 << 20
_BOM = b"\xef\xbb\xbf"


def first_line(path: Path, *, bom: bool = True, info: list | None = None) -> bytes:
    """The first line of ``path`` that is not blank (after a UTF-8 BOM, with ``bom``), without
    its newline: :data:`FIRST_READ` bytes read, then on until that line's newline or the end, at
    most :data:`FIRST_CAP` (a longer line comes cut there).  Blank lines before it (NUL and white
    space) count for nothing: a newline among them never ends the read.  :func:`open_regular`'s
    errors are raised.  ``info``: the stat of the file read is appended to it (taken before the read)."""
    def found(head: bytes) -> tuple[bytes, bool]:
        body = (head[3:] if bom and head.startswith(_BOM) else head).lstrip(b"\0 \t\r\n")
        end = body.find(b"\n")
        return (body, False) if end < 0 else (body[:end], True)

    with open_regular(path, buffered=False) as handle:  # never blocks on a FIFO named like a transcript
        if info is not None:
            info.append(os.fstat(handle.fileno()))
        head = handle.read(FIRST_READ)
        line, ended = found(head)
        while not ended and len(head) < FIRST_CAP:
            more = handle.read(min(len(head), FIRST_CAP - len(head)))
            if not more:
                break
            head += more
            line, ended = found(head)
    return line


def read_regular(path: Path) -> bytes:
    """Read a small file (a cache, a lock) whole; see :func:`open_regular`."""
    with open_regular(path) as handle:
        return handle.read()


#: A line longer than this is not held in memory: it is measured and reported instead.
LINE_CAP = 64 << 20


def cap_text() -> str:
    """LINE_CAP as a person reads it ("64 MiB")."""
    return f"{LINE_CAP >> 20} MiB" if LINE_CAP >= 1 << 20 else f"{LINE_CAP:,} bytes"


class Overlong(NamedTuple):
    """A line longer than LINE_CAP: only its length and whether it was all NUL are known.  (Each
    of these small records is a named tuple: a dataclass costs every command's start a millisecond.)"""

    length: int
    all_nul: bool
    terminated: bool


class Batch(NamedTuple):
    """Terminated lines (without their ``\\n``) starting at byte ``offset``."""

    offset: int
    lines: list[bytes]


class Tail(NamedTuple):
    """The bytes after the last newline (``data`` is None when they were overlong)."""

    offset: int
    data: bytes | None
    overlong: Overlong | None = None


#: The bytes of a block :func:`split_lines` counts newlines in to choose how to split it, and the
#: line length (on average, in them) from which it finds each newline instead.
SPLIT_PROBE = 64 << 10
LONG_LINES = 512


def split_lines(block: bytes) -> list[bytes]:
    """``block.split(b"\\n")``, made as fast for long lines as for short ones: ``split`` looks at
    every byte in turn (about 5 instructions a byte), ``find`` jumps from newline to newline (memchr)
    at the price of a call a line.  Real Codex CLI rollouts (1.9 kB a line) split 2.3 times as fast
    by ``find``; lines of 170 bytes split 1.8 times as fast by ``split``: the first 64 KiB say which."""
    probe = min(len(block), SPLIT_PROBE)
    if block.count(b"\n", 0, probe) * LONG_LINES > probe:
        return block.split(b"\n")
    lines: list[bytes] = []
    append, find, start = lines.append, block.find, 0
    while (end := find(b"\n", start)) >= 0:
        append(block[start:end])
        start = end + 1
    append(block[start:])
    return lines


def iter_batches(handle: BinaryIO, chunk: int | None = None, cap: int | None = None, start: int = 0,
                 update: Callable[[bytes | memoryview], object] | None = None) -> Iterator[Batch | Overlong | Tail]:
    """Yield batches of terminated lines, any overlong line, and finally the Tail.

    ``start``: the offset ``handle`` is at (a read resumed mid-file, at a line start); every
    offset yielded is the file's.  Memory stays below about ``chunk + cap`` bytes whatever the
    file size.  ``chunk`` and ``cap`` default to CHUNK and LINE_CAP as they are at the call
    (tests lower them to build overlong lines of a few KiB).
    """
    chunk = CHUNK if chunk is None else chunk
    cap = LINE_CAP if cap is None else cap
    offset = start  # offset of the first byte of the unterminated line held in ``pending``
    pending: list[bytes] = []  # that line's bytes so far, in the pieces read: joined once, when it ends
    held = 0  # their length
    over: list = []  # [length, all_nul] while inside an overlong line
    while True:
        block = handle.read(chunk)
        if not block:
            break
        if over:
            cut = block.find(b"\n")
            part = block if cut < 0 else block[:cut]
            over[0] += len(part)
            over[1] = over[1] and not part.strip(b"\0")
            if cut < 0:
                continue
            yield Overlong(over[0], over[1], True)
            offset += over[0] + 1
            over = []
            block = block[cut + 1 :]
        lines = split_lines(block)
        if len(lines) > 1:
            rest = lines.pop()
            if update is not None:
                for piece in pending:
                    update(piece)
                update(memoryview(block)[: len(block) - len(rest)])
            if pending:  # only the line that ran on is copied again, never the whole block
                pending.append(lines[0])
                lines[0] = b"".join(pending)
            yield Batch(offset, lines)
            offset += held + len(block) - len(rest)
            pending, held = ([rest] if rest else []), len(rest)
        elif block:
            pending.append(block)
            held += len(block)
        if held > cap:
            over = [held, not any(piece.strip(b"\0") for piece in pending)]
            pending, held = [], 0
    if over:
        yield Tail(offset, None, Overlong(over[0], over[1], False))
    else:
        yield Tail(offset, b"".join(pending))


# --- splitting a damaged line ------------------------------------------------------------

_DECODER = json.JSONDecoder()
JSON_SPACE = " \t\r\n"


class Piece(NamedTuple):
    """A slice ``[start, end)`` of a line: a whole ``record``, a ``nul`` run or ``garbage``."""

    start: int
    end: int
    kind: str


def split_line(line: bytes, is_record: Callable[[object], bool]) -> list[Piece]:
    """Split a line that is not one JSON record into records, NUL runs and garbage.

    Offsets are bytes.  A record piece is a byte-exact slice that parses (orjson, so valid
    UTF-8) to an object accepted by ``is_record``; whitespace between pieces is dropped.
    """
    text = line.decode("utf-8", "surrogateescape")  # one char per undecodable byte
    raw: list[tuple[int, int, str]] = []
    pos, end = 0, len(text)
    while pos < end:
        char = text[pos]
        if char == "\0":
            stop = pos
            while stop < end and text[stop] == "\0":
                stop += 1
            raw.append((pos, stop, "nul"))
            pos = stop
        elif char in JSON_SPACE:  # JSON's own white space only: a \f or U+2028 is not
            pos += 1
        elif (stop := _record_end(text, pos, is_record)) is not None:
            raw.append((pos, stop, "record"))
            pos = stop
        else:
            stop = _next_record_start(text, pos, is_record)
            raw.append((pos, stop, "garbage"))
            pos = stop
    return _to_bytes(text, raw, line, is_record)


def _record_end(text: str, pos: int, is_record: Callable[[object], bool]) -> int | None:
    found = _object_at(text, pos)
    if found is None or found is _BEYOND:
        return None
    obj, stop = found
    return stop if is_record(obj) and not _continues(text, stop) else None


def _continues(text: str, stop: int) -> bool:
    """True when the object ending at ``stop`` is followed by ``,`` ``]`` or ``}``: a value nested in
    a larger one (a content block, a record copied into another), never a record of its own.  No
    writer follows a record with those; what follows a record is a newline or the next record."""
    end = len(text)
    while stop < end and text[stop] in JSON_SPACE:
        stop += 1
    return stop < end and text[stop] in ",]}"


_BEYOND = object()  # a '{' whose object cannot be parsed for depth or number length


def _object_at(text: str, pos: int):
    """``(object, end)`` when a whole JSON object starts at ``pos``; None; or _BEYOND."""
    if text[pos] != "{":
        return None
    try:
        obj, stop = _DECODER.raw_decode(text, pos)
    except RecursionError:
        return _BEYOND
    except ValueError as exc:
        return _BEYOND if _LIMIT in str(exc) else None
    return (obj, stop) if type(obj) is dict else None


def holds_record(data: bytes, is_record: Callable[[object], bool]) -> bool:
    """True unless it is proven that no ``{`` in ``data`` opens a whole record accepted by
    ``is_record``: the proof a repair needs before it may remove ``data``.

    Exhaustive: every ``{`` is tried.  One whose object is too deep or holds too long a number
    to parse might be a record, so it counts as one.  Each attempt stops where its object ends
    or fails, so the cost is about the size of the nested objects, not quadratic in the line.
    """
    text = data.decode("utf-8", "surrogateescape")
    start = text.find("{")
    while start >= 0:
        found = _object_at(text, start)
        if found is _BEYOND or (found is not None and is_record(found[0]) and not _continues(text, found[1])):
            return True
        start = text.find("{", start + 1)
    return False


def leading_object(data: bytes) -> bool:
    """True when ``data`` opens (after white space and NUL) with a whole JSON object, whatever
    follows: two values run together are never a cut-off record."""
    text = data.decode("utf-8", "surrogateescape").lstrip(JSON_SPACE + "\0")
    return bool(text) and _object_at(text, 0) is not None


def _next_record_start(text: str, pos: int, is_record: Callable[[object], bool]) -> int:
    """The next '{' that opens a whole record (every candidate is tried: salvage keeps what it finds)."""
    start = text.find("{", pos + 1)
    while start >= 0:
        if text[start - 1] != "\\" and _record_end(text, start, is_record) is not None:
            return start
        start = text.find("{", start + 1)
    nul = text.find("\0", pos + 1)
    return len(text) if nul < 0 else nul


def _to_bytes(text: str, raw: list[tuple[int, int, str]], line: bytes, is_record) -> list[Piece]:
    pieces, cursor_char, cursor_byte = [], 0, 0
    for start, stop, kind in raw:
        b_start = cursor_byte + len(text[cursor_char:start].encode("utf-8", "surrogateescape"))
        b_stop = b_start + len(text[start:stop].encode("utf-8", "surrogateescape"))
        cursor_char, cursor_byte = stop, b_stop
        if kind == "record":  # the json module tolerates what orjson (strict UTF-8) rejects
            try:
                obj = loads(line[b_start:b_stop])
            except ValueError:
                kind = "garbage"
            else:
                kind = "record" if type(obj) is dict and is_record(obj) else "garbage"
        pieces.append(Piece(b_start, b_stop, kind))
    return pieces
