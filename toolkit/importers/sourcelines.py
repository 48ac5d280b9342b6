"""Read another tool's JSONL journal as an importer must: every whole record, streamed in
bounded memory, and every byte that is not one counted and reported with its line and offset.

The source is opened read-only and never written.  Damage is read the way ``fsck`` reads it
(DESIGN §2.4), with the same splitter: whole records spliced into one line are lifted out
byte-exact, NUL runs and cut-off records are skipped and counted by reason.  What is skipped
is a finding:

- ``source-torn`` (warning): a final line that is not a whole record yet (a session being
  written, or one cut by a crash) — a later import picks it up once it is whole — and NUL
  runs (an interrupted append on a delayed-allocation file system: nothing was there to keep);
- ``source-joined`` (warning): whole records run together on one line (``}{``): each is imported,
  the line is named;
- ``source-unreadable`` (error): bytes mid-file that hold no whole record, a JSON value that is
  not a record of the format.  Those were lost at the source.

A line longer than the reader holds (:data:`toolkit.lines.LINE_CAP`) may be a whole record too
large to parse here: it is never dropped.  It is counted (reason ``record-too-large``) and listed
in ``too_large`` with where its bytes are, and the writer keeps them, copied byte-exact and
streamed, beside the store (:func:`toolkit.importers.output.keep_too_large`), with a finding.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from ..findings import Finding
from ..lines import Batch, Overlong, Tail, iter_batches, loads, open_regular, split_line

BOM = b"\xef\xbb\xbf"
_ODD_END = (b" ", b"\t", b"\r")  # a line ending in these is stripped first (by _line)


class SourceLine(NamedTuple):
    """One whole source record: where it starts, its exact bytes and its parsed value.  (A named
    tuple: one is made per line of every file read, and a tuple is the cheapest to make.)"""

    line: int
    offset: int
    data: bytes
    value: dict
    lifted: bool = False  # cut out of a damaged line (spliced records)


class TooLarge(NamedTuple):
    """A source line too large to parse here: where its bytes are, so an import can keep them."""

    path: Path
    line: int
    offset: int
    length: int
    terminated: bool  # False: the bytes after the last newline (perhaps a record still being written)


@dataclass
class SourceReader:
    """Iterate the whole records of ``path``; afterwards ``lines``, ``records`` and ``skipped``
    say what was read: non-empty lines, whole records, and source items that became no record
    (by reason: ``torn-tail``, ``nul-run``, ``cut-record``, ``not-a-record``, ``record-too-large``);
    ``too_large`` lists the lines counted under the last, whose bytes an import keeps."""

    path: Path
    is_record: Callable[[object], bool]
    report: Callable[[Finding], None]
    what: str = "record"
    lines: int = 0
    records: int = 0
    size: int = 0
    end: int = 0  # just past the last byte read as whole lines (where a later import resumes)
    skipped: dict[str, int] = field(default_factory=dict)
    too_large: list[TooLarge] = field(default_factory=list)
    # the source as read, for `restore` to give it back byte for byte: the bytes from the start up to
    # the end of the last whole line (an unterminated last line too, when it is one whole record),
    # and their sha256 (None when a line was too large to hold, so the bytes could not be hashed)
    covered: int = 0
    sha256: str | None = None
    # a read resumed where an earlier one stopped (issue 27): the offset of a line start, the line
    # number before it, and the sha256 of the bytes before it (continued over the rest)
    start: int = 0
    number: int = 0
    digest: object = None

    def _skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    def _finding(self, code: str, line: int, offset: int, message: str) -> None:
        self.report(Finding(code, "error" if code == "source-unreadable" else "warning", str(self.path), line, offset, message))

    def __iter__(self) -> Iterator[SourceLine]:
        digest: hashlib._Hash | None = self.digest if self.digest is not None else hashlib.sha256()
        with open_regular(self.path, buffered=False) as handle:  # (read in blocks of 4 MiB: no buffer of its own)
            number = self.number
            offset = self.covered = self.end = self.start
            if self.start:
                handle.seek(self.start)
            is_record, fast_loads, JSONError = self.is_record, orjson.loads, orjson.JSONDecodeError
            made = tuple.__new__  # SourceLine(...) without the call of its __new__: the common line's
            def hashed(block) -> None:
                """Each line and its newline, as read; nothing after an overlong line, whose bytes are never held."""
                if digest is not None:
                    digest.update(block)
            for item in iter_batches(handle, start=self.start, update=hashed):
                if type(item) is Batch:
                    offset = item.offset
                    for line in item.lines:
                        number += 1
                        start = offset
                        offset += len(line) + 1
                        if number == 1 and line.startswith(BOM):
                            line, start = line[3:], start + 3
                        if line[-1:] not in _ODD_END and line[:1] == b"{":  # the common line, inline: one whole record
                            try:
                                value = fast_loads(line)
                            except JSONError:
                                pass
                            else:
                                if type(value) is dict and is_record(value):
                                    self.lines += 1
                                    self.records += 1
                                    yield made(SourceLine, (number, start, line, value, False))
                                    continue
                        yield from self._line(number, start, line, final=False)  # anything else, as always
                    self.end = self.covered = offset
                    self.number = number
                elif type(item) is Overlong:
                    digest = None  # its bytes are never held: the source cannot be hashed
                    number += 1
                    self._overlong(item, number, offset)
                    offset += item.length + 1
                    self.end = offset
                else:
                    yield from self._tail(item, number + 1, digest)
        self.sha256 = digest.hexdigest() if digest is not None else None

    def _tail(self, item: Tail, number: int, digest) -> Iterator[SourceLine]:
        self.size = item.offset + (len(item.data) if item.data is not None else item.overlong.length)
        if item.overlong is not None:
            self._overlong(item.overlong, number, item.offset)
        elif item.data.strip(b" \t\r\n"):
            for src in self._line(number, item.offset, item.data, final=True):
                if digest is not None and not src.lifted and src.data == item.data:  # a whole record, unterminated
                    digest.update(item.data)
                    self.covered = item.offset + len(item.data)
                yield src

    def _overlong(self, item: Overlong, number: int, offset: int) -> None:
        """A line too long to hold: NUL bytes alone held nothing; anything else is kept by the writer."""
        self.lines += 1
        if item.all_nul:
            self._skip("nul-run" if item.terminated else "torn-tail")
            self._finding("source-torn", number, offset, f"{item.length:,} NUL bytes (an append interrupted by a crash); "
                          "nothing there to import")
            return
        self._skip("record-too-large")
        self.too_large.append(TooLarge(self.path, number, offset, item.length, item.terminated))

    def _line(self, number: int, offset: int, line: bytes, *, final: bool) -> Iterator[SourceLine]:
        body = line.strip(b" \t\r")
        if not body:
            return
        self.lines += 1
        if not body.strip(b"\0"):
            self._skip("torn-tail" if final else "nul-run")
            self._finding("source-torn", number, offset, f"{len(line):,} NUL bytes (an append interrupted by a crash); "
                          "nothing there to import")
            return
        try:
            value = loads(line)
        except ValueError:
            value = None
        else:
            if type(value) is dict and self.is_record(value):
                self.records += 1
                yield SourceLine(number, offset, line.rstrip(b" \t\r"), value)
                return
            if not final:
                self._skip("not-a-record")
                self._finding("source-unreadable", number, offset, f"JSON, but not a {self.what}; line not imported")
                return
        yield from self._pieces(number, offset, line, final=final)

    def _pieces(self, number: int, offset: int, line: bytes, *, final: bool) -> Iterator[SourceLine]:
        kept, cut, nul = 0, 0, 0
        pieces = split_line(line, self.is_record)
        for piece in pieces:
            data = line[piece.start:piece.end]
            if piece.kind == "record":
                kept += 1
                self.records += 1
                yield SourceLine(number, offset + piece.start, data, loads(data), lifted=True)
            elif piece.kind == "nul":
                nul += len(data)
            else:
                cut += len(data)
        if final and pieces and pieces[-1].kind != "record":
            self._skip("torn-tail")
            self._finding("source-torn", number, offset, f"the last line ends in {cut + nul:,} bytes that are not a whole "
                          f"{self.what} yet (a session being written, or cut by a crash); "
                          + (f"{kept} whole record(s) before them imported; " if kept else "")
                          + "an import after it is finished picks it up")
            return
        if kept > 1:  # records run together on one line (a writer that lost a newline): each imported, the line named
            self._finding("source-joined", number, offset, f"{kept} whole {self.what}s run together on one line (no newline "
                          "between them); each was imported on its own")
        if cut:
            self._skip("cut-record")
            self._finding("source-unreadable", number, offset, f"{cut:,} bytes of a cut-off {self.what}"
                          + (f" spliced with {kept} whole one(s), which were imported" if kept else "")
                          + "; those bytes hold no whole record and were not imported")
        elif nul:
            self._skip("nul-run")
            self._finding("source-torn", number, offset, f"{nul:,} NUL bytes before {kept} whole record(s) on one line "
                          "(an interrupted append); the records were imported")


def hashed(path: Path, end: int, start: int = 0, digest=None):
    """``digest`` (a new sha256 when None) continued over the bytes of ``path`` from ``start`` to
    ``end``; None when the file is shorter or cannot be read.  What a resume checks a source's
    prefix with (the sha256 of the bytes the last import read)."""
    digest = hashlib.sha256() if digest is None else digest
    try:
        with open_regular(path) as handle:
            handle.seek(start)
            left = end - start
            while left > 0:
                block = handle.read(min(left, 1 << 20))
                if not block:
                    return None
                digest.update(block)
                left -= len(block)
    except OSError:
        return None
    return digest


def grown_from(path: Path, covered: int, sha256: str, limit: int):
    """The sha256 of the first ``covered`` bytes of ``path`` (to be continued over what follows),
    when they hash to ``sha256`` as when an import last read them, and the file grew by at most
    ``limit`` bytes since; else None (a resume reads the file in full).  Hashed here, or taken
    from the :class:`Prefixes` this import hashes ahead (:data:`AHEAD`)."""
    try:
        if os.stat(path).st_size - covered > limit:
            return None
    except OSError:
        return None
    ahead = AHEAD.get()
    digest = ahead.take(str(path), covered) if ahead is not None else False
    if digest is False:  # (not hashed ahead)
        digest = hashed(path, covered)
    return digest if digest is not None and digest.hexdigest() == sha256 else None


class Prefixes:
    """The prefixes a resume checks (``(path, covered)``: the bytes an import last read of a file
    that only grew), hashed ahead in this order by one background thread, while this one imports
    the units before: hashing a prefix reads it whole (from the disk, the night after), and a
    resume waits for nothing else.  :meth:`take` gives what :func:`hashed` would (a copy: a
    reader continues it), waiting for it if need be; a prefix not asked ahead is hashed by the
    caller.  The thread stops at :meth:`close`, after the prefix it is hashing."""

    def __init__(self, wanted: list[tuple[str, int]]) -> None:
        import threading

        self._wanted = list(dict.fromkeys(wanted))
        self._asked = set(self._wanted)
        self._hashed: dict[tuple[str, int], object] = {}
        self._done = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="levelsess-prefixes", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for path, covered in self._wanted:
            if self._stop:
                break
            try:
                digest = hashed(Path(path), covered)
            except Exception:  # noqa: BLE001 - (a MemoryError…) the caller hashes it itself, and meets it there
                digest = False
            with self._done:
                self._hashed[path, covered] = digest
                self._done.notify_all()
        with self._done:
            self._stop = True
            self._done.notify_all()

    def take(self, path: str, covered: int):
        """The sha256 object of the first ``covered`` bytes of ``path`` as :func:`hashed` makes it
        (None when the file is shorter or cannot be read); False when it was not asked ahead."""
        key = (path, covered)
        if key not in self._asked:
            return False
        with self._done:
            self._done.wait_for(lambda: key in self._hashed or self._stop)
            digest = self._hashed.get(key, False)
        return digest.copy() if digest else digest

    def close(self) -> None:
        with self._done:
            self._stop = True
            self._done.notify_all()


#: The :class:`Prefixes` the import running in this thread hashes ahead, if any.
AHEAD: contextvars.ContextVar[Prefixes | None] = contextvars.ContextVar("ahead", default=None)


def read_on(path: Path, state: dict, is_record: Callable[[object], bool], what: str,
            limit: int) -> tuple[SourceReader, list[Finding]] | None:
    """A reader of the lines ``path`` added since a read that kept ``state`` (its ``covered``, the
    ``sha256`` of those bytes and the ``number`` of lines before), and the list it says its findings
    into; None when those bytes changed or the file grew by more than ``limit`` (:func:`grown_from`)."""
    digest = grown_from(path, state["covered"], state["sha256"], limit)
    if digest is None:
        return None
    said: list[Finding] = []
    return SourceReader(path, is_record, said.append, what=what, start=state["covered"], number=state["number"],
                        digest=digest), said
