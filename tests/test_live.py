"""toolkit.live: who holds a file open for writing, without touching any other file system.

A stat of another process's open file goes to that file's file system; a hung FUSE or NFS
mount anywhere on the machine (a LazyFS paused mid power cut, a dead server) would then hang
every check of a Claude Code or Codex tree.  The snapshot reads /proc only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit import live

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="reads /proc (Linux)")


def _holding(path: Path, mode: str):
    code = f"import time; f=open({str(path)!r}, {mode!r}); print('ok', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ok"
    return proc


def test_a_writer_is_found_and_no_other_file_is_ever_stat(tmp_path, monkeypatch):
    journal = tmp_path / "s.jsonl"
    journal.write_bytes(b"{}\n")
    proc = _holding(journal, "ab")
    real_stat = os.stat

    def guarded(target, *args, **kwargs):
        if str(target).startswith("/proc/") and "/fd/" in str(target):
            raise AssertionError(f"stat of another process's open file: {target}")
        return real_stat(target, *args, **kwargs)

    try:
        monkeypatch.setattr(os, "stat", guarded)
        live._SNAPSHOT = None
        who = live.writers_of(journal, fresh=True)
        assert who is not None and f"pid {proc.pid}" in who
    finally:
        proc.kill()
        proc.wait()
    live._SNAPSHOT = None
    assert live.writers_of(journal, fresh=True) is None


def test_a_reader_is_not_a_writer_and_a_replaced_file_is_not_held(tmp_path):
    journal = tmp_path / "s.jsonl"
    journal.write_bytes(b"{}\n")
    reader = _holding(journal, "rb")
    try:
        live._SNAPSHOT = None
        assert live.writers_of(journal, fresh=True) is None
    finally:
        reader.kill()
        reader.wait()
    writer = _holding(journal, "ab")
    try:
        replacement = tmp_path / "new"
        replacement.write_bytes(b"{}\n")
        os.replace(replacement, journal)  # the writer still holds the old inode, now unlinked
        live._SNAPSHOT = None
        assert live.writers_of(journal, fresh=True) is None
    finally:
        writer.kill()
        writer.wait()
