"""A transcript that only grew is read from where the last import stopped, and the store ends up
byte for byte as a full re-import leaves it (issue 27, toolkit/importers/claude.py ``resume``).

Two stores take every import of the same Claude Code tree side by side: one with the import
cache (units unchanged are not read, a transcript that only grew is resumed) in two worker
processes, the other with ``--reread`` (every file read in full) in one.  After every kind of change (a turn added, a response in
several lines, one still unfinished and then finished, a new title, a metadata line, a line being
written, a file cut, rewritten in place with its mtime put back, replaced, a subagent grown), the
journals hold the same bytes and the reports the same sessions, counts and findings.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tests.bench.claude_transcript import write as write_transcript
from tests.bench.grow import grow_claude
from tests.importers.resumes import apart, imported, journals, said
from tests.restore.kit import CLAUDE

if CLAUDE is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)


def _import(source: Path, store: Path, *extra: str) -> dict:
    return imported("claude", source, store, *extra)


_journals, _said = journals, said


def _tree(root: Path) -> Path:
    """The fixture's smaller projects, and two generated transcripts (one long)."""
    shutil.copytree(CLAUDE / "projects", root, ignore=lambda folder, names: [n for n in names if n in (
        "-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo", "Z--03-NDV-Dftcor-Nmmoat")])
    for n, count in ((1, 40), (2, 400)):
        made = write_transcript(root.parent / f"gen-{n}", count)
        (root / f"-home-ada-gen-{n}").mkdir()
        made.rename(root / f"-home-ada-gen-{n}" / f"5e55a0e1-0000-4000-8000-00000000000{n}.jsonl")
    return root


def _mains(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*.jsonl") if p.is_file())


def _change(kind: str, path: Path, rng: random.Random) -> None:
    info = os.stat(path)
    if kind == "turn":
        grow_claude(path, rng, turns=rng.randint(1, 3), parts=rng.randint(1, 3))
    elif kind == "unfinished":
        grow_claude(path, rng, parts=2, unfinished=True)
    elif kind == "title":
        grow_claude(path, rng, title=f"title {rng.randint(0, 3)}")
    elif kind == "meta":
        grow_claude(path, rng, meta=True)
    elif kind == "torn":
        grow_claude(path, rng, torn=True)
    elif kind == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: data.rfind(b"\n", 0, max(1, len(data) - 1)) + 1])
    elif kind == "rewrite":  # one byte inside a string, then a turn, the size as grown, the mtime put back
        data = path.read_bytes()
        at = data.index(b'"type"') + 2
        path.write_bytes(data[:at] + (b"T" if data[at:at + 1] == b"t" else b"t") + data[at + 1:])
        grow_claude(path, rng)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif kind == "replace":
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)
        grow_claude(path, rng)


KINDS = ["turn", "unfinished", "title", "meta", "torn", "cut", "rewrite", "replace"]


@settings(max_examples=8, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32), st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3), min_size=1, max_size=3))
def test_a_resumed_import_writes_and_says_what_a_full_one_does(tmp_path_factory, seed, rounds):
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("resumed")
    source = _tree(tmp / "projects")
    cached, full = tmp / "cached", tmp / "full"
    assert _said(_import(source, cached, "--jobs", "2")) == _said(_import(source, full, "--reread", "--jobs", "1"))
    resumed = 0
    for kinds in rounds:
        for kind in kinds:
            _change(kind, rng.choice(_mains(source)), rng)
        a, b = _import(source, cached, "--jobs", "2"), _import(source, full, "--reread", "--jobs", "1")
        assert _said(a) == _said(b), f"{kinds}\n{apart(a, b)}"
        assert _journals(cached) == _journals(full), kinds
        assert b["resumed"] == b["from_cache"] == 0
        resumed += a["resumed"]


def test_a_grown_transcript_is_resumed_not_read(tmp_path):
    """A turn added to a long transcript: only its new lines are read, and a third import reads nothing."""
    path = write_transcript(tmp_path, 2000)
    source = tmp_path / "projects"
    store, full = tmp_path / "store", tmp_path / "full"
    first = _import(source, store)
    _import(source, full, "--reread")
    grow_claude(path, random.Random(7), turns=2, parts=2)
    again = _import(source, store)
    assert again["resumed"] == 1 and again["read"] == 0
    assert [s["status"] for s in again["sessions"]] == ["updated"] and again["sessions"][0]["new_records"] == 4
    assert _said(again) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)
    third = _import(source, store)
    assert third["from_cache"] == len(first["sessions"]) and third["read"] == third["resumed"] == 0
    grow_claude(path, random.Random(8), title="a new title")  # resumed from the state the resume kept
    fourth = _import(source, store)
    assert fourth["resumed"] == 1
    assert _said(fourth) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)


@pytest.mark.parametrize("kinds", [["turn", "unfinished", "turn"], ["unfinished", "meta", "turn"], ["title", "turn"]])
def test_a_transcript_with_inline_sidechains_is_resumed_too(tmp_path, kinds):
    """Claude Code 1.0.x kept subagents inline (``isSidechain``): each is a session of its own,
    which gets the file's new state when its main conversation grows; what follows a response is
    judged where Claude Code's own list of the conversation's records puts it."""
    source = tmp_path / "projects"
    shutil.copytree(CLAUDE / "projects" / "-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo", source / "-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo")
    store, full = tmp_path / "store", tmp_path / "full"
    first = _import(source, store)
    assert len(first["sessions"]) == 3, "the fixture's transcript holds two inline sidechains"
    _import(source, full, "--reread")
    rng = random.Random(len(kinds))
    resumed = 0
    for kind in kinds:
        _change(kind, _mains(source)[0], rng)
        a, b = _import(source, store), _import(source, full, "--reread")
        assert _said(a) == _said(b), f"{kind}\n{apart(a, b)}"
        assert _journals(store) == _journals(full), kind
        resumed += a["resumed"]
    assert resumed > 0


@given(st.lists(st.one_of(st.text(min_size=1, max_size=20), st.binary(min_size=1, max_size=20)), max_size=300),
       st.lists(st.one_of(st.text(min_size=1, max_size=20), st.binary(min_size=1, max_size=20)), max_size=50),
       st.sampled_from(["exact", "filter"]))
@settings(max_examples=80, deadline=None)
def test_what_a_resume_keeps_of_the_ids_it_saw_never_forgets_one(added, later, form):
    """The uuids (text), message ids (bytes) and keys a resume checks new lines against, kept
    exactly (a CRC of each) while few and in a Bloom filter past EXACT_KEYS: every id added is
    "maybe seen", before and after it is kept and loaded, and with more added since."""
    from toolkit.importers import bloom
    from toolkit.importers.bloom import Prints
    from toolkit.importers.claude import _load_seen, _Seen, _seen

    limit = bloom.EXACT_KEYS
    bloom.EXACT_KEYS = limit if form == "exact" else 0
    try:
        texts = [key for key in added if isinstance(key, str)]
        kept = [_seen(iter(texts)), _seen(iter(added), len(added), text=False)]
    finally:
        bloom.EXACT_KEYS = limit
    for dump, keys in zip(kept, (texts, added)):
        seen = _load_seen(dump)
        assert type(seen) is (Prints if form == "exact" or not keys else _Seen)
        assert all(key in seen for key in keys)
        for key in later:
            seen.add(key)
        again = _load_seen(seen.dump())
        assert all(key in again for key in keys + later)


def test_what_a_resume_keeps_of_the_ids_it_saw_rarely_claims_one_it_did_not_see():
    """A false "maybe seen" costs a full read: kept exactly, about 1 in 430,000 ids never added
    here (10,000 CRCs of 32 bits); in a filter, about 1 in 400 (12 bits an id, 6 probes); for uuids
    (text) and message ids (bytes) alike.  A filter of all ones would pass the test above and never
    resume."""
    from toolkit.importers import bloom
    from toolkit.importers.claude import _load_seen, _seen

    limit = bloom.EXACT_KEYS
    try:
        for most, exact in ((20_000 / 100, 0), (5, limit)):
            bloom.EXACT_KEYS = exact
            for kind, text in ((str, True), (lambda text: text.encode(), False)):
                seen = _load_seen(_seen((kind(f"0000-{n:08x}-uuid") for n in range(10_000)), 10_000, text))
                claimed = sum(kind(f"1111-{n:08x}-uuid") in seen for n in range(20_000))
                assert claimed < most, (exact, claimed)
    finally:
        bloom.EXACT_KEYS = limit


def _kept_forms(store: Path, source: Path) -> set[str]:
    """How the import cache keeps each main conversation's uuids: exactly, or in a filter."""
    from toolkit.importers.bloom import Prints
    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path, load

    _doc, resumes = load(cache_path(store, "claude", source, Options(), False, False))
    return {"exact" if state["uuids"][0] == Prints.TAG else "bloom"
            for unit in resumes.values() for state in unit.values() if "uuids" in state}


@pytest.mark.parametrize("kept", ["exact", "bloom", "exact, then past the limit"])
def test_the_ids_a_resume_keeps_in_either_form_resume_as_a_full_read_writes(tmp_path, monkeypatch, kept):
    """A transcript's uuids, message ids and keys are kept exactly while few, in Bloom filters past
    EXACT_KEYS (and by builds before the exact form): a state in either form is resumed, and the
    stores are alike; a resume whose exact ids would grow past the limit reads the transcript in
    full instead, which keeps filters, and the next growth is resumed from them."""
    from toolkit.importers import bloom

    path = write_transcript(tmp_path, 300)
    source, store, full = tmp_path / "projects", tmp_path / "store", tmp_path / "full"
    limit = bloom.EXACT_KEYS
    if kept == "bloom":
        monkeypatch.setattr(bloom, "EXACT_KEYS", 0)
    assert _said(_import(source, store)) == _said(_import(source, full, "--reread"))
    assert _kept_forms(store, source) == ({"bloom"} if kept == "bloom" else {"exact"})
    monkeypatch.setattr(bloom, "EXACT_KEYS", limit)
    if kept == "exact, then past the limit":
        monkeypatch.setattr(bloom, "EXACT_KEYS", 1)
        expected = [(False, "bloom"), (True, "bloom"), (True, "bloom")]
    else:
        expected = [(True, kept)] * 3
    rng = random.Random(12)
    for step, (resumed, form) in enumerate(expected):
        grow_claude(path, rng, turns=rng.randint(1, 2), parts=rng.randint(1, 3))
        a, b = _import(source, store), _import(source, full, "--reread")
        assert _said(a) == _said(b), f"{kept} {step}\n{apart(a, b)}"
        assert _journals(store) == _journals(full), (kept, step)
        assert (a["resumed"], a["read"]) == ((1, 0) if resumed else (0, 1)), (kept, step)
        assert _kept_forms(store, source) == {form}, (kept, step)


@pytest.mark.parametrize("second", [b"", b"{", b"[1,2]", b'{"x": 1}\n{"y": 2}', b"\xff\xfe"])
def test_the_kept_states_line_is_read_only_when_a_file_grew_and_damaged_it_means_a_full_read(tmp_path, second):
    """The cache keeps the resume states after the units' lines, which a run that finds nothing new does
    not parse: damaged or missing, such a run is still all from the cache, and a transcript that grew
    is read in full, to the journals a full read writes."""
    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path

    path = write_transcript(tmp_path, 200)
    source, store, full = tmp_path / "projects", tmp_path / "store", tmp_path / "full"
    first = _import(source, store)
    _import(source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    head, later = _units(cache)
    assert later.startswith(b"{") and b"covered" in later and b"covered" not in head
    cache.write_bytes(head + b"\n" + second)
    again = _import(source, store)
    assert (again["read"], again["resumed"], again["from_cache"]) == (0, 0, first["read"])
    grow_claude(path, random.Random(5), turns=2)
    grown = _import(source, store)
    assert grown["resumed"] == 0 and grown["read"] == 1
    assert _said(grown) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)


def test_the_last_build_s_cache_file_is_read_as_it_is_so_an_upgrade_reads_nothing_again(tmp_path):
    """A cache file of version 3 (the resume states inside each unit, one line), under the name
    that build gave it: nothing changed is all from the cache, a transcript that grew is resumed
    from the kept state, and the journals are what a full read writes."""
    import orjson

    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import VERSION, cache_path, load

    path = write_transcript(tmp_path, 200)
    source, store, full = tmp_path / "projects", tmp_path / "store", tmp_path / "full"
    first = _import(source, store)
    _import(source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    doc, resumes = load(cache)
    for key, unit in doc["units"].items():
        unit["resume"] = resumes.get(key, {})
    cache.write_bytes(orjson.dumps({**doc, "version": 3}))
    again = _import(source, store)
    assert (again["read"], again["resumed"], again["from_cache"]) == (0, 0, first["read"])
    grow_claude(path, random.Random(6), turns=2)
    grown = _import(source, store)
    assert (grown["read"], grown["resumed"]) == (0, 1)
    assert _said(grown) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)
    assert load(cache)[0]["version"] == VERSION  # written again by this build


def test_a_kept_state_it_cannot_use_only_means_a_full_read(tmp_path):
    """A resume state another build wrote, or one damaged on disk: the transcript is read in full,
    the journals are what a full read writes, and nothing raises."""
    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path, dump, load

    path = write_transcript(tmp_path, 300)
    source, store, full = tmp_path / "projects", tmp_path / "store", tmp_path / "full"
    _import(source, store)
    _import(source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    doc, resumes = load(cache)
    assert resumes, "the transcript's state is kept"
    for unit in resumes.values():
        for state in unit.values():
            state.update({"uuids": ["ab", "cd"], "msgs": [7, "=="], "hkeys": [1, 2]})
    cache.write_bytes(dump(doc, resumes))
    grow_claude(path, random.Random(3), turns=2)
    again = _import(source, store)
    assert again["resumed"] == 0 and again["read"] == 1
    assert _said(again) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)


def _gen_2_resumed(source: Path, store: Path, full: Path, seed: int) -> None:
    """The long generated transcript grows by two turns: the import resumes it alone, and says and
    writes what a full read (into ``full``) does."""
    grow_claude(source / "-home-ada-gen-2" / "5e55a0e1-0000-4000-8000-000000000002.jsonl", random.Random(seed), turns=2)
    report = _import(source, store)
    assert (report["read"], report["resumed"]) == (0, 1)
    assert _said(report) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)


def _units(cache: Path) -> tuple[bytes, bytes]:
    """A cache file's lines up to its units' last (its first line, then a line each), without the
    last newline, and what follows them (the lines of their resume states)."""
    from toolkit.importers import unchanged

    data, length = cache.read_bytes(), unchanged._head(cache)[1]
    assert data[length - 1:length] == b"\n"
    return data[:length - 1], data[length:]


def _layout(cache: Path) -> tuple[bytes, dict, list[bytes]]:
    """A cache file's lines up to its units' last, the lengths of its units' lines of states, and those lines."""
    import orjson

    head, rest = _units(cache)
    lengths, _, body = rest.partition(b"\n")
    return head, orjson.loads(lengths), body.split(b"\n")[:-1]


def test_a_grown_import_parses_the_states_of_the_grown_units_only(tmp_path, monkeypatch):
    """Each unit's resume states are a line of their own: an import that resumes one transcript
    parses that line alone, and keeps every other unit's line as the file held it."""
    from toolkit.importers import run_import, unchanged
    from toolkit.importers.output import Options

    source, store = _tree(tmp_path / "projects"), tmp_path / "store"
    run_import("claude", [source], store, Options())
    cache = unchanged.cache_path(store, "claude", source, Options(), False, False)
    head, lengths, lines = _layout(cache)
    assert len(lengths) == len(lines) >= 3 and [len(line) for line in lines] == list(lengths.values())
    grown = source / "-home-ada-gen-2" / "5e55a0e1-0000-4000-8000-000000000002.jsonl"
    grow_claude(grown, random.Random(8), turns=2)
    parsed = []
    states = unchanged._states
    monkeypatch.setattr(unchanged, "_states", lambda raw, span, key: parsed.append(key) or states(raw, span, key))
    report = run_import("claude", [source], store, Options())
    assert (report.resumed, report.read) == (1, 0)
    assert len(parsed) == 1
    _head, after, kept = _layout(cache)
    assert after.keys() == lengths.keys()
    changed = [key for key, old, new in zip(lengths, lines, kept) if old != new]
    assert changed == parsed  # (the others' lines, as they were)


@pytest.mark.parametrize("damage", ["longer", "shorter", "swapped", "another-key", "fewer"])
def test_a_line_of_states_out_of_place_means_a_full_read(tmp_path, damage):
    """Lengths that do not lay out the file line by line, or a line that is another unit's: no
    state (the transcript that grew is read in full, to the journals a full read writes), never an error."""
    import orjson

    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path

    source, store, full = _tree(tmp_path / "projects"), tmp_path / "store", tmp_path / "full"
    _import(source, store)
    _import(source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    head, lengths, lines = _layout(cache)
    keys = list(lengths)
    grown = source / "-home-ada-gen-2" / "5e55a0e1-0000-4000-8000-000000000002.jsonl"
    at = next(n for n, key in enumerate(keys) if key.endswith(grown.name))
    other = (at + 1) % len(keys)
    if damage in ("longer", "shorter"):
        lengths[keys[at]] += 1 if damage == "longer" else -1
    elif damage == "swapped":  # two units' lines (and lengths) swapped: each line names its own unit
        lines[at], lines[other] = lines[other], lines[at]
        lengths = {key: len(line) for key, line in zip(keys, lines)}
    elif damage == "another-key":
        lines[at] = orjson.dumps([keys[other], orjson.loads(lines[at])[1]])
        lengths[keys[at]] = len(lines[at])
    else:
        del lengths[keys[at]]
    cache.write_bytes(head + b"\n" + orjson.dumps(lengths) + b"\n" + b"".join(line + b"\n" for line in lines))
    grow_claude(grown, random.Random(4), turns=2)
    again = _import(source, store)
    assert again["resumed"] == 0 and again["read"] >= 1
    assert _said(again) == _said(_import(source, full, "--reread"))
    assert _journals(store) == _journals(full)


def test_a_cache_file_of_version_4_is_read_as_it_is(tmp_path):
    """The build before kept every unit's states in one document on the second line: an upgrade
    recalls what did not change, resumes what grew from those states, and writes this build's file."""
    import orjson

    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import VERSION, cache_path, load

    source, store, full = _tree(tmp_path / "projects"), tmp_path / "store", tmp_path / "full"
    first = _import(source, store)
    _import(source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    doc, resumes = load(cache)
    cache.write_bytes(orjson.dumps({**doc, "version": 4}) + b"\n" + orjson.dumps(resumes))
    again = _import(source, store)
    assert (again["read"], again["resumed"], again["from_cache"]) == (0, 0, first["read"] + first["resumed"] + first["from_cache"])
    _gen_2_resumed(source, store, full, 9)
    assert load(cache)[0]["version"] == VERSION


@pytest.mark.parametrize("earlier", ["sha256 (version 4)", "blake2b (version 5)"])
@pytest.mark.parametrize("tails", ["same bytes", "other bytes"])
def test_an_earlier_builds_tail_hashes_are_checked_so_an_upgrade_reads_nothing_again(tmp_path, tails, earlier):
    """Builds before this one hashed each file's last 4 KiB with sha256, then BLAKE2b: a file whose
    stamp is otherwise the same, and whose last 4 KiB hash so today, is unchanged (nothing read
    again, the cache written again in this build's form, which the next import takes as it is); a
    kept hash those bytes do not give means a full read."""
    import hashlib

    def digest(data: bytes) -> str:
        if earlier.startswith("sha256"):
            return hashlib.sha256(data).hexdigest()[:32]
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    import orjson

    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import TAIL, VERSION, cache_path, dump, load

    source, store, full = _tree(tmp_path / "projects"), tmp_path / "store", tmp_path / "full"
    first = _import(source, store)
    _import(source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    doc, resumes = load(cache)
    for unit in doc["units"].values():
        for path, mark in unit["files"].items():
            if isinstance(mark, list):
                data = Path(path).read_bytes()
                mark[5] = digest(data[-TAIL:] if tails == "same bytes" else b"x" + data)
    if earlier.startswith("sha256"):
        cache.write_bytes(orjson.dumps({**doc, "version": 4}) + b"\n" + orjson.dumps(resumes))
    else:  # (version 5: the layout of this build's file)
        cache.write_bytes(dump({**doc, "version": 5}, resumes))
    units = len(doc["units"])
    again = _import(source, store)
    if tails == "same bytes":
        assert (again["read"], again["from_cache"]) == (0, first["read"] + first["from_cache"])
        doc_now, _resumes = load(cache)
        assert doc_now["version"] == VERSION and len(doc_now["units"]) == units
        assert all(mark != doc["units"][key]["files"][path] for key, unit in doc_now["units"].items()
                   for path, mark in unit["files"].items() if isinstance(mark, list))  # (this build's hashes now)
        before = cache.read_bytes()
        once_more = _import(source, store)  # (taken as they are: nothing checked the earlier way, nothing written)
        assert (once_more["read"], once_more["from_cache"]) == (0, first["read"] + first["from_cache"])
        assert cache.read_bytes() == before
    else:
        assert again["read"] == first["read"] + first["from_cache"] and again["from_cache"] == 0
    # (the kept state goes on when nothing was read again; a full read that wrote nothing keeps one too,
    # this transcript's last response still being written: its partial record's seq is the journal's)
    _gen_2_resumed(source, store, full, 12)
