"""Where a restore keeps what it needs to take itself back, and ``restore --undo``.

Each run that writes gets ``<user data dir>/levelsess/restore/<UTC stamp>/`` before its first
write: ``backup/<n>-<name>``, a byte-exact fsynced copy of every file it will append to (checked
against the sha256 the plan saw), ``wrote/<n>-<name>``, the bytes it will append, and
``manifest.json``: every file it will create (size and sha256 it will have), every file it will
change (its backup, size and sha256 before and after), the folders it will make, the temp names
its creates use.

:func:`undo` takes back exactly what restore wrote: a file it created is removed only while it
still holds the bytes restore wrote; a file it appended to is cut back to its size before, only
while it holds the bytes before plus (some of) the bytes restore appended (the cut bytes are kept
in ``undone/``); anything else is refused with a finding and left as it is.  Folders it made are
removed when empty.  Undo is idempotent: what is already as before is left alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import durable
from ..encode import dumps
from ..errors import FileChangedError, FileInUseError, UsageError
from ..findings import Finding
from ..layouts import get as get_layout
from ..lines import loads, open_regular, read_regular
from .steps import APPEND, CREATE, FileStep, SessionPlan, file_digest, missing_dirs

MANIFEST = "manifest.json"


def restore_root() -> Path:
    """``<user data dir>/levelsess/restore``: every run's backup folder is in it."""
    import platformdirs

    return Path(platformdirs.user_data_dir("levelsess", appauthor=False)) / "restore"


@dataclass
class Run:
    """One restore run's backup folder and manifest."""

    stamp: str
    folder: Path
    manifest: dict
    appends: dict[Path, bytes] = field(default_factory=dict)

    def save(self) -> None:
        durable.atomic_write(self.folder / MANIFEST, dumps(self.manifest, indent=True) + b"\n")

    def mark(self, state: str, **extra) -> None:
        self.manifest["state"] = state
        self.manifest.update(extra)
        self.save()


def _new_folder() -> tuple[str, Path]:
    root = restore_root()
    durable.ensure_dir(root)
    while True:
        stamp = durable.utc_stamp()
        try:
            (root / stamp).mkdir()
        except FileExistsError:
            continue
        durable.fsync_dir(root)
        return stamp, root / stamp


def start(steps: list[tuple[FileStep, SessionPlan]]) -> Run:
    """Make the run's folder: back up every file the steps change, then the manifest.  A file that
    changed since the plan stops it here, before any write (the folder goes: it holds no run)."""
    stamp, folder = _new_folder()
    try:
        return _start(stamp, folder, steps)
    except BaseException:
        durable.remove(folder, tree=True)
        raise


def _start(stamp: str, folder: Path, steps: list[tuple[FileStep, SessionPlan]]) -> Run:
    created, changed, dirs, sessions = [], [], [], {}
    run = Run(stamp, folder, {})
    for n, (step, session) in enumerate(steps, start=1):
        sessions.setdefault(session.id, {"id": session.id, "app": session.app, "next": session.next})
        entry = {"path": str(step.path), "layout": session.layout.name, "session": session.id}
        if step.action == CREATE:
            dirs += [str(d) for d in missing_dirs(step.path.parent) if str(d) not in dirs]
            created.append({**entry, "size": step.size, "sha256": step.sha256, "temp": str(durable.temp_name(step.path))})
            continue
        backup, wrote = Path("backup") / f"{n}-{step.path.name}", Path("wrote") / f"{n}-{step.path.name}"
        _copy(step.path, folder / backup, step.existing, step.existing_sha256)
        data = b"".join(step.kept.chunks(step.existing))
        durable.write_new(folder / wrote, data)
        run.appends[step.path] = data
        changed.append({**entry, "how": APPEND, "backup": str(backup), "wrote": str(wrote),
                        "before": {"size": step.existing, "sha256": step.existing_sha256},
                        "after": {"size": step.size, "sha256": step.sha256}})
    run.manifest = {"version": 1, "stamp": stamp, "state": "planned", "sessions": list(sessions.values()),
                    "created": created, "changed": changed, "dirs": dirs}
    run.save()
    return run


def _copy(source: Path, backup: Path, size: int, sha256: str) -> None:
    """A byte-exact, fsynced copy of ``source``, which must still be the bytes the plan saw."""
    durable.ensure_dir(backup.parent)
    with open_regular(source) as reader, durable.atomic_writer(backup, exclusive=True) as writer:
        while chunk := reader.read(1 << 20):
            writer.write(chunk)
    if file_digest(backup) != (size, sha256):
        durable.remove(backup)
        raise FileChangedError(f"{source} changed since restore planned; nothing was written")


# -- undo ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UndoResult:
    stamp: str
    folder: Path
    entries: tuple[dict, ...]  # {path, action, reason}
    findings: tuple[Finding, ...]
    dry_run: bool = False

    @property
    def exit_code(self) -> int:
        return 4 if self.findings else 0

    def to_json(self) -> dict:
        return {"version": 1, "stamp": self.stamp, "backup": str(self.folder), "dry_run": self.dry_run,
                "files": list(self.entries), "findings": [f.to_json() for f in self.findings], "exit": self.exit_code}


def load(stamp: str) -> tuple[Path, dict]:
    folder = restore_root() / stamp
    if not stamp or "/" in stamp or "\\" in stamp or stamp.startswith(".") or not (folder / MANIFEST).is_file():
        raise UsageError(f"no restore {stamp!r} in {restore_root()}", hint="`levelsess restore --list` shows every restore and its stamp")
    manifest = loads(read_regular(folder / MANIFEST))
    if not isinstance(manifest, dict) or manifest.get("version") != 1:
        raise UsageError(f"{folder / MANIFEST} is not a restore manifest levelsess can read")
    return folder, manifest


def undo(stamp: str, *, dry_run: bool = False) -> UndoResult:
    """Take back what the restore ``stamp`` wrote (see the module's doc); idempotent."""
    folder, manifest = load(stamp)
    entries: list[dict] = []
    for entry in manifest.get("created", []):
        entries.append(_undo_created(entry, dry_run))
    for entry in manifest.get("changed", []):
        entries.append(_undo_changed(folder, entry, dry_run))
    for entry in manifest.get("replaced", []):
        entries += _undo_replaced(folder, entry, dry_run)
    for name in reversed(manifest.get("dirs", [])):
        if not dry_run and os.path.isdir(name) and durable.remove_empty_dir(Path(name)):
            entries.append({"path": name, "action": "removed folder", "reason": None})
    findings = tuple(Finding("undo-refused", "error", e["path"], None, None, e["reason"]) for e in entries if e["action"] == "refused")
    if not dry_run:
        manifest["state"] = "partly undone" if findings else "undone"
        durable.atomic_write(folder / MANIFEST, dumps(manifest, indent=True) + b"\n")
    return UndoResult(stamp, folder, tuple(entries), findings, dry_run)


def _undo_created(entry: dict, dry_run: bool) -> dict:
    path = Path(entry["path"])
    temp = Path(entry.get("temp") or "")
    if entry.get("temp") and temp.is_file() and not dry_run:
        durable.remove(temp)  # a create killed mid-write left restore's own temp file
    if not os.path.lexists(path):
        return {"path": str(path), "action": "already gone", "reason": None}
    if path.is_symlink() or not path.is_file() or file_digest(path) != (entry["size"], entry["sha256"]):
        return {"path": str(path), "action": "refused", "reason": f"{path} no longer holds the bytes restore wrote "
                "(the tool wrote to it since?); left as it is"}
    who = _writer(entry, path)
    if who is not None:
        return {"path": str(path), "action": "refused", "reason": f"{path}: {who}; left as it is: close the tool and undo again"}
    if not dry_run:
        durable.remove(path)
    return {"path": str(path), "action": "would remove" if dry_run else "removed", "reason": None}


def _writer(entry: dict, path: Path) -> str | None:
    """Who writes ``path`` now: by its layout's rules, or (a file of no journal layout, such as an
    editor's database) any process holding it open to write."""
    if entry.get("layout"):
        return get_layout(entry["layout"]).writer(path, fresh=True)
    from ..live import writers_of

    return writers_of(path, fresh=True)


def _state(path: Path) -> dict | None:
    """{size, sha256} of a file, None when it is not there."""
    if not os.path.lexists(path):
        return None
    size, digest = file_digest(path)
    return {"size": size, "sha256": digest}


def _tool_running(entry: dict) -> str | None:
    """A running tool that uses a replaced file without holding it open at this instant (Codex CLI; an editor running Cline)."""
    if entry.get("app") == "cline":  # an editor running the extension rewrites the list it would get back
        from .cline_live import running_on

        return running_on(Path(entry["folder"]))
    if entry.get("app") != "codex":
        return None
    from .dbfile import codex_running as running

    return running(Path(entry["home"]), Path(entry["files"][0]["path"]))


def _undo_replaced(folder: Path, entry: dict, dry_run: bool) -> list[dict]:
    """Put back a group of files restore replaced whole (a database with its -wal, -shm and -journal, or a
    rewritten file): every file from its backup (or removed, when it was not there), only while every
    file of the group is as restore left it; a group already as before is left alone."""
    files = entry["files"]
    try:
        now = [_state(Path(f["path"])) for f in files]
    except OSError as exc:
        return [{"path": files[0]["path"], "action": "refused", "reason": f"cannot read: {exc.strerror or exc}; left as it is"}]
    if all(n == f["before"] for n, f in zip(now, files)):
        return [{"path": f["path"], "action": "as before", "reason": None} for f, n in zip(files, now) if n is not None]
    if not all(f.get("written") and n == f["after"] for n, f in zip(now, files)):
        backup = ", ".join(str(folder / f["backup"]) for f in files if f["backup"])
        return [{"path": files[0]["path"], "action": "refused", "reason": f"{files[0]['path']} no longer holds what restore wrote "
                 f"(the tool wrote to it since?); left as it is; its bytes before the restore are in {backup}"}]
    who = _tool_running(entry)
    if who is not None:
        return [{"path": files[0]["path"], "action": "refused", "reason": f"{files[0]['path']}: {who}; left as it is: quit it and undo again"}]
    for f in files:
        who = _writer({}, Path(f["path"]))
        if who is not None:
            return [{"path": f["path"], "action": "refused", "reason": f"{f['path']}: {who}; left as it is: close the tool and undo again"}]
    out = []
    for f, state in zip(files, now):
        path = Path(f["path"])
        if state == f["before"]:
            continue
        if dry_run:
            out.append({"path": f["path"], "action": "would put back" if f["before"] else "would remove", "reason": None})
        elif f["before"] is None:
            durable.remove(path)
            out.append({"path": f["path"], "action": "removed", "reason": None})
        else:
            with open_regular(folder / f["backup"]) as reader, durable.atomic_writer(path, mode=f.get("mode")) as writer:
                while chunk := reader.read(1 << 20):
                    writer.write(chunk)
            ok = _state(path) == f["before"]
            out.append({"path": f["path"], "action": "put back" if ok else "refused",
                        "reason": None if ok else f"{path} does not hold its bytes from before after the put-back; they are in {folder / f['backup']}"})
    return out


def _undo_changed(folder: Path, entry: dict, dry_run: bool) -> dict:
    path = Path(entry["path"])
    before = (entry["before"]["size"], entry["before"]["sha256"])
    try:
        now = file_digest(path)
    except OSError as exc:
        return {"path": str(path), "action": "refused", "reason": f"cannot read {path}: {exc.strerror or exc}"}
    if now == before:
        return {"path": str(path), "action": "as before", "reason": None}
    if not _ours(path, now[0], folder / entry["backup"], folder / entry["wrote"]):
        return {"path": str(path), "action": "refused", "reason": f"{path} holds bytes restore did not write (the tool "
                "wrote to it since?); left as it is; its bytes before the restore are in " + str(folder / entry["backup"])}
    who = get_layout(entry["layout"]).writer(path, fresh=True)
    if who is not None:
        return {"path": str(path), "action": "refused", "reason": f"{path}: {who}; left as it is: close the tool and undo again"}
    if dry_run:
        return {"path": str(path), "action": f"would cut back to {before[0]:,} bytes", "reason": None}
    durable.ensure_dir(folder / "undone")
    try:
        durable.truncate_if_unchanged(path, before[0], now[0], now[1], folder / "undone")
    except (FileChangedError, FileInUseError) as exc:
        return {"path": str(path), "action": "refused", "reason": f"{exc}; left as it is: undo again"}
    if file_digest(path) != before:
        return {"path": str(path), "action": "refused", "reason": f"{path} does not hold its bytes from before the restore "
                f"after the cut; they are in {folder / entry['backup']}"}
    return {"path": str(path), "action": f"cut back to {before[0]:,} bytes", "reason": None}


def _ours(path: Path, size: int, backup: Path, wrote: Path) -> bool:
    """Whether ``path`` holds exactly its backup's bytes followed by a prefix of what restore appended."""
    try:
        kept, added = backup.stat().st_size, wrote.stat().st_size
    except OSError:
        return False
    if not kept <= size <= kept + added:
        return False
    with open_regular(path) as handle:
        for part, left in ((backup, kept), (wrote, size - kept)):
            with open_regular(part) as expected:
                while left:
                    want = expected.read(min(left, 1 << 20))
                    if not want or handle.read(len(want)) != want:
                        return False
                    left -= len(want)
        return handle.read(1) == b""


def _replaced(manifest: dict) -> int:
    """Files a run replaced whole (a database of a group, a rewritten log) that were there before it."""
    return sum(1 for group in manifest.get("replaced", []) if isinstance(group, dict)
               for f in group.get("files", []) if isinstance(f, dict) and f.get("before") is not None)


def list_runs() -> list[dict]:
    """Every restore on this machine, oldest first: stamp, state, sessions, files created and changed."""
    root = restore_root()
    runs = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            manifest = loads(read_regular(folder / MANIFEST))
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict):
            runs.append({"stamp": folder.name, "state": manifest.get("state"), "folder": str(folder),
                         "sessions": [s.get("id") for s in manifest.get("sessions", [])],
                         "created": len(manifest.get("created", [])),
                         "changed": len(manifest.get("changed", [])) + _replaced(manifest)})
    return runs
