"""Who runs on a Cline / Roo Code / Kilo Code install now (``restore --app cline`` and its undo):
a process holding a file of it open to write, or an editor of the VS Code family whose user data
folder is the one the extension's folder is in.  Below :mod:`.backups`, which asks it before an undo."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import LevelsessError
from ..importers.cline.places import Install, resolve
from ..importers.cline.tasks import API, INDEX_FILE, ITEM, UI
from ..live import editors_using, snapshot, writers_of


@dataclass(frozen=True)
class _Bare:
    """An install with no plan: only its own files are checked."""

    install: Install

    def files(self) -> list[Path]:
        return []


def user_data_dir(folder: Path) -> Path | None:
    """The editor's user data folder of an extension's ``…/User/globalStorage/<id>`` (None: another place)."""
    folder = Path(os.path.abspath(folder))
    if folder.parent.name == "globalStorage" and folder.parent.parent.name == "User":
        return folder.parent.parent.parent
    return None


def running(plan) -> str | None:
    """Who runs on this install now: a process holding a file of it open to write (the list, a task's
    files, the editor's ``state.vscdb``), or an editor process whose user data folder is this one."""
    install = plan.install
    snapshot(fresh=True)
    paths = [install.folder.joinpath(*INDEX_FILE), install.tasks / "_index.json"] + plan.files()
    paths += [p.parent / name for p in plan.files() if p.name == ITEM for name in (UI, API)]
    if install.vscdb is not None:
        paths += [install.vscdb, install.vscdb.with_name(install.vscdb.name + "-wal")]
    for path in paths:
        who = writers_of(path)
        if who is not None:
            return f"{path.name} is {who}"
    data = user_data_dir(install.folder)
    return editors_using(data) if data is not None else editors_using(None, mention="cline")


def running_on(folder: Path) -> str | None:
    """Who runs on the install ``folder`` now (for undo): see :func:`running`."""
    try:
        install = resolve(folder)
    except LevelsessError:
        return None
    return running(_Bare(install))
