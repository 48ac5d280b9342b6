"""Logician sessions: meta.json heals, meta-ahead is caught, entries are never rewritten."""

from __future__ import annotations

import orjson

from tests.helpers import logician_session, run_cli, snapshot, write_journal


def _codes(result):
    return {(f["code"], f["repaired"]) for f in result.json["findings"]}


def test_missing_meta_is_a_warning_then_rebuilt(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    entries = (session / "messages.jsonl").read_bytes()
    check = run_cli("fsck", "--json", ws)
    assert check.exit_code == 0 and ("missing-meta-json", False) in _codes(check)
    repair = run_cli("fsck", "--repair", "--json", ws)
    assert repair.exit_code == 1 and ("missing-meta-json", True) in _codes(repair)
    assert (session / "messages.jsonl").read_bytes() == entries
    assert run_cli("fsck", ws).exit_code == 0


def test_corrupt_meta_is_rebuilt(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    (session / "meta.json").write_bytes(b'{"formatVersion":1,"entryCo')
    assert ("corrupt-meta", False) in _codes(run_cli("fsck", "--json", ws))
    assert run_cli("fsck", "--repair", ws).exit_code == 1
    assert orjson.loads((session / "meta.json").read_bytes())["entryCount"] == 2


def test_meta_ahead_is_an_error_and_is_reconciled(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    run_cli("reindex", ws)
    meta = orjson.loads((session / "meta.json").read_bytes())
    (session / "meta.json").write_bytes(orjson.dumps({**meta, "entryCount": 5, "activeLeaf": "e5"}))
    check = run_cli("fsck", "--json", ws)
    assert check.exit_code == 4 and ("meta-ahead", False) in _codes(check)
    repair = run_cli("fsck", "--repair", "--json", ws)
    assert repair.exit_code == 1
    fixed = orjson.loads((session / "meta.json").read_bytes())
    assert fixed["entryCount"] == 2 and fixed["activeLeaf"] == "e2"
    assert run_cli("fsck", ws).exit_code == 0


def test_dangling_parent_is_raised_and_nothing_rewritten(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws, entries=[{"id": "a", "timestamp": "t1"}, {"id": "b", "parentId": "zz"}])
    run_cli("reindex", ws)
    with open(session / "messages.jsonl", "ab") as handle:
        handle.write(b'{"id":"c","par')
    before = snapshot(ws)
    check = run_cli("fsck", "--json", ws)
    dangling = [f for f in check.json["findings"] if f["code"] == "dangling-parent"]
    assert dangling and dangling[0]["line"] == 2 and check.exit_code == 4
    repair = run_cli("fsck", "--repair", "--json", ws)
    assert repair.exit_code == 4
    assert snapshot(ws) == before, "an uncorrectable journal keeps even its torn tail"


def test_torn_entry_is_trimmed_and_meta_follows(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    run_cli("reindex", ws)
    good = (session / "messages.jsonl").read_bytes()
    with open(session / "messages.jsonl", "ab") as handle:
        handle.write(b'{"id":"e3","parentId":"e2","text":"cut of')
    repair = run_cli("fsck", "--repair", "--json", ws)
    assert repair.exit_code == 1
    assert (session / "messages.jsonl").read_bytes() == good
    recovered = list((ws / ".logician" / "sessions" / ".levelsess" / "recovered").rglob("*.tail"))
    assert [p.read_bytes() for p in recovered] == [b'{"id":"e3","parentId":"e2","text":"cut of']
    assert run_cli("fsck", ws).exit_code == 0


def test_session_folder_and_sessions_folder_are_targets(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    write_journal(session.parent / "s2" / "messages.jsonl", [{"id": "x"}])
    for target in (ws, ws / ".logician", ws / ".logician" / "sessions" / "sessions", session, session / "messages.jsonl"):
        result = run_cli("fsck", "--json", target)
        assert result.exit_code == 0, (target, result.stdout)
    assert run_cli("fsck", "--json", ws).json["files"] == 2
