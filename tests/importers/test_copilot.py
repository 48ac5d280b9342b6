"""import --from copilot: GitHub Copilot CLI ``events.jsonl`` logs (SOURCES-AGENTS.md §4),
built as real files from the documented event shapes."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

from tests.helpers import run_cli
from toolkit.lines import loads


def _event(kind: str, data: dict, n: int, parent: str | None) -> dict:
    # the envelope in its observed key order: type, data, id, timestamp, parentId
    return {"type": kind, "data": data, "id": str(uuid.UUID(int=n + 1)), "timestamp": f"2026-01-10T09:{n // 60:02d}:{n % 60:02d}.000Z",
            "parentId": parent}


def events(sid: str, cwd: Path) -> list[dict]:
    """One prompt, two assistant steps (one calling two tools, one failing), a model change,
    a quota error, a compaction and a shutdown: every kind of event §4 lists."""
    context = {"cwd": str(cwd), "gitRoot": str(cwd), "branch": "main", "headCommit": "abc", "repository": "ada/app", "hostType": "github"}
    specs = [
        ("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "0.0.340",
                           "startTime": "2026-01-10T09:00:00.000Z", "selectedModel": "claude-sonnet-4.5", "context": context, "alreadyInUse": False}),
        ("user.message", {"content": "fix the failing test ✓", "transformedContent": "fix the failing test ✓\n<current_datetime>…</current_datetime>",
                          "attachments": [{"type": "file", "path": str(cwd / "tests" / "test_x.py"), "displayName": "test_x.py"}],
                          "agentMode": "interactive", "interactionId": "i1"}),
        ("assistant.turn_start", {"turnId": "0", "interactionId": "i1"}),
        ("assistant.message", {"messageId": "m1", "content": "", "toolRequests": [
            {"toolCallId": "c1", "name": "bash", "arguments": {"command": "pytest -q"}, "type": "function", "intentionSummary": "Run the tests"},
            {"toolCallId": "c2", "name": "view", "arguments": {"path": "tests/test_x.py"}, "type": "function"}],
            "interactionId": "i1", "reasoningText": "The test is probably stale.", "outputTokens": 40}),
        ("tool.execution_start", {"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "pytest -q"}}),
        ("tool.execution_complete", {"toolCallId": "c1", "model": "claude-sonnet-4.5", "interactionId": "i1", "success": True,
                                     "result": {"content": "1 failed\nline two", "detailedContent": "…"}, "toolTelemetry": {}}),
        ("tool.execution_start", {"toolCallId": "c2", "toolName": "view", "arguments": {"path": "tests/test_x.py"}}),
        ("tool.execution_complete", {"toolCallId": "c2", "model": "claude-sonnet-4.5", "interactionId": "i1", "success": False,
                                     "error": {"message": "file not found", "code": "ENOENT"}, "toolTelemetry": {}}),
        ("assistant.turn_end", {"turnId": "0"}),
        ("session.model_change", {"previousModel": "claude-sonnet-4.5", "newModel": "gpt-5"}),
        ("assistant.message", {"messageId": "m2", "content": "The test file moved; I updated the import.", "toolRequests": [],
                               "interactionId": "i1", "outputTokens": 12}),
        ("session.error", {"errorType": "quota", "message": "You have no premium requests left.", "statusCode": 402, "providerCallId": "p"}),
        ("session.compaction_start", {"systemTokens": 1, "conversationTokens": 2, "toolDefinitionsTokens": 3}),
        ("session.compaction_complete", {"success": True, "summaryContent": "Fixed the import in tests/test_x.py.", "checkpointNumber": 1}),
        ("session.shutdown", {"shutdownType": "routine", "totalPremiumRequests": 2, "codeChanges": {"linesAdded": 1, "linesRemoved": 1, "filesModified": 1}}),
    ]
    out, parent = [], None
    for n, (kind, data) in enumerate(specs):
        out.append(_event(kind, data, n, parent))
        parent = out[-1]["id"]
    return out


def encode(objects: list[dict]) -> bytes:
    return b"".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for o in objects)


def copilot_session(home: Path, sid: str, cwd: Path, objects: list[dict] | None = None, tail: bytes = b"") -> Path:
    """``<home>/session-state/<sid>/events.jsonl`` (+ ``workspace.yaml``); returns the log."""
    folder = home / "session-state" / sid
    folder.mkdir(parents=True)
    log = folder / "events.jsonl"
    log.write_bytes(encode(objects if objects is not None else events(sid, cwd)) + tail)
    (folder / "workspace.yaml").write_text(f"id: {sid}\ncwd: {cwd}\nsummary: \"fix the failing...\"\n")
    return log


def journal(path: str | Path) -> list[dict]:
    return [loads(line) for line in Path(path).read_bytes().splitlines()]


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


SID = "0d7f5c3a-9b1e-4c2d-8e6f-1a2b3c4d5e6f"


def test_a_copilot_session_imports_prompts_replies_tools_and_events(tmp_path):
    cwd = tmp_path / "app"
    cwd.mkdir()
    home = tmp_path / ".copilot"
    copilot_session(home, SID, cwd)
    before = hashes(home)
    store = tmp_path / "store"
    result = run_cli("import", "--from", "copilot", "--source", home, "--store", store, "--json")
    assert hashes(home) == before, "the source is byte-identical after the import"
    assert result.exit_code == 0, result.stdout[-2000:]
    (session,) = result.json["sessions"]
    assert session["id"] == f"copilot-{SID}" and session["project"] == str(cwd) and session["source_status"] == "live"
    records = journal(session["path"])
    meta = records[0]
    assert meta["source"]["app"] == "copilot" and meta["title"] == "fix the failing..." and meta["createdAt"] == "2026-01-10T09:00:00.000Z"
    kinds = [(r["kind"], r.get("type")) for r in records[1:]]
    assert kinds == [("user", None), ("assistant", None), ("event", "session.model_change"), ("assistant", None),
                     ("event", "session.error"), ("event", "session.compaction_complete"), ("event", "session.shutdown")]
    user, step, _change, reply = records[1:5]
    assert user["content"] == "fix the failing test ✓" and user["contextFiles"] == [str(cwd / "tests" / "test_x.py")]
    assert [b["type"] for b in step["content"]] == ["thinking", "tool_use", "tool_result", "tool_use", "tool_result"]
    assert step["content"][1] == {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "pytest -q"}, "display": "Run the tests"}
    assert step["content"][2] == {"type": "tool_result", "tool_use_id": "c1", "content": "1 failed\nline two", "is_error": False}
    assert step["content"][4]["is_error"] is True and step["content"][4]["content"] == "file not found"
    assert step["model"] == "claude-sonnet-4.5" and reply["model"] == "gpt-5"
    assert reply["content"] == [{"type": "text", "text": "The test file moved; I updated the import."}]
    assert records[5]["content"] == "You have no premium requests left."
    # accounting: 15 event lines = session.start (the meta) + 7 records + 4 tool events joined into
    # the step that asked for them + 3 ui-only markers (turn start / end, compaction start)
    assert session["source_items"] == 15 and session["skipped"] == {"ui-only": 3}
    assert session["source_items"] == 1 + (len(records) - 1) + 4 + sum(session["skipped"].values())
    (note,) = [f for f in result.json["findings"] if f["code"] == "source-skipped"]
    assert str(uuid.UUID(int=3)) in note["message"], "each skipped event is named by its key"
    assert run_cli("fsck", "--strict", "--store", store).exit_code == 0
    again = run_cli("import", "--from", "copilot", "--source", home, "--store", store, "--json")
    assert again.json["sessions"][0]["status"] == "unchanged"


def test_damage_torn_tail_nul_run_split_event_and_a_bad_line_are_counted(tmp_path):
    cwd = tmp_path / "app"
    cwd.mkdir()
    objects = events(SID, cwd)[:8]
    lines = encode(objects).split(b"\n")
    # a raw newline inside the first tool result's text (#2649) splits that event over two lines
    split = lines[5].replace(b"1 failed\\nline two", b"1 failed\nline two")
    body = b"\n".join(lines[:5] + [split] + lines[6:7] + [b"{not json"] + lines[7:8]) + b"\n"
    log = copilot_session(tmp_path / ".copilot", SID, cwd, objects=[], tail=body + b"\0" * 40 + b"\n" + b'{"type":"user.mess')
    result = run_cli("import", "--from", "copilot", "--source", log, "--store", tmp_path / "store", "--json")
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"nul-tail": 1, "torn-line": 1, "ui-only": 1, "unreadable-line": 1}
    records = journal(session["path"])
    step = next(r for r in records if r["kind"] == "assistant")
    assert step["content"][2]["content"] == "1 failed\nline two", "the split event is rejoined, its text exact"
    assert session["source_items"] == 8 + 3, "8 events (one over two lines) + the bad line, the NUL run and the torn tail"
    codes = sorted((f["code"], f["line"]) for f in result.json["findings"])
    assert ("source-unreadable", 9) in codes and result.exit_code == 4


def test_a_running_tool_call_is_partial_then_superseded(tmp_path):
    cwd = tmp_path / "app"
    cwd.mkdir()
    full = events(SID, cwd)
    log = copilot_session(tmp_path / ".copilot", SID, cwd, objects=full[:5])  # c1 started, not complete
    store = tmp_path / "store"
    first = run_cli("import", "--from", "copilot", "--source", log, "--store", store, "--json")
    step = next(r for r in journal(first.json["sessions"][0]["path"]) if r["kind"] == "assistant")
    assert step["partial"] is True and step["status"] == "pending"
    log.write_bytes(encode(full))
    second = run_cli("import", "--from", "copilot", "--source", log, "--store", store, "--json")
    records = journal(second.json["sessions"][0]["path"])
    steps = [r for r in records if r["kind"] == "assistant" and r["sourceKey"] == step["sourceKey"]]
    assert steps[1]["replaces"] == steps[0]["seq"] and steps[1]["status"] == "complete"


def test_not_a_copilot_log_is_refused_by_content_whatever_its_name(tmp_path):
    folder = tmp_path / ".copilot" / "session-state" / "x"
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_bytes(encode([{"kind": 0, "v": {"version": 3, "requests": []}}]))
    result = run_cli("import", "--from", "copilot", "--source", tmp_path / ".copilot", "--store", tmp_path / "store", "--json")
    assert result.json["sessions"] == [] and [f["code"] for f in result.json["findings"]] == ["unknown-format"]
