"""``levelsess trash``: move sessions to the OS trash (send2trash), never unlink, then reindex.

A LevelCode session is its journal (and its stale lock, if any); a Logician session is its
whole folder.  A session held by a live or uncheckable writer is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import LevelsessError, OperationalError, PermissionDeniedError
from .layouts import get as get_layout
from .locks import LockState, inspect_lock, lock_path
from .reindex import reindex
from .sessions import SessionRow
from .stores import discover
from .tombstones import bury


@dataclass(frozen=True)
class Trashed:
    id: str
    paths: tuple[Path, ...]
    status: str  # trashed | would-trash | refused | gone (vanished between listing and trashing)
    reason: str = ""

    def to_json(self) -> dict:
        return {"id": self.id, "paths": [str(p) for p in self.paths], "status": self.status, "reason": self.reason}


def trash_sessions(rows: list[SessionRow], *, dry_run: bool = False) -> list[Trashed]:
    """Trash each session once (rows naming the same journal, e.g. an id and a prefix of it, count
    once), then reindex every LevelCode folder touched, even when a later session fails."""
    out, folders = [], set()
    failure: LevelsessError | None = None
    for row in _unique(rows):
        journal = row.path
        if row.state == "unknown-format":  # identify before you touch: not ours to move
            out.append(Trashed(row.id, (journal,), "refused", f"not a journal levelsess knows ({row.reason}); left alone"))
            continue
        layout = get_layout(row.layout)
        info = inspect_lock(lock_path(journal)) if layout.lock_path(journal) is not None else None
        if info is not None and info.state is not LockState.STALE:
            out.append(Trashed(row.id, (journal,), "refused", f"{info.reason}; close the editor, or wait for the writer"))
            continue
        who = layout.writer(journal, fresh=True)
        if who is not None:
            out.append(Trashed(row.id, (journal,), "refused", f"{who}; close it first"))
            continue
        paths: tuple[Path, ...] = get_layout(row.layout).trash_paths(journal)
        if paths == (journal,) and info is not None:
            paths += (lock_path(journal),)
        symlinked = _symlinked(journal, paths)
        if symlinked is not None:
            out.append(Trashed(row.id, paths, "refused", f"{symlinked.detail}, and levelsess never moves anything out of a "
                                                        f"symlinked folder; {symlinked.hint}"))
            continue
        if dry_run:
            out.append(Trashed(row.id, paths, "would-trash"))
            continue
        stone = _tombstone(row) if row.layout == "levelcode" else None
        try:
            moved = _move_to_trash(paths)
        except LevelsessError as exc:
            failure = exc
            break
        if get_layout(row.layout).cache_lists_journals:
            folders.add(journal.parent)  # gone or trashed, the index may still list it
        if paths[0] in moved and stone is not None:
            try:  # so the next import does not bring it back (toolkit.tombstones)
                bury(stone[0], [stone[1:]])
            except LevelsessError as exc:
                failure = exc
                out.append(Trashed(row.id, moved, "trashed", f"but the store could not note it ({exc}): "
                                                            "the next import may bring it back"))
                break
        if paths[0] in moved:
            out.append(Trashed(row.id, moved, "trashed"))
        else:
            out.append(Trashed(row.id, paths, "gone", "already gone: it was moved or deleted after it was listed"))
    if folders:  # a folder left without journals or index is no longer a project: nothing to index
        reindex([found for folder in sorted(folders) for found in discover(folder)[:1]])
    if failure is not None:
        raise failure
    return out


def _tombstone(row: SessionRow) -> tuple[Path, str, Path, dict | None] | None:
    """(store, session id, journal, meta source) of a LevelCode session, for its tombstone; None
    when its store cannot be told."""
    from .lines import loads

    try:
        store = discover(row.path)[0].store
        with open(row.path, "rb") as handle:
            meta = loads(handle.readline(1 << 20).strip().removeprefix(b"\xef\xbb\xbf"))
    except (LevelsessError, OSError, ValueError):
        return None
    meta = meta if isinstance(meta, dict) and meta.get("kind") == "meta" else {}
    sid = meta.get("id") if isinstance(meta.get("id"), str) else row.id
    source = meta.get("source") if isinstance(meta.get("source"), dict) else None
    return store, sid, row.path, source


def _symlinked(journal: Path, paths: tuple[Path, ...]):
    """The error for a symlinked folder on the way to ``paths`` below the journal's store or tree, or None."""
    try:
        folder = discover(journal)[0]
    except LevelsessError:  # gone, or no longer a journal: the move reports that
        return None
    confinement = folder.confinement
    return next((e for e in (confinement.refusal(p.parent) for p in paths) if e is not None), None)


def _unique(rows: list[SessionRow]) -> list[SessionRow]:
    """``rows`` without repeats of a journal (compared by its real folder and name), first kept."""
    seen, out = set(), []
    for row in rows:
        key = (os.path.realpath(row.path.parent), row.path.name)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def _move_to_trash(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """Send ``paths`` to the trash; returns those moved.  A path that no longer exists is skipped
    (FileNotFoundError with nothing left at the path); any other failure is a LevelsessError."""
    from send2trash import send2trash

    moved = []
    for path in paths:
        try:
            send2trash(str(path))
        except OSError as exc:  # TrashPermissionError is a PermissionError
            if isinstance(exc, FileNotFoundError) and not os.path.lexists(path):
                continue  # gone already; a FileNotFoundError about something else (HOME, the trash) is not
            error = PermissionDeniedError if isinstance(exc, PermissionError) else OperationalError
            raise error(f"cannot move {path} to the trash: {exc}") from exc
        moved.append(path)
    return tuple(moved)

