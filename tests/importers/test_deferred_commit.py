"""New journals fsynced and linked by a background thread while the next session converts
(durable.Committer, issue 27): the same bytes on disk and the same report as linking each at
once, a journal another import made first extended as before, a failed fsync written again."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.importers.test_import_jobs import CLAUDE, imported, store_files
from toolkit import durable
from toolkit.errors import NameTooLongError


def test_the_committer_links_each_file_after_its_fsync_in_order(tmp_path, monkeypatch):
    synced: list[str] = []
    real_fsync = durable.fsync_fd
    monkeypatch.setattr(durable, "fsync_fd", lambda fd, path: (synced.append(Path(path).name), real_fsync(fd, path)))
    commits = durable.Committer(limit=2)
    for n in range(6):
        with commits.new_file(tmp_path / f"j{n}.jsonl") as out:
            out.write(b'{"n": %d}\n' % n)
    assert commits.wait() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"j{n}.jsonl" for n in range(6)]  # no temp file left
    assert [(tmp_path / f"j{n}.jsonl").read_bytes() for n in range(6)] == [b'{"n": %d}\n' % n for n in range(6)]
    assert synced == [durable.temp_name(tmp_path / f"j{n}.jsonl").name for n in range(6)]


def test_a_file_that_appeared_before_its_link_is_left_as_it_is_and_named(tmp_path):
    commits = durable.Committer()
    with commits.new_file(tmp_path / "a.jsonl") as out:
        out.write(b"ours\n")
        (tmp_path / "a.jsonl").write_bytes(b"theirs\n")  # another writer, before the thread links ours
    failed = commits.wait()
    assert [(path, type(why)) for path, why in failed] == [(tmp_path / "a.jsonl", FileExistsError)]
    assert (tmp_path / "a.jsonl").read_bytes() == b"theirs\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.jsonl"]


def test_the_same_path_again_waits_for_the_first_then_refuses(tmp_path):
    commits = durable.Committer()
    with commits.new_file(tmp_path / "a.jsonl") as out:
        out.write(b"first\n")
    with pytest.raises(FileExistsError):  # its temp name is the first one's: never reopened while that one waits
        with commits.new_file(tmp_path / "a.jsonl"):
            pass
    assert commits.wait() == []
    assert (tmp_path / "a.jsonl").read_bytes() == b"first\n"


def test_a_write_that_fails_leaves_no_temp_file(tmp_path):
    commits = durable.Committer()
    with pytest.raises(RuntimeError):
        with commits.new_file(tmp_path / "a.jsonl") as out:
            out.write(b"half")
            raise RuntimeError("the converter failed")
    assert commits.wait() == [] and list(tmp_path.iterdir()) == []


@contextlib.contextmanager
def _creates_held(monkeypatch):
    """Every create the Committer's creating thread's, held before each until the test lets it go (``go.set()``)."""
    go = threading.Event()
    real_create = durable._Creating.create
    monkeypatch.setattr(durable, "SLOW_CREATE", 0.0)
    monkeypatch.setattr(durable._Creating, "create", lambda self: (go.wait(10), real_create(self)))
    yield go
    go.set()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(st.one_of(st.binary(max_size=64), st.integers(1, 3 * durable.WRITE_BUFFER)), max_size=6),
                      min_size=1, max_size=4),
       held=st.booleans())
def test_a_new_file_holds_what_was_written_before_its_create_and_writes_it_in_order(tmp_path_factory, monkeypatch, files, held):
    """Whatever the writes (none, small ones held while the file is made, one larger than the buffer,
    which waits for it), each file holds them in order, and no temp file is left."""
    folder = tmp_path_factory.mktemp("created")
    with monkeypatch.context() as patched, _creates_held(patched) as go:
        commits = durable.Committer()
        wanted = []
        for n, writes in enumerate(files):
            pieces = [w if isinstance(w, bytes) else bytes([n % 251]) * w for w in writes]
            if not held:  # (the create goes at once)
                go.set()
            timer = threading.Timer(0.01, go.set)  # (held: the create goes once the writer waits for it, or held back some writes)
            timer.start()
            with commits.new_file(folder / f"j{n}.jsonl") as out:
                for piece in pieces:
                    assert out.write(piece) == len(piece)
            timer.join()
            go.clear()
            wanted.append(b"".join(pieces))
        assert commits.wait() == []
    assert sorted(p.name for p in folder.iterdir()) == [f"j{n}.jsonl" for n in range(len(files))]
    assert [(folder / f"j{n}.jsonl").read_bytes() for n in range(len(files))] == wanted


@pytest.mark.parametrize("slow", [0.0, 1e9], ids=["in-the-thread", "by-the-writer"])
def test_a_create_that_fails_is_its_typed_error_and_leaves_nothing(tmp_path, monkeypatch, slow):
    """A temp name too long for the file system: the create fails (the thread's: what was held is
    never written, the writer gets the typed error at its flush; or the writer's own, at once), and
    the folder is as it was."""
    monkeypatch.setattr(durable, "SLOW_CREATE", slow)
    commits = durable.Committer()
    with pytest.raises(NameTooLongError):
        with commits.new_file(tmp_path / ("n" * 250 + ".jsonl")) as out:
            out.write(b"held until the file exists\n")
    assert commits.wait() == [] and list(tmp_path.iterdir()) == []
    with commits.new_file(tmp_path / "next.jsonl") as out:  # the thread goes on with the next file
        out.write(b"x\n")
    assert commits.wait() == [] and (tmp_path / "next.jsonl").read_bytes() == b"x\n"


def test_creates_go_to_the_thread_while_they_are_slow_and_back_to_the_writer_once_quick(tmp_path, monkeypatch):
    """The running mean of the last creates decides: the first file is the writer's own (no thread
    is started); creates that take 2 ms send the next ones to the creating thread; creates the
    thread finds quick bring them back to the writer.  However busy the machine, the files are
    the same either way.  (What is slow here is slept, never a real create's time.)"""
    took = [0.0]
    threaded: list[str] = []
    real_create = durable._Creating.create

    def timed(self):  # (the thread's create, as slow as the test says: what it measures is what decides)
        real_create(self)
        self.took = took[0]
        threaded.append(self.tmp.name)

    def slow_open(*args, **kwargs):  # (the writer's own create: at least as slow)
        time.sleep(took[0])
        return open(*args, **kwargs)
    monkeypatch.setattr(durable._Creating, "create", timed)
    monkeypatch.setattr(durable, "open", slow_open, raising=False)
    commits = durable.Committer()
    names = [f"j{n:02d}" for n in range(40)]

    def write(name: str) -> bool:
        """Whether the creating thread made it."""
        with commits.new_file(tmp_path / name) as out:
            out.write(name.encode())
        return any(tmp.startswith(f".{name}.") for tmp in threaded)

    assert not write(names[0]) and commits._creator is None, "the first create is the writer's"
    took[0] = 0.002
    made = [write(name) for name in names[1:8]]
    assert True in made, "2 ms a create: the thread's"
    took[0] = 0.0
    made = [write(name) for name in names[8:]]
    assert made[0] and False in made, "quick again (the thread's mean falls): the writer's"
    assert commits.wait() == [] and commits._creator is None
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert all((tmp_path / name).read_bytes() == name.encode() for name in names)


def test_a_writer_that_fails_before_its_file_exists_leaves_no_temp_file(tmp_path, monkeypatch):
    """The converter fails while the thread has not yet made the file: the file is closed and
    removed once the thread made it, never left behind by a create that came after the cleanup."""
    with _creates_held(monkeypatch) as go:
        commits = durable.Committer()
        threading.Timer(0.05, go.set).start()
        with pytest.raises(RuntimeError):
            with commits.new_file(tmp_path / "a.jsonl") as out:
                out.write(b"half")
                raise RuntimeError("the converter failed")
    assert commits.wait() == [] and list(tmp_path.iterdir()) == []


def _journals(store: Path) -> dict[str, bytes]:
    return {k: v for k, v in store_files(store).items() if k.endswith(".jsonl") and not k.startswith(".levelsess")}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_journal_another_import_made_first_is_extended_and_the_rest_reported_created(tmp_path, monkeypatch, jobs):
    source = tmp_path / "source"
    shutil.copytree(CLAUDE, source)
    code, report = imported("claude", source, tmp_path / "plain", "--jobs", "1")
    plain = json.loads(report)
    created = [s for s in plain["sessions"] if s["status"] == "created"]
    assert len(created) >= 3
    racer = created[1]["path"].replace("STORE", str(tmp_path / "plain"))  # the one another import links first
    rel = os.path.relpath(racer, tmp_path / "plain")
    store = tmp_path / "raced"
    real_link = durable._link_new

    def link(tmp: Path, path: Path) -> None:
        if os.path.relpath(path, store) == rel and not path.exists():
            shutil.copyfile(racer, path)  # the other import's journal, the same session's
        real_link(tmp, path)

    monkeypatch.setattr(durable, "_link_new", link)
    code2, report2 = imported("claude", source, store, "--jobs", jobs)
    raced = json.loads(report2)
    assert code2 == code
    statuses = {s["path"]: s["status"] for s in raced["sessions"]}
    assert statuses.pop(f"STORE/{rel}") == "unchanged"  # what the other import wrote is what this one would
    assert set(statuses.values()) <= {"created"} and len(statuses) == len(plain["sessions"]) - 1
    assert _journals(store) == _journals(tmp_path / "plain")
    assert not [p for p in store.rglob(".*.tmp")]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an fd's file through /proc")
def test_a_failed_fsync_is_written_again_as_one_process_does(tmp_path, monkeypatch):
    source = tmp_path / "source"
    shutil.copytree(CLAUDE, source)
    plain = imported("claude", source, tmp_path / "plain", "--jobs", "1")
    real_fsync = os.fsync
    failed = []

    def fsync(fd: int) -> None:
        if not failed and os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            failed.append(fd)
            raise OSError(errno.EIO, "Input/output error")  # once: the unit is read and written again
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    again = imported("claude", source, tmp_path / "store", "--jobs", "1")
    assert failed and again == plain
    assert _journals(tmp_path / "store") == _journals(tmp_path / "plain")


def _session(project: str, texts: list[str]):
    from toolkit.importers.output import Session

    records = [{"kind": "user", "t": f"2026-01-01T00:00:0{n}Z", "content": text, "sourceKey": f"k:{text}"}
               for n, text in enumerate(texts)]
    return Session("test-same-id", project, "2026-01-01T00:00:00Z", "a chat", {"app": "test", "key": "same"}, records=records)


@pytest.mark.parametrize("deferred", [False, True])
def test_one_session_id_met_twice_in_a_run_is_one_journal_while_the_first_is_still_linking(tmp_path, deferred):
    """A session id met again under another project (a chat two workspaces list) is extended where
    its journal is, as before the background thread, even while that journal still waits for it."""
    from toolkit.importers import output

    store = tmp_path / "store"
    commits = durable.Committer() if deferred else None
    token, names = output.COMMITS.set(commits), output.NAMES.set({})
    try:
        first = output.write_session(store, _session("/home/ana/one", ["hello"]))
        second = output.write_session(store, _session("/home/ana/two", ["hello", "and more"]))
    finally:
        output.COMMITS.reset(token)
        output.NAMES.reset(names)
        failed = commits.wait() if commits is not None else []
    assert failed == []
    assert first[0].status == "created" and second[0].status == "updated" and second[0].path == first[0].path
    assert [p.name for p in store.rglob("*.jsonl")] == ["test-same-id.jsonl"]


def test_waiting_through_a_mark_waits_for_the_files_before_it_only(tmp_path, monkeypatch):
    """A unit waits for its own journals (:meth:`Committer.wait_through`), not for those the next
    unit handed since; what failed is given to the wait whose files it was among."""
    import threading

    release = threading.Event()
    real_fsync = durable.fsync_fd

    def fsync(fd, path):
        if Path(path).name.startswith(".late"):
            assert release.wait(30), "the test never let the late file go"
        real_fsync(fd, path)

    monkeypatch.setattr(durable, "fsync_fd", fsync)
    commits = durable.Committer()
    with commits.new_file(tmp_path / "a.jsonl") as out:
        out.write(b"a\n")
        (tmp_path / "a.jsonl").write_bytes(b"theirs\n")  # will not be linked: named by the first wait
    with commits.new_file(tmp_path / "b.jsonl") as out:
        out.write(b"b\n")
    first = commits.mark()
    with commits.new_file(tmp_path / "late.jsonl") as out:  # the next unit's, held in its fsync
        out.write(b"late\n")
    failed = commits.wait_through(first)  # returns while late.jsonl is still in its fsync
    assert [(path.name, type(why)) for path, why in failed] == [("a.jsonl", FileExistsError)]
    assert (tmp_path / "b.jsonl").read_bytes() == b"b\n" and not (tmp_path / "late.jsonl").exists()
    assert commits.waiting(tmp_path / "late.jsonl")
    release.set()
    assert commits.wait_through(commits.mark()) == []
    assert (tmp_path / "late.jsonl").read_bytes() == b"late\n"
    assert commits.wait() == []


def test_ctrl_c_while_a_synced_file_is_linked_reaches_the_caller_and_the_rest_are_linked_next(tmp_path, monkeypatch):
    """The caller links what the thread synced: a Ctrl-C there is the caller's (not a failure of
    that file swallowed); that file is given up, and the files synced after it wait for the next call."""
    real_link = durable._link_new

    def link(tmp: Path, path: Path) -> None:
        if path.name == "j1.jsonl":
            raise KeyboardInterrupt
        real_link(tmp, path)

    import threading

    go, real_fsync = threading.Event(), durable.fsync_fd
    monkeypatch.setattr(durable, "_link_new", link)
    monkeypatch.setattr(durable, "fsync_fd", lambda fd, path: (go.wait(), real_fsync(fd, path)))  # none synced while written
    commits = durable.Committer()
    for n in range(3):
        with commits.new_file(tmp_path / f"j{n}.jsonl") as out:
            out.write(b'{"n": %d}\n' % n)
    go.set()
    with pytest.raises(KeyboardInterrupt):
        commits.wait()
    assert [(path.name, type(why)) for path, why in commits.wait()] == [("j1.jsonl", KeyboardInterrupt)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j0.jsonl", "j2.jsonl"]  # (j1's temp file removed)


def _cached_pages(path: Path) -> int:
    """How many of ``path``'s pages are in the page cache (``mincore`` of a private mapping)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    size = path.stat().st_size
    pages = -(-size // mmap.PAGESIZE)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_COPY) as mapped:
        vector = (ctypes.c_ubyte * pages)()
        address = ctypes.addressof(ctypes.c_char.from_buffer(mapped))
        try:
            if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector) != 0:
                pytest.skip(f"mincore failed: {os.strerror(ctypes.get_errno())}")
            return sum(byte & 1 for byte in vector)
        finally:
            del address  # (no export of the mapping outlives it)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise") or not os.path.exists("/proc"), reason="Linux page cache only")
@pytest.mark.parametrize("read_back", [False, True], ids=["scanned-as-written", "read-back"])
def test_an_imports_journals_leave_the_page_cache_once_nothing_reads_them_but_their_tails(tmp_path, monkeypatch, read_back):
    """An import's journals are not read again soon: once its scan is taken from what was written
    (or, when that scan could not be made, once it was read back for it), a new journal's pages are released (the
    next one reuses them), all but the tail the index memo reads."""
    from toolkit import forked, journal

    if not CLAUDE.is_dir() or (read_back and not forked.available()):
        pytest.skip("the real fixtures, and forked workers to read back, are not here")
    plain = tmp_path / "plain.jsonl"
    with open(plain, "wb") as out:
        out.write(b"x" * (256 << 10))
        out.flush()
        os.fsync(out.fileno())
    if _cached_pages(plain) < (256 << 10) // 4096:
        pytest.skip("this file system keeps no page cache of what was written")
    if read_back:  # every journal is read back for its scan, by the worker that wrote it
        monkeypatch.setattr(journal.WrittenScan, "scan", lambda self, info, lean=False: None)
    source = tmp_path / "source"
    shutil.copytree(CLAUDE, source)
    code, _out = imported("claude", source, tmp_path / "store", *(["--jobs", "2"] if read_back else []))
    assert code in (0, 4)
    journals = [path for path in (tmp_path / "store").rglob("*.jsonl") if path.stat().st_size > 64 << 10]
    assert journals, "the fixtures make journals of more than a few pages"
    pages = sum(-(-path.stat().st_size // 4096) for path in journals)
    cached = sum(_cached_pages(path) for path in journals)
    assert cached <= pages // 4, f"{cached} of {pages} pages still cached"  # (the tails, and what reading them read ahead)
    for path in journals:
        assert json.loads(path.read_bytes().split(b"\n", 1)[0])["kind"] == "meta"  # (read back from the disk)


def test_a_new_journals_stamp_is_the_written_files_before_the_thread_links_it(tmp_path, monkeypatch):
    """:meth:`Committer.written`: while the thread holds a new file, the stat it was written with
    (inode, size, mtime: the stamp a resume state keeps) is what the file in place shows once linked."""
    import threading

    go, real_fsync = threading.Event(), durable.fsync_fd
    monkeypatch.setattr(durable, "fsync_fd", lambda fd, path: (go.wait(30), real_fsync(fd, path)))
    commits = durable.Committer()
    path = tmp_path / "a.jsonl"
    with commits.new_file(path) as out:
        out.write(b"a\n" * 1000)
    held = commits.written(path)
    assert held is not None and not path.exists()  # (still in its fsync)
    go.set()
    assert commits.wait() == []
    now = os.stat(path)
    assert (held.st_ino, held.st_size, held.st_mtime_ns) == (now.st_ino, now.st_size, now.st_mtime_ns)
    assert commits.written(path) is None  # in place: the disk says it


def test_a_rollouts_resume_state_is_taken_without_waiting_for_its_journals_fsync(tmp_path, monkeypatch):
    """A rollout's resume state is taken as soon as its journal is written (output.written_stamp),
    not after the background thread's fsync and link of it (a first import of many small rollouts
    waited there a tenth of its time); the stamp it keeps is the journal's in place: each grown
    rollout is then resumed, and writes what a full read does."""
    import random

    from tests.bench.grow import grow_codex
    from tests.importers.resumes import alike, imported
    from tests.importers.test_resumed_codex import _home, _rollouts, _thread
    from toolkit.importers import codex

    home = _home(tmp_path)
    inside, waited, taken = [False], [], []
    real_capture, real_until = codex._capture, durable.Committer._until

    def capture(*args, **kwargs):
        inside[0] = True
        try:
            state = real_capture(*args, **kwargs)
        finally:
            inside[0] = False
        taken.append(state is not None)
        return state

    def until(self, mark):
        waited.append(inside[0])
        return real_until(self, mark)

    monkeypatch.setattr(codex, "_capture", capture)
    monkeypatch.setattr(durable.Committer, "_until", until)
    imported("codex", home, tmp_path / "cached", "--jobs", "1")
    assert sum(taken) >= 4 and waited and not any(waited)  # states taken; the imports' waits were none of theirs
    imported("codex", home, tmp_path / "full", "--reread", "--jobs", "1")
    rng = random.Random(11)
    grown = [path for path in _rollouts(home) if any(_thread(n) in path.name for n in (1, 2)) and grow_codex(path, rng)]
    reports = {"cached": imported("codex", home, tmp_path / "cached", "--jobs", "1"),
               "full": imported("codex", home, tmp_path / "full", "--reread", "--jobs", "1")}
    assert reports["cached"]["resumed"] == len(grown) == 2 and reports["cached"]["read"] == 0
    alike(tmp_path, reports, "grown")
