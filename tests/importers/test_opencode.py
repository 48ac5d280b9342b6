"""import --from opencode: OpenCode and Kilo CLI databases (every channel) and the legacy JSON tree
(SOURCES-MORE.md §3), on real SQLite files and real files.  Every message and part becomes a
record (a message) or is carried in one (its parts), or is counted under ``skipped`` and named in
a finding; the sources stay byte-identical; a re-import writes nothing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import import_report, run_cli, store_files
from tests.importers.opencode_data import PROJECT, T0, conversation, items, make_db, make_tree, session_row, write
from toolkit.importers import spill
from toolkit.lines import loads

SID = "ses_1a2b3c4d5e6fAbCdEfGhIjKlMn"


def journal(path: Path) -> list[dict]:
    return [loads(line) for line in path.read_bytes().splitlines()]


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def carried(records: list[dict]) -> list[str]:
    """The source keys a journal's records carry: a message's own (unless its row was lost and
    the record stands for its parts alone) and its parts'."""
    keys = []
    replaced = {r["replaces"] for r in records if "replaces" in r}  # a partial copy, superseded: its successor carries it
    for r in records:
        if r.get("seq") in replaced:
            continue
        if r.get("sourceKey") and not (r.get("type") == "orphan-message" and r.get("reason") == "message-unreadable"):
            keys.append(r["sourceKey"])
        keys += r.get("partKeys", [])
    return keys


def imported(tmp_path: Path, source: Path, *extra: str, exit_code: int | None = 0, store: Path | None = None):
    """Import ``source``; check the source is byte-identical, items = carried + skipped for every
    session, no key is carried twice, and the store passes fsck --strict."""
    root = source if source.is_dir() else source.parent
    before = hashes(root)
    store = store or tmp_path / "store"
    result = run_cli("import", "--from", "opencode", "--source", source, "--store", store, "--json", *extra)
    assert "Traceback" not in result.stderr, result.stderr
    if exit_code is not None:
        assert result.exit_code == exit_code, result.stdout[-3000:]
    assert hashes(root) == before, "the source is never written"
    for session in result.json["sessions"]:
        keys = carried(journal(Path(session["path"]))[1:])
        assert len(keys) == len(set(keys)), "a source item is carried once"
        assert session["source_items"] == len(keys) + sum(session["skipped"].values()), session
    if result.json["sessions"]:
        strict = run_cli("fsck", "--strict", "--store", store)
        assert strict.exit_code == 0, strict.stdout[-3000:]
    return result


def by_id(result) -> dict[str, dict]:
    return {s["id"]: s for s in result.json["sessions"]}


@pytest.fixture(autouse=True, params=["held", "spilled"])
def records(request, monkeypatch) -> str:
    """Every test runs twice: a session's records held in a list, and moved to a temporary database
    from the first (what a long session's do: :class:`toolkit.importers.spill.Records`)."""
    if request.param == "spilled":
        monkeypatch.setattr(spill, "RECORD_BYTES_IN_MEMORY", 0)
    return request.param


@pytest.fixture
def app(tmp_path) -> Path:
    folder = tmp_path / "home" / "ana" / "app"
    folder.mkdir(parents=True)
    return folder


def test_every_message_and_part_kind_from_a_database(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    result = imported(tmp_path, data)
    (session,) = result.json["sessions"]
    assert session["id"] == f"opencode-{SID}" and session["project"] == str(app)
    assert session["source_items"] == items() and not session["skipped"] and session["source_status"] == "live"
    meta, user, assistant, failed = journal(Path(session["path"]))
    assert meta["title"] == "Fix tests" and meta["raw"]["id"] == SID and meta["source"]["path"] == str(data / "opencode.db")
    assert user["kind"] == "user" and user["contextFiles"] == ["app.test.ts", "shot.png"]
    assert [b["type"] for b in user["content"]] == ["text", "file", "image"]
    assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use", "tool_result", "tool_use", "tool_result",
                                                         "file_edit", "text", "warning"]
    assert assistant["content"][1]["input"] == {"command": "npm test"} and assistant["content"][2]["content"] == "1 failing"
    assert assistant["content"][4] == {"type": "tool_result", "tool_use_id": "toolu_02", "content": "ENOENT", "is_error": True}
    assert assistant["status"] == "complete" and assistant["model"] == "claude-sonnet-4-5"
    assert len(assistant["raw"]["parts"]) == 12 and assistant["raw"]["message"]["data"]["finish"] == "stop", "every row kept whole"
    assert failed["content"][-1]["text"] == "APIError overloaded" and failed["status"] == "complete"
    shown = run_cli("show", session["id"], "--store", tmp_path / "store")
    assert f"fix the failing tests in {SID}" in shown.stdout and "Renamed the import; the tests pass now." in shown.stdout
    assert "npm test" in shown.stdout and "the test imports a renamed helper" in shown.stdout


def test_a_reimport_writes_nothing(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    make_tree(data / "storage", [session_row("ses_0000000000aaJsonOnlyXyzAbc", directory=str(app))])
    imported(tmp_path, data)
    store = hashes(tmp_path / "store")
    again = imported(tmp_path, data)
    assert {s["status"] for s in again.json["sessions"]} == {"unchanged"}
    assert hashes(tmp_path / "store") == store


def test_migration_stopped_partway_imports_the_json_only_sessions_as_orphaned(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    both, json_only = session_row(SID, directory=str(app)), session_row("ses_0000000000aaJsonOnlyXyzAbc", directory=str(app), title="Old")
    make_db(data / "opencode.db", [both])
    make_tree(data / "storage", [both, json_only])
    sessions = by_id(imported(tmp_path, data))
    assert sessions[f"opencode-{SID}"]["source_status"] == "live" and sessions[f"opencode-{SID}"]["source_items"] == items()
    old = sessions["opencode-ses_0000000000aaJsonOnlyXyzAbc"]
    assert old["orphaned"] and old["orphan"] == ["not-migrated"] and old["source_items"] == items()
    meta = journal(Path(old["path"]))[0]
    assert meta["title"] == "Old" and meta["source"]["version"] == "json:1.17.16" and meta["raw"]["projectID"] == PROJECT
    orphans = run_cli("import", "--from", "opencode", "--source", data, "--store", tmp_path / "other", "--orphans-only", "--json")
    assert [s["id"] for s in orphans.json["sessions"]] == ["opencode-ses_0000000000aaJsonOnlyXyzAbc"]


def test_a_json_tree_alone_is_what_opencode_reads_so_it_is_live(tmp_path, app):
    storage = make_tree(tmp_path / "opencode" / "storage", [session_row(SID, directory=str(app))])
    (session,) = imported(tmp_path, storage).json["sessions"]
    assert session["source_status"] == "live" and session["source_items"] == items()


def test_sessions_under_a_project_id_that_no_longer_resolves_are_orphaned(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app)), session_row("ses_2old", project="rootcommit", directory=str(app))])
    make_tree(data / "storage", [session_row("ses_3old", project="gone", directory=str(app))])
    write(data / "storage" / "project" / "broken.json", "{")
    (data / "storage" / "project" / "broken.json").write_text('{"id": "bro')  # cut mid-write: its sessions do not migrate
    make_tree(tmp_path / "other", [session_row("ses_4old", project="broken", directory=str(app))], projects=())
    (data / "storage" / "session" / "broken").mkdir()
    (tmp_path / "other" / "session" / "broken" / "ses_4old.json").rename(data / "storage" / "session" / "broken" / "ses_4old.json")
    result = imported(tmp_path, data, exit_code=4)
    sessions = by_id(result)
    assert sessions[f"opencode-{SID}"]["orphan"] == []
    assert sessions["opencode-ses_2old"]["orphan"] == ["project-missing"]
    assert sessions["opencode-ses_3old"]["orphan"] == ["not-migrated", "project-missing"]
    assert sessions["opencode-ses_4old"]["orphan"] == ["not-migrated", "project-missing"]
    assert any("broken.json" in f["path"] and f["code"] == "source-unreadable" for f in result.json["findings"])


def test_every_channel_database_and_kilo(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    make_db(data / "opencode-beta.db", [session_row(SID, directory=str(app)), session_row("ses_beta", directory=str(app), base=T0 + 10**7)])
    result = imported(tmp_path, data)
    sessions = by_id(result)
    assert sorted(sessions) == [f"opencode-{SID}", "opencode-ses_beta"], "a session in two channels is one journal"
    assert all(s["source_items"] == items() for s in sessions.values())
    assert journal(Path(sessions["opencode-ses_beta"]["path"]))[0]["source"]["path"] == str(data / "opencode-beta.db")
    kilo = tmp_path / "kilo"
    kilo.mkdir()
    make_db(kilo / "kilo.db", [session_row("ses_kilo", directory=str(app))])
    (session,) = imported(tmp_path, kilo).json["sessions"]
    assert journal(Path(session["path"]))[0]["source"]["tool"] == "kilo"


def test_default_sources_are_the_opencode_and_kilo_data_folders(tmp_path, app, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    (tmp_path / "share" / "opencode").mkdir(parents=True)
    (tmp_path / "share" / "kilo").mkdir(parents=True)
    make_db(tmp_path / "share" / "opencode" / "opencode-local.db", [session_row(SID, directory=str(app))])
    make_db(tmp_path / "share" / "kilo" / "kilo.db", [session_row("ses_kilo", directory=str(app))])
    result = run_cli("import", "--from", "opencode", "--store", tmp_path / "store", "--json")
    assert result.exit_code == 0, result.stdout
    assert sorted(s["id"] for s in result.json["sessions"]) == [f"opencode-{SID}", "opencode-ses_kilo"]


def test_rows_still_in_the_write_ahead_log_are_read_and_no_file_changes(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    db = make_db(data / "opencode.db", [session_row(SID, directory=str(app))], wal=True)
    writer = sqlite3.connect(db)  # OpenCode running: its last rows are in opencode.db-wal
    writer.execute("pragma wal_autocheckpoint=0")
    writer.execute("update session set title = 'Renamed live' where id = ?", (SID,))
    writer.commit()
    try:
        assert (data / "opencode.db-wal").stat().st_size > 0
        (session,) = imported(tmp_path, data).json["sessions"]
        assert journal(Path(session["path"]))[0]["title"] == "Renamed live"
    finally:
        writer.close()


def test_unreadable_rows_and_files_are_counted_findings(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    db = make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    (mid, _data, parts), *_ = conversation(SID)
    with sqlite3.connect(db) as conn:
        conn.execute("update message set data = '{\"role\": \"us' where id = ?", (mid,))
        conn.execute("update part set data = x'ff00' where id = ?", (parts[2][0],))
    conn.close()
    result = imported(tmp_path, data, exit_code=4)
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"source-unreadable": 2} and session["source_items"] == items()
    records = journal(Path(session["path"]))
    lost = [r for r in records if r.get("type") == "orphan-message"]
    assert len(lost) == 1 and lost[0]["content"][0]["text"] == f"fix the failing tests in {SID}", "its readable parts are kept"
    messages = " ".join(f["message"] for f in result.json["findings"])
    assert mid in messages and parts[2][0] in messages


def test_a_part_file_cut_mid_write_and_parts_without_their_message(tmp_path, app):
    storage = make_tree(tmp_path / "opencode" / "storage", [session_row(SID, directory=str(app))])
    (mid, _d, parts), (mid2, _d2, _parts2), *_ = conversation(SID)
    (storage / "part" / mid / f"{parts[0][0]}.json").write_text('{"id": "prt_')
    (storage / "message" / SID / f"{mid2}.json").unlink()  # the message file is gone, its parts are not
    result = imported(tmp_path, storage, exit_code=4)
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"source-unreadable": 1} and session["source_items"] == items() - 1
    kept = [r for r in journal(Path(session["path"])) if r.get("type") == "orphan-message"]
    assert len(kept) == 1 and len(kept[0]["partKeys"]) == 12


def test_a_session_whose_row_is_lost_keeps_its_messages_under_their_cwd(tmp_path):
    data = tmp_path / "opencode"
    data.mkdir()
    db = make_db(data / "opencode.db", [session_row(SID)])
    with sqlite3.connect(db) as conn:
        conn.execute("pragma foreign_keys=off")
        conn.execute("delete from session")
    conn.close()
    (session,) = imported(tmp_path, data).json["sessions"]
    assert session["orphan"] == ["session-unreadable", "folder-missing"] and session["project"] == "/home/ana/app"
    assert session["source_items"] == items()


def _corrupt_a_leaf(db: Path, table: str) -> None:
    with sqlite3.connect(db) as conn:
        leaves = [r[0] for r in conn.execute("select pageno from dbstat where name = ? and pagetype = 'leaf' order by pageno", (table,))]
        size = conn.execute("pragma page_size").fetchone()[0]
    conn.close()
    assert len(leaves) > 2, "the table spans several pages"
    with open(db, "r+b") as handle:  # a page of garbage in the middle of the table (SQLITE_CORRUPT)
        handle.seek((leaves[len(leaves) // 2] - 1) * size)
        handle.write(b"\x55" * 64)


@pytest.mark.parametrize("table", ["part", "message"])
def test_a_corrupt_database_yields_every_row_sqlite_can_still_read(tmp_path, table):
    data = tmp_path / "opencode"
    data.mkdir()
    db = make_db(data / "opencode.db", [session_row(f"ses_{n:04d}", base=T0 + n * 10**6) for n in range(40)])
    _corrupt_a_leaf(db, table)
    result = imported(tmp_path, data, exit_code=4)
    damaged = [f for f in result.json["findings"] if f"table {table}: the database is damaged" in f["message"]]
    assert len(damaged) == 1 and "could not be read" in damaged[0]["message"]
    lost = int(damaged[0]["message"].split("; ")[1].split(" row(s)")[0])
    assert lost > 0
    got = sum(s["source_items"] for s in result.json["sessions"])
    assert len(result.json["sessions"]) == 40 and got == items(40) - lost, "every readable row is imported, the lost ones counted"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([p for _m, _d, parts in conversation("x") for _p, p in parts]), max_size=12),
       st.sampled_from(["user", "assistant", "system"]))
def test_any_mix_of_parts_is_carried_once(tmp_path_factory, parts, role):
    """A message of any role with any parts, in any order: each part is carried, once."""
    tmp = tmp_path_factory.mktemp("mix")
    storage = tmp / "storage"
    write(storage / "project" / f"{PROJECT}.json", {"id": PROJECT})
    write(storage / "session" / PROJECT / f"{SID}.json", {"id": SID, "projectID": PROJECT, "directory": "/nowhere", "title": "t",
                                                           "version": "1", "time": {"created": T0}})
    write(storage / "message" / SID / "msg_1.json", {"id": "msg_1", "sessionID": SID, "role": role, "time": {"created": T0}})
    for n, part in enumerate(parts):
        write(storage / "part" / "msg_1" / f"prt_{n:03d}.json", {"id": f"prt_{n:03d}", **part})
    result = run_cli("import", "--from", "opencode", "--source", storage, "--store", tmp / "store", "--json")
    assert result.exit_code == 0, result.stdout
    (session,) = result.json["sessions"]
    records = journal(Path(session["path"]))[1:]
    assert carried(records) == ["message:msg_1"] + [f"part:prt_{n:03d}" for n in range(len(parts))]
    assert session["source_items"] == 1 + len(parts)


def test_not_an_opencode_folder_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli("import", "--from", "opencode", "--source", tmp_path / "empty", "--store", tmp_path / "store")
    assert result.exit_code != 0 and "OpenCode" in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_a_file_that_is_not_a_database_is_a_finding(tmp_path):
    bad = tmp_path / "opencode.db"
    bad.write_bytes(b"not sqlite at all" * 10)
    result = run_cli("import", "--from", "opencode", "--source", bad, "--store", tmp_path / "store", "--json")
    assert result.json["sessions"] == [] and result.json["findings"][0]["code"] == "source-unreadable"
    assert bad.read_bytes() == b"not sqlite at all" * 10


def test_a_schema_only_database_leaves_the_whole_tree_not_migrated(tmp_path, app):
    """#13654: opencode.db existed from a schema-only release, so the migration never ran."""
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [])
    make_tree(data / "storage", [session_row(SID, directory=str(app))])
    (session,) = imported(tmp_path, data).json["sessions"]
    assert session["orphan"] == ["not-migrated"] and session["source_items"] == items()
    (alone,) = imported(tmp_path, data / "storage", store=tmp_path / "other").json["sessions"]
    assert alone["orphan"] == ["not-migrated"], "the tree's data folder has a database, even when only the tree is named"


def test_a_reply_still_being_generated_is_superseded_once_complete(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    db = make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    (_m1, _d1, _p1), (mid, reply, parts), *_ = conversation(SID)
    with sqlite3.connect(db) as conn:
        conn.execute("update message set data = ? where id = ?", (json.dumps({**reply, "time": {"created": reply["time"]["created"]}}), mid))
        conn.execute("delete from part where message_id = ? and id > ?", (mid, parts[2][0]))
    conn.close()
    (first,) = imported(tmp_path, data).json["sessions"]
    pending = [r for r in journal(Path(first["path"])) if r.get("sourceKey") == f"message:{mid}"]
    assert pending[0]["partial"] is True and pending[0]["status"] == "pending"
    make_db(data / "done.db", [session_row(SID, directory=str(app))])  # the finished rows, moved into place as OpenCode would have them
    (data / "opencode.db").unlink()
    (data / "done.db").rename(data / "opencode.db")
    (second,) = imported(tmp_path, data).json["sessions"]
    assert second["status"] == "updated" and second["new_records"] == 1
    final = [r for r in journal(Path(second["path"])) if r.get("sourceKey") == f"message:{mid}"]
    assert final[-1]["replaces"] == pending[0]["seq"] and final[-1]["status"] == "complete" and len(final[-1]["partKeys"]) == 12
    assert imported(tmp_path, data).json["sessions"][0]["status"] == "unchanged"


def test_a_subagent_session_names_its_parent(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app)), {**session_row("ses_child", directory=str(app)), "parent_id": SID}])
    sessions = by_id(imported(tmp_path, data))
    assert journal(Path(sessions["opencode-ses_child"]["path"]))[0]["source"]["parent"] == SID


@pytest.fixture(scope="module")
def forty(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("forty")
    return make_db(folder / "opencode.db", [session_row(f"ses_{n:04d}", base=T0 + n * 10**6) for n in range(40)])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=st.integers(min_value=2, max_value=10**6), at=st.integers(min_value=0, max_value=4000), garbage=st.binary(min_size=8, max_size=200))
@example(page=114678, at=1088, garbage=b"\x00" * 23 + b"\x80")  # a session's directory no longer UTF-8: once a traceback
def test_any_damaged_page_still_imports_every_readable_row(tmp_path_factory, forty, page, at, garbage):
    """Garbage over any page but the first (a table's or an index's): never a traceback, the
    source untouched, every session's items carried or counted, the store clean."""
    tmp = tmp_path_factory.mktemp("damaged")
    data = tmp / "opencode"
    data.mkdir()
    db = data / "opencode.db"
    db.write_bytes(forty.read_bytes())
    pages = db.stat().st_size // 4096
    with open(db, "r+b") as handle:
        handle.seek((2 + page % (pages - 1) - 1) * 4096 + at)
        handle.write(garbage[: 4096 - at])
    result = imported(tmp, data, exit_code=None)
    assert result.exit_code in (0, 4), result.stdout[-2000:]
    assert sum(s["source_items"] for s in result.json["sessions"]) <= items(40)


def test_tables_without_rowid_are_read_by_id(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    db = make_db(data / "opencode.db", [session_row(SID, directory=str(app))], rowid=False)
    with sqlite3.connect(db) as conn:
        assert "WITHOUT ROWID" in conn.execute("select sql from sqlite_master where name = 'part'").fetchone()[0]
    conn.close()
    (session,) = imported(tmp_path, data).json["sessions"]
    assert session["source_items"] == items() and not session["skipped"]


def test_source_files_are_every_database_and_tree_file(tmp_path, app):
    from toolkit.importers.opencode import source_files

    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    make_db(data / "kilo-dev.db", [])
    (data / "auth.json").write_text("{}")
    make_tree(data / "storage", [session_row(SID, directory=str(app))])
    files = {p.relative_to(data).as_posix() for p in source_files(data)}
    assert {"opencode.db", "kilo-dev.db", "storage/migration", f"storage/session/{PROJECT}/{SID}.json"} <= files
    assert "auth.json" not in files


def test_an_archived_session_and_a_moved_project(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [{**session_row(SID, directory="/home/ana/old-name"), "time_archived": T0 + 5000}])
    (session,) = imported(tmp_path, data, "--map", f"/home/ana/old-name={app}").json["sessions"]
    assert session["project"] == str(app) and session["source_status"] == "orphaned" and session["orphan"] == ["folder-missing"]
    assert journal(Path(session["path"]))[0]["source"]["archived"] == "2026-08-21T10:00:05.000Z"


def test_a_message_one_channel_cannot_read_is_taken_from_another(tmp_path, app):
    data = tmp_path / "opencode"
    data.mkdir()
    damaged = make_db(data / "opencode.db", [session_row(SID, directory=str(app))])
    with sqlite3.connect(damaged) as conn:
        conn.execute("update message set data = 'not json'")
    conn.close()
    make_db(data / "opencode-beta.db", [session_row(SID, directory=str(app))])
    result = imported(tmp_path, data)
    (session,) = result.json["sessions"]
    assert session["source_items"] == items() and not session["skipped"] and not result.json["findings"]


def test_a_session_under_the_repository_s_previous_project_id_is_orphaned(tmp_path, app):
    """#16579: the repository's id changed (an origin added); OpenCode lists the new id's sessions."""
    (app / ".git").mkdir()
    (app / ".git" / "opencode").write_text("newremotehash")
    (app / "src").mkdir()
    data = tmp_path / "opencode"
    data.mkdir()
    make_db(data / "opencode.db", [session_row(SID, directory=str(app / "src")), session_row("ses_new", project="newremotehash", directory=str(app))],
            projects=(PROJECT, "newremotehash"))
    cache = (app / ".git" / "opencode").read_bytes()
    sessions = by_id(imported(tmp_path, data))
    assert sessions[f"opencode-{SID}"]["orphan"] == ["project-id-changed"]
    assert sessions["opencode-ses_new"]["orphan"] == [] and sessions["opencode-ses_new"]["source_status"] == "live"
    assert (app / ".git" / "opencode").read_bytes() == cache


def _every_shape(data: Path, app: Path) -> Path:
    """A data folder holding each thing a session's records are made from: a database and a channel
    database, the JSON tree beside them, a message one channel cannot read, a message whose data is
    no object, a part that cannot be read, parts whose message is gone, a session whose row is lost."""
    data.mkdir()
    rows = [session_row(f"ses_{n:04d}", directory=str(app), base=T0 + n * 10**6) for n in range(3)]
    db = make_db(data / "opencode.db", rows)
    make_db(data / "opencode-beta.db", rows[:1])
    make_tree(data / "storage", [session_row("ses_tree", directory=str(app))])
    (m1, _d, parts1), (m2, _d2, parts2), (m3, _d3, _p3) = conversation(rows[1]["id"], rows[1]["time_created"], 1)
    with sqlite3.connect(db) as conn:
        conn.execute("pragma foreign_keys=off")
        conn.execute("update message set data = 'not json' where session_id = ?", (rows[0]["id"],))  # the beta channel has it
        conn.execute("update message set data = '[1, 2]' where id = ?", (m1,))
        conn.execute("update part set data = x'ff00' where id = ?", (parts2[3][0],))
        conn.execute("delete from message where id = ?", (m3,))
        conn.execute("delete from session where id = ?", (rows[2]["id"],))
    conn.close()
    return data


def test_a_long_session_s_records_in_a_database_are_the_records_held(tmp_path, app, records):
    """Records moved to a temporary database (as a long session's are) write the same journals and the
    same report as records held in memory, from every shape of source."""
    if records == "spilled":
        pytest.skip("compares both modes itself")
    data = _every_shape(tmp_path / "opencode", app)
    held = import_report("opencode", data, tmp_path / "held")
    spill.RECORD_BYTES_IN_MEMORY, limit = 0, spill.RECORD_BYTES_IN_MEMORY
    try:
        spilled = import_report("opencode", data, tmp_path / "spilled")
    finally:
        spill.RECORD_BYTES_IN_MEMORY = limit
    assert spilled == held
    assert store_files(tmp_path / "spilled") == store_files(tmp_path / "held")
    report = json.loads(held)
    assert len(report["sessions"]) == 4 and report["exit"] == 4
    messages = " ".join(f["message"] for f in report["findings"])
    assert "is not a JSON object" in messages and "is missing; its 1 part(s)" in messages, "every item left out is named"
    untitled = [s for s in report["sessions"] if s["id"] == "opencode-ses_0002"]
    assert journal(Path(untitled[0]["path"].replace("STORE", str(tmp_path / "held"))))[0]["title"] == "fix the failing tests in ses_0002"


def test_records_past_the_limit_move_to_a_database_and_read_back_alike():
    from toolkit.importers.output import Raw

    made = [{"kind": "user", "t": "2026", "content": f"x{n}\ud83d", "n": 2**63 - n, "f": 0.1 * n, "raw": Raw(value={"n": n, "s": "\udc00"})}
            for n in range(40)]
    kept = spill.Records(bytes_in_memory=10 * 1024)
    for record in made:
        kept.append(record)
    assert kept.spilled and len(kept) == 40
    for _pass in range(2):
        back = list(kept)
        assert [{k: v for k, v in r.items() if k != "raw"} for r in back] == [{k: v for k, v in r.items() if k != "raw"} for r in made]
        assert [r["raw"].data for r in back] == [r["raw"].data for r in made]
    kept.close()
