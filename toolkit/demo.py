"""Build a small, realistically damaged store for ``levelsess demo``."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psutil

from . import durable, locks
from .stores import slug

PROJECT = "/home/ada/code/thin.ly"


def _journal(path: Path, records: list[dict], torn: bytes = b"") -> None:
    """Write a journal; ``torn`` is the first part of an append the editor never finished."""
    durable.write_new(path, b"".join(orjson.dumps(record) + b"\n" for record in records) + torn)


def _session(sid: str, turns: int, start_hour: int) -> list[dict]:
    records: list[dict] = [{"kind": "meta", "v": 2, "id": sid, "project": PROJECT,
                            "createdAt": f"2026-11-30T{start_hour:02d}:00:00Z", "title": None}]
    for turn in range(turns):
        t = f"2026-11-30T{start_hour:02d}:{turn + 1:02d}:00Z"
        records.append({"kind": "user", "t": t, "content": f"Step {turn + 1}: make refunds idempotent"})
        records.append({"kind": "assistant", "t": t, "model": "claude-sonnet",
                        "content": [{"type": "text", "text": f"Done with step {turn + 1}. " * 8}]})
    records.append({"kind": "title", "t": f"2026-11-30T{start_hour:02d}:59:00Z", "title": f"Refunds, part {start_hour}"})
    for seq, record in enumerate(records[1:], start=1):
        record["seq"] = seq
    return records


def _dead_pid_lock(journal: Path) -> None:
    """Leave the lock of a writer that was killed: a real pid that is no longer running."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    content = locks.lock_content(child.pid)
    child.kill()
    child.wait()
    assert not psutil.pid_exists(child.pid) or psutil.Process(child.pid).create_time() != orjson.loads(content)["startedAt"]
    durable.write_new(locks.lock_path(journal), content)


def populate(root: Path) -> list[Path]:
    """Create the demo store and Logician workspace under ``root``; return their paths."""
    store = root / "sessions"
    project = store / slug(PROJECT)
    durable.ensure_dir(project)
    _journal(project / "2026-11-30T09-00-00-a1b2.jsonl", _session("2026-11-30T09-00-00-a1b2", 3, 9))
    _journal(project / "2026-11-30T10-00-00-c3d4.jsonl", _session("2026-11-30T10-00-00-c3d4", 2, 10),
             torn=b'{"kind":"user","t":"2026-11-30T10:59:30Z","content":"and now the webh')
    locked = project / "2026-11-30T11-00-00-e5f6.jsonl"
    _journal(locked, _session("2026-11-30T11-00-00-e5f6", 1, 11))
    _dead_pid_lock(locked)
    durable.write_new(project / "index.json", b'{"v":2,"generatedAt":"2026-11-30T11:00:00Z","sessions":[{"id":"2026-11-')

    workspace = root / "workspace"
    session = workspace / ".logician" / "sessions" / "sessions" / "s-20261130"
    durable.ensure_dir(session)
    entries = [{"id": "e1", "parentId": None, "timestamp": "2026-11-30T12:00:00Z", "role": "user", "text": "hi"},
               {"id": "e2", "parentId": "e1", "timestamp": "2026-11-30T12:00:05Z", "role": "assistant", "text": "hello"}]
    _journal(session / "messages.jsonl", entries)
    meta = {"formatVersion": 1, "name": "demo", "workspace": str(workspace), "createdAt": "2026-11-30T12:00:00Z",
            "updatedAt": "2026-11-30T12:00:09Z", "entryCount": 3, "parentSession": None, "activeLeaf": "e3"}
    durable.write_new(session / "meta.json", orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    return [store, workspace]


@contextlib.contextmanager
def build_demo(keep: bool = False) -> Iterator[list[Path]]:
    """Yield the demo paths in a fresh temporary folder, removed afterwards unless ``keep``."""
    root = Path(tempfile.mkdtemp(prefix="levelsess-demo-"))
    try:
        yield populate(root)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class DemoStep:
    """One fsck run of the demo: its title, what it found and exits with, and (a repair) what it did."""

    title: str
    repair: bool
    report: object  # the CheckReport the step started from (its counts are the summary line's)
    findings: list
    exit_code: int
    done: list = field(default_factory=list)  # the repair's actions, in order

    def to_json(self) -> dict:
        return {"step": self.title, "exit": self.exit_code, "findings": [f.to_json() for f in self.findings]}


@dataclass(frozen=True)
class DemoResult:
    paths: list[Path]
    steps: list[DemoStep]

    @property
    def exit_code(self) -> int:
        return self.steps[-1].exit_code

    def to_json(self) -> dict:
        return {"version": 1, "store": [str(p) for p in self.paths], "runs": [s.to_json() for s in self.steps], "exit": self.exit_code}


def run_demo(paths: list[Path]) -> DemoResult:
    """Check the demo store, repair it, check it again (what ``levelsess fsck`` and ``fsck --repair`` do)."""
    from .fsck.check import check_folders
    from .fsck.repair import plan_repair
    from .stores import discover_all

    steps = []
    for title, repair in (("1. check", False), ("2. repair", True), ("3. check again", False)):
        report = check_folders(discover_all(paths))
        if repair:
            result = plan_repair(report).execute()
            steps.append(DemoStep(title, True, report, list(result.findings), result.exit_code, list(result.done)))
        else:
            steps.append(DemoStep(title, False, report, report.findings, report.exit_code))
    return DemoResult(paths, steps)
