"""tests/bench/bench_import_keep.py runs end to end on a small tree of each app (issue 27): the
benchmark a nightly keep's figures come from keeps working, and what it checks holds through the
command line: a re-import that finds nothing new reads nothing, one after some transcripts grew
resumes them, and its journals are byte for byte those a ``--reread`` writes.  No time is asserted
(the figures are the benchmark's to print)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_import_keep.py"


@pytest.mark.parametrize("app, size, shape, cleaned", [("claude", "3", "fixtures", False), ("claude", "2", "small", False),
                                                       ("codex", "2", "small", False), ("codex", "3", "fixtures", True)])
def test_keep_bench_on_a_small_tree(app: str, size: str, shape: str, cleaned: bool, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--from", app, "--shape", shape, "--size-mb", size, "--repeat", "2",
                           "--out", str(tmp_path / "tree"), "--settle", "0", "--json",  # (no wait for a quiet file system)
                           *(["--cleaned-cache"] if cleaned else [])],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["same_journals_as_reread"] is True and doc["shape"] == shape
    assert doc["grown_files"] >= 1 and doc["grown_bytes"] > 0
    assert doc["grown_report"]["read"] == 0 and doc["grown_report"]["resumed"] >= doc["grown_files"]
    assert [r["name"] for r in doc["results"]] == ["fsck", "import", "unchanged", "grown", "grown --reread",
                                                   *(["cache cleaned"] if cleaned else [])]
    if cleaned:  # every transcript read in full (no import cache), and still the journals a --reread writes
        assert doc["cleaned_report"]["read"] == doc["files"] and doc["cleaned_report"]["resumed"] == 0
    assert all(r["seconds"] > 0 and r["rss_mib"] > 0 for r in doc["results"]) and doc["create_us"] > 0 and doc["waited_seconds"] == 0
    assert len(doc["runs"]["fsck"]) == len(doc["runs"]["import"]) == len(doc["runs"]["grown"]) == 2
