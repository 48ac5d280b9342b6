"""Every command that takes a PATH, on a clean copy of the real Claude Code fixtures: it runs, it
exits 0, and Claude Code's tree is exactly as it was (no byte, no new file, no `.levelsess/`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"

if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)

COMMANDS = [("fsck",), ("fsck", "--repair"), ("fsck", "--salvage", "--yes"), ("fsck", "--relink", "--yes"),
            ("fsck", "--strict"), ("reindex",), ("reindex", "--check"), ("migrate",), ("migrate", "--dry-run"),
            ("ls",), ("ls", "--verify"), ("locks",)]


@pytest.mark.parametrize("where", ["root", "projects", "project", "session"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_clean_claude_code_tree_is_left_exactly_as_it_was(tmp_path, command, where):
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES, root / "projects")
    project = next(p for p in sorted((root / "projects").iterdir()) if any(p.glob("*/subagents/*.jsonl")))
    target = {"root": root, "projects": root / "projects", "project": project,
              "session": next(project.glob("*.jsonl"))}[where]
    before = snapshot(tmp_path)
    result = run_cli(*command, target)
    assert "Traceback" not in result.stdout + result.stderr
    if command[0] == "fsck" and command[-1] == "--strict":
        assert result.exit_code in (0, 4)  # --strict turns the fixtures' warnings (dangling-tool-use) into errors
    else:
        assert result.exit_code == 0, result.stdout + result.stderr
    assert snapshot(tmp_path) == before


def test_show_and_export_render_every_fixture_session(tmp_path):
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES, root / "projects")
    sessions = run_cli("ls", "--json", root).json["sessions"]
    assert len(sessions) == len(list((root / "projects").glob("*/*.jsonl")))
    for session in sessions:
        shown = run_cli("show", session["id"], "--in", root)
        assert shown.exit_code == 0 and shown.stdout.startswith("# ")
        exported = tmp_path / f"{session['id']}.jsonl"
        assert run_cli("export", session["id"], "--in", root, "-f", "jsonl", "-o", exported).exit_code == 0
        assert exported.read_bytes() == Path(session["path"]).read_bytes()
        document = run_cli("export", session["id"], "--in", root, "-f", "json").json
        assert len(document["records"]) == sum(1 for line in Path(session["path"]).read_bytes().split(b"\n") if line)
