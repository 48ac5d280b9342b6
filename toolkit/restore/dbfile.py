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


def codex_running(home: Path, db: Path) -> str | None:
    """A process using Codex's state DB: one holding a file of it open to write, or a running
    Codex whose home (or sqlite home) is this one (any Codex whose environment cannot be read)."""
    from ..live import processes, writers_of

    for path in group(db):
        who = writers_of(path, fresh=True)
        if who is not None:
            return f"{path.name} is {who}"
    for proc in processes(fresh=True):
        if proc.tool == "codex" and _uses(proc.pid, home, db.parent):
            return f"Codex is running{' in ' + proc.cwd if proc.cwd else ''} (pid {proc.pid})"
    return None


def _uses(pid: int, home: Path, folder: Path) -> bool:
    """Whether the Codex process ``pid`` works on this home or DB folder (True when unknown)."""
    env = _environ(pid)
    if env is None:
        return True
    own = env.get("CODEX_HOME") or (os.path.join(env["HOME"], ".codex") if env.get("HOME") else None)
    if own is None:
        return True
    theirs = {os.path.realpath(own)} | ({os.path.realpath(env["CODEX_SQLITE_HOME"])} if env.get("CODEX_SQLITE_HOME") else set())
    return bool(theirs & {os.path.realpath(home), os.path.realpath(folder)})


def _environ(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
        return dict(item.split("=", 1) for item in os.fsdecode(raw).split("\0") if "=" in item)
    except OSError:
        pass
    try:
        import psutil

        return psutil.Process(pid).environ()
    except Exception:  # noqa: BLE001 - gone, not ours, or no way to read it: unknown
        return None
