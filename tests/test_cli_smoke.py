"""The README's promises: demo works, --version, --help on every command, bad input is one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import make_store, run_cli


def test_demo_ends_clean():
    result = run_cli("demo", "--json")
    assert result.exit_code == 0, result.stderr
    runs = result.json["runs"]
    assert runs[0]["exit"] == 4 and runs[1]["exit"] == 1 and runs[2]["exit"] == 0
    assert {f["code"] for f in runs[0]["findings"]} >= {"torn-tail", "corrupt-index", "stale-lock", "meta-ahead"}


def test_version():
    result = run_cli("--version")
    assert result.exit_code == 0 and "levelsess" in result.stdout


@pytest.mark.parametrize("command", ["fsck", "reindex", "demo"])
def test_help_has_an_example(command):
    result = run_cli(command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout


def test_unknown_option_is_usage_error(tmp_path):
    result = run_cli("fsck", "--frobnicate", str(tmp_path))
    assert result.exit_code == 16
    assert "Traceback" not in result.stdout + result.stderr


def test_missing_path_is_operational_error(tmp_path):
    result = run_cli("fsck", str(tmp_path / "nope"))
    assert result.exit_code == 8
    assert "no such file" in result.stderr and "Traceback" not in result.stderr


def test_folder_that_is_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = run_cli("fsck", str(tmp_path))
    assert result.exit_code == 8
    assert "not a levelsess store" in result.stderr


def test_options_before_the_command(tmp_path):
    store = make_store(tmp_path / "store")
    result = run_cli("--json", "fsck", str(store))
    assert result.json["files"] == 2


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "toolkit.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and "levelsess" in out.stdout


def test_a_fifo_named_like_a_journal_does_not_hang(tmp_path):
    import os

    store = make_store(tmp_path / "store", sessions=1)
    os.mkfifo(store / "-home-ada-code-thin-ly" / "pipe.jsonl")
    result = run_cli("fsck", "--json", store)
    assert result.exit_code == 0  # not a journal: nothing in it to check or lose
    assert any(f["code"] == "not-a-journal" and "regular file" in f["message"] for f in result.json["findings"])


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_folder_named_like_a_journal_is_said_once_whoever_read_it(tmp_path, jobs):
    """The finding of a journal a forked worker could not read says what the parent's read says (its
    error comes back pickled: it read `not a journal: not a journal: ...`)."""
    store = make_store(tmp_path / "store", sessions=3)
    (store / "-home-ada-code-thin-ly" / "x.jsonl").mkdir()
    result = run_cli("fsck", "--json", "--jobs", jobs, store)
    finding = next(f for f in result.json["findings"] if f["path"].endswith("x.jsonl"))
    assert finding["code"] == "not-a-journal"
    assert finding["message"].count("not a journal") == 1 and "is a folder" in finding["message"]


def test_json_mode_gets_a_json_error_document(tmp_path):
    result = run_cli("fsck", "--json", str(tmp_path / "nope"))
    assert result.exit_code == 8
    assert result.json["error"]["type"] == "PathNotFoundError" and result.json["exit"] == 8


def test_top_level_help_explains_exit_codes():
    result = run_cli("--help")
    assert result.exit_code == 0 and "16 usage error" in result.stdout


def test_the_readme_opens_with_the_two_commands_ci_runs():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    ci = [line for line in (root / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert block == ci == ["python3 -m venv .venv && . .venv/bin/activate && python -m pip install -e '.[test]' && python -m compileall -q toolkit && levelsess demo",
                           "pytest -n auto"]
