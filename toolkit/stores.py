"""Find the journals behind a PATH: a LevelCode store, project folder or journal, or a
Logician workspace / session (DESIGN.md §2.1, §2.2).  Read-only."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import NotAStoreError, PathNotFoundError, PermissionDeniedError
from .journal import Layout

STATE_DIR = ".levelsess"
LOGICIAN_DIR = Path(".logician") / "sessions"
LOGICIAN_ENTRIES = "messages.jsonl"


@dataclass(frozen=True)
class Folder:
    """A unit of checking: a LevelCode project folder or a Logician session folder.

    ``journals`` are the journals to check; ``whole`` says whether the folder's cache
    (index.json / meta.json) is in scope (not when one LevelCode journal was named).
    """

    path: Path
    layout: Layout
    store: Path
    journals: tuple[Path, ...]
    whole: bool = True
    problem: str | None = None  # why the folder could not be listed (its journals are unknown)

    @property
    def cache(self) -> Path:
        return self.path / ("index.json" if self.layout is Layout.LEVELCODE else "meta.json")

    @property
    def state_dir(self) -> Path:
        return self.store / STATE_DIR


def slug(project: str) -> str:
    """Return the folder name for a project path (DESIGN.md §2.1)."""
    out = "".join(c if c.isascii() and c.isalnum() else "-" for c in project)
    if len(out) > 200 or not project.isascii():
        out = out[:180] + "-" + hashlib.sha256(project.encode("utf-8")).hexdigest()[:8]
    return out


def default_store(store: str | None = None) -> Path:
    """Return the store root: --store, else $LEVELSESS_HOME, else ~/.levelcode/sessions."""
    if store:
        return Path(store).expanduser()
    if os.environ.get("LEVELSESS_HOME"):
        return Path(os.environ["LEVELSESS_HOME"]).expanduser()
    return Path.home() / ".levelcode" / "sessions"


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except PermissionError as exc:
        raise PermissionDeniedError(f"cannot list {folder}") from exc
    except NotADirectoryError as exc:
        raise NotAStoreError(str(folder)) from exc


def _journals_in(folder: Path) -> tuple[Path, ...]:
    return tuple(Path(e.path) for e in _entries(folder) if e.name.endswith(".jsonl") and not e.name.startswith("."))


def _is_project(folder: Path) -> bool:
    return any(
        (e.name.endswith(".jsonl") or e.name == "index.json") and not e.name.startswith(".") for e in _entries(folder)
    )


def _levelcode_store(root: Path) -> list[Folder]:
    folders = []
    for entry in _entries(root):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        sub = Path(entry.path)
        try:
            if _is_project(sub):
                folders.append(Folder(sub, Layout.LEVELCODE, root, _journals_in(sub)))
        except PermissionDeniedError as exc:  # one unreadable project is a finding, not the end of the check
            folders.append(Folder(sub, Layout.LEVELCODE, root, (), problem=str(exc)))
    return folders


def _logician_sessions(store: Path) -> list[Folder]:
    sessions = store / "sessions"
    if not sessions.is_dir():
        return []
    return [_logician_session(Path(e.path), store) for e in _entries(sessions) if e.is_dir()]


def _logician_session(folder: Path, store: Path | None = None) -> Folder:
    if store is None:
        store = folder.parent.parent if folder.parent.name == "sessions" else folder.parent
    try:
        names = {e.name for e in _entries(folder)}
    except PermissionDeniedError as exc:  # its meta.json may hold the only copy of the name: hands off
        return Folder(folder, Layout.LOGICIAN, store, (), problem=str(exc))
    journal = folder / LOGICIAN_ENTRIES
    return Folder(folder, Layout.LOGICIAN, store, (journal,) if LOGICIAN_ENTRIES in names else ())


def _single_journal(path: Path) -> Folder:
    if path.name == LOGICIAN_ENTRIES:
        session = _logician_session(path.parent)
        return Folder(session.path, Layout.LOGICIAN, session.store, (path,))
    parent = path.parent
    # a project folder's name is a slug ('-Users-…', '_unassigned') or it holds index.json
    in_project = parent.name.startswith(("-", "_")) or (parent / "index.json").exists()
    store = parent.parent if in_project else parent
    return Folder(parent, Layout.LEVELCODE, store, (path,), whole=False)


def discover(path: Path) -> list[Folder]:
    """Return the folders (with their journals) that ``path`` stands for."""
    if not path.exists() and not path.is_symlink():
        raise PathNotFoundError(str(path))
    if path.is_file() or (path.is_symlink() and path.suffix == ".jsonl"):
        if path.suffix != ".jsonl":
            raise NotAStoreError(str(path))
        return [_single_journal(path)]
    if not path.is_dir():
        raise NotAStoreError(str(path))
    if (path / LOGICIAN_DIR).is_dir():
        return _logician_sessions(path / LOGICIAN_DIR)
    if path.name == ".logician" and (path / "sessions").is_dir():
        return _logician_sessions(path / "sessions")
    if path.name == "sessions" and path.parent.name == ".logician":
        return _logician_sessions(path)
    if path.name == "sessions" and path.parent.parent.name == ".logician":
        return _logician_sessions(path.parent)
    if (path / LOGICIAN_ENTRIES).exists() or (path / "meta.json").exists():
        return [_logician_session(path)]
    if _is_project(path):
        return [Folder(path, Layout.LEVELCODE, path.parent, _journals_in(path))]
    folders = _levelcode_store(path)
    visible = [e for e in _entries(path) if not e.name.startswith(".")]
    if folders or not visible or all(e.is_dir() and e.name.startswith(("-", "_")) for e in visible):
        return folders  # a store, maybe with only empty project folders (a writer killed at birth)
    raise NotAStoreError(str(path))


def discover_all(paths: list[Path]) -> list[Folder]:
    """Discover every PATH, dropping duplicates while keeping order."""
    seen: dict[tuple[Path, bool], Folder] = {}
    for path in paths:  # absolute (links kept): every path a finding names works from any folder
        for folder in discover(Path(os.path.abspath(path))):
            key = (folder.path.resolve(), folder.whole)
            if key in seen and folder.whole:
                continue
            if key in seen:
                old = seen[key]
                folder = Folder(old.path, old.layout, old.store, tuple(dict.fromkeys(old.journals + folder.journals)), False)
            seen[key] = folder
    return list(seen.values())
