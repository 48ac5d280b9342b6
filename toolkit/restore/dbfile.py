"""A SQLite database inside another tool's tree, as one group of files: the database and its
``-wal``, ``-shm`` and ``-journal``.  Opening a database, even read-only, creates or rewrites these
(a ``mode=ro`` connection of a WAL database leaves a ``-wal`` and ``-shm`` behind; the last
read-write connection to close checkpoints the ``-wal`` into the database and removes both), so:

- :func:`reading` opens a private copy of the group: a plan and a verify never change a byte
  of the tool's tree;
- :func:`back_up` copies every file of the group that exists, byte-exact and fsynced, into a
  restore's backup folder, checked against the state the plan saw (:func:`state`);
- undo is :mod:`.backups`' ``replaced`` section: every file of the group back, or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .. import durable
from ..errors import FileChangedError
from ..lines import open_regular

SUFFIXES = ("", "-wal", "-shm", "-journal")


def group(db: Path) -> list[Path]:
    """The database and the files SQLite keeps beside it."""
    return [db.with_name(db.name + suffix) for suffix in SUFFIXES]


def file_state(path: Path) -> dict | None:
    """{size, sha256} of a file, or None when it is not there."""
    digest, size = hashlib.sha256(), 0
    try:
        with open_regular(path) as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        return None
    return {"size": size, "sha256": digest.hexdigest()}


def state(db: Path) -> dict[str, dict | None]:
    """Each file of the group (by path) -> its size, sha256 and mode, or None when absent."""
    return {str(path): file_state(path) for path in group(db)}


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
    Returns the manifest's ``replaced`` file entries: path, backup (None: it was not there), before."""
    entries = []
    for n, path in enumerate(group(db), start=1):
        was = before.get(str(path))
        entry = {"path": str(path), "backup": None, "before": was, "after": None}
        if was is not None:
            entry["backup"] = f"backup/{n}-{path.name}"
            entry["mode"] = stat.S_IMODE(os.stat(path).st_mode)  # undo puts the bits back with the bytes
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
    if file_state(backup) != was:
        durable.remove(backup)
        raise FileChangedError(f"{source} changed since restore planned; nothing was written")
