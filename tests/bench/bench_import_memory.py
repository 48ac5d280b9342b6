#!/usr/bin/env python
"""Peak memory of `import --from claude|codex|gemini` by source size (issue 28) - a standalone script, not a pytest test.

    python tests/bench/bench_import_memory.py [--from claude|codex|gemini] [--records 10000,100000] [--out DIR] [--json]

For each N builds (or reuses, with --out) one Claude Code transcript of N records
(tests/bench/claude_transcript.py: realistic small records, about 610 bytes a line) or one
Codex rollout (tests/bench/codex_rollout.py, about 200 bytes a line) or one Gemini CLI session
file (tests/bench/gemini_session.py, about 1.5 KB a line), and one of 1,000 records
as the baseline, then measures each as a subprocess under tests/bench/probe.py's PROBE, in one run:

  import     `levelsess import --from claude --source ROOT --store EMPTY --json`
  re-import  the same command on that store: nothing new, nothing written

and prints each peak RSS next to the baseline's (the interpreter, the CLI's modules: what any
import costs), with the wall time and MB/s; then what memory grew per record from the
second-largest size to the largest.  Fixed-size parts fill up first (SQLite's page cache, 8 MiB
per database; the parsed lines kept between the two passes, 2 MiB of source), so that figure
means most between large sizes: ``--records 100000,1000000`` (a 610 MB transcript) shows the
bytes per record that stay in memory.  Target (issue 28): flat memory, < 150 MiB at 1,000,000
records.  MB is 10**6 bytes.
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
import claude_transcript  # noqa: E402
import codex_rollout  # noqa: E402
import gemini_session  # noqa: E402
from probe import PROBE  # noqa: E402

MB, MIB = 10**6, 1 << 20
BASELINE = 1_000


WRITERS = {"claude": claude_transcript.write, "codex": codex_rollout.write, "gemini": gemini_session.write}


def run_import(source: str, root: Path, store: Path) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS bytes, the --json report) of one import under the probe."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "rss"
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROBE, str(report), "import", "--from", source, "--source", str(root),
                               "--store", str(store), "--json"], capture_output=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"import failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
        return wall, int(report.read_text()), json.loads(proc.stdout)


def measure(kind: str, root: Path, records: int, scratch: Path) -> dict:
    """Build (or reuse) the source of ``records`` under ``root``; import it, then again."""
    source = next(root.rglob("*.jsonl"), None) if root.is_dir() else None
    if source is None:
        source = WRITERS[kind](root, records)
    store = scratch / f"store-{records}"
    wall, rss, report = run_import(kind, root, store)
    assert [s["status"] for s in report["sessions"]] == ["created"], "a first import creates the session"
    again, again_rss, second = run_import(kind, root, store)
    assert [s["status"] for s in second["sessions"]] == ["unchanged"], "a re-import finds nothing new"
    shutil.rmtree(store, ignore_errors=True)
    size = source.stat().st_size
    return {"records": records, "bytes": size, "import": {"seconds": round(wall, 2), "rss_mib": round(rss / MIB, 1)},
            "re-import": {"seconds": round(again, 2), "rss_mib": round(again_rss / MIB, 1)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="kind", choices=sorted(WRITERS), default="claude")
    parser.add_argument("--records", default="10000,100000", help="comma-separated source sizes, in records")
    parser.add_argument("--out", type=Path, help="build the transcripts here and keep them (reused when they exist)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.records.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="levelsess-bench-import-memory-"))
    home = args.out or scratch
    try:
        results = [measure(args.kind, home / f"{args.kind}-{n}", n, scratch) for n in [BASELINE, *sorted(sizes)]]
        base, results = results[0], results[1:]
        growth = {}
        if len(results) > 1:
            small, large = results[-2:]
            growth = {name: round((large[name]["rss_mib"] - small[name]["rss_mib"]) * MIB / (large["records"] - small["records"]), 1)
                      for name in ("import", "re-import")}
        if args.json:
            print(json.dumps({"baseline": base, "results": results, "bytes_per_record": growth}, indent=2))
            return 0
        print(f"--from {args.kind}; baseline: {BASELINE:,} records, import peak RSS {base['import']['rss_mib']} MiB, "
              f"re-import {base['re-import']['rss_mib']} MiB")
        for result in results:
            for name in ("import", "re-import"):
                figures = result[name]
                print(f"  {result['records']:>9,} records {result['bytes'] / MB:>6,.0f} MB  {name:<9} "
                      f"peak RSS {figures['rss_mib']:>7.1f} MiB  ({figures['rss_mib'] - base[name]['rss_mib']:+6.1f} MiB on the baseline)  "
                      f"{figures['seconds']:>7.2f} s  {result['bytes'] / MB / figures['seconds']:>5.1f} MB/s")
        if growth:
            print(f"from {small['records']:,} to {large['records']:,} records: {growth['import']:+.1f} bytes a record (import), "
                  f"{growth['re-import']:+.1f} (re-import)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
