"""import --from cursor on real SQLite files: every era, header order, orphans, safety, idempotence."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.importers.cursor_db import CURSOR, add_bubble, modern_user_dir, new_db, put
from toolkit.lines import loads
from toolkit.stores import slug


def journal(path: Path) -> list[dict]:
    return [loads(line) for line in path.read_bytes().splitlines()]


def all_journals(store: Path) -> dict[str, list[dict]]:
    return {p.stem: journal(p) for p in store.glob("*/*.jsonl")}


def source_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def user_texts(records: list[dict]) -> list[str]:
    return [r["content"] for r in records if r["kind"] == "user"]


def assistant_texts(records: list[dict]) -> list[str]:
    return [b["text"] for r in records if r["kind"] == "assistant" for b in r["content"] if b["type"] == "text"]


# --- the real 2024 workspace database (legacy tabs + inline composers) ----------------------


def test_legacy_workspace_imports_every_tab_and_composer_bubble_exactly(tmp_path):
    source = tmp_path / "ws" / "state.vscdb"
    source.parent.mkdir()
    shutil.copyfile(CURSOR / "legacy-workspace-2024-11.state.vscdb", source)
    before = source_hashes(source.parent)
    result = run_cli("import", "--from", "cursor", "--source", source, "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.stdout[-3000:]
    assert source_hashes(source.parent) == before
    journals = all_journals(tmp_path / "store")

    # Count from the database itself, independently of the importer.
    conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    tabs = json.loads(conn.execute("select value from ItemTable where key = 'workbench.panel.aichat.view.aichat.chatdata'").fetchone()[0])["tabs"]
    composers = json.loads(conn.execute("select value from ItemTable where key = 'composer.composerData'").fetchone()[0])["allComposers"]
    conn.close()
    assert len(tabs) == 5 and len(composers) == 26
    bubbles_seen = 0
    for tab in tabs:
        bubbles = tab["bubbles"]
        if bubbles and bubbles[-1]["type"] == "user" and not bubbles[-1].get("text"):
            bubbles = bubbles[:-1]
        records = journals[f"cursor-tab-{tab['tabId']}"]
        assert records[0]["title"] == tab["chatTitle"]
        assert user_texts(records[1:]) == [b["text"] for b in bubbles if b["type"] == "user" and b.get("text")]
        assert assistant_texts(records[1:]) == [b["text"] for b in bubbles if b["type"] == "ai" and b.get("text")]
        bubbles_seen += len(records) - 1
    for composer in composers:
        records = journals[f"cursor-{composer['composerId']}"]
        conversation = composer["conversation"]
        assert user_texts(records[1:]) == [b["text"] for b in conversation if b["type"] == 1 and b.get("text")]
        assert assistant_texts(records[1:]) == [b["text"] for b in conversation if b["type"] == 2 and b.get("text")]
        assert all(r["tInferred"] for r in records[1:]), "≤0.42 bubbles carry no time: the composer's is used, flagged"
        bubbles_seen += len(records) - 1
    assert bubbles_seen == 44 + 82, "49 tab bubbles minus 5 empty input boxes, 82 composer bubbles"
    assert len(journals) == 31
    assert run_cli("fsck", "--strict", "--store", tmp_path / "store").exit_code == 0


# --- a modern global database built from the real Dec-2025 bubbles --------------------------


@pytest.fixture
def modern(tmp_path):
    project = tmp_path / "code" / "thin.ly"
    project.mkdir(parents=True)
    info = modern_user_dir(tmp_path / "a#b?c", project)  # a '#' and '?' in the path
    info["project"] = project
    yield info
    info["conn"].close()


def test_split_era_imports_in_header_order_with_orphans_aside_and_wal_rows(tmp_path, modern):
    user = modern["user"]
    # a committed write still in the WAL, not checkpointed into the main file
    late = {**modern["bubbles"][2][2], "bubbleId": "late-wal-bubble", "text": "written after the last checkpoint"}
    add_bubble(modern, "late-wal-bubble", late)
    assert (user / "globalStorage" / "state.vscdb-wal").stat().st_size > 0
    before = source_hashes(user)
    listing = sorted(os.listdir(tmp_path))
    result = run_cli("import", "--from", "cursor", "--source", user, "--store", tmp_path / "code" / "store", "--json")
    assert source_hashes(user) == before, "db, -wal and -shm are byte-identical after the import"
    assert sorted(os.listdir(tmp_path)) == listing, "nothing created at a path cut at '#' or '?'"
    report = result.json
    assert result.exit_code == 4, "a NULL row is a source-unreadable error; the rest still imports"
    codes = {(f["code"], f["path"].rpartition("#")[2]) for f in report["findings"]}
    assert ("source-unreadable", modern["null"]) in codes
    assert ("missing-bubble", modern["dangling"]) in codes
    (session,) = report["sessions"]
    assert session["status"] == "created" and session["project"] == str(modern["project"]) and not session["orphaned"]
    records = journal(Path(session["path"]))
    meta, body = records[0], records[1:]
    assert meta["source"]["key"] == f"composerData:{modern['cid']}" and meta["source"]["version"] == "split:10"
    assert meta["title"] == modern["composer"]["name"] and "an unsent draft" not in json.dumps(body)
    expected = [f"bubbleId:{modern['cid']}:{bid}" for _, bid, _ in modern["bubbles"] if f"bubbleId:{modern['cid']}:{bid}" != modern["null"]]
    expected.append(f"bubbleId:{modern['cid']}:late-wal-bubble")
    turns = [r for r in body if r["kind"] in ("user", "assistant")]
    converted = {k for k in expected}
    assert [r["sourceKey"] for r in turns] == [k for k in expected if k in {r["sourceKey"] for r in turns}], "header order"
    assert len(turns) >= 90 and turns[-1]["sourceKey"].endswith("late-wal-bubble"), "the WAL row is imported"
    assert converted >= {r["sourceKey"] for r in turns}
    orphans = [r for r in body if r["kind"] == "event" and r.get("type") == "orphan-message"]
    assert [o["sourceKey"] for o in orphans] == [modern["orphan"]] and body[-1] is orphans[-1], "orphans trail the conversation"
    assert orphans[0]["reason"] == "not-in-headers" and orphans[0]["content"][0]["text"] == "an edited-away answer"
    # every bubble's text is byte-exact and tools/thinking are content blocks
    by_key = {f"bubbleId:{modern['cid']}:{bid}": value for _, bid, value in modern["bubbles"]}
    for record in turns[:-1]:
        bubble = by_key[record["sourceKey"]]
        assert record["raw"] == bubble
        if record["kind"] == "user":
            assert record["content"] == bubble["text"]
        elif bubble.get("text"):
            assert {"type": "text", "text": bubble["text"]} in record["content"]
        if (bubble.get("toolFormerData") or {}).get("name"):
            assert any(b["type"] == "tool_use" and b["name"] == bubble["toolFormerData"]["name"] for b in record["content"])
        if bubble.get("capabilityType") == 30:
            assert record["content"][0]["type"] == "thinking"
    assert not any("cursorAuth" in json.dumps(r) for r in records)
    assert run_cli("fsck", "--strict", "--store", tmp_path / "code" / "store").exit_code == 0


def test_reimport_is_a_no_op_and_a_new_bubble_is_appended(tmp_path, modern):
    store = tmp_path / "store"
    args = ("import", "--from", "cursor", "--source", modern["user"], "--store", store, "--json")
    run_cli(*args)
    before = snapshot(store)
    again = run_cli(*args)
    assert [s["status"] for s in again.json["sessions"]] == ["unchanged"]
    assert snapshot(store) == before, "a second import changes no byte"
    path = Path(again.json["sessions"][0]["path"])
    old = path.read_bytes()
    add_bubble(modern, "brand-new-bubble", {"type": 1, "bubbleId": "brand-new-bubble", "text": "one more question",
                                            "createdAt": "2025-12-15T15:00:00.000Z"})
    third = run_cli(*args)
    (session,) = third.json["sessions"]
    assert session["status"] == "updated" and session["new_records"] == 1
    data = path.read_bytes()
    assert data.startswith(old), "the journal is appended to, never rewritten"
    new = [loads(line) for line in data[len(old):].splitlines()]
    assert [(r["kind"], r["content"]) for r in new] == [("user", "one more question")]
    assert new[0]["seq"] == loads(old.splitlines()[-1])["seq"] + 1
    assert run_cli("fsck", "--store", store).exit_code == 0


def test_a_rerun_with_nothing_new_still_builds_an_index_a_killed_import_never_wrote(tmp_path, modern):
    # Found by `chaos run --target import`: killed after its last journal, before its reindex.
    store = tmp_path / "store"
    args = ("import", "--from", "cursor", "--source", modern["user"], "--store", store, "--json")
    run_cli(*args)
    (index,) = store.glob("*/index.json")
    expected = loads(index.read_bytes())["sessions"]
    index.unlink()
    again = run_cli(*args)
    assert [s["status"] for s in again.json["sessions"]] == ["unchanged"]
    assert loads(index.read_bytes())["sessions"] == expected
    assert run_cli("fsck", "--store", store, "--strict").exit_code == 0


def test_synthetic_global_nulls_imports_with_findings(tmp_path):
    source = tmp_path / "src" / "state.vscdb"
    source.parent.mkdir()
    shutil.copyfile(CURSOR / "synthetic-global-nulls.state.vscdb", source)
    result = run_cli("import", "--from", "cursor", "--source", source, "--store", tmp_path / "store", "--json")
    assert "Traceback" not in result.stderr
    findings = [f["code"] for f in result.json["findings"]]
    assert findings.count("source-unreadable") == 1 and findings.count("missing-bubble") == 2
    (session,) = result.json["sessions"]
    records = journal(Path(session["path"]))[1:]
    turns = [r for r in records if r["kind"] in ("user", "assistant")]
    orphans = [r for r in records if r.get("type") == "orphan-message"]
    assert len(turns) == 4 and len(orphans) == 2
    assert turns[0]["content"] == "Synthetic question alpha."
    assert [b["type"] for b in turns[2]["content"]] == ["tool_use", "tool_result"]
    assert turns[2]["content"][0]["input"] == {"path": "/fixture/v016/project/synthetic.ts"}
    assert not session["orphaned"] and session["orphan"] == ["not-on-this-machine"], \
        "its workspace folder (/fixture/...) is on no folder of this machine: not lost by the editor"


def test_orphans_only_map_dry_run_and_no_raw(tmp_path, modern):
    store = tmp_path / "store"
    live = run_cli("import", "--from", "cursor", "--source", modern["user"], "--store", store, "--orphans-only", "--json")
    assert live.json["sessions"] == [], "the composer's folder exists: not an orphan"
    shutil.rmtree(modern["project"])  # the user renamed the folder
    dry = run_cli("import", "--from", "cursor", "--source", modern["user"], "--store", store, "--orphans-only", "--dry-run", "--json")
    assert [s["orphaned"] for s in dry.json["sessions"]] == [True] and not store.exists()
    moved = str(modern["project"]) + "-renamed"
    result = run_cli("import", "--from", "cursor", "--source", modern["user"], "--store", store, "--orphans-only",
                     "--map", f"{modern['project']}={moved}", "--no-raw", "--json")
    (session,) = result.json["sessions"]
    assert session["project"] == moved and Path(session["path"]).parent.name == slug(moved)
    records = journal(Path(session["path"]))
    assert records[0]["source"]["orphan"] == ["folder-missing"]
    assert not any("raw" in r for r in records)


def test_locked_database_is_an_operational_error_and_bad_sources_are_typed(tmp_path):
    source = tmp_path / "ws" / "state.vscdb"
    conn = new_db(source, tables=("ItemTable",))
    put(conn, "composer.composerData", {"allComposers": []}, table="ItemTable")
    conn.commit()
    conn.execute("begin exclusive")
    try:
        result = run_cli("import", "--from", "cursor", "--source", source, "--store", tmp_path / "store")
    finally:
        conn.rollback()
        conn.close()
    assert result.exit_code == 8 and "locked" in result.stdout and "Traceback" not in result.stderr
    assert run_cli("import", "--from", "cursor", "--source", tmp_path / "missing").exit_code == 8
    (tmp_path / "notdb").mkdir()
    (tmp_path / "notdb" / "state.vscdb").write_bytes(b"not a database at all")
    bad = run_cli("import", "--from", "cursor", "--source", tmp_path / "notdb" / "state.vscdb", "--store", tmp_path / "store")
    assert bad.exit_code == 8 and "Traceback" not in bad.stderr
    assert run_cli("import", "--from", "nothing").exit_code == 16
    assert run_cli("import", "--from", "cursor", "--map", "no-equals-sign", "--source", source).exit_code == 16


def _composer(cid: str, text: str, **extra) -> dict:
    return {"composerId": cid, "name": f"chat {cid}", "createdAt": 1765808373121, "status": "completed",
            "conversation": [{"type": 1, "bubbleId": f"{cid}-u", "text": text},
                             {"type": 2, "bubbleId": f"{cid}-a", "text": f"answer to {text}"}], **extra}


@pytest.mark.parametrize("gated", [False, True])
def test_3x_heads_map_projects_and_mark_uncatalogued_composers(tmp_path, gated):
    """3.x: heads live in the global ItemTable (or the gated composerHeaders table); the
    workspace DB keeps no heads.  A composer missing from the catalog is orphaned: not-indexed."""
    project = tmp_path / "proj"
    project.mkdir()
    user = tmp_path / "User"
    workspace = user / "workspaceStorage" / "ws-3x"
    workspace.mkdir(parents=True)
    (workspace / "workspace.json").write_text(json.dumps({"folder": project.as_uri()}))
    conn = new_db(user / "globalStorage" / "state.vscdb")
    put(conn, "composerData:c-listed", _composer("c-listed", "listed question"))
    put(conn, "composerData:c-lost", _composer("c-lost", "forgotten question"))
    head = {"type": "head", "composerId": "c-listed", "workspaceIdentifier": {"id": "ws-3x"}}
    stale = {"allComposers": [{"type": "head", "composerId": "c-lost", "workspaceIdentifier": {"id": "ws-3x"}}]}
    if gated:  # the table is authoritative; the blob is stale
        conn.execute("create table composerHeaders (composerId TEXT PRIMARY KEY, workspaceId TEXT, createdAt INTEGER, "
                     "lastUpdatedAt INTEGER, isArchived INTEGER, isSubagent INTEGER, recency INTEGER, checkpointAt INTEGER, value TEXT)")
        conn.execute("insert into composerHeaders (composerId, workspaceId, value) values (?, ?, ?)", ("c-listed", "ws-3x", json.dumps(head)))
        put(conn, "composer.composerHeaders.tableGateEnabled", "true", table="ItemTable")
        put(conn, "composer.composerHeaders", stale, table="ItemTable")
    else:
        put(conn, "composer.composerHeaders", {"allComposers": [head]}, table="ItemTable")
    conn.commit()
    conn.close()
    result = run_cli("import", "--from", "cursor", "--source", user, "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.stdout
    by_id = {s["id"]: s for s in result.json["sessions"]}
    assert by_id["cursor-c-listed"]["project"] == str(project) and not by_id["cursor-c-listed"]["orphaned"]
    lost = by_id["cursor-c-lost"]
    assert lost["orphaned"] and lost["project"] is None and Path(lost["path"]).parent.name == "_unassigned"
    assert journal(Path(lost["path"]))[0]["source"]["orphan"] == ["not-indexed"]
    assert journal(Path(lost["path"]))[0]["source"]["version"] == "inline:none", "0.43 era: composerData with an inline conversation"


def test_default_source_is_found_per_os(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    user = tmp_path / "config" / "Cursor" / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    put(conn, "composerData:c1", _composer("c1", "found by detect"))
    conn.commit()
    conn.close()
    result = run_cli("import", "--from", "cursor", "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0 and [s["id"] for s in result.json["sessions"]] == ["cursor-c1"]
    assert result.json["sources"] == [str(user)]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nowhere"))
    none = run_cli("import", "--from", "cursor", "--store", tmp_path / "store")
    assert none.exit_code == 16 and "--source" in none.stderr


@pytest.mark.parametrize("odd", [
    {"allComposers": 5},
    {"allComposers": [{"composerId": "c1", "conversation": [{"type": 1, "text": "t", "context": {"fileSelections": 3}}]}]},
    {"allComposers": [{"composerId": "c1", "createdAt": 1e20, "conversation": [{"type": 2, "codeBlocks": 5}]}]},
])
def test_odd_workspace_values_are_findings_not_tracebacks(tmp_path, odd):
    source = tmp_path / "ws" / "state.vscdb"
    conn = new_db(source, tables=("ItemTable",))
    put(conn, "composer.composerData", odd, table="ItemTable")
    put(conn, "workbench.panel.aichat.view.aichat.chatdata", {"tabs": [{"tabId": "t1", "bubbles": 3},
                                                                        {"tabId": "t2", "bubbles": [{"type": "user", "text": "fine"}]}]}, table="ItemTable")
    conn.commit()
    conn.close()
    result = run_cli("import", "--from", "cursor", "--source", source, "--store", tmp_path / "store", "--json")
    assert "Traceback" not in result.stderr and result.exit_code in (0, 4)
    assert "cursor-tab-t2" in {s["id"] for s in result.json["sessions"]}


def test_odd_global_values_are_findings_not_tracebacks(tmp_path):
    source = tmp_path / "User" / "globalStorage" / "state.vscdb"
    conn = new_db(source)
    put(conn, "composerData:c-int", {"composerId": 5, "conversation": [{"type": 1, "text": "id is a number"}]})
    put(conn, "composerData:c-gen", {"fullConversationHeadersOnly": [{"bubbleId": "b1"}], "generatingBubbleIds": [{}]})
    put(conn, "bubbleId:c-gen:b1", {"type": 1, "text": "generating"})
    put(conn, "composerData:c-ok", {"conversation": [{"type": 1, "text": "fine"}]})
    put(conn, "composer.composerHeaders", {"allComposers": 7}, table="ItemTable")
    conn.commit()
    conn.close()
    result = run_cli("import", "--from", "cursor", "--source", tmp_path / "User", "--store", tmp_path / "store", "--json")
    assert "Traceback" not in result.stderr
    assert {"cursor-c-int", "cursor-c-gen", "cursor-c-ok"} <= {s["id"] for s in result.json["sessions"]}
