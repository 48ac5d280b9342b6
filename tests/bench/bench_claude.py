#!/usr/bin/env python
"""fsck of a Claude Code-shaped tree (issue 12) - a standalone script, not a pytest test.

    python tests/bench/bench_claude.py [--size-mb 1000] [--out DIR] [--repeat 2] [--json]

Builds a ``projects/`` tree of about SIZE MB from the real (anonymised) Claude Code fixtures in
``../shared/fixtures/claude-code`` — each copy a whole transcript (with its subagents) under a
new project folder and session id, so every file keeps its own graph — warms the page cache,
then measures in one run:

  bare      read each file whole, split on b"\\n", orjson.loads every line (the ceiling)
  check j1  check_folders(discover_all([projects]), jobs=1) in this process
  cli j1    `levelsess fsck --json PROJECTS --jobs 1` as a subprocess (wall time), and its
            peak RSS from one extra run under the probe (tests/bench/probe.py)
  cli j2    the same with --jobs 2 (peak RSS also summed over the worker processes)
  cli       the default fsck (automatic jobs: every core for a tree this size)

and prints each figure next to the bare parse as a ratio (DESIGN.md §8: fsck ≥ 0.8× the bare
parse on this tree, peak memory < 100 MiB).  MB is 10**6 bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fsck import MB, bare, cli_command, in_process, journals, measure, measure_cli, warm  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"
if not FIXTURES.is_dir():  # a worktree elsewhere: the team machine's shared/, as tests/importers/cursor_db.py
    FIXTURES = Path("/work/shared/fixtures/claude-code/projects")


def build(projects: Path, size_mb: int) -> int:
    """Copy whole fixture transcripts (with their subagents) until the tree holds SIZE MB."""
    sessions = sorted(p for p in FIXTURES.glob("*/*.jsonl"))
    if not sessions:
        raise SystemExit(f"no Claude Code fixtures under {FIXTURES}")
    total, copy = 0, 0
    while total < size_mb * MB:
        for source in sessions:
            project = projects / f"-bench-{copy:05d}-{source.parent.name[:40]}"
            project.mkdir(parents=True, exist_ok=True)
            sid = str(uuid.UUID(int=copy * 1000 + sessions.index(source)))
            shutil.copyfile(source, project / f"{sid}.jsonl")
            total += source.stat().st_size
            agents = source.parent / source.stem / "subagents"
            if agents.is_dir():
                (project / sid / "subagents").mkdir(parents=True, exist_ok=True)
                for agent in agents.glob("agent-*.jsonl"):
                    shutil.copyfile(agent, project / sid / "subagents" / agent.name)
                    total += agent.stat().st_size
        copy += 1
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="build the tree here and keep it (reused when it exists)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    temp = None
    if args.out is None:
        temp = Path(tempfile.mkdtemp(prefix="levelsess-bench-claude-"))
        root = temp
    else:
        root = args.out
    projects = root / "projects"
    try:
        if not projects.is_dir():
            build(projects, args.size_mb)
        files = journals(projects)
        size = warm(files)
        results = [
            measure("bare", "read + split + orjson.loads every line", args.repeat, lambda: bare(files)),
            measure("check j1", "check_folders(jobs=1), in process", args.repeat, lambda: in_process(projects, 1)),
            measure_cli("cli j1", "levelsess fsck --json --jobs 1 (subprocess)", args.repeat, cli_command(),
                        ["fsck", "--json", "--jobs", "1", str(projects)], False),
            measure_cli("cli j2", "levelsess fsck --json --jobs 2 (subprocess)", args.repeat, cli_command(),
                        ["fsck", "--json", "--jobs", "2", str(projects)], True),
            measure_cli("cli", "levelsess fsck --json (the default: automatic jobs)", args.repeat, cli_command(),
                        ["fsck", "--json", str(projects)], True),
        ]
        base = results[0].best
        doc = {"bytes": size, "files": len(files), "results": [
            {"name": r.name, "what": r.what, "seconds": round(r.best, 3), "mb_per_s": round(size / MB / r.best, 1),
             "vs_bare": round(base / r.best, 2), "rss_mib": r.rss_mib, "tree_rss_mib": r.tree_rss_mib} for r in results]}
        if args.json:
            print(json.dumps(doc, indent=2))
        else:
            print(f"Claude Code-shaped tree: {len(files)} files, {size / MB:,.0f} MB")
            for r in doc["results"]:
                rss = f"  peak RSS {r['rss_mib']} MiB" if r["rss_mib"] is not None else ""
                rss += f" (all processes {r['tree_rss_mib']} MiB)" if r.get("tree_rss_mib") else ""
                print(f"  {r['name']:<9} {r['seconds']:>7.2f} s  {r['mb_per_s']:>7.1f} MB/s  {r['vs_bare']:.2f}x bare{rss}   ({r['what']})")
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
