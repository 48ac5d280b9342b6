"""A long Cline / Roo task's message array, and a long VS Code chat's ``requests``, are read element by
element (toolkit.jsonarray): for any JSON array, in any layout, alone or as a member of an
object, its elements are what parsing it whole gives; any document the whole parse would refuse (a cut
at any byte, any byte changed) is refused too, and read whole as before."""

from __future__ import annotations

import json

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from toolkit.jsonarray import array_member, elements
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


@given(st.lists(VALUES, max_size=6), st.dictionaries(_TEXT.filter(lambda k: k != "requests"), VALUES, max_size=4), LAYOUTS, st.data())
@example([1, [2]], {"a": "]", "b": {"requests": [3]}}, {"indent": 2}, None)
def test_an_object_s_array_member_is_found_and_read_as_a_whole_parse_reads_it(items, others, layout, data):
    members = list(others.items())
    at = data.draw(st.integers(0, len(members))) if data is not None else 1
    document = dict([*members[:at], ("requests", items), *members[at:]])
    raw = json.dumps(document, **layout).encode("utf-8")
    member = array_member(raw, "requests")
    assert member is not None
    head, found = member
    assert loads(head) == {**document, "requests": []}
    assert list(found) == items and found.objects() == sum(type(i) is dict for i in items)


@given(st.lists(VALUES, min_size=1, max_size=6), LAYOUTS, st.data())
def test_a_cut_or_changed_object_is_never_read_by_member(items, layout, data):
    document = bytearray(json.dumps({"v": 3, "requests": items, "t": "x"}, **layout).encode("utf-8"))
    if data.draw(st.booleans()):
        document = document[:data.draw(st.integers(0, len(document) - 1))]
    else:
        at = data.draw(st.integers(0, len(document) - 1))
        document[at] = data.draw(st.integers(0, 255))
    document = bytes(document)
    member = array_member(document, "requests")
    try:
        whole = loads(document)
    except ValueError:
        whole = None
    if member is None:
        return
    try:
        head = loads(member[0])  # (what the reader parses next; else it reads it whole)
    except ValueError:
        return
    assert whole == {**head, "requests": list(member[1])}


def test_a_key_twice_or_no_object_is_read_whole():
    for document in (b'{"requests": [1], "requests": [2]}', b'[{"requests": [1]}]', b'{"requests": 1}', b'{"requests": [1]} x',
                     b'{"a": {"requests": [1]}}', b'{"requests": [1]'):
        assert array_member(document, "requests") is None, document


def test_a_long_string_cut_off_is_refused_in_one_pass():
    """A scan never searches: past a string that never ends, a search would try every byte after it
    (each try running to the end: a 2 MB string cut off took minutes).  A task file cut mid-message."""
    from toolkit.jsonarray import skeleton

    cut = b'[{"text": "' + b"x" * 2_000_000
    assert elements(cut) is None and array_member(b'{"requests": ' + cut, "requests") is None
    assert skeleton(b'{"kind": 0, "text": "' + b"y" * 2_000_000) == {"kind": 0}


def test_a_later_member_of_the_same_key_makes_the_document_read_whole():
    """A parse keeps the last of two members of one key: an array followed by a scalar one is refused,
    so that the reader parses it whole and gets what a parse gets."""
    from toolkit.jsonarray import parsed_at

    assert parsed_at(b'{"v": 3, "requests": [{"a": 1}], "requests": null}', ("requests",)) is None
    assert parsed_at(b'{"v": {"requests": [1]}, "v": 2}', ("v", "requests")) is None
    head, found = parsed_at(b'{"kind": 0, "v": {"title": "t", "requests": [{"a": 1}, null]}}', ("v", "requests"))
    assert head == {"kind": 0, "v": {"title": "t", "requests": []}} and list(found) == [{"a": 1}, None]
