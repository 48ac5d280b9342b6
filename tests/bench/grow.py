"""Grow transcripts as their tools do, for the incremental import benchmarks and tests (issue 27).

:func:`grow_claude` appends a turn (a typed prompt, then an answer of one or more lines) to a
Claude Code transcript, chained to its last main-chain record, shaped like the file's own records
(their fields kept; uuid, parent, ids, time and text new); :func:`grow_codex` appends a turn to a
Codex rollout (a user message, its event mirror, an answer); :func:`grow_gemini` appends a turn to
a Gemini CLI session file.  Deterministic for a seed.
"""

from __future__ import annotations

import random
import uuid as uuids
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

CHAIN = ("user", "assistant", "system", "progress", "attachment")


def _records(path: Path) -> list[dict]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def grow_claude(path: Path, rng: random.Random, *, turns: int = 1, parts: int = 1, unfinished: bool = False,
                title: str | None = None, meta: bool = False, torn: bool = False) -> int:
    """Append ``turns`` turns (prompt + an answer in ``parts`` lines of one API response; with
    ``unfinished`` the last answer has no final stop reason yet), then an ``ai-title`` line
    (``title``), a metadata line without uuid (``meta``), the first half of one more prompt with no
    newline (``torn``: a line being written); return bytes added."""
    records = _records(path)
    chain = [r for r in records if r.get("type") in CHAIN and isinstance(r.get("uuid"), str) and not r.get("isSidechain")]
    if not chain:
        return 0
    leaf = chain[-1]
    user = next((r for r in reversed(chain) if r.get("type") == "user" and isinstance(r.get("message"), dict)), None)
    answer = next((r for r in reversed(chain) if r.get("type") == "assistant" and isinstance(r.get("message"), dict)), None)
    parent = leaf["uuid"]
    lines = []
    stamp = leaf.get("timestamp") if isinstance(leaf.get("timestamp"), str) else "2026-01-01T00:00:00.000Z"
    for turn in range(turns):
        base = dict(user or {"type": "user", "sessionId": leaf.get("sessionId"), "cwd": leaf.get("cwd")})
        base.pop("toolUseResult", None)
        base.update({"type": "user", "uuid": str(uuids.UUID(int=rng.getrandbits(128), version=4)), "parentUuid": parent,
                     "timestamp": stamp, "isSidechain": False,
                     "message": {"role": "user", "content": f"grown prompt {turn} {rng.random():.6f}"}})
        for key in ("isMeta", "isCompactSummary", "sourceToolAssistantUUID", "toolUseID"):
            base.pop(key, None)
        lines.append(base)
        parent = base["uuid"]
        message_id = f"msg_grown{rng.getrandbits(64):016x}"
        request = f"req_grown{rng.getrandbits(64):016x}"
        for part in range(parts):
            reply = dict(answer or {"type": "assistant", "sessionId": leaf.get("sessionId"), "cwd": leaf.get("cwd")})
            message = dict(reply.get("message") or {})
            message.update({"id": message_id, "role": "assistant", "type": "message",
                            "content": [{"type": "text", "text": f"grown answer {turn}.{part} {rng.random():.6f}"}],
                            "stop_reason": "end_turn" if part == parts - 1 and not (unfinished and turn == turns - 1) else None})
            reply.update({"type": "assistant", "uuid": str(uuids.UUID(int=rng.getrandbits(128), version=4)),
                          "parentUuid": parent, "timestamp": stamp, "isSidechain": False, "message": message,
                          "requestId": request})
            reply.pop("isApiErrorMessage", None)
            lines.append(reply)
            parent = reply["uuid"]
    session = leaf.get("sessionId")
    if title is not None:
        lines.append({"type": "ai-title", "aiTitle": title, "sessionId": session})
    if meta:
        lines.append({"type": "last-prompt", "lastPrompt": f"grown {rng.random():.6f}", "sessionId": session})
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    if torn:
        whole = orjson.dumps({"type": "user", "uuid": str(uuids.UUID(int=rng.getrandbits(128), version=4)), "parentUuid": parent,
                              "timestamp": stamp, "sessionId": session, "message": {"role": "user", "content": "torn"}})
        data += whole[: len(whole) // 2]
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)


def finish_torn(path: Path) -> int:
    """Drop a final line with no newline (as a writer that starts it again would); return bytes cut."""
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    if cut == len(data):
        return 0
    with open(path, "r+b") as handle:
        handle.truncate(cut)
    return len(data) - cut


def grow_codex(path: Path, rng: random.Random, *, turns: int = 1, at_last_time: bool = False) -> int:
    """Append ``turns`` turns to a rollout (user message + its event mirror + an answer); return bytes
    added.  Each line a second after the one before, as Codex writes them (``at_last_time``: every
    line at the file's last time instead, two lines alike by time and type, which a resume cannot
    tell from a line rewritten in place: such a rollout is read in full)."""
    records = _records(path)
    stamp = next((r["timestamp"] for r in reversed(records) if isinstance(r.get("timestamp"), str)), "2026-01-01T00:00:00.000Z")
    try:
        last = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        last, at_last_time = None, True
    lines = []

    def when() -> str:
        nonlocal last
        if at_last_time or last is None:
            return stamp
        last += timedelta(seconds=1)
        return last.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    for turn in range(turns):
        text = f"grown prompt {turn} {rng.random():.6f}"
        lines.append({"timestamp": when(), "type": "response_item",
                      "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}})
        lines.append({"timestamp": when(), "type": "event_msg", "payload": {"type": "user_message", "message": text, "images": []}})
        reply = f"grown answer {turn} {rng.random():.6f}"
        lines.append({"timestamp": when(), "type": "response_item",
                      "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}})
        lines.append({"timestamp": when(), "type": "event_msg", "payload": {"type": "agent_message", "message": reply}})
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)


def grow_gemini(path: Path, rng: random.Random, *, turns: int = 1) -> int:
    """Append ``turns`` turns to a Gemini CLI session file (JSONL) as Gemini CLI's recorder does
    (SOURCES-MORE.md §1.2, §1.4): each message line, then ``{"$set":{"lastUpdated":…}}``; the answer is
    appended again once its tokens come (a repeated id: a full replacement).  Each line a second
    after the one before; return bytes added."""
    records = _records(path)
    stamp = next((r["$set"]["lastUpdated"] for r in reversed(records) if isinstance(r.get("$set"), dict)
                  and isinstance(r["$set"].get("lastUpdated"), str)), None)
    stamp = stamp or next((r.get("lastUpdated") for r in records if isinstance(r.get("lastUpdated"), str)), "2026-08-21T16:16:00.000Z")
    last = datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    def when() -> str:
        nonlocal last
        last += timedelta(seconds=1)
        return last.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    lines = []
    for turn in range(turns):
        tag = f"{turn}-{rng.random():.6f}"
        lines.append({"id": f"u-{tag}", "timestamp": when(), "type": "user", "content": [{"text": f"grown prompt {tag}"}]})
        lines.append({"$set": {"lastUpdated": when()}})
        answer = {"id": f"g-{tag}", "timestamp": when(), "type": "gemini", "content": f"grown answer {tag}", "model": "gemini-2.5-pro",
                  "thoughts": [{"subject": "Planning", "description": f"think {tag}", "timestamp": when()}]}
        lines.append(answer)
        lines.append({"$set": {"lastUpdated": when()}})
        lines.append({**answer, "tokens": {"input": 1200, "output": 80, "cached": 0, "thoughts": 40, "tool": 0, "total": 1320}})
        lines.append({"$set": {"lastUpdated": when()}})
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)
