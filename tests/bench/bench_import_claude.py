#!/usr/bin/env python
"""`import --from claude` of a Claude Code-shaped tree (issue 13) - a standalone script, not a pytest test.

    python tests/bench/bench_import_claude.py [--size-mb 1000] [--out DIR] [--repeat 1] [--json]

Builds (or reuses, with --out) a ``projects/`` tree of about SIZE MB from the real anonymised
Claude Code fixtures, as tests/bench/bench_claude.py does (whole transcripts with their
subagents, each under a new project folder and session id), warms the page cache, then
measures in one run:

  bare       read each file whole, split on b"\\n", orjson.loads every line (the ceiling)
  import     `levelsess import --from claude --source TREE --store EMPTY --json` as a subprocess
             under tests/bench/probe.py's PROBE: wall time (start-up included) and peak RSS
  re-import  the same command on that store: nothing new, nothing written (it reads every file,
             and keeps what it saw: toolkit/importers/unchanged.py)
  unchanged  the same command again: no file changed, so none is read (issue 27)
  fsck       `levelsess fsck --json TREE` (its automatic --jobs), under the same probe

and prints each next to the bare parse as a ratio, with MB/s (MB is 10**6 bytes), then the first
import next to fsck of the same tree (issue 27: at most 4x its time, and no more memory: peak RSS
of the process and of its largest worker, < 150 MiB).  ``--jobs N`` is passed to the imports.  Target
(issue 13): bounded memory, < 200 MiB peak, whatever the tree's size.  It also checks the
result: every session created, then every one unchanged.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_claude import build  # noqa: E402
from bench_fsck import MB, MIB, bare, journals, warm  # noqa: E402
from probe import PROBE, timed as _timed  # noqa: E402


def probed(*args: str) -> tuple[float, float, dict]:
    """(wall seconds, peak RSS MiB of the process or its largest worker, the --json report) of
    ``levelsess ARGS`` under the probe."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "rss"
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROBE, str(report), *args], capture_output=True)
        wall = time.perf_counter() - started
        if proc.returncode not in (0, 4):
            raise SystemExit(f"{args[0]} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
        children = Path(f"{report}.children")
        peak = max(int(report.read_text()), int(children.read_text()) if children.exists() else 0)
        return wall, peak / MIB, json.loads(proc.stdout)


JOBS: list[str] = []


def run_import(tree: Path, store: Path) -> tuple[float, float, dict]:
    """(wall seconds, peak RSS MiB, the --json report) of one import under the probe."""
    return probed("import", "--from", "claude", "--source", str(tree), "--store", str(store), "--json", *JOBS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="build the tree here and keep it (reused when it exists)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--jobs", type=int, help="import --jobs N (default: its automatic choice)")
    args = parser.parse_args(argv)
    JOBS[:] = ["--jobs", str(args.jobs)] if args.jobs is not None else []
    temp = Path(tempfile.mkdtemp(prefix="levelsess-bench-import-claude-"))
    root = args.out or temp
    tree = root / "projects"
    try:
        if not tree.is_dir():
            build(tree, args.size_mb)
        files = journals(tree)
        size = warm(files)
        base = min(_timed(lambda: bare(files)) for _ in range(max(1, args.repeat)))
        best = None
        for n in range(max(1, args.repeat)):
            store = temp / f"store-{n}"
            wall, rss, report = run_import(tree, store)
            assert {s["status"] for s in report["sessions"]} == {"created"}, "a first import creates every session"
            if best is None or wall < best[0]:
                best = (wall, rss, report, store)
        wall, rss, report, store = best
        fsck, fsck_rss = min(probed("fsck", "--json", str(tree))[:2] for _ in range(max(1, args.repeat)))
        again, again_rss, second = run_import(tree, store)
        assert {s["status"] for s in second["sessions"]} == {"unchanged"}, "a re-import finds nothing new"
        cached, cached_rss, third = run_import(tree, store)  # issue 27: the settled run is kept, nothing read
        assert third["from_cache"] == len(third["sessions"]) and third["read"] == 0, "an unchanged tree is not read"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "toolkit.cli", "--version"], capture_output=True, check=True)
        startup = time.perf_counter() - started
        written = sum(p.stat().st_size for p in store.rglob("*.jsonl"))
        doc = {"bytes": size, "files": len(files), "sessions": len(report["sessions"]), "written_bytes": written, "results": [
            {"name": "bare", "seconds": round(base, 3), "mb_per_s": round(size / MB / base, 1), "vs_bare": 1.0, "rss_mib": None},
            {"name": "import", "seconds": round(wall, 3), "mb_per_s": round(size / MB / wall, 1), "vs_bare": round(base / wall, 2),
             "rss_mib": round(rss, 1)},
            {"name": "re-import", "seconds": round(again, 3), "mb_per_s": round(size / MB / again, 1),
             "vs_bare": round(base / again, 2), "rss_mib": round(again_rss, 1)},
            {"name": "unchanged", "seconds": round(cached, 3), "mb_per_s": round(size / MB / cached, 1),
             "vs_bare": round(base / cached, 2), "rss_mib": round(cached_rss, 1)}],
            "fsck": {"seconds": round(fsck, 3), "rss_mib": round(fsck_rss, 1)},
            "import_vs_fsck": {"time": round(wall / fsck, 2), "rss": round(rss / fsck_rss, 2)},
            "startup_seconds": round(startup, 3),
            "unchanged_vs_import_net_of_startup": round((wall - startup) / max(cached - startup, 1e-3), 1)}
        if args.json:
            print(json.dumps(doc, indent=2))
        else:
            print(f"Claude Code-shaped tree: {len(files)} files, {size / MB:,.0f} MB -> {doc['sessions']} sessions, "
                  f"{written / MB:,.0f} MB of journals")
            for r in doc["results"]:
                rss = f"  peak RSS {r['rss_mib']} MiB" if r["rss_mib"] is not None else ""
                print(f"  {r['name']:<9} {r['seconds']:>7.2f} s  {r['mb_per_s']:>7.1f} MB/s  {r['vs_bare']:.2f}x bare{rss}")
            first = doc["results"][1]
            print(f"  first import {first['seconds']:.2f} s vs fsck {fsck:.2f} s of the same tree: {first['seconds'] / fsck:.2f}x "
                  f"its time (target <= 4x, issue 27); peak RSS {first['rss_mib']} vs {fsck_rss:.1f} MiB (largest process; "
                  "target < 150 MiB)")
            print(f"  an unchanged tree re-imported: {doc['unchanged_vs_import_net_of_startup']}x faster than the first "
                  f"import, net of start-up ({startup:.2f} s; target >= 50x, issue 27)")
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
