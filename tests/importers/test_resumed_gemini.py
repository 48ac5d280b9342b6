"""A Gemini CLI session file that only grew is read from where the last import stopped, and the store
ends up byte for byte as a full re-import leaves it (issue 27, toolkit/importers/gemini.py ``resume``).

Two stores take every import of the same Gemini folder side by side: one with the import cache
(files unchanged are not read, one that only grew is resumed), the other with ``--reread`` (every
file read in full).  After every kind of change (lines of each kind added: user, gemini with
thoughts and tool calls, info/error/warning, an update of a recent message, ``$set``, a ``$set``
summary, ``$rewindTo``, a later metadata line; a line of an old id, a line repeated, a line being
written and then finished, a file cut, rewritten in place with its mtime put back, replaced,
removed), the journals hold the same bytes and the reports the same sessions, counts and findings.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tests.importers.resumes import alike, imported, journals
from toolkit.importers.unchanged import dump, load
from tests.layouts.gemini import SID, SLUG, TOOL, every_kind, gemini, gemini_home, line, meta, name, user

SUB = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
PLAIN = "44444444-0000-4000-8000-000000000000"  # no summary: named by its first user text
TWIN = "33333333-0000-4000-8000-000000000000"  # a legacy .json beside its resumed .jsonl


@pytest.fixture(autouse=True)
def no_gemini_home(monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)


def _home(tmp: Path) -> Path:
    sub = b"".join(map(line, [meta(SUB, kind="subagent"), user("s1", "look at the repo"),
                              gemini("s2", "done", thoughts=[{"subject": "Look", "description": "ls", "timestamp": "t"}])]))
    plain = b"".join(map(line, [meta(PLAIN), {"id": "i0", "timestamp": "2026-08-21T16:00:00.000Z", "type": "info", "content": "hi"},
                                user("p1", "  fix   the\nbuild  "), gemini("p2", "ok", toolCalls=[TOOL])]))
    twin = {**meta(TWIN), "messages": [user("t1", "twin question")]}
    resumed = b"".join(map(line, [meta(TWIN), user("t1", "twin question"), gemini("t2", "twin answer")]))
    return gemini_home(tmp, {name(): every_kind(), f"{SID}/{SUB}.jsonl": sub, name(PLAIN): plain,
                             f"session-2026-01-02T00-00-{TWIN[:8]}.json": json.dumps(twin, indent=2).encode(),
                             f"session-2026-01-02T00-00-{TWIN[:8]}.jsonl": resumed})


def _sessions(home: Path) -> list[Path]:
    return sorted(p for p in (home / "tmp" / SLUG / "chats").rglob("*.jsonl") if p.is_file())


_TICK = [0]


@pytest.fixture(autouse=True)
def _ticks_from_zero():
    """Every test's grown lines are the same bytes whatever ran before it in its worker: a resume's
    filters may say "maybe" of a line they never saw (that session is then read in full, to the
    same journals), and a test that counts the sessions resumed must not depend on which did."""
    _TICK[0] = 0


def _stamp() -> str:
    _TICK[0] += 1
    return f"2027-01-01T00:{_TICK[0] // 60000 % 60:02d}:{_TICK[0] // 1000 % 60:02d}.{_TICK[0] % 1000:03d}Z"


def _ids(path: Path) -> list[str]:
    found = []
    for raw in path.read_bytes().splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            found.append(value["id"])
    return found


def _grown(kind: str, path: Path, rng: random.Random) -> list[dict]:
    """The lines one growth of ``kind`` appends."""
    n = rng.getrandbits(32)
    if kind == "user":
        return [{"id": f"u{n}", "timestamp": _stamp(), "type": "user", "content": [{"text": f"question {n}"}]}]
    if kind == "gemini":
        return [{"id": f"g{n}", "timestamp": _stamp(), "type": "gemini", "content": f"answer {n}", "model": "gemini-2.5-pro",
                 "thoughts": [{"subject": "Plan", "description": f"think {n}", "timestamp": _stamp()}],
                 "toolCalls": [{**TOOL, "id": f"read_file-{n}"}]}]
    if kind in ("info", "error", "warning"):
        return [{"id": f"{kind}{n}", "timestamp": _stamp(), "type": kind, "content": f"{kind} {n}"}]
    if kind == "turn":
        return _grown("user", path, rng) + _grown("gemini", path, rng)
    if kind == "update":  # the last message written again (Gemini updates a message by its id)
        ids = _ids(path)
        return [{"id": ids[-1] if ids else f"g{n}", "timestamp": _stamp(), "type": "gemini", "content": f"updated {n}"}]
    if kind == "old-id":  # the first message written again: a filter's "maybe", a full read
        ids = _ids(path)
        return [{"id": ids[0] if ids else f"g{n}", "timestamp": _stamp(), "type": "gemini", "content": f"again {n}"}]
    if kind == "set":
        return [{"$set": {"lastUpdated": _stamp()}}]
    if kind == "set-summary":
        return [{"$set": {"lastUpdated": _stamp(), "summary": f"renamed {n}"}}]
    if kind == "set-sid":
        return [{"$set": {"sessionId": f"other-{n}"}}]
    if kind == "rewind":
        ids = _ids(path)  # (the last id: the same rewind twice would be a line repeated)
        return [{"$rewindTo": ids[-1] if ids else f"none{n}"}]
    if kind == "meta":
        return [meta(SID, hours=0.5, lastUpdated=_stamp())]
    raise AssertionError(kind)


#: Growths a resume writes as a full read would (the last import having left a state to resume).
RESUMED = ["user", "gemini", "info", "error", "warning", "turn", "update", "set", "set-summary", "set-sid", "rewind", "meta"]


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def _change(kind: str, path: Path, home: Path, rng: random.Random, pending: dict) -> None:
    """Apply one kind of change to the session file ``path`` (``pending``: the rest of a line left
    to write, by path, written first by the next growth of that file)."""
    info = os.stat(path)
    if kind in RESUMED or kind in ("old-id", "repeat", "torn"):
        _append(path, pending.pop(path, b""))
    if kind in RESUMED or kind == "old-id":
        _append(path, b"".join(map(line, _grown(kind, path, rng))))
    elif kind == "repeat":  # a line's bytes again: its key is "#2", which only a full read counts
        lines = path.read_bytes().splitlines(keepends=True)
        _append(path, rng.choice(lines[1:] or lines))
    elif kind == "torn":  # a line (or two) being written: cut mid-line
        whole = b"".join(map(line, _grown("turn", path, rng)))
        cut = rng.randint(1, len(whole) - 2)
        _append(path, whole[:cut])
        pending[path] = whole[cut:]
    elif kind == "cut":  # its last line cut off, written again by the next growth (a key the journal holds, the file not)
        pending.pop(path, None)
        data = path.read_bytes()
        keep = data.rfind(b"\n", 0, max(1, len(data) - 1)) + 1
        path.write_bytes(data[:keep])
        pending[path] = data[keep:]
    elif kind == "rewrite":  # one byte of a line before, a line added, the mtime put back
        pending.pop(path, None)
        data = path.read_bytes()
        at = data.rindex(b'"timestamp":"') + 14
        path.write_bytes(data[:at] + (b"8" if data[at:at + 1] == b"9" else b"9") + data[at + 1:])
        _append(path, b"".join(map(line, _grown("user", path, rng))))
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif kind == "replace":
        pending.pop(path, None)
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data + b"".join(map(line, _grown("turn", path, rng))))
    elif kind == "remove":
        pending.pop(path, None)
        if len(_sessions(home)) > 3:
            path.unlink()
    else:
        raise AssertionError(kind)


KINDS = [*RESUMED, "old-id", "repeat", "torn", "cut", "rewrite", "replace", "remove"]


def _two(home: Path, tmp: Path) -> dict[str, dict]:
    return {"cached": imported("gemini", home, tmp / "cached"), "full": imported("gemini", home, tmp / "full", "--reread")}


_same = alike


@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32), st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3), min_size=1, max_size=4))
def test_a_resumed_session_writes_and_says_what_a_full_read_does(tmp_path_factory, seed, rounds):
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("resumed")
    home = _home(tmp)
    _same(tmp, _two(home, tmp), "first import")
    pending: dict = {}
    for kinds in rounds:
        for kind in kinds:
            _change(kind, rng.choice(_sessions(home)), home, rng, pending)
        _same(tmp, _two(home, tmp), kinds)


@pytest.mark.parametrize("kind", RESUMED)
def test_a_grown_session_is_resumed_and_writes_what_a_full_read_does(tmp_path, kind):
    """Lines of each kind added to every session file, again and again (each resume continues the
    last one's state): each time only the new lines are read, the stores alike."""
    home = _home(tmp_path)
    _same(tmp_path, _two(home, tmp_path), "first import")
    rng = random.Random(7)
    for step in (kind, "turn", kind):
        for path in _sessions(home):
            _change(step, path, home, rng, {})
        reports = _two(home, tmp_path)
        _same(tmp_path, reports, step)
        # every .jsonl resumed; the legacy .json read (its twin grew), nothing else recalled
        assert reports["cached"]["resumed"] == len(_sessions(home)), (step, reports["cached"]["read"], reports["cached"]["resumed"])
        assert reports["cached"]["read"] == 1 and reports["cached"]["from_cache"] == 0
    again = _two(home, tmp_path)
    assert again["cached"]["from_cache"] == len(_sessions(home)) + 1


@pytest.mark.parametrize("kind", ["old-id", "repeat", "torn", "cut", "rewrite", "replace", "damaged", "no-newline"])
def test_what_a_resume_cannot_prove_is_read_in_full(tmp_path, monkeypatch, kind):
    """A change a resume cannot prove it would write as a full read does is read in full (and the
    stores alike): a message of an old id, a line repeated, a line being written, a cut, a rewrite,
    a replacement, a damaged line, a last line without its newline.  A line being written, once
    finished, is resumed (the full read before kept the state); so is a growth after a full read of
    growth; a journal holding a line the file no longer has is never resumed again."""
    if kind == "old-id":  # the first id no longer among the recent ones kept exactly: only the filter has it
        monkeypatch.setattr("toolkit.importers.gemini.RECENT", 2)
    home = _home(tmp_path)
    path = home / "tmp" / SLUG / "chats" / name()
    _same(tmp_path, _two(home, tmp_path), "first import")
    rng = random.Random(3)
    pending: dict = {}
    if kind == "damaged":
        _append(path, b'{"id": "x", "type": "user", "content": [}\n')
    elif kind == "no-newline":  # a whole line, its newline not written yet
        _append(path, line(_grown("user", path, rng)[0])[:-1])
        pending[path] = b"\n"
    else:
        _change(kind, path, home, rng, pending)
    reports = _two(home, tmp_path)
    _same(tmp_path, reports, kind)
    if kind != "replace":  # (a file replaced by one holding the same bytes and more, its inode number reused, is a growth)
        assert reports["cached"]["resumed"] == 0, kind
    if pending:  # the rest of what was being written
        _append(path, pending.pop(path))
        reports = _two(home, tmp_path)
        _same(tmp_path, reports, (kind, "finished"))
        assert reports["cached"]["resumed"] == (1 if kind == "torn" else 0), kind  # (cut: the file holds the journal's lines again)
    _change("turn", path, home, rng, pending)
    reports = _two(home, tmp_path)
    _same(tmp_path, reports, (kind, "grown after"))
    # a journal holding a line the file lost (rewritten) is never resumed again; a damaged line is read each time
    assert reports["cached"]["resumed"] == (0 if kind in ("rewrite", "damaged") else 1), kind


def test_a_kept_state_it_cannot_use_only_means_a_full_read(tmp_path):
    """A kept state this build cannot read (damaged, of another build) is a full read, never an error."""
    home = _home(tmp_path)
    _same(tmp_path, _two(home, tmp_path), "first import")
    for cache in (Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache").rglob("*.json"):
        document, resumes = load(cache)
        assert resumes, "the sessions' states are kept"
        for unit in resumes.values():
            for state in unit.values():
                state["ids"] = [3, "%%"]
        cache.write_bytes(dump(document, resumes))
    for path in _sessions(home):
        _change("turn", path, home, random.Random(1), {})
    reports = _two(home, tmp_path)
    _same(tmp_path, reports, "damaged state")
    assert reports["cached"]["resumed"] == 0


@pytest.mark.parametrize("how", ["no-cache", "reread"])
def test_a_journal_without_a_kept_state_is_resumed_after_one_full_read(tmp_path, how):
    """A journal an earlier build made (no state kept: the import cache gone) or one ``--reread``
    found as it was: the next full read that finds it holds only the file's lines keeps a state,
    and the growth after it is resumed."""
    home = _home(tmp_path)
    _same(tmp_path, _two(home, tmp_path), "first import")
    rng = random.Random(11)
    for step in range(3):
        if step == 0 and how == "no-cache":
            shutil.rmtree(Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache")
        elif step == 0:
            imported("gemini", home, tmp_path / "cached", "--reread")
        for path in _sessions(home):
            _change("turn", path, home, rng, {})
        reports = _two(home, tmp_path)
        _same(tmp_path, reports, (how, step))
        assert reports["cached"]["resumed"] == (len(_sessions(home)) if step or how == "reread" else 0), (how, step)



def test_two_files_of_one_session_write_what_a_full_read_does(tmp_path):
    """Two session files with one sessionId (a copy) write one journal: after each growth of either,
    alike or not, the journal is byte for byte a full read's (a resume continues only a journal that
    holds its file's lines alone).  (The reports are not compared: run_import recalls the unchanged
    copy's unit before the other unit of the run extends their journal, so its kept count is the one
    before, as on main without a resume; an importer with ``unit_key`` has such units go in order.)"""
    home = _home(tmp_path)
    path = home / "tmp" / SLUG / "chats" / name()
    copy = path.with_name(name(stamp="2026-08-22T00-00"))
    copy.write_bytes(path.read_bytes())
    stores = ("cached", "full")
    _two(home, tmp_path)
    rng = random.Random(13)
    for step in range(4):
        grown = b"".join(map(line, _grown("turn", path, rng)))
        _append(path, grown)
        if step % 2:
            _append(copy, grown)  # in step: the copy's new lines are the journal's already
        _two(home, tmp_path)
        assert len({tuple(journals(tmp_path / store).items()) for store in stores}) == 1, step
        _append(copy, b"".join(map(line, _grown("user", copy, rng))))
        _two(home, tmp_path)
        assert len({tuple(journals(tmp_path / store).items()) for store in stores}) == 1, (step, "copy")
    # a line the copy brought first, then the file another line and that one: its key is the journal's already
    first = b"".join(map(line, _grown("user", copy, rng)))
    for target, data in ((copy, first), (path, b"".join(map(line, _grown("user", path, rng)))), (path, first)):
        _append(target, data)
        _two(home, tmp_path)
        assert len({tuple(journals(tmp_path / store).items()) for store in stores}) == 1, target.name


def _kept_forms(tmp: Path, home: Path) -> set[str]:
    """The form the cached store's kept states' digests are in: ``exact`` (toolkit.importers.bloom.Exact)
    or ``bloom``; but the twin's, whose unit (with its legacy .json) is read in full each time."""
    from toolkit.importers.base import Options
    from toolkit.importers.bloom import Exact
    from toolkit.importers.unchanged import cache_path

    _document, resumes = load(cache_path(tmp / "cached", "gemini", home, Options(), False, False))
    return {"exact" if state[key][0] == Exact.TAG else "bloom" for unit in resumes.values() for sid, state in unit.items()
            if TWIN not in sid for key in ("ids", "digests")}


@pytest.mark.parametrize("kept", ["exact", "bloom", "exact, then past the limit"])
def test_the_digests_a_resume_keeps_in_either_form_resume_as_a_full_read_writes(tmp_path, monkeypatch, kept):
    """A session's line digests and message ids are kept exactly while few, in Bloom filters past
    EXACT_KEYS (and by builds before the exact form): a state in either form is resumed, and the
    stores are alike; an exact state that grows past the limit is not kept (its top bits cannot
    make a filter that holds each digest): the next growth is read in full and kept as a filter,
    and the one after resumed."""
    from toolkit.importers import bloom

    home, limit = _home(tmp_path), bloom.EXACT_KEYS
    if kept == "bloom":
        monkeypatch.setattr(bloom, "EXACT_KEYS", 0)
    _same(tmp_path, _two(home, tmp_path), "first import")
    assert _kept_forms(tmp_path, home) == ({"bloom"} if kept == "bloom" else {"exact"})
    monkeypatch.setattr(bloom, "EXACT_KEYS", limit)
    if kept == "exact, then past the limit":  # (each session holds more ids and lines than this after a turn)
        monkeypatch.setattr(bloom, "EXACT_KEYS", 1)
        expected = [(True, set()), (False, {"bloom"}), (True, {"bloom"})]
    else:
        expected = [(True, {kept})] * 3
    rng = random.Random(11)
    for step, (resumed, forms) in enumerate(expected):
        for path in _sessions(home):
            _change("turn", path, home, rng, {})
        reports = _two(home, tmp_path)
        _same(tmp_path, reports, (kept, step))
        assert reports["cached"]["resumed"] == (len(_sessions(home)) if resumed else 0), (kept, step, reports["cached"]["read"])
        assert _kept_forms(tmp_path, home) == forms, (kept, step)
