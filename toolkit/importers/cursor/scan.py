"""Read Cursor's databases one composer at a time and yield converted sessions (SOURCES.md §2)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from ...errors import LevelsessError
from ...findings import Finding
from ...workers import file_size
from ...lines import loads
from .. import sqlite as db
from ..base import Farm, unconverted
from ..output import Options, Raw, Session, iso_from_ms, safe_id
from ..uris import apply_map, classify
from .convert import Clock, bubble_text, convert_bubble, iso, model_name, orphan_event, request_time, settle_times, skip_reason
from .replay import MISSING as _MISSING, BubbleRows, Replay
from .sources import Sources, Workspace

APP = "cursor"
CHATDATA_KEYS = ("workbench.panel.aichat.view.aichat.chatdata", "workbench.panel.chat.view.chat.chatdata")
COMPOSER_KEY = "composer.composerData"
HEADERS_KEY = "composer.composerHeaders"
GATE_KEY = "composer.composerHeaders.tableGateEnabled"
GENERATIONS_KEY = "aiService.generations"
KV = "cursorDiskKV"
ITEMS = "ItemTable"
#: Skip reasons normal in Cursor's data: said once per session, in one warning naming the keys.
#: The others (unreadable, dangling, no-bubble-id, unknown-type) each have a finding of their own.
SUMMARISED = {"empty": "nothing to show: no text, attachment, tool call, thinking or code",
              "input-box": "the chat tab's empty input box, not a message"}


class Tally:
    """One conversation's accounting: its source items, and the keys of those that became no record."""

    __slots__ = ("items", "skips")

    def __init__(self) -> None:
        self.items = 0
        self.skips: dict[str, list[str]] = {}

    def skip(self, reason: str, key: str) -> None:
        self.skips.setdefault(reason, []).append(key)


class Timeline:
    """Records being built, with each one's request time (for ``settle_times``)."""

    __slots__ = ("records", "requests")

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.requests: list[str | None] = []

    def add(self, record: dict, bubble: dict) -> None:
        self.records.append(record)
        self.requests.append(request_time(bubble) if record["kind"] != "user" else None)


def _mtime(path: Path) -> str | None:
    try:
        return iso_from_ms(path.stat().st_mtime * 1000)
    except OSError:
        return None


class Scan:
    """One import's view of the sources: findings, counts, and the sessions it yields."""

    def __init__(self, sources: Sources, options: Options, report: Callable[[Finding], None]) -> None:
        self.sources, self.options, self.report = sources, options, report
        self._unreadable: set[Path] = set()
        self.head_workspace: dict[str, Workspace] = {}  # composerId -> workspace holding its head
        self.catalog: set[str] | None = None
        self.heads: dict[str, dict] = {}
        self.generations: dict[str, str] = {}
        self.bodiless: dict[Path, list[str]] = {}  # workspace DB -> composer ids it holds only heads of

    def finding(self, code: str, severity: str, path: Path, key: str, message: str) -> None:
        self.report(Finding(code, severity, f"{path}#{key}", None, None, message))

    def account(self, tally: Tally, session: Session | None, path: Path, key: str) -> Session | None:
        """Fill the session's accounting from ``tally`` and name what was skipped in findings."""
        for reason, keys in tally.skips.items():
            if reason in SUMMARISED:
                self.finding("source-skipped", "warning", path, key,
                             f"{len(keys)} bubble(s) skipped ({SUMMARISED[reason]}): {', '.join(keys)}")
        if session is None:
            if tally.items and set(tally.skips) != {"input-box"}:  # a tab with only its input box: said above
                reasons = ", ".join(f"{len(v)} {k}" for k, v in sorted(tally.skips.items()))
                self.finding("source-skipped", "warning", path, key, f"no session: none of its {tally.items} bubble(s) "
                             f"became a record ({reasons})")
            return None
        session.source_items = tally.items
        for reason, keys in sorted(tally.skips.items()):
            session.skip(reason, len(keys))
        return session

    def unknown(self, path: Path, key: str, tally: Tally, bubble: object, default_type: object = None) -> None:
        """Count a bubble that became no record; one we cannot interpret is an error finding."""
        reason = skip_reason(bubble, default_type)
        tally.skip(reason, key)
        if reason == "unreadable":
            self.finding("source-unreadable", "error", path, key, "the bubble is not a JSON object; skipped")
        elif reason == "unknown-type":
            kind = bubble.get("type", default_type) if isinstance(bubble, dict) else None
            self.finding("source-unreadable", "error", path, key, f"a bubble of unknown type {kind!r}; skipped")

    def value(self, conn: sqlite3.Connection, table: str, key: str, path: Path) -> object:
        try:
            return db.value(conn, table, key)
        except db.SourceUnreadable as exc:
            self.finding("source-unreadable", "error", path, key, f"{exc}; skipped")
            return None

    # the session's project and orphan status
    def place(self, session: Session, workspace: Workspace | None, fallback_uri: str | None = None) -> Session:
        if workspace is not None and (workspace.uri is not None or workspace.project is not None):
            project, status, orphan = workspace.project, workspace.status, list(workspace.orphan)
            session.source["workspaceId"] = workspace.id
        elif fallback_uri is not None:
            project, status, orphan = classify(fallback_uri if "://" in fallback_uri else Path(fallback_uri).as_uri()
                                               if fallback_uri.startswith("/") else fallback_uri)
        else:
            project, status, orphan = None, "live", []
        if session.status == "orphaned":  # reasons found earlier (not-indexed) accumulate
            orphan = sorted(set(orphan) | set(session.orphan))
            status = "orphaned"
        session.project = self.options.project or apply_map(project, self.options.mapping)
        session.status, session.orphan = status, orphan
        return session

    def sessions(self) -> Iterator[Session]:
        """Workspace databases first (heads, tabs, inline composers), then the global one.

        A composer found in both is deduplicated: most records wins, ties to the global copy.
        """
        pending: dict[str, Session] = {}
        yielded: set[str] = set()
        workspaces = [w for w in self.sources.workspaces if w.db is not None]
        global_db = self.sources.global_db
        if global_db is not None and self.sources.scope is None and all(w.db != global_db for w in workspaces):
            workspaces.append(Workspace("global", global_db, None, None, "live", []))  # its ItemTable can hold tabs too
        for workspace in workspaces:
            if workspace.db is not None:
                for session in self._each_db(workspace.db, self._workspace(workspace)):
                    cid = session.source["key"].partition("#")[2] if session.source["key"].startswith(COMPOSER_KEY) else None
                    if cid is None:
                        yielded.add(session.id)
                        yield session
                    elif cid not in pending or len(session.records) > len(pending[cid].records):
                        pending[cid] = session
        if self.sources.global_db is not None:
            yield from self._each_db(self.sources.global_db, self._global(self.sources.global_db, pending, yielded))
        for session in pending.values():
            yielded.add(session.id)
            yield session
        self._point_at_bodies(yielded)

    def _point_at_bodies(self, yielded: set[str]) -> None:
        """Chat heads whose messages this import did not find: say where they live."""
        for path, cids in self.bodiless.items():
            missing = [cid for cid in cids if safe_id("cursor", cid) not in yielded]
            if not missing:
                continue
            global_db = self.sources.global_db
            if global_db is not None and global_db != path:
                self.finding("source-skipped", "warning", path, COMPOSER_KEY, f"{len(missing)} chat(s) listed here have no messages "
                             f"in {global_db} (deleted, or from another machine): {', '.join(missing)}")
                continue
            user = path.parent.parent.parent if path.parent.parent.name == "workspaceStorage" else None
            if user is not None and (user / "globalStorage" / "state.vscdb").is_file():
                hint = f"import with --source {path.parent} (it reads the sibling globalStorage) or --source {user}"
            else:
                hint = "point --source at the Cursor User folder this workspace came from, or add --source <User>/globalStorage/state.vscdb"
            self.finding("source-skipped", "warning", path, COMPOSER_KEY, f"{len(missing)} chat(s) listed here keep their messages in "
                         f"Cursor's global database (<User>/globalStorage/state.vscdb), which this import did not read; {hint}")

    def _each_db(self, path: Path, items: Iterator) -> Iterator:
        """Yield from one database's sessions; a database that cannot be read is a finding,
        and the other databases still import."""
        try:
            yield from items
        except (LevelsessError, sqlite3.DatabaseError, OSError) as exc:  # exit 8: an operational error
            if path in self._unreadable:  # a loose database is read as both kinds: say it once
                return
            self._unreadable.add(path)
            self.report(Finding("unreadable", "error", str(path), None, None, f"cannot read this database: {exc}; the rest was imported"))

    def _safely(self, path: Path, key: str, make: Callable[[], object]) -> object:
        """Convert one composer or tab; an odd value in this undocumented format is a
        finding with its key, never the end of the import."""
        try:
            return make()
        except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each row
            self.finding("source-unreadable", "error", path, key, unconverted(exc))
            return None

    # -- workspace databases: heads, legacy tabs, inline composers -------------------------

    def _workspace(self, workspace: Workspace) -> Iterator[Session]:
        path = workspace.db
        assert path is not None
        with db.open_db(path) as conn:
            if ITEMS not in db.tables(conn):
                return
            generations = self.value(conn, ITEMS, GENERATIONS_KEY, path) if db.has_key(conn, ITEMS, GENERATIONS_KEY) else None
            for item in generations if isinstance(generations, list) else []:
                if isinstance(item, dict) and isinstance(item.get("generationUUID"), str):
                    when = iso(item.get("unixMs"))
                    if when:
                        self.generations[item["generationUUID"]] = when
            composers = self.value(conn, ITEMS, COMPOSER_KEY, path) if db.has_key(conn, ITEMS, COMPOSER_KEY) else None
            listed = composers.get("allComposers") if isinstance(composers, dict) else None
            for composer in listed if isinstance(listed, list) else []:
                if not isinstance(composer, dict) or not isinstance(composer.get("composerId"), str):
                    continue
                cid = composer["composerId"]
                self.head_workspace.setdefault(cid, workspace)  # its project, whichever copy wins
                if isinstance(composer.get("conversation"), list) and composer["conversation"]:
                    key = f"{COMPOSER_KEY}#{cid}"
                    session = self._safely(path, key, lambda c=composer, k=key: self._inline(c, k, path, "inline"))
                    if session is not None:
                        yield self.place(session, workspace)
                else:  # a head (0.43-2.x): the body is in the global database
                    self.heads.setdefault(cid, composer)
                    self.bodiless.setdefault(path, []).append(cid)
            for key in CHATDATA_KEYS:
                if db.has_key(conn, ITEMS, key):
                    chatdata = self.value(conn, ITEMS, key, path)
                    tabs = chatdata.get("tabs") if isinstance(chatdata, dict) else None
                    for tab in tabs if isinstance(tabs, list) else []:
                        if not isinstance(tab, dict):
                            continue
                        where = f"{key}#{tab.get('tabId')}"
                        session = self._safely(path, where, lambda t=tab, k=key: self._tab(t, k, chatdata, path))
                        if session is not None:
                            yield self.place(session, workspace)

    def _tab(self, tab: dict, key: str, chatdata: dict, path: Path) -> Session | None:
        tab_id = tab.get("tabId")
        if not isinstance(tab_id, str):
            return None
        where = f"{key}#{tab_id}"
        listed = tab.get("bubbles")
        bubbles = listed if isinstance(listed, list) else []
        tally = Tally()
        tally.items = len(bubbles)
        when = iso(tab.get("lastSendTime"))
        clock = Clock(when, self.generations)
        line = Timeline()
        for index, bubble in enumerate(bubbles):
            bubble_id = (bubble.get("id") or bubble.get("bubbleId") if isinstance(bubble, dict) else None) or str(index)
            bubble_key = f"{where}#{bubble_id}"
            if index == len(bubbles) - 1 and isinstance(bubble, dict) and bubble.get("type") == "user" and not bubble_text(bubble):
                tally.skip("input-box", bubble_key)  # every tab ends with its empty input box
                continue
            record = convert_bubble(bubble, bubble_key, clock, None, False) if isinstance(bubble, dict) else None
            if record is None:
                self.unknown(path, bubble_key, tally, bubble)
                continue
            record["t"], record["tInferred"] = when, True  # tabs carry no per-bubble time
            line.add(record, bubble)
        if not line.records:
            return self.account(tally, None, path, where)
        settle_times(line.records, line.requests, _mtime(path))
        raw = {k: v for k, v in tab.items() if k != "bubbles"}
        version = f"chatdata:{chatdata.get('chatDataVersion', 'none')}"
        session = Session(safe_id("cursor-tab", tab_id), None, when or line.records[0]["t"], tab.get("chatTitle") or None,
                          {"app": APP, "path": str(path), "key": where, "version": version}, raw, line.records)
        return self.account(tally, session, path, where)

    def _inline(self, composer: dict, key: str, path: Path, shape: str) -> Session | None:
        cid = composer["composerId"]
        created = iso(composer.get("createdAt"))
        clock = Clock(created, self.generations)
        model = model_name((composer.get("modelConfig") or {}).get("modelName") if isinstance(composer.get("modelConfig"), dict) else None)
        partial = composer.get("status") == "generating"
        tally, line = Tally(), Timeline()
        for index, bubble in enumerate(composer["conversation"]):
            tally.items += 1
            bubble_key = f"{key}#{(bubble.get('bubbleId') if isinstance(bubble, dict) else None) or index}"
            record = convert_bubble(bubble, bubble_key, clock, model, partial) if isinstance(bubble, dict) else None
            if record is None:
                self.unknown(path, bubble_key, tally, bubble)
                continue
            line.add(record, bubble)
        if not line.records:
            return self.account(tally, None, path, key)
        settle_times(line.records, line.requests, created or iso(composer.get("lastUpdatedAt")) or _mtime(path))
        raw = {k: v for k, v in composer.items() if k != "conversation"}
        version = f"{shape}:{composer.get('_v', 'none')}"
        session = Session(safe_id("cursor", cid), None, created or line.records[0]["t"], composer.get("name") or None,
                          {"app": APP, "path": str(path), "key": key, "version": version}, raw, line.records)
        _archive(session, composer)
        return self.account(tally, session, path, key)

    # -- the global database: composerData rows ------------------------------------------

    def _load_catalog(self, conn: sqlite3.Connection, path: Path) -> None:
        names = db.tables(conn)
        gate = db.raw_value(conn, ITEMS, GATE_KEY) if ITEMS in names else None
        if gate is not None and gate.strip().strip(b'"') == b"true" and "composerHeaders" in names:
            rows = conn.execute("select composerId, workspaceId, value from composerHeaders")
            self.catalog = set()
            while batch := rows.fetchmany(db.FETCH):
                for cid, wsid, value in batch:
                    cid = cid.decode() if isinstance(cid, bytes) else cid
                    self.catalog.add(cid)
                    head = _maybe_json(value)
                    if isinstance(head, dict):
                        self.heads[cid] = head
                    if wsid is not None:
                        self._head_workspace(cid, wsid.decode() if isinstance(wsid, bytes) else wsid, head)
            return
        if ITEMS in names and db.has_key(conn, ITEMS, HEADERS_KEY):
            headers = self.value(conn, ITEMS, HEADERS_KEY, path)
            heads = headers.get("allComposers") if isinstance(headers, dict) else None
            heads = heads if isinstance(heads, list) else []
            self.catalog = set()
            for head in heads:
                if isinstance(head, dict) and isinstance(head.get("composerId"), str):
                    cid = head["composerId"]
                    self.catalog.add(cid)
                    self.heads[cid] = head
                    ident = head.get("workspaceIdentifier")
                    if isinstance(ident, dict) and isinstance(ident.get("id"), str):
                        self._head_workspace(cid, ident["id"], head)
            return
        if self.head_workspace:
            self.catalog = set(self.head_workspace)

    def _head_workspace(self, cid: str, wsid: str, head: object) -> None:
        if cid in self.head_workspace or wsid == "empty-window":
            return
        match = next((w for w in self.sources.workspaces if w.id == wsid), None)
        if match is None and isinstance(head, dict):
            ident = head.get("workspaceIdentifier") or {}
            uri = (ident.get("uri") or {}) if isinstance(ident, dict) else {}
            fs_path = uri.get("fsPath") if isinstance(uri, dict) else None
            if isinstance(fs_path, str):
                project, status, orphan = classify(Path(fs_path).as_uri() if fs_path.startswith("/") else fs_path)
                match = Workspace(wsid, None, fs_path, project, status, orphan)
        if match is not None:
            self.head_workspace[cid] = match

    def _global(self, path: Path, pending: dict[str, Session], yielded: set[str]) -> Iterator[Session | Farm]:
        """The global database's composers, each converted on its own (a :class:`Farm`: with
        ``--jobs``, in worker processes), then the bubble rows no composer claims."""
        with db.open_db(path) as conn:
            names = db.tables(conn)
            self._load_catalog(conn, path)
            if KV not in names:
                return
            keys = list(db.keys(conn, KV, "composerData:"))  # (the keys only: bounded memory)
            found: dict[str, set[str]] = {"handled": set(), "deleted": set(), "broken": set()}  # composer ids
            here = _Connected(conn)

            def after(index: int, said: tuple[str, str | None]) -> None:
                status, chosen = said
                cid = keys[index][len("composerData:"):]
                found[status].add(cid)
                if chosen is not None:
                    pending.pop(cid, None)
                    yielded.add(chosen)

            yield Farm(len(keys), file_size(path), lambda i, report: self._global_one(here.get(), keys[i], path, pending, report), after,
                       here.close)
            conn = here.get()
            handled, deleted, broken = found["handled"], found["deleted"], found["broken"]
            left = [cid for cid in _bubble_owners(conn) if cid not in handled and self._in_scope(cid, None)]
            for cid in left:
                reason = "editor-unreadable" if cid in broken else "deleted"
                key = f"composerData:{cid}"
                session = self._safely(path, key, lambda c=cid, r=reason: self._leftover(conn, c, path, r))
                if session is not None:
                    yield self._chosen(cid, session, pending, yielded)
            gone = len(deleted - set(left))
            if gone and self.sources.scope is None:
                self.finding("source-skipped", "warning", path, "composerData:", f"{gone} deleted chat(s), nothing left to recover "
                             "(composerData is NULL and no bubble rows remain: normal after deleting chats in Cursor)")

    def _global_one(self, conn: sqlite3.Connection, key: str, path: Path, pending: dict[str, Session],
                    report: Callable[[Finding], None]) -> tuple[list[Session], tuple[str, str | None]]:
        """One ``composerData:`` row: the session to write (none, or the workspace's copy when it
        has more records), and (handled | deleted | broken, the id of the session chosen).  Its
        findings go to ``report``."""
        cid = key[len("composerData:"):]
        kept, self.report = self.report, report
        try:
            try:
                raw = db.raw_value(conn, KV, key)
            except (sqlite3.DatabaseError, OSError) as exc:  # this composer's row, not the rest's
                if db.is_locked(exc):  # the editor writing: as when the database is opened
                    raise db.locked(path) from exc
                why = str(exc)
                damaged = "malformed" in why or "corrupt" in why
                self.finding("source-unreadable", "error", path, key, f"cannot read it ({why}{': a damaged page' if damaged else ''}); "
                             "its bubbles, in rows of their own, are recovered without it" + (
                                 " (Cursor cannot read this row either: keep a copy of the database before Cursor writes to it again)"
                                 if damaged else ""))
                return [], ("broken", None)
            if raw is None:
                return [], ("deleted", None)
            try:
                composer = db.decode(raw)
            except db.SourceUnreadable as exc:
                composer = None
                self.finding("source-unreadable", "error", path, key, f"{exc}; its bubbles are recovered without it")
            if not isinstance(composer, dict):
                if composer is not None:
                    self.finding("source-unreadable", "error", path, key, "composerData is not a JSON object; its bubbles are recovered without it")
                return [], ("broken", None)
            composer["composerId"] = cid  # the key names it, whatever the value says
            if not self._in_scope(cid, composer):
                return [], ("handled", None)
            session = self._safely(path, key, lambda: self._composer(conn, composer, key, path))
            if session is None:
                return [], ("handled", None)
            chosen = self._chosen(cid, session, pending, set())
            return [chosen], ("handled", chosen.id)
        finally:
            self.report = kept

    @staticmethod
    def _chosen(cid: str, session: Session, pending: dict[str, Session], yielded: set[str]) -> Session:
        """The global copy of a composer, or the workspace's when it has more records (ties: the global one)."""
        local = pending.pop(cid, None)
        chosen = local if local is not None and len(local.records) > len(session.records) else session
        yielded.add(chosen.id)
        return chosen

    def _in_scope(self, cid: str, composer: dict | None) -> bool:
        """With ``--source workspaceStorage/<id>``: only that workspace's composers."""
        scope = self.sources.scope
        if scope is None:
            return True
        workspace = self.head_workspace.get(cid)
        if workspace is not None:
            return workspace.id == scope
        ident = composer.get("workspaceIdentifier") if isinstance(composer, dict) else None
        return isinstance(ident, dict) and ident.get("id") == scope

    def _leftover(self, conn: sqlite3.Connection, cid: str, path: Path, reason: str) -> Session | None:
        """A deleted (or unreadable) composer's bubble rows, recovered in the database's write
        order as an orphaned session marked ``deleted``."""
        key = f"composerData:{cid}"
        tally, line = Tally(), Timeline()
        clock = Clock(None, self.generations)
        first_uri = None
        rows = BubbleRows(conn, f"bubbleId:{cid}:")
        replay = Replay(rows) if rows.spilled else None
        for bubble_key in rows.order:
            tally.items += 1
            found = self._bubble(rows, path, bubble_key, tally)
            if found is None:
                continue
            bubble, raw = found
            if first_uri is None and bubble.get("type") == 1 and isinstance(bubble.get("workspaceUris"), list):
                first_uri = next((u for u in bubble["workspaceUris"] if isinstance(u, str)), None)
            record = convert_bubble(bubble, bubble_key, clock, None, False, raw=raw)
            if record is None:
                self.unknown(path, bubble_key, tally, bubble)
                continue
            if replay is not None:
                record = replay.keep(record, bubble_key, None, None, False, None)
            line.add(record, bubble)
        if not line.records:
            return self.account(tally, None, path, key)
        head = self.heads.get(cid) if isinstance(self.heads.get(cid), dict) else {}
        settle_times(line.records, line.requests, iso(head.get("createdAt")) or _mtime(path))
        source = {"app": APP, "path": str(path), "key": key, "version": "rows:none", "deleted": reason == "deleted"}
        session = Session(safe_id("cursor", cid), None, iso(head.get("createdAt")) or line.records[0]["t"], head.get("name") or None,
                          source, {"rawHeader": head} if head else None, line.records if replay is None else replay,
                          status="orphaned", orphan=[reason])
        if replay is not None and session.title is None:
            session.title = replay.title
        session = self.place(session, self.head_workspace.get(cid), first_uri)
        return self.account(tally, session, path, key)

    def _composer(self, conn: sqlite3.Connection, composer: dict, key: str, path: Path) -> Session | None:
        cid = composer["composerId"]
        headers = composer.get("fullConversationHeadersOnly")
        if isinstance(headers, list):
            session = self._split(conn, composer, headers, key, path)
        elif isinstance(composer.get("conversation"), list) and composer["conversation"]:
            session = self._inline(composer, key, path, "inline")
        elif isinstance(composer.get("conversationMap"), dict) and composer["conversationMap"]:
            ordered = sorted((b for b in composer["conversationMap"].values() if isinstance(b, dict)),
                             key=lambda b: str(b.get("createdAt") or ""))
            session = self._inline({**composer, "conversation": ordered}, key, path, "map")
        else:  # no messages listed: any bubble rows left under it are orphans, else it is empty
            session = self._split(conn, composer, [], key, path)
        if session is None:
            return None
        if self.catalog is not None and cid not in self.catalog and not _is_subagent(composer):
            session.status, session.orphan = "orphaned", ["not-indexed"]
        parent = (composer.get("subagentInfo") or {}).get("parentComposerId") if isinstance(composer.get("subagentInfo"), dict) else None
        if isinstance(parent, str):
            session.source["parent"] = safe_id("cursor", parent)
        ident = composer.get("workspaceIdentifier")
        uri = None
        if isinstance(ident, dict):
            uri_obj = ident.get("uri")
            uri = (uri_obj.get("fsPath") or uri_obj.get("external")) if isinstance(uri_obj, dict) else None
            if uri is None and isinstance(ident.get("id"), str):
                self._head_workspace(cid, ident["id"], {"workspaceIdentifier": ident})
        uri = uri or composer.get("workspaceUri") or self._first_workspace_uri(session)
        return self.place(session, self.head_workspace.get(cid), uri if isinstance(uri, str) else None)

    @staticmethod
    def _first_workspace_uri(session: Session) -> str | None:
        """The first user bubble's ``workspaceUris[0]`` (SOURCES §2.4, step 4)."""
        if session.first_uri is not None:
            return session.first_uri
        for record in session.records:
            raw = record.get("raw")
            if record.get("kind") == "user" and isinstance(raw, Raw):
                uris = raw.value().get("workspaceUris")
                if isinstance(uris, list) and uris and isinstance(uris[0], str):
                    return uris[0]
        return None

    def _bubble(self, rows: BubbleRows, path: Path, bubble_key: str, tally: Tally) -> tuple[dict, Raw] | None:
        """One ``bubbleId:`` row, parsed; a NULL, missing or bad row is counted and reported."""
        raw = rows.get(bubble_key)
        if type(raw) is bytes:  # the common row, parsed here (db.decode's parse, two calls fewer); the rest below
            try:
                bubble = orjson.loads(raw)
            except orjson.JSONDecodeError:  # (a lone surrogate, or not JSON: db.decode says which)
                bubble = None
            if type(bubble) is dict:
                return bubble, Raw(raw, bubble)
        if raw is None or raw is _MISSING:
            if raw is None:
                tally.skip("unreadable", bubble_key)
                self.finding("source-unreadable", "error", path, bubble_key, "the value is NULL; skipped")
            else:
                tally.skip("dangling", bubble_key)
                self.finding("missing-bubble", "warning", path, bubble_key, "a header names a bubble with no row (written mid-turn?)")
            return None
        try:
            bubble = db.decode(raw)
        except db.SourceUnreadable as exc:
            tally.skip("unreadable", bubble_key)
            self.finding("source-unreadable", "error", path, bubble_key, f"{exc}; skipped")
            return None
        if not isinstance(bubble, dict):
            tally.skip("unreadable", bubble_key)
            self.finding("source-unreadable", "error", path, bubble_key, "not a JSON object; skipped")
            return None
        return bubble, Raw(raw, bubble)

    def _split(self, conn: sqlite3.Connection, composer: dict, headers: list, key: str, path: Path) -> Session | None:
        cid = composer["composerId"]
        prefix = f"bubbleId:{cid}:"
        created = iso(composer.get("createdAt"))
        clock = Clock(created, self.generations)
        model = model_name((composer.get("modelConfig") or {}).get("modelName") if isinstance(composer.get("modelConfig"), dict) else None)
        ids = composer.get("generatingBubbleIds")
        generating = {b for b in ids if isinstance(b, str)} if isinstance(ids, list) else set()
        busy = composer.get("status") == "generating"
        inline = composer.get("conversationMap") if isinstance(composer.get("conversationMap"), dict) else {}
        tally, line = Tally(), Timeline()
        referenced: set[str] = set()
        first_uri = None
        rows = BubbleRows(conn, prefix)
        replay = Replay(rows) if rows.spilled else None  # a large chat: its records are kept as its rows
        records, requests, seen = line.records, line.requests, referenced.add
        for index, header in enumerate(headers):
            tally.items += 1
            if isinstance(header, dict):
                bid, default_type = header.get("bubbleId"), header.get("type")
            else:
                bid = default_type = None
            if not isinstance(bid, str) or not bid:
                tally.skip("no-bubble-id", f"{key}#header{index}")
                self.finding("missing-bubble", "warning", path, key, f"header {index} has no bubbleId: no record")
                continue
            bubble_key = prefix + bid
            seen(bubble_key)
            raw_row = None
            if inline and isinstance(inline.get(bid), dict):
                bubble = inline[bid]
            else:
                found = self._bubble(rows, path, bubble_key, tally)
                if found is None:
                    continue
                bubble, raw_row = found
            if first_uri is None and bubble.get("type", default_type) == 1 and isinstance(bubble.get("workspaceUris"), list):
                first_uri = next((u for u in bubble["workspaceUris"] if isinstance(u, str)), None)
            partial = busy or bid in generating
            record = convert_bubble(bubble, bubble_key, clock, model, partial, default_type, raw_row)
            if record is None:
                self.unknown(path, bubble_key, tally, bubble, default_type)
                continue
            if replay is not None:
                record = replay.keep(record, bubble_key, bubble if raw_row is None else None, model, partial, default_type)
            records.append(record)  # (Timeline.add, inline: a record and its request time)
            requests.append(request_time(bubble) if record["kind"] != "user" else None)
        # orphans: in the database's write order, each without a time taking its neighbour's
        clock = Clock(next((r["t"] for r in reversed(line.records) if r.get("t")), created), self.generations)
        for bubble_key in rows.order:
            if bubble_key in referenced:
                continue
            tally.items += 1
            found = self._bubble(rows, path, bubble_key, tally)
            if found is None:
                continue
            record = convert_bubble(found[0], bubble_key, clock, model, False, raw=found[1])
            if record is None:
                self.unknown(path, bubble_key, tally, found[0])
                continue
            line.records.append(orphan_event(record) if replay is None else replay.keep(record, bubble_key, None, model, False, None, True))
            line.requests.append(None)
        if not line.records:
            return self.account(tally, None, path, key)
        head = self.heads.get(cid) if isinstance(self.heads.get(cid), dict) else {}
        settle_times(line.records, line.requests, created or iso(composer.get("lastUpdatedAt")) or iso(head.get("createdAt"))
                     or _mtime(path))
        raw = {k: v for k, v in composer.items() if k != "conversation"}
        if cid in self.heads:
            raw = {**raw, "rawHeader": self.heads[cid]}
        version = f"split:{composer.get('_v', 'none')}"
        session = Session(safe_id("cursor", cid), None, created or line.records[0]["t"], composer.get("name") or None,
                          {"app": APP, "path": str(path), "key": key, "version": version}, raw,
                          line.records if replay is None else replay)
        if replay is not None and session.title is None:
            session.title = replay.title  # as the writer names a chat from a list of records
        session.first_uri = first_uri
        _archive(session, composer)
        return self.account(tally, session, path, key)


class _Connected:
    """The global database's connection in this process: the scan's, or one opened as it was
    (:func:`.sqlite.reopen`) by a forked worker, or here again after :meth:`close`.  SQLite's state
    must not cross a fork: the scan's connection is closed before the workers are forked, and
    each opens its own."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.first, self.conn, self.pid = conn, conn, os.getpid()

    def get(self) -> sqlite3.Connection:
        if self.conn is None or os.getpid() != self.pid:
            self.conn, self.pid = db.reopen(self.first), os.getpid()  # (the first's URI and file: open_db's choice)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def _bubble_owners(conn: sqlite3.Connection) -> list[str]:
    """The composer ids that own ``bubbleId:<cid>:*`` rows, in key order: one seek in the key index
    per composer (the first key past the last one's rows), not a read of every bubble's key.  The
    bounds are the keys' own bytes, given as text (a key need not be UTF-8).  A table with no index
    on its keys (never Cursor's) is read key by key."""
    owners: list[str] = []
    if not _key_indexed(conn):
        for key in db.keys(conn, KV, "bubbleId:"):
            cid = key[len("bubbleId:"):].partition(":")[0]
            if not owners or owners[-1] != cid:
                owners.append(cid)
        return owners
    low, high = b"bubbleId:", b"bubbleId;"
    query = f"select key from {KV} where key >= cast(?1 as text) and key < cast(?2 as text) order by key limit 1"
    while (row := conn.execute(query, (low, high)).fetchone()) is not None:
        key = row[0] if isinstance(row[0], bytes) else str(row[0]).encode("utf-8", "surrogateescape")
        cid, colon, _rest = key[len(b"bubbleId:"):].partition(b":")
        name = cid.decode("utf-8", "surrogateescape")
        if not owners or owners[-1] != name:
            owners.append(name)
        # past every key of this owner: "bubbleId:<cid>:..." all sort below "bubbleId:<cid>;"; a key
        # with no colon after the id is stepped past alone
        low = b"bubbleId:" + cid + b";" if colon else key + b"\x00"
    return owners


def _key_indexed(conn: sqlite3.Connection) -> bool:
    for _seq, name, *_rest in conn.execute(f"pragma index_list({KV})").fetchall():
        name = name.decode() if isinstance(name, bytes) else name
        columns = conn.execute("select name from pragma_index_info(?)", (name,)).fetchall()
        if columns and columns[0][0] in (b"key", "key"):
            return True
    return False


def _archive(session: Session, composer: dict) -> None:
    if composer.get("isArchived") is True:
        last = next((r.get("t") for r in reversed(session.records) if r.get("t")), session.created_at)
        session.records.append({"kind": "event", "t": last, "type": "archive", "sourceKey": f"{session.source['key']}#archived"})


def _is_subagent(composer: dict) -> bool:
    return isinstance(composer.get("subagentInfo"), dict) or str(composer.get("composerId", "")).startswith("task-")


def _maybe_json(value: object) -> object:
    if value is None:
        return None
    try:
        return loads(value if isinstance(value, bytes) else str(value).encode())
    except ValueError:
        return None


