#!/usr/bin/env python
"""migrate throughput benchmark (DESIGN.md §6, §8) - a standalone script, not a pytest test.

    python tests/bench/bench_migrate.py [--size-mb 1024] [--dir DIR] [--repeat 2] [--json]

Builds (seeded, so every run makes the same bytes) a store of realistic LevelCode v1
sessions of 1-5 MB each (bench_fsck's generator: log-uniform record sizes, prose, code,
CJK and emoji, now and then a multi-MB tool result; then "seq" stripped and meta "v": 1,
or no "v" at all in about a third of them) plus a v1 index.json per project, and measures:

  copy          copy every journal to a new file in the same folder, fsync each
                (shutil.copyfileobj + os.fsync): what writing the bytes once costs
  bare          read each file whole, split on b"\\n", orjson.loads every line
  plan          plan_migration(discover_all([store])): the read-only scan of every journal
  execute       plan.execute(jobs=0): stream, splice, verify, fsync, back up, replace, reindex
  migrate       plan + execute (in this process)
  cli           `levelsess migrate --store DIR --json` as a subprocess (wall time, so
                interpreter start-up and the JSON report are included)

Every migrate run starts from a fresh v1 copy of the pristine corpus (copied and synced to
disk before the clock starts; the copy is not timed), with the page cache warm.  Each
measurement is repeated (--repeat, default 2) and the best time is kept.  Peak RSS of the
CLI comes from one extra, untimed run under tests/bench/probe.py's PROBE (VmHWM of the CLI
process itself); after that run `levelsess fsck --store DIR` must exit 0 and every journal
must have grown by exactly the bytes of its ``,"seq":n`` members.  MB is 10**6 bytes.

Without --dir the corpus goes to a temp folder under /tmp, removed at the end unless --keep.
With --dir DIR the pristine corpus is built in DIR/pristine and kept; a later run with the
same --size-mb and --seed reuses it.  It needs about 3x --size-mb of free disk (pristine
corpus, working copy, and the copy baseline's second copy).

The file name has no ``test_`` prefix on purpose: pytest does not collect or import it.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import re
import shutil
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fsck import PROJECTS, Corpus, bare, cli_command, journals, warm  # noqa: E402 - siblings of this script
from probe import PROBE  # noqa: E402

GENERATOR_VERSION = 1
MB = 1_000_000
MIB = 1 << 20
SESSION_MIN, SESSION_MAX = 1_000_000, 5_000_000
MARKER = "corpus.json"
# bench_fsck's records start {"kind":"…","t":"…","seq":n,…}: drop that seq to make them v1
_SEQ = re.compile(rb'^(\{"kind":"[a-z]+","t":"[^"]*"),"seq":\d+', re.M)


# --- the corpus ---------------------------------------------------------------------------


def to_v1(data: bytes, keep_v: bool) -> bytes:
    """Turn one bench_fsck v2 journal into the v1 journal it would have been."""
    head, _, rest = data.partition(b"\n")
    meta = orjson.loads(head)
    meta.pop("writer", None)  # v2 only
    if keep_v:
        meta["v"] = 1
    else:
        del meta["v"]  # absent means 1
    body, count = _SEQ.subn(rb"\1", rest)
    records = rest.count(b"\n")
    if count != records:
        raise SystemExit(f"bench_fsck's generator changed: {count} seq members for {records} records")
    return orjson.dumps(meta) + b"\n" + body


def build_corpus(root: Path, size_mb: int, seed: int, say) -> dict:
    """Write about ``size_mb`` MB of v1 journals under the store ``root`` and index them (v1)."""
    from toolkit.reindex import reindex
    from toolkit.stores import discover_all, slug

    marker = root.parent / MARKER
    wanted = {"generator": GENERATOR_VERSION, "size_mb": size_mb, "seed": seed}
    if marker.exists():
        info = orjson.loads(marker.read_bytes())
        if {k: info.get(k) for k in wanted} == wanted and root.is_dir():
            say(f"reusing the corpus in {root}")
            return info
        raise SystemExit(f"{root.parent} holds a different corpus ({ {k: info.get(k) for k in wanted} }); pick another --dir")
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty and holds no benchmark corpus; pick another --dir")
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    corpus = Corpus(seed)
    rng = corpus.rng
    base = datetime(2026, 1, 5, 8, 0, 0, tzinfo=timezone.utc)
    total, ids, largest, records, without_v = 0, set(), 0, 0, 0
    weights = [30, 18, 14, 6, 12, 8, 7, 5]
    while total < size_mb * MB:
        project = rng.choices(PROJECTS, weights)[0]
        created = base + timedelta(seconds=rng.randint(0, 300 * 86400))
        sid = created.strftime("%Y-%m-%dT%H-%M-%S-") + "".join(rng.choices(string.ascii_lowercase + string.digits, k=4))
        if sid in ids:
            continue
        ids.add(sid)
        target = int(math.exp(rng.uniform(math.log(SESSION_MIN), math.log(SESSION_MAX))))  # log-uniform 1-5 MB
        keep_v = rng.random() < 0.67
        data = to_v1(corpus.session(project, sid, created, target), keep_v)
        without_v += not keep_v
        folder = root / slug(project)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.jsonl").write_bytes(data)
        total += len(data)
        largest = max(largest, len(data))
        records += data.count(b"\n")
    reindex(discover_all([root]))  # a real v1 store has a v1 index.json; migrate rebuilds it as v2
    written = time.perf_counter() - started
    info = {**wanted, "bytes": total, "files": len(ids), "records": records, "largest_file": largest,
            "meta_without_v": without_v, "big_tool_results": corpus.stats["big_tool_results"],
            "big_bytes": corpus.stats["big_bytes"], "build_seconds": round(written, 2)}
    marker.write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
    say(f"built {total / MB:.0f} MB of v1 journals in {len(ids)} files in {written:.1f}s (+ index.json per project)")
    return info


def fresh_copy(pristine: Path, work: Path) -> list[Path]:
    """Replace ``work`` with a copy of ``pristine``, on disk and in the page cache (untimed)."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(pristine, work)
    os.sync()  # no dirty pages of the copy left to be written back during the timed run
    files = journals(work)
    warm(files)
    return files


# --- measurements -------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    what: str
    seconds: list[float] = field(default_factory=list)
    rss_mib: float | None = None
    mb_per_s: float = 0.0
    vs_copy: float | None = None  # speed relative to the copy baseline (1.0 = as fast as copying)

    @property
    def best(self) -> float:
        return min(self.seconds)


def copy_baseline(files: list[Path]) -> float:
    """Copy each journal to a new file beside it and fsync it; return the seconds taken."""
    copies = [path.with_name(path.name + ".bench-copy") for path in files]
    gc.collect()
    started = time.perf_counter()
    for path, copy in zip(files, copies):
        with open(path, "rb") as source, open(copy, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
            target.flush()
            os.fsync(target.fileno())
    seconds = time.perf_counter() - started
    for copy in copies:
        copy.unlink()
    os.sync()
    return seconds


def bare_parse(files: list[Path]) -> float:
    gc.collect()
    started = time.perf_counter()
    bare(files)
    return time.perf_counter() - started


def migrate_in_process(store: Path, files: int) -> tuple[float, float]:
    """plan_migration + execute on a fresh v1 store; return (plan seconds, execute seconds)."""
    from toolkit.migrate import plan_migration
    from toolkit.stores import discover_all

    gc.collect()
    started = time.perf_counter()
    plan = plan_migration(discover_all([store]))
    planned = time.perf_counter()
    result = plan.execute(jobs=0)
    done = time.perf_counter()
    if result.exit_code != 0 or result.count("migrated") != files:
        codes = sorted({f.code for f in result.findings})
        raise SystemExit(f"migrate did not migrate every journal (exit {result.exit_code}, "
                         f"{result.count('migrated')}/{files} migrated, findings {codes}); benchmark aborted")
    return planned - started, done - planned


def run_cli(args: list[str], expect_files: int | None = None) -> tuple[float, dict]:
    """Run a command that prints a JSON report; return (wall seconds, the report)."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=err, check=False)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout.decode(errors='replace')[-2000:]}"
                             f"\n{err.read().decode(errors='replace')[-2000:]}")
    doc = orjson.loads(proc.stdout)
    if doc.get("exit") != 0:
        raise SystemExit(f"{' '.join(args)} reported exit {doc.get('exit')}: {[f['code'] for f in doc.get('findings', [])][:10]}")
    if expect_files is not None:
        migrated = sum(f["status"] == "migrated" for f in doc["files"])
        if migrated != expect_files:
            raise SystemExit(f"the CLI migrated {migrated} of {expect_files} journals; benchmark aborted")
    return wall, doc


def probe_rss(cli_args: list[str], expect_files: int) -> float:
    """Run ``levelsess CLI_ARGS`` under PROBE; return the peak RSS (MiB) of the CLI process."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "rss"
        run_cli([sys.executable, "-c", PROBE, str(report), *cli_args], expect_files)
        return int(report.read_text()) / MIB


def verify(pristine: Path, work: Path, cli: list[str]) -> dict:
    """fsck must pass, and each journal must be its v1 self plus exactly its seq members."""
    _, report = run_cli([*cli, "fsck", "--store", str(work), "--json"])
    grown = 0
    for old in journals(pristine):
        new = work / old.relative_to(pristine)
        data = old.read_bytes()
        records = data.count(b"\n") - 1
        meta = data[: data.index(b"\n")]
        extra = sum(len(b',"seq":%d' % n) for n in range(1, records + 1))
        extra += 0 if "v" in orjson.loads(meta) else len(b',"v":2')
        if new.stat().st_size != len(data) + extra:
            raise SystemExit(f"{new}: {new.stat().st_size} bytes after migrate, expected {len(data) + extra}")
        with open(new, "rb") as handle:
            if orjson.loads(handle.readline()).get("v") != 2:
                raise SystemExit(f"{new}: meta is not v2 after migrate")
        grown += extra
    return {"fsck_exit": report["exit"], "fsck_findings": len(report["findings"]), "bytes_added": grown}


# --- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024, help="corpus size in MB (10**6 bytes), default 1024")
    parser.add_argument("--dir", type=Path, help="work here (pristine corpus kept in DIR/pristine for reuse) instead of a temp folder under /tmp")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print where it is")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is kept (default 2)")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess runs (and the fsck check)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document (progress goes to stderr)")
    args = parser.parse_args(argv)

    log = sys.stderr if args.json else sys.stdout

    def say(message: str) -> None:
        print(message, file=log, flush=True)

    if args.dir:
        base, temp = args.dir.resolve(), None
        base.mkdir(parents=True, exist_ok=True)
    else:
        temp = base = Path(tempfile.mkdtemp(prefix="levelsess-bench-migrate-", dir="/tmp"))
    pristine, work = base / "pristine" / "sessions", base / "work" / "sessions"
    free = shutil.disk_usage(base).free
    need = int(args.size_mb * MB * (2.2 if (pristine.parent / MARKER).exists() else 3.2))
    if free < need:
        raise SystemExit(f"{base}: {free / MB:.0f} MB free, about {need / MB:.0f} MB needed for --size-mb {args.size_mb}; "
                         f"scale --size-mb down to {int(args.size_mb * free / need)} or pick another --dir")
    try:
        info = build_corpus(pristine, args.size_mb, args.seed, say)
        size = sum(p.stat().st_size for p in journals(pristine))
        nfiles = len(journals(pristine))
        cli = cli_command()
        results = {name: Result(name, what) for name, what in [
            ("copy", "copyfileobj to a new file in the same folder + fsync, per journal"),
            ("bare", "read whole file, split b'\\n', orjson.loads each line"),
            ("plan", "plan_migration(discover_all([store])) - the read-only scan"),
            ("execute", "plan.execute(jobs=0) - splice, verify, fsync, back up, replace, reindex"),
            ("migrate", "plan + execute, in this process"),
        ]}
        if not args.no_cli:
            results["cli"] = Result("cli", f"{Path(cli[-1]).name} migrate --store DIR --json (subprocess wall time)")
        for run in range(1, args.repeat + 1):
            say(f"run {run}/{args.repeat}: fresh v1 copy ...")
            files = fresh_copy(pristine, work)
            say("  copy baseline ...")
            results["copy"].seconds.append(copy_baseline(files))
            say("  bare read + parse ...")
            results["bare"].seconds.append(bare_parse(files))
            say("  migrate (in process) ...")
            plan_s, execute_s = migrate_in_process(work, nfiles)
            results["plan"].seconds.append(plan_s)
            results["execute"].seconds.append(execute_s)
            results["migrate"].seconds.append(plan_s + execute_s)
            if not args.no_cli:
                fresh_copy(pristine, work)
                say("  migrate (CLI) ...")
                wall, _ = run_cli([*cli, "migrate", "--store", str(work), "--json"], nfiles)
                results["cli"].seconds.append(wall)
        checked = None
        if not args.no_cli:
            say("peak RSS (one untimed CLI run under the probe), then fsck ...")
            fresh_copy(pristine, work)
            results["cli"].rss_mib = round(probe_rss(["migrate", "--store", str(work), "--json"], nfiles), 1)
            checked = verify(pristine, work, cli)
        copy_speed = size / MB / results["copy"].best
        for result in results.values():
            result.mb_per_s = round(size / MB / result.best, 1)
            result.vs_copy = round(result.mb_per_s / copy_speed, 3)
        doc = {
            "corpus": {**{k: info[k] for k in ("files", "records", "largest_file", "meta_without_v", "big_tool_results", "big_bytes", "seed") if k in info},
                       "bytes": size, "path": str(pristine)},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "orjson": orjson.__version__,
                        "platform": platform.platform(), "cli": cli},
            "note": f"best of {args.repeat}; each migrate run starts from a fresh v1 copy (untimed, synced, page cache warm); MB = 10**6 bytes",
            "results": [{**asdict(r), "best": round(r.best, 3), "seconds": [round(s, 3) for s in r.seconds]} for r in results.values()],
            "migrate_vs_copy": results["migrate"].vs_copy,
            "verified": checked,
        }
        if args.json:
            print(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            _print_table(doc, list(results.values()))
        if temp and args.keep:
            say(f"kept {base}")
        return 0
    finally:
        if temp and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)
        elif not args.keep:
            shutil.rmtree(work.parent, ignore_errors=True)  # --dir: keep the pristine corpus only


def _print_table(doc: dict, results: list[Result]) -> None:
    corpus, machine = doc["corpus"], doc["machine"]
    print()
    print(f"corpus: {corpus['bytes'] / MB:.1f} MB of v1 journals, {corpus['files']} files, {corpus['records']} lines "
          f"(mean {corpus['bytes'] / corpus['records'] / 1000:.1f} KB), largest {corpus['largest_file'] / MB:.1f} MB, "
          f"{corpus.get('meta_without_v', '?')} metas without \"v\", {corpus.get('big_tool_results', '?')} tool results of "
          f"100 KB-2 MB  [seed {corpus.get('seed')}]")
    print(f"machine: {machine['cpus']} CPUs, Python {machine['python']}, orjson {machine['orjson']}, {machine['platform']}")
    print(doc["note"])
    print()
    header = f"{'run':<9} {'best s':>8} {'worst s':>8} {'MB/s':>8} {'x copy':>7} {'peak RSS':>9}  what"
    print(header)
    print("-" * (len(header) + 60))
    for r in results:
        rss = f"{r.rss_mib:.0f} MiB" if r.rss_mib is not None else "-"
        print(f"{r.name:<9} {r.best:>8.3f} {max(r.seconds):>8.3f} {r.mb_per_s:>8.1f} {r.vs_copy:>7.2f} {rss:>9}  {r.what}")
    print()
    print("x copy: speed relative to copying the bytes once with an fsync per file (1.00 = as fast).")
    print("plan, execute and migrate are each the best of their own runs.  peak RSS: VmHWM of the CLI")
    print("process, from one extra untimed run under tests/bench/probe.py.")
    if doc["verified"]:
        v = doc["verified"]
        print(f"verified: levelsess fsck --store exit {v['fsck_exit']} ({v['fsck_findings']} findings); every journal grew by "
              f"exactly its seq members ({v['bytes_added'] / MB:.2f} MB in all)")


if __name__ == "__main__":
    sys.exit(main())
