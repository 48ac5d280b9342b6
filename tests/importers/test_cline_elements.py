"""A long Cline / Roo task's message array is read element by element (cline.jsonfile.elements): for
any JSON array, in any layout, its elements are what parsing it whole gives; any document the whole
parse would refuse (a cut at any byte, any byte changed) is refused too, and read whole as before."""

from __future__ import annotations

import json

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from toolkit.importers.cline.jsonfile import elements
from toolkit.parse import loads

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from('"\\[]{},:\n\t🙂'), max_size=12)
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=12)
LAYOUTS = st.sampled_from([{"separators": (",", ":")}, {"indent": 2}, {"indent": "\t", "ensure_ascii": False}, {}])


def _document(items: list, layout: dict) -> bytes:
    return json.dumps(items, **layout).encode("utf-8")


@given(st.lists(VALUES, max_size=8), LAYOUTS, st.sampled_from([b"", b" \n", b"\r\n\t"]))
@example([], {}, b"")
@example([[], {}, "", "]", "[,{", '\\"'], {"indent": 2}, b"\n")
def test_any_array_s_elements_are_what_a_whole_parse_gives(items, layout, padding):
    data = padding + _document(items, layout) + padding
    found = elements(data)
    assert found is not None and len(found) == len(items)
    assert list(found) == orjson.loads(data) and [found[i] for i in range(len(found))] == list(found)


@given(st.lists(VALUES, min_size=1, max_size=6), LAYOUTS, st.data())
def test_a_cut_array_is_never_read_element_by_element(items, layout, data):
    document = _document(items, layout)
    cut = data.draw(st.integers(0, len(document) - 1))
    assert elements(document[:cut]) is None


@given(st.lists(VALUES, min_size=1, max_size=6), LAYOUTS, st.data())
def test_a_changed_byte_is_refused_as_a_whole_parse_refuses_it(items, layout, data):
    document = bytearray(_document(items, layout))
    at = data.draw(st.integers(0, len(document) - 1))
    document[at] = data.draw(st.integers(0, 255))
    found = elements(bytes(document))
    try:
        whole = loads(bytes(document))  # (as load_json parses a whole document: a lone surrogate's escape is JSON)
    except ValueError:
        assert found is None
        return
    assert found is None or list(found) == whole


def test_what_is_no_array_is_read_whole():
    for document in (b'{"a": [1, 2]}', b'"[1]"', b"[1, 2] x", b"[1, 2}", b"[1,]", b"[,1]", b"[1 2]", b"", b"  "):
        assert elements(document) is None, document
