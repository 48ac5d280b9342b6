"""The kill -9 harness (DESIGN.md §7): start writers, SIGKILL them at seeded random moments,
then prove that no acknowledged record was lost.

Each cycle starts ``writers`` writer processes on a chaos folder (the reference writers keep
a LevelCode store under ``store/`` and a Logician workspace under ``ws/``; an external writer
may use any place a layout keeps journals, the chaos folder itself included: see
:mod:`chaos.scope`), reads their ``ACK`` lines, kills each one with SIGKILL (psutil, whole
process tree) at its own random moment, and then checks, before and after ``fsck --repair`` of
every journal under the chaos folder:

* every ACKed record is present, byte-identical, ending at its ACKed offset (``lost``);
* bytes before the last ACKed end never change, and a repair removes only what lies past it
  (``trimmed_bytes``);
* a file whose only damage lies past its last ACKed record gets no corruption error
  (``false_corruption``);
* index.json never lists more bytes than its journal holds, meta.json never counts more
  entries than are durable (``meta-ahead``), and after the repair every cache equals a rebuild;
* every lock left by a killed writer is judged stale;
* every ACKed file was checked: one no discovery finds, or of a format levelsess does not
  know, is ``unchecked`` (never a silent pass);
* the writers kept the protocol: none exited on its own before its kill (``writer-exited``),
  every stdout line was an ACK line (``protocol``), and a cycle in which no writer ACKed while
  running ``ack_timeout`` seconds is a ``no-ack`` (until the first ACK of a run, a writer's
  kill waits for it, so a slow start-up is never mistaken for silence).

``power-loss`` mode additionally cuts each journal back to a random offset at or past its last
ACKed end and what it held when the cycle began, and may zero-fill the cut region, before
checking; that simulation never goes below an ACK, so it cannot catch a writer that ACKs
before fsync.  ``power-loss`` with ``fs="lazyfs"`` runs the writers on a LazyFS mount
(:mod:`chaos.lazyfs`) and, after the kills, drops every unsynced byte (a real power cut) before
checking: that catches it.  Every cycle also counts
where the kill (and the cut) left each journal it wrote: mid-record (``torn``), after a whole
record but before its newline (``unterminated``), or ``between`` records.  Journals carry over from cycle
to cycle (writers resume them, as an editor does after a crash) until the folder passes a size
budget or a cycle finds a violation; then a fresh folder is used.  The library never prints:
:func:`run` returns a :class:`Report` and calls ``on_cycle`` after every cycle.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import re
import shlex
import shutil
import signal
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

from . import lazyfs as lazyfs_mount
from .scope import LANDINGS, changed_since, count_landings, file_sizes, journals, snapshot
from .verify import CycleCheck
from .writer import MAX_RECORD, UNSAFE

BUDGET = 96 << 20  # start a fresh chaos folder once the journals pass this size
ACK_TIMEOUT = 10.0  # seconds a writer may take from its start to its first ACK (see Harness.await_first_ack)
MAX_LINE = 8192  # longest stdout line read whole; a longer one is a protocol error
EXAMPLES = 3  # protocol-error lines quoted per writer
WRITER_HINT = "give a command that speaks the ACK protocol (see `levelsess chaos writer --help`)"
_DIGEST = re.compile(rb"[0-9a-f]{64}")


@dataclass
class Config:
    cycles: int | None = None
    duration: float | None = None
    writers: int = 2
    seed: int = 0
    mode: str = "kill"  # kill | power-loss
    fs: str = "disk"  # disk | lazyfs (power-loss only: a real power cut on a LazyFS mount)
    lazyfs: str | None = None  # the LazyFS program (else $LEVELSESS_LAZYFS, else PATH)
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
    ack_timeout: float = ACK_TIMEOUT  # a writer silent (no ACK, still running) this long is a "no-ack" violation

    def command(self, cycles: int | None = None) -> str:
        """The ``levelsess chaos run`` command line that reproduces this configuration."""
        cycles = self.cycles if cycles is None else cycles
        parts = ["levelsess", "chaos", "run", "--seed", str(self.seed), "--writers", str(self.writers), "--mode", self.mode,
                 "--layout", self.layout, "--largest", str(self.largest)]
        if self.fs != "disk":
            parts += ["--fs", self.fs]
        if self.lazyfs:
            parts += ["--lazyfs", shlex.quote(str(self.lazyfs))]
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
    fs: str = "disk"
    landings: dict[str, dict[str, int]] = field(default_factory=dict)  # per cycle kind: torn / unterminated / between
    discarded_bytes: int = 0  # --fs lazyfs: bytes the power cuts dropped (sizes through the mount, before minus after)
    dropped_cycles: int = 0  # --fs lazyfs: cycles whose power cut dropped at least one byte
    cache_full: int = 0  # --fs lazyfs: cycles that filled LazyFS's cache (it then writes through: unsynced bytes survive)
    violations: list[dict] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.lost == 0 and not self.violations

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 4  # something lost or a violation: problems left uncorrected

    @property
    def cycles_per_minute(self) -> float:
        return self.cycles * 60 / self.elapsed if self.elapsed else 0.0

    def to_json(self, command: str | None = None) -> dict:
        """The counts so far; with ``command`` (the run's command line), the whole --json document."""
        if command is not None:
            return {"version": 1, **self.to_json(), "command": command, "exit": self.exit_code}
        document = asdict(self)
        if not self.mode.startswith("target:"):
            document.pop("mid_run_kills")
        else:
            document.pop("landings")
        if self.fs != "lazyfs":
            for key in ("discarded_bytes", "dropped_cycles", "cache_full"):
                document.pop(key)
        document["cycles_per_minute"] = round(self.cycles_per_minute, 1)
        document["elapsed"] = round(self.elapsed, 2)
        return document


# --- writer processes ---------------------------------------------------------------------


@dataclass
class _Proc:
    """One writer process and what its stdout (and stderr) said, filled by reader threads."""

    popen: subprocess.Popen
    index: int
    started: float
    acks: list[tuple[str, int, str]] = field(default_factory=list)
    bad_lines: int = 0  # stdout lines that are not ACK lines (the protocol errors)
    bad_examples: list[bytes] = field(default_factory=list)
    stderr_tail: bytes = b""
    readers: list[threading.Thread] = field(default_factory=list)

    def close(self, timeout: float = 10) -> None:
        """Reap the (already killed) process and its reader threads."""
        self.popen.wait()
        for reader in self.readers:
            reader.join(timeout=timeout)
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()

    def killed_by_us(self) -> bool:
        return self.popen.returncode == -signal.SIGKILL


def _parse_ack(line: bytes) -> tuple[str, int, str] | None:
    """``ACK <relpath> <end-offset> <sha256>`` (DESIGN.md §7), or None if ``line`` is not one."""
    parts = line.split()
    if len(parts) != 4 or parts[0] != b"ACK" or not parts[2].isdigit() or not _DIGEST.fullmatch(parts[3]):
        return None
    try:
        relpath = parts[1].decode()
    except UnicodeDecodeError:
        return None
    if os.path.isabs(relpath) or ".." in Path(relpath).parts:
        return None  # relpath is from the chaos folder and stays inside it
    return os.path.normpath(relpath), int(parts[2]), parts[3].decode()  # ./store/x and store//x name store/x


def _read_acks(stream, proc: _Proc) -> None:
    """Collect the ACK lines; count (and keep a few of) the lines that are not.  A final line
    without its newline was cut by the kill: it is neither an ACK nor a protocol error."""
    while True:
        line = stream.readline(MAX_LINE)
        if not line:
            return
        if not line.endswith(b"\n"):
            if len(line) < MAX_LINE:
                return  # the torn last line of a killed writer
            while line and not line.endswith(b"\n"):  # an over-long line: skip the rest of it
                line = stream.readline(MAX_LINE)
            line = b"<a line longer than %d bytes>" % MAX_LINE
            ack = None
        else:
            ack = _parse_ack(line)
        if ack is not None:
            proc.acks.append(ack)
        else:
            proc.bad_lines += 1
            if len(proc.bad_examples) < EXAMPLES:
                proc.bad_examples.append(line.rstrip(b"\r\n")[:120])


def _read_stderr(stream, proc: _Proc) -> None:
    """Keep the last bytes of a writer's stderr (drained, so a chatty writer never blocks)."""
    for chunk in iter(lambda: stream.read1(4096), b""):
        proc.stderr_tail = (proc.stderr_tail + chunk)[-2000:]


def external_argv(command: str) -> tuple[list[str], str]:
    """Parse ``--writer-cmd`` and find its program: (argv, executable) or a UsageError.

    A program given with a slash is made absolute here: the writer runs inside the chaos
    folder, where a relative path would name something else than what was checked."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--writer-cmd {command!r} is not a command line: {exc}", hint=WRITER_HINT) from None
    if not argv:
        raise UsageError("--writer-cmd is empty", hint=WRITER_HINT)
    typed = program = argv[0]
    if os.sep in program:
        program = argv[0] = os.path.abspath(program)
        if not os.path.exists(program):
            reason = os.strerror(errno.ENOENT)
        elif os.path.isdir(program):
            reason = os.strerror(errno.EISDIR)
        elif not os.access(program, os.X_OK):
            reason = f"{os.strerror(errno.EACCES)} (not executable)"
        else:
            return argv, program
    else:
        found = shutil.which(program)
        if found is not None:
            return argv, os.path.abspath(found)
        reason = "not found on PATH"
    raise UsageError(f"--writer-cmd: cannot start {typed!r}: {reason}", hint=WRITER_HINT)


def _writer_argv(config: Config, index: int) -> list[str]:
    if config.writer_cmd is not None:
        return external_argv(config.writer_cmd)[0]
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
    argv = _writer_argv(config, index)
    executable = external_argv(config.writer_cmd)[1] if config.writer_cmd is not None else None
    try:
        popen = subprocess.Popen(argv, executable=executable, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, env=env, cwd=folder)
    except OSError as exc:  # checked by validate(); this catches what only exec can tell (e.g. no #! line)
        if config.writer_cmd is None:
            raise
        raise UsageError(f"--writer-cmd: cannot start {argv[0]!r}: {exc.strerror or exc}", hint=WRITER_HINT) from None
    proc = _Proc(popen, index, time.monotonic())
    for target, stream in ((_read_acks, popen.stdout), (_read_stderr, popen.stderr)):
        reader = threading.Thread(target=target, args=(stream, proc), daemon=True)
        reader.start()
        proc.readers.append(reader)
    return proc


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


class Harness:
    def __init__(self, config: Config, on_cycle: Callable[[Report], None] | None = None) -> None:
        self.config = config
        self.report = Report(seed=config.seed, mode=config.mode, fs=config.fs)
        kinds = ["kill"] + (["lazyfs" if config.fs == "lazyfs" else "power-loss"] if config.mode == "power-loss" else [])
        self.report.landings = {kind: dict.fromkeys(LANDINGS, 0) for kind in kinds}
        self.on_cycle = on_cycle or (lambda report: None)
        self.root: Path | None = None  # made by run(): a temporary folder, --work, or the LazyFS mount
        self.mount: lazyfs_mount.Mount | None = None
        self.generation = 0
        self.folder = Path()
        self.acks: dict[str, list[tuple[int, str]]] = {}
        self.procs: list[_Proc] = []
        self.settled = False  # a writer ACKed in this run, or a silent cycle was reported: kill at the seeded moments

    def fresh_folder(self) -> None:
        self.generation += 1
        self.folder = self.root / f"run-{self.generation:04d}"
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        self.acks = {}

    def keep_reproducer(self, cycle: CycleCheck) -> None:
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
        if self.mount is not None:
            self.mount.clear_cache()  # every byte is synced by now: this only empties LazyFS's cache for the writers
        before = snapshot(self.folder)
        procs, killed_at = self.run_writers(seed, rng)
        for proc in procs:
            for relpath, end, digest in proc.acks:
                self.acks.setdefault(relpath, []).append((end, digest))
                report.acked += 1
        check = CycleCheck(self, number)
        silent = not any(proc.acks for proc in procs)  # a writer may wait behind another's lock all its life
        for proc in procs:
            self.check_writer(check, proc, killed_at[proc.index] - proc.started, silent)
        self.settled = self.settled or not silent or any(v["kind"] == "no-ack" for v in check.found)
        written = changed_since(self.folder, before)
        count_landings(written, report.landings["kill"])
        self.count_torn()
        if self.mount is not None:  # first what a kill alone leaves (the page cache intact), then the power cut
            check.check_acks("after-kill", only={os.path.relpath(path, self.folder) for path in written})
            self.power_cut(written)
            check.check_acks("after-power-cut")
        else:
            check.check_acks("after-kill")
        check.check_locks()
        check.check_indexes()
        if config.mode == "power-loss" and self.mount is None:
            check.power_loss(rng, before)
            count_landings(written, report.landings["power-loss"])
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

    def run_writers(self, seed: str, rng: random.Random) -> tuple[list[_Proc], dict[int, float]]:
        """Start the cycle's writers, SIGKILL each at its seeded moment, reap them all."""
        config = self.config
        procs: list[_Proc] = []
        self.procs = procs  # filled one by one, so run() kills what started if a later start fails
        for i in range(config.writers):
            procs.append(_start(config, self.folder, seed, i))
        started = time.monotonic()
        deadlines = sorted((rng.uniform(config.min_run, config.max_run), i) for i in range(config.writers))
        killed_at: dict[int, float] = {}
        try:
            for deadline, i in deadlines:
                delay = started + deadline - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.await_first_ack(procs[i], procs)
                killed_at[i] = time.monotonic()
                if kill_tree(procs[i].popen.pid):
                    self.report.kills += 1
        finally:
            self.stop_writers()
        return procs, killed_at

    def stop_writers(self) -> None:
        for proc in self.procs:
            kill_tree(proc.popen.pid)
            proc.close()
        self.procs = []

    def power_cut(self, written: list[Path]) -> None:
        """LazyFS: drop every unsynced byte, and count what went (sizes through the mount)."""
        usage = self.mount.cache_usage()
        if usage is not None and usage >= 99.9:
            self.report.cache_full += 1
        before = file_sizes(self.folder)
        self.mount.clear_cache()
        after = file_sizes(self.folder)
        dropped = sum(max(0, size - after.get(path, 0)) for path, size in before.items())
        self.report.discarded_bytes += dropped
        self.report.dropped_cycles += dropped > 0
        count_landings(written, self.report.landings["lazyfs"])

    def count_torn(self) -> None:
        for journal in journals(self.folder):
            try:
                data = journal.read_bytes()
            except OSError:
                continue
            relpath = str(journal.relative_to(self.folder))
            acked = max((end for end, _ in self.acks.get(relpath, [])), default=0)
            if data.rfind(b"\n") + 1 < len(data) and len(data) > acked:
                self.report.torn_records += 1

    def await_first_ack(self, proc: _Proc, procs: list[_Proc]) -> None:
        """Until some writer has ACKed in this run, give ``proc`` until ``ack_timeout`` after
        its start before killing it: until any writer of the cycle ACKs, or ``proc`` prints a
        line that is not an ACK, or exits.

        A writer still starting up at its kill moment (Python imports, a first large fsync, a
        loaded machine) proves nothing either way; waiting, only in the first cycles and only
        until the first ACK, tells a slow writer from one that never ACKs without a timing
        guess that could fail a good writer.  Later cycles kill at the seeded moments,
        start-up included."""
        until = proc.started + self.config.ack_timeout
        while not self.settled and time.monotonic() < until and proc.popen.poll() is None:
            if proc.bad_lines or any(other.acks for other in procs):
                return
            time.sleep(0.01)

    def check_writer(self, check: CycleCheck, proc: _Proc, alive: float, silent: bool) -> None:
        """The writer-side violations: ``writer-exited``, ``no-ack`` and ``protocol``.

        ``no-ack`` needs the whole cycle ``silent`` (no writer ACKed): a writer given the same
        journal as another rightly waits for that one's lock until it is killed."""
        name = f"writer {proc.index}"
        if not proc.killed_by_us():
            code = proc.popen.returncode
            status = f"exit status {code}" if code >= 0 else f"signal {signal.Signals(-code).name}" if -code in signal.valid_signals() else f"status {code}"
            stderr = proc.stderr_tail.decode("utf-8", "backslashreplace").strip().splitlines()
            check.violation("writer-exited", None,
                            f"{name} exited on its own ({status}) before its kill moment ({alive:.2f} s after its start), after {len(proc.acks)} ACK(s); "
                            "a writer must keep appending until it is killed"
                            + (f"; its stderr ends: {stderr[-1][:200]!r}" if stderr else ""))
        elif silent and alive >= self.config.ack_timeout:
            check.violation("no-ack", None,
                            f"{name} ran {alive:.1f} s and printed no ACK line (nor did any other writer); after each durable record "
                            "a writer must print 'ACK <relpath> <end-offset> <sha256>' on stdout and flush it")
        if proc.bad_lines:
            examples = ", ".join(repr(line.decode("utf-8", "backslashreplace")) for line in proc.bad_examples)
            check.violation("protocol", None,
                            f"{name} printed {proc.bad_lines} stdout line(s) that are not 'ACK <relpath> <end-offset> <sha256>' "
                            f"(relpath inside the chaos folder, sha256 as 64 lowercase hex digits), e.g. {examples}")

    def folder_bytes(self) -> int:
        return sum(file_sizes(self.folder).values()) if self.folder.exists() else 0

    def run(self) -> Report:
        config = self.config
        cycles = config.cycles if config.cycles is not None else (None if config.duration else 20)
        started = time.monotonic()
        number = 0
        try:
            with contextlib.ExitStack() as stack:
                self.own_root(stack)
                stack.callback(self.stop_writers)  # before the unmount (or removal) of the root
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
            self.report.elapsed = time.monotonic() - started
        return self.report

    def own_root(self, stack: contextlib.ExitStack) -> None:
        """Make the folder the chaos folders live in, and undo it on the way out: a temporary
        folder (removed unless --keep), ``work``, or a LazyFS mount (unmounted, whatever happens)."""
        config = self.config
        lazyfs_mount.clean_stale()  # mounts a killed run left behind
        if config.fs == "lazyfs":
            binary = lazyfs_mount.find_binary(config.lazyfs)
            stack.enter_context(lazyfs_mount.terminate_as_interrupt())
            self.mount = stack.enter_context(lazyfs_mount.Mount(binary, lazyfs_mount.make_box(config.work), keep=config.keep))
            self.root = self.mount.mount
            return
        self.root = Path(config.work) if config.work else Path(tempfile.mkdtemp(prefix="levelsess-chaos-"))
        if not config.keep and not config.work:
            stack.callback(shutil.rmtree, self.root, ignore_errors=True)


def validate(config: Config) -> None:
    if config.writer_cmd is not None:
        external_argv(config.writer_cmd)  # parsable, and its program exists and is executable
    if config.mode not in ("kill", "power-loss"):
        raise UsageError(f"--mode {config.mode}: choose kill or power-loss")
    if config.fs not in ("disk", "lazyfs"):
        raise UsageError(f"--fs {config.fs}: choose disk or lazyfs")
    if config.fs == "lazyfs" and config.mode != "power-loss":
        raise UsageError(f"--fs lazyfs cuts the power after each kill: use it with --mode power-loss, not --mode {config.mode}")
    if config.lazyfs is not None and config.fs != "lazyfs":
        raise UsageError("--lazyfs names the LazyFS program for --fs lazyfs; add --fs lazyfs --mode power-loss, or drop --lazyfs")
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
