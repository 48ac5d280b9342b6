"""Build VS Code ``User`` folders on disk for the importer tests (real files, real SQLite)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from tests.importers.cursor_db import FIXTURES

VSCODE = FIXTURES / "vscode"
BOM = b"\xef\xbb\xbf"


@pytest.fixture(autouse=True, params=["whole", "by-element"])
def reading(request, monkeypatch) -> str:
    """Every test of a module that imports this runs twice: session files parsed whole and their
    records held, and (as a long session's are) a .json session's requests and a compacted log's
    read one by one, its records in a temporary database."""
    if request.param == "by-element":
        import importlib

        from toolkit.importers import spill

        monkeypatch.setattr(importlib.import_module("toolkit.importers.vscode.scan"), "WHOLE_BYTES", 0)
        monkeypatch.setattr(spill, "RECORD_BYTES_IN_MEMORY", 0)
    return request.param


def request(text: str, ts: int, answer: str | None = None, rid: str | None = None, **extra) -> dict:
    return {"requestId": rid or f"req-{abs(hash((text, ts))) % 10**8}", "timestamp": ts,
            "message": {"text": text, "parts": [{"kind": "text", "text": text}]},
            "response": [{"value": answer if answer is not None else f"answer to {text}"}],
            "result": {"timings": {"totalElapsed": 1500}}, "modelId": "copilot/gpt-4.1", "modelState": {"value": 1}, **extra}


def session(sid: str, texts: list[str], t0: int = 1764460800000, **extra) -> dict:
    return {"version": 3, "sessionId": sid, "creationDate": t0, "initialLocation": "panel", "customTitle": f"chat {sid}",
            "requests": [request(t, t0 + 60000 * n, rid=f"{sid}-r{n}") for n, t in enumerate(texts)], **extra}


def write_index(db_path: Path, entries: dict | None, legacy: list | None = None, raw_index: object = None) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path)
    conn.execute("create table if not exists ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    if raw_index is not None or entries is not None:
        value = raw_index if raw_index is not None else {"version": 1, "entries": entries}
        conn.execute("insert into ItemTable values (?, ?)", ("chat.ChatSessionStore.index", json.dumps(value)))
    if legacy is not None:
        conn.execute("insert into ItemTable values (?, ?)", ("interactive.sessions", json.dumps(legacy)))
    conn.commit()
    conn.close()


def entry(sid: str, title: str = "t", **extra) -> dict:
    return {"sessionId": sid, "title": title, "lastMessageDate": 1764460900000, "initialLocation": "panel", "isEmpty": False, **extra}


def workspace(user: Path, ws_id: str, target: dict | None) -> Path:
    folder = user / "workspaceStorage" / ws_id
    (folder / "chatSessions").mkdir(parents=True)
    if target is not None:
        (folder / "workspace.json").write_text(json.dumps(target))
    return folder


def lines(*objects: dict) -> bytes:
    return b"".join(json.dumps(o, separators=(",", ":")).encode() + b"\n" for o in objects)


def mutation_log(sid: str) -> tuple[bytes, list[str]]:
    """A 40-line mutation log (kinds 0-3) and the user texts it ends with, by construction."""
    t0 = 1764460800000
    out = [{"kind": 0, "v": {"version": 3, "sessionId": sid, "creationDate": t0, "requests": []}}]
    texts = [f"question {n} with \"quotes\", ünïcode 🙂 and a trailing space " for n in range(8)]
    for n in range(6):  # 6 pushes, each followed by streamed response parts
        out.append({"kind": 2, "k": ["requests"], "v": [request(texts[n], t0 + n * 60000, answer="", rid=f"{sid}-r{n}")]})
        out.append({"kind": 2, "k": ["requests", n, "response"], "v": [{"value": f"part A{n} "}], "i": 0})
        out.append({"kind": 2, "k": ["requests", n, "response"], "v": [{"value": f"part B{n}"}]})
        out.append({"kind": 1, "k": ["requests", n, "modelState"], "v": {"value": 1, "completedAt": t0 + n * 60000 + 9000}})
    # 25 lines so far; undo the last two requests (a truncating push), then two new ones
    out.append({"kind": 2, "k": ["requests"], "v": [], "i": 4})
    out.append({"kind": 2, "k": ["requests"], "v": [request(texts[6], t0 + 6 * 60000, rid=f"{sid}-r6")]})
    out.append({"kind": 2, "k": ["requests"], "v": [request(texts[7], t0 + 7 * 60000, rid=f"{sid}-r7")]})
    out.append({"kind": 1, "k": ["requests", 1, "message"], "v": {"text": "an edited second question"}})
    out.append({"kind": 1, "k": ["customTitle"], "v": "Forty mutations"})
    out.append({"kind": 3, "k": ["requests", 0, "modelId"]})
    out.append({"kind": 1, "k": ["requests", 2, "isHidden"], "v": True})
    out.append({"kind": 3, "k": ["requests", 2, "isHidden"]})
    out.append({"kind": 1, "k": ["inputState"], "v": {"text": "unsent draft"}})
    out.append({"kind": 3, "k": ["inputState"]})
    while len(out) < 40:
        out.append({"kind": 1, "k": ["requests", 5, "vote"], "v": len(out)})
    assert len(out) == 40
    final = [texts[0], "an edited second question", texts[2], texts[3], texts[6], texts[7]]
    return lines(*out), final


def build_tree(root: Path) -> dict:
    """The acceptance tree of issue 5; returns what each session must become."""
    user = root / "User"
    projects = root / "projects"
    (projects / "live").mkdir(parents=True)
    expect: dict[str, dict] = {}

    live = workspace(user, "ws-live", {"folder": (projects / "live").as_uri()})
    for sid, texts in (("s-live", ["first live question", "second live question"]), ("s-unindexed", ["asked but not in the index"])):
        (live / "chatSessions" / f"{sid}.json").write_text(json.dumps(session(sid, texts)))
        expect[sid] = {"texts": texts, "status": "live" if sid == "s-live" else "orphaned",
                       "orphan": [] if sid == "s-live" else ["not-indexed"], "project": str(projects / "live")}
    log, final = mutation_log("s-mut")
    (live / "chatSessions" / "s-mut.jsonl").write_bytes(log)
    expect["s-mut"] = {"texts": final, "status": "live", "orphan": [], "project": str(projects / "live")}
    bom = lines({"kind": 0, "v": session("s-bom", ["behind a byte-order mark"])})
    (live / "chatSessions" / "s-bom.jsonl").write_bytes(BOM + bom)
    expect["s-bom"] = {"texts": ["behind a byte-order mark"], "status": "orphaned", "orphan": ["editor-unreadable"], "project": str(projects / "live")}
    torn = lines({"kind": 0, "v": session("s-torn", ["before the crash"])},
                 {"kind": 2, "k": ["requests"], "v": [request("also before the crash", 1764460900000, rid="s-torn-r1")]})
    (live / "chatSessions" / "s-torn.jsonl").write_bytes(torn + b'{"kind":2,"k":["requests"],"v":[{"requestId":"x","message":{"te')
    expect["s-torn"] = {"texts": ["before the crash", "also before the crash"], "status": "live", "orphan": [], "project": str(projects / "live")}
    # no kind 0: the .jsonl only pushes one more request onto its .json sibling
    sibling = session("s-nokind0", ["from the json sibling"])
    (live / "chatSessions" / "s-nokind0.json").write_text(json.dumps(sibling))
    (live / "chatSessions" / "s-nokind0.jsonl").write_bytes(lines(
        {"kind": 2, "k": ["requests"], "v": [request("only in the jsonl", 1764461000000, rid="s-nokind0-r1")]}))
    expect["s-nokind0"] = {"texts": ["from the json sibling", "only in the jsonl"], "status": "orphaned",
                           "orphan": ["editor-unreadable"], "project": str(projects / "live")}
    write_index(live / "state.vscdb", {sid: entry(sid) for sid in ("s-live", "s-mut", "s-bom", "s-torn", "s-nokind0")})

    renamed = workspace(user, "ws-renamed", {"folder": (projects / "old-name").as_uri()})
    (renamed / "chatSessions" / "s-renamed.json").write_text(json.dumps(session("s-renamed", ["asked before the folder was renamed"])))
    write_index(renamed / "state.vscdb", {"s-renamed": entry("s-renamed")})
    expect["s-renamed"] = {"texts": ["asked before the folder was renamed"], "status": "orphaned", "orphan": ["folder-missing"],
                           "project": str(projects / "old-name")}

    untitled_target = user.parent / "User" / "Workspaces" / "1764460800000" / "workspace.json"
    untitled = workspace(user, "ws-untitled", {"workspace": untitled_target.as_uri()})
    (untitled / "chatSessions" / "s-untitled.json").write_text(json.dumps(session("s-untitled", ["in an untitled workspace"])))
    write_index(untitled / "state.vscdb", {"s-untitled": entry("s-untitled")})
    expect["s-untitled"] = {"texts": ["in an untitled workspace"], "status": "orphaned", "orphan": ["folder-missing"],
                            "project": str(untitled_target)}

    remote = workspace(user, "ws-remote", {"folder": "vscode-remote://ssh-remote%2Bbox/home/u/proj"})
    (remote / "chatSessions" / "s-remote.json").write_text(json.dumps(session("s-remote", ["over ssh"])))
    write_index(remote / "state.vscdb", {"s-remote": entry("s-remote")})
    expect["s-remote"] = {"texts": ["over ssh"], "status": "unknown", "orphan": [], "project": "vscode-remote://ssh-remote%2Bbox/home/u/proj"}

    empty = user / "globalStorage" / "emptyWindowChatSessions"
    empty.mkdir(parents=True)
    (empty / "s-empty.json").write_text(json.dumps(session("s-empty", ["no folder open"])))
    write_index(user / "globalStorage" / "state.vscdb", {"s-empty": entry("s-empty")})
    expect["s-empty"] = {"texts": ["no folder open"], "status": "live", "orphan": [], "project": None}
    return {"user": user, "expect": expect}


def wrap_export(name: str, user: Path, project: Path, as_jsonl: bool = False) -> tuple[str, dict]:
    """Wrap a "Chat: Export Chat…" fixture as a v3 session file in a workspace (SOURCES §6)."""
    export = json.loads((VSCODE / name).read_text())
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    requests = export.get("requests") or []
    data = {"version": 3, "sessionId": sid, **({"creationDate": requests[0]["timestamp"]} if requests else {}), **export}
    folder = workspace(user, f"ws-{sid[:8]}", {"folder": project.as_uri()})
    path = folder / "chatSessions" / f"{sid}.{'jsonl' if as_jsonl else 'json'}"
    path.write_bytes(lines({"kind": 0, "v": data}) if as_jsonl else json.dumps(data).encode())
    write_index(folder / "state.vscdb", {sid: entry(sid)})
    return sid, export
