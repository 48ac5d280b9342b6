"""A process-wide audit hook that records (or refuses) every filesystem write.

``sys.addaudithook`` sees every ``open`` with write flags, mkdir, rename, remove, truncate,
chmod, utime and link made by Python code, so a check can be proven read-only even when
the tests run as root (where a read-only chmod would not stop a write).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_EVENTS = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.chmod", "os.chown",
           "os.utime", "os.link", "os.symlink", "shutil.copyfile", "shutil.rmtree", "os.chflags"}
_state = {"active": None, "deny": None}


def _hook(event: str, args: tuple) -> None:
    active = _state["active"]
    if event == "open" and _state["deny"] is not None and args and isinstance(args[0], (str, bytes, os.PathLike)):
        if Path(os.fsdecode(args[0])) in _state["deny"]:
            raise PermissionError(13, "Permission denied (test)", os.fsdecode(args[0]))
    if active is None:
        return
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writes and isinstance(path, (str, bytes, os.PathLike)):
            active.append((event, os.fsdecode(path)))
    elif event in _EVENTS:
        active.append((event, repr(args[:2])))


sys.addaudithook(_hook)


@contextlib.contextmanager
def no_writes():
    """Collect every write attempted inside the block; the caller asserts the list is empty."""
    seen: list = []
    _state["active"] = seen
    try:
        yield seen
    finally:
        _state["active"] = None


@contextlib.contextmanager
def deny_open(*paths: Path):
    """Make opening any of ``paths`` fail with PermissionError, like an unreadable file."""
    _state["deny"] = {Path(p) for p in paths}
    try:
        yield
    finally:
        _state["deny"] = None
