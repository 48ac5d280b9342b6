"""The writer's line for a numbered record (output._numbered_line, one copy of the record) is the
line the plain way makes: the record with ``seq`` set, ``coversThrough`` when it covers the one
before, the writer's own ``_`` keys dropped and a :class:`Raw` spliced in last, in key order."""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.importers.output import COVERS_PREVIOUS, Raw, _numbered_line, encode

KEYS = st.sampled_from(["kind", "t", "content", "seq", "coversThrough", "raw", "sourceKey", "_alias", COVERS_PREVIOUS,
                        "_lineId", "model", "partial"])
#: text, sometimes with a lone surrogate (a JavaScript writer's cut emoji): orjson refuses it, the writer escapes it
TEXT = st.one_of(st.text(max_size=8), st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2))
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT, st.lists(TEXT, max_size=3))


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
