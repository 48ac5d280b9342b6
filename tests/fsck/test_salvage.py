"""--salvage: spliced records split, NUL runs dropped, every kept record a byte-exact slice."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.helpers import PROJECT_SLUG, encode, make_store, run_cli, session_records, snapshot


def _damaged(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    lines = encode(session_records()).splitlines(keepends=True)
    spliced = lines[1].rstrip(b"\n") + lines[2]  # two appenders without a lock: …}{…
    cut_off = lines[3][:20] + lines[4]  # a torn line that was never repaired, then the next append
    data = lines[0] + spliced + b"\0" * 4096 + cut_off + b"".join(lines[5:])
    journal.write_bytes(data)
    return store, journal, lines, data


def test_check_finds_splices_and_nul_padding(tmp_path):
    store, journal, _, data = _damaged(tmp_path)
    result = run_cli("fsck", "--json", journal)
    found = {(f["code"], f["line"], f["offset"]) for f in result.json["findings"]}
    assert ("spliced-records", 2, data.index(b"\n") + 1) in found
    assert any(code == "nul-padding" for code, _, _ in found)
    assert result.exit_code == 4


def test_plain_repair_leaves_a_damaged_file_alone(tmp_path):
    store, journal, _, data = _damaged(tmp_path)
    before = snapshot(store)
    assert run_cli("fsck", "--repair", journal).exit_code == 4
    assert snapshot(store) == before


def test_salvage_needs_a_second_yes(tmp_path):
    store, journal, _, data = _damaged(tmp_path)
    result = run_cli("fsck", "--salvage", journal)
    assert result.exit_code == 16 and "--yes" in result.stderr
    assert journal.read_bytes() == data


def test_salvage_keeps_byte_exact_records_and_quarantines_the_original(tmp_path):
    store, journal, lines, data = _damaged(tmp_path)
    result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert result.exit_code == 1 | 4, result.stdout  # salvaged, but the cut-off record's seq is gone for good
    assert {f["code"] for f in result.json["findings"] if not f["repaired"]} == {"seq-gap"}
    salvaged = journal.read_bytes().splitlines(keepends=True)
    expected = [lines[0], lines[1].rstrip(b"\n") + b"\n", lines[2], lines[4], *lines[5:]]
    assert salvaged == expected
    for line in salvaged:
        assert line.rstrip(b"\n") in data  # a slice of the original, never re-serialised
    quarantine = next((store / ".levelsess" / "quarantine").iterdir()) / journal.parent.name  # names its folder
    assert (quarantine / journal.name).read_bytes() == data
    rejected = (quarantine / f"{journal.name}.rejected").read_bytes()
    assert rejected == b"\0" * 4096 + lines[3][:20]
    pieces = orjson.loads((quarantine / f"{journal.name}.rejected.map.json").read_bytes())["pieces"]
    assert [data[p["offset"] : p["offset"] + p["length"]] for p in pieces] == [b"\0" * 4096, lines[3][:20]]
    after = run_cli("fsck", "--json", journal)
    assert {f["code"] for f in after.json["findings"]} == {"seq-gap"}  # the cut-off record's seq is gone, honestly


def test_salvage_via_environment_and_second_run_is_a_no_op(tmp_path, monkeypatch):
    store, journal, _, _ = _damaged(tmp_path)
    monkeypatch.setenv("LEVELSESS_SALVAGE", "YES")
    assert run_cli("fsck", "--salvage", journal).exit_code in (1, 5)
    before = snapshot(store)
    run_cli("fsck", "--salvage", journal)
    assert snapshot(store) == before


def test_salvage_refuses_a_future_version(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    journal.write_bytes(b'{"kind":"meta","v":99,"id":"x"}\n{"a":1}{"b":2}\n')
    before = snapshot(store)
    assert run_cli("fsck", "--salvage", "--yes", journal).exit_code == 4
    assert snapshot(store) == before


def test_salvage_of_a_journal_under_a_folder_name_that_is_not_utf8(tmp_path):
    """The rejected map names the journal's path: under a folder whose name is not UTF-8 (\\xff on
    Linux) it is written with an escape, read back as the path, and the salvage goes through."""
    import os
    import sys

    import pytest

    from toolkit.parse import loads

    if sys.platform in ("darwin", "win32"):
        pytest.skip("needs a file system that takes any bytes in a name")
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/st\xffore"))
    odd.mkdir()
    store, journal, lines, data = _damaged(odd)
    result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert result.exit_code == 1 | 4, result.stdout
    quarantine = next((store / ".levelsess" / "quarantine").iterdir()) / journal.parent.name
    rejected = loads((quarantine / f"{journal.name}.rejected.map.json").read_bytes())
    assert rejected["source"] == str(journal) and len(rejected["pieces"]) == 2
