"""`levelsess restore --app vscode` on real workspaceStorage trees (real state.vscdb SQLite files,
session files made from the real exports in shared/fixtures/vscode): every session file gets an
index entry VS Code keeps, an independent reader of SOURCES §3.5 lists each with its title; a
renamed folder's chats are copied to its new workspace with --map; a log VS Code cannot open is
repaired; undo puts every byte back; a second run changes nothing; a running VS Code is refused."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.restore.kit import FIXTURES, restore, tree
from tests.restore.readers import vscode_chats, vscode_index, vscode_opens

if FIXTURES is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)

VSCODE = FIXTURES / "vscode"
KEY = "chat.ChatSessionStore.index"
A, B, C, D = (f"{n}aaaaaaa-1111-4222-8333-44445555666{n}" for n in range(4))


def session(name: str, sid: str, **extra) -> dict:
    """A fixture export as VS Code stores it (SOURCES §6): version 3, a sessionId, a creationDate."""
    export = json.loads((VSCODE / name).read_text(encoding="utf-8"))
    stamps = [r["timestamp"] for r in export["requests"]]
    return {"version": 3, "sessionId": sid, "creationDate": stamps[0] if stamps else 1759000000000, **export, **extra}


def log(state: dict) -> bytes:
    """The same session as a ``.jsonl`` mutation log: a kind-0 line without requests, then a push of them."""
    head = {**state, "requests": []}
    return (json.dumps({"kind": 0, "v": head}) + "\n" + json.dumps({"kind": 2, "k": ["requests"], "v": state["requests"]}) + "\n").encode()


def make_db(path: Path, index: object = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO ItemTable VALUES ('workbench.panel.chat', '{\"collapsed\":false}')")
    if index is not None:
        conn.execute("INSERT INTO ItemTable VALUES (?, ?)", (KEY, index if isinstance(index, str) else json.dumps(index)))
    conn.commit()
    conn.close()


def workspace(user: Path, wsid: str, folder: Path, files: dict[str, bytes], index: object = None) -> Path:
    ws = user / "workspaceStorage" / wsid
    (ws / "chatSessions").mkdir(parents=True)
    (ws / "workspace.json").write_text(json.dumps({"folder": folder.as_uri()}))
    make_db(ws / "state.vscdb", index)
    for name, data in files.items():
        (ws / "chatSessions" / name).write_bytes(data)
    return ws


def entry(sid: str, title: str, date: int = 1759353161760, **extra) -> dict:
    return {"sessionId": sid, "title": title, "lastMessageDate": date, **extra}


def every_file_indexed(ws: Path) -> bool:
    entries = vscode_index(ws / "state.vscdb")
    return entries is not None and {p.stem for p in (ws / "chatSessions").iterdir()} <= set(entries)


@pytest.fixture
def user(tmp_path: Path) -> Path:
    user = tmp_path / "Code" / "User"
    (user / "globalStorage").mkdir(parents=True)
    return user


def test_an_index_missing_entries_and_naming_a_gone_file_is_rebuilt_and_undo_puts_every_byte_back(tmp_path, user):
    project = tmp_path / "shop"
    project.mkdir()
    ws = workspace(user, "a1", project, {
        f"{A}.json": json.dumps(session("completed_chat.json", A)).encode(),
        f"{B}.jsonl": log(session("parse_export_chat.json", B)),
        f"{C}.json": json.dumps(session("pending_chat.json", C)).encode(),
    }, {"version": 1, "entries": {A: entry(A, "Snow leopards", isEmpty=True), D: entry(D, "deleted long ago")}})
    make_db(user / "globalStorage" / "state.vscdb")
    (user / "globalStorage" / "emptyWindowChatSessions").mkdir()
    (user / "globalStorage" / "emptyWindowChatSessions" / f"{D}.json").write_bytes(json.dumps(session("chat_succes_mcp.json", D)).encode())
    assert vscode_chats(ws / "chatSessions", ws / "state.vscdb") == {}, "isEmpty hides A; B has no entry"
    before = tree(user)

    plan = restore("--app", "vscode", "--source", user)
    assert plan.exit_code == 4 and tree(user) == before
    change = next(c for c in plan.json["indexes"] if c["db"] == str(ws / "state.vscdb"))
    assert (sorted(change["added"]), change["dropped"], change["fixed"]) == (sorted([B, C]), [D], [A])

    done = restore("--app", "vscode", "--source", user, "--yes")
    assert done.exit_code == 0, done.stdout
    assert vscode_chats(ws / "chatSessions", ws / "state.vscdb") == {A: "Snow leopards", B: "hi"}, "the kept title stays"
    assert vscode_index(ws / "state.vscdb")[C]["isEmpty"] is True, "an empty session is indexed, and hidden"
    empty = user / "globalStorage"
    assert list(vscode_chats(empty / "emptyWindowChatSessions", empty / "state.vscdb")) == [D]
    assert every_file_indexed(ws)
    conn = sqlite3.connect(ws / "state.vscdb")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT value FROM ItemTable WHERE key = 'workbench.panel.chat'").fetchone() == ('{"collapsed":false}',)
    conn.close()

    after = tree(user)
    again = restore("--app", "vscode", "--source", user, "--yes")
    assert (again.exit_code, again.json["stamp"], again.json["indexes"]) == (0, None, []) and tree(user) == after

    undo = restore("--undo", done.json["stamp"])
    assert undo.exit_code == 0, undo.stdout
    assert tree(user) == before


def test_an_index_vscode_would_discard_whole_is_rebuilt_keeping_its_titles(tmp_path, user):
    project = tmp_path / "p"
    project.mkdir()
    ws = workspace(user, "b2", project, {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode(),
                                         f"{B}.json": json.dumps(session("chat_error_mcp.json", B)).encode()},
                   {"version": 1, "entries": {A: entry(A, "Leopards"), B: {"sessionId": B, "title": "Broken MCP"}}})
    assert vscode_index(ws / "state.vscdb") is None, "one entry without lastMessageDate: VS Code drops them all"
    done = restore("--app", "vscode", "--source", user, "--yes")
    assert done.exit_code == 0, done.stdout
    assert vscode_chats(ws / "chatSessions", ws / "state.vscdb") == {A: "Leopards", B: "Broken MCP"}
    assert vscode_index(ws / "state.vscdb")[B]["lastMessageDate"] == 1759432977192


def test_a_renamed_folder_s_chats_are_copied_to_its_new_workspace_with_map(tmp_path, user):
    old, new = tmp_path / "old-name", tmp_path / "new-name"
    new.mkdir()  # renamed: old is gone
    files = {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode(), f"{B}.jsonl": log(session("parse_export_chat.json", B))}
    orphan = workspace(user, "old1", old, files, {"version": 1, "entries": {A: entry(A, "Leopards"), B: entry(B, "hi")}})
    fresh = workspace(user, "new1", new, {}, {"version": 1, "entries": {}})
    before = tree(user)

    plain = restore("--app", "vscode", "--source", user)
    assert plain.exit_code == 4 and [f["code"] for f in plain.json["findings"]] == ["folder-missing"]
    assert f"--map {old}=" in plain.json["findings"][0]["message"] and tree(user) == before

    done = restore("--app", "vscode", "--source", user, "--map", f"{old}={new}", "--yes")
    assert done.exit_code == 0, done.stdout
    assert vscode_chats(fresh / "chatSessions", fresh / "state.vscdb") == {A: "Leopards", B: "hi"}
    for name, data in files.items():
        assert (fresh / "chatSessions" / name).read_bytes() == data and (orphan / "chatSessions" / name).read_bytes() == data
    assert tree(orphan) == {k[len("workspaceStorage/old1/"):]: v for k, v in before.items() if k.startswith("workspaceStorage/old1/")}

    after = tree(user)
    again = restore("--app", "vscode", "--source", user, "--map", f"{old}={new}", "--yes")
    assert again.json["stamp"] is None and (again.json["copies"], again.json["indexes"]) == ([], []) and tree(user) == after
    assert restore("--undo", done.json["stamp"]).exit_code == 0
    assert tree(user) == before


def test_map_to_a_folder_vscode_never_opened_says_so_and_writes_nothing(tmp_path, user):
    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    workspace(user, "old1", old, {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode()})
    before = tree(user)
    result = restore("--app", "vscode", "--source", user, "--map", f"{old}={new}", "--yes")
    assert result.exit_code == 4 and tree(user) == before
    (finding,) = [f for f in result.json["findings"] if f["code"] == "restore-target-missing"]
    assert f"open {new} once in VS Code" in finding["message"]


def test_a_session_file_already_there_with_other_bytes_is_never_overwritten(tmp_path, user):
    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    workspace(user, "old1", old, {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode(),
                                  f"{B}.json": json.dumps(session("parse_export_chat.json", B)).encode()})
    mine = json.dumps(session("in_progress_chat.json", A)).encode()
    fresh = workspace(user, "new1", new, {f"{A}.json": mine})
    result = restore("--app", "vscode", "--source", user, "--map", f"{old}={new}", "--yes")
    assert result.exit_code == 4 and [f["code"] for f in result.json["findings"]] == ["restore-conflict"]
    assert (fresh / "chatSessions" / f"{A}.json").read_bytes() == mine
    assert set(vscode_chats(fresh / "chatSessions", fresh / "state.vscdb")) == {A, B}


def test_logs_vscode_cannot_open_are_repaired_and_the_originals_kept(tmp_path, user):
    project = tmp_path / "p"
    project.mkdir()
    good = log(session("parse_export_chat.json", A))
    bom = b"\xef\xbb\xbf" + good
    headless = good.split(b"\n", 1)[1]  # the push without its kind-0 line
    ws = workspace(user, "c3", project, {f"{A}.jsonl": bom, f"{B}.jsonl": headless,
                                         f"{B}.json": json.dumps(session("parse_export_chat.json", B)).encode()})
    assert not vscode_opens(ws / "chatSessions" / f"{A}.jsonl") and not vscode_opens(ws / "chatSessions" / f"{B}.jsonl")
    for name, bits in ((f"{A}.jsonl", 0o600), (f"{B}.jsonl", 0o640), ("../state.vscdb", 0o600)):
        (ws / "chatSessions" / name).chmod(bits)
    modes = _modes(ws)
    before = tree(user)
    done = restore("--app", "vscode", "--source", user, "--yes")
    assert done.exit_code == 0, done.stdout
    assert sorted(r["path"] for r in done.json["repairs"]) == sorted(str(ws / "chatSessions" / f"{s}.jsonl") for s in (A, B))
    assert vscode_chats(ws / "chatSessions", ws / "state.vscdb") == {A: "hi", B: "hi"}
    repaired = json.loads((ws / "chatSessions" / f"{A}.jsonl").read_bytes())
    assert [r["message"]["text"] for r in repaired["v"]["requests"]] == ["hi", "hello"]
    backups = list((Path(done.json["backup"]) / "backup").iterdir())
    assert sorted(p.read_bytes() for p in backups if p.suffix == ".jsonl") == sorted([bom, headless])
    assert _modes(ws) == modes, "a repaired log keeps its permission bits"
    assert restore("--app", "vscode", "--source", user, "--yes").json["stamp"] is None
    assert restore("--undo", done.json["stamp"]).exit_code == 0
    assert tree(user) == before
    assert _modes(ws) == modes, "undo puts the permission bits back with the bytes"


def _modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mode & 0o7777 for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_running_vscode_holding_the_database_is_refused_and_nothing_is_written(tmp_path, user):
    project = tmp_path / "p"
    project.mkdir()
    ws = workspace(user, "d4", project, {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode()})
    before = tree(user)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'r+b'); print('open', flush=True); "
                               "time.sleep(60)", str(ws / "state.vscdb")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        result = restore("--app", "vscode", "--source", user, "--yes")
        assert result.exit_code == 4 and result.json["stamp"] is None
        assert [f["code"] for f in result.json["findings"]] == ["in-use"] and f"pid {holder.pid}" in result.json["findings"][0]["message"]
        assert tree(user) == before
    finally:
        holder.kill()
        holder.wait()
    assert restore("--app", "vscode", "--source", user, "--yes").exit_code == 0
    assert list(vscode_chats(ws / "chatSessions", ws / "state.vscdb")) == [A]


def test_bad_usage_is_a_clear_error(tmp_path, user):
    for args in (("--app", "cursor"), ("--app", "vscode", "some-id"), ("--map", "a=b"), ("--app", "vscode", "--map", "nonsense")):
        result = restore(*args, "--source", user)
        assert result.exit_code == 16 and result.json["error"]["type"] == "UsageError", (args, result.stdout)
    assert restore("--app", "vscode", "--source", tmp_path / "nowhere").exit_code != 0


# -- the rebuild rule, for any index and any set of files ---------------------------------------

_ids = st.sampled_from([A, B, C, D, "x", "y"])
_entries = st.dictionaries(_ids, st.one_of(
    st.builds(lambda t, d, e: {"title": t, "lastMessageDate": d, **({"isEmpty": e} if e is not None else {})},
              st.text(max_size=5), st.integers(0, 2**40), st.none() | st.booleans()),
    st.just({"title": 3}), st.just("junk")), max_size=6)


@settings(max_examples=150, deadline=None)
@given(entries=_entries, files=st.dictionaries(_ids, st.integers(0, 2), max_size=6), own_ids=st.booleans())
def test_the_rebuilt_index_is_valid_names_every_file_and_keeps_every_valid_entry(entries, files, own_ids):
    from toolkit.restore.vscode import Session, rebuild, valid_entry

    old = {k: ({**v, "sessionId": k} if own_ids and isinstance(v, dict) else v) for k, v in entries.items()}
    sessions = {sid: Session(sid, {}, {"version": 3, "requests": [{"message": {"text": f"q{n}"}, "timestamp": 1000 + n}
                                                                 for n in range(count)]}) for sid, count in files.items()}
    index, added, dropped, fixed, kept = rebuild(json.dumps({"version": 1, "entries": old}).encode(), sessions)
    assert index["version"] == 1 and set(index["entries"]) == set(files)
    assert all(valid_entry(e) and e["sessionId"] == k for k, e in index["entries"].items())
    assert set(dropped) == set(old) - set(files)
    for sid, count in files.items():
        e = index["entries"][sid]
        assert (e.get("isEmpty") is True) <= (count == 0)
        if valid_entry(old.get(sid)) and old[sid]["sessionId"] == sid and not (old[sid].get("isEmpty") is True and count):
            assert e == old[sid]
        elif isinstance(old.get(sid), dict) and isinstance(old[sid].get("title"), str) and old[sid]["title"].strip():
            assert e["title"] == old[sid]["title"]
    again = rebuild(json.dumps(index).encode(), sessions)
    assert again[0] == index and again[1:4] == ([], [], []), "a second rebuild changes nothing"


def test_a_wal_database_with_rows_still_in_its_wal_is_backed_up_with_it_and_undone_byte_for_byte(tmp_path, user):
    project = tmp_path / "p"
    project.mkdir()
    ws = workspace(user, "e5", project, {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode()})
    db = ws / "state.vscdb"
    subprocess.run([sys.executable, "-c", "import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); "
                    "c.execute(\"INSERT INTO ItemTable VALUES ('late', 'in the wal')\"); c.commit(); os._exit(0)", str(db)], check=True)
    assert (ws / "state.vscdb-wal").stat().st_size > 0, "a VS Code killed before its checkpoint leaves rows in the -wal"
    before = tree(user)
    done = restore("--app", "vscode", "--source", user, "--yes")
    assert done.exit_code == 0, done.stdout
    assert list(vscode_chats(ws / "chatSessions", db)) == [A]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM ItemTable WHERE key = 'late'").fetchone() == ("in the wal",)
    conn.close()
    assert restore("--undo", done.json["stamp"]).exit_code == 0
    assert tree(user) == before


def test_a_result_vscode_would_not_read_undoes_the_whole_run(tmp_path, user, monkeypatch):
    from toolkit.findings import Finding
    from toolkit.restore import vscode

    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    workspace(user, "old1", old, {f"{A}.json": json.dumps(session("completed_chat.json", A)).encode()})
    workspace(user, "new1", new, {f"{B}.jsonl": b"\xef\xbb\xbf" + log(session("parse_export_chat.json", B))})
    before = tree(user)
    monkeypatch.setattr(vscode, "verify", lambda plan: [Finding("restore-verify-failed", "error", "x", None, None, "read back wrong")])
    result = restore("--app", "vscode", "--source", user, "--map", f"{old}={new}", "--yes")
    assert (result.exit_code, result.json["undone"]) == (8, True)
    assert tree(user) == before, "the copy, the repaired log and the index row are all taken back"
