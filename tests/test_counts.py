"""doctor, import and ls count the same sessions the same way (toolkit/counts.py), on the real
fixtures: doctor's number for an install is what `import --dry-run` of it would write, and
what `ls` lists in the store once it is imported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.test_copilot import copilot_session
from tests.importers.vscode_tree import build_tree

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
if not FIXTURES.is_dir():
    FIXTURES = Path("/work/shared/fixtures")

FROM = {"claude-code": "claude", "codex": "codex", "cursor": "cursor", "vscode": "vscode", "copilot": "copilot"}
PREFIX = {"claude-code": "claude-", "codex": "codex-", "cursor": "cursor-", "vscode": "vscode-", "copilot": "copilot-"}


def fixture_home(home: Path) -> Path:
    """A home holding a copy of every real fixture, where each tool keeps its files."""
    shutil.copytree(FIXTURES / "claude-code" / "projects", home / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex", home / ".codex")
    cursor = home / ".config" / "Cursor" / "User"
    (cursor / "workspaceStorage" / "ws1").mkdir(parents=True)
    (cursor / "globalStorage").mkdir(parents=True)
    shutil.copy(FIXTURES / "cursor" / "legacy-workspace-2024-11.state.vscdb", cursor / "workspaceStorage" / "ws1" / "state.vscdb")
    shutil.copy(FIXTURES / "cursor" / "synthetic-global-nulls.state.vscdb", cursor / "globalStorage" / "state.vscdb")
    tree = build_tree(home / "vs")
    (home / ".config" / "Code").mkdir(parents=True)
    tree["user"].rename(home / ".config" / "Code" / "User")
    for n in range(2):  # Copilot CLI (SOURCES-AGENTS §4): ~/.copilot/session-state/<id>/events.jsonl
        copilot_session(home / ".copilot", f"0000000{n}-1111-4222-8333-444444444444", home / "code" / "app")
    return home


@pytest.fixture
def home(isolated_home, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    return fixture_home(isolated_home)


def test_doctor_counts_what_import_would_write_for_every_install(home):
    doctor = run_cli("doctor", "--json").json
    installs = {i["app"]: i for i in doctor["installs"]}
    assert set(FROM) <= set(installs)
    for app, name in FROM.items():
        dry = run_cli("import", "--from", name, "--source", installs[app]["user"], "--dry-run", "--json").json
        assert installs[app]["sessions"] == len(dry["sessions"]) == installs[app]["import"]["sessions"], app
        assert installs[app]["sessions"] > 0, app
    assert installs["cursor"]["sessions"] > 1  # every era: chat tabs of the workspace DB too, not only composerData
    claude = installs["claude-code"]["import"]
    assert claude["kinds"]["subagent"] > 0 and sum(claude["kinds"].values()) == claude["sessions"]


def test_ls_lists_what_import_wrote_and_doctor_says_it_is_kept(home, tmp_path):
    store = tmp_path / "store"
    doctor = {i["app"]: i for i in run_cli("doctor", "--json", "--store", store).json["installs"]}
    for app, name in FROM.items():
        result = run_cli("import", "--from", name, "--source", doctor[app]["user"], "--store", store, "--json")
        assert result.exit_code in (0, 4), result.stderr
        wrote = {s["id"] for s in result.json["sessions"] if s["status"] == "created"}
        assert len(wrote) == doctor[app]["sessions"], app
    listed = run_cli("ls", "--store", store, "--limit", "0", "--json").json
    for app, prefix in PREFIX.items():
        assert sum(s["id"].startswith(prefix) for s in listed["sessions"]) == doctor[app]["sessions"], app
    again = {i["app"]: i for i in run_cli("doctor", "--json", "--store", store).json["installs"]}
    assert again["codex"]["sessions"] == again["codex"]["in_store"]
    human = run_cli("doctor", "--store", store).stdout
    assert "files" in human  # a tool tree's health row counts files read, and says so


def test_a_count_in_worker_processes_is_the_serial_count(home, tmp_path):
    """doctor counts a large install with forked workers (count_import's jobs): the same sessions,
    in the same order, with the same kinds and findings as one process counts them, whatever
    unit each worker took (the fixtures and a Gemini CLI folder; a rollout with a damaged line)."""
    from tests.layouts.gemini import every_kind, gemini_home, name
    from toolkit.counts import count_import

    rollout = next((home / ".codex").rglob("rollout-*.jsonl"))
    shutil.copy(rollout, rollout.with_name(rollout.name.replace("rollout-", "rollout-9")))
    damaged = rollout.read_bytes().split(b"\n")
    damaged.insert(2, b"\xff\xfe not json")
    rollout.write_bytes(b"\n".join(damaged))
    gemini = gemini_home(tmp_path / "g", {name(f"{n:08x}-0000-4000-8000-000000000000"): every_kind(f"{n:08x}-0000-4000-8000-000000000000")
                                          for n in range(9)})
    for app, source in (("claude", home / ".claude"), ("codex", home / ".codex"), ("gemini", gemini)):
        serial = count_import(app, source, jobs=1)
        assert serial.sessions > 1 and serial.problem is None, app
        for jobs in (2, 3):
            forked = count_import(app, source, jobs=jobs)
            assert (forked.to_json(), forked.ids) == (serial.to_json(), serial.ids), (app, jobs)
