"""``levelsess restore``: give kept chats back where the user's own tool shows them (DESIGN.md §1
principle 10; issue 22).

The only command that writes inside another tool's tree.  One module per app, registered here
by the ``source.app`` its kept journals name (:mod:`.claude`: Claude Code transcripts and their
subagents; :mod:`.codex`: Codex CLI rollouts; :mod:`.gemini`: Gemini CLI sessions and theirs), each saying which files a kept session is and
where they go; :mod:`.kept` rebuilds a file from the store and proves its bytes; the contract
every app follows (plan, back up, write, verify, undo) is :mod:`.contract` and :mod:`.backups`.
An app that restores without a session id (a database row, an index) is another module here,
reached by its own option.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import UsageError
from .contract import RestorePlan, RestoreResult, apply_plan, plan_session, preview, read_meta

#: meta.source.app of a kept session -> the module that gives it back
APPS = {"claude-code": "toolkit.restore.claude", "codex": "toolkit.restore.codex", "gemini": "toolkit.restore.gemini"}
#: ``restore --app NAME``: apps whose chats come back without a session id (a database row, an index);
#: each module gives ``run_app(source, maps, apply)``, ``rows(result)``, ``summary(result)`` and ``NEXT``
APP_RESTORES = {"vscode": "toolkit.restore.vscode", "codex": "toolkit.restore.codex_state", "cline": "toolkit.restore.cline_list"}
_OTHERS = {"cursor": "Cursor is out of scope for writing back (its database is opaque and changes with every version)",
           "vscode": "VS Code chats are not written back by session id"}


def plan_restore(store: Path, keys: list[str], to: Path | None = None) -> RestorePlan:
    """What giving back the kept sessions ``keys`` (ids, unique prefixes or journal paths) would
    write, under their tools' roots (or ``to``); reads only."""
    to = Path(os.path.abspath(to.expanduser())) if to is not None else None  # the manifest's paths work from anywhere
    sessions, targets = [], set()
    for key in keys:
        journal = _journal(store, key)
        meta = read_meta(journal)
        app = _app(key, meta)
        if not (isinstance(meta.get("id"), str) and meta["id"]):  # (a levelsess journal's id is a string: this one was changed)
            raise UsageError(f"{key}: the meta record of {journal} has no string id, so it is not a session levelsess kept as it "
                             "wrote it; nothing was restored", hint=f"`levelsess fsck --strict {journal}` says what is wrong with it")
        files = app.session_files(journal, meta, to)
        new = tuple(f for f in files.files if f[1] not in targets)  # a subagent named beside its session: once
        targets.update(target for _journals, target in new)
        if new:
            sessions.append(plan_session(app.APP, app.LAYOUT, replace(files, files=new)))
    return RestorePlan(tuple(sessions))


def restore(plan: RestorePlan, *, apply: bool, interrupted: Callable[[], bool] = lambda: False) -> RestoreResult:
    """Apply the plan (``apply``), or return it as a result with nothing written."""
    return apply_plan(plan, interrupted) if apply else preview(plan)


def app_restore(name: str):
    """The module that restores ``--app name``; a usage error names the apps there are."""
    if name not in APP_RESTORES:
        raise UsageError(f"--app {name}: restore --app knows {', '.join(sorted(APP_RESTORES))}",
                         hint="Claude Code and Codex CLI sessions come back by id: `levelsess restore ID`")
    return importlib.import_module(APP_RESTORES[name])


def undo_restore(stamp: str, *, dry_run: bool = False):
    from .backups import undo

    return undo(stamp, dry_run=dry_run)


def list_restores() -> list[dict]:
    from .backups import list_runs

    return list_runs()


def _journal(store: Path, key: str) -> Path:
    """The kept journal ``key`` names: a journal path, an id, or a unique prefix of one, with or
    without its ``claude-`` / ``codex-`` / ``gemini-``; a session and its own subagents match as the session."""
    from ..sessions import list_sessions

    candidate = Path(key).expanduser()
    if candidate.suffix == ".jsonl" and candidate.is_file():
        return candidate
    rows = list_sessions([store])
    wanted = (key, f"claude-{key}", f"codex-{key}", f"gemini-{key}")
    matches = [r for r in rows if r.id in wanted] or [r for r in rows if r.id.startswith(wanted)]
    heads = [r for r in matches if all(other.id.startswith(r.id) for other in matches)]
    if len(heads) == 1:
        return heads[0].path
    if not matches:
        raise UsageError(f"no kept session {key!r} in {store}", hint="`levelsess ls` lists them")
    listed = ", ".join(str(r.path) if len({m.id for m in matches}) == 1 else r.id for r in matches[:4])
    raise UsageError(f"{key!r} matches {len(matches)} sessions ({listed}…)", hint="give more of the id, or the journal's path")


def _app(key: str, meta: dict | None):
    source = meta.get("source") if meta else None
    app = source.get("app") if isinstance(source, dict) and isinstance(source.get("app"), str) else None
    if app in APPS:
        return importlib.import_module(APPS[app])
    why = _OTHERS.get(app, f"it came from {app}" if app else "it is a levelsess session, not one kept from another tool")
    raise UsageError(f"{key}: restore gives back sessions kept from Claude Code, Codex CLI or Gemini CLI; {why}",
                     hint=f"read it with `levelsess show {key}` or `levelsess export {key}`")
