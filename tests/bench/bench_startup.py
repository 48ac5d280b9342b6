#!/usr/bin/env python
"""Start-up benchmark (DESIGN.md §8) - a standalone script, not a pytest test.

    python tests/bench/bench_startup.py [--repeat 9]

Times, best of N, in one run: `python -c "import typer"` (the baseline), `levelsess --version`,
`levelsess fsck --help` and `levelsess fsck` of a one-journal store, and prints each as a ratio
to the baseline (target: ≤ 1.6x).  `python -X importtime -m toolkit.cli …` shows where the rest goes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def best(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    cli = str(Path(sys.executable).with_name("levelsess"))
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "store" / "-p"
        project.mkdir(parents=True)
        (project / "a.jsonl").write_text('{"kind":"meta","v":2,"id":"a","project":"/p","createdAt":"2026-11-30T09:00:00Z"}\n')
        base = best([sys.executable, "-c", "import typer"], args.repeat)
        print(f"python -c 'import typer'   {base * 1000:6.0f} ms   1.00x")
        for label, extra in (("levelsess --version", ["--version"]), ("levelsess fsck --help", ["fsck", "--help"]),
                             ("levelsess fsck (1 journal)", ["fsck", str(project.parent)])):
            took = best([cli, *extra], args.repeat)
            print(f"{label:<26} {took * 1000:6.0f} ms   {took / base:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
