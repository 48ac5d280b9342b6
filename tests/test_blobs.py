"""What a run keeps until its end is given back as it was kept, in memory or from a temporary file
(toolkit.blobs): an import of thousands of sessions holds their memo lines and resume states there
past a few MiB (issue 27, memory flat).  Whatever the budget, the files the run writes from them say
the same: the next import resumes and recalls from them as from the ones kept in memory."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tests.bench.claude_transcript import write as write_transcript
from tests.bench.grow import grow_claude
from tests.helpers import run_cli
from tests.importers.resumes import imported, journals, said
from tests.restore.kit import CLAUDE
from toolkit import blobs
from toolkit.blobs import Blob, Blobs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=40), st.integers(0, 4000))
def test_each_kept_value_is_given_back_as_it_was(values, budget):
    kept = Blobs(budget)
    got = [kept.keep(value) for value in values]
    held = 0
    for value, one in zip(values, got):
        if type(one) is bytes:  # in memory while what is held fits the budget
            held += len(value)
            assert one is value and held <= budget
        else:
            assert type(one) is Blob and len(one) == len(value)
        assert bytes(one) == value
        assert pickle.loads(pickle.dumps(one)) == value  # (a worker's part crosses a pipe as bytes)
    assert [bytes(one) for one in reversed(got)] == values[::-1]  # read back in any order, as often as asked
    kept.close()


def test_values_kept_from_several_threads_each_read_back_whole():
    kept = Blobs(0)
    out: dict[int, list] = {}

    def work(n: int) -> None:
        rng = random.Random(n)
        values = [rng.randbytes(rng.randint(0, 5000)) for _ in range(200)]
        out[n] = [(value, kept.keep(value)) for value in values]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(bytes(one) == value for pairs in out.values() for value, one in pairs)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_worker_keeps_its_values_in_memory_and_never_writes_its_parents_file():
    kept = Blobs(0)
    first = kept.keep(b"the parent's")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: its values stay bytes; the parent's file is as the parent left it
        try:
            mine = kept.keep(b"x" * 100_000)
            os.write(write, b"ok" if type(mine) is bytes and bytes(first) == b"the parent's" else b"no")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 2) == b"ok"
    os.waitpid(pid, 0)
    later = kept.keep(b"the parent's, later")
    assert (bytes(first), bytes(later)) == (b"the parent's", b"the parent's, later")


def test_no_temporary_folder_keeps_the_values_in_memory(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))  # (where the run would make its file: missing)
    kept = Blobs(0)
    assert kept.keep(b"abc") == b"abc" and kept.failed


def test_a_full_disk_keeps_the_values_in_memory(tmp_path):
    """A real write that fails (a file size limit: the kernel's EFBIG, as ENOSPC would): the value
    that did not fit, and each after it, is held in memory; what was written before is read back."""
    script = r"""
import resource, signal, sys
sys.path.insert(0, sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
from toolkit.blobs import Blob, Blobs
kept = Blobs(0)
first = kept.keep(b"a" * 60_000)
second = kept.keep(b"b" * 60_000)
third = kept.keep(b"c" * 10)
assert type(first) is Blob and type(second) is bytes and type(third) is bytes and kept.failed
assert bytes(first) == b"a" * 60_000 and second == b"b" * 60_000
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script, str(Path(__file__).resolve().parents[1])],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("budget", [0, 2000])
def test_an_import_with_its_lines_in_a_temporary_file_writes_and_resumes_as_one_holding_them(tmp_path, monkeypatch, budget):
    """Every memo line, reader state and resume state of an import kept in the temporary file (or
    all but the first few): the first import, a grown one (resumed from the states the cache file
    got from there), an unchanged one (recalled) and a check of the store (its index from the memo)
    say and write what full reads do."""
    monkeypatch.setattr(blobs, "IN_MEMORY", budget)
    source = tmp_path / "projects"
    for n, count in ((1, 30), (2, 300)):
        made = write_transcript(tmp_path / f"gen-{n}", count)
        (source / f"-home-ada-gen-{n}").mkdir(parents=True)
        made.rename(source / f"-home-ada-gen-{n}" / f"5e55a0e1-0000-4000-8000-00000000000{n}.jsonl")
    if CLAUDE is not None:  # (and a few real transcripts, where shared/fixtures is beside the checkout)
        for path in sorted((CLAUDE / "projects").glob("*/*.jsonl"))[:4]:
            (source / path.parent.name).mkdir(exist_ok=True)
            (source / path.parent.name / path.name).write_bytes(path.read_bytes())
    store, full = tmp_path / "store", tmp_path / "full"
    first = imported("claude", source, store, "--jobs", "2")
    assert said(first) == said(imported("claude", source, full, "--reread"))
    rng = random.Random(budget)
    for path in sorted(source.glob("-home-ada-gen-*/*.jsonl")):
        grow_claude(path, rng, turns=2, parts=2)
    grown = imported("claude", source, store, "--jobs", "2")
    assert grown["resumed"] == 2 and grown["read"] == 0
    assert said(grown) == said(imported("claude", source, full, "--reread"))
    assert journals(store) == journals(full)
    from toolkit.importers import unchanged

    caches = [cache for cache in (Path(os.environ["XDG_CACHE_HOME"]) / "levelsess" / "import-cache").rglob("*.json")
              if not cache.name.endswith(".listing.json")]
    assert len(caches) == 2  # (the store's and the full read's)
    for cache in caches:  # written a unit at a time, read back as one document
        assert unchanged.dump(*unchanged.load(cache)) == cache.read_bytes()
    again = imported("claude", source, store)
    assert again["from_cache"] == len(first["sessions"]) and again["read"] == again["resumed"] == 0
    assert run_cli("reindex", "--check", store).exit_code == 0
    from toolkit.fsck import incremental

    monkeypatch.setattr(incremental, "RACY_NS", 0)  # (journals written this very moment are trusted: the test's clock is not)
    checked = [run_cli("fsck", "--incremental", "--json", store).json for _ in range(2)]  # (its own memo, kept alike)
    assert checked[0]["exit"] == checked[1]["exit"] == 0 and checked[0]["records"] == checked[1]["records"]
    assert checked[1]["from_cache"] == checked[1]["files"] == checked[0]["files"] > 4
