"""Give kept Claude Code sessions back where ``claude --resume`` finds them (SOURCES-AGENTS §1.1,
§1.3): ``<root>/projects/<the original project folder>/<sessionId>.jsonl``, and each subagent's
``<sessionId>/subagents/agent-<id>.jsonl``, byte for byte as last imported.

A session's journal holds its transcript's lines; a 1.0.x transcript's inline sidechains are
kept in sidechain journals of their own (``source.sidechainRoot``), so those join it; each
subagent journal (``source.agentId``) is a file of its own.  Naming a sidechain or subagent
journal gives back the transcript it came from (a sidechain) or that one file (a subagent).
"""

from __future__ import annotations

from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from .. import shellwords
from ..errors import UsageError
from ..layouts.claude_code import CLAUDE_CODE, SUBAGENTS, default_roots
from .contract import SessionFiles, read_meta

APP = "claude-code"
LAYOUT = CLAUDE_CODE


def session_files(journal: Path, meta: dict, to: Path | None) -> SessionFiles:
    """The files of the kept session ``journal`` (meta ``meta``) and where each goes."""
    source = meta["source"]
    companions = _companions(journal.parent, source.get("parent") or meta["id"])
    if source.get("sidechainRoot"):  # an inline sidechain: its lines are in its session's transcript
        parent = next((j for j, m in companions.items() if m["id"] == source.get("parent")), None)
        if parent is None:
            raise UsageError(f"{meta['id']} is a sidechain of {source.get('parent')}, which is not in {journal.parent}",
                             hint="import the session again, or name the session itself")
        journal, meta, source = parent, companions[parent], companions[parent]["source"]
        companions = _companions(journal.parent, meta["id"])
    root, where = _root(source, to)
    files = []
    if source.get("agentId"):
        files.append(((journal,), root / where))
    else:
        sides = [j for j, m in companions.items() if m["source"].get("sidechainRoot")]
        files.append(((journal, *sides), root / where))
        for agent, agent_meta in companions.items():
            if agent_meta["source"].get("agentId"):
                _agent_root, agent_where = _root(agent_meta["source"], to)
                files.append(((agent,), root / agent_where))
    return SessionFiles(meta["id"], root, tuple(files), None if source.get("agentId") else _next(meta))


def _companions(folder: Path, parent_id: str) -> dict[Path, dict]:
    """The kept journals in ``folder`` whose meta names ``parent_id`` as their session (subagents,
    sidechains), and the session's own, by path."""
    found = {}
    for path in sorted(folder.glob("*.jsonl")):
        meta = read_meta(path)
        source = meta.get("source") if meta else None
        if isinstance(source, dict) and source.get("app") == APP and parent_id in (meta.get("id"), source.get("parent")):
            found[path] = meta
    return found


def _root(source: dict, to: Path | None) -> tuple[Path, PurePath]:
    """The Claude root to write under (``--to``, else the one the transcript was in when it is
    still there, else this user's: $CLAUDE_CONFIG_DIR or ~/.claude) and the file's path below it."""
    text = str(source.get("path") or "")
    original = (PureWindowsPath if text[1:3] in (":\\", ":/") or "\\" in text else PurePosixPath)(text)
    depth = 4 if source.get("agentId") else 2  # projects/<folder>/<sid>/subagents/<file> or projects/<folder>/<file>
    parts = original.parts
    if len(parts) <= depth:
        raise UsageError(f"the kept session's source path {text!r} does not say where Claude Code had it")
    where = PurePath("projects", *parts[-depth:])
    if depth == 4 and parts[-2] != SUBAGENTS:
        where = PurePath("projects", *parts[-4:-2], SUBAGENTS, parts[-1])
    if to is not None:
        return Path(to).expanduser(), where
    was = Path(*parts[:-(depth + 1)]) if len(parts) > depth + 1 and parts[-(depth + 1)] == "projects" else None
    if was is not None and isinstance(original, type(PurePath())) and was.is_dir():
        return was, where
    return default_roots()[0], where


def _next(meta: dict) -> str:
    sid = meta["source"].get("key") or meta["id"].removeprefix("claude-")
    project = meta.get("project")
    resume = f"claude --resume {shellwords.quote(str(sid))}"
    return f"cd {shellwords.quote(project)} && {resume}" if isinstance(project, str) and project else resume
