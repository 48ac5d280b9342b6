"""A session's subagent transcripts are listed from the names of its ``subagents`` folder, in the
order the paths themselves sort (toolkit/layouts/claude_records.py ``_subagents``): every file
named ``agent-*.jsonl``, nothing else, whatever else the folder holds."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from toolkit.layouts.claude_records import SUBAGENTS, _subagents

NAMES = st.lists(st.one_of(
    st.builds("agent-{}{}".format, st.text("aAbB0_-.", max_size=6), st.sampled_from([".jsonl", ".JSONL", ".jsonl.tmp", ".meta.json", ""])),
    st.sampled_from(["agent-.jsonl", "Agent-a.jsonl", ".agent-a.jsonl", "x.jsonl", "agent-a..jsonl"])), max_size=12, unique=True)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=NAMES, folders=st.sets(st.integers(0, 11), max_size=3))
def test_the_subagents_are_the_agent_jsonl_files_sorted_as_paths(tmp_path, names, folders):
    session = tmp_path / "s"
    shutil.rmtree(session, ignore_errors=True)
    (session / SUBAGENTS).mkdir(parents=True)
    for n, name in enumerate(names):
        if n in folders:
            (session / SUBAGENTS / name).mkdir()  # a folder named like one is listed as the paths were (its read says why)
        else:
            (session / SUBAGENTS / name).write_bytes(b"{}\n")
    expected = sorted(p for p in (session / SUBAGENTS).iterdir() if p.name.startswith("agent-") and p.suffix == ".jsonl")
    assert _subagents(session) == expected
    assert all(isinstance(p, Path) for p in _subagents(session))


def test_no_subagents_folder_or_a_file_in_its_place_is_none(tmp_path):
    assert _subagents(tmp_path / "missing") == []
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / SUBAGENTS).write_bytes(b"")
    assert _subagents(tmp_path / "s") == []
