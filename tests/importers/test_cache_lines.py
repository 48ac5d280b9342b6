"""What an import holds of its caches grows with the sessions it kept, not with the bytes of a
whole file parsed at once (issue 27): the import cache keeps each unit's entry on a line of its
own, read when that unit is asked for; the kept resume states are read from the cache file, left
open, a unit at a time; and the index memo of a folder is read a block at a time, its lines held
in a :class:`~toolkit.blobs.Blobs`.  Damage anywhere only means a unit read again, never an error."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.bench.claude_transcript import write as write_transcript
from tests.importers.resumes import imported, journals, said
from tests.restore.kit import CLAUDE

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _tree(root: Path) -> Path:
    shutil.copytree(CLAUDE / "projects", root, ignore=lambda folder, names: [n for n in names if n in (
        "-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo", "Z--03-NDV-Dftcor-Nmmoat")])
    for n, count in ((1, 40), (2, 300)):
        made = write_transcript(root.parent / f"gen-{n}", count)
        folder = root / f"-home-ada-gen-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(str(made), folder / f"5e55a0e1-0000-4000-8000-{n:012x}.jsonl")
    return root


@pytest.fixture(scope="module")
def imported_once(tmp_path_factory) -> tuple[Path, Path, bytes, dict]:
    """A tree imported once: (source, store, its cache file's bytes, every unit's entry as kept)."""
    from toolkit.importers import run_import, unchanged
    from toolkit.importers.output import Options

    tmp = tmp_path_factory.mktemp("cache-lines")
    source, store = _tree(tmp / "projects"), tmp / "store"
    run_import("claude", [source], store, Options())
    cache = unchanged.cache_path(store, "claude", source, Options(), False, False)
    document, _resumes = unchanged.load(cache)
    assert len(document["units"]) >= 4 and all(isinstance(entry, dict) for entry in document["units"].values())
    return source, store, cache.read_bytes(), document["units"]


def _units_end(data: bytes) -> int:
    """Where a cache file's units end (the line of their states' lengths starts)."""
    at = data.index(b"\n") + 1
    while data[at:at + 1] == b"[":
        at = data.index(b"\n", at) + 1
    return at


def test_each_unit_is_a_line_of_its_own_and_is_parsed_only_when_asked_for(imported_once, tmp_path, monkeypatch):
    """The first line holds the version and the trash; each unit's entry follows on a line
    ``[key, entry, check]``; making a :class:`Kept` of the file parses none of them, and asking for a
    unit parses its line once, however often it is asked for in a row."""
    from toolkit.importers import unchanged

    _source, _store, data, units = imported_once
    lines = data[:_units_end(data)].split(b"\n")[:-1]
    assert orjson.loads(lines[0]) == {"version": unchanged.VERSION, "trashed": []}
    assert [orjson.loads(line)[:2] for line in lines[1:]] == [[key, entry] for key, entry in units.items()]
    path = tmp_path / "cache.json"
    path.write_bytes(data)
    parsed = []
    entry = unchanged._Units._entry
    monkeypatch.setattr(unchanged._Units, "_entry", lambda self, key, *span: parsed.append(key) or entry(self, key, *span))
    kept = unchanged.Kept(path, set())
    try:
        assert parsed == [] and set(kept.units) == set(units)
        for key in units:
            assert kept.units.get(key) == units[key] and kept.units.get(key) == units[key]
        assert parsed == list(units)
        path.unlink()  # (the file stays open: a run forgets it before it reads the units that changed)
        assert kept.units.get(next(iter(units))) == units[next(iter(units))]
    finally:
        kept.close()
    assert kept.units.get(next(iter(units))) is None  # (closed: no entry, so a unit would be read again)


def _damaged(original: bytes, data) -> tuple[bytes, int, bool]:
    """The cache file with one byte of its units' lines flipped, or cut there: (its bytes, where, cut)."""
    start, end = original.index(b"\n") + 1, _units_end(original)
    at = start + data.draw(st.integers(0, 1 << 20), label="at") % (end - start)  # (the file's length varies with its folder's)
    if data.draw(st.booleans(), label="cut"):
        return original[:at], at, True
    flipped = original[at] ^ data.draw(st.integers(1, 255), label="xor")
    return original[:at] + bytes([flipped]) + original[at + 1:], at, False


@SETTINGS
@given(data=st.data())
def test_a_cut_or_a_flipped_byte_among_the_units_never_gives_a_unit_another_entry(imported_once, tmp_path, data):
    """Whatever byte of the units' lines is flipped, or wherever the file is cut: making a
    :class:`Kept` of it never raises; each unit is kept as it was or is no entry (its line fails its
    check, or a newline the damage made ended the units before it), so that unit is read again;
    and every unit before the damage is kept as it was (unless the damage made a key another's:
    then nothing of the file is used)."""
    from toolkit.importers import unchanged

    _source, _store, original, units = imported_once
    damaged, at, cut = _damaged(original, data)
    path = tmp_path / "cache.json"
    path.write_bytes(damaged)
    kept = unchanged.Kept(path, set())
    try:
        place = original.index(b"\n") + 1
        for key, entry in units.items():
            line = unchanged._unit_line(key, entry) + b"\n"
            assert original[place:place + len(line)] == line
            found = kept.units.get(key)
            if place + len(line) <= at and kept.units:  # (a line before the damage)
                assert found == entry, key
            assert found is None or found == entry, key  # (a damaged line fails its check)
            place += len(line)
    finally:
        kept.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_import_over_a_damaged_units_line_says_what_a_full_read_says(imported_once, tmp_path_factory, data):
    """End to end: whatever the damage to the units' lines, an import reads again what it must
    (the others from the cache), to the report and journals a full read gives."""
    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path

    source, _store, _data, _units = imported_once
    tmp = tmp_path_factory.mktemp("damaged")
    store, full = tmp / "store", tmp / "full"
    first = imported("claude", source, store)
    imported("claude", source, full, "--reread")
    cache = cache_path(store, "claude", source, Options(), False, False)
    damaged, _at, _cut = _damaged(cache.read_bytes(), data)
    cache.write_bytes(damaged)
    again = imported("claude", source, store)
    assert again["read"] + again["from_cache"] == first["read"] and again["resumed"] == 0
    assert said(again) == said(imported("claude", source, full, "--reread"))
    assert journals(store) == journals(full)


@given(st.text(min_size=1), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))
def test_a_units_key_is_read_back_whatever_its_characters(key, entry):
    """``_key_at`` finds the end of the key's string past escaped quotes and backslashes, in any
    text a path can hold (a lone surrogate is written as an escape, as the cache file writes it)."""
    from toolkit.importers import unchanged

    line = unchanged._json([key, {"x": entry}])
    assert unchanged._key_at(line, 0, len(line)) == key


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=30), st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" "))), max_size=12),
       st.sampled_from(["as written", "no last newline", "a line without a tab", "a key not a string", "a blank line"]),
       st.integers(1, 64), st.sampled_from([0, 200, 1 << 20]))
def test_the_memo_read_a_block_at_a_time_is_the_memo_read_whole(tmp_path_factory, lines, damage, block, in_memory):
    """``_read`` of an index memo file a block at a time, each line held by a :class:`Blobs` (in
    memory or in its file), gives what reading it whole gives, for any lines, any block size, and
    a file this build would not use (no last newline, a line without a tab or a string key)."""
    from toolkit import __version__
    from toolkit.blobs import Blob, Blobs
    from toolkit.fsck import incremental

    head = orjson.dumps({"format": incremental.FORMAT, "levelsess": __version__, "verdict": {"ok": True}})
    body = b"".join(b"\n" + orjson.dumps(key) + b"\t" + value for key, value in lines)
    data = head + body + b"\n"
    if damage == "no last newline":
        data = data[:-1]
    elif damage == "a line without a tab":
        data += b'"k" 1\n'
    elif damage == "a key not a string":
        data += b"1\t{}\n"
    elif damage == "a blank line":
        data += b"\n"
    path = tmp_path_factory.mktemp("memo") / "memo.json"
    path.write_bytes(data)
    whole = incremental._read(path)
    count = len(whole[1])  # (before a get drops a line that is no JSON)
    blobs = Blobs(in_memory)
    old = incremental.READ_WHOLE, incremental.BLOCK
    incremental.READ_WHOLE, incremental.BLOCK = 0, block
    try:
        blocks = incremental._read(path, blobs.keep)
    finally:
        incremental.READ_WHOLE, incremental.BLOCK = old
    assert blocks[0] == whole[0]
    if in_memory == 0:  # (every line held in the file, none in memory)
        assert all(type(value) is Blob for value in dict.values(blocks[1]) if len(value))
    assert {key: bytes(value) for key, value in dict.items(blocks[1])} == dict(dict.items(whole[1]))
    assert {key: blocks[1].get(key) for key in list(blocks[1])} == {key: whole[1].get(key) for key in list(whole[1])}
    if damage == "as written":
        assert whole[0] is not None and count == len({key for key, _value in lines})
    else:
        assert whole[0] is None
    blobs.close()


def test_where_there_is_no_pread_the_units_are_read_from_a_copy(imported_once, tmp_path, monkeypatch):
    """On a system without ``os.pread`` (Windows) the units' lines are held as the file's bytes,
    each still parsed when asked for; the resume states are none (a grown file is read in full)."""
    import os

    from toolkit.importers import unchanged

    _source, _store, data, units = imported_once
    path = tmp_path / "cache.json"
    path.write_bytes(data)
    monkeypatch.delattr(os, "pread")
    kept = unchanged.Kept(path, set())
    try:
        assert {key: kept.units.get(key) for key in units} == units
        assert all(kept.raw_states(unchanged.Unit(key, ())) is None for key in units)
    finally:
        kept.close()


def test_the_last_builds_file_of_version_6_is_read_as_it_is_and_written_again_as_7(tmp_path):
    """The build before this one kept every unit on the first line (version 6): an upgrade recalls
    every unit from it, writes the file again in this build's form, and a transcript that grew is
    resumed from the states it kept, to what a full read says and writes."""
    import random

    from tests.bench.grow import grow_claude
    from toolkit.importers import unchanged
    from toolkit.importers.output import Options

    source, store, full = _tree(tmp_path / "projects"), tmp_path / "store", tmp_path / "full"
    first = imported("claude", source, store)
    imported("claude", source, full, "--reread")
    cache = unchanged.cache_path(store, "claude", source, Options(), False, False)
    document, resumes = unchanged.load(cache)
    cache.write_bytes(unchanged.dump({**document, "version": 6}, resumes))
    assert orjson.loads(cache.read_bytes().split(b"\n", 1)[0])["units"] == document["units"]
    again = imported("claude", source, store)
    assert (again["read"], again["resumed"], again["from_cache"]) == (0, 0, first["read"])
    assert unchanged.load(cache) == ({**document, "version": unchanged.VERSION}, resumes)
    cache.write_bytes(unchanged.dump({**document, "version": 6}, resumes))
    grow_claude(source / "-home-ada-gen-2" / "5e55a0e1-0000-4000-8000-000000000002.jsonl", random.Random(6), turns=2)
    grown = imported("claude", source, store)
    assert (grown["read"], grown["resumed"]) == (0, 1)
    assert said(grown) == said(imported("claude", source, full, "--reread"))
    assert journals(store) == journals(full)
