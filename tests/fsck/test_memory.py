"""fsck streams: peak memory stays flat (< 100 MiB) on a ~500 MB journal (DESIGN.md §8).

The journal is built fast: a ~1 MB block of realistic v1 records (no seq to renumber) is
made once and written 500 times, then a torn final record is appended.  The CLI runs in a
child process under a tiny probe that reports the child's own peak RSS at exit.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.bench.probe import PROBE

MIB = 1 << 20
RSS_LIMIT = 100 * MIB
BLOCKS = 500
FREE_NEEDED = 2 << 30
TORN = b'{"kind":"assistant","t":"2026-11-30T23:59:59Z","content":[{"type":"text","text":"half a rec'



def _block(rng: random.Random, size: int = 1 << 20) -> bytes:
    """About ``size`` bytes of whole v1 records: user, assistant, agent (with tool results), events."""
    words = ("refund payment journal fsync rename torn tail record parse the of and to is "
             "café Zürich 日本語 修复 ошибка 🚀 ✅ → def return \"quoted\" C:\\path\\x\n\tindent").split(" ")

    def text(low: int, high: int) -> str:
        return " ".join(rng.choices(words, k=rng.randint(low, high) // 6))

    lines, total, n = [], 0, 0
    while total < size:
        n += 1
        t = f"2026-11-30T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z"
        roll = rng.random()
        if roll < 0.3:
            record = {"kind": "user", "t": t, "content": text(100, 2000), "contextFiles": ["app/models/refund.rb"]}
        elif roll < 0.65:
            record = {"kind": "assistant", "t": t, "model": "claude-sonnet-4-5",
                      "content": [{"type": "text", "text": text(200, 20_000)},
                                  {"type": "tool_use", "id": f"toolu_{n:08d}", "name": "edit_file",
                                   "input": {"target_file": "app/x.rb", "code_edit": text(100, 3000)}}]}
        elif roll < 0.95:
            big = rng.random() < 0.02
            record = {"kind": "agent", "t": t, "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{n:08d}", "name": "read_file",
                                                   "input": {"target_file": "app/y.rb"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:08d}",
                                              "content": text(100_000, 300_000) if big else text(200, 8000)}]}]}
        else:
            record = {"kind": "event", "t": t, "type": rng.choice(["checkpoint", "reload", "pin", "unpin"])}
        line = orjson.dumps(record) + b"\n"
        lines.append(line)
        total += len(line)
    return b"".join(lines)


def _build(path: Path) -> tuple[int, int]:
    """Write the big journal; return (records, offset of the torn tail)."""
    rng = random.Random(500)
    meta = {"kind": "meta", "v": 1, "id": "2026-11-30T00-00-00-big1", "project": "/home/ada/code/big",
            "createdAt": "2026-11-30T00:00:00Z", "title": None}
    block = _block(rng)
    path.parent.mkdir(parents=True)
    with open(path, "wb") as handle:
        handle.write(orjson.dumps(meta) + b"\n")
        for _ in range(BLOCKS):
            handle.write(block)
        body_end = handle.tell()
        handle.write(TORN)
    return 1 + BLOCKS * block.count(b"\n"), body_end


def _levelsess(tmp_path: Path, *args: str) -> tuple[int, dict, int, float]:
    """Run the CLI under PROBE; return (exit code, JSON report, peak RSS bytes, seconds)."""
    report = tmp_path / f"rss-{len(list(tmp_path.glob('rss-*')))}"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, str(report), *args], capture_output=True, timeout=300)
    seconds = time.perf_counter() - started
    assert proc.stdout.startswith(b"{"), f"levelsess {' '.join(args)} printed no JSON (exit {proc.returncode}):\n{proc.stderr.decode(errors='replace')[-3000:]}"
    return proc.returncode, orjson.loads(proc.stdout), int(report.read_text()), seconds


@pytest.mark.slow
def test_fsck_memory_is_flat_on_a_500_mb_journal(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    if free < FREE_NEEDED:
        pytest.skip(f"needs 2 GiB free in {tmp_path} for a 500 MB journal, only {free >> 20} MiB free")
    journal = tmp_path / "store" / "-home-ada-code-big" / "2026-11-30T00-00-00-big1.jsonl"
    try:
        started = time.perf_counter()
        records, body_end = _build(journal)
        size = journal.stat().st_size
        built = time.perf_counter() - started
        assert size > 480 * 10**6

        code, doc, rss, check_s = _levelsess(tmp_path, "fsck", "--json", str(journal))
        errors = [f for f in doc["findings"] if f["severity"] == "error"]
        assert code == 4, doc
        assert [f["code"] for f in errors] == ["torn-tail"], errors
        assert errors[0]["offset"] == body_end and errors[0]["line"] == records + 1
        assert {f["code"] for f in doc["findings"]} <= {"torn-tail", "oversize"}, doc["findings"]
        assert doc["records"] == records and doc["bytes"] == size
        assert journal.stat().st_size == size  # a check writes nothing
        assert rss < RSS_LIMIT, f"fsck peak RSS {rss / MIB:.1f} MiB on a {size / MIB:.0f} MiB journal"

        code, doc, repair_rss, repair_s = _levelsess(tmp_path, "fsck", "--json", "--repair", str(journal))
        torn = [f for f in doc["findings"] if f["code"] == "torn-tail"]
        assert code == 1, doc
        assert len(torn) == 1 and torn[0]["repaired"], doc["findings"]
        assert not [f for f in doc["findings"] if f["severity"] == "error" and not f["repaired"]]
        assert journal.stat().st_size == body_end
        recovered = [p for p in (tmp_path / "store" / ".levelsess" / "recovered").rglob("*") if p.is_file()]
        assert [p.read_bytes() for p in recovered] == [TORN]
        assert repair_rss < RSS_LIMIT, f"fsck --repair peak RSS {repair_rss / MIB:.1f} MiB on a {size / MIB:.0f} MiB journal"
        print(f"\n{size / 10**6:.0f} MB journal built in {built:.1f}s; fsck: {check_s:.1f}s, peak RSS {rss / MIB:.1f} MiB; "
              f"fsck --repair: {repair_s:.1f}s, peak RSS {repair_rss / MIB:.1f} MiB")
    finally:
        shutil.rmtree(tmp_path / "store", ignore_errors=True)  # do not leave 500 MB in the pytest basetemp
