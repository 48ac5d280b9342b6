"""A file that ends in lines of NUL bytes (an interrupted append on NTFS or ext4: a valid record,
then kilobytes of NULs with a newline among them, SOURCES-AGENTS §1.12, #76059) holds no record
after its last one: the whole run is one torn tail, saved and cut.  NULs before a later record
stay `nul-padding`, for a person or salvage; blank lines alone stay warnings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG, make_store, run_cli

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"


LAYOUTS = ["levelcode", "claude"] if FIXTURES.is_dir() else ["levelcode"]  # Claude Code's from shared/ fixtures


def _levelcode(tmp_path: Path) -> Path:
    store = make_store(tmp_path / "store", sessions=1)
    return next((store / PROJECT_SLUG).glob("*.jsonl"))


def _claude(tmp_path: Path) -> Path:
    source = next(FIXTURES.glob("*/d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"), None)
    if source is None:
        pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)")
    journal = tmp_path / ".claude" / "projects" / "-p" / source.name
    journal.parent.mkdir(parents=True)
    shutil.copyfile(source, journal)
    return journal


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(LAYOUTS),
       runs=st.lists(st.tuples(st.integers(1, 3000), st.sampled_from([b"\n", b"\r\n", b" \n"])), min_size=1, max_size=4),
       last=st.sampled_from([b"", b"\0" * 500, b'{"kind":"user","t":"x","content":"cu', b'{"parentUuid":"3f']))
def test_nul_lines_that_end_the_file_are_one_torn_tail(tmp_path_factory, layout, runs, last):
    tmp = tmp_path_factory.mktemp("nul")
    journal = _levelcode(tmp) if layout == "levelcode" else _claude(tmp)
    whole = journal.read_bytes()
    filler = b"".join(b"\0" * n + end for n, end in runs) + last
    journal.write_bytes(whole + filler)
    check = run_cli("fsck", "--json", journal).json["findings"]
    errors = [(f["code"], f["offset"]) for f in check if f["severity"] == "error"]
    assert errors == [("torn-tail", len(whole))], check
    repaired = run_cli("fsck", "--json", "--repair", journal)
    assert repaired.exit_code == 1 and journal.read_bytes() == whole
    saved = [Path(f["saved_to"]) for f in repaired.json["findings"] if f["code"] == "torn-tail"]
    assert saved[0].read_bytes() == filler
    assert run_cli("fsck", "--json", journal).exit_code == 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nul_lines_before_a_later_record_are_still_nul_padding_and_left_alone(tmp_path, layout):
    journal = _levelcode(tmp_path) if layout == "levelcode" else _claude(tmp_path)
    lines = journal.read_bytes().split(b"\n")
    damaged = b"\n".join(lines[:-2] + [b"\0" * 600] + lines[-2:])
    journal.write_bytes(damaged)
    result = run_cli("fsck", "--json", "--repair", journal)
    assert "nul-padding" in {f["code"] for f in result.json["findings"]}
    assert result.exit_code == 4 and journal.read_bytes() == damaged


def test_blank_lines_at_the_end_stay_warnings(tmp_path):
    journal = _levelcode(tmp_path)
    journal.write_bytes(journal.read_bytes() + b"\n \n\n")
    result = run_cli("fsck", "--json", journal)
    assert result.exit_code == 0 and {f["code"] for f in result.json["findings"]} == {"blank-line"}
