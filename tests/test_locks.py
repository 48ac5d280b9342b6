"""Lock liveness with real processes: live owners are respected, dead and recycled ones are not."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import orjson
import psutil
import pytest

from tests.helpers import PROJECT_SLUG, make_store, run_cli, torn_store
from toolkit.locks import LockState, inspect_lock, lock_content, lock_path


@pytest.fixture
def sleeper():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield child
    if child.poll() is None:
        child.kill()
    child.wait()


def _lock(journal, pid, started=None, host=None, age=0.0):
    data = orjson.loads(lock_content(pid)) if psutil.pid_exists(pid) else {"pid": pid, "startedAt": 0.0, "acquiredAt": 0.0}
    if started is not None:
        data["startedAt"] = started
    if host is not None:
        data["host"] = host
    path = lock_path(journal)
    path.write_bytes(orjson.dumps(data))
    if age:
        past = time.time() - age
        os.utime(path, (past, past))
    return path


def test_live_owner_is_skipped_and_untouched(tmp_path, sleeper):
    store, journal = torn_store(tmp_path)
    lock = _lock(journal, sleeper.pid)
    before = journal.read_bytes()
    result = run_cli("fsck", "--repair", "--json", store)
    codes = {f["code"] for f in result.json["findings"]}
    assert "locked" in codes and "torn-tail" not in codes
    assert journal.read_bytes() == before and lock.exists()


def test_force_checks_and_repairs_a_live_owners_session(tmp_path, sleeper):
    store, journal = torn_store(tmp_path)
    lock = _lock(journal, sleeper.pid)
    result = run_cli("fsck", "--repair", "--force", "--json", store)
    assert ("torn-tail", True) in {(f["code"], f["repaired"]) for f in result.json["findings"]}
    assert lock.exists(), "--force works beside a live owner's lock, it does not steal it"


def test_killed_owner_lock_is_stale_at_once(tmp_path, sleeper):
    store, journal = torn_store(tmp_path)
    lock = _lock(journal, sleeper.pid)
    sleeper.send_signal(signal.SIGKILL)
    sleeper.wait()
    assert inspect_lock(lock).state is LockState.STALE
    check = run_cli("fsck", "--json", store)
    assert {"stale-lock", "torn-tail"} <= {f["code"] for f in check.json["findings"]}
    result = run_cli("fsck", "--repair", "--json", store)
    assert result.exit_code == 1
    assert not lock.exists()
    assert run_cli("fsck", store).exit_code == 0


def test_zombie_owner_counts_as_dead(tmp_path, sleeper):
    _, journal = torn_store(tmp_path)
    lock = _lock(journal, sleeper.pid)
    sleeper.send_signal(signal.SIGKILL)
    deadline = time.time() + 5
    while psutil.Process(sleeper.pid).status() != psutil.STATUS_ZOMBIE and time.time() < deadline:
        time.sleep(0.01)
    assert inspect_lock(lock).state is LockState.STALE  # not yet reaped: still a dead writer


def test_recycled_pid_is_stale(tmp_path):
    _, journal = torn_store(tmp_path)
    me = psutil.Process(os.getpid()).create_time()
    lock = _lock(journal, os.getpid(), started=me - 3600)
    info = inspect_lock(lock)
    assert info.state is LockState.STALE and "reused" in info.reason


def test_uncheckable_owner_is_locked_while_fresh_and_stale_after_30s(tmp_path):
    store, journal = torn_store(tmp_path)
    lock = _lock(journal, 12345, host="another-" + socket.gethostname())
    assert inspect_lock(lock).state is LockState.UNKNOWN
    assert "locked" in {f["code"] for f in run_cli("fsck", "--json", store).json["findings"]}
    past = time.time() - 31
    os.utime(lock, (past, past))
    assert inspect_lock(lock).state is LockState.STALE
    assert run_cli("fsck", "--repair", store).exit_code == 1
    assert not lock.exists()


def test_garbage_lock_content_is_judged_by_age(tmp_path):
    _, journal = torn_store(tmp_path)
    path = lock_path(journal)
    path.write_bytes(b"\x00not json")
    assert inspect_lock(path).state is LockState.UNKNOWN
    os.utime(path, (1, 1))
    assert inspect_lock(path).state is LockState.STALE


def test_live_owner_without_heartbeat_is_reported(tmp_path, sleeper):
    store, journal = torn_store(tmp_path)
    _lock(journal, sleeper.pid, age=120)
    codes = {f["code"] for f in run_cli("fsck", "--json", store).json["findings"]}
    assert {"locked", "lock-no-heartbeat"} <= codes


def test_repair_takes_and_releases_its_own_lock(tmp_path):
    store, journal = torn_store(tmp_path)
    assert run_cli("fsck", "--repair", store).exit_code == 1
    assert not lock_path(journal).exists()


def test_orphan_stale_lock_is_removed(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    orphan = store / PROJECT_SLUG / "2026-01-01T00-00-00-gone.jsonl.lock"
    orphan.write_bytes(b'{"pid": 1, "host": "elsewhere", "startedAt": 0}')
    os.utime(orphan, (1, 1))
    assert run_cli("fsck", "--repair", "--json", store).exit_code == 1
    assert not orphan.exists()


def test_a_locks_start_time_is_what_psutil_says_of_its_process_in_a_fork_too():
    """A lock's ``startedAt`` is read from /proc as psutil reads it (psutil is not loaded for it):
    the same number psutil gives, here and in a forked child (its own, not the parent's)."""
    import psutil

    from toolkit import locks

    assert locks.own_start() == psutil.Process().create_time()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read)
        ok = locks.own_start() == psutil.Process().create_time() and locks.own_start() != 0
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    got = os.read(read, 1)
    os.waitpid(pid, 0)
    assert got == b"1"


def test_a_locks_host_is_what_the_socket_module_says():
    """this_host reads uname's node name, not socket's: the same name, so a lock another tool took
    on this machine (which names it with gethostname) is judged by its pid, never as a stranger's."""
    from toolkit.locks import this_host

    assert this_host() == socket.gethostname()
