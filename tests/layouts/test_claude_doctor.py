"""`doctor` finds every Claude Code install and says what its next start-up's cleanup deletes."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"

if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)


def _install(root: Path, days_old: dict[str, int] | None = None) -> list[Path]:
    shutil.copytree(FIXTURES, root / "projects")
    mains = sorted(p for p in (root / "projects").glob("*/*.jsonl"))
    now = time.time()
    for i, path in enumerate(mains):
        age = (days_old or {}).get(path.stem, 45 if i % 2 else 1)
        os.utime(path, (now - age * 86400, now - age * 86400))
    return mains


def _empty(root: Path) -> Path:
    folder = root / "no-workspaces-here"
    folder.mkdir(exist_ok=True)
    return folder


def test_doctor_counts_what_the_default_cleanup_deletes(isolated_home):
    mains = _install(isolated_home / ".claude")
    before = snapshot(isolated_home / ".claude")
    result = run_cli("doctor", "--json", _empty(isolated_home))
    assert snapshot(isolated_home / ".claude") == before, "doctor is read-only"
    claude = [i for i in result.json["installs"] if i["app"] == "claude-code"]
    assert len(claude) == 1 and claude[0]["import"]["kinds"]["session"] == len(mains)
    assert claude[0]["sessions"] == len(mains) + claude[0]["import"]["kinds"]["subagent"], "what import would write"
    retention = claude[0]["retention"]
    assert retention["cleanupPeriodDays"] == 30 and "default" in retention["from"]
    assert retention["due_at_next_start"] == len(mains) // 2
    store = [s for s in result.json["stores"] if s["kind"] == "claude-code"]
    assert store and store[0]["errors"] == 0
    assert any("cleanupPeriodDays (30)" in step and "cp -a" in step for step in result.json["next"])


def test_doctor_reads_cleanup_period_days_and_claude_config_dir(isolated_home, monkeypatch, tmp_path):
    root = tmp_path / "elsewhere" / "claude-config"
    _install(root)
    (root / "settings.json").write_text('{"cleanupPeriodDays": 99999}')
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    result = run_cli("doctor", "--json", _empty(tmp_path))
    claude = [i for i in result.json["installs"] if i["app"] == "claude-code"]
    assert [i["user"] for i in claude] == [str(root)]
    assert claude[0]["retention"]["cleanupPeriodDays"] == 99999 and claude[0]["retention"]["due_at_next_start"] == 0
    assert not any("cleanupPeriodDays" in step for step in result.json["next"])
    human = run_cli("doctor", _empty(tmp_path))
    assert "Claude Code" in human.stdout and "99999" in human.stdout  # a narrow cell may wrap the note


def test_a_corrupt_settings_file_falls_back_to_the_default_and_says_so(isolated_home):
    _install(isolated_home / ".claude")
    (isolated_home / ".claude" / "settings.json").write_text("{not json")
    claude = [i for i in run_cli("doctor", "--json", _empty(isolated_home)).json["installs"] if i["app"] == "claude-code"]
    assert claude[0]["retention"]["cleanupPeriodDays"] == 30 and "cannot be read" in claude[0]["retention"]["from"]


def test_doctor_says_how_many_due_sessions_the_store_keeps_and_its_advice_works(isolated_home, tmp_path):
    """Follow the "next" line: the import it names keeps every due session, and doctor then says so."""
    import shlex

    mains = _install(isolated_home / ".claude")
    store = tmp_path / "store"
    result = run_cli("doctor", "--json", "--store", str(store), _empty(tmp_path))
    claude = next(i for i in result.json["installs"] if i["app"] == "claude-code")
    assert claude["retention"]["due_at_next_start"] == len(mains) // 2 and claude["retention"]["due_already_in_store"] == 0
    step = next(s for s in result.json["next"] if "Import them now:" in s)
    command = shlex.split(step.split("Import them now: ", 1)[1].split("   (", 1)[0])
    assert command[:4] == ["levelsess", "import", "--from", "claude"]
    assert run_cli(*command[1:], "--store", str(store)).exit_code == 0
    after = run_cli("doctor", "--json", "--store", str(store), _empty(tmp_path))
    claude = next(i for i in after.json["installs"] if i["app"] == "claude-code")
    assert claude["retention"]["due_already_in_store"] == claude["retention"]["due_at_next_start"] == len(mains) // 2
    assert not any("Import them now" in s for s in after.json["next"])
    from toolkit.doctor import diagnose
    from toolkit.render_cli.doctor import _install_note

    [install] = [i for i in diagnose(str(store), roots=[_empty(tmp_path)]).installs if i.app == "claude-code"]
    assert _install_note(install) == (f"{claude['in_store']} in the store; cleanup after 30 d: {len(mains) // 2} due, "
                                      f"{len(mains) // 2} of them in the store") and claude["in_store"] > 0
    nightly = claude["nightly"]
    assert nightly["scheduler"] in ("cron", "systemd") and any(nightly["command"] in s for s in after.json["next"])
    assert nightly["command"].startswith("levelsess schedule install --app claude --store ")  # tests/test_schedule.py follows it


def test_doctor_lists_a_codex_home_and_the_import_it_names_keeps_it(isolated_home, tmp_path):
    import shlex

    codex = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "codex"
    home = isolated_home / ".codex"
    shutil.copytree(codex, home)
    before = snapshot(home)
    store = tmp_path / "store"
    result = run_cli("doctor", "--json", "--store", str(store), _empty(tmp_path))
    install = next(i for i in result.json["installs"] if i["app"] == "codex")
    assert install["sessions"] == 3 and install["in_store"] == 0 and install["nightly"]["command"]
    step = next(s for s in result.json["next"] if s.startswith("levelsess import --from codex"))
    assert run_cli(*shlex.split(step.split("  #")[0])[1:], "--store", str(store)).exit_code == 0
    after = run_cli("doctor", "--json", "--store", str(store), _empty(tmp_path))
    assert next(i for i in after.json["installs"] if i["app"] == "codex")["in_store"] == 3
    assert snapshot(home) == before


def test_doctor_counts_kept_sessions_claude_code_no_longer_has_and_its_restore_command_works(isolated_home, tmp_path):
    import shlex

    mains = _install(isolated_home / ".claude")
    store = tmp_path / "store"
    assert run_cli("import", "--from", "claude", "--source", isolated_home / ".claude", "--store", store).exit_code == 0
    before = next(i for i in run_cli("doctor", "--json", "--store", store, _empty(tmp_path)).json["installs"] if i["app"] == "claude-code")
    assert before["kept_but_gone"] == {"sessions": [], "restore": None}
    gone = mains[:2]
    originals = {p: p.read_bytes() for p in gone}
    for path in gone:  # what the 30-day cleanup does
        path.unlink()
    result = run_cli("doctor", "--json", "--store", store, _empty(tmp_path))
    claude = next(i for i in result.json["installs"] if i["app"] == "claude-code")
    assert sorted(claude["kept_but_gone"]["sessions"]) == sorted(f"claude-{p.stem}" for p in gone)
    step = next(s for s in result.json["next"] if "Claude Code no longer has" in s)
    command = shlex.split(step.split("#", 1)[0])
    assert command[:2] == ["levelsess", "restore"] and command == shlex.split(claude["kept_but_gone"]["restore"])
    assert run_cli(*command[1:], "--store", store, "--yes").exit_code == 0
    assert all(p.read_bytes() == data for p, data in originals.items())
    after = next(i for i in run_cli("doctor", "--json", "--store", store, _empty(tmp_path)).json["installs"] if i["app"] == "claude-code")
    assert after["kept_but_gone"]["sessions"] == []
