"""``fsck --salvage``: rebuild a damaged journal from byte-exact slices of itself.

Whole valid records are kept, spliced records are split at their boundary, NUL runs and
garbage are cut out.  The original is kept (hard link or copy) under
``<store>/.levelsess/quarantine/<stamp>/`` with the rejected bytes and a map of where they
came from; the new journal replaces the original atomically only after it re-checks clean
of line damage.  Nothing is re-serialised.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
from collections.abc import Iterator
from pathlib import Path

import orjson

from .. import durable
from ..errors import LevelsessError, SalvageRefusedError
from ..journal import BOM, JournalScan, open_journal, scan_journal
from ..layouts import BaseLayout as Layout
from ..lines import Batch, Tail, iter_batches, loads, split_line
from ..locks import process_start

#: Quarantine files a salvage puts in place before it replaces the journal (see _rewrite).
_UNFINISHED = (".rejected", ".rejected.map.json")
LINE_DAMAGE = {"invalid-json", "invalid-record", "spliced-records", "nul-padding", "torn-tail", "unterminated-tail"}


def _pieces(line: bytes, offset: int, is_record, key: str) -> Iterator[tuple[str, int, bytes]]:
    """Yield ('keep'|'reject', original offset, bytes) for one line's content."""
    if not line.strip():
        return
    try:
        obj = loads(line)
    except ValueError:
        obj = None
    if type(obj) is dict and isinstance(obj.get(key), str):  # a whole line: a record as the reader counts one
        yield "keep", offset, line
        return
    if obj is not None:  # JSON, but not a record
        yield "reject", offset, line
        return
    for piece in split_line(line, is_record):
        kind = "keep" if piece.kind == "record" else "reject"
        yield kind, offset + piece.start, line[piece.start : piece.end]


def _iter_salvage(path: Path, layout: Layout) -> Iterator[tuple[str, int, bytes]]:
    is_record = layout.is_record
    first = True
    with open_journal(path) as handle:
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
                    yield from _pieces(line, start, is_record, layout.key)
            elif type(item) is Tail:
                if item.data:
                    yield from _pieces(item.data, item.offset, is_record, layout.key)
            else:  # an overlong line: too big to hold, so it is left in the quarantined original
                yield "reject", -1, b""


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
    replacing: list[bool] = []
    try:
        _rewrite(scan, quarantine, replacing)
    except BaseException:  # refused, a full disk, Ctrl-C: unless the journal may have been replaced,
        if not replacing:  # what this call made goes (the journal is as it was): no copy, no folder
            with contextlib.suppress(LevelsessError):
                durable.remove(stamp, tree=True)
            durable.remove_new_dirs(created)
        raise
    return quarantine


def _rewrite(scan: JournalScan, quarantine: Path, replacing: list[bool]) -> None:
    """Write the new journal and, beside the original's copy, the rejected bytes and their map.

    Every quarantine file is in place before the journal is replaced, so a salvage killed before
    that leaves only copies of bytes the journal still holds, and its temp files, which the next
    salvage tidies (:func:`tidy_quarantine`)."""
    path = scan.path
    rejected_map, kept = [], 0
    with durable.atomic_writer(path, before_replace=lambda _temp: replacing.append(True)) as out:
        with durable.atomic_writer(quarantine / f"{path.name}.rejected") as rejected:
            for verdict, offset, data in _iter_salvage(path, scan.layout):
                if verdict == "keep":
                    out.write(data + b"\n")
                    kept += 1
                else:
                    rejected.write(data)
                    rejected_map.append({"offset": offset, "length": len(data)})
            out.flush()
            if kept < scan.records:
                raise SalvageRefusedError(f"{path}: the rewrite would keep {kept} of the {scan.records} whole records it holds")
            if not rejected_map and filecmp.cmp(out.name, path, shallow=False):
                raise SalvageRefusedError(f"{path}: nothing to cut; a rewrite would change nothing")
            _verify(Path(out.name), scan.layout)
            durable.preserve(path, quarantine / path.name)  # the original, before it is replaced
        durable.atomic_write(quarantine / f"{path.name}.rejected.map.json",
                             orjson.dumps({"source": str(path), "pieces": rejected_map}, option=orjson.OPT_INDENT_2))


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
