"""Cline 4.x (SDK) sessions: ``<data>/sessions/<id>/<id>.messages.json`` with its ``<id>.json``
manifest, listed by ``<data>/db/sessions.db`` (SOURCES-MORE §4.6).

Each message (``{id, role, ts, content:[blocks], modelInfo?, metrics?}``) becomes a ``user`` or
``assistant`` record keyed ``msg:<id>``, its content verbatim; the manifest is the meta's ``raw``
(title, cwd, model, prompt).  A session the database has no row for is orphaned ``not-indexed``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from ...errors import LevelsessError
from ...findings import Finding
from ...layouts.base import one_line
from .. import sqlite as sq
from ..output import Options, Raw, Session, iso_from_ms, safe_id
from ..spill import Records
from ..uris import apply_map
from .convert import Keys, api_record
from .jsonfile import load_json
from .places import Install
from .tasks import APP, _count, _problems, _status, TaskIndex

DB = ("db", "sessions.db")


def session_folders(install: Install) -> list[Path]:
    try:
        return sorted(p for p in install.sessions.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    except (FileNotFoundError, NotADirectoryError):
        return []


def load_index(install: Install, report: Callable[[Finding], None]) -> TaskIndex:
    """The sessions Cline 4.x lists: the rows of ``db/sessions.db`` (read-only)."""
    index = TaskIndex()
    path = install.folder.joinpath(*DB)
    if not path.is_file():
        return index
    try:
        with sq.open_db(path) as conn:
            if "sessions" not in sq.tables(conn):
                return index
            conn.row_factory = sqlite3.Row
            rows = [{k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in dict(r).items()}
                    for r in conn.execute("select * from sessions")]
    except (LevelsessError, sqlite3.DatabaseError, OSError) as exc:
        report(Finding("source-unreadable", "warning", str(path), None, None, f"the session list cannot be read ({exc})"))
        return index
    index.known = True
    index.add([{**r, "id": r.get("session_id")} for r in rows], "sessions.db")
    return index


def sdk_session(install: Install, folder: Path, index: TaskIndex, options: Options, report) -> Session | None:
    sid = folder.name
    manifest = load_json(folder / f"{sid}.json")
    messages = load_json(folder / f"{sid}.messages.json", "messages")
    if messages.missing and manifest.missing:
        report(Finding("source-skipped", "warning", str(folder), None, None, f"session {sid} holds no messages; nothing to import"))
        return None
    _problems(manifest, "the session manifest", report)
    info = manifest.value if manifest.whole and isinstance(manifest.value, dict) else {}
    row = index.items.get(sid) or {}
    meta = info.get("metadata") if isinstance(info.get("metadata"), dict) else {}
    title = meta.get("title") if isinstance(meta.get("title"), str) else None
    source = {"app": APP, "tool": "cline", "path": str(folder), "key": sid, "version": "sdk:1"}
    if sid in index.where:
        source["listedIn"] = index.where[sid]
    session = Session(safe_id("cline", sid), None, None, one_line(title) or None if title else None,
                      source, Raw(value=info) if info else None)
    items = _count(messages, session, dict) if not messages.missing else []
    _problems(messages, "the session messages", report)
    model = info.get("model") if isinstance(info.get("model"), str) else None
    keys = Keys()
    started = info.get("started_at")
    started = started if isinstance(started, str) and started else iso_from_ms(started)
    session.created_at = next((iso_from_ms(m.get("ts")) for m in items if isinstance(m, dict) and iso_from_ms(m.get("ts"))), None) or started
    t = session.created_at or ""
    session.records = Records()
    for i, message in enumerate(items):
        t = iso_from_ms(message.get("ts")) if isinstance(message, dict) and iso_from_ms(message.get("ts")) else t
        record = api_record(message, i, t, model, keys)
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            record["sourceKey"] = keys(f"msg:{message['id']}")
        session.records.append(record)
    cwd = info.get("cwd") or row.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else None
    session.project = options.project or (apply_map(cwd, options.mapping) if cwd else None)
    session.status, session.orphan = _status(sid, False, index, cwd)
    return session
