"""Read every VS Code chat store, classify each session, and yield converted sessions.

Per store: the index (``chat.ChatSessionStore.index`` in its ``state.vscdb``, read through the
never-writing SQLite layer), the legacy ``interactive.sessions`` array, and the session files,
one stem at a time (``.jsonl`` replayed, ``.json`` parsed, the newer kept).  A session is
``orphaned`` when its workspace folder is gone (``folder-missing``), it has no valid index entry
(``not-indexed``), the whole index would be discarded by VS Code (``index-corrupt``) or VS Code's
own reader rejects the file (``editor-unreadable``); ``unknown`` for remote or foreign paths.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LevelsessError
from ...findings import Finding
from .. import sqlite as db
from ..base import unconverted
from ...jsonarray import NULL, OBJECT, Elements, LazyList, is_array, kind_of, parsed_at
from ..output import Options, Raw, Session, safe_id
from ..uris import apply_map, classify
from .convert import Tally, convert, iso, normalise, title_of
from .replay import BOM, Replayed, choose, load_json, replay_jsonl
from .sources import AGENT_STATE_KEY, INDEX_KEY, LEGACY_KEY, TRANSFER_KEY, Store

APP = "vscode"
#: Skip reasons a user would miss (the item held content levelsess could not convert): an
#: error finding (exit 4).  Every other reason (``ui-only``, ``empty``, ``deleted``) is a warning.
SEVERE = ("not-an-object", "unknown-shape", "unknown-kind")
SHOWN_KEYS = 10  # item keys named in one finding; the rest are counted
#: A ``.json`` session past this size, or a ``.jsonl`` line (a compacted log), has its requests read
#: one by one (:func:`_json_state`, :func:`~.replay.replay_jsonl`).
WHOLE_BYTES = 8 << 20


@dataclass
class Index:
    entries: dict
    state: str  # ok | missing | corrupt
    views: dict = field(default_factory=dict)  # sessionId -> {"archived", "pinned"} (agentSessions.state.cache)


def agent_states(value: object) -> dict[str, dict[str, bool]]:
    """``agentSessions.state.cache`` → {sessionId: {"archived", "pinned"}}.

    Each resource is ``vscode-chat-session://local/<unpadded base64url(sessionId)>``; an entry
    that does not decode to a session id is ignored (the list is a UI cache, not a record)."""
    states: dict[str, dict[str, bool]] = {}
    for item in value if isinstance(value, list) else []:
        resource = item.get("resource") if isinstance(item, dict) else None
        if not isinstance(resource, str) or "://" not in resource:
            continue
        encoded = resource.rstrip("/").rsplit("/", 1)[-1]
        try:
            sid = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if sid:
            states[sid] = {"archived": item.get("archived") is True, "pinned": item.get("pinned") is True}
    return states


def _valid_entry(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("sessionId"), str) and isinstance(entry.get("title"), str)
            and isinstance(entry.get("lastMessageDate"), (int, float)) and not isinstance(entry.get("lastMessageDate"), bool))


class Scan:
    def __init__(self, stores: list[Store], options: Options, report: Callable[[Finding], None]) -> None:
        self.stores, self.options, self.report = stores, options, report
        self._db_cache: dict[Path, tuple[dict, list, dict, dict]] = {}

    def finding(self, code: str, severity: str, where: str, message: str, line: int | None = None) -> None:
        self.report(Finding(code, severity, where, line, None, message))

    def _safely(self, where: str, make: Callable[[], object]) -> object:
        """Convert one session; an odd value in this undocumented format is a finding with
        its file, never the end of the import."""
        try:
            return make()
        except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
            self.finding("source-unreadable", "error", where, unconverted(exc))
            return None

    # -- the state.vscdb of a store: index, legacy sessions, transfer index -------------------

    def _read(self, path: Path, keys: tuple[str, ...]) -> dict:
        values = {}
        with db.open_db(path) as conn:
            if "ItemTable" in db.tables(conn):
                for key in keys:
                    if db.has_key(conn, "ItemTable", key):
                        try:
                            values[key] = db.value(conn, "ItemTable", key)
                        except db.SourceUnreadable as exc:
                            self.finding("source-unreadable", "error", f"{path}#{key}", f"{exc}; skipped")
                            values[key] = ...
        return values

    def _db(self, path: Path | None) -> tuple[dict, list[str], dict, dict]:
        """A store database's index, the ids of its legacy sessions, its transfer index and
        its agent-sessions view state (archived, pinned).

        Cached per database (small); the legacy sessions themselves are read when imported."""
        if path is None:
            return {}, [], {}, {}
        if path not in self._db_cache:
            values = self._read(path, (INDEX_KEY, LEGACY_KEY, TRANSFER_KEY, AGENT_STATE_KEY))
            legacy = values.pop(LEGACY_KEY, None)
            ids = [r["sessionId"] if isinstance(r.get("sessionId"), str) else f"legacy-{n}"
                   for n, r in enumerate(legacy) if isinstance(r, dict)] if isinstance(legacy, list) else []
            transfers = values.get(TRANSFER_KEY) if isinstance(values.get(TRANSFER_KEY), dict) else {}
            self._db_cache[path] = (values, ids, transfers, agent_states(values.pop(AGENT_STATE_KEY, None)))
        return self._db_cache[path]

    def _db_or_empty(self, store: Store) -> tuple[dict, list[str], dict, dict]:
        """Like :meth:`_db`, but a database that cannot be read counts as empty (and is
        reported once): its session files are still imported."""
        try:
            return self._db(store.db)
        except (LevelsessError, sqlite3.DatabaseError, OSError) as exc:
            self.report(Finding("unreadable", "error", str(store.db), None, None, f"cannot read its index: {exc}; its session files are still imported"))
            self._db_cache[store.db] = ({}, [], {}, {})
            return self._db_cache[store.db]

    def _legacy(self, path: Path | None) -> list:
        if path is None:
            return []
        legacy = self._read(path, (LEGACY_KEY,)).get(LEGACY_KEY)
        return legacy if isinstance(legacy, list) else []

    def _index(self, values: dict) -> Index:
        if INDEX_KEY not in values:
            return Index({}, "missing")
        raw = values[INDEX_KEY]
        if not isinstance(raw, dict) or raw.get("version") != 1 or not isinstance(raw.get("entries"), dict):
            return Index({}, "corrupt")
        entries = raw["entries"]
        valid = {k: v for k, v in entries.items() if _valid_entry(v)}
        return Index(valid, "ok" if len(valid) == len(entries) else "corrupt")

    # -- sessions ----------------------------------------------------------------------------

    def sessions(self) -> Iterator[Session]:
        """Every session, deduplicated by sessionId: most requests, then live, then newest.

        Streams: the session files' stems (VS Code names each file by its sessionId) and the
        legacy sessions' ids are counted first, so only an id that occurs more than once is
        held back for comparison; every other session is converted and yielded at once.
        """
        listings = [(store, self._files(store)) for store in self.stores]
        counts: dict[str, int] = {}
        for store, files in listings:
            for stem in files:
                counts[stem] = counts.get(stem, 0) + 1
            if store.files is None:
                for sid in self._db_or_empty(store)[1]:
                    counts[sid] = counts.get(sid, 0) + 1
        best: dict[str, tuple[tuple, Session]] = {}
        for store, files in listings:
            for session, requests, mtime in self._each_store(store, files):
                sid = session.source.pop("sessionId", session.id)
                key = session.source.pop("stem", sid)
                if store.kind == "file":  # loose files (exports): their names say nothing, their ids do
                    key, counts[session.id] = session.id, 2
                if counts.get(key, 1) <= 1:
                    yield session
                    continue
                rank = (requests, session.status == "live", mtime)
                if key not in best or rank > best[key][0]:
                    if key in best:
                        self._dropped(best[key][1], session)
                    best[key] = (rank, session)
                else:
                    self._dropped(session, best[key][1])
        for _rank, session in best.values():
            yield session

    def _dropped(self, copy: Session, kept: Session) -> None:
        """A second copy of a session (another store, or the legacy key) is not imported: say so."""
        if copy.source.get("path") == kept.source.get("path") and copy.source.get("key") == kept.source.get("key"):
            return  # the very same file, listed twice
        self.finding("source-skipped", "warning", str(copy.source.get("path")),
                     f"session {copy.id}: another copy, {kept.source.get('path')} ({kept.source.get('key')}), has more requests, "
                     "is live or is newer, and was imported instead of this one")

    def _each_store(self, store: Store, files: dict) -> Iterator[tuple[Session, int, float]]:
        """One store's sessions; a store whose database cannot be read is a finding, and
        its session files still import (without an index to judge them by)."""
        try:
            yield from self._store(store, files)
        except (LevelsessError, sqlite3.DatabaseError, OSError) as exc:  # exit 8: an operational error
            self.report(Finding("unreadable", "error", str(store.db or store.folder), None, None, f"cannot read: {exc}; the rest was imported"))

    def _files(self, store: Store) -> dict[str, dict[str, Path]]:
        files: dict[str, dict[str, Path]] = {}
        if store.files is not None:
            candidates = store.files
        else:
            try:
                candidates = sorted(store.folder.iterdir()) if store.folder.is_dir() else []
            except OSError as exc:
                self.finding("source-unreadable", "error", str(store.folder), f"cannot list: {exc.strerror}; skipped")
                candidates = []
        for path in candidates:
            if path.suffix in (".json", ".jsonl") and path.is_file():
                files.setdefault(path.stem, {})[path.suffix] = path
        return files

    def _store(self, store: Store, files: dict[str, dict[str, Path]]) -> Iterator[tuple[Session, int, float]]:
        values, legacy_ids, transfers, views = self._db_or_empty(store)
        index = self._index(values)
        index.views = views
        for stem, found in files.items():
            item = self._safely(str(next(iter(found.values()))), lambda s=stem, f=found: self._file_session(store, s, f, index, transfers))
            if item is not None:
                item[0].source["stem"] = stem
                yield item
        if store.files is None and legacy_ids:
            for position, raw in enumerate(self._legacy(store.db)):  # dedupe by requests, then status, then mtime:
                if isinstance(raw, dict):              # a file with the same id wins a tie
                    item = self._safely(f"{store.db}#{LEGACY_KEY}[{position}]",
                                        lambda r=raw, p=position: self._legacy_session(store, r, p, index))
                    if item is not None:
                        yield item

    def _file_session(self, store: Store, stem: str, found: dict[str, Path], index: Index, transfers: dict):
        json_state = jsonl = None
        where = str(found.get(".jsonl") or found.get(".json"))
        if ".json" in found:
            try:
                json_state = _json_state(found[".json"].read_bytes(), by_element=".jsonl" not in found)
            except (db.SourceUnreadable, OSError) as exc:
                self.finding("source-unreadable", "error", str(found[".json"]), f"{exc}; skipped")
        if ".jsonl" in found:
            try:
                data = found[".jsonl"].read_bytes()
            except OSError as exc:
                self.finding("source-unreadable", "error", str(found[".jsonl"]), f"cannot read: {exc}")
            else:
                handled, foreign = self._foreign(found[".jsonl"], data)
                if handled:
                    return foreign
                jsonl = replay_jsonl(data, fallback=json_state, long_line=WHOLE_BYTES)
                data = None  # (not held while the session converts)
                self._log_findings(found[".jsonl"], stem, jsonl)
        if json_state is None and jsonl is None:
            return None
        shape, state, note = choose(json_state, jsonl)
        if note:
            self.finding("source-diverged", "warning", where, note)
        path = found[".jsonl" if shape == "jsonl" else ".json"]
        orphan = []
        if jsonl is not None and shape == "jsonl" and jsonl.editor_unreadable:
            orphan.append("editor-unreadable")
        version = f"{shape}:{state.get('version', 1)}"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = 0.0
        log = jsonl if shape == "jsonl" else None
        return self._session(store, state, stem, str(path), stem, version, index, orphan, mtime, transfers, log=log)

    def _foreign(self, path: Path, data: bytes):
        """A ``.jsonl`` another program wrote is never replayed as an (empty) VS Code session:
        a GitHub Copilot CLI event log is imported as what it is (``copilot-<sessionId>``),
        anything else that is not a VS Code log is a finding."""
        from ...identify import describe, identify_lines
        from .. import copilot

        if not data or data.isspace():
            return False, None  # an empty log: the replay says so
        found, json_lines = identify_lines(data)
        if found == "vscode-log" or (found is None and json_lines):
            return False, None  # a damaged first line: the tolerant replay says what it can
        if found is None:  # identify before reading: no line of it is JSON (a Markdown file renamed .jsonl)
            self.finding("unknown-format", "error", str(path), "not a VS Code chat session log: no line of it is JSON "
                         "(not JSONL); skipped")
            return True, None
        if found == "copilot":
            session = (copilot.session_from_log(path, data, self.options, self.report) if len(data) <= copilot.KEEP_BYTES
                       else copilot.session_from_stream(path, self.options, self.report))  # (a large log: not held parsed)
            return True, ((session, session.source_items, 0.0) if session is not None else None)
        self.finding("unknown-format", "error", str(path), f"not a VS Code chat session log: it looks like {describe(found)}; skipped")
        return True, None

    def _log_findings(self, path: Path, stem: str, jsonl: Replayed) -> None:
        for line, count in jsonl.joined:
            self.finding("source-joined", "warning", str(path), f"session {stem}: {count} whole entr{'y' if count == 1 else 'ies'} "
                         f"run together on line {line} (no newline between them), so VS Code cannot open this session; "
                         "levelsess applied each in order", line)
        for line, message in jsonl.problems:
            self.finding("source-unreadable", "error", str(path), message, line)
        if jsonl.torn_tail:
            self.finding("source-torn", "warning", str(path), "the last line is incomplete (written mid-turn?); ignored", jsonl.skipped[-1] if jsonl.skipped else None)
        if jsonl.bom:
            where = "the file starts" if jsonl.bom == [1] else f"line{'s' if len(jsonl.bom) > 1 else ''} {', '.join(map(str, jsonl.bom))} start"
            self.finding("bom", "warning", str(path), f"session {stem}: {where} with a UTF-8 byte-order mark, so VS Code cannot open this "
                         "session (\"Malformed session data\"); levelsess read it without the mark", jsonl.bom[0])

    def _legacy_session(self, store: Store, raw: dict, position: int, index: Index):
        sid = raw.get("sessionId") if isinstance(raw.get("sessionId"), str) else f"legacy-{position}"
        assert store.db is not None
        return self._session(store, raw, sid, str(store.db), f"{LEGACY_KEY}#{sid}", f"vscdb:{raw.get('version', 1)}",
                             index, [], 0.0, {}, legacy=True)

    def _session(self, store: Store, state: dict, stem: str, path: str, key: str, version: str, index: Index,
                 orphan: list[str], mtime: float, transfers: dict, legacy: bool = False, log: Replayed | None = None):
        tally = Tally()
        given = state.get("requests")
        kinds = given.kinds if isinstance(given, (Elements, LazyList)) else [kind_of(r) for r in (given if isinstance(given, list) else [])]
        for n, kind in enumerate(kinds):
            if kind != OBJECT:  # a null hole (a delete) or a stray value: no record
                tally.items += 1
                tally.skip("deleted" if kind == NULL else "not-an-object", f"requests[{n}]")
        odd = given if given is not None and not is_array(given) else None  # (a number, an object: no request a chat holds)
        if odd is not None:
            tally.items += 1
            tally.skip("unknown-shape", "requests")
        state = normalise(state)
        sid = state.get("sessionId") if isinstance(state.get("sessionId"), str) and state["sessionId"] else None
        if sid is None and not legacy and store.kind == "file":
            # "Export Chat" output elsewhere: no sessionId, and any file name (chat.json); inside
            # chatSessions/ the file's stem is VS Code's own key for the session
            sid = export_id(state)
            key = sid
        sid = sid or stem
        requests = state.get("requests") or []
        project, status, reasons = store.project, store.status, list(store.orphan)
        if store.kind == "transferred":  # a leftover of a failed hand-over; its target gives the project
            target = next((k for k, v in transfers.items() if isinstance(v, dict) and sid in str(v.get("sessionResource", ""))), None)
            if target:
                project, status, reasons = classify(target)
        entry = index.entries.get(sid)
        if index.state == "corrupt":
            reasons.append("index-corrupt")
        elif not legacy and store.kind != "file":
            if entry is None or (entry.get("isEmpty") is True and requests):
                reasons.append("not-indexed")
        reasons = sorted(set(reasons + orphan))
        status = "orphaned" if reasons else status
        created = iso(state.get("creationDate"))
        fallback = created or (iso(mtime * 1000) if mtime else None)
        records, first = convert(state, fallback, tally)
        title = title_of(state) or (entry.get("title") if isinstance(entry, dict) and entry.get("title") else None)
        raw = Raw(value={k: v for k, v in state.items() if k != "requests"} | ({"requests": odd} if odd is not None else {}))
        source = {"app": APP, "path": path, "key": key, "version": version, "sessionId": sid}
        if store.workspace_id:
            source["workspaceId"] = store.workspace_id
        view = index.views.get(sid, {})
        last = records.last["t"] if records.last is not None else created
        if state.get("archived") is True or (isinstance(entry, dict) and entry.get("archived") is True) or view.get("archived"):
            records.append({"kind": "event", "t": last, "type": "archive", "sourceKey": f"{key}#archived"})
        if view.get("pinned"):
            records.append({"kind": "event", "t": last, "type": "pin", "sourceKey": f"{key}#pinned"})
        session = Session(safe_id("vscode", sid), None, created or first or fallback, title, source, raw, records,
                          status=status, orphan=reasons)
        session.project = self.options.project or apply_map(project, self.options.mapping)
        self._account(session, tally, log, path)
        return session, len(requests), mtime

    def _account(self, session: Session, tally: Tally, log: Replayed | None, path: str) -> None:
        """Fill the session's accounting and name every skipped item in a finding, one per reason."""
        session.source_items = tally.items + (log.lines if log is not None else 0)
        for number in log.skipped if log is not None else []:  # already named, line by line, by _log_findings
            session.skip("torn-line" if log.torn_tail and number == log.skipped[-1] else "unreadable-line")
        by_reason: dict[str, list[str]] = {}
        for reason, key in tally.skips:
            session.skip(reason)
            by_reason.setdefault(reason, []).append(key)
        for reason, keys in sorted(by_reason.items()):
            severe = reason.startswith(SEVERE)
            named = ", ".join(keys[:SHOWN_KEYS]) + (f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS else "")
            what = "could not be converted (kept under raw)" if severe else "became no record (kept under raw)"
            self.finding("source-unreadable" if severe else "source-skipped", "error" if severe else "warning", path,
                         f"session {session.id}: {len(keys)} item{'s' if len(keys) > 1 else ''} {what}, {reason}: {named}")


def _json_state(data: bytes, by_element: bool) -> dict:
    """A ``.json`` session file's state (:func:`load_json`).  One past :data:`WHOLE_BYTES` with no log
    beside it is parsed but for its ``requests``, which are read one by one as they are converted
    (:class:`~toolkit.jsonarray.Elements`): a 49 MB chat parsed whole took 86 MiB."""
    if by_element and len(data) > WHOLE_BYTES:
        found = parsed_at(data[len(BOM):] if data.startswith(BOM) else data, ("requests",))
        if found is not None:
            return {**found[0], "requests": found[1]}
    return load_json(data)


def export_id(state: dict) -> str:
    """The id of a session file without ``sessionId`` ("Chat: Export Chat…" output), from its
    content: its first request's ``requestId`` (stable as the chat grows, so a later export of
    the same chat extends the same journal), else a hash of its content (an export with no request)."""
    for request in state.get("requests") or []:
        if isinstance(request, dict) and isinstance(request.get("requestId"), str) and request["requestId"]:
            return f"export-{request['requestId']}"
    from ...encode import dumps

    requests = state.get("requests")
    whole = {**state, "requests": list(requests)} if isinstance(requests, (Elements, LazyList)) else state
    digest = hashlib.sha256(dumps(whole)).hexdigest()
    return f"export-h{digest[:32]}"


def scan_stores(stores: list[Store], options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    for session in Scan(stores, options, report).sessions():
        if options.orphans_only and not session.orphaned:
            continue
        yield session

