"""Prove before you cut: a repair removes only bytes that hold no record of the layout.

The class, not the example: for any valid journal (LevelCode v1/v2 or Logician) and any final
line built from whole records, cut-off records, NUL runs, CR, LF and spaces, the repair
- changes the file only by appending one newline or by cutting bytes off its end,
- cuts only bytes in which no ``{`` opens a whole record of the layout (checked here with the
  standard library, independently of the classifier), and saves exactly those bytes,
- never shortens a file whose last line parses, and keeps every whole record it was given,
- and a second repair changes nothing.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG, encode, meta, run_cli, snapshot, write_journal
from toolkit.fsck import check_folders, plan_repair
from toolkit.stores import discover_all

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def _levelcode(v: int, events: list[dict]) -> list[dict]:
    records = [meta(v=v)] + events
    if v == 2:
        for seq, record in enumerate(records[1:], start=1):
            record["seq"] = seq
    return records


lc_event = st.one_of(
    st.builds(lambda t, c: {"kind": "user", "t": t, "content": c}, text, text),
    st.builds(lambda t, c: {"kind": "assistant", "t": t, "content": [{"type": "text", "text": c}]}, text, text),
    st.builds(lambda t, title: {"kind": "title", "t": t, "title": title}, text, text),
)
lg_entry = st.builds(lambda n, c: {"id": f"e{n}", "timestamp": "2026-11-30T12:00:00Z", "text": c}, st.integers(0, 99), text)
LAYOUTS = {
    "levelcode": st.builds(_levelcode, st.sampled_from([1, 2]), st.lists(lc_event, min_size=1, max_size=5)),
    "logician": st.lists(lg_entry, min_size=1, max_size=5, unique_by=lambda e: e["id"]),
}
KEY = {"levelcode": "kind", "logician": "id"}


def _tail_pieces(records: list[dict]):
    """Pieces a final line is built from: whole records, cut-off ones, NUL runs, CR, LF, spaces."""
    lines = [orjson.dumps(r) for r in records]
    whole = st.sampled_from(lines).map(lambda b: ("whole", b))
    cut = st.sampled_from(lines).flatmap(lambda b: st.integers(1, max(1, len(b) - 1)).map(lambda k: ("cut", b[:k])))
    filler = st.sampled_from([b"\0" * 7, b"\0", b"\r", b"\n", b" ", b"\r\n", b"\0" * 300]).map(lambda b: ("filler", b))
    return st.lists(st.one_of(whole, cut, filler), min_size=1, max_size=5)


def _journal_path(root: Path, layout: str) -> Path:
    if layout == "levelcode":
        return root / "store" / PROJECT_SLUG / "2026-11-30T09-00-00-a1b2.jsonl"
    return root / "ws" / ".logician" / "sessions" / "sessions" / "s1" / "messages.jsonl"


def _repair(path: Path):
    report = check_folders(discover_all([path.parent]))
    return plan_repair(report).execute()


def _holds_record(data: bytes, key: str) -> bool:
    """Independent of the classifier: does any '{' in ``data`` open a whole JSON object with a string ``key``?"""
    text_ = data.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    for start in (i for i, c in enumerate(text_) if c == "{"):
        try:
            obj, _ = decoder.raw_decode(text_, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and isinstance(obj.get(key), str):
            return True
    return False


def _last_line_parses(data: bytes) -> bool:
    last = data[data.rfind(b"\n") + 1 :]
    try:
        json.loads(last.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(last.strip())


def _recovered(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(root.rglob("*.tail"))]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@SETTINGS
@given(data=st.data())
def test_a_repair_cuts_only_bytes_that_hold_no_record(layout, data):
    records = data.draw(LAYOUTS[layout], label="records")
    body = encode(records[:-1])
    pieces = data.draw(_tail_pieces(records), label="final line")
    final = b"".join(b for _, b in pieces)
    before = body + final
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        journal = write_journal(_journal_path(root, layout), before)
        _repair(journal)
        after = journal.read_bytes()
        if after == before + b"\n":
            removed = b""
        else:
            assert before.startswith(after), "a repair may only append a newline or cut bytes off the end"
            removed = before[len(after):]
        if removed:
            assert not _holds_record(removed, KEY[layout]), f"cut a whole record: {removed[:120]!r}"
            assert _recovered(root) == [removed], "the cut bytes are saved, exactly"
            assert not _last_line_parses(before), "a file whose last line parses is never shortened"
        else:
            assert _recovered(root) == []
        for kind, piece in pieces:
            if kind == "whole":
                assert piece in after, "every whole record of the final line is kept"
        second = snapshot(root)
        _repair(journal)
        assert snapshot(root) == second, "a second repair changes nothing"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cr_only_files_are_never_cut_and_salvage_makes_them_lf(layout, data):
    records = data.draw(LAYOUTS[layout].filter(lambda r: len(r) > 1), label="records")
    lines = [orjson.dumps(r) for r in records]
    before = b"\r".join(lines) + data.draw(st.sampled_from([b"", b"\r"]), label="end")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        journal = write_journal(_journal_path(root, layout), before)
        result = _repair(journal)
        assert journal.read_bytes() == before, "a repair never cuts a CR-only journal"
        codes = {f.code for f in result.findings if not f.repaired}
        assert "cr-line-endings" in codes and "torn-tail" not in codes
        report = check_folders(discover_all([journal.parent]))
        plan_repair(report, salvage=True).execute()
        assert journal.read_bytes() == b"".join(line + b"\n" for line in lines), "salvage: one record per line"
        assert next(root.rglob("quarantine/*/*/" + journal.name)).read_bytes() == before


TWO = [meta(), {"kind": "user", "t": "2026-11-30T09:01:00Z", "content": "one", "seq": 1},
       {"kind": "user", "t": "2026-11-30T09:02:00Z", "content": "two", "seq": 2}]


@pytest.mark.parametrize("final, code", [
    (orjson.dumps(TWO[1]) + orjson.dumps(TWO[2]), "spliced-records"),  # two whole records, no newline
    (orjson.dumps(TWO[1]) + orjson.dumps(TWO[2])[:20], "spliced-records"),  # a whole one, then a cut-off one
    (orjson.dumps(TWO[1])[:15] + orjson.dumps(TWO[2]), "spliced-records"),  # a cut-off one, then a whole one
    (b"\0" * 40 + orjson.dumps(TWO[1]), "nul-padding"),  # NUL run before a whole record
    (orjson.dumps(TWO[1]) + b"\r" + orjson.dumps(TWO[2]), "cr-line-endings"),
    (b"[1, 2, 3]", "invalid-record"),  # JSON, but not a record: never cut
])
def test_a_final_line_holding_a_record_is_held_for_a_person(tmp_path, final, code):
    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T09-00-00-a1b2.jsonl", encode(TWO[:1]) + final)
    before = snapshot(tmp_path)
    check = run_cli("fsck", "--json", tmp_path / "store")
    assert check.exit_code == 4 and code in {f["code"] for f in check.json["findings"]}
    assert "torn-tail" not in {f["code"] for f in check.json["findings"]}
    repair = run_cli("fsck", "--repair", tmp_path / "store")
    assert repair.exit_code & 4 and "--repair" not in repair.stderr.split("next:", 1)[-1], repair.stderr
    assert snapshot(tmp_path)[str(journal.relative_to(tmp_path))] == before[str(journal.relative_to(tmp_path))]


def test_a_torn_tail_is_still_trimmed_and_saved_under_its_session_folder(tmp_path):
    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T09-00-00-a1b2.jsonl",
                            encode(TWO) + b'{"kind":"user","t":"x","content":"in fli')
    result = run_cli("fsck", "--repair", "--json", tmp_path / "store")
    assert result.exit_code == 1
    torn = next(f for f in result.json["findings"] if f["code"] == "torn-tail")
    saved = Path(torn["saved_to"])
    assert saved.is_file() and saved.read_bytes() == b'{"kind":"user","t":"x","content":"in fli'
    assert saved.parent.name == PROJECT_SLUG and saved.name.startswith(journal.name + ".")
    assert journal.read_bytes() == encode(TWO)


def test_show_and_export_keep_a_final_record_that_only_lacks_its_newline_and_refuse_a_held_tail(tmp_path):
    store = tmp_path / "store"
    whole = write_journal(store / PROJECT_SLUG / "2026-11-30T09-00-00-a1b2.jsonl", encode(TWO)[:-1])
    result = run_cli("export", whole, "--store", store)
    assert result.exit_code == 0 and "two" in result.stdout, "the last record is shown, not dropped"
    held = write_journal(store / PROJECT_SLUG / "2026-11-30T09-00-00-a1b3.jsonl",
                         encode(TWO[:1]) + orjson.dumps(TWO[1]) + orjson.dumps(TWO[2]))
    for command in ("show", "export"):
        refused = run_cli(command, held, "--store", store)
        assert refused.exit_code == 4 and "spliced-records" in refused.stderr
