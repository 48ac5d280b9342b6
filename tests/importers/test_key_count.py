"""The keys a new journal's write counts (output._KeyCount: a set, then a database past a limit)
are the distinct string ``sourceKey`` and ``partKeys`` of its records, as a re-read counts them,
whatever the records' shapes and wherever the count moves to disk."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.importers import output
from toolkit.importers.output import PART_KEYS, _KeyCount

KEY = st.one_of(st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.integers(0, 3), st.none())
RECORD = st.fixed_dictionaries({}, optional={"sourceKey": KEY, PART_KEYS: st.one_of(st.lists(KEY, max_size=3), KEY)})


def _reread(records: list[dict], known: dict | None) -> int:
    keys = set(known or ())
    for record in records:
        if isinstance(record.get("sourceKey"), str):
            keys.add(record["sourceKey"])
        parts = record.get(PART_KEYS)
        keys.update(p for p in (parts if isinstance(parts, list) else ()) if isinstance(p, str))
    return len(keys)


@pytest.mark.parametrize("limit", [2, 4, 20_000])
@given(records=st.lists(RECORD, max_size=12), known=st.one_of(st.none(), st.dictionaries(st.sampled_from("abz"), st.none())))
@settings(max_examples=150, deadline=None)
def test_the_count_is_the_reread_count(limit, records, known):
    original, output.COUNT_IN_MEMORY = output.COUNT_IN_MEMORY, limit
    try:
        count = _KeyCount()
        for record in records:
            count.add(record)
        spilled = count.spilled is not None
        total = count.total(known)
    finally:
        output.COUNT_IN_MEMORY = original
    if spilled and known is not None:
        assert total is None  # an extension past the limit is not counted
    else:
        assert total == _reread(records, known)
