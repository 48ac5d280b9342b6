"""Session lock files (DESIGN.md §2.5): read, judge liveness, take and release.

A writer owns a session while ``<journal>.lock`` exists, holding
``{"pid", "host", "startedAt", "acquiredAt"}``.  Liveness is judged with psutil, with a
create-time check so a recycled pid never keeps a dead writer's lock alive.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import NamedTuple

import orjson

from . import durable
from .errors import LevelsessError, LockBusyError
from .lines import read_regular

#: An uncheckable owner's lock is stale once its mtime is older than this (seconds).
STALE_AFTER = 30.0
#: A live owner that has not touched its lock for this long is reported as hung.
HEARTBEAT_GRACE = 30.0
#: psutil create times are floats; a writer may round them.
CREATE_TIME_SLACK = 1.0


class LockState(str, Enum):
    LIVE = "live"  # owner is running on this host: never stale
    STALE = "stale"  # owner is dead, recycled, or uncheckable and silent for 30 s
    UNKNOWN = "unknown"  # owner cannot be checked and the lock is fresh


class LockInfo(NamedTuple):
    """A lock file and the verdict on its owner."""

    path: Path
    state: LockState
    reason: str
    pid: int | None
    host: str | None
    age: float
    heartbeat_ok: bool = True
    raw: bytes | None = None  # the content judged, so a removal can check nothing changed since
    readable: bool = True  # False: the lock could not be read (never judged stale, never removed)


def lock_path(journal: Path) -> Path:
    return journal.with_name(journal.name + ".lock")


def this_host() -> str:
    """``socket.gethostname()``: on a Unix it is ``uname``'s node name (loading socket was a
    twentieth of an import that appends to a few journals)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return uname().nodename
    import socket  # (Windows)

    return socket.gethostname()


def process_start(pid: int) -> float | None:
    """Return the create time of ``pid``, or None if it is not a live process."""
    import psutil  # here, not at the top: most runs meet no lock and never need it (start-up, DESIGN.md §8)

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:  # killed but not yet reaped: dead
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError, OverflowError):
        return None


def inspect_lock(path: Path, now: float | None = None) -> LockInfo | None:
    """Read ``path`` and judge its owner; None if there is no lock (never writes)."""
    try:
        raw = read_regular(path)
        age = (now or time.time()) - path.stat().st_mtime
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # no such lock can exist
            return None
        return LockInfo(path, LockState.UNKNOWN, f"lock unreadable: {exc.strerror or exc}", None, None, 0.0, readable=False)
    return _judge(path, raw, age)


def _judge(path: Path, raw: bytes, age: float) -> LockInfo:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    pid = data.get("pid") if isinstance(data, dict) else None
    host = data.get("host") if isinstance(data, dict) else None
    started = data.get("startedAt") if isinstance(data, dict) else None
    checkable = type(pid) is int and host == this_host() and isinstance(started, (int, float))
    if not checkable:
        why = "owner on another host" if isinstance(host, str) and host != this_host() else "owner cannot be read"
        if age > STALE_AFTER:
            return LockInfo(path, LockState.STALE, f"{why}; untouched for {age:.0f}s", pid, host, age, raw=raw)
        return LockInfo(path, LockState.UNKNOWN, f"{why}; touched {age:.0f}s ago", pid, host, age, raw=raw)
    actual = process_start(pid)
    if actual is None:
        return LockInfo(path, LockState.STALE, f"owner pid {pid} is not running", pid, host, age, raw=raw)
    if abs(actual - started) > CREATE_TIME_SLACK:
        return LockInfo(path, LockState.STALE, f"pid {pid} was reused by a newer process", pid, host, age, raw=raw)
    return LockInfo(path, LockState.LIVE, f"held by live pid {pid}", pid, host, age,
                    heartbeat_ok=age <= HEARTBEAT_GRACE, raw=raw)


def remove_if_unchanged(info: LockInfo) -> bool:
    """Remove a lock judged stale, unless its content changed since it was judged.

    Narrows the race where another repairer replaced the stale lock with its own live one.
    """
    try:
        current = read_regular(info.path)
    except FileNotFoundError:
        return False
    except OSError:  # not a regular file (any more): not ours to remove
        return False
    if current != info.raw:
        return False
    durable.remove(info.path)
    return True


def break_stale(found: list[tuple[LockInfo, object]]) -> dict[Path, str | None]:
    """Remove the stale locks of ``found`` (each with its :class:`~toolkit.layouts.base.Folder`):
    {lock path: None when removed, else why it was left}.  Never through a symlinked folder:
    a lock whose folder is reached through a symlink below the store is left, with the reason."""
    from .errors import SymlinkedFolderError

    out: dict[Path, str | None] = {}
    for info, folder in found:
        if info.state is not LockState.STALE:
            continue
        try:
            with durable.confined(folder.confinement):
                durable.refuse_symlinked(info.path.parent)
                removed = remove_if_unchanged(info)
        except SymlinkedFolderError as exc:
            out[info.path] = f"left: {exc}"
            continue
        out[info.path] = None if removed else "left: it changed since it was judged (another process took it)"
    return out


@dataclass(frozen=True)
class LockReport:
    """The locks found in some folders (``levelsess locks``), and which stale ones were removed."""

    found: list[tuple[LockInfo, object]]  # each lock with its Folder
    outcome: dict[Path, str | None] = field(default_factory=dict)  # break_stale's answer, when asked

    @property
    def removed(self) -> list[Path]:
        return [path for path, why in self.outcome.items() if why is None]

    @property
    def rows(self) -> list[dict]:
        removed = self.removed
        return [{"path": str(i.path), "session": i.path.name[: -len(".lock")], "pid": i.pid, "host": i.host,
                 "age": round(i.age, 1), "state": i.state.value, "why": self.outcome.get(i.path) or i.reason,
                 "heartbeat_ok": i.heartbeat_ok, "removed": i.path in removed} for i, _folder in self.found]

    @property
    def exit_code(self) -> int:
        return 1 if self.removed else 0  # a stale lock removed is a problem corrected

    def to_json(self) -> dict:
        return {"version": 1, "locks": self.rows, "exit": self.exit_code}


def survey_locks(folders: list, *, remove_stale: bool = False) -> LockReport:
    """Every session lock in ``folders`` (:class:`~toolkit.layouts.base.Folder`), judged; with
    ``remove_stale``, the stale ones removed (:func:`break_stale`)."""
    found = [(info, folder) for folder in folders
             for info in map(inspect_lock, sorted(folder.path.glob("*.jsonl.lock"))) if info is not None]
    return LockReport(found, break_stale(found) if remove_stale else {})


def lock_content(pid: int | None = None) -> bytes:
    pid = os.getpid() if pid is None else pid
    if pid == os.getpid():
        started = own_start()
    else:
        import psutil

        started = psutil.Process(pid).create_time()
    return orjson.dumps({"pid": pid, "host": this_host(), "startedAt": started, "acquiredAt": time.time()})


_OWN: tuple[int, float] | None = None  # (pid, its start time): a forked worker has its own


def own_start() -> float:
    """This process's create time, as ``psutil.Process().create_time()`` gives it.  On Linux it is
    read as psutil reads it (``starttime`` of ``/proc/self/stat`` in clock ticks, plus ``btime`` of
    ``/proc/stat``): loading psutil was a tenth of an import that only appends to a few journals."""
    global _OWN
    if _OWN is None or _OWN[0] != os.getpid():
        _OWN = (os.getpid(), _read_own_start())
    return _OWN[1]


def _read_own_start() -> float:
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()  # (after the command, which may hold spaces)
        with open("/proc/stat", "rb") as handle:
            btime = next(line.split()[1] for line in handle if line.startswith(b"btime"))
        return float(fields[19]) / os.sysconf("SC_CLK_TCK") + float(btime)
    except (OSError, ValueError, IndexError, StopIteration):  # not Linux, or no /proc: ask psutil
        import psutil

        return psutil.Process(os.getpid()).create_time()


def try_acquire(journal: Path, *, force: bool = False) -> bool:
    """Take the session lock (O_CREAT|O_EXCL), clearing a stale one first.

    Returns False when a live or uncheckable owner holds it (or it vanished and reappeared
    under us); with ``force`` a held lock is ignored and left in place.
    """
    path = lock_path(journal)
    ahead = AHEAD.get()
    data = None
    if ahead is not None:
        ahead.released(path)  # (this process's own lock on it, released but not yet removed)
        data = ahead.take(path)  # (its bytes, durable in its temp file already)
    for _ in range(3):
        if durable.create_exclusive(path, data or lock_content(), ready=data is not None):
            return True
        data = None  # (the temp made ahead went with the first try)
        info = inspect_lock(path)
        if info is None:
            continue
        if info.state is LockState.STALE:
            remove_if_unchanged(info)
            continue
        if force:
            return False
        raise LockBusyError(f"{journal} ({info.reason})")
    raise LockBusyError(f"{journal} (lock keeps reappearing)")


class Ahead:
    """Session locks made ready ahead (issue 27): a background thread writes this process's lock
    content into each lock's temp file and fsyncs it (:func:`~toolkit.durable.make_ready`), in the
    order given, while this one works; taking such a lock only links it into place.  A grown
    import takes a lock on every journal it appends to, and the fsync was its longest wait.

    A lock's bytes are durable before its name exists, as when it is made at once.  The thread stays
    at most :attr:`LIMIT` locks ahead, and one made ready more than :attr:`FRESH` seconds before it
    is taken is made again by the taker: its ``acquiredAt`` and its mtime (the heartbeat ``fsck``
    reads) say when it was taken, give or take those seconds.  A lock asked for before the thread
    reached it is made by the taker as always (the thread passes it by); one being made is waited
    for.  :meth:`close` stops the thread and removes the temp files no one took.

    A lock released is removed by a second thread (:meth:`release`): the unlink of a file that holds
    bytes frees a block, and on a file system mounted with ``discard`` and no journal it waits for
    the disk (0.3 to 1 ms a lock here, a fifth of a grown import).  The lock is held that much
    longer, never less: taking it again waits for its removal, and :meth:`close` waits for every
    one (a removal that failed is raised there, as the release would have raised it)."""

    LIMIT = 16  # (4 kept a grown import's units waiting for it: 10-15 ms of 81 resumes, 1-5 ms at 16)
    FRESH = 5.0

    def __init__(self, journals: Iterable[Path]) -> None:
        import threading

        self._wanted = list(dict.fromkeys(lock_path(Path(journal)) for journal in journals))
        self._asked = set(self._wanted)
        self._ready: dict[Path, tuple[bytes | None, float]] = {}  # made (its bytes; None: failed) and when: for take
        self._claimed: set[Path] = set()  # asked for before the thread reached them: the taker's
        self._current: Path | None = None
        self._stop = False
        self._done = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="levelsess-locks", daemon=True)
        self._thread.start()
        self._pid = os.getpid()  # (a process forked from this one has neither thread: it releases as always)
        self._releasing: dict[Path, contextvars.Context] = {}  # locks released, in order, until removed (with
        # the context they were released in: the confinement of the store's folders, durable.confined)
        self._releaser: threading.Thread | None = None
        self._failed: BaseException | None = None

    def _run(self) -> None:
        for path in self._wanted:
            with self._done:
                self._done.wait_for(lambda: self._stop or len(self._ready) < self.LIMIT)
                if self._stop:
                    return
                if path in self._claimed:
                    continue
                self._current = path
            data: bytes | None = lock_content()
            try:
                durable.make_ready(path, data)
            except Exception:  # noqa: BLE001 - (a full disk, a symlinked folder) the taker makes it and meets it there
                data = None
            with self._done:
                self._ready[path], self._current = (data, time.monotonic()), None
                self._done.notify_all()

    def take(self, path: Path) -> bytes | None:
        """The bytes of the lock ``path`` made ready, to link (None: make it as always)."""
        if path not in self._asked:
            return None
        with self._done:
            self._done.wait_for(lambda: self._current != path)
            made = self._ready.pop(path, None)
            if made is None:
                self._claimed.add(path)
            self._done.notify_all()  # (room for the next)
        if made is None or made[0] is None:
            return None
        if time.monotonic() - made[1] > self.FRESH:  # made too long ago: made again, now
            _forget(path)
            return None
        return made[0]

    def release(self, path: Path) -> bool:
        """Remove the lock ``path``, which this process holds, in the releasing thread; False in a
        process forked from this one (the caller removes it)."""
        if os.getpid() != self._pid:
            return False
        import threading

        with self._done:
            self._releasing[path] = contextvars.copy_context()
            self._done.notify_all()
            if self._releaser is None:
                self._releaser = threading.Thread(target=self._release_all, name="levelsess-unlocks", daemon=True)
                self._releaser.start()
        return True

    def released(self, path: Path) -> None:
        """Return once a removal of the lock ``path`` released here is done (it may be taken again)."""
        if path in self._releasing and os.getpid() == self._pid:
            with self._done:
                self._done.wait_for(lambda: path not in self._releasing)

    def _release_all(self) -> None:
        while True:
            with self._done:
                self._done.wait_for(lambda: self._stop or self._releasing)
                if not self._releasing:
                    return
                path, context = next(iter(self._releasing.items()))
            failed = None
            try:
                context.run(durable.remove, path, lasting=False)
            except BaseException as exc:  # noqa: BLE001 - raised by close(), in the thread that released it
                failed = exc
            with self._done:
                del self._releasing[path]
                if failed is not None and self._failed is None:
                    self._failed = failed
                self._done.notify_all()

    def close(self) -> None:
        with self._done:
            self._stop = True
            self._done.notify_all()
        self._thread.join()
        if self._releaser is not None and os.getpid() == self._pid:
            self._releaser.join()  # (it removes every lock released before it stops)
        for path, (data, _when) in self._ready.items():
            if data is not None:
                _forget(path)
        self._ready.clear()
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed


def _forget(path: Path) -> None:
    """Remove the temp file of the lock ``path`` made ready and not taken (through :mod:`durable`, as
    every write; not made lasting: one a power cut brings back is a dead process's, tidied as any)."""
    with contextlib.suppress(LevelsessError):  # (tidying: one left is a leftover temp once this process ends)
        durable.remove(durable.temp_name(path), lasting=False)


#: The :class:`Ahead` of the import running in this thread, if any.
AHEAD: contextvars.ContextVar[Ahead | None] = contextvars.ContextVar("locks_ahead", default=None)


@contextlib.contextmanager
def ahead(journals: list[Path]) -> Iterator[None]:
    """While the block runs, the locks of ``journals`` are made ready ahead (:class:`Ahead`)."""
    if not journals:
        yield
        return
    from .ahead import running

    with running(AHEAD, Ahead(journals)):
        yield


@contextlib.contextmanager
def holding(journal: Path, *, force: bool = False) -> Iterator[None]:
    """Hold the session lock for the duration of a repair step."""
    mine = try_acquire(journal, force=force)
    try:
        yield
    finally:
        if mine:
            ahead = AHEAD.get()
            if ahead is None or not ahead.release(lock_path(journal)):
                durable.remove(lock_path(journal), lasting=False)
