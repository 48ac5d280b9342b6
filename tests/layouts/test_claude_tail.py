"""A Claude Code transcript cut at any byte (kill -9, power loss) is repaired by removing only the
cut-off record, saved first; whole records, nested content blocks and all, are never mistaken for
the tail's garbage or kept as records of their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"

if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)
SOURCES = sorted(FIXTURES.glob("*/*.jsonl"), key=lambda p: p.stat().st_size)[:6]  # the small ones: fast


def _parses(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except ValueError:
        return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(SOURCES), where=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_a_transcript_cut_anywhere_is_repaired_to_its_whole_records(tmp_path_factory, isolated_home, source, where):
    project = tmp_path_factory.mktemp("cut") / "projects" / "-p"
    project.mkdir(parents=True)
    original = source.read_bytes()
    cut = int(len(original) * where)
    journal = project / source.name
    journal.write_bytes(original[:cut])
    body_end = original.rfind(b"\n", 0, cut) + 1
    tail = original[body_end:cut]
    result = run_cli("fsck", "--json", "--repair", journal)
    after = journal.read_bytes()
    if not tail.strip(b" \t\r\n\0"):
        assert after in (original[:cut], original[:body_end])
    elif _parses(tail):  # a whole record that only lost its newline: kept, newline added
        assert result.exit_code == 1 and after == original[:cut] + b"\n"
    else:
        assert result.exit_code == 1, result.stdout
        assert after == original[:body_end], "exactly the cut-off record goes"
        saved = [Path(f["saved_to"]) for f in result.json["findings"] if f["code"] == "torn-tail"]
        assert saved and saved[0].read_bytes() == tail
        assert not str(saved[0]).startswith(str(project.parent)), "saved outside Claude Code's tree"
    assert after == original[: len(after)] or after == original[:cut] + b"\n"
    again = run_cli("fsck", "--json", "--repair", journal)
    assert again.exit_code == 0 and journal.read_bytes() == after


def test_salvage_of_a_cut_record_joined_to_the_next_keeps_only_top_level_records(tmp_path, isolated_home):
    source = next(p for p in SOURCES if p.stat().st_size > 20_000)
    lines = source.read_bytes().split(b"\n")[:-1]
    i = next(i for i, line in enumerate(lines[3:], 3) if b'"content":[{"type":"' in line)  # a record with content blocks
    cut = lines[i][: int(len(lines[i]) * 0.8)]
    damaged = lines[:i] + [cut + lines[i + 1]] + lines[i + 2:]
    project = tmp_path / "projects" / "-p"
    project.mkdir(parents=True)
    journal = project / source.name
    journal.write_bytes(b"\n".join(damaged) + b"\n")
    found = run_cli("fsck", "--json", journal).json["findings"]
    errors = {(f["code"], f["line"]) for f in found if f["severity"] == "error"}
    assert ("spliced-records", i + 1) in errors
    assert {code for code, _ in errors} <= {"spliced-records", "dangling-parent", "broken-chain"}  # its child lost its parent
    salvaged = run_cli("fsck", "--json", "--salvage", "--yes", journal)
    assert salvaged.exit_code & 1  # and 4 when the lost record was a parent: the chain is left for --relink
    left = {f["code"] for f in salvaged.json["findings"] if f["severity"] == "error" and not f["repaired"]}
    assert left <= {"dangling-parent", "broken-chain"}, left
    kept = journal.read_bytes().split(b"\n")[:-1]
    assert kept == lines[:i] + lines[i + 1:], "the next record kept whole; no content block became a record"
    shutil.rmtree(tmp_path / "projects")
