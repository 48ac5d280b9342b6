"""What a chaos cycle checks: every journal under the chaos folder, and where each kill landed.

A writer may put its journals anywhere under ``LEVELSESS_CHAOS_DIR`` in a layout levelsess
knows: the chaos folder is itself a store root (``<slug>/<id>.jsonl``), and so are ``store/``
and the Logician workspaces (``ws/.logician/…``, ``.logician/…``).  :func:`discover_chaos`
hands every folder that holds a journal or a cache to the toolkit's own discovery, one folder
at a time, so no place is left out because a root mixes stores; what it still cannot check
(an unknown format, a file no layout keeps) is the caller's ``unchecked`` violation.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from toolkit.errors import LevelsessError
from toolkit.stores import Folder, discover_all

STATE_DIR = ".levelsess"  # levelsess's own recovered / quarantined bytes: never a writer's journal
CACHES = ("index.json", "meta.json")
LANDINGS = ("torn", "unterminated", "between")


def _walk(folder: Path):
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != STATE_DIR)
        yield Path(root), sorted(files)


def journals(folder: Path) -> list[Path]:
    """Every regular ``*.jsonl`` file under ``folder`` (hidden ones too), outside ``.levelsess``.

    Not a symlink (the harness never writes through one, nor reads what it points to; fsck
    still checks it), nor a FIFO or device a writer may have made (reading one could block)."""
    return [root / name for root, files in _walk(folder) for name in files if name.endswith(".jsonl") and _regular(root / name)]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def discover_chaos(folder: Path) -> tuple[list[Folder], dict[Path, str]]:
    """Discover every folder under ``folder`` that holds a journal or a cache.

    Returns the folders and, for a folder the toolkit refused, why (its journals go unchecked)."""
    found: list[Folder] = []
    refused: dict[Path, str] = {}
    for root, files in _walk(folder):
        if not any(name.endswith(".jsonl") or name in CACHES for name in files):
            continue
        try:
            found.extend(discover_all([root]))
        except LevelsessError as exc:
            refused[root] = str(exc)
    unique: dict[tuple[Path, bool], Folder] = {}
    for item in found:  # a Logician session is found once however it was reached
        unique.setdefault((item.path.resolve(), item.whole), item)
    return list(unique.values()), refused


def snapshot(folder: Path) -> dict[Path, tuple[int, int]]:
    """Size and mtime of every journal, to tell which ones a cycle wrote."""
    seen = {}
    for path in journals(folder):
        try:
            info = path.stat()
        except OSError:
            continue
        seen[path] = (info.st_size, info.st_mtime_ns)
    return seen


def file_sizes(folder: Path) -> dict[Path, int]:
    """Size of every regular file under ``folder`` (journals, caches, locks)."""
    sizes = {}
    for root, files in _walk(folder):
        for name in files:
            try:
                info = os.lstat(root / name)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                sizes[root / name] = info.st_size
    return sizes


def _tail(path: Path, block: int = 1 << 20) -> bytes:
    """The bytes after the last newline, read backwards from the end."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        tail = b""
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            chunk = handle.read(end - start)
            at = chunk.rfind(b"\n")
            if at >= 0:
                return chunk[at + 1 :] + tail
            tail, end = chunk + tail, start
        return tail


def landing(path: Path) -> str | None:
    """Where a kill (or a power cut) left ``path``: ``torn`` (bytes after the last newline that
    are not a whole record), ``unterminated`` (a whole JSON record without its newline) or
    ``between`` records (it ends in a newline, or is empty); None if it cannot be read."""
    try:
        tail = _tail(path)
    except OSError:
        return None
    if not tail:
        return "between"
    try:
        return "unterminated" if isinstance(orjson.loads(tail), dict) else "torn"
    except orjson.JSONDecodeError:
        return "torn"


def changed_since(folder: Path, before: dict[Path, tuple[int, int]]) -> list[Path]:
    """The journals that are new or changed since ``before`` (the ones a cycle wrote)."""
    return [path for path, stamp in snapshot(folder).items() if before.get(path) != stamp]


def count_landings(paths: list[Path], into: dict[str, int]) -> None:
    """Add the landing of each journal in ``paths`` to ``into``."""
    for path in paths:
        where = landing(path)
        if where is not None:
            into[where] = into.get(where, 0) + 1
