"""A database read in full again, its journals not (issue 27): Cursor writes to its database all
day, so each nightly import reads every chat again; a chat's journal that the last import found
holding all of it, untouched since, is not read again when a create of the chat would write the
same bytes as then (output.write_digest).  Whatever changed, in the database or in the store, the
store and the report are those a full read (``--reread``) gives.  Real SQLite files, real forks."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.importers.cursor_db import bench_user, nulls_user
from tests.importers.resumes import alike, imported, journals, said
from toolkit import forked
from toolkit.importers import output

def _touched(user: Path) -> None:
    """The database written to (as Cursor does all day), nothing of its chats changed."""
    db = user / "globalStorage" / "state.vscdb"
    info = os.stat(db)
    os.utime(db, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))


def _journal_reads(monkeypatch, log: Path) -> None:
    """Each read of an existing journal by a write, a line in ``log`` (from forked workers too)."""
    real = output._existing

    def spied(path):
        with open(log, "a") as handle:
            handle.write(f"{path}\n")
        return real(path)
    monkeypatch.setattr(output, "_existing", spied)


def _reads(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _kept_twice(tmp_path: Path, *extra: str) -> tuple[Path, Path, dict]:
    """A store a first import created and a second, after the database was written to, found whole."""
    user = bench_user(tmp_path / "home")
    store = tmp_path / "store"
    first = imported("cursor", user, store, *extra)
    assert {s["status"] for s in first["sessions"]} == {"created"}
    _touched(user)
    second = imported("cursor", user, store, *extra)
    assert {s["status"] for s in second["sessions"]} == {"unchanged"}
    return user, store, second


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_chat_found_whole_is_not_read_again_and_says_the_same(tmp_path, monkeypatch, jobs):
    if jobs == "2" and not forked.available():
        pytest.skip("no os.fork: --jobs imports in this process")
    user, store, second = _kept_twice(tmp_path, "--jobs", jobs)
    before = journals(store)
    log = tmp_path / "reads.log"
    _journal_reads(monkeypatch, log)
    for night in range(2):
        _touched(user)
        again = imported("cursor", user, store, "--jobs", jobs)
        assert _reads(log) == 0, f"night {night}: a journal found whole last time was read again"
        assert said(again) == said(second)
        assert again["read"] == second["read"] == len(second["sessions"])
        assert journals(store) == before


def _add_bubble(conn: sqlite3.Connection, cid: str) -> None:
    composer = orjson.loads(conn.execute("select value from cursorDiskKV where key = ?", (f"composerData:{cid}",)).fetchone()[0])
    headers = composer["fullConversationHeadersOnly"]
    last = orjson.loads(conn.execute("select value from cursorDiskKV where key = ?",
                                     (f"bubbleId:{cid}:{headers[-1]['bubbleId']}",)).fetchone()[0])
    bubble = {**last, "bubbleId": "grown-bubble-0001", "type": 1, "text": "one more question, asked tonight"}
    headers.append({"bubbleId": bubble["bubbleId"], "type": 1})
    conn.execute("insert into cursorDiskKV values (?, ?)", (f"bubbleId:{cid}:{bubble['bubbleId']}", orjson.dumps(bubble)))
    conn.execute("insert into cursorDiskKV values (?, ?)", (f"composerData:{cid}", orjson.dumps(composer)))


def _edit_bubble(conn: sqlite3.Connection, cid: str) -> None:
    key, value = conn.execute("select key, value from cursorDiskKV where key > ? and key < ? order by key limit 1",
                              (f"bubbleId:{cid}:", f"bubbleId:{cid};")).fetchone()
    bubble = orjson.loads(value)
    bubble["text"] = (bubble.get("text") or "") + " (edited)"
    conn.execute("insert into cursorDiskKV values (?, ?)", (key, orjson.dumps(bubble)))


def _composer_field(name: str, value):
    def change(conn: sqlite3.Connection, cid: str) -> None:
        composer = orjson.loads(conn.execute("select value from cursorDiskKV where key = ?", (f"composerData:{cid}",)).fetchone()[0])
        composer[name] = value
        conn.execute("insert into cursorDiskKV values (?, ?)", (f"composerData:{cid}", orjson.dumps(composer)))
    return change


def _drop_bubble(conn: sqlite3.Connection, cid: str) -> None:
    conn.execute("delete from cursorDiskKV where key = (select key from cursorDiskKV where key > ? and key < ? order by key limit 1)",
                 (f"bubbleId:{cid}:", f"bubbleId:{cid};"))


def _moved_workspace(user: Path) -> None:
    """Every workspace's folder renamed: its chats belong to another project now."""
    for found in sorted((user / "workspaceStorage").glob("*/workspace.json")):
        doc = orjson.loads(found.read_bytes())
        doc["folder"] = doc["folder"].rstrip("/") + "-renamed"
        found.write_bytes(orjson.dumps(doc))


def _journal_key_rewritten(path: Path) -> None:
    """A record's key spelled otherwise, in place, the file's size and times put back: only its
    ctime says it was written (a full read finds that record missing, and writes it again)."""
    info = os.stat(path)
    data = path.read_bytes()
    at = data.index(b'"sourceKey":"', data.index(b"\n") + 1) + len(b'"sourceKey":"')
    path.write_bytes(data[:at] + (b"X" if data[at:at + 1] != b"X" else b"Y") + data[at + 1:])
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert [os.stat(path).st_size, os.stat(path).st_mtime_ns] == [info.st_size, info.st_mtime_ns]


def _journal_appended(path: Path) -> None:
    """A record appended, numbered after the last (another import, a tool of the user's)."""
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    with open(path, "ab") as handle:
        handle.write(orjson.dumps({"kind": "event", "t": "2026-12-01T00:00:00.000Z", "type": "note",
                                   "seq": last["seq"] + 1, "content": "appended by another tool"}) + b"\n")


DB_CHANGES = {
    "nothing": None,
    "a bubble added": _add_bubble,
    "a bubble edited in place": _edit_bubble,
    "the chat renamed": _composer_field("name", "renamed tonight"),
    "its model changed": _composer_field("modelConfig", {"modelName": "another-model"}),
    "a bubble row deleted": _drop_bubble,
    "the chat archived": _composer_field("isArchived", True),
}
STORE_CHANGES = {"a journal's key rewritten, times put back": _journal_key_rewritten, "a journal appended to": _journal_appended}


@pytest.mark.parametrize("change", [*DB_CHANGES, "its workspace folder renamed", *STORE_CHANGES])
def test_whatever_changed_the_store_and_report_are_a_full_reads(tmp_path, monkeypatch, change):
    user, store, second = _kept_twice(tmp_path)
    full = tmp_path / "full"
    shutil.copytree(store, full)
    first_chat = next(s for s in sorted(second["sessions"], key=lambda s: s["id"]) if s["records"] > 3)
    cid = first_chat["id"].removeprefix("cursor-")
    if DB_CHANGES.get(change) is not None:
        conn = sqlite3.connect(user / "globalStorage" / "state.vscdb")
        DB_CHANGES[change](conn, cid)
        conn.commit()
        conn.close()
    elif change == "its workspace folder renamed":
        _moved_workspace(user)
    elif change in STORE_CHANGES:
        for root in (store, full):
            STORE_CHANGES[change](root / Path(first_chat["path"]).relative_to(store))
    _touched(user)
    log = tmp_path / "reads.log"
    _journal_reads(monkeypatch, log)
    reports = {"store": imported("cursor", user, store)}
    reads = _reads(log)
    reports["full"] = imported("cursor", user, full, "--reread")
    alike(tmp_path, reports, change)
    changed = [s["id"] for s in reports["full"]["sessions"] if s["status"] != "unchanged"]
    if change == "nothing":
        assert not changed and reads == 0
    elif change != "its workspace folder renamed":  # (there every chat's journal is new: nothing to read)
        assert set(changed) <= {first_chat["id"]}, change  # (a bubble edited in place keeps its first copy: unchanged)
        if change == "a journal appended to":  # the cache trusts what it kept of a database while its journals are as it left them
            assert reads == len(second["sessions"])
        else:
            assert reads == 1, "the journal of the chat that changed is read, and only that one"
    if change in ("a bubble added", "the chat renamed", "a journal's key rewritten, times put back"):
        assert changed == [first_chat["id"]], change


def _session(records: int = 3) -> output.Session:
    source = {"app": "cursor", "path": "db", "key": "k"}
    made = [{"kind": "user" if n % 2 == 0 else "assistant", "t": "2026-12-01T00:00:01.000Z", "content": f"message {n}",
             "sourceKey": f"bubbleId:c:{n}"} for n in range(records)]
    return output.Session("cursor-0001", "/home/u/project", "2026-12-01T00:00:00.000Z", "a chat", source, records=made, keeps_same=True)


def _kept_state(store: Path) -> tuple[dict, Path]:
    """A session's journal created, then found whole by a second write: the state that write keeps."""
    outcome, _ = output.write_session(store, _session())
    session = _session()
    again, found = output.write_session(store, session)
    assert (outcome.status, again.status, found) == ("created", "unchanged", [])
    state = output.same_state(session, again)
    assert state is not None and state["same"]["digest"] == session.digest
    return state, again.path


def test_the_kept_state_says_unchanged_only_for_the_same_chat_and_journal(tmp_path):
    state, path = _kept_state(tmp_path / "store")
    same = _session()
    same.resumed_from = state
    outcome = output._same_as_kept(same, path, same.records, False)
    assert outcome is not None and (outcome.status, outcome.records, outcome.keys) == ("unchanged", 3, 3)
    for changed in (lambda s: s.records[1].update(content="edited"), lambda s: s.records.append({**s.records[0], "sourceKey": "k2"}),
                    lambda s: setattr(s, "title", "renamed"), lambda s: setattr(s, "project", "/elsewhere"),
                    lambda s: s.records[0].update(_alias="bubbleId:c:9")):  # (a key the writer compares by, never written)
        session = _session()
        changed(session)
        session.resumed_from = state
        assert output._same_as_kept(session, path, session.records, False) is None
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns))  # (its times put back: only the ctime moved)
    session = _session()
    session.resumed_from = state
    assert output._same_as_kept(session, path, session.records, False) is None


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_kept_state_that_is_not_one_is_never_trusted(tmp_path, data):
    """Any field of the kept state replaced or dropped (a damaged cache): never an error, and never
    ``unchanged`` from it unless what it says is still what the checks ask for."""
    state, path = _kept_state(Path(tempfile.mkdtemp(dir=tmp_path)) / "store")
    broken = orjson.loads(orjson.dumps(state))
    where = data.draw(st.sampled_from(["journal", *(f"same.{k}" for k in broken["same"])]))
    holder, key = (broken["same"], where[5:]) if where.startswith("same.") else (broken, where)
    if data.draw(st.booleans()):
        del holder[key]
    else:
        holder[key] = data.draw(JSON)
    session = _session()
    session.resumed_from = broken
    outcome = output._same_as_kept(session, path, session.records, False)
    if outcome is None:
        return
    was = (state["same"] if where.startswith("same.") else state).get(key)
    now = holder.get(key)
    # trusted only as it was, or where what it says is only reported (a title, a count, no partial record, no proof kept)
    assert where == "same.title" and (now is None or type(now) is str) or where in ("same.records", "same.keys", "same.seq") and type(now) is int and 0 <= now < 1 << 63 \
        or where == "same.partials" and now == {} or where == "same.proven" and now is None \
        or orjson.dumps(now) == orjson.dumps(was), (where, now)


def test_a_vscode_folder_reads_only_the_journal_of_the_chat_that_grew(tmp_path, monkeypatch):
    """VS Code keeps a chat a file, and its import reads them all when any changed: each night the
    chat asked in is read with its journal, the others without theirs."""
    import json

    from tests.importers.vscode_tree import build_tree, request

    user = build_tree(tmp_path / "home")["user"]
    chat = next(user.rglob("chatSessions/s-live.json"))

    def asked(n: int) -> None:
        doc = json.loads(chat.read_text())
        doc["requests"].append(request(f"asked on night {n}", 1764470000000 + n, rid=f"s-live-night-{n}"))
        chat.write_text(json.dumps(doc))

    store = tmp_path / "store"
    imported("vscode", user, store)
    asked(1)
    second = imported("vscode", user, store)
    assert {s["id"]: s["status"] for s in second["sessions"]}["vscode-s-live"] == "updated"
    full = tmp_path / "full"
    shutil.copytree(store, full)
    asked(2)
    log = tmp_path / "reads.log"
    _journal_reads(monkeypatch, log)
    reports = {"store": imported("vscode", user, store)}
    assert _reads(log) == 1, "the journal of the chat asked in, and only that one"
    reports["full"] = imported("vscode", user, full, "--reread")
    alike(tmp_path, reports, "a chat asked in again")
    assert [s["id"] for s in reports["full"]["sessions"] if s["status"] != "unchanged"] == ["vscode-s-live"]


def test_a_database_with_an_unreadable_row_is_read_again_each_night_its_journals_not(tmp_path, monkeypatch):
    """A NULL bubble row (an error, as real databases hold after a crash) means the database is read
    in full every time, never recalled from the cache, and says so each time; the chats' journals,
    found whole, are not read again for it."""
    user = nulls_user(tmp_path / "home")
    store = tmp_path / "store"
    first = imported("cursor", user, store)
    assert first["exit"] == 4 and {f["code"] for f in first["findings"]} >= {"source-unreadable"}
    second = imported("cursor", user, store)
    log = tmp_path / "reads.log"
    _journal_reads(monkeypatch, log)
    for _night in range(2):
        again = imported("cursor", user, store)
        assert (again["read"], again["from_cache"]) == (1, 0), "an error is never taken from the cache"
        assert said(again) == said(second) and again["exit"] == 4
    assert _reads(log) == 0
