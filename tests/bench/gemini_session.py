"""One Gemini CLI session file of N lines for the memory benchmark (issue 27): a metadata line, then
turns of a typed prompt and a Gemini answer with a thought and a tool call, about 2 KB a line, in a
``~/.gemini/tmp/<project>/chats/`` tree (SOURCES-MORE.md §1.9's shapes, as tests/layouts/gemini.py)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import orjson

SID = "1b2c3d4e-5f60-4a71-8b92-a3b4c5d6e7f8"
ROOT = "/home/bench/src/app"


def write(home: Path, count: int) -> Path:
    """Write a session of ``count`` lines under ``home/tmp/app/chats/``; return its path."""
    project = home / "tmp" / "app"
    (project / "chats").mkdir(parents=True, exist_ok=True)
    (project / ".project_root").write_text(ROOT)
    path = project / "chats" / "session-2026-08-21T16-16-1b2c3d4e.jsonl"
    stamp = "2026-08-21T16:16:00.000Z"
    with open(path, "wb", buffering=1 << 20) as out:
        out.write(orjson.dumps({"sessionId": SID, "projectHash": hashlib.sha256(ROOT.encode()).hexdigest(),
                                "startTime": stamp, "lastUpdated": stamp, "kind": "main"}) + b"\n")
        for n in range(1, count):
            if n % 2:
                line = {"id": f"u-{n}", "timestamp": stamp, "type": "user", "content": [{"text": f"question {n} " + "word " * 120}]}
            else:
                line = {"id": f"g-{n}", "timestamp": stamp, "type": "gemini", "content": "answer " * 150, "model": "gemini-2.5-pro",
                        "thoughts": [{"subject": "Planning", "description": "think " * 60, "timestamp": stamp}],
                        "toolCalls": [{"id": f"read_file-{n}", "name": "read_file", "args": {"file_path": ROOT + "/README.md"},
                                       "result": [{"text": "# app"}], "status": "success", "timestamp": stamp}]}
            out.write(orjson.dumps(line) + b"\n")
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[2]), int(sys.argv[1])))
