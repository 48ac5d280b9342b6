"""fsck --incremental: an unchanged journal comes from the cache, any change is caught as a full check catches it."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orjson
import pytest

from tests.helpers import encode, logician_session, make_store, run_cli, session_records, snapshot, truncate_at, write_journal
from toolkit.fsck import incremental

CLAUDE_FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"
SETTLE = 0.1  # seconds: longer than the racy window the tests use, so a journal is trusted next run


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch):
    """The real window (2 s) would make every test wait; the rule is the same at 50 ms."""
    monkeypatch.setattr(incremental, "RACY_NS", 50_000_000)


def _levelcode(tmp_path: Path) -> tuple[Path, Path]:
    root = make_store(tmp_path / "store", sessions=2)
    journal = sorted(root.rglob("*.jsonl"))[0]
    write_journal(journal, session_records(journal.stem, turns=40))  # > 8 KiB: a line outside the hashed tail
    return root, journal


def _logician(tmp_path: Path) -> tuple[Path, Path]:
    entries = [{"id": f"e{n}", "parentId": f"e{n - 1}" if n else None, "timestamp": "2026-11-30T12:00:00Z",
                "text": f"entry {n} " * 8} for n in range(120)]
    folder = logician_session(tmp_path, "s1", entries)
    logician_session(tmp_path, "s2")
    return tmp_path / ".logician", folder / "messages.jsonl"


def _claude(tmp_path: Path) -> tuple[Path, Path]:
    if not CLAUDE_FIXTURES.is_dir():
        pytest.skip(f"{CLAUDE_FIXTURES} is not here (the repository is not checked out beside shared/)")
    root = tmp_path / ".claude" / "projects"
    shutil.copytree(CLAUDE_FIXTURES, root)
    journal = max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return root, journal


KINDS = {"levelcode": _levelcode, "logician": _logician, "claude": _claude}


@pytest.fixture(params=sorted(KINDS))
def store(request, tmp_path) -> tuple[Path, Path]:
    """(the PATH to check, a journal of it larger than 8 KiB), settled past the racy window."""
    root, journal = KINDS[request.param](tmp_path)
    assert journal.stat().st_size > 2 * incremental.TAIL_BYTES
    time.sleep(SETTLE)
    return root, journal


def _fsck(*args) -> tuple[dict, int]:
    result = run_cli("fsck", "--json", *args)
    assert not result.stderr.strip() or "Traceback" not in result.stderr
    return result.json, result.exit_code


def assert_same_as_full(root: Path, *, from_cache: int | None = None, resumed: int | None = None) -> dict:
    """Run --incremental, then a full check; the two must agree on everything (and, when given,
    on how many journals came from the cache and how many were read on from a checkpoint)."""
    inc, inc_exit = _fsck("--incremental", root)
    full, full_exit = _fsck(root)
    hits, resumes = inc.pop("from_cache"), inc.pop("resumed")
    assert "from_cache" not in full and "resumed" not in full
    assert (inc, inc_exit) == (full, full_exit)
    if from_cache is not None:
        assert hits == from_cache
    if resumed is not None:
        assert resumes == resumed
    return full


def _cache_files() -> list[Path]:
    """The folders' cache files (not the sidecars holding reader states)."""
    return sorted(p for p in incremental.cache_dir().iterdir() if not p.name.endswith(".states.json"))


def _count(root: Path) -> int:
    return len(list(root.rglob("*.jsonl")))


def _settle_and_prime(root: Path) -> int:
    """Run --incremental twice; return how many journals the second served from the cache."""
    _fsck("--incremental", root)
    doc, _ = _fsck("--incremental", root)
    return doc["from_cache"]


def _line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, byte in enumerate(data) if byte == 10 and i + 1 < len(data)]


def test_unchanged_store_is_reported_from_the_cache(store):
    root, _ = store
    first, _ = _fsck("--incremental", root)
    assert first["from_cache"] == 0
    assert_same_as_full(root, from_cache=_count(root))


def test_human_output_says_how_many_came_from_the_cache(store):
    root, _ = store
    _fsck("--incremental", root)
    result = run_cli("fsck", "--incremental", root)
    assert f"0 journal(s) read, {_count(root)} unchanged" in result.stderr


def test_append_is_caught(store):
    root, journal = store
    assert _settle_and_prime(root) == _count(root)
    last = journal.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    with open(journal, "ab") as handle:
        handle.write(last + b"\n")  # a repeated record: seq-duplicate, duplicate-id, or a second copy
    assert_same_as_full(root, from_cache=_count(root) - 1)


def test_valid_append_is_caught(store, tmp_path):
    root, journal = store
    _settle_and_prime(root)
    before = assert_same_as_full(root)
    data = journal.read_bytes()
    with open(journal, "ab") as handle:
        handle.write(data[_line_starts(data)[1]:])  # the body again: the records counted grow
    after = assert_same_as_full(root, from_cache=_count(root) - 1)
    assert after["records"] > before["records"]


def test_truncation_is_caught(store):
    root, journal = store
    _settle_and_prime(root)
    truncate_at(journal, journal.stat().st_size - 7)
    doc = assert_same_as_full(root, from_cache=_count(root) - 1)
    assert "torn-tail" in {f["code"] for f in doc["findings"]}


@pytest.mark.parametrize("where", ["in the hashed tail", "before the hashed tail"])
def test_in_place_rewrite_with_mtime_put_back_is_caught(store, where):
    root, journal = store
    _settle_and_prime(root)
    info = journal.stat()
    data = bytearray(journal.read_bytes())
    starts = _line_starts(bytes(data))
    offset = starts[-1] if where == "in the hashed tail" else starts[1]
    assert (offset >= info.st_size - incremental.TAIL_BYTES) == (where == "in the hashed tail")
    data[offset] = ord("#")
    with open(journal, "r+b") as handle:  # same inode, same size
        handle.write(data)
    os.utime(journal, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert journal.stat().st_size == info.st_size and journal.stat().st_mtime_ns == info.st_mtime_ns
    doc = assert_same_as_full(root, from_cache=_count(root) - 1)
    assert {"invalid-json", "torn-tail"} & {f["code"] for f in doc["findings"]}


def test_replaced_file_is_caught(store):
    root, journal = store
    _settle_and_prime(root)
    info = journal.stat()
    data = bytearray(journal.read_bytes())
    data[_line_starts(bytes(data))[1]] = ord("#")
    twin = journal.with_name(".twin")
    twin.write_bytes(data)
    os.utime(twin, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(twin, journal)
    assert journal.stat().st_ino != info.st_ino
    doc = assert_same_as_full(root, from_cache=_count(root) - 1)
    assert "invalid-json" in {f["code"] for f in doc["findings"]}


def test_damaged_line_in_the_appended_part_is_caught(store):
    root, journal = store
    _settle_and_prime(root)
    size = journal.stat().st_size
    last = journal.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    with open(journal, "ab") as handle:
        handle.write(b'{"kind": "user", "cut off\n' + last + b"\n")
    doc = assert_same_as_full(root, from_cache=_count(root) - 1)
    damaged = [f for f in doc["findings"] if f["code"] == "invalid-json"]
    assert damaged and damaged[0]["offset"] == size


def test_damaged_journal_is_reported_from_the_cache_exactly(store):
    root, journal = store
    data = bytearray(journal.read_bytes())
    data[_line_starts(bytes(data))[1]] = ord("#")
    journal.write_bytes(data)
    time.sleep(SETTLE)
    assert _settle_and_prime(root) == _count(root)
    doc = assert_same_as_full(root, from_cache=_count(root))
    assert doc["exit"] & 4


def test_plain_fsck_writes_nothing_anywhere(store, isolated_home):
    root, _ = store
    home, tree = snapshot(isolated_home), snapshot(root)
    run_cli("fsck", root)
    run_cli("fsck", "--json", "--strict", root)
    assert snapshot(isolated_home) == home and snapshot(root) == tree
    assert not incremental.cache_dir().exists()


def test_incremental_writes_only_its_cache_outside_the_store(store, isolated_home):
    root, _ = store
    tree = snapshot(root)
    _fsck("--incremental", root)
    assert snapshot(root) == tree
    cache = incremental.cache_dir()
    assert cache.is_dir() and str(cache).startswith(str(isolated_home))
    stamp = snapshot(cache)
    _fsck("--incremental", root)  # an unchanged store: the cache is not even rewritten
    run_cli("fsck", root)
    assert snapshot(cache) == stamp


@pytest.mark.parametrize("garbage", [b"", b"\x00\x00\x00", b'{"format": 1, "levelsess"', b"[1, 2]",
                                     b'{"format": 1, "levelsess": "0.1.0", "journals": {"x": 1}}',  # the format before lines
                                     b'{"format": 2, "levelsess": "0.1.0"}\n"x"\t{}',  # its last line cut short
                                     b'{"format": 2, "levelsess": "0.1.0"}\n{"x": 1}\n',  # a line that is no key and value
                                     b'{"format": 2, "levelsess": "0.1.0"}\n"x"\t{"layout": \n'])
def test_corrupt_cache_is_ignored_and_rewritten(store, garbage):
    root, _ = store
    _settle_and_prime(root)
    files = sorted(_cache_files())
    assert files
    for path in files:
        path.write_bytes(garbage)
    assert_same_as_full(root, from_cache=0)
    for path in files:
        assert incremental.read_file(path)["journals"]
    assert_same_as_full(root, from_cache=_count(root))


def test_corrupt_cache_entries_are_ignored(store):
    root, _ = store
    _settle_and_prime(root)
    for path in _cache_files():
        doc = incremental.read_file(path)
        for entry in doc["journals"].values():
            entry["findings"] = "nonsense"
            entry["facts"] = {"class": "os:system", "fields": {}, "tags": {}}
        incremental.write_file(path, doc)
    assert_same_as_full(root, from_cache=0)


def test_strict_and_plain_verdicts_are_cached_apart(store):
    root, _ = store
    _settle_and_prime(root)
    inc, code = _fsck("--incremental", "--strict", root)
    full, full_code = _fsck("--strict", root)
    assert inc.pop("from_cache") == 0
    inc.pop("resumed")
    assert (inc, code) == (full, full_code)


def test_just_written_journal_is_not_trusted(monkeypatch, tmp_path):
    monkeypatch.setattr(incremental, "RACY_NS", 10 * 1_000_000_000)
    root = make_store(tmp_path / "store", sessions=2)
    _fsck("--incremental", root)
    assert_same_as_full(root, from_cache=0)


def test_removed_journal_leaves_the_cache(tmp_path):
    root = make_store(tmp_path / "store", sessions=3)
    time.sleep(SETTLE)
    _settle_and_prime(root)
    victim = sorted(root.rglob("*.jsonl"))[0]
    victim.unlink()
    assert_same_as_full(root, from_cache=2)
    (cache,) = _cache_files()
    assert str(victim) not in incremental.read_file(cache)["journals"]
    states = cache.with_name(cache.stem + ".states.json")
    assert not states.exists() or str(victim) not in incremental.read_file(states)["journals"]


def test_new_journal_is_read(tmp_path):
    root = make_store(tmp_path / "store", sessions=2)
    time.sleep(SETTLE)
    _settle_and_prime(root)
    project = next(root.iterdir())
    write_journal(project / "2026-11-30T10-00-00-ffff.jsonl", encode(session_records("2026-11-30T10-00-00-ffff")))
    assert_same_as_full(root, from_cache=2)


@pytest.mark.parametrize("flag", [["--repair"], ["--dry-run"], ["--salvage", "--yes"], ["--relink", "--yes"]])
def test_incremental_refuses_repairs(tmp_path, flag):
    root = make_store(tmp_path / "store", sessions=1)
    result = run_cli("fsck", "--incremental", *flag, root)
    assert result.exit_code == 16
    assert "--incremental" in result.stderr and flag[0] in result.stderr
    assert not incremental.cache_dir().exists()


def test_a_journal_named_twice_is_checked_as_a_full_check_does(tmp_path):
    root = make_store(tmp_path / "store", sessions=2)
    journal = sorted(root.rglob("*.jsonl"))[0]
    time.sleep(SETTLE)
    _fsck("--incremental", root, journal.parent, journal)
    inc, code = _fsck("--incremental", root, journal.parent, journal)
    full, full_code = _fsck(root, journal.parent, journal)
    assert inc.pop("from_cache") == 2  # each journal once, however often it is named
    inc.pop("resumed")
    assert (inc, code) == (full, full_code)


def test_worker_processes_give_the_same_answer(store):
    root, journal = store
    _fsck("--incremental", "--jobs", "2", root)
    with open(journal, "ab") as handle:
        handle.write(b'{"kind": "user", "cut off\n')
    inc, code = _fsck("--incremental", "--jobs", "2", root)
    full, full_code = _fsck("--jobs", "2", root)
    assert inc.pop("from_cache") == _count(root) - 1
    inc.pop("resumed")
    assert (inc, code) == (full, full_code)


def test_unwritable_cache_leaves_the_verdict_alone(tmp_path, isolated_home):
    root = make_store(tmp_path / "store", sessions=2)
    where = incremental.cache_dir()
    where.parent.mkdir(parents=True)
    where.write_bytes(b"a file where the cache folder should be")
    assert_same_as_full(root, from_cache=0)
    result = run_cli("fsck", "--incremental", root)
    assert "could not be written" in result.stderr and "Traceback" not in result.stderr
    assert where.read_bytes() == b"a file where the cache folder should be"


# -- a journal that only grew is read from where the last check stopped -----------------------


def _inc(root: Path) -> dict:
    doc, _ = _fsck("--incremental", root)
    return doc


APPENDS = {
    "valid": lambda data: data[_line_starts(data)[1]:],  # the body again
    "damaged": lambda data: b'{"kind": "user", "cut off\n' + data[_line_starts(data)[-1]:],
    "nul-run": lambda data: b"\0" * 300 + b"\n" + data[_line_starts(data)[-1]:],
    "torn-tail": lambda data: data[_line_starts(data)[-1]:][:25],
    "blank-and-crlf": lambda data: b"\n" + data[_line_starts(data)[-1]:].rstrip(b"\n") + b"\r\n",
}


@pytest.mark.parametrize("append", sorted(APPENDS))
def test_a_grown_journal_is_read_from_where_the_last_check_stopped(store, append):
    root, journal = store
    _settle_and_prime(root)
    data = journal.read_bytes()
    with open(journal, "ab") as handle:
        handle.write(APPENDS[append](data))
    assert_same_as_full(root, from_cache=_count(root) - 1, resumed=1)


def test_a_torn_tail_finished_later_is_judged_as_a_full_check_does(store):
    root, journal = store
    data = journal.read_bytes()
    last = data[_line_starts(data)[-1]:]
    with open(journal, "ab") as handle:
        handle.write(last[:30])  # a writer killed mid-append...
    time.sleep(SETTLE)
    _settle_and_prime(root)
    with open(journal, "ab") as handle:
        handle.write(last[30:])  # ...that another append completed
    assert_same_as_full(root, from_cache=_count(root) - 1, resumed=1)


def test_a_change_at_the_end_of_the_verified_prefix_means_a_full_read(store):
    root, journal = store
    _settle_and_prime(root)
    data = bytearray(journal.read_bytes())
    at = len(data) - 10  # inside the last line: what the prefix hash covers
    data[at] = ord("#") if data[at] != ord("#") else ord("%")
    journal.write_bytes(bytes(data) + bytes(data[_line_starts(bytes(data))[1]:]))
    assert_same_as_full(root, from_cache=_count(root) - 1, resumed=0)


def test_a_grown_journal_twice_in_a_row(store):
    """Each resumed read leaves a checkpoint of its own: growth after growth stays cheap and right."""
    root, journal = store
    _settle_and_prime(root)
    data = journal.read_bytes()
    for _ in range(3):
        with open(journal, "ab") as handle:
            handle.write(data[_line_starts(data)[-1]:])
        time.sleep(SETTLE)  # an append within the racy window of the read is never trusted next time
        assert_same_as_full(root, from_cache=_count(root) - 1, resumed=1)


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_PIECES = st.sampled_from(["record", "record", "record", "dup-seq", "cut", "nul", "blank", "crlf", "not-a-record"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_PIECES, min_size=1, max_size=12), split=st.integers(min_value=0, max_value=12),
       tail=st.integers(min_value=0, max_value=40))
def test_any_growth_is_judged_as_a_full_check_judges_it(tmp_path_factory, monkeypatch, pieces, split, tail):
    """Whatever lines a LevelCode journal holds before and after it grew (records, repeats, damage,
    NULs, blank and CRLF lines, a torn tail that the growth completes or not), --incremental after
    the growth says exactly what a full check says."""
    monkeypatch.setattr(incremental, "RACY_NS", 50_000_000)
    root = tmp_path_factory.mktemp("grow") / "store"
    journal = root / "-p" / "2026-11-30T09-00-00-a1b2.jsonl"
    journal.parent.mkdir(parents=True)
    lines = [orjson.dumps({"kind": "meta", "v": 2, "id": journal.stem, "project": "/p", "createdAt": "2026-11-30T09:00:00Z"})]
    seq = 0
    for piece in pieces:
        if piece in ("record", "dup-seq"):
            seq += piece == "record"
            lines.append(orjson.dumps({"kind": "user", "t": "2026-11-30T09:00:01Z", "content": "x" * 40, "seq": max(seq, 1)}))
        elif piece == "cut":
            lines.append(b'{"kind":"assistant","t":"2026')
        elif piece == "nul":
            lines.append(b"\0" * 64)
        elif piece == "blank":
            lines.append(b"")
        elif piece == "crlf":
            seq += 1
            lines.append(orjson.dumps({"kind": "user", "t": "2026-11-30T09:00:01Z", "content": "y", "seq": seq}) + b"\r")
        else:
            lines.append(b'{"no":"kind"}')
    data = b"".join(line + b"\n" for line in lines)
    cut = len(b"".join(line + b"\n" for line in lines[: 1 + min(split, len(pieces))])) + tail
    cut = min(cut, len(data))
    journal.write_bytes(data[:cut])
    time.sleep(SETTLE)
    _fsck("--incremental", root)
    with open(journal, "ab") as handle:
        handle.write(data[cut:] + b'{"kind":"user","t":"2026-11-30T09:00:02Z","content":"z","seq":99}\n')
    time.sleep(SETTLE)
    # the meta record was whole at the first check: it left a checkpoint
    assert_same_as_full(root, resumed=1 if cut > len(lines[0]) else None)


@pytest.mark.parametrize("garbage", [b"{not json", "state"])
def test_a_corrupt_reader_state_means_a_full_read(store, garbage):
    import base64

    root, journal = store
    _settle_and_prime(root)
    for cache in _cache_files():
        states = cache.with_name(cache.stem + ".states.json")
        if garbage == "state":  # valid JSON, a state that does not unpickle to a reader
            doc = incremental.read_file(states)
            doc["journals"] = {k: base64.b64encode(b"\x80\x04garbage").decode() for k in doc["journals"]}
            incremental.write_file(states, doc)
        else:
            states.write_bytes(garbage)
    with open(journal, "ab") as handle:
        handle.write(journal.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1] + b"\n")
    time.sleep(SETTLE)
    assert_same_as_full(root)


# -- the folder's index.json / meta.json verdict, kept beside its journals' -------------------

def _cache_file_of(root: Path) -> Path:
    caches = sorted(root.rglob("index.json")) or sorted(root.rglob("meta.json"))
    assert caches, "the store has no cache file to judge"
    return caches[0]


@pytest.fixture(params=["levelcode", "logician"])
def indexed(request, tmp_path) -> tuple[Path, Path]:
    """A store with its index.json (LevelCode) or meta.json (Logician), settled past the racy window."""
    root, _journal = KINDS[request.param](tmp_path)
    assert run_cli("reindex", "-q", root).exit_code == 0
    time.sleep(SETTLE)
    return root, _cache_file_of(root)


def _judged(monkeypatch) -> list:
    """Record each folder the check judges its cache file for (instead of reusing the verdict)."""
    from toolkit.fsck import check

    judged, real = [], check.check_cache
    monkeypatch.setattr(check, "check_cache", lambda partial: judged.append(partial.folder.path) or real(partial))
    return judged


def test_an_unchanged_cache_file_is_not_read_again(indexed, monkeypatch):
    root, _cache = indexed
    _settle_and_prime(root)
    judged = _judged(monkeypatch)
    doc, code = _fsck("--incremental", root)
    assert code == 0 and doc["findings"] == [] and judged == []
    assert_same_as_full(root)


def _edit_in_place(cache: Path) -> None:
    """Change one byte of the cache file, same size, mtime put back (ctime moves)."""
    info = cache.stat()
    data = bytearray(cache.read_bytes())
    at = data.index(b'"', len(data) // 2) + 1
    data[at] = ord("Z") if data[at] != ord("Z") else ord("Y")
    cache.write_bytes(bytes(data))
    os.utime(cache, ns=(info.st_atime_ns, info.st_mtime_ns))


CHANGES = {
    "edited in place": _edit_in_place,
    "deleted": lambda cache: cache.unlink(),
    "replaced by an older copy": lambda cache: (shutil.copy2(cache, cache.with_name("x.tmp")),
                                                cache.with_name("x.tmp").replace(cache)),
    "emptied": lambda cache: cache.write_bytes(b""),
    "made corrupt": lambda cache: cache.write_bytes(b"{not json"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_cache_file_is_judged_again_as_a_full_check_does(indexed, monkeypatch, change):
    root, cache = indexed
    _settle_and_prime(root)
    CHANGES[change](cache)
    time.sleep(SETTLE)
    judged = _judged(monkeypatch)
    assert_same_as_full(root)
    assert judged, "the cache file was not judged again"
    judged.clear()
    assert_same_as_full(root)  # and the new verdict is the full check's next time too


def test_a_changed_journal_means_its_folders_cache_file_is_judged_again(indexed, monkeypatch):
    root, cache = indexed
    _settle_and_prime(root)
    journal = sorted(cache.parent.rglob("*.jsonl"))[-1]
    with open(journal, "ab") as handle:
        handle.write(encode({"kind": "title", "t": "2026-11-30T10:00:00Z", "title": "renamed", "seq": 10_000})
                     if cache.name == "index.json" else
                     encode({"id": "late", "parentId": None, "timestamp": "2026-11-30T13:00:00Z", "text": "late"}))
    judged = _judged(monkeypatch)
    full = assert_same_as_full(root)
    assert judged and full["findings"], "a grown journal makes the cache file stale, as a full check says"


def test_a_new_or_removed_journal_means_the_cache_file_is_judged_again(indexed, monkeypatch):
    root, cache = indexed
    _settle_and_prime(root)
    journals = sorted(cache.parent.rglob("*.jsonl"))
    extra = journals[0].with_name("copy-" + journals[0].name)
    shutil.copy(journals[0], extra)
    judged = _judged(monkeypatch)
    assert_same_as_full(root)
    assert judged
    extra.unlink()
    judged.clear()
    assert_same_as_full(root)
    assert judged


def test_a_just_written_cache_file_is_judged_again_next_time(indexed, monkeypatch):
    """Racy: a cache file changed within the window of the check that judged it is not trusted."""
    root, cache = indexed
    monkeypatch.setattr(incremental, "RACY_NS", 10 ** 12)
    _settle_and_prime(root)
    judged = _judged(monkeypatch)
    assert_same_as_full(root)
    assert judged


def test_a_cache_file_is_a_line_a_journal_and_only_the_lines_asked_for_are_parsed(tmp_path, monkeypatch):
    """Format 2: the head on the first line, then ``<key><TAB><entry>`` a journal; a lookup parses
    its own line only, and a save writes every line it did not parse back as it was."""
    root = make_store(tmp_path / "store", sessions=5)
    time.sleep(SETTLE)
    _settle_and_prime(root)
    (cache,) = _cache_files()
    data = cache.read_bytes()
    head, *lines = data.splitlines()
    assert orjson.loads(head)["format"] == incremental.FORMAT == 2
    keys = [orjson.loads(line.partition(b"\t")[0]) for line in lines]
    assert sorted(keys) == sorted(str(p) for p in root.rglob("*.jsonl"))
    parsed = []
    real_loads = incremental.loads

    def counting(data):
        parsed.append(bytes(data[:40]))
        return real_loads(data)

    entries, _verdict = incremental._load(cache)
    monkeypatch.setattr(incremental, "loads", counting)
    assert entries.get(keys[2])["layout"] == "levelcode"
    assert len(parsed) == 1 and parsed[0] == lines[2].partition(b"\t")[2][:40]  # its own line, and no other
    assert entries.get("no such journal") is None and len(parsed) == 1
    monkeypatch.undo()
    assert incremental._dump(orjson.loads(head), entries) == data  # the lines not parsed written back as they were


@pytest.mark.parametrize("racy_ns", [0, 50_000_000])  # (the journals are SETTLE old: past either window)
def test_a_journal_recorded_this_run_is_looked_up_by_a_stat_and_is_what_its_entry_decodes_to(tmp_path, monkeypatch, racy_ns):
    """An import's settle looks up every journal its workers just recorded: while the journal is
    the same file as recorded (device, inode, size, times) and not racy, the lookup takes the scan
    kept in memory, equal to what decoding the entry gives, without reading its tail; an append
    since, or a racy entry, is judged as a lookup always judged it."""
    from toolkit.journal import scan_journal

    root = make_store(tmp_path / "store", sessions=3)
    journals = sorted(root.rglob("*.jsonl"))
    time.sleep(SETTLE)  # (the files older than the racy window)
    for lean in (False, True):
        memo = incremental.IncrementalCache(False, root=tmp_path / f"memo-{lean}-{racy_ns}", racy_ns=racy_ns, lean=lean)
        for journal in journals:
            info = journal.stat()
            memo.remember_scan(journal.parent, journal, scan_journal(journal, "levelcode", checkpoint=True),
                               incremental.stamp_of(info), time.time_ns())
        probes = []
        real_probe = incremental._probe
        monkeypatch.setattr(incremental, "_probe", lambda *args: probes.append(args) or real_probe(*args))
        for journal in journals:
            found = memo.lookup(journal.parent, journal, "levelcode")
            where, entries = memo._entries(journal.parent)
            assert found == incremental._decode_scan(entries.get(str(journal)), journal)
            assert found.resume_state is None
        assert probes == [] and memo.hits == len(journals)
        with open(journals[0], "ab") as handle:  # appended since it was recorded: no longer the file recorded
            handle.write(b"\n")
        assert memo.lookup(journals[0].parent, journals[0], "levelcode") is None and len(probes) == 1
        monkeypatch.undo()
        journals[0].write_bytes(journals[0].read_bytes()[:-1])
        time.sleep(SETTLE)
    racy = incremental.IncrementalCache(False, root=tmp_path / "memo-racy", racy_ns=10 * incremental.RACY_NS)
    journal = journals[1]
    racy.remember_scan(journal.parent, journal, scan_journal(journal, "levelcode", checkpoint=True),
                       incremental.stamp_of(journal.stat()), time.time_ns())
    assert racy.lookup(journal.parent, journal, "levelcode") is None  # racy: read again, as it always was


def test_the_entries_a_run_records_are_held_at_their_size(tmp_path):
    """An import's parent records a memo entry for every journal its workers wrote and holds them
    until the save: each as its line's bytes, at their size (orjson's own bytes of a 1 kB entry held
    an 8 kB buffer each: 2,000 Cursor chats took 24 MB more of the import's peak memory)."""
    import tracemalloc

    from toolkit.journal import scan_journal

    root = make_store(tmp_path / "store", sessions=40)
    journals = sorted(root.rglob("*.jsonl"))
    time.sleep(SETTLE)
    memo = incremental.IncrementalCache(False, root=tmp_path / "memo", racy_ns=0, lean=True)
    scans = [(journal, scan_journal(journal, "levelcode", checkpoint=True), incremental.stamp_of(journal.stat()))
             for journal in journals]
    memo._entries(journals[0].parent)
    memo._states(memo.where[journals[0].parent])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for journal, scan, stamp in scans:
            memo.remember_scan(journal.parent, journal, scan, stamp, time.time_ns())
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    where = memo.where[journals[0].parent]
    lines = sum(len(value) for value in dict.values(memo.files[where])) + sum(len(v) for v in dict.values(memo.states[where]))
    assert len(memo.files[where]) == len(journals) and lines > 0
    assert held < 1.5 * lines + 1024 * len(journals), (held, lines)  # (the lines, and what the run keeps of each journal)


_PATHS = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1, max_size=40)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text(st.characters(blacklist_categories=("Cs",))),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.dictionaries(_PATHS, _VALUES, max_size=12), head=st.dictionaries(st.text(max_size=8), _VALUES, max_size=3),
       asked=st.data())
def test_a_cache_file_gives_back_every_value_under_any_key_and_writes_back_unread_lines_as_they_were(tmp_path, entries, head, asked):
    """Keys are paths, which may hold a tab, a newline or a quote: each line's key is its JSON, so
    it splits on the first raw tab whatever the path; every value comes back as written, and a
    file loaded, some values asked for, and dumped again is the same bytes."""
    path = tmp_path / "cache.json"
    data = incremental._dump({**head, "format": incremental.FORMAT, "levelsess": incremental.__version__}, entries)
    path.write_bytes(data)
    loaded, _verdict = incremental._load(path)
    assert list(loaded) == list(entries)
    for key in asked.draw(st.lists(st.sampled_from(list(entries)), max_size=5)) if entries else []:
        assert loaded.get(key) == entries[key]
    assert incremental._dump({**head, "format": incremental.FORMAT, "levelsess": incremental.__version__}, loaded) == data
    assert all(loaded.get(key) == value for key, value in entries.items())
