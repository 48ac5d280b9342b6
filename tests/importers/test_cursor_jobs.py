"""`import --from cursor --jobs N` (issue 27): the global database's composers are converted and
written by worker processes, each opening the database itself, and the journals, the index and the
report, in their order, are those one process writes.  Real SQLite files, real forks, a real SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.cursor_db import add_bubble, bench_user, modern_user_dir, nulls_user, put, real_bubbles
from tests.importers.test_import_jobs import forks_asked, imported, store_files
from toolkit import forked
from toolkit.errors import OperationalError
from toolkit.importers import cursor, run_import
from toolkit.importers import sqlite as db
from toolkit.importers.cursor import replay
from toolkit.importers.cursor.scan import Scan

pytestmark = pytest.mark.skipif(not forked.available(), reason="no os.fork: --jobs imports in this process")


def _wal_user(base: Path) -> tuple[Path, sqlite3.Connection]:
    """A WAL database whose rows are still in its -wal (read from a snapshot copy): the real
    bubbles' composer, and three more made of them, one deleted (NULL) with its rows left."""
    info = modern_user_dir(base, base / "project")
    conn = info["conn"]
    for n, (_cid, bid, value) in enumerate(real_bubbles()[:30]):
        add_bubble(info, f"extra-{n:03d}", {**value, "bubbleId": f"extra-{n:03d}", "text": f"message {n} of {bid}"})
    for n in range(3):
        cid = f"c0ffee{n:02d}-0000-4000-8000-000000000000"
        bubbles = real_bubbles()[n * 20:n * 20 + 20]
        headers = [{"bubbleId": f"b{k:03d}", "type": value.get("type", 2)} for k, (_c, _b, value) in enumerate(bubbles)]
        put(conn, f"composerData:{cid}", None if n == 2 else {"_v": 10, "composerId": cid, "name": f"chat {n}",
                                                              "createdAt": 1765808373121 + n, "fullConversationHeadersOnly": headers})
        for k, (_c, _b, value) in enumerate(bubbles):
            put(conn, f"bubbleId:{cid}:b{k:03d}", {**value, "bubbleId": f"b{k:03d}"})
    conn.commit()
    assert (info["user"] / "globalStorage" / "state.vscdb-wal").stat().st_size > 0
    return info["user"], conn


@pytest.mark.parametrize("build", ["bench", "wal", "nulls"])
def test_jobs_2_writes_the_journals_and_report_of_jobs_1(tmp_path, monkeypatch, build):
    kept = None
    if build == "bench":
        user = bench_user(tmp_path / "src")
    elif build == "wal":
        user, kept = _wal_user(tmp_path / "src")
    else:
        user = nulls_user(tmp_path / "src")
    forks = forks_asked(monkeypatch)
    before = {p: p.read_bytes() for p in user.rglob("*") if p.is_file()}
    one = imported("cursor", user, tmp_path / "one", "--jobs", "1")
    assert forks == []
    two = imported("cursor", user, tmp_path / "two", "--jobs", "2")
    assert forks == ([] if build == "nulls" else [2])  # the composers were converted in two workers (one composer: here)
    assert one[0] in (0, 4) and one == two
    assert json.loads(one[1])["sessions"] and '"status": "created"' in one[1]
    assert store_files(tmp_path / "one") == store_files(tmp_path / "two")
    assert {p: p.read_bytes() for p in user.rglob("*") if p.is_file()} == before  # the source: not a byte written
    # nothing new, read again in workers (--reread) or not: the same report as one process's
    for extra in ((), ("--reread",)):
        again_one = imported("cursor", user, tmp_path / "one", "--jobs", "1", *extra)
        again_two = imported("cursor", user, tmp_path / "two", "--jobs", "2", *extra)
        assert again_one == again_two and '"status": "created"' not in again_two[1]
    assert store_files(tmp_path / "one") == store_files(tmp_path / "two")
    assert run_cli("fsck", "--store", str(tmp_path / "two")).exit_code in (0, 4)
    if kept is not None:
        kept.close()


def test_orphans_only_and_a_workspace_scope_are_kept_in_workers(tmp_path):
    user = bench_user(tmp_path / "src")
    scope = sorted((user / "workspaceStorage").iterdir())[1]
    for name, extra in (("orphans", ("--source", str(user), "--orphans-only")), ("scope", ("--source", str(scope)))):
        runs = []
        for jobs in ("1", "2"):
            store = tmp_path / f"{name}-{jobs}"
            result = run_cli("import", "--from", "cursor", *extra, "--store", str(store), "--json", "--jobs", jobs)
            runs.append((result.exit_code, result.stdout.replace(str(store), "STORE")))
        assert runs[0] == runs[1] and runs[0][0] in (0, 4)
        assert store_files(tmp_path / f"{name}-1") == store_files(tmp_path / f"{name}-2")
    assert json.loads(runs[0][1])["sessions"]  # the scope holds chats


def test_a_chat_kept_as_rows_converts_in_a_worker_to_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(replay, "ROWS_IN_MEMORY", 64 << 10)  # every large composer's rows go to a temporary database
    user = bench_user(tmp_path / "src")
    for jobs in (1, 2):
        run_import("cursor", [user], tmp_path / f"store-{jobs}", cursor.Options(), jobs=jobs)
    assert store_files(tmp_path / "store-1") == store_files(tmp_path / "store-2")


def test_a_worker_killed_mid_import_leaves_its_composers_to_the_parent(tmp_path, monkeypatch):
    user = bench_user(tmp_path / "src")
    with sqlite3.connect(user / "globalStorage" / "state.vscdb") as conn:
        keys = [k for (k,) in conn.execute("select key from cursorDiskKV where key like 'composerData:%' order by key")]
    assert len(keys) > 8
    parent = os.getpid()
    real = Scan._global_one

    def dying(self, conn, key, *args):
        if os.getpid() != parent and key == keys[4]:  # SIGKILL, in whichever worker took the fifth composer
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, conn, key, *args)

    one = run_import("cursor", [user], tmp_path / "one", cursor.Options(), jobs=1)
    monkeypatch.setattr(Scan, "_global_one", dying)
    forks = forks_asked(monkeypatch)
    two = run_import("cursor", [user], tmp_path / "two", cursor.Options(), jobs=2)
    assert forks == [2]
    assert [(o.id, o.records) for o in two.sessions] == [(o.id, o.records) for o in one.sessions]
    # what the killed worker had linked before it died is found in place by the parent: unchanged, not created
    assert {o.status for o in one.sessions} == {"created"} and {o.status for o in two.sessions} <= {"created", "unchanged"}
    assert sum(o.status == "created" for o in two.sessions) >= len(two.sessions) - 8
    # a journal the killed worker was writing is a dead temp file: removed, and said (leftover-temp)
    assert [f.to_json() for f in two.findings if f.code != "leftover-temp"] == [f.to_json() for f in one.findings]
    assert not [p for p in (tmp_path / "two").rglob("*.tmp")]
    journals = lambda store: {k: v for k, v in store_files(store).items() if k.endswith(".jsonl")}  # noqa: E731
    assert journals(tmp_path / "one") == journals(tmp_path / "two")
    assert run_cli("fsck", "--store", str(tmp_path / "two")).exit_code in (0, 4)


def test_a_worker_will_not_read_a_database_replaced_since_the_import_opened_it(tmp_path):
    user = nulls_user(tmp_path)
    path = user / "globalStorage" / "state.vscdb"
    with db.open_db(path) as conn:
        again = db.reopen(conn)  # the same file: opened as the first was (read-only)
        assert again.execute("select count(*) from cursorDiskKV").fetchone() == conn.execute(
            "select count(*) from cursorDiskKV").fetchone()
        again.close()
        shutil.copyfile(path, tmp_path / "copy")
        os.replace(tmp_path / "copy", path)  # another file at its path now
        with pytest.raises(OperationalError, match="replaced while it was being imported"):
            db.reopen(conn)


def test_a_worker_meeting_the_editor_holding_the_database_gets_the_lock_error(tmp_path):
    # the editor takes the database (a real exclusive lock) between the scan's open and a worker's
    # reopen: the lock's typed error, with its next step, as when the import opens it
    from toolkit.errors import LockBusyError

    path = _damaged_user(tmp_path / "src") / "globalStorage" / "state.vscdb"
    with db.open_db(path) as conn:
        editor = sqlite3.connect(path, timeout=0)
        editor.execute("begin exclusive")
        try:
            with pytest.raises(LockBusyError, match="locked by the editor; close it and retry"):
                db.reopen(conn)
        finally:
            editor.rollback()
            editor.close()
        db.reopen(conn).close()  # the editor done: read again as before


def test_progress_moves_composer_by_composer_and_adds_up_to_the_bytes(tmp_path):
    # one unit (the User folder), yet the progress's bytes arrive as each composer is taken, in the
    # same steps whatever --jobs, and they add up to what `source_bytes` announced as the total
    from toolkit.importers import source_bytes

    user = bench_user(tmp_path / "src")
    seen = {}
    for jobs in (1, 2):
        read, outcomes = [], []
        run_import("cursor", [user], tmp_path / f"store-{jobs}", cursor.Options(), read=read.append,
                   progress=outcomes.append, jobs=jobs)
        seen[jobs] = read
        assert sum(read) == source_bytes("cursor", [user]) and len(read) > 10
        assert len(outcomes) == len(list((tmp_path / f"store-{jobs}").rglob("*.jsonl")))
    assert seen[1] == seen[2]


def _damaged_user(base: Path) -> Path:
    """A global database whose first composer's row sits on a damaged overflow page (its next-page
    number overwritten): reading that one value fails, "database disk image is malformed"; three
    composers after it are whole."""
    path = base / "User" / "globalStorage" / "state.vscdb"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    for table in ("ItemTable", "cursorDiskKV"):
        conn.execute(f"CREATE TABLE {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    marker = "DAMAGED-ROW-MARKER"
    damaged = {"_v": 10, "composerId": "0-damaged", "name": "damaged", "pad": (marker + "y" * 500) * 40,
               "fullConversationHeadersOnly": [{"bubbleId": "d1", "type": 1}]}
    put(conn, "composerData:0-damaged", damaged)
    put(conn, "bubbleId:0-damaged:d1", {"type": 1, "bubbleId": "d1", "text": "kept in its own row", "createdAt": "2025-12-01T00:00:00.000Z"})
    for cid in ("a", "b", "c"):
        put(conn, f"composerData:{cid}", {"_v": 10, "composerId": cid, "name": f"chat {cid}", "createdAt": 1765808373121,
                                          "fullConversationHeadersOnly": [{"bubbleId": "m1", "type": 1}, {"bubbleId": "m2", "type": 2}]})
        put(conn, f"bubbleId:{cid}:m1", {"type": 1, "bubbleId": "m1", "text": f"question {cid}", "createdAt": "2025-12-01T00:00:00.000Z"})
        put(conn, f"bubbleId:{cid}:m2", {"type": 2, "bubbleId": "m2", "text": f"answer {cid}", "createdAt": "2025-12-01T00:00:01.000Z"})
    conn.commit()
    conn.close()
    data = bytearray(path.read_bytes())
    pages = [n for n in range(len(data) // 4096) if marker.encode() in data[n * 4096:(n + 1) * 4096]]
    assert len(pages) > 3
    data[pages[2] * 4096:pages[2] * 4096 + 4] = (999_999).to_bytes(4, "big")  # an overflow page's link to the next
    path.write_bytes(data)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn, pytest.raises(sqlite3.DatabaseError, match="malformed"):
        conn.execute("select value from cursorDiskKV where key = 'composerData:0-damaged'").fetchone()
    return base / "User"


def test_a_damaged_page_costs_its_composer_not_the_rest(tmp_path):
    user = _damaged_user(tmp_path / "src")
    runs = []
    for jobs in ("1", "2"):
        code, out = imported("cursor", user, tmp_path / f"store-{jobs}", "--jobs", jobs)
        runs.append((code, out))
    assert runs[0] == runs[1]
    code, out = runs[0]
    doc = json.loads(out)
    assert code == 4  # an error finding: the damaged row; every other composer imported
    by_id = {s["id"]: s for s in doc["sessions"]}
    assert {f"cursor-{cid}" for cid in "abc"} <= set(by_id) and all(by_id[f"cursor-{cid}"]["records"] == 2 for cid in "abc")
    said = [f for f in doc["findings"] if "composerData:0-damaged" in f["path"]]
    assert said and said[0]["code"] == "source-unreadable" and "malformed" in said[0]["message"]
    # its bubbles, in rows of their own, are still recovered: as a chat the editor could not read
    assert by_id["cursor-0-damaged"]["orphan"] == ["editor-unreadable"] and by_id["cursor-0-damaged"]["records"] == 1
    assert store_files(tmp_path / "store-1") == store_files(tmp_path / "store-2")


def test_the_editor_locking_the_database_mid_import_stops_it_with_a_typed_error(tmp_path, monkeypatch):
    # Cursor takes the database (an exclusive lock, a real one) after the import opened it: reading a
    # composer's row meets "database is locked", which is the editor's doing, not a damaged row
    from toolkit.errors import LockBusyError

    user = _damaged_user(tmp_path / "src")
    path = user / "globalStorage" / "state.vscdb"
    real = Scan._global_one
    editor = sqlite3.connect(path, timeout=0)

    def locked(self, conn, key, *args):
        if not editor.in_transaction:
            editor.execute("begin exclusive")
        return real(self, conn, key, *args)

    monkeypatch.setattr(Scan, "_global_one", locked)
    with pytest.raises(LockBusyError, match="locked by the editor; close it and retry"):
        run_import("cursor", [user], tmp_path / "store", cursor.Options(), jobs=1)
    editor.rollback()
    editor.close()
