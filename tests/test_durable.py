"""The durability module: fsync failures are fatal, a full disk is a typed error, Ctrl-C waits."""

from __future__ import annotations

import errno
import hashlib
import os

import pytest

from tests.helpers import record_fsyncs, run_cli, torn_store
from toolkit import durable
from toolkit.errors import DiskFullError, DurabilityError, FileChangedError
from toolkit.fsck import check_folders, plan_repair
from toolkit.stores import discover_all


def test_append_line_is_one_record_and_returns_its_end(tmp_path):
    path = tmp_path / "j.jsonl"
    assert durable.append_line(path, b'{"a":1}') == 8
    assert durable.append_line(path, b'{"b":2}') == 16
    with pytest.raises(ValueError):
        durable.append_line(path, b"two\nlines")


def test_atomic_write_leaves_no_temp_file(tmp_path):
    target = tmp_path / "index.json"
    durable.atomic_write(target, b"[]\n")
    durable.atomic_write(target, b"[1]\n")
    assert target.read_bytes() == b"[1]\n"
    assert os.listdir(tmp_path) == ["index.json"]


def test_failed_fsync_stops_the_repair_with_exit_8_and_keeps_the_bytes(tmp_path, monkeypatch):
    store, journal = torn_store(tmp_path)
    original = journal.read_bytes()

    def broken(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(durable.os, "fsync", broken)
    result = run_cli("fsck", "--repair", "--json", store)
    assert result.exit_code & 8
    assert not any(f["repaired"] and f["code"] == "torn-tail" for f in result.json["findings"])
    assert journal.read_bytes() == original


def test_disk_full_is_a_typed_error(tmp_path, monkeypatch):
    real_write = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable.os, "write", full)
    with pytest.raises(DiskFullError, match="disk full"):
        durable.append_line(tmp_path / "j.jsonl", b"{}")
    monkeypatch.setattr(durable.os, "write", real_write)


def test_interrupt_stops_between_steps(tmp_path):
    store, journal = torn_store(tmp_path)
    original = journal.read_bytes()
    plan = plan_repair(check_folders(discover_all([store])))
    result = plan.execute(should_stop=lambda: True)
    assert result.interrupted and result.exit_code & 32 and not result.done
    assert journal.read_bytes() == original


def test_a_journal_that_grew_since_the_check_is_left_for_the_next_run(tmp_path):
    store, journal = torn_store(tmp_path)
    plan = plan_repair(check_folders(discover_all([store])))
    with open(journal, "ab") as handle:  # a writer that ignores the lock protocol appends meanwhile
        handle.write(b'more"}\n')
    grown = journal.read_bytes()
    result = plan.execute()
    assert journal.read_bytes() == grown
    codes = {(f.code, f.repaired) for f in result.findings}
    assert ("changed-during-repair", False) in codes and ("torn-tail", False) in codes
    assert result.exit_code == 4 | 1  # the index rebuild still happened; the journal waits
    from toolkit.index import load_cache
    from tests.helpers import PROJECT_SLUG

    index = load_cache(store / PROJECT_SLUG / "index.json").value
    assert index["sessions"][0]["bytes"] == len(grown), "the index is built from the journal as it is now"


def test_append_if_unchanged_writes_only_onto_the_bytes_the_plan_saw(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n')
    digest = hashlib.sha256(b'{"a":1}\n').hexdigest()
    assert durable.append_if_unchanged(path, 8, digest, b'{"b":2}\n') == 16
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    for size, expected in ((8, digest), (16, hashlib.sha256(b'{"a":1}\n{"c":3}\n').hexdigest())):  # grown; same size, other bytes
        with pytest.raises(FileChangedError):
            durable.append_if_unchanged(path, size, expected, b'{"x":0}\n')
        assert path.read_bytes() == b'{"a":1}\n{"b":2}\n', "nothing written"


def test_append_if_unchanged_never_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(FileChangedError):
        durable.append_if_unchanged(link, 0, hashlib.sha256(b"").hexdigest(), b"x\n")
    assert real.read_bytes() == b""


def test_truncate_if_unchanged_cuts_back_only_the_bytes_it_was_told_of_and_keeps_them(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n')
    saved_dir = tmp_path / "saved"
    saved_dir.mkdir()
    with pytest.raises(FileChangedError):  # the same size, other bytes
        durable.truncate_if_unchanged(path, 3, 16, hashlib.sha256(b'{"a":1}\n{"c":3}\n').hexdigest(), saved_dir)
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n' and not list(saved_dir.iterdir())
    saved = durable.truncate_if_unchanged(path, 3, 16, hashlib.sha256(b'{"a":1}\n{"b":2}\n').hexdigest(), saved_dir)
    assert path.read_bytes() == b'{"a' and saved.read_bytes() == b'":1}\n{"b":2}\n', "a cut mid-line, the rest kept"


def _folders(synced: list[tuple[str, str]]) -> list[str]:
    """The folders among what was fsynced (record_fsyncs), in order."""
    return [name for name, _thread in synced if os.path.isdir(name)]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names an fd's file through /proc")
def test_batched_dir_syncs_sync_each_folder_once_when_the_block_ends(tmp_path, monkeypatch):
    folders = [tmp_path / name for name in ("a", "b", "c")]
    for folder in folders:
        folder.mkdir()
    synced = record_fsyncs(monkeypatch)
    with durable.batched_dir_syncs():
        for n in range(3):
            for folder in folders:
                durable.atomic_write(folder / f"f{n}.json", b"{}\n")
        assert _folders(synced) == []  # nothing yet: the renames' folders wait for the block's end
    assert sorted(_folders(synced)) == sorted(map(str, folders))  # each once
    durable.atomic_write(folders[0] / "after.json", b"{}\n")
    assert _folders(synced)[-1] == str(folders[0])  # outside a block: at once, as always


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names an fd's file through /proc")
def test_a_block_that_raises_still_syncs_what_it_renamed_and_its_error_goes_on(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "gone").mkdir()
    synced = record_fsyncs(monkeypatch)
    with pytest.raises(RuntimeError, match="the reindex failed"):
        with durable.batched_dir_syncs():
            durable.atomic_write(tmp_path / "a" / "index.json", b"{}\n")
            durable.fsync_dir(tmp_path / "gone")
            (tmp_path / "gone").rmdir()  # removed since: nothing left in it to make durable
            raise RuntimeError("the reindex failed")
    assert _folders(synced) == [str(tmp_path / "a")]
    assert (tmp_path / "a" / "index.json").read_bytes() == b"{}\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names an fd's file through /proc")
def test_a_failed_folder_sync_at_the_blocks_end_is_the_durability_error_it_always_was(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}") and os.readlink(f"/proc/self/fd/{fd}").endswith("/b"):
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(DurabilityError):
        with durable.batched_dir_syncs():
            durable.atomic_write(tmp_path / "a" / "x.json", b"{}\n")
            durable.atomic_write(tmp_path / "b" / "x.json", b"{}\n")


def test_atomic_writes_replace_each_file_in_order_their_fsyncs_at_once(tmp_path, monkeypatch):
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    items = [(folders[n % 2] / f"f{n}.json", b"new %d\n" % n) for n in range(7)]
    for path, _data in items[::2]:
        path.write_bytes(b"old\n")
    synced = record_fsyncs(monkeypatch)
    renamed: list[str] = []
    real_replace = os.replace

    def replace(src, dst):
        assert len([name for name, _thread in synced if ".tmp" in name]) == len(items)  # every temp synced first
        renamed.append(os.path.basename(dst))
        real_replace(src, dst)

    monkeypatch.setattr(durable.os, "replace", replace)
    durable.atomic_writes(items)
    assert renamed == [path.name for path, _data in items]
    assert all(path.read_bytes() == data for path, data in items)
    assert sorted(os.listdir(folders[0]) + os.listdir(folders[1])) == sorted(path.name for path, _data in items)
    assert {thread for name, thread in synced if ".tmp" in name} <= {"levelsess-fsync"}
    assert {name for name, _thread in synced if ".tmp" not in name} >= {str(folder) for folder in folders}


def test_atomic_writes_that_cannot_write_one_file_put_none_in_place(tmp_path, monkeypatch):
    items = [(tmp_path / f"f{n}.json", b"new\n") for n in range(3)]
    for path, _data in items:
        path.write_bytes(b"old\n")
    missing = [*items, (tmp_path / "gone" / "f3.json", b"new\n")]  # its folder does not exist: the create fails
    with pytest.raises(DurabilityError):
        durable.atomic_writes(missing)
    assert [path.read_bytes() for path, _data in items] == [b"old\n"] * 3
    assert sorted(os.listdir(tmp_path)) == [path.name for path, _data in items]  # no temp file left

    def broken(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(durable.os, "fsync", broken)
    with pytest.raises(DurabilityError):
        durable.atomic_writes(items)
    assert [path.read_bytes() for path, _data in items] == [b"old\n"] * 3
    assert sorted(os.listdir(tmp_path)) == [path.name for path, _data in items]
    with pytest.raises(ValueError):
        durable.atomic_writes([items[0], items[0]])


def test_dead_temps_of_several_targets_go_in_one_listing_and_only_theirs(tmp_path):
    import subprocess
    import sys

    from toolkit import verified

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    names = [f".a.json.{dead}.tmp", f".b.states.json.{dead}.tmp", f".a.json.{os.getpid()}.tmp", f".c.json.{dead}.tmp", "a.json"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    verified.remove_dead_temps(tmp_path / "a.json", tmp_path / "b.states.json")
    assert sorted(os.listdir(tmp_path)) == sorted([f".a.json.{os.getpid()}.tmp", f".c.json.{dead}.tmp", "a.json"])


def test_atomic_writes_of_pieces_write_them_a_mib_at_a_time_never_all_joined(tmp_path):
    """An import's settling saves its index memo's files as the pieces the memo holds (each journal's
    entry): joined, 8,000 journals' entries took 27 MiB more at the end of the import, its peak."""
    import tracemalloc

    pieces = [bytes([65 + n % 26]) * 2500 for n in range(8000)]  # (held by the caller, as the memo holds its entries)
    tracemalloc.start()
    try:
        durable.atomic_writes([(tmp_path / "a", iter(pieces)), (tmp_path / "b", (p for p in pieces[:10]))])
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "a").read_bytes() == b"".join(pieces) and (tmp_path / "b").read_bytes() == b"".join(pieces[:10])
    assert peak < 4 << 20, f"{peak / (1 << 20):.1f} MiB held to write 20 MB of pieces"
