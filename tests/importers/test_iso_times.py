"""``iso_from_ms`` counts a whole number of milliseconds out in integers (a Cursor import makes a
time of nearly every bubble): the same text as ``datetime.fromtimestamp``, for every value either
path takes, the floor and the year-9999 bound included."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolkit.importers import output
from toolkit.importers.output import iso_from_ms


def _by_datetime(ms: object, floor: float = 1e12) -> str | None:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not floor < ms <= output._LAST_MS:
        return None
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(st.integers(min_value=-10, max_value=output._LAST_MS + 10)
       | st.integers(min_value=10**12 - 5, max_value=output._EXACT_MS + 5)
       | st.floats(allow_nan=True, allow_infinity=True) | st.booleans() | st.none() | st.text(max_size=3),
       st.sampled_from([1e12, 0, 1e6]))
@settings(max_examples=1000, deadline=None)
@example(10**12, 1e12)
@example(10**12 + 1, 1e12)
@example(output._EXACT_MS - 1, 1e12)
@example(output._EXACT_MS, 1e12)
@example(output._LAST_MS, 1e12)
@example(output._LAST_MS + 1, 1e12)
@example(1733011199999, 1e12)
@example(1733011200000, 1e12)
@example(True, 0)
@example(1, 0)
def test_a_time_in_milliseconds_reads_as_datetime_writes_it(ms, floor):
    assert iso_from_ms(ms, floor) == _by_datetime(ms, floor)
