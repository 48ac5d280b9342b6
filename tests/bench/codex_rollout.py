"""A Codex CLI rollout of N records, built fast (SOURCES-AGENTS.md §2): for the import memory
benchmark and test.

    python tests/bench/codex_rollout.py N OUT_HOME   # OUT_HOME/sessions/2026/05/05/rollout-….jsonl

Each turn is what Codex 0.11x writes: task_started, turn_context, the prompt twice (event_msg
user_message and its response_item mirror), reasoning, the answer twice (agent_message and
the assistant message), a shell call with its output and exec_command_end, token counts and
task_complete.  Small records (a few hundred bytes) after a 10 KB session_meta.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

THREAD = "019e0000-0000-7000-8000-000000000001"
CWD = "/home/ada/code/thin.ly"


def _stamp(n: int) -> str:
    return f"2026-05-{5 + n // 86_400_000 % 20:02d}T{n // 3_600_000 % 24:02d}:{n // 60_000 % 60:02d}:{n // 1000 % 60:02d}.{n % 1000:03d}Z"


def records(count: int):
    """``count`` rollout records (dicts), in file order."""
    yield {"timestamp": _stamp(0), "type": "session_meta", "payload": {
        "id": THREAD, "timestamp": _stamp(0), "cwd": CWD, "originator": "codex_cli_rs", "cli_version": "0.121.0",
        "source": "cli", "model_provider": "openai", "base_instructions": {"text": "You are Codex. " * 700}}}
    n, turn = 1, 0
    while n < count:
        turn += 1
        prompt = f"turn {turn}: why does the refund job retry twice on a timeout?"
        answer = f"`retry_on Timeout, attempts: 2` retries once after the first try ({turn})."
        call = f"call_{turn:020d}"
        payloads = [
            ("event_msg", {"type": "task_started", "turn_id": f"t{turn}"}),
            ("turn_context", {"turn_id": f"t{turn}", "cwd": CWD, "model": "gpt-5.4", "effort": "medium"}),
            ("event_msg", {"type": "user_message", "message": prompt, "images": []}),
            ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
            ("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAA" + "x" * 120}),
            ("response_item", {"type": "function_call", "name": "shell_command", "call_id": call,
                               "arguments": '{"command":"sed -n 1,20p app/jobs/refund.rb"}'}),
            ("event_msg", {"type": "exec_command_end", "call_id": call, "exit_code": 0, "duration": {"secs": 0, "nanos": 5}}),
            ("response_item", {"type": "function_call_output", "call_id": call, "output": "class RefundJob\n  retry_on Timeout, attempts: 2\nend"}),
            ("event_msg", {"type": "agent_message", "message": answer, "phase": "final_answer"}),
            ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}],
                               "phase": "final_answer"}),
            ("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1000 + turn}}}),
            ("event_msg", {"type": "task_complete", "turn_id": f"t{turn}", "last_agent_message": answer}),
        ]
        for kind, payload in payloads:
            if n >= count:
                return
            yield {"timestamp": _stamp(n * 1700), "type": kind, "payload": payload}
            n += 1


def write(home: Path, count: int) -> Path:
    """Write a rollout of ``count`` records under ``home/sessions/…``; return its path."""
    path = home / "sessions" / "2026" / "05" / "05" / f"rollout-2026-05-05T00-00-00-{THREAD}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb", buffering=1 << 20) as out:
        for record in records(count):
            out.write(orjson.dumps(record) + b"\n")
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[2]), int(sys.argv[1])))
