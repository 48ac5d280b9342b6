"""Cline / Roo Code / Kilo Code task folders -> sessions, and the task lists the tools show
(SOURCES-MORE §4.2, §4.3).

The list a tool shows: Cline's ``state/taskHistory.json`` (and, before its migration, the memento
``taskHistory`` in the editor's ``state.vscdb``); Roo's ``tasks/<id>/history_item.json`` with the
``tasks/_index.json`` cache; the Kilo Code legacy extension's memento ``taskHistory``.  The memento
is read through :func:`toolkit.importers.sqlite.open_db` (read-only, never a byte written).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LevelsessError
from ...findings import Finding
from ...jsonarray import is_array
from ...layouts.base import one_line
from .. import sqlite as sq
from ..output import Options, Raw, Session, iso_from_ms, safe_id
from ..spill import Records
from ..uris import apply_map, is_foreign
from .convert import Keys, api_record, cwd_of, metadata_record, ui_record
from .jsonfile import Loaded, load_json
from .places import PREFIX, Install

APP = "cline"
API, UI, METADATA, ITEM = "api_conversation_history.json", "ui_messages.json", "task_metadata.json", "history_item.json"
INDEX_FILE, ROO_INDEX = ("state", "taskHistory.json"), "_index.json"
_DIGITS = re.compile(r"\d+")


@dataclass
class TaskIndex:
    """The tasks a tool lists: id -> its ``HistoryItem`` and where it was found."""

    items: dict[str, dict] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    known: bool = False  # something the tool lists from could be read
    corrupt: list[str] = field(default_factory=list)  # index files read only in part

    def add(self, items: list, where: str) -> None:
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
                self.items.setdefault(item["id"], item)
                self.where.setdefault(item["id"], where)


def task_folders(install: Install) -> list[Path]:
    """The task folders of ``install`` (names starting ``_`` or ``.`` are the tools' own files)."""
    try:
        return sorted(p for p in install.tasks.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _problems(loaded: Loaded, what: str, report: Callable[[Finding], None]) -> None:
    where = str(loaded.path)
    if loaded.bom:
        report(Finding("bom", "warning", where, 1, 0, f"{what} starts with a UTF-8 byte-order mark (the tool's JSON.parse "
                                                      "refuses it); read without it"))
    for problem in loaded.problems:
        lost = loaded.lost_tail or (not loaded.whole and not loaded.items)
        report(Finding("source-unreadable", "error" if lost else "warning", where, None, None, f"{what} {problem}"))


def _memento(install: Install, report: Callable[[Finding], None]) -> list | None:
    """The extension's ``taskHistory`` in the editor's memento (``state.vscdb``), or None."""
    if install.vscdb is None or install.key is None:
        return None
    try:
        with sq.open_db(install.vscdb) as conn:
            if "ItemTable" not in sq.tables(conn):
                return None
            row = conn.execute("select value from ItemTable where lower(key) = lower(?)", (install.key,)).fetchone()
            if row is None:
                return None
            state = sq.decode(bytes(row[0]) if row[0] is not None else None)
    except (sq.SourceUnreadable, LevelsessError, OSError) as exc:
        report(Finding("source-unreadable", "warning", str(install.vscdb), None, None,
                       f"the {install.key} state (its memento taskHistory) cannot be read ({exc}); the task list is taken from the files"))
        return None
    history = state.get("taskHistory") if isinstance(state, dict) else None
    return history if isinstance(history, list) else None


def load_index(install: Install, report: Callable[[Finding], None]) -> TaskIndex:
    """What the tool lists, from every index it keeps (never written)."""
    index = TaskIndex()
    if install.tool == "cline":
        path = install.folder.joinpath(*INDEX_FILE)
        loaded = load_json(path)
        # no file: Cline lists nothing from it; only an extension folder seen without its editor's
        # state.vscdb (a copy) may have its list in a memento we cannot read
        index.known = not loaded.missing or install.vscdb is not None or install.key is None
        if not loaded.missing:
            _problems(loaded, "the task list", report)
            if loaded.problems and not loaded.whole:
                index.corrupt.append(str(path))
            index.add(loaded.items, "taskHistory.json")
    else:
        loaded = load_json(install.tasks / ROO_INDEX, "entries")
        if not loaded.missing:
            _problems(loaded, "the task list cache", report)
            index.add(loaded.items, ROO_INDEX)
        index.known = install.tool == "roo" or not loaded.missing
    memento = _memento(install, report)
    if memento is not None:
        index.known = True
        index.add(memento, "state.vscdb")
    return index


def _history_item(install: Install, folder: Path, report) -> dict | None:
    """Roo's (and a newer Kilo's) own ``history_item.json``: the truth of its list."""
    if install.tool == "cline":
        return None
    loaded = load_json(folder / ITEM)
    if loaded.missing:
        return None
    _problems(loaded, "the task's list entry", report)
    return loaded.value if loaded.whole and isinstance(loaded.value, dict) else None


def _load(folder: Path, name: str, report) -> Loaded:
    """``folder/name``; when it is missing, the newest copy an interrupted write left beside it
    (Roo's ``.<name>.bak_<ms>_<rand>.tmp`` / ``.<name>.new_…tmp``, Cline's ``<name>.tmp.<ms>.<rand>.json``)."""
    lazy = name in (API, UI)  # (a long task's messages are read one by one)
    loaded = load_json(folder / name, lazy=lazy)
    if not loaded.missing:
        return loaded
    try:
        copies = [p for p in folder.iterdir() if p.is_file() and (p.name.startswith((f".{name}.bak_", f".{name}.new_"))
                                                                   or p.name.startswith(f"{name}.tmp."))]
    except OSError:
        return loaded
    for copy in sorted(copies, key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True):
        kept = load_json(copy, lazy=lazy)
        if kept.whole and not kept.problems:
            report(Finding("source-unreadable", "warning", str(folder / name), None, None,
                           f"{name} is missing (a rewrite was interrupted); read from the copy it left, {copy.name}"))
            return kept
    return loaded


def _count(loaded: Loaded, session: Session, shape: type = list) -> list:
    """The items of a task file: each is a source item; the part lost to damage counts as one skipped."""
    items = loaded.items
    if not loaded.missing and loaded.whole and not (is_array(loaded.value) if shape is list else isinstance(loaded.value, shape)):
        loaded.problems.append(f"is not a JSON {'array' if shape is list else 'object'}; nothing in it imported")
        loaded.lost_tail = True
    session.source_items += len(items)
    if loaded.lost_tail:
        session.source_items += 1
        session.skip("source-unreadable")
    return items


def _created(tid: str, ui: list, api: list, item: dict | None) -> str | None:
    for messages in (ui, api):
        for m in messages:
            when = iso_from_ms(m.get("ts")) if isinstance(m, dict) else None
            if when:
                return when
    if _DIGITS.fullmatch(tid):
        when = iso_from_ms(int(tid))
        if when:
            return when
    return iso_from_ms(item.get("ts")) if item else None


def _api_times(ui: list) -> dict[int, str]:
    """API message index -> the time of the first panel message written after it."""
    out: dict[int, str] = {}
    for m in ui:
        if isinstance(m, dict) and type(m.get("conversationHistoryIndex")) is int:
            when = iso_from_ms(m.get("ts"))
            if when:
                out.setdefault(m["conversationHistoryIndex"], when)
    return out


def _model(item: dict | None, metadata: object) -> str | None:
    if item and isinstance(item.get("modelId"), str) and item["modelId"]:
        return item["modelId"]
    usage = metadata.get("model_usage") if isinstance(metadata, dict) else None
    for entry in reversed(usage if isinstance(usage, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("model_id"), str) and entry["model_id"]:
            return entry["model_id"]
    return None


def _title(item: dict | None) -> str | None:
    task = item.get("task") if item else None
    if not isinstance(task, str):
        return None
    return one_line(task) or None


def task_session(install: Install, folder: Path, index: TaskIndex, options: Options, report) -> Session | None:
    """One task folder as a session; None (and a finding) when it holds nothing to import."""
    tid = folder.name
    files = {name: _load(folder, name, report) for name in (API, UI, METADATA)}
    if all(f.missing or (f.whole and is_array(f.value) and len(f.value) == 0) for f in files.values()):
        report(Finding("source-skipped", "warning", str(folder), None, None, f"task {tid} holds no messages; nothing to import"))
        return None
    own = _history_item(install, folder, report)
    item = own or index.items.get(tid)
    source = {"app": APP, "tool": install.tool, "path": str(folder), "key": tid, "version": None}
    if own is not None or tid in index.where:
        source["listedIn"] = ITEM if own is not None else index.where[tid]
    session = Session(safe_id(PREFIX[install.tool], tid), None, None, _title(item), source, Raw(value=item) if item else None)
    api, ui = _count(files[API], session), _count(files[UI], session)
    metadata = files[METADATA]
    for name, loaded in files.items():
        _problems(loaded, name, report)
    if not metadata.missing and not metadata.whole:
        session.source_items += 1
        session.skip("source-unreadable")
    session.created_at = _created(tid, ui, api, item)
    _records(session, api, ui, metadata, _model(item, metadata.value))
    cwd = item.get("cwdOnTaskInitialization") or item.get("workspace") if item else None
    if not isinstance(cwd, str) or not cwd:
        cwd = next((c for r in session.records if r.get("kind") == "user" and (c := cwd_of(r.get("content")))), None)
    session.project = options.project or (apply_map(cwd, options.mapping) if cwd else None)
    session.status, session.orphan = _status(tid, own is not None, index, cwd)
    return session


def _records(session: Session, api: list, ui: list, metadata: Loaded, model: str | None) -> None:
    times, keys = _api_times(ui), Keys()
    session.records = Records()  # (a long task's go to a temporary database as they are made)
    t = session.created_at or ""
    for i, message in enumerate(api):
        ts = message.get("ts") if isinstance(message, dict) else None
        t = iso_from_ms(ts) or times.get(i) or t
        session.records.append(api_record(message, i, t, model, keys))
    t = session.created_at or ""
    for i, message in enumerate(ui):
        record = ui_record(message, i, t, keys)
        t = record["t"] or t
        session.records.append(record)
    if metadata.whole and not metadata.missing:
        session.source_items += 1
        session.records.append(metadata_record(metadata.value, t))


def _status(tid: str, own: bool, index: TaskIndex, cwd: object) -> tuple[str, list[str]]:
    reasons = []
    if not own and tid not in index.items and index.known:
        reasons.append("index-corrupt" if index.corrupt else "not-indexed")
    if isinstance(cwd, str) and os.path.isabs(cwd) and not is_foreign(cwd) and not Path(cwd).is_dir():
        reasons.append("folder-missing")
    if reasons:
        return "orphaned", reasons
    return ("live" if index.known else "unknown"), []
