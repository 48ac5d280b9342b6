"""A source removed between an import's read of it and the write of its journal (a tool's cleanup
during a nightly import: Claude Code's 30-day sweep, Gemini CLI's start-up sweep) is that session's
finding, and the import goes on: for every importer that reads a source again as it writes (a
transcript's lines past what it keeps, a large session converted again on each pass).  It stopped
the whole import with "a write could not be made durable ... free disk space" (exit 8): the
source's FileNotFoundError, raised inside the journal's writer, was taken for the disk's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.test_copilot import copilot_session
from tests.layouts.gemini import every_kind, gemini_home, name

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


def _claude(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    from toolkit.importers import claude

    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES / "claude-code", root)
    monkeypatch.setattr(claude, "KEEP_IN_MEMORY", 0)  # every line read again as it is converted
    real, gone = claude._sessions, []

    def sessions(main, agents, options, report, db):
        found = list(real(main, agents, options, report, db))
        if not gone and main is not None:
            gone.append(main)
            main.unlink()
        yield from found
    monkeypatch.setattr(claude, "_sessions", sessions)
    return root, "claude"


def _codex(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    from toolkit.importers import codex

    root = tmp_path / ".codex"
    shutil.copytree(FIXTURES / "codex", root)
    monkeypatch.setattr(codex, "KEEP_IN_MEMORY", 0)
    _unlink_first(monkeypatch, codex, "session_from_rollout")
    return root, "codex"


def _gemini(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    from toolkit.importers import gemini

    home = gemini_home(tmp_path, {name(): every_kind(), name(sid="2b2c3d4e-5f60-4a71-8b92-a3b4c5d6e7f8"):
                                  every_kind(sid="2b2c3d4e-5f60-4a71-8b92-a3b4c5d6e7f8")})
    monkeypatch.setattr(gemini, "KEEP_RECORDS", 0)
    _unlink_first(monkeypatch, gemini, "session_from_file")
    return home, "gemini"


def _copilot(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    from toolkit.importers import copilot

    home = tmp_path / ".copilot"
    (tmp_path / "proj").mkdir()
    for sid in ("5e55a0e1-0000-4000-8000-0000000000c1", "5e55a0e1-0000-4000-8000-0000000000c2"):
        copilot_session(home, sid, tmp_path / "proj")
    monkeypatch.setattr(copilot, "KEEP_BYTES", 0)
    _unlink_first(monkeypatch, copilot, "session_from_stream")
    return home, "copilot"


def _unlink_first(monkeypatch, module, function: str) -> None:
    """``module.function(path, ...)`` that removes the first source it read once it has read it."""
    real, gone = getattr(module, function), []

    def read(path, *args, **kwargs):
        session = real(path, *args, **kwargs)
        if not gone:
            gone.append(path)
            Path(path).unlink()
        return session
    monkeypatch.setattr(module, function, read)


@pytest.mark.parametrize("make", [_claude, _codex, _gemini, _copilot], ids=["claude", "codex", "gemini", "copilot"])
def test_a_source_removed_while_it_is_imported_is_its_finding_and_the_rest_imports(tmp_path, monkeypatch, make):
    source, app = make(tmp_path, monkeypatch)
    store = tmp_path / "store"
    result = run_cli("import", "--from", app, "--source", source, "--store", store, "--json", "--jobs", "1")
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code == 4, result.stdout[-2000:]
    report = json.loads(result.stdout)
    gone = [f for f in report["findings"] if f["code"] == "source-unreadable" and "could not be read again" in f["message"]]
    assert gone and all(not Path(f["path"]).exists() for f in gone), report["findings"]
    assert any(s["status"] == "created" for s in report["sessions"]), "the other sessions are imported"
    for journal in store.rglob("*.jsonl"):  # no journal of the source that went
        meta = json.loads(journal.read_bytes().split(b"\n", 1)[0])
        assert meta["source"]["path"] not in {f["path"] for f in gone}
    again = json.loads(run_cli("import", "--from", app, "--source", source, "--store", store, "--json", "--jobs", "1").stdout)
    assert not [f for f in again["findings"] if "could not be read again" in f["message"]], "the next import reads what is there"
