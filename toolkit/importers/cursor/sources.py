"""Where Cursor keeps its databases, and what ``--source`` points at (SOURCES.md §1.3, §2.1)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NotASourceError, PathNotFoundError
from ..uris import classify, read_workspace_json, subfolders


def default_user_dirs() -> list[Path]:
    """Cursor's ``User`` folder on this OS (and a Windows install seen from WSL)."""
    import platformdirs

    found = [Path(platformdirs.user_config_dir("Cursor", appauthor=False, roaming=True)) / "User"]
    if sys.platform.startswith("linux") and Path("/mnt/c/Users").is_dir():
        found += sorted(Path("/mnt/c/Users").glob("*/AppData/Roaming/Cursor/User"))
    return found


def detect() -> list[Path]:
    """Every Cursor ``User`` folder that exists on this machine, and ``~/.cursor/projects``
    when it holds agent transcripts."""
    from .transcripts import default_projects, find

    found = [p for p in default_user_dirs() if (p / "globalStorage").is_dir() or (p / "workspaceStorage").is_dir()]
    projects = default_projects()
    if projects.is_dir() and find(projects):
        found.append(projects)
    return found


@dataclass
class Workspace:
    """One ``workspaceStorage/<id>`` folder: its database and what project it stands for."""

    id: str
    db: Path | None
    uri: str | None
    project: str | None
    status: str
    orphan: list[str]


@dataclass
class Sources:
    global_db: Path | None
    workspaces: list[Workspace] = field(default_factory=list)
    scope: str | None = None  # a workspace id: import only its conversations from the global DB
    transcripts: list[Path] = field(default_factory=list)  # agent transcripts (.jsonl)


def _workspace(folder: Path, db_path: Path | None = None) -> Workspace:
    uri = read_workspace_json(folder)
    project, status, orphan = classify(uri)
    path = db_path or (folder / "state.vscdb")
    return Workspace(folder.name, path if path.exists() else None, uri, project, status, orphan)


def sibling_global(folder: Path) -> Path:
    """``<User>/globalStorage/state.vscdb`` for a ``<User>/workspaceStorage/<id>`` folder."""
    return folder.parent.parent / "globalStorage" / "state.vscdb"


def _scoped(folder: Path) -> Sources:
    """One ``workspaceStorage/<id>``: its database, plus that workspace's conversations in the
    sibling global database (0.43+ keeps only chat heads in the workspace)."""
    workspace = _workspace(folder)
    found = sibling_global(folder)
    if not found.is_file():
        return Sources(None, [workspace])
    return Sources(found, [workspace], scope=workspace.id)


def resolve(source: Path) -> Sources:
    """Turn ``--source`` into the databases to read."""
    from .transcripts import find

    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    transcripts = find(source)
    if transcripts is not None:
        return Sources(None, transcripts=transcripts)
    if source.is_file():
        if source.parent.name == "globalStorage":
            return Sources(source)
        if source.name == "state.vscdb" and source.parent.parent.name == "workspaceStorage":
            return _scoped(source.parent)
        # one loose database (a copy, a .backup): read it both as a workspace and a global DB
        return Sources(source, [_workspace(source.parent, source)])
    if (source / "globalStorage").is_dir() or (source / "workspaceStorage").is_dir():
        global_db = source / "globalStorage" / "state.vscdb"
        storage = source / "workspaceStorage"
        folders = subfolders(storage)
        return Sources(global_db if global_db.exists() else None, [_workspace(f) for f in folders])
    if (source / "state.vscdb").exists():
        if source.name == "globalStorage":
            return Sources(source / "state.vscdb")
        if source.parent.name == "workspaceStorage":
            return _scoped(source)
        return Sources(None, [_workspace(source)])
    raise NotASourceError(f"{source} (expected a Cursor User folder, a workspaceStorage/<id> folder, a state.vscdb, "
                          "or agent transcripts: ~/.cursor/projects, a project folder, its agent-transcripts/ or one .jsonl)")
