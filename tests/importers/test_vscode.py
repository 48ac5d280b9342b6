"""import --from vscode on real files: every store, orphan classification, exact text, safety."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.importers.vscode_tree import reading  # noqa: F401 (every test both ways)
from tests.importers.vscode_tree import VSCODE, build_tree, wrap_export
from toolkit.lines import loads


def journal(path: str | Path) -> list[dict]:
    return [loads(line) for line in Path(path).read_bytes().splitlines()]


def tree_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def tree(tmp_path):
    return build_tree(tmp_path / "home")


def test_every_session_is_found_classified_and_imported_exactly(tmp_path, tree):
    user, expect = tree["user"], tree["expect"]
    before = tree_hashes(user)
    store = tmp_path / "store"
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert tree_hashes(user) == before, "the source tree is byte-identical after the import"
    assert result.exit_code == 0, result.stdout[-3000:]
    sessions = {s["id"].removeprefix("vscode-"): s for s in result.json["sessions"]}
    assert set(sessions) == set(expect), "every session is found, once"
    for sid, want in expect.items():
        got = sessions[sid]
        assert (got["source_status"], got["orphan"]) == (want["status"], want["orphan"]), sid
        assert got["orphaned"] == (want["status"] == "orphaned")
        assert got["project"] == want["project"], sid
        records = journal(got["path"])
        users = [r["content"] for r in records if r["kind"] == "user"]
        assert users == want["texts"], sid
        assert len([r for r in records if r["kind"] == "assistant"]) == len(want["texts"])
    codes = {(f["code"], Path(f["path"]).name) for f in result.json["findings"]}
    assert ("source-torn", "s-torn.jsonl") in codes
    mut = journal(sessions["s-mut"]["path"])
    assert mut[0]["title"] == "Forty mutations" and mut[0]["source"]["version"] == "jsonl:3"
    assert [b["text"] for b in mut[2]["content"]] == ["part A0 part B0"], "streamed parts joined in order"
    assert mut[2]["t"] == "2025-11-30T00:00:09.000Z", "assistant time = modelState.completedAt"
    assert Path(sessions["s-empty"]["path"]).parent.name == "_unassigned"
    assert run_cli("fsck", "--strict", "--store", store).exit_code == 0


def test_reimport_is_a_no_op_and_orphans_only_with_map(tmp_path, tree):
    store = tmp_path / "store"
    args = ("import", "--from", "vscode", "--source", tree["user"], "--store", store, "--json")
    run_cli(*args)
    before = snapshot(store)
    again = run_cli(*args)
    assert {s["status"] for s in again.json["sessions"]} == {"unchanged"}
    assert snapshot(store) == before
    orphans = run_cli("import", "--from", "vscode", "--source", tree["user"], "--store", tmp_path / "o", "--orphans-only", "--json")
    assert {s["id"] for s in orphans.json["sessions"]} == {f"vscode-{sid}" for sid, w in tree["expect"].items() if w["status"] == "orphaned"}
    old = tree["expect"]["s-renamed"]["project"]
    new = old.replace("old-name", "new-name")
    mapped = run_cli("import", "--from", "vscode", "--source", tree["user"], "--store", tmp_path / "m", "--orphans-only",
                     "--map", f"{old}={new}", "--json")
    renamed = next(s for s in mapped.json["sessions"] if s["id"] == "vscode-s-renamed")
    assert renamed["project"] == new


@pytest.mark.parametrize("name", sorted(p.name for p in VSCODE.glob("*.json")))
@pytest.mark.parametrize("as_jsonl", [False, True])
def test_each_export_fixture_imports_with_exact_user_texts(tmp_path, name, as_jsonl):
    project = tmp_path / "proj"
    project.mkdir()
    sid, export = wrap_export(name, tmp_path / "User", project, as_jsonl=as_jsonl)
    result = run_cli("import", "--from", "vscode", "--source", tmp_path / "User", "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.stdout[-2000:]
    requests = export.get("requests") or []
    if not requests:
        assert result.json["sessions"] == [] or journal(result.json["sessions"][0]["path"])[1:] == []
        return
    (session,) = result.json["sessions"]
    records = journal(session["path"])
    assert [r["content"] for r in records if r["kind"] == "user"] == [r["message"]["text"] for r in requests]
    assistants = [r for r in records if r["kind"] == "assistant"]
    assert len(assistants) == len(requests)
    for record, request in zip(assistants, requests):
        tools = [p for p in request["response"] if p.get("kind") == "toolInvocationSerialized"]
        assert [b["id"] for b in record["content"] if b["type"] == "tool_use"] == [p.get("toolCallId", "") for p in tools]
        text = "".join(b["text"] for b in record["content"] if b["type"] == "text")
        assert text == "".join(p["value"] for p in request["response"] if "kind" not in p and isinstance(p.get("value"), str))
        assert record["model"] == request["modelId"]
    if name == "chat_error_mcp.json":
        result_block = next(b for b in assistants[0]["content"] if b["type"] == "tool_result")
        assert result_block["is_error"] and "400" in result_block["content"]
        tool = next(b for b in assistants[0]["content"] if b["type"] == "tool_use")
        assert tool["input"] == {"entry_id": "invalid_id", "fields": {}}
    if name == "in_progress_chat.json":
        assert assistants[0]["status"] == "pending" and assistants[0]["partial"] is True
    assert run_cli("fsck", "--strict", "--store", tmp_path / "store").exit_code == 0


def test_corrupt_index_and_legacy_interactive_sessions(tmp_path):
    from tests.importers.vscode_tree import entry, session, workspace, write_index

    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    folder = workspace(user, "ws-1", {"folder": project.as_uri()})
    (folder / "chatSessions" / "s-file.json").write_text(json.dumps(session("s-file", ["in a file"])))
    bad = {"version": 1, "entries": {"s-file": entry("s-file"), "s-bad": {"sessionId": "s-bad", "title": 7}}}
    legacy = [session("s-old", ["from before 1.99", "stored in state.vscdb"])]
    write_index(folder / "state.vscdb", None, legacy=legacy, raw_index=bad)
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", tmp_path / "store", "--json")
    by_id = {s["id"]: s for s in result.json["sessions"]}
    assert by_id["vscode-s-file"]["orphan"] == ["index-corrupt"], "one bad entry hides the whole workspace in VS Code"
    old = journal(by_id["vscode-s-old"]["path"])
    assert old[0]["source"]["key"] == "interactive.sessions#s-old" and old[0]["source"]["version"].startswith("vscdb:")
    assert [r["content"] for r in old if r["kind"] == "user"] == ["from before 1.99", "stored in state.vscdb"]
    one_db = run_cli("import", "--from", "vscode", "--source", folder / "state.vscdb", "--store", tmp_path / "s2", "--json")
    assert one_db.exit_code == 0 and {s["id"] for s in one_db.json["sessions"]} == set(by_id), "a state.vscdb stands for its workspace"
    (tmp_path / "notes.txt").write_text("not a chat")
    bad = run_cli("import", "--from", "vscode", "--source", tmp_path / "notes.txt", "--store", tmp_path / "s3")
    assert bad.exit_code == 8 and "not an editor's chat history" in bad.stderr and "--source" in bad.stderr


def test_agent_sessions_view_state_becomes_pin_and_archive_events(tmp_path):
    import base64
    import sqlite3

    from tests.importers.vscode_tree import entry, session, workspace, write_index

    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    folder = workspace(user, "ws-1", {"folder": project.as_uri()})
    for sid in ("s-pinned", "s-archived", "s-plain"):
        (folder / "chatSessions" / f"{sid}.json").write_text(json.dumps(session(sid, [f"hello from {sid}"])))
    write_index(folder / "state.vscdb", {sid: entry(sid) for sid in ("s-pinned", "s-archived", "s-plain")})

    def resource(sid: str) -> str:
        return "vscode-chat-session://local/" + base64.urlsafe_b64encode(sid.encode()).decode().rstrip("=")

    views = [{"resource": resource("s-pinned"), "archived": False, "pinned": True},
             {"resource": resource("s-archived"), "archived": True},
             {"resource": "vscode-chat-session://local/%%%not-base64", "pinned": True}, 7]
    conn = sqlite3.connect(folder / "state.vscdb")
    conn.execute("insert into ItemTable values (?, ?)", ("agentSessions.state.cache", json.dumps(views)))
    conn.commit()
    conn.close()
    store = tmp_path / "store"
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert result.exit_code == 0, result.stdout[-2000:]
    events = {s["id"]: [r["type"] for r in journal(s["path"]) if r["kind"] == "event"] for s in result.json["sessions"]}
    assert events == {"vscode-s-pinned": ["pin"], "vscode-s-archived": ["archive"], "vscode-s-plain": []}
    (index,) = store.glob("*/index.json")
    flags = {e["id"]: (e["pinned"], e["archived"]) for e in loads(index.read_bytes())["sessions"]}
    assert flags == {"vscode-s-pinned": (True, False), "vscode-s-archived": (False, True), "vscode-s-plain": (False, False)}
    assert run_cli("fsck", "--strict", "--store", store).exit_code == 0


def test_hidden_requests_become_orphan_events(tmp_path):
    from tests.importers.vscode_tree import request, workspace, write_index, entry

    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    folder = workspace(user, "ws-1", {"folder": project.as_uri()})
    data = {"version": 3, "sessionId": "s-h", "creationDate": 1764460800000,
            "requests": [request("kept", 1764460800000, rid="a"), request("undone", 1764460860000, rid="b", isHidden=True),
                         request("kept too", 1764460920000, rid="c")]}
    (folder / "chatSessions" / "s-h.json").write_text(json.dumps(data))
    write_index(folder / "state.vscdb", {"s-h": entry("s-h")})
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", tmp_path / "store", "--json")
    records = journal(result.json["sessions"][0]["path"])[1:]
    assert [r["content"] for r in records if r["kind"] == "user"] == ["kept", "kept too"]
    events = [r for r in records if r["kind"] == "event"]
    assert [(e["role"], e["reason"]) for e in events] == [("user", "hidden-request"), ("assistant", "hidden-request")]
    assert records[-1] is events[-1] or records[-1] == events[-1]


def test_a_reply_imported_mid_flight_is_superseded_once_complete(tmp_path):
    """in_progress_chat then completed_chat (the same request, finished): the second import
    appends the finished reply with "replaces" pointing at the partial one; nothing is rewritten."""
    from tests.importers.vscode_tree import workspace, write_index, entry

    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    folder = workspace(user, "ws-1", {"folder": project.as_uri()})
    write_index(folder / "state.vscdb", {"s-1": entry("s-1")})
    path = folder / "chatSessions" / "s-1.json"
    store = tmp_path / "store"
    for name in ("in_progress_chat.json", "completed_chat.json"):
        export = json.loads((VSCODE / name).read_text())
        path.write_text(json.dumps({"version": 3, "sessionId": "s-1", "creationDate": export["requests"][0]["timestamp"], **export}))
        result = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
        assert result.exit_code == 0
    (session,) = result.json["sessions"]
    assert session["status"] == "updated" and session["new_records"] == 1
    records = journal(session["path"])
    assistants = [r for r in records if r["kind"] == "assistant"]
    assert [a.get("partial", False) for a in assistants] == [True, False]
    assert assistants[1]["replaces"] == assistants[0]["seq"] and assistants[1]["status"] == "complete"
    again = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert again.json["sessions"][0]["status"] == "unchanged", "a superseded record is not superseded twice"


def test_import_resumes_after_being_killed_mid_append_and_never_writes_through_a_symlink(tmp_path, tree):
    store = tmp_path / "store"
    args = ("import", "--from", "vscode", "--source", tree["user"], "--store", store, "--json")
    first = run_cli(*args)
    live = next(s for s in first.json["sessions"] if s["id"] == "vscode-s-live")
    path = Path(live["path"])
    complete = path.read_bytes()
    lines = complete.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]) + lines[-2][:25])  # killed mid-append: the last two records cut
    again = run_cli(*args)
    assert next(s for s in again.json["sessions"] if s["id"] == "vscode-s-live")["status"] == "updated"
    assert ("torn-tail", True) in {(f["code"], f["repaired"]) for f in again.json["findings"]}
    assert path.read_bytes() == complete, "the rerun trims the torn record and appends the rest again"
    assert any(p.name.endswith(".tail") for p in (store / ".levelsess" / "recovered").iterdir())

    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(b"".join(lines[:3]))
    path.unlink()
    path.symlink_to(outside)
    linked = run_cli(*args)
    assert ("symlink", str(path)) in {(f["code"], f["path"]) for f in linked.json["findings"]}
    assert outside.read_bytes() == b"".join(lines[:3]), "never written through"


ODD_SESSIONS = [
    {"version": 3, "requests": 5},
    {"version": 3, "requests": [{"requestId": "r", "message": {"text": "t"}, "response": 5}]},
    {"version": 3, "requests": [{"requestId": "r", "message": {"text": "t"}, "response": [{"kind": "markdownContent", "content": "x"}]}]},
    {"version": 3, "requests": [{"requestId": "r", "message": {"text": "t"}, "modelState": {"value": [1]}}]},
    {"version": 3, "creationDate": 1e20, "requests": [{"requestId": "r", "timestamp": 1e17, "message": {"text": "t"}}]},
    {"version": 3, "requests": [{"requestId": "r", "message": {"text": "t"}, "variableData": {"variables": 4},
                                 "response": [{"kind": "inlineReference", "inlineReference": {"location": "x"}}]}]},
    {"version": 3, "requests": [{"requestId": "r", "message": {"text": "t"}, "result": "ab", "responseErrorDetails": {"message": "e"}}]},
]


def test_odd_values_and_an_unreadable_database_never_stop_an_import(tmp_path):
    from tests.importers.vscode_tree import entry, session, workspace, write_index

    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    folder = workspace(user, "ws-odd", {"folder": project.as_uri()})
    for n, odd in enumerate(ODD_SESSIONS):
        (folder / "chatSessions" / f"odd-{n}.json").write_text(json.dumps({"sessionId": f"odd-{n}", **odd}))
    (folder / "chatSessions" / "fine.json").write_text(json.dumps(session("fine", ["still imported"])))
    write_index(folder / "state.vscdb", {"fine": entry("fine")})
    broken = workspace(user, "ws-broken", {"folder": project.as_uri()})
    (broken / "state.vscdb").write_bytes(b"")  # a 0-byte database
    (broken / "chatSessions" / "b.json").write_text(json.dumps(session("b", ["beside a broken index"])))
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", tmp_path / "store", "--json")
    assert "Traceback" not in result.stderr and result.exit_code in (0, 4, 8, 12)
    ids = {s["id"] for s in result.json["sessions"]}
    assert {"vscode-fine", "vscode-b"} <= ids, "the rest still imports"
    for outcome in result.json["sessions"]:
        assert run_cli("fsck", "--strict", outcome["path"]).exit_code == 0, outcome["id"]
    doctor_home = run_cli("doctor", "--json")
    assert doctor_home.exit_code == 0


def test_two_imports_at_once_converge_to_one_import(tmp_path, tree):
    """Found in review: an import used to read a journal before taking its lock, so two at
    once could duplicate records or overwrite each other.  Now both end in the same bytes."""
    import subprocess
    import sys

    reference = tmp_path / "reference"
    run_cli("import", "--from", "vscode", "--source", tree["user"], "--store", reference)
    expected = {p.relative_to(reference): p.read_bytes() for p in reference.rglob("*.jsonl")}
    for round_ in range(3):
        store = tmp_path / f"store-{round_}"
        argv = [sys.executable, "-m", "toolkit.cli", "import", "--from", "vscode", "--source", str(tree["user"]), "--store", str(store), "-q"]
        procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(3)]
        for proc in procs:
            assert proc.wait() in (0, 4), proc.stderr.read().decode()[-2000:]
            proc.stderr.close()
        got = {p.relative_to(store): p.read_bytes() for p in store.rglob("*.jsonl")}
        assert got == expected
        assert run_cli("fsck", "--store", store).exit_code == 0
