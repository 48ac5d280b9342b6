"""Recover Cline, Roo Code and Kilo Code tasks as LevelCode v2 journals (SOURCES-MORE.md §4).

A source is one extension's storage folder (``…/User/globalStorage/saoudrizwan.claude-dev``,
``…/rooveterinaryinc.roo-cline``, ``…/kilocode.kilo-code`` under any editor host, or Cline's
``~/.cline/data``).  Each ``tasks/<id>/`` folder becomes one journal, ``cline-<id>``, ``roo-<id>``
or ``kilo-<id>`` (:mod:`.tasks`, :mod:`.convert`); each Cline 4.x ``sessions/<id>/`` one
``cline-<id>`` (:mod:`.sdk`).  Every file is only read; the editor's ``state.vscdb`` is opened
read-only.

Accounting: every element of ``api_conversation_history.json`` and ``ui_messages.json`` (of a
4.x session's ``messages``) and the ``task_metadata.json`` document are source items, each a
record; a file cut mid-write yields its whole elements before the cut, and the rest counts as one
item skipped as ``source-unreadable``, named in a finding.  Orphaned (the tool does not list it),
under ``source.orphan``: ``not-indexed`` (no entry in the tool's list), ``index-corrupt`` (the
list itself is damaged and does not name it), ``folder-missing`` (its working folder is gone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from ...findings import Finding
from ..base import unconverted
from ..output import Options, Session
from . import sdk, tasks
from .places import detect, resolve
from .survey import InstallSurvey, survey

__all__ = ["APP", "InstallSurvey", "Options", "detect", "scan", "source_files", "survey"]

APP = tasks.APP


def source_files(source: Path) -> list[Path]:
    """Every file an import of ``source`` may read (to prove none was written)."""
    install = resolve(source)
    files = [p for folder in (install.tasks, install.folder / "state", install.sessions, install.folder / "db") if folder.is_dir()
             for p in folder.rglob("*") if p.is_file()]
    if install.vscdb is not None:
        files += [p for p in install.vscdb.parent.glob("state.vscdb*") if p.is_file()]
    return sorted(set(files))


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every task (and Cline 4.x session) under ``source`` as a converted :class:`Session`."""
    install = resolve(source)
    index = tasks.load_index(install, report)
    folders = tasks.task_folders(install)
    names = {f.name for f in folders}
    for tid in index.items:
        if tid not in names:
            report(Finding("source-skipped", "warning", str(install.tasks / tid), None, None,
                           f"task {tid} is in the tool's list ({index.where[tid]}) but has no folder; nothing to import"))
    for folder in folders:
        yield from _one(folder, lambda f: tasks.task_session(install, f, index, options, report), options, report)
    sessions = sdk.session_folders(install)
    if sessions:
        listed = sdk.load_index(install, report)
        for folder in sessions:
            yield from _one(folder, lambda f: sdk.sdk_session(install, f, listed, options, report), options, report)


def _one(folder: Path, convert, options: Options, report) -> Iterator[Session]:
    try:
        session = convert(folder)
    except OSError as exc:
        report(Finding("unreadable", "error", str(folder), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each task
        report(Finding("source-unreadable", "error", str(folder), None, None,
                       unconverted(exc, f"task {folder.name}")))
        return
    if session is not None and not (options.orphans_only and not session.orphaned):
        yield session
