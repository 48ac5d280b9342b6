"""A session trashed from the store stays trashed: the next import leaves it out, counted, with a
``trashed`` finding; ``trash --list`` lists it; putting it back from the OS trash or
``import --include-trashed`` undoes that (issue 23)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import snapshot

from tests.importers.cursor_db import FIXTURES as SHARED_FIXTURES

FIXTURES = SHARED_FIXTURES / "claude-code"
if not FIXTURES.is_dir():
    pytest.skip(f"{FIXTURES} is not here", allow_module_level=True)


def _levelsess(*args, env: dict) -> subprocess.CompletedProcess:
    """A real process: send2trash reads the trash location from the environment at import."""
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True, env=env, check=False)


def _json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def world(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES, root)
    return env, root, tmp_path / "store", home / ".local" / "share" / "Trash"


def test_a_trashed_session_is_not_imported_again_until_asked(world):
    env, root, store, trash_dir = world
    before = snapshot(root)
    first = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env))
    victim = next(s for s in first["sessions"] if s["status"] == "created")
    path = Path(victim["path"])
    kept = path.read_bytes()
    trashed = _levelsess("trash", victim["id"], "--json", "--store", store, env=env)
    assert trashed.returncode == 0 and _json(trashed)["sessions"][0]["status"] == "trashed" and not path.exists()
    listed = _json(_levelsess("trash", "--list", "--json", "--store", store, env=env))
    assert [t["id"] for t in listed["trashed"]] == [victim["id"]] and listed["trashed"][0]["path"] == str(path)

    again = _levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env)
    report = _json(again)
    assert again.returncode == 0, report["findings"]
    assert not path.exists(), "the import did not bring it back"
    statuses = {s["id"]: s["status"] for s in report["sessions"]}
    assert statuses[victim["id"]] == "trashed", "counted, never silently vanished"
    assert len(report["sessions"]) == len(first["sessions"])
    notes = [f for f in report["findings"] if f["code"] == "trashed"]
    assert len(notes) == 1 and victim["id"] in notes[0]["message"] and notes[0]["severity"] == "warning"
    text = _levelsess("import", "--from", "claude", "--source", root, "--store", store, env=env)
    assert "1 trashed" in " ".join((text.stdout + text.stderr).decode().split())

    back = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", "--include-trashed",
                            env=env))
    assert {s["id"]: s["status"] for s in back["sessions"]}[victim["id"]] == "created" and path.exists()
    assert _json(_levelsess("trash", "--list", "--json", "--store", store, env=env))["trashed"] == []
    assert path.read_bytes().count(b"\n") == kept.count(b"\n")
    later = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env))
    assert {s["id"]: s["status"] for s in later["sessions"]}[victim["id"]] == "unchanged", "the tombstone is gone"
    assert snapshot(root) == before, "the source is never written"


def test_a_session_put_back_from_the_os_trash_is_imported_as_usual(world):
    env, root, store, trash_dir = world
    first = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env))
    victim = next(s for s in first["sessions"] if s["status"] == "created")
    path = Path(victim["path"])
    assert _levelsess("trash", victim["id"], "--store", store, env=env).returncode == 0
    (moved,) = [p for p in (trash_dir / "files").iterdir()]
    os.replace(moved, path)  # what a file manager's "put back" does
    assert _json(_levelsess("trash", "--list", "--json", "--store", store, env=env))["trashed"] == []
    again = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env))
    assert {s["id"]: s["status"] for s in again["sessions"]}[victim["id"]] == "unchanged"
    assert not [f for f in again["findings"] if f["code"] == "trashed"]


def test_a_dry_run_counts_a_trashed_session_and_writes_nothing(world):
    env, root, store, _trash = world
    first = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env))
    victim = next(s for s in first["sessions"] if s["status"] == "created")
    assert _levelsess("trash", victim["id"], "--store", store, env=env).returncode == 0
    tomb = store / ".levelsess" / "trashed.jsonl"
    data = tomb.read_bytes()
    dry = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", "--dry-run",
                           "--include-trashed", env=env))
    assert {s["id"]: s["status"] for s in dry["sessions"]}[victim["id"]] == "created"
    assert tomb.read_bytes() == data and not Path(victim["path"]).exists()


def test_the_list_s_next_line_brings_it_back_and_doctor_never_advises_importing_it(world):
    """Followed to the end: ``trash --list`` names the import that brings a trashed session back,
    with the store; doctor does not count a trashed session as one to keep."""
    import shlex

    env, root, store, _trash = world
    env = {**env, "CLAUDE_CONFIG_DIR": str(root)}
    first = _json(_levelsess("import", "--from", "claude", "--source", root, "--store", store, "--json", env=env))
    victim = next(s for s in first["sessions"] if s["status"] == "created")
    assert _levelsess("trash", victim["id"], "--store", store, env=env).returncode == 0
    doctor = _json(_levelsess("doctor", "--json", "--store", store, env=env))
    (claude,) = [i for i in doctor["installs"] if i["app"] == "claude-code"]
    assert claude["trashed"] == 1 and claude["in_store"] + claude["trashed"] == claude["sessions"]
    assert not [step for step in doctor["next"] if step.startswith("levelsess import")], doctor["next"]

    listed = _levelsess("trash", "--list", "--store", store, env=env)
    (line,) = [l for l in (listed.stdout + listed.stderr).decode().splitlines() if l.startswith("next: ")]
    argv = shlex.split(line.removeprefix("next: "))
    assert argv[:4] == ["levelsess", "import", "--from", "claude"] and argv[-2:] == ["--store", str(store)]
    back = _json(_levelsess(*argv[1:], "--source", root, "--json", env=env))
    assert [s["status"] for s in back["sessions"] if s["id"] == victim["id"]] == ["created"]
    assert Path(victim["path"]).exists()
    empty = _levelsess("trash", "--list", "--store", store, env=env)
    assert b"no session is trashed" in empty.stdout + empty.stderr
