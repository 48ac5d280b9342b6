"""Independent readers of the files Claude Code and Codex CLI read back, written from
SOURCES-AGENTS §1.8 and §2.1–2.2 with the standard library only (no levelsess code), so a restore
test compares levelsess's result with what the tool itself would list and resume."""

from __future__ import annotations

import json
from pathlib import Path

CHAIN = {"user", "assistant", "system", "progress", "attachment"}


def records(data: bytes) -> list[dict]:
    """Every line that parses as a JSON object; a line that does not is skipped (Claude Code since
    2.1.121, Codex always: a bad line is skipped, not the end of the history)."""
    out = []
    for line in data.split(b"\n"):
        try:
            value = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


# -- Claude Code (§1.3, §1.8) ---------------------------------------------------------------------


def claude_sessions(root: Path) -> dict[str, Path]:
    """What ``claude --resume`` lists: each ``projects/<folder>/<sessionId>.jsonl`` with a chain record."""
    found = {}
    for path in sorted((root / "projects").glob("*/*.jsonl")):
        if any(r.get("type") in CHAIN for r in records(path.read_bytes())):
            found[path.stem] = path
    return found


def resumed(data: bytes) -> list[str]:
    """The uuids resume shows, oldest first: from the last chain record that is not a sidechain,
    walk ``parentUuid`` back until it is null or names nothing (a compact boundary ends the walk)."""
    chain = [r for r in records(data) if r.get("type") in CHAIN and isinstance(r.get("uuid"), str)]
    by_uuid = {r["uuid"]: r for r in chain}
    main = [r for r in chain if r.get("isSidechain") is not True] or chain
    if not main:
        return []
    path, seen, current = [], set(), main[-1]
    while current is not None and current["uuid"] not in seen:
        seen.add(current["uuid"])
        path.append(current["uuid"])
        parent = current.get("parentUuid")
        current = by_uuid.get(parent) if isinstance(parent, str) else None
    return path[::-1]


def uuids(data: bytes) -> list[str]:
    return [r["uuid"] for r in records(data) if isinstance(r.get("uuid"), str)]


# -- Codex CLI (§2.1, §2.2, §2.8) -----------------------------------------------------------------


def codex_threads(home: Path) -> dict[str, Path]:
    """Every rollout Codex finds: ``sessions/YYYY/MM/DD/rollout-*.jsonl`` and ``archived_sessions/``,
    named by the id of its first ``session_meta``."""
    found = {}
    for path in sorted([*home.glob("sessions/*/*/*/rollout-*.jsonl"), *home.glob("archived_sessions/rollout-*.jsonl")]):
        meta = next((r for r in records(path.read_bytes()) if r.get("type") == "session_meta"), None)
        if meta is not None and isinstance(meta.get("payload"), dict):
            found[meta["payload"].get("id")] = path
    return found


def codex_messages(data: bytes) -> list[tuple[str, str]]:
    """What the UI replays: typed prompts and agent messages (``event_msg``), in file order."""
    out = []
    for record in records(data):
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        if record.get("type") == "event_msg" and payload.get("type") in ("user_message", "agent_message"):
            out.append((payload["type"], payload.get("message")))
    return out


# -- VS Code (SOURCES.md §3.1, §3.3, §3.5) ---------------------------------------------------------


def vscode_index(db: Path) -> dict | None:
    """The ``chat.ChatSessionStore.index`` VS Code keeps: version 1, an entries object, every entry with
    a string sessionId and title and a numeric lastMessageDate; anything else it throws away whole (None)."""
    import sqlite3

    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM ItemTable WHERE key = 'chat.ChatSessionStore.index'").fetchone()
    finally:
        conn.close()
    if row is None:
        return {}
    try:
        value = json.loads(row[0] if isinstance(row[0], str) else bytes(row[0]).decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("version") != 1 or not isinstance(value.get("entries"), dict):
        return None
    for entry in value["entries"].values():
        date = entry.get("lastMessageDate") if isinstance(entry, dict) else None
        if not (isinstance(entry, dict) and isinstance(entry.get("sessionId"), str) and isinstance(entry.get("title"), str)
                and isinstance(date, (int, float)) and not isinstance(date, bool)):
            return None
    return value["entries"]


def vscode_opens(path: Path) -> bool:
    """Whether VS Code's strict reader opens a session file: a ``.json`` object, or a ``.jsonl`` whose
    every non-empty line parses and whose first is a kind-0 entry (no BOM)."""
    data = path.read_bytes()
    try:
        if path.suffix == ".json":
            return isinstance(json.loads(data.decode("utf-8")), dict)
        lines = [json.loads(line.decode("utf-8")) for line in data.split(b"\n") if line]
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(lines) and isinstance(lines[0], dict) and lines[0].get("kind") == 0


def vscode_chats(store: Path, db: Path) -> dict[str, str]:
    """What the Chat view lists for one store (``chatSessions/`` beside ``db``): sessionId -> title of
    every index entry that is not ``isEmpty`` and whose file VS Code opens."""
    entries = vscode_index(db) or {}
    listed = {}
    for sid, entry in entries.items():
        files = [store / f"{sid}.jsonl", store / f"{sid}.json"]
        found = next((f for f in files if f.is_file()), None)
        if entry.get("isEmpty") is not True and found is not None and vscode_opens(found):
            listed[sid] = entry["title"]
    return listed


# -- Cline / Roo Code / Kilo Code (SOURCES-MORE §4.3) -----------------------------------------------


def cline_listed(storage: Path) -> dict[str, str] | None:
    """What Cline's history shows: ``JSON.parse`` of ``state/taskHistory.json`` (None when it throws or
    is no array), each entry with ``item.ts && item.task``, the first of an id (``Array.find``): id -> task."""
    try:
        value = json.loads((storage / "state" / "taskHistory.json").read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, list):
        return None
    shown: dict[str, str] = {}
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("id"), str) and item.get("ts") and isinstance(item.get("task"), str) and item["task"]:
            shown.setdefault(item["id"], item["task"])
    return shown


def roo_listed(storage: Path) -> dict[str, str]:
    """What Roo's reconcile lists: each ``tasks/<id>/`` (not ``_``/``.``) whose ``history_item.json`` parses with an id."""
    shown: dict[str, str] = {}
    tasks = storage / "tasks"
    for folder in sorted(tasks.iterdir()) if tasks.is_dir() else []:
        if not folder.is_dir() or folder.name.startswith(("_", ".")):
            continue
        try:
            item = json.loads((folder / "history_item.json").read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(item, dict) and item.get("id"):
            shown[folder.name] = item.get("task")
    return shown
