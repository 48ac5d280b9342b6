"""A resumed import's appends fsynced by the background thread while the next unit converts
(durable.Committer.sync, issue 27): every journal appended to is fsynced before the import
returns, by that thread, after its bytes were written; a failed fsync stops the run as the
append's own did, the import cache is not updated, and the next import ends as a full read.  And
the prefixes the resumes check are hashed ahead by another background thread (sourcelines.Prefixes),
and the session locks they take are links to one lock body a folder (locks.LockBodies)."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import threading
from pathlib import Path

import pytest

from tests.bench.grow import grow_claude
from tests.helpers import record_fsyncs
from tests.importers.resumes import imported, journals
from tests.importers.test_import_jobs import CLAUDE
from toolkit import durable

pytestmark = [pytest.mark.skipif(not CLAUDE.is_dir(), reason="the real fixtures are not here"),
              pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an fd's file through /proc")]


def test_the_committer_syncs_and_closes_each_appended_file(tmp_path, monkeypatch):
    synced = record_fsyncs(monkeypatch)
    commits = durable.Committer(limit=2)
    paths = [tmp_path / f"j{n}.jsonl" for n in range(5)]
    for path in paths:
        path.write_bytes(b'{"n":0}\n')
    ends = [durable.append_lines(path, [b'{"n":1}'], commits) for path in paths]
    mark = commits.mark()
    assert commits.wait_through(mark) == []
    assert ends == [16] * 5 and all(p.read_bytes() == b'{"n":0}\n{"n":1}\n' for p in paths)
    assert synced == [(str(p), "levelsess-commit") for p in paths]  # in the order appended, by the thread
    assert commits.wait() == []
    open_now = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            open_now.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # (the listing's own descriptor, closed since)
            pass
    assert not {str(p) for p in paths} & open_now  # each closed after its fsync


def test_a_new_file_is_still_synced_in_place(tmp_path, monkeypatch):
    """A file the append creates is fsynced (and its folder) before the call returns, never handed."""
    commits = durable.Committer()
    synced = record_fsyncs(monkeypatch)
    durable.append_lines(tmp_path / "new.jsonl", [b"{}"], commits)
    assert commits.mark() == 0 and synced and {thread for _name, thread in synced} == {threading.current_thread().name}
    assert (tmp_path / "new.jsonl").read_bytes() == b"{}\n"


def _grown_tree(tmp_path: Path) -> tuple[Path, list[Path]]:
    source = tmp_path / "source"
    shutil.copytree(CLAUDE / "projects", source)
    mains = sorted(p for p in source.glob("*/*.jsonl") if p.is_file())
    return source, mains


def _grow(mains: list[Path], seed: int) -> None:
    rng = random.Random(seed)
    for path in rng.sample(mains, 3):
        grow_claude(path, rng)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_appended_journal_is_fsynced_by_the_thread_before_the_import_returns(tmp_path, monkeypatch, jobs):
    source, mains = _grown_tree(tmp_path)
    store, full = tmp_path / "store", tmp_path / "full"
    imported("claude", source, store)
    shutil.copytree(store, full)
    _grow(mains, 27)
    sizes = {p: p.stat().st_size for p in store.rglob("*.jsonl")}
    synced = record_fsyncs(monkeypatch)
    report = imported("claude", source, store, "--jobs", "1")  # (in this process: its fsyncs are seen)
    monkeypatch.undo()
    assert report["resumed"] == 3 and report["read"] == 0
    grown = sorted(str(p) for p in store.rglob("*.jsonl") if p.stat().st_size != sizes.get(p))
    assert len(grown) >= 3
    by_thread = sorted(path for path, thread in synced if thread == "levelsess-commit")
    assert by_thread == grown  # every journal appended to, each once, by the thread
    imported("claude", source, full, "--reread", "--jobs", jobs)
    assert journals(store) == journals(full)


def test_a_failed_fsync_of_an_append_stops_the_run_and_the_next_import_ends_as_a_full_read(tmp_path, monkeypatch):
    from tests.helpers import run_cli

    source, mains = _grown_tree(tmp_path)
    store, full = tmp_path / "store", tmp_path / "full"
    imported("claude", source, store)
    shutil.copytree(store, full)
    _grow(mains, 7)
    real_fsync = os.fsync
    failed = []

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if not failed and name.endswith(".jsonl") and threading.current_thread().name == "levelsess-commit":
            failed.append(name)
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    result = run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json", "--jobs", "1")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert failed, "an append's fsync was the thread's"
    assert result.exit_code != 0 and "Traceback" not in result.stderr
    assert "fsync" in (result.stdout + result.stderr) and "Input/output error" in (result.stdout + result.stderr)
    again = imported("claude", source, store)  # the cache was not updated: what was appended is found held
    imported("claude", source, full, "--reread")
    assert again["exit"] in (0, 1) and journals(store) == journals(full)
    assert json.dumps(again["findings"]).count("Traceback") == 0


def test_a_grown_imports_settling_syncs_each_folder_once(tmp_path, monkeypatch):
    """The index, fingerprint and index-memo renames of the settle (durable.batched_dir_syncs):
    each store folder and each cache folder is fsynced once, not once per file renamed into it."""
    source, mains = _grown_tree(tmp_path)
    store = tmp_path / "store"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    imported("claude", source, store)
    _grow(mains, 11)
    synced = record_fsyncs(monkeypatch)
    report = imported("claude", source, store, "--jobs", "1")
    monkeypatch.undo()
    assert report["resumed"] == 3
    settled = [name for name, _thread in synced if os.path.isdir(name) and (name.startswith(str(store)) or "import-index" in name)]
    assert settled and len(settled) == len(set(settled)), sorted(settled)
    assert {str(Path(o["path"]).parent) for o in report["sessions"] if o["status"] == "updated"} <= set(settled)


def test_an_append_interrupted_while_handing_its_fsync_is_closed_and_never_waited_for(tmp_path, monkeypatch):
    """Ctrl-C while the thread's queue is full: the descriptor is not handed, so it is closed at
    once, and no wait is left for a mark no job will settle (the run's error path waits for them)."""
    commits = durable.Committer(limit=1)
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"n":0}\n')

    def interrupted(job, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(commits._jobs, "put", interrupted)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(KeyboardInterrupt):
        durable.append_lines(path, [b'{"n":1}'], commits)
    assert commits.mark() == 0 and commits.wait_through(commits.mark()) == []
    assert set(os.listdir("/proc/self/fd")) <= before  # its descriptor closed
    assert path.read_bytes() == b'{"n":0}\n{"n":1}\n'  # (written: only its fsync was not handed)
    monkeypatch.undo()
    assert commits.wait() == []


def test_a_units_wait_gives_only_its_own_failures(tmp_path):
    """A resumed unit begins before the unit before it finished: that unit's new journal, made
    first by another writer, is its own wait's to give (it is imported again), not the resume's."""
    commits = durable.Committer()
    with commits.new_file(tmp_path / "a.jsonl") as out:
        out.write(b"ours\n")
        (tmp_path / "a.jsonl").write_bytes(b"theirs\n")  # another writer, before the thread links ours
    first = commits.mark()
    (tmp_path / "b.jsonl").write_bytes(b"{}\n")
    durable.append_lines(tmp_path / "b.jsonl", [b"{}"], commits)
    assert commits.wait_through(commits.mark(), after=first) == []  # the resume's: its append synced
    assert [(p.name, type(why)) for p, why in commits.wait_through(first)] == [("a.jsonl", FileExistsError)]
    assert commits.wait() == []


def test_a_grown_imports_prefixes_are_hashed_ahead_by_a_thread(tmp_path, monkeypatch):
    """Each prefix a resume checks (the bytes the last import read of a file that only grew) is
    hashed by the background thread, ahead of its unit, once; the resume takes it and writes the
    journals a full read does."""
    from toolkit.importers import sourcelines

    source, mains = _grown_tree(tmp_path)
    store, full = tmp_path / "store", tmp_path / "full"
    imported("claude", source, store)
    shutil.copytree(store, full)
    _grow(mains, 27)
    real, hashing = sourcelines.hashed, []

    def hashed(path, end, start=0, digest=None):
        hashing.append((str(path), start, threading.current_thread().name))
        return real(path, end, start, digest)

    monkeypatch.setattr(sourcelines, "hashed", hashed)
    report = imported("claude", source, store, "--jobs", "1")
    monkeypatch.undo()
    assert report["resumed"] == 3 and report["read"] == 0
    prefixes = [(path, thread) for path, start, thread in hashing if start == 0]
    assert len(prefixes) == 3 and {thread for _path, thread in prefixes} == {"levelsess-prefixes"}
    assert {path for path, _thread in prefixes} <= {str(p) for p in mains}
    imported("claude", source, full, "--reread")
    assert journals(store) == journals(full)


def test_prefixes_give_what_hashing_gives(tmp_path):
    from toolkit.importers.sourcelines import Prefixes, hashed

    one, two = tmp_path / "one", tmp_path / "two"
    one.write_bytes(b"x" * 5000)
    two.write_bytes(b"y" * 10)
    ahead = Prefixes([(str(one), 4096), (str(two), 64), (str(one), 4096)])
    try:
        first, second = ahead.take(str(one), 4096), ahead.take(str(one), 4096)
        assert first.hexdigest() == second.hexdigest() == hashed(one, 4096).hexdigest()
        first.update(b"more")  # each take is a copy a reader continues
        assert second.hexdigest() == hashed(one, 4096).hexdigest()
        assert ahead.take(str(two), 64) is None  # shorter than asked, as hashed says
        assert ahead.take(str(one), 10) is False  # not asked ahead: the caller hashes it
    finally:
        ahead.close()
    stopped = Prefixes([(str(one), 4096)])
    stopped.close()
    got = stopped.take(str(one), 4096)  # never waits forever: hashed before the stop, or the caller's to hash
    assert got is False or got.hexdigest() == hashed(one, 4096).hexdigest()


def test_a_grown_imports_locks_are_links_to_one_durable_body(tmp_path, monkeypatch):
    """Each session lock a resume takes is a hard link to one file of this process's lock bytes in
    its folder, written and fsynced before it is first linked (durable.make_ready): taking a lock
    makes no file, releasing one frees none; no lock and no temp file is left, and the journals are
    a full read's."""
    from toolkit import locks

    source, mains = _grown_tree(tmp_path)
    store, full = tmp_path / "store", tmp_path / "full"
    imported("claude", source, store)
    shutil.copytree(store, full)
    _grow(mains, 27)
    made, linked, created, synced = [], [], [], []
    real_ready, real_link, real_create, real_sync = durable.make_ready, durable.link_exclusive, durable.create_exclusive, durable.fsync_fd

    def make_ready(path, data):
        made.append(durable.temp_name(path))
        return real_ready(path, data)

    def link_exclusive(source, path):
        assert source in synced  # (its bytes durable before any name links them)
        linked.append((source, path, path.parent.joinpath(source.name).read_bytes(), os.stat(source).st_ino))
        return real_link(source, path)

    def fsync_fd(fd, path):
        synced.append(Path(path))
        return real_sync(fd, path)

    monkeypatch.setattr(durable, "make_ready", make_ready)
    monkeypatch.setattr(durable, "link_exclusive", link_exclusive)
    monkeypatch.setattr(durable, "create_exclusive", lambda *args, **kwargs: created.append(args) or real_create(*args, **kwargs))
    monkeypatch.setattr(durable, "fsync_fd", fsync_fd)
    report = imported("claude", source, store, "--jobs", "1")
    monkeypatch.undo()
    assert report["resumed"] == 3 and report["read"] == 0
    assert len(linked) == 3 and not created  # every lock taken was a link, none made as before
    assert len(made) == len({path.parent for _source, path, _data, _ino in linked})  # one body a folder
    assert all(locks._judge(path, data, 0.0).state is locks.LockState.LIVE for _s, path, data, _i in linked)  # (this process's)
    assert not [p for p in store.rglob("*") if p.name.endswith((".lock", ".tmp"))]
    imported("claude", source, full, "--reread")
    assert journals(store) == journals(full)


def _journal(folder: Path, name: str) -> Path:
    journal = folder / name
    journal.write_bytes(b"{}\n")
    return journal


def test_locks_taken_are_links_of_the_folders_body_which_close_removes(tmp_path):
    from toolkit import locks

    one, two = _journal(tmp_path, "one.jsonl"), _journal(tmp_path, "two.jsonl")
    bodies = locks.LockBodies()
    token = locks.BODIES.set(bodies)
    try:
        with locks.holding(one), locks.holding(two):
            first, second = locks.lock_path(one), locks.lock_path(two)
            body = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
            assert len(body) == 1 and durable.temp_owner(body[0].name) == os.getpid()
            assert os.stat(first).st_ino == os.stat(second).st_ino == os.stat(body[0]).st_ino
            info = locks.inspect_lock(first)
            assert info is not None and info.state is locks.LockState.LIVE and info.pid == os.getpid()
            assert not locks.try_acquire(one, force=True)  # held: a link fails as O_CREAT|O_EXCL does
        assert not first.exists() and not second.exists()  # released at once: a name, not a file freed
        with locks.holding(one):  # taken again: linked again
            assert os.stat(locks.lock_path(one)).st_ino == os.stat(body[0]).st_ino
    finally:
        locks.BODIES.reset(token)
        bodies.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl", "two.jsonl"]


def test_a_lock_whose_removal_fails_raises_at_its_release(tmp_path, monkeypatch):
    """A read-only file system at a release is the import's error, raised where the lock is released."""
    from toolkit import locks
    from toolkit.errors import ReadOnlyError

    one = _journal(tmp_path, "one.jsonl")
    real = durable.remove

    def refused(path, **kwargs):
        if path.name.endswith(".lock"):
            raise ReadOnlyError(f"cannot remove {path}: read-only file system")
        return real(path, **kwargs)

    bodies = locks.LockBodies()
    token = locks.BODIES.set(bodies)
    monkeypatch.setattr(durable, "remove", refused)
    try:
        with pytest.raises(ReadOnlyError):
            with locks.holding(one):
                pass
    finally:
        locks.BODIES.reset(token)
        bodies.close()
    monkeypatch.undo()
    assert locks.lock_path(one).exists()  # (left: its bytes this process's, stale once it ends, as before)
    assert locks.inspect_lock(locks.lock_path(one)).pid == os.getpid()


@pytest.mark.parametrize("why", [errno.EXDEV, errno.EMLINK, errno.EPERM, "gone"])
def test_a_lock_whose_body_cannot_be_linked_is_made_as_always(tmp_path, monkeypatch, why):
    """A file system without hard links, a body with too many, or one gone: the lock is made as
    before (written, fsynced, linked from its own temp file), and nothing is left."""
    from toolkit import locks

    one = _journal(tmp_path, "one.jsonl")
    real = os.link

    def refused(source, target, *args, **kwargs):
        if ".levelsess-locks-" in str(source):
            if why == "gone":
                os.unlink(source)
                return real(source, target, *args, **kwargs)
            raise OSError(why, os.strerror(why))
        return real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "link", refused)
    with locks.bodies():
        with locks.holding(one):
            info = locks.inspect_lock(locks.lock_path(one))
            assert info.state is locks.LockState.LIVE and info.pid == os.getpid()
    assert [p.name for p in tmp_path.iterdir()] == ["one.jsonl"]


def test_a_lock_whose_body_could_not_be_made_is_made_by_the_taker(tmp_path, monkeypatch):
    from toolkit import locks

    one = _journal(tmp_path, "one.jsonl")

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable, "make_ready", full)
    with locks.bodies():
        with locks.holding(one):
            assert locks.inspect_lock(locks.lock_path(one)).state is locks.LockState.LIVE
    assert [p.name for p in tmp_path.iterdir()] == ["one.jsonl"]


def test_a_body_older_than_fresh_is_made_again_and_the_locks_of_the_last_keep_their_bytes(tmp_path, monkeypatch):
    """A lock's acquiredAt and mtime say when it was taken, give or take LockBodies.FRESH seconds: past
    them a new body is made (never written over the last, which a held lock still names)."""
    from toolkit import locks

    one, two = _journal(tmp_path, "one.jsonl"), _journal(tmp_path, "two.jsonl")
    bodies = locks.LockBodies()
    token = locks.BODIES.set(bodies)
    try:
        with locks.holding(one):
            held = locks.lock_path(one).read_bytes()
            monkeypatch.setattr(locks.LockBodies, "FRESH", -1.0)  # every body is too old now
            with locks.holding(two):
                assert os.stat(locks.lock_path(one)).st_ino != os.stat(locks.lock_path(two)).st_ino
                assert locks.lock_path(one).read_bytes() == held  # the first lock's bytes as they were
                assert json.loads(locks.lock_path(two).read_bytes())["acquiredAt"] >= json.loads(held)["acquiredAt"]
                assert len([p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]) == 1  # the last body's gone
    finally:
        locks.BODIES.reset(token)
        bodies.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl", "two.jsonl"]


def test_a_forked_process_makes_its_own_locks(tmp_path):
    """A body holds this process's pid: a process forked from it makes its locks as always."""
    from toolkit import locks

    one = _journal(tmp_path, "one.jsonl")
    bodies = locks.LockBodies()
    token = locks.BODIES.set(bodies)
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its lock names its own pid
            try:
                with locks.holding(one):
                    os.write(write, locks.lock_path(one).read_bytes())
            finally:
                os._exit(0)
        os.close(write)
        data = os.read(read, 4096)
        os.close(read)
        os.waitpid(pid, 0)
        assert json.loads(data)["pid"] == pid
    finally:
        locks.BODIES.reset(token)
        bodies.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl"]


def test_a_body_name_left_by_a_dead_process_of_this_pid_is_never_written_over(tmp_path, monkeypatch):
    """A body's name holds this process's pid; one a dead process of the same pid left, linked as
    its (stale) locks, keeps its bytes: the name is removed, and the new body is a new file."""
    import itertools

    from toolkit import locks

    one = _journal(tmp_path, "one.jsonl")
    monkeypatch.setattr(locks, "_BODY_NUMBERS", itertools.count(7))
    left = durable.temp_name(tmp_path / "levelsess-locks-7")
    left.write_bytes(b'{"pid": 1, "host": "gone", "startedAt": 0, "acquiredAt": 0}')
    os.link(left, tmp_path / "old.jsonl.lock")
    with locks.bodies():
        with locks.holding(one):
            assert locks.inspect_lock(locks.lock_path(one)).pid == os.getpid()
    assert (tmp_path / "old.jsonl.lock").read_bytes() == b'{"pid": 1, "host": "gone", "startedAt": 0, "acquiredAt": 0}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl.lock", "one.jsonl"]
