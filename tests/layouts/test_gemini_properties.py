"""A Gemini CLI session cut at any byte (hypothesis): the check never raises; a cut inside the last
line is a torn tail and nothing else (a whole record lacking only its newline is
``unterminated-tail``); ``fsck --repair`` keeps every complete line byte-exact, saves exactly the cut
bytes outside ~/.gemini, and a second repair changes nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.layouts.claude import own_data_home
from tests.layouts.conftest import forget_open_files
from tests.layouts.gemini import SLUG, every_kind, gemini_home, line, meta, name, user
from toolkit.fsck import check_folders, plan_repair
from toolkit.stores import discover_all

SESSION = every_kind() + line({"$set": {"messages": [user("m1", "masked")]}})
SETTINGS = settings(max_examples=120, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _repair(home: Path):
    forget_open_files()
    report = check_folders(discover_all([home]))
    return report, plan_repair(report).execute()


def _tree(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(SESSION)))
def test_a_session_cut_at_any_byte_is_a_torn_tail_only_and_repair_keeps_every_whole_line(cut):
    data = SESSION[:cut]
    body, _, tail = data.rpartition(b"\n")
    body = body + b"\n" if b"\n" in data else b""
    with tempfile.TemporaryDirectory() as tmp, own_data_home() as saved:
        home = gemini_home(Path(tmp), {name(): data})
        journal = home / "tmp" / SLUG / "chats" / name()
        others = {k: v for k, v in _tree(home).items() if not k.endswith(".jsonl")}
        report, _result = _repair(home)
        errors = {f.code for f in report.findings if f.severity == "error"}
        whole = tail and SESSION[cut:cut + 1] == b"\n"  # a whole record lacking only its newline
        if not tail:
            assert errors == set(), report.findings
            assert journal.read_bytes() == data
        elif whole:
            assert errors == {"unterminated-tail"}, report.findings
            assert journal.read_bytes() == data + b"\n"
        else:
            assert errors == {"torn-tail"}, report.findings
            assert journal.read_bytes() == body, "every complete line kept byte-exact, only the cut line removed"
            assert [p.read_bytes() for p in saved.rglob("*.tail")] == [tail], "the cut bytes saved outside ~/.gemini"
        assert {k: v for k, v in _tree(home).items() if not k.endswith(".jsonl")} == others
        again = journal.read_bytes()
        report, _result = _repair(home)
        assert journal.read_bytes() == again and not {f.code for f in report.findings if f.severity == "error"}


@SETTINGS
@given(cut=st.integers(min_value=1, max_value=len(line(meta())) - 2))
def test_a_torn_metadata_line_is_reported_as_due_for_deletion_and_never_cut(cut):
    data = line(meta())[:cut] + b"\n" + line(user("a", "hello"))
    with tempfile.TemporaryDirectory() as tmp, own_data_home():
        home = gemini_home(Path(tmp), {name(): data})
        report, _result = _repair(home)
        codes = {f.code for f in report.findings}
        assert {"invalid-json", "missing-meta", "sweep-due"} <= codes, report.findings
        assert (home / "tmp" / SLUG / "chats" / name()).read_bytes() == data
