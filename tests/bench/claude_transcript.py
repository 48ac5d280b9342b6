"""A Claude Code transcript of N records, built fast (SOURCES-AGENTS.md §1): shared by the
import memory benchmark and the memory test.

    python tests/bench/claude_transcript.py N OUT_ROOT   # OUT_ROOT/projects/<slug>/<sid>.jsonl

Each turn is what Claude Code 2.1.x writes: a typed prompt (after a file-history snapshot),
one API response over three lines (thinking, text, tool_use: same ``message.id`` and
``requestId``), its tool result (parented to the tool_use line, with ``toolUseResult``), the
closing text (``end_turn``) and a ``turn_duration``; every few turns an ``ai-title``, a
``last-prompt`` and a rewind (a prompt whose parent is an earlier record: a branch off the
chain).  Small messages (a few hundred bytes a line) so that the file's size does not hide
what the importer holds per record.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import orjson

SESSION = "5e55a0e1-0000-4000-8000-000000000001"
CWD = "/home/ada/code/thin.ly"
SLUG = "-home-ada-code-thin-ly"
_ENVELOPE = {"userType": "external", "entrypoint": "cli", "cwd": CWD, "sessionId": SESSION, "version": "2.1.128",
             "gitBranch": "main"}


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=(0x4000 << 64) | n))


def _stamp(n: int) -> str:
    return f"2026-05-{5 + n // 86_400_000 % 20:02d}T{n // 3_600_000 % 24:02d}:{n // 60_000 % 60:02d}:{n // 1000 % 60:02d}.{n % 1000:03d}Z"


def records(count: int):
    """``count`` source records (dicts), in file order."""
    n = 0
    parent = None

    def chain(kind: str, body: dict, parent_uuid: str | None) -> dict:
        nonlocal n
        n += 1
        return {"parentUuid": parent_uuid, "isSidechain": False, **body, "type": kind, "uuid": _uuid(n),
                "timestamp": _stamp(n * 1700), **_ENVELOPE}

    turn = 0
    while n < count:
        turn += 1
        prompt_parent = parent
        if turn % 7 == 0 and parent is not None:  # a rewind: the prompt forks off an earlier record
            prompt_parent = _uuid(max(1, n - 5))
        out = []
        out.append({"type": "file-history-snapshot", "messageId": _uuid(n + 1), "snapshot": {
            "messageId": _uuid(n + 1), "trackedFileBackups": {}, "timestamp": _stamp(n * 1700)}, "isSnapshotUpdate": False})
        prompt = chain("user", {"promptId": _uuid(10**9 + turn), "message": {
            "role": "user", "content": f"turn {turn}: why does the refund job retry twice on a timeout? see app/jobs/refund.rb"}},
            prompt_parent)
        out.append(prompt)
        msg, req = f"msg_01{turn:022d}", f"req_01{turn:022d}"
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 812, "cache_read_input_tokens": 18_000 + turn,
                 "output_tokens": 9, "service_tier": "standard"}

        def part(block: dict, stop: str | None, after: dict) -> dict:
            return chain("assistant", {"message": {"model": "claude-opus-4-7", "id": msg, "type": "message", "role": "assistant",
                                                   "content": [block], "stop_reason": stop, "stop_sequence": None,
                                                   "usage": usage}, "requestId": req}, after["uuid"])

        thinking = part({"type": "thinking", "thinking": "", "signature": "EqkCCkYICBgCKkB" + "x" * 60}, None, prompt)
        text = part({"type": "text", "text": "Let me read the job and its retry policy."}, None, thinking)
        tool = f"toolu_01{turn:022d}"
        use = part({"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": f"{CWD}/app/jobs/refund.rb"}},
                   "tool_use", text)
        result = chain("user", {"promptId": prompt["promptId"], "message": {"role": "user", "content": [
            {"tool_use_id": tool, "type": "tool_result", "content": "1\tclass RefundJob\n2\t  retry_on Timeout, attempts: 2\n3\tend"}]},
            "toolUseResult": {"type": "text", "file": {"filePath": f"{CWD}/app/jobs/refund.rb", "numLines": 3}},
            "sourceToolAssistantUUID": use["uuid"]}, use["uuid"])
        closing = chain("assistant", {"message": {"model": "claude-opus-4-7", "id": msg + "b", "type": "message",
                                                  "role": "assistant", "content": [{"type": "text", "text":
                                                  "`retry_on Timeout, attempts: 2` retries once after the first try."}],
                                                  "stop_reason": "end_turn", "stop_sequence": None, "usage": usage},
                                      "requestId": req + "b"}, result["uuid"])
        duration = chain("system", {"subtype": "turn_duration", "durationMs": 4_200 + turn % 900, "messageCount": 6,
                                    "isMeta": False}, closing["uuid"])
        out += [thinking, text, use, result, closing, duration]
        if turn % 5 == 0:
            out.append({"type": "ai-title", "aiTitle": f"Refund job retries ({turn // 50})", "sessionId": SESSION})
            out.append({"type": "last-prompt", "lastPrompt": prompt["message"]["content"][:40], "leafUuid": duration["uuid"],
                        "sessionId": SESSION})
        parent = duration["uuid"]
        yield from out


def write(root: Path, count: int) -> Path:
    """Write a transcript of ``count`` records as ``root/projects/<slug>/<session>.jsonl``; return its path."""
    path = root / "projects" / SLUG / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb", buffering=1 << 20) as out:
        for n, record in enumerate(records(count)):
            if n >= count:
                break
            out.write(orjson.dumps(record) + b"\n")
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[2]), int(sys.argv[1])))
