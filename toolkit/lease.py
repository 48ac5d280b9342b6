"""Keep every other process from opening a file for a moment: a write lease (Linux ``F_SETLEASE``).

Claude Code and other writers that take no lock append by opening the file, writing one line and
closing it.  While levelsess holds a write lease on a journal, such an ``open`` waits in the kernel
(the lease "breaks" and the opener blocks until we release it, at most
``/proc/sys/fs/lease-break-time`` seconds), and the lease can only be taken while no other process
has the file open at all.  So the bytes levelsess proved, while it holds the lease, are the bytes
it changes: a compare-and-swap against appenders that never look at a lock.

The kernel tells the holder that an opener waits with SIGIO, whose default action ends the
process; it is ignored here (levelsess uses no SIGIO).  Where leases are not supported (another
OS, a file system without them, a thread that cannot change the signal) :func:`take` answers
``UNSUPPORTED`` and the caller falls back to checking before and after.
"""

from __future__ import annotations

import errno
import signal
import sys
import threading
import time

HELD, BUSY, UNSUPPORTED = "held", "busy", "unsupported"

_F_SETLEASE = 1024  # F_LINUX_SPECIFIC_BASE + 0 (Python's fcntl module names it from 3.12 on, not 3.11)
_F_GETLEASE = 1025
#: How long to keep trying to take a lease on a file some other process keeps opening.
WAIT_SECONDS = 1.0


def _fcntl():
    if not sys.platform.startswith("linux"):
        return None
    import fcntl

    return fcntl


def _sigio_ignored() -> bool:
    """SIGIO must not end us when a lease breaks: ignore it (only the main thread may set that)."""
    sigio = getattr(signal, "SIGIO", None)
    if sigio is None:
        return False
    if signal.getsignal(sigio) is signal.SIG_IGN:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(sigio, signal.SIG_IGN)
    return True


def take(fd: int) -> str:
    """Try once to take a write lease on ``fd``: HELD, BUSY (another process has the file open)
    or UNSUPPORTED.  ``fd`` must be this process's only descriptor of the file."""
    fcntl = _fcntl()
    if fcntl is None or not _sigio_ignored():
        return UNSUPPORTED
    try:
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_WRLCK)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EBUSY):
            return BUSY
        return UNSUPPORTED  # EINVAL (no leases on this file system), EPERM (not the owner), ENOLCK
    return HELD


def acquire(fd: int, wait: float = WAIT_SECONDS) -> str:
    """Take a write lease, trying again for up to ``wait`` seconds while other processes have the
    file open (an appender that opens and closes per record leaves gaps); HELD, BUSY or UNSUPPORTED."""
    deadline = time.monotonic() + wait
    pause = 0.0005
    while True:
        state = take(fd)
        if state != BUSY or time.monotonic() >= deadline:
            return state
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def release(fd: int) -> None:
    """Give the lease up: a process waiting to open the file goes on now."""
    fcntl = _fcntl()
    if fcntl is not None:
        try:
            fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_UNLCK)
        except OSError:
            pass  # already broken by the kernel's timer: nothing is held


def broken(fd: int) -> bool:
    """True when another process is waiting to open the file (our lease is being broken) or the
    kernel has taken it back."""
    fcntl = _fcntl()
    if fcntl is None:
        return False
    try:
        return fcntl.fcntl(fd, _F_GETLEASE) != fcntl.F_WRLCK
    except OSError:
        return True

