"""A record too large to parse here is not damage: `record-too-large`, never cut, trimmed or salvaged.

The reader holds at most LINE_CAP bytes of one line; the tests lower it (and CHUNK, so a line a
few KiB long is read in pieces) instead of writing 64 MiB files.  One optional test writes a real
70 MiB record with the real cap.
"""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import toolkit.lines
from tests.helpers import PROJECT_SLUG, encode, make_store, meta, run_cli, session_records, snapshot
from toolkit.errors import RELINKABLE, SALVAGEABLE, UNCORRECTABLE, RecordTooLargeError
from toolkit.journal import iter_records, scan_journal

CAP, CHUNK = 1024, 64
SID = "2026-11-30T09-00-00-a1b0"
COMMAND = re.compile(r"`(levelsess [^`]+)`")


@pytest.fixture
def small_cap(monkeypatch):
    monkeypatch.setattr(toolkit.lines, "LINE_CAP", CAP)
    monkeypatch.setattr(toolkit.lines, "CHUNK", CHUNK)


def _big(seq: int, size: int = 5 * CAP) -> bytes:
    """A valid v2 user record of more than ``size`` bytes: too large for the lowered cap."""
    return orjson.dumps({"kind": "user", "t": "2026-11-30T09:01:30Z", "content": "y" * size, "seq": seq})


def _store(tmp_path, *, big_at: int = 2, tail: bytes = b"", splice: bool = False):
    """A one-journal store whose line ``big_at`` (1-based, after meta) is a record over the cap."""
    store = make_store(tmp_path / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    lines = encode(session_records(SID, turns=3)).splitlines(keepends=True)
    lines[big_at - 1] = _big(big_at - 1) + b"\n"
    if splice:  # two appenders without a lock: salvageable damage beside the big record
        lines[big_at : big_at + 2] = [lines[big_at].rstrip(b"\n") + lines[big_at + 1]]
    data = b"".join(lines) + tail
    journal.write_bytes(data)
    return store, journal, data


def _hints(result) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if "next:" in line or COMMAND.search(line)]


def test_the_code_needs_a_person_and_no_repair_verb_touches_it():
    assert "record-too-large" in UNCORRECTABLE
    assert "record-too-large" not in SALVAGEABLE | RELINKABLE
    assert "invalid-record" not in SALVAGEABLE, "salvage never removes a line that is valid JSON"


def test_check_reports_record_too_large_with_line_offset_and_length_and_exits_4(tmp_path, small_cap):
    store, journal, data = _store(tmp_path)
    before = snapshot(store)
    result = run_cli("fsck", "--json", journal)
    assert result.exit_code == 4
    (found,) = [f for f in result.json["findings"] if f["code"] == "record-too-large"]
    offset = data.index(_big(1))
    assert (found["severity"], found["line"], found["offset"]) == ("error", 2, offset)
    assert f"{len(_big(1)):,} bytes" in found["message"] and "too large for levelsess to parse here" in found["message"]
    assert "left exactly as it is" in found["message"] and "nothing is cut" in found["message"]
    assert "invalid-json" not in {f["code"] for f in result.json["findings"]}
    assert snapshot(store) == before


def test_repair_leaves_the_journal_byte_identical(tmp_path, small_cap):
    store, journal, data = _store(tmp_path)
    result = run_cli("fsck", "--repair", "--json", journal)
    assert result.exit_code == 4
    assert journal.read_bytes() == data
    assert not (store / ".levelsess" / "recovered").exists()


def test_salvage_refuses_says_why_and_leaves_the_record_even_beside_salvageable_damage(tmp_path, small_cap):
    store, journal, data = _store(tmp_path, splice=True)
    check = run_cli("fsck", "--json", journal)
    assert {"record-too-large", "spliced-records"} <= {f["code"] for f in check.json["findings"]}
    result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert result.exit_code == 4
    (refusal,) = [f for f in result.json["findings"] if f["code"] == "salvage-refused"]
    assert "too large for levelsess to parse here" in refusal["message"] and "left exactly as it is" in refusal["message"]
    assert journal.read_bytes() == data
    assert not list(store.rglob("quarantine")), "no quarantine copy"


def test_advice_never_sends_a_record_too_large_journal_to_salvage_or_repair(tmp_path, small_cap):
    store, journal, data = _store(tmp_path, splice=True, tail=b'{"kind":"user","t":"x","content":"in fli')
    run_cli("reindex", store)  # the index is current: only the journal is left to advise on
    for args in (("fsck", store), ("fsck", "--repair", store), ("fsck", "--salvage", "--yes", store)):
        hints = _hints(run_cli(*args))
        commands = [c for h in hints for c in COMMAND.findall(h)]
        assert not any("--salvage" in c or "--repair" in c for c in commands), (args, hints)
        assert any("need a person" in h and "record-too-large" in h for h in hints), (args, hints)
        assert journal.read_bytes() == data


def test_an_overlong_final_tail_is_never_trimmed(tmp_path, small_cap):
    tail = b'{"kind":"user","t":"2026-11-30T09:59:30Z","content":"' + b"z" * (3 * CAP)  # maybe still being written
    store, journal, data = _store(tmp_path, big_at=3, tail=tail)
    result = run_cli("fsck", "--json", journal)
    found = {(f["code"], f["line"], f["offset"]) for f in result.json["findings"]}
    assert ("record-too-large", 9, len(data) - len(tail)) in found and result.exit_code == 4
    assert not {"torn-tail", "invalid-json"} & {code for code, _, _ in found}
    for args in (("fsck", "--repair", journal), ("fsck", "--salvage", "--yes", journal)):
        assert run_cli(*args).exit_code == 4
        assert journal.read_bytes() == data


def test_an_overlong_line_of_nul_bytes_is_still_padding_and_salvage_keeps_every_record(tmp_path, small_cap):
    store = make_store(tmp_path / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    lines = encode(session_records(SID, turns=3)).splitlines(keepends=True)
    nul = b"\0" * (3 * CAP + 7)
    data = b"".join(lines[:3]) + nul + b"\n" + b"".join(lines[3:])
    journal.write_bytes(data)
    assert "nul-padding" in {f["code"] for f in run_cli("fsck", "--json", journal).json["findings"]}
    result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert result.exit_code == 1, result.json
    assert journal.read_bytes() == b"".join(lines)
    quarantine = next((store / ".levelsess" / "quarantine").iterdir()) / PROJECT_SLUG
    assert (quarantine / f"{journal.name}.rejected").read_bytes() == nul
    pieces = orjson.loads((quarantine / f"{journal.name}.rejected.map.json").read_bytes())["pieces"]
    assert b"".join(data[p["offset"] : p["offset"] + p["length"]] for p in pieces) == nul


def test_salvage_never_removes_a_line_that_is_valid_json(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    lines = encode(session_records(SID, turns=3)).splitlines(keepends=True)
    data = b"".join(lines[:2]) + b'{"note":"not a record, but JSON"}\n' + lines[2].rstrip(b"\n") + b"".join(lines[3:])
    journal.write_bytes(data)
    result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert result.exit_code == 4
    (refusal,) = [f for f in result.json["findings"] if f["code"] == "salvage-refused"]
    assert "valid JSON but not a record" in refusal["message"]
    assert journal.read_bytes() == data


def test_iter_records_raises_at_a_record_too_large_instead_of_ending_there(tmp_path, small_cap):
    _store_root, journal, _data = _store(tmp_path, big_at=3)
    seen = []
    with pytest.raises(RecordTooLargeError) as raised:
        for line, _offset, _record in iter_records(journal):
            seen.append(line)
    assert seen == [1, 2] and raised.value.line == 3


def test_a_resumed_scan_reports_it_where_a_full_one_does(tmp_path, small_cap):
    store = make_store(tmp_path / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    lines = encode(session_records(SID, turns=3)).splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:3]))
    first = scan_journal(journal, checkpoint=True)
    with open(journal, "ab") as out:  # a record too large to parse, appended since
        out.write(_big(3) + b"\n" + b"".join(lines[4:]))
    full, resumed = scan_journal(journal), scan_journal(journal, resume=first.resume_state)
    where = [(f.code, f.line, f.offset) for f in full.findings if f.code == "record-too-large"]
    assert where == [("record-too-large", 4, sum(map(len, lines[:3])))]
    assert [(f.code, f.line, f.offset) for f in resumed.findings if f.code == "record-too-large"] == where
    assert full.blocked and resumed.blocked


# --- the property: salvage keeps every valid record -------------------------------------------

PROP_CAP, PROP_CHUNK = 256, 32


@st.composite
def _damaged_journals(draw):
    """(journal bytes, every whole record in it): v1 records of any size around the cap, with
    salvageable damage between them: splices, NUL lines, cut-off records, garbage."""
    def record(n: int) -> bytes:
        size = draw(st.one_of(st.integers(0, 80), st.integers(PROP_CAP - 40, PROP_CAP + PROP_CHUNK + 40),
                              st.integers(PROP_CAP + PROP_CHUNK + 1, 4 * PROP_CAP)))
        return orjson.dumps({"kind": "user", "t": f"2026-11-30T09:{n % 60:02d}:00Z", "content": "x" * size})

    head = orjson.dumps(meta(SID, v=1))
    lines, records = [head], [head]
    for n in range(draw(st.integers(1, 6))):
        shape = draw(st.sampled_from(["whole", "whole", "splice", "nul", "cut", "garbage"]))
        if shape == "whole":
            lines.append(record(n))
            records.append(lines[-1])
        elif shape == "splice":
            a, b = record(n), record(n + 100)
            lines.append(a + b)
            records += [a, b]
        elif shape == "nul":
            lines.append(b"\0" * draw(st.integers(1, 3 * PROP_CAP)))
        elif shape == "cut":
            whole, cut = record(n), record(n + 200)
            lines.append(cut[: draw(st.integers(1, len(cut) - 1))] + whole)
            records.append(whole)
        else:
            lines.append(b"#garbage")
    return b"".join(line + b"\n" for line in lines), records


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_damaged_journals())
def test_salvage_keeps_every_valid_record_whatever_its_size(tmp_path_factory, case):
    data, records = case
    store = make_store(tmp_path_factory.mktemp("prop") / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    journal.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolkit.lines, "LINE_CAP", PROP_CAP)
        patch.setattr(toolkit.lines, "CHUNK", PROP_CHUNK)
        result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert not result.exit_code & 8, result.json
    after = journal.read_bytes()
    kept = after.split(b"\n")
    for record in records:
        assert record in kept or after == data, record[:80]
    if any(len(line) > PROP_CAP + PROP_CHUNK and line.strip(b"\0") for line in data.split(b"\n")):
        assert after == data, "a journal holding a record too large to parse is never rewritten"
        assert "salvage-refused" in {f["code"] for f in result.json["findings"]}


# --- a real one ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_real_70_mib_record_is_record_too_large_and_survives_salvage(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    lines = encode(session_records(SID, turns=2)).splitlines(keepends=True)
    big = b'{"kind":"user","t":"2026-11-30T09:01:30Z","seq":2,"content":"' + b"y" * (70 << 20) + b'"}\n'
    with open(journal, "wb") as out:
        out.writelines([*lines[:2], big, *lines[2:]])
    size = journal.stat().st_size
    check = run_cli("fsck", "--json", journal)
    assert check.exit_code == 4 and "record-too-large" in {f["code"] for f in check.json["findings"]}
    assert run_cli("fsck", "--salvage", "--yes", journal).exit_code == 4
    assert journal.stat().st_size == size
    with open(journal, "rb") as handle:
        handle.seek(len(lines[0]) + len(lines[1]))
        assert handle.read(len(big)) == big
