"""The writer's line for a numbered record (output._numbered_line, one copy of the record) is the
line the plain way makes: the record with ``seq`` set, ``coversThrough`` when it covers the one
before, the writer's own ``_`` keys dropped and a :class:`Raw` spliced in last, in key order."""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.importers import output
from toolkit.importers.output import (AT, COVERS_PREVIOUS, SOURCE_LINE, WRITER_KEYS, Raw, _numbered_line, _source_line_head, _source_lines,
                                      _source_value, encode)

KEYS = st.sampled_from(["kind", "t", "content", "seq", "coversThrough", "raw", "sourceKey", "model", "partial", *WRITER_KEYS])
#: text, sometimes with a lone surrogate (a JavaScript writer's cut emoji): orjson refuses it, the writer escapes it
TEXT = st.one_of(st.text(max_size=8), st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2))
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT, st.lists(TEXT, max_size=3))


def test_every_key_that_instructs_the_writer_is_one_it_drops():
    """The writer's hot path drops the keys in WRITER_KEYS, where :func:`encode` drops any key
    starting with "_": every such key the importers are given (a name in output) is in it."""
    named = {value for name, value in vars(output).items() if name.isupper() and isinstance(value, str) and value[:1] == "_"}
    assert named - {output.UNASSIGNED} == set(WRITER_KEYS)  # (UNASSIGNED: a folder's name, not a key)


def _plain(record: dict, seq: int) -> bytes:
    numbered = {**record, "seq": seq}
    if numbered.get(COVERS_PREVIOUS):
        numbered["coversThrough"] = seq - 1
    return encode(numbered)


@given(st.dictionaries(KEYS, VALUES, max_size=10), st.integers(1, 10**9), st.sampled_from(["none", "raw", "value"]))
@settings(max_examples=300, deadline=None)
def test_a_numbered_line_is_the_plain_encoding(record, seq, raw):
    if raw == "raw":
        record["raw"] = Raw(b'{"type":"user","x":[1,2]}')
    elif raw == "value":
        record["raw"] = {"type": "user"}
    line, value = _numbered_line(record, seq)
    assert line == _plain(record, seq)
    parsed = json.loads(line)  # the copy given with the line: what parsing it gives, but the spliced Raw
    if isinstance(record.get("raw"), Raw):
        assert parsed.pop("raw") == {"type": "user", "x": [1, 2]}
    try:
        orjson.dumps(value)
    except TypeError:  # a surrogate: the line escapes it (as above), and parsing may join two into one character
        return
    assert value == parsed


#: a source line as a rollout holds it: one JSON value on one line, or a pretty-printed one (compacted)
SOURCE_LINES = st.one_of(st.dictionaries(st.text(max_size=4), VALUES, max_size=4).map(lambda v: json.dumps(v).encode()),
                         st.dictionaries(st.text(max_size=4), st.integers(), max_size=3).map(lambda v: json.dumps(v, indent=1).encode()),
                         st.just(b'{"a":1,\r"b":2}'), st.just(b' \t{"a":1} '))


@given(TEXT, st.integers(0, 10**12), st.integers(1, 10**9), SOURCE_LINES)
@settings(max_examples=300, deadline=None)
def test_a_source_line_event_made_without_its_record_is_the_numbered_line(t, offset, seq, data):
    # the writer makes each source-line event (a Codex rollout's mirrors: most of its lines) from a
    # template: the same bytes, and the same copy of the record, as numbering the event's record
    record = {"kind": "event", "t": t, "type": SOURCE_LINE, AT: offset, "raw": Raw(data)}
    kept = data if b"\n" not in data and b"\r" not in data else Raw(data).data  # (as _source_records gives it)
    line, value = _numbered_line(record, seq)
    assert _source_lines(_source_line_head(t), seq, [(offset, kept)]) == [line] and _source_value(t, offset, seq) == value
