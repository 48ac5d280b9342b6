"""toolkit.forked: real forked workers give exactly the serial answer, and never leave one behind.

Every case runs real processes: a worker that raises, one that is SIGKILLed mid-run, a parent
interrupted while it waits, results larger than a pipe holds.  After each, the test process
must have no child left (a zombie or a runaway worker would be a leak on every --jobs check).
"""

from __future__ import annotations

import os
import signal

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import make_store, run_cli
from toolkit import forked
from toolkit.fsck import check

pytestmark = pytest.mark.skipif(not forked.available(), reason="no os.fork on this platform")


@pytest.fixture(autouse=True)
def children_before():
    """The processes this test process had before the test (another test's may still be ending)."""
    global BEFORE
    BEFORE = {p.pid for p in psutil.Process().children(recursive=True)}


def no_children_left():
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in BEFORE]
    assert left == [], left


BEFORE: set[int] = set()


def square_all(batch):
    return [n * n for n in batch]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(-10**6, 10**6), max_size=20), max_size=40), st.integers(1, 4))
def test_results_are_the_serial_ones_in_order(batches, jobs):
    seen = []
    assert forked.map_batches(square_all, batches, jobs, lambda n, r: seen.append(n)) == [square_all(b) for b in batches]
    assert sorted(seen) == list(range(len(batches)))
    no_children_left()


def test_results_larger_than_a_pipe_holds():
    batches = [[n] for n in range(12)]
    results = forked.map_batches(lambda b: ["x" * 300_000 + str(b[0])], batches, 2)
    assert [r[0][-2:].lstrip("x") for r in results] == [str(n) for n in range(12)]
    no_children_left()


class Refused(Exception):
    pass


def refuse_three(batch):
    if 3 in batch:
        raise Refused("batch with 3")
    return batch


def test_an_exception_in_a_worker_is_raised_in_the_parent():
    with pytest.raises(Refused, match="batch with 3"):
        forked.map_batches(refuse_three, [[n] for n in range(8)], 2)
    no_children_left()


def test_a_killed_worker_is_reported_and_reaped():
    parent = os.getpid()

    def die_on_five(batch):
        if 5 in batch and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return batch

    with pytest.raises(forked.WorkerLost):
        forked.map_batches(die_on_five, [[n] for n in range(10)], 2)
    no_children_left()


def test_an_interrupted_parent_stops_its_workers():
    def slow(batch):
        import time

        time.sleep(0.05)
        return batch

    def interrupt(number, results):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        forked.map_batches(slow, [[n] for n in range(40)], 2, interrupt)
    no_children_left()


def test_too_many_batches_is_refused_before_any_fork():
    with pytest.raises(ValueError):
        forked.map_batches(square_all, [[1]] * (forked.MAX_BATCHES + 1), 2)
    no_children_left()


def test_jobs_2_check_equals_jobs_1_and_a_killed_worker_changes_nothing(tmp_path, monkeypatch):
    """fsck --jobs 2 gives the --jobs 1 report; when a worker dies, the parent reads what it lost."""
    store = make_store(tmp_path / "store", sessions=12)
    one, two = run_cli("fsck", "--json", "--jobs", "1", str(store)), run_cli("fsck", "--json", "--jobs", "2", str(store))
    assert one.exit_code == two.exit_code and one.stdout == two.stdout

    parent, real = os.getpid(), check.scan_one

    def scan_or_die(item):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(item)

    monkeypatch.setattr(check, "scan_one", scan_or_die)
    lost = run_cli("fsck", "--json", "--jobs", "2", str(store))
    assert (lost.exit_code, lost.stdout) == (one.exit_code, one.stdout)
    no_children_left()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10**9), max_size=300), st.integers(1, 64))
def test_batches_hold_every_journal_once_largest_first_and_fit_the_queue(sizes, jobs):
    work = [(f"j{n}", None, False) for n in range(len(sizes))]
    real = check.file_size
    check.file_size = lambda path: sizes[int(path[1:])]
    try:
        batches = check.by_size(work, jobs)
    finally:
        check.file_size = real
    flat = [index for batch in batches for index in batch]
    assert sorted(flat) == list(range(len(sizes)))
    assert [sizes[i] for i in flat] == sorted(sizes, reverse=True)
    assert len(batches) <= check.MAX_BATCHES // 2 + 1 and all(batches)


def test_a_parent_with_over_a_thousand_open_files_still_collects():
    """select() cannot watch a descriptor past 1023; the pipes of a busy process can be there."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1300:
        pytest.skip(f"RLIMIT_NOFILE is {soft}")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert forked.map_batches(square_all, [[n] for n in range(6)], 2) == [[n * n] for n in range(6)]
    finally:
        for fd in held:
            os.close(fd)
    no_children_left()


def test_without_fork_a_process_pool_gives_the_same_report(tmp_path, monkeypatch):
    """Where os.fork is missing (Windows) --jobs goes through a process pool: same answer."""
    store = make_store(tmp_path / "store", sessions=8)
    one = run_cli("fsck", "--json", "--jobs", "1", str(store))
    monkeypatch.setattr(forked, "available", lambda: False)
    pooled = run_cli("fsck", "--json", "--jobs", "2", str(store))
    assert (pooled.exit_code, pooled.stdout) == (one.exit_code, one.stdout)


def test_overlapped_batches_wait_after_the_next_one_began(tmp_path):
    # overlap: a worker begins its next batch before it waits for the one before (whose wait, a
    # background fsync in an import, then overlaps that work); the results are the serial ones
    log = tmp_path / "log"

    def begin(batch):
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()} begin {batch[0]}\n")

        def wait():
            with open(log, "a") as handle:
                handle.write(f"{os.getpid()} wait {batch[0]}\n")
            return square_all(batch)
        return wait

    batches = [[n, n + 1] for n in range(0, 40, 2)]
    assert forked.map_batches(begin, batches, 2, overlap=True) == [square_all(b) for b in batches]
    steps: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        pid, what, n = line.split()
        steps.setdefault(pid, []).append(f"{what} {n}")
    assert sorted(int(s.split()[1]) for pid in steps for s in steps[pid] if s.startswith("begin")) == list(range(0, 40, 2))
    for seen in steps.values():  # each worker: begin a, begin b, wait a, begin c, wait b, ..., wait last
        begun = [s.split()[1] for s in seen if s.startswith("begin")]
        assert seen == [f"begin {begun[0]}"] + [x for a, b in zip(begun, begun[1:]) for x in (f"begin {b}", f"wait {a}")] + [f"wait {begun[-1]}"]
    no_children_left()


def test_an_overlapped_batch_that_fails_still_sends_the_one_before(tmp_path):
    def begin(batch):
        if batch[0] == 3:
            raise Refused("batch 3")
        return lambda: square_all(batch)

    got: dict[int, list] = {}
    with pytest.raises(Refused, match="batch 3"):
        forked.map_batches(begin, [[n] for n in range(6)], 1, lambda n, r: got.__setitem__(n, r), overlap=True)
    assert got == {0: [0], 1: [1], 2: [4]}  # one worker, in order: what it began before batch 3 was finished and sent
    no_children_left()
