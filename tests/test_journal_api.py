"""iter_records: the reader other commands use raises typed errors at the first damaged line."""

from __future__ import annotations

import pytest

from tests.helpers import encode, session_records, write_journal
from toolkit.errors import CorruptionError, InvalidJsonError, SplicedRecordsError
from toolkit.journal import iter_records


def test_yields_every_record_with_line_and_offset(tmp_path):
    records = session_records()
    journal = write_journal(tmp_path / "a.jsonl", records)
    got = list(iter_records(journal))
    assert [r for _, _, r in got] == records
    data = journal.read_bytes()
    assert [(line, offset) for line, offset, _ in got][:2] == [(1, 0), (2, data.index(b"\n") + 1)]


def test_stops_quietly_at_a_torn_tail(tmp_path):
    records = session_records()
    journal = write_journal(tmp_path / "a.jsonl", encode(records) + b'{"kind":"us')
    assert len(list(iter_records(journal))) == len(records)


@pytest.mark.parametrize(("damage", "error"), [(b"{not json\n", InvalidJsonError), (b'{"kind":"a"}{"kind":"b"}\n', SplicedRecordsError)])
def test_raises_a_typed_error_at_the_damaged_line(tmp_path, damage, error):
    data = encode(session_records())
    first = data.index(b"\n") + 1
    journal = write_journal(tmp_path / "a.jsonl", data[:first] + damage + data[first:])
    with pytest.raises(error) as caught:
        list(iter_records(journal))
    assert isinstance(caught.value, CorruptionError)
    assert (caught.value.line, caught.value.offset, caught.value.path) == (2, first, str(journal))
