"""Where VS Code (and its siblings) keep chat sessions (SOURCES.md §3.1, §3.5, §3.6)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NotASourceError, PathNotFoundError
from ..uris import classify, read_workspace_json, subfolders

PRODUCTS = ("Code", "Code - Insiders", "Code - OSS", "VSCodium")
INDEX_KEY = "chat.ChatSessionStore.index"
LEGACY_KEY = "interactive.sessions"
TRANSFER_KEY = "ChatSessionStore.transferIndex"
AGENT_STATE_KEY = "agentSessions.state.cache"  # [{resource, archived, pinned?}]


def default_user_dirs() -> list[Path]:
    """``<root>/User`` for every product: portable, $VSCODE_APPDATA, then the OS default."""
    import platformdirs

    roots = []
    if os.environ.get("VSCODE_PORTABLE"):
        roots.append(Path(os.environ["VSCODE_PORTABLE"]) / "user-data")
    for product in PRODUCTS:
        if os.environ.get("VSCODE_APPDATA"):
            roots.append(Path(os.environ["VSCODE_APPDATA"]) / product)
        roots.append(Path(platformdirs.user_config_dir(product, appauthor=False, roaming=True)))
    return [root / "User" for root in dict.fromkeys(roots)]


def detect() -> list[Path]:
    return [p for p in default_user_dirs() if (p / "workspaceStorage").is_dir() or (p / "globalStorage").is_dir()]


@dataclass
class Store:
    """One place session files live, with its index database and the project it stands for."""

    kind: str  # workspace | empty-window | no-workspace | transferred | file
    folder: Path  # holds the session files
    db: Path | None  # the state.vscdb with its index (and legacy sessions)
    workspace_id: str | None = None
    uri: str | None = None
    project: str | None = None
    status: str = "live"
    orphan: list[str] = field(default_factory=list)
    files: list[Path] | None = None  # only these files (a single session file given as --source)


def _workspace_store(folder: Path) -> Store:
    uri = read_workspace_json(folder)
    project, status, orphan = classify(uri)
    kind = "no-workspace" if folder.name == "no-workspace" else "workspace"
    db = folder / "state.vscdb"
    return Store(kind, folder / "chatSessions", db if db.exists() else None, folder.name, uri, project, status, orphan)


def resolve(source: Path) -> list[Store]:
    """Turn ``--source`` (a ``User`` folder, one ``workspaceStorage/<id>`` folder, one
    ``chatSessions`` folder, one ``state.vscdb`` (with its folder's sessions) or one session
    file) into the stores to read."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file() and source.suffix == ".vscdb":  # a database stands for the store it belongs to
        parent = source.parent
        if parent.name == "globalStorage":
            return [Store("empty-window", parent / "emptyWindowChatSessions", source),
                    Store("transferred", parent / "transferredChatSessions", source)]
        store = _workspace_store(parent)
        store.db = source
        return [store]
    if source.is_file():
        if source.suffix not in (".json", ".jsonl"):
            raise NotASourceError(f"{source} (expected a VS Code User folder, a workspaceStorage/<id> folder, a state.vscdb or a session .json/.jsonl)")
        parent = source.parent
        base = _workspace_store(parent.parent) if parent.name == "chatSessions" else Store("file", parent, None)
        base.files = [source]
        return [base]
    if (source / "workspaceStorage").is_dir() or (source / "globalStorage").is_dir():
        stores = []
        storage = source / "workspaceStorage"
        for folder in subfolders(storage):
            stores.append(_workspace_store(folder))
        global_dir = source / "globalStorage"
        global_db = global_dir / "state.vscdb"
        global_db = global_db if global_db.exists() else None
        stores.append(Store("empty-window", global_dir / "emptyWindowChatSessions", global_db))
        stores.append(Store("transferred", global_dir / "transferredChatSessions", global_db))
        return stores
    if source.name == "chatSessions":
        return [_workspace_store(source.parent)]
    if (source / "chatSessions").is_dir() or (source / "workspace.json").exists() or (source / "state.vscdb").exists():
        return [_workspace_store(source)]
    raise NotASourceError(f"{source} (expected a VS Code User folder, a workspaceStorage/<id> folder, a state.vscdb or a session .json/.jsonl)")
