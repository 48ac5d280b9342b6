#!/usr/bin/env python
"""Start-up benchmark (DESIGN.md §8) - a standalone script, not a pytest test.

    python tests/bench/bench_startup.py [--repeat 9] [--module]

Times, best of N, in one run: `python -c "import typer"` (the baseline), `levelsess --version`,
`levelsess fsck --help` and `levelsess fsck` of a clean one-journal store (its index.json built first), and prints each as a ratio
to the baseline (target: ≤ 1.6x).  `python -X importtime -m toolkit.cli …` shows where the rest goes.

By default it runs the installed `levelsess` console script beside sys.executable.  --module runs
`python -m toolkit.cli` with PYTHONPATH set to the checkout this script is in instead: the way to
time a git worktree whose code is not the installed one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def best(cmd: list[str], repeat: int, env: dict | None = None, cwd: str | None = None) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, env=env, cwd=cwd)
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--module", action="store_true",
                        help="run `python -m toolkit.cli` from this checkout (PYTHONPATH) instead of the installed levelsess")
    args = parser.parse_args(argv)
    env = cwd = None
    if args.module:
        checkout = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (checkout, os.environ.get("PYTHONPATH"))))}
        cli, cwd = [sys.executable, "-m", "toolkit.cli"], checkout  # -m puts the working folder first on sys.path
        print(f"levelsess = python -m toolkit.cli from {checkout}")
    else:
        cli = [str(Path(sys.executable).with_name("levelsess"))]
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "store" / "-p"
        project.mkdir(parents=True)
        (project / "a.jsonl").write_text('{"kind":"meta","v":2,"id":"a","project":"/p","createdAt":"2026-11-30T09:00:00Z"}\n')
        subprocess.run([*cli, "reindex", "-q", str(project.parent)], env=env, cwd=cwd, check=True)  # its index.json: a clean store
        clean = subprocess.run([*cli, "fsck", "--json", str(project.parent)], env=env, cwd=cwd, capture_output=True)
        assert b'"findings": []' in clean.stdout, clean.stdout  # what is timed is a check that finds nothing
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            print("note: PYTHONDONTWRITEBYTECODE is set, so a module without a .pyc is compiled at every start "
                  "(an installed levelsess has them): unset it for the figures a user sees")
        base = best([sys.executable, "-c", "import typer"], args.repeat)
        print(f"python -c 'import typer'   {base * 1000:6.0f} ms   1.00x")
        for label, extra in (("levelsess --version", ["--version"]), ("levelsess fsck --help", ["fsck", "--help"]),
                             ("levelsess fsck (1 journal)", ["fsck", str(project.parent)])):
            best([*cli, *extra], 1, env, cwd)  # warm-up, untimed: page cache and __pycache__
            took = best([*cli, *extra], args.repeat, env, cwd)
            print(f"{label:<26} {took * 1000:6.0f} ms   {took / base:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
