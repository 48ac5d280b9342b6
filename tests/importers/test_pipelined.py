"""A unit's wait for its journals overlaps the next unit's work (issue 27): the order units are
begun and finished in, and what a failing unit leaves the one before it."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from toolkit.importers import parallel


def _run(keys: list[str], fail: int | None = None) -> tuple[list[str], list[tuple[int, str]]]:
    calls: list[str] = []

    def begin(i: int):
        calls.append(f"begin {i}")
        if i == fail:
            raise RuntimeError(f"unit {i}")

        def finish() -> str:
            calls.append(f"finish {i}")
            return f"part {i}"
        return finish

    results = []
    try:
        for i, part in parallel.pipelined(keys, range(len(keys)), begin):
            results.append((i, part))
    except RuntimeError:
        pass
    return calls, results


@given(st.lists(st.sampled_from("abc"), max_size=12))
def test_every_unit_is_finished_once_in_order_after_the_next_began_unless_they_share_a_key(keys):
    calls, results = _run(keys)
    assert results == [(i, f"part {i}") for i in range(len(keys))]
    for i in range(len(keys)):
        began, finished = calls.index(f"begin {i}"), calls.index(f"finish {i}")
        assert began < finished
        if i + 1 < len(keys):
            later = calls.index(f"begin {i + 1}")
            assert (finished < later) == (keys[i] == keys[i + 1]), "overlapped with the next unless it may extend its journal"


@pytest.mark.parametrize("fail", [0, 1, 3])
def test_a_unit_that_fails_to_begin_lets_the_one_before_it_finish(fail):
    calls, results = _run(["a", "b", "c", "d", "e"], fail=fail)
    assert results == [(i, f"part {i}") for i in range(fail)]
    assert calls[-1] == (f"finish {fail - 1}" if fail else f"begin {fail}")
    assert f"begin {fail + 1}" not in calls


@pytest.mark.parametrize(("keys", "jobs", "sizes"), [
    (list("abcdefgh"), 2, [1] * 8),  # few units: one key a batch, every worker busy
    ([f"k{n}" for n in range(64)], 2, [4] * 16),  # many: a few in a row
    ([f"k{n}" for n in range(64)], 8, [1] * 64),
    (["a", "a", "b", "c"], 1, [2, 1, 1]),  # one key's units stay together
])
def test_batches_hold_a_few_keys_when_every_worker_still_gets_eight(keys, jobs, sizes):
    plan = parallel.batches(keys, jobs)
    assert [len(batch) for batch in plan] == sizes
    assert sorted(i for batch in plan for i in batch) == list(range(len(keys)))
