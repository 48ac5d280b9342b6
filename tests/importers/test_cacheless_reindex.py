"""An import into a kept store whose memo went with the user's cache folder (issue 27): the
journals of each folder it touched are read again for the index, in forked workers with
``--jobs``, and what it writes is what one process writes."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import orjson
import pytest

import toolkit.forked
from tests.bench.grow import grow_claude, grow_codex
from tests.importers.cursor_db import FIXTURES as SHARED_FIXTURES
from toolkit.fsck.incremental import IncrementalCache
from toolkit.importers import _index_memo, claude, codex, run_import
from toolkit.reindex import _encoded_scans
from toolkit.stores import discover_all

CASES = {"claude": (SHARED_FIXTURES / "claude-code", claude.Options(), grow_claude),
         "codex": (SHARED_FIXTURES / "codex", codex.Options(), grow_codex)}


def _indexes(store: Path) -> dict[str, dict]:
    found = {}
    for index in sorted(store.rglob("index.json")):
        value = orjson.loads(index.read_bytes().replace(str(store).encode(), b"STORE"))
        value.pop("generatedAt")
        found[str(index.relative_to(store))] = value
    return found


def _journals(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*.jsonl")) if ".levelsess" not in p.parts}


def _fullest_folder(store: Path) -> Path:
    folders = [path for path in store.iterdir() if path.is_dir() and not path.name.startswith(".")]
    return max(folders, key=lambda folder: len(list(folder.glob("*.jsonl"))))


def _source_in(fullest: Path) -> Path:
    """The source transcript of a session of this store folder (not a subagent's)."""
    for journal in sorted(fullest.glob("*.jsonl")):
        meta = orjson.loads(journal.read_bytes().split(b"\n", 1)[0])
        if "subagents" not in meta["source"]["path"]:
            return Path(meta["source"]["path"])
    raise AssertionError(f"no session of {fullest} has a transcript of its own")


@pytest.mark.parametrize("app", sorted(CASES))
def test_an_import_after_the_cache_folder_was_cleaned_reads_the_store_in_workers(tmp_path, monkeypatch, app):
    fixtures, options, grow = CASES[app]
    if not fixtures.is_dir():
        pytest.skip("the real fixtures are not here")
    source, stores = tmp_path / "source", {2: tmp_path / "two", 1: tmp_path / "one"}
    shutil.copytree(fixtures, source)
    for jobs, store in stores.items():
        run_import(app, [source], store, options, jobs=jobs)
    rng = random.Random(27)
    grown = _fullest_folder(stores[2])
    grow(_source_in(grown), rng)  # (the folder's other journals: what the memo holds nothing of)
    shutil.rmtree(Path(os.environ["XDG_CACHE_HOME"]) / "levelsess")  # (a cleaned ~/.cache: both stores' memos)

    forks: list = []
    real = toolkit.forked.map_batches
    monkeypatch.setattr(toolkit.forked, "map_batches", lambda fn, *a, **k: (forks.append(fn), real(fn, *a, **k))[1])
    reports = {jobs: run_import(app, [source], store, options, jobs=jobs) for jobs, store in stores.items()}
    assert _encoded_scans in forks, "the store's journals were read in forked workers"
    assert reports[2].read == reports[1].read > 0 and reports[2].resumed == reports[1].resumed == 0
    assert [(o.id, o.status, o.records, o.new_records) for o in reports[2].sessions] == \
           [(o.id, o.status, o.records, o.new_records) for o in reports[1].sessions]
    assert _journals(stores[2]) == _journals(stores[1])
    assert _indexes(stores[2]) == _indexes(stores[1]) != {}
    # the memo holds every journal of the folder as read: the next reindex of it reads none again
    memo = _index_memo()
    assert isinstance(memo, IncrementalCache)
    folder = next(f for f in discover_all([stores[2]]) if f.path.name == grown.name)
    assert len(folder.journals) > 2
    assert all(memo.lookup(folder.path, journal, folder.layout.name) is not None for journal in folder.journals)
