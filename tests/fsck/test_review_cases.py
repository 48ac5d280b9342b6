"""Shapes an adversarial review found: each one removed or rewrote bytes it had not proven garbage."""

from __future__ import annotations

import orjson
import pytest

from tests.helpers import PROJECT_SLUG, encode, logician_session, meta, run_cli, snapshot, write_journal

SID = "2026-11-30T09-00-00-a1b2"
USER = {"kind": "user", "t": "2026-11-30T09:01:00Z", "content": "hello", "seq": 1}


def _journal(tmp_path, data: bytes):
    return write_journal(tmp_path / "store" / PROJECT_SLUG / f"{SID}.jsonl", data)


@pytest.mark.parametrize("space", ["\f", "\v", "\x1c", "\u0085", "\u00a0", "\u2028"])
@pytest.mark.parametrize("where", ["body", "tail"])
def test_a_character_json_does_not_call_white_space_is_damage_and_nothing_rewrites_it(tmp_path, space, where):
    line = orjson.dumps(USER) + space.encode()
    data = encode([meta(SID)]) + line + (b"\n" if where == "body" else b"")
    journal = _journal(tmp_path, data)
    check = run_cli("fsck", "--json", tmp_path / "store")
    assert check.exit_code == 4 and "spliced-records" in {f["code"] for f in check.json["findings"]}
    for command in (["fsck", "--repair"], ["migrate"], ["show", journal], ["export", journal]):
        result = run_cli(*command, *([] if command[0] in ("show", "export") else [tmp_path / "store"]))
        assert result.exit_code & 4, (command, result.exit_code)
    assert journal.read_bytes() == data


@pytest.mark.parametrize("value", [b"[" * 1100 + b"]" * 1100, b"9" * 5000])
@pytest.mark.parametrize("where", ["body", "tail"])
def test_a_record_too_deep_or_too_long_to_parse_is_never_cut_nor_salvaged_away(tmp_path, value, where):
    line = b'{"kind":"user","seq":1,"content":' + value + b"}"
    data = encode([meta(SID)]) + line + (b"\n" if where == "body" else b"")
    journal = _journal(tmp_path, data)
    check = run_cli("fsck", "--json", tmp_path / "store")
    assert "too-deep" in {f["code"] for f in check.json["findings"]}
    for command in (["fsck", "--repair"], ["fsck", "--salvage", "--yes"]):
        run_cli(*command, tmp_path / "store")
        assert journal.read_bytes() == data, command
    assert "--salvage" not in run_cli("fsck", tmp_path / "store").stderr


def test_salvage_finds_a_record_behind_thousands_of_braces(tmp_path):
    records = [meta(SID), USER, dict(USER, seq=2)]
    data = encode(records[:1]) + b"{" * 5000 + orjson.dumps(records[1]) + b"\n" + orjson.dumps(records[2]) + b"\n"
    journal = _journal(tmp_path, data)
    check = run_cli("fsck", "--json", tmp_path / "store")
    assert "spliced-records" in {f["code"] for f in check.json["findings"]}
    run_cli("fsck", "--salvage", "--yes", tmp_path / "store")
    assert journal.read_bytes() == encode(records), "the record behind the braces is kept"


@pytest.mark.parametrize("tail", [b'{"seq":1,"content":"x"}{"kind":"u', b'{"kind":5}{"kind":"u', b'  {"a":[1]}\0\0{"ki'])
def test_a_whole_json_object_followed_by_a_fragment_is_never_cut(tmp_path, tail):
    data = encode([meta(SID)]) + tail
    journal = _journal(tmp_path, data)
    run_cli("fsck", "--repair", tmp_path / "store")
    assert journal.read_bytes() == data


def test_a_cut_off_first_record_of_another_tool_in_a_logician_folder_is_left_alone(tmp_path):
    folder = logician_session(tmp_path / "ws")
    data = b'{"type":"user","message":{"role":"user","content":"hi"'
    (folder / "messages.jsonl").write_bytes(data)
    before = snapshot(tmp_path)
    result = run_cli("fsck", "--repair", "--json", tmp_path / "ws")
    assert snapshot(tmp_path) == before and result.exit_code == 8
