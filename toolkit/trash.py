"""``levelsess trash``: move sessions to the OS trash (send2trash), never unlink, then reindex.

A LevelCode session is its journal (and its stale lock, if any); a Logician session is its
whole folder.  A session held by a live or uncheckable writer is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import PermissionDeniedError
from .locks import LockState, inspect_lock, lock_path
from .reindex import reindex
from .sessions import SessionRow
from .stores import discover


@dataclass(frozen=True)
class Trashed:
    id: str
    paths: tuple[Path, ...]
    status: str  # trashed | would-trash | refused
    reason: str = ""

    def to_json(self) -> dict:
        return {"id": self.id, "paths": [str(p) for p in self.paths], "status": self.status, "reason": self.reason}


def trash_sessions(rows: list[SessionRow], *, dry_run: bool = False) -> list[Trashed]:
    from send2trash import send2trash
    from send2trash.exceptions import TrashPermissionError

    out, folders = [], set()
    for row in rows:
        journal = row.path
        info = inspect_lock(lock_path(journal))
        if info is not None and info.state is not LockState.STALE:
            out.append(Trashed(row.id, (journal,), "refused", f"{info.reason}; close the editor, or wait for the writer"))
            continue
        if row.layout == "logician" and _is_logician_session(journal.parent):
            paths: tuple[Path, ...] = (journal.parent,)
        else:
            paths = (journal,) + ((lock_path(journal),) if info is not None else ())
        if dry_run:
            out.append(Trashed(row.id, paths, "would-trash"))
            continue
        try:
            for path in paths:
                send2trash(str(path))
        except (TrashPermissionError, OSError) as exc:
            raise PermissionDeniedError(f"cannot move {paths[0]} to the trash: {exc}") from exc
        out.append(Trashed(row.id, paths, "trashed"))
        if row.layout == "levelcode":
            folders.add(journal.parent)
    if folders:  # a folder left without journals or index is no longer a project: nothing to index
        reindex([found for folder in sorted(folders) for found in discover(folder)[:1]])
    return out


def _is_logician_session(folder: Path) -> bool:
    """Only ``<workspace>/.logician/sessions/sessions/<id>/`` is a whole session to trash;
    any other ``messages.jsonl`` is trashed alone (never the folder around it)."""
    return folder.parent.name == "sessions" and folder.parent.parent.name == "sessions" and folder.parent.parent.parent.name == ".logician"
