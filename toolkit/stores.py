"""Find the journals behind a PATH: ask each layout, in registry order, whether it claims it
(DESIGN.md §2.1, §2.2).  Read-only."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from .errors import NotAStoreError, PathNotFoundError
from .layouts.base import STATE_DIR, Folder  # noqa: F401 (re-exported)
from .layouts.registry import every

#: What :func:`slug` turns into a dash.
_NOT_SLUG = re.compile("[^A-Za-z0-9]")


def __getattr__(name: str) -> object:
    """``LOGICIAN_ENTRIES`` and ``LOGICIAN_DIR`` (re-exported), from the Logician layout, loaded when
    first asked for: a command that never looks for a Logician workspace does not load it (an
    import's start-up, DESIGN.md §8)."""
    if name in ("LOGICIAN_ENTRIES", "LOGICIAN_DIR"):
        from .layouts import logician

        return logician.ENTRIES if name == "LOGICIAN_ENTRIES" else logician.SESSIONS_DIR
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=4096)
def slug(project: str) -> str:
    """Return the folder name for a project path (DESIGN.md §2.1).  (Kept for the next session of the
    same project: an import asks it three times a session, a character at a time 5 % of a session's
    fixed cost.)"""
    out = _NOT_SLUG.sub("-", project)  # (each character but an ASCII letter or digit: a dash)
    if len(out) > 200 or not project.isascii():
        import hashlib  # here: loading OpenSSL is a start-up cost most runs never need

        out = out[:180] + "-" + hashlib.sha256(project.encode("utf-8")).hexdigest()[:8]
    return out


def default_store(store: str | None = None) -> Path:
    """Return the store root: --store, else $LEVELSESS_HOME, else ~/.levelcode/sessions."""
    if store:
        return Path(store).expanduser()
    if os.environ.get("LEVELSESS_HOME"):
        return Path(os.environ["LEVELSESS_HOME"]).expanduser()
    return Path.home() / ".levelcode" / "sessions"


def discover(path: Path) -> list[Folder]:
    """Return the folders (with their journals) that ``path`` stands for."""
    if not path.exists() and not path.is_symlink():
        raise PathNotFoundError(str(path))
    if path.is_file() or (path.is_symlink() and path.suffix == ".jsonl"):
        if path.suffix != ".jsonl":
            raise NotAStoreError(str(path))
        for layout in every():
            folder = layout.claim_file(path)
            if folder is not None:
                return [folder]
        raise NotAStoreError(str(path))
    if not path.is_dir():
        raise NotAStoreError(str(path))
    for layout in every():
        folders = layout.claim_dir(path)
        if folders is not None:
            return folders
    raise NotAStoreError(str(path))


def _discover_readable(path: Path) -> list[Folder]:
    """:func:`discover`, with a PATH that may not be read (or looked into) as the operational
    error it is (exit 8): the path is right, the permissions are not."""
    from .errors import PermissionDeniedError

    try:
        return discover(path)
    except PermissionError as exc:
        where = path if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)) else exc.filename or path
        raise PermissionDeniedError(f"cannot read {where}") from exc


def discover_all(paths: list[Path]) -> list[Folder]:
    """Discover every PATH, dropping duplicates while keeping order."""
    seen: dict[tuple[Path, bool], Folder] = {}
    for path in paths:  # absolute (links kept): every path a finding names works from any folder
        for folder in _discover_readable(Path(os.path.abspath(path))):
            where = folder.path.resolve()
            if (where, True) in seen:
                continue  # the whole folder is already in: its journals with it
            key = (where, folder.whole)
            if folder.whole:
                seen.pop((where, False), None)  # a journal named before its folder: the folder covers it
            elif key in seen:
                old = seen[key]
                folder = Folder(old.path, old.layout, old.store, tuple(dict.fromkeys(old.journals + folder.journals)), False)
            seen[key] = folder
    return list(seen.values())
