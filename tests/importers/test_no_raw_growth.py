"""`import --no-raw` again after a source grew (found by the Codex resume's helper: the extend of a
journal kept without raw raised TypeError): the journal gets the new records, still without raw,
for every line-based source, from the real fixtures."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from tests.bench.grow import grow_claude, grow_codex
from tests.helpers import run_cli
from tests.importers.cursor_db import FIXTURES

CASES = {"claude": FIXTURES / "claude-code", "codex": FIXTURES / "codex"}


def _grow(app: str, source: Path) -> Path:
    """The largest transcript (rollout) grows by a turn."""
    path = max((p for p in source.rglob("*.jsonl") if p.stat().st_size), key=lambda p: p.stat().st_size)
    (grow_claude if app == "claude" else grow_codex)(path, random.Random(7))
    return path


@pytest.mark.parametrize("app", sorted(CASES))
@pytest.mark.skipif(not all(p.is_dir() for p in CASES.values()), reason="the real fixtures are not here")
def test_a_no_raw_reimport_of_a_grown_source_appends_without_raw(tmp_path, app):
    source, store = tmp_path / "source", tmp_path / "store"
    shutil.copytree(CASES[app], source)
    first = run_cli("import", "--from", app, "--source", source, "--store", store, "--no-raw", "--json")
    assert first.exit_code in (0, 4) and "Traceback" not in first.stdout + first.stderr
    _grow(app, source)
    again = run_cli("import", "--from", app, "--source", source, "--store", store, "--no-raw", "--json")
    assert "Traceback" not in again.stdout + again.stderr, again.stderr
    report = json.loads(again.stdout)
    assert "updated" in {s["status"] for s in report["sessions"]}
    for journal in store.rglob("*.jsonl"):
        assert all("raw" not in json.loads(line) for line in journal.read_bytes().splitlines())
    assert run_cli("fsck", "--store", store).exit_code == 0
