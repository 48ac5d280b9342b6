"""The chaos harness with real writer processes and real SIGKILL (DESIGN.md §7)."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import psutil
import pytest

from chaos.harness import Config, run
from chaos.targets import run_target
from tests.helpers import run_cli

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
    assert report.cycles == 8 and report.kills >= 8 and report.acked > 50
    assert report.lost == 0 and report.false_corruption == 0
    assert not _writers_alive(), "no stray writer processes"


def test_shared_file_with_the_lock_loses_nothing(tmp_path):
    report = run(Config(cycles=5, writers=3, seed=5, shared_file=True, largest=SMALL, max_run=0.4))
    assert report.ok, report.violations[:3]
    assert report.acked > 20


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


def test_cli_json_report_and_cleanup(tmp_path):
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("levelsess-chaos-*"))
    result = run_cli("chaos", "run", "--cycles", "2", "--writers", "1", "--seed", "8", "--largest", str(SMALL), "--json")
    assert result.exit_code == 0
    report = result.json
    for key in ("cycles", "kills", "acked", "lost", "trimmed_bytes", "false_corruption", "violations", "seed"):
        assert key in report
    assert report["seed"] == 8 and report["lost"] == 0
    after = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("levelsess-chaos-*"))
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
