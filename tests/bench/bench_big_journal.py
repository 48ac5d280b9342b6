#!/usr/bin/env python
"""One huge journal of big records (issue 16) - a standalone script, not a pytest test.

    python tests/bench/bench_big_journal.py [--size-mb 500] [--out DIR] [--repeat 2] [--json]

Builds (seeded) one LevelCode v2 journal of about SIZE MB whose records are 100 KB to 3 MB
(assistant replies with long text and tool results, the shape that made 500 MB journals peak at
119 MiB), warms the page cache, then measures in one run:

  bare    read the file line by line and orjson.loads every line (streaming: the ceiling a
          reader with flat memory can reach)
  fsck    `levelsess fsck --json FILE` as a subprocess under tests/bench/probe.py's PROBE:
          wall time (start-up included) and peak RSS (VmHWM)

and prints fsck next to the bare parse as a ratio (target: >= 0.8x, < 100 MiB).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fsck import MB, MIB  # noqa: E402
from probe import PROBE, timed as _timed  # noqa: E402


def build(path: Path, size_mb: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    words = [("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))) for _ in range(4000)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(orjson.dumps({"kind": "meta", "v": 2, "id": "2026-11-30T09-00-00-big1", "project": "/p",
                                "createdAt": "2026-11-30T09:00:00Z", "title": "big"}) + b"\n")
        seq, total = 0, 0
        while total < size_mb * MB:
            seq += 1
            size = int(min(3_000_000, max(100_000, rng.lognormvariate(11.8, 0.8))))
            text = " ".join(rng.choice(words) for _ in range(size // 6))[:size]
            record = {"kind": "assistant", "t": "2026-11-30T09:00:01Z", "seq": seq, "model": "m",
                      "content": [{"type": "text", "text": text[: size // 2]},
                                  {"type": "tool_result", "tool_use_id": f"t{seq}", "content": text[size // 2:]}]}
            line = orjson.dumps(record) + b"\n"
            out.write(line)
            total += len(line)
    return path.stat().st_size


def bare(path: Path) -> int:
    loads, records = orjson.loads, 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                loads(line)
                records += 1
    return records


def fsck(path: Path) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "rss"
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROBE, str(report), "fsck", "--json", str(path)], capture_output=True)
        wall = time.perf_counter() - started
        return wall, int(report.read_text()) / MIB, proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=500)
    parser.add_argument("--out", type=Path, help="build the journal here and keep it (reused when it exists)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    temp = Path(tempfile.mkdtemp(prefix="levelsess-bench-big-"))
    path = (args.out or temp) / "store" / "-p" / "2026-11-30T09-00-00-big1.jsonl"
    try:
        size = path.stat().st_size if path.exists() else build(path, args.size_mb)
        bare(path)  # warm the page cache
        base = min(_timed(lambda: bare(path)) for _ in range(args.repeat))
        runs = [fsck(path) for _ in range(args.repeat)]
        wall = min(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        doc = {"bytes": size, "bare_s": round(base, 3), "fsck_s": round(wall, 3), "vs_bare": round(base / wall, 2),
               "bare_mb_s": round(size / MB / base, 1), "fsck_mb_s": round(size / MB / wall, 1), "fsck_rss_mib": round(rss, 1),
               "exit": runs[0][2]}
        if args.json:
            print(json.dumps(doc, indent=2))
        else:
            print(f"one journal, {size / MB:,.0f} MB of 100 KB - 3 MB records")
            print(f"  bare   {base:7.2f} s  {doc['bare_mb_s']:7.1f} MB/s  1.00x")
            print(f"  fsck   {wall:7.2f} s  {doc['fsck_mb_s']:7.1f} MB/s  {doc['vs_bare']:.2f}x bare  peak RSS {doc['fsck_rss_mib']} MiB"
                  f"  (exit {doc['exit']})")
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
