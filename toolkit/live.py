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
_SNAPSHOT: tuple[float, dict[tuple[int, int], tuple[int, str]]] | None = None
FRESH_FOR = 1.0  # seconds a snapshot stays good


def _proc_snapshot() -> dict[tuple[int, int], tuple[int, str]]:
    """(st_dev, st_ino) of every regular file some other process has open for writing -> (pid, name)."""
    found: dict[tuple[int, int], tuple[int, str]] = {}
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
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as handle:
                    info = handle.read(256)
                flags = int(info.split(b"flags:", 1)[1].split()[0], 8)
                if not flags & _WRITE_MODES:
                    continue
                st = os.stat(f"{fd_dir}/{fd}")
            except (OSError, IndexError, ValueError):
                continue
            if (st.st_mode & 0o170000) == 0o100000:
                found.setdefault((st.st_dev, st.st_ino), (pid, _name(pid), f"{fd_dir}/{fd}"))
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def _psutil_snapshot() -> dict[tuple[int, int], tuple[int, str]]:
    import psutil

    found: dict[tuple[int, int], tuple[int, str]] = {}
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
            try:
                st = os.stat(item.path)
            except OSError:
                continue
            found.setdefault((st.st_dev, st.st_ino), (proc.info["pid"], proc.info["name"] or "?", None))
    return found


def snapshot(fresh: bool = False) -> dict[tuple[int, int], tuple[int, str]]:
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
    except OSError:
        return None
    holder = snapshot(fresh).get((st.st_dev, st.st_ino))
    if holder is None:
        return None
    pid, name, link = holder
    if link is not None:  # still that file? (the snapshot may be a moment old, and inodes are reused)
        try:
            now = os.stat(link)
        except OSError:
            return None
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None
    return f"held open for writing by {name} (pid {pid})"
