"""A deterministic Codex home of odd rollouts, and how it grows: the input of the reference test
that pins `import --from codex`'s journals byte for byte (tests/data/codex_import_reference.json).

Odd shapes: every stream and its mirror (prompts, answers, reasoning with and without a summary),
injected user text, calls with and without outputs and exit codes (ints, and not), forks that
replay a parent, copied lines, rollouts without a session_meta, a damaged line mid-file, a torn
last line, lone surrogates, model changes, record types newer than the reader.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from tests.importers.claude_shapes import digests, settle

_TEXTS = ["hello", "why?", "<env>x</env>", "# AGENTS.md instructions", "caf\u00e9", "", "\udc80x"]


def _record(kind: str, payload: dict, n: int) -> dict:
    return {"timestamp": f"2026-05-05T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z", "type": kind, "payload": payload}


def _item(rng: random.Random) -> tuple[str, dict]:
    text, call = rng.choice(_TEXTS), rng.choice(["c1", "c2", "c3", None])
    summary = [{"type": "summary_text", "text": text}] if rng.random() < 0.5 else []
    return rng.choice([
        ("event_msg", {"type": "user_message", "message": text}),
        ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        ("event_msg", {"type": "item_completed", "item": {"type": "UserMessage", "text": text}}),
        ("event_msg", {"type": "agent_message", "message": text, "phase": "final_answer"}),
        ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
        ("response_item", {"type": "reasoning", "summary": summary, "content": None, "encrypted_content": "e"}),
        ("event_msg", {"type": "agent_reasoning", "text": text}),
        ("response_item", {"type": "function_call", "name": "shell", "arguments": "{\"a\":1}", "call_id": call}),
        ("response_item", {"type": "function_call_output", "call_id": call, "output": "ok"}),
        ("event_msg", {"type": "exec_command_end", "call_id": call, "exit_code": rng.choice([0, 1, "x"])}),
        ("event_msg", {"type": "task_started"}), ("event_msg", {"type": "task_complete"}),
        ("turn_context", {"model": rng.choice(["gpt-5", "gpt-5-mini", 3])}), ("event_msg", {"type": "token_count"}),
        ("compacted", {"message": text}), ("event_msg", {"type": "turn_aborted", "reason": "x"}),
        ("event_msg", {"type": "error", "message": "boom"}), ("brand_new", {"type": "x"}),
        ("response_item", {"type": "message", "role": "developer", "content": []})])


def build(home: Path, rollouts: int = 60, seed: int = 28) -> None:
    """``rollouts`` odd rollouts under ``home/sessions/2026/05/05``."""
    rng = random.Random(seed)
    folder = home / "sessions" / "2026" / "05" / "05"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(rollouts):
        thread = f"019e{i:04x}-0000-7000-8000-{rng.randint(0, 10**6):012d}"
        meta = {"id": thread, "timestamp": "2026-05-05T00:00:00.000Z", "cwd": "/x/y", "cli_version": "0.121.0",
                "originator": "codex_cli_rs", "source": "cli"}
        fork = rng.random() < 0.2
        if fork:
            meta["forked_from_id"] = "parent-id"
        lines = [_record("session_meta", meta, 0)] if rng.random() > 0.05 else []
        if fork:
            lines.append(_record("session_meta", {**meta, "id": "parent-id"}, 1))
        for n in range(rng.randint(0, 120)):
            lines.append(_record(*_item(rng), n + 2))
            if rng.random() < 0.03:
                lines.append(lines[rng.randrange(len(lines))])  # a copied line
        data = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
        if rng.random() < 0.05:
            data += '{"timestamp":"2026","type":"event_msg","payl'  # being written
        if rng.random() < 0.05 and len(data) > 200:
            cut = rng.randrange(100, len(data) - 50)
            data = data[:cut] + data[cut + 7:]  # a damaged line mid-file
        (folder / f"rollout-2026-05-05T00-00-{i % 60:02d}-{thread}.jsonl").write_bytes(data.encode("utf-8", "surrogatepass"))
    settle(home)


def grow(home: Path, seed: int = 29) -> None:
    """Append a few prompts and answers (with their mirrors) to every rollout; a torn last line gets its newline first."""
    rng = random.Random(seed)
    for path in sorted(home.rglob("*.jsonl")):
        data = path.read_bytes()
        data = data if data.endswith(b"\n") or not data else data + b"\n"
        added = []
        for _ in range(rng.randint(0, 5)):
            text = rng.choice(["more", "hello", "why?"])
            added.append(rng.choice([
                _record("event_msg", {"type": "user_message", "message": text}, 3000),
                _record("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}, 3000),
                _record("event_msg", {"type": "agent_message", "message": text}, 3001),
                _record("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}, 3001)]))
        path.write_bytes(data + b"".join(json.dumps(r).encode() + b"\n" for r in added))
    settle(home)


def reference_tree(home: Path, fixtures: Path) -> Path:
    """The reference input: the real fixtures, a regular 3,000-record rollout and the odd shapes."""
    from tests.bench.codex_rollout import write

    shutil.copytree(fixtures, home)
    write(home, 3000)
    build(home)
    return home


REFERENCE = Path(__file__).resolve().parents[1] / "data" / "codex_import_reference.json"


def main() -> None:
    """Write tests/data/codex_import_reference.json with the importer on ``sys.path`` (pin it anew
    only when a change to the journals is intended): ``python -m tests.importers.codex_shapes``."""
    import sys
    import tempfile

    from tests.helpers import run_cli

    fixtures = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/fixtures/codex")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        home, store = reference_tree(Path(tmp) / ".codex", fixtures), Path(tmp) / "store"
        for name in ("first", "again"):
            if name == "again":
                grow(home)
            result = run_cli("import", "--from", "codex", "--source", str(home), "--store", str(store), "--json")
            assert result.exit_code in (0, 4), result.stdout
            out[name] = digests(store, home)
    REFERENCE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{REFERENCE}: {len(out['first'])} journals, then {len(out['again'])}")


if __name__ == "__main__":
    main()
