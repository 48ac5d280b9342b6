"""Helpers for the restore tests: the real fixtures copied into a test's own homes, an import into
a store, restore runs in process, and a snapshot of a tree's bytes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

from tests.helpers import run_cli


def _shared() -> Path | None:
    """``shared/fixtures``: beside the checkout (a worktree may sit a level deeper)."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "fixtures").is_dir():
            return parent / "shared" / "fixtures"
    return None


FIXTURES = _shared()
CLAUDE = FIXTURES / "claude-code" if FIXTURES else None
CODEX = FIXTURES / "codex" if FIXTURES else None


def copy_home(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for dirpath, dirnames, filenames in os.walk(target):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def do_import(app: str, source: Path, store: Path, *extra: str) -> dict:
    result = run_cli("import", "--from", app, "--source", source, "--store", store, "--json", *extra)
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.json


def restore(*args):
    result = run_cli("restore", *args, "--json")
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    return result


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), and every folder (-> None)."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = Path(path).read_bytes()
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def journal_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def last_state(journal: Path) -> dict:
    return [r for r in journal_records(journal) if r.get("type") == "source-state"][-1]


def kept_uuids(journals: list[Path]) -> set[str]:
    """The uuids of the source lines the journals keep under raw."""
    found = set()
    for journal in journals:
        for record in journal_records(journal):
            raw = record.get("raw")
            for value in raw if isinstance(raw, list) else [raw]:
                if isinstance(value, dict) and isinstance(value.get("uuid"), str):
                    found.add(value["uuid"])
    return found
