"""The kill -9 harness (DESIGN.md §7): start writers, SIGKILL them at seeded random moments,
then prove that no acknowledged record was lost.

Each cycle starts ``writers`` writer processes on a chaos folder (a LevelCode store under
``store/`` and a Logician workspace under ``ws/``), reads their ``ACK`` lines, kills each one
with SIGKILL (psutil, whole process tree) at its own random moment, and then checks, before
and after ``fsck --repair``:

* every ACKed record is present, byte-identical, ending at its ACKed offset (``lost``);
* bytes before the last ACKed end never change, and a repair removes only what lies past it
  (``trimmed_bytes``);
* a file whose only damage lies past its last ACKed record gets no corruption error
  (``false_corruption``);
* index.json never lists more bytes than its journal holds, meta.json never counts more
  entries than are durable (``meta-ahead``), and after the repair every cache equals a rebuild;
* every lock left by a killed writer is judged stale.

``power-loss`` mode additionally cuts each journal back to a random offset at or past its last
ACKed end, and may zero-fill the cut region, before checking.  Journals carry over from cycle
to cycle (writers resume them, as an editor does after a crash) until the folder passes a size
budget or a cycle finds a violation; then a fresh folder is used.  The library never prints:
:func:`run` returns a :class:`Report` and calls ``on_cycle`` after every cycle.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import orjson
import psutil

from toolkit import durable
from toolkit.errors import LevelsessError, UsageError
from toolkit.fsck import check_folders, plan_repair
from toolkit.locks import LockState, inspect_lock
from toolkit.reindex import reindex
from toolkit.stores import discover_all

from .writer import MAX_RECORD, UNSAFE

BUDGET = 96 << 20  # start a fresh chaos folder once the journals pass this size
TAIL_CODES = {"torn-tail", "unterminated-tail"}


@dataclass
class Config:
    cycles: int | None = None
    duration: float | None = None
    writers: int = 2
    seed: int = 0
    mode: str = "kill"  # kill | power-loss
    layout: str = "both"  # levelcode | logician | both
    unsafe: str | None = None
    shared_file: bool = False
    no_lock: bool = False
    writer_cmd: str | None = None
    largest: int = MAX_RECORD
    min_run: float = 0.05
    max_run: float = 0.6
    out: Path | None = None
    keep: bool = False
    work: Path | None = None
    replay: int | None = None  # run cycle N's seeds (writers and kill moments) every cycle

    def command(self, cycles: int | None = None) -> str:
        """The ``levelsess chaos run`` command line that reproduces this configuration."""
        cycles = self.cycles if cycles is None else cycles
        parts = ["levelsess", "chaos", "run", "--seed", str(self.seed), "--writers", str(self.writers), "--mode", self.mode,
                 "--layout", self.layout, "--largest", str(self.largest)]
        if cycles is not None:
            parts += ["--cycles", str(cycles)]
        elif self.duration is not None:
            parts += ["--duration", str(self.duration)]
        if self.unsafe:
            parts += ["--unsafe", self.unsafe]
        if self.shared_file:
            parts.append("--shared-file")
        if self.no_lock:
            parts.append("--no-lock")
        if self.writer_cmd:
            parts += ["--writer-cmd", shlex.quote(self.writer_cmd)]
        if self.replay is not None:
            parts += ["--replay", str(self.replay)]
        return " ".join(parts)


@dataclass
class Report:
    seed: int
    mode: str
    cycles: int = 0
    kills: int = 0
    acked: int = 0
    lost: int = 0
    trimmed_bytes: int = 0
    false_corruption: int = 0
    torn_records: int = 0
    mid_run_kills: int = 0  # --target: kills that left the store part-way done
    violations: list[dict] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.lost == 0 and not self.violations

    @property
    def cycles_per_minute(self) -> float:
        return self.cycles * 60 / self.elapsed if self.elapsed else 0.0

    def to_json(self) -> dict:
        document = asdict(self)
        if not self.mode.startswith("target:"):
            document.pop("mid_run_kills")
        document["cycles_per_minute"] = round(self.cycles_per_minute, 1)
        document["elapsed"] = round(self.elapsed, 2)
        return document


# --- writer processes ---------------------------------------------------------------------


@dataclass
class _Proc:
    popen: subprocess.Popen
    acks: list[tuple[str, int, str]]
    reader: threading.Thread


def _read_acks(stream, sink: list) -> None:
    for raw in stream:
        parts = raw.split()
        if len(parts) == 4 and parts[0] == b"ACK" and parts[2].isdigit():
            sink.append((parts[1].decode(), int(parts[2]), parts[3].decode()))


def _writer_argv(config: Config, index: int) -> list[str]:
    if config.writer_cmd:
        return shlex.split(config.writer_cmd)
    layouts = {"levelcode": ["levelcode"], "logician": ["logician"], "both": ["levelcode", "logician"]}[config.layout]
    argv = [sys.executable, "-m", "chaos.writer", "--name", f"w{index:03d}", "--layout", layouts[index % len(layouts)],
            "--largest", str(config.largest)]
    if config.unsafe:
        argv += ["--unsafe", config.unsafe]
    if config.shared_file:
        argv.append("--shared-file")
    if config.no_lock:
        argv.append("--no-lock")
    return argv


def _start(config: Config, folder: Path, seed: str, index: int) -> _Proc:
    env = {**os.environ, "LEVELSESS_CHAOS_DIR": str(folder), "LEVELSESS_CHAOS_SEED": seed,
           "LEVELSESS_CHAOS_WRITER": str(index)}
    popen = subprocess.Popen(_writer_argv(config, index), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=env, cwd=folder)
    acks: list = []
    reader = threading.Thread(target=_read_acks, args=(popen.stdout, acks), daemon=True)
    reader.start()
    return _Proc(popen, acks, reader)


def kill_tree(pid: int) -> bool:
    """SIGKILL a process and its descendants; True if the process was still running."""
    try:
        parent = psutil.Process(pid)
        family = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    alive = parent.status() != psutil.STATUS_ZOMBIE
    for process in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    return alive


@dataclass(frozen=True)
class WriteWindow:
    """When a command changed files under a folder, in seconds from its start (polled)."""

    took: float
    first: float | None = None
    last: float | None = None

    def kill_moment(self, rng: random.Random, floor: float = 0.0) -> float:
        """A seeded moment to SIGKILL a rerun of the command: mostly inside the writing
        window (where a kill proves something), sometimes anywhere in the run."""
        if self.first is None or self.last is None or rng.random() < 0.2:
            return rng.uniform(min(floor, self.took), self.took)
        return rng.uniform(self.first * 0.9, min(self.last + 0.01, self.took))


def _fingerprint(root: Path) -> frozenset:
    seen = []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(folder, name))
                seen.append((folder, name, st.st_size, st.st_mtime_ns))
    return frozenset(seen)


def watch_writes(proc: subprocess.Popen, root: Path, started: float, interval: float = 0.004) -> WriteWindow:
    """Wait for ``proc`` while polling ``root``; learn when it first and last changed a file."""
    before = _fingerprint(root)
    first = last = None
    while proc.poll() is None:
        time.sleep(interval)
        now = _fingerprint(root)
        if now != before:
            moment = time.monotonic() - started
            first = moment if first is None else first
            last, before = moment, now
    took = time.monotonic() - started
    if _fingerprint(root) != before:
        first = took if first is None else first
        last = took
    return WriteWindow(took, first, last)


# --- checking -----------------------------------------------------------------------------


def _record_ok(data: bytes, end: int, digest: str) -> bool:
    if end < 1 or end > len(data) or data[end - 1] != 10:
        return False
    start = data.rfind(b"\n", 0, end - 1) + 1
    return hashlib.sha256(data[start : end - 1]).hexdigest() == digest


def _journals(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jsonl") if ".levelsess" not in p.parts)


class _Cycle:
    """Verification of one cycle; appends to the shared report."""

    def __init__(self, harness: Harness, number: int) -> None:
        self.h, self.number, self.report = harness, number, harness.report
        self.folder = harness.folder
        self.bad_files: set[str] = set()
        self.missing: set[tuple[int, str]] = set()
        self.found: list[dict] = []

    def violation(self, kind: str, path: str | None, detail: str) -> None:
        self.found.append({"cycle": self.number, "kind": kind, "path": path, "detail": detail})

    def check_acks(self, stage: str) -> dict[str, bytes]:
        contents = {}
        for relpath, acks in self.h.acks.items():
            try:
                data = (self.folder / relpath).read_bytes()
            except OSError:
                data = b""
            contents[relpath] = data
            missing = {(end, digest) for end, digest in acks if not _record_ok(data, end, digest)} - self.missing
            if missing:
                self.bad_files.add(relpath)
                self.missing |= missing
                self.report.lost += len(missing)
                first = min(missing)[0]
                if stage == "after-kill":
                    self.violation("lost", relpath, f"{len(missing)} ACKed record(s) missing or changed after the kill, first ending at {first}")
                else:
                    self.violation("repair-removed-acked", relpath, f"{len(missing)} more ACKed record(s) gone after fsck --repair, first ending at {first}")
        return contents

    def check_locks(self) -> None:
        for lock in self.folder.rglob("*.jsonl.lock"):
            info = inspect_lock(lock)
            if info is not None and info.state is not LockState.STALE:
                self.violation("lock-not-stale", str(lock.relative_to(self.folder)), f"a killed writer's lock was judged {info.state.value}: {info.reason}")

    def check_indexes(self) -> None:
        for index in self.folder.rglob("index.json"):
            try:
                document = orjson.loads(index.read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                self.violation("cache-torn", str(index.relative_to(self.folder)), f"index.json is not whole JSON: {exc}")
                continue
            sessions = document.get("sessions", []) if isinstance(document, dict) else document
            for entry in sessions if isinstance(sessions, list) else []:
                journal = index.parent / f"{entry.get('id')}.jsonl"
                size = journal.stat().st_size if journal.exists() else 0
                if isinstance(entry.get("bytes"), int) and entry["bytes"] > size:
                    self.violation("index-ahead", str(index.relative_to(self.folder)),
                                   f"index lists {entry['bytes']} bytes for {journal.name}, which holds {size}")

    def power_loss(self, rng: random.Random) -> None:
        """Cut each journal back to a random offset at or past its last ACKed end; maybe zero-fill."""
        for journal in _journals(self.folder):
            relpath = str(journal.relative_to(self.folder))
            acked = max((end for end, _ in self.h.acks.get(relpath, [])), default=0)
            size = journal.stat().st_size
            if size <= acked:
                continue
            cut = rng.randint(acked, size)
            with open(journal, "r+b") as handle:
                handle.truncate(cut)
                if cut > acked and rng.random() < 0.5:
                    handle.seek(acked)
                    handle.write(b"\0" * (cut - acked))

    def fsck_and_repair(self) -> None:
        folders = discover_all([p for p in (self.folder / "store", self.folder / "ws") if p.exists()])
        report = check_folders(folders, force=False)
        for finding in report.findings:
            relpath = os.path.relpath(finding.path, self.folder)
            if finding.code == "meta-ahead":
                self.violation("meta-ahead", relpath, finding.message)
            elif finding.code == "locked":
                self.violation("lock-not-stale", relpath, finding.message)
            elif finding.severity == "error" and finding.code not in TAIL_CODES and relpath not in self.bad_files:
                if self.h.config.shared_file and self.h.config.no_lock:  # real damage: writers without the lock
                    self.violation("corruption", relpath, f"{finding.code} at line {finding.line}: {finding.message}")
                else:
                    self.report.false_corruption += 1
                    self.violation("false-corruption", relpath, f"{finding.code} at line {finding.line}: {finding.message}")
        sizes = {j: j.stat().st_size for j in _journals(self.folder)}
        if self.found:
            self.h.keep_reproducer(self)
        result = plan_repair(report, force=False).execute()
        if result.exit_code & 8:
            self.violation("repair-failed", None, "; ".join(f.message for f in result.findings if f.code == "repair-failed"))
        for journal, before in sizes.items():
            self.report.trimmed_bytes += max(0, before - journal.stat().st_size) if journal.exists() else before
        drift = reindex(discover_all([p for p in (self.folder / "store", self.folder / "ws") if p.exists()]), check_only=True)
        for finding in drift.findings:
            if finding.code not in ("future-version",):
                self.violation("cache-drift", os.path.relpath(finding.path, self.folder), f"after fsck --repair: {finding.message}")


class Harness:
    def __init__(self, config: Config, on_cycle: Callable[[Report], None] | None = None) -> None:
        self.config = config
        self.report = Report(seed=config.seed, mode=config.mode)
        self.on_cycle = on_cycle or (lambda report: None)
        self.root = Path(config.work) if config.work else Path(tempfile.mkdtemp(prefix="levelsess-chaos-"))
        self.generation = 0
        self.folder = self.root
        self.acks: dict[str, list[tuple[int, str]]] = {}
        self.procs: list[_Proc] = []

    def fresh_folder(self) -> None:
        self.generation += 1
        self.folder = self.root / f"run-{self.generation:04d}"
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        self.acks = {}

    def keep_reproducer(self, cycle: _Cycle) -> None:
        if self.config.out is None:
            return
        target = Path(self.config.out) / f"cycle-{cycle.number:05d}"
        if target.exists():
            return
        shutil.copytree(self.folder, target / "files", symlinks=True)
        repro = {"seed": self.config.seed, "cycle": cycle.number, "command": self.config.command(),
                 "replay": replace(self.config, replay=cycle.number).command(cycles=10),
                 "violations": cycle.found, "acks": {k: v for k, v in self.acks.items()}}
        durable.atomic_write(target / "repro.json", orjson.dumps(repro, option=orjson.OPT_INDENT_2))

    def cycle(self, number: int) -> None:
        config, report = self.config, self.report
        if number == 0 or config.replay is not None or self.folder_bytes() > BUDGET:
            self.fresh_folder()
        which = config.replay if config.replay is not None else number
        seed = f"{config.seed}-{which}"
        rng = random.Random(f"{seed}-harness")  # this cycle's kill moments and power cuts
        procs = self.procs = [_start(config, self.folder, seed, i) for i in range(config.writers)]
        started = time.monotonic()
        deadlines = sorted((rng.uniform(config.min_run, config.max_run), i) for i in range(config.writers))
        try:
            for deadline, i in deadlines:
                delay = started + deadline - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if kill_tree(procs[i].popen.pid):
                    report.kills += 1
        finally:
            for proc in procs:
                kill_tree(proc.popen.pid)
                proc.popen.wait()
                proc.reader.join(timeout=10)
                proc.popen.stdout.close()
            self.procs = []
        for proc in procs:
            for relpath, end, digest in proc.acks:
                self.acks.setdefault(relpath, []).append((end, digest))
                report.acked += 1
        check = _Cycle(self, number)
        for journal in _journals(self.folder):
            data = journal.read_bytes()
            relpath = str(journal.relative_to(self.folder))
            acked = max((end for end, _ in self.acks.get(relpath, [])), default=0)
            if data.rfind(b"\n") + 1 < len(data) and len(data) > acked:
                report.torn_records += 1
        check.check_acks("after-kill")
        check.check_locks()
        check.check_indexes()
        if config.mode == "power-loss":
            check.power_loss(rng)
        try:
            check.fsck_and_repair()
        except LevelsessError as exc:  # a typed error from levelsess itself is a finding, not the end of the run
            check.violation("check-failed", None, f"fsck --repair raised {type(exc).__name__}: {exc}")
            self.keep_reproducer(check)
        check.check_acks("after-repair")
        report.cycles += 1
        if check.found:
            report.violations.extend(check.found)
            self.keep_reproducer(check)
            self.fresh_folder()  # a damaged folder would fail every later cycle too

    def folder_bytes(self) -> int:
        return sum(j.stat().st_size for j in _journals(self.folder)) if self.folder.exists() else 0

    def run(self) -> Report:
        config = self.config
        cycles = config.cycles if config.cycles is not None else (None if config.duration else 20)
        started = time.monotonic()
        number = 0
        try:
            while True:
                if cycles is not None and number >= cycles:
                    break
                if config.duration is not None and time.monotonic() - started >= config.duration:
                    break
                self.cycle(number)
                number += 1
                self.report.elapsed = time.monotonic() - started
                self.on_cycle(self.report)
        finally:
            for proc in self.procs:
                kill_tree(proc.popen.pid)
                proc.popen.wait()
            self.report.elapsed = time.monotonic() - started
            if not config.keep and not config.work:
                shutil.rmtree(self.root, ignore_errors=True)
        return self.report


def validate(config: Config) -> None:
    if config.mode not in ("kill", "power-loss"):
        raise UsageError(f"--mode {config.mode}: choose kill or power-loss")
    if config.writers < 1:
        raise UsageError("--writers must be at least 1")
    if config.unsafe and config.unsafe not in UNSAFE:
        raise UsageError(f"--unsafe {config.unsafe}: choose one of {', '.join(sorted(UNSAFE))}")
    if config.unsafe and config.writer_cmd:
        raise UsageError("--unsafe and --writer-cmd pick the writer two ways; give one")
    if not 0 <= config.min_run <= config.max_run:
        raise UsageError("--min-run must be between 0 and --max-run")


def run(config: Config, on_cycle: Callable[[Report], None] | None = None) -> Report:
    """Run the kill -9 cycles of ``config`` and return the report."""
    validate(config)
    return Harness(config, on_cycle).run()
