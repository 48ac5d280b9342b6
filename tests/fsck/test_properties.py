"""Property tests over truncation points and single-byte changes (hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG, encode, meta, snapshot
from toolkit.errors import CODES
from toolkit.fsck import check_folders, plan_repair
from toolkit.stores import discover_all

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
event = st.one_of(
    st.builds(lambda t, c: {"kind": "user", "t": t, "content": c}, text, text),
    st.builds(lambda t, c, m: {"kind": "assistant", "t": t, "content": [{"type": "text", "text": c}], "model": m}, text, text, text),
    st.builds(lambda t, title: {"kind": "title", "t": t, "title": title}, text, text),
    st.builds(lambda t, n: {"kind": "event", "t": t, "type": "checkpoint", "n": n}, text, st.integers(0, 10**6)),
)
journals = st.builds(
    lambda v, events: [meta(v=v)] + [dict(e, seq=i) if v == 2 else e for i, e in enumerate(events, start=1)],
    st.sampled_from([1, 2]),
    st.lists(event, min_size=1, max_size=8),
)
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _lay_out(root: Path, data: bytes) -> Path:
    journal = root / PROJECT_SLUG / "2026-11-30T09-00-00-a1b2.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(data)
    return journal


def _repair(journal: Path):
    report = check_folders(discover_all([journal]))
    return report, plan_repair(report).execute()


@SETTINGS
@given(records=journals, data=st.data())
def test_repair_keeps_every_complete_record_and_saves_the_torn_tail(records, data):
    whole = encode(records)
    cut = data.draw(st.integers(0, len(whole)), label="cut")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        journal = _lay_out(root, whole[:cut])
        _, result = _repair(journal)
        kept = whole[: whole.rfind(b"\n", 0, cut) + 1]
        tail = whole[len(kept) : cut]
        after = journal.read_bytes()
        if tail and whole[cut : cut + 1] == b"\n":  # a complete record that only lost its newline
            assert after == kept + tail + b"\n"
        else:
            assert after == kept
            recovered = sorted((root / ".levelsess" / "recovered").rglob("*.tail")) if tail else []
            assert [p.read_bytes() for p in recovered] == ([tail] if tail else [])
        assert not any(f.severity == "error" and not f.repaired for f in result.findings)
        before_second = snapshot(root)
        _, second = _repair(journal)
        assert snapshot(root) == before_second, "a second repair must change no byte"
        assert not any(f.repaired for f in second.findings)


@SETTINGS
@given(records=journals, data=st.data())
def test_single_byte_change_in_a_body_line_is_typed_and_never_written(records, data):
    whole = encode(records)
    last_start = whole.rfind(b"\n", 0, len(whole) - 1) + 1
    offset = data.draw(st.integers(0, last_start - 2), label="offset")  # inside a non-final line
    value = data.draw(st.integers(0, 255), label="byte")
    damaged = bytearray(whole)
    damaged[offset] = value
    with tempfile.TemporaryDirectory() as tmp:
        journal = _lay_out(Path(tmp), bytes(damaged))
        before = snapshot(Path(tmp))
        report, result = _repair(journal)  # check, then repair: neither may raise untyped
        for finding in result.findings:
            assert finding.code in CODES
        errors = [f for f in report.findings if f.severity == "error"]
        if not errors:  # still valid: every line must parse as a record
            for line in bytes(damaged).splitlines():
                if line.strip():
                    assert isinstance(orjson.loads(line), dict)
        if any(f.code not in ("torn-tail", "unterminated-tail") for f in errors):
            assert snapshot(Path(tmp)) == before, "a file with an uncorrectable finding must not be written"
