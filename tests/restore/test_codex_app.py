"""``restore --app codex``: rollouts with no row in Codex's state DB made visible again by the one
change Codex's own migrations make (backfill_state pending, no watermark), on a real
``state_5.sqlite`` built with Codex's schema (SOURCES-MORE §2.2, §2.9) and the real fixture
rollouts; real processes holding the DB or running as ``codex``."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.restore.kit import CODEX, copy_home, restore, tree

pytestmark = pytest.mark.skipif(CODEX is None, reason="needs shared/fixtures/codex")

SCHEMA = """
CREATE TABLE threads (
    id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    source TEXT NOT NULL, model_provider TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT NOT NULL,
    sandbox_policy TEXT NOT NULL, approval_mode TEXT NOT NULL, tokens_used INTEGER NOT NULL DEFAULT 0,
    has_user_event INTEGER NOT NULL DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0, archived_at INTEGER,
    git_sha TEXT, git_branch TEXT, git_origin_url TEXT, cli_version TEXT NOT NULL DEFAULT '',
    first_user_message TEXT NOT NULL DEFAULT '', agent_nickname TEXT, agent_role TEXT,
    memory_mode TEXT NOT NULL DEFAULT 'enabled', model TEXT, reasoning_effort TEXT, agent_path TEXT,
    created_at_ms INTEGER, updated_at_ms INTEGER);
CREATE INDEX idx_threads_updated_at ON threads(updated_at DESC, id DESC);
CREATE TABLE thread_dynamic_tools (thread_id TEXT NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (thread_id, position));
CREATE TABLE backfill_state (id INTEGER PRIMARY KEY CHECK (id = 1), status TEXT NOT NULL, last_watermark TEXT,
    last_success_at INTEGER, updated_at INTEGER NOT NULL);
"""
ROW = ("INSERT INTO threads (id,rollout_path,created_at,updated_at,created_at_ms,updated_at_ms,source,model_provider,cwd,"
       "title,sandbox_policy,approval_mode,tokens_used,first_user_message,archived,archived_at,cli_version,memory_mode,model,"
       "reasoning_effort) VALUES (?,?,1787306400,1787306460,1787306400000,1787306460000,'cli','openai','/home/ana/app',?,"
       "'{\"type\":\"read-only\"}','on-request',5120,?,?,NULL,'0.120.0','enabled','gpt-5-codex','medium')")
GONE = "019c5071-ec2a-7080-b6be-7ce5ef661d79"


def _home(tmp_path: Path, *, crashed: bool = False) -> tuple[Path, Path, list[Path]]:
    """A Codex home holding the fixture rollouts and a state_5.sqlite (WAL, as Codex keeps it) in
    which only the first rollout has its row, plus a row whose rollout is gone and one with an
    empty first message; backfill complete with a watermark.  ``crashed``: Codex was killed with
    a -wal and -shm beside the DB holding rows not yet checkpointed."""
    home = copy_home(CODEX, tmp_path / ".codex")
    files = sorted(home.glob("*sessions/**/rollout-*.jsonl"))
    db = home / "state_5.sqlite"
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(SCHEMA)
    first = files[0]
    connection.execute(ROW, (first.stem[-36:], str(first), "fix the tests", "fix the tests", int(ARCHIVED in str(first))))
    connection.execute(ROW, (GONE, str(home / f"sessions/2026/08/21/rollout-2026-08-21T10-00-00-{GONE}.jsonl"),
                             "gone", "gone", 0))
    connection.execute(ROW, ("019c5071-0000-7080-b6be-7ce5ef661d79", str(first), "", "", 0))
    connection.execute("INSERT INTO thread_dynamic_tools VALUES (?, 0, 'search')", (first.stem[-36:],))
    connection.execute("INSERT INTO backfill_state VALUES (1, 'complete', 'sessions/2026/04/10/zzz', 1787306400, 1787306400)")
    connection.close()
    if crashed:
        script = ("import sqlite3, os, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
                  "c.execute('PRAGMA wal_autocheckpoint=0'); "
                  "c.execute(\"INSERT INTO thread_dynamic_tools VALUES ('x', 1, 'shell')\"); os._exit(0)")
        subprocess.run([sys.executable, "-c", script, str(db)], check=True)
        assert (home / "state_5.sqlite-wal").stat().st_size > 0 and (home / "state_5.sqlite-shm").exists()
    return home, db, files


ARCHIVED = "archived_sessions"


def _digests(db: Path) -> dict[str, str | None]:
    out = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = db.with_name(db.name + suffix)
        out[suffix] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return out


def _read(db: Path, tmp_path: Path) -> dict:
    """An independent reader: every table's rows, the journal mode and integrity, from a copy of
    the DB group (so reading never changes the tree under test)."""
    copy = tmp_path / f"read-{len(list(tmp_path.glob('read-*')))}"
    copy.mkdir()
    for path in db.parent.glob(db.name + "*"):
        (copy / path.name).write_bytes(path.read_bytes())
    connection = sqlite3.connect(copy / db.name)
    try:
        tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {"rows": {t: sorted(map(repr, connection.execute(f"SELECT * FROM {t}"))) for t in tables},
                "schema": connection.execute("SELECT * FROM sqlite_master ORDER BY name").fetchall(),
                "mode": connection.execute("PRAGMA journal_mode").fetchone()[0],
                "integrity": connection.execute("PRAGMA integrity_check").fetchall()}
    finally:
        connection.close()


def test_the_plan_lists_the_rollouts_without_a_row_and_the_one_row_change_and_writes_nothing(tmp_path):
    home, db, files = _home(tmp_path)
    before = tree(home)
    result = restore("--app", "codex", "--source", home)
    assert result.exit_code == 4 and result.json["applied"] is False
    parity = result.json["parity"]
    assert parity["rollouts"] == 3
    assert parity["missing"] == sorted(os.path.realpath(f) for f in files[1:])
    assert parity["stale"] == [str(home / f"sessions/2026/08/21/rollout-2026-08-21T10-00-00-{GONE}.jsonl")]
    assert parity["empty_first_message"] == ["019c5071-0000-7080-b6be-7ce5ef661d79"]
    assert result.json["db"] == str(db)
    assert result.json["change"] == {"table": "backfill_state", "row": {"id": 1},
                                     "before": {"status": "complete", "last_watermark": "sessions/2026/04/10/zzz"},
                                     "after": {"status": "pending", "last_watermark": None}}
    assert tree(home) == before, "a plan reads a copy: not even a -wal or -shm appears"
    human = restore("--app", "codex", "--source", home, "--dry-run")
    assert human.exit_code == 4


def test_yes_makes_codex_rescan_and_changes_nothing_else_and_undo_puts_every_byte_back(tmp_path):
    home, db, files = _home(tmp_path, crashed=True)
    rollouts = {f: f.read_bytes() for f in files}
    digests, seen = _digests(db), _read(db, tmp_path)
    result = restore("--app", "codex", "--source", home, "--yes")
    assert result.exit_code == 0, result.stdout
    assert result.json["written"] == [str(db)] and result.json["stamp"]
    after = _read(db, tmp_path)
    assert after["integrity"] == [("ok",)] and after["mode"] == seen["mode"] == "wal"
    (status,) = after["rows"]["backfill_state"]
    assert status.startswith("(1, 'pending', None, 1787306400, 1787306400)")
    assert after["schema"] == seen["schema"]
    assert {t: r for t, r in after["rows"].items() if t != "backfill_state"} == \
        {t: r for t, r in seen["rows"].items() if t != "backfill_state"}, "every other row as it was (the -wal's too)"
    assert {f: f.read_bytes() for f in files} == rollouts
    stamp = result.json["stamp"]
    assert restore("--undo", stamp).exit_code == 0
    assert _digests(db) == digests, "the DB, its -wal and -shm hold their bytes from before"
    assert restore("--undo", stamp).exit_code == 0 and _digests(db) == digests, "undo is idempotent"


def test_undo_puts_the_databases_permission_bits_back_with_its_bytes(tmp_path):
    home, db, _files = _home(tmp_path, crashed=True)
    group = [p for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")) if p.exists()]
    for path in group:
        path.chmod(0o600)  # a private database: undo must not leave it readable by others
    digests = _digests(db)
    done = restore("--app", "codex", "--source", home, "--yes")
    assert done.exit_code == 0, done.stdout
    [run] = [r for r in restore("--list").json["restores"] if r["stamp"] == done.json["stamp"]]
    assert run["changed"] == len(group), "restore --list counts the database (and its -wal, -shm) it changed"
    assert restore("--undo", done.json["stamp"]).exit_code == 0
    assert _digests(db) == digests
    assert {p.name: p.stat().st_mode & 0o7777 for p in group if p.exists()} == {p.name: 0o600 for p in group}


def test_undo_removes_a_wal_and_shm_the_restore_made_and_a_second_run_changes_nothing(tmp_path):
    home, db, _files = _home(tmp_path)
    digests = _digests(db)
    assert digests["-wal"] is None and digests["-shm"] is None
    first = restore("--app", "codex", "--source", home, "--yes")
    assert first.exit_code == 0
    done = tree(home)
    again = restore("--app", "codex", "--source", home, "--yes")
    assert again.exit_code == 0 and again.json["change"] is None and again.json["stamp"] is None
    assert tree(home) == done, "a second run plans nothing and changes no byte"
    for suffix in ("-wal", "-shm"):  # as if a reader had left them: undo takes the group back to before
        db.with_name(db.name + suffix).write_bytes(b"")
    assert restore("--undo", first.json["stamp"]).exit_code == 4, "files the restore did not leave: refused"
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink()
    assert restore("--undo", first.json["stamp"]).exit_code == 0
    assert _digests(db) == digests


def test_undo_refuses_a_db_codex_wrote_to_since(tmp_path):
    home, db, _files = _home(tmp_path)
    stamp = restore("--app", "codex", "--source", home, "--yes").json["stamp"]
    connection = sqlite3.connect(db, isolation_level=None)
    connection.execute("UPDATE backfill_state SET status = 'complete'")  # Codex's backfill ran
    connection.close()
    changed = _digests(db)
    undone = restore("--undo", stamp)
    assert undone.exit_code == 4 and undone.json["findings"][0]["code"] == "undo-refused"
    assert _digests(db) == changed


@pytest.mark.parametrize("how", ["transaction", "append"])
def test_a_process_holding_the_db_open_for_writing_is_refused(tmp_path, how):
    from toolkit.restore.backups import restore_root

    home, db, _files = _home(tmp_path)
    script = ("import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
              "c.execute('BEGIN IMMEDIATE'); c.execute(\"INSERT INTO thread_dynamic_tools VALUES ('y', 2, 'x')\"); "
              "print('ok', flush=True); time.sleep(60)") if how == "transaction" else \
        "import sys, time; f = open(sys.argv[1], 'ab'); print('ok', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ok"
        before = _digests(db)
        result = restore("--app", "codex", "--source", home, "--yes")
        assert result.exit_code == 4 and result.json["written"] == [] and result.json["stamp"] is None
        (finding,) = result.json["findings"]
        assert finding["code"] == "in-use" and f"pid {proc.pid}" in finding["message"]
        assert _digests(db) == before, "nothing written"
        assert not restore_root().exists() or not list(restore_root().iterdir()), "no backup folder either"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names a process the Linux way")
def test_a_running_codex_on_this_home_is_refused_and_one_on_another_home_is_not(tmp_path):
    home, db, _files = _home(tmp_path)
    exe = tmp_path / "bin" / "codex"
    exe.parent.mkdir()
    exe.symlink_to(os.path.realpath(sys.executable))
    before = _digests(db)

    def running(codex_home: Path):
        env = {**os.environ, "CODEX_HOME": str(codex_home)}
        return subprocess.Popen([str(exe), "-c", "import time; print('ok', flush=True); time.sleep(60)"],
                                cwd=tmp_path, stdout=subprocess.PIPE, env=env)

    proc = running(home)
    try:
        assert proc.stdout.readline().strip() == b"ok"
        result = restore("--app", "codex", "--source", home, "--yes")
        assert result.exit_code == 4 and result.json["findings"][0]["code"] == "in-use"
        assert f"pid {proc.pid}" in result.json["findings"][0]["message"] and _digests(db) == before
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    other = running(tmp_path / "elsewhere")
    try:
        assert other.stdout.readline().strip() == b"ok"
        assert restore("--app", "codex", "--source", home, "--yes").exit_code == 0, "another home's Codex: not this DB"
    finally:
        other.kill()
        other.wait()
        other.stdout.close()


def test_a_failed_verify_puts_every_byte_back_and_exits_8(tmp_path, monkeypatch):
    from toolkit.restore import codex_state

    home, db, _files = _home(tmp_path, crashed=True)
    digests = _digests(db)
    real, calls = codex_state.fingerprint, []

    def drifting(connection):  # the read-back sees other rows changed
        calls.append(1)
        return real(connection) + ("x" if len(calls) > 1 else "")

    monkeypatch.setattr(codex_state, "fingerprint", drifting)
    result = restore("--app", "codex", "--source", home, "--yes")
    assert result.exit_code == 8 and result.json["undone"] is True
    assert result.json["findings"][0]["code"] == "restore-verify-failed"
    assert _digests(db) == digests, "the DB, -wal and -shm are back byte for byte"


def test_nothing_to_do_when_every_rollout_has_its_row_or_there_is_no_db(tmp_path):
    home, db, files = _home(tmp_path)
    connection = sqlite3.connect(db, isolation_level=None)
    for f in files[1:]:
        connection.execute(ROW, (f.stem[-36:], str(f), "t", "t", int(ARCHIVED in str(f))))
    connection.close()
    before = tree(home)
    result = restore("--app", "codex", "--source", home, "--yes")
    assert result.exit_code == 0 and result.json["change"] is None and tree(home) == before
    for path in home.glob("state_5.sqlite*"):
        path.unlink()
    result = restore("--app", "codex", "--source", home)
    assert result.exit_code == 0 and result.json["db"] is None and "builds it" in result.json["note"]


def test_bad_usage_is_a_usage_error(tmp_path):
    assert restore("--app", "cursor").exit_code == 16
    assert restore("--app", "codex", "--map", "a=b").exit_code == 16
    assert restore("--app", "codex", "--source", tmp_path / "nope").exit_code != 0
    assert restore("--app", "codex", "some-id").exit_code == 16


def test_doctor_reports_the_parity_with_the_restore_command_and_writes_nothing(tmp_path, monkeypatch):
    from tests.helpers import run_cli

    home, db, _files = _home(tmp_path)
    monkeypatch.setenv("CODEX_HOME", str(home))
    before = tree(home)
    result = run_cli("doctor", "--json")
    assert result.exit_code == 0, result.stdout
    (install,) = [i for i in result.json["installs"] if i["app"] == "codex"]
    command = f"levelsess restore --app codex --source {home}"
    assert install["state_db"] == {"db": str(db), "without_row": 2, "row_gone": 1, "empty_first_message": 1,
                                   "rescan_at_next_start": False, "restore": command}
    assert any(step.startswith(command) for step in result.json["next"])
    assert tree(home) == before, "doctor reads a copy of the DB"
    assert command in run_cli("doctor").stdout
    assert restore("--app", "codex", "--source", home, "--yes").exit_code == 0
    (install,) = [i for i in run_cli("doctor", "--json").json["installs"] if i["app"] == "codex"]
    assert install["state_db"]["without_row"] == 2, "the rows come at Codex's next start"
    assert install["state_db"]["rescan_at_next_start"] is True and install["state_db"]["restore"] is None, "nothing more to run"
