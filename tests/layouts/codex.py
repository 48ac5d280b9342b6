"""Helpers for the Codex CLI tests: the real fixture rollouts, copied into a test's own Codex home,
and a plain-json model of a rollout's lines (written from SOURCES-AGENTS §2, not from levelsess)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "codex"
if not FIXTURES.is_dir():  # a worktree elsewhere: the team machine's shared/, as tests/importers/cursor_db.py
    FIXTURES = Path("/work/shared/fixtures/codex")
SMALL = "archived_sessions/rollout-2026-03-31T21-32-15-019d4719-5460-7b10-bdb3-4728ca6f3192.jsonl"
SUBAGENT = "sessions/2026/04/10/rollout-2026-04-10T09-55-11-019d781a-be34-7041-abb1-577f9360b907.jsonl"
BIG = "archived_sessions/rollout-2026-03-23T19-51-32-019d1d8a-4053-7f93-b610-7061e9b7a152.jsonl"


def have_fixtures() -> bool:
    return FIXTURES.is_dir()


def rollouts() -> list[str]:
    return sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("rollout-*.jsonl")) if have_fixtures() else []


def codex_home(tmp_path: Path) -> Path:
    """A writable copy of the fixture Codex home at ``tmp_path/.codex`` (the fixtures stay read-only)."""
    home = tmp_path / ".codex"
    shutil.copytree(FIXTURES, home)
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return home


def lines_of(data: bytes) -> list[bytes]:
    """The terminated lines of ``data`` (split on LF only, as SOURCES-AGENTS §0 says)."""
    return data.split(b"\n")[:-1]


def envelope(timestamp: str, kind: str, payload: dict) -> bytes:
    return json.dumps({"timestamp": timestamp, "type": kind, "payload": payload}, ensure_ascii=False,
                      separators=(",", ":")).encode()


def new_turn(timestamp: str, prompt: str, answer: str) -> list[bytes]:
    """One more turn as Codex writes it: the prompt twice, the answer twice, bookkeeping around."""
    return [envelope(timestamp, "event_msg", {"type": "task_started", "turn_id": "t-new"}),
            envelope(timestamp, "turn_context", {"turn_id": "t-new", "cwd": "/p", "model": "gpt-test"}),
            envelope(timestamp, "response_item", {"type": "message", "role": "user",
                                                  "content": [{"type": "input_text", "text": prompt}]}),
            envelope(timestamp, "event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": []}),
            envelope(timestamp, "event_msg", {"type": "agent_message", "message": answer, "phase": "final_answer"}),
            envelope(timestamp, "response_item", {"type": "message", "role": "assistant", "phase": "final_answer",
                                                  "content": [{"type": "output_text", "text": answer}]}),
            envelope(timestamp, "event_msg", {"type": "task_complete", "turn_id": "t-new"})]


def seen(lines: list[bytes]) -> list[tuple]:
    """What a user saw, per SOURCES-AGENTS §2.8, with plain json: prompts (user_message), assistant
    text (assistant messages; an agent_message only when no assistant message with its text is
    within three lines), tool calls (name, call_id, arguments) and reasoning, in file order."""
    records = [json.loads(line) for line in lines]
    out = []
    for i, record in enumerate(records):
        payload = record["payload"]
        kind = payload.get("type")
        if record["type"] == "event_msg" and kind == "user_message":
            out.append(("prompt", payload["message"]))
        elif record["type"] == "response_item" and kind == "message" and payload["role"] == "assistant":
            out.append(("assistant", "\n".join(b["text"] for b in payload["content"] if b["type"] == "output_text")))
        elif record["type"] == "event_msg" and kind == "agent_message":
            near = records[max(0, i - 3):i + 4]
            if not any(r["type"] == "response_item" and r["payload"].get("role") == "assistant"
                       and "".join(b.get("text", "") for b in r["payload"]["content"]) == payload["message"] for r in near):
                out.append(("assistant", payload["message"]))
        elif record["type"] == "response_item" and kind in ("function_call", "custom_tool_call"):
            arguments = payload.get("arguments", payload.get("input"))
            if kind == "function_call":  # a JSON string: compared as the object it holds, when it holds one
                try:
                    parsed = json.loads(arguments)
                except ValueError:
                    parsed = None
                arguments = parsed if isinstance(parsed, dict) else arguments
            out.append(("tool", payload["name"], payload["call_id"], arguments))
        elif record["type"] == "response_item" and kind == "web_search_call":
            out.append(("tool", "web_search", payload.get("call_id", payload.get("id", "")) or "", payload["action"]))
        elif record["type"] == "response_item" and kind == "reasoning":
            out.append(("reasoning", payload["encrypted_content"]))
    return out
