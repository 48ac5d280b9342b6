#!/usr/bin/env python
"""fsck throughput benchmark (DESIGN.md §8) - a standalone script, not a pytest test.

    python tests/bench/bench_fsck.py [--size-mb 300] [--out DIR] [--keep] [--json]

Builds (seeded, so every run makes the same bytes) a store of realistic LevelCode v2
sessions, warms the page cache by reading every file once, then measures in one run:

  bare          read each file whole, split on b"\\n", orjson.loads every line (the
                fastest honest pure-Python reader: the ceiling fsck is compared with)
  check j1/j2   check_folders(discover_all([root]), jobs=1 / 2) in this process
  cli j1/j2     `levelsess fsck --json ROOT --jobs 1 / 2` as a subprocess (wall time,
                so interpreter start-up and the JSON report are included)
  strict j1     check_folders(..., strict=True, jobs=1) and `fsck --strict --jobs 1`

Each measurement is repeated (--repeat, default 3) and the best time is kept.  Peak RSS of
each CLI mode comes from one extra, untimed run of toolkit.cli.main under a probe that
reports its own VmHWM at exit (see PROBE for why not wait4/RUSAGE_CHILDREN), and for
multi-process runs also from psutil sampling of the whole process tree.  MB is 10**6 bytes.

--out DIR builds the corpus in DIR and keeps it; a later run with the same --size-mb and
--seed reuses it instead of writing it again.  Without --out the corpus goes to a temp
folder, removed at the end unless --keep.  --profile adds a cProfile of the jobs=1 check.

The file name has no ``test_`` prefix on purpose: pytest does not collect or import it.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import os
import platform
import pstats
import random
import shutil
import string
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe import PROBE  # noqa: E402 - the probe lives beside this script

GENERATOR_VERSION = 3
MB = 1_000_000
MIB = 1 << 20
SOFT_CAP = 20 << 20
MAX_SESSION = 18 << 20  # stay under the 20 MiB `oversize` soft cap: the corpus must check clean

# --- the corpus ---------------------------------------------------------------------------

PROJECTS = [
    "/Users/ada/code/thin.ly",
    "/Users/ada/code/refunds-service",
    "/home/grace/src/compiler",
    "/home/grace/src/compiler/docs",
    "/srv/work/monorepo/packages/web-app",
    "/Users/zoë/プロジェクト/café-app",  # non-ASCII: hashed slug
    "/home/linus/kernel/drivers/net/ethernet/intel",
    "/Users/ada/code/thin.ly/vendor/very/deep/path/" + "sub-module/" * 24 + "end",  # long: hashed slug
]
WORDS = (
    "the of and to in is that for it as with on be this by are from at or an function value "
    "return error test file class method request response user session journal record line "
    "parse check repair index cache lock write read buffer stream offset byte json schema "
    "refund payment order invoice customer account token model tool result output input path "
    "config option flag default module package import export async await promise callback "
    "should would could maybe because however therefore instead although unless while until "
    "let me look at the failing test first then fix the handler and rerun the suite "
    "I think the problem is that we never flush before rename so a crash loses the tail"
).split()
UNICODE_WORDS = (
    "café naïve Zürich façade jalapeño São-Paulo Ærøskøbing straße déjà-vu "
    "日本語 テキスト 変更 関数 中文 字符 修复 错误 한국어 테스트 "
    "Привет мир ошибка файл Ελληνικά κείμενο עברית العربية हिन्दी "
    "🚀 ✅ 🔥 👍 🐛 ⚠️ 📦 ✨ → ≥ ≤ ∑ ∞ — … «quote» “smart”"
).split()
CODE_LINES = [
    'def {n}(self, path: Path, *, strict: bool = False) -> "Scan":',
    '    """Return the scan of {n}; raise CorruptionError on damage."""',
    '    data = handle.read(CHUNK)  # 4 MiB at a time',
    '    if not data.endswith(b"\\n"):',
    "        raise ValueError(f\"{{path}}: bad tail {{data[-60:]!r}}\")",
    '    return {{"kind": "user", "t": t, "content": text}}',
    "const {n} = async (req, res) => {{ const body = await req.json(); res.send(JSON.stringify(body)); }};",
    "\tfor (let i = 0; i < rows.length; i++) {{ if (rows[i].id === id) return rows[i]; }}",
    "SELECT id, amount FROM refunds WHERE status = 'pending' AND created_at > NOW() - INTERVAL '1 day';",
    "C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\workspaceStorage\\{n}\\state.vscdb",
    '{{"compilerOptions": {{"strict": true, "target": "es2022", "paths": {{"@/*": ["src/*"]}}}}}}',
    "  --> src/{n}.rs:42:17 | error[E0502]: cannot borrow `self` as mutable",
    "+    if tail and tail[-1:] != b'\\n':   # diff line",
    "-    os.rename(tmp, path)",
]
TOOLS = ["read_file", "edit_file", "run_terminal_cmd", "grep_search", "list_dir", "codebase_search", "web_search"]
MODELS = ["claude-sonnet-4-5", "claude-opus-4-1", "gpt-5-codex", "gemini-2.5-pro"]
EVENT_TYPES = ["checkpoint", "checkpoint", "checkpoint", "reload", "interrupt", "abort", "pin", "unpin", "archive", "unarchive"]


def _text_pool(rng: random.Random, chars: int) -> str:
    """A few MB of mixed prose, code (quotes, backslashes, tabs, newlines) and unicode."""
    parts: list[str] = []
    size = 0
    ident = lambda: "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 12)))  # noqa: E731
    while size < chars:
        roll = rng.random()
        if roll < 0.55:
            words = rng.choices(WORDS, k=rng.randint(20, 120))
            for i in range(0, len(words), 9):
                if rng.random() < 0.25:
                    words[i] = rng.choice(UNICODE_WORDS)
            piece = " ".join(words).capitalize() + ". "
        elif roll < 0.9:
            piece = "```\n" + "\n".join(rng.choice(CODE_LINES).format(n=ident()) for _ in range(rng.randint(3, 25))) + "\n```\n"
        else:
            piece = " ".join(rng.choices(UNICODE_WORDS, k=rng.randint(5, 40))) + "\n\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


class Corpus:
    """Seeded generator of LevelCode v2 journals (one meta line, then seq-numbered events)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pool = _text_pool(self.rng, 5_000_000)
        self.stats = {"sessions": 0, "records": 0, "big_tool_results": 0, "big_bytes": 0}

    def text(self, low: int, high: int) -> str:
        """Text of roughly low..high bytes (log-uniform), sliced from the pool."""
        n = int(math.exp(self.rng.uniform(math.log(low), math.log(high))))
        start = self.rng.randrange(0, len(self.pool) - n)
        return self.pool[start : start + n]

    def tool_id(self) -> str:
        return "toolu_01" + "".join(self.rng.choices(string.ascii_letters + string.digits, k=22))

    def tool_use(self, project: str) -> dict:
        rng = self.rng
        name = rng.choice(TOOLS)
        path = f"{project}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.{rng.choice(['py', 'ts', 'rs', 'go', 'rb'])}"
        if name == "edit_file":
            payload = {"target_file": path, "instructions": self.text(40, 300), "code_edit": self.text(200, 6000)}
        elif name == "run_terminal_cmd":
            payload = {"command": rng.choice(["pytest -x -q", "npm test", "cargo build", "git diff --stat", "ls -la"]),
                       "is_background": False, "explanation": self.text(30, 200)}
        elif name == "read_file":
            start = rng.randint(1, 900)
            payload = {"target_file": path, "start_line_one_indexed": start, "end_line_one_indexed_inclusive": start + rng.randint(20, 250),
                       "should_read_entire_file": rng.random() < 0.2}
        else:
            payload = {"query": self.text(20, 200), "include_pattern": "*.py", "case_sensitive": False, "target_directories": [project]}
        return {"type": "tool_use", "id": self.tool_id(), "name": name, "input": payload}

    def tool_result(self, tool_id: str) -> dict:
        rng = self.rng
        if rng.random() < 0.0015:  # now and then a huge file dump or build log (~20% of the bytes)
            body = self.text(100_000, 2_000_000)
            self.stats["big_tool_results"] += 1
            self.stats["big_bytes"] += len(body)
        else:
            body = self.text(200, 8000)
        return {"type": "tool_result", "tool_use_id": tool_id, "content": body, "is_error": rng.random() < 0.05}

    def session(self, project: str, sid: str, created: datetime, target: int) -> bytes:
        rng = self.rng
        meta = {"kind": "meta", "v": 2, "id": sid, "project": project, "createdAt": _iso(created), "title": None,
                "model": rng.choice(MODELS), "writer": {"app": "levelcode", "version": "1.9.3"}}
        out = [orjson.dumps(meta)]
        size = len(out[0]) + 1
        now, seq, turn = created, 0, 0
        model = meta["model"]

        def emit(record: dict) -> bool:
            nonlocal size, seq, now
            now += timedelta(seconds=rng.randint(1, 90), milliseconds=rng.randint(0, 999))
            seq += 1
            line = orjson.dumps({"kind": record.pop("kind"), "t": _iso(now), "seq": seq, **record})
            if size + len(line) + 1 > MAX_SESSION:
                seq -= 1
                return False
            out.append(line)
            size += len(line) + 1
            return True

        while size < target:
            turn += 1
            if rng.random() < 0.7:
                content: object = self.text(100, 2000)
            else:
                content = [{"type": "text", "text": self.text(100, 2000)}]
                if rng.random() < 0.2:
                    content.append({"type": "text", "text": self.text(100, 600)})
            files = [f"{project}/src/{rng.choice(WORDS)}.py" for _ in range(rng.randint(0, 4))]
            if not emit({"kind": "user", "content": content, "contextFiles": files}):
                break
            if turn == 1 or rng.random() < 0.03:
                emit({"kind": "title", "title": self.text(15, 70).strip() or "untitled"})
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                messages = []
                for _ in range(rng.randint(1, 3)):
                    uses = [self.tool_use(project) for _ in range(rng.randint(1, 3))]
                    messages.append({"role": "assistant", "content": [{"type": "text", "text": self.text(50, 1500)}, *uses]})
                    messages.append({"role": "user", "content": [self.tool_result(u["id"]) for u in uses]})
                if not emit({"kind": "agent", "messages": messages}):
                    break
            if rng.random() < 0.1:
                model = rng.choice(MODELS)
            blocks: list[dict] = [{"type": "text", "text": self.text(200, 20_000)}]
            blocks += [self.tool_use(project) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
            emit({"kind": "assistant", "content": blocks, "model": model, "stopReason": "tool_use" if len(blocks) > 1 else "end_turn",
                  "usage": {"input_tokens": rng.randint(500, 180_000), "output_tokens": rng.randint(20, 8000),
                            "cache_read_input_tokens": rng.randint(0, 150_000)}})
            if rng.random() < 0.25:
                kind = rng.choice(EVENT_TYPES)
                event = {"kind": "event", "type": kind}
                if kind == "checkpoint":
                    event["ref"] = "git:" + "".join(rng.choices("0123456789abcdef", k=40))
                emit(event)
            if seq > 40 and rng.random() < 0.02:
                emit({"kind": "compact", "briefing": self.text(1000, 4000), "coversThrough": seq})
        self.stats["sessions"] += 1
        self.stats["records"] += len(out)
        return b"\n".join(out) + b"\n"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build_corpus(root: Path, size_mb: int, seed: int, say) -> dict:
    """Write about ``size_mb`` MB of journals under ``root`` (a store) and index them."""
    from toolkit.reindex import reindex
    from toolkit.stores import discover_all, slug

    marker = root / ".bench-corpus.json"
    wanted = {"generator": GENERATOR_VERSION, "size_mb": size_mb, "seed": seed}
    if marker.exists():
        info = orjson.loads(marker.read_bytes())
        if {k: info.get(k) for k in wanted} == wanted:
            say(f"reusing the corpus in {root}")
            return info
        raise SystemExit(f"{root} holds a different corpus ({ {k: info.get(k) for k in wanted} }); pick another --out")
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty and holds no benchmark corpus; pick another --out")
    started = time.perf_counter()
    corpus = Corpus(seed)
    rng = corpus.rng
    base = datetime(2026, 1, 5, 8, 0, 0, tzinfo=timezone.utc)
    total, ids, largest = 0, set(), 0
    weights = [30, 18, 14, 6, 12, 8, 7, 5]
    while total < size_mb * MB:
        project = rng.choices(PROJECTS, weights)[0]
        created = base + timedelta(seconds=rng.randint(0, 300 * 86400))
        sid = created.strftime("%Y-%m-%dT%H-%M-%S-") + "".join(rng.choices(string.ascii_lowercase + string.digits, k=4))
        if sid in ids:
            continue
        ids.add(sid)
        # session sizes: log-normal, median ~500 KB, a long tail of multi-MB agent sessions
        target = min(max(int(rng.lognormvariate(math.log(500_000), 1.3)), 6_000), 16 << 20)
        data = corpus.session(project, sid, created, target)
        folder = root / slug(project)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.jsonl").write_bytes(data)
        total += len(data)
        largest = max(largest, len(data))
    written = time.perf_counter() - started
    reindex(discover_all([root]))  # a real store has index.json; a clean corpus checks with exit 0
    info = {**wanted, "bytes": total, "files": len(ids), "projects": len({*map(slug, PROJECTS)} & {p.name for p in root.iterdir()}),
            "largest_file": largest, **corpus.stats, "build_seconds": round(written, 2)}
    marker.write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
    say(f"built {total / MB:.0f} MB in {len(ids)} journals in {written:.1f}s (+ index.json per project)")
    return info


# --- measurements -------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    what: str
    seconds: list[float] = field(default_factory=list)
    rss_mib: float | None = None  # peak RSS of one process (CLI runs)
    tree_rss_mib: float | None = None  # peak RSS summed over the process tree (multi-process CLI runs)
    exit: int | None = None
    mb_per_s: float = 0.0
    vs_bare: float | None = None

    @property
    def best(self) -> float:
        return min(self.seconds)


def journals(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.jsonl") if not any(part.startswith(".") for part in p.relative_to(root).parts))


def warm(files: list[Path]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            while chunk := handle.read(16 << 20):
                total += len(chunk)
    return total


def bare(files: list[Path]) -> int:
    """Read every file whole, split on newlines, orjson-parse every non-empty line."""
    loads = orjson.loads
    records = 0
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        for line in data.split(b"\n"):
            if line:
                loads(line)
                records += 1
    return records


def bare_parallel(files: list[Path], jobs: int = 2) -> int:
    """The bare parse in ``jobs`` processes forked with nothing in between (no pool, no queue),
    the files dealt out by size so each gets the same bytes: what this machine's cores give a
    trivially parallel reader (the ceiling for fsck --jobs)."""
    shares: list[list[Path]] = [[] for _ in range(jobs)]
    held = [0] * jobs
    for path in sorted(files, key=lambda p: p.stat().st_size, reverse=True):
        least = held.index(min(held))
        shares[least].append(path)
        held[least] += path.stat().st_size
    pids = []
    for share in shares:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if bare(share) >= 0 else 1)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return 0


def in_process(root: Path, jobs: int, strict: bool = False) -> int:
    from toolkit.fsck import check_folders
    from toolkit.stores import discover_all

    report = check_folders(discover_all([root]), jobs=jobs, strict=strict)
    if report.exit_code != 0:
        codes = sorted({f.code for f in report.findings})
        raise SystemExit(f"the corpus did not check clean (exit {report.exit_code}: {codes}); benchmark aborted")
    return report.exit_code


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("levelsess")
    if script.exists():
        return [str(script)]
    found = shutil.which("levelsess")
    return [found] if found else [sys.executable, "-m", "toolkit.cli"]




def run_cli(args: list[str], sample_tree: bool = False) -> tuple[float, int, float | None]:
    """Run a command; return (wall seconds, exit code, peak RSS MiB summed over its process tree)."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
        tree_peak: list[float] = [0.0]
        stop = threading.Event()
        sampler = None
        if sample_tree:
            sampler = threading.Thread(target=_sample_tree, args=(proc.pid, stop, tree_peak), daemon=True)
            sampler.start()
        out = proc.stdout.read()
        proc.stdout.close()
        proc.wait()
        wall = time.perf_counter() - started
        stop.set()
        if sampler:
            sampler.join()
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{err.read().decode(errors='replace')[-2000:]}")
    doc = orjson.loads(out) if out.startswith(b"{") else {"exit": 0}  # --version prints text
    if doc["exit"] != 0:
        raise SystemExit(f"the CLI did not report the corpus clean: {[f['code'] for f in doc['findings']][:10]}")
    return wall, proc.returncode, (tree_peak[0] or None)


def probe_rss(cli_args: list[str], sample_tree: bool) -> tuple[float, float | None]:
    """Run ``levelsess CLI_ARGS`` under PROBE; return (peak RSS MiB of the CLI process, tree peak MiB)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "rss"
        _, _, tree = run_cli([sys.executable, "-c", PROBE, str(report), *cli_args], sample_tree)
        return int(report.read_text()) / MIB, tree


def _sample_tree(pid: int, stop: threading.Event, peak: list[float]) -> None:
    import psutil

    try:
        parent = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            procs = [parent, *parent.children(recursive=True)]
            rss = 0
            for proc in procs:
                try:
                    rss += proc.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], rss / MIB)
        except psutil.Error:
            return
        stop.wait(0.02)


def measure(name: str, what: str, repeat: int, fn) -> Result:
    result = Result(name, what)
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        fn()
        result.seconds.append(time.perf_counter() - started)
    return result


def interleaved(repeat: int, runs: list[tuple[str, str, object]]) -> list[Result]:
    """Time each ``(name, what, fn)`` ``repeat`` times, round by round (a, b, c, a, b, c, ...), so
    that a machine getting slower or faster during the run moves every figure alike and the ratios
    stay fair; ``fn`` returns its own wall time, or None to be timed here."""
    results = [Result(name, what) for name, what, _ in runs]
    for _ in range(repeat):
        for result, (_name, _what, fn) in zip(results, runs):
            gc.collect()
            started = time.perf_counter()
            took = fn()
            result.seconds.append(took if isinstance(took, float) else time.perf_counter() - started)
    return results


def measure_cli(name: str, what: str, repeat: int, cli: list[str], cli_args: list[str], tree: bool) -> Result:
    """Time the real console script; then one run under PROBE (and, for --jobs > 1, psutil) for memory."""
    result = Result(name, what)
    for _ in range(repeat):
        wall, code, _ = run_cli([*cli, *cli_args])
        result.seconds.append(wall)
        result.exit = code
    rss, tree_rss = probe_rss(cli_args, tree)  # not timed: the sampler costs a little CPU
    result.rss_mib = round(rss, 1)
    result.tree_rss_mib = round(tree_rss, 1) if tree_rss else None
    return result


def profile_check(root: Path, top: int = 15) -> str:
    from toolkit.fsck import check_folders
    from toolkit.stores import discover_all

    profiler = cProfile.Profile()
    profiler.enable()
    check_folders(discover_all([root]), jobs=1)
    profiler.disable()
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(top)
    return buffer.getvalue()


# --- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=300, help="corpus size in MB (10**6 bytes), default 300")
    parser.add_argument("--out", type=Path, help="build (or reuse) the corpus here and keep it")
    parser.add_argument("--keep", action="store_true", help="keep the temporary corpus and print where it is")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept (default 3)")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess runs")
    parser.add_argument("--no-strict", action="store_true", help="skip the --strict runs")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile (top 15 by tottime) of the jobs=1 check")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document (progress goes to stderr)")
    args = parser.parse_args(argv)

    log = sys.stderr if args.json else sys.stdout

    def say(message: str) -> None:
        print(message, file=log, flush=True)

    if args.out:
        root, temp = args.out.resolve(), None
        root.mkdir(parents=True, exist_ok=True)
    else:
        temp = Path(tempfile.mkdtemp(prefix="levelsess-bench-"))
        root = temp / "sessions"
        root.mkdir()
    try:
        info = build_corpus(root, args.size_mb, args.seed, say)
        files = journals(root)
        size = sum(p.stat().st_size for p in files)
        warm(files)
        warm(files)
        say(f"page cache warmed: every journal was read once before timing, so the runs measure CPU, not disk")
        records = bare(files)
        results: list[Result] = []
        say("measuring the bare parse and check_folders (in process), round by round ...")
        results += interleaved(args.repeat, [
            ("bare", "read whole file, split b'\\n', orjson.loads each line", lambda: bare(files)),
            ("check j1", "check_folders(discover_all([root]), jobs=1)", lambda: in_process(root, 1)),
            ("check j2", "check_folders(discover_all([root]), jobs=2)", lambda: in_process(root, 2)),
            ("bare j2", "the bare parse in 2 forked processes (the cores' own ceiling)", lambda: bare_parallel(files, 2))])
        cli = cli_command()
        if not args.no_cli:
            say(f"measuring the CLI ({' '.join(cli)}) ...")
            startup = measure_cli("cli start", "levelsess --version (interpreter + import cost)", args.repeat, cli, ["--version"], False)
            cli_args = {"cli j1": ["fsck", "--json", str(root), "--jobs", "1"], "cli j2": ["fsck", "--json", str(root), "--jobs", "2"]}
            timed_cli = interleaved(args.repeat, [(name, "levelsess " + " ".join(a).replace(str(root), "ROOT"),
                                                   lambda a=a: float(run_cli([*cli, *a])[0])) for name, a in cli_args.items()])
            for result in timed_cli:  # memory: one more, untimed run each
                rss, tree_rss = probe_rss(cli_args[result.name], result.name == "cli j2")
                result.rss_mib, result.tree_rss_mib = round(rss, 1), (round(tree_rss, 1) if tree_rss else None)
                result.exit = 0
            results += timed_cli
        if not args.no_strict:
            say("measuring --strict ...")
            results.append(measure("strict j1", "check_folders(..., strict=True, jobs=1)", args.repeat, lambda: in_process(root, 1, strict=True)))
            if not args.no_cli:
                results.append(measure_cli("cli strict j1", "levelsess fsck --json --strict ROOT --jobs 1", args.repeat,
                                           cli, ["fsck", "--json", "--strict", str(root), "--jobs", "1"], False))
        bare_speed = size / MB / results[0].best
        for result in results:
            result.mb_per_s = round(size / MB / result.best, 1)
            result.vs_bare = round(result.mb_per_s / bare_speed, 3)
        by_name = {r.name: r for r in results}
        verdicts = _verdicts(by_name)
        profile = profile_check(root) if args.profile else None
        doc = {
            "corpus": {**{k: info[k] for k in ("files", "projects", "sessions", "records", "largest_file", "big_tool_results", "big_bytes", "seed") if k in info},
                       "bytes": size, "lines": records, "path": str(root)},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "orjson": orjson.__version__,
                        "platform": platform.platform(), "cli": cli},
            "note": "page cache warmed before timing (runs measure CPU, not disk); best of "
                    f"{args.repeat}; MB = 10**6 bytes",
            "results": [{**asdict(r), "best": round(r.best, 3), "seconds": [round(s, 3) for s in r.seconds]} for r in results],
            "verdicts": verdicts,
        }
        if not args.no_cli:
            doc["cli_startup_seconds"] = round(startup.best, 3)
            doc["cli_startup_rss_mib"] = startup.rss_mib
        if profile:
            doc["profile"] = profile
        if args.json:
            print(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            _print_table(doc, results, startup if not args.no_cli else None)
            if profile:
                print("\ncProfile of check_folders(jobs=1), top 15 by tottime:\n" + profile)
        if temp and args.keep:
            say(f"corpus kept at {root}")
        return 0
    finally:
        if temp and not args.keep:
            shutil.rmtree(temp, ignore_errors=True)


def _verdicts(by_name: dict[str, Result]) -> dict:
    out: dict[str, dict] = {}
    if "check j1" in by_name:
        ratio = by_name["check j1"].vs_bare
        out["one core >= 0.9x bare (issue 16)"] = {"value": ratio, "ok": ratio >= 0.9}
    if "check j2" in by_name:
        speedup = by_name["check j1"].best / by_name["check j2"].best
        out["jobs=2 speed-up over jobs=1 >= 1.7x (issue 16)"] = {"value": round(speedup, 2), "ok": speedup >= 1.7}
        if "bare j2" in by_name:
            ceiling = by_name["bare"].best / by_name["bare j2"].best
            out["bare parse's own 2-process speed-up (this machine's ceiling)"] = {"value": round(ceiling, 2), "ok": None}
    if "cli j1" in by_name and "cli j2" in by_name:  # start-up and the report are in both: they do not split
        out["the same through the CLI (start-up included; not a target)"] = {
            "value": round(by_name["cli j1"].best / by_name["cli j2"].best, 2), "ok": None}
    if "strict j1" in by_name:
        out["--strict >= 50 MB/s"] = {"value": by_name["strict j1"].mb_per_s, "ok": by_name["strict j1"].mb_per_s >= 50}
    peaks = [r.rss_mib for r in by_name.values() if r.rss_mib is not None and r.name != "cli start"]
    if peaks:
        out["CLI peak RSS < 100 MiB (per process)"] = {"value": max(peaks), "ok": max(peaks) < 100}
    return out


def _print_table(doc: dict, results: list[Result], startup: Result | None) -> None:
    corpus, machine = doc["corpus"], doc["machine"]
    print()
    print(f"corpus: {corpus['bytes'] / MB:.1f} MB, {corpus['files']} journals in {corpus['projects']} projects, "
          f"{corpus['lines']} lines (mean {corpus['bytes'] / corpus['lines'] / 1000:.1f} KB), largest {corpus['largest_file'] / MB:.1f} MB, "
          f"{corpus.get('big_tool_results', '?')} tool results of 100 KB-2 MB ({corpus.get('big_bytes', 0) / MB:.0f} MB)  [seed {corpus.get('seed')}]")
    print(f"machine: {machine['cpus']} CPUs, Python {machine['python']}, orjson {machine['orjson']}, {machine['platform']}")
    print(f"{doc['note']}")
    if startup is not None:
        print(f"CLI start-up (levelsess --version): {startup.best:.3f}s, peak RSS {startup.rss_mib} MiB")
    print()
    header = f"{'run':<14} {'best s':>8} {'worst s':>8} {'MB/s':>8} {'x bare':>7} {'peak RSS':>9} {'tree RSS':>9}  what"
    print(header)
    print("-" * (len(header) + 40))
    for r in results:
        rss = f"{r.rss_mib:.0f} MiB" if r.rss_mib is not None else "-"
        tree = f"{r.tree_rss_mib:.0f} MiB" if r.tree_rss_mib is not None else "-"
        print(f"{r.name:<14} {r.best:>8.3f} {max(r.seconds):>8.3f} {r.mb_per_s:>8.1f} {r.vs_bare:>7.2f} {rss:>9} {tree:>9}  {r.what}")
    print()
    print("peak RSS: VmHWM of the CLI process itself (with --jobs 2: the parent, not its workers), from one")
    print("extra untimed run of toolkit.cli.main under a probe; tree RSS: psutil sum over the process tree,")
    print("sampled every 20 ms during that run.  CLI times are wall clock of the console script, start-up")
    print("included.  MB/s and x bare use the best time; worst shows the spread.")
    print()
    for name, verdict in doc["verdicts"].items():
        mark = "info" if verdict["ok"] is None else "ok" if verdict["ok"] else "BELOW TARGET"
        print(f"  [{mark}] {name}: {verdict['value']}")


if __name__ == "__main__":
    sys.exit(main())
