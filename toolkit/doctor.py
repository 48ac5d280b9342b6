"""``levelsess doctor``: find every store, Logician workspace, Cursor and VS Code install on this
machine, summarise their health, and say exactly what to run next.  Read-only."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .counts import Count, count_import
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
    due: list = field(default_factory=list)  # gemini: the session files its next start deletes (sweep-due)

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
    due: int = 0                     # claude-code, gemini: sessions the next start-up will delete
    kept: int = 0                    # claude-code, gemini: of those, how many the store already holds
    schedule: tuple[str, str] | None = None  # claude-code, codex: (scheduler, `levelsess schedule install …`) that keeps it nightly
    scheduled: bool = False          # that nightly keep is installed, as schedule install would write it
    gone: list = field(default_factory=list)  # claude-code, codex, gemini: kept sessions whose file it no longer has
    parity: dict | None = None  # codex: rollouts vs the state DB's threads rows (restore --app codex)
    count: Count | None = None  # what `import --from APP --source USER` would recover (toolkit.counts)
    in_store: int = 0                # of those, how many the store holds
    trashed: int = 0                 # of those, how many were trashed from the store (import leaves them out)
    listed: int | None = None        # cline: how many of its tasks the tool's own list shows
    store: Path | None = None        # the store doctor looked at (every command it prints names it)

    @property
    def orphaned(self) -> list:
        return [w for w in self.workspaces if w.orphaned_sessions]

    def to_json(self) -> dict:
        document = {"app": self.app, "user": str(self.user), "db_bytes": self.db_bytes, "sessions": self.sessions,
                    "orphaned_workspaces": [w.to_json() for w in self.orphaned],
                    "import": self.count.to_json() if self.count else None}
        if self.count is not None:
            document["in_store"] = self.in_store
            document["trashed"] = self.trashed
        if self.app == "claude-code":
            document["retention"] = {"cleanupPeriodDays": self.cleanup_days, "from": self.cleanup_source,
                                     "due_at_next_start": self.due, "due_already_in_store": self.kept}
        if self.app == "gemini":
            document["sweep"] = {"due_at_next_start": self.due, "due_already_in_store": self.kept}
        if self.app in ("claude-code", "codex", "gemini"):
            document["kept_but_gone"] = {"sessions": self.gone, "restore": restore_command(self.gone, self.store)}
        if self.app in ("codex", "gemini"):
            document["state_db"] = self.parity
        if self.listed is not None:
            document["listed_by_the_tool"] = self.listed
        if self.schedule:
            document["nightly"] = {"scheduler": self.schedule[0], "command": self.schedule[1], "installed": self.scheduled}
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
    health.due = [f.path for f in findings if f.code == "sweep-due"]
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
    install = _counted(Install("cursor", user))  # every era: composers, chat tabs, agent transcripts
    global_db = user / "globalStorage" / "state.vscdb"
    if global_db.exists():
        install.db_bytes = global_db.stat().st_size
    return install


def _counted(install: Install) -> Install:
    """Give ``install`` the count ``import --from APP --source USER`` would recover (one counting)."""
    install.count = count_import(IMPORT_NAME[install.app], install.user)
    install.sessions = install.count.sessions
    return install


#: The ``--from`` name of each install's importer.
IMPORT_NAME = {"cursor": "cursor", "vscode": "vscode", "claude-code": "claude", "codex": "codex", "gemini": "gemini",
               "copilot": "copilot", "opencode": "opencode", "cline": "cline"}


def _vscode(user: Path) -> Install:
    from .importers.vscode.survey import survey

    install = _counted(Install("vscode", user))
    install.workspaces = survey(user)  # which workspaces VS Code no longer shows
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


def kept_claude_sources(store: Path) -> dict[str, str]:
    """The Claude Code sessions the store keeps (not their subagents): id -> transcript path at import."""
    return kept_sources(store, "claude")


def kept_sources(store: Path, prefix: str, children: bool = False) -> dict[str, str]:
    """The sessions of one app the store keeps (``prefix``-<id> journals; a child whose ``source``
    names a parent only with ``children``, for an app that writes it a file of its own):
    id -> the source file's path at import."""
    from .lines import loads, open_regular

    found = {}
    for journal in sorted(store.glob(f"*/{prefix}-*.jsonl")):
        try:
            with open_regular(journal) as handle:
                meta = loads(handle.readline())
        except (OSError, ValueError):
            continue
        source = meta.get("source") if isinstance(meta, dict) else None
        if isinstance(source, dict) and isinstance(source.get("path"), str) and (children or not source.get("parent")):
            found[meta.get("id")] = source["path"]
    return found


def gone_from(root: Path, sources: dict[str, str]) -> list[str]:
    """The kept sessions whose source file was under ``root`` and is there no more."""
    under = os.path.join(os.path.abspath(root), "")
    return [sid for sid, path in sources.items() if path.startswith(under) and not os.path.exists(path)]


def restore_command(ids: list[str], store: Path | None = None) -> str | None:
    return f"levelsess restore {' '.join(ids)}{store_flag(store)}" if ids else None


def store_flag(store: Path | None) -> str:
    """`` --store PATH`` when ``store`` is not the one every command finds by itself, so a command
    doctor prints runs on the store doctor looked at."""
    if store is None or os.path.abspath(store) == os.path.abspath(default_store(None)):
        return ""
    return f" --store {_quote(os.path.abspath(store))}"


def _claude(root: Path, store: Path, kept: set[str], sources: dict[str, str] | None = None) -> Install:
    """A Claude Code install: its transcripts, how many the next start-up's cleanup deletes, how
    many of those the store already keeps, and the nightly import that keeps the rest."""
    import time

    from .layouts.claude_code import is_subagent

    install = _counted(Install("claude-code", root))  # sessions and their subagents, as import writes them
    install.cleanup_days, install.cleanup_source = claude_retention(root)
    cutoff = time.time() - install.cleanup_days * 86400
    for folder in discover_all([root / "projects"]):
        for journal in folder.journals:
            if is_subagent(journal):
                continue
            try:
                due = journal.stat().st_mtime < cutoff
            except OSError:
                continue
            install.due += due
            install.kept += due and f"claude-{journal.stem}" in kept
    install.schedule = nightly_command(["claude"], store)
    install.gone = gone_from(root / "projects", sources or {})
    return install


def _codex(home: Path, store: Path, kept: set[str]) -> Install:
    """A Codex CLI home: its rollouts (live and archived), how many the store keeps, the nightly import."""
    install = _counted(Install("codex", home))
    install.kept = sum(sid in kept for sid in install.count.ids)
    install.schedule = nightly_command(["codex"], store)
    install.parity = codex_parity(home)
    install.gone = gone_from(home, kept_sources(store, "codex", children=True))  # a spawned child is a rollout of its own
    return install


def _tool(app: str, folder: Path, store: Path, kept: set[str]) -> Install:
    """An install whose row is what its importer would recover, how many the store keeps, and
    the nightly import (Copilot CLI, OpenCode / Kilo CLI, Cline / Roo Code / Kilo Code)."""
    install = _counted(Install(app, folder))
    install.kept = sum(sid in kept for sid in install.count.ids)
    install.schedule = nightly_command([KEEP_APP[app]], store)
    if app == "cline":
        from .importers.cline import survey

        install.listed = sum(found.listed for found in survey([folder]))
    return install


def _gemini(home: Path, store: Path, due: list[str], sources: dict[str, str], children: dict[str, str]) -> Install:
    """A Gemini CLI folder: its session files, how many its next start deletes (``due``: their
    paths, sweep-due) and how many of those the store already keeps (a kept session's source file,
    ``children`` with subagent sessions: id -> path at import), the kept sessions it no longer has,
    and the nightly import."""
    install = _counted(Install("gemini", home))
    held = {os.path.abspath(path) for path in children.values()}
    install.due = len(due)
    install.kept = sum(os.path.abspath(path) in held for path in due)
    install.gone = gone_from(home, sources)
    install.schedule = nightly_command(["gemini"], store)
    return install


def codex_parity(home: Path) -> dict | None:
    """What ``codex doctor`` compares (reading a copy of the state DB): rollouts with no threads
    row, rows whose rollout is gone, rows the picker hides for an empty first message; None
    without a DB."""
    from .restore import codex_state

    try:
        found = codex_state.parity(home)
    except LevelsessError:
        return None
    if found.db is None:
        return None
    return {"db": str(found.db), "without_row": len(found.missing), "row_gone": len(found.stale),
            "empty_first_message": len(found.empty), "rescan_at_next_start": found.backfill == codex_state.PENDING,
            "restore": codex_state.command(found.home) if found.missing and found.backfill not in (None, codex_state.PENDING) else None}


def imported_ids(store: Path) -> set[str]:
    """The ids of the journals in the store's project folders (one listing each), for every
    install's "already in the store" count."""
    ids: set[str] = set()
    try:
        folders = [e for e in os.scandir(store) if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
    except OSError:
        return ids
    for folder in folders:
        try:
            ids.update(e.name[:-6] for e in os.scandir(folder.path) if e.name.endswith(".jsonl"))
        except OSError:
            continue
    return ids


def nightly_command(apps: list[str], store: Path) -> tuple[str, str]:
    """(scheduler, command): the ``levelsess schedule install`` that makes this machine's scheduler
    run the imports keeping ``apps`` every night (it writes the job itself: no shell line to paste)."""
    from . import schedule

    try:
        name = schedule.scheduler().name
    except LevelsessError:
        name = "cron"
    words = [f"--app {app}" for app in apps]
    return name, " ".join(["levelsess schedule install", *words, "--store", _quote(os.path.abspath(store))])


def mark_scheduled(installs: list[Install], store: Path) -> None:
    """Give every install the one ``schedule install`` command that keeps them all, and set
    ``scheduled`` on each whose app the installed nightly keep already imports, as install would
    write it now (read-only: the scheduler is only read)."""
    from . import schedule

    wanted = [i for i in installs if i.schedule]
    if not wanted:
        return
    apps = list(dict.fromkeys(KEEP_APP[i.app] for i in wanted if i.sessions))
    if apps:  # one job keeps them all: each install names the same command (a second install replaces the first)
        combined = nightly_command(apps, store)
        for install in wanted:
            install.schedule = combined
    try:
        found = schedule.status(schedule.scheduler(), None, None, None, store)
    except LevelsessError:
        return
    if found.installed and found.matches and os.path.abspath(store) == found.job.store:
        for install in wanted:
            install.scheduled = KEEP_APP[install.app] in found.job.apps


KEEP_APP = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "copilot": "copilot", "opencode": "opencode",
            "cline": "cline"}


def claude_roots() -> list[Path]:
    from .layouts.claude_code import default_roots

    return [root for root in default_roots() if (root / "projects").is_dir()]


#: What doctor's progress line calls the trees it checks that are no tool's (a tool's: APP_TITLES).
_CHECKED = {"levelcode": "the store", "logician": "a Logician workspace"}


def diagnose(store: str | None = None, roots: list[Path] | None = None,
             progress: Callable[[int, str], None] | None = None) -> Diagnosis:
    """Look everywhere levelsess knows about; write nothing.  ``progress(total, what)`` is told,
    before each check of a tree and each count of an install, how many there are in all and what
    comes next (a terminal's progress line: a heavy user's trees take seconds each)."""
    from .importers import cline as cline_importer, codex as codex_importer, copilot as copilot_importer, cursor, \
        gemini as gemini_importer, opencode as opencode_importer, vscode

    candidates = [default_store(store)]
    if store is None:
        candidates.append(Path.home() / ".levelcode" / "sessions")
    claude, codex, gemini = claude_roots(), codex_importer.detect(), gemini_importer.detect()
    checks = ([("levelcode", path) for path in dict.fromkeys(candidates) if path.is_dir()]
              + [("logician", workspace) for workspace in find_logician(roots or [Path.cwd()])]
              + [("claude-code", root / "projects") for root in claude] + [("codex", home) for home in codex]
              + [("gemini", home) for home in gemini])  # a Gemini folder's health counts what its next start deletes (sweep-due)
    tools = [("copilot", h) for h in copilot_importer.detect()] + [("opencode", d) for d in opencode_importer.detect()] \
        + [("cline", g) for g in cline_importer.detect()]
    cursors, vscodes = cursor.detect(), vscode.detect()
    total = len(checks) + len(cursors) + len(vscodes) + len(claude) + len(codex) + len(gemini) + len(tools)

    home = str(Path.home())

    def step(what: str, path: Path) -> None:
        if progress is not None:
            shown = str(path)
            shown = "~" + shown[len(home):] if home not in ("", "/") and (shown + "/").startswith(home + "/") else shown
            progress(total, f"{what} ({shown})")

    stores = []
    for kind, path in checks:
        step(f"checking {_CHECKED.get(kind) or APP_TITLES[kind]}", path)  # (the store, a workspace, a tool's transcripts)
        stores.append(_health(kind, path))
    target = default_store(store)
    stored = imported_ids(target) if claude or codex or gemini or tools else set()
    from .tombstones import read as read_tombstones

    trashed = set(read_tombstones(target))  # trashed on purpose: never advised for import again
    # the Gemini CLI sessions the store keeps (id -> session file at import): without, then with, subagent sessions
    kept_gemini = (kept_sources(target, "gemini"), kept_sources(target, "gemini", children=True)) if gemini else ({}, {})
    installs = []
    for app, places, make in (("cursor", cursors, _cursor), ("vscode", vscodes, _vscode),
                              ("claude-code", claude, lambda r: _claude(r, target, stored, kept_claude_sources(target))),
                              ("codex", codex, lambda h: _codex(h, target, stored)),
                              ("gemini", gemini, lambda h: _gemini(h, target, _due(stores, h), *kept_gemini))):
        for place in places:
            step(f"counting {APP_TITLES[app]}", place)  # (what an import of it would write)
            installs.append(make(place))
    for app, folder in tools:
        step(f"counting {APP_TITLES[app]}", folder)
        installs.append(_tool(app, folder, target, stored))
    for install in installs:  # every install: how many of the sessions import would write the store holds
        install.store = target
        if install.count is not None:
            install.in_store = sum(sid in stored for sid in install.count.ids)
            install.trashed = sum(sid in trashed and sid not in stored for sid in install.count.ids)
    mark_scheduled(installs, target)
    return Diagnosis(stores, installs, _next_steps(stores, installs, target))


def _due(stores: list[StoreHealth], home: Path) -> list[str]:
    """The session files in the Gemini CLI folder ``home`` its next start deletes (its health's sweep-due)."""
    return [path for health in stores if health.kind == "gemini" and health.path == home for path in health.due]


def _next_steps(stores: list[StoreHealth], installs: list[Install], store: Path) -> list[str]:
    """What to run next, in order; every command names the store doctor looked at (``store_flag``)
    and an import is advised only for what the store does not hold yet."""
    steps = []
    for health in stores:
        steps += health.advice
    flag = store_flag(store)
    for install in installs:
        name = APP_TITLES.get(install.app, install.app)
        command = f"levelsess import --from {IMPORT_NAME[install.app]} --source {_quote(install.user)}{flag}"
        missing = install.sessions - install.in_store - install.trashed
        held = (f"{install.count.describe() if install.count else install.sessions} session(s), {install.in_store} already in "
                f"the store" + (f", {install.trashed} trashed from it (left out)" if install.trashed else ""))
        if install.app == "claude-code":
            if install.due > install.kept:
                steps.append(f"{install.due} Claude Code session(s) in {install.user} are older than cleanupPeriodDays "
                             f"({install.cleanup_days}): its next start deletes them, with no trash; the store holds "
                             f"{install.kept} of them. Import them now: {command}   (or keep a raw copy: "
                             f"{_copy_command(install.user / 'projects')})")
            elif missing > 0:
                steps.append(f"{command}        # {held}; Claude Code deletes each {install.cleanup_days} days after its last write")
        elif install.app == "gemini" and install.sessions:
            if install.due > install.kept:  # (one the store keeps already is not advised again: it has it)
                steps.append(f"{command}        # {held}; its next start deletes {install.due} of its sessions, with no "
                             f"trash (sweep-due in `levelsess fsck {_quote(install.user)}`), {install.kept} of them in the "
                             f"store: keep the rest first (or a raw copy: {_copy_gemini(install.user)})")
            elif missing > 0:
                steps.append(f"{command}        # {held}")
        elif install.app == "cursor" and missing > 0:
            steps.append(f"{command}        # {held}; read them with `levelsess show ID` or `levelsess export ID` (levelsess "
                         "does not write chats back into Cursor: its database is opaque and changes with each version)")
        elif install.app == "cline" and missing > 0:
            listed = f"; {name}'s own list shows {install.listed}" if install.listed is not None else ""
            steps.append(f"{command}        # {held}{listed}")
        if install.app == "cline" and install.listed is not None and install.sessions > install.listed:
            steps.append(f"levelsess restore --app cline --source {_quote(install.user)}        # {install.sessions - install.listed} "
                         f"task(s) on disk that {name}'s own list does not show: the plan, then add --yes")
        elif install.app in ("codex", "copilot", "opencode") and missing > 0:
            steps.append(f"{command}        # {held}")
        if install.gone:
            steps.append(f"{restore_command(install.gone, store)}        # {len(install.gone)} kept session(s) {name} "
                         f"no longer has in {install.user}: the plan, then add --yes to give them back")
        if install.app == "codex" and install.parity and install.parity["restore"]:
            steps.append(f"{install.parity['restore']}        # {install.parity['without_row']} rollout(s) with no row in "
                         f"{install.parity['db']}, so `codex resume` does not list them ({install.parity['row_gone']} row(s) "
                         f"whose rollout is gone, {install.parity['empty_first_message']} hidden for an empty first message)")
        if install.app == "vscode" and install.orphaned:
            count = sum(w.orphaned_sessions for w in install.orphaned)
            steps.append(f"{command} --orphans-only        "
                         f"# {count} chat(s) VS Code no longer shows, in {len(install.orphaned)} workspace(s)")
            moved = next((w for w in install.orphaned if "folder-missing" in w.reasons and w.project), None)
            if moved is not None:
                steps.append(f"{command} --orphans-only --map {_quote(moved.project)}=NEW_PATH        # if that folder moved")
    nightly = [i for i in installs if i.schedule and i.sessions and not i.scheduled]
    if nightly:  # one job keeps them all (mark_scheduled): one step
        scheduler, command = nightly[0].schedule
        steps.append(f"{command}        # runs those imports every night ({scheduler})")
    return steps


#: How a person calls each app.
APP_TITLES = {"cursor": "Cursor", "vscode": "VS Code", "claude-code": "Claude Code", "codex": "Codex CLI",
              "gemini": "Gemini CLI", "copilot": "Copilot CLI", "opencode": "OpenCode", "cline": "Cline / Roo Code / Kilo Code"}


def _copy_gemini(home: Path) -> str:
    """A command for this OS that copies a Gemini CLI ``tmp`` folder (its sessions) somewhere safe."""
    import sys

    if sys.platform == "win32":
        return f'robocopy "{home / "tmp"}" "%USERPROFILE%\\gemini-tmp-copy" /E'
    return f"cp -a {_quote(home / 'tmp')} ~/gemini-tmp-copy-$(date +%F)"


def _copy_command(projects: Path) -> str:
    """A command for this OS that copies a Claude Code ``projects`` folder somewhere safe."""
    import sys

    if sys.platform == "win32":
        return f'robocopy "{projects}" "%USERPROFILE%\\claude-projects-copy" /E'
    return f"cp -a {_quote(projects)} ~/claude-projects-copy-$(date +%F)"


def _quote(path: object) -> str:
    from . import shellwords

    return shellwords.quote(str(path))
