"""Unreadable is not corrupt: real permissions, enforced even though the tests run as root.

Root reads anything, which would mask every case here, so the CLI runs as a real subprocess
that has given up the two capabilities that let root ignore file permissions
(``setpriv --bounding-set -dac_override,-dac_read_search``); as a non-root user it runs as is.
The one file or folder under test is made unreadable with chmod.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT_SLUG, CliResult, logician_session, make_store, run_cli, snapshot, torn_store

ROOT = Path(__file__).resolve().parents[1]
SETPRIV = shutil.which("setpriv")
pytestmark = pytest.mark.skipif(os.geteuid() == 0 and SETPRIV is None, reason="needs setpriv to drop root's DAC override")


def run_unprivileged(*args) -> CliResult:
    """Run ``levelsess ARGS`` in a process that file permissions apply to."""
    prefix = [SETPRIV, "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "NO_COLOR": "1"}
    proc = subprocess.run([*prefix, sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True,
                          env=env, timeout=120)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    return CliResult(proc.returncode, proc.stdout.decode("utf-8", "replace"), stderr)


@pytest.fixture
def tree(tmp_path):
    """tmp_path, with every permission given back afterwards so it can be removed."""
    yield tmp_path
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        for name in dirnames + filenames:
            os.chmod(os.path.join(dirpath, name), 0o755, follow_symlinks=False)


def _give_to_nobody(root: Path) -> None:
    """Nothing to do: the files stay root's, and the subprocess is denied as their owner."""


def _codes(result: CliResult) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for finding in result.json["findings"]:
        out.setdefault(finding["code"], set()).add(Path(finding["path"]).name)
    return out


def test_an_unreadable_logician_meta_json_is_reported_and_never_replaced(tree):
    folder = logician_session(tree / "ws")
    meta = folder / "meta.json"
    meta.write_bytes(orjson.dumps({"formatVersion": 1, "name": "refunds, the only copy", "workspace": str(tree / "ws")}))
    original = meta.read_bytes()
    _give_to_nobody(tree)
    meta.chmod(0o000)
    check = run_unprivileged("fsck", "--json", tree / "ws")
    assert check.exit_code & 8 and "unreadable" in _codes(check) and "corrupt-meta" not in _codes(check)
    for command in (["fsck", "--repair"], ["reindex"], ["fsck", "--salvage", "--yes"]):
        result = run_unprivileged(*command, tree / "ws")
        assert result.exit_code & 8, (command, result.stderr)
        assert "free disk space" not in result.stderr and "salvage" not in result.stderr.split("next:", 1)[-1]
    assert meta.read_bytes() == original, "the name only meta.json held is still there"


@pytest.mark.parametrize("command", [["fsck", "--repair"], ["reindex"], ["migrate"]], ids=" ".join)
def test_an_unreadable_index_json_is_never_replaced(tree, command):
    store = make_store(tree / "store", sessions=2)
    index = store / PROJECT_SLUG / "index.json"
    index.write_bytes(b'{"v":2,"sessions":[],"note":"written by the editor"}')
    _give_to_nobody(tree)
    index.chmod(0o000)
    result = run_unprivileged(*command, "--json", store)
    assert result.exit_code & 8, result.stdout
    assert index.read_bytes() == b'{"v":2,"sessions":[],"note":"written by the editor"}'
    assert "corrupt-index" not in {f["code"] for f in result.json["findings"]}


def test_an_unreadable_lock_is_never_removed_and_its_session_is_not_checked(tree):
    store = make_store(tree / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    lock = journal.with_name(journal.name + ".lock")
    lock.write_bytes(b"{}")
    os.utime(lock, (1, 1))  # old enough to be stale, were it readable and uncheckable
    _give_to_nobody(tree)
    lock.chmod(0o000)
    result = run_unprivileged("fsck", "--repair", "--json", store)
    assert lock.exists() and result.exit_code & 8 and result.exit_code & 4
    assert "unreadable" in _codes(result)


def test_one_unreadable_project_folder_does_not_stop_the_others(tree):
    store, journal = torn_store(tree)
    locked_out = store / "-home-ada-code-secret"
    (locked_out).mkdir()
    (locked_out / "2026-11-30T09-00-00-zz99.jsonl").write_bytes(b'{"kind":"meta","v":2,"id":"z"}\n')
    _give_to_nobody(tree)
    locked_out.chmod(0o000)
    check = run_unprivileged("fsck", "--json", store)
    assert check.exit_code == 4 | 8
    assert "-home-ada-code-secret" in _codes(check)["unreadable"] and "torn-tail" in _codes(check)
    repair = run_unprivileged("fsck", "--repair", "--json", store)
    assert repair.exit_code & 8 and repair.exit_code & 1
    assert journal.read_bytes().endswith(b"\n"), "the readable folder was still repaired"
    locked_out.chmod(0o755)
    assert (locked_out / "2026-11-30T09-00-00-zz99.jsonl").read_bytes() == b'{"kind":"meta","v":2,"id":"z"}\n'


def test_an_unreadable_logician_session_folder_gets_no_meta_json(tree):
    folder = logician_session(tree / "ws", "s1")
    logician_session(tree / "ws", "s2")
    (folder / "meta.json").write_bytes(b'{"formatVersion":1,"name":"keep me"}')
    _give_to_nobody(tree)
    folder.chmod(0o000)
    result = run_unprivileged("fsck", "--repair", "--json", tree / "ws")
    assert result.exit_code & 8 and "s1" in _codes(result)["unreadable"]
    folder.chmod(0o755)
    assert (folder / "meta.json").read_bytes() == b'{"formatVersion":1,"name":"keep me"}'
    assert (tree / "ws" / ".logician" / "sessions" / "sessions" / "s2" / "meta.json").exists(), "the other session was repaired"


def test_an_unreadable_journal_is_reported_and_the_rest_repaired(tree):
    store, journal = torn_store(tree)
    other = journal.with_name("2026-11-30T09-00-09-zz00.jsonl")
    other.write_bytes(journal.read_bytes())
    _give_to_nobody(tree)
    other.chmod(0o000)
    result = run_unprivileged("fsck", "--repair", "--json", store)
    assert result.exit_code & 8 and result.exit_code & 1
    assert "unreadable" in _codes(result) and journal.read_bytes().endswith(b"\n")
    assert not (store / PROJECT_SLUG / "index.json").exists(), "no index from half the journals"


def test_a_folder_named_like_a_journal_is_not_a_journal(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    (store / PROJECT_SLUG / "x.jsonl").mkdir()
    before = snapshot(tmp_path)
    result = run_cli("fsck", "--json", store)
    finding = next(f for f in result.json["findings"] if f["path"].endswith("x.jsonl"))
    assert finding["code"] == "not-a-journal" and "permission" not in finding["message"].lower()
    assert snapshot(tmp_path) == before


def test_an_io_error_is_cannot_read_not_permission_denied(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    (store / PROJECT_SLUG / "2026-11-30T09-00-00-eio1.jsonl").symlink_to("/proc/self/mem")  # read() gives EIO
    result = run_cli("fsck", "--json", store)
    finding = next(f for f in result.json["findings"] if f["code"] == "unreadable")
    assert result.exit_code & 8 and "Input/output error" in finding["message"]
    assert "permission" not in finding["message"].lower()


def test_an_unreadable_cache_is_never_offered_to_repair(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    (store / PROJECT_SLUG / "index.json").mkdir()  # a folder where the cache belongs: it cannot be read
    check = run_cli("fsck", store)
    assert check.exit_code == 8 and "--repair" not in check.stderr, check.stderr
    repair = run_cli("fsck", "--repair", "--json", store)
    assert repair.exit_code == 8 and "repair-failed" not in {f["code"] for f in repair.json["findings"]}
    assert run_cli("reindex", "--check", store).exit_code == 12 and "0 cache(s) differ" in run_cli("reindex", "--check", store).stderr


def test_ls_shows_an_unreadable_folder_and_is_not_clean(tree):
    store, _ = torn_store(tree)
    hidden = store / "-home-ada-code-secret"
    hidden.mkdir()
    (hidden / "2026-11-30T09-00-00-zz99.jsonl").write_bytes(b'{"kind":"meta","v":2,"id":"z"}\n')
    hidden.chmod(0o000)
    result = run_unprivileged("ls", "--json", "--verify", store)
    assert result.exit_code == 8
    assert {r["state"] for r in result.json["sessions"]} >= {"unreadable"}
