"""Tolerant replay of VS Code chat ``.jsonl`` mutation logs (SOURCES.md §3.3).

Expected states are written out by hand, never computed with the module under test.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.importers import sqlite as db
from toolkit.importers.vscode.replay import (
    MAX_PAD,
    Replayed,
    SourceUnreadable,
    choose,
    last_timestamp,
    load_json,
    replay_jsonl,
    request_count,
)

BOM = "\ufeff".encode()


def log(*entries: object, terminated: bool = True) -> bytes:
    """Serialise entries as VS Code does: one compact JSON object per ``\\n``-terminated line."""
    text = b"\n".join(e if isinstance(e, bytes) else json.dumps(e, separators=(",", ":")).encode() for e in entries)
    return text + b"\n" if terminated and entries else text


def init(v: dict) -> dict:
    return {"kind": 0, "v": v}


def set_(k: list, v: object) -> dict:
    return {"kind": 1, "k": k, "v": v}


def push(k: list, v: list | None = None, i: int | None = None) -> dict:
    entry: dict = {"kind": 2, "k": k}
    if v is not None:
        entry["v"] = v
    if i is not None:
        entry["i"] = i
    return entry


def delete(k: list) -> dict:
    return {"kind": 3, "k": k}


# --- a 40-line session log: streaming, truncation, padding, deletes, compaction -------------

T = 1_700_000_000_000

LONG_LOG = [
    # 1: initial state
    init({"version": 3, "sessionId": "abc", "creationDate": T, "initialLocation": "panel",
          "requests": [], "inputState": {"text": "draft"}}),
    set_(["customTitle"], "First title"),                                                   # 2
    push(["requests"], [{"requestId": "r0", "timestamp": T + 1000, "message": {"text": "hi"},
                         "response": [], "modelState": {"value": 0}}]),                     # 3
    push(["requests", 0, "response"], [{"value": "Hel"}], i=0),                             # 4 streaming
    push(["requests", 0, "response"], [{"value": "Hello"}], i=0),                           # 5 part 0 grows
    push(["requests", 0, "response"], [{"kind": "thinking", "value": "hmm"}], i=1),         # 6
    set_(["requests", 0, "modelState"], {"value": 1, "completedAt": T + 2000}),             # 7
    delete(["inputState"]),                                                                 # 8 dict delete
    push(["requests"], [{"requestId": "r1", "timestamp": T + 3000,
                         "message": {"text": "second"}, "response": []}]),                  # 9 push, no i
    set_(["requests", 1, "message", "text"], "second (edited)"),                            # 10 deep set
    push(["requests", 1, "response"], [{"value": "a"}, {"value": "b"}, {"value": "c"}]),    # 11
    push(["requests", 1, "response"], i=1),                                                 # 12 truncate only
    push(["requests", 1, "response"], [{"value": "d"}], i=3),                               # 13 pad (i > len)
    delete(["requests", 1, "response", 0]),                                                 # 14 list delete
    set_(["requests", 1, "response", 1], {"value": "x"}),                                   # 15 set in list
    set_(["requests", 1, "result"], {"timings": {"totalElapsed": 5}}),                      # 16
    set_(["requests", 1, "result", "timings", "firstProgress"], 2),                         # 17
    delete(["requests", 1, "result", "timings", "totalElapsed"]),                           # 18
    push(["requests"], [{"requestId": "r2", "timestamp": T + 5000, "response": []},
                        {"requestId": "r3", "timestamp": T + 6000, "response": "plain"}]),  # 19
    set_(["requests", 3, "response"], [{"value": "replaced"}]),                             # 20
    push(["tags"], ["t1"]),                                                                 # 21 missing → new
    push(["tags"], ["t2", "t3"]),                                                           # 22
    set_(["customTitle"], "Second title"),                                                  # 23
    push(["requests"], [{"requestId": "r3b", "timestamp": T + 7000, "response": []}], i=3), # 24 i < len
    # 25: compaction — a fresh full state, unrelated to what was replayed so far
    init({"version": 3, "sessionId": "abc", "creationDate": T, "customTitle": "Compacted",
          "requests": [{"requestId": "r0", "timestamp": T + 1000, "response": [{"value": "Hello"}], "vote": 1},
                       {"requestId": "r1", "timestamp": T + 3000, "response": []}]}),
    push(["requests"], [{"requestId": "r2", "timestamp": T + 10000, "message": {"text": "third"},
                         "response": [], "modelState": {"value": 0}}]),                     # 26
    push(["requests", 2, "response"], [{"value": "Str"}], i=0),                             # 27 streaming
    push(["requests", 2, "response"], [{"value": "Streaming"}], i=0),                       # 28
    push(["requests", 2, "response"], [{"kind": "toolInvocationSerialized", "toolId": "read",
                                        "toolCallId": "c1"}], i=1),                         # 29
    push(["requests", 2, "response"], [{"value": "Done."}], i=2),                           # 30
    push(["requests", 2, "response"], [{"value": "Done!"}], i=2),                           # 31 replace last
    set_(["requests", 2, "modelState"], {"value": 1, "completedAt": T + 12000}),            # 32
    set_(["requests", 2, "timeSpentWaiting"], T + 10500),                                   # 33
    delete(["requests", 0, "vote"]),                                                        # 34
    set_(["requests", 1, "isHidden"], True),                                                # 35
    {"kind": 1, "k": ["requests", 1, "isHidden"]},                                          # 36 v undefined
    set_(["requests", 0, "response", 0, "value"], "Hello there"),                           # 37
    push(["requests", 1, "response"], [{"value": "late"}]),                                 # 38
    set_(["customTitle"], "Final title"),                                                   # 39
    set_([], {"ignored": True}),                                                            # 40 empty k
]

AFTER_20 = {
    "version": 3, "sessionId": "abc", "creationDate": T, "initialLocation": "panel",
    "customTitle": "First title",
    "requests": [
        {"requestId": "r0", "timestamp": T + 1000, "message": {"text": "hi"},
         "response": [{"value": "Hello"}, {"kind": "thinking", "value": "hmm"}],
         "modelState": {"value": 1, "completedAt": T + 2000}},
        {"requestId": "r1", "timestamp": T + 3000, "message": {"text": "second (edited)"},
         "response": [None, {"value": "x"}, None, {"value": "d"}],
         "result": {"timings": {"firstProgress": 2}}},
        {"requestId": "r2", "timestamp": T + 5000, "response": []},
        {"requestId": "r3", "timestamp": T + 6000, "response": [{"value": "replaced"}]},
    ],
}

AFTER_24 = {
    "version": 3, "sessionId": "abc", "creationDate": T, "initialLocation": "panel",
    "customTitle": "Second title",
    "requests": [
        {"requestId": "r0", "timestamp": T + 1000, "message": {"text": "hi"},
         "response": [{"value": "Hello"}, {"kind": "thinking", "value": "hmm"}],
         "modelState": {"value": 1, "completedAt": T + 2000}},
        {"requestId": "r1", "timestamp": T + 3000, "message": {"text": "second (edited)"},
         "response": [None, {"value": "x"}, None, {"value": "d"}],
         "result": {"timings": {"firstProgress": 2}}},
        {"requestId": "r2", "timestamp": T + 5000, "response": []},
        {"requestId": "r3b", "timestamp": T + 7000, "response": []},
    ],
    "tags": ["t1", "t2", "t3"],
}

FINAL = {
    "version": 3, "sessionId": "abc", "creationDate": T, "customTitle": "Final title",
    "requests": [
        {"requestId": "r0", "timestamp": T + 1000, "response": [{"value": "Hello there"}]},
        {"requestId": "r1", "timestamp": T + 3000, "response": [{"value": "late"}]},
        {"requestId": "r2", "timestamp": T + 10000, "message": {"text": "third"},
         "response": [{"value": "Streaming"},
                      {"kind": "toolInvocationSerialized", "toolId": "read", "toolCallId": "c1"},
                      {"value": "Done!"}],
         "modelState": {"value": 1, "completedAt": T + 12000},
         "timeSpentWaiting": T + 10500},
    ],
}


def clean(result: Replayed) -> None:
    assert result.problems == []
    assert not result.editor_unreadable
    assert not result.torn_tail


def test_long_log_replays_to_the_hand_computed_state():
    assert len(LONG_LOG) == 40
    result = replay_jsonl(log(*LONG_LOG))
    clean(result)
    assert result.mutations == 40
    assert result.state == FINAL


@pytest.mark.parametrize(("lines", "expected"), [(20, AFTER_20), (24, AFTER_24)])
def test_long_log_prefixes(lines, expected):
    result = replay_jsonl(log(*LONG_LOG[:lines]))
    clean(result)
    assert result.mutations == lines
    assert result.state == expected


def test_crlf_line_endings_and_blank_lines_are_fine():
    data = log(*LONG_LOG).replace(b"\n", b"\r\n\n")
    result = replay_jsonl(data)
    clean(result)
    assert result.mutations == 40
    assert result.state == FINAL


def test_kind0_states_do_not_alias():
    data = log(init({"version": 3, "requests": [{"response": []}]}),
               push(["requests", 0, "response"], [{"value": "a"}]),
               init({"version": 3, "requests": [{"response": []}]}),
               push(["requests", 0, "response"], [{"value": "b"}]))
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {"version": 3, "requests": [{"response": [{"value": "b"}]}]}


# --- tolerance ---------------------------------------------------------------------------


def test_bom_at_file_start():
    result = replay_jsonl(BOM + log(*LONG_LOG))
    assert result.state == FINAL
    assert result.editor_unreadable
    assert result.problems == [] and not result.torn_tail
    assert result.mutations == 40


def test_bom_at_a_line_start():
    lines = log(*LONG_LOG).split(b"\n")
    lines[10] = BOM + BOM + lines[10]
    result = replay_jsonl(b"\n".join(lines))
    assert result.state == FINAL
    assert result.editor_unreadable and result.problems == []


def test_torn_unterminated_last_line_is_ignored():
    data = log(*LONG_LOG) + b'{"kind":1,"k":["customTitle"],"v":"tor'
    result = replay_jsonl(data)
    assert result.state == FINAL
    assert result.torn_tail
    assert not result.editor_unreadable
    assert result.problems == []
    assert result.mutations == 40


def test_complete_unterminated_last_line_is_applied():
    data = log(*LONG_LOG, set_(["customTitle"], "Unterminated"), terminated=False)
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {**FINAL, "customTitle": "Unterminated"}
    assert result.mutations == 41


def test_bad_terminated_last_line_is_a_problem_not_a_torn_tail():
    data = log(*LONG_LOG, b'{"kind":1,"k":["customTitle"],"v":"tor')
    result = replay_jsonl(data)
    assert result.state == FINAL
    assert not result.torn_tail and result.editor_unreadable
    assert [line for line, _ in result.problems] == [41]


def test_bad_middle_line_is_skipped_with_its_line_number():
    entries = list(LONG_LOG)
    entries.insert(22, b'{"kind":1,"k":["customTitle"],"v":"garbage')  # becomes line 23
    entries.insert(30, b"\x00\x00\x00\x00")                                # line 31: NULs from a crash
    result = replay_jsonl(log(*entries))
    assert result.state == FINAL
    assert [line for line, _ in result.problems] == [23, 31]
    assert all("not JSON" in message for _, message in result.problems)
    assert result.editor_unreadable and not result.torn_tail
    assert result.mutations == 40


def test_non_object_lines_and_unknown_kinds_are_skipped():
    data = log(init({"version": 3, "requests": []}),
               b"[1, 2]",
               b"42",
               {"kind": 7, "k": ["x"], "v": 1},
               {"kind": True, "k": ["x"], "v": 1},
               {"k": ["x"], "v": 1},
               {"kind": 0, "v": [1]},
               set_(["customTitle"], "kept"))
    result = replay_jsonl(data)
    assert result.state == {"version": 3, "requests": [], "customTitle": "kept"}
    assert [line for line, _ in result.problems] == [2, 3, 4, 5, 6, 7]
    assert result.editor_unreadable
    assert result.mutations == 2


def test_kind_as_integral_float_is_accepted():
    result = replay_jsonl(b'{"kind":0.0,"v":{"a":1}}\n{"kind":1.0,"k":["a"],"v":2}\n')
    clean(result)
    assert result.state == {"a": 2}


def test_no_initial_entry_without_fallback():
    data = log(push(["requests"], [{"requestId": "r0", "timestamp": 5}]), set_(["customTitle"], "t"))
    result = replay_jsonl(data)
    assert result.state == {"version": 3, "requests": [{"requestId": "r0", "timestamp": 5}], "customTitle": "t"}
    assert result.editor_unreadable
    assert result.problems == []
    assert result.mutations == 2


def test_no_initial_entry_with_fallback_applies_to_a_copy():
    fallback = {"version": 3, "sessionId": "s", "requests": [{"requestId": "r0", "response": []}]}
    before = copy.deepcopy(fallback)
    data = log(push(["requests", 0, "response"], [{"value": "more"}]), set_(["customTitle"], "t"))
    result = replay_jsonl(data, fallback=fallback)
    assert result.state == {"version": 3, "sessionId": "s", "customTitle": "t",
                            "requests": [{"requestId": "r0", "response": [{"value": "more"}]}]}
    assert fallback == before
    assert result.editor_unreadable


def test_late_initial_entry_replaces_the_fallback_but_stays_editor_unreadable():
    data = log(set_(["customTitle"], "lost"), init({"version": 3, "requests": []}), set_(["x"], 1))
    result = replay_jsonl(data, fallback={"version": 3, "requests": [], "y": 2})
    assert result.state == {"version": 3, "requests": [], "x": 1}
    assert result.editor_unreadable
    assert result.mutations == 3


@pytest.mark.parametrize("data", [b"", b"\n", b"\n\n\n", BOM, BOM + b"\n"])
def test_empty_log(data):
    result = replay_jsonl(data)
    assert result.state == {"version": 3, "requests": []}
    assert result.editor_unreadable
    assert result.mutations == 0 and result.problems == [] and not result.torn_tail
    fallback = {"version": 3, "requests": [{"requestId": "a"}]}
    again = replay_jsonl(data, fallback=fallback)
    assert again.state == fallback and again.state is not fallback
    assert again.state["requests"] is not fallback["requests"]


def test_only_a_torn_line():
    result = replay_jsonl(b'{"kind":0,"v":{"version":3,"requ')
    assert result.torn_tail and result.editor_unreadable
    assert result.state == {"version": 3, "requests": []}
    assert result.problems == [] and result.mutations == 0


@pytest.mark.parametrize("entry", [
    set_(["nope", "x"], 1),                           # missing key
    set_(["requests", 5, "response"], []),            # index out of range
    set_(["requests", -1, "response"], []),           # negative index
    set_(["customTitle", "x"], 1),                    # through a string
    set_(["customTitle", "x", "y"], 1),
    set_(["requests", "first", "x"], 1),              # a name used on a list
    set_(["requests", 0, "message", "text", 0], "x"), # assign inside a string
    set_(["requests", 1.5], {}),                      # non-integer index
    set_([["a"], "x"], 1),                            # key that is a list
    push(["customTitle"], ["x"]),                     # push onto a string
    push(["requests", 0, "message"], ["x"]),          # push onto an object
    push([], ["x"]),                                  # push with no path
    push(["requests"], ["x"], i=-1),                  # bad length
    push(["requests"], ["x"], i=MAX_PAD + 10),        # absurd padding
    push(["requests"], {"not": "a list"}),            # values not a list
    delete(["requests", 3, "x"]),                     # delete through a missing element
    {"kind": 1, "v": 1},                              # no path at all
    {"kind": 3, "k": "requests"},                     # path not a list
])
def test_unwalkable_paths_are_skipped_with_their_line(entry):
    start = {"version": 3, "customTitle": "t",
             "requests": [{"requestId": "r0", "message": {"text": "hi"}, "response": []}]}
    data = log(init(start), entry, set_(["after"], True))
    result = replay_jsonl(data)
    assert result.state == {**start, "after": True}
    assert len(result.problems) == 1 and result.problems[0][0] == 2
    assert isinstance(result.problems[0][1], str) and result.problems[0][1]
    assert result.editor_unreadable
    assert result.mutations == 2


def test_javascript_like_key_coercion():
    data = log(init({"version": 3, "requests": [{"n": 0}], "byId": {"7": "old"}}),
               set_(["requests", "0", "n"], 1),   # arr["0"] is arr[0]
               set_(["byId", 7], "new"),          # obj[7] is obj["7"]
               set_(["requests", 0.0, "m"], 2))   # 0.0 === 0
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {"version": 3, "requests": [{"n": 1, "m": 2}], "byId": {"7": "new"}}


def test_set_past_the_end_of_a_list_pads_like_javascript():
    data = log(init({"a": [1]}), set_(["a", 1], 2), set_(["a", 4], 5))
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {"a": [1, 2, None, None, 5]}


def test_deletes():
    data = log(init({"a": [1, 2, 3], "b": {"c": 1, "d": 2}}),
               delete(["a", 1]),       # list: becomes null
               delete(["a", 9]),       # past the end: nothing to delete
               delete(["b", "c"]),     # dict: removed
               delete(["b", "zz"]),    # missing key: nothing to do
               delete([]),             # empty path: no-op
               {"kind": 1, "k": ["b", "d"]})  # a set whose value was undefined is a delete
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {"a": [1, None, 3], "b": {}}
    assert result.mutations == 7


def test_push_onto_missing_null_or_falsy_starts_a_new_list():
    data = log(init({"n": None, "z": 0, "e": "", "f": False, "xs": [None, None]}),
               push(["n"], [1]), push(["z"], [2]), push(["e"], [3]), push(["f"], [4]),
               push(["m"], [5]), push(["xs", 1], [6]), push(["xs", 3], [7]),
               push(["q"]), push(["r"], i=2), push(["s"], None, i=0))
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {"n": [1], "z": [2], "e": [3], "f": [4], "m": [5],
                            "xs": [None, [6], None, [7]], "q": [], "r": [None, None], "s": []}


def test_push_keeps_the_same_list_object_semantics():
    data = log(init({"a": [1, 2, 3, 4]}), push(["a"], [9], i=2), push(["a"], [], i=1), push(["a"], None))
    result = replay_jsonl(data)
    clean(result)
    assert result.state == {"a": [1]}


def test_invalid_utf8_is_replaced_and_noted_but_applied():
    data = log(init({"version": 3, "requests": []})) + b'{"kind":1,"k":["customTitle"],"v":"caf\xe9"}\n'
    result = replay_jsonl(data)
    assert result.state == {"version": 3, "requests": [], "customTitle": "caf\ufffd"}
    assert [line for line, _ in result.problems] == [2]
    assert "U+FFFD" in result.problems[0][1]
    assert not result.editor_unreadable
    assert result.mutations == 2


def test_lone_surrogate_escape_is_valid_json():
    data = log(init({"version": 3, "requests": []})) + b'{"kind":1,"k":["customTitle"],"v":"cut \\ud83d"}\n'
    result = replay_jsonl(data)
    clean(result)
    assert result.state["customTitle"] == "cut \ud83d"


def test_deep_nesting_does_not_raise():
    deep = b"[" * 100_000 + b"]" * 100_000
    result = replay_jsonl(log(init({"a": 1})) + deep + b"\n" + log(set_(["b"], 2)))
    assert result.state == {"a": 1, "b": 2}
    assert [line for line, _ in result.problems] == [2]


# --- load_json ---------------------------------------------------------------------------


def test_load_json():
    assert SourceUnreadable is db.SourceUnreadable
    assert load_json(b'{"version": 3, "requests": []}') == {"version": 3, "requests": []}
    assert load_json(BOM + b'{"a": 1}') == {"a": 1}
    assert load_json(b'{"t": "\\udc00"}') == {"t": "\udc00"}


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "not JSON"),
    (b"{", "not JSON"),
    (b"[]", "not a session object"),
    (b"null", "not a session object"),
    (b'"text"', "not a session object"),
    (b'{"a": "\xff"}', "not UTF-8"),
    (b"[" * 100_000, "not JSON"),
])
def test_load_json_rejects(data, reason):
    with pytest.raises(SourceUnreadable, match=reason):
        load_json(data)


# --- request_count / last_timestamp / choose ----------------------------------------------


def test_request_count_and_last_timestamp():
    state = {"requests": [{"timestamp": 5}, None, {"timestamp": 9.5}, {"timestamp": "12"},
                          {"timestamp": True}, {}]}
    assert request_count(state) == 5  # the null hole is not a request
    assert last_timestamp(state) == 9.5
    assert request_count({}) == 0 and last_timestamp({}) is None
    assert request_count({"requests": "x"}) == 0 and last_timestamp({"requests": {"timestamp": 1}}) is None
    assert last_timestamp({"requests": [{"timestamp": None}]}) is None


def session(*stamps: int | None) -> dict:
    return {"version": 3, "requests": [{"timestamp": s} if s is not None else {} for s in stamps]}


def replayed(state: dict) -> Replayed:
    return Replayed(state=state, problems=[], editor_unreadable=False, torn_tail=False, mutations=1)


def test_choose_single_source():
    a = session(1)
    assert choose(a, None) == ("json", a, None)
    b = replayed(session(1))
    assert choose(None, b) == ("jsonl", b.state, None)
    with pytest.raises(ValueError):
        choose(None, None)


def test_choose_agreeing_copies_prefers_jsonl_silently():
    a, b = session(1, 2), replayed(session(1, 2))
    shape, state, note = choose(a, b)
    assert (shape, note) == ("jsonl", None) and state is b.state


@pytest.mark.parametrize(("json_stamps", "jsonl_stamps", "winner", "why"), [
    ((1, 2, 3), (1, 2), "json", "more requests"),
    ((1, 2), (1, 2, 3), "jsonl", "more requests"),
    ((1, 2), (1, 5, 9, 0), "jsonl", "more requests"),       # count beats time
    ((1, 9), (1, 5), "json", "later"),
    ((1, 5), (1, 9), "jsonl", "later"),
    ((1, 5), (1, None), "json", "later"),                   # a timestamp beats none
    ((1, None), (1, 5), "jsonl", "later"),
])
def test_choose_diverging_copies(json_stamps, jsonl_stamps, winner, why):
    a, b = session(*json_stamps), replayed(session(*jsonl_stamps))
    shape, state, note = choose(a, b)
    assert shape == winner
    assert state is (a if winner == "json" else b.state)
    assert note is not None and why in note and f"kept the .{winner}" in note
    assert ".json (" in note and ".jsonl (" in note


def test_choose_ignores_null_holes_when_counting():
    a = {"requests": [{"timestamp": 1}, {"timestamp": 2}]}
    b = replayed({"requests": [{"timestamp": 1}, None, None]})
    assert choose(a, b)[0] == "json"


# --- property: random set/push sequences replay to the model's state ----------------------

LEAF = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=4) \
    | st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
KEYS = st.sampled_from(["a", "b", "requests", "response", "0", ""])


def containers(node: object, path: tuple = ()) -> list[tuple[tuple, object]]:
    """Every dict or list in ``node`` with its path (a different traversal from the module's)."""
    found = []
    if isinstance(node, dict):
        found.append((path, node))
        for key in sorted(node):
            found += containers(node[key], path + (key,))
    elif isinstance(node, list):
        found.append((path, node))
        for index, item in enumerate(node):
            found += containers(item, path + (index,))
    return found


def updated(node: object, path: tuple, change) -> object:
    """A new tree with ``change(old)`` at ``path`` (``old`` is None when absent); nothing mutated."""
    if not path:
        return change(node)
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        copy_ = dict(node)
        copy_[head] = updated(node.get(head), rest, change)
        return copy_
    assert isinstance(node, list) and isinstance(head, int)
    items = list(node) + [None] * max(0, head + 1 - len(node))
    items[head] = updated(items[head], rest, change)
    return items


def pushed(old: object, values: list | None, length: int | None) -> list:
    base = list(old) if isinstance(old, list) else []
    if length is not None:
        base = (base + [None] * length)[:length]
    return base + list(values or [])


@st.composite
def scenarios(draw):
    model = draw(st.dictionaries(KEYS, JSON, max_size=4))
    lines = [init(model)]
    for _ in range(draw(st.integers(0, 25))):
        path, node = draw(st.sampled_from(containers(model)))
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)) | KEYS) if node else draw(KEYS)
        elif node:
            key = draw(st.integers(0, len(node) - 1))
        else:
            continue  # nothing to address in an empty list; pushes reach it through its parent
        if draw(st.booleans()):
            value = draw(JSON)
            lines.append(set_(list(path + (key,)), value))
            model = updated(model, path + (key,), lambda _old, value=value: value)
        else:
            current = node.get(key) if isinstance(node, dict) else node[key]
            if current is not None and not isinstance(current, list):
                continue  # VS Code only pushes onto lists (or creates them)
            size = len(current) if isinstance(current, list) else 0
            length = draw(st.none() | st.integers(0, size + 3))
            values = draw(st.none() | st.lists(JSON, max_size=3))
            lines.append(push(list(path + (key,)), values, length))
            model = updated(model, path + (key,), lambda old, v=values, n=length: pushed(old, v, n))
    return lines, model


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_replay_matches_a_reference_model(scenario):
    lines, model = scenario
    result = replay_jsonl(log(*lines))
    assert result.problems == []
    assert not result.editor_unreadable and not result.torn_tail
    assert result.mutations == len(lines)
    assert result.state == model


# --- entries run together on one line (issue 23 item 3) -----------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=st.integers(1, 37), count=st.integers(2, 3))
def test_entries_run_together_on_one_line_are_each_applied_and_named(where, count):
    """A writer that lost a newline: the entries on that line are applied in order (the state is the
    whole log's), the line is named in ``joined``, and VS Code (which cannot open it) is said to."""
    lines = log(*LONG_LOG).split(b"\n")
    joined = b"".join(lines[where:where + count])
    data = b"\n".join(lines[:where] + [joined] + lines[where + count:])
    result = replay_jsonl(data)
    assert result.state == FINAL
    assert result.joined == [(where + 1, count)]
    assert result.problems == [] and result.editor_unreadable and not result.torn_tail
    assert result.mutations == 40 and result.skipped == []


def test_a_whole_entry_spliced_with_a_cut_one_is_applied_and_the_rest_named():
    lines = log(*LONG_LOG).split(b"\n")
    lines[5] = lines[5][: len(lines[5]) // 2] + lines[6]
    del lines[6]
    result = replay_jsonl(b"\n".join(lines))
    assert result.joined == [] and [line for line, _ in result.problems] == [6]
    assert "no entry" in result.problems[0][1] and result.mutations == 39


# --- a compacted log, its requests read as they are used ---------------------------------------


def plain(value: object) -> object:
    """``value`` with every list a plain one (a LazyList's elements read)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize("entries", [LONG_LOG, LONG_LOG[:20], LONG_LOG[:24]], ids=["40", "20", "24"])
def test_a_long_initial_line_s_requests_read_as_used_replay_alike(entries):
    whole = replay_jsonl(log(*entries))
    lazy = replay_jsonl(log(*entries), long_line=0)
    clean(lazy)
    assert lazy.mutations == whole.mutations and plain(lazy.state) == whole.state


_REQUEST = st.fixed_dictionaries({"requestId": st.text(max_size=3), "response": st.lists(st.fixed_dictionaries({"value": st.text(max_size=3)}), max_size=2)})
_OPS = st.lists(st.one_of(
    st.builds(lambda v, i: {"kind": 2, "k": ["requests"], "v": v, **({"i": i} if i is not None else {})},
              st.lists(_REQUEST, max_size=2), st.none() | st.integers(0, 4)),
    st.builds(lambda n, v: {"kind": 1, "k": ["requests", n, "response"], "v": v}, st.integers(0, 4), st.lists(st.text(max_size=2), max_size=2)),
    st.builds(lambda n, v: {"kind": 2, "k": ["requests", n, "response"], "v": [v]}, st.integers(0, 4), st.text(max_size=2)),
    st.builds(lambda n: {"kind": 3, "k": ["requests", n]}, st.integers(0, 4)),
    st.builds(lambda n: {"kind": 1, "k": ["requests", n], "v": None}, st.integers(0, 4)),
    st.builds(lambda t: {"kind": 1, "k": ["customTitle"], "v": t}, st.text(max_size=3))), max_size=8)


@given(st.lists(_REQUEST | st.none(), max_size=5), _OPS)
def test_any_mutations_after_a_long_initial_line_replay_as_a_whole_read_does(requests, ops):
    """The kind 0 line's requests unread (a LazyList) until a mutation or a pass reads them: the state,
    the problems and the counts are what replaying the parsed line gives."""
    data = log(init({"version": 3, "sessionId": "s", "requests": requests}), *ops)
    whole, lazy = replay_jsonl(data), replay_jsonl(data, long_line=0)
    assert plain(lazy.state) == whole.state
    assert (lazy.problems, lazy.mutations, lazy.skipped) == (whole.problems, whole.mutations, whole.skipped)
    assert request_count(lazy.state) == request_count(whole.state) and last_timestamp(lazy.state) == last_timestamp(whole.state)
