"""How levelsess tells a Claude Code or Codex CLI process from its command line, and which project
folder a Claude Code working folder writes to (SOURCES-AGENTS §1.2), on any platform."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolkit import live
from toolkit.layouts.claude_code import project_slug, same_project

SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
THREAD = "019d781a-be34-7041-abb1-577f9360b907"


@pytest.mark.parametrize(("argv", "tool"), [
    (["claude"], "claude-code"),
    (["/home/a/.local/bin/claude", "--resume", SESSION], "claude-code"),
    (["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"], "claude-code"),
    (["/usr/bin/node", "--no-warnings", "/home/a/.npm-global/bin/claude"], "claude-code"),
    (["bun", "/home/a/.bun/bin/claude"], "claude-code"),
    (["codex", "resume", THREAD], "codex"),
    (["/opt/codex-aarch64-apple-darwin"], "codex"),
    (["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"], "codex"),
    (["node", "server.js"], None),
    (["node"], None),
    (["python3", "claude"], None),
    (["Claude"], None),  # Claude.app's binary on macOS: the desktop app, not Claude Code
    (["claude-desktop"], None),
    ([], None),
])
def test_tool_of_a_command_line(argv, tool):
    assert live.tool_of(argv) == tool


def test_a_command_line_names_a_session_by_its_id_only():
    proc = live.ToolProcess(1, "claude-code", ("claude", f"--resume={SESSION.upper()}"), "/w")
    assert proc.names(SESSION)
    assert not proc.names("0e2a4b11-5c3d-4e6f-8a9b-0c1d2e3f4a5b")
    assert not live.ToolProcess(1, "claude-code", ("claude", "notes"), "/w").names("notes"), "a stem that is no id"
    assert not live.ToolProcess(1, "claude-code", (SESSION,), "/w").names(SESSION), "argv[0] is the program"


@pytest.mark.parametrize(("cwd", "folder"), [  # the table of SOURCES-AGENTS §1.2
    ("/Users/alice/src/app", "-Users-alice-src-app"),
    ("/home/alice/my_app.v2", "-home-alice-my-app-v2"),
    ("/home/alice/.dotfiles", "-home-alice--dotfiles"),
    ("C:\\Users\\alice\\.claude", "C--Users-alice--claude"),
    ("X:\\03 ACG\\Docs", "X--03-ACG-Docs"),
    ("D:\\OneDrive\\16 - Notes", "D--OneDrive-16---Notes"),
    ("C:\\repo\\.claude\\worktrees\\blue-fox", "C--repo--claude-worktrees-blue-fox"),
    ("/home/ada/caf\u00e9", "-home-ada-caf-"),
    ("/home/ada/\U0001f600", "-home-ada---"),  # a surrogate pair: two code units
])
def test_project_slug_follows_claude_codes_rule(cwd, folder):
    assert project_slug(cwd) == folder
    assert same_project(project_slug(cwd), folder)


def test_a_drive_letter_matches_in_either_case_and_nothing_else_does():
    assert same_project("c--Users-ada-app", "C--Users-ada-app")
    assert not same_project("-home-ada-App", "-home-ada-app")
    assert not same_project("-home-ada-app", "-home-ada-app-sub")


@given(st.text(min_size=1, max_size=400))
def test_a_slug_has_one_dash_or_character_per_utf16_unit_and_long_ones_match_by_prefix(cwd):
    slug = project_slug(cwd)
    assert re.fullmatch(r"[A-Za-z0-9-]*", slug)
    assert len(slug) == len(cwd.encode("utf-16-le", "surrogatepass")) // 2
    if len(slug) > 200:  # Claude Code cuts it and adds a hash of its own
        assert same_project(slug, slug[:200] + "-1x2y3z")
        assert not same_project(slug, slug[:199] + "_-1x2y3z")
    else:
        assert same_project(slug, slug)
