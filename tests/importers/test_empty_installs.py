"""An install with no chat yet imports nothing and says so, exit 0, for every tool the nightly
keeps: a Claude Code root whose projects/ folder is empty is such an install (it was "not an
editor's chat history", exit 8, every night), as an empty Codex home or Gemini folder already
was.  A folder that is no install stays an error, and nothing is written either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli


def _made(home: Path, *folders: str) -> None:
    for folder in folders:
        (home / folder).mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize("app, source, folders", [
    ("claude", ".claude", [".claude/projects"]),
    ("claude", ".claude/projects", [".claude/projects"]),
    ("claude", ".claude", [".claude/projects/.hidden", ".claude/todos"]),  # nothing a project folder
    ("claude", "config", ["config/projects"]),  # $CLAUDE_CONFIG_DIR's root, not named .claude
    ("claude", None, [".claude/projects"]),  # no --source: the install doctor finds
    ("codex", ".codex", [".codex/sessions"]),
    ("gemini", ".gemini", [".gemini/tmp"]),
])
def test_an_install_with_no_chat_yet_imports_nothing_and_exits_0(isolated_home, monkeypatch, tmp_path, app, source, folders):
    _made(isolated_home, *folders)
    if source == "config":
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(isolated_home / "config"))
    store = tmp_path / "store"
    args = ["import", "--from", app, "--store", store, "--json"] + (["--source", isolated_home / source] if source else [])
    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["sessions"] == [] and report["findings"] == [] and report["exit"] == 0
    assert not store.exists() or not any(store.rglob("*.jsonl"))
    again = run_cli(*args)
    assert again.exit_code == 0 and json.loads(again.stdout)["sessions"] == []


@pytest.mark.parametrize("folders, source", [
    (["other"], "other"),  # an empty folder that is no install
    (["other/projects"], "other/projects"),  # named like one, in no Claude Code root
    (["somewhere/projects/notes"], "somewhere"),  # a folder of folders that are no projects
])
def test_a_folder_that_is_no_claude_install_is_still_refused_with_what_to_pass(isolated_home, tmp_path, folders, source):
    _made(isolated_home, *folders)
    if source == "somewhere":
        (isolated_home / "somewhere" / "projects" / "notes" / "a.txt").write_text("x")
    store = tmp_path / "store"
    result = run_cli("import", "--from", "claude", "--source", isolated_home / source, "--store", store)
    assert result.exit_code == 8
    assert "expected a Claude Code root" in result.stderr and "hint: pass --source one of the places named above" in result.stderr
    assert not store.exists()
