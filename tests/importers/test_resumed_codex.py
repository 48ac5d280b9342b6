"""A Codex rollout that only grew is read from where the last import stopped, and the store ends up
byte for byte as a full re-import leaves it (issue 27, toolkit/importers/codex.py ``resume``).

Three stores take every import of the same Codex home side by side: two with the import cache
(rollouts unchanged are not read, one that only grew is resumed), in two worker processes and in
one, the third with ``--reread`` (every rollout read in full).  After every kind of change (whole
turns added, a turn cut between an item and its mirror so the pairing crosses where the import
stopped, a prompt typed in a rollout that had none, a call whose id an end event shown before had,
a line being written and then finished, a file cut, rewritten in place with its mtime put back,
replaced, removed, moved into archived_sessions or back, a thread renamed in session_index.jsonl, the import cache lost),
the journals hold the same bytes
and the reports the same sessions, counts and findings.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings, strategies as st

from tests.bench.codex_rollout import records
from tests.bench.grow import grow_codex
from tests.importers.resumes import imported, journals, said
from tests.restore.kit import CODEX
from toolkit.importers.unchanged import dump, load

if CODEX is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)


def _import(home: Path, store: Path, *extra: str) -> dict:
    return imported("codex", home, store, *extra)


_journals, _said = journals, said


def _thread(n: int) -> str:
    return f"019e0000-0000-7000-8000-{n:012x}"


def _write(home: Path, n: int, lines: list[dict]) -> Path:
    path = home / "sessions" / "2026" / "05" / "05" / f"rollout-2026-05-05T00-00-00-{_thread(n)}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _home(root: Path, sizes: tuple[int, ...] = (61, 300)) -> Path:
    """The real fixtures (copied), rollouts of codex_rollout's shape cut at ``sizes`` records
    (mid-turn), one with no typed prompt (only the model's user messages), one with an end event
    whose call is not in the file, two forks (one still in its replay of the parent), and a
    session_index.jsonl naming one thread."""
    home = root / "home"
    shutil.copytree(CODEX, home)
    for n, count in enumerate(sizes, start=1):
        lines = list(records(count))
        lines[0]["payload"]["id"] = _thread(n)
        _write(home, n, lines)
    untyped = [line for line in records(40) if not (line["type"] == "event_msg" and line["payload"]["type"] == "user_message")]
    untyped[0]["payload"]["id"] = _thread(8)
    _write(home, 8, untyped)
    orphan = list(records(30))
    orphan[0]["payload"]["id"] = _thread(9)
    orphan.append({"timestamp": "2026-05-05T01:00:00.000Z", "type": "event_msg",
                   "payload": {"type": "exec_command_end", "call_id": "call_orphan_9", "exit_code": 3}})
    _write(home, 9, orphan)
    for n, own in ((6, False), (7, True)):  # forks of thread 1: a replay of its first turn, then (7) a turn of its own
        lines = list(records(25))
        child = {**lines[0], "payload": {**lines[0]["payload"], "id": _thread(n), "forked_from_id": _thread(1)}}
        parent = {**lines[0], "payload": {**lines[0]["payload"], "id": _thread(1)}}
        _write(home, n, [child, parent, *lines[1:13], *(lines[13:] if own else [])])
    (home / "session_index.jsonl").write_bytes(orjson.dumps({"id": _thread(2), "thread_name": "refunds, named"}) + b"\n")
    return home


def _rollouts(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("rollout-*.jsonl") if p.is_file())


_TICK = [0]


@pytest.fixture(autouse=True)
def _ticks_from_zero():
    """Every test's grown lines are the same bytes whatever ran before it in its worker: a resume's
    filters may say "maybe" of a line they never saw (that session is then read in full, to the
    same journals), and a test that counts the sessions resumed must not depend on which did."""
    _TICK[0] = 0


def _turn(path: Path, rng: random.Random, *, typed: bool = True, call: str | None = None) -> list[dict]:
    """One turn of codex_rollout's shape (task_started, turn_context, the prompt and its mirror,
    reasoning, a shell call, its end and output, the answer and its mirror, token count,
    task_complete), new texts and ids, each line at a time after the file's last."""
    n = rng.getrandbits(32)
    prompt = f"grown prompt {n}"
    answer = f"grown answer {n}"
    call = call or f"call_grown_{n}"
    lines = [("event_msg", {"type": "task_started", "turn_id": f"g{n}"}),
             ("turn_context", {"turn_id": f"g{n}", "cwd": "/home/ada/code/thin.ly", "model": rng.choice(["gpt-5.4", "gpt-5.5"])}),
             *([("event_msg", {"type": "user_message", "message": prompt, "images": []})] if typed else []),
             ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
             ("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": f"gAAAA{n}"}),
             ("response_item", {"type": "function_call", "name": "shell_command", "call_id": call, "arguments": '{"command":"ls"}'}),
             ("event_msg", {"type": "exec_command_end", "call_id": call, "exit_code": rng.choice([0, 1])}),
             ("response_item", {"type": "function_call_output", "call_id": call, "output": f"out {n}"}),
             ("event_msg", {"type": "agent_message", "message": answer, "phase": "final_answer"}),
             ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}],
                                "phase": "final_answer"}),
             ("event_msg", {"type": "token_count", "info": None}),
             ("event_msg", {"type": "task_complete", "turn_id": f"g{n}", "last_agent_message": answer})]
    out = []
    for kind, payload in lines:
        _TICK[0] += 1
        out.append({"timestamp": f"2027-01-01T00:{_TICK[0] // 60000 % 60:02d}:{_TICK[0] // 1000 % 60:02d}.{_TICK[0] % 1000:03d}Z",
                    "type": kind, "payload": payload})
    return out


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def _lines(values: list[dict]) -> bytes:
    return b"".join(orjson.dumps(v) + b"\n" for v in values)


def _change(kind: str, path: Path, home: Path, rng: random.Random, pending: dict) -> None:
    """Apply one kind of change to the rollout ``path`` (``pending``: the rest of a line or turn
    left to write, by path, written first by the next growth of that rollout)."""
    info = os.stat(path)
    if kind in ("turns", "mid-pair", "mirror-first", "typed", "end-call", "torn", "bench-turn"):
        _append(path, pending.pop(path, b""))
    if kind == "turns":
        _append(path, _lines([line for _ in range(rng.randint(1, 2)) for line in _turn(path, rng)]))
    elif kind == "bench-turn":  # the benchmark's growth as it was (its lines at the file's last time)
        grow_codex(path, rng, turns=1, at_last_time=True)
    elif kind == "mid-pair":  # cut after the typed prompt (the primary): its mirror comes with the next growth
        turn = _turn(path, rng)
        _append(path, _lines(turn[:3]))
        pending[path] = _lines(turn[3:])
    elif kind == "mirror-first":  # cut after the answer's event mirror, before the answer itself (the primary)
        turn = _turn(path, rng)
        _append(path, _lines(turn[:-3]))
        pending[path] = _lines(turn[-3:])
    elif kind == "typed":  # a typed prompt (in a rollout that had none, the user messages before become context)
        _append(path, _lines(_turn(path, rng, typed=True)))
    elif kind == "end-call":  # a call whose id an end event shown before (no call had it) has
        calls = [orjson.loads(line)["payload"].get("call_id") for line in path.read_bytes().splitlines()
                 if b'"exec_command_end"' in line]
        _append(path, _lines(_turn(path, rng, call=calls[0] if calls and rng.random() < 0.8 else None)))
    elif kind == "torn":
        whole = _lines(_turn(path, rng))
        cut = rng.randint(1, len(whole) - 2)
        _append(path, whole[:cut])
        pending[path] = whole[cut:]
    elif kind == "cut":
        pending.pop(path, None)
        data = path.read_bytes()
        path.write_bytes(data[: data.rfind(b"\n", 0, max(1, len(data) - 1)) + 1])
    elif kind == "rewrite":  # one byte (the first record's key, or the last record's time), a turn, the mtime put back
        pending.pop(path, None)
        data = path.read_bytes()
        if rng.random() < 0.5:
            at = data.index(b'"payload"') + 3
            path.write_bytes(data[:at] + (b"Y" if data[at:at + 1] == b"y" else b"y") + data[at + 1:])
        else:
            at = data.rindex(b'Z","type"') - 1
            path.write_bytes(data[:at] + (b"8" if data[at:at + 1] == b"9" else b"9") + data[at + 1:])
        _append(path, _lines(_turn(path, rng)))
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif kind == "replace":
        pending.pop(path, None)
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data + _lines(_turn(path, rng)))
    elif kind == "remove":
        pending.pop(path, None)
        if len(_rollouts(home)) > 3:
            path.unlink()
    elif kind == "archive-copy":  # a copy in archived_sessions: one thread, two rollouts, one journal
        target = home / "archived_sessions" / path.name
        if not target.exists():
            shutil.copyfile(path, target)
    elif kind == "move":  # archived (Codex moves a rollout into archived_sessions) or back out: one file, another path
        archived = home / "archived_sessions"
        target = home / "sessions" / "2026" / "05" / "06" / path.name if path.parent == archived else archived / path.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
            if path in pending:
                pending[target] = pending.pop(path)
    elif kind == "forget":  # the import cache lost (a cache cleaner, another user's cache folder): a full read proves anew
        shutil.rmtree(Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache", ignore_errors=True)
    elif kind == "rename":
        thread = path.stem[-36:]  # (the rollout's name ends in its thread id)
        _append(home / "session_index.jsonl", orjson.dumps({"id": thread, "thread_name": f"named {rng.randint(0, 9)}"}) + b"\n")


KINDS = ["turns", "bench-turn", "mid-pair", "mirror-first", "typed", "end-call", "torn", "cut", "rewrite", "replace", "remove",
         "rename", "forget", "move"]  # ("archive-copy": see test_a_thread_of_two_rollouts_is_never_resumed)


def _three(home: Path, tmp: Path) -> tuple[dict, dict, dict]:
    return (_import(home, tmp / "cached2", "--jobs", "2"), _import(home, tmp / "cached1", "--jobs", "1"),
            _import(home, tmp / "full", "--reread", "--jobs", "1"))


def _same(tmp: Path, reports: tuple[dict, dict, dict], what) -> None:
    two, one, full = reports
    assert _said(two) == _said(full), what
    assert _said(one) == _said(full), what
    journals = _journals(tmp / "full")
    assert _journals(tmp / "cached2") == journals, what
    assert _journals(tmp / "cached1") == journals, what
    assert full["resumed"] == full["from_cache"] == 0


@settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32), st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3), min_size=1, max_size=4))
@example(5, [["mid-pair", "move"], ["turns"], ["torn", "move"], ["turns", "forget"], ["turns"]])  # moved mid-write, and back
def test_a_resumed_rollout_writes_and_says_what_a_full_read_does(tmp_path_factory, seed, rounds):
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("resumed")
    home = _home(tmp)
    _same(tmp, _three(home, tmp), "first import")
    pending: dict = {}
    for kinds in rounds:
        for kind in kinds:
            _change(kind, rng.choice(_rollouts(home)), home, rng, pending)
        _same(tmp, _three(home, tmp), kinds)


def test_a_grown_rollout_is_resumed_and_writes_what_a_full_read_does(tmp_path):
    """Whole turns added, again and again (each resume continues the last one's state), then an
    answer whose mirror comes later: each time only the new lines are read, the stores alike."""
    home = _home(tmp_path)
    generated = [p for p in _rollouts(home) if any(_thread(n) in p.name for n in (1, 2, 7))]
    _same(tmp_path, _three(home, tmp_path), "first import")
    rng = random.Random(7)
    pending: dict = {}
    for kind in ("turns", "turns", "mid-pair", "turns", "bench-turn"):
        for path in generated:
            _change(kind, path, home, rng, pending)
        reports = _three(home, tmp_path)
        _same(tmp_path, reports, kind)
        for report in reports[:2]:
            assert report["resumed"] == len(generated), (kind, report["read"], report["resumed"])
            assert report["read"] == 0
    again = _three(home, tmp_path)
    assert again[0]["from_cache"] == again[1]["from_cache"] == len(_rollouts(home))


@pytest.mark.parametrize("lost", ["cache", "reread"])
def test_a_journal_the_import_did_not_create_is_resumed_once_a_full_read_proves_it_its_rollouts(tmp_path, lost):
    """After the import cache is lost, or a --reread (an earlier build's store, a cache cleaner), a
    rollout that grows is read in full once: that read proves its journal holds only what the
    rollout gives, and every growth after it is resumed, the stores alike."""
    home = _home(tmp_path)
    generated = [p for p in _rollouts(home) if any(_thread(n) in p.name for n in (1, 2, 7))]
    _same(tmp_path, _three(home, tmp_path), "first import")
    if lost == "cache":
        shutil.rmtree(Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache")
    else:
        for store in ("cached2", "cached1"):
            _import(home, tmp_path / store, "--reread")
    rng = random.Random(11)
    pending: dict = {}
    for round_ in range(3):
        for path in generated:
            _change("turns", path, home, rng, pending)
        reports = _three(home, tmp_path)
        _same(tmp_path, reports, round_)
        for report in reports[:2]:
            if lost == "cache" and round_ == 0:  # nothing kept: every rollout read, the grown ones too
                assert report["read"] == len(_rollouts(home)), report["read"]
            else:  # (after a --reread every unit is kept, and each grown journal was proven its rollout's)
                assert report["resumed"] == len(generated) and report["read"] == 0, (round_, report["read"], report["resumed"])


def test_a_moved_rollout_is_resumed_once_a_full_read_proves_its_journal_its_own(tmp_path):
    """A rollout archived (moved into archived_sessions: Codex's own archive), or a home renamed,
    leaves its journal naming where it was.  At its new path it is read in full once, which proves
    the journal holds only what it gives (the other file it names is gone); every growth after is
    resumed, the stores alike.  Moved back, the same again."""
    home = _home(tmp_path)
    generated = [p for p in _rollouts(home) if any(_thread(n) in p.name for n in (1, 2, 7))]
    _same(tmp_path, _three(home, tmp_path), "first import")
    rng = random.Random(13)
    pending: dict = {}
    for moves in range(2):
        for path in generated:
            _change("move", path, home, rng, pending)
        generated = [p for p in _rollouts(home) if any(_thread(n) in p.name for n in (1, 2, 7))]
        for round_ in range(3):
            for path in generated:
                _change("turns", path, home, rng, pending)
            reports = _three(home, tmp_path)
            _same(tmp_path, reports, (moves, round_))
            for report in reports[:2]:
                if round_ == 0:  # at a new path: a new unit, read in full
                    assert report["read"] == len(generated) and report["resumed"] == 0, (moves, report["read"], report["resumed"])
                else:
                    assert report["resumed"] == len(generated) and report["read"] == 0, (moves, round_, report["read"], report["resumed"])


@pytest.mark.parametrize("kind", ["mirror-first", "typed", "end-call", "torn", "rewrite", "replace", "cut", "fork-open"])
def test_what_a_resume_cannot_prove_is_read_in_full(tmp_path, kind):
    """A change a resume cannot prove it would write as a full read does is read in full (and the
    stores alike): an answer written after its event mirror (the mirror imported alone before), a
    prompt typed in a rollout with none, a call whose id an end event shown had, a line being
    written, a rewrite, a replacement, a cut, a fork's own first turn after its replay.  A line being written, once finished, is resumed (the
    full read before kept the state)."""
    home = _home(tmp_path)
    target = {"typed": _thread(8), "end-call": _thread(9), "fork-open": _thread(6)}.get(kind, _thread(1))
    path = next(p for p in _rollouts(home) if target in p.name)
    _same(tmp_path, _three(home, tmp_path), "first import")
    rng = random.Random(3)
    pending: dict = {}
    if kind == "end-call":
        _append(path, _lines(_turn(path, rng, call="call_orphan_9")))
    elif kind == "fork-open":  # a fork still in its replay of the parent: its own turn begins now
        _append(path, _lines(_turn(path, rng)))
    else:
        _change(kind, path, home, rng, pending)
    reports = _three(home, tmp_path)
    _same(tmp_path, reports, kind)
    if kind not in ("mirror-first", "replace"):  # (its first half is a growth like any other; a file replaced by one
        # holding the same bytes and more, its inode number reused, is one too)
        assert reports[0]["resumed"] == reports[1]["resumed"] == 0, kind
    if pending:  # the rest of what was being written
        _append(path, pending.pop(path))
        reports = _three(home, tmp_path)
        _same(tmp_path, reports, (kind, "finished"))
        assert reports[0]["resumed"] == reports[1]["resumed"] == (1 if kind == "torn" else 0), kind
    _append(path, _lines(_turn(path, rng)))
    _same(tmp_path, _three(home, tmp_path), (kind, "grown after"))


def _two_rollouts_of_one_thread(tmp_path: Path, check) -> None:
    home = _home(tmp_path)
    _same(tmp_path, _three(home, tmp_path), "first import")
    rng = random.Random(5)
    pending: dict = {}
    for kind in ("turns", "archive-copy", "turns", "turns", "bench-turn"):
        path = rng.choice([p for p in _rollouts(home) if _thread(1) in p.name])
        _change(kind, path, home, rng, pending)
        check(_three(home, tmp_path), kind)


def test_a_thread_of_two_rollouts_is_never_resumed(tmp_path):
    """A rollout and its copy in archived_sessions write one journal: neither is ever resumed (a
    resume continues only a journal its own rollout alone wrote)."""
    copied = []

    def check(reports, kind):
        if copied:
            assert reports[0]["resumed"] == reports[1]["resumed"] == 0, kind
        copied.extend([kind] if kind == "archive-copy" else [])

    _two_rollouts_of_one_thread(tmp_path, check)


def test_a_thread_of_two_rollouts_imports_as_a_full_read(tmp_path):
    """A rollout and its copy in archived_sessions write one journal: the import cache recalls neither
    once the other wrote it since (their journals' stamps are taken as each unit is done), and each
    is compared with its own last source state (a full read of both, unchanged, writes nothing)."""
    _two_rollouts_of_one_thread(tmp_path, lambda reports, kind: _same(tmp_path, reports, kind))


def test_a_kept_state_it_cannot_use_only_means_a_full_read(tmp_path):
    """A kept state this build cannot read (damaged, of another build) is a full read, never an error."""
    home = _home(tmp_path)
    store = tmp_path / "store"
    _import(home, store)
    _import(home, tmp_path / "full", "--reread")
    for cache in (Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache").rglob("*.json"):
        document, resumes = load(cache)
        assert resumes, "the sessions' states are kept"
        for unit in resumes.values():
            for state in unit.values():
                state["decider"] = {"count": "x"}
                state["lines"] = [3, "%%"]
        cache.write_bytes(dump(document, resumes))
    for path in _rollouts(home):
        _append(path, _lines(_turn(path, random.Random(1))))
    report = _import(home, store)
    assert report["resumed"] == 0 and report["read"] == len(_rollouts(home))
    _import(home, tmp_path / "full", "--reread")
    assert _journals(store) == _journals(tmp_path / "full")


@given(st.lists(st.text(min_size=1, max_size=20), max_size=300), st.lists(st.text(min_size=1, max_size=20), max_size=50),
       st.sampled_from(["exact", "filter", "earlier build"]))
@settings(max_examples=90, deadline=None)
def test_what_a_resume_keeps_of_the_call_ids_it_saw_never_forgets_one(added, later, form):
    """The call ids a resume keeps (calls, unmatched end events, exit codes) are "maybe held" for
    every id added, kept as JSON and loaded again, and for ids added after loading: kept exactly (a
    CRC-32 each) while few, as a filter of their digests past the limit, or as an earlier build kept
    them (a filter, whatever their number).  Exact ones grown past the limit are not kept again (the
    next growth is read in full), and an id never added is not held but by a rare collision."""
    from toolkit.importers import codex
    from toolkit.importers.bloom import Digests, digest_of

    limit = {"exact": 1 << 16, "filter": 0, "earlier build": 1 << 16}[form]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codex, "EXACT_KEYS", limit)
        dumped = (Digests.of((digest_of(a) for a in added), len(added)).dump() if form == "earlier build"
                  else codex._kept_ids((iter(added), len(added))))
        kept = codex._Ids(json.loads(json.dumps(dumped)))
        assert kept.exact == (form == "exact" or (form == "filter" and not added))
        for one in later:
            kept.add(one)
        assert all(one in kept for one in added + later)
        again = kept.dump()
        if again is not None:
            kept = codex._Ids(json.loads(json.dumps(again)))
            assert all(one in kept for one in added + later)
        else:
            assert kept.exact and len(added) + len(later) > limit
    if form == "exact":
        strangers = [f"call_{n}_never" for n in range(200)]
        assert sum(one in kept for one in strangers if one not in added + later) <= 1


_STAMPS = st.sampled_from(["2026-05-05T00:00:00.000Z", "2026-05-05T00:00:00.001Z", "2026-05-05T00:00:01.000Z", None, 7])


@given(st.lists(st.tuples(_STAMPS, st.sampled_from(["event_msg", "response_item"]), st.sampled_from(["message", "agent_message"]),
                          st.integers(0, 3)), max_size=40),
       st.tuples(_STAMPS, st.sampled_from(["event_msg", "response_item"]), st.sampled_from(["message", "agent_message"]),
                 st.integers(0, 3)),
       st.integers(0, 41))
@settings(max_examples=200, deadline=None)
def test_a_line_said_new_is_none_of_the_files_lines(before, line, kept):
    """What a resume keeps of the lines at a file's latest time (and of those without a time) calls a
    new line new only when no line before has its bytes, nor (by time and type) its identity: the
    first ``kept`` lines given by their row in the rollout's kept lines (as a read gives them until
    they are hashed), the rest by their hash; and what it keeps is what their hashes alone give."""
    import hashlib

    from toolkit.importers.codex import _Latest
    from toolkit.importers.output import offset_line_key

    def value(stamp, kind, payload, n):
        return {"timestamp": stamp, "type": kind, "payload": {"type": payload, "n": n}}

    latest, hashed = _Latest.empty(), _Latest.empty()
    seen, rows = [], []
    for n, one in enumerate(before):
        v = value(*one)
        data = orjson.dumps(v)
        digest = hashlib.sha256(data).hexdigest()[:16]
        if n < kept:
            rows.append(data)
            latest.see(v, n)
        else:
            if n == kept:
                latest.hash_kept(rows)
            latest.see(v, digest)
        hashed.see(v, digest)
        seen.append((digest, offset_line_key(v)))
    if len(before) <= kept:
        latest.hash_kept(rows)
    if len(set(rows)) == len(rows):  # (rows of the same bytes count apart until hashed: past LATEST, sooner none)
        assert latest.dump() == hashed.dump()
    latest = _Latest.load(json.loads(json.dumps(latest.dump())))
    v = value(*line)
    digest = hashlib.sha256(orjson.dumps(v)).hexdigest()[:16]
    if latest.new(v, digest):
        assert digest not in [d for d, _i in seen]
    if latest.new_identity(v) and offset_line_key(v) is not None:
        assert offset_line_key(v) not in [i for _d, i in seen]


def test_a_spawned_threads_rollout_is_resumed_until_a_replay_of_its_parent_begins(tmp_path):
    """A subagent's rollout (the real fixture: a parent in ``source.subagent.thread_spawn``, no replay
    of the parent) grows like any other: resumed, the stores alike.  Had a copy of a ``session_meta``
    followed, a full read would take the records after it for a replay of the parent (``inherited``):
    a resume cannot prove that away, so that growth is read in full, and the stores are alike again."""
    home = _home(tmp_path)
    spawned = next(p for p in _rollouts(home) if "019d781a" in p.name)
    assert "thread_spawn" in spawned.read_text().split("\n", 1)[0]
    _same(tmp_path, _three(home, tmp_path), "first import")
    rng = random.Random(13)
    for _ in range(2):
        _append(spawned, _lines(_turn(spawned, rng)))
        reports = _three(home, tmp_path)
        _same(tmp_path, reports, "spawned, grown")
        assert reports[0]["resumed"] == reports[1]["resumed"] == 1 and reports[1]["read"] == 0
    meta = orjson.loads(spawned.read_bytes().split(b"\n", 1)[0])
    parent = {**meta, "timestamp": "2026-05-06T00:00:00.000Z", "payload": {**meta["payload"], "id": _thread(40), "source": "cli"}}
    _append(spawned, _lines([parent, *_turn(spawned, rng)]))
    reports = _three(home, tmp_path)
    _same(tmp_path, reports, "a replay begins")
    assert reports[0]["resumed"] == reports[1]["resumed"] == 0 and reports[1]["read"] == 1
    full = {k: v for k, v in _journals(tmp_path / "full").items() if "019d781a" in k}
    assert any(b'"inherited":true' in data for data in full.values())  # (what the resume could not have written)


def test_a_grown_import_reads_the_unit_key_of_the_grown_rollouts_only(tmp_path, monkeypatch):
    """A unit's importer key (a Codex rollout's thread id, from its first record) is kept with its
    cache entry: an import after some rollouts grew reads it again for those alone (it read every
    rollout's first record: 30 of a grown import's 400 ms on 800 rollouts), and the stores are alike."""
    from toolkit.importers import codex_units

    home = _home(tmp_path)
    _same(tmp_path, _three(home, tmp_path), "first import")
    read, real = [], codex_units.unit_key
    monkeypatch.setattr(codex_units, "unit_key", lambda unit: (read.append(str(unit.handle[0])), real(unit))[1])
    rng = random.Random(17)
    grown = [path for path in _rollouts(home) if any(_thread(n) in path.name for n in (1, 2)) and grow_codex(path, rng)]
    reports = (_import(home, tmp_path / "cached2", "--jobs", "2"), _import(home, tmp_path / "cached1", "--jobs", "1"))
    assert read and set(read) <= {str(path) for path in grown}, read
    _same(tmp_path, (*reports, _import(home, tmp_path / "full", "--reread", "--jobs", "1")), "grown")
    assert reports[1]["resumed"] == len(grown) == 2


def test_a_grown_import_keeps_the_entries_of_the_rollouts_it_recalled_as_they_were(tmp_path):
    """The import cache an import writes again after some rollouts grew holds every other unit's
    entry and resume state exactly as the file held them (Kept.as_kept: not made again from what
    was recalled); the grown ones' are new, and the next import recalls every rollout."""
    home = _home(tmp_path)
    _import(home, tmp_path / "cached1", "--jobs", "1")

    def kept() -> tuple[dict, dict]:
        files = [p for p in (Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache").rglob("*.json")
                 if not p.name.endswith(".listing.json")]
        assert len(files) == 1
        document, resumes = load(files[0])
        return document["units"], resumes

    units, resumes = kept()
    rng = random.Random(19)
    grown = {str(path) for path in _rollouts(home) if any(_thread(n) in path.name for n in (1, 2)) and grow_codex(path, rng)}
    assert _import(home, tmp_path / "cached1", "--jobs", "1")["resumed"] == len(grown) == 2
    after, resumed = kept()
    assert after.keys() == units.keys() and grown <= after.keys()
    for key in units.keys() - grown:
        assert after[key] == units[key] and resumed.get(key) == resumes.get(key), key
    for key in grown:
        assert after[key]["files"] != units[key]["files"] and resumed[key] != resumes[key]
    assert _import(home, tmp_path / "cached1", "--jobs", "1")["from_cache"] == len(_rollouts(home))


def test_a_grown_import_stats_each_journal_of_a_changed_folder_twice_for_its_index(tmp_path, monkeypatch):
    """Bringing a changed folder's index up to date after a grown import stats its journals for the
    trust test, which the update of what changed starts from, and once more when the new index is
    vouched for (what changed meanwhile is not vouched): twice, not three times; the stores alike."""
    from toolkit import verified

    home = _home(tmp_path)
    _same(tmp_path, _three(home, tmp_path), "first import")
    calls, real = [], verified.journal_stamps
    monkeypatch.setattr(verified, "journal_stamps", lambda folder: (calls.append(folder.path), real(folder))[1])
    rng = random.Random(23)
    grown = [path for path in _rollouts(home) if any(_thread(n) in path.name for n in (1, 2)) and grow_codex(path, rng)]
    one = _import(home, tmp_path / "cached1", "--jobs", "1")
    assert one["resumed"] == len(grown) == 2
    folders = {Path(s["path"]).parent for s in one["sessions"] if s["status"] == "updated"}
    assert folders and sorted(calls) == sorted([*folders, *folders]), calls
    monkeypatch.setattr(verified, "journal_stamps", real)
    two = _import(home, tmp_path / "cached2", "--jobs", "2")
    _same(tmp_path, (two, one, _import(home, tmp_path / "full", "--reread", "--jobs", "1")), "grown")


def test_a_full_read_that_stopped_between_an_item_and_its_mirror_is_resumed_and_pairs_them(tmp_path):
    """A first import (a full read) stops after a typed prompt whose mirror is not written yet.  That
    read digests the texts of its sketches with the key this process drew (codex_seen.salted); the
    decider it keeps for the next import is made again with the digest every process makes.  The
    next import resumes the rollout, pairs the mirror with the prompt kept in that decider, and
    writes and says what a full read does."""
    home = _home(tmp_path)
    generated = [p for p in _rollouts(home) if any(_thread(n) in p.name for n in (1, 2))]
    rng, pending = random.Random(11), {}
    for path in generated:
        _change("mid-pair", path, home, rng, pending)
    _same(tmp_path, _three(home, tmp_path), "first import")
    for path in generated:
        _change("turns", path, home, rng, pending)  # the mirror first, then whole turns
    reports = _three(home, tmp_path)
    _same(tmp_path, reports, "the mirrors")
    for report in reports[:2]:
        assert (report["read"], report["resumed"]) == (0, len(generated))


def test_the_decider_a_full_read_keeps_is_the_same_whatever_digest_its_sketches_took(tmp_path, monkeypatch):
    """Every rollout of a home (the real fixtures, forks, generated ones cut between an item and its
    mirror): read with this process's digest and with the lasting one, the decisions and the decider
    kept for a resume are the same."""
    from toolkit.importers import codex
    from toolkit.layouts import codex_seen

    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    home = _home(tmp_path)
    rng, pending = random.Random(5), {}
    for path in _rollouts(home)[-4:]:
        _change("mid-pair", path, home, rng, pending)
    for path in _rollouts(home):
        salted = codex._Rollout(path, lambda _finding: None)
        salted.decide()
        with monkeypatch.context() as patched:
            patched.setattr(codex, "within_process", lambda: codex_seen._digest)
            lasting = codex._Rollout(path, lambda _finding: None)
            lasting.decide()
        assert salted.text_digest is codex_seen.salted and lasting.text_digest is not codex_seen.salted
        assert (salted.codes, salted.groups) == (lasting.codes, lasting.groups), path.name
        assert salted.kept == lasting.kept, path.name


def test_a_known_hash_key_digests_with_the_lasting_digest(monkeypatch):
    """PYTHONHASHSEED set (a key anyone may know): a read's sketches take the digest every process makes."""
    from toolkit.layouts import codex_seen

    monkeypatch.setenv("PYTHONHASHSEED", "0")
    assert codex_seen.within_process() is codex_seen._digest
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    assert codex_seen.within_process() is codex_seen.salted
    assert codex_seen.salted("an answer") == codex_seen.salted("an " + "answer") != codex_seen.salted("an answer.")
    assert len(codex_seen.salted("é" * 70_000)) == len(codex_seen._digest("x")) == 12 and codex_seen.salted(None) == b""
