"""Output a person reads: import cards headed by title and id, alike warnings as one line, ASCII
bullets where the encoding is not UTF-8, the demo's "did" lines under its repair step, and a
project that is simply not on this machine said so (not "orphaned in the editor")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli
from tests.test_counts import FIXTURES
from toolkit.importers.uris import NOT_HERE, folder_status

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "80", **(env or {})}
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True, env=environ, timeout=120)


@pytest.fixture
def claude_root(tmp_path):
    shutil.copytree(FIXTURES / "claude-code" / "projects", tmp_path / ".claude" / "projects")
    return tmp_path / ".claude"


def test_import_cards_are_headed_by_title_and_id(claude_root, tmp_path):
    result = _cli("import", "--from", "claude", "--source", claude_root, "--store", tmp_path / "s", "--dry-run")
    heads = [line for line in result.stdout.decode().splitlines() if line.startswith("\u2022 ")]
    assert heads and all(" claude-" in line for line in heads), heads[:3]
    assert not any(line.split()[1:2] == line.split()[2:3] for line in heads)  # never "• 127  127"


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "ascii"},
                                 {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}])
def test_a_terminal_that_cannot_show_a_bullet_gets_an_ascii_one(claude_root, tmp_path, env):
    result = _cli("import", "--from", "claude", "--source", claude_root, "--store", tmp_path / "s", "--dry-run", env=env)
    text = result.stdout.decode("latin-1")
    assert result.returncode == 0 and "\\u2022" not in text and "\u2022" not in text
    assert any(line.startswith("* ") for line in text.splitlines())


def test_alike_warnings_are_one_line_with_a_count(tmp_path):
    project = tmp_path / ".claude" / "projects" / "-home-x-p"
    project.mkdir(parents=True)
    for n in range(5):  # five empty transcripts (a session opened and closed at once)
        (project / f"0000000{n}-1111-4222-8333-444444444444.jsonl").write_bytes(b"")
    result = run_cli("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", tmp_path / "s")
    lines = [line for line in result.stdout.splitlines() if "source-skipped" in line]
    assert len(lines) == 1 and "x5" in lines[0], result.stdout
    verbose = run_cli("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", tmp_path / "s", "-v")
    assert verbose.stdout.count("source-skipped") == 5


def test_the_demo_says_what_it_did_under_the_repair_step():
    out = _cli("demo").stdout.decode()
    check, repair = out.index("(1. check)"), out.index("(2. repair)")
    did = [n for n, line in enumerate(out.splitlines()) if line.strip().startswith("did ")]
    assert did and all(out.splitlines()[n] for n in did)
    assert check < repair < out.index("  did ")


def test_a_project_whose_home_is_not_here_is_not_orphaned(claude_root, tmp_path):
    result = run_cli("import", "--from", "claude", "--source", claude_root, "--store", tmp_path / "s", "--dry-run", "--json")
    sessions = result.json["sessions"]
    assert not any(s["orphaned"] for s in sessions)  # the fixtures' /Ftuwt/..., /loru/... are another machine's
    assert any(NOT_HERE in s["orphan"] for s in sessions)
    human = run_cli("import", "--from", "claude", "--source", claude_root, "--store", tmp_path / "s", "--dry-run")
    assert "orphaned in the editor" not in human.stderr and "not on this machine" in human.stderr


def test_a_missing_folder_in_a_home_that_is_here_is_orphaned(tmp_path):
    assert folder_status(str(tmp_path / "gone" / "app")) == ("orphaned", ["folder-missing"])
    assert folder_status(str(tmp_path)) == ("live", [])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="abcxyz-_", min_size=1, max_size=8), min_size=1, max_size=4))
def test_any_path_under_a_home_that_is_not_here_is_not_on_this_machine(parts):
    for top in ("/home/levelsess-nobody-here", "/Users/levelsess-nobody-here", "/levelsess-no-such-root"):
        assert folder_status("/".join([top, *parts])) == ("unknown", [NOT_HERE])
