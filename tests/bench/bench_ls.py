"""ls benchmark (issue 7): 10,000 sessions listed from fresh indexes, and from the journals;
plus ``ls --grep`` over a large journal with its peak RSS.

    python tests/bench/bench_ls.py [--sessions 10000] [--projects 100] [--grep-mb 300]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_reindex import build  # noqa: E402 - a sibling script
from probe import PROBE  # noqa: E402


def cli(args: list[str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "toolkit.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - start, proc.stdout


def in_process(store: Path, verify: bool) -> float:
    from toolkit.sessions import list_sessions

    start = time.perf_counter()
    rows = list_sessions([store], verify=verify)
    assert rows
    return time.perf_counter() - start


def big_journal(path: Path, megabytes: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 200
    with open(path, "wb") as handle:
        handle.write(orjson.dumps({"kind": "meta", "v": 2, "id": path.stem, "project": "/p", "createdAt": "2026-11-30T09:00:00Z"}) + b"\n")
        seq, written = 0, 0
        while written < megabytes << 20:
            seq += 1
            line = orjson.dumps({"kind": "assistant", "t": "2026-11-30T09:00:00Z", "content": [{"type": "text", "text": text}], "seq": seq}) + b"\n"
            handle.write(line)
            written += len(line)
        handle.write(orjson.dumps({"kind": "user", "t": "2026-11-30T10:00:00Z", "content": "the needle is here", "seq": seq + 1}) + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--grep-mb", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="levelsess-bench-ls-") as tmp:
        store = Path(tmp) / "store"
        build(store, args.sessions, args.projects)
        cli(["reindex", "--store", str(store)])
        cli(["ls", "--store", str(store), "--json", "--limit", "0"])  # warm the page cache
        fresh = min(cli(["ls", "--store", str(store), "--json", "--limit", "0"])[0] for _ in range(3))
        fresh_in = min(in_process(store, False) for _ in range(3))
        scanned = min(cli(["ls", "--store", str(store), "--json", "--limit", "0", "--verify"])[0] for _ in range(2))
        scanned_in = min(in_process(store, True) for _ in range(2))
        grep_all = cli(["ls", "--store", str(store), "--json", "--limit", "0", "--grep", "question 3"])[0]
        print(f"{args.sessions} sessions in {args.projects} projects")
        print(f"  ls, fresh index:   CLI {fresh:.2f} s   in-process {fresh_in:.2f} s")
        print(f"  ls --verify:       CLI {scanned:.2f} s   in-process {scanned_in:.2f} s (every journal read)")
        print(f"  ls --grep (all):   CLI {grep_all:.2f} s")
        big = Path(tmp) / "big" / "-p" / "2026-11-30T09-00-00-huge.jsonl"
        big_journal(big, args.grep_mb)
        peak_file = Path(tmp) / "peak"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROBE, str(peak_file), "ls", "--json", "--grep", "NEEDLE IS", str(big.parent)],
                              capture_output=True, check=True)
        took = time.perf_counter() - start
        hits = orjson.loads(proc.stdout)["sessions"]
        peak = int(peak_file.read_text()) / 2**20
        print(f"  ls --grep over one {big.stat().st_size / 1e6:.0f} MB journal: {took:.2f} s, peak RSS {peak:.0f} MiB, {len(hits)} hit(s)")


if __name__ == "__main__":
    main()
