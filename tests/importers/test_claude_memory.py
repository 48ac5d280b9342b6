"""`import --from claude` holds no state per record in memory (issue 28): a 200,000-record
transcript imports, then re-imports, in a child process whose peak RSS stays under 150 MiB
(about 80 MiB here, 60 of them the interpreter, its modules and SQLite's page caches).

The code before held about 3 KiB per record (a 1,000,000-record transcript peaked at 3.4 GB,
this one at about 700 MiB); now per record it keeps a flags byte, a parent index and two memo
bytes in memory, the rest in a temporary database.  The transcript is the benchmark's
(tests/bench/claude_transcript.py: realistic small records, one turn of eight lines after
another, a rewind every seventh turn).  Memory is measured by tests/bench/probe.py (VmHWM).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.bench.claude_transcript import write
from tests.bench.probe import PROBE

MIB = 1 << 20
RECORDS = 200_000
RSS_LIMIT = 150 * MIB


def _import(tmp_path: Path, root: Path, store: Path) -> tuple[dict, int]:
    """Run the import under the probe; return its --json report and its peak RSS in bytes."""
    report = tmp_path / f"rss-{len(list(tmp_path.glob('rss-*')))}"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(report), "import", "--from", "claude", "--source", str(root),
                           "--store", str(store), "--json"], capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    return orjson.loads(proc.stdout), int(report.read_text())


@pytest.mark.slow
def test_a_200k_record_transcript_imports_and_reimports_in_flat_memory(tmp_path):
    root, store = tmp_path / ".claude", tmp_path / "store"
    source = write(root, RECORDS)
    doc, rss = _import(tmp_path, root, store)
    [session] = doc["sessions"]
    assert session["status"] == "created" and session["source_items"] == RECORDS
    assert rss < RSS_LIMIT, f"import of {RECORDS:,} records ({source.stat().st_size / MIB:.0f} MiB): peak RSS {rss / MIB:.1f} MiB"
    doc, again = _import(tmp_path, root, store)
    assert [s["status"] for s in doc["sessions"]] == ["unchanged"]
    # the journal's 200,000 keys add nothing either (held in a dict they would add about 40 MiB)
    assert again < min(RSS_LIMIT, rss + 16 * MIB), f"re-import: peak RSS {again / MIB:.1f} MiB, import {rss / MIB:.1f} MiB"
