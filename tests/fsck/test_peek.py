"""A record too large to parse is still named by its two ends (toolkit/peek.py), never wrongly.

Soundness is the property: whatever the record (nested objects that hold the same keys, strings
full of quotes, braces and backslashes) and however small the window, every field ``top_level``
reports is a top-level scalar of the record with exactly that value.  Then a Claude Code transcript
whose middle record is over the parse cap: its chain is whole (no dangling-parent, no
broken-chain), the record is record-too-large and nothing is cut.
"""

from __future__ import annotations

import json
import uuid as uuids

import orjson
import pytest
from hypothesis import given, settings, strategies as st

import toolkit.lines
from tests.helpers import run_cli, snapshot
from toolkit.journal import scan_journal
from toolkit.peek import top_level

KEYS = st.sampled_from(["uuid", "parentUuid", "type", "isSidechain", "sessionId", "x", "message", "content"])
TEXT = st.text(alphabet='ab"\\{}[]:,uuid \n\t\u00e9', max_size=30)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.one_of(KEYS, TEXT), inner, max_size=4)),
                      max_leaves=12)
RECORDS = st.dictionaries(st.one_of(KEYS, TEXT), VALUES, min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(RECORDS, st.integers(1, 200), st.integers(1, 200), st.booleans())
def test_every_field_read_from_the_ends_is_a_top_level_scalar_of_the_record(record, head, tail, ascii_only):
    line = json.dumps(record, ensure_ascii=ascii_only).encode()
    found = top_level(line[:head], line[-tail:])
    for key, value in found.items():
        assert key in record, (key, line)
        assert record[key] == value and not isinstance(record[key], (dict, list)), (key, line)


@given(RECORDS)
def test_a_whole_window_finds_every_top_level_scalar_with_a_plain_key(record):
    line = orjson.dumps(record)
    found = top_level(line, line)
    for key, value in record.items():
        if key.isidentifier() and key.isascii() and len(key) <= 64 and not isinstance(value, (dict, list)) \
                and not (isinstance(value, str) and ("\n" in value or len(value) > 4000)):
            assert found.get(key, "missing") == value, (key, line)


def _claude(path, big_index: int, size: int) -> list[str]:
    """A Claude Code transcript in Claude Code's own key order (uuid after the message); record
    ``big_index`` holds ``size`` characters of text."""
    sid, parent, uuids_, lines = str(uuids.uuid4()), None, [], []
    for i in range(5):
        u = str(uuids.uuid4())
        text = "q" * size if i == big_index else f"words {i}"
        role = "user" if i % 2 == 0 else "assistant"
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/u/p",
                                 "sessionId": sid, "version": "2.0.1", "type": role,
                                 "message": {"role": role, "content": content, "uuid": "nested-not-mine"},
                                 "uuid": u, "timestamp": f"2026-11-30T09:0{i}:00Z"}))
        uuids_.append(u)
        parent = u
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return uuids_


def test_a_claude_record_over_the_cap_keeps_the_chain_whole_and_is_never_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(toolkit.lines, "LINE_CAP", 4096)
    monkeypatch.setattr(toolkit.lines, "CHUNK", 512)
    project = tmp_path / "projects" / "-home-u-p"
    project.mkdir(parents=True)
    for big in range(5):
        journal = project / f"{uuids.uuid4()}.jsonl"
        _claude(journal, big, 200_000)
        scan = scan_journal(journal, "claude-code")
        codes = sorted(f.code for f in scan.findings)
        assert codes == ["record-too-large"], (big, codes)
        journal.unlink()


@pytest.mark.parametrize("big", [0, 2, 4])
def test_fsck_of_a_claude_transcript_with_a_70_mib_record_says_only_that(tmp_path, big):
    project = tmp_path / "projects" / "-home-u-p"
    project.mkdir(parents=True)
    _claude(project / f"{uuids.uuid4()}.jsonl", big, 70 * 1024 * 1024)
    before = snapshot(tmp_path)
    result = run_cli("fsck", "--json", str(tmp_path / "projects"))
    assert result.exit_code == 4, result.output
    codes = sorted(f["code"] for f in json.loads(result.stdout)["findings"])
    assert codes == ["oversize", "record-too-large"], codes
    for verb in (["--repair"], ["--salvage", "--yes"], ["--relink", "--yes"]):
        run_cli("fsck", *verb, str(tmp_path / "projects"))
        assert snapshot(tmp_path) == before, verb
