"""Read a journal line by line and classify every line per DESIGN.md §2.4.

The reader streams in bounded memory, works on raw bytes, and never re-serialises JSON.
:func:`scan_journal` returns a :class:`JournalScan` (findings plus the facts the caches are
derived from); :func:`iter_records` yields parsed records and raises a typed
:class:`~toolkit.errors.CorruptionError` at the first damaged line.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from .errors import NotAJournalError, PathNotFoundError, PermissionDeniedError, UnreadableError
from .findings import EXCERPT_BYTES, FindingSink
from .identify import describe, sniff
from .layouts.registry import get as get_layout  # the reader takes a layout (or its name); it imports none
from .scan import JournalScan, TailState  # noqa: F401 (the reader's results: below the layouts that read them)
from . import lines as _lines
from .lines import (LINE_CAP, BeyondLimits, Batch, Overlong, Piece, Tail, cap_text, holds_record, iter_batches,
                    leading_object, loads, open_regular, split_line)

if TYPE_CHECKING:
    from .layouts.base import BaseLayout

SOFT_CAP = 20 << 20
BOM = b"\xef\xbb\xbf"
_loads = orjson.loads
_JSONError = orjson.JSONDecodeError


@dataclass
class _FillerRun:
    """Consecutive lines of NUL bytes or white space, and the sink as it was before them."""

    first: int      # its first line
    offset: int     # its first byte
    last: int       # its last line so far
    findings: int   # how many findings the sink held before it
    counts: dict    # the sink's counts before it
    nul: bool = False  # any NUL in it (white space alone stays blank-line warnings)


class _Foreign(Exception):
    """Raised inside the classifier when the first record is not of the expected layout."""


class _Classifier:
    """Per-line state machine shared by both layouts (the hot loop lives in :meth:`feed`)."""

    def __init__(self, path: Path, layout: BaseLayout, strict: bool, validator: Callable | None) -> None:
        self.sink = FindingSink(str(path), strict)
        self.layout = layout
        self.validator = validator
        self.records = 0
        self.lineno = 0
        self.identified = False
        self.foreign: str | None = None
        self.rules = layout.rules(self)
        self.facts = self.rules.facts
        self._record = self.rules.record
        self.is_record = layout.is_record
        self.record = self._first
        self.nul_run: _FillerRun | None = None  # the latest run of NUL / white-space lines
        self.terminated = 0  # terminated lines read before the tail

    def release(self) -> None:
        """Break the reader's own cycles once it is done (its rules point back at it, and until it
        knows the layout its ``record`` is its own method): freed at once, with the records it still
        holds, not at the next collection.  An import's reindex of a folder of 733 Codex journals read
        in full left 52 MiB of such readers to the collector, whose young-generation threshold an
        import raises (:data:`~toolkit.importers.YOUNG_COLLECTION`): its peak RSS went from 33 to 111 MiB."""
        self.record = self._record = None
        if getattr(self.rules, "c", None) is self:
            self.rules.c = None

    # -- identification (DESIGN.md §1, principle 7) -------------------------------------------

    def _first(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        """Identify the file from its first record, then read it as its layout (or stop)."""
        found = sniff(obj)
        if self.layout.identify(obj, found):
            self.identified = True
            self.record = self._record
            self._record(obj, offset, line, quiet)
            return
        self.foreign = describe(found)
        self.sink.add("unknown-format", f"looks like {self.foreign}, not {self.layout.describes}: "
                      "levelsess leaves it alone", self.lineno, offset, line)
        raise _Foreign

    # -- lines ------------------------------------------------------------------------------

    def feed(self, batch: Batch) -> None:
        start = batch.offset
        for line in batch.lines:
            self.lineno += 1
            offset, start = start, start + len(line) + 1
            if line:
                if self.lineno == 1 and line.startswith(BOM):
                    self.sink.add("bom", "UTF-8 byte-order mark at the start (hand-edited?)", 1, 0, line)
                    line = line[3:]
                if line and line[-1] == 13:
                    if "crlf" not in self.sink.counts:
                        self.sink.add("crlf", "CRLF line endings (hand-edited?)", self.lineno, offset, line)
                    line = line[:-1]
                try:
                    obj = _loads(line)
                except _JSONError:
                    self.damaged(line, offset)
                else:
                    self.record(obj, offset, line)  # not cached: the first record swaps it
            else:
                self._filler(offset, False)
                self.sink.add("blank-line", "empty line", self.lineno, offset)

    def damaged(self, line: bytes, offset: int) -> None:
        try:  # valid JSON that orjson refuses (a lone-surrogate escape) is still a record
            obj = loads(line)
        except BeyondLimits as exc:  # maybe a whole record: never called garbage, never cut
            self.sink.add("too-deep", f"the line {exc}; levelsess cannot read it, and leaves the file as it is",
                          self.lineno, offset, line)
            return
        except ValueError:
            pass
        else:
            self.record(obj, offset, line)
            return
        if not line.strip():
            self._filler(offset, False)
            self.sink.add("blank-line", "whitespace-only line", self.lineno, offset, line)
            return
        if not line.strip(b"\0 \t\r"):
            self._filler(offset, True)
        self.pieces(line, offset, split_line(line, self.is_record))

    def pieces(self, line: bytes, offset: int, pieces: list[Piece]) -> bool:
        """Report a line that is not one record from its pieces; return True if it holds a record."""
        kinds = [p.kind for p in pieces]
        if "nul" in kinds:
            self.sink.add("nul-padding", f"{sum(p.end - p.start for p in pieces if p.kind == 'nul')} NUL bytes", self.lineno, offset, line)
        solid = [p for p in pieces if p.kind != "nul"]
        if "record" in kinds and len(solid) > 1:
            where = ", ".join(f"{p.kind} at byte {offset + p.start}" for p in solid[:4])
            if all(b"\r" in line[a.end : b.start] for a, b in zip(solid, solid[1:])):
                self.sink.add("cr-line-endings", f"{len(solid)} records separated by CR alone (old-Mac line endings), "
                              "not by newlines", self.lineno, offset, line)
            else:
                self.sink.add("spliced-records", f"{len(solid)} pieces run together on one line: {where}", self.lineno, offset, line)
        elif "garbage" in kinds:
            self.sink.add("invalid-json", "not valid UTF-8 JSON", self.lineno, offset, line)
        for piece in pieces:  # whole records inside a damaged line still count for the caches
            if piece.kind == "record":
                self.record(loads(line[piece.start : piece.end]), offset + piece.start, line[piece.start : piece.end], quiet=True)
        return "record" in kinds

    def _filler(self, offset: int, nul: bool) -> None:
        """Note a line of NUL bytes or white space: a run of them that ends the file is a torn tail."""
        run = self.nul_run
        if run is None or run.last != self.lineno - 1:
            self.nul_run = run = _FillerRun(self.lineno, offset, self.lineno, len(self.sink.items), dict(self.sink.counts))
        run.last = self.lineno
        run.nul = run.nul or nul

    def filler_tail(self, size: int, tail_state: TailState) -> tuple[TailState, int] | None:
        """When the file ends in lines of NUL bytes (and white space), then at most a torn record,
        those bytes hold no record: they are one torn tail (an interrupted append on NTFS or ext4
        leaves such runs; SOURCES-AGENTS §1.12).  Returns (TORN, its first byte) or None."""
        run = self.nul_run
        if run is None or run.last != self.terminated or not run.nul:
            return None
        if tail_state not in (TailState.NONE, TailState.TORN):
            return None
        sink = self.sink
        record = any(f.code == "torn-tail" and f.message.startswith("incomplete") for f in sink.items[run.findings:])
        del sink.items[run.findings:]  # the run's nul-padding / blank-line findings: they are the tail now
        sink.counts.clear()
        sink.counts.update(run.counts)
        sink.add("torn-tail", f"{size - run.offset} bytes of NUL and white space after the last record"
                 + (", then an incomplete record" if record else ""), run.first, run.offset)
        return TailState.TORN, run.offset

    def overlong(self, item: Overlong, offset: int) -> None:
        """A terminated line longer than the reader holds: NUL bytes alone are padding, anything
        else may be a whole record (principle 8: unparsed is not proven garbage)."""
        self.lineno += 1
        if item.all_nul:
            self._filler(offset, True)
            self.sink.add("nul-padding", f"{item.length} NUL bytes", self.lineno, offset)
        else:
            self.sink.add("record-too-large", f"a line of {item.length:,} bytes is too large for levelsess to parse here "
                          f"(over {cap_text()}); it may be a whole record, so it is left exactly as it is: a person "
                          "must look at it (nothing is cut)", self.lineno, offset)
            unread = getattr(self.rules, "unread", None)
            if unread is not None:  # the layout may still name the record from the line's two ends
                unread(offset, item.length)

    # -- the tail ---------------------------------------------------------------------------

    def tail(self, item: Tail) -> TailState:
        """Judge the bytes after the last newline: the only bytes a repair may ever remove.

        They are TORN (removable) only when proven to hold no record of the layout: NUL bytes
        or whitespace, or bytes in which no ``{`` opens a whole record.  A tail that parses is
        never cut: a record is UNTERMINATED (a newline is appended), any other JSON value is
        HELD; so is a tail holding a whole record among other bytes (spliced, CR-separated,
        NUL-padded) and one too long to inspect.
        """
        lineno = self.lineno + 1
        if item.overlong is not None:
            if item.overlong.all_nul:
                self.sink.add("torn-tail", f"{item.overlong.length} NUL bytes after the last newline", lineno, item.offset)
                return TailState.TORN
            self.sink.add("record-too-large", f"the final {item.overlong.length:,} bytes have no newline and are too "
                          f"large for levelsess to parse here (over {cap_text()}); they may be a record still being "
                          "written, so they are never trimmed: a person must look at them (nothing is cut)",
                          lineno, item.offset)
            return TailState.HELD
        data = item.data
        if not data:
            return TailState.NONE
        if lineno == 1 and data.startswith(BOM):
            self.sink.add("bom", "UTF-8 byte-order mark at the start (hand-edited?)", 1, 0, data)
            data = data[3:]
        if not data.strip(b"\0 \t\r"):
            what = f"{len(item.data)} NUL bytes" if not data.strip(b"\0") else f"{len(item.data)} bytes of NUL or white space"
            self.sink.add("torn-tail", f"{what} after the last newline", lineno, item.offset, item.data)
            return TailState.TORN
        self.lineno = lineno
        try:
            obj = loads(data)
        except BeyondLimits as exc:
            self.sink.add("too-deep", f"the final line {exc}; never cut", lineno, item.offset, item.data)
            return TailState.HELD
        except ValueError:
            return self._unparsed_tail(data, item)
        if type(obj) is not dict:
            self.sink.add("invalid-record", "final line is JSON but not a record object; never cut", lineno, item.offset, item.data)
            return TailState.HELD
        self.sink.add("unterminated-tail", "final record is complete but has no newline", lineno, item.offset, item.data)
        self.record(obj, item.offset, data)
        return TailState.UNTERMINATED

    def _unparsed_tail(self, data: bytes, item: Tail) -> TailState:
        pieces = split_line(data, self.is_record)
        if any(p.kind == "record" for p in pieces):
            self.pieces(data, item.offset, pieces)
            return TailState.HELD
        if holds_record(data, self.is_record) or leading_object(data):  # not proven free of records
            self.sink.add("spliced-records", "final line holds a whole JSON object (or one too deep to parse) among "
                          "other bytes; never cut", self.lineno, item.offset, item.data)
            return TailState.HELD
        self.sink.add("torn-tail", f"incomplete final record ({len(item.data)} bytes)", self.lineno, item.offset, item.data)
        return TailState.TORN


def open_journal(path: Path):
    """Open a journal for reading, turning OS errors into typed errors.

    Only regular files are opened: a FIFO or device named ``*.jsonl`` would block or never end.
    """
    try:
        return open_regular(path)
    except FileNotFoundError as exc:
        raise PathNotFoundError(str(path)) from exc
    except PermissionError as exc:
        raise PermissionDeniedError(f"cannot read {path}") from exc
    except IsADirectoryError as exc:
        raise NotAJournalError(f"{path} is a folder") from exc
    except OSError as exc:  # a symlink loop, an I/O error, a FIFO or device
        if exc.errno == errno.EINVAL:
            raise NotAJournalError(f"{path} is not a regular file") from exc
        raise UnreadableError(f"{path}: {exc.strerror or exc}") from exc


def scan_journal(
    path: Path,
    layout: BaseLayout | str = "levelcode",
    *,
    strict: bool = False,
    validator: Callable | None = None,
    progress: Callable[[int], None] | None = None,
    resume: tuple[bytes, int] | None = None,
    checkpoint: bool = False,
    lean: bool = False,
) -> JournalScan:
    """Read ``path`` once and classify every line; never writes.

    ``resume``: a ``resume_state`` of an earlier scan of this very file, whose bytes up to its
    offset are known to be unchanged: reading goes on from there with the reader's state as it
    was, and the result is the one a full read gives.  ``checkpoint``: return such a state
    (``lean``: as a lean memo keeps it, :func:`lean_checkpoint`)."""
    layout = get_layout(layout)
    classifier, start = (_restore(resume, path, layout, strict, validator) if resume is not None else
                         (_Classifier(path, layout, strict, validator), 0))
    try:
        return _scanned(classifier, path, layout, start, progress, checkpoint, lean)
    finally:
        classifier.release()


def _scanned(classifier: _Classifier, path: Path, layout: BaseLayout, start: int, progress: Callable[[int], None] | None,
             checkpoint: bool, lean: bool) -> JournalScan:
    """:func:`scan_journal` with its reader made (new, or as a checkpoint left it: from ``start``)."""
    state = None
    with open_journal(path) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PermissionDeniedError(f"{path} is not a regular file")
        if info.st_size == 0:
            classifier.sink.add("empty-journal", "0-byte journal", None, 0)
        elif info.st_size > SOFT_CAP and "oversize" not in classifier.sink.counts:
            classifier.sink.add("oversize", f"{info.st_size:,} bytes, over the {SOFT_CAP >> 20} MiB soft cap", None, None)
            if start:  # grown past the cap since: where a full read reports it, first
                classifier.sink.items.insert(0, classifier.sink.items.pop())
        tail_state, body_end, offset = TailState.NONE, start, start
        if start:
            handle.seek(start)
        try:
            for item in iter_batches(handle, start=start):
                if type(item) is Batch:
                    classifier.feed(item)
                    offset = body_end = item.offset + sum(map(len, item.lines)) + len(item.lines)
                    if progress is not None:
                        progress(body_end)
                elif type(item) is Overlong:
                    classifier.overlong(item, offset)
                    offset = body_end = offset + item.length + 1
                else:
                    body_end = item.offset
                    if checkpoint and classifier.identified and classifier.foreign is None:
                        state = (_checkpoint(classifier, lean), body_end)
                    classifier.terminated = classifier.lineno
                    tail_state = classifier.tail(item)
        except _Foreign:  # one finding per foreign file; the rest of it is not read
            tail_state = TailState.HELD
        except PermissionError as exc:
            raise PermissionDeniedError(f"cannot read {path}: {exc.strerror}") from exc
        except OSError as exc:  # EIO on a failing disk is not a permission problem
            raise UnreadableError(f"{path}: {exc.strerror or exc}") from exc
        if info.st_size and not classifier.identified and classifier.foreign is None:
            tail_state = _unidentified(classifier, handle, tail_state)
        if classifier.nul_run is not None and classifier.foreign is None:
            filler = classifier.filler_tail(info.st_size, tail_state)
            if filler is not None:
                tail_state, body_end = filler
    classifier.rules.finish(info.st_size, tail_state)
    return JournalScan(
        path=path,
        layout=layout,
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        records=classifier.records,
        body_end=body_end,
        tail=tail_state,
        findings=classifier.sink.finish(),
        facts=classifier.facts,
        foreign=classifier.foreign,
        resume_state=state if classifier.foreign is None else None,
    )


class WrittenScan:
    """The scan of a journal made from the lines its writer writes, as :func:`scan_journal` with
    ``checkpoint=True`` makes it from the file once written (an importer's new journal is then
    not read back and parsed again for its index).  Each line is given with the record it encodes
    (what parsing it gives, as the layout reads it) or None to parse it; :meth:`scan` is None for
    a file that is not exactly those lines, or with a line longer than a line may be (LINE_CAP: the
    reader is used).  Past the soft cap it adds the ``oversize`` finding where a read has it, first (a Cursor
    chat of 5,000 bubbles writes a 30 MB journal, and was read back whole for its index)."""

    def __init__(self, path: Path, layout: BaseLayout | str = "levelcode") -> None:
        self.layout = get_layout(layout)
        self.classifier = _Classifier(path, self.layout, False, None)
        self.path, self.offset, self.usable = path, 0, True
        self.longest = 0  # the longest line given, with its newline: one past LINE_CAP is read as the reader reads it

    def line(self, data: bytes, record: dict | None = None) -> None:
        if not self.usable:
            return
        if data[:1] != b"{" or data[-1:] == b"\r" or data.find(b"\n") >= 0:  # not a plain record line: the reader reads the file
            self.usable = False
            return
        c = self.classifier
        c.lineno += 1
        if record is None:
            try:
                record = loads(data)
            except ValueError:
                self.usable = False
                return
        try:
            c.record(record, self.offset, data)
        except _Foreign:
            self.usable = False
            return
        size = len(data) + 1
        if size > self.longest:
            self.longest = size
        self.offset += size

    def terminated(self, data: bytes, record: dict) -> None:
        """:meth:`line` of a line given with its newline, and its record: the writer's line as it
        wrote it, not copied again to cut the newline off (a finding quotes the line without it)."""
        if not self.usable:
            return
        if data[:1] != b"{" or data.find(b"\n") != len(data) - 1 or data[-2:-1] == b"\r":  # as :meth:`line` says
            self.usable = False
            return
        self.numbered(data, record)

    def numbered(self, data: bytes, record: dict) -> None:
        """:meth:`terminated` of a line the writer made one ``{`` record and its newline, with no other
        newline or carriage return in it (an importer's :func:`~toolkit.importers.output._numbered_line`:
        JSON as orjson writes it, with a raw row that holds neither): not looked through again."""
        if not self.usable:
            return
        c = self.classifier
        c.lineno += 1
        size = len(data)
        try:
            c.record(record, self.offset, data if size > EXCERPT_BYTES + 1 else data[:-1])
        except _Foreign:
            self.usable = False
            return
        if size > self.longest:
            self.longest = size
        self.offset += size

    def plain_events(self, lines: list[bytes], start: int, seq: int, t: object, *, plain: bool = False) -> int:
        """:meth:`line` of each of ``lines[start:]``, ``event`` lines of a type that keeps no fact
        (``source-line``) numbered from ``seq`` with time ``t``, without their records, in one call:
        how many of them, from the first, were taken.  The first one not taken must be given to
        :meth:`line` (with its record) instead.  ``plain``: the caller made each line a ``{`` record
        with no newline or carriage return in it (as :meth:`line` asks), so none is looked through."""
        c = self.classifier
        if not (self.usable and c.identified):
            return 0
        rules = getattr(c.rules, "plain_events", None)
        if rules is None:
            return 0
        if plain:
            given = lines[start:] if start else lines
            end, size = len(lines), sum(map(len, given)) + len(given)
        else:
            end, size = start, 0
            while end < len(lines):
                data = lines[end]
                if data[:1] != b"{" or data[-1:] == b"\r" or data.find(b"\n") >= 0:
                    break
                end, size = end + 1, size + len(data) + 1
            given = lines[start:end]
        if given:
            self.longest = max(self.longest, max(map(len, given)) + 1)
        if not rules(seq, end - start, t):  # (the rules take them all, or none)
            return 0
        c.lineno += end - start
        self.offset += size
        return end - start

    def scan(self, info: os.stat_result, lean: bool = False) -> JournalScan | None:
        """The scan, for the file written (``info``: its stat, which must have every byte given);
        ``lean``: its checkpoint for a lean memo (:func:`lean_checkpoint`)."""
        try:
            return self._scan(info, lean)
        finally:
            self.close()

    def _scan(self, info: os.stat_result, lean: bool) -> JournalScan | None:
        c, size = self.classifier, self.offset
        if not self.usable or info.st_size != size or not size or self.longest > _lines.LINE_CAP + 1 or not c.identified:
            return None  # (a line past LINE_CAP may be one the reader takes as overlong: it reads the file)
        if size > SOFT_CAP and "oversize" not in c.sink.counts:  # as a read says it: first
            c.sink.add("oversize", f"{size:,} bytes, over the {SOFT_CAP >> 20} MiB soft cap", None, None)
            c.sink.items.insert(0, c.sink.items.pop())
        state = (_checkpoint(c, lean), size)
        c.terminated = c.lineno
        tail_state = c.tail(Tail(size, b""))
        c.rules.finish(size, tail_state)
        self.usable = False  # (its classifier's facts and findings are the scan's now)
        return JournalScan(path=self.path, layout=self.layout, size=size, mtime_ns=info.st_mtime_ns, records=c.records,
                           body_end=size, tail=tail_state, findings=c.sink.finish(), facts=c.facts, foreign=None,
                           resume_state=state)

    def close(self) -> None:
        """Done, after a :meth:`scan` or without one (the file is not the one written): its reader
        freed at once (:meth:`_Classifier.release`)."""
        self.usable = False
        self.classifier.release()


def judge_tail(path: Path, layout: BaseLayout | str, data: bytes, offset: int) -> TailState:
    """Judge ``data``, a journal's bytes from ``offset`` (0, or just past a newline) to its end, as a
    scan would judge them now: TORN only when they are proven to hold no record (a repair re-judges
    what it cuts at the instant it cuts it, the file held still)."""
    filler, newline, last = data.rpartition(b"\n")
    if filler.strip(b"\0 \t\r\n"):
        return TailState.HELD  # a terminated line that is not NUL or white space: never cut as a tail
    if not last.strip(b"\0 \t\r\n"):
        return TailState.TORN if data else TailState.NONE  # NUL or white-space filler, lines of it too
    if len(last) > LINE_CAP:
        return TailState.HELD
    offset += len(filler) + len(newline)
    classifier = _Classifier(path, get_layout(layout), False, None)
    classifier.lineno = 0 if offset == 0 else 1
    try:
        classifier.record = lambda *args, **kwargs: None  # which layout it is was settled by the check
        return classifier.tail(Tail(offset, last))
    except _Foreign:
        return TailState.HELD
    finally:
        classifier.release()


def _pickle() -> tuple[Callable, Callable]:
    """``dumps`` and ``loads`` of CPython's pickle, without ``pickle.py`` (a millisecond of the start-up of an
    import that resumes journals; the same bytes); the module's where there is no ``_pickle``."""
    try:
        from _pickle import dumps, loads
    except ImportError:  # pragma: no cover - an interpreter without the C pickle
        from pickle import dumps, loads
    return dumps, loads


def _checkpoint(classifier: _Classifier, lean: bool = False) -> bytes:
    """The reader's whole state (sink, counts, the layout's rules and facts), as bytes.  ``lean``:
    the journal's meta record in it leaves out its source row (``raw``), as a lean memo's facts do
    (:func:`lean_checkpoint`)."""
    dumps, _loads = _pickle()
    validator, classifier.validator = classifier.validator, None  # the caller's: given again on resume
    facts = classifier.facts
    meta = getattr(facts, "meta", None)
    slim = lean and isinstance(meta, dict) and "raw" in meta
    if slim:
        facts.meta = {key: value for key, value in meta.items() if key != "raw"}
    try:
        return dumps(classifier, protocol=-1)  # (the highest protocol)
    finally:
        classifier.validator = validator
        if slim:
            facts.meta = meta


def lean_checkpoint(state: bytes) -> bytes:
    """A checkpoint as a lean memo keeps it (``import``'s, whose scans make index entries only):
    the meta record in it without its source row, as the memo's facts are.  A Codex rollout's
    ``session_meta`` was 15 of each state's 16 kB, and a grown import read and wrote them all
    again.  A scan that goes on from it has a meta record without ``raw``, which is what that
    memo keeps of any scan; anything that is no such checkpoint is given back as it is."""
    if b"raw" not in state:  # (nothing in it is called raw: lean already)
        return state
    try:
        classifier = _pickle()[1](state)
    except Exception:  # noqa: BLE001 - not one this build reads: the memo's resume refuses it later, as ever
        return state
    if type(classifier) is not _Classifier:
        return state
    try:
        meta = getattr(getattr(classifier, "facts", None), "meta", None)
        if not (isinstance(meta, dict) and "raw" in meta):
            return state
        return _checkpoint(classifier, lean=True)
    finally:
        classifier.release()


def _restore(resume: tuple[bytes, int], path: Path, layout: BaseLayout, strict: bool, validator) -> tuple[_Classifier, int]:
    """A reader as a checkpoint left it (for ``path`` and ``layout`` only), and where to go on."""
    state, start = resume
    classifier = _pickle()[1](state)
    if (type(classifier) is not _Classifier or classifier.sink.path != str(path) or classifier.layout is not layout
            or classifier.sink.strict != strict):
        raise ValueError("a checkpoint of another journal")
    classifier.validator = validator
    return classifier, start


def foreign_only(scans: list[JournalScan]) -> str | None:
    """Why nothing here can be touched, when every non-empty journal scanned is of a layout
    levelsess does not know (one clear error instead of a finding per file); else None."""
    scans = [scan for scan in scans if scan.size]
    if not scans or any(scan.identified for scan in scans):
        return None
    looks = sorted({scan.foreign or "?" for scan in scans})
    return (f"none of the {len(scans)} .jsonl file(s) is a journal of a layout levelsess knows "
            f"(they look like {' / '.join(looks)}); nothing was written")


def _unidentified(classifier: _Classifier, handle, tail_state: TailState) -> TailState:
    """A file with bytes but no whole record: keep its findings only if they can be the layout's.

    It was found where the layout keeps journals; it stays a journal (a power cut at birth, a
    cut-off first record) when its bytes are NUL or open a record the layout's writers would
    write.  Anything else (text, another tool's cut-off record) is one ``unknown-format``.
    """
    handle.seek(0)
    if classifier.layout.partial_ok(handle.read(4096)):
        return tail_state
    sink = classifier.sink
    sink.items.clear()
    sink.counts.clear()
    classifier.foreign = "a file that is not JSONL"
    sink.add("unknown-format", "not JSONL: holds no whole JSON record, and its bytes do not open a record of "
             f"{classifier.layout.describes}; levelsess leaves it alone", None, 0)
    return TailState.HELD


def iter_records(path: Path, layout: BaseLayout | str = "levelcode") -> Iterator[tuple[int, int, dict]]:
    """Yield ``(line, offset, record)`` for each record; raise a CorruptionError on damage.

    A torn tail ends the iteration quietly (it is not an acknowledged record); a whole record
    that only lacks its newline is yielded; a final line holding records among other bytes
    (spliced, CR-separated) raises, like the same damage on a terminated line, and so does a line
    too large to parse (``record-too-large``): a caller never takes the records before it for all.
    """
    probe = _Classifier(path, get_layout(layout), False, None)
    try:
        yield from _records_of(probe, path)
    finally:
        probe.release()


def _records_of(probe: _Classifier, path: Path) -> Iterator[tuple[int, int, dict]]:
    """:func:`iter_records` with its reader made."""
    offset = 0
    with open_journal(path) as handle:
        for item in iter_batches(handle):
            if type(item) is Tail:
                yield from _final_record(probe, item)
                break
            if type(item) is Overlong:  # a line too large to parse (or NUL padding): never a quiet end
                probe.overlong(item, offset)
                raise probe.sink.items[-1].to_error()
            offset = item.offset
            for line in item.lines:
                before = len(probe.sink.items)
                try:
                    probe.feed(Batch(offset, [line]))
                except _Foreign:
                    raise probe.sink.items[-1].to_error() from None
                errors = [f for f in probe.sink.items[before:] if f.severity == "error"]
                if errors:
                    raise errors[0].to_error()
                if line.strip():
                    yield probe.lineno, offset, loads(line[3:] if probe.lineno == 1 and line.startswith(BOM) else line)
                offset += len(line) + 1


def _final_record(probe: _Classifier, item: Tail) -> Iterator[tuple[int, int, dict]]:
    before = len(probe.sink.items)
    try:
        state = probe.tail(item)
    except _Foreign:
        raise probe.sink.items[-1].to_error() from None
    if state is TailState.HELD:
        raise next(f for f in probe.sink.items[before:] if f.severity == "error").to_error()
    if state is TailState.UNTERMINATED and item.data is not None:
        data = item.data[3:] if probe.lineno == 1 and item.data.startswith(BOM) else item.data
        yield probe.lineno, item.offset, loads(data)
