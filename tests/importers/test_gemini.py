"""`levelsess import --from gemini` on folders built from SOURCES-MORE §1.9's shapes: every source line
kept byte-exact under ``raw`` (the metadata line under the meta's), the accounting rule, an
idempotent re-import, a grown session appending only its new lines, damage imported around and
reported, and the Gemini folder left byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.gemini import SID, SLUG, G2, every_kind, gemini, gemini_home, line, meta, name, user

SUB = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


@pytest.fixture(autouse=True)
def no_gemini_home(monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)


def _import(source: Path, store: Path) -> dict:
    result = run_cli("import", "--from", "gemini", "--source", source, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    return json.loads(result.stdout)


def _journal(store: Path, sid: str) -> list[dict]:
    """The meta, then the records that carry a source line (a title record carries none)."""
    [path] = list(store.rglob(f"gemini-{sid}.jsonl"))
    records = [json.loads(x) for x in path.read_bytes().splitlines()]
    return records[:1] + [r for r in records[1:] if "raw" in r]


def _raw(record: dict) -> bytes:
    return json.dumps(record["raw"], separators=(",", ":")).encode()


def _tree(tmp_path: Path) -> Path:
    sub = b"".join(map(line, [meta(SUB, kind="subagent"), user("s1", "look at the repo"), gemini("s2", "done")]))
    return gemini_home(tmp_path, {name(): every_kind(), f"{SID}/{SUB}.jsonl": sub})


def test_every_line_is_kept_byte_exact_and_accounted_for(tmp_path):
    home, store = _tree(tmp_path), tmp_path / "store"
    before = snapshot(home)
    report = _import(home, store)
    assert report["exit"] == 0 and snapshot(home) == before
    source = (home / "tmp" / SLUG / "chats" / name()).read_bytes().splitlines()
    records = _journal(store, SID)
    assert _raw(records[0]) == source[0], "the metadata line is the meta's raw"
    assert [_raw(r) for r in records[1:]] == source[1:], "every other line is one record, in order"
    [outcome] = [s for s in report["sessions"] if s["id"] == f"gemini-{SID}"]
    assert outcome["source_items"] == len(source) and outcome["records"] == len(source) - 1
    kinds = [(r["kind"], r.get("type"), r.get("replaces", False)) for r in records[1:]]
    assert ("assistant", None, True) in kinds and ("event", "gemini:rewind", False) in kinds and ("event", "gemini:set", False) in kinds
    assert records[0]["title"] == "README for my-app" and records[0]["project"] == "/home/ana/src/my-app"
    sub = _journal(store, SUB)
    assert sub[0]["source"]["parent"] == SID and sub[0]["source"]["kind"] == "subagent"


def test_a_reimport_changes_nothing_and_a_grown_session_appends_only_its_new_lines(tmp_path):
    home, store = _tree(tmp_path), tmp_path / "store"
    _import(home, store)
    kept = snapshot(store)
    report = _import(home, store)
    assert {s["status"] for s in report["sessions"]} == {"unchanged"} and snapshot(store) == kept
    session = home / "tmp" / SLUG / "chats" / name()
    old = _journal(store, SID)
    session.write_bytes(session.read_bytes() + line(gemini(G2, "an update")) + line({"$set": {"lastUpdated": "x"}}))
    report = _import(home, store)
    [outcome] = [s for s in report["sessions"] if s["id"] == f"gemini-{SID}"]
    assert outcome["status"] == "updated" and outcome["new_records"] == 2
    new = _journal(store, SID)
    assert new[: len(old)] == old and new[-2]["replaces"] is True


def test_damage_is_imported_around_and_reported(tmp_path):
    data = every_kind()
    lines = data.split(b"\n")
    damaged = b"\n".join(lines[:3] + [b"\0" * 12] + lines[3:]) + b'{"id":"x","ty'
    home, store = gemini_home(tmp_path, {name(): damaged}), tmp_path / "store"
    report = _import(home, store)
    codes = {f["code"] for f in report["findings"]}
    assert "source-torn" in codes
    [outcome] = report["sessions"]
    assert outcome["source_items"] == outcome["carried"] + sum(outcome["skipped"].values())
    assert outcome["carried"] == len([x for x in lines if x]) and outcome["skipped"] == {"nul-run": 1, "torn-tail": 1}
    assert [_raw(r) for r in _journal(store, SID)[1:]] == [x for x in lines[1:] if x]
