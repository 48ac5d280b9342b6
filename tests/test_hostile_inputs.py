"""Hostile inputs found by an adversarial review: each gets a typed error or a finding, never a
traceback, a hang, or a write where it does not belong."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import PROJECT_SLUG, make_store, run_cli
from toolkit import durable
from toolkit.errors import DiskFullError

SID = "2026-11-30T09-00-00-a1b0"


def levelsess(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    """A real process, so a blocking read shows up as a timeout, not a hung test run."""
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True,
                          timeout=timeout, check=False, env={**os.environ, "COLUMNS": "200"})


def test_export_never_takes_the_place_of_a_journal_or_a_cache(tmp_path):
    store = make_store(tmp_path / "store")
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    before = journal.read_bytes()
    result = run_cli("export", SID, "--store", store, "-o", journal)
    assert result.exit_code == 16 and "refusing to overwrite" in result.stderr
    assert journal.read_bytes() == before
    result = run_cli("export", SID, "--store", store, "-o", store / PROJECT_SLUG / "index.json")
    assert result.exit_code == 16 and not (store / PROJECT_SLUG / "index.json").exists()
    result = run_cli("export", SID, "--store", store, "-o", tmp_path / "no" / "such" / "chat.md")
    assert result.exit_code == 8 and "create the folder" in result.stderr


def test_export_and_bundle_write_into_a_fifo_and_through_a_symlink_without_replacing_them(tmp_path):
    store = make_store(tmp_path / "store")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert run_cli("export", SID, "--store", store, "-o", fifo).exit_code == 0
    reader.join(10)
    assert got and got[0].startswith(b"# ") and fifo.is_fifo()
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert run_cli("doctor", "--store", store, "--bundle", fifo).exit_code == 0
    reader.join(10)
    assert got[1].startswith(b"PK") and fifo.is_fifo(), "the bundle went into the pipe"
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert run_cli("export", SID, "--store", store, "-o", link).exit_code == 0
    assert link.is_symlink() and real.read_text().startswith("# ")


@pytest.mark.parametrize("where", ["index", "lock", "logician-meta"])
def test_a_fifo_where_a_cache_or_lock_belongs_is_reported_not_waited_on(tmp_path, where):
    if where == "logician-meta":
        session = tmp_path / "ws" / ".logician" / "sessions" / "sessions" / "s1"
        session.mkdir(parents=True)
        (session / "messages.jsonl").write_bytes(b'{"id":"e1"}\n')
        os.mkfifo(session / "meta.json")
        target = tmp_path / "ws"
    else:
        target = make_store(tmp_path / "store")
        os.mkfifo(target / PROJECT_SLUG / ("index.json" if where == "index" else f"{SID}.jsonl.lock"))
    for command in (["fsck"], ["ls"], ["locks"], ["reindex", "--check"], ["migrate", "--dry-run"]):
        proc = levelsess(*command, target, timeout=30)
        assert b"Traceback" not in proc.stderr, (command, proc.stderr[-800:])
        assert proc.returncode in (0, 4, 8, 12), (command, proc.returncode)  # 12: a lock that cannot be read is 8, its unchecked session 4
    if where != "lock":
        assert "not a regular file" in levelsess("fsck", target).stdout.decode()


def test_a_symlink_loop_named_like_a_journal_is_unreadable_not_a_traceback(tmp_path):
    store = make_store(tmp_path / "store")
    folder = store / PROJECT_SLUG
    (folder / "a.jsonl").symlink_to("b.jsonl")
    (folder / "b.jsonl").symlink_to("a.jsonl")
    result = run_cli("fsck", "--json", store)
    assert result.exit_code & 8
    assert "unreadable" in {f["code"] for f in result.json["findings"]}
    assert run_cli("ls", store).exit_code == 8  # listed, but not clean: two entries could not be read


def test_json_nested_deeper_than_the_stack_is_invalid_json(tmp_path):
    store = make_store(tmp_path / "store")
    with open(store / PROJECT_SLUG / f"{SID}.jsonl", "ab") as handle:
        handle.write(b'{"kind":"user","x":' + b"[" * 100_000 + b"\n")
    result = run_cli("fsck", "--json", store)
    assert result.exit_code == 4  # too deep to tell whether it would close: never called garbage
    assert {"invalid-json", "too-deep"} & {f["code"] for f in result.json["findings"]}
    (store / PROJECT_SLUG / "index.json").write_bytes(b"[" * 100_000)
    assert run_cli("ls", store).exit_code == 0


def test_a_journal_of_blank_lines_has_no_meta(tmp_path):
    journal = tmp_path / "store" / "-a" / "2026-11-30T09-00-00-nnnn.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(b"\n\n\n")
    result = run_cli("fsck", "--json", tmp_path / "store")
    assert result.exit_code == 4 and "missing-meta" in {f["code"] for f in result.json["findings"]}


class _FullDisk:
    """A file whose buffered bytes never reach the disk: flush (and so close) fail with ENOSPC."""

    def __init__(self, path, mode, buffering=-1):
        self.real = open(path, mode, buffering=buffering)  # noqa: SIM115

    def write(self, data):
        return len(data)

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        return self.real.fileno()

    def close(self):
        self.real.close()
        self.flush()


def test_a_full_disk_is_one_typed_error_even_when_close_flushes_again(tmp_path, monkeypatch):
    monkeypatch.setattr(durable, "open", _FullDisk, raising=False)
    target = tmp_path / "index.json"
    with pytest.raises(DiskFullError):
        durable.atomic_write(target, b"{}")
    assert list(tmp_path.iterdir()) == [], "the temp file is removed and nothing took the target's place"


def test_a_usage_hint_names_the_command(tmp_path):
    store = make_store(tmp_path / "store")
    result = run_cli("show", "no-such-session", "--store", store)
    assert result.exit_code in (8, 16)
    assert "COMMAND" not in result.stderr
    result = run_cli("export", SID, "--store", store, "--format", "xml")
    assert result.exit_code == 16 and "levelsess export --help" in result.stderr


def test_doctor_on_a_missing_folder_says_so(tmp_path):
    result = run_cli("doctor", tmp_path / "nope")
    assert result.exit_code == 8 and "no such file or folder" in result.stderr
