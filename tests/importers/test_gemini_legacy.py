"""`levelsess import --from gemini` of legacy whole-file ``session-*.json`` sessions (SOURCES-MORE §1.3):
read as one document, never written; its metadata is the meta's raw, each message one record with
its object under raw; the accounting rule closes (an item that is no message is counted skipped);
a resumed twin ``.jsonl`` with the same sessionId is kept beside it, not over it; a re-import adds
nothing; restore refuses to write a legacy file back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.gemini import SLUG, every_kind, gemini, gemini_home, line, meta, name, user


@pytest.fixture(autouse=True, params=["whole", "by-element"])
def reading(request, monkeypatch) -> str:
    """Every test runs twice: legacy files parsed whole and their records held, and (as a long
    session's are) their messages read one by one and their records in a temporary database."""
    if request.param == "by-element":
        from toolkit.importers import gemini, spill

        monkeypatch.setattr(gemini, "WHOLE_BYTES", 0)
        monkeypatch.setattr(spill, "RECORD_BYTES_IN_MEMORY", 0)
    return request.param

OLD = "22222222-0000-4000-8000-000000000000"
TWIN = "33333333-0000-4000-8000-000000000000"


@pytest.fixture(autouse=True)
def no_gemini_home(monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)


def _home(tmp_path: Path) -> Path:
    legacy = {**meta(OLD), "summary": "an old chat", "messages": [user("l1", "old question"), gemini("l2", "old answer"), {"note": 1}]}
    twin = {**meta(TWIN), "messages": [user("t1", "twin question")]}
    resumed = b"".join(map(line, [meta(TWIN), user("t1", "twin question"), gemini("t2", "twin answer")]))
    return gemini_home(tmp_path, {name(): every_kind(), f"session-2026-01-01T00-00-{OLD[:8]}.json": json.dumps(legacy, indent=2).encode(),
                                  f"session-2026-01-02T00-00-{TWIN[:8]}.json": json.dumps(twin, indent=2).encode(),
                                  f"session-2026-01-02T00-00-{TWIN[:8]}.jsonl": resumed})


def _import(home: Path, store: Path) -> dict:
    result = run_cli("import", "--from", "gemini", "--source", home, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    return result.json


def _records(store: Path, sid: str) -> list[dict]:
    [path] = list(store.rglob(f"gemini-{sid}.jsonl"))
    return [json.loads(x) for x in path.read_bytes().splitlines()]


def test_a_legacy_session_is_imported_message_by_message_and_accounted_for(tmp_path):
    home, store = _home(tmp_path), tmp_path / "store"
    before = snapshot(home)
    report = _import(home, store)
    assert report["exit"] == 0 and snapshot(home) == before, "the Gemini folder is only read"
    by_id = {s["id"]: s for s in report["sessions"]}
    old = by_id[f"gemini-{OLD}"]
    assert (old["source_items"], old["records"], dict(old["skipped"]) if isinstance(old["skipped"], list) else old["skipped"]) == (
        4, 2, {"not-a-message": 1})
    assert old["carried"] + sum((dict(old["skipped"]) if isinstance(old["skipped"], list) else old["skipped"]).values()) == old["source_items"]
    records = _records(store, OLD)
    assert records[0]["raw"]["sessionId"] == OLD and "messages" not in records[0]["raw"]
    assert records[0]["title"] == "an old chat" and records[0]["source"]["legacy"] is True
    messages = [r for r in records[1:] if "raw" in r]
    assert [(r["kind"], r["raw"]["id"], r["sourceKey"]) for r in messages] == [("user", "l1", "message:l1"), ("assistant", "l2", "message:l2")]
    assert messages[0]["content"] == "old question"
    assert f"gemini-{TWIN}" in by_id and f"gemini-{TWIN}-json" in by_id, "the twin is kept beside, not over, the resumed file"
    assert run_cli("fsck", "--strict", store).exit_code == 0
    again = _import(home, store)
    assert {s["status"] for s in again["sessions"]} == {"unchanged"}


def test_a_broken_legacy_file_is_reported_and_the_rest_imported(tmp_path):
    home, store = _home(tmp_path), tmp_path / "store"
    (home / "tmp" / SLUG / "chats" / f"session-2026-01-01T00-00-{OLD[:8]}.json").write_bytes(b'{"sessionId": "x", "mess')
    report = _import(home, store)
    assert report["exit"] == 4 or report["exit"] & 4, report
    assert "invalid-json" in {f["code"] for f in report["findings"]}
    assert f"gemini-{TWIN}" in {s["id"] for s in report["sessions"]}


def test_restore_does_not_write_a_legacy_session_back(tmp_path):
    home, store = _home(tmp_path), tmp_path / "store"
    _import(home, store)
    before = snapshot(home)
    result = run_cli("restore", OLD, "--store", store, "--yes")
    assert result.exit_code == 16 and "legacy whole-file .json" in result.stderr and "Traceback" not in result.stderr
    assert snapshot(home) == before
