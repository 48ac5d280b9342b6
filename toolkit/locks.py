"""Session lock files (DESIGN.md §2.5): read, judge liveness, take and release.

A writer owns a session while ``<journal>.lock`` exists, holding
``{"pid", "host", "startedAt", "acquiredAt"}``.  Liveness is judged with psutil, with a
create-time check so a recycled pid never keeps a dead writer's lock alive.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import itertools
import os
import time
from collections.abc import Iterator
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
    bodies = BODIES.get()
    body = bodies.take(path) if bodies is not None else None  # (a durable file of this process's lock bytes, to link)
    for _ in range(3):
        made = durable.link_exclusive(body, path) if body is not None else None
        if made is None:  # (no body, or none that links there): made as always
            body = None
            made = durable.create_exclusive(path, lock_content())
        if made:
            return True
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


class LockBodies:
    """Session locks taken by a link (issue 27): this process's lock bytes are written once in each
    folder, in a file of their own (the lock *body*, a temp file ``.levelsess-locks-N.<pid>.tmp``,
    fsynced before it is first linked), and each lock this process takes there is a hard link to
    it (``link`` fails if the lock exists, as O_CREAT|O_EXCL).  A grown import takes a lock on
    every journal it appends to: a lock made each time was a file created, written and fsynced,
    and a file freed again when it was released (on ext4 without a journal, each freed inode slows
    the creates of the next minutes), where a link and an unlink are names only.

    A lock's bytes are durable before its name exists, as when it is made at once, and they are
    this process's own (never a forked worker's: it makes its locks as always).  A body is made
    again (a new one: the locks linked to the last keep their bytes) once it is :attr:`FRESH`
    seconds old, so a lock's ``acquiredAt`` and its mtime (the heartbeat ``fsck`` reads) say when it
    was taken, give or take those seconds.  Where a body cannot be made or linked (a full disk, a
    file system without hard links), the lock is made as always.  :meth:`close` removes the bodies:
    a held lock's bytes stay with its name; a body a killed process left is a leftover temp, tidied
    as any."""

    FRESH = 5.0

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._bodies: dict[Path, tuple[Path, float]] = {}  # folder -> (its body, when it was made)

    def take(self, path: Path) -> Path | None:
        """The body to link at the lock ``path`` (None: make the lock as always)."""
        if os.getpid() != self._pid:  # (a process forked from this one: its locks hold its own pid)
            return None
        folder = path.parent
        found = self._bodies.get(folder)
        if found is not None and time.monotonic() - found[1] <= self.FRESH:
            return found[0]
        if found is not None:
            self._drop(folder)
        name = folder / f"levelsess-locks-{next(_BODY_NUMBERS)}"  # (a new name each time: no body is ever written over)
        body = durable.temp_name(name)
        try:
            durable.remove(body, lasting=False)  # (a name a dead process of this pid left: its locks keep their bytes)
            durable.make_ready(name, lock_content())
        except Exception:  # noqa: BLE001 - (a full disk, a symlinked folder) the taker makes it and meets it there
            return None
        self._bodies[folder] = (body, time.monotonic())
        return body

    def _drop(self, folder: Path) -> None:
        body, _made = self._bodies.pop(folder)
        with contextlib.suppress(LevelsessError):  # (tidying: one left is a leftover temp once this process ends)
            durable.remove(body, lasting=False)

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
        for folder in list(self._bodies):
            self._drop(folder)


_BODY_NUMBERS = itertools.count()  # (the number in each lock body's name: one name a body, in this process)

#: The :class:`LockBodies` of the import running in this thread, if any.
BODIES: contextvars.ContextVar[LockBodies | None] = contextvars.ContextVar("lock_bodies", default=None)


@contextlib.contextmanager
def bodies() -> Iterator[None]:
    """While the block runs, the locks this process takes are links to its lock bodies (:class:`LockBodies`)."""
    from .ahead import running

    with running(BODIES, LockBodies()):
        yield


@contextlib.contextmanager
def holding(journal: Path, *, force: bool = False) -> Iterator[None]:
    """Hold the session lock for the duration of a repair step."""
    mine = try_acquire(journal, force=force)
    try:
        yield
    finally:
        if mine:
            durable.remove(lock_path(journal), lasting=False)
