"""What a scan of a Gemini CLI session keeps (GeminiFacts.settle): the answers a listing, the sweep
and a check ask for, the same as the whole chain of message sketches gives, for any sequence of
messages, updates, rewinds and $sets; not the sketches themselves, which a check of a whole
~/.gemini held for every session until its report was printed (fsck of 400 MB: 104 MiB)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.layouts.gemini import gemini, gemini_home, line, meta, name, user
from toolkit.fsck import check_folders
from toolkit.journal import scan_journal
from toolkit.layouts import GEMINI
from toolkit.layouts.gemini import GeminiFacts
from toolkit.parse import loads
from toolkit.stores import discover

IDS = ["a", "b", "c", "d", "e"]
SETTINGS = settings(max_examples=150, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

_line = st.one_of(
    st.builds(lambda mid, text: user(mid, text), st.sampled_from(IDS), st.sampled_from(["hi", "", "  ", "/help", "fix it"])),
    st.builds(lambda mid, text, model: gemini(mid, text, model=model) if model else {**gemini(mid, text), "model": None},
              st.sampled_from(IDS), st.sampled_from(["ok", ""]), st.sampled_from(["gemini-2.5-pro", "gemini-2.5-flash", None])),
    st.builds(lambda mid: {"$rewindTo": mid}, st.sampled_from([*IDS, "nope"])),
    st.builds(lambda summary: {"$set": {"summary": summary} if summary else {"lastUpdated": "2026-08-21T16:20:00.000Z"}},
              st.sampled_from([None, "a summary"])),
    st.builds(lambda kept: {"$set": {"messages": [user(mid, "again") for mid in kept]}}, st.lists(st.sampled_from(IDS), max_size=3)),
)


def _answers(facts: GeminiFacts) -> tuple:
    return (facts.turns, facts.resumable, facts.title, facts.model, facts.hidden_because(), facts.session_id,
            facts.updates, facts.rewinds, facts.dropped)


def _unsettled(data: bytes) -> GeminiFacts:
    """The facts as the whole chain of sketches answers them: every line applied, never settled."""
    facts = GeminiFacts()
    chain = facts.chain()
    for raw in data.splitlines():
        chain.apply(loads(raw))
    facts.updates, facts.rewinds, facts.dropped = chain.updates, chain.rewinds, chain.dropped
    return facts


@SETTINGS
@given(lines=st.lists(_line, max_size=12), cut=st.integers(min_value=0, max_value=12))
def test_a_scan_answers_as_the_whole_chain_does_and_keeps_no_sketch(lines, cut):
    records = [meta(), *lines]
    data = b"".join(map(line, records))
    with tempfile.TemporaryDirectory() as tmp:
        home = gemini_home(Path(tmp), {name(): data})
        path = home / "tmp" / "my-app" / "chats" / name()
        scan = scan_journal(path, GEMINI)
        assert scan.facts.messages == {} and scan.facts.settled is not None
        assert _answers(scan.facts) == _answers(_unsettled(data))
        # a scan that goes on from a checkpoint of a shorter file answers as a full read of the longer one
        head = b"".join(map(line, records[:cut + 1]))
        path.write_bytes(head)
        first = scan_journal(path, GEMINI, checkpoint=True)
        path.write_bytes(data)
        resumed = scan_journal(path, GEMINI, resume=first.resume_state) if first.resume_state else scan_journal(path, GEMINI)
        assert resumed.facts == scan.facts


def test_a_check_of_many_sessions_keeps_no_message_of_any(tmp_path):
    files = {name(f"{n:08x}-0000-4000-8000-000000000000"): b"".join(map(line, [
        meta(f"{n:08x}-0000-4000-8000-000000000000"),
        *[user(f"u{n}-{k}", f"prompt {k}") for k in range(30)], gemini(f"g{n}", "answer")])) for n in range(40)}
    home = gemini_home(tmp_path, files)
    report = check_folders(discover(home), jobs=2)
    facts = [s.scan.facts for f in report.folders for s in f.sessions if s.scan is not None]
    assert len(facts) == 40 and all(f.messages == {} for f in facts)
    assert {f.turns for f in facts} == {30} and {f.title for f in facts} == {"prompt 0"}
    assert {f.model for f in facts} == {"gemini-2.5-pro"}
