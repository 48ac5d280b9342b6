"""A SQLite database inside another tool's tree, as one group of files: the database and its
``-wal``, ``-shm`` and ``-journal``.  Opening a database, even read-only, creates or rewrites these
(a ``mode=ro`` connection of a WAL database leaves a ``-wal`` and ``-shm`` behind; the last
read-write connection to close checkpoints the ``-wal`` into the database and removes both), so:

- :func:`reading` opens a private copy of the group: a plan and a verify never change a byte
  of the tool's tree;
- :func:`back_up` copies every file of the group that exists, byte-exact and fsynced, into a
  restore's backup folder, checked against the state the plan saw (:func:`state`);
- :func:`put_back` makes every file of the group what it was: the backed-up bytes (and mode)
  back, and a file that was not there before removed.  :func:`undo_database` does it for
  ``restore --undo``, only while each file is as before or as the restore left it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .. import durable
from ..errors import FileChangedError
from ..lines import open_regular

SUFFIXES = ("", "-wal", "-shm", "-journal")


def group(db: Path) -> list[Path]:
    """The database and the files SQLite keeps beside it."""
    return [db.with_name(db.name + suffix) for suffix in SUFFIXES]


def file_state(path: Path) -> dict | None:
    """{size, sha256, mode} of a file, or None when it is not there."""
    digest, size = hashlib.sha256(), 0
    try:
        with open_regular(path) as handle:
            mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        return None
    return {"size": size, "sha256": digest.hexdigest(), "mode": mode}


def state(db: Path) -> dict[str, dict | None]:
    """Each file of the group (by path) -> its size, sha256 and mode, or None when absent."""
    return {str(path): file_state(path) for path in group(db)}


def same(a: dict | None, b: dict | None) -> bool:
    """Two file states hold the same bytes (the mode aside), or both files are absent."""
    return (a is None) == (b is None) and (a is None or (a["size"], a["sha256"]) == (b["size"], b["sha256"]))


@contextlib.contextmanager
def reading(db: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a private copy of the database group (what is committed, -wal included)."""
    with tempfile.TemporaryDirectory(prefix="levelsess-db-") as temp:
        copy = Path(temp) / db.name
        for path in group(db):
            with contextlib.suppress(FileNotFoundError):
                shutil.copyfile(path, Path(temp) / path.name)
        connection = sqlite3.connect(copy, isolation_level=None)
        try:
            yield connection
        finally:
            connection.close()


def back_up(db: Path, folder: Path, before: dict[str, dict | None]) -> list[dict]:
    """Copy every file of the group that exists into ``folder/backup/``, byte-exact and fsynced;
    each must still be what ``before`` says (the plan saw it), else :class:`FileChangedError`.
    Returns the manifest's file entries: path, backup (None: it was not there), before."""
    entries = []
    for n, path in enumerate(group(db), start=1):
        was = before.get(str(path))
        entry = {"path": str(path), "backup": None, "before": was, "after": None}
        if was is not None:
            entry["backup"] = f"backup/{n}-{path.name}"
            _copy(path, folder / entry["backup"], was)
        elif os.path.lexists(path):
            raise FileChangedError(f"{path} appeared since restore planned; nothing was written")
        entries.append(entry)
    return entries


def _copy(source: Path, backup: Path, was: dict) -> None:
    durable.ensure_dir(backup.parent)
    with open_regular(source) as reader, durable.atomic_writer(backup, exclusive=True) as writer:
        while chunk := reader.read(1 << 20):
            writer.write(chunk)
    if not same(file_state(backup), was):
        durable.remove(backup)
        raise FileChangedError(f"{source} changed since restore planned; nothing was written")


def put_back(folder: Path, files: list[dict]) -> list[dict]:
    """Make every file what it was before the restore: its backup's bytes and mode, or gone."""
    done = []
    for entry in files:
        path, was = Path(entry["path"]), entry["before"]
        if same(file_state(path), was):
            done.append({"path": str(path), "action": "as before", "reason": None})
        elif was is None:
            durable.remove(path)
            done.append({"path": str(path), "action": "removed (restore made it)", "reason": None})
        else:
            with open_regular(folder / entry["backup"]) as reader, \
                    durable.atomic_writer(path, before_replace=lambda temp, w=was: _settle(temp, w)) as writer:
                while chunk := reader.read(1 << 20):
                    writer.write(chunk)
            done.append({"path": str(path), "action": f"put back ({was['size']:,} bytes)", "reason": None})
    return done


def _settle(temp: Path, was: dict) -> None:
    """The bytes about to take the file's place are the backup's; give them the file's old mode."""
    if not same(file_state(temp), was):
        raise FileChangedError(f"the backup of {temp.name} does not hold the bytes it was taken with")
    os.chmod(temp, was["mode"])


def undo_database(folder: Path, entry: dict, dry_run: bool, busy: Callable[[Path], str | None]) -> list[dict]:
    """``restore --undo`` of one database group: all files back, or none (a group only part of
    which is put back is no database).  Refused while a file is neither as before nor as the
    restore left it (the tool wrote since: putting the old bytes back would drop what it wrote),
    or while ``busy`` names a process using the database."""
    db = Path(entry["path"])
    odd = [f["path"] for f in entry["files"] if not (same(file_state(Path(f["path"])), f["before"])
                                                     or ("after" in f and same(file_state(Path(f["path"])), f["after"])))]
    if odd:
        return [{"path": str(db), "action": "refused", "reason": f"{', '.join(odd)} changed since the restore (the tool "
                 f"wrote to it?); left as it is; the bytes from before the restore are in {folder / 'backup'}"}]
    if all(same(file_state(Path(f["path"])), f["before"]) for f in entry["files"]):
        return [{"path": str(db), "action": "as before", "reason": None}]
    who = busy(db)
    if who is not None:
        return [{"path": str(db), "action": "refused", "reason": f"{db}: {who}; left as it is: close it and undo again"}]
    if dry_run:
        return [{"path": f["path"], "action": "would put back" if f["before"] else "would remove", "reason": None}
                for f in entry["files"] if not same(file_state(Path(f["path"])), f["before"])]
    return [e for e in put_back(folder, entry["files"]) if e["action"] != "as before"]
