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


@given(st.lists(st.sampled_from("abcd"), max_size=14), st.integers(1, 4))
def test_at_most_depth_units_wait_and_none_begins_while_one_of_its_key_waits(keys, depth):
    """Up to ``depth`` units are begun and not finished when the next begins (their waits overlap
    its work), none of them of its key (it may extend a journal one of them creates); each unit is
    finished once, in order, and held until ``depth`` more began or the units ran out."""
    calls: list[str] = []

    def begin(i: int):
        calls.append(f"begin {i}")
        return lambda: calls.append(f"finish {i}") or i

    assert [i for i, _ in parallel.pipelined(keys, range(len(keys)), begin, depth=depth)] == list(range(len(keys)))
    waiting: list[int] = []
    for call in calls:
        what, i = call.split()
        if what == "begin":
            assert len(waiting) <= depth and all(keys[w] != keys[int(i)] for w in waiting)
            waiting.append(int(i))
        else:
            assert waiting[0] == int(i)
            waiting.pop(0)
    for i in range(len(keys)):
        later = [j for j in range(i + 1, min(i + depth, len(keys) - 1) + 1)]
        if later and not any(keys[j] == keys[k] for j in later for k in range(i, j)):
            assert calls.index(f"finish {i}") > calls.index(f"begin {later[-1]}"), (keys, depth, i)


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
