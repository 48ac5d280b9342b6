"""Build Gemini CLI folders for the tests from SOURCES-MORE.md §1.9's shapes, and an independent
reader of §1.5's listing rules (written from the spec, sharing no code with toolkit.layouts.gemini)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = "/home/ana/src/my-app"
SLUG = "my-app"
SID = "1b2c3d4e-5f60-4a71-8b92-a3b4c5d6e7f8"
PROJECT_HASH = hashlib.sha256(ROOT.encode()).hexdigest()
U1, G1, U2, G2 = ("0c9a5e3d-1f2a-4b3c-9d4e-5f6a7b8c9d0e", "7e21aa10-2b3c-4d5e-8f90-a1b2c3d4e5f6",
                  "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-9999-aaaaaaaaaaaa")


def ago(hours: float = 1.0) -> str:
    return (datetime.now(timezone.utc) - timedelta(hours=hours)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def line(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def meta(sid: str = SID, *, hours: float = 1.0, **extra) -> dict:
    return {"sessionId": sid, "projectHash": PROJECT_HASH, "startTime": ago(hours), "lastUpdated": ago(hours), "kind": "main", **extra}


def user(mid: str, text: str, hours: float = 1.0) -> dict:
    return {"id": mid, "timestamp": ago(hours), "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str, hours: float = 1.0, **extra) -> dict:
    return {"id": mid, "timestamp": ago(hours), "type": "gemini", "content": text, "tokens": None, "model": "gemini-2.5-pro", **extra}


TOOL = {"id": "write_file-1", "name": "write_file", "args": {"file_path": ROOT + "/README.md", "content": "# my-app"},
        "status": "success", "timestamp": "2026-08-21T16:16:15.000Z", "displayName": "WriteFile", "description": "Writes a file",
        "result": [{"functionResponse": {"id": "write_file-1", "name": "write_file", "response": {"output": "ok"}}}],
        "renderOutputAsMarkdown": False}


def every_kind(sid: str = SID, hours: float = 1.0) -> bytes:
    """Metadata, user and gemini messages, an update by a repeated id, $set, a rewind, more turns."""
    records = [meta(sid, hours=hours), user(U1, "add a README", hours), {"$set": {"lastUpdated": ago(hours)}},
               gemini(G1, "Sure.", hours, thoughts=[{"subject": "Plan", "description": "write file", "timestamp": ago(hours)}]),
               gemini(G1, "Sure.", hours, toolCalls=[TOOL], tokens={"input": 812, "output": 40, "cached": 0, "thoughts": 12, "tool": 0, "total": 864}),
               {"$rewindTo": G1},
               gemini(G2, "Here is a README.", hours), user(U2, "thanks", hours),
               {"$set": {"lastUpdated": ago(hours), "summary": "README for my-app"}}]
    return b"".join(map(line, records))


def name(sid: str = SID, stamp: str = "2026-08-21T16-16") -> str:
    return f"session-{stamp}-{sid[:8]}.jsonl"


def gemini_home(tmp_path: Path, files: dict[str, bytes] | None = None, settings: dict | None = None) -> Path:
    """``<tmp>/.gemini`` with projects.json, the project's marker, and ``files`` under ``tmp/<slug>/chats``."""
    home = tmp_path / ".gemini"
    chats = home / "tmp" / SLUG / "chats"
    chats.mkdir(parents=True)
    (home / "projects.json").write_text(json.dumps({"projects": {ROOT: SLUG}}, indent=2))
    (home / "tmp" / SLUG / ".project_root").write_text(ROOT)
    if settings is not None:
        (home / "settings.json").write_text(json.dumps(settings))
    for rel, data in (files if files is not None else {name(): every_kind()}).items():
        path = chats / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return home


# --- an independent reader of §1.5 -----------------------------------------------------------

def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return content.get("text") if isinstance(content.get("text"), str) else ""
    if isinstance(content, list):
        return "".join(_text(p) for p in content)
    return ""


def load_like_gemini(path: Path) -> dict | None:
    """loadConversationRecord: each line parsed or skipped; first match wins; whole-file fallback."""
    data = path.read_bytes()
    metadata, messages = {}, {}
    for raw in data.split(b"\n"):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if "$rewindTo" in rec:
            keys = list(messages)
            cut = keys.index(rec["$rewindTo"]) if rec["$rewindTo"] in keys else 0
            messages = {k: messages[k] for k in keys[:cut]}
        elif isinstance(rec.get("id"), str):
            messages[rec["id"]] = rec
        elif isinstance(rec.get("$set"), dict):
            metadata.update(rec["$set"])
            if isinstance(rec["$set"].get("messages"), list):
                messages = {m["id"]: m for m in rec["$set"]["messages"] if isinstance(m, dict) and isinstance(m.get("id"), str)}
        elif isinstance(rec.get("sessionId"), str) and isinstance(rec.get("projectHash"), str):
            metadata.update(rec)
    if isinstance(metadata.get("sessionId"), str) and isinstance(metadata.get("projectHash"), str):
        return {**metadata, "messages": list(messages.values())}
    try:
        whole = json.loads(data)
    except ValueError:
        return None
    return whole if isinstance(whole, dict) and isinstance(whole.get("sessionId"), str) else None


def _resumable(m) -> bool:
    if m.get("type") == "user":
        t = _text(m.get("content")).strip()
        return bool(t) and not t.startswith(("/", "?", "<session_context>", "<hook_context>"))
    return m.get("type") == "gemini" and bool(_text(m.get("content")).strip() or m.get("toolCalls") or m.get("thoughts"))


def gemini_lists(chats: Path) -> list[str]:
    """The session ids `gemini --list-sessions` shows for a chats/ folder, in its order."""
    found = {}
    for path in sorted(chats.iterdir()):
        if not (path.is_file() and path.name.startswith("session-") and path.suffix in (".json", ".jsonl")):
            continue
        record = load_like_gemini(path)
        if (record is None or not record.get("sessionId") or record.get("kind") == "subagent"
                or not any(_resumable(m) for m in record.get("messages") or [] if isinstance(m, dict))):
            continue
        old = found.get(record["sessionId"])
        if old is None or str(record.get("lastUpdated")) > str(old.get("lastUpdated")):
            found[record["sessionId"]] = record
    return [r["sessionId"] for r in sorted(found.values(), key=lambda r: str(r.get("startTime")))]
