"""A check writes nothing at all: no byte, no mtime, no folder - even on a read-only copy."""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from tests.audit import deny_open, no_writes
from tests.helpers import PROJECT_SLUG, logician_session, make_store, run_cli, session_records, snapshot, write_journal


def _damaged_store(root: Path) -> Path:
    store = make_store(root / "store", sessions=3)
    project = store / PROJECT_SLUG
    journals = sorted(project.glob("*.jsonl"))
    with open(journals[0], "ab") as handle:
        handle.write(b'{"kind":"user","t":"x","content":"tor')
    (project / "index.json").write_bytes(b"[{")
    (project / f"{journals[1].name}.lock").write_bytes(b'{"pid": 999999, "host": "elsewhere", "startedAt": 1}')
    os.utime(project / f"{journals[1].name}.lock", (1, 1))
    ws = root / "ws"
    session = logician_session(ws)
    (session / "meta.json").write_bytes(b'{"formatVersion":1,"entryCount":9}')
    return root


def test_check_writes_nothing_and_creates_nothing(tmp_path):
    root = _damaged_store(tmp_path)
    before = snapshot(root)
    with no_writes() as writes:
        result = run_cli("fsck", "--json", "--jobs", "1", root / "store", root / "ws")
    assert writes == []
    assert result.exit_code == 4
    codes = {f["code"] for f in result.json["findings"]}
    assert {"torn-tail", "corrupt-index", "stale-lock", "meta-ahead"} <= codes
    assert snapshot(root) == before
    assert not (root / "store" / ".levelsess").exists()


def test_dry_run_writes_nothing_and_lists_the_plan(tmp_path):
    root = _damaged_store(tmp_path)
    before = snapshot(root)
    with no_writes() as writes:
        result = run_cli("fsck", "--dry-run", "--json", root / "store", root / "ws")
    assert writes == []
    assert snapshot(root) == before
    kinds = {step.split(":")[0] for step in result.json["plan"]}
    assert kinds == {"trim-tail", "remove-lock", "rebuild-cache"}


def test_check_on_a_read_only_copy(tmp_path):
    root = _damaged_store(tmp_path)
    copy = tmp_path / "ro"
    shutil.copytree(root, copy, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(copy):
        for name in filenames + dirnames:
            path = Path(dirpath) / name
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    copy.chmod(0o555)
    before = snapshot(copy)
    try:
        with no_writes() as writes:
            result = run_cli("fsck", "--json", copy / "store", copy / "ws")
        assert writes == []
        assert result.exit_code == 4
        assert snapshot(copy) == before
    finally:
        for dirpath, dirnames, _ in os.walk(copy):
            for name in dirnames:
                (Path(dirpath) / name).chmod(0o755)
        copy.chmod(0o755)


def test_parallel_check_matches_serial(tmp_path):
    root = _damaged_store(tmp_path)
    serial = run_cli("fsck", "--json", "--jobs", "1", root / "store")
    parallel = run_cli("fsck", "--json", "--jobs", "2", root / "store")
    # a stale lock's message says how long it went untouched: the two runs may be a second apart
    ago = re.compile(r"(untouched for|touched) \d+s")
    assert ago.sub(r"\1 Ns", serial.stdout) == ago.sub(r"\1 Ns", parallel.stdout)


def test_unreadable_journal_is_an_operational_finding(tmp_path):
    store = make_store(tmp_path / "store", sessions=2)
    victim = sorted((store / PROJECT_SLUG).glob("*.jsonl"))[0]
    with deny_open(victim):
        result = run_cli("fsck", "--json", "--jobs", "1", store)
    assert result.exit_code & 8
    unreadable = [f for f in result.json["findings"] if f["code"] == "unreadable"]
    assert unreadable and unreadable[0]["path"] == str(victim)
    assert "Traceback" not in result.stderr


def test_unreadable_journal_human_output_is_one_clear_line(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    victim = next((store / PROJECT_SLUG).glob("*.jsonl"))
    with deny_open(victim):
        result = run_cli("fsck", "--jobs", "1", store)
    assert result.exit_code == 8
    assert "permission denied" in result.stdout.lower()
    assert "Traceback" not in result.stdout + result.stderr


def test_missing_default_store_says_what_to_do(tmp_path):
    result = run_cli("fsck")
    assert result.exit_code == 8
    assert "--store" in result.stderr


def test_symlinked_journal_is_never_written_through(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    elsewhere = write_journal(tmp_path / "real" / "target.jsonl", session_records())
    with open(elsewhere, "ab") as handle:
        handle.write(b'{"kind":"us')
    link = store / PROJECT_SLUG / "2026-11-30T10-00-00-zzzz.jsonl"
    link.symlink_to(elsewhere)
    original = elsewhere.read_bytes()
    result = run_cli("fsck", "--repair", "--json", link)
    assert elsewhere.read_bytes() == original
    assert link.is_symlink()
    codes = {(f["code"], f["repaired"]) for f in result.json["findings"]}
    assert ("symlink", False) in codes and ("torn-tail", False) in codes
    assert result.exit_code == 4


def test_leftover_temp_of_a_dead_writer_is_reported_and_removed(tmp_path):
    import subprocess
    import sys

    store = make_store(tmp_path / "store", sessions=1)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    run_cli("reindex", store)
    temp = store / PROJECT_SLUG / f".index.json.{child.pid}.tmp"
    temp.write_bytes(b'{"v":2,"sess')
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        busy = store / PROJECT_SLUG / f".index.json.{live.pid}.tmp"  # a running writer's: left alone
        busy.write_bytes(b"[")
        check = run_cli("fsck", "--json", store)
        assert [f["path"] for f in check.json["findings"] if f["code"] == "leftover-temp"] == [str(temp)]
        assert check.exit_code == 0
        assert run_cli("fsck", "--repair", store).exit_code == 1
        assert not temp.exists() and busy.exists()
    finally:
        live.kill()
        live.wait()
