"""A real power cut for ``chaos run --mode power-loss --fs lazyfs``: writers on a LazyFS mount.

LazyFS (``shared/vendor/``, a FUSE file system) keeps every write in its own page cache until
the writer fsyncs it; ``lazyfs::clear-cache`` written to its fault FIFO drops whatever was not
synced, exactly as a power cut does.  :class:`Mount` owns one LazyFS process, its mount, its
config and its FIFOs, all inside one harness-made folder (the *box*)::

    <box>/disk/   the backing folder (real disk)     <box>/mnt/   the LazyFS mount (writers' dir)
    <box>/ctl/    lazyfs.toml, the fault FIFO, the completion FIFO, lazyfs.log

A state file per run (``<user state dir>/chaos/lazyfs-<pid>.json``) names the box, the mount
and both processes before anything is mounted, so a run killed by SIGKILL (or a LazyFS left
running) is unmounted and removed by the next ``chaos run`` (:func:`clean_stale`).  LazyFS is
also started with a parent-death signal (``setpriv --pdeathsig TERM``) so it unmounts itself
when the harness dies.

What this LazyFS build does and does not show (checked here): unsynced file data is dropped,
and so is an unsynced truncate; directory entries (create, rename, unlink, mkdir) go straight
to the backing folder, so a missing directory fsync cannot be seen (a created, never-synced
file keeps a 0-byte entry).  When its cache is full it writes through to disk, so unsynced
writes of that cycle survive (counted as ``cache_full``).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import orjson
import psutil

from toolkit import durable
from toolkit.errors import LevelsessError, OperationalError
from toolkit.locks import process_start

ENV = "LEVELSESS_LAZYFS"
CACHE_SIZE = "512mb"  # pre-allocated by LazyFS at start (about 0.5 s); a cycle writes far less
MOUNT_TIMEOUT = 30.0
COMMAND_TIMEOUT = 30.0
CLEAR_COMMAND = b"lazyfs::clear-cache\n"
USAGE_COMMAND = b"lazyfs::display-cache-usage\n"
BOX_PREFIX = "levelsess_lazyfs_"  # no '-o' (LazyFS ignores a --config-path containing it) and no ','


def build_command() -> str:
    """The command that builds LazyFS on this machine (the repository sits beside ``shared/``)."""
    script = Path(__file__).resolve().parents[2] / "shared" / "tools" / "build-lazyfs.sh"
    where = str(script) if script.exists() else "shared/tools/build-lazyfs.sh"
    return f"bash {where}"


def _default_build() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "levelsess" / "lazyfs" / "bin" / "lazyfs"


def find_binary(explicit: str | os.PathLike | None = None) -> Path:
    """Return the LazyFS program: ``--lazyfs PATH``, else ``$LEVELSESS_LAZYFS``, else ``lazyfs`` on PATH.

    Missing or not executable is an operational error (exit 8) naming the build command: the
    harness never falls back to a run that cannot cut the power."""
    for source, value in (("--lazyfs", explicit), (f"${ENV}", os.environ.get(ENV))):
        if value:
            path = Path(value).expanduser()
            if path.is_file() and os.access(path, os.X_OK):
                return path.absolute()
            why = "does not exist" if not path.exists() else "is not an executable file"
            raise OperationalError(f"{source} {value}: {why}; build LazyFS with: {build_command()}", hint="")
    found = shutil.which("lazyfs")
    if found:
        return Path(found).absolute()
    built = _default_build()
    also = f" (a build is at {built}: pass --lazyfs {built})" if built.is_file() else ""
    raise OperationalError(f"LazyFS not found (--lazyfs PATH, ${ENV} or PATH){also}; build it with: {build_command()}", hint="")


# --- /proc/mounts and the state files -----------------------------------------------------


def _unescape(field: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal (``\\040``)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounted_at(path: Path) -> bool:
    """True if something is mounted at ``path`` (per /proc/mounts; a dead FUSE mount counts)."""
    target = os.path.abspath(path)
    try:
        with open("/proc/mounts", encoding="utf-8", errors="replace") as handle:
            return any(len(parts) > 1 and _unescape(parts[1]) == target for parts in (line.split() for line in handle))
    except OSError:
        return False


def lazyfs_mounts() -> list[str]:
    """Mount points of every LazyFS mount on the machine (fstype ``fuse.lazyfs*``)."""
    try:
        with open("/proc/mounts", encoding="utf-8", errors="replace") as handle:
            return [_unescape(parts[1]) for parts in (line.split() for line in handle)
                    if len(parts) > 2 and parts[2].startswith("fuse.lazyfs")]
    except OSError:
        return []


def state_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("levelsess", appauthor=False)) / "chaos"


def _alive(pid: int | None, started: float | None) -> bool:
    if not pid or started is None:
        return False
    now = process_start(pid)
    return now is not None and abs(now - started) < 0.05


def unmount(mount: Path) -> bool:
    """Unmount ``mount`` (``fusermount3 -u``, then lazily); True when it is no longer mounted."""
    for argv in (["fusermount3", "-u", str(mount)], ["fusermount3", "-uz", str(mount)], ["umount", "-l", str(mount)]):
        if not mounted_at(mount):
            return True
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    return not mounted_at(mount)


def _stop_process(pid: int | None, started: float | None, timeout: float = 10.0) -> None:
    """SIGTERM (then SIGKILL) a LazyFS this harness started, if it is still that process."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _alive(pid, started):
            return
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
        until = time.monotonic() + timeout
        while time.monotonic() < until and _alive(pid, started):
            time.sleep(0.02)


def _kill_strays(box: Path) -> None:
    """SIGKILL writers orphaned by a killed harness (their LEVELSESS_CHAOS_DIR or working folder
    is in ``box``) and wait for them: once the mount is gone they write to the disk beneath it."""
    inside = os.path.abspath(box) + os.sep
    strays = []
    for proc in psutil.process_iter(["pid", "cwd"]):
        if proc.pid == os.getpid():
            continue
        try:
            where = [proc.info.get("cwd") or "", proc.environ().get("LEVELSESS_CHAOS_DIR", "")]
        except psutil.Error:
            continue
        if any((path + os.sep).startswith(inside) for path in where if path):
            strays.append(proc)
    for proc in strays:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    until = time.monotonic() + 10
    while strays and time.monotonic() < until:  # a zombie is dead (a container's init may never reap it)
        strays = [p for p in strays if p.is_running() and _status(p) != psutil.STATUS_ZOMBIE]
        time.sleep(0.01)


def _status(proc) -> str:
    try:
        return proc.status()
    except psutil.Error:  # gone
        return psutil.STATUS_ZOMBIE


def _clean_box(box: Path, mount: Path, state: dict) -> bool:
    """Stop the writers and the LazyFS of a dead run, unmount, remove the box; True if it was mounted."""
    _kill_strays(box)
    was_mounted = mounted_at(mount)
    unmount(mount)
    _stop_process(state.get("lazyfs_pid"), state.get("lazyfs_started"))
    if not mounted_at(mount):
        _kill_strays(box)  # again: one may have started writing beneath the mount meanwhile
        if not state.get("keep"):
            shutil.rmtree(box, ignore_errors=True)
    return was_mounted


def clean_stale() -> list[str]:
    """Unmount and remove what a killed ``chaos run`` left (its owner is gone); return the mounts."""
    folder = state_dir()
    try:
        entries = sorted(folder.glob("lazyfs-*.json"))
    except OSError:
        return []
    cleaned = []
    for entry in entries:
        try:
            state = orjson.loads(entry.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # a state file being written right now, or not ours: leave it
        if not isinstance(state, dict) or _alive(state.get("owner_pid"), state.get("owner_started")):
            continue
        box, mount = Path(str(state.get("box", ""))), Path(str(state.get("mount", "")))
        if not (box.is_absolute() and box.name.startswith(BOX_PREFIX) and mount == box / "mnt"):
            continue  # only ever a box this harness makes: never kill or remove anything else
        with contextlib.suppress(LevelsessError):
            if _clean_box(box, mount, state):
                cleaned.append(str(mount))
            if not mounted_at(mount):
                durable.remove(entry)
    return cleaned


# --- the mount ------------------------------------------------------------------------------


def _clean(path: str) -> bool:
    return "-o" not in path.lower() and "," not in path


def make_box(base: str | os.PathLike | None = None) -> Path:
    """Create the harness-owned folder for one LazyFS mount, at a path LazyFS can take."""
    candidates = [str(base)] if base is not None else [tempfile.gettempdir(), "/tmp", "/var/tmp"]
    for candidate in candidates:
        candidate = os.path.abspath(candidate)
        if _clean(candidate) and os.path.isdir(candidate):
            box = Path(tempfile.mkdtemp(prefix=BOX_PREFIX, dir=candidate))
            for name in ("disk", "mnt", "ctl"):
                (box / name).mkdir()
            return box
    raise OperationalError(f"no folder for the LazyFS mount: {', '.join(candidates)} contain '-o' or ',' (LazyFS would "
                           "ignore its config there) or do not exist; set TMPDIR to a plain folder", hint="")


class Mount:
    """One LazyFS process and its mount, owned by this harness run (use as a context manager)."""

    def __init__(self, binary: Path, box: Path, keep: bool = False, cache_size: str = CACHE_SIZE) -> None:
        self.binary, self.box, self.keep, self.cache_size = Path(binary), box, keep, cache_size
        self.disk, self.mount, self.ctl = box / "disk", box / "mnt", box / "ctl"
        self.fifo, self.done_fifo, self.log = self.ctl / "faults.fifo", self.ctl / "done.fifo", self.ctl / "lazyfs.log"
        self.state = state_dir() / f"lazyfs-{os.getpid()}-{box.name[len(BOX_PREFIX):]}.json"
        self.proc: subprocess.Popen | None = None
        self.stderr_tail = b""
        self._fault_fd: int | None = None
        self._done_fd: int | None = None
        self._log_seen = 0

    # -- start -------------------------------------------------------------------------------

    def __enter__(self) -> Mount:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _save_state(self) -> None:
        pid = self.proc.pid if self.proc else None
        state = {"owner_pid": os.getpid(), "owner_started": process_start(os.getpid()), "box": str(self.box),
                 "mount": str(self.mount), "keep": self.keep, "lazyfs_pid": pid,
                 "lazyfs_started": process_start(pid) if pid else None}
        durable.ensure_dir(self.state.parent)
        durable.atomic_write(self.state, orjson.dumps(state, option=orjson.OPT_INDENT_2))

    def config_text(self) -> bytes:
        return (f'[faults]\nfifo_path="{self.fifo}"\nfifo_path_completed="{self.done_fifo}"\n'
                f'[cache]\napply_eviction=false\n[cache.simple]\ncustom_size="{self.cache_size}"\nblocks_per_page=1\n'
                f'[filesystem]\nlog_all_operations=false\nlogfile="{self.log}"\n').encode()

    def start(self) -> None:
        if not os.path.exists("/dev/fuse"):
            raise OperationalError("FUSE cannot mount LazyFS: /dev/fuse is missing (modprobe fuse; a container needs "
                                   "--device /dev/fuse)", hint="")
        config = self.ctl / "lazyfs.toml"
        durable.write_new(config, self.config_text())
        os.mkfifo(self.fifo, 0o600)
        os.mkfifo(self.done_fifo, 0o600)
        # opened before LazyFS starts: its fault thread blocks opening the completion FIFO for writing until a reader exists
        self._done_fd = os.open(self.done_fifo, os.O_RDONLY | os.O_NONBLOCK)
        self._save_state()  # before the mount exists: a harness killed from here on is cleaned up by the next run
        # -s: one FUSE thread.  LazyFS's page cache checks, then creates, an inode's entry without
        # holding one lock across both, so two threads on one file (a create racing a write) can
        # deadlock or crash it (seen: both, about one run in four with two writers).  Serial
        # requests cost nothing a power-cut test measures; its fault thread still runs beside.
        argv = [str(self.binary), str(self.mount), "--config-path", str(config), "-o", "modules=subdir",
                "-o", f"subdir={self.disk}", "-f", "-s"]
        setpriv = shutil.which("setpriv")
        if setpriv:  # LazyFS unmounts itself on SIGTERM: let the kernel send it when the harness dies
            argv = [setpriv, "--pdeathsig", "TERM", "--", *argv]
        try:
            # own session: a Ctrl-C reaches the harness, which unmounts in order; SIGPIPE stays ignored
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         start_new_session=True, restore_signals=False, cwd=self.ctl)
        except OSError as exc:
            raise OperationalError(f"cannot start LazyFS {self.binary}: {exc.strerror or exc}; build it with: {build_command()}", hint="") from None
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        self._save_state()
        self._wait_mounted()

    def _drain(self) -> None:
        try:
            for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
                self.stderr_tail = (self.stderr_tail + chunk)[-4000:]
        except (ValueError, OSError):  # stop() closed the pipe while this read: nothing more to keep
            pass

    def _why_not(self) -> str:
        if self.proc is not None and self.proc.poll() is not None and getattr(self, "_drainer", None) is not None:
            self._drainer.join(timeout=10)  # LazyFS exited: what it said is all in the pipe (a busy machine reads it late)
        lines = [line.strip() for line in self.stderr_tail.decode("utf-8", "replace").splitlines()
                 if line.strip() and "max threads" not in line]
        for line in self._log_lines():
            if "critical" in line or "error" in line.lower():
                lines.append(line.split("] ", 3)[-1])
        return lines[-1] if lines else f"it exited with status {self.proc.returncode}" if self.proc and self.proc.returncode is not None else "no reason given"

    def _wait_mounted(self) -> None:
        until = time.monotonic() + MOUNT_TIMEOUT
        while time.monotonic() < until:
            if self.proc.poll() is not None:
                break
            if mounted_at(self.mount):
                break
            time.sleep(0.01)
        if not mounted_at(self.mount) or self.proc.poll() is not None:
            raise OperationalError(f"FUSE cannot mount LazyFS: {self._why_not()} (LazyFS builds with: {build_command()})", hint="")
        while time.monotonic() < until:  # the fault thread opens its FIFO once FUSE is up
            try:
                self._fault_fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.01)
        if self._fault_fd is None:
            raise OperationalError(f"LazyFS at {self.mount} never opened its fault FIFO: {self._why_not()}", hint="")

    # -- faults ------------------------------------------------------------------------------

    def _log_lines(self) -> list[str]:
        try:
            return self.log.read_text("utf-8", "replace").splitlines()
        except OSError:
            return []

    def _send(self, command: bytes) -> None:
        try:
            os.write(self._fault_fd, command)  # one short write: read by LazyFS as one command
        except OSError as exc:
            raise OperationalError(f"LazyFS at {self.mount} stopped taking commands ({exc.strerror}): {self._why_not()}", hint="") from None

    def cache_usage(self) -> float | None:
        """Percent of LazyFS's cache pages in use (from its log), or None if it did not say."""
        seen = len(self._log_lines())
        self._send(USAGE_COMMAND)
        until = time.monotonic() + COMMAND_TIMEOUT
        while time.monotonic() < until and self.proc.poll() is None:
            for line in self._log_lines()[seen:]:
                if "cache usage" in line:
                    with contextlib.suppress(ValueError):
                        return float(line.rsplit(" is ", 1)[1].rstrip("%"))
            time.sleep(0.002)
        return None

    def clear_cache(self) -> None:
        """Drop every unsynced byte (the power cut) and wait until LazyFS says it is done."""
        self._send(CLEAR_COMMAND)
        until = time.monotonic() + COMMAND_TIMEOUT
        answer = b""
        while b"finished::clear-cache\n" not in answer:
            left = until - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise OperationalError(f"LazyFS at {self.mount} did not confirm lazyfs::clear-cache: {self._why_not()}", hint="")
            ready, _, _ = select.select([self._done_fd], [], [], min(left, 0.5))
            if ready:
                with contextlib.suppress(BlockingIOError):
                    answer += os.read(self._done_fd, 100)

    # -- stop --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Unmount, stop LazyFS (it exits by SIGABRT on every unmount: that status means nothing),
        close the FIFOs and remove the box (unless ``keep``).  Signals wait until it is done."""
        blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            unmounted = unmount(self.mount) if self.proc is not None else not mounted_at(self.mount)
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                    unmounted = unmount(self.mount)
                if self.proc.stderr is not None:
                    self.proc.stderr.close()
            for fd in (self._fault_fd, self._done_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._fault_fd = self._done_fd = None
            if unmounted:
                if not self.keep:
                    shutil.rmtree(self.box, ignore_errors=True)
                with contextlib.suppress(OSError):
                    durable.remove(self.state)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def terminate_as_interrupt():
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt while the harness owns a mount (main thread
    only), so the ``finally`` blocks that unmount run, as they do for Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
