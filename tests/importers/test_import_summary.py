"""An import's text summary of its warnings: each session's lines that became no record (a Codex
rollout's mirrors, injected context and UI bookkeeping) added up into one line, and many warnings of
one code, each in its own words, shown as the first and a count; -v and --json keep every one."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import run_cli
from tests.layouts.codex import codex_home, have_fixtures, rollouts
from toolkit.cli.keep import MANY_ALIKE, _many_alike, _skip_summary
from toolkit.findings import Finding
from toolkit.importers.base import skipped_message, skipped_tallies
from toolkit.importers.codex import WHY

_REASON = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12)
_TALLY = st.integers(1, 10**7).flatmap(lambda count: st.tuples(
    st.just(count), st.lists(st.integers(1, 10**9), min_size=min(count, 5), max_size=min(count, 5))))


@given(st.text(min_size=1, max_size=40).filter(lambda s: "\n" not in s), st.dictionaries(_REASON, _TALLY, min_size=1, max_size=6),
       st.dictionaries(_REASON, st.text(st.characters(blacklist_characters=";()\n"), max_size=50), max_size=6))
def test_a_skipped_message_reads_back_as_its_tallies(sid, skipped, why):
    message = skipped_message(sid, {reason: [count, lines] for reason, (count, lines) in skipped.items()}, why)
    assert skipped_tallies(message) == {reason: (count, why.get(reason, reason)) for reason, (count, _lines) in skipped.items()}


@pytest.mark.parametrize("message", ["holds no whole record (yet): no journal made; an import after it has one picks it up",
                                     "session x: 3 lines became no record: mirror 2 (a; line 1, 2)",  # 3 said, 2 counted
                                     "session x: 2 lines became no record: mirror 2 (a; line 1, 2) and more",
                                     "session x: 2 lines became no record: "])
def test_any_other_message_has_no_tallies(message):
    assert skipped_tallies(message) is None


def _skip(n: int, **tallies: int) -> Finding:
    return Finding("source-skipped", "warning", f"/r/rollout-{n}.jsonl", None, None,
                   skipped_message(f"codex-{n}", {reason.replace("_", "-"): [count, [1]] for reason, count in tallies.items()}, WHY))


def test_three_sessions_skips_are_one_line_that_adds_them_up_and_the_rest_stay():
    other = Finding("source-unreadable", "error", "/r/x.jsonl", 3, 10, "JSON, but not a rollout record; line not imported")
    findings = [_skip(1, mirror=2, ui_only=1), other, _skip(2, mirror=5), _skip(3, context=1_200, ui_only=4)]
    rest, line = _skip_summary(findings, verbose=False)
    assert rest == [other]
    assert line.startswith("source-skipped  x3: 1,212 source lines of 3 sessions became no record: context 1,200 (")
    assert "mirror 7 (the other stream's copy of an imported item)" in line and "ui-only 5 (the UI's own bookkeeping)" in line
    assert _skip_summary(findings, verbose=True) == (findings, None)
    assert _skip_summary(findings[:3], verbose=False) == (findings[:3], None), "two sessions: each listed"


def test_more_than_many_warnings_of_one_code_are_the_first_and_a_count():
    many = [Finding("source-skipped", "warning", f"/c/{n}", None, None, f"no session: none of its {n} bubble(s)") for n in range(MANY_ALIKE + 1)]
    few = [Finding("oversize", "warning", f"/c/o{n}", None, None, f"{n} MB") for n in range(MANY_ALIKE)]
    error = [Finding("source-unreadable", "error", f"/c/e{n}", None, None, f"e{n}") for n in range(MANY_ALIKE + 1)]
    shown, collapsed = _many_alike(many + few + error, verbose=False)
    assert shown == few + error and collapsed == [("source-skipped", many)]
    assert _many_alike(many, verbose=True) == (many, [])


@pytest.mark.skipif(not have_fixtures(), reason="needs ../shared/fixtures")
def test_a_codex_import_says_its_skipped_lines_in_one_line_whose_counts_are_the_sessions(tmp_path):
    home = codex_home(tmp_path)
    assert len(rollouts()) >= 3
    listed = run_cli("import", "--from", "codex", "--source", home, "--store", tmp_path / "store", "--json")
    assert listed.exit_code == 0, listed.stdout
    skipped = [f for f in listed.json["findings"] if f["code"] == "source-skipped"]
    assert len(skipped) == len(rollouts()), "--json keeps each session's warning"
    totals = Counter()
    for session in listed.json["sessions"]:
        totals.update(session["skipped"])
    for verbose in ((), ("-v",)):
        again = run_cli("import", "--from", "codex", "--source", home, "--store", tmp_path / "store", *verbose)
        assert again.exit_code == 0
        text = again.stdout + again.stderr
        if verbose:
            assert text.count("lines became no record") == len(rollouts()), "-v lists each session's"
            continue
        lines = [line for line in text.splitlines() if "source-skipped" in line]
        assert len(lines) == 1 and f"x{len(rollouts())}:" in lines[0], text
        assert f"{sum(totals.values()):,} source lines of {len(rollouts())} sessions became no record" in lines[0]
        for reason, count in totals.items():
            assert f"{reason} {count:,} ({WHY[reason]})" in lines[0]
        assert "each is in its journal as a source line, for restore" in lines[0]
    events = sum(journal.read_bytes().count(b'"type":"source-line"') for journal in (tmp_path / "store").rglob("*.jsonl"))
    assert events == sum(totals.values()), "what the line says: every line that became no record is in a journal"
    bare = run_cli("import", "--from", "codex", "--source", home, "--store", tmp_path / "bare", "--no-raw")
    assert "source lines of" in bare.stdout + bare.stderr and "for restore" not in bare.stdout + bare.stderr
