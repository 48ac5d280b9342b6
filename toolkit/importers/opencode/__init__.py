"""Recover OpenCode and Kilo CLI sessions as LevelCode v2 journals (SOURCES-MORE.md §3).

A data folder (``~/.local/share/opencode``, ``~/.local/share/kilo``) holds a database per release
channel (``opencode.db``, ``opencode-<channel>.db``, ``kilo.db``, ``kilo-<channel>.db``) and,
from before 1.2, the JSON tree ``storage/{project,session,message,part}``.  Every database is
opened read-only (:func:`toolkit.importers.sqlite.open_db`: ``mode=ro``, ``immutable`` or a
snapshot when the WAL holds rows) and the tree is only read.  A session found in several of them
is one journal ``opencode-<id>``: the union of its messages (the databases first, in that order,
then the tree).

Orphaned (OpenCode no longer lists it), with the reasons under ``source.orphan``:
``not-migrated`` (only in the JSON tree while the folder has a database: the one-time migration
skipped or stopped), ``project-missing`` (its ``project_id`` resolves to no project row or
readable project file), ``project-id-changed`` (its repository's ``.git/opencode`` names another
project id: OpenCode lists the sessions of that one), ``session-unreadable`` (messages left whose session row or file is lost),
``folder-missing`` (its directory is gone).

Accounting: every message and every part is a source item; a message is a record and its parts
are carried inside it (``merged``); a row or file that cannot be read is a ``source-unreadable``
finding with its key, counted under ``skipped``.  A damaged database yields every row SQLite can
still read (:func:`.stores.salvage`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ...errors import NotASourceError, PathNotFoundError
from ...findings import Finding
from .. import sqlite as sq
from ..base import unconverted
from ..output import Options, Raw, Session, iso_from_ms, safe_id
from ..spill import Records
from ..uris import apply_map, is_foreign
from .convert import record
from .stores import Ref, Store, open_database, open_tree

__all__ = ["APP", "Options", "detect", "resolve", "scan", "source_files"]

APP = "opencode"
APPS = ("opencode", "kilo")


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def detect() -> list[Path]:
    """Every OpenCode / Kilo CLI data folder on this machine (and a database named by
    ``$OPENCODE_DB`` / ``$KILO_DB`` outside them)."""
    found = [_data_home() / app for app in APPS]
    for variable, app in (("OPENCODE_DB", "opencode"), ("KILO_DB", "kilo")):
        named = os.environ.get(variable)
        if named and named != ":memory:":
            path = Path(named) if os.path.isabs(named) else _data_home() / app / named
            found.append(path)
    return [p for p in dict.fromkeys(found) if (p.is_dir() and (_databases(p) or (p / "storage").is_dir())) or p.is_file()]


def _databases(folder: Path) -> list[Path]:
    """The channel databases of a data folder, the stable one of each app first."""
    names = sorted(p.name for p in folder.glob("*.db") if p.is_file())
    stable = [n for n in ("opencode.db", "kilo.db") if n in names]
    channels = [n for n in names if n not in stable and n.startswith(("opencode-", "kilo-"))]
    return [folder / n for n in stable + channels]


def resolve(source: Path) -> tuple[list[Path], Path | None]:
    """``--source`` -> (databases, legacy ``storage`` folder or None)."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        return [source], None
    if source.name == "storage" and ((source / "session").is_dir() or (source / "message").is_dir()):
        return [], source
    databases = _databases(source)
    storage = source / "storage" if (source / "storage").is_dir() else None
    if databases or storage:
        return databases, storage
    raise NotASourceError(f"{source} (expected an OpenCode or Kilo data folder (~/.local/share/opencode, ~/.local/share/kilo), "
                          "one of its .db files, or its storage/ folder)")


def source_files(source: Path) -> list[Path]:
    """Every file an import of ``source`` reads (to prove none was written)."""
    databases, storage = resolve(source)
    files = [p.with_name(p.name + suffix) for p in databases for suffix in ("", "-wal", "-shm")]
    if storage is not None:
        files += [p for p in storage.rglob("*") if p.is_file()]
    return [p for p in files if p.is_file()]


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every session under ``source`` as a converted :class:`Session`."""
    databases, storage = resolve(source)
    with contextlib.ExitStack() as stack:
        stores = [s for s in (open_database(db, stack, report) for db in databases) if s is not None]
        if storage is not None:
            stores.append(open_tree(storage, report))
        lost = _lost_messages(stores, report)
        # the tree is what OpenCode no longer reads once a database is there (even one the migration never filled, #13654)
        migrated = any(s.kind == "db" and s.has_sessions for s in stores) or (storage is not None and bool(_databases(storage.parent)))
        for sid in _session_ids(stores, lost):
            try:
                session = _session(sid, stores, lost.get(sid, {}), migrated, options, report)
            except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
                report(Finding("source-unreadable", "error", str(source), None, None, unconverted(exc, f"session {sid}")))
                continue
            if not (options.orphans_only and not session.orphaned):
                yield session


def _session_ids(stores: list[Store], lost: dict) -> list[str]:
    ids: dict[str, None] = {}
    for store in stores:
        ids.update(dict.fromkeys(store.sessions))
        ids.update(dict.fromkeys(store.messages))
    ids.update(dict.fromkeys(lost))
    return list(ids)


def _lost_messages(stores: list[Store], report: Callable[[Finding], None]) -> dict[str, dict[str, list[Ref]]]:
    """Parts whose message is in no store, grouped by session id then message id (the session
    from the part row, or from the first part file that says)."""
    known = {mid for store in stores for sid in store.messages for mid in store.message_ids(sid)}
    lost: dict[str, dict[str, list[Ref]]] = {}
    for store in stores:
        for mid in store.parts:
            if mid in known:
                continue
            refs = store.part_refs(mid)
            sid = _part_session(store, refs)
            if sid is None:
                report(Finding("source-unreadable", "error", str(store.path), None, None,
                               f"message {mid}: {len(refs)} part(s) whose message and session are both unknown; not imported"))
                continue
            lost.setdefault(sid, {}).setdefault(mid, []).extend(refs)
    return lost


def _part_session(store: Store, refs: list[Ref]) -> str | None:
    """The session a lost message's parts name: a database row's ``session_id``, a file's ``sessionID``."""
    for ref in refs:
        sid = store.column(ref, "session_id") if store.kind == "db" else None
        if not sid:
            try:
                data = store.load(ref)[1]
            except sq.SourceUnreadable:
                continue
            sid = data.get("sessionID") if isinstance(data, dict) else None
        if isinstance(sid, str) and sid:
            return sid
    return None


def _info(sid: str, stores: list[Store], report) -> tuple[Ref | None, dict | None]:
    """The first readable session row or file of ``sid``, and the store it is in; a finding for
    each copy that cannot be read when no other can."""
    failed = []
    for store in stores:
        ref = store.sessions.get(sid)
        if ref is None:
            continue
        try:
            row, _data = store.load(ref)
            return ref, row
        except sq.SourceUnreadable as exc:
            failed.append((ref, exc))
    for ref, exc in failed:
        report(Finding("source-unreadable", "error", _where(ref), None, None,
                       f"session {sid}: its {'file' if ref.store.kind == 'json' else 'row'} {exc}; its messages are imported as orphaned"))
    return None, None


def _field(row: dict, db: str, json_path: tuple[str, ...]) -> object:
    if db in row:
        return row[db]
    value: object = row
    for key in json_path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _status(ref: Ref | None, project: object, migrated: bool) -> tuple[str, list[str]]:
    reasons = []
    if ref is None:
        reasons.append("session-unreadable")
    else:
        if ref.store.kind == "json" and migrated:
            reasons.append("not-migrated")
        if ref.store.has_projects and ref.owner not in ref.store.projects:
            reasons.append("project-missing")
        elif _current_project_id(project) not in (None, ref.owner):
            reasons.append("project-id-changed")
    if isinstance(project, str) and project and not is_foreign(project) and Path(project).is_absolute() and not Path(project).is_dir():
        reasons.append("folder-missing")
    if reasons:
        return "orphaned", reasons
    if isinstance(project, str) and project and (is_foreign(project) or not Path(project).is_absolute()):
        return "unknown", []
    return "live", []


def _current_project_id(directory: object) -> str | None:
    """The project id OpenCode cached for ``directory``'s repository (``.git/opencode``, §3.6):
    what it lists sessions under now.  None when there is no such cache to read."""
    if not isinstance(directory, str) or not directory or is_foreign(directory) or not Path(directory).is_absolute():
        return None
    folder = Path(directory)
    for candidate in (folder, *folder.parents):
        cache = candidate / ".git" / "opencode"
        try:
            if (candidate / ".git").is_dir():
                cached = cache.read_text("utf-8").strip() if cache.is_file() else ""
                return cached or None
        except (OSError, UnicodeDecodeError):
            return None
    return None


def _session(sid: str, stores: list[Store], lost: dict[str, list[Ref]], migrated: bool, options: Options, report) -> Session:
    ref, row = _info(sid, stores, report)
    row = row or {}
    messages = _messages(sid, stores, report)
    project = _utf8(_field(row, "directory", ("directory",)) if row else _cwd(messages))
    title = _field(row, "title", ("title",))
    title = title.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if isinstance(title, str) else None
    session = Session(safe_id("opencode", sid), None, None, title if isinstance(title, str) else None, _source(sid, ref, row, stores),
                      Raw(value=row) if ref is not None else None)
    session.status, session.orphan = _status(ref, project, migrated)
    session.project = options.project or (apply_map(project, options.mapping) if isinstance(project, str) and project else None)
    _records(sid, stores, messages, lost, session, report)
    created = iso_from_ms(_field(row, "time_created", ("time", "created")))
    session.created_at = created or next((r.get("t") for r in session.records if r.get("t")), None)
    return session


def _utf8(text: object) -> str | None:
    """``text`` when it is a path that can be named (a damaged row's bytes that are not UTF-8
    cannot: that session goes under _unassigned, its row kept whole under ``raw``)."""
    try:
        return text if isinstance(text, str) and text.encode("utf-8") else None
    except UnicodeEncodeError:
        return None


def _source(sid: str, ref: Ref | None, row: dict, stores: list[Store]) -> dict:
    """The meta's ``source``: where the session row is (or its messages, when it is lost)."""
    where = ref.store.path if ref is not None else next((s.path for s in stores if sid in s.messages), stores[0].path)
    version = _field(row, "version", ("version",))
    source = {"app": APP, "tool": _tool(where), "path": _where(ref) if ref is not None else str(where), "key": sid,
              "version": f"{ref.store.kind if ref else 'none'}:{version if isinstance(version, str) else 'none'}"}
    parent = _field(row, "parent_id", ("parentID",))
    if isinstance(parent, str) and parent:
        source["parent"] = parent  # a subagent's session: the session that started it
    archived = iso_from_ms(_field(row, "time_archived", ("time", "archived")))
    if archived:
        source["archived"] = archived  # OpenCode hides it from its list
    return source


def _tool(where: Path) -> str:
    return "kilo" if where.name.startswith("kilo") or "kilo" in (where.parent.name, where.parent.parent.name) else "opencode"


def _cwd(messages: list[tuple[int, str, Ref, bool]]) -> str | None:
    """The working folder an assistant message names, for a session whose row is lost."""
    for _t, _mid, ref, readable in messages:
        try:
            data = ref.store.load(ref)[1] if readable else None
        except sq.SourceUnreadable:
            continue
        path = data.get("path") if isinstance(data, dict) and isinstance(data.get("path"), dict) else {}
        if isinstance(path.get("cwd"), str) and path["cwd"]:
            return path["cwd"]
    return None


def _messages(sid: str, stores: list[Store], report) -> list[tuple[int, str, Ref, bool]]:
    """Each message of ``sid`` once, in time then id order: ``(its time, its id, the ref of the first
    store that reads it (else of the first that lists it), whether one reads it)``.  Each is read here
    for its time only, and again when it is converted: a session's messages are never all held."""
    chosen: dict[str, tuple[int, Ref, bool]] = {}
    why: dict[str, tuple[Ref, object]] = {}
    for store in stores:
        for ref in store.message_refs(sid):
            held = chosen.get(ref.id)
            if held is not None and held[2]:
                continue
            try:
                _row, data = store.load(ref)
            except sq.SourceUnreadable as exc:
                if held is None:
                    chosen[ref.id] = (ref.time, ref, False)
                why.setdefault(ref.id, (ref, exc))
                continue
            if isinstance(data, dict):
                chosen[ref.id] = (_created(data, ref.time), ref, True)
            else:  # (its row is kept under the record's raw, as its parts are)
                chosen[ref.id] = (ref.time, ref, False)
                why.setdefault(ref.id, (ref, "is not a JSON object"))
    for mid, (ref, exc) in why.items():
        if not chosen[mid][2]:  # no store could read it
            report(Finding("source-unreadable", "error", _where(ref), None, None, f"session {sid}: message {mid} {exc}; its readable parts are kept"))
    return sorted(((t, mid, ref, readable) for mid, (t, ref, readable) in chosen.items()), key=lambda m: (m[0], m[1]))


def _created(data: dict, fallback: int) -> int:
    when = data.get("time") if isinstance(data.get("time"), dict) else {}
    created = when.get("created")
    return created if isinstance(created, int) else fallback


def _where(ref: Ref) -> str:
    return str(ref.where) if ref.store.kind == "json" else str(ref.store.path)


def _parts(mid: str, stores: list[Store], refs: list[Ref] | None, session: Session, report) -> list[tuple[str, dict, object]]:
    """The parts of one message, once each (the first copy a store can read: a channel database,
    the tree), in id order; an unreadable one is counted."""
    found: dict[str, tuple[Ref, tuple[dict, object] | Exception]] = {}  # the first ref listing it, and what it read
    for ref in refs if refs is not None else [r for s in stores for r in s.part_refs(mid)]:
        held = found.get(ref.id) if ref.id is not None else None
        if held is not None and not isinstance(held[1], Exception):
            continue
        try:
            loaded: tuple[dict, object] | Exception = ref.store.load(ref)
        except sq.SourceUnreadable as exc:
            loaded = exc
        pid = ref.id or _part_id(ref, loaded)
        held = found.get(pid)
        if held is None or isinstance(held[1], Exception):
            found[pid] = (held[0] if held is not None else ref, loaded)
    out = []
    for pid in sorted(found):
        session.source_items += 1
        first, loaded = found[pid]
        if isinstance(loaded, Exception):
            session.skip("source-unreadable")
            report(Finding("source-unreadable", "error", _where(first), None, None,
                           f"session {session.source['key']}: part {pid} {loaded}; skipped"))
            continue
        row, data = loaded
        out.append((pid, data if isinstance(data, dict) else {}, row))
    return out


def _part_id(ref: Ref, loaded: tuple[dict, object] | Exception) -> str:
    """A database part's id (its listing holds its rowid): as the row says, else its column alone."""
    pid = loaded[0].get("id") if not isinstance(loaded, Exception) else ref.store.column(ref, "id")
    if isinstance(pid, str) and pid:
        return pid.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # (bytes that were not UTF-8, spelled out)
    return f"at rowid {ref.where}"


def _records(sid, stores, messages, lost, session: Session, report) -> None:
    """Convert each message with its parts, in order, into ``session.records`` (a :class:`Records`:
    a long session's go to a temporary database as they are made)."""
    records = session.records = Records()
    for _t, mid, ref, readable in messages:
        session.source_items += 1
        try:
            row, data = ref.store.load(ref)
        except sq.SourceUnreadable as exc:
            row, data = None, None
            if readable:  # read a moment ago: the tree changed meanwhile
                report(Finding("source-unreadable", "error", _where(ref), None, None,
                               f"session {sid}: message {mid} could not be read again ({exc}); its readable parts are kept"))
        data = data if isinstance(data, dict) else None
        parts = _parts(mid, stores, None, session, report)
        if data is None:  # the message is counted lost; a record of its parts stands for the first of them
            session.skip("source-unreadable")
            if not parts:
                continue
        records.append(record(mid, data, row, parts, ref.time))
        session.merged += len(parts) - (data is None)
    for mid, refs in lost.items():
        parts = _parts(mid, stores, refs, session, report)
        if parts:
            records.append(record(mid, None, None, parts, 0))
            session.merged += len(parts) - 1
        report(Finding("source-unreadable", "warning", _where(refs[0]), None, None,
                       f"session {sid}: message {mid} is missing; its {len(refs)} part(s) are kept as an orphan-message record"))
