"""import --from cline: Cline, Roo Code and Kilo Code task folders and Cline 4.x sessions
(SOURCES-MORE.md §4), on real files and real SQLite databases.  Every element of a task's files
becomes a record or is counted under ``skipped`` and named in a finding; the sources stay
byte-identical; a re-import of an unchanged source writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.cline_data import (CLINE_ID, KILO_ID, T0, api_history, cline_storage, history_item, memento, roo_storage,
                                        sdk_session, task, ui_messages, write)
from toolkit.importers import spill
from toolkit.importers.cline import jsonfile
from toolkit.lines import loads

TID = "1787306400123"
ROO_TID = "0198c3a2-7b4e-7c1d-9e2f-0a1b2c3d4e5f"


def journal(path: Path) -> list[dict]:
    return [loads(line) for line in path.read_bytes().splitlines()]


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def carried(records: list[dict]) -> list[str]:
    replaced = {r["replaces"] for r in records if "replaces" in r}
    return [r["sourceKey"] for r in records if r.get("sourceKey") and r.get("seq") not in replaced]


def imported(tmp_path: Path, source: Path, *extra: str, exit_code: int | None = 0, root: Path | None = None, store: Path | None = None):
    """Import ``source``; check every file under ``root`` (default: the source) is byte-identical,
    items = carried + skipped for every session, and the store passes fsck --strict."""
    root = root or source
    before = hashes(root)
    store = store or tmp_path / "store"
    result = run_cli("import", "--from", "cline", "--source", source, "--store", store, "--json", *extra)
    assert "Traceback" not in result.stderr, result.stderr
    if exit_code is not None:
        assert result.exit_code == exit_code, result.stdout[-3000:]
    assert hashes(root) == before, "the source is never written"
    for session in result.json["sessions"]:
        if session["status"] == "skipped":
            continue
        keys = carried(journal(Path(session["path"]))[1:])
        assert len(keys) == len(set(keys)), "a source item is carried once"
        assert session["source_items"] == len(keys) + sum(session["skipped"].values()), session
    if result.json["sessions"]:
        strict = run_cli("fsck", "--strict", "--store", store)
        assert strict.exit_code == 0, strict.stdout[-3000:]
    return result


def by_id(result) -> dict[str, dict]:
    return {s["id"]: s for s in result.json["sessions"]}


def codes(result, code: str) -> list[dict]:
    return [f for f in result.json["findings"] if f["code"] == code]


@pytest.fixture(autouse=True, params=["whole", "by-element"])
def reading(request, monkeypatch) -> str:
    """Every test runs twice: a task's files parsed whole and its records held, and (as a long task's
    are) its message arrays read element by element and its records moved to a temporary database."""
    if request.param == "by-element":
        monkeypatch.setattr(jsonfile, "WHOLE_BYTES", 0)
        monkeypatch.setattr(spill, "RECORD_BYTES_IN_MEMORY", 0)
    return request.param


@pytest.fixture
def app(tmp_path) -> Path:
    folder = tmp_path / "home" / "ana" / "app"
    folder.mkdir(parents=True)
    return folder


def test_every_message_block_and_panel_kind_of_a_cline_task(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
    result = imported(tmp_path, storage)
    session = by_id(result)[f"cline-{TID}"]
    assert session["status"] == "created" and not session["orphaned"] and session["project"] == str(app)
    assert session["source_items"] == 7 + 9 + 1 and session["skipped"] == {}
    records = journal(Path(session["path"]))
    meta, body = records[0], records[1:]
    assert meta["title"] == "Fix the failing tests" and meta["source"]["tool"] == "cline"
    assert meta["source"]["listedIn"] == "taskHistory.json" and meta["raw"]["ulid"] == "01K3ZQ8J6Y2V7S9W4X5T6R7Q8P"
    conversation = [r for r in body if r["kind"] in ("user", "assistant")]
    assert [r["content"] for r in conversation] == [m["content"] for m in api_history(cwd=str(app))], "content verbatim"
    first, reply, result_msg, _xml, xml_result, feedback, done = conversation
    assert first["prompt"] == "Fix the failing tests" and first["added"] == [1]
    assert reply["model"] == "claude-sonnet-4-5" and reply["usage"]["cost"] == 0.0123
    assert result_msg.get("toolResult") is True and xml_result.get("toolResult") is True
    assert feedback["prompt"] == "also check the lint ✓ 🙂" and not feedback.get("toolResult")
    assert done["content"] == "Done: tests pass."
    panel = [r for r in body if r.get("type") == "cline-ui"]
    assert [r["ui"] for r in panel] == [f"{m['type']}:{m.get(m['type'])}" for m in ui_messages()]
    started = next(r for r in panel if r["ui"] == "say:api_req_started")
    assert started["usage"]["cost"] == 0.0123 and "partial" not in started
    assert next(r for r in panel if r["ui"] == "say:user_feedback")["images"]
    assert [r["type"] for r in body if r.get("type") == "cline-task-metadata"] == ["cline-task-metadata"]
    assert all(r["raw"] is not None for r in body)
    shown = run_cli("show", f"cline-{TID}", "--store", tmp_path / "store")
    assert "Fix the failing tests" in shown.stdout and "execute_command" in shown.stdout
    listed = run_cli("ls", "--store", tmp_path / "store")
    assert "Fix the failing tests" in listed.stdout


def test_tasks_missing_from_the_list_are_orphaned_and_list_entries_without_folder_are_reported(tmp_path, app):
    gone = "1787306999999"
    storage = cline_storage(tmp_path / "cfg", [TID, "1787306500123"], listed=[TID, gone], cwd=str(app))
    result = imported(tmp_path, storage)
    sessions = by_id(result)
    assert not sessions[f"cline-{TID}"]["orphaned"]
    assert sessions["cline-1787306500123"]["orphaned"] and sessions["cline-1787306500123"]["orphan"] == ["not-indexed"]
    skipped = codes(result, "source-skipped")
    assert len(skipped) == 1 and gone in skipped[0]["message"] and skipped[0]["severity"] == "warning"
    only = run_cli("import", "--from", "cline", "--source", storage, "--store", tmp_path / "s2", "--orphans-only", "--json")
    assert [s["id"] for s in only.json["sessions"]] == ["cline-1787306500123"]


def test_digit_and_other_task_ids_and_a_missing_working_folder(tmp_path, app):
    ids = [TID, ROO_TID, "imported task #1"]
    storage = cline_storage(tmp_path / "cfg", ids, cwd=str(app))
    result = imported(tmp_path, storage)
    names = sorted(by_id(result))
    assert f"cline-{TID}" in names and f"cline-{ROO_TID}" in names
    hashed = [n for n in names if n.startswith("cline-h")]
    assert len(hashed) == 1 and journal(Path(by_id(result)[hashed[0]]["path"]))[0]["source"]["key"] == "imported task #1"
    moved = cline_storage(tmp_path / "cfg2", [TID], cwd=str(tmp_path / "gone"))
    out = imported(tmp_path, moved, store=tmp_path / "s2")
    assert by_id(out)[f"cline-{TID}"]["orphan"] == ["folder-missing"]


def test_empty_task_is_reported_and_not_imported(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
    (storage / "tasks" / "1787306500000").mkdir()
    write(storage / "tasks" / "1787306600000" / "ui_messages.json", b"[]")
    result = imported(tmp_path, storage)
    assert list(by_id(result)) == [f"cline-{TID}"]
    assert sorted(Path(f["path"]).name for f in codes(result, "source-skipped")) == ["1787306500000", "1787306600000"]


def test_a_cut_ui_messages_file_keeps_every_whole_element_and_counts_the_rest(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
    path = storage / "tasks" / TID / "ui_messages.json"
    data = path.read_bytes()
    cut = data.index(b'{"ts":' + str(T0 + 4882).encode()) + 20
    path.write_bytes(data[:cut])
    result = imported(tmp_path, storage, exit_code=4)
    session = by_id(result)[f"cline-{TID}"]
    assert session["skipped"] == {"source-unreadable": 1}
    panel = [r for r in journal(Path(session["path"])) if r.get("type") == "cline-ui"]
    assert len(panel) == 3
    found = [f for f in codes(result, "source-unreadable") if f["path"] == str(path)]
    assert found and found[0]["severity"] == "error" and "3 whole element(s)" in found[0]["message"]


def test_a_stray_bracket_keeps_everything_and_warns(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
    path = storage / "tasks" / TID / "ui_messages.json"
    path.write_bytes(path.read_bytes() + b"]")  # cline/cline#335
    result = imported(tmp_path, storage)
    session = by_id(result)[f"cline-{TID}"]
    assert session["skipped"] == {} and session["records"] == 17
    assert [f["severity"] for f in codes(result, "source-unreadable")] == ["warning"]


def test_bom_and_non_utf8_files_still_import_with_a_finding(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
    api = storage / "tasks" / TID / "api_conversation_history.json"
    api.write_bytes(b"\xef\xbb\xbf" + api.read_bytes())
    ui = storage / "tasks" / TID / "ui_messages.json"
    ui.write_bytes(ui.read_bytes().replace("✓".encode(), b"\xff\xfe"))
    result = imported(tmp_path, storage)
    session = by_id(result)[f"cline-{TID}"]
    assert session["records"] == 17 and session["skipped"] == {}
    assert [f["path"] for f in codes(result, "bom")] == [str(api)]
    bad = [f for f in codes(result, "source-unreadable") if f["path"] == str(ui)]
    assert bad and "not valid UTF-8" in bad[0]["message"] and bad[0]["severity"] == "warning"
    feedback = next(r for r in journal(Path(session["path"])) if r.get("ui") == "say:user_feedback")
    assert "\ufffd" in feedback["text"]


def test_a_cut_task_list_marks_unnamed_tasks_index_corrupt(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID, "1787306500123"], cwd=str(app))
    index = storage / "state" / "taskHistory.json"
    data = index.read_bytes()
    index.write_bytes(data[: data.index(b'{"id":"1787306500123"') + 30])
    result = imported(tmp_path, storage, exit_code=4)
    sessions = by_id(result)
    assert not sessions[f"cline-{TID}"]["orphaned"]
    assert sessions["cline-1787306500123"]["orphan"] == ["index-corrupt"]
    assert any(f["path"] == str(index) for f in codes(result, "source-unreadable"))


def test_roo_history_items_are_the_list_and_titles_come_from_the_typed_prompt(tmp_path, app):
    other = "0198c3a2-7b4e-7c1d-9e2f-aaaaaaaaaaaa"
    cached = "0198c3a2-7b4e-7c1d-9e2f-bbbbbbbbbbbb"
    storage = roo_storage(tmp_path / "cfg", [ROO_TID, other, cached], items=[ROO_TID], cached=[cached], cwd=str(app))
    result = imported(tmp_path, storage)
    sessions = by_id(result)
    assert not sessions[f"roo-{ROO_TID}"]["orphaned"] and not sessions[f"roo-{cached}"]["orphaned"]
    assert sessions[f"roo-{other}"]["orphan"] == ["not-indexed"]
    meta = journal(Path(sessions[f"roo-{other}"]["path"]))[0]
    assert meta["title"] == "Fix the failing tests", "the typed prompt, never <environment_details>"
    assert meta["project"] == str(app), "the working folder from <environment_details>"
    assert journal(Path(sessions[f"roo-{ROO_TID}"]["path"]))[0]["source"]["listedIn"] == "history_item.json"


def test_kilo_tasks_are_listed_by_the_editor_memento_read_only(tmp_path, app):
    storage = roo_storage(tmp_path / "cfg", [ROO_TID, "0198c3a2-7b4e-7c1d-9e2f-cccccccccccc"], items=[], name=KILO_ID, cwd=str(app))
    (storage / "tasks" / "_index.json").unlink()
    memento(storage.parent, KILO_ID, [history_item(ROO_TID, cwd=str(app), task="Kilo task title")])
    result = imported(tmp_path, storage, root=storage.parent)
    sessions = by_id(result)
    assert not sessions[f"kilo-{ROO_TID}"]["orphaned"]
    assert sessions["kilo-0198c3a2-7b4e-7c1d-9e2f-cccccccccccc"]["orphan"] == ["not-indexed"]
    assert journal(Path(sessions[f"kilo-{ROO_TID}"]["path"]))[0]["title"] == "Kilo task title"


def test_cline_memento_before_the_file_migration_lists_tasks(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID, "1787306500123"], listed=[], cwd=str(app))
    (storage / "state" / "taskHistory.json").unlink()
    memento(storage.parent, CLINE_ID, [history_item(TID, cwd=str(app))])
    result = imported(tmp_path, storage, root=storage.parent)
    sessions = by_id(result)
    assert not sessions[f"cline-{TID}"]["orphaned"] and sessions["cline-1787306500123"]["orphan"] == ["not-indexed"]


def test_reimport_unchanged_writes_nothing_and_a_grown_task_appends_only_new_records(tmp_path, app):
    storage = cline_storage(tmp_path / "cfg", [TID], cwd=str(app))
    first = imported(tmp_path, storage)
    path = Path(by_id(first)[f"cline-{TID}"]["path"])
    before = path.read_bytes()
    again = imported(tmp_path, storage)
    assert by_id(again)[f"cline-{TID}"]["status"] == "unchanged" and path.read_bytes() == before
    folder = storage / "tasks" / TID
    api = api_history(cwd=str(app)) + [{"role": "user", "content": [{"type": "text", "text": "<feedback>\nthanks\n</feedback>"}], "ts": T0 + 20000}]
    ui = ui_messages() + [{"ts": T0 + 20500, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "…"}),
                           "conversationHistoryIndex": 7}]
    write(folder / "api_conversation_history.json", api)
    write(folder / "ui_messages.json", ui)
    grown = imported(tmp_path, storage)
    assert by_id(grown)[f"cline-{TID}"]["new_records"] == 2
    assert path.read_bytes().startswith(before)
    added = journal(path)[-2:]
    assert added[0]["prompt"] == "thanks" and added[1].get("partial") is True, "a request with no cost yet is partial"
    ui[-1]["text"] = json.dumps({"request": "…", "tokensIn": 5, "tokensOut": 6, "cost": 0.001})
    write(folder / "ui_messages.json", ui)
    done = imported(tmp_path, storage)
    last = journal(path)[-1]
    assert by_id(done)[f"cline-{TID}"]["new_records"] == 1 and last["usage"]["cost"] == 0.001 and last["replaces"] == added[1]["seq"]
    assert by_id(imported(tmp_path, storage))[f"cline-{TID}"]["status"] == "unchanged"


def test_cline_4_sessions_from_the_data_folder(tmp_path, app):
    data = tmp_path / "dot-cline" / "data"
    sdk_session(data, "1787306400123_ab12c", cwd=str(app))
    sdk_session(data, "1787306400999_zz99z", indexed=False, cwd=str(app))
    task(data, TID, cwd=str(app))  # the standalone core's classic tasks, unlisted
    result = imported(tmp_path, data)
    sessions = by_id(result)
    lead = sessions["cline-1787306400123_ab12c"]
    assert not lead["orphaned"] and lead["source_items"] == 2
    records = journal(Path(lead["path"]))
    assert records[0]["title"] == "Fix the tests" and [r["sourceKey"] for r in records[1:]] == ["msg:msg_ab12cd34_1", "msg:msg_Zx9Yw8Vu"]
    assert records[2]["model"] == "anthropic/claude-sonnet-4.5"
    assert sessions["cline-1787306400999_zz99z"]["orphan"] == ["not-indexed"]
    assert sessions[f"cline-{TID}"]["orphan"] == ["not-indexed"]


def test_default_source_is_every_install_found(tmp_path, app, isolated_home):
    cline_storage(isolated_home / ".config", [TID], cwd=str(app))
    roo = roo_storage(tmp_path / "elsewhere", [ROO_TID], cwd=str(app))
    windsurf = isolated_home / ".config" / "Windsurf" / "User" / "globalStorage"
    windsurf.mkdir(parents=True)
    roo.rename(windsurf / roo.name)
    task(isolated_home / ".cline" / "data", "1787306500123", cwd=str(app))
    result = run_cli("import", "--from", "cline", "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.stdout
    assert sorted(s["id"] for s in result.json["sessions"]) == [f"cline-{TID}", "cline-1787306500123", f"roo-{ROO_TID}"]
    from toolkit.importers.cline import survey

    found = {(s.tool, s.folder.parent.name): s for s in survey()}
    assert sorted(found) == [("cline", ".cline"), ("cline", "globalStorage"), ("roo", "globalStorage")]
    listed = found["cline", "globalStorage"]
    assert (listed.on_disk, listed.listed, listed.not_listed, listed.index) == (1, 1, 0, "ok")
    own = found["cline", ".cline"]
    assert (own.on_disk, own.listed, own.not_listed, own.index) == (1, 0, 1, "missing")
    assert found["roo", "globalStorage"].not_listed == 0 and found["roo", "globalStorage"].folder.parent == windsurf


def test_help_names_cline():
    result = run_cli("import", "--help")
    assert "--from cline" in result.stdout


def test_a_missing_file_is_read_from_the_copy_an_interrupted_rewrite_left(tmp_path, app):
    storage = roo_storage(tmp_path / "cfg", [ROO_TID], cwd=str(app))
    folder = storage / "tasks" / ROO_TID
    api = folder / "api_conversation_history.json"
    api.rename(folder / ".api_conversation_history.json.bak_1787306460000_x1y2.tmp")  # safeWriteJson: renamed aside, new one not in place
    result = imported(tmp_path, storage)
    session = by_id(result)[f"roo-{ROO_TID}"]
    assert session["records"] == 17 and session["skipped"] == {}
    assert any("bak_1787306460000" in f["message"] for f in codes(result, "source-unreadable"))
