"""SIGTERM stops levelsess as Ctrl-C does (exit 32, one line naming the signal, no traceback), with a
real process and a real signal; a PATH that may not be read is an operational error (exit 8), not a usage error."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import make_store

ROOT = Path(__file__).resolve().parents[1]


def _catches_sigterm(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.skipif(not Path("/proc/self/status").exists() or not hasattr(os, "mkfifo"), reason="needs /proc and FIFOs")
@pytest.mark.parametrize("signum, says", [(signal.SIGTERM, "error: interrupted: SIGTERM"), (signal.SIGINT, "error: interrupted: Ctrl-C")],
                         ids=["SIGTERM", "SIGINT"])
def test_a_signal_exits_32_with_one_line_naming_it_and_no_traceback(tmp_path, signum, says):
    store = make_store(tmp_path / "store", sessions=1)
    journal = next(store.glob("*/*.jsonl"))
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)  # `export -o FIFO` blocks in open() until a reader comes: a command that is surely running
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "toolkit.cli", "export", str(journal), "-o", str(fifo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        while proc.poll() is None and not _catches_sigterm(proc.pid):  # its handler is in place
            os.sched_yield()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = stderr.decode()
    assert proc.returncode == 32, text
    assert "Traceback" not in text and text.splitlines()[0] == says, text
    assert (signum == signal.SIGTERM) == ("Ctrl-C" not in text)  # a `kill` is not called a Ctrl-C
    assert len([line for line in text.splitlines() if line.startswith("error:")]) == 1


SETPRIV = shutil.which("setpriv")


@pytest.mark.skipif(os.geteuid() == 0 and SETPRIV is None, reason="needs setpriv to drop root's DAC override")
@pytest.mark.parametrize("command", ["fsck", "ls", "reindex", "migrate", "locks"])
@pytest.mark.parametrize("what", ["folder", "journal"])
def test_a_path_that_cannot_be_read_is_exit_8_not_16(tmp_path, command, what):
    store = make_store(tmp_path / "store", sessions=1)
    target = store if what == "folder" else next(store.glob("*/*.jsonl"))
    prefix = [SETPRIV, "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "200"}
    target.chmod(0)
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "toolkit.cli", command, str(target)], capture_output=True,
                              env=env, timeout=120)
    finally:
        target.chmod(0o755 if what == "folder" else 0o644)
    stderr = proc.stderr.decode()
    assert "Traceback" not in stderr and "Usage:" not in stderr
    if command == "locks" and what == "journal":  # locks reads lock files only, never a journal
        assert proc.returncode == 0
        return
    assert proc.returncode & 8 and not proc.returncode & 16, (proc.returncode, stderr)


_INTERRUPTED_LOAD = r"""
import builtins, os, signal, sys
from toolkit.cli import base
real = builtins.__import__
sent = []
def hook(name, *args, **kwargs):
    if name == "orjson" and not sent:  # a Ctrl-C just as orjson begins to load
        sent.append(os.kill(os.getpid(), signal.SIGINT))
    return real(name, *args, **kwargs)
builtins.__import__ = hook
try:
    base._load_orjson()
except KeyboardInterrupt:
    print("interrupted; orjson loaded:", "orjson" in sys.modules)
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="signals are held back where POSIX can")
def test_a_ctrl_c_while_orjson_loads_is_taken_once_it_is_loaded():
    """orjson's module init crashed the interpreter (SIGSEGV) when a KeyboardInterrupt was raised
    inside it (test_a_signal_exits_32... failed a quarter of its runs on a busy machine): a command
    loads it with SIGINT and SIGTERM held back, and a Ctrl-C that came meanwhile is raised after."""
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_LOAD], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted; orjson loaded: True"


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="needs a file system that takes any bytes in a name")
@pytest.mark.parametrize("app, fixture", [("codex", "codex"), ("claude", "claude-code")])
def test_a_source_and_a_store_under_names_that_are_not_utf8_import_and_check_from_the_caches(tmp_path, app, fixture):
    """A folder's name on Linux is bytes: one that is not UTF-8 (\\xff) under the source and under the
    store imports, imports again from the import cache, and checks with --incremental from its cache,
    no traceback (the caches' keys are those paths: orjson refused them, and the first import died)."""
    import json
    import time

    fixtures = ROOT.parent / "shared" / "fixtures" / fixture
    if not fixtures.is_dir():
        pytest.skip(f"{fixtures} is not here")
    source = Path(os.fsdecode(bytes(tmp_path) + b"/src\xfe"))
    shutil.copytree(fixtures, source)
    store = Path(os.fsdecode(bytes(tmp_path) + b"/st\xffore"))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def run(*args: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "toolkit.cli", *args, "--json"], capture_output=True, env=env, cwd=ROOT)
        assert done.returncode in (0, 4) and b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")[-800:]
        return json.loads(done.stdout)

    first = run("import", "--from", app, "--source", str(source), "--store", str(store))
    sessions = len(first["sessions"])
    assert sessions and first["read"] > 0
    again = run("import", "--from", app, "--source", str(source), "--store", str(store))
    assert again["read"] == 0 and again["from_cache"] == first["read"]
    time.sleep(2.1)  # (journals older than the racy window: trusted by the next check)
    run("fsck", "--incremental", "--store", str(store))
    checked = run("fsck", "--incremental", "--store", str(store))
    assert checked["from_cache"] == len(list(Path(os.fsencode(store).decode(errors="surrogateescape")).rglob("*.jsonl")))


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="needs a file system that takes any bytes in a name")
@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_a_name_that_is_not_utf8_is_shown_by_its_byte(tmp_path, encoding):
    """Where a path is only named (an error, a summary, doctor's "where:"), a byte of a folder's
    name that is not UTF-8 shows as \\xff, the byte a shell's $'\\xff' names, on any terminal: it
    showed as \\udcff, Python's surrogate for it, which names no byte."""
    from tests.helpers import make_store

    store = make_store(Path(os.fsdecode(bytes(tmp_path) + b"/st\xffore")) / "store", sessions=1)
    env = {**os.environ, "PYTHONIOENCODING": encoding, "HOME": str(store.parent), "XDG_CACHE_HOME": str(tmp_path / "c")}
    shown = []
    for args in (["fsck", str(store / "nope")], ["fsck", str(store)], ["doctor", "--store", str(store)]):
        done = subprocess.run([sys.executable, "-m", "toolkit.cli", *args], capture_output=True, env=env, cwd=ROOT)
        assert b"Traceback" not in done.stderr, done.stderr[-800:]
        shown.append((done.stdout + done.stderr).decode(encoding))  # (an ASCII stream holds only ASCII)
    assert not [text for text in shown if "udcff" in text], shown
    assert "st\\xffore/store/nope" in shown[0] and all("st\\xffore" in text for text in shown), shown
