"""Crash safety with real processes: SIGKILL a migration at random moments, then rerun.

At every kill each journal must be exactly its v1 original or exactly its migrated v2 form
(never missing, never doubled, never half-written), and the run that finally completes must
leave the store equal to an uninterrupted migration of the same store.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import session_records, write_journal
from toolkit.journal import scan_journal
from toolkit.lines import loads

SESSIONS = 100  # each rewrite watches the old file 20 ms for a late writer (durable.HANDOVER_GRACE): ~2.5 s a run
KILLS = 12  # per seed; two seeds run side by side under xdist


def _build(root: Path, rng: random.Random) -> Path:
    for n in range(SESSIONS):
        project = root / f"-home-ada-code-p{n % 3}"
        sid = f"2026-11-30T09-{n // 60:02d}-{n % 60:02d}-c{n:03d}"
        records = session_records(sid, turns=rng.randint(1, 12), v=1)
        if n % 10 == 0:  # a few larger sessions so some kills land inside one file's write
            records.append({"kind": "agent", "t": "2026-11-30T10:00:00Z", "messages": ["x" * 200_000]})
        write_journal(project / f"{sid}.jsonl", records)
    return root


def _migrate(store: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "toolkit.cli", "migrate", "-q", "--store", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _journals(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.glob("*/*.jsonl"))}


def _index(store: Path) -> dict[str, object]:
    out = {}
    for path in sorted(store.glob("*/index.json")):
        document = loads(path.read_bytes())
        out[str(path.relative_to(store))] = document["sessions"] if isinstance(document, dict) else document
    return out


def _leftovers(store: Path) -> list[str]:
    return sorted(p.name for p in store.glob("*/*") if p.name.endswith((".tmp", ".lock")))


@pytest.mark.parametrize("seed", [20261130, 7])
def test_sigkill_at_random_moments_then_rerun_converges(tmp_path, seed):
    rng = random.Random(seed)
    pristine = _build(tmp_path / "pristine", rng)
    originals = _journals(pristine)

    reference = tmp_path / "reference"
    shutil.copytree(pristine, reference)
    started = time.monotonic()
    proc = _migrate(reference)
    assert proc.wait() == 0, proc.stderr.read().decode()
    duration = time.monotonic() - started
    started = time.monotonic()
    assert _migrate(reference).wait() == 0  # nothing left to migrate: a run's start-up and look
    idle = min(time.monotonic() - started, duration)
    expected, expected_index = _journals(reference), _index(reference)
    assert set(expected) == set(originals) and all(expected[k] != originals[k] for k in originals)

    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    states_seen = {"v1": 0, "v2": 0}
    kills = mid_run = 0
    left = 1.0  # the share of journals still to migrate: a rerun after a late kill is short
    while kills < KILLS or (mid_run < KILLS // 4 and kills < 3 * KILLS):  # a loaded machine lands fewer mid-run
        proc = _migrate(store)
        time.sleep(rng.uniform(0.0, idle + left * (duration - idle)))
        if proc.poll() is not None:  # it finished before the kill: start again from scratch
            assert proc.returncode == 0, proc.stderr.read().decode()
            shutil.rmtree(store)
            shutil.copytree(pristine, store)
            left = 1.0
            continue
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        now = _journals(store)
        assert set(now) == set(originals), "a journal went missing or was duplicated"
        v2 = 0
        for name, data in now.items():
            assert data in (originals[name], expected[name]), f"{name} is neither its original nor its migrated form"
            v2 += data == expected[name]
        states_seen["v1"] += len(now) - v2
        states_seen["v2"] += v2
        mid_run += 0 < v2 < len(now)
        left = 1.0 - v2 / len(now)
        for index in store.glob("*/index.json"):  # caches are replaced atomically too
            loads(index.read_bytes())
        for name in rng.sample(sorted(now), 5):  # and each is a valid journal to fsck
            scan = scan_journal(store / name)
            assert not [f for f in scan.findings if f.severity == "error"]
        if left < 0.2 and rng.random() < 0.5:  # sometimes start over to land kills early again
            shutil.rmtree(store)
            shutil.copytree(pristine, store)
            left = 1.0
    print(f"{kills} kills, {mid_run} mid-run; journal states at kills: {states_seen}")
    assert mid_run >= KILLS // 4, f"only {mid_run} kills landed mid-run; the test is not testing much"

    proc = _migrate(store)
    assert proc.wait() == 0, proc.stderr.read().decode()
    assert _journals(store) == expected
    assert _index(store) == expected_index
    assert _leftovers(store) == [], "stale locks and temp files of killed runs are tidied"
    backups = store / ".levelsess" / "backup"
    assert not backups.exists() or not any(backups.iterdir()), "backups of killed runs are pruned once a run succeeds"


def test_ctrl_c_with_worker_processes_finishes_the_current_files_and_exits_32(tmp_path):
    # A terminal's Ctrl-C reaches the whole process group: the parent and every worker.
    store = _build(tmp_path / "store", random.Random(3))
    originals = _journals(store)
    proc = subprocess.Popen([sys.executable, "-m", "toolkit.cli", "migrate", "-q", "--jobs", "2", "--store", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    backup = store / ".levelsess" / "backup"
    deadline = time.monotonic() + 60
    while not any(backup.glob("*/*/*.jsonl")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)  # until the first original has been backed up: the run is mid-way
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 32, proc.stderr.read().decode()
    assert "rerun" in proc.stderr.read().decode()
    now = _journals(store)
    assert set(now) == set(originals)
    migrated = [name for name, data in now.items() if data != originals[name]]
    assert 0 < len(migrated) < len(now), "stopped part-way, after whole files"
    for name in migrated:
        assert scan_journal(store / name).version == 2
    assert _leftovers(store) == [], "workers finish their file and release its lock"
    assert any(backup.iterdir()), "an interrupted run keeps its backups"
    assert _migrate(store).wait() == 0
    assert all(scan_journal(store / name).version == 2 for name in now)
    assert not backup.exists()
