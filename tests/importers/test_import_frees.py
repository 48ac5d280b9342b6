"""What an import read is freed when its session is written, not at the next garbage collection
(issue 27): no reference cycle holds a session, its transcript or its records.  A cycle kept
each group's parsed lines alive until a collection, and a collection then walked them: an eighth
of a Claude Code import's time went to the collector."""

from __future__ import annotations

import gc
import random
import shutil

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
    return sorted({f"{t.__module__}.{t.__qualname__}" for t in kept if t.__module__.startswith("toolkit.importers")})


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
