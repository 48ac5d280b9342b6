"""Output a person reads: import cards headed by title and id, alike warnings as one line, ASCII
bullets where the encoding is not UTF-8, the demo's "did" lines under its repair step, and a
project that is simply not on this machine said so (not "orphaned in the editor")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
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


def _import_on_a_terminal(claude_root, store, *extra):
    from tests.helpers import on_a_terminal

    return on_a_terminal("import", "--from", "claude", "--source", str(claude_root), "--store", str(store), *extra,
                         env={"COLUMNS": "100", "NO_COLOR": "1"}, stderr_too=True)


def test_import_on_a_terminal_draws_a_bar_with_the_bytes_it_will_read(claude_root, tmp_path):
    code, shown = _import_on_a_terminal(claude_root, tmp_path / "s")
    assert code == 0
    readings = re.findall(r"importing from claude\s.*?(\d+\.\d)/(\d+\.\d) MB", shown)
    assert readings, shown[:500]
    totals = {total for _done, total in readings}
    assert len(totals) == 1  # the total is known from the start, and never changes
    assert readings[-1][0] == readings[-1][1]  # it ends full
    from toolkit.importers import source_bytes

    assert f"{source_bytes('claude', [claude_root]) / 1e6:.1f}" == totals.pop()


@pytest.mark.parametrize("extra", [("--json",), ("-q",)])
def test_import_draws_no_bar_for_a_script_or_with_quiet(claude_root, tmp_path, extra):
    code, shown = _import_on_a_terminal(claude_root, tmp_path / "s", *extra)
    assert code == 0 and "importing from" not in shown


def test_import_draws_no_bar_where_stderr_is_not_a_terminal(claude_root, tmp_path):
    result = _cli("import", "--from", "claude", "--source", claude_root, "--store", tmp_path / "s")
    assert result.returncode == 0 and b"importing from" not in result.stderr and b"\r" not in result.stderr


@pytest.mark.parametrize("tool, app", [("claude-code", "claude"), ("codex", "codex")])
def test_what_an_import_reports_reading_adds_up_to_its_total(tmp_path, tool, app):
    from toolkit.importers import load, run_import, source_bytes

    source = tmp_path / tool
    shutil.copytree(FIXTURES / tool, source)
    read = []
    run_import(app, [source], tmp_path / "store", load(app).Options(), dry_run=True, read=read.append)
    assert read and all(n >= 0 for n in read) and sum(read) == source_bytes(app, [source]) > 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["create", "append", "as kept"]), st.integers(0, 10**9)), min_size=1, max_size=5))
@example([("create", 1), ("append", 2)])
def test_a_count_heading_a_card_says_what_it_counts(rows):
    """A card (a table too wide for the terminal, one block per row) headed by a bare number says what
    it counts: ``• create  2,000 bytes``, never ``• create  2,000`` (restore's plan read that way), and
    ``1 byte`` (doctor's card of one Copilot session read ``1 sessions``)."""
    import io

    from rich.console import Console
    from rich.table import Table

    from toolkit.report import print_table

    table = Table()
    for column in ("session", "file", "action", "bytes"):
        table.add_column(column)
    for action, size in rows:
        table.add_row("claude-" + "0" * 36, "/home/ada/.claude/projects/-home-ada-code-thin-ly/" + "0" * 36 + ".jsonl",
                      action, f"{size:,}")
    out = io.StringIO()
    print_table(Console(file=out, width=40, no_color=True), table)
    heads = [line for line in out.getvalue().splitlines() if line.startswith(("\u2022 ", "* "))]
    assert heads == [f"{line[:1]} {action}  {size:,} byte{'' if size == 1 else 's'}" for line, (action, size) in zip(heads, rows)]
