"""import --from cursor accounts for every source item: each bubble becomes a record or is
counted under ``skipped`` (by reason) and named in a finding; every journal passes fsck --strict."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.cursor_db import CURSOR, modern_user_dir, new_db, put
from toolkit.lines import loads


def journal(path: Path) -> list[dict]:
    return [loads(line) for line in path.read_bytes().splitlines()]


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def imported(tmp_path: Path, source: Path, *extra: str, exit_code: int | None = 0, root: Path | None = None):
    """Import ``source`` and check the rules every import keeps: the source folder is
    byte-identical, items = records + skipped for every session, the store passes fsck --strict."""
    root = root or (source if source.is_dir() else source.parent)
    before = hashes(root)
    store = tmp_path / "store"
    result = run_cli("import", "--from", "cursor", "--source", source, "--store", store, "--json", *extra)
    assert "Traceback" not in result.stderr, result.stderr
    if exit_code is not None:
        assert result.exit_code == exit_code, result.stdout[-3000:]
    assert hashes(root) == before, "the source is never written"
    for session in result.json["sessions"]:
        records = journal(Path(session["path"]))[1:]
        from_items = [r for r in records if r["kind"] != "title" and not (r["kind"] == "event" and r.get("type") == "archive")]
        assert session["source_items"] == len(from_items) + sum(session["skipped"].values()), session
        assert all(isinstance(r.get("t"), str) for r in records), "never a null time"
    if result.json["sessions"]:
        strict = run_cli("fsck", "--strict", "--store", store)
        assert strict.exit_code == 0, strict.stdout[-3000:]
    return result


def skipped_keys(result, reason_text: str = "") -> str:
    return " ".join(f["message"] for f in result.json["findings"] if f["code"] == "source-skipped" and reason_text in f["message"])


# --- the real fixtures ----------------------------------------------------------------------


def test_legacy_workspace_fixture_accounts_for_every_bubble(tmp_path):
    source = tmp_path / "ws" / "state.vscdb"
    source.parent.mkdir()
    shutil.copyfile(CURSOR / "legacy-workspace-2024-11.state.vscdb", source)
    result = imported(tmp_path, source)
    tabs = [s for s in result.json["sessions"] if s["id"].startswith("cursor-tab-")]
    assert len(tabs) == 5 and all(s["skipped"] == {"input-box": 1} for s in tabs), "each tab's empty input box, counted"
    assert sum(s["source_items"] for s in result.json["sessions"]) == 49 + 82
    named = skipped_keys(result, "input box")
    assert all(f"#{s['id'][len('cursor-tab-'):]}#" in named for s in tabs), "the skipped keys are named"


def test_synthetic_nulls_fixture_accounts_for_every_bubble(tmp_path):
    source = tmp_path / "src" / "state.vscdb"
    source.parent.mkdir()
    shutil.copyfile(CURSOR / "synthetic-global-nulls.state.vscdb", source)
    result = imported(tmp_path, source, exit_code=4)
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"unreadable": 1, "dangling": 1, "no-bubble-id": 1}


@pytest.fixture
def modern(tmp_path):
    project = tmp_path / "code" / "proj"
    project.mkdir(parents=True)
    info = modern_user_dir(tmp_path / "cursor", project)
    info["conn"].close()
    return info


def test_real_bubbles_account_for_every_header_and_orphan(tmp_path, modern):
    result = imported(tmp_path, modern["user"], exit_code=4)  # one NULL row: a source-unreadable error
    (session,) = result.json["sessions"]
    assert session["source_items"] == 118 + 2 + 1, "118 headers + a dangling one + one without id, + 1 orphan row"
    assert session["skipped"]["unreadable"] == 1 and session["skipped"]["dangling"] == 1 and session["skipped"]["no-bubble-id"] == 1
    empty = session["skipped"].get("empty", 0)
    if empty:
        assert skipped_keys(result, "nothing to show").count("bubbleId:") == empty


# --- bubbles built for one rule each ------------------------------------------------------------


def global_db(tmp_path: Path, composers: dict[str, tuple[dict | None, list[tuple[str, dict | None]]]], headers: bool = True) -> Path:
    """A User folder whose global DB holds ``{cid: (composerData or None, [(bid, bubble)])}``; the
    composer lists its bubbles in headers unless it is None or ``headers`` is false."""
    user = tmp_path / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    for cid, (composer, bubbles) in composers.items():
        if composer is not None:
            listed = [{"bubbleId": bid, "type": (b or {}).get("type", 2)} for bid, b in bubbles] if headers else []
            put(conn, f"composerData:{cid}", {"fullConversationHeadersOnly": listed, "createdAt": 1765808373121, **composer})
        for bid, bubble in bubbles:
            put(conn, f"bubbleId:{cid}:{bid}", bubble)
    conn.commit()
    conn.close()
    return user


EMPTY_PARAGRAPH = json.dumps({"root": {"children": [{"children": [], "type": "paragraph"}], "type": "root"}})


def test_a_user_bubble_of_attachments_only_is_a_user_turn_with_its_attachments(tmp_path):
    image = {"uuid": "u1", "path": "/home/ada/shot.png", "dimension": {"width": 758, "height": 335}}
    selection = {"uri": {"fsPath": "/home/ada/p/app.ts"}, "rawText": "const x = 1;",
                 "range": {"selectionStartLineNumber": 21, "selectionStartColumn": 1, "positionLineNumber": 24, "positionColumn": 3}}
    user = {"type": 1, "text": "", "richText": EMPTY_PARAGRAPH, "createdAt": "2025-12-15T14:00:00.000Z",
            "context": {"selectedImages": [image], "fileSelections": [{"uri": {"fsPath": "/home/ada/p/main.ts"}}], "selections": [selection]}}
    answer = {"type": 2, "text": "I see a screenshot.", "createdAt": "2025-12-15T14:00:05.000Z"}
    src = global_db(tmp_path, {"c1": ({"status": "completed"}, [("u", user), ("a", answer)])})
    result = imported(tmp_path, src)
    (session,) = result.json["sessions"]
    assert session["skipped"] == {} and session["source_items"] == 2
    turn = journal(Path(session["path"]))[1]
    assert turn["kind"] == "user" and turn["content"] == [
        {"type": "image", "path": "/home/ada/shot.png", "width": 758, "height": 335},
        {"type": "file", "path": "/home/ada/p/main.ts"},
        {"type": "selection", "path": "/home/ada/p/app.ts", "range": selection["range"], "text": "const x = 1;"}]
    assert turn["contextFiles"] == ["/home/ada/p/main.ts", "/home/ada/p/app.ts"]


def test_a_bubble_with_nothing_to_show_is_counted_and_named(tmp_path):
    stub = {"type": 2, "text": "", "toolFormerData": {"additionalData": {}}, "createdAt": "2025-12-15T14:00:05.000Z"}
    odd = {"type": 7, "text": "a kind of bubble never seen"}
    src = global_db(tmp_path, {"c1": ({"status": "completed"}, [("u", {"type": 1, "text": "hi"}), ("stub", stub), ("odd", odd)])})
    result = imported(tmp_path, src, exit_code=4)  # a bubble we cannot interpret is an error, not a silence
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"empty": 1, "unknown-type": 1}
    assert "bubbleId:c1:stub" in skipped_keys(result, "nothing to show")
    assert any(f["code"] == "source-unreadable" and f["path"].endswith("#bubbleId:c1:odd") for f in result.json["findings"])


def test_legacy_tab_bubbles_carry_their_top_level_file_and_code_selections(tmp_path):
    source = tmp_path / "ws" / "state.vscdb"
    conn = new_db(source, tables=("ItemTable",))
    selection = {"uri": {"fsPath": "/p/routes.ts"}, "rawText": "x", "range": {"selectionStartLineNumber": 2}}
    tab = {"tabId": "t1", "chatTitle": "tab", "lastSendTime": 1731784617890, "bubbles": [
        {"type": "user", "id": "b1", "text": "fix this", "fileSelections": [{"uri": {"fsPath": "/p/main.ts"}}], "selections": [selection]},
        {"type": "ai", "id": "b2", "text": "done"},
        {"type": "user", "id": "b3", "text": "", "fileSelections": [{"uri": {"fsPath": "/p/main.ts"}}], "selections": []},
        {"type": "ai", "id": "b4", "text": "that file again"},
        {"type": "user", "id": "b5", "text": ""}]}
    put(conn, "workbench.panel.aichat.view.aichat.chatdata", {"tabs": [tab]}, table="ItemTable")
    conn.commit()
    conn.close()
    result = imported(tmp_path, source)
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"input-box": 1} and session["source_items"] == 5
    records = journal(Path(session["path"]))[1:]
    assert records[0]["contextFiles"] == ["/p/main.ts", "/p/routes.ts"]
    assert records[2]["content"] == [{"type": "file", "path": "/p/main.ts"}], "a turn of attachments only"


def test_orphans_keep_the_write_order_and_borrow_a_neighbours_time(tmp_path):
    header = {"type": 1, "text": "question", "createdAt": "2025-12-15T14:00:00.000Z"}
    # written in this order; their random ids sort the other way round
    orphans = [("zz-first", {"type": 2, "text": "first rewrite", "createdAt": "2025-12-15T14:05:00.000Z"}),
               ("mm-second", {"type": 2, "text": "second rewrite, no time of its own"}),
               ("aa-third", {"type": 2, "text": "third rewrite", "createdAt": "2025-12-15T14:01:00.000Z"})]
    user = tmp_path / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    put(conn, "composerData:c1", {"fullConversationHeadersOnly": [{"bubbleId": "h", "type": 1}], "createdAt": 1765807000000})
    put(conn, "bubbleId:c1:h", header)
    for bid, bubble in orphans:
        put(conn, f"bubbleId:c1:{bid}", bubble)
    conn.commit()
    conn.close()
    result = imported(tmp_path, user)
    (session,) = result.json["sessions"]
    events = [r for r in journal(Path(session["path"]))[1:] if r["kind"] == "event"]
    assert [e["sourceKey"].rpartition(":")[2] for e in events] == ["zz-first", "mm-second", "aa-third"]
    assert events[1]["t"] == "2025-12-15T14:05:00.000Z" and events[1]["tInferred"] is True
    assert "tInferred" not in events[0] and events[2]["t"] == "2025-12-15T14:01:00.000Z"


def test_orphans_with_no_time_anywhere_still_get_one(tmp_path):
    user = tmp_path / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    put(conn, "composerData:c1", {"fullConversationHeadersOnly": []})
    put(conn, "bubbleId:c1:b", {"type": 2, "text": "timeless"})
    conn.commit()
    conn.close()
    result = imported(tmp_path, user)
    (session,) = result.json["sessions"]
    (event,) = journal(Path(session["path"]))[1:]
    assert event["tInferred"] is True and event["t"].endswith("Z")


def test_a_user_bubble_without_time_takes_the_answers_request_time(tmp_path):
    bubbles = [("u1", {"type": 1, "text": "first", "createdAt": "2025-12-15T14:00:00.000Z"}),
               ("a1", {"type": 2, "text": "one", "createdAt": "2025-12-15T14:00:04.000Z"}),
               ("u2", {"type": 1, "text": "second, sent an hour later"}),
               ("a2", {"type": 2, "text": "two", "timingInfo": {"clientStartTime": 1234, "clientRpcSendTime": 1765811000000}}),
               ("u3", {"type": 1, "text": "third, never answered"})]
    src = global_db(tmp_path, {"c1": ({"status": "completed"}, bubbles)})
    result = imported(tmp_path, src)
    records = journal(Path(result.json["sessions"][0]["path"]))[1:]
    assert records[2]["t"] == "2025-12-15T15:03:20.000Z" and records[2]["tInferred"] is True
    assert records[3]["t"] == "2025-12-15T15:03:20.000Z" and "tInferred" not in records[3]
    assert records[4]["t"] == records[3]["t"] and records[4]["tInferred"] is True, "no answer: the previous record's"


# --- deleted chats ----------------------------------------------------------------------------


def test_deleted_chats_with_bubbles_left_are_recovered_in_write_order(tmp_path):
    user = tmp_path / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    put(conn, "composerData:c-null", None)  # deleted: the row stays, its value is NULL
    for bid, bubble in [("zz", {"type": 1, "text": "asked first", "createdAt": "2025-12-15T14:00:00.000Z"}),
                        ("aa", {"type": 2, "text": "answered second"})]:
        put(conn, f"bubbleId:c-null:{bid}", bubble)
    put(conn, "bubbleId:c-gone:b1", {"type": 1, "text": "no composerData row at all", "createdAt": "2025-12-15T15:00:00.000Z"})
    put(conn, "composerData:c-bad", b"\xff not json")
    put(conn, "bubbleId:c-bad:b1", {"type": 1, "text": "my composer is unreadable"})
    for n in range(16):  # deleted with nothing left: normal Cursor state
        put(conn, f"composerData:empty-{n:02}", None)
    conn.commit()
    conn.close()
    result = imported(tmp_path, user, exit_code=4)  # the unreadable composerData is an error
    by_id = {s["id"]: s for s in result.json["sessions"]}
    assert set(by_id) == {"cursor-c-null", "cursor-c-gone", "cursor-c-bad"}
    records = journal(Path(by_id["cursor-c-null"]["path"]))
    assert records[0]["source"]["deleted"] is True and records[0]["source"]["orphan"] == ["deleted"]
    assert [r["content"] if r["kind"] == "user" else r["content"][0]["text"] for r in records[1:]] == ["asked first", "answered second"]
    assert records[2]["t"] == "2025-12-15T14:00:00.000Z" and records[2]["tInferred"] is True
    assert all(by_id[s]["orphaned"] for s in by_id)
    assert journal(Path(by_id["cursor-c-bad"]["path"]))[0]["source"]["orphan"] == ["editor-unreadable"]
    summary = [f for f in result.json["findings"] if "deleted chat" in f["message"]]
    assert len(summary) == 1 and summary[0]["severity"] == "warning" and summary[0]["message"].startswith("16 deleted chat(s)")
    errors = [f for f in result.json["findings"] if f["severity"] == "error"]
    assert [f["path"].rpartition("#")[2] for f in errors] == ["composerData:c-bad"]


def test_deleted_chats_with_nothing_left_exit_zero(tmp_path):
    user = tmp_path / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    for n in range(3):
        put(conn, f"composerData:empty-{n}", None)
    put(conn, "composerData:c1", {"conversation": [{"type": 1, "text": "kept"}]})
    conn.commit()
    conn.close()
    result = imported(tmp_path, user)
    assert [f["message"][:20] for f in result.json["findings"] if f["code"] == "source-skipped"] == ["3 deleted chat(s), n"]


# --- a workspace folder whose conversations live in the global database -------------------------


def two_workspaces(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A 2.x User folder: workspace A lists c-a, workspace B lists c-b; both bodies are global."""
    user = tmp_path / "User"
    folders = []
    for name in ("a", "b"):
        project = tmp_path / f"proj-{name}"
        project.mkdir()
        folder = user / "workspaceStorage" / f"ws-{name}"
        folder.mkdir(parents=True)
        (folder / "workspace.json").write_text(json.dumps({"folder": project.as_uri()}))
        ws = new_db(folder / "state.vscdb", tables=("ItemTable",))
        put(ws, "composer.composerData", {"allComposers": [{"type": "head", "composerId": f"c-{name}", "createdAt": 1765808373121}]},
            table="ItemTable")
        ws.commit()
        ws.close()
        folders.append(folder)
    conn = new_db(user / "globalStorage" / "state.vscdb")
    for name in ("a", "b"):
        put(conn, f"composerData:c-{name}", {"fullConversationHeadersOnly": [{"bubbleId": "u", "type": 1}], "createdAt": 1765808373121})
        put(conn, f"bubbleId:c-{name}:u", {"type": 1, "text": f"question in {name}", "createdAt": "2025-12-15T14:00:00.000Z"})
    conn.commit()
    conn.close()
    return user, folders[0], folders[1]


def test_a_modern_workspace_folder_imports_its_conversations_from_the_sibling_global_db(tmp_path):
    user, ws_a, _ws_b = two_workspaces(tmp_path)
    result = imported(tmp_path, ws_a, root=user)
    (session,) = result.json["sessions"]
    assert session["id"] == "cursor-c-a" and session["project"] == str(tmp_path / "proj-a")
    assert journal(Path(session["path"]))[1]["content"] == "question in a"


def test_a_workspace_db_of_heads_only_says_where_the_conversations_are(tmp_path):
    _user, ws_a, _ws_b = two_workspaces(tmp_path)
    loose = tmp_path / "copy" / "state.vscdb"
    loose.parent.mkdir()
    shutil.copyfile(ws_a / "state.vscdb", loose)
    result = imported(tmp_path, loose)
    assert result.json["sessions"] == []
    (hint,) = [f for f in result.json["findings"] if f["code"] == "source-skipped"]
    assert "global database" in hint["message"] and "--source" in hint["message"] and hint["severity"] == "warning"


# --- agent transcripts (~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl) -------------

TRANSCRIPT_ID = "0f3c2a9e-5b1d-4c7e-9a2f-1e2d3c4b5a69"
LINES = [
    {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nfix the build — ünïcode ✓\n</user_query>"}]}},
    {"role": "assistant", "message": {"content": [{"type": "text", "text": "Looking."},
                                                  {"type": "tool_use", "name": "Shell", "input": {"command": "make"}}]}},
    {"role": "assistant", "message": {"content": [{"type": "tool_use", "name": "ApplyPatch", "input": "*** Begin Patch\n"}]}},
    {"type": "turn_ended", "status": "completed"},
    {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nthanks\n</user_query>"}]}},
]


def transcript_tree(home: Path, project: Path, tail: bytes = b"") -> Path:
    """``home/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl``, Cursor's way: LF before
    each record after the first, so no final LF; ``tail`` is appended as is (a torn write)."""
    from toolkit.importers.cursor.transcripts import slugify

    folder = home / ".cursor" / "projects" / slugify(str(project)) / "agent-transcripts" / TRANSCRIPT_ID
    folder.mkdir(parents=True)
    lines = [json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() for line in LINES]
    path = folder / f"{TRANSCRIPT_ID}.jsonl"
    path.write_bytes(b"\n".join(lines) + tail)
    return path


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_agent_transcripts_import_from_any_level_of_their_tree(tmp_path, level):
    project = tmp_path / "code" / "my.app"
    project.mkdir(parents=True)
    path = transcript_tree(tmp_path / "home", project)
    source = [path, path.parent, path.parent.parent, path.parent.parent.parent, tmp_path / "home" / ".cursor" / "projects"][level]
    result = imported(tmp_path, source, root=tmp_path / "home")
    (session,) = result.json["sessions"]
    assert session["id"] == f"cursor-agent-{TRANSCRIPT_ID}" and session["project"] == str(project)
    assert session["source_items"] == 5 and session["skipped"] == {"not-a-message": 1}
    records = journal(Path(session["path"]))
    meta, body = records[0], records[1:]
    assert meta["source"]["version"] == "agent-transcript:jsonl" and meta["source"]["path"] == str(path)
    assert [r["kind"] for r in body] == ["user", "assistant", "assistant", "user"]
    assert body[0]["content"] == LINES[0]["message"]["content"][0]["text"], "byte-exact, wrapper and all"
    assert body[0]["prompt"] == "fix the build — ünïcode ✓"
    assert body[1]["content"][1] == {"type": "tool_use", "id": "line2-1", "name": "Shell", "input": {"command": "make"}}
    assert body[2]["content"][0]["input"] == {"raw": "*** Begin Patch\n"}
    assert all(r["tInferred"] for r in body) and [r["raw"] for r in body] == [LINES[i] for i in (0, 1, 2, 4)]
    assert not any(f["code"] == "source-torn" for f in result.json["findings"]), "a complete last line without LF is normal"


def test_a_torn_last_transcript_line_is_a_finding_and_the_rest_imports(tmp_path):
    path = transcript_tree(tmp_path / "home", tmp_path / "nowhere" / "gone", tail=b'\n{"role":"assistant","mess')
    result = imported(tmp_path, path, root=tmp_path / "home")
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"not-a-message": 1, "torn": 1} and session["records"] == 4
    assert session["project"] is None and Path(session["path"]).parent.name == "_unassigned"
    (torn,) = [f for f in result.json["findings"] if f["code"] == "source-torn"]
    assert torn["severity"] == "warning" and torn["line"] == 6
    again = run_cli("import", "--from", "cursor", "--source", path, "--store", tmp_path / "store", "--json")
    assert [s["status"] for s in again.json["sessions"]] == ["unchanged"]


def test_agent_transcripts_are_found_by_default(tmp_path, monkeypatch):
    home = Path.home()  # the isolated home of the test
    transcript_tree(home, tmp_path / "proj")
    result = run_cli("import", "--from", "cursor", "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.stdout
    assert result.json["sources"] == [str(home / ".cursor" / "projects")]
    assert [s["id"] for s in result.json["sessions"]] == [f"cursor-agent-{TRANSCRIPT_ID}"]


# --- odd values: still every item accounted for ---------------------------------------------


@pytest.mark.parametrize("composers", [
    {"allComposers": [{"composerId": "c1", "conversation": [{"type": 1, "text": "t", "context": {"fileSelections": 3}}, 7, "x"]}]},
    {"allComposers": [{"composerId": "c1", "createdAt": 1e20, "conversation": [{"type": 2, "codeBlocks": 5}, {"type": 1, "text": "q"}]}]},
    {"allComposers": [{"composerId": "c1", "conversation": [{"type": 1, "text": "", "context": {"selectedImages": [{"path": 5}]}},
                                                             {"type": 2, "text": "a", "timingInfo": {"clientRpcSendTime": "soon"}}]}]},
])
def test_odd_bubbles_are_counted_never_lost(tmp_path, composers):
    source = tmp_path / "ws" / "state.vscdb"
    conn = new_db(source, tables=("ItemTable",))
    put(conn, "composer.composerData", composers, table="ItemTable")
    put(conn, "workbench.panel.aichat.view.aichat.chatdata", {"tabs": [{"tabId": "t2", "bubbles": [{"type": "user", "text": "fine"}, 4]}]},
        table="ItemTable")
    conn.commit()
    conn.close()
    result = imported(tmp_path, source, exit_code=None)
    total = len(composers["allComposers"][0]["conversation"]) + 2
    named = " ".join(f["path"] + " " + f["message"] for f in result.json["findings"])
    counted = sum(s["source_items"] for s in result.json["sessions"])
    assert counted == total or "no session" in named, named


def test_a_plain_text_agent_transcript_is_named_not_ignored(tmp_path):
    path = transcript_tree(tmp_path / "home", tmp_path / "proj")
    old = path.parent.parent / "1a2b3c4d-0000-4000-8000-000000000000.txt"
    old.write_text("user:\n<user_query>\nhello\n</user_query>\n\nassistant:\nhi\n")
    result = imported(tmp_path, path.parent.parent, root=tmp_path / "home")
    assert [s["id"] for s in result.json["sessions"]] == [f"cursor-agent-{TRANSCRIPT_ID}"]
    (named,) = [f for f in result.json["findings"] if f["path"] == str(old)]
    assert named["code"] == "source-skipped" and "plain-text" in named["message"]
