"""``fsck --salvage``: rebuild a damaged journal from byte-exact slices of itself.

Whole valid records are kept, spliced records are split at their boundary, NUL runs and
garbage are cut out.  The original is kept (hard link or copy) under
``<store>/.levelsess/quarantine/<stamp>/`` with the rejected bytes and a map of where they
came from; the new journal replaces the original atomically only after it re-checks clean
of line damage.  Nothing is re-serialised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .. import durable
from ..encode import dumps
from ..errors import LevelsessError, SalvageRefusedError
from ..journal import BOM, JournalScan, scan_journal
from ..layouts import BaseLayout as Layout
from ..lines import CHUNK, BeyondLimits, Batch, Overlong, Tail, iter_batches, loads, split_line
from ..locks import process_start

#: Quarantine files a salvage puts in place before it replaces the journal (see _rewrite).
_UNFINISHED = (".rejected", ".rejected.map.json")
LINE_DAMAGE = {"invalid-json", "invalid-record", "spliced-records", "nul-padding", "torn-tail", "unterminated-tail"}
#: Findings on a line that may be a whole record, which salvage therefore never removes: it leaves
#: a journal holding one exactly as it is (principle 8), and says why in these words.
MAY_BE_A_RECORD = {
    "record-too-large": "a line too large for levelsess to parse here",
    "too-deep": "a line nested too deeply (or holding too long a number) to parse",
    "invalid-record": "a line that is valid JSON but not a record of the layout",
}


def _refuse(offset: int, what: str) -> SalvageRefusedError:
    return SalvageRefusedError(f"byte {offset} starts {what}: it may be a whole record, and salvage never removes one, "
                               "so the journal was left exactly as it is; it needs a person")


def _pieces(line: bytes, offset: int, is_record, key: str) -> Iterator[tuple[str, int, bytes]]:
    """Yield ('keep'|'reject', original offset, bytes) for one line's content."""
    if not line.strip():
        return
    try:
        obj = loads(line)
    except BeyondLimits:
        raise _refuse(offset, MAY_BE_A_RECORD["too-deep"]) from None
    except ValueError:
        obj = None
    if type(obj) is dict and (isinstance(obj.get(key), str) or is_record(obj)):  # a whole line: a record as the reader counts one
        yield "keep", offset, line
        return
    if obj is not None:  # JSON, but not a record: not proven garbage either
        raise _refuse(offset, MAY_BE_A_RECORD["invalid-record"])
    for piece in split_line(line, is_record):
        kind = "keep" if piece.kind == "record" else "reject"
        yield kind, offset + piece.start, line[piece.start : piece.end]


def _record_test(layout: Layout, line: bytes):
    try:
        return layout.record_test(loads(line))
    except (ValueError, BeyondLimits):  # not a whole record: the file's own era is not known from it
        return layout.is_record


def _overlong(item: Overlong, offset: int) -> Iterator[tuple[str, int, bytes]]:
    """A line longer than the reader holds: NUL bytes alone are rejected, in pieces, without
    holding them; anything else may be a record too large to parse here, so salvage stops."""
    if not item.all_nul:
        raise _refuse(offset, MAY_BE_A_RECORD["record-too-large"] + f" ({item.length:,} bytes)")
    for start in range(0, item.length, CHUNK):
        yield "reject", offset + start, b"\0" * min(CHUNK, item.length - start)


def _iter_salvage(handle, layout: Layout) -> Iterator[tuple[str, int, bytes]]:
    """Yield ('keep'|'reject', offset, bytes) for every piece of the journal read from ``handle``."""
    is_record = layout.is_record
    first = first_line = True
    offset = 0
    for item in iter_batches(handle):
        if type(item) is Batch:
            offset = item.offset
            for line in item.lines:
                start = offset
                offset += len(line) + 1
                if first and line.startswith(BOM):
                    line, start = line[3:], start + 3
                first = False
                if line.endswith(b"\r"):
                    line = line[:-1]
                if first_line:  # the file's first record says its era (Codex has two)
                    is_record, first_line = _record_test(layout, line), False
                yield from _pieces(line, start, is_record, layout.key)
        elif type(item) is Tail:
            if item.overlong is not None:
                yield from _overlong(item.overlong, item.offset)
            elif item.data:
                yield from _pieces(item.data, item.offset, is_record, layout.key)
        else:
            first = False
            yield from _overlong(item, offset)
            offset += item.length + 1


def salvage_journal(scan: JournalScan, quarantine_root: Path, label: str) -> Path:
    """Replace ``scan.path`` with its salvageable records; return the quarantine folder.

    The quarantine folder is ``<root>/<stamp>/<label>/`` (``label`` names the session's folder,
    since Logician journals are all called messages.jsonl).  Refused, with the journal left exactly
    as it was and no quarantine copy, when it would keep no record, fewer records than the
    original holds whole, or nothing would change.
    """
    path = scan.path
    if not scan.identified or scan.records == 0:
        raise SalvageRefusedError(f"{path} holds no whole record of {scan.layout.value}; a rewrite would empty it")
    stamp = quarantine_root / durable.utc_stamp()
    quarantine = stamp / label
    tidy_quarantine(quarantine_root)
    created = durable.ensure_dir(quarantine)
    jobs: list = []
    try:
        _rewrite(scan, quarantine, jobs)
    except BaseException:  # refused, changed, a full disk, Ctrl-C: unless the journal was replaced,
        if not (jobs and jobs[0].replaced):  # what this call made goes (the journal is as it was): no copy, no folder
            with contextlib.suppress(LevelsessError):
                durable.remove(stamp, tree=True)
            durable.remove_new_dirs(created)
        raise
    return quarantine


def _rewrite(scan: JournalScan, quarantine: Path, jobs: list) -> None:
    """Write the new journal from the bytes the check read and, beside the original's copy, the
    rejected bytes and their map; the new journal replaces the original only if it is still that
    file (bytes appended since are carried over: :func:`durable.rewriting`).

    Every quarantine file is in place before the journal is replaced, so a salvage killed before
    that leaves only copies of bytes the journal still holds, and its temp files, which the next
    salvage tidies (:func:`tidy_quarantine`)."""
    path = scan.path
    rejected_map, kept = [], 0
    with durable.rewriting(path, scan.size, keep_original=quarantine / path.name,
                           before_replace=lambda temp: _verify(temp, scan.layout)) as job:
        jobs.append(job)
        out = job.out
        with durable.atomic_writer(quarantine / f"{path.name}.rejected") as rejected:
            for verdict, offset, data in _iter_salvage(job.source, scan.layout):
                if verdict == "keep":
                    out.write(data + b"\n")
                    kept += 1
                else:
                    rejected.write(data)
                    rejected_map.append({"offset": offset, "length": len(data)})
            out.flush()
            if kept < scan.records:
                raise SalvageRefusedError(f"{path}: the rewrite would keep {kept} of the {scan.records} whole records it holds")
            if not rejected_map and _same_bytes(out.name, job.source, scan.size):
                raise SalvageRefusedError(f"{path}: nothing to cut; a rewrite would change nothing")
        durable.atomic_write(quarantine / f"{path.name}.rejected.map.json",
                             dumps({"source": str(path), "pieces": rejected_map}, indent=True))  # (a path need not be UTF-8)
    if job.carried:  # lines appended while it was rewritten: they are in the new journal too
        durable.atomic_write(quarantine / f"{path.name}.rejected.map.json", dumps(
            {"source": str(path), "pieces": rejected_map, "carried_over": job.carried}, indent=True))


def _same_bytes(candidate: str, source, size: int) -> bool:
    """True when the file ``candidate`` holds exactly the source's first ``size`` bytes."""
    if os.path.getsize(candidate) != size:
        return False
    source.seek(0)
    with open(candidate, "rb") as handle:
        while chunk := handle.read(1 << 20):
            if source.read(len(chunk)) != chunk:
                return False
    return True


def _verify(candidate: Path, layout: Layout) -> None:
    """The rebuilt journal must be free of line damage before it replaces the original."""
    check = scan_journal(candidate, layout)
    bad = [f for f in check.findings if f.code in LINE_DAMAGE]
    if bad:
        raise SalvageRefusedError(f"the rewrite would still have {bad[0].code} at line {bad[0].line}; the journal was left as it was")


def tidy_quarantine(root: Path) -> None:
    """Tidy what salvages (or relinks) killed mid-write left under ``root``: their temp files
    (their process is gone), and the folders that held nothing else.

    A dead temp of the rejected bytes or of their map proves its salvage never replaced the
    journal (both are in place before that), so everything beside it is a copy of bytes the
    journal still holds: that folder goes whole."""
    for label in sorted(root.glob("*/*")):
        if label.is_symlink() or label.parent.is_symlink():  # never followed out of the quarantine
            continue
        try:
            dead = [name for name in os.listdir(label)
                    if (pid := durable.temp_owner(name)) is not None and process_start(pid) is None]
        except OSError:  # not a folder, or unreadable: not ours to tidy
            continue
        if any(name[1:-4].rpartition(".")[0].endswith(_UNFINISHED) for name in dead):
            durable.remove(label, tree=True)
        for name in dead:
            durable.remove(label / name)
        if dead:
            durable.remove_new_dirs([label.parent, label])  # each only while empty
