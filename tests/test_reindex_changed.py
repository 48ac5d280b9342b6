"""An import's reindex reads only the journals that changed since the index was vouched for
(issue 27): whatever changed, the index it writes is the one a full read derives, and a folder it
cannot bring up to date from those alone is read in full, as ever."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolkit.reindex
from tests.helpers import PROJECT_SLUG, make_store, session_records, write_journal
from toolkit.fsck.incremental import IncrementalCache
from toolkit.index import build_index, load_cache
from toolkit.journal import scan_journal
from toolkit.reindex import reindex
from toolkit.stores import discover_all
from toolkit.verified import trusted_index


def _memo(root: Path) -> IncrementalCache:
    return IncrementalCache(False, root=root / "memo", racy_ns=0)


def _journals(store: Path) -> list[Path]:
    return sorted((store / PROJECT_SLUG).glob("*.jsonl"))


def _settle(store: Path, memo_root: Path, read: list[Path] | None = None):
    """What an import's _settle does: a reindex with the import's memo, which is then saved."""
    memo = _memo(memo_root)
    result = reindex(discover_all([store]), memo=memo)
    memo.save()
    return result


def _full_entries(store: Path) -> list[dict]:
    folder = discover_all([store])[0]
    return build_index([scan_journal(j, folder.layout) for j in folder.journals])[1]


def _stored_entries(store: Path) -> list[dict]:
    value = load_cache(store / PROJECT_SLUG / "index.json").value
    return value["sessions"] if isinstance(value, dict) else value


def _append(path: Path, records: list[dict]) -> None:
    with open(path, "ab") as handle:
        handle.write(b"".join(orjson.dumps(r) + b"\n" for r in records))


def _next_seq(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


# -- what may happen to a folder between two imports --------------------------------------------

def _turn(journal: Path, n: int) -> None:
    seq = _next_seq(journal)
    t = f"2026-12-0{1 + n % 9}T10:{n % 60:02d}:00Z"
    _append(journal, [{"kind": "user", "t": t, "content": f"more {n}", "seq": seq},
                      {"kind": "assistant", "t": t, "model": "claude-opus", "content": [{"type": "text", "text": "ok"}],
                       "seq": seq + 1}])


def _retitle(journal: Path, n: int) -> None:
    _append(journal, [{"kind": "title", "t": f"2026-12-02T08:{n % 60:02d}:00Z", "title": f"Renamed {n}",
                       "seq": _next_seq(journal)}])


def _torn(journal: Path, n: int) -> None:
    with open(journal, "ab") as handle:
        handle.write(b'{"kind":"user","t":"2026-12-0')


def _garbage_line(journal: Path, n: int) -> None:
    with open(journal, "ab") as handle:
        handle.write(b"not json at all\n")


def _new_journal(journal: Path, n: int) -> None:
    sid = f"2026-12-01T00-00-{n % 60:02d}-new{n}"
    write_journal(journal.parent / f"{sid}.jsonl", session_records(sid, turns=1 + n % 3))


def _removed(journal: Path, n: int) -> None:
    journal.unlink()


def _rewritten_other_id(journal: Path, n: int) -> None:
    """Rewritten in place (same inode) as another session: the entry it had must go."""
    sid = f"2026-11-29T00-00-00-other{n}"
    with open(journal, "r+b") as handle:
        handle.truncate(0)
        handle.write(b"".join(orjson.dumps(r) + b"\n" for r in session_records(sid, turns=1)))


def _replaced(journal: Path, n: int) -> None:
    """Replaced by a new file (another inode) holding what it held and a turn more."""
    data = journal.read_bytes()
    tmp = journal.with_name(journal.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, journal)
    _turn(journal, n)


def _same_id_as_another(journal: Path, n: int) -> None:
    """A second journal of the first one's session id and last time, but fewer turns: two entries
    in one place of the index's order (which the journals' order decides)."""
    first = orjson.loads(_journals(journal.parent.parent)[0].read_bytes().split(b"\n", 1)[0])
    write_journal(journal.parent / f"zz-copy-{n}.jsonl", session_records(first["id"], turns=1, v=first.get("v", 1)))


def _touched(journal: Path, n: int) -> None:
    os.utime(journal, ns=(journal.stat().st_atime_ns, journal.stat().st_mtime_ns + 1_000_000_000))


CHANGES = [_turn, _retitle, _torn, _garbage_line, _new_journal, _removed, _rewritten_other_id, _replaced,
           _same_id_as_another, _touched]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions=st.integers(1, 4), v=st.sampled_from([1, 2]),
       changes=st.lists(st.tuples(st.sampled_from(CHANGES), st.integers(0, 3)), min_size=1, max_size=4))
def test_the_index_an_import_brings_up_to_date_is_the_one_a_full_read_derives(sessions, v, changes):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = make_store(root / "store", sessions=sessions, v=v)
        _settle(store, root)  # the first import: every journal read, the index vouched for
        for n, (change, which) in enumerate(changes):
            journals = _journals(store)
            if not journals:
                break
            change(journals[which % len(journals)], n)
        if not _journals(store):
            return
        result = _settle(store, root)
        assert not result.refused, result.findings
        assert _stored_entries(store) == _full_entries(store)
        folder_ = discover_all([store])[0]
        assert trusted_index(folder_) is not None  # vouched for: the next reindex reads nothing
        assert reindex(discover_all([store]), check_only=True).findings == ()  # and a full comparison agrees


@pytest.mark.parametrize("change", [_turn, _retitle, _torn])
def test_only_the_journal_that_grew_is_read(tmp_path, monkeypatch, change):
    store = make_store(tmp_path / "store", sessions=4)
    _settle(store, tmp_path)
    grown = _journals(store)[1]
    change(grown, 7)
    read: list[Path] = []
    real = toolkit.reindex._remembered
    monkeypatch.setattr(toolkit.reindex, "_remembered", lambda memo, folder, journal: (read.append(journal),
                                                                                         real(memo, folder, journal))[1])
    assert _settle(store, tmp_path).written == (store / PROJECT_SLUG / "index.json",)
    assert read == [grown]
    assert _stored_entries(store) == _full_entries(store)


@pytest.mark.parametrize("change", [_same_id_as_another, _rewritten_other_id])
def test_what_a_changed_journal_cannot_settle_alone_is_read_in_full(tmp_path, monkeypatch, change):
    """Two entries of one id (their order is the journals'), or a memo that lost the journal's last
    read: every journal is read, and the index is still the full read's."""
    store = make_store(tmp_path / "store", sessions=3)
    _settle(store, tmp_path)
    change(_journals(store)[1], 1)
    if change is _rewritten_other_id:  # and the memo no longer holds what the journal was
        for cache in (tmp_path / "memo").rglob("*"):
            if cache.is_file():
                cache.unlink()
    read: list[Path] = []
    real = toolkit.reindex._remembered
    monkeypatch.setattr(toolkit.reindex, "_remembered", lambda memo, folder, journal: (read.append(journal),
                                                                                         real(memo, folder, journal))[1])
    _settle(store, tmp_path)
    assert sorted(set(read)) == _journals(store)  # (a new or changed one may be read twice: tried, then in full)
    assert _stored_entries(store) == _full_entries(store)


def test_an_index_edited_by_someone_else_is_never_brought_up_to_date_from_its_entries(tmp_path):
    store = make_store(tmp_path / "store", sessions=3)
    _settle(store, tmp_path)
    index = store / PROJECT_SLUG / "index.json"
    index.write_bytes(index.read_bytes().replace(b'"Refunds"', b'"Refundz"', 1))  # not the bytes vouched for
    _turn(_journals(store)[0], 1)
    _settle(store, tmp_path)
    assert _stored_entries(store) == _full_entries(store)
    assert b"Refundz" not in index.read_bytes()


def test_a_folder_read_in_full_holds_each_scan_as_a_lookup_gives_it(tmp_path, monkeypatch):
    """An import's reindex of a folder it reads in full (no vouched index, an empty memo: the store
    imported into with another cache folder) holds each scan as the memo's lookup gives it back: no
    reader state, and, the import's memo being lean, no meta source row.  The index it writes is
    the one a plain full read writes.  (Held whole, 800 Codex journals took 45 MiB more.)"""
    stores = []
    for name in ("memo", "plain"):
        store = tmp_path / name
        for n in range(3):
            sid = f"2026-11-30T09-00-0{n}-a1b{n}"
            records = session_records(sid, turns=2 + n)
            records[0]["raw"] = {"type": "session_meta", "payload": {"base_instructions": "You are Codex. " * 400}}
            write_journal(store / PROJECT_SLUG / f"{sid}.jsonl", records)
        stores.append(store)
    held: list = []
    derive = toolkit.reindex.derived_cache

    def keep(folder, scans, *args, **kwargs):
        held.extend(scans)
        return derive(folder, scans, *args, **kwargs)

    monkeypatch.setattr(toolkit.reindex, "derived_cache", keep)
    memo = IncrementalCache(False, root=tmp_path / "cache", racy_ns=0, lean=True)  # (the import's: _index_memo)
    reindex(discover_all([stores[0]]), memo=memo)
    assert len(held) == 3
    assert all(scan.resume_state is None and "raw" not in scan.facts.meta for scan in held)
    assert memo.dirty, "the memo still records each scan it read"
    reindex(discover_all([stores[1]]))
    memo_index, plain_index = (orjson.loads((store / PROJECT_SLUG / "index.json").read_bytes()) for store in stores)
    assert memo_index.pop("generatedAt") and plain_index.pop("generatedAt")
    assert memo_index == plain_index and len(memo_index["sessions"]) == 3



def _index_changed_by_scanning(stored: list, gone: list[dict]):
    """The rule :func:`toolkit.index.index_changed` keeps, as it was first written: each entry of
    ``gone`` removes the first entry equal to it, searched from the start (the reference)."""
    from toolkit.index import _order, same

    entries = list(stored)
    for old in gone:
        at = next((i for i, entry in enumerate(entries) if same(entry, old)), None)
        if at is None:
            return None
        del entries[at]
    if not all(isinstance(entry, dict) for entry in entries):
        return None
    entries.sort(key=_order, reverse=True)
    if any(_order(a) == _order(b) and not same(a, b) for a, b in zip(entries, entries[1:])):
        return None
    return 1, entries


_ENTRY = st.fixed_dictionaries({"id": st.sampled_from(["a", "b", "c"]), "updatedAt": st.sampled_from(["t1", "t2", "t3"]),
                                "turns": st.integers(0, 2)})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.one_of(_ENTRY, _ENTRY.map(lambda e: {**e, "id": 7})), max_size=8),
       picks=st.lists(st.integers(0, 7), max_size=4), strays=st.lists(_ENTRY, max_size=2))
def test_an_index_brought_up_to_date_drops_the_same_entries_however_many_share_an_id(monkeypatch, entries, picks, strays):
    """Entries of one id (a journal copied under another name), equal entries, an id that is no
    string, an entry gone that the index does not hold: the entries an import's reindex finds by
    their id are those a search of the whole index from its start finds."""
    import toolkit.index as index

    with monkeypatch.context() as patched:
        patched.setattr(index, "index_entry", lambda scan, _v2: dict(scan))  # (a scan is its entry here)
        gone = [entries[i] for i in picks if i < len(entries) and isinstance(entries[i]["id"], str)] + strays
        assert index.index_changed(list(entries), gone, []) == _index_changed_by_scanning(entries, gone)


# -- a folder the memo holds nothing of, read in workers (an import after the user's cache folder was cleaned) --

def _memo_entries(root: Path, store: Path) -> dict:
    """The import memo's entries as saved, by journal name, without what differs between two copies
    of one store (their paths, stamps and read times)."""
    entries = {}
    for cache in (root / "cache").rglob("*.json"):
        if cache.name.endswith(".states.json"):
            continue
        for line in cache.read_bytes().split(b"\n")[1:]:
            if line.strip():
                key, _tab, entry = line.partition(b"\t")
                entry = orjson.loads(entry.replace(str(store).encode(), b"STORE"))
                entry.pop("stamp"), entry.pop("read_ns")
                entries[Path(orjson.loads(key)).name] = entry
    return entries


_SHAPES = {
    "whole": lambda project: None,
    "torn tail": lambda project: _torn(sorted(project.glob("*.jsonl"))[1], 3),
    "a garbage line": lambda project: _garbage_line(sorted(project.glob("*.jsonl"))[0], 4),
    "a folder named like a journal": lambda project: (project / "zz-not-a-journal.jsonl").mkdir(),
    "an empty journal": lambda project: (project / "zz-empty.jsonl").write_bytes(b""),
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
def test_journals_the_memo_holds_nothing_of_are_read_in_workers_as_they_are_read_alone(tmp_path, monkeypatch, shape):
    """An import's reindex of a folder whose journals the memo holds nothing of (the user's cache
    folder was cleaned) reads them in forked workers with ``jobs``: the index, the findings and
    what the memo keeps are those of reading them one after the other here, and the next
    reindex's lookups find every one of them."""
    import toolkit.forked

    forks: list[int] = []
    real = toolkit.forked.map_batches
    monkeypatch.setattr(toolkit.forked, "map_batches", lambda fn, batches, jobs, *a, **k: (forks.append(jobs),
                                                                                           real(fn, batches, jobs, *a, **k))[1])
    results, indexes, memos = [], [], []
    for jobs in (2, 1):
        root = tmp_path / f"jobs{jobs}"
        store = make_store(root / "store", sessions=6)
        _SHAPES[shape](store / PROJECT_SLUG)
        memo = IncrementalCache(False, root=root / "cache", racy_ns=0, lean=True)  # (the import's: _index_memo)
        result = reindex(discover_all([store]), memo=memo, jobs=jobs)
        memo.save()
        results.append(sorted((f.code, Path(f.path).name, f.line, f.offset, f.message.replace(str(store), "STORE"))
                              for f in result.findings))
        index = orjson.loads((store / PROJECT_SLUG / "index.json").read_bytes())
        index.pop("generatedAt")
        indexes.append(orjson.loads(orjson.dumps(index).replace(str(store).encode(), b"STORE")))
        memos.append(_memo_entries(root, store))
        again = IncrementalCache(False, root=root / "cache", racy_ns=0, lean=True)
        folder = discover_all([store])[0]
        journals = [j for j in folder.journals if j.is_file()]
        assert all(again.lookup(folder.path, j, folder.layout.name) is not None for j in journals if j.stat().st_size)
    assert forks == [2], "the journals were read in two workers, and only with jobs 2"
    assert results[0] == results[1]
    assert indexes[0] == indexes[1] and indexes[0]["sessions"]
    assert memos[0] == memos[1] and len(memos[0]) >= 6


def test_journals_a_killed_worker_took_are_read_here(tmp_path, monkeypatch):
    """A reindex worker killed (SIGKILL, out of memory) mid-folder: the journals it took are read in
    the import's own process, and the index and memo are what one process makes."""
    import signal

    import toolkit.reindex as module

    real = module._encoded_scans

    def dies_on_the_second(items: list) -> list:
        if any(item[0].name.startswith("2026-11-30T09-00-01") for item in items):
            os.kill(os.getpid(), signal.SIGKILL)  # (in the worker: the fork's copy of this patch)
        return real(items)

    import toolkit.forked

    lost: list[str] = []
    forked_map = toolkit.forked.map_batches

    def watched(*args, **kwargs):
        try:
            return forked_map(*args, **kwargs)
        except toolkit.forked.WorkerLost as exc:
            lost.append(str(exc))
            raise

    indexes, memos = [], []
    for jobs in (2, 1):
        root = tmp_path / f"jobs{jobs}"
        store = make_store(root / "store", sessions=6)
        with monkeypatch.context() as patch:
            patch.setattr(module, "_encoded_scans", dies_on_the_second)
            patch.setattr(toolkit.forked, "map_batches", watched)
            memo = IncrementalCache(False, root=root / "cache", racy_ns=0, lean=True)
            result = reindex(discover_all([store]), memo=memo, jobs=jobs)
        memo.save()
        assert not result.findings and result.written
        index = orjson.loads((store / PROJECT_SLUG / "index.json").read_bytes())
        index.pop("generatedAt")
        indexes.append(orjson.loads(orjson.dumps(index).replace(str(store).encode(), b"STORE")))
        memos.append(_memo_entries(root, store))
    assert len(lost) == 1, "the worker that took it was killed (jobs 2 only)"
    assert indexes[0] == indexes[1] and len(indexes[0]["sessions"]) == 6
    assert memos[0] == memos[1] and len(memos[0]) == 6
