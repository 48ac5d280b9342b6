"""Who holds a file open for writing right now (for layouts whose writers take no lock).

On Linux this reads ``/proc/<pid>/fd`` and ``/proc/<pid>/fdinfo`` (the open mode is there);
elsewhere it asks psutil, which cannot always tell a reader from a writer, so any other
process that has the file open counts.  Read-only; the snapshot of every process's open files
is taken once and reused for a moment, so checking a thousand journals costs one walk.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

_WRITE_MODES = os.O_WRONLY | os.O_RDWR
#: path -> (pid, process name, its /proc fd link or None, inode or None)
_SNAPSHOT: tuple[float, dict[str, tuple[int, str, str | None, int | None]]] | None = None
FRESH_FOR = 1.0  # seconds a snapshot stays good


def _proc_snapshot() -> dict[str, tuple[int, str, str | None, int | None]]:
    """The path of every file some other process has open for writing -> (pid, name, link, inode).

    Only /proc is read: the fd link's target is a path string (readlink), the inode comes from
    fdinfo, so no other process's file is ever stat'ed.  A stat would go to that file's own file
    system, and a hung FUSE or NFS mount anywhere on the machine would hang the check with it."""
    found: dict[str, tuple[int, str, str | None, int | None]] = {}
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to look at
            continue
        name = None
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as handle:
                    info = handle.read(512)
                flags = int(info.split(b"flags:", 1)[1].split()[0], 8)
                if not flags & _WRITE_MODES:
                    continue
                target = os.readlink(f"{fd_dir}/{fd}")
            except (OSError, IndexError, ValueError):
                continue
            if not target.startswith("/") or target.endswith(" (deleted)"):
                continue  # a pipe, socket or anonymous inode; a deleted file
            ino = None
            if b"\nino:" in info:
                try:
                    ino = int(info.split(b"\nino:", 1)[1].split()[0])
                except (IndexError, ValueError):
                    ino = None
            if name is None:
                name = _name(pid)
            found.setdefault(target, (pid, name, f"{fd_dir}/{fd}", ino))
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def _psutil_snapshot() -> dict[str, tuple[int, str, str | None, int | None]]:
    import psutil

    found: dict[str, tuple[int, str, str | None, int | None]] = {}
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.info["pid"] == me:
            continue
        try:
            files = proc.open_files()
        except (psutil.Error, OSError):
            continue
        for item in files:
            mode = getattr(item, "mode", None)
            if mode == "r":
                continue
            found.setdefault(os.path.normcase(item.path), (proc.info["pid"], proc.info["name"] or "?", None, None))
    return found


def snapshot(fresh: bool = False) -> dict[str, tuple[int, str, str | None, int | None]]:
    global _SNAPSHOT
    now = time.monotonic()
    if fresh or _SNAPSHOT is None or now - _SNAPSHOT[0] > FRESH_FOR:
        table = _proc_snapshot() if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd") else _psutil_snapshot()
        _SNAPSHOT = (time.monotonic(), table)
    return _SNAPSHOT[1]


def writers_of(path: Path, *, fresh: bool = False) -> str | None:
    """"held open for writing by <name> (pid N)" when another process has ``path`` open to write."""
    try:
        st = os.stat(path)
        real = os.path.realpath(path)
    except OSError:
        return None
    table = snapshot(fresh)
    holder = table.get(real) or table.get(os.path.normcase(real))
    if holder is None:
        return None
    pid, name, link, ino = holder
    if ino is not None and ino != st.st_ino:
        return None  # another file now has that name (replaced since the process opened it)
    if link is not None:  # still open there? (the snapshot may be a moment old)
        try:
            if os.readlink(link) != real:
                return None
        except OSError:
            return None
    return f"held open for writing by {name} (pid {pid})"
