"""A stat skip trusts only index bytes levelsess wrote or verified; fsck and reindex always agree."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolkit.reindex
import toolkit.sessions
from tests.audit import no_writes
from tests.helpers import PROJECT_SLUG, make_store, run_cli, session_records, snapshot, write_journal
from toolkit.reindex import reindex
from toolkit.sessions import list_sessions
from toolkit.stores import discover_all
from toolkit.verified import fingerprint_path

CACHE_CODES = {"missing-index", "corrupt-index", "stale-index"}


def _reindexed_store(root: Path, sessions: int = 2) -> Path:
    store = make_store(root, sessions=sessions)
    assert run_cli("reindex", store).exit_code == 0
    return store


def _index(store: Path) -> Path:
    return store / PROJECT_SLUG / "index.json"


def _journals(store: Path) -> list[Path]:
    return sorted((store / PROJECT_SLUG).glob("*.jsonl"))


def _count_scans(monkeypatch, module) -> list[Path]:
    """Record every journal ``module`` reads through scan_journal."""
    calls: list[Path] = []
    real = module.scan_journal

    def counting(path, *args, **kwargs):
        calls.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(module, "scan_journal", counting)
    return calls


def _cache_findings(store: Path) -> tuple[set[str], int]:
    result = run_cli("fsck", "--json", store)
    return {f["code"] for f in result.json["findings"] if f["code"] in CACHE_CODES}, result.exit_code


def _reindex_json(store: Path) -> dict:
    result = run_cli("reindex", "--json", store)
    assert result.exit_code == (4 if result.json["refused"] else 0), result.stdout  # refused: a future version
    return result.json


# --- editors that write index.json themselves ----------------------------------------------


def _same_size_title(index: Path) -> None:
    index.write_bytes(index.read_bytes().replace(b'"Refunds"', b'"Refundz"', 1))


def _longer_title(index: Path) -> None:
    index.write_bytes(index.read_bytes().replace(b'"Refunds"', b'"Refunds, edited"', 1))


def _edit_then_date_it_later(index: Path) -> None:
    _same_size_title(index)
    later = max(j.stat().st_mtime for j in index.parent.glob("*.jsonl")) + 3600
    os.utime(index, (later, later))


def _edit_and_keep_the_mtime(index: Path) -> None:
    before = index.stat()
    _same_size_title(index)
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as levelsess left them


@pytest.mark.parametrize("edit", [_same_size_title, _longer_title, _edit_then_date_it_later, _edit_and_keep_the_mtime])
def test_a_foreign_edit_of_the_index_is_found_by_fsck_and_rewritten_by_reindex(tmp_path, edit):
    store = _reindexed_store(tmp_path)
    size = _index(store).stat().st_size
    edit(_index(store))
    assert edit is _longer_title or _index(store).stat().st_size == size
    codes, exit_code = _cache_findings(store)
    assert codes == {"stale-index"} and exit_code == 0  # a cache finding is a warning in a plain check (§2.3)
    assert run_cli("reindex", "--check", store).exit_code == 4
    done = _reindex_json(store)
    assert done["written"] == [str(_index(store))] and done["unchanged"] == []
    assert b'"Refundz"' not in _index(store).read_bytes() and b"edited" not in _index(store).read_bytes()
    assert _cache_findings(store) == (set(), 0)
    again = _reindex_json(store)
    assert again["written"] == [] and again["unchanged"] == [str(_index(store))]


def test_ls_shows_the_journal_title_not_a_foreign_edit(tmp_path):
    store = _reindexed_store(tmp_path, sessions=1)
    _edit_and_keep_the_mtime(_index(store))
    sessions = run_cli("ls", "--json", store).json["sessions"]
    assert [s["title"] for s in sessions] == ["Refunds"]


def test_ls_lists_from_a_vouched_index_without_reading_journals(tmp_path, monkeypatch):
    store = _reindexed_store(tmp_path, sessions=3)
    scans = _count_scans(monkeypatch, toolkit.sessions)
    rows = list_sessions([store])
    assert len(rows) == 3 and all(r.from_index for r in rows) and scans == []
    _same_size_title(_index(store))
    rows = list_sessions([store])
    assert not any(r.from_index for r in rows) and len(scans) == 3
    assert {r.title for r in rows} == {"Refunds"}


def test_second_reindex_of_an_untouched_store_reads_no_journal(tmp_path, monkeypatch):
    store = _reindexed_store(tmp_path, sessions=3)
    scans = _count_scans(monkeypatch, toolkit.reindex)
    result = reindex(discover_all([store]))
    assert scans == [] and result.skipped == result.unchanged == (_index(store),) and result.written == ()
    full = reindex(discover_all([store]), full=True)
    assert len(scans) == 3 and full.skipped == () and full.unchanged == (_index(store),)


def test_a_foreign_index_is_never_trusted_until_reindex_verifies_it(tmp_path, monkeypatch):
    store = make_store(tmp_path, sessions=2)
    assert run_cli("reindex", store).exit_code == 0
    shutil.rmtree(store / ".levelsess")  # as if another program wrote this (correct) index
    scans = _count_scans(monkeypatch, toolkit.reindex)
    first = reindex(discover_all([store]))
    assert len(scans) == 2 and first.skipped == () and first.unchanged == (_index(store),)  # verified, not rewritten
    assert fingerprint_path(discover_all([store])[0]).is_file()
    assert reindex(discover_all([store])).skipped == (_index(store),) and len(scans) == 2


def test_an_unreadable_or_corrupt_fingerprint_costs_a_scan_never_a_failure(tmp_path, monkeypatch):
    store = _reindexed_store(tmp_path)
    fingerprint = fingerprint_path(discover_all([store])[0])
    scans = _count_scans(monkeypatch, toolkit.reindex)
    fingerprint.write_bytes(b'{"format":1,"jour')
    assert reindex(discover_all([store])).skipped == () and len(scans) == 2
    assert orjson.loads(fingerprint.read_bytes())["format"] == 1  # re-verified and rewritten whole
    fingerprint.unlink()
    fingerprint.mkdir()  # neither readable nor replaceable
    result = reindex(discover_all([store]))
    assert result.skipped == () and result.unchanged == (_index(store),) and result.exit_code == 0


def test_fsck_repair_and_migrate_vouch_for_the_index_they_write(tmp_path, monkeypatch):
    repaired = make_store(tmp_path / "repaired", sessions=2)
    assert run_cli("fsck", "--repair", repaired).exit_code == 1  # missing-index rebuilt
    migrated = make_store(tmp_path / "migrated", sessions=2, v=1)
    assert run_cli("migrate", migrated).exit_code == 0
    scans = _count_scans(monkeypatch, toolkit.reindex)
    for store in (repaired, migrated):
        assert reindex(discover_all([store])).skipped == (_index(store),)
    assert scans == []


# --- fsck and reindex agree, whatever happened to the journals -----------------------------


def _touch_old(journal: Path) -> None:
    os.utime(journal, (1, 1))


def _same_size_byte_in_the_title(journal: Path) -> None:
    before = journal.stat()
    journal.write_bytes(journal.read_bytes().replace(b'"Refunds"', b'"Refundz"'))
    os.utime(journal, ns=(before.st_atime_ns, before.st_mtime_ns))


def _same_size_byte_in_an_answer(journal: Path) -> None:
    before = journal.stat()
    journal.write_bytes(journal.read_bytes().replace(b"answer 0", b"answer 9", 1))  # not in the index
    os.utime(journal, ns=(before.st_atime_ns, before.st_mtime_ns))


def _append(journal: Path) -> None:
    with open(journal, "ab") as handle:
        handle.write(orjson.dumps({"kind": "user", "t": "2026-12-01T00:00:00Z", "content": "more", "seq": 99}) + b"\n")


def _truncate_a_line(journal: Path) -> None:
    data = journal.read_bytes()
    with open(journal, "r+b") as handle:
        handle.truncate(data.rindex(b"\n", 0, len(data) - 1) + 1)  # the title record is gone


def _truncate_mid_record(journal: Path) -> None:
    with open(journal, "r+b") as handle:
        handle.truncate(journal.stat().st_size - 5)  # a torn tail


def _replace_by_rename_same_size(journal: Path) -> None:
    before = journal.stat()
    other = journal.with_name(".replacement")
    other.write_bytes(journal.read_bytes().replace(b'"Refunds"', b'"Refundz"'))
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, journal)


def _replace_by_rename_same_bytes(journal: Path) -> None:
    other = journal.with_name(".copy")
    shutil.copy2(journal, other)
    os.replace(other, journal)


def _add_a_journal(journal: Path) -> None:
    sid = "2026-11-30T10-00-00-zzzz"
    write_journal(journal.with_name(f"{sid}.jsonl"), session_records(sid, turns=1))


def _remove_a_journal(journal: Path) -> None:
    journal.unlink()


def _replace_the_index_by_an_identical_copy(journal: Path) -> None:
    index = journal.parent / "index.json"
    copy = journal.parent / ".index.copy"
    shutil.copy2(index, copy)
    os.replace(copy, index)


JOURNAL_EDITS = [_touch_old, _same_size_byte_in_the_title, _same_size_byte_in_an_answer, _append, _truncate_a_line,
                 _truncate_mid_record, _replace_by_rename_same_size, _replace_by_rename_same_bytes, _add_a_journal,
                 _remove_a_journal, _replace_the_index_by_an_identical_copy]
#: Edits after which the index no longer matches the journals.
DRIFTS = {_same_size_byte_in_the_title, _append, _truncate_a_line, _truncate_mid_record, _replace_by_rename_same_size,
          _add_a_journal, _remove_a_journal}


def _assert_fsck_and_reindex_agree(store: Path) -> bool:
    """fsck reports a cache finding iff reindex then writes the index; afterwards both are settled."""
    codes, _ = _cache_findings(store)
    done = _reindex_json(store)
    assert bool(codes) == bool(done["written"]), (codes, done)
    assert _cache_findings(store)[0] == set()
    assert _reindex_json(store)["written"] == []
    return bool(codes)


@pytest.mark.parametrize("edit", JOURNAL_EDITS, ids=lambda e: e.__name__.strip("_"))
def test_fsck_and_reindex_agree_after_any_edit(tmp_path, edit):
    store = _reindexed_store(tmp_path, sessions=2)
    edit(_journals(store)[0])
    assert _assert_fsck_and_reindex_agree(store) == (edit in DRIFTS)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 1), where=st.floats(0, 1, exclude_max=True), byte=st.integers(0x20, 0x7E),
       keep_mtime=st.booleans())
def test_any_same_size_byte_change_keeps_fsck_and_reindex_in_agreement(which, where, byte, keep_mtime):
    with tempfile.TemporaryDirectory() as tmp:
        store = _reindexed_store(Path(tmp), sessions=2)
        journal = _journals(store)[which]
        before = journal.stat()
        data = bytearray(journal.read_bytes())
        data[int(where * len(data))] = byte
        journal.write_bytes(bytes(data))
        if keep_mtime:
            os.utime(journal, ns=(before.st_atime_ns, before.st_mtime_ns))
        _assert_fsck_and_reindex_agree(store)


# --- read-only commands write nothing, the fingerprint folder included ------------------------

READ_ONLY = [("fsck",), ("fsck", "--json"), ("fsck", "--strict"), ("ls", "--json"), ("ls", "--verify", "--json"),
             ("reindex", "--check"), ("reindex", "--check", "--json")]


@pytest.mark.parametrize("state", ["vouched", "unvouched", "index-edited"])
@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
def test_read_only_commands_write_nothing_not_even_a_fingerprint(tmp_path, command, state):
    store = _reindexed_store(tmp_path / "store")
    if state == "unvouched":  # a correct index nobody vouched for yet: a check must not vouch for it
        shutil.rmtree(store / ".levelsess" / "verified")
    if state == "index-edited":
        _same_size_title(_index(store))
    before = snapshot(tmp_path)
    with no_writes() as writes:
        run_cli(*command, store)
    assert writes == [] and snapshot(tmp_path) == before


def test_reindex_removes_a_fingerprint_temp_file_left_by_a_killed_run(tmp_path):
    import subprocess
    import sys

    store = make_store(tmp_path, sessions=1)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    target = fingerprint_path(discover_all([store])[0])
    target.parent.mkdir(parents=True)
    temp = target.with_name(f".{target.name}.{child.pid}.tmp")
    temp.write_bytes(b'{"format":1,"ind')  # a reindex killed before its rename
    assert run_cli("reindex", store).exit_code == 0
    assert not temp.exists() and orjson.loads(target.read_bytes())["format"] == 1


@pytest.mark.parametrize("edit", [_same_size_title, _edit_and_keep_the_mtime])
def test_an_index_changed_after_its_write_is_not_vouched_for_by_the_bytes_the_writer_knew(tmp_path, edit):
    """``vouch(known=...)`` skips the second derivation only for the very bytes the writer derived:
    an index edited between the write and the vouch is compared in full, and refused."""
    from toolkit.journal import scan_journal
    from toolkit.verified import vouch

    store = make_store(tmp_path, sessions=2)
    folder = discover_all([store])[0]
    scans = [scan_journal(j, folder.layout) for j in folder.journals]
    assert reindex([folder]).written == (_index(store),)
    written = _index(store).read_bytes()
    fingerprint_path(folder).unlink()
    assert vouch(folder, scans, written) and fingerprint_path(folder).exists()  # the bytes it wrote: vouched
    fingerprint_path(folder).unlink()
    edit(_index(store))
    assert not vouch(folder, scans, written) and not fingerprint_path(folder).exists()
    assert not vouch(folder, scans) and not fingerprint_path(folder).exists()
