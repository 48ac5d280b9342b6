"""Build Cline / Roo Code / Kilo Code storage folders on disk, in the shapes of SOURCES-MORE §4.8."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

T0 = 1787306400123
CLINE_ID = "saoudrizwan.claude-dev"
ROO_ID = "rooveterinaryinc.roo-cline"
KILO_ID = "kilocode.kilo-code"


def compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def write(path: Path, data: bytes | object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else compact(data))
    return path


def api_history(t0: int = T0, cwd: str = "/home/ana/app", with_ts: bool = True) -> list[dict]:
    """Every kind of block a task's API history holds: the task and its environment, text, a
    native tool_use with its tool_result, an XML-tool result as text, thinking, an image, feedback."""
    def ts(n: int) -> dict:
        return {"ts": t0 + n * 1000} if with_ts else {}
    return [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nFix the failing tests\n</task>"},
                                     {"type": "text", "text": f"<environment_details>\n# Current Working Directory ({cwd}) Files\nREADME.md\n</environment_details>"}], **ts(0)},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Run them first.", "signature": "sig"},
                                          {"type": "text", "text": "Running tests."},
                                          {"type": "tool_use", "id": "toolu_01", "name": "execute_command", "input": {"command": "npm test"}}],
         "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
         "metrics": {"tokens": {"prompt": 1200, "completion": 340, "cached": 0}, "cost": 0.0123}, **ts(4)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "1 failing"},
                                     {"type": "text", "text": "<environment_details>\n…\n</environment_details>"}], **ts(6)},
        {"role": "assistant", "content": [{"type": "text", "text": "<read_file>\n<path>src/a.ts</path>\n</read_file>"}], **ts(8)},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'src/a.ts'] Result:"},
                                     {"type": "text", "text": "export const a = 1;\n"}], **ts(9)},
        {"role": "user", "content": [{"type": "text", "text": "<feedback>\nalso check the lint ✓ 🙂\n</feedback>"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}], **ts(12)},
        {"role": "assistant", "content": "Done: tests pass.", **ts(15)},
    ]


def ui_messages(t0: int = T0, roo: bool = False) -> list[dict]:
    first = {"ts": t0 + 77, "type": "say", "say": "text" if roo else "task", "text": "Fix the failing tests"}
    return [
        first,
        {"ts": t0 + 177, "type": "say", "say": "api_req_started", "conversationHistoryIndex": 0,
         "text": json.dumps({"request": "…", "tokensIn": 1200, "tokensOut": 340, "cacheWrites": 0, "cacheReads": 0, "cost": 0.0123})},
        {"ts": t0 + 2000, "type": "say", "say": "reasoning", "text": "Run them first.", "conversationHistoryIndex": 0},
        {"ts": t0 + 4882, "type": "ask", "ask": "command", "text": "npm test", "conversationHistoryIndex": 1},
        {"ts": t0 + 5000, "type": "say", "say": "command_output", "text": "1 failing", "conversationHistoryIndex": 1},
        {"ts": t0 + 5100, "type": "say", "say": "checkpoint_created", "lastCheckpointHash": "abc123", "conversationHistoryIndex": 1},
        {"ts": t0 + 11000, "type": "say", "say": "user_feedback", "text": "also check the lint ✓ 🙂", "images": ["data:image/png;base64,iVBORw0KGgo="]},
        {"ts": t0 + 14000, "type": "say", "say": "error", "text": "rate limited"},
        {"ts": t0 + 15500, "type": "ask", "ask": "completion_result", "text": "Done: tests pass.", "conversationHistoryIndex": 6},
    ]


def metadata(t0: int = T0) -> dict:
    return {"files_in_context": [{"path": "src/a.ts", "record_state": "active", "record_source": "read_tool",
                                  "cline_read_date": t0 + 9000, "cline_edit_date": None}],
            "model_usage": [{"ts": t0 + 4000, "model_id": "claude-sonnet-4-5", "model_provider_id": "anthropic", "mode": "act"}],
            "environment_history": []}


def history_item(tid: str, t0: int = T0, cwd: str = "/home/ana/app", task: str = "Fix the failing tests") -> dict:
    return {"id": tid, "ulid": "01K3ZQ8J6Y2V7S9W4X5T6R7Q8P", "ts": t0 + 60000, "task": task, "tokensIn": 1200, "tokensOut": 340,
            "cacheWrites": 0, "cacheReads": 0, "totalCost": 0.0123, "size": 48213, "cwdOnTaskInitialization": cwd,
            "isFavorited": False, "modelId": "claude-sonnet-4-5"}


def roo_item(tid: str, t0: int = T0, cwd: str = "/home/ana/app", task: str = "Fix the failing tests") -> dict:
    return {"id": tid, "number": 1, "ts": t0 + 60000, "task": task, "tokensIn": 1200, "tokensOut": 340, "totalCost": 0.0123,
            "workspace": cwd, "mode": "code", "status": "completed"}


def task(storage: Path, tid: str, *, t0: int = T0, cwd: str = "/home/ana/app", roo: bool = False, with_ts: bool = True) -> Path:
    folder = storage / "tasks" / tid
    write(folder / "api_conversation_history.json", api_history(t0, cwd, with_ts))
    write(folder / "ui_messages.json", ui_messages(t0, roo))
    write(folder / "task_metadata.json", json.dumps(metadata(t0), indent=2).encode())
    return folder


def cline_storage(root: Path, ids: list[str], *, listed: list[str] | None = None, cwd: str = "/home/ana/app") -> Path:
    """``<root>/Code/User/globalStorage/saoudrizwan.claude-dev`` with ``ids`` as tasks and
    ``listed`` (default: all) in ``state/taskHistory.json``."""
    storage = root / "Code" / "User" / "globalStorage" / CLINE_ID
    for n, tid in enumerate(ids):
        task(storage, tid, t0=T0 + n * 100000, cwd=cwd)
    entries = [history_item(tid, T0 + n * 100000, cwd) for n, tid in enumerate(listed if listed is not None else ids)]
    write(storage / "state" / "taskHistory.json", entries)
    return storage


def roo_storage(root: Path, ids: list[str], *, items: list[str] | None = None, cached: list[str] | None = None,
                cwd: str = "/home/ana/app", name: str = ROO_ID) -> Path:
    storage = root / "Code" / "User" / "globalStorage" / name
    for n, tid in enumerate(ids):
        folder = task(storage, tid, t0=T0 + n * 100000, cwd=cwd, roo=True)
        if items is None or tid in items:
            write(folder / "history_item.json", json.dumps(roo_item(tid, T0 + n * 100000, cwd), indent=2).encode())
    entries = [roo_item(tid, T0, cwd) for tid in (cached or [])]
    write(storage / "tasks" / "_index.json", {"version": 1, "updatedAt": T0 + 70000, "entries": entries})
    return storage


def memento(global_storage: Path, key: str, history: list[dict]) -> Path:
    """The editor's ``state.vscdb`` with ``key`` -> ``{"taskHistory": history}`` (VS Code's Memento row)."""
    path = global_storage / "state.vscdb"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (key, json.dumps({"taskHistory": history})))
    conn.commit()
    conn.close()
    return path


def sdk_session(data: Path, sid: str, *, indexed: bool = True, cwd: str = "/home/ana/app") -> Path:
    """A Cline 4.x session: manifest, messages and (``indexed``) a ``sessions.db`` row."""
    folder = data / "sessions" / sid
    write(folder / f"{sid}.json", {"version": 1, "session_id": sid, "source": "vscode", "pid": 42, "started_at": "2026-08-21T10:00:00.000Z",
                                   "status": "completed", "interactive": True, "provider": "cline", "model": "anthropic/claude-sonnet-4.5",
                                   "cwd": cwd, "workspace_root": cwd, "enable_tools": True, "enable_spawn": False, "enable_teams": False,
                                   "prompt": "fix the tests", "metadata": {"title": "Fix the tests"}})
    write(folder / f"{sid}.messages.json", {
        "version": 1, "updated_at": "2026-08-21T10:01:00.000Z", "agent": "lead", "sessionId": sid,
        "messages": [{"id": "msg_ab12cd34_1", "role": "user", "ts": T0 + 77, "content": [{"type": "text", "text": "fix the tests"}]},
                     {"id": "msg_Zx9Yw8Vu", "role": "assistant", "ts": T0 + 4000,
                      "content": [{"type": "tool_use", "id": "toolu_01", "name": "run_commands", "input": {"commands": ["npm test"]}}],
                      "modelInfo": {"id": "anthropic/claude-sonnet-4.5", "provider": "cline", "family": "claude-sonnet"},
                      "metrics": {"inputTokens": 1200, "outputTokens": 340, "cacheReadTokens": 0, "cacheWriteTokens": 0, "cost": 0.0123}}],
        "system_prompt": "…"})
    db = data / "db" / "sessions.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, source TEXT, started_at TEXT, status TEXT, "
                 "provider TEXT, model TEXT, cwd TEXT, workspace_root TEXT, prompt TEXT, metadata_json TEXT, messages_path TEXT)")
    if indexed:
        conn.execute("INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                     (sid, "vscode", "2026-08-21T10:00:00.000Z", "completed", "cline", "anthropic/claude-sonnet-4.5", cwd, cwd,
                      "fix the tests", '{"title":"Fix the tests"}', str(folder / f"{sid}.messages.json")))
    conn.commit()
    conn.close()
    return folder
