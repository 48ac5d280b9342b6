"""import --from vscode accounts for every source item: each request, response part and
mutation-log line becomes a record or is counted by reason and named in a finding."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.vscode_tree import reading  # noqa: F401 (every test both ways)
from tests.importers.vscode_tree import BOM, VSCODE, build_tree, entry, lines, request, wrap_export, workspace, write_index
from toolkit.lines import loads

#: Response part kinds the tests expect to be counted as ``ui-only`` (SOURCES §3.2, by our rule).
UI_ONLY = {"prepareToolInvocation"}


def journal(path: str | Path) -> list[dict]:
    return [loads(line) for line in Path(path).read_bytes().splitlines()]


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def imported(tmp_path: Path, *sources: Path, store: str = "store"):
    before = {s: hashes(s) if s.is_dir() else s.read_bytes() for s in sources}
    args = [a for s in sources for a in ("--source", s)]
    result = run_cli("import", "--from", "vscode", *args, "--store", tmp_path / store, "--json")
    assert "Traceback" not in result.stderr
    for s in sources:
        assert (hashes(s) if s.is_dir() else s.read_bytes()) == before[s], "sources stay byte-identical"
    return result


def assert_accounted(session: dict, carried: int) -> None:
    assert session["source_items"] == carried + sum(session["skipped"].values()), session


@pytest.mark.parametrize("name", sorted(p.name for p in VSCODE.glob("*.json")))
@pytest.mark.parametrize("as_jsonl", [False, True])
def test_every_fixture_item_is_a_record_or_counted_and_named(tmp_path, name, as_jsonl):
    project = tmp_path / "proj"
    project.mkdir()
    sid, export = wrap_export(name, tmp_path / "User", project, as_jsonl=as_jsonl)
    result = imported(tmp_path, tmp_path / "User")
    assert result.exit_code == 0, result.stdout[-2000:]
    (session,) = result.json["sessions"]
    requests = export.get("requests") or []
    parts = [p for r in requests for p in r["response"]]
    ui = [p for p in parts if p.get("kind") in UI_ONLY]
    assert session["source_items"] == len(requests) + len(parts) + (1 if as_jsonl else 0)
    assert session["skipped"] == ({"ui-only": len(ui)} if ui else {})
    assert_accounted(session, len(requests) + len(parts) - len(ui) + (1 if as_jsonl else 0))
    named = " ".join(f["message"] for f in result.json["findings"] if f["code"] == "source-skipped")
    for asked in requests:
        for n, part in enumerate(asked["response"]):
            if part.get("kind") in UI_ONLY:
                assert f"response:{asked['requestId']}#{n}" in named, "every skipped item is named by its key"


def test_exports_take_their_id_from_their_content_never_their_file_name(tmp_path):
    """Two unrelated exports both named chat.json used to merge into one journal."""
    a, b, c = (tmp_path / d for d in ("a", "b", "c"))
    for folder, name in ((a, "completed_chat.json"), (b, "parse_export_chat.json"), (c, "completed_chat.json")):
        folder.mkdir()
        shutil.copyfile(VSCODE / name, folder / "chat.json")
    result = imported(tmp_path, a / "chat.json", b / "chat.json")
    assert result.exit_code == 0, result.stdout[-2000:]
    ids = [s["id"] for s in result.json["sessions"]]
    first = json.loads((VSCODE / "completed_chat.json").read_text())["requests"][0]["requestId"]
    assert len(set(ids)) == 2 and f"vscode-export-{first}" in ids
    users = {s["id"]: [r["content"] for r in journal(s["path"]) if r["kind"] == "user"] for s in result.json["sessions"]}
    assert sorted(map(len, users.values())) == [1, 2], "each export is its own session"
    same = imported(tmp_path, a / "chat.json", c / "chat.json", store="store2")
    assert {s["id"] for s in same.json["sessions"]} == {f"vscode-export-{first}"}, "the same export twice is one session"
    assert len(list((tmp_path / "store2").rglob("*.jsonl"))) == 1
    assert [s["status"] for s in same.json["sessions"]] == ["created", "unchanged"]
    empty = tmp_path / "e"
    empty.mkdir()
    shutil.copyfile(VSCODE / "pending_chat.json", empty / "chat.json")
    again = imported(tmp_path, empty / "chat.json", store="store3")
    assert again.json["sessions"][0]["id"].startswith("vscode-export-h"), "no request: a hash of the content"


def agent_session(sid: str) -> dict:
    """A v3 session with the agent-mode part shapes the fixtures lack (built from chatModel.ts)."""
    wsl = {"$mid": 1, "scheme": "vscode-remote", "authority": "wsl+Ubuntu", "path": "/home/ada/app/main.py",
           "fsPath": "\\home\\ada\\app\\main.py"}
    parts = [
        {"value": "Let me look. "},
        {"kind": "prepareToolInvocation", "toolName": "run_in_terminal"},
        {"kind": "toolInvocationSerialized", "toolCallId": "t1", "toolId": "run_in_terminal", "isComplete": True,
         "invocationMessage": "Running `ls`", "pastTenseMessage": {"value": "Ran `ls -la`"},
         "toolSpecificData": {"kind": "terminal", "command": "ls -la", "language": "sh"}},
        {"kind": "toolInvocationSerialized", "toolCallId": "t2", "toolId": "copilot_readFile", "presentation": "hidden",
         "invocationMessage": {"value": "Reading main.py"}, "isComplete": True},
        {"kind": "textEditGroup", "uri": wsl, "edits": [[{"text": "x", "range": {}}, {"text": "y", "range": {}}], [{"text": "z", "range": {}}]], "done": True},
        {"kind": "codeblockUri", "uri": wsl},
        {"kind": "undoStop", "id": "u1"},
        {"kind": "confirmation", "title": "Continue?", "message": "Run 12 more steps?", "buttons": ["Yes"]},
        {"value": ""},
        {"value": "Done."},
    ]
    return {"version": 3, "sessionId": sid, "creationDate": 1764460800000,
            "requests": [request("fix it", 1764460800000, rid="r0", response=parts,
                                 variableData={"variables": [{"id": "f", "name": "main.py", "value": wsl}]}), None]}


def test_agent_parts_tool_inputs_edits_remote_paths_and_unknown_kinds(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    folder = workspace(user, "ws-1", {"folder": project.as_uri()})
    (folder / "chatSessions" / "s-agent.json").write_text(json.dumps(agent_session("s-agent")))
    write_index(folder / "state.vscdb", {"s-agent": entry("s-agent")})
    result = imported(tmp_path, user)
    assert result.exit_code == 4, "an unknown part kind is content a user would miss: not exit 0"
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"deleted": 1, "empty": 1, "ui-only": 3, "unknown-kind:confirmation": 1}
    assert_accounted(session, 1 + 5)  # the request and 5 of its 10 parts: 2 texts, 2 tool calls, 1 file edit
    records = journal(session["path"])
    (user_record,) = [r for r in records if r["kind"] == "user"]
    assert user_record["contextFiles"] == ["vscode-remote://wsl+Ubuntu/home/ada/app/main.py"], "never \\home\\ada\\…"
    (assistant,) = [r for r in records if r["kind"] == "assistant"]
    tools = {b["id"]: b for b in assistant["content"] if b["type"] == "tool_use"}
    assert tools["t1"]["input"] == {"command": "ls -la"} and tools["t1"]["display"] == "Ran `ls -la`"
    assert tools["t2"]["hidden"] is True and tools["t2"]["display"] == "Reading main.py" and "hidden" not in tools["t1"]
    (edit,) = [b for b in assistant["content"] if b["type"] == "file_edit"]
    assert edit == {"type": "file_edit", "path": "vscode-remote://wsl+Ubuntu/home/ada/app/main.py", "edits": 3}
    assert [b["text"] for b in assistant["content"] if b["type"] == "text"] == ["Let me look. ", "Done."]
    findings = {(f["code"], f["severity"]): f["message"] for f in result.json["findings"]}
    assert "response:r0#7" in findings[("source-unreadable", "error")] and "confirmation" in findings[("source-unreadable", "error")]
    assert "response:r0#1" in findings[("source-skipped", "warning")]
    assert run_cli("fsck", "--strict", "--store", tmp_path / "store").exit_code == 0


def test_a_bom_log_is_read_and_reported_and_bad_lines_are_errors(tmp_path):
    tree = build_tree(tmp_path / "home")
    folder = tree["user"] / "workspaceStorage" / "ws-live" / "chatSessions"
    (folder / "s-bad.jsonl").write_bytes(lines({"kind": 0, "v": {"version": 3, "sessionId": "s-bad", "requests": []}})
                                         + b"{not json\n" + lines({"kind": 2, "k": ["requests"], "v": [request("kept", 1764460800000, rid="k")]}))
    result = imported(tmp_path, tree["user"])
    by_id = {s["id"]: s for s in result.json["sessions"]}
    bom = [f for f in result.json["findings"] if f["code"] == "bom"]
    assert len(bom) == 1 and Path(bom[0]["path"]).name == "s-bom.jsonl" and "session s-bom" in bom[0]["message"]
    assert [r["content"] for r in journal(by_id["vscode-s-bom"]["path"]) if r["kind"] == "user"] == ["behind a byte-order mark"]
    bad = by_id["vscode-s-bad"]
    assert bad["skipped"] == {"unreadable-line": 1} and bad["source_items"] == 3 + 1 + 1
    unreadable = [f for f in result.json["findings"] if f["code"] == "source-unreadable"]
    assert [(Path(f["path"]).name, f["line"], f["severity"]) for f in unreadable] == [("s-bad.jsonl", 2, "error")]
    torn = by_id["vscode-s-torn"]
    assert torn["skipped"] == {"torn-line": 1}
    assert result.exit_code == 4, "a line a user would miss was skipped"
    for outcome in result.json["sessions"]:  # items counted from the source itself, independently
        records = journal(outcome["path"])
        source = Path(records[0]["source"]["path"])
        if source.suffix == ".json":
            requests = json.loads(source.read_text())["requests"]
            want = len(requests) + sum(len(r["response"]) for r in requests)
        else:
            assistants = [r for r in records if r["kind"] == "assistant" or r.get("role") == "assistant"]
            non_empty = [line for line in source.read_bytes().split(b"\n") if line.removeprefix(BOM)]
            want = len(non_empty) + len(assistants) + sum(len(r["raw"]["response"]) for r in assistants)
        assert outcome["source_items"] == want, outcome["id"]
        assert outcome["skipped"] == {"s-bad": {"unreadable-line": 1}, "s-torn": {"torn-line": 1}}.get(outcome["id"][7:], {}), outcome["id"]


@pytest.mark.parametrize("keep", ["held", "streamed"])
def test_a_copilot_cli_log_given_to_the_vscode_importer_is_not_an_empty_vscode_session(tmp_path, monkeypatch, keep):
    from tests.importers.test_copilot import copilot_session
    from toolkit.importers import copilot

    if keep == "streamed":  # a log past KEEP_BYTES is read as a stream, as the Copilot importer reads it
        monkeypatch.setattr(copilot, "KEEP_BYTES", 0)

    log = copilot_session(tmp_path / ".copilot", "5f1c0b9e-0000-4000-8000-000000000001", tmp_path)
    log2 = copilot_session(tmp_path / ".copilot", "5f1c0b9e-0000-4000-8000-000000000002", tmp_path)
    result = imported(tmp_path, log, log2)
    assert result.exit_code == 0, result.stdout[-2000:]
    assert [s["id"] for s in result.json["sessions"]] == ["copilot-5f1c0b9e-0000-4000-8000-000000000001",
                                                           "copilot-5f1c0b9e-0000-4000-8000-000000000002"], "one id per session, never events.jsonl's"
    assert all(s["records"] == 7 and s["status"] == "created" for s in result.json["sessions"])
    notes = tmp_path / "other.jsonl"
    notes.write_bytes(lines({"type": "user", "parentUuid": None, "uuid": "u", "sessionId": "s", "timestamp": "t", "isSidechain": False}))
    other = imported(tmp_path, notes, store="s2")
    assert other.json["sessions"] == [] and [f["code"] for f in other.json["findings"]] == ["unknown-format"]



def _export_md(journal_path: str | Path) -> str:
    result = run_cli("export", "--format", "md", journal_path)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _headings(md: str) -> list[int]:
    out, fence = [], False
    for line in md.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.append(len(line) - len(line.lstrip("#")))
    return out


def test_markdown_export_of_an_imported_vscode_session(tmp_path):
    user = tmp_path / "User"
    empty = user / "globalStorage" / "emptyWindowChatSessions"
    empty.mkdir(parents=True)
    data = agent_session("s-md")
    data["requests"][0]["response"].insert(0, {"value": "# Plan\n\n```\n# not a heading\n```\n## Step one\n"})
    data["requests"].append(request("undone", 1764460900000, rid="r-hidden", isHidden=True, answer="x" * 300))
    (empty / "s-md.json").write_text(json.dumps(data))
    write_index(user / "globalStorage" / "state.vscdb", {"s-md": entry("s-md")})
    result = imported(tmp_path, user)
    (session,) = result.json["sessions"]
    assert session["project"] is None
    md = _export_md(session["path"])
    assert "_ ·" not in md and "\n_ " not in md, "no empty project in the meta line"
    levels = _headings(md)
    assert levels[0] == 1 and levels.count(1) == 1 and all(level >= 2 for level in levels[1:])
    assert "#### Plan" in md and "##### Step one" in md and "\n# not a heading\n" in md, "message headings sit under the export's own"
    assert "- `vscode-remote://wsl+Ubuntu/home/ada/app/main.py`" in md, "attachments one per line, whole"
    assert "Ran `ls -la`" in md and "_(hidden in the editor)_" in md and "edited `vscode-remote://wsl+Ubuntu/home/ada/app/main.py` (3 edits)" in md
    assert "_Not shown in the editor (user, hidden-request)" in md and "> undone" in md
    assert "x" * 300 in md, "an orphan's content is whole, not JSON cut at 120 characters"


def test_markdown_export_of_an_imported_cursor_session(tmp_path):
    from tests.importers.cursor_db import modern_user_dir

    project = tmp_path / "proj"
    project.mkdir()
    info = modern_user_dir(tmp_path / "cursor", project)
    info["conn"].close()
    store = tmp_path / "store"
    result = run_cli("import", "--from", "cursor", "--source", info["user"], "--store", store, "--json")
    (session,) = result.json["sessions"]
    md = _export_md(session["path"])
    levels = _headings(md)
    assert levels[:2] == [1, 2], "a reply before the first prompt never hangs under the title"
    assert "## Turn 1 ·" in md and "## Turn 1.5" not in md
    assert "_Not shown in the editor (assistant, not-in-headers)" in md and "> an edited-away answer" in md
    assert '[{"type":"text"' not in md


def test_tool_inputs_come_from_the_models_calls_aligned_in_order(tmp_path):
    """Agent-mode invocations hold no input of their own: it is in result.metadata.toolCallRounds,
    under the model's name for the tool (read_file for copilot_readFile) and another call id."""
    completed = json.loads((VSCODE / "completed_chat.json").read_text())
    round_call = completed["requests"][0]["result"]["metadata"]["toolCallRounds"][0]["toolCalls"][0]
    parts = [{"kind": "toolInvocationSerialized", "toolCallId": f"u{n}", "toolId": tool, "isComplete": True}
             for n, tool in enumerate(["copilot_readFile", "copilot_findTextInFiles", "vscode_internal_helper", "copilot_readFile", "run_in_terminal"])]
    calls = [{"name": "read_file", "arguments": json.dumps({"filePath": "/a.py"}), "id": "toolu_1__vscode-1"},
             {"name": "grep_search", "arguments": json.dumps({"query": "def main"}), "id": "toolu_2__vscode-2"},
             {"name": "read_file", "arguments": json.dumps({"filePath": "/b.py"}), "id": "toolu_3__vscode-3"},
             {"name": "run_in_terminal", "arguments": "not json", "id": "toolu_4__vscode-4"}]
    data = {"version": 3, "sessionId": "s-rounds", "creationDate": 1764460800000, "requests": [
        request("go", 1764460800000, rid="r0", response=parts, result={"metadata": {"toolCallRounds": [{"toolCalls": calls[:2]}, {"toolCalls": calls[2:]}]}}),
        {**completed["requests"][0], "requestId": "r1"}]}
    user = tmp_path / "User"
    folder = workspace(user, "ws-1", None)
    (folder / "chatSessions" / "s-rounds.json").write_text(json.dumps(data))
    write_index(folder / "state.vscdb", {"s-rounds": entry("s-rounds")})
    result = imported(tmp_path, user)
    (session,) = result.json["sessions"]
    first, second = [r for r in journal(session["path"]) if r["kind"] == "assistant"]
    inputs = [b["input"] for b in first["content"] if b["type"] == "tool_use"]
    assert inputs == [{"filePath": "/a.py"}, {"query": "def main"}, {}, {"filePath": "/b.py"}, {"raw": "not json"}]
    fetch = [b for b in second["content"] if b["type"] == "tool_use"]
    assert fetch[0]["hidden"] is True and fetch[0]["input"] == json.loads(round_call["arguments"]), "the real export's call"


def test_a_second_copy_of_a_session_that_is_not_imported_is_named(tmp_path):
    from tests.importers.vscode_tree import session as make_session

    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    for ws, texts in (("ws-a", ["one"]), ("ws-b", ["one", "two"])):
        folder = workspace(user, ws, {"folder": project.as_uri()})
        (folder / "chatSessions" / "s-dup.json").write_text(json.dumps(make_session("s-dup", texts)))
        write_index(folder / "state.vscdb", {"s-dup": entry("s-dup")})
    result = imported(tmp_path, user)
    (session,) = result.json["sessions"]
    assert [r["content"] for r in journal(session["path"]) if r["kind"] == "user"] == ["one", "two"]
    (note,) = [f for f in result.json["findings"] if f["code"] == "source-skipped"]
    assert "ws-a" in note["path"] and "ws-b" in note["message"] and "vscode-s-dup" in note["message"]


def test_wsl_and_remote_uris_never_become_backslashed_posix_paths():
    import os

    from toolkit.importers.uris import revived_uri_text, uri_to_project

    wsl_remote = {"$mid": 1, "scheme": "vscode-remote", "authority": "wsl+Ubuntu", "path": "/home/u/p", "fsPath": "\\home\\u\\p"}
    assert revived_uri_text(wsl_remote) == "vscode-remote://wsl+Ubuntu/home/u/p"
    assert revived_uri_text({"$mid": 1, "scheme": "file", "path": "/home/u/p", "fsPath": "\\home\\u\\p"}) == "/home/u/p"
    assert revived_uri_text({"$mid": 1, "scheme": "file", "path": "/c:/Users/x", "fsPath": "c:\\Users\\x"}) == "c:\\Users\\x"
    assert uri_to_project("vscode-remote://wsl%2Bubuntu/home/u/p") == ("vscode-remote://wsl%2Bubuntu/home/u/p", False)
    share = uri_to_project("file://wsl.localhost/Ubuntu/home/u/p")[0]
    assert share == ("/home/u/p" if os.name != "nt" else "\\\\wsl.localhost\\Ubuntu\\home\\u\\p")
