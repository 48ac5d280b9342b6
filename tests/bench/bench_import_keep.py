#!/usr/bin/env python
"""The nightly keep at the speed of a check (issue 27) - a standalone script, not a pytest test.

    python tests/bench/bench_import_keep.py [--from claude|codex|gemini] [--shape small|fixtures] [--size-mb 300] [--grow 10] [--cleaned-cache]
                                            [--repeat 1] [--out DIR] [--keep] [--settle 90] [--json]

Builds (or reuses, with --out) a tree: for claude, the ``projects/`` tree of tests/bench/bench_claude.py
(the real anonymised fixtures, copied under new ids; ``--shape fixtures``, the default) or transcripts
of tests/bench/claude_transcript.py's shape, of 200 to 4,000 records each (``--shape small``: about
600 bytes a line); for codex, a Codex home of the real anonymised fixture rollouts copied under new thread ids
(``--shape fixtures``, the default: 1.9 kB a line on average, as Codex writes them) or of rollouts of
tests/bench/codex_rollout.py's shape, of 200 to 4,000 records each (``--shape small``: about 200
bytes a line, the most lines a MB can hold).  The real shapes are what issue 27's targets were
measured on; the small ones are the stress case, where the cost a record sets the ratio;
for gemini, a ``~/.gemini`` of JSONL session files as Gemini CLI writes them (:func:`_build_gemini`).
Then measures, in one run, each as a subprocess (wall time, start-up included; peak RSS from tests/bench/probe.py's probe):

  fsck        `levelsess fsck TREE` (automatic jobs), the baseline of the first import
  import      the first `import --from APP --source TREE --store EMPTY`
  unchanged   the same import again, nothing changed: nothing is read (baseline: import); the best
              of three runs, as the start-up's (it changes nothing, so each run is the same)
  grown       after GROW % of the transcripts (rollouts) grew by a turn: only what they added is
              read (baseline: import); then the same change imported with `--reread` (every file
              read in full) into a store of its own, made by a first import of the tree before
              the others, and, after the last round, the two stores' journals compared byte for byte

With ``--cleaned-cache``, after the growth rounds another GROW % grows and is imported after the cache
folder was removed (a user's cleaned ``~/.cache``: no import cache, no index memo), timed as
``cache cleaned``.

With ``--repeat N`` fsck and the first import run N times, in turn (each import into a new store
and cache), and so does the growth (each round another GROW % of the transcripts grows and is
imported), and the best of each is the figure: on a machine whose speed moves between runs, the
ratio of two single runs moves with it.  It prints each figure next to its baseline as a ratio, net
of start-up for the fast ones (`--version`'s time).  Targets (issue 27): unchanged >= 50x and grown >= 10x faster than the
first import, the first import <= 4x fsck, every peak RSS < 150 MiB.  MB is 10**6 bytes.

It also prints what creating a file costs here (the best of five rounds of 200; while that is several
times a quiet file system's it waits, 15 s at a time, up to ``--settle`` seconds): a first import
creates a journal a session, fsck none.  On ext4 without a journal, for several minutes after many
files were removed (a test run), each create costs several times a quiet file system's (about 20 us
on the team's machine, 135 us right after a test run: a first import of a 405 MB Claude Code tree
took 2.30 s then and 1.87 s six minutes later, fsck 0.53 and 0.51 s), so the bench says when it is
measuring on such a file system.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fsck import MB, MIB, warm  # noqa: E402
from creates import SLOW_CREATE_US, settle, slow_note  # noqa: E402
from grow import grow_claude, grow_codex, grow_gemini  # noqa: E402
from probe import PROBE  # noqa: E402


def _run(args: list[str], env: dict) -> tuple[float, float, dict | None]:
    """(wall seconds, peak RSS MiB, --json output or None) of ``levelsess ARGS`` under the probe."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "rss"
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROBE, str(report), *args], capture_output=True, env=env)
        wall = time.perf_counter() - started
        if proc.returncode not in (0, 1, 4):
            raise SystemExit(f"levelsess {' '.join(args)} failed (exit {proc.returncode}): "
                             f"{proc.stderr.decode(errors='replace')[-2000:]}")
        try:
            doc = json.loads(proc.stdout)
        except ValueError:
            doc = None
        return wall, int(report.read_text()) / MIB, doc


def _build_claude_small(projects: Path, size_mb: int) -> None:
    """Transcripts of tests/bench/claude_transcript.py's shape (about 600 bytes a line: the most
    records a MB holds), of 200 to 4,000 records each, in 30 projects; each its own session (its
    file name, every ``sessionId``, every uuid)."""
    import claude_transcript

    rng = random.Random(27)
    made, n = 0, 0
    while made < size_mb * MB:
        n += 1
        sid = f"5e55a0e1-0000-4000-8000-{n:012x}"
        folder = projects / f"-home-bench-code-proj{n % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sid}.jsonl"
        with open(path, "wb") as out:
            for record in claude_transcript.records(rng.randint(200, 4000)):
                data = json.dumps(record, separators=(",", ":")).replace(claude_transcript.SESSION, sid)
                # (each uuid, made from the record's number, made this file's own: its top 32 bits are the file's)
                out.write(data.replace('"00000000-0000-4000-0000-', f'"{n:08x}-0000-4000-0000-').encode() + b"\n")
        made += path.stat().st_size


def _build_codex(home: Path, size_mb: int) -> None:
    from codex_rollout import records

    rng = random.Random(27)
    made, n = 0, 0
    while made < size_mb * MB:
        n += 1
        day = home / "sessions" / "2026" / "05" / f"{5 + n % 20:02d}"
        day.mkdir(parents=True, exist_ok=True)
        thread = f"019e0000-0000-7000-8000-{n:012x}"
        path = day / f"rollout-2026-05-05T00-00-00-{thread}.jsonl"
        with open(path, "wb") as out:
            for k, record in enumerate(records(rng.randint(200, 4000))):
                if record.get("type") == "session_meta":
                    record["payload"]["id"] = thread
                out.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
                del k
        made += path.stat().st_size


CODEX_FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "codex"
if not CODEX_FIXTURES.is_dir():  # a worktree elsewhere: the team machine's shared/, as bench_claude
    CODEX_FIXTURES = Path("/work/shared/fixtures/codex")


def _build_codex_fixtures(home: Path, size_mb: int) -> None:
    """Copies of the real rollouts, in turn, each under a thread id of its own (in its session_meta
    and its file name, as Codex names a rollout) until the home holds SIZE MB."""
    sources = sorted(CODEX_FIXTURES.rglob("rollout-*.jsonl"))
    if not sources:
        raise SystemExit(f"no Codex CLI fixtures under {CODEX_FIXTURES}")
    datas = [path.read_bytes() for path in sources]
    ids = [json.loads(data.split(b"\n", 1)[0])["payload"]["id"].encode() for data in datas]
    made, n = 0, 0
    while made < size_mb * MB:
        n += 1
        k = n % len(datas)
        thread = f"019e0000-0000-7000-8000-{n:012x}"
        day = home / "sessions" / "2026" / "05" / f"{5 + n % 20:02d}"
        day.mkdir(parents=True, exist_ok=True)
        data = datas[k].replace(ids[k], thread.encode())
        (day / f"rollout-2026-05-05T00-00-00-{thread}.jsonl").write_bytes(data)
        made += len(data)


def _build_gemini(home: Path, size_mb: int) -> None:
    """A ``~/.gemini`` of JSONL session files as Gemini CLI writes them (SOURCES-MORE.md §1.2, §1.9), in
    seven projects: a metadata line, then turns of a typed prompt and an answer with its thoughts, the
    answer appended again with its tokens and a tool call (a repeated id), each message followed by
    ``{"$set":{"lastUpdated":…}}``; 5 to 300 turns a session, about 1.4 kB a line."""
    import hashlib

    rng = random.Random(27)
    made, n, projects = 0, 0, {}
    while made < size_mb * MB:
        n += 1
        slug = f"app-{n % 7}"
        root = f"/home/bench/src/{slug}"
        chats = home / "tmp" / slug / "chats"
        if slug not in projects:
            chats.mkdir(parents=True, exist_ok=True)
            (chats.parent / ".project_root").write_text(root)
            projects[root] = slug
        sid = f"1b2c3d4e-5f60-4a71-8b92-{n:012x}"
        start = datetime(2026, 8, 1, tzinfo=timezone.utc) + timedelta(hours=n)
        tick = iter(range(10**6))
        at = lambda: (start + timedelta(seconds=next(tick))).isoformat(timespec="milliseconds").replace("+00:00", "Z")  # noqa: E731
        lines = [{"sessionId": sid, "projectHash": hashlib.sha256(root.encode()).hexdigest(), "startTime": at(), "lastUpdated": at(),
                  "kind": "main"}]
        for turn in range(rng.randint(5, 300)):
            lines += [{"id": f"u-{n}-{turn}", "timestamp": at(), "type": "user",
                       "content": [{"text": f"question {turn} " + "word " * rng.randint(5, 120)}]}, {"$set": {"lastUpdated": at()}}]
            answer = {"id": f"g-{n}-{turn}", "timestamp": at(), "type": "gemini", "content": "answer " * rng.randint(10, 300),
                      "thoughts": [{"subject": "Planning", "description": "think " * rng.randint(5, 60), "timestamp": at()}],
                      "tokens": None, "model": "gemini-2.5-pro"}
            lines += [answer, {"$set": {"lastUpdated": at()}}]
            call = {"id": f"read_file-{n}-{turn}", "name": "read_file", "args": {"file_path": root + "/README.md"}, "status": "success",
                    "timestamp": at(), "result": [{"functionResponse": {"id": f"read_file-{n}-{turn}", "name": "read_file",
                                                                        "response": {"output": "# app\n" * rng.randint(1, 40)}}}]}
            lines += [{**answer, "tokens": {"input": 812, "output": 40, "cached": 0, "thoughts": 12, "tool": 0, "total": 864},
                       "toolCalls": [call]}, {"$set": {"lastUpdated": at()}}]
        data = b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)
        (chats / f"session-{start.strftime('%Y-%m-%dT%H-%M')}-{sid[:8]}{n:04x}.jsonl").write_bytes(data)
        made += len(data)
    (home / "projects.json").write_text(json.dumps({"projects": projects}, indent=2))


def uncompiled() -> int:
    """How many of levelsess's modules have no compiled bytecode of their current source.  Each run
    of the command compiles those again when Python may not keep what it compiles (an editable
    install where ``PYTHONDONTWRITEBYTECODE`` is set): 15 ms of every run, 40 ms or more of an
    import that finds nothing changed, which the start-up subtracted does not hold."""
    import importlib.util

    import toolkit

    missing = 0
    for source in Path(toolkit.__file__).parent.rglob("*.py"):
        try:
            head = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
            info = source.stat()
        except OSError:
            missing += 1
            continue
        hashed = len(head) == 16 and int.from_bytes(head[4:8], "little") & 1  # (a hash-based one: checked when loaded)
        stamped = (int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little"))
        if len(head) < 16 or not (hashed or stamped == (int(info.st_mtime) & 0xFFFFFFFF, info.st_size & 0xFFFFFFFF)):
            missing += 1
    return missing


def _transcripts(app: str, tree: Path) -> list[Path]:
    if app == "gemini":
        return sorted(tree.glob("tmp/*/chats/session-*.jsonl"))
    if app == "claude":
        return sorted(p for p in tree.glob("*/*.jsonl") if p.is_file())
    return sorted(tree.rglob("rollout-*.jsonl"))


def _journals(store: Path) -> dict[str, Path]:
    return {str(p.relative_to(store)): p for p in store.rglob("*.jsonl") if ".levelsess" not in p.parts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="app", choices=("claude", "codex", "gemini"), default="claude")
    parser.add_argument("--shape", choices=("small", "fixtures"), default=None,
                        help="fixtures (the default): copies of the real fixture transcripts (claude, bench_claude.py) or "
                        "rollouts (codex); small: transcripts or rollouts of small records (claude_transcript.py, "
                        "codex_rollout.py), the stress case")
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--grow", type=float, default=10.0, help="percent of the transcripts that grow by a turn")
    parser.add_argument("--out", type=Path, help="build the tree here and keep it (reused when it exists)")
    parser.add_argument("--repeat", type=int, default=1, help="run fsck and the first import this many times, in turn; "
                        "the best of each is the figure (the last import's store is the one re-imported)")
    parser.add_argument("--keep", action="store_true", help="leave the run's stores and caches (their folder is named "
                        "on stderr): on a file system without a journal, removing them slows whatever creates files next")
    parser.add_argument("--settle", type=int, default=90, help="seconds to wait at most, before the timed runs, while creating a "
                        "file costs several times a quiet file system's (files removed in the last minutes: the last bench's "
                        "stores); 0: measure at once")
    parser.add_argument("--cleaned-cache", action="store_true", help="after the growth rounds, one more: another GROW %% "
                        "grows and is imported after the user's cache folder was removed (no import cache, no index memo: "
                        "every transcript read in full, and each changed folder's other journals read again for its index), "
                        "timed, and the same growth read into the --reread store")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.repeat = max(1, args.repeat)
    args.shape = args.shape or "fixtures"
    temp = Path(tempfile.mkdtemp(prefix="levelsess-bench-keep-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(temp / "cache")}  # this run's import cache, nobody else's
    try:
        pristine = (args.out or temp / "built") / {"claude": "projects", "codex": ".codex", "gemini": ".gemini"}[args.app]
        if not pristine.is_dir():
            if args.app == "claude" and args.shape == "small":
                _build_claude_small(pristine, args.size_mb)
            elif args.app == "claude":
                from bench_claude import build

                build(pristine, args.size_mb)
            elif args.app == "gemini":
                _build_gemini(pristine, args.size_mb)
            elif args.shape == "fixtures":
                _build_codex_fixtures(pristine, args.size_mb)
            else:
                _build_codex(pristine, args.size_mb)
        tree = temp / "tree" / pristine.name
        shutil.copytree(pristine, tree)  # grown here, never in the kept tree
        files = _transcripts(args.app, tree)
        size = warm(files)
        os.sync()  # the copy's dirty pages written back now, not in the middle of a measured run
        full = temp / "full"
        importing = ["import", "--from", args.app, "--source", str(tree), "--json"]
        startup = min(_run(["--version"], env)[0] for _ in range(3))
        creating, waited = settle(temp, args.settle)  # files removed in the last minutes: let that pass
        # the store every growth is read into in full (--reread), made first, by its own first import (the same
        # journals as the timed ones'): a copy of the timed store made just before the growth slowed the grown
        # imports timed after it by a fifth, for half a minute (0.46 s against 0.34 s, 814 rollouts)
        _run([*importing, "--store", str(full), "--reread"], {**env, "XDG_CACHE_HOME": str(temp / "cache-full")})
        fscks, firsts = [], []
        for n in range(args.repeat):  # fsck and the first import in turn, each import into a new store and cache
            fscks.append(_run(["fsck", str(tree), "--json"], env))
            # (a new folder, the last one's kept until the end: a first import does not follow the removal of
            # a store's files, whose inodes a file system without a journal will not give again for 30 s)
            store = temp / f"store-{n}"
            env = {**env, "XDG_CACHE_HOME": str(temp / f"cache-{n}")}
            firsts.append(_run([*importing, "--store", str(store)], env))
        fsck, first = min(fscks, key=lambda run: run[0]), min(firsts, key=lambda run: run[0])
        unchanged = min((_run([*importing, "--store", str(store)], env) for _ in range(3)), key=lambda run: run[0])
        assert unchanged[2] and unchanged[2]["read"] == 0, "nothing changed: nothing is read"
        rng = random.Random(2027)
        want, rounds = max(1, round(len(files) * args.grow / 100)), []

        def grow() -> tuple[list[Path], int]:  # another GROW % of the transcripts grows by a turn
            grown_files, added = [], 0
            for path in rng.sample(files, len(files)):  # (one with no main chain to continue does not grow: the next does)
                if len(grown_files) == want:
                    break
                grew = {"claude": grow_claude, "codex": grow_codex, "gemini": grow_gemini}[args.app](path, rng)
                if grew:
                    grown_files.append(path)
                    added += grew
            return grown_files, added

        for _ in range(args.repeat):  # (each round grows another GROW %, imported into each store as a nightly keep would)
            grown_files, added = grow()
            rounds.append((_run([*importing, "--store", str(store)], env), grown_files, added,
                           _run([*importing, "--store", str(full), "--reread"], env)))
        grown, grown_files, added, reread = min(rounds, key=lambda round_: round_[0][0])
        cleaned = None
        if args.cleaned_cache:
            grow()
            shutil.rmtree(Path(env["XDG_CACHE_HOME"]) / "levelsess", ignore_errors=True)  # (a cleaned ~/.cache)
            cleaned = _run([*importing, "--store", str(store)], env)
            _run([*importing, "--store", str(full), "--reread"], env)
        a, b = _journals(store), _journals(full)
        same = a.keys() == b.keys() and all(filecmp.cmp(a[k], b[k], shallow=False) for k in a)
        net = lambda wall: max(wall - startup, 1e-3)  # noqa: E731
        stale = uncompiled()
        doc = {"app": args.app, "shape": args.shape if args.app != "gemini" else "synthetic", "bytes": size, "files": len(files), "grown_files": len(grown_files), "grown_bytes": added,
               "startup_seconds": round(startup, 3), "uncompiled_modules": stale, "create_us": round(creating, 1), "waited_seconds": waited, "same_journals_as_reread": same, "repeat": args.repeat,
               "runs": {"fsck": [round(run[0], 3) for run in fscks], "import": [round(run[0], 3) for run in firsts],
                        "grown": [round(run[0][0], 3) for run in rounds]},
               "results": [{"name": name, "seconds": round(run[0], 3), "rss_mib": round(run[1], 1)}
                           for name, run in (("fsck", fsck), ("import", first), ("unchanged", unchanged), ("grown", grown),
                                             ("grown --reread", reread))],
               "import_vs_fsck": round(first[0] / fsck[0], 2),
               "unchanged_faster": round(net(first[0]) / net(unchanged[0]), 1),
               "grown_faster": round(net(first[0]) / net(grown[0]), 1),
               "reread_faster": round(net(first[0]) / net(reread[0]), 1),
               "grown_report": {k: grown[2].get(k) for k in ("read", "resumed", "from_cache")} if grown[2] else None}
        if cleaned is not None:
            doc["results"].append({"name": "cache cleaned", "seconds": round(cleaned[0], 3), "rss_mib": round(cleaned[1], 1)})
            doc["cleaned_faster"] = round(net(first[0]) / net(cleaned[0]), 1)
            doc["cleaned_report"] = {k: cleaned[2].get(k) for k in ("read", "resumed", "from_cache")} if cleaned[2] else None
        if args.json:
            print(json.dumps(doc, indent=2))
        else:
            print(f"{args.app}{' (' + doc['shape'] + ')' if args.app != 'gemini' else ''}: {len(files)} files, {size / MB:,.0f} MB; {len(grown_files)} grew by {added / 1000:,.0f} kB; "
                  f"start-up {startup:.2f} s; a file created in {creating:.0f} us" + (f" (after {waited} s waiting for it)" if waited else "") + (f"; fsck, first import and growth: best of {args.repeat}" if args.repeat > 1 else ""))
            if creating > SLOW_CREATE_US:
                print(f"  ({slow_note(creating)}, and fsck is not)")
            if stale:
                print(f"  ({stale} of levelsess's modules have no compiled bytecode: each run compiles them again where "
                      "PYTHONDONTWRITEBYTECODE is set, and the re-imports' ratios count that; `python -m compileall -q toolkit` "
                      "compiles them once, as the README's install does)")
            for r in doc["results"]:
                runs = doc["runs"].get(r["name"], [])
                every = f"  (each run: {', '.join(f'{t:.2f}' for t in runs)} s)" if len(runs) > 1 else ""
                print(f"  {r['name']:<15} {r['seconds']:>7.2f} s  peak RSS {r['rss_mib']:>6.1f} MiB{every}")
            print(f"  first import vs fsck:            {doc['import_vs_fsck']}x slower (target <= 4x)")
            print(f"  unchanged re-import:             {doc['unchanged_faster']}x faster than the first import, net of "
                  "start-up (target >= 50x)")
            print(f"  after {args.grow:g} % grew:                {doc['grown_faster']}x faster (target >= 10x); "
                  f"read in full: {doc['reread_faster']}x; {doc['grown_report']}")
            if cleaned is not None:
                print(f"  grown, cache folder cleaned:     {doc['cleaned_faster']}x (the first import's time over its own; "
                      "no target: every transcript is read in full)")
            print(f"  the same journals as a full re-read: {same}")
        return 0 if same else 1
    finally:
        if args.keep:
            print(f"kept {temp}", file=sys.stderr)
        else:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
