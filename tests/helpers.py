"""Test helpers: run the CLI in-process, build journals and stores, damage files."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson
import typer.main
from click.testing import CliRunner

from toolkit.cli import app

PROJECT = "/home/ada/code/thin.ly"
PROJECT_SLUG = "-home-ada-code-thin-ly"


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def json(self):
        try:
            return orjson.loads(self.stdout)
        except orjson.JSONDecodeError:  # a document nested deeper than orjson reads (1,024 levels)
            import json
            import sys

            limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(limit, 100_000))
            try:
                return json.loads(self.stdout)
            finally:
                sys.setrecursionlimit(limit)


_COMMAND = []


def cli_command():
    """The click command typer builds of the whole app, built once a test process: typer's own
    ``CliRunner.invoke`` builds it again for every call (about 40 ms: each command's parameters, from
    its signature), the most of what a short command costs a test.  Running it is unchanged: each
    call makes its own context, and a command's callback takes every parameter anew."""
    if not _COMMAND:
        _COMMAND.append(typer.main.get_command(app))
    return _COMMAND[0]


def run_cli(*args: str, columns: int = 200) -> CliResult:
    """Run ``levelsess ARGS`` in-process; show stdout and stderr if the call blew up."""
    result = CliRunner().invoke(cli_command(), [str(a) for a in args], env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"levelsess {' '.join(map(str, args))} raised\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}") from result.exception
    return CliResult(result.exit_code, result.stdout, result.stderr)


def store_files(store: Path) -> dict[str, bytes]:
    """Every file of ``store`` but levelsess' own folder, by path, its index's ``generatedAt`` left out:
    what two imports of the same source into two stores must write alike."""
    import re

    return {p.relative_to(store).as_posix(): re.sub(rb'"generatedAt": "[^"]*"', b"", p.read_bytes())
            for p in sorted(store.rglob("*")) if p.is_file() and ".levelsess" not in p.parts}


def import_report(app_name: str, source: Path, store: Path) -> str:
    """``import --from APP --source SOURCE --store STORE --json``'s report, the store's path as ``STORE``."""
    result = run_cli("import", "--from", app_name, "--source", source, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout.replace(str(store), "STORE")


def meta(sid: str = "2026-11-30T09-00-00-a1b2", v: int = 2, **extra) -> dict:
    return {"kind": "meta", "v": v, "id": sid, "project": PROJECT, "createdAt": "2026-11-30T09:00:00Z", "title": None, **extra}


def session_records(sid: str = "2026-11-30T09-00-00-a1b2", turns: int = 3, v: int = 2) -> list[dict]:
    """A realistic session: meta, then user/assistant turns and a title."""
    records = [meta(sid, v)]
    for turn in range(turns):
        t = f"2026-11-30T09:{turn + 1:02d}:00Z"
        records.append({"kind": "user", "t": t, "content": f"question {turn} about   refunds", "contextFiles": ["app/x.rb"]})
        records.append({"kind": "assistant", "t": t, "model": "claude-sonnet",
                        "content": [{"type": "text", "text": f"answer {turn} " * 5}]})
    records.append({"kind": "title", "t": "2026-11-30T09:59:00Z", "title": "Refunds"})
    if v >= 2:
        for seq, record in enumerate(records[1:], start=1):
            record["seq"] = seq
    return records


def encode(records: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_journal(path: Path, records: list[dict] | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(records if isinstance(records, bytes) else encode(records))
    return path


def make_store(root: Path, sessions: int = 2, v: int = 2) -> Path:
    """A store root with one project holding ``sessions`` journals (no index yet)."""
    project = root / PROJECT_SLUG
    for n in range(sessions):
        sid = f"2026-11-30T09-00-0{n}-a1b{n}"
        write_journal(project / f"{sid}.jsonl", session_records(sid, turns=2 + n, v=v))
    return root


def logician_session(workspace: Path, sid: str = "s1", entries: list[dict] | None = None) -> Path:
    folder = workspace / ".logician" / "sessions" / "sessions" / sid
    if entries is None:
        entries = [{"id": "e1", "parentId": None, "timestamp": "2026-11-30T12:00:00Z", "text": "hi"},
                   {"id": "e2", "parentId": "e1", "timestamp": "2026-11-30T12:00:05Z", "text": "hello"}]
    write_journal(folder / "messages.jsonl", entries)
    return folder


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and mtime (to prove nothing changed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            stat = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            out[str(path.relative_to(root))] = (hashlib.sha256(data).hexdigest(), stat.st_mtime_ns)
    return out


def corrupt_at(path: Path, offset: int, byte: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] = byte
    path.write_bytes(bytes(data))


def truncate_at(path: Path, size: int) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(size)


def torn_store(root: Path, partial: bytes = b'{"kind":"user","t":"x","content":"in fli') -> tuple[Path, Path]:
    """A store with one journal whose last append was cut off; returns (store, journal)."""
    store = make_store(root / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    with open(journal, "ab") as handle:
        handle.write(partial)
    return store, journal


def on_a_terminal(*args: str, env: dict | None = None, stderr_too: bool = False) -> tuple[int, str]:
    """Run ``levelsess ARGS`` in a subprocess with stdout (and with ``stderr_too`` stderr) on a
    pseudo-terminal, as a user's shell runs it; return (exit code, what the terminal got).
    NO_COLOR is dropped from the environment unless ``env`` sets it."""
    import os
    import pty
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    environ = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "100", "TERM": "xterm"}
    environ.pop("NO_COLOR", None)
    environ.update(env or {})
    code = f"import sys; sys.argv = ['levelsess', *{list(args)!r}]; from toolkit.cli import main; main()"
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", code], stdout=child, stderr=child if stderr_too else subprocess.DEVNULL,
                               env=environ, cwd=root)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    code_ = process.wait(timeout=60)
    os.close(main)
    return code_, b"".join(chunks).decode(errors="replace")


def record_fsyncs(monkeypatch) -> list[tuple[str, str]]:
    """(what each fd names, the calling thread's name) for every ``os.fsync`` from now on, each
    still made for real; undone with the test (or ``monkeypatch.undo()``).  Names come from
    /proc/self/fd: a test using this skips where that is missing."""
    import threading

    synced: list[tuple[str, str]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), threading.current_thread().name))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced
