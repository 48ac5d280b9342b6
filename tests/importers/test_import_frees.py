"""What an import read is freed when its session is written, not at the next garbage collection
(issue 27): no reference cycle holds a session, its transcript or its records.  A cycle kept
each group's parsed lines alive until a collection, and a collection then walked them: an eighth
of a Claude Code import's time went to the collector."""

from __future__ import annotations

import gc
import os
import random
import shutil
from pathlib import Path

import pytest

from tests.bench.grow import grow_claude, grow_codex
from tests.importers.cursor_db import FIXTURES as SHARED_FIXTURES
from toolkit.errors import LevelsessError
from toolkit.importers import claude, codex, run_import

CASES = {"claude": (SHARED_FIXTURES / "claude-code", claude.Options(), grow_claude),
         "codex": (SHARED_FIXTURES / "codex", codex.Options(), grow_codex)}


def _cyclic_garbage(action) -> list[str]:
    """The importers' objects that only a collection would free after ``action()``."""
    gc.collect()
    gc.disable()
    try:
        action()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        kept = [type(o) for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return sorted({f"{t.__module__}.{t.__qualname__}" for t in kept if t.__module__.startswith("toolkit.")})


@pytest.mark.parametrize("app", sorted(CASES))
def test_an_import_leaves_no_cycle_holding_what_it_read(tmp_path, app):
    fixtures, options, grow = CASES[app]
    if not fixtures.is_dir():
        pytest.skip("the real fixtures are not here")
    source, store = tmp_path / "source", tmp_path / "store"
    shutil.copytree(fixtures, source)
    assert _cyclic_garbage(lambda: run_import(app, [source], store, options)) == []
    # a resumed read (a transcript that grew) frees its sessions as well
    rng = random.Random(27)
    for path in sorted(p for p in source.rglob("*.jsonl") if "subagents" not in p.parts)[:3]:
        grow(path, rng)
    report = None

    def again() -> None:
        nonlocal report
        report = run_import(app, [source], store, options)

    assert _cyclic_garbage(again) == []
    assert report is not None and report.resumed > 0
    # the store kept, the import cache gone (a cleaned ~/.cache): every journal is read again for
    # its folder's index, a journal reader each (a reader's rules point back at it)
    for path in sorted(p for p in source.rglob("*.jsonl") if "subagents" not in p.parts)[:3]:
        grow(path, rng)
    shutil.rmtree(Path(os.environ["XDG_CACHE_HOME"]) / "levelsess")
    assert _cyclic_garbage(again) == []
    assert report is not None and report.read > 0 and report.resumed == 0


def test_a_journal_reader_is_freed_when_its_scan_is_done(tmp_path):
    """Every way a journal is read (a scan, in full or resumed from its checkpoint; a checkpoint made
    lean; its records iterated, or left half-way; its tail judged; the scan its writer feeds) leaves
    no cycle: a folder's reindex reads thousands, and an import collects young garbage seldom (a
    reindex of 733 Codex journals read in full left 52 MiB to the collector)."""
    from toolkit.journal import WrittenScan, iter_records, judge_tail, lean_checkpoint, scan_journal

    fixtures, options, _grow = CASES["codex"]
    if not fixtures.is_dir():
        pytest.skip("the real fixtures are not here")
    store = tmp_path / "store"
    run_import("codex", [fixtures], store, options)
    journals = sorted(p for p in store.rglob("*.jsonl") if ".levelsess" not in p.parts)
    assert journals

    def read_each() -> None:
        for journal in journals:
            scan = scan_journal(journal, "levelcode", checkpoint=True)
            lean_checkpoint(scan.resume_state[0])
            scan_journal(journal, "levelcode", checkpoint=True, resume=scan.resume_state)
            for _ in iter_records(journal):
                pass
            records = iter_records(journal)
            next(records)
            records.close()
            data = journal.read_bytes()
            judge_tail(journal, "levelcode", data[-100:], len(data) - 100)
            fed = WrittenScan(journal)
            for line in data.splitlines(keepends=True):
                fed.line(line[:-1])
            assert fed.scan(journal.stat()) is not None
            unused = WrittenScan(journal)
            unused.line(data.splitlines()[0])
            unused.close()

    assert _cyclic_garbage(read_each) == []


def test_an_import_collects_young_garbage_less_often_and_puts_the_threshold_back(tmp_path):
    from toolkit import importers

    fixtures, options, _grow = CASES["claude"]
    if not fixtures.is_dir():
        pytest.skip("the real fixtures are not here")
    before = gc.get_threshold()
    during = []
    importers.run_import("claude", [fixtures], tmp_path / "store", options, progress=lambda _o: during.append(gc.get_threshold()))
    assert during and all(t[0] == max(before[0], importers.YOUNG_COLLECTION) and t[1:] == before[1:] for t in during)
    assert gc.get_threshold() == before
    with pytest.raises(LevelsessError):  # a run that stops puts it back too
        importers.run_import("claude", [tmp_path / "missing"], tmp_path / "store", options)
    assert gc.get_threshold() == before
