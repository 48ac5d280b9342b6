"""Say what a folder is (a Codex home, a Claude Code root, a VS Code User folder, ...), from the
names each tool gives its own files (SOURCES.md, SOURCES-AGENTS.md).  Read-only: a few ``stat``
calls and at most one folder listing; never a file's content.

``import --from claude --source ~/.codex`` uses it to say that the folder is a Codex home and
which import reads it, instead of only what it is not.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Kind(NamedTuple):
    what: str  # "a Codex CLI home"
    apps: tuple[str, ...]  # the --from names whose importer reads it


CLAUDE_ROOT = Kind("a Claude Code root (~/.claude)", ("claude",))
CLAUDE_PROJECTS = Kind("Claude Code's projects folder", ("claude",))
CODEX_HOME = Kind("a Codex CLI home (~/.codex)", ("codex",))
CODEX_SESSIONS = Kind("a Codex CLI rollouts folder", ("codex",))
EDITOR_USER = Kind("an editor's User folder (VS Code or Cursor)", ("vscode", "cursor"))
CURSOR_USER = Kind("Cursor's User folder", ("cursor", "vscode"))  # told apart by name only: both read it
VSCODE_USER = Kind("VS Code's User folder", ("vscode", "cursor"))
CURSOR_PROJECTS = Kind("Cursor's agent transcripts folder (~/.cursor/projects)", ("cursor",))
COPILOT_HOME = Kind("a GitHub Copilot CLI home (~/.copilot)", ("copilot",))
GEMINI_HOME = Kind("a Gemini CLI folder (~/.gemini)", ("gemini",))
OPENCODE_DATA = Kind("an OpenCode or Kilo data folder", ("opencode",))
LEVELSESS_STORE = Kind("a levelsess store (import writes into one with --store; it does not read one)", ())


def identify(path: Path) -> Kind | None:
    """What ``path`` is, when the names in it say so for sure; None when they do not."""
    path = Path(path)
    try:
        if not path.is_dir():
            return None
        return _by_contents(path) or _by_name(path)
    except OSError:
        return None


def _by_contents(path: Path) -> Kind | None:
    if (path / "projects").is_dir() and ((path / "settings.json").is_file() or path.name == ".claude"
                                         or (path / "todos").is_dir() or (path / "statsig").is_dir()):
        return CLAUDE_ROOT
    if (path / "sessions").is_dir() or (path / "archived_sessions").is_dir():
        if (path / "config.toml").is_file() or (path / "archived_sessions").is_dir() or path.name == ".codex":
            return CODEX_HOME
    if (path / "session-state").is_dir():
        return COPILOT_HOME
    if (path / "tmp").is_dir() and ((path / "settings.json").is_file() or path.name == ".gemini"):
        return GEMINI_HOME
    if (path / "workspaceStorage").is_dir() or (path / "globalStorage").is_dir():
        return _editor(path)
    if (path / "storage").is_dir() or any(path.glob("opencode*.db")) or (path / "kilo.db").is_file():
        return OPENCODE_DATA
    if (path / ".levelsess").is_dir():
        return LEVELSESS_STORE
    return None


def _editor(path: Path) -> Kind:
    names = " ".join(part.casefold() for part in path.parts[-3:])
    if "cursor" in names:
        return CURSOR_USER
    if "code" in names or "vscodium" in names:
        return VSCODE_USER
    return EDITOR_USER


def _by_name(path: Path) -> Kind | None:
    if path.name == "projects" and path.parent.name == ".claude":
        return CLAUDE_PROJECTS
    if path.name == "projects" and path.parent.name == ".cursor":
        return CURSOR_PROJECTS
    if path.name in ("sessions", "archived_sessions") and path.parent.name == ".codex":
        return CODEX_SESSIONS
    return None
