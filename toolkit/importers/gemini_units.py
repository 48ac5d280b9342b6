"""Gemini CLI's session files as an import lists them (the registry's ``gemini``): the Gemini folders
on this machine, one unit per session file (with what names its project), and a unit's key.  An
import that finds nothing new needs nothing else: every other name of the importer (``scan_unit``,
``resume_unit``, ...) is :mod:`toolkit.importers.gemini`'s, loaded the first time one is asked for,
when a session file is read (issue 27, as :mod:`toolkit.importers.codex_units`); and the listing is
kept (``units_from``), so such an import lists no folder that did not change."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..errors import NotASourceError, PathNotFoundError
from ..findings import Finding
from ..layouts.base import looked
from ..layouts.gemini_names import CHATS, TMP, default_roots, is_session_name
from .base import Options, loaded_later  # noqa: F401 (Options: what the importer takes from the command line)
from .unchanged import Unit

APP = "gemini"
__getattr__ = loaded_later("toolkit.importers.gemini")  # the rest of the importer, loaded when first asked for


def detect() -> list[Path]:
    """The Gemini CLI folders on this machine that hold project folders."""
    return [home for home in default_roots() if (home / TMP).is_dir()]


def _is_legacy(path: Path) -> bool:
    return path.name.startswith("session-") and path.suffix == ".json" and path.parent.name == CHATS


def _listed(folder: Path) -> list[Path]:
    looked(folder)  # (an import keeping its listing: what it lists)
    return list(folder.iterdir())


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder, its parent noted as looked at (a folder made or removed there changes it)."""
    looked(path.parent)
    return path.is_dir()


def _in_chats(chats: Path) -> list[Path]:
    listed = _listed(chats)
    found = sorted(p for p in listed if (is_session_name(p.name) or _is_legacy(p)) and p.is_file())
    for sub in sorted(p for p in listed if p.is_dir() and not p.name.startswith(".")):
        found += sorted(p for p in _listed(sub) if p.suffix == ".jsonl" and p.is_file())
    return found


def source_files(source: Path) -> list[Path]:
    """``--source``: a Gemini folder (~/.gemini), its tmp/, a project folder, a chats/ folder or one session file."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        return [source]
    if _is_folder(source / TMP):
        source = source / TMP
    if source.name == TMP:
        return [f for project in sorted(_listed(source)) if _is_folder(project / CHATS) for f in _in_chats(project / CHATS)]
    if _is_folder(source / CHATS):
        return _in_chats(source / CHATS)
    if source.name == CHATS:
        return _in_chats(source)
    raise NotASourceError(f"{source} (expected a Gemini CLI folder (~/.gemini), its tmp/, a project folder, "
                          "a chats/ folder or a session .jsonl)")


def _deps(path: Path) -> tuple[Path, ...]:
    """What a session file's conversion also reads: what names its project (the project folder's
    ``.project_root``, ``projects.json``) and, for a legacy ``.json``, its ``.jsonl`` twin."""
    chats = path.parent.parent if path.parent.name != CHATS else path.parent
    deps = [chats.parent / ".project_root", chats.parent.parent.parent / "projects.json"]
    if path.suffix == ".json":
        deps.append(path.with_suffix(".jsonl"))
    return tuple(deps)


def units(source: Path, report: Callable[[Finding], None]) -> list[Unit]:
    """One unit per session file; each also depends on what names its project and, for a legacy
    ``.json``, on its ``.jsonl`` twin (:func:`_deps`)."""
    return [Unit(str(path), (path,), _deps(path), path) for path in source_files(source) if path.suffix in (".jsonl", ".json")]


def units_from(source: Path, kept: list[tuple[str, list[str], list[str]]]) -> list[Unit] | None:
    """The units :func:`units` found, from what an import kept of them (key, files, deps); None
    when they are not as :func:`units` makes them."""
    found = []
    for key, files, deps in kept:
        if len(files) != 1 or key != files[0]:
            return None
        found.append(Unit(key, (key,), tuple(deps), key))  # (the strings kept, stamped as ever: a path made when read)
    return found


_SHORT_ID = re.compile(r"-([a-zA-Z0-9_-]{8})\.jsonl?$")  # session-<time>-<sessionId[0:8]>.json(l) (SOURCES-MORE §1.2)


def unit_key(unit: Unit) -> str:
    """What names a file's session as far as its name says: a session's short id (its ``.json``
    and ``.jsonl`` twins share it), else the file's stem (a subagent's file is named after its
    session): ``import --jobs`` imports the units that share it one after the other, in one worker."""
    path = handle_path(unit)
    match = _SHORT_ID.search(path.name) if path.name.startswith("session-") else None
    return (match.group(1) if match else path.stem).lower()


def handle_path(unit: Unit) -> Path:
    """A unit's session file (a kept listing's unit holds its name)."""
    handle = unit.handle
    return handle if isinstance(handle, Path) else Path(handle)
