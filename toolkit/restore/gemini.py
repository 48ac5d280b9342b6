"""Give kept Gemini CLI sessions back (SOURCES-MORE §1.1): to ``<gemini home>/tmp/<project>/chats/
<its original file name>`` (a subagent session to ``chats/<parentId>/<id>.jsonl``), byte for byte
as last imported; a session's kept subagent sessions come back with it.  ``<project>`` is the
folder the session was in (a slug from ``projects.json``, or the older sha256 of the project
root); Gemini's own ``projects.json`` and ``.project_root`` are not written.
``cd <project> && gemini --resume <sessionId>`` then finds it.
"""

from __future__ import annotations

from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from .. import shellwords
from ..errors import UsageError
from ..layouts.gemini import CHATS, GEMINI, TMP, default_roots
from .contract import SessionFiles, read_meta

APP = "gemini"
LAYOUT = GEMINI


def session_files(journal: Path, meta: dict, to: Path | None) -> SessionFiles:
    """The files of the kept session ``journal`` (meta ``meta``), its subagents', and where each goes."""
    source = meta["source"]
    if source.get("legacy") or str(source.get("path") or "").endswith(".json"):
        raise UsageError(f"{meta['id']} was kept from a legacy whole-file .json session, which Gemini CLI reads but never "
                         "writes again; restore does not write it back",
                         hint=f"read it with `levelsess show {meta['id']}` or `levelsess export {meta['id']}`")
    _loadable(meta, journal)
    root, where = _root(source, to)
    files = [((journal,), root / where)]
    if not source.get("parent"):
        for agent, agent_meta in _subagents(journal.parent, source.get("key")):
            if agent_meta.get("raw") is None:
                continue  # a subagent session kept without its metadata line: Gemini would not load it either
            _agent_root, agent_where = _root(agent_meta["source"], to)
            files.append(((agent,), root / agent_where))
    return SessionFiles(meta["id"], root, tuple(files), None if source.get("parent") else _next(meta, journal, root))


def _loadable(meta: dict, journal: Path) -> None:
    """Refuse a session kept without its metadata line (lost before the import): written back, Gemini
    could not load it and its next start would delete it, so restore's own check would undo it.
    (One imported with --no-raw keeps no line at all: the contract refuses it, restore-unproven.)"""
    from ..journal import iter_records

    if meta.get("raw") is None and any(record.get("raw") is not None for _l, _o, record in iter_records(journal)):
        raise UsageError(f"{meta['id']} was kept without its metadata line (Gemini had lost it before the import): written "
                         "back, Gemini CLI could not load it and its next start would delete it; nothing written",
                         hint=f"read it with `levelsess show {meta['id']}` or `levelsess export {meta['id']}`")


def _subagents(folder: Path, key: object) -> list[tuple[Path, dict]]:
    """The kept journals in ``folder`` that are subagent sessions of the session ``key``."""
    if not isinstance(key, str) or not key:
        return []
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        meta = read_meta(path)
        source = meta.get("source") if meta else None
        if isinstance(source, dict) and source.get("app") == APP and source.get("parent") == key:
            found.append((path, meta))
    return found


def _root(source: dict, to: Path | None) -> tuple[Path, PurePath]:
    """The Gemini home to write under (``--to``, else the one the session was in when it is still
    there, else this user's: $GEMINI_CLI_HOME/.gemini or ~/.gemini) and the file's path below it."""
    text = str(source.get("path") or "")
    original = (PureWindowsPath if text[1:3] in (":\\", ":/") or "\\" in text else PurePosixPath)(text)
    parts = original.parts
    depth = 5 if source.get("parent") else 4  # tmp/<project>/chats/[<parentId>/]<file>
    if len(parts) <= depth or parts[-depth] != TMP or parts[-depth + 2] != CHATS:
        raise UsageError(f"the kept Gemini session's source path {text!r} does not say which project folder "
                         "(tmp/<project>/chats) Gemini had it in",
                         hint="import it from its place under ~/.gemini/tmp, or read it with `levelsess show`")
    where = PurePath(*parts[-depth:])
    if to is not None:
        return Path(to).expanduser(), where
    was = Path(*parts[:-depth])
    if isinstance(original, type(PurePath())) and (was / TMP).is_dir():
        return was, where
    return default_roots()[0], where


def _next(meta: dict, journal: Path, root: Path) -> str:
    """``cd <project> && gemini --resume <id>``; and, for a session older than the sweep's maxAge,
    that only resuming it keeps it (a plain start there deletes it, SOURCES-MORE §1.6)."""
    sid = meta["source"].get("key") or meta["id"].removeprefix("gemini-")
    project = meta.get("project")
    resume = f"gemini --resume {shellwords.quote(str(sid))}"
    line = f"cd {shellwords.quote(project)} && {resume}" if isinstance(project, str) and project else resume
    old = _too_old(journal, root)
    return f"{line}   # resume it directly: {old}" if old else line


def _too_old(journal: Path, root: Path) -> str | None:
    """Why Gemini's next plain start in the project deletes the restored session, or None."""
    import time

    from ..journal import iter_records
    from ..layouts.gemini.sweep import _instant, load_retention

    retention = load_retention(root)
    hours = retention.max_age_hours
    if not retention.active or hours is None:
        return None
    latest = None
    for _line, _offset, record in iter_records(journal):
        stamp = _instant(record.get("t"))
        latest = stamp if stamp is not None and (latest is None or stamp > latest) else latest
    if latest is None or latest >= time.time() - hours * 3600:
        return None
    return f"it was last updated over {retention.max_age} ago, and a plain `gemini` start there deletes such sessions"
