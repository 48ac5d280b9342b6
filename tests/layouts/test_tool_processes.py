"""A Claude Code or Codex CLI that appends without holding the file open is still seen: by its
process, running in the session's project or naming the session on its command line.

Claude Code opens, appends and closes per batch, so between two records no descriptor shows it; a
repair that trims a torn tail in that moment would cut the record that lands next.  Every process
here is real: a Python interpreter started through a symlink named like the tool (Linux names a
process after the file it executes, and its command line begins with that path), with its working
folder set as the tool's would be.  Each test kills and reaps every process it started.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.claude import fixture_bytes, lines_of, need_fixtures, run_sub, saved_tails
from tests.layouts.codex import FIXTURES as CODEX_FIXTURES
from tests.layouts.codex import SUBAGENT as ROLLOUT
from toolkit import live

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names processes the Linux way")

# The processes these tests start are seen by every test running on the machine at the time (other
# pytest workers copy the same fixtures): they name ids of this run only, never a fixture's own.
SESSION = str(uuid.uuid4())
TRANSCRIPT = Path("-loru-rnwdo-kwobudct-tkoccuw") / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"
FIXTURE_THREAD = "019d781a-be34-7041-abb1-577f9360b907"  # the thread id ROLLOUT's name ends with
THREAD = str(uuid.uuid4())
REPAIRS = [("--repair",), ("--salvage", "--yes"), ("--relink", "--yes")]
WAIT = "import time; print('ok', flush=True); time.sleep(120)"


@pytest.fixture
def start(tmp_path):
    """``start(name, cwd, *args)``: a real process named ``name`` working in ``cwd``; all killed at teardown."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started: list[subprocess.Popen] = []

    def run(name: str, cwd: Path, *args: str, script: Path | None = None) -> subprocess.Popen:
        exe = bin_dir / name
        if not exe.exists():
            exe.symlink_to(os.path.realpath(sys.executable))
        argv = [str(exe), str(script)] if script is not None else [str(exe), "-c", WAIT]
        proc = subprocess.Popen([*argv, *args], cwd=cwd, stdout=subprocess.PIPE)
        started.append(proc)
        assert proc.stdout.readline().strip() == b"ok"
        return proc

    yield run
    for proc in started:
        proc.kill()
    for proc in started:
        proc.wait()
        proc.stdout.close()


def _folder(tmp_path: Path, *parts: str) -> Path:
    where = Path(os.path.realpath(tmp_path)).joinpath(*parts)  # what /proc says a process's folder is
    where.mkdir(parents=True, exist_ok=True)
    return where


def _slug(cwd: Path) -> str:
    """SOURCES-AGENTS §1.2 for an ASCII path: every character but a letter or digit becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def _claude_session(tmp_path: Path, project: Path) -> tuple[Path, Path, bytes, bytes]:
    """A .claude root whose one transcript was started in ``project`` and ends in a torn record."""
    need_fixtures()
    data = fixture_bytes(TRANSCRIPT)
    torn = data + b'{"parentUuid":"' + SESSION.encode() + b'","type":"assi'
    journal = tmp_path / ".claude" / "projects" / _slug(project) / f"{SESSION}.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(torn)
    return tmp_path / ".claude", journal, data, torn


def _in_use(result) -> list[dict]:
    return [f for f in result.json["findings"] if f["code"] == "in-use"]


def _refused(result, journal: Path, torn: bytes, proc: subprocess.Popen, cwd: Path, tool: str) -> None:
    assert result.exit_code == 4, result.stdout + result.stderr
    (finding,) = _in_use(result)
    assert Path(finding["path"]) == journal and finding["severity"] == "warning"
    assert f"{tool} is running in {cwd} (pid {proc.pid})" in finding["message"]
    assert "quit it, then rerun" in finding["message"]
    assert journal.read_bytes() == torn, "a session its tool may append to is never cut"
    assert saved_tails() == []
    (tail,) = [f for f in result.json["findings"] if f["code"] == "torn-tail"]
    assert not tail["repaired"]
    assert not any(f["code"] == "locked" for f in result.json["findings"]), "skipped by the plan, not tried and stopped"


# --- Claude Code ------------------------------------------------------------------------------


@pytest.mark.parametrize("repair", REPAIRS, ids=" ".join)
def test_claude_code_running_in_the_project_keeps_every_repair_away(tmp_path, start, repair):
    project = _folder(tmp_path, "work", "my_app.v2")
    root, journal, data, torn = _claude_session(tmp_path, project)
    claude = start("claude", project)
    before = snapshot(root)
    result = run_sub("fsck", *repair, "--json", root)  # levelsess in a process of its own, as a person runs it
    _refused(result, journal, torn, claude, project, "Claude Code")
    assert snapshot(root) == before


def test_a_plain_check_still_reads_the_session_and_says_who_runs(tmp_path, start):
    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    claude = start("claude", project)
    result = run_cli("fsck", "--json", root)
    _refused(result, journal, torn, claude, project, "Claude Code")
    assert result.json["files"] == 1
    shown = run_cli("fsck", root)
    text = shown.stdout + shown.stderr
    assert "left to their tool" in text and "not checked" not in text
    assert "fsck --repair" not in text, "no hint that leads to a repair it would refuse"
    listed = run_cli("ls", "--json", root)
    assert [(s["state"], f"pid {claude.pid}" in s["reason"]) for s in listed.json["sessions"]] == [("in-use", True)]


@pytest.mark.parametrize("elsewhere", [("work", "other"), ("work",), ("work", "app", "sub")], ids="/".join)
def test_claude_code_running_in_another_project_does_not_block_this_one(tmp_path, start, elsewhere):
    """A sibling, the parent and a subfolder are projects of their own (folders of their own)."""
    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    start("claude", _folder(tmp_path, *elsewhere))
    result = run_cli("fsck", "--repair", "--json", root)
    assert result.exit_code == 1, result.stdout
    assert _in_use(result) == []
    assert journal.read_bytes() == data
    assert saved_tails() == [torn[len(data):]]


def test_claude_code_resuming_the_session_from_anywhere_blocks_it(tmp_path, start):
    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    elsewhere = _folder(tmp_path, "elsewhere")
    claude = start("claude", elsewhere, "--resume", SESSION)
    _refused(run_cli("fsck", "--repair", "--json", root), journal, torn, claude, elsewhere, "Claude Code")
    claude.kill()
    claude.wait()
    other = start("claude", elsewhere, "--resume", "0e2a4b11-5c3d-4e6f-8a9b-0c1d2e3f4a5b")  # another session
    assert run_cli("fsck", "--repair", "--json", root).exit_code == 1 and journal.read_bytes() == data
    assert other.poll() is None


def test_a_folder_that_shares_the_project_folder_counts(tmp_path, start):
    """``my_app`` and ``my-app`` share one project folder (the slug is lossy): Claude Code running in
    either writes there, so either blocks the repair."""
    project = _folder(tmp_path, "work", "my_app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    twin = _folder(tmp_path, "work", "my-app")
    claude = start("claude", twin)
    _refused(run_cli("fsck", "--repair", "--json", root), journal, torn, claude, twin, "Claude Code")


def test_claude_code_run_by_node_from_its_package_is_seen(tmp_path, start):
    """The npm install runs ``node …/@anthropic-ai/claude-code/cli.js`` (here a Python script at that path)."""
    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    script = _folder(tmp_path, "lib", "node_modules", "@anthropic-ai", "claude-code") / "cli.js"
    script.write_text(WAIT)
    node = start("node", project, script=script)
    _refused(run_cli("fsck", "--repair", "--json", root), journal, torn, node, project, "Claude Code")


def test_a_process_of_another_name_in_the_project_is_not_claude_code(tmp_path, start):
    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    start("python3", project, "--resume", SESSION)
    start("node", project, "server.js")
    assert run_cli("fsck", "--repair", "--json", root).exit_code == 1 and journal.read_bytes() == data


def test_a_forced_repair_goes_ahead_while_claude_code_runs(tmp_path, start):
    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    start("claude", project)
    forced = run_cli("fsck", "--repair", "--force", "--json", root)
    assert forced.exit_code == 1 and journal.read_bytes() == data


def test_claude_code_started_between_check_and_repair_stops_the_repair(tmp_path, start):
    from toolkit.fsck import check_folders, plan_repair
    from toolkit.stores import discover_all

    project = _folder(tmp_path, "work", "app")
    root, journal, data, torn = _claude_session(tmp_path, project)
    report = check_folders(discover_all([root]))  # nothing runs yet: a trim is planned
    assert "torn-tail" in {f.code for f in report.findings} and "in-use" not in {f.code for f in report.findings}
    claude = start("claude", project)
    result = plan_repair(report).execute()
    assert journal.read_bytes() == torn, "the repair looked again just before writing"
    assert any(f.code == "locked" and f"pid {claude.pid}" in f.message for f in result.findings)


# --- Codex CLI --------------------------------------------------------------------------------


def _codex_session(tmp_path: Path, cwd: Path) -> tuple[Path, Path, bytes, bytes]:
    """A Codex home whose one rollout's session_meta says it works in ``cwd``, ending in a torn record."""
    source = CODEX_FIXTURES / ROLLOUT
    if not source.is_file():
        pytest.skip(f"{source} is not here")
    lines = lines_of(source.read_bytes())
    meta = json.loads(lines[0])
    assert meta["type"] == "session_meta"
    meta["payload"]["cwd"] = str(cwd)
    if meta["payload"].get("id") == FIXTURE_THREAD:
        meta["payload"]["id"] = THREAD
    data = b"".join(line + b"\n" for line in [json.dumps(meta, separators=(",", ":")).encode(), *lines[1:]])
    torn = data + b'{"timestamp":"2026'
    rollout = tmp_path / ".codex" / str(ROLLOUT).replace(FIXTURE_THREAD, THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(torn)
    return tmp_path / ".codex", rollout, data, torn


@pytest.mark.parametrize("repair", REPAIRS[:2], ids=" ".join)
def test_codex_running_in_the_threads_folder_keeps_every_repair_away(tmp_path, start, repair):
    project = _folder(tmp_path, "work", "api")
    home, rollout, data, torn = _codex_session(tmp_path, project)
    codex = start("codex", project)
    _refused(run_cli("fsck", *repair, "--json", home), rollout, torn, codex, project, "Codex CLI")


def test_codex_resuming_the_thread_blocks_it_and_codex_elsewhere_does_not(tmp_path, start):
    project = _folder(tmp_path, "work", "api")
    home, rollout, data, torn = _codex_session(tmp_path, project)
    elsewhere = _folder(tmp_path, "work", "web")
    resuming = start("codex-x86_64-unknown-linux-musl", elsewhere, "resume", THREAD)
    _refused(run_cli("fsck", "--repair", "--json", home), rollout, torn, resuming, elsewhere, "Codex CLI")
    resuming.kill()
    resuming.wait()
    start("codex", elsewhere)
    result = run_cli("fsck", "--repair", "--json", home)
    assert result.exit_code == 1 and _in_use(result) == [] and rollout.read_bytes() == data


def test_codex_told_its_folder_with_cd_is_seen(tmp_path, start):
    project = _folder(tmp_path, "work", "api")
    home, rollout, data, torn = _codex_session(tmp_path, project)
    codex = start("codex", project.parent, "--cd", "api")
    result = run_cli("fsck", "--repair", "--json", home)
    _refused(result, rollout, torn, codex, project.parent, "Codex CLI")


# --- the walk itself ----------------------------------------------------------------------------


def test_the_walk_finds_each_tool_with_its_folder_and_nothing_else(tmp_path, start):
    here = _folder(tmp_path, "w")
    claude = start("claude", here, "--resume", SESSION)
    codex = start("codex", here)
    other = start("python3", here, "--resume", SESSION)
    found = {p.pid: p for p in live.processes(fresh=True)}
    assert (found[claude.pid].tool, found[claude.pid].cwd) == ("claude-code", str(here))
    assert found[claude.pid].names(SESSION) and not found[codex.pid].names(SESSION)
    assert (found[codex.pid].tool, found[codex.pid].cwd) == ("codex", str(here))
    assert other.pid not in found
    claude.kill()
    claude.wait()
    assert claude.pid not in {p.pid for p in live.processes(fresh=True)}


def test_the_walk_reads_no_command_line_of_a_process_not_named_like_a_tool(tmp_path, start, monkeypatch):
    """A command line is read from the process's memory (it can wait on that process); its name is not."""
    other = start("python3", _folder(tmp_path, "w"))
    read = []
    real_read = live._read

    def spy(path: str, size: int):
        read.append(path)
        return real_read(path, size)

    monkeypatch.setattr(live, "_read", spy)
    live.processes(fresh=True)
    assert f"/proc/{other.pid}/comm" in read
    assert f"/proc/{other.pid}/cmdline" not in read
