"""``chaos run --mode power-loss --fs lazyfs``: a real power cut on a LazyFS mount (real FUSE,
real SIGKILL).  LazyFS is built once per test run from ``shared/`` beside the repository (a
file lock keeps xdist workers from building it twice); where FUSE cannot mount, these tests
skip and say why.  After every test no LazyFS mount of it is left, nor any state file."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import orjson
import psutil
import pytest
from filelock import FileLock

from chaos.harness import Config, run
from chaos.lazyfs import Mount, find_binary, lazyfs_mounts, make_box, state_dir
from tests.helpers import run_cli
from toolkit.errors import OperationalError

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[3] / "shared"  # the repository is checked out beside shared/
BUILD = SHARED / "tools" / "build-lazyfs.sh"
# read before the autouse fixture isolates HOME and drops LEVELSESS_* (module import time)
PREFIX = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "levelsess" / "lazyfs"
GIVEN = os.environ.get("LEVELSESS_LAZYFS") or shutil.which("lazyfs")
SMALL = 256 << 10
TWO_WRITE = Path(__file__).with_name("two_write_writer.py")
_probed: dict[str, str] = {}  # per process: program -> "" (it mounts) or why it cannot


def _skip(reason: str) -> None:
    warnings.warn(pytest.PytestWarning(f"LazyFS test skipped: {reason}"))  # shown in the summary, even under xdist
    pytest.skip(reason)


@pytest.fixture(scope="session")
def lazyfs_program() -> str:
    """The LazyFS program: $LEVELSESS_LAZYFS or PATH, else built from shared/ (once, under a lock)."""
    if GIVEN:
        return GIVEN
    if not BUILD.exists():
        _skip(f"no LazyFS: {BUILD} is missing (the repository is not beside shared/) and none is on PATH or in $LEVELSESS_LAZYFS")
    PREFIX.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(PREFIX) + ".build.lock"):
        built = subprocess.run(["bash", str(BUILD), str(PREFIX)], capture_output=True, text=True)
    if built.returncode != 0:
        if os.geteuid() != 0 and "apt-get" in built.stderr + built.stdout:
            _skip(f"building LazyFS needs its packages installed, or root for apt-get: {built.stderr.strip()[-300:]}")
        pytest.fail(f"build-lazyfs.sh failed (exit {built.returncode}):\n{built.stdout[-2000:]}\n{built.stderr[-2000:]}")
    return built.stdout.strip().splitlines()[-1]


@pytest.fixture(autouse=True)
def box_base(monkeypatch, isolated_home):
    """A plain temporary folder for the LazyFS boxes (pytest's own contain '-o', which LazyFS
    refuses in a config path); afterwards, nothing of this test is still mounted."""
    base = Path(tempfile.mkdtemp(prefix="levelsess_test_", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.setenv("TMPDIR", str(base))
    monkeypatch.setenv("XDG_STATE_HOME", str(isolated_home / ".local" / "state"))
    yield base
    left = [m for m in lazyfs_mounts() if m.startswith(str(base) + os.sep)]
    for mount in left:  # never leave one behind for the next test, even when failing
        subprocess.run(["fusermount3", "-uz", mount], capture_output=True)
    assert not left, f"LazyFS mounts left behind: {left}"
    states = list(state_dir().glob("*.json")) if state_dir().exists() else []
    assert not states, f"state files left behind: {states}"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def lazyfs(lazyfs_program, box_base) -> str:
    """The LazyFS program, once it was seen to mount here (else the test skips, saying why)."""
    if lazyfs_program not in _probed:
        try:
            with Mount(find_binary(lazyfs_program), make_box()):
                pass
            _probed[lazyfs_program] = ""
        except OperationalError as exc:
            _probed[lazyfs_program] = str(exc)
    if _probed[lazyfs_program]:
        _skip(f"FUSE cannot mount LazyFS on this machine: {_probed[lazyfs_program]}")
    return lazyfs_program


def _mounts_under(base: Path) -> list[str]:
    return [m for m in lazyfs_mounts() if m.startswith(str(base) + os.sep)]


def _strays(base: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cwd"]):
        if (proc.info.get("cwd") or "").startswith(str(base) + os.sep):
            found.append(proc)
    return found


def _wait(predicate, timeout: float = 30.0) -> bool:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


# --- the real power cut ---------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["reference", "two-write at the root"])
def test_writers_that_fsync_lose_nothing_on_a_real_power_cut(lazyfs, box_base, writer):
    command = None if writer == "reference" else f"{shlex.quote(sys.executable)} {shlex.quote(str(TWO_WRITE))} root"
    report = run(Config(cycles=4, writers=2, seed=11, mode="power-loss", fs="lazyfs", lazyfs=lazyfs, largest=SMALL,
                        max_run=0.4, writer_cmd=command))
    assert report.ok, report.violations[:3]
    assert report.cycles == 4 and report.acked >= 1 and report.lost == 0  # how many depends on the load
    assert set(report.landings) == {"kill", "lazyfs"} and sum(report.landings["lazyfs"].values()) >= 1
    document = report.to_json()
    assert {"discarded_bytes", "dropped_cycles", "cache_full", "landings"} <= set(document)
    assert not _strays(box_base)


def test_an_external_writer_at_the_root_that_never_fsyncs_is_caught(lazyfs):
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(TWO_WRITE))} root --no-fsync"
    report = run(Config(cycles=2, writers=2, seed=2, mode="power-loss", fs="lazyfs", lazyfs=lazyfs, writer_cmd=command, max_run=0.4))
    assert report.lost > 0 and "lost" in {v["kind"] for v in report.violations}
    assert all(v["path"].startswith("-chaos-ext") for v in report.violations if v["kind"] == "lost")


def test_a_writer_that_never_fsyncs_is_caught_as_lost_with_a_reproducer(lazyfs, tmp_path):
    out = tmp_path / "repro"
    result = run_cli("chaos", "run", "--mode", "power-loss", "--fs", "lazyfs", "--lazyfs", lazyfs, "--unsafe", "no-fsync",
                     "--cycles", "3", "--writers", "2", "--seed", "3", "--largest", str(SMALL), "--out", out, "--json")
    assert result.exit_code == 4, result.stdout[-2000:]
    report = result.json
    assert report["lost"] > 0 and "lost" in {v["kind"] for v in report["violations"]}
    assert report["fs"] == "lazyfs" and report["discarded_bytes"] > 0 and report["dropped_cycles"] >= 1
    first = sorted(out.iterdir())[0]
    repro = orjson.loads((first / "repro.json").read_bytes())
    assert "--fs lazyfs" in repro["replay"] and "--unsafe no-fsync" in repro["replay"]
    argv = shlex.split(repro["replay"])[1:]
    argv[argv.index("--cycles") + 1] = "2"
    again = run_cli(*argv, "--json")
    assert again.exit_code == 4 and again.json["lost"] > 0, "the replay catches it again"


@pytest.mark.parametrize("unsafe, kind", [("ack-before-write", "lost"), ("rewrite-in-place", "lost"), ("meta-before-append", "meta-ahead")])
def test_the_other_unsafe_writers_are_caught_on_lazyfs_too(lazyfs, unsafe, kind):
    """A kill alone (before the power cut) is checked as well: rewrite-in-place's truncate is
    undone by the cut when it was not synced, but the kill already showed the loss."""
    report = run(Config(cycles=6, writers=2, seed=3, mode="power-loss", fs="lazyfs", lazyfs=lazyfs, unsafe=unsafe, largest=1 << 20))
    assert kind in {v["kind"] for v in report.violations}, report.violations[:3]


def test_the_simulated_power_cut_cannot_catch_a_missing_fsync():
    """What --mode power-loss on disk cannot see (its help and the README say so)."""
    report = run(Config(cycles=3, writers=2, seed=3, mode="power-loss", unsafe="no-fsync", largest=SMALL, max_run=0.3))
    assert report.ok and report.lost == 0 and report.acked > 0
    assert set(report.landings) == {"kill", "power-loss"}


# --- could not run: exit 8, one line, the build command -------------------------------------


def test_without_lazyfs_the_run_stops_and_names_the_build_command(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no lazyfs on PATH
    result = run_cli("chaos", "run", "--mode", "power-loss", "--fs", "lazyfs", "--cycles", "1")
    assert result.exit_code == 8, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "LazyFS not found" in lines[0] and "build-lazyfs.sh" in lines[0], lines
    monkeypatch.setenv("LEVELSESS_LAZYFS", str(tmp_path / "nowhere"))
    result = run_cli("chaos", "run", "--mode", "power-loss", "--fs", "lazyfs", "--cycles", "1", "--json")
    assert result.exit_code == 8 and "$LEVELSESS_LAZYFS" in result.stderr and "build-lazyfs.sh" in result.stderr
    assert result.json["error"]["type"] == "OperationalError" and "Traceback" not in result.stderr
    result = run_cli("chaos", "run", "--mode", "power-loss", "--fs", "lazyfs", "--lazyfs", tmp_path, "--cycles", "1")
    assert result.exit_code == 8 and "is not an executable file" in result.stderr


def test_when_fuse_cannot_mount_the_run_stops_and_says_why(tmp_path, box_base):
    fake = tmp_path / "lazyfs"  # a real program that fails the way LazyFS does without FUSE
    fake.write_text("#!/bin/sh\necho \"fuse: device not found, try 'modprobe fuse' first\" >&2\nexit 1\n")
    fake.chmod(0o755)
    result = run_cli("chaos", "run", "--mode", "power-loss", "--fs", "lazyfs", "--lazyfs", fake, "--cycles", "1")
    assert result.exit_code == 8, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "FUSE cannot mount LazyFS" in lines[0] and "fuse: device not found" in lines[0], lines
    assert "build-lazyfs.sh" in lines[0]
    assert not list(box_base.iterdir()), "the box was removed"


@pytest.mark.parametrize("args, says", [
    (["--fs", "lazyfs"], "use it with --mode power-loss"),
    (["--mode", "power-loss", "--fs", "nfs"], "--fs nfs: choose disk or lazyfs"),
    (["--lazyfs", "/usr/bin/lazyfs"], "add --fs lazyfs"),
    (["--target", "fsck", "--fs", "lazyfs", "--mode", "power-loss"], "drop --fs / --lazyfs"),
])
def test_contradictory_lazyfs_options_are_usage_errors(args, says):
    result = run_cli("chaos", "run", "--cycles", "1", *args)
    assert result.exit_code == 16 and says in result.stderr, result.stderr


# --- the harness owns the mount: Ctrl-C, SIGTERM, SIGKILL ------------------------------------


def _start_harness(lazyfs: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    argv = [sys.executable, "-m", "toolkit.cli", "chaos", "run", "--mode", "power-loss", "--fs", "lazyfs", "--lazyfs", lazyfs,
            "--duration", "300", "--largest", "65536", "--seed", "5", "-q"]
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _running_cycles(box_base: Path, harness: subprocess.Popen) -> None:
    assert _wait(lambda: any(box_base.glob("*/mnt/run-0001/*")) or harness.poll() is not None), "no cycle started"
    assert harness.poll() is None, harness.communicate()


def _state() -> dict:
    [entry] = state_dir().glob("lazyfs-*.json")
    return orjson.loads(entry.read_bytes())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_or_sigterm_unmounts_and_removes_everything(lazyfs, box_base, sig):
    harness = _start_harness(lazyfs)
    _running_cycles(box_base, harness)
    harness.send_signal(sig)
    _out, err = harness.communicate(timeout=60)
    assert harness.returncode == 32, err
    assert "interrupted" in err.decode() and b"Traceback" not in err
    assert not _mounts_under(box_base) and not list(box_base.iterdir())
    assert not _strays(box_base)


@pytest.mark.parametrize("also_lazyfs", [False, True], ids=["harness-killed", "harness-and-lazyfs-killed"])
def test_a_killed_harness_leaves_no_mount_once_the_next_run_starts(lazyfs, box_base, also_lazyfs):
    harness = _start_harness(lazyfs)
    _running_cycles(box_base, harness)
    state = _state()
    mount = state["mount"]
    if also_lazyfs:  # a dead FUSE mount stays behind ("Transport endpoint is not connected")
        os.kill(state["lazyfs_pid"], signal.SIGKILL)
        assert _wait(lambda: not psutil.pid_exists(state["lazyfs_pid"]) or psutil.Process(state["lazyfs_pid"]).status() == psutil.STATUS_ZOMBIE)
    harness.kill()
    harness.communicate()
    if also_lazyfs:
        assert mount in lazyfs_mounts(), "the stale mount the next run must clean up"
    else:  # LazyFS gets SIGTERM when the harness dies (parent-death signal) and unmounts itself; on a
        # loaded machine that can take longer than any wait here, so what is asserted is the promise
        # in this test's name: the next run removes whatever is left (below)
        _wait(lambda: mount not in lazyfs_mounts(), timeout=10.0)
    assert Path(state["box"]).exists() and list(state_dir().glob("lazyfs-*.json")), "left for the next run"
    assert _wait(lambda: not _strays(box_base)), "the reference writers stop once their harness is gone"
    report = run(Config(cycles=1, writers=1, seed=1, mode="power-loss", fs="lazyfs", lazyfs=lazyfs, largest=SMALL, max_run=0.2))
    assert report.ok, report.violations
    left = [str(p) for p in Path(state["box"]).rglob("*")] if Path(state["box"]).exists() else []
    assert mount not in lazyfs_mounts() and not Path(state["box"]).exists(), left[:20]
    assert not _strays(box_base), "the killed harness's writers were stopped too"
