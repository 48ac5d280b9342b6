"""Codex CLI's rollouts as an import lists them (the registry's ``codex``): the homes on this
machine, one unit per rollout (with its home's ``session_index.jsonl``, which names threads), and
a unit's key.  An import that finds nothing new needs nothing else: every other name of the
importer (``scan_unit``, ``resume_unit``, ...) is :mod:`toolkit.importers.codex`'s, loaded the
first time one is asked for, when a rollout is read (issue 27, as :mod:`toolkit.importers.claude_units`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..errors import NotASourceError, PathNotFoundError
from ..findings import Finding
from ..layouts.base import looked
from ..layouts.codex_names import ARCHIVED, SESSIONS, default_roots, home_of, is_rollout_name, thread_id
from .base import Options, loaded_later  # noqa: F401 (Options: what the importer takes from the command line)
from .unchanged import Later, Unit

APP = "codex"
__getattr__ = loaded_later("toolkit.importers.codex")  # the rest of the importer, loaded when first asked for


def detect() -> list[Path]:
    """The Codex homes on this machine that hold rollouts: $CODEX_HOME, ~/.codex, %USERPROFILE%\\.codex."""
    return [home for home in default_roots() if (home / SESSIONS).is_dir() or (home / ARCHIVED).is_dir()]


def _walk(top: Path, depth: int) -> list[Path]:
    """Rollouts in ``top`` and its date folders (``YYYY/MM/DD``), by name."""
    looked(top)  # (an import keeping its listing: what it lists, or that it is not there)
    if not top.is_dir():
        return []
    found = sorted(p for p in top.iterdir() if is_rollout_name(p.name) and p.is_file())
    if depth:
        for sub in sorted(p for p in top.iterdir() if p.name.isdigit() and p.is_dir()):
            found += _walk(sub, depth - 1)
    return found


def _rollouts(source: Path) -> list[Path]:
    """``--source``: a Codex home, its sessions/ or archived_sessions/ folder, a date folder, or one rollout."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        return [source]
    if (source / SESSIONS).is_dir() or (source / ARCHIVED).is_dir():
        return _walk(source / SESSIONS, 3) + _walk(source / ARCHIVED, 0)
    found = _walk(source, 0 if source.name == ARCHIVED else 3)
    if found or source.name in (SESSIONS, ARCHIVED):
        return found
    raise NotASourceError(f"{source} (expected a Codex home (~/.codex), its sessions/ or archived_sessions/ folder, "
                          "a date folder or a rollout-*.jsonl)")


def source_files(source: Path) -> list[Path]:
    return _rollouts(source)


#: The facts of the first records :func:`unit_key` read (path -> (the file's stamp then, the
#: :class:`~toolkit.layouts.codex.FirstFacts`)), for the read of the same rollout by this process or
#: a worker forked from it (:func:`toolkit.importers.codex.first_facts`), each taken once; a new
#: listing drops them.  A Codex session_meta line is tens of kB: it was read and parsed twice.
FIRSTS: dict[str, tuple] = {}


def stamp_of(info: os.stat_result) -> tuple:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def units(source: Path, report: Callable[[Finding], None]) -> list[Unit]:
    """One unit per rollout; each also depends on its home's ``session_index.jsonl`` (thread names)."""
    FIRSTS.clear()
    names: dict[Path, dict[str, str]] = {}  # read once per home, when a rollout of it is read
    homes: dict[Path, tuple[Path, Path]] = {}  # a date folder's home and thread names file, found once
    found = []
    for path in _rollouts(source):
        folder = path.parent
        if folder not in homes:
            home = home_of(folder)
            homes[folder] = (home, home / "session_index.jsonl")
        home, index = homes[folder]
        found.append(Unit(str(path), (path,), (index,), (path, home, names)))
    return found


def units_from(source: Path, kept: list[tuple[str, list[str], list[str]]]) -> list[Unit] | None:
    """The units :func:`units` found, from what an import kept of them (key, files, deps); None
    when they are not as :func:`units` makes them."""
    FIRSTS.clear()
    names: dict[Path, dict[str, str]] = {}
    homes: dict[str, Path] = {}
    found = []
    for key, files, deps in kept:
        if len(files) != 1 or key != files[0]:
            return None
        found.append(Unit(key, (key,), tuple(deps), Later(_handle, key, homes, names)))  # (the strings kept, stamped as ever)
    return found


def _handle(name: str, homes: dict[str, Path], names: dict) -> tuple[Path, Path, dict]:
    """``(rollout, its home, the home's thread names)`` of a kept unit's rollout, as :func:`units`
    makes it: a date folder's home found once (``homes``)."""
    path, folder = Path(name), os.path.dirname(name)
    home = homes.get(folder)
    if home is None:
        home = homes[folder] = home_of(path.parent)
    return path, home, names


def unit_key(unit: Unit) -> str:
    """The thread id a rollout's session is named after, as far as its first record or its name
    says: rollouts that share it (a copy in archived_sessions) write one journal, one after the other."""
    from ..layouts.codex import FirstFacts, first_record  # (the reader of rollouts: loaded when one is opened)

    path = unit.handle[0]
    try:
        info: list = []
        first, _partial = first_record(path, info)
        if info:  # for the read of the rollout (codex.first_facts): not read and parsed a second time
            FIRSTS[str(path)] = (stamp_of(info[0]), FirstFacts.of(first))
    except Exception:  # noqa: BLE001 - unreadable here: scan_unit reports it
        first = None
    payload = first.get("payload") if isinstance(first, dict) else None
    sid = payload.get("id") if isinstance(payload, dict) else first.get("id") if isinstance(first, dict) else None  # legacy: bare
    return (sid if isinstance(sid, str) and sid else thread_id(path) or str(path)).lower()
