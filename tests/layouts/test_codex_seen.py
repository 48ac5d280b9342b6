"""codex_seen.decide_stream decides a rollout read one record at a time, holding a window of
sketches: for any sequence it gives the decisions of the whole-list algorithm it replaced
(kept here as the reference: each pairing over the whole list, then the roles)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from toolkit.layouts import codex_seen
from toolkit.layouts.codex_seen import MIRROR_WINDOW, Sketch, decide, decide_stream

_KINDS = ["prompt", "user_item", "user", "injected", "assistant", "agent", "reasoning", "agent_reasoning", "call", "output",
          "end", "session_meta", "context", "compact", "interrupt", "error", "task_started", "ui-only", "other"]
_SKETCHES = st.lists(st.builds(Sketch, st.sampled_from(_KINDS), st.sampled_from([b"", b"a", b"b"]),
                               st.frozensets(st.sampled_from([b"a", b"b", b"c"]), max_size=2), st.sampled_from([None, "c1", "c2"]),
                               st.none(), st.sampled_from([None, "parent"])), max_size=60)


def _pair(sketches, secondary, primary, match) -> dict[int, int]:
    taken: set[int] = set()
    pairs: dict[int, int] = {}
    for i, item in enumerate(sketches):
        if item.kind not in secondary or not item.text:
            continue
        near = sorted(range(max(0, i - MIRROR_WINDOW), min(len(sketches), i + MIRROR_WINDOW + 1)), key=lambda j: (abs(j - i), j))
        for j in near:
            other = sketches[j]
            if j != i and j not in taken and other.kind in primary and match(item, other):
                taken.add(j)
                pairs[i] = j
                break
    return pairs


def _reference(sketches: list[Sketch]) -> list[tuple]:
    """The decisions as the whole-list algorithm made them: (role, skip, group, inherited)."""
    prompts_typed = any(s.kind in ("prompt", "user_item") for s in sketches)
    same, in_summary = codex_seen._same, codex_seen._in_summary
    mirrors = (_pair(sketches, {"user_item"}, {"prompt"}, same),
               _pair(sketches, {"user", "injected"}, {"prompt", "user_item"}, same) if prompts_typed else {},
               _pair(sketches, {"agent"}, {"assistant"}, same), _pair(sketches, {"agent_reasoning"}, {"reasoning"}, in_summary))
    group: dict[int, int] = {}
    for pairs in mirrors:
        for mirror, primary in pairs.items():
            group[primary] = min(group.get(primary, primary), mirror)
    calls = {s.call for s in sketches if s.kind == "call" and s.call is not None}
    replay = codex_seen._replay(sketches)
    out = []
    for i, item in enumerate(sketches):
        role, skip = codex_seen._role(item, any(i in pairs for pairs in mirrors), prompts_typed, calls.__contains__)
        if i == 0 and item.kind == "session_meta":
            role, skip = "meta", None
        out.append((role, skip, group.get(i, i), i in replay))
    return out


@settings(max_examples=400, deadline=None)
@given(sketches=_SKETCHES)
def test_decisions_read_one_record_at_a_time_are_those_of_the_whole_list(sketches):
    expected = _reference(sketches)
    assert [(d.role, d.skip, d.group, d.inherited) for d in decide(sketches)] == expected
    prompts_typed = any(s.kind in ("prompt", "user_item") for s in sketches)
    calls = {s.call for s in sketches if s.kind == "call" and s.call is not None}
    streamed = decide_stream(iter(sketches), prompts_typed=prompts_typed, is_call=calls.__contains__, replay=codex_seen._replay(sketches))
    decisions = [(d.role, d.skip, d.group, d.inherited) for d in streamed]
    assert decisions == expected
    assert all(i - MIRROR_WINDOW <= group <= i for i, (_r, _s, group, _inh) in enumerate(decisions)), "a record is keyed by one at most the window before it"


@settings(max_examples=150, deadline=None)
@given(sketches=_SKETCHES, cut=st.integers(0, 60))
def test_a_decider_kept_and_taken_up_again_decides_as_one_run(sketches, cut):
    """A resumed import's decider: kept (as JSON) after the records of an import, taken up again with
    the records a rollout grew by, it decides every record as one run over the whole list would."""
    import orjson

    cut = min(cut, len(sketches))
    expected = _reference(sketches)
    prompts_typed = any(s.kind in ("prompt", "user_item") for s in sketches)
    calls = {s.call for s in sketches if s.kind == "call" and s.call is not None}
    facts = {"prompts_typed": prompts_typed, "is_call": calls.__contains__, "replay": codex_seen._replay(sketches)}
    first = codex_seen.Decider(**facts)
    decisions = list(first.feed(iter(sketches[:cut])))
    kept = orjson.loads(orjson.dumps(first.snapshot()))
    again = codex_seen.Decider.restore(kept, **facts)
    decisions += list(again.feed(iter(sketches[cut:])))
    decisions += list(again.finish())
    assert [(d.role, d.skip, d.group, d.inherited) for d in decisions] == expected


#: Forks: a first session_meta naming a parent, then the parent's replay (from its session_meta to
#: a task_started after a turn) and the child's own records.
_FORKS = st.builds(lambda body: [Sketch("session_meta", parent="parent"), *body], st.lists(st.one_of(
    st.builds(Sketch, st.sampled_from(["session_meta", "task_started", "prompt", "agent", "assistant", "user_item"]),
              st.sampled_from([b"", b"a"])), _SKETCHES.map(lambda sketches: sketches[0] if sketches else Sketch("other"))),
    max_size=40))


@settings(max_examples=300, deadline=None)
@given(sketches=st.one_of(_SKETCHES, _FORKS))
def test_decisions_written_as_codes_are_those_of_the_whole_list(sketches):
    """The importer's hot loop (feed_codes, finish_codes) writes each decision as two bytes: the
    reference's decisions, and after the feed the same state to keep as feed leaves."""
    import orjson

    from toolkit.importers.codex import _CODES, _ROLES, _SKIPS

    expected = _reference(sketches)
    prompts_typed = any(s.kind in ("prompt", "user_item") for s in sketches)
    calls = {s.call for s in sketches if s.kind == "call" and s.call is not None}
    facts = {"prompts_typed": prompts_typed, "is_call": calls.__contains__, "replay": codex_seen._replay(sketches)}
    codes, groups = bytearray(len(sketches)), bytearray(len(sketches))
    fast, slow = codex_seen.Decider(**facts), codex_seen.Decider(**facts)
    fast.feed_codes(iter(sketches), codes, groups, _CODES)
    list(slow.feed(iter(sketches)))
    assert orjson.dumps(fast.snapshot()) == orjson.dumps(slow.snapshot())
    fast.finish_codes(codes, groups, _CODES)
    written = [(_ROLES[c >> 3], _SKIPS[c & 7], i - (g & 7), bool(g & 8)) for i, (c, g) in enumerate(zip(codes, groups))]
    assert written == expected


@settings(max_examples=200, deadline=None)
@given(sketches=st.one_of(_SKETCHES, _FORKS), prune=st.sampled_from([0, 1, 3, 7]), cut=st.integers(0, 60))
def test_codes_with_the_paired_primaries_dropped_at_any_pace(sketches, prune, cut):
    """feed_codes drops the primaries paired before the records it decided only every _PRUNE + 1
    records: whatever the pace, the decisions and the state kept at any point are the reference's."""
    import orjson

    from toolkit.importers.codex import _CODES, _ROLES, _SKIPS

    expected = _reference(sketches)
    prompts_typed = any(s.kind in ("prompt", "user_item") for s in sketches)
    calls = {s.call for s in sketches if s.kind == "call" and s.call is not None}
    facts = {"prompts_typed": prompts_typed, "is_call": calls.__contains__, "replay": codex_seen._replay(sketches)}
    cut = min(cut, len(sketches))
    codes, groups = bytearray(len(sketches)), bytearray(len(sketches))
    before, codex_seen._PRUNE = codex_seen._PRUNE, prune
    try:
        fast, slow = codex_seen.Decider(**facts), codex_seen.Decider(**facts)
        fast.feed_codes(iter(sketches[:cut]), codes, groups, _CODES)
        list(slow.feed(iter(sketches[:cut])))
        assert orjson.dumps(fast.snapshot()) == orjson.dumps(slow.snapshot())
        fast.feed_codes(iter(sketches[cut:]), codes, groups, _CODES)
        fast.finish_codes(codes, groups, _CODES)
    finally:
        codex_seen._PRUNE = before
    written = [(_ROLES[c >> 3], _SKIPS[c & 7], i - (g & 7), bool(g & 8)) for i, (c, g) in enumerate(zip(codes, groups))]
    assert written == expected


def test_codes_of_a_long_rollout_are_those_of_the_whole_list():
    """Past _PRUNE records (a thousand and more, as real rollouts have), with mirrors throughout."""
    from toolkit.importers.codex import _CODES, _ROLES, _SKIPS

    turn = [Sketch("task_started"), Sketch("prompt", b"p"), Sketch("user", b"p"), Sketch("reasoning", b"r", frozenset([b"r"])),
            Sketch("agent_reasoning", b"r"), Sketch("call", call="c"), Sketch("end", call="c"), Sketch("output", call="c"),
            Sketch("agent", b"a"), Sketch("assistant", b"a"), Sketch("ui-only")]
    sketches = [Sketch("session_meta")] + turn * 300
    expected = _reference(sketches)
    codes, groups = bytearray(len(sketches)), bytearray(len(sketches))
    decider = codex_seen.Decider(prompts_typed=True, is_call={"c"}.__contains__, replay=range(0))
    decider.feed_codes(iter(sketches), codes, groups, _CODES)
    assert max(len(used) for used in decider.taken) <= codex_seen._PRUNE + 2 * MIRROR_WINDOW + 2  # (memory stays flat)
    decider.finish_codes(codes, groups, _CODES)
    written = [(_ROLES[c >> 3], _SKIPS[c & 7], i - (g & 7), bool(g & 8)) for i, (c, g) in enumerate(zip(codes, groups))]
    assert written == expected
