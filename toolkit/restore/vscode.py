"""``levelsess restore --app vscode``: make VS Code list every chat it has on disk again
(SOURCES.md §3.1, §3.3–3.5; issue 22 §4).

Per store (each ``workspaceStorage/<id>`` with its ``state.vscdb``, and the empty-window store:
``globalStorage/emptyWindowChatSessions`` indexed in the global ``state.vscdb``):

- the index ``chat.ChatSessionStore.index`` is rebuilt from the session files the store holds:
  every file gets an entry VS Code accepts (string ``sessionId`` and ``title``, numeric
  ``lastMessageDate``); valid entries are kept as they are (their titles too), an invalid one is
  rebuilt (one bad entry makes VS Code drop the whole index), an entry whose file is gone is
  dropped, ``isEmpty: true`` is only left on a session with no request;
- ``--map OLD=NEW``: the session files of a workspace whose folder was OLD are copied into the
  workspace folder VS Code now uses for NEW (found through ``workspace.json``) and indexed there;
  the originals stay.  A file already there with other bytes is never overwritten;
- a ``.jsonl`` mutation log VS Code cannot open (a BOM, no kind-0 first line, a bad line) is
  rewritten as one kind-0 line holding its tolerant replay; the original stays in the backup.

The safety contract is :mod:`.contract` / :mod:`.backups`: nothing is written while a process
holds a file of the plan open to write; every file changed (a database with its ``-wal``,
``-shm`` and ``-journal``) is copied byte-exact into the run's backup folder, listed in its
manifest under ``replaced``, before the first write; the index row is written through sqlite3 in
one transaction, then ``PRAGMA integrity_check``; the result is read back by VS Code's rules and
the run undoes itself when it does not pass.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .. import durable
from ..encode import dumps
from ..errors import FileChangedError, LevelsessError, OperationalError, PathNotFoundError, UsageError
from ..findings import Finding
from ..importers import sqlite as db
from ..importers.uris import apply_map, read_workspace_json, subfolders, uri_to_project
from ..importers.vscode.replay import BOM, Replayed, choose, last_timestamp, load_json, replay_jsonl, request_count
from ..importers.vscode.sources import INDEX_KEY, default_user_dirs
from ..lines import loads
from ..live import snapshot, writers_of
from .contract import file_digest, missing_dirs
from .steps import AppResult

APP = "vscode"
SIDECARS = ("-wal", "-shm", "-journal")  # a database is these files with it: backed up and undone together
TITLE_CHARS = 200  # VS Code's default title: the first line of the first request, this long at most


# -- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexChange:
    """One store's index row: what it holds (raw bytes; None: no row) and what it will hold."""

    db: Path
    folder: Path  # the session files it indexes
    before: bytes | None
    after: dict
    added: tuple[str, ...]
    dropped: tuple[str, ...]
    fixed: tuple[str, ...]  # entries rebuilt (invalid) or corrected (isEmpty, sessionId)
    kept: int

    def to_json(self) -> dict:
        return {"db": str(self.db), "key": INDEX_KEY, "folder": str(self.folder), "row": "change" if self.before is not None else "insert",
                "added": list(self.added), "dropped": list(self.dropped), "fixed": list(self.fixed), "kept": self.kept,
                "entries": len(self.after["entries"])}


@dataclass(frozen=True)
class CopyFile:
    """A session file of an orphaned workspace, copied into the workspace VS Code now uses."""

    source: Path
    target: Path
    data: bytes = field(repr=False)
    sha256: str = ""
    repaired: bool = False  # the copy is the repaired log, not the source's bytes

    def to_json(self) -> dict:
        return {"from": str(self.source), "path": str(self.target), "action": "create", "bytes": len(self.data),
                "sha256": self.sha256, "repaired": self.repaired}


@dataclass(frozen=True)
class LogRepair:
    """A ``.jsonl`` VS Code cannot open, rewritten as one kind-0 line of its tolerant replay."""

    path: Path
    size: int
    sha256: str
    data: bytes = field(repr=False)
    why: str = ""

    def to_json(self) -> dict:
        return {"path": str(self.path), "action": "rewrite", "before": {"size": self.size, "sha256": self.sha256},
                "bytes": len(self.data), "reason": self.why}


@dataclass
class VscodePlan:
    user: Path
    indexes: list[IndexChange] = field(default_factory=list)
    copies: list[CopyFile] = field(default_factory=list)
    repairs: list[LogRepair] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    stores: int = 0  # stores read
    sessions: int = 0  # session files seen

    @property
    def writes(self) -> bool:
        return bool(self.indexes or self.copies or self.repairs)

    @property
    def exit_code(self) -> int:
        return 4 if self.writes or self.findings else 0

    def files(self) -> list[Path]:
        """Every file the plan changes or creates (a database stands for its sidecars too)."""
        return [c.db for c in self.indexes] + [r.path for r in self.repairs] + [c.target for c in self.copies]

    def to_json(self) -> dict:
        return {"user": str(self.user), "stores": self.stores, "sessions": self.sessions,
                "indexes": [c.to_json() for c in self.indexes], "copies": [c.to_json() for c in self.copies],
                "repairs": [r.to_json() for r in self.repairs]}


class VscodeResult(AppResult):
    app = APP


# -- reading a store -----------------------------------------------------------------------------


@dataclass
class Session:
    """One session's files (``.json``/``.jsonl`` by suffix) and what they hold."""

    stem: str
    paths: dict[str, Path]
    state: dict | None = None
    log: Replayed | None = None
    mtime_ms: float = 0.0
    problem: str | None = None


def read_session(stem: str, paths: dict[str, Path]) -> Session:
    """The session VS Code would show for these files (the tolerant replay; SOURCES §3.3)."""
    found = Session(stem, dict(paths))
    json_state = None
    try:
        if ".json" in paths:
            json_state = load_json(paths[".json"].read_bytes())
    except (db.SourceUnreadable, OSError) as exc:
        found.problem = f"{paths['.json']}: {exc}"
    if ".jsonl" in paths:
        try:
            found.log = replay_jsonl(paths[".jsonl"].read_bytes(), fallback=json_state)
        except OSError as exc:
            found.problem = f"{paths['.jsonl']}: cannot read ({exc.strerror or exc})"
        if found.log is not None and found.log.mutations == 0 and json_state is None:
            found.problem, found.log = f"{paths['.jsonl']}: holds no entry VS Code could replay", None
    if json_state is None and found.log is None:
        return found
    _shape, found.state, _note = choose(json_state, found.log)
    newest = max(paths.values(), key=lambda p: p.stat().st_mtime if p.exists() else 0)
    found.mtime_ms = newest.stat().st_mtime * 1000 if newest.exists() else 0.0
    return found


def session_files(folder: Path) -> dict[str, dict[str, Path]]:
    """``{stem: {".json"|".jsonl": path}}`` of the session files in ``folder`` (VS Code names each by its sessionId)."""
    files: dict[str, dict[str, Path]] = {}
    try:
        names = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError as exc:
        raise OperationalError(f"cannot list {folder}: {exc.strerror or exc}") from exc
    for path in names:
        if path.suffix in (".json", ".jsonl") and path.is_file() and not path.name.startswith("."):
            files.setdefault(path.stem, {})[path.suffix] = path
    return files


def read_index(path: Path) -> bytes | None:
    """The raw value of the index row in the database ``path`` (None: no row), read without writing."""
    with db.open_db(path) as conn:
        if "ItemTable" not in db.tables(conn):
            raise OperationalError(f"{path} has no ItemTable: not a VS Code state database")
        return db.raw_value(conn, "ItemTable", INDEX_KEY) if db.has_key(conn, "ItemTable", INDEX_KEY) else None


def valid_entry(entry: object) -> bool:
    """VS Code's own test of one index entry (SOURCES §3.5)."""
    date = entry.get("lastMessageDate") if isinstance(entry, dict) else None
    return (isinstance(entry, dict) and isinstance(entry.get("sessionId"), str) and isinstance(entry.get("title"), str)
            and isinstance(date, (int, float)) and not isinstance(date, bool))


def _parsed(raw: bytes | None) -> dict | None:
    """The index value when VS Code would use it (version 1, an entries object), else None."""
    try:
        value = loads(raw) if raw is not None else None
    except ValueError:
        return None
    if isinstance(value, dict) and value.get("version") == 1 and isinstance(value.get("entries"), dict):
        return value
    return None


# -- the index entries ---------------------------------------------------------------------------


def default_title(state: dict) -> str:
    """``customTitle`` / ``computedTitle``, else the first line of the first request (as VS Code names a chat)."""
    for key in ("customTitle", "computedTitle"):
        if isinstance(state.get(key), str) and state[key].strip():
            return state[key]
    for request in state.get("requests") or []:
        message = request.get("message") if isinstance(request, dict) else None
        text = message.get("text") if isinstance(message, dict) else message
        if isinstance(text, str) and text.strip():
            return text.strip().split("\n", 1)[0][:TITLE_CHARS]
    return "New Chat"


def _response_state(state: dict) -> int:
    """The last request's ``ResponseModelState``: 0 pending, 1 complete, 2 cancelled, 3 failed."""
    requests = [r for r in state.get("requests") or [] if isinstance(r, dict)]
    if not requests:
        return 1
    last = requests[-1]
    model = last.get("modelState")
    if isinstance(model, dict) and isinstance(model.get("value"), int) and not isinstance(model.get("value"), bool):
        return model["value"]
    result = last.get("result") if isinstance(last.get("result"), dict) else {}
    return 2 if last.get("isCanceled") else 3 if result.get("errorDetails") else 1


def new_entry(session: Session, old: object = None) -> dict:
    """A valid entry for ``session``; what an invalid old entry held that VS Code accepts (a title) is kept."""
    state = session.state or {}
    created = state.get("creationDate")
    stamps = [r.get("timestamp") for r in state.get("requests") or [] if isinstance(r, dict)]
    stamps = [s for s in stamps if isinstance(s, (int, float)) and not isinstance(s, bool)]
    created = created if isinstance(created, (int, float)) and not isinstance(created, bool) else (min(stamps) if stamps else None)
    last = last_timestamp(state)
    date = last if last is not None else created if created is not None else int(session.mtime_ms)
    old = old if isinstance(old, dict) else {}
    title = old.get("title") if isinstance(old.get("title"), str) and old["title"].strip() else default_title(state)
    location = state.get("initialLocation") if isinstance(state.get("initialLocation"), str) else "panel"
    return {**old, "sessionId": session.stem, "title": title, "lastMessageDate": date,
            "timing": {"startTime": created if created is not None else date, "endTime": date},
            "initialLocation": location, "isEmpty": request_count(state) == 0, "lastResponseState": _response_state(state)}


def rebuild(raw: bytes | None, sessions: dict[str, Session], carried: dict | None = None) -> tuple[dict, list[str], list[str], list[str], int]:
    """The index VS Code should hold for ``sessions``: (index, added, dropped, fixed, kept).  ``carried``:
    the entries the sessions copied in had in their old store (their titles come with them)."""
    current = _parsed(raw)
    old = dict(current["entries"]) if current is not None else _salvage(raw)
    entries: dict = {}
    added, dropped, fixed, kept = [], [], [], 0
    for key, entry in old.items():
        session = sessions.get(key)
        if session is None:
            dropped.append(key)
            continue
        if session.state is None:  # a file VS Code cannot read either: its entry, if valid, stays as it was
            if valid_entry(entry):
                entries[key], kept = entry, kept + 1
            continue
        if valid_entry(entry) and entry["sessionId"] == key and not (entry.get("isEmpty") is True and request_count(session.state)):
            entries[key], kept = entry, kept + 1
        else:
            entries[key] = new_entry(session, entry)
            fixed.append(key)
    for stem, session in sessions.items():
        if stem not in entries and session.state is not None:
            was = (carried or {}).get(stem)
            usable = valid_entry(was) and was["sessionId"] == stem and not (was.get("isEmpty") is True and request_count(session.state))
            entries[stem] = was if usable else new_entry(session, was)
            added.append(stem)
    index = {**(current or {}), "version": 1, "entries": entries}
    return index, added, dropped, fixed, kept


def _salvage(raw: bytes | None) -> dict:
    """The entries of an index VS Code would discard whole (its titles are worth keeping)."""
    try:
        value = loads(raw) if raw is not None else None
    except ValueError:
        return {}
    entries = value.get("entries") if isinstance(value, dict) else None
    return dict(entries) if isinstance(entries, dict) else {}


# -- planning ------------------------------------------------------------------------------------


@dataclass
class Store:
    """A folder of session files and the database holding its index."""

    folder: Path  # chatSessions/ or emptyWindowChatSessions/
    db: Path
    workspace: Path | None  # workspaceStorage/<id> (None: the empty-window store)
    project: str | None = None
    incoming: dict[str, dict[str, Path]] = field(default_factory=dict)  # stems copied in by --map: {suffix: source}
    carried: dict[str, dict] = field(default_factory=dict)  # their entries in the old store's index


def user_dir(source: Path | None) -> Path:
    """The VS Code ``User`` folder to restore in: ``--source``, else the one on this machine."""
    if source is not None:
        user = Path(os.path.abspath(Path(source).expanduser()))
        if not user.is_dir():
            raise PathNotFoundError(str(user))
        if not ((user / "workspaceStorage").is_dir() or (user / "globalStorage").is_dir()):
            raise UsageError(f"{user} is not a VS Code User folder (it holds no workspaceStorage/ or globalStorage/)",
                             hint="point --source at e.g. ~/.config/Code/User")
        return user
    found = [p for p in default_user_dirs() if (p / "workspaceStorage").is_dir()]
    if len(found) != 1:
        listed = ", ".join(map(str, found)) or "none"
        raise UsageError(f"restore --app vscode needs one VS Code User folder; found {listed}",
                         hint="give it with --source, e.g. --source ~/.config/Code/User")
    return found[0]


def _project(workspace: Path) -> str | None:
    uri = read_workspace_json(workspace)
    if uri is None:
        return None
    project, local = uri_to_project(uri)
    return project.rstrip("/\\") or project if local else project


def _stores(user: Path) -> tuple[list[Store], list[Finding]]:
    stores, findings = [], []
    for workspace in subfolders(user / "workspaceStorage"):
        folder, dbfile = workspace / "chatSessions", workspace / "state.vscdb"
        store = Store(folder, dbfile, workspace, _project(workspace))
        if dbfile.is_file():
            stores.append(store)
        elif folder.is_dir() and any(session_files(folder)):
            findings.append(Finding("restore-no-index", "warning", str(workspace), None, None,
                                    f"{workspace} holds chat sessions but no state.vscdb: open its folder once in VS Code, close it, then run restore again"))
    global_db = user / "globalStorage" / "state.vscdb"
    if global_db.is_file():
        stores.append(Store(user / "globalStorage" / "emptyWindowChatSessions", global_db, None))
    return stores, findings


def parse_map(items: list[str]) -> list[tuple[str, str]]:
    mapping = []
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"--map {item}: expected OLD=NEW")
        mapping.append((os.path.abspath(os.path.expanduser(old)), os.path.abspath(os.path.expanduser(new))))
    return mapping


def plan_vscode(source: Path | None = None, mapping: list[tuple[str, str]] = ()) -> VscodePlan:
    """What restoring VS Code's chat lists under ``source`` (a ``User`` folder) would write; reads only."""
    user = user_dir(source)
    stores, findings = _stores(user)
    plan = VscodePlan(user, findings=findings, stores=len(stores))
    if mapping:
        _plan_map(plan, stores, list(mapping))
    for store in stores:
        if store.workspace is not None and store.project and _missing(store.project) and not store.incoming:
            continue  # an orphan: VS Code never opens this store again; --map brings its chats to the folder's new place
        try:
            _plan_store(plan, store)
        except (LevelsessError, sqlite3.DatabaseError, OSError) as exc:
            plan.findings.append(Finding("unreadable", "error", str(store.db), None, None, f"cannot read its index: {exc}; left as it is"))
    for store in stores:  # folder-missing orphans nobody mapped: say what would bring them back
        if store.workspace is not None and store.project and _missing(store.project) and not _mapped(store.project, mapping) \
                and session_files(store.folder):
            plan.findings.append(Finding("folder-missing", "warning", str(store.workspace), None, None,
                                         f"{len(session_files(store.folder))} chat(s) of {store.project}, a folder that is gone; "
                                         f"if it was renamed or moved: restore --app vscode --map {store.project}=NEW_PATH"))
    plan.findings += holders(plan)
    return plan


def _missing(project: str) -> bool:
    return os.path.isabs(project) and not os.path.exists(project)


def _mapped(project: str, mapping) -> bool:
    return bool(mapping) and apply_map(project, list(mapping)) != project


def _plan_map(plan: VscodePlan, stores: list[Store], mapping: list[tuple[str, str]]) -> None:
    """Each store whose folder an OLD names: its session files go to the store VS Code uses for NEW."""
    by_project: dict[str, list[Store]] = {}
    for store in stores:
        if store.workspace is not None and store.project:
            by_project.setdefault(store.project, []).append(store)
    for store in stores:
        if store.workspace is None or not store.project or not _mapped(store.project, mapping):
            continue
        new = apply_map(store.project, mapping)
        files = session_files(store.folder)
        if not files:
            continue
        targets = [t for t in by_project.get(new.rstrip("/\\") or new, []) if t is not store]
        if not targets:
            plan.findings.append(Finding("restore-target-missing", "warning", str(store.workspace), None, None,
                                         f"VS Code has not opened {new} yet, so it has no workspace folder to put the {len(files)} chat(s) "
                                         f"of {store.project} in: open {new} once in VS Code, close it, then run restore again"))
            continue
        target = max(targets, key=lambda t: t.db.stat().st_mtime)  # the one VS Code used last
        try:
            old = _parsed(read_index(store.db)) or {"entries": _salvage(read_index(store.db))}
        except (LevelsessError, sqlite3.DatabaseError, OSError):
            old = {"entries": {}}
        for stem, paths in files.items():
            target.incoming.setdefault(stem, {}).update(paths)
            if isinstance(old["entries"].get(stem), dict):
                target.carried.setdefault(stem, old["entries"][stem])


def _plan_store(plan: VscodePlan, store: Store) -> None:
    own = session_files(store.folder)
    sessions: dict[str, Session] = {}
    for stem, paths in own.items():
        sessions[stem] = read_session(stem, paths)
    for stem, paths in store.incoming.items():
        _plan_copies(plan, store, stem, paths, own.get(stem, {}), sessions)
    for stem, session in sessions.items():
        plan.sessions += 1
        if session.problem and session.state is None:
            plan.findings.append(Finding("source-unreadable", "warning", str(next(iter(session.paths.values()))), None, None,
                                         f"{session.problem}; VS Code cannot open it either, so it gets no index entry"))
        elif stem in own and session.log is not None and session.log.editor_unreadable and ".jsonl" in own[stem]:
            repair = _repair(own[stem][".jsonl"], session)
            if repair is not None:
                plan.repairs.append(repair)
    raw = read_index(store.db)
    index, added, dropped, fixed, kept = rebuild(raw, sessions, store.carried)
    if (raw is not None or index["entries"]) and _parsed(raw) != index:
        plan.indexes.append(IndexChange(store.db, store.folder, raw, index, tuple(added), tuple(dropped), tuple(fixed), kept))


def _plan_copies(plan: VscodePlan, store: Store, stem: str, paths: dict[str, Path], own: dict[str, Path],
                 sessions: dict[str, Session]) -> None:
    """Copy one orphaned session's files into ``store`` (a log VS Code cannot open goes in repaired)."""
    incoming = read_session(stem, paths)
    repaired = _repair(paths[".jsonl"], incoming) if ".jsonl" in paths and incoming.log is not None \
        and incoming.log.editor_unreadable else None
    planned = {suffix: repaired.data if suffix == ".jsonl" and repaired is not None else source.read_bytes()
               for suffix, source in paths.items()}
    conflict = [store.folder / paths[s].name for s, data in planned.items() if _differs(store.folder / paths[s].name, data)]
    if conflict:
        plan.findings.append(Finding("restore-conflict", "error", str(conflict[0]), None, None,
                                     f"{conflict[0]} already holds other bytes than {paths[min(paths)]}; restore never "
                                     "overwrites a session file: this session is left as it is"))
        return
    copies = [CopyFile(source, store.folder / source.name, planned[suffix], _sha(planned[suffix]),
                       repaired is not None and suffix == ".jsonl")
              for suffix, source in sorted(paths.items()) if not (store.folder / source.name).exists()]
    plan.copies += copies
    if stem not in sessions:
        incoming.paths = {c.target.suffix: c.target for c in copies} or dict(own)
        sessions[stem] = incoming


def _repair(path: Path, session: Session) -> LogRepair | None:
    """One kind-0 line holding the tolerant replay of a log VS Code refuses ("Malformed session data")."""
    log = session.log
    data = path.read_bytes()
    state = dict(log.state)
    state.setdefault("version", 3)
    state.setdefault("sessionId", session.stem)
    if not isinstance(state.get("creationDate"), (int, float)):
        stamps = [r["timestamp"] for r in state.get("requests") or [] if isinstance(r, dict) and isinstance(r.get("timestamp"), (int, float))]
        state["creationDate"] = min(stamps) if stamps else int(session.mtime_ms)
    fixed = b'{"kind":0,"v":' + dumps(state) + b"}\n"
    if fixed == data:
        return None
    why = [w for w, on in (("a byte-order mark", data.startswith(BOM) or bool(log.bom)),
                           ("no kind-0 first line", not _kind0_first(data)),
                           (f"{len(log.problems)} line(s) VS Code cannot apply", bool(log.problems))) if on]
    return LogRepair(path, len(data), _sha(data), fixed, "VS Code cannot open it (" + ", ".join(why or ["malformed"]) + ")")


def _differs(target: Path, data: bytes) -> bool:
    """Whether ``target`` is there holding something other than ``data`` (a symlink or folder always differs)."""
    if not os.path.lexists(target):
        return False
    return target.is_symlink() or not target.is_file() or target.read_bytes() != data


def _kind0_first(data: bytes) -> bool:
    first = next((line for line in data.split(b"\n") if line.strip()), b"").removeprefix(BOM)
    try:
        value = loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("kind") == 0


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def group(dbfile: Path) -> list[Path]:
    """A database's files: itself and its sidecars."""
    return [dbfile] + [dbfile.with_name(dbfile.name + s) for s in SIDECARS]


def holders(plan: VscodePlan) -> list[Finding]:
    """A finding per file of the plan a process holds open to write (VS Code running on it)."""
    found = []
    snapshot(fresh=True)  # one walk of the processes' open files for the whole plan (it stays good a moment)
    for path in [p for c in plan.indexes for p in group(c.db)] + [r.path for r in plan.repairs]:
        who = writers_of(path)
        if who is not None:
            found.append(Finding("in-use", "error", str(path), None, None,
                                 f"VS Code is running on it ({who}): nothing written; close every VS Code window and run restore again"))
    return found


# -- applying ------------------------------------------------------------------------------------


def restore_vscode(plan: VscodePlan, *, apply: bool) -> VscodeResult:
    """Apply the plan (``apply``), or return it with nothing written."""
    findings = tuple(plan.findings)
    if not apply:
        return VscodeResult(plan, False, findings, plan.exit_code)
    if not plan.writes or any(f.code == "in-use" for f in findings):  # one VS Code holds them all: the whole run waits
        return VscodeResult(plan, True, findings, 4 if findings else 0)
    from . import backups

    with durable.confined(durable.Confinement.of((plan.user,), (backups.restore_root(),))):
        return _apply(plan, backups)


def _apply(plan: VscodePlan, backups) -> VscodeResult:
    findings = list(plan.findings)
    run = _start(plan, backups)
    held = holders(plan)  # checked again now that the backup is made, right before the first write
    if held:
        backups.undo(run.stamp)
        return VscodeResult(plan, True, tuple(findings + held), 4, run.stamp, run.folder, undone=True)
    try:
        for copy in plan.copies:
            durable.ensure_dir(copy.target.parent)
            with durable.atomic_writer(copy.target, exclusive=True) as out:
                out.write(copy.data)
        for n, repair in enumerate(plan.repairs):
            _rewrite(repair)
            _record(run, f"log{n}", [repair.path])
        for n, change in enumerate(plan.indexes):
            try:
                _write_index(change)
            finally:
                _record(run, f"db{n}", group(change.db))
    except (LevelsessError, sqlite3.DatabaseError, OSError) as exc:
        undone = backups.undo(run.stamp)
        problem = Finding("restore-failed", "error", str(plan.user), None, None, f"a write failed ({exc}); the whole restore was undone")
        return VscodeResult(plan, True, tuple(findings + [problem] + list(undone.findings)), 8, run.stamp, run.folder, undone=True)
    problems = verify(plan)
    if problems:
        undone = backups.undo(run.stamp)
        return VscodeResult(plan, True, tuple(findings + problems + list(undone.findings)), 8, run.stamp, run.folder, undone=True)
    run.mark("applied", written=[str(p) for p in plan.files()])
    return VscodeResult(plan, True, tuple(findings), 4 if findings else 0, run.stamp, run.folder)


def _start(plan: VscodePlan, backups):
    """The run's folder: a byte-exact copy of every file it changes, and the manifest, before the first write."""
    stamp, folder = backups._new_folder()
    try:
        replaced, n = [], 0
        for key, paths in [(f"log{i}", [r.path]) for i, r in enumerate(plan.repairs)] + \
                          [(f"db{i}", group(c.db)) for i, c in enumerate(plan.indexes)]:
            files = []
            for path in paths:
                n += 1
                if not path.exists():
                    files.append({"path": str(path), "backup": None, "before": None, "after": None})
                    continue
                size, digest = file_digest(path)
                backup = Path("backup") / f"{n}-{path.name}"
                backups._copy(path, folder / backup, size, digest)
                files.append({"path": str(path), "backup": str(backup), "before": {"size": size, "sha256": digest}, "after": None,
                              "mode": stat.S_IMODE(os.stat(path).st_mode)})  # undo puts the bits back with the bytes
            replaced.append({"key": key, "files": files})
        for repair in plan.repairs:
            if file_digest(repair.path) != (repair.size, repair.sha256):
                raise FileChangedError(f"{repair.path} changed since restore planned; nothing was written")
        dirs: list[str] = []
        for copy in plan.copies:
            dirs += [str(d) for d in missing_dirs(copy.target.parent) if str(d) not in dirs]
        created = [{"path": str(c.target), "layout": None, "size": len(c.data), "sha256": c.sha256,
                    "temp": str(durable.temp_name(c.target)), "session": c.target.stem} for c in plan.copies]
        run = backups.Run(stamp, folder, {"version": 1, "stamp": stamp, "state": "planned", "app": APP,
                                          "sessions": [{"id": f"vscode:{plan.user}", "app": APP, "next": None}],
                                          "created": created, "changed": [], "replaced": replaced, "dirs": dirs})
        run.save()
        return run
    except BaseException:
        durable.remove(folder, tree=True)
        raise


def _record(run, key: str, paths: list[Path]) -> None:
    """Write what a replaced group holds after the write, so undo knows the bytes are restore's."""
    entry = next(e for e in run.manifest["replaced"] if e["key"] == key)
    for item, path in zip(entry["files"], paths):
        item["after"] = dict(zip(("size", "sha256"), file_digest(path))) if path.exists() else None
        item["written"] = True
    run.save()


def _rewrite(repair: LogRepair) -> None:
    def unchanged(_temp: Path) -> None:
        if file_digest(repair.path) != (repair.size, repair.sha256):
            raise FileChangedError(f"{repair.path} changed since restore planned; left as it is")

    with durable.atomic_writer(repair.path, before_replace=unchanged, mode=os.stat(repair.path).st_mode) as out:
        out.write(repair.data)


def _write_index(change: IndexChange) -> None:
    """Write the index row in one transaction, only while it still holds what the plan read; then integrity_check."""
    value = dumps(change.after).decode("utf-8")
    conn = sqlite3.connect(change.db.resolve().as_uri(), uri=True, timeout=2, isolation_level=None)
    try:
        conn.text_factory = bytes
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (INDEX_KEY,)).fetchone()
        now = None if row is None else row[0] if isinstance(row[0], bytes) or row[0] is None else str(row[0]).encode()
        if now != change.before:
            conn.execute("ROLLBACK")
            raise FileChangedError(f"{change.db}: the chat index changed since restore planned (VS Code ran?); nothing written")
        conn.execute("INSERT OR REPLACE INTO ItemTable (key, value) VALUES (?, ?)", (INDEX_KEY, value))
        conn.execute("COMMIT")
        check = conn.execute("PRAGMA integrity_check").fetchall()
        if [r[0] for r in check] not in ([b"ok"], ["ok"]):
            raise OperationalError(f"{change.db}: PRAGMA integrity_check after the write: {check[:3]}")
    finally:
        conn.close()


def verify(plan: VscodePlan) -> list[Finding]:
    """Read the result back by VS Code's rules: each rebuilt index is one VS Code keeps (version 1, every
    entry valid) and names every session file of its store; each copy and repaired log holds its bytes."""
    problems = []
    for change in plan.indexes:
        index = _parsed(read_index(change.db))
        entries = index["entries"] if index else {}
        bad = [k for k, e in entries.items() if not valid_entry(e)]
        stems = set(session_files(change.folder))
        missing = sorted(s for s in stems if s not in entries and s in change.after["entries"])
        if index is None or bad or missing or entries != change.after["entries"]:
            problems.append(Finding("restore-verify-failed", "error", str(change.db), None, None,
                                    f"the index read back is not the one written (VS Code would "
                                    f"{'discard it' if index is None or bad else 'miss ' + ', '.join(missing[:3])}); the whole restore was undone"))
    for path, data in [(c.target, c.data) for c in plan.copies] + [(r.path, r.data) for r in plan.repairs]:
        if file_digest(path) != (len(data), _sha(data)) or (path.suffix == ".jsonl" and replay_jsonl(data).editor_unreadable):
            problems.append(Finding("restore-verify-failed", "error", str(path), None, None,
                                    "does not read back as written; the whole restore was undone"))
    return problems


NEXT = "restart VS Code: every chat is in its Chat view's history again (close every VS Code window first if it was running)"


def run_app(source: Path | None, maps: list[str], *, apply: bool) -> VscodeResult:
    """``restore --app vscode [--source USER_DIR] [--map OLD=NEW]``: plan, and apply when ``apply``."""
    return restore_vscode(plan_vscode(source, parse_map(maps)), apply=apply)


def summary(result: VscodeResult) -> str:
    plan = result.plan
    verb = "rebuilt" if result.applied and result.stamp and not result.undone else "would rebuild"
    if result.undone:
        lead = "restore undone"
    else:
        lead = (f"{verb} {len(plan.indexes)} chat index(es) ({sum(len(c.added) for c in plan.indexes)} entries added, "
                f"{sum(len(c.dropped) for c in plan.indexes)} dropped, {sum(len(c.fixed) for c in plan.indexes)} fixed), "
                f"{'copied' if verb == 'rebuilt' else 'would copy'} {len(plan.copies)} session file(s), "
                f"{'repaired' if verb == 'rebuilt' else 'would repair'} {len(plan.repairs)} log(s)")
    return f"{lead}; {plan.sessions} session file(s) in {plan.stores} store(s)  [exit {result.exit_code}]"


def rows(result: VscodeResult) -> list[tuple[str, str, str]]:
    """(file, action, detail) for every file and row the plan names."""
    out = []
    for change in result.plan.indexes:
        what = "insert row" if change.before is None else "change row"
        out.append((f"{change.db}#{INDEX_KEY}", what, f"{len(change.after['entries'])} entries: +{len(change.added)} "
                    f"-{len(change.dropped)} ~{len(change.fixed)} ={change.kept}"))
    for copy in result.plan.copies:
        out.append((str(copy.target), "create", f"copy of {copy.source}" + (" (repaired)" if copy.repaired else "")))
    for repair in result.plan.repairs:
        out.append((str(repair.path), "rewrite", repair.why))
    return out

