"""Everyday commands on a store with clean, torn, corrupt, locked and Logician sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.audit import no_writes
from tests.helpers import PROJECT_SLUG, logician_session, make_store, run_cli, snapshot
from toolkit.locks import lock_content, lock_path

MESSAGES = ("question 0 about   refunds", "answer 0 answer 0", "what the Logician was asked", "what the Logician answered")


@pytest.fixture
def mixed(tmp_path):
    store = make_store(tmp_path / "store", sessions=4)
    project = store / PROJECT_SLUG
    clean, torn, corrupt, locked = sorted(project.glob("*.jsonl"))
    with open(torn, "ab") as handle:
        handle.write(b'{"kind":"user","t":"x","content":"in fli')
    data = corrupt.read_bytes().split(b"\n")
    data[2] = b'{"kind":"assistant","t":' + b"\x00garbage"
    corrupt.write_bytes(b"\n".join(data))
    lock_path(locked).write_bytes(lock_content(os.getpid()))  # a live owner: this test
    workspace = tmp_path / "ws"
    logician_session(workspace, entries=[
        {"id": "e1", "parentId": None, "timestamp": "2026-11-30T12:00:00Z", "text": "what the Logician was asked"},
        {"id": "e2", "parentId": "e1", "timestamp": "2026-11-30T12:00:05Z", "text": "what the Logician answered"}])
    return {"store": store, "clean": clean, "torn": torn, "corrupt": corrupt, "locked": locked, "workspace": workspace}


@pytest.mark.parametrize("fresh_index", [False, True])
def test_ls_shows_each_state_from_journals_or_a_fresh_index(mixed, fresh_index):
    if fresh_index:
        assert run_cli("reindex", "--store", mixed["store"]).exit_code == 0
    result = run_cli("ls", "--json", "--store", mixed["store"], "--limit", "0")
    states = {Path(s["path"]).name: s["state"] for s in result.json["sessions"]}
    assert states == {mixed["clean"].name: "clean", mixed["torn"].name: "torn", mixed["corrupt"].name: "corrupt",
                      mixed["locked"].name: "locked"}
    human = run_cli("ls", "--store", mixed["store"])
    for state in ("clean", "torn", "corrupt", "locked"):
        assert state in human.stdout
    logician = run_cli("ls", "--json", mixed["workspace"])
    (entry,) = logician.json["sessions"]
    assert entry["layout"] == "logician" and entry["state"] == "clean" and entry["turns"] == 2


def test_ls_filters_and_grep(mixed):
    store = mixed["store"]
    found = run_cli("ls", "--json", "--store", store, "--grep", "ANSWER 1")
    assert {Path(s["path"]).name for s in found.json["sessions"]} >= {mixed["clean"].name}
    assert all("answer 1" in s["match"] for s in found.json["sessions"])
    assert run_cli("ls", "--json", "--store", store, "--grep", "no such words").json["sessions"] == []
    assert run_cli("ls", "--json", "--store", store, "--since", "2999-01-01").json["sessions"] == []
    assert len(run_cli("ls", "--json", "--store", store, "--since", "2026-01-01").json["sessions"]) == 4
    assert run_cli("ls", "--json", "--store", store, "--project", "nope").json["sessions"] == []
    assert run_cli("ls", "--store", store, "--since", "yesterdayish").exit_code == 16


def test_show_and_export(mixed, tmp_path):
    store = mixed["store"]
    sid = mixed["clean"].stem
    shown = run_cli("show", sid, "--store", store)
    assert shown.exit_code == 0 and "## Turn 1" in shown.stdout and "question 0 about   refunds" in shown.stdout
    assert "# Refunds" in shown.stdout, "the latest title heads the transcript"
    md = run_cli("export", sid[:22], "--store", store)
    assert md.stdout == shown.stdout
    exact = run_cli("export", sid, "--format", "jsonl", "--store", store)
    assert exact.stdout.encode() == mixed["clean"].read_bytes()
    document = run_cli("export", sid, "--format", "json", "--store", store)
    parsed = json.loads(document.stdout)
    assert parsed["meta"]["id"] == sid and len(parsed["records"]) == len(mixed["clean"].read_bytes().splitlines()) - 1
    out = tmp_path / "out.md"
    assert run_cli("export", sid, "-o", out, "--store", store).exit_code == 0 and out.read_text() == md.stdout
    torn = run_cli("show", mixed["torn"].stem, "--store", store)
    assert torn.exit_code == 0 and "torn" in torn.stderr
    corrupt = run_cli("show", mixed["corrupt"].stem, "--store", store)
    assert corrupt.exit_code == 4 and "Traceback" not in corrupt.stderr and ".jsonl:3: byte" in corrupt.stderr
    assert run_cli("show", "no-such-session", "--store", store).exit_code == 16
    assert run_cli("export", sid, "--format", "pdf", "--store", store).exit_code == 16


def test_export_markdown_summarises_tools_and_marks_briefings(tmp_path):
    from tests.helpers import meta, write_journal

    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T09-00-00-tool.jsonl", [
        meta("2026-11-30T09-00-00-tool"),
        {"kind": "user", "t": "2026-11-30T09:01:00Z", "content": "fix it", "seq": 1},
        {"kind": "assistant", "t": "2026-11-30T09:01:05Z", "seq": 2, "model": "m", "content": [
            {"type": "thinking", "thinking": "look at the file"},
            {"type": "text", "text": "Here:\n```python\nprint('hi')\n```"},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
            {"type": "tool_result", "tool_use_id": "t1", "content": "line1\nline2\nline3", "is_error": False}]},
        {"kind": "compact", "t": "2026-11-30T09:05:00Z", "briefing": "we fixed a.py", "coversThrough": 1, "seq": 3},
    ])
    md = run_cli("export", journal.stem, "--store", tmp_path / "store").stdout
    assert "```python\nprint('hi')\n```" in md
    assert "🔧 **read_file**" in md and "(3 lines)" in md
    assert "<details><summary>Thinking</summary>" in md
    assert "**Compacted" in md and "> we fixed a.py" in md


def test_locks_lists_owner_liveness_and_breaks_stale(mixed):
    store = mixed["store"]
    stale = lock_path(mixed["clean"])
    stale.write_bytes(json.dumps({"pid": 2**22 - 3, "host": os.uname().nodename, "startedAt": 1.0, "acquiredAt": 1.0}).encode())
    with no_writes():
        listed = run_cli("locks", "--json", "--store", store)
    by_session = {row["session"]: row for row in listed.json["locks"]}
    assert by_session[mixed["locked"].name]["state"] == "live" and by_session[mixed["locked"].name]["pid"] == os.getpid()
    assert by_session[mixed["clean"].name]["state"] == "stale" and "not running" in by_session[mixed["clean"].name]["why"]
    human = run_cli("locks", "--store", store)
    assert "live" in human.stdout and "stale" in human.stdout
    broken = run_cli("locks", "--break-stale", "--json", "--store", store)
    assert broken.exit_code == 1 and not stale.exists() and lock_path(mixed["locked"]).exists()


def _levelsess(*args, env: dict) -> subprocess.CompletedProcess:
    """A real process: send2trash reads the trash location from the environment at import."""
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True, env=env, check=False)


def test_trash_moves_to_the_os_trash_and_reindexes(mixed, tmp_path):
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "home" / ".local" / "share")}
    store = mixed["store"]
    run_cli("reindex", "--store", store)
    sid = mixed["clean"].stem
    data = mixed["clean"].read_bytes()
    dry = run_cli("trash", sid, "--dry-run", "--json", "--store", store)
    assert dry.json["sessions"][0]["status"] == "would-trash" and mixed["clean"].exists()
    proc = _levelsess("trash", sid, "--json", "--store", store, env=env)
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["sessions"][0]["status"] == "trashed", proc.stderr
    assert not mixed["clean"].exists()
    trashed = list((tmp_path / "home" / ".local" / "share" / "Trash" / "files").iterdir())
    assert [p.read_bytes() for p in trashed] == [data], "it is in the trash, byte for byte, not unlinked"
    index = json.loads((store / PROJECT_SLUG / "index.json").read_text())
    assert sid not in {e["id"] for e in index["sessions"]}
    refused = _levelsess("trash", mixed["locked"].stem, "--json", "--store", store, env=env)
    assert refused.returncode == 4 and json.loads(refused.stdout)["sessions"][0]["status"] == "refused" and mixed["locked"].exists()


def test_bundle_holds_findings_and_hashes_but_no_message_text(mixed, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.chdir(tmp_path)
    bundle = tmp_path / "support.zip"
    result = run_cli("doctor", "--bundle", bundle, "--store", mixed["store"], "--json", mixed["workspace"])
    assert result.exit_code == 0 and bundle.exists()
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        blob = b"".join(archive.read(name) for name in names)
    assert {"about.json", "doctor.json", "findings.json", "files.json"} <= names
    findings = json.loads(zipfile.ZipFile(bundle).read("findings.json"))
    assert {"torn-tail", "invalid-json"} <= {f["code"] for f in findings}
    region = next(f["region"] for f in findings if f["code"] == "invalid-json")
    assert region["masked"] and "\\x00" in region["first"] + region["last"]
    files = json.loads(zipfile.ZipFile(bundle).read("files.json"))
    assert {Path(f["path"]).name for f in files} >= {mixed["clean"].name} and all(len(f.get("sha256", "")) == 64 for f in files)
    for text in MESSAGES + ("in fli", "garbage", "Refunds"):
        assert text.encode() not in blob, f"{text!r} leaked into the bundle"
    with_content = tmp_path / "full.zip"
    run_cli("doctor", "--bundle", with_content, "--include-content", "--store", mixed["store"], mixed["workspace"])
    with zipfile.ZipFile(with_content) as archive:
        assert b"garbage" in archive.read("findings.json")


def test_everyday_commands_are_read_only(mixed):
    before = snapshot(mixed["store"])
    with no_writes():
        run_cli("ls", "--store", mixed["store"])
        run_cli("show", mixed["clean"].stem, "--store", mixed["store"])
        run_cli("export", mixed["clean"].stem, "--store", mixed["store"])
        run_cli("locks", "--store", mixed["store"])
    assert snapshot(mixed["store"]) == before


def test_ls_without_a_store_yet(tmp_path):
    result = run_cli("ls", "--json", "--store", tmp_path / "nothing-here")
    assert result.exit_code == 0 and result.json["sessions"] == []
    assert run_cli("ls", tmp_path / "nothing-here").exit_code == 8, "a PATH that does not exist is still an error"


def test_a_cut_emoji_in_a_title_or_message_never_breaks_the_output(tmp_path):
    from tests.helpers import meta, write_journal

    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T09-00-00-emoj.jsonl",
                            b'{"kind":"meta","v":2,"id":"2026-11-30T09-00-00-emoj","project":"/p","createdAt":"2026-11-30T09:00:00Z","title":"cut \\ud83d"}\n'
                            b'{"kind":"user","t":"2026-11-30T09:01:00Z","content":"half an emoji \\ud83d here","seq":1}\n'
                            b'{"kind":"assistant","t":"2026-11-30T09:02:00Z","content":[{"type":"tool_use","id":"t","name":"x","input":{"q":"\\ud83d"}}],"seq":2}\n')
    store = tmp_path / "store"
    for args in (("ls",), ("ls", "--json"), ("ls", "--grep", "half"), ("show", journal.stem), ("export", journal.stem),
                 ("export", journal.stem, "--format", "json"), ("show", journal.stem, "--json")):
        result = run_cli(*args, "--store", store)
        assert result.exit_code == 0, (args, result.stderr[-500:])
    assert "\\ud83d" in run_cli("export", journal.stem, "--store", store).stdout


def test_trash_of_a_loose_messages_file_never_takes_its_folder(tmp_path):
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "home" / ".local" / "share")}
    project = tmp_path / "myproject"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('keep me')\n")
    (project / "messages.jsonl").write_bytes(b'{"id":"e1","parentId":null,"text":"x"}\n')
    proc = _levelsess("trash", project / "messages.jsonl", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert (project / "src" / "main.py").exists() and not (project / "messages.jsonl").exists()


def test_trash_of_the_last_unindexed_session_in_a_folder(tmp_path):
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "home" / ".local" / "share")}
    store = make_store(tmp_path / "store", sessions=1)  # no index.json
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    proc = _levelsess("trash", journal.stem, "--store", store, env=env)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("since", ["99999999999d", "100000000h", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00"])
def test_ls_since_out_of_range_is_a_usage_error(tmp_path, since):
    store = make_store(tmp_path / "store")
    result = run_cli("ls", "--store", store, "--since", since)  # run_cli fails on any traceback
    assert result.exit_code == 16 and "out of range" in result.stderr
    assert "ISO date" in result.stderr and "7d" in result.stderr, "the message says which forms --since takes"


def _timed_session(project: Path, sid: str, t: str) -> Path:
    from tests.helpers import meta, write_journal

    return write_journal(project / f"{sid}.jsonl", [meta(sid, createdAt=t), {"kind": "user", "t": t, "content": "hi", "seq": 1}])


@pytest.mark.parametrize("fresh_index", [False, True])
def test_ls_since_and_order_compare_instants_not_strings(tmp_path, fresh_index):
    store = tmp_path / "store"
    project = store / PROJECT_SLUG
    tokyo = _timed_session(project, "2026-11-30T09-00-00-tokyo", "2026-11-30T10:00:00+09:00")  # 01:00Z
    utc = _timed_session(project, "2026-11-30T09-00-00-utc0", "2026-11-30T01:30:00Z")
    la = _timed_session(project, "2026-11-30T09-00-00-la00", "2026-11-29T20:00:00-08:00")  # 04:00Z on the 30th
    if fresh_index:
        assert run_cli("reindex", "--store", store).exit_code == 0

    def listed(*args):
        result = run_cli("ls", "--json", "--limit", "0", "--store", store, *args)
        assert result.exit_code == 0, result.stderr
        return [Path(s["path"]).name for s in result.json["sessions"]]

    assert listed() == [la.name, utc.name, tokyo.name], "newest first, by instant"
    assert listed("--since", "2026-11-30T02:00:00Z") == [la.name]
    assert listed("--since", "2026-11-30T03:00:00+01:00") == [la.name], "the bound's offset counts too"
    assert listed("--since", "2026-11-30T01:15:00Z") == [la.name, utc.name]
    assert listed("--since", "2026-11-30T01:00:00Z") == [la.name, utc.name, tokyo.name], "an equal instant is kept"
    assert listed("--since", "2026-11-30T01:00:00.001Z") == [la.name, utc.name]
    assert listed("--since", "2026-11-30T04:00:00.500Z") == []


def test_ls_since_falls_back_to_text_for_an_unparsable_time(tmp_path):
    store = tmp_path / "store"
    odd = _timed_session(store / PROJECT_SLUG, "2026-11-30T09-00-00-odd0", "2026-11-30 late")
    dated = _timed_session(store / PROJECT_SLUG, "2026-11-30T09-00-00-date", "2026-11-30T08:00:00Z")

    def listed(*args):
        return [Path(s["path"]).name for s in run_cli("ls", "--json", "--limit", "0", "--store", store, *args).json["sessions"]]

    assert listed() == [dated.name, odd.name], "an unparsable time sorts after every dated session"
    assert listed("--since", "2026-11-29") == [dated.name, odd.name], "compared as text, its date still orders"
    assert listed("--since", "2026-12-01") == []


def test_trash_of_the_same_session_named_twice_trashes_once_and_reindexes(tmp_path):
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    store = make_store(tmp_path / "store", sessions=2)  # no index.json yet
    first, second = sorted((store / PROJECT_SLUG).glob("*.jsonl"))
    data = first.read_bytes()
    sid = first.stem
    proc = _levelsess("trash", sid, sid, sid[:22], first, "--json", "--store", store, env=env)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    (entry,) = json.loads(proc.stdout)["sessions"]
    assert entry["id"] == sid and entry["status"] == "trashed"
    assert not first.exists() and second.exists()
    assert [p.read_bytes() for p in (tmp_path / "xdg" / "Trash" / "files").iterdir()] == [data]
    index = json.loads((store / PROJECT_SLUG / "index.json").read_text())
    assert [e["id"] for e in index["sessions"]] == [second.stem], "the reindex ran after the trash"
    human = _levelsess("trash", second.stem, second.stem, "--store", store, env=env)
    assert human.returncode == 0 and human.stdout.decode().count("moved to the trash") == 1, human.stderr


_TRASH_AFTER_A_VANISH = """
import json, sys
from pathlib import Path
from toolkit.sessions import find_session
from toolkit.trash import trash_sessions
rows = [find_session([Path(sys.argv[1])], key) for key in sys.argv[2:]]
rows[0].path.unlink()  # gone between resolving and trashing
print(json.dumps([r.to_json() for r in trash_sessions(rows)]))
"""


def test_trash_reports_a_session_that_vanished_as_gone_and_still_reindexes(tmp_path):
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    store = make_store(tmp_path / "store", sessions=3)
    assert run_cli("reindex", "--store", store).exit_code == 0
    vanished, trashed, kept = sorted((store / PROJECT_SLUG).glob("*.jsonl"))
    proc = subprocess.run([sys.executable, "-c", _TRASH_AFTER_A_VANISH, str(store), vanished.stem, trashed.stem],
                          capture_output=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    gone, moved = json.loads(proc.stdout)
    assert gone["id"] == vanished.stem and gone["status"] == "gone" and "already gone" in gone["reason"]
    assert moved["id"] == trashed.stem and moved["status"] == "trashed" and not trashed.exists()
    index = json.loads((store / PROJECT_SLUG / "index.json").read_text())
    assert [e["id"] for e in index["sessions"]] == [kept.stem], "neither the gone nor the trashed session is still indexed"


def test_trash_failing_for_another_missing_file_is_not_reported_as_gone(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path / "no-such-home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    proc = _levelsess("trash", journal.stem, "--store", store, env=env)
    assert proc.returncode == 8 and journal.exists()
    assert b"already gone" not in proc.stderr and b"no-such-home" in proc.stderr and b"Traceback" not in proc.stderr
