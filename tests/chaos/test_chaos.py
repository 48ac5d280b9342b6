"""The chaos harness with real writer processes and real SIGKILL (DESIGN.md §7)."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile

import orjson
import psutil
import pytest

from chaos.harness import Config, run
from chaos.targets import run_target
from tests.helpers import run_cli
from toolkit.errors import UsageError

SMALL = 256 << 10  # records up to 256 KiB keep the smoke fast; the nightly run uses the 4 MiB default


def _writers_alive() -> list[psutil.Process]:
    me = psutil.Process()
    return [p for p in me.children(recursive=True) if "chaos.writer" in " ".join(p.cmdline() or [])]


def test_writer_acks_match_the_bytes_on_disk(tmp_path):
    env = {**os.environ, "LEVELSESS_CHAOS_DIR": str(tmp_path), "LEVELSESS_CHAOS_SEED": "7"}
    for layout in ("levelcode", "logician"):
        proc = subprocess.run([sys.executable, "-m", "chaos.writer", "--name", f"w-{layout}", "--layout", layout,
                               "--max-records", "5", "--largest", "5000"], env=env, capture_output=True, check=True)
        acks = [line.split() for line in proc.stdout.decode().splitlines()]
        assert len(acks) == (6 if layout == "levelcode" else 5), "LevelCode ACKs its meta line too"
        data = (tmp_path / acks[0][1]).read_bytes()
        start = 0
        for _ack, _relpath, end, digest in acks:
            end = int(end)
            assert data[end - 1:end] == b"\n"
            assert hashlib.sha256(data[start:end - 1]).hexdigest() == digest
            start = end
        assert start == len(data)
    assert run_cli("fsck", tmp_path / "store").exit_code == 0
    assert run_cli("fsck", tmp_path / "ws").exit_code == 0, "caches advanced only after durable appends"


@pytest.mark.parametrize("mode", ["kill", "power-loss"])
def test_reference_writers_lose_nothing(tmp_path, mode):
    report = run(Config(cycles=8, writers=3, seed=11, mode=mode, largest=SMALL, max_run=0.4))
    assert report.ok, report.violations[:3]
    assert report.cycles == 8 and report.kills >= 8 and report.acked >= 1  # how many depends on the machine's load, not on levelsess
    assert report.lost == 0 and report.false_corruption == 0
    assert not _writers_alive(), "no stray writer processes"


def test_shared_file_with_the_lock_loses_nothing(tmp_path):
    report = run(Config(cycles=5, writers=3, seed=5, shared_file=True, largest=SMALL, max_run=0.4))
    assert report.ok, report.violations[:3]
    assert report.acked >= 1  # lock contention on a loaded machine: how many varies (> 20 and > 5 both flaked on 2 cores)


@pytest.mark.parametrize("unsafe", ["ack-before-write", "rewrite-in-place", "meta-before-append"])
def test_each_unsafe_writer_is_caught_with_a_reproducer(tmp_path, unsafe):
    out = tmp_path / "repro"
    result = run_cli("chaos", "run", "--unsafe", unsafe, "--cycles", "12", "--writers", "2", "--seed", "3",
                     "--largest", str(1 << 20), "--out", out, "--json")
    assert result.exit_code == 4, result.stdout[-2000:]
    report = result.json
    assert report["violations"], "the unsafe writer went unnoticed"
    expected = {"ack-before-write": "lost", "rewrite-in-place": "lost", "meta-before-append": "meta-ahead"}[unsafe]
    assert expected in {v["kind"] for v in report["violations"]}
    first = sorted(out.iterdir())[0]
    repro = orjson.loads((first / "repro.json").read_bytes())
    assert repro["seed"] == 3 and "--unsafe " + unsafe in repro["replay"]
    assert (first / "files").is_dir()
    # the replay command catches it again from its seed
    argv = shlex.split(repro["replay"])[1:] + ["--json"]
    again = run_cli(*argv)
    assert again.exit_code == 4 and again.json["violations"]
    assert not _writers_alive()


def test_external_writer_command_speaks_the_protocol(tmp_path):
    command = f"{shlex.quote(sys.executable)} -m chaos.writer --name ext --largest {SMALL}"
    report = run(Config(cycles=4, writers=2, seed=2, writer_cmd=command, max_run=0.3))
    assert report.ok and report.acked > 0


def test_a_writer_that_acks_bytes_it_never_wrote_is_caught(tmp_path):
    liar = tmp_path / "liar.py"
    liar.write_text(
        "import os, pathlib, time\n"
        "root = pathlib.Path(os.environ['LEVELSESS_CHAOS_DIR'])\n"
        "print('ACK store/-x/2026-11-30T00-00-00-liar.jsonl 42 ' + '0' * 64, flush=True)\n"
        "time.sleep(30)\n")
    report = run(Config(cycles=1, writers=1, seed=1, writer_cmd=f"{shlex.quote(sys.executable)} {liar}", min_run=0.3, max_run=0.4))
    assert not report.ok and report.lost == 1


@pytest.mark.parametrize("target", ["fsck", "reindex", "migrate", "import"])
def test_killed_levelsess_commands_converge(tmp_path, target):
    report = run_target(Config(cycles=2, seed=4), target)
    assert report.ok, report.violations
    assert report.kills >= 2
    if target == "reindex":  # reindex writes three small files at the very end: kills rarely land between them
        return
    # Kill moments are timed from a polled run, so a loaded machine can still miss the
    # writing window; a few more seeded cycles must land at least one kill mid-run.
    for seed in (5, 6, 7):
        if report.mid_run_kills:
            break
        more = run_target(Config(cycles=2, seed=seed), target)
        assert more.ok, more.violations
        report.mid_run_kills += more.mid_run_kills
    assert report.mid_run_kills >= 1


def test_cli_json_report_and_cleanup(tmp_path, monkeypatch):
    # a private temp dir: other tests (and other runs) make and remove chaos folders meanwhile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(tmp_path.glob("levelsess-chaos-*"))
    result = run_cli("chaos", "run", "--cycles", "2", "--writers", "1", "--seed", "8", "--largest", str(SMALL), "--json")
    assert result.exit_code == 0
    report = result.json
    for key in ("cycles", "kills", "acked", "lost", "trimmed_bytes", "false_corruption", "violations", "seed"):
        assert key in report
    assert report["seed"] == 8 and report["lost"] == 0
    after = set(tmp_path.glob("levelsess-chaos-*"))
    assert after <= before, "the temporary chaos folders are removed without --keep"


def test_bad_options_are_usage_errors():
    assert run_cli("chaos", "run", "--target", "everything").exit_code == 16
    assert run_cli("chaos", "run", "--mode", "meteor").exit_code == 16
    assert run_cli("chaos", "run", "--unsafe", "nope").exit_code == 16


def test_a_writer_whose_torn_meta_line_was_trimmed_writes_meta_again(tmp_path):
    """Found by the 1,000-cycle run: a kill inside the meta line's write, then fsck --repair,
    left a 0-byte journal that the next writer appended records to without a meta line."""
    journal = tmp_path / "store" / "-chaos-w000" / "2026-11-30T00-00-00-w000.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(b"")
    env = {**os.environ, "LEVELSESS_CHAOS_DIR": str(tmp_path), "LEVELSESS_CHAOS_SEED": "1"}
    subprocess.run([sys.executable, "-m", "chaos.writer", "--name", "w000", "--max-records", "2", "--largest", "300"],
                   env=env, check=True, capture_output=True)
    assert orjson.loads(journal.read_bytes().splitlines()[0])["kind"] == "meta"
    assert run_cli("fsck", journal).exit_code == 0


# --- --writer-cmd: a command that cannot start, and a writer that never ACKs ----------------


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.mark.parametrize("command, says", [
    ("/nonexistent/cmd", "cannot start '/nonexistent/cmd': No such file or directory"),
    ("nosuch-levelsess-writer --fast", "cannot start 'nosuch-levelsess-writer': not found on PATH"),
    ('a "b', "No closing quotation"),
    ("", "--writer-cmd is empty"),
    ("   ", "--writer-cmd is empty"),
])
def test_a_writer_cmd_that_cannot_start_is_a_usage_error(command, says):
    before = _children()
    for extra in ((), ("--json",)):
        result = run_cli("chaos", "run", "--cycles", "1", "--writers", "1", "--writer-cmd", command, *extra)
        assert result.exit_code == 16, result.stdout + result.stderr
        assert says in result.stderr and "chaos writer --help" in result.stderr
        assert "Traceback" not in result.stdout + result.stderr
    assert result.json["error"]["type"] == "UsageError" and says in result.json["error"]["message"]
    assert _children() <= before


def test_a_writer_file_that_is_not_a_program_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    plain = tmp_path / "plain.sh"  # not executable
    plain.write_text("#!/bin/sh\nexit 0\n")
    no_shebang = tmp_path / "no-shebang"  # executable, but exec() refuses it: only Popen can tell
    no_shebang.write_text("echo ACK\n")
    no_shebang.chmod(0o755)
    for program, says in ((plain, "Permission denied"), (tmp_path, "Is a directory"), (no_shebang, "Exec format error")):
        result = run_cli("chaos", "run", "--cycles", "1", "--writers", "2", "--writer-cmd", shlex.quote(str(program)))
        assert result.exit_code == 16 and f"cannot start '{program}': {says}" in result.stderr, result.stderr
        assert "Traceback" not in result.stdout + result.stderr
    assert not list((tmp_path / "tmp").iterdir()), "no chaos folder is left behind"


def test_a_writer_that_fails_to_start_half_way_leaves_nothing_behind(tmp_path, monkeypatch):
    """The second writer's exec fails after the first one started: that one is killed and
    the chaos folder removed before the usage error surfaces."""
    import chaos.harness as harness

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real, started = subprocess.Popen, []

    def popen(argv, **kwargs):
        if started:
            raise OSError(8, "Exec format error")
        started.append(real(argv, **kwargs))
        return started[-1]

    monkeypatch.setattr(harness.subprocess, "Popen", popen)
    command = f"{shlex.quote(sys.executable)} -m chaos.writer --name ext --largest 3000"
    with pytest.raises(UsageError, match="cannot start .*Exec format error"):
        run(Config(cycles=2, writers=2, seed=1, writer_cmd=command))
    assert started and started[0].returncode is not None, "the writer that did start was killed and reaped"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command, kinds", [
    ("echo garbage", {"writer-exited", "protocol"}),
    ("false", {"writer-exited"}),
])
def test_a_writer_that_never_acks_fails_the_run(command, kinds):
    result = run_cli("chaos", "run", "--cycles", "2", "--writers", "1", "--seed", "1", "--writer-cmd", command, "--json")
    assert result.exit_code == 4, result.stdout
    report = result.json
    assert report["acked"] == 0 and report["kills"] == 0
    assert {v["kind"] for v in report["violations"]} == kinds
    assert {v["cycle"] for v in report["violations"]} == {0, 1}, "every cycle's writer is judged"
    exited = [v for v in report["violations"] if v["kind"] == "writer-exited"]
    assert "exited on its own (exit status" in exited[0]["detail"]


def test_a_silent_writer_is_a_no_ack_violation(tmp_path):
    silent = tmp_path / "silent.py"
    silent.write_text("import time\ntime.sleep(60)\n")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(silent))}"
    before = _children()
    report = run(Config(cycles=3, writers=2, seed=1, writer_cmd=command, max_run=0.2, ack_timeout=1.5))
    assert not report.ok
    no_ack = [v for v in report.violations if v["kind"] == "no-ack"]
    assert {v["kind"] for v in report.violations} == {"no-ack"}
    assert len(no_ack) == 2 and {v["cycle"] for v in no_ack} == {0}, "once per writer, then seeded kills again"
    assert "printed no ACK line" in no_ack[0]["detail"]
    assert report.kills == 6
    assert _children() <= before


def test_stdout_lines_that_are_not_acks_are_counted_with_a_few_examples(tmp_path):
    chatty = tmp_path / "chatty.py"
    chatty.write_text(
        "import time\n"
        "for n in range(7):\n"
        "    print(f'wrote record {n}', flush=True)\n"
        "print('ACK /etc/passwd 42 ' + 'a' * 64, flush=True)\n"  # outside the chaos folder
        "print('ACK store/x.jsonl 42 not-a-digest', flush=True)\n"
        "time.sleep(60)\n")
    report = run(Config(cycles=1, writers=1, seed=1, writer_cmd=f"{shlex.quote(sys.executable)} {chatty}", min_run=0.5, max_run=0.6))
    assert [v["kind"] for v in report.violations] == ["protocol"]
    detail = report.violations[0]["detail"]
    assert "printed 9 stdout line(s)" in detail and "'wrote record 2'" in detail and "record 3" not in detail
    assert report.acked == 0 and report.lost == 0


def test_a_writer_that_stops_by_itself_is_caught(tmp_path):
    command = f"{shlex.quote(sys.executable)} -m chaos.writer --name ext --largest 3000 --max-records 2"
    report = run(Config(cycles=2, writers=1, seed=1, writer_cmd=command, min_run=5, max_run=5.1))
    assert report.lost == 0 and report.acked == 2 * 3, "its ACKs were still checked"
    assert {v["kind"] for v in report.violations} == {"writer-exited"}
    assert "exit status 0" in report.violations[0]["detail"] and "after 3 ACK(s)" in report.violations[0]["detail"]


def test_reference_writers_killed_during_start_up_are_no_violation(tmp_path):
    """Kills 0-20 ms after the start land before most writers' first ACK; that is not a
    silent writer.  The first cycle waits for a first ACK, so the run still ACKs something."""
    report = run(Config(cycles=6, writers=2, seed=9, largest=SMALL, min_run=0, max_run=0.02))
    assert report.ok, report.violations[:3]
    assert report.kills == 12 and report.acked >= 1
    assert not _writers_alive()


def test_a_relative_writer_cmd_runs_from_where_it_was_given(tmp_path, monkeypatch):
    """The writer runs inside the chaos folder; ``./my-writer`` still names the caller's file."""
    script = tmp_path / "my-writer"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m chaos.writer --name rel --largest 3000 \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    report = run(Config(cycles=2, writers=1, seed=3, writer_cmd="./my-writer --layout logician", max_run=0.3))
    assert report.ok, report.violations[:3]
    assert report.acked > 0


def test_the_report_counts_where_each_kill_landed():
    result = run_cli("chaos", "run", "--cycles", "3", "--writers", "2", "--seed", "4", "--largest", str(SMALL), "--mode", "power-loss", "--json")
    assert result.exit_code == 0, result.stdout[-2000:]
    landings = result.json["landings"]
    assert set(landings) == {"kill", "power-loss"}
    assert all(set(counts) == {"torn", "unterminated", "between"} for counts in landings.values())
    assert sum(landings["kill"].values()) >= 1 and sum(landings["power-loss"].values()) == sum(landings["kill"].values())
    assert "discarded_bytes" not in result.json, "a LazyFS figure only"
    table = run_cli("chaos", "run", "--cycles", "1", "--writers", "1", "--seed", "4", "--largest", str(SMALL))
    assert "kill: torn / unterminated / between records" in table.stdout
