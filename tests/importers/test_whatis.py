"""import --source names what is wrong with the source: missing, another tool's folder (which one,
and the import that reads it), or no install of that app on this machine."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.helpers import run_cli
from tests.test_counts import fixture_home
from toolkit.importers.whatis import identify

APPS = ["claude", "codex", "cursor", "vscode", "copilot", "gemini", "opencode"]
NAMES = {"claude": "Claude Code", "codex": "Codex CLI", "cursor": "Cursor", "vscode": "VS Code", "copilot": "Copilot CLI",
         "gemini": "Gemini CLI", "opencode": "OpenCode"}


@pytest.mark.parametrize("app", APPS)
def test_a_source_that_is_not_there_is_said_to_be_missing(tmp_path, app):
    result = run_cli("import", "--from", app, "--source", tmp_path / "nonexistent", "--store", tmp_path / "s", "--dry-run")
    assert result.exit_code == 8
    assert "nothing at that path" in result.stderr and "--store" not in result.stderr
    assert NAMES[app] in result.stderr  # where that app keeps its chats
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("app", APPS)
def test_no_install_found_names_the_app_and_where_it_looked(isolated_home, tmp_path, app, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(isolated_home / ".local" / "state"))
    result = run_cli("import", "--from", app, "--store", tmp_path / "s")
    assert result.exit_code == 16 and f"no {NAMES[app]}" in result.stderr and "looked for" in result.stderr
    assert "--source" in result.stderr
    document = run_cli("import", "--from", app, "--store", tmp_path / "s", "--json").json
    assert document["exit"] == 16 and NAMES[app] in document["error"]["message"]


WRONG = [("claude", ".codex", "Codex CLI home", "codex"), ("codex", ".claude", "Claude Code root", "claude"),
         ("claude", ".copilot", "Copilot CLI home", "copilot"), ("codex", ".config/Code/User", "VS Code", "vscode"),
         ("copilot", ".config/Cursor/User", "Cursor", "cursor"), ("vscode", ".claude", "Claude Code root", "claude")]


@pytest.mark.parametrize(("app", "folder", "what", "right"), WRONG)
def test_another_tools_folder_is_named_and_the_import_that_reads_it_works(isolated_home, tmp_path, app, folder, what, right):
    home = fixture_home(isolated_home)
    result = run_cli("import", "--from", app, "--source", home / folder, "--store", tmp_path / "s", "--dry-run")
    assert result.exit_code == 8 and what in result.stderr, result.stderr
    (command,) = re.findall(r"`(levelsess [^`]+)`", result.stderr)
    assert f"--from {right} " in command
    followed = run_cli(*shlex.split(command)[1:], "--store", tmp_path / "s", "--dry-run", "--json")
    assert followed.exit_code in (0, 4) and followed.json["sessions"], command


def test_identify_knows_each_tool_and_nothing_else(isolated_home, tmp_path):
    home = fixture_home(isolated_home)
    assert identify(home / ".claude").apps == ("claude",)
    assert identify(home / ".claude" / "projects").apps == ("claude",)
    assert identify(home / ".codex").apps == ("codex",)
    assert set(identify(home / ".config" / "Cursor" / "User").apps) == {"cursor", "vscode"}
    assert identify(home / ".copilot").apps == ("copilot",)
    assert identify(tmp_path / "missing") is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert identify(plain) is None
