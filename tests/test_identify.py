"""Identify before you touch: a journal of another shape is named, counted and never written.

Run on the anonymised real Claude Code trees and Codex rollouts in shared/fixtures (copied into
tmp_path), and on foreign files dropped into a LevelCode store or a Logician workspace.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT_SLUG, encode, logician_session, make_store, run_cli, session_records, snapshot, write_journal
from toolkit.identify import sniff, sniff_partial

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"  # shared/ lies beside the checkout

FIRST_RECORDS = {
    "levelcode": {"kind": "meta", "v": 2, "id": "x", "project": "/p", "createdAt": "2026-01-01T00:00:00Z"},
    "logician": {"id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:00Z", "text": "hi"},
    "claude-code": {"parentUuid": None, "isSidechain": False, "type": "user", "message": {}, "uuid": "u", "sessionId": "s",
                    "timestamp": "2026-01-01T00:00:00.000Z"},
    "codex": {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": {"id": "i", "cwd": "/"}},
    "copilot": {"type": "session.start", "data": {"sessionId": "s"}, "id": "i", "timestamp": "t", "parentId": None},
    "cursor-agent": {"role": "user", "message": {"content": [{"type": "text", "text": "hi"}]}},
    "vscode-log": {"kind": 0, "v": {"version": 3, "requests": []}},
}


@pytest.mark.parametrize("expected", sorted(FIRST_RECORDS))
def test_every_format_of_the_recognition_table_is_told_apart(expected):
    assert sniff(FIRST_RECORDS[expected]) == expected


@pytest.mark.parametrize("record", [{"type": "summary", "summary": "s", "leafUuid": "l"}, {"type": "permission-mode", "permissionMode": "x"},
                                    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}])
def test_claude_code_metadata_first_lines_are_claude_code(record):
    assert sniff(record) == "claude-code"


@pytest.mark.parametrize("record", [[1, 2], "text", 3, {"kind": "note"}, {"role": "system", "message": {}}, {}])
def test_a_first_record_matching_no_row_is_unknown(record):
    assert sniff(record) is None


@pytest.mark.parametrize("data, levelcode, logician", [
    (b"\0" * 64, True, True), (b"", True, True), (b'{"ki', True, False), (b'{"kind":"meta","v":2,"id":"x', True, False),
    (b'{"id":"e1","te', False, True), (b'{"parentUuid":null,"isSide', False, False), (b"hello world", False, False),
    (b'{"timestamp":"2026","type":"session_meta","payload":{"id', False, False),
])
def test_a_file_without_a_whole_record_is_judged_by_its_bytes(data, levelcode, logician):
    assert sniff_partial(data, b"kind") is levelcode
    assert sniff_partial(data, b"id") is logician


def _copy(name: str, tmp_path: Path) -> Path:
    source = FIXTURES / name
    if not source.is_dir():
        pytest.skip(f"{source} is not here")
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


COMMANDS = [["fsck"], ["fsck", "--repair"], ["fsck", "--salvage", "--yes"], ["fsck", "--strict"], ["reindex"],
            ["migrate"], ["ls", "--verify"]]


def _cursor_transcripts(tmp_path: Path) -> Path:
    """A folder of Cursor agent transcripts: a format levelsess reads no layout of (Claude Code and
    Codex CLI are layouts now)."""
    folder = tmp_path / "agent-transcripts"
    for n in range(2):
        write_journal(folder / f"t{n}.jsonl", encode([FIRST_RECORDS["cursor-agent"]] * 3))
    return folder


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_foreign_store_is_one_clear_error_and_nothing_is_written(tmp_path, command):
    folder = _cursor_transcripts(tmp_path)
    before = snapshot(tmp_path)
    result = run_cli(*command, folder)
    assert snapshot(tmp_path) == before, "not a byte, not a cache, not a quarantine folder"
    if command[0] == "ls":
        assert result.exit_code == 0
        assert all(r["state"] == "unknown-format" for r in run_cli("ls", "--json", "--verify", folder).json["sessions"])
        return
    assert result.exit_code == 8, result.stderr
    assert "none of the" in result.stderr and "levelsess knows" in result.stderr
    assert "salvage" not in result.stderr


def test_claude_code_and_codex_files_are_named_for_what_they_are(tmp_path):
    claude = next((_copy("claude-code", tmp_path) / "projects").rglob("*.jsonl"))
    codex = next((_copy("codex", tmp_path) / "archived_sessions").glob("*.jsonl"))
    store = make_store(tmp_path / "store", sessions=1)
    shutil.copy(claude, store / PROJECT_SLUG / "claude.jsonl")
    shutil.copy(codex, store / PROJECT_SLUG / "codex.jsonl")
    findings = run_cli("fsck", "--json", store).json["findings"]
    looks = {Path(f["path"]).name: f["message"] for f in findings if f["code"] == "unknown-format"}
    assert "Claude Code session" in looks["claude.jsonl"] and "Codex CLI rollout" in looks["codex.jsonl"]
    assert sum(1 for f in findings if Path(f["path"]).name in looks) == 2, "one finding per foreign file"


def test_a_foreign_file_in_a_store_is_left_alone_and_its_folder_gets_no_cache(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    mine = next((store / PROJECT_SLUG).glob("*.jsonl"))
    with open(mine, "ab") as handle:
        handle.write(b'{"kind":"user","t":"x","content":"in fli')  # torn: ours, and repairable
    other = store / "-home-ada-code-other"
    write_journal(other / "2026-11-30T10-00-00-zz99.jsonl", session_records("2026-11-30T10-00-00-zz99"))
    claude = orjson.dumps(FIRST_RECORDS["claude-code"]) + b"\n" + b'{"parentUuid":"u","type":"assistant","uu'
    foreign = write_journal(store / PROJECT_SLUG / "b27ffd47.jsonl", claude)
    result = run_cli("fsck", "--repair", "--json", store)
    assert result.exit_code & 4 and not result.exit_code & 8
    assert foreign.read_bytes() == claude, "a torn tail of a file levelsess did not identify is never cut"
    assert mine.read_bytes().endswith(b"\n"), "its own journal beside it is still repaired"
    assert not (store / PROJECT_SLUG / "index.json").exists(), "no cache beside a file of another layout"
    assert (other / "index.json").exists(), "other folders are repaired as usual"
    again = run_cli("fsck", store)
    assert "salvage" not in again.stderr and "--repair" not in again.stderr, again.stderr


def test_a_claude_code_file_where_a_logician_journal_belongs_is_refused(tmp_path):
    folder = logician_session(tmp_path / "ws")
    data = orjson.dumps(FIRST_RECORDS["claude-code"]) + b"\n"
    (folder / "messages.jsonl").write_bytes(data + b'{"parentU')
    before = snapshot(tmp_path)
    result = run_cli("fsck", "--repair", tmp_path / "ws")
    assert result.exit_code == 8 and snapshot(tmp_path) == before


def test_a_text_file_named_like_a_journal_is_not_jsonl_and_is_not_truncated(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    notes = write_journal(store / PROJECT_SLUG / "notes.jsonl", b"remember to back up ~/.claude")
    result = run_cli("fsck", "--repair", "--json", store)
    assert notes.read_bytes() == b"remember to back up ~/.claude"
    assert any(f["code"] == "unknown-format" and "not JSONL" in f["message"] for f in result.json["findings"])


def test_a_levelcode_journal_killed_at_birth_is_still_repaired(tmp_path):
    for name, data in (("a", b'{"kind":"me'), ("b", b"\0" * 512), ("c", b'{"ki')):
        write_journal(tmp_path / "store" / PROJECT_SLUG / f"2026-11-30T09-00-00-000{name}.jsonl", data)
    result = run_cli("fsck", "--repair", "--json", tmp_path / "store")
    assert result.exit_code == 1, result.json
    assert all(p.stat().st_size == 0 for p in (tmp_path / "store" / PROJECT_SLUG).glob("*.jsonl"))


def test_show_and_export_refuse_a_foreign_file_with_a_typed_error(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    foreign = write_journal(store / PROJECT_SLUG / "c1.jsonl", encode([FIRST_RECORDS["codex"]]))
    for command in (["show", str(foreign)], ["export", str(foreign)]):
        result = run_cli(*command, "--store", store)
        assert result.exit_code in (4, 8) and "Traceback" not in result.stderr
        assert "Codex CLI rollout" in result.stderr


def test_trash_refuses_a_file_of_another_layout(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    foreign = write_journal(store / PROJECT_SLUG / "c1.jsonl", encode([FIRST_RECORDS["claude-code"]]))
    result = run_cli("trash", str(foreign), "--store", store)
    assert result.exit_code == 4 and foreign.exists() and "not a journal levelsess knows" in result.stdout


@pytest.mark.parametrize("record, expected", [
    ({"kind": 0, "v": {"version": 3, "requests": [{"message": {"text": "x" * 50}}] * 40_000}}, "vscode-log"),
    ({"type": "user", "parentUuid": None, "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "y" * (2 << 20)}},
     "claude-code"),
    ({"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": {"type": "message", "content": ["z" * (2 << 20)]}}, "codex"),
])
def test_a_line_too_long_to_parse_is_known_by_its_head(record, expected):
    """A compacted VS Code log is one line holding the whole chat (49 MB parsed took 150 MiB at its
    peak): a line past LONG_LINE is identified by its top-level members, as a parse would."""
    from toolkit.identify import LONG_LINE, identify_lines, sniff

    line = json.dumps(record).encode()
    assert len(line) > LONG_LINE
    assert identify_lines(line + b"\n") == (expected, True) and sniff(record) == expected


def test_a_long_line_that_is_no_object_is_not_json_to_identify():
    from toolkit.identify import LONG_LINE, identify_lines

    assert identify_lines(b"x" * (LONG_LINE + 1) + b"\n") == (None, False)
    assert identify_lines(b"[" + b"1," * LONG_LINE + b"1]\n") == (None, False)
