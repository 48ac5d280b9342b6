"""``levelsess doctor``: find every store, Logician workspace, Cursor and VS Code install on this
machine, summarise their health, and say exactly what to run next.  Read-only."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LevelsessError
from .fsck.check import check_folders
from .locks import LockState
from .stores import LOGICIAN_DIR, default_store, discover_all

SKIP_DIRS = {"node_modules", ".git", ".venv", "venv", "__pycache__", ".cache", ".levelsess"}


@dataclass
class StoreHealth:
    kind: str  # levelcode | logician
    path: Path
    sessions: int = 0
    bytes: int = 0
    errors: int = 0
    warnings: int = 0
    locks: int = 0
    stale_locks: int = 0
    codes: dict = field(default_factory=dict)
    problem: str | None = None
    advice: list = field(default_factory=list)  # "next:" steps, as fsck would print them

    def to_json(self) -> dict:
        return {"kind": self.kind, "path": str(self.path), "sessions": self.sessions, "bytes": self.bytes, "errors": self.errors,
                "warnings": self.warnings, "locks": self.locks, "stale_locks": self.stale_locks, "codes": self.codes,
                "problem": self.problem}


@dataclass
class Install:
    app: str
    user: Path
    db_bytes: int = 0
    sessions: int = 0
    workspaces: list = field(default_factory=list)  # vscode: WorkspaceSurvey
    cleanup_days: int | None = None  # claude-code: cleanupPeriodDays (default 30: a hard delete at start-up)
    cleanup_source: str = ""         # where that figure comes from
    due: int = 0                     # claude-code: sessions the next start-up will delete

    @property
    def orphaned(self) -> list:
        return [w for w in self.workspaces if w.orphaned_sessions]

    def to_json(self) -> dict:
        document = {"app": self.app, "user": str(self.user), "db_bytes": self.db_bytes, "sessions": self.sessions,
                    "orphaned_workspaces": [w.to_json() for w in self.orphaned]}
        if self.app == "claude-code":
            document["retention"] = {"cleanupPeriodDays": self.cleanup_days, "from": self.cleanup_source,
                                     "due_at_next_start": self.due}
        return document


@dataclass
class Diagnosis:
    stores: list[StoreHealth]
    installs: list[Install]
    next: list[str]

    def to_json(self) -> dict:
        return {"version": 1, "stores": [s.to_json() for s in self.stores], "installs": [i.to_json() for i in self.installs],
                "next": self.next, "exit": 0}


def _health(kind: str, path: Path) -> StoreHealth:
    health = StoreHealth(kind, path)
    try:
        report = check_folders(discover_all([path]))
    except LevelsessError as exc:
        health.problem = str(exc)
        return health
    health.sessions, health.bytes = report.files, report.bytes
    findings = report.findings
    health.errors = sum(f.severity == "error" for f in findings)
    health.warnings = sum(f.severity == "warning" for f in findings)
    health.codes = dict(Counter(f.code for f in findings))
    for folder in report.folders:
        for session in folder.sessions:
            if session.lock is not None:
                health.locks += 1
                health.stale_locks += session.lock.state is LockState.STALE
    from .fsck.advice import next_steps

    for hint in next_steps(report, findings, [path]):  # the same true hints fsck itself prints
        command = re.search(r"`(levelsess [^`]+)`", hint)
        if command:
            health.advice.append(f"{command.group(1)}        # {health.errors} error(s), {health.warnings} warning(s) "
                                 f"in {health.sessions} session(s)")
    return health


def find_logician(roots: list[Path], depth: int = 4) -> list[Path]:
    """Workspaces holding ``.logician/sessions`` under ``roots`` (a bounded walk)."""
    found = []
    for root in roots:
        base = len(root.parts)
        for dirpath, dirnames, _files in os.walk(root):
            here = Path(dirpath)
            if (here / LOGICIAN_DIR).is_dir():
                found.append(here)
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not (d.startswith(".") and d != ".logician")
                           and len(here.parts) - base < depth]
    return sorted(set(found))


def _cursor(user: Path) -> Install:
    from .importers import sqlite as db

    install = Install("cursor", user)
    if not (user / "globalStorage").is_dir() and not (user / "workspaceStorage").is_dir():  # ~/.cursor/projects
        from .importers.cursor.transcripts import find

        install.sessions = len(find(user) or [])  # agent transcripts, one session each
        return install
    global_db = user / "globalStorage" / "state.vscdb"
    if global_db.exists():
        install.db_bytes = global_db.stat().st_size
        try:
            with db.open_db(global_db) as conn:
                if "cursorDiskKV" in db.tables(conn):
                    install.sessions = sum(1 for _ in db.keys(conn, "cursorDiskKV", "composerData:"))
        except LevelsessError:
            pass
    return install


def _vscode(user: Path) -> Install:
    from .importers.vscode.survey import survey

    install = Install("vscode", user)
    install.workspaces = survey(user)
    install.sessions = sum(w.sessions for w in install.workspaces)
    return install


CLAUDE_DEFAULT_CLEANUP_DAYS = 30


def claude_retention(root: Path) -> tuple[int, str]:
    """``cleanupPeriodDays`` from ``<root>/settings.json`` (default 30), and where it came from."""
    from .lines import loads, read_regular

    settings = root / "settings.json"
    try:
        value = loads(read_regular(settings))
    except FileNotFoundError:
        return CLAUDE_DEFAULT_CLEANUP_DAYS, "the default (no settings.json)"
    except (OSError, ValueError) as exc:
        return CLAUDE_DEFAULT_CLEANUP_DAYS, f"the default ({settings} cannot be read: {exc})"
    days = value.get("cleanupPeriodDays") if isinstance(value, dict) else None
    if type(days) is int and days > 0:
        return days, str(settings)
    return CLAUDE_DEFAULT_CLEANUP_DAYS, f"the default ({settings} does not set it)"


def _claude(root: Path) -> Install:
    """A Claude Code install: its transcripts and how many the next start-up's cleanup deletes."""
    import time

    from .layouts.claude_code import is_subagent

    install = Install("claude-code", root)
    install.cleanup_days, install.cleanup_source = claude_retention(root)
    cutoff = time.time() - install.cleanup_days * 86400
    for folder in discover_all([root / "projects"]):
        for journal in folder.journals:
            if is_subagent(journal):
                continue
            install.sessions += 1
            try:
                install.due += journal.stat().st_mtime < cutoff
            except OSError:
                pass
    return install


def claude_roots() -> list[Path]:
    from .layouts.claude_code import default_roots

    return [root for root in default_roots() if (root / "projects").is_dir()]


def diagnose(store: str | None = None, roots: list[Path] | None = None) -> Diagnosis:
    """Look everywhere levelsess knows about; write nothing."""
    from .importers import cursor, vscode

    stores = []
    candidates = [default_store(store)]
    if store is None:
        candidates.append(Path.home() / ".levelcode" / "sessions")
    for path in dict.fromkeys(candidates):
        if path.is_dir():
            stores.append(_health("levelcode", path))
    for workspace in find_logician(roots or [Path.cwd()]):
        stores.append(_health("logician", workspace))
    claude = claude_roots()
    for root in claude:
        stores.append(_health("claude-code", root / "projects"))
    installs = [_cursor(u) for u in cursor.detect()] + [_vscode(u) for u in vscode.detect()] + [_claude(r) for r in claude]
    return Diagnosis(stores, installs, _next_steps(stores, installs))


def _next_steps(stores: list[StoreHealth], installs: list[Install]) -> list[str]:
    steps = []
    for health in stores:
        steps += health.advice
    for install in installs:
        if install.app == "claude-code" and install.due:
            steps.append(f"{install.due} Claude Code session(s) in {install.user} are older than cleanupPeriodDays "
                         f"({install.cleanup_days}): its next start deletes them, with no trash. Keep a copy first: "
                         f"{_copy_command(install.user / 'projects')}")
        if install.app == "cursor" and install.sessions:
            steps.append(f"levelsess import --from cursor --source {_quote(install.user)}        # {install.sessions} composer(s)")
        if install.app == "vscode" and install.orphaned:
            count = sum(w.orphaned_sessions for w in install.orphaned)
            steps.append(f"levelsess import --from vscode --source {_quote(install.user)} --orphans-only        "
                         f"# {count} chat(s) VS Code no longer shows, in {len(install.orphaned)} workspace(s)")
            moved = next((w for w in install.orphaned if "folder-missing" in w.reasons and w.project), None)
            if moved is not None:
                steps.append(f"levelsess import --from vscode --source {_quote(install.user)} --orphans-only "
                             f"--map {_quote(moved.project)}=NEW_PATH        # if that folder moved")
    return steps


def _copy_command(projects: Path) -> str:
    """A command for this OS that copies a Claude Code ``projects`` folder somewhere safe."""
    import sys

    if sys.platform == "win32":
        return f'robocopy "{projects}" "%USERPROFILE%\\claude-projects-copy" /E'
    return f"cp -a {_quote(projects)} ~/claude-projects-copy-$(date +%F)"


def _quote(path: object) -> str:
    import shlex

    return shlex.quote(str(path))
