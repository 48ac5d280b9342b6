"""Where Cline, Roo Code and Kilo Code keep their task folders (SOURCES-MORE §4.1, §4.6).

Each extension has a ``globalStorage/<extension id>/`` folder per editor host (VS Code, Insiders,
Cursor, VSCodium, Windsurf, Positron, Antigravity, and a remote host's ``~/.vscode-server``);
Cline's standalone core and Cline 4.x keep theirs in ``${CLINE_DIR:-~/.cline}/data``.  An
:class:`Install` is one such folder: which tool wrote it, its ``tasks/``, and the editor's
``state.vscdb`` beside it (the extension's memento, which may still hold the task list).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ...errors import NotASourceError, PathNotFoundError

#: tool -> its globalStorage folder names (VS Code lower-cases the id on disk; the case varies by version)
EXTENSIONS = {"cline": ("saoudrizwan.claude-dev",),
              "roo": ("rooveterinaryinc.roo-cline", "RooVeterinaryInc.roo-cline"),
              "kilo": ("kilocode.kilo-code",)}
HOSTS = ("Code", "Code - Insiders", "Cursor", "VSCodium", "Windsurf", "Positron", "Antigravity")
REMOTE = (".vscode-server", ".vscode-server-insiders", ".cursor-server", ".windsurf-server")
PREFIX = {"cline": "cline", "roo": "roo", "kilo": "kilo"}


@dataclass(frozen=True)
class Install:
    """One storage folder: ``tool`` (cline | roo | kilo), ``folder`` (holds ``tasks/``, for Cline
    ``state/`` and, in ``~/.cline/data``, ``sessions/`` and ``db/``), ``vscdb`` (the editor's
    globalStorage ``state.vscdb``, or None) and the memento key the extension's state is under."""

    tool: str
    folder: Path
    vscdb: Path | None = None
    key: str | None = None

    @property
    def tasks(self) -> Path:
        return self.folder / "tasks"

    @property
    def sessions(self) -> Path:
        return self.folder / "sessions"


def _host_roots() -> list[Path]:
    """Every editor host's ``User/globalStorage`` folder this OS may have."""
    home = Path.home()
    if sys.platform == "darwin":
        base = [home / "Library" / "Application Support"]
    elif os.name == "nt":
        base = [Path(os.environ["APPDATA"])] if os.environ.get("APPDATA") else []
    else:
        base = [Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")]
    roots = [b / host / "User" / "globalStorage" for b in base for host in HOSTS]
    roots += [home / remote / "data" / "User" / "globalStorage" for remote in REMOTE]
    return roots


def cline_data() -> Path:
    """Cline's own data folder (standalone core, CLI, JetBrains, 4.x): ``$CLINE_DATA_DIR``, else
    ``${CLINE_DIR:-~/.cline}/data``."""
    if os.environ.get("CLINE_DATA_DIR"):
        return Path(os.environ["CLINE_DATA_DIR"])
    return Path(os.environ.get("CLINE_DIR") or Path.home() / ".cline") / "data"


def _holds_tasks(folder: Path) -> bool:
    return (folder / "tasks").is_dir() or (folder / "state" / "taskHistory.json").is_file() or (folder / "sessions").is_dir()


def detect() -> list[Path]:
    """Every Cline, Roo Code and Kilo Code storage folder on this machine that holds tasks."""
    found = []
    for root in _host_roots():
        for names in EXTENSIONS.values():
            found += [root / name for name in names if _holds_tasks(root / name)]
    data = cline_data()
    if _holds_tasks(data):
        found.append(data)
    return list(dict.fromkeys(found))


def _tool_of(folder: Path) -> str | None:
    name = folder.name.lower()
    for tool, names in EXTENSIONS.items():
        if name in (n.lower() for n in names):
            return tool
    return None


def resolve(source: Path) -> Install:
    """``--source`` -> the install: an extension's globalStorage folder, its ``tasks/`` folder, or
    Cline's data folder (``~/.cline/data``)."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.name == "tasks" and source.is_dir() and not (source / "tasks").is_dir():
        source = source.parent
    if not source.is_dir() or not _holds_tasks(source):
        raise NotASourceError(f"{source} (expected a Cline, Roo Code or Kilo Code globalStorage folder, e.g. "
                              "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev, its tasks/ folder, or ~/.cline/data)")
    tool = _tool_of(source) or _guess(source)
    vscdb = source.parent / "state.vscdb"
    key = source.name if _tool_of(source) else None
    return Install(tool, source, vscdb if key and vscdb.is_file() else None, key)


def _guess(folder: Path) -> str:
    """A folder not named by an extension id (a copy, ``~/.cline/data``): Roo's files say Roo."""
    tasks = folder / "tasks"
    if (tasks / "_index.json").is_file():
        return "roo"
    try:
        if tasks.is_dir() and any((t / "history_item.json").is_file() for t in tasks.iterdir()):
            return "roo"
    except OSError:
        pass
    return "cline"
