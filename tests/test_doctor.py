"""levelsess doctor on a fake home: a LevelCode store, a Cursor install and a VS Code install."""

from __future__ import annotations

import shlex

from tests.audit import no_writes
from tests.helpers import run_cli, snapshot, torn_store
from tests.importers.cursor_db import new_db, put
from tests.importers.vscode_tree import build_tree


def _home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    store, _journal = torn_store(home / ".levelcode" / "x")
    (home / ".levelcode" / "x" / "store").rename(home / ".levelcode" / "sessions")
    cursor = home / ".config" / "Cursor" / "User"
    conn = new_db(cursor / "globalStorage" / "state.vscdb")
    put(conn, "composerData:c1", {"composerId": "c1", "conversation": [{"type": 1, "text": "hi"}]})
    conn.commit()
    conn.close()
    tree = build_tree(home / "vs")
    (home / ".config" / "Code").mkdir(parents=True)
    tree["user"].rename(home / ".config" / "Code" / "User")
    return home


def test_doctor_finds_store_cursor_and_vscode_and_suggests_working_commands(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    before = snapshot(home)
    with no_writes():
        result = run_cli("doctor", "--json")
    assert snapshot(home) == before, "doctor never writes"
    report = result.json
    assert result.exit_code == 0
    (store,) = [s for s in report["stores"] if s["kind"] == "levelcode"]
    assert store["errors"] == 1 and store["codes"]["torn-tail"] == 1
    apps = {i["app"]: i for i in report["installs"]}
    assert apps["cursor"]["sessions"] == 1 and apps["cursor"]["db_bytes"] > 0
    orphaned = {w["id"]: w for w in apps["vscode"]["orphaned_workspaces"]}
    assert orphaned["ws-renamed"]["reasons"] == ["folder-missing"] and orphaned["ws-renamed"]["orphaned_sessions"] == 1
    assert orphaned["ws-live"]["unindexed"] == 1
    steps = [step.split("#")[0].strip() for step in report["next"]]
    assert any(step.startswith("levelsess fsck") and "--repair" in step for step in steps)
    assert any("--from cursor" in step for step in steps) and any("--orphans-only" in step for step in steps)
    for step in steps:  # the suggested commands work as printed
        argv = shlex.split(step)[1:]
        if "NEW_PATH" in step:
            continue
        argv += ["--store", str(tmp_path / "recovered")] if argv[0] == "import" else []
        assert run_cli(*argv).exit_code in (0, 1), step
    human = run_cli("doctor")
    assert "VS Code chats it no longer shows" in human.stdout and "ws-renamed" in human.stdout


def test_doctor_on_an_empty_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.chdir(tmp_path)
    result = run_cli("doctor", "--json")
    assert result.exit_code == 0 and result.json["stores"] == [] and result.json["installs"] == []


def _steps(result) -> list[list[str]]:
    """doctor's next steps as argument lists (the comment after a command dropped)."""
    return [shlex.split(step.split("        #")[0]) for step in result.json["next"]]


def test_every_command_doctor_prints_names_its_store_and_an_import_is_advised_only_for_what_it_lacks(tmp_path, monkeypatch):
    """Followed to the end on the real Codex fixture, with a store that is not the default: import as
    advised, then doctor advises no import; a rollout Codex no longer has is named with the restore
    that gives it back, and running that (with --yes) puts it back byte for byte."""
    import shutil

    from tests.restore.kit import CODEX

    if CODEX is None:
        import pytest

        pytest.skip("shared/fixtures is not beside the checkout")
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("LEVELSESS_HOME", raising=False)
    shutil.copytree(CODEX, home / ".codex")
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "elsewhere"

    first = run_cli("doctor", "--json", "--store", str(store))
    imports = [argv for argv in _steps(first) if argv[:2] == ["levelsess", "import"]]
    assert imports == [["levelsess", "import", "--from", "codex", "--source", str(home / ".codex"), "--store", str(store)]]
    assert run_cli(*imports[0][1:]).exit_code == 0

    after = run_cli("doctor", "--json", "--store", str(store))
    (codex,) = [i for i in after.json["installs"] if i["app"] == "codex"]
    assert codex["in_store"] == codex["sessions"] == 3
    assert not [argv for argv in _steps(after) if argv[1] in ("import", "restore")], after.json["next"]

    rollout = next((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    original = rollout.read_bytes()
    rollout.unlink()
    gone = run_cli("doctor", "--json", "--store", str(store))
    (restore,) = [argv for argv in _steps(gone) if argv[1] == "restore"]
    assert restore[-2:] == ["--store", str(store)]
    assert run_cli(*restore[1:]).exit_code == 4, "the plan first"
    assert run_cli(*restore[1:], "--yes").exit_code == 0
    assert rollout.read_bytes() == original


def test_doctor_tells_its_progress_each_step_of_a_known_total_and_finds_the_same(tmp_path, monkeypatch):
    """diagnose tells a progress line, before each tree it checks and each install it counts, how
    many steps there are in all and which one is under way (paths under the home as ~/…); what it
    finds is the same with or without it."""
    from tests.importers.test_copilot import copilot_session
    from toolkit.doctor import diagnose

    home = _home(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    copilot_session(home / ".copilot", "0d7f5c3a-9b1e-4c2d-8e6f-000000000001", tmp_path)
    told: list = []
    with no_writes():
        found = diagnose(progress=lambda total, what: told.append((total, what)))
    plain = diagnose()
    assert found.to_json() == plain.to_json()
    assert told == [(4, "checking the store (~/.levelcode/sessions)"), (4, "counting Cursor (~/.config/Cursor/User)"),
                    (4, "counting VS Code (~/.config/Code/User)"), (4, "counting Copilot CLI (~/.copilot)")]
    assert len(found.stores) + len(found.installs) == len(told)


def test_doctor_on_a_terminal_shows_the_step_under_way_and_leaves_its_report_as_it_was(tmp_path, monkeypatch):
    """On a terminal, doctor's progress line (stderr) names each step of the known total, then
    goes; what it prints after is what it prints anywhere else."""
    from tests.helpers import on_a_terminal

    home = _home(tmp_path, monkeypatch)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    code, shown = on_a_terminal("doctor", env=env, stderr_too=True)
    assert code == 0
    assert "doctor: checking the store (~/.levelcode/sessions)" in shown and "doctor: counting VS Code (~/.config/Code/User)" in shown
    assert "/3" in shown  # the store, Cursor and VS Code: three steps
    plain = run_cli("doctor").stdout
    assert "VS Code chats it no longer shows" in plain and "VS Code chats it no longer shows" in shown
