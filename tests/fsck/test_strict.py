"""--strict: records are validated against schemas/ and warnings count as errors."""

from __future__ import annotations

from tests.helpers import PROJECT_SLUG, encode, logician_session, make_store, run_cli, session_records, write_journal


def test_valid_store_is_clean_under_strict(tmp_path):
    store = make_store(tmp_path, sessions=2)
    run_cli("reindex", store)
    result = run_cli("fsck", "--strict", "--json", store)
    assert result.exit_code == 0, result.stdout


def test_schema_violation_is_reported_with_its_line(tmp_path):
    records = session_records()
    records[1] = {"kind": "user", "content": "no timestamp", "seq": 1}
    journal = write_journal(tmp_path / PROJECT_SLUG / "a.jsonl", records)
    assert run_cli("fsck", "--json", journal).exit_code == 0
    result = run_cli("fsck", "--strict", "--json", journal)
    violations = [f for f in result.json["findings"] if f["code"] == "schema-violation"]
    assert result.exit_code == 4 and violations[0]["line"] == 2
    assert "'t' is a required property" in violations[0]["message"]


def test_strict_turns_warnings_into_errors(tmp_path):
    data = encode(session_records())
    journal = write_journal(tmp_path / PROJECT_SLUG / "a.jsonl", data.replace(b"\n", b"\n\n", 1))
    assert run_cli("fsck", journal).exit_code == 0
    result = run_cli("fsck", "--strict", "--json", journal)
    assert result.exit_code == 4
    assert [f["severity"] for f in result.json["findings"] if f["code"] == "blank-line"] == ["error"]


def test_strict_checks_logician_entries(tmp_path):
    ws = tmp_path / "ws"
    logician_session(ws, entries=[{"id": "a", "timestamp": 5}])
    run_cli("reindex", ws)
    result = run_cli("fsck", "--strict", "--json", ws)
    assert "schema-violation" in {f["code"] for f in result.json["findings"]}


def test_schema_violation_does_not_block_a_tail_repair(tmp_path):
    records = session_records()
    records[1] = {"kind": "user", "content": "no timestamp", "seq": 1}
    journal = write_journal(tmp_path / PROJECT_SLUG / "a.jsonl", encode(records) + b'{"kind":"us')
    result = run_cli("fsck", "--strict", "--repair", "--json", journal)
    assert ("torn-tail", True) in {(f["code"], f["repaired"]) for f in result.json["findings"]}
    assert result.exit_code == 1 | 4
