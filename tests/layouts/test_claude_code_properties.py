"""Properties of the Claude Code layout over the real fixture transcripts (hypothesis).

- Any truncation point: ``fsck --repair`` keeps every complete line byte-identical, removes only
  the incomplete tail and saves exactly those bytes (in levelsess's data folder), appends a newline
  to a whole record that only lacks one, leaves a file alone when its complete lines already carry
  graph damage, and a second repair is a no-op.
- Any single byte flipped in a non-final line: an error finding on each line the stdlib ``json``
  no longer reads as a record (when the flip keeps every line a record, the graph findings are the
  independent model's), and the repair writes nothing anywhere.
- The resume walk: on fixture-derived files whose chain was cut, rewired or looped, levelsess's
  graph findings and its "resume shows R of M messages … line L" agree with the model in
  :mod:`tests.layouts.claude`, written from SOURCES-AGENTS §1.8, not from levelsess's code.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.helpers import snapshot
from tests.layouts.conftest import forget_open_files
from tests.layouts.claude import (FIXTURES, expected_graph, fixture_bytes, fixture_files, fresh_uuid, is_chain,
                                  is_record, join, lines_of, main_files, nested_typed_end, offsets, own_data_home, parse,
                                  resume_figures, set_parent)
from toolkit.fsck import check_folders, plan_repair
from toolkit.journal import scan_journal
from toolkit.layouts import CLAUDE_CODE
from toolkit.stores import discover_all

pytestmark = pytest.mark.skipif(not (FIXTURES / "projects").is_dir(), reason="the Claude Code fixtures are not here")

SETTINGS = settings(max_examples=150, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
FILES = [f for f in fixture_files() if len(lines_of(fixture_bytes(f))) > 1] if fixture_files() else []
MAINS = [f for f in main_files() if any(is_chain(parse(line)) for line in lines_of(fixture_bytes(f)))] if FILES else []


@functools.lru_cache(maxsize=None)
def _lines(rel: Path) -> tuple[bytes, ...]:
    return tuple(lines_of(fixture_bytes(rel)))


@functools.lru_cache(maxsize=None)
def _parsed(rel: Path) -> tuple:
    """Each line of a fixture with the stdlib's reading of it (parsed once: the big ones are 3 MB)."""
    return tuple(parse(line) for line in _lines(rel))


def _records(lines, parsed) -> list:
    """(line, offset, record) for the model, from lines and their parsed values."""
    return [(n, o, r) for n, (o, r) in enumerate(zip(offsets(list(lines)), parsed), start=1) if is_record(r)]


def _place(root: Path, rel: Path, data: bytes) -> Path:
    journal = root / ".claude" / "projects" / rel
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_bytes(data)
    return journal


def _check_and_repair(journal: Path):
    """``fsck --repair ROOT`` (the .claude root: the way a user runs it), as library calls."""
    forget_open_files()  # this example's files are new: no inode seen a moment ago may stand for them
    root = next(p for p in journal.parents if p.name == ".claude")
    report = check_folders(discover_all([root]))
    result = plan_repair(report).execute()
    return report, result


def _tails(home: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(home.rglob("*.tail"))]


# --- truncation ------------------------------------------------------------------------------------


def _expect_truncated(original: bytes, lines, parsed, i: int, k: int, journal: Path, home: Path, root: Path) -> None:
    """Repair the file cut ``k`` bytes into line ``i`` and check the outcome against the rules."""
    start = offsets(list(lines))[i]
    body, tail = original[:start], lines[i][:k]
    before = body + tail
    _check_and_repair(journal)
    after = journal.read_bytes()
    whole_record = k == len(lines[i])  # the cut fell just before the newline: a record lacking only it
    kept = i + 1 if whole_record else i
    needs_person = expected_graph(records=_records(lines[:kept], parsed[:kept])).errors
    if needs_person:
        assert after == before and _tails(home) == [], "a file with graph damage is not modified, not even its tail"
    elif k == 0:
        assert after == before and _tails(home) == []
    elif whole_record:
        assert after == before + b"\n" and _tails(home) == []
    else:
        assert after == body, "exactly the incomplete tail is removed; every complete line is kept byte for byte"
        assert _tails(home) == [tail], "and saved, exactly, in levelsess's data folder"
        assert not any(p.is_relative_to(root) for p in home.rglob("*"))
    settled = snapshot(root), snapshot(home)
    _check_and_repair(journal)
    assert (snapshot(root), snapshot(home)) == settled, "a second repair changes nothing"


@pytest.mark.skipif(not FILES, reason="no fixtures")
@settings(SETTINGS, max_examples=100)
@given(data=st.data())
def test_any_truncation_in_a_record_envelope_is_repaired_exactly(data):
    """Cut points before a record's first nested object (where the tail holds no whole piece)."""
    rel = data.draw(st.sampled_from(FILES), label="transcript")
    lines, original = _lines(rel), fixture_bytes(rel)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    end = nested_typed_end(lines[i])
    k = data.draw(st.integers(0, len(lines[i]) if end is None else end - 1), label="bytes kept of the line")
    with tempfile.TemporaryDirectory() as tmp, own_data_home() as home:
        root = Path(tmp)
        journal = _place(root, rel, original[: offsets(list(lines))[i] + k])
        _expect_truncated(original, lines, _parsed(rel), i, k, journal, home, root)


@pytest.mark.skipif(not FILES, reason="no fixtures")
@settings(SETTINGS, phases=[Phase.generate])  # no shrinking: the failure is the point
@given(data=st.data())
def test_any_truncation_point_is_repaired_exactly(data):
    rel = data.draw(st.sampled_from(FILES), label="transcript")
    lines, original = _lines(rel), fixture_bytes(rel)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    k = data.draw(st.integers(0, len(lines[i])), label="bytes kept of the line")
    with tempfile.TemporaryDirectory() as tmp, own_data_home() as home:
        root = Path(tmp)
        journal = _place(root, rel, original[: offsets(list(lines))[i] + k])
        _expect_truncated(original, lines, _parsed(rel), i, k, journal, home, root)


@pytest.mark.skipif(not FILES, reason="no fixtures")
def test_a_cut_exactly_at_a_line_end_is_clean_and_untouched(tmp_path):
    for rel in FILES:
        lines = _lines(rel)
        for i in sorted({1, len(lines) // 2, len(lines) - 1}):
            data = join(list(lines[:i]))
            with own_data_home() as home:
                journal = _place(tmp_path / f"{rel.stem}-{i}", rel, data)
                report, result = _check_and_repair(journal)
                assert journal.read_bytes() == data and _tails(home) == []
                assert not any(f.code in ("torn-tail", "unterminated-tail") for f in report.findings)


# --- a byte flipped in a non-final line ----------------------------------------------------------


@pytest.mark.skipif(not FILES, reason="no fixtures")
@SETTINGS
@given(data=st.data())
def test_a_flipped_byte_in_a_non_final_line_is_an_error_and_nothing_is_written(data):
    rel = data.draw(st.sampled_from(FILES), label="transcript")
    lines, original = _lines(rel), fixture_bytes(rel)
    i = data.draw(st.integers(0, len(lines) - 2), label="line")
    at = offsets(list(lines))[i] + data.draw(st.integers(0, len(lines[i])), label="byte (its LF included)")
    mask = data.draw(st.integers(1, 255), label="xor mask")
    flipped = bytearray(original)
    flipped[at] ^= mask
    flipped = bytes(flipped)
    after_lines = lines_of(flipped)
    bad = [n for n, line in enumerate(after_lines, start=1) if line and not is_record(parse(line))]
    with tempfile.TemporaryDirectory() as tmp, own_data_home() as home:
        root = Path(tmp)
        journal = _place(root, rel, flipped)
        before = snapshot(root)
        report, result = _check_and_repair(journal)
        assert snapshot(root) == before and not any(home.rglob("*")), "nothing written, nothing saved"
        errors = {f.line for f in report.findings if f.severity == "error"}
        if bad:
            assert set(bad) <= errors, (bad, [(f.code, f.line) for f in report.findings])
        elif any(f.code == "unknown-format" for f in report.findings):
            # the flip renamed the first record's type (say "summary" -> "rummary"): levelsess identifies a
            # file by its first record only; see test_an_unknown_first_record_type_does_not_disown_the_file
            first = parse(after_lines[0])
            assert i == 0 and first["type"] not in _KNOWN and "sessionId" not in first
        else:  # the stdlib still reads every line as a record: then only the graph can have changed
            found = Counter((f.code, f.line, f.offset) for f in report.findings if f.code in _GRAPH)
            parsed = list(_parsed(rel))
            parsed[i] = parse(after_lines[i])
            model = expected_graph(records=_records(after_lines, parsed))
            if _sidechain_flag_changed(lines[i], after_lines, i):
                # a record left or joined the sidechains: levelsess then counts tool results differently from
                # the rule, see test_a_tool_result_anywhere_in_the_file_answers_the_last_call
                found = Counter({k: v for k, v in found.items() if k[0] != "dangling-tool-use"})
                model = type(model)(Counter({k: v for k, v in model.findings.items() if k[0] != "dangling-tool-use"}))
            assert found == model.findings
            assert bool(errors) == model.errors


def _sidechain_flag_changed(line: bytes, after_lines: list[bytes], i: int) -> bool:
    """Did the flip (which kept line ``i`` a record) make it a sidechain record, or stop it being one?"""
    return (parse(line).get("isSidechain") is True) != (parse(after_lines[i]).get("isSidechain") is True)


_KNOWN = {"user", "assistant", "system", "progress", "attachment", "summary", "file-history-snapshot", "queue-operation",
          "permission-mode", "last-prompt", "ai-title", "custom-title", "agent-name", "pr-link", "mode"}
_GRAPH = {"duplicate-uuid", "dangling-parent", "parent-elsewhere", "broken-chain", "dangling-tool-use"}


# --- the resume walk -------------------------------------------------------------------------------


def _mutate(lines: list[tuple[bytes, object]], kind: str, pick: int, other: int) -> list[tuple[bytes, object]]:
    """One change to a list of (line, parsed record): a record removed or written twice, or a parentUuid
    set to a fresh uuid, to null, or to any uuid of the file (an ancestor, a sibling, or a descendant: a cycle)."""
    chain = [i for i, (_, r) in enumerate(lines) if is_chain(r)]
    if not chain:
        return lines
    i = chain[pick % len(chain)]
    if kind == "remove":
        return lines[:i] + lines[i + 1:]
    if kind == "duplicate":
        return lines[: i + 1] + [lines[i]] + lines[i + 1:]
    line, record = lines[i]
    if not line.startswith(b'{"parentUuid":'):
        return lines
    if kind == "fresh-parent":
        parent = fresh_uuid((pick, other))
    elif kind == "null-parent":
        parent = None
    else:
        parent = lines[chain[other % len(chain)]][1]["uuid"]
    changed = set_parent(line, parent)
    return lines[:i] + [(changed, parse(changed))] + lines[i + 1:]


mutation = st.tuples(st.sampled_from(["remove", "fresh-parent", "other-parent", "other-parent", "null-parent", "duplicate"]),
                     st.integers(0, 10**6), st.integers(0, 10**6))


@pytest.mark.skipif(not MAINS, reason="no fixtures")
@SETTINGS
@given(data=st.data())
def test_the_resume_walk_agrees_with_an_independent_one(data):
    rel = data.draw(st.sampled_from(MAINS), label="transcript")
    pairs = list(zip(_lines(rel), _parsed(rel)))
    for kind, pick, other in data.draw(st.lists(mutation, min_size=1, max_size=3), label="mutations"):
        pairs = _mutate(pairs, kind, pick, other)
    lines = [line for line, _ in pairs]
    damaged = join(lines)
    with tempfile.TemporaryDirectory() as tmp:
        journal = _place(Path(tmp), rel, damaged)
        scan = scan_journal(journal, CLAUDE_CODE)
    model = expected_graph(records=_records(lines, [r for _, r in pairs]))
    found = Counter((f.code, f.line, f.offset) for f in scan.findings if f.code in _GRAPH)
    assert found == model.findings
    broken = [f for f in scan.findings if f.code == "broken-chain"]
    if broken:
        assert resume_figures(broken[0].message) == (model.reachable, model.main, model.break_line)
    if model.main is not None:  # a main conversation is left (the mutations may remove every chain record)
        assert (scan.facts.reachable, scan.facts.chain) == (model.reachable, model.main)


@pytest.mark.skipif(not MAINS, reason="no fixtures")
@pytest.mark.parametrize("rel", MAINS, ids=[m.stem[:8] for m in MAINS])
def test_removing_each_resumed_record_in_turn_breaks_the_chain_where_the_model_says(rel, tmp_path):
    """Exhaustive for the small files, every 25th record of the path for the large ones."""
    lines, parsed = list(_lines(rel)), list(_parsed(rel))
    chain = [i for i, r in enumerate(parsed) if is_chain(r)]
    step = 1 if len(chain) < 60 else 25
    for n, i in enumerate(chain[1:-1:step]):
        kept = lines[:i] + lines[i + 1:]
        journal = _place(tmp_path / str(n), rel, join(kept))
        scan = scan_journal(journal, CLAUDE_CODE)
        model = expected_graph(records=_records(kept, parsed[:i] + parsed[i + 1:]))
        assert Counter((f.code, f.line, f.offset) for f in scan.findings if f.code in _GRAPH) == model.findings, i
        shutil.rmtree(tmp_path / str(n))
