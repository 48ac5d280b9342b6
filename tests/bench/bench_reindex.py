"""reindex benchmark (DESIGN.md §8): 10,000 sessions, first build and unchanged rerun.

    python tests/bench/bench_reindex.py [--sessions 10000] [--projects 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson


def build(root: Path, sessions: int, projects: int) -> None:
    for n in range(sessions):
        project = root / f"-home-ada-code-p{n % projects:03d}"
        project.mkdir(parents=True, exist_ok=True)
        sid = f"2026-11-30T09-00-00-{n:05d}"
        records = [{"kind": "meta", "v": 2, "id": sid, "project": "/p", "createdAt": "2026-11-30T09:00:00Z", "title": None}]
        for turn in range(1, 6):
            records.append({"kind": "user", "t": f"2026-11-30T09:{turn:02d}:00Z", "content": f"question {turn}", "seq": 2 * turn - 1})
            records.append({"kind": "assistant", "t": f"2026-11-30T09:{turn:02d}:30Z", "model": "m",
                            "content": [{"type": "text", "text": "answer " * 40}], "seq": 2 * turn})
        (project / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "toolkit.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=100)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, opts.sessions, opts.projects)
        first = timed(["reindex", str(root)])
        again = timed(["reindex", str(root)])
        full = timed(["reindex", "--full", str(root)])
        check = timed(["reindex", "--check", str(root)])
    print(f"{opts.sessions} sessions in {opts.projects} projects (wall clock, start-up included):")
    print(f"  reindex, first build        {first:6.2f} s")
    print(f"  reindex, unchanged (stat)   {again:6.2f} s   target < 5 s")
    print(f"  reindex --full, unchanged   {full:6.2f} s")
    print(f"  reindex --check             {check:6.2f} s")


if __name__ == "__main__":
    main()
