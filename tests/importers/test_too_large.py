"""An import never drops a source record too large to parse here: its bytes are kept, byte-exact,
in ``<store>/.levelsess/too-large/<session id>/``, counted under ``skipped`` and named in a
``record-too-large`` finding.  The reader's cap is lowered so a few KiB is "too large"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolkit.lines
from tests.helpers import run_cli, snapshot
from tests.layouts.codex import envelope, new_turn

CAP, CHUNK = 1024, 64
SID = "00000000-0000-4000-8000-00000000abcd"
TID = "019d781a-be34-7041-abb1-577f9360b907"


@pytest.fixture(autouse=True)
def small_cap(monkeypatch):
    monkeypatch.setattr(toolkit.lines, "LINE_CAP", CAP)
    monkeypatch.setattr(toolkit.lines, "CHUNK", CHUNK)


def _claude_line(n: int, text: str) -> bytes:
    record = {"parentUuid": f"00000000-0000-4000-8000-{n - 1:012d}" if n else None, "isSidechain": False,
              "type": "user" if n % 2 == 0 else "assistant", "message": {"role": "user", "content": text},
              "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": f"2026-12-01T00:00:{n:02d}.000Z",
              "sessionId": SID, "cwd": "/p"}
    return json.dumps(record, separators=(",", ":")).encode()


def _claude(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    source = tmp_path / ".claude" / "projects" / "-p" / f"{SID}.jsonl"
    source.parent.mkdir(parents=True)
    source.write_bytes(data)
    return source, tmp_path / "store"


def _import(app: str, tmp_path: Path, store: Path, *extra: str):
    result = run_cli("import", "--from", app, "--source", tmp_path / f".{app}", "--store", store, "--json", *extra)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def _too_large(result) -> list[dict]:
    return [f for f in result.json["findings"] if f["code"] == "record-too-large"]


def test_a_claude_record_too_large_is_kept_byte_exact_counted_and_named(tmp_path):
    lines = [_claude_line(0, "hi"), _claude_line(1, "x" * 5 * CAP), _claude_line(2, "bye")]
    tail = b'{"parentUuid":null,"type":"user","message":"' + b"t" * 3 * CAP  # perhaps still being written
    data = b"".join(line + b"\n" for line in lines) + tail
    source, store = _claude(tmp_path, data)
    before = snapshot(source.parent)
    result = _import("claude", tmp_path, store)
    assert result.exit_code == 4  # an error that needs a person, and the rest imported
    found = _too_large(result)
    assert [(f["path"], f["line"], f["offset"]) for f in found] == [
        (str(source), 2, len(lines[0]) + 1), (str(source), 4, len(data) - len(tail))]
    for finding, expected in zip(found, (lines[1], tail)):
        kept = Path(finding["saved_to"])
        assert kept.is_relative_to(store / ".levelsess" / "too-large") and kept.read_bytes() == expected
        assert "too large for levelsess to parse here" in finding["message"] and str(kept) in finding["message"]
    (session,) = result.json["sessions"]
    assert session["skipped"] == {"record-too-large": 2}
    assert session["source_items"] == session["carried"] + 2 == 4
    assert snapshot(source.parent) == before, "the source is never written"
    assert run_cli("fsck", "--strict", store).exit_code == 0, "the copies are not journals of the store"


def test_a_reimport_keeps_each_copy_once_and_a_dry_run_writes_nothing(tmp_path):
    data = b"".join(line + b"\n" for line in (_claude_line(0, "hi"), _claude_line(1, "x" * 5 * CAP)))
    _source, store = _claude(tmp_path, data)
    dry = _import("claude", tmp_path, store, "--dry-run")
    assert [f["saved_to"] for f in _too_large(dry)] == [None] and "would keep" in _too_large(dry)[0]["message"]
    assert not store.exists()
    _import("claude", tmp_path, store)
    first = snapshot(store)
    again = _import("claude", tmp_path, store)
    assert [s["status"] for s in again.json["sessions"]] == ["unchanged"] and len(_too_large(again)) == 1
    assert snapshot(store) == first


def test_a_transcript_whose_only_record_is_too_large_still_keeps_it(tmp_path):
    big = _claude_line(0, "x" * 5 * CAP)
    _source, store = _claude(tmp_path, big + b"\n")
    result = _import("claude", tmp_path, store)
    (found,) = _too_large(result)
    assert Path(found["saved_to"]).read_bytes() == big


def test_a_store_journal_holding_a_record_too_large_is_never_extended_past_it(tmp_path):
    source, store = _claude(tmp_path, _claude_line(0, "hi") + b"\n")
    _import("claude", tmp_path, store)
    (journal,) = store.rglob("*.jsonl")
    big = json.dumps({"kind": "event", "t": "2026-12-01T00:00:09.000Z", "type": "note", "seq": 2, "pad": "p" * 5 * CAP})
    with open(journal, "ab") as out:
        out.write(big.encode() + b"\n")
    held = journal.read_bytes()
    with open(source, "ab") as out:
        out.write(_claude_line(1, "new") + b"\n")
    result = _import("claude", tmp_path, store)
    assert [s["status"] for s in result.json["sessions"]] == ["skipped"]
    assert any(f["code"] == "record-too-large" and f["path"] == str(journal) for f in result.json["findings"])
    assert journal.read_bytes() == held, "never appended after a line it could not read (its seq, its keys)"


def test_a_codex_record_too_large_is_kept_and_the_accounting_adds_up(tmp_path):
    meta = envelope("2026-04-10T09:55:11.000Z", "session_meta", {"id": TID, "timestamp": "2026-04-10T09:55:11.000Z",
                                                                 "cwd": "/p", "cli_version": "0.1"})
    lines = [meta, *new_turn("2026-04-10T09:56:00.000Z", "hi", "a" * 5 * CAP), *new_turn("2026-04-10T09:57:00.000Z", "again", "ok")]
    data = b"".join(line + b"\n" for line in lines)
    source = tmp_path / ".codex" / "sessions" / "2026" / "04" / "10" / f"rollout-2026-04-10T09-55-11-{TID}.jsonl"
    source.parent.mkdir(parents=True)
    source.write_bytes(data)
    result = _import("codex", tmp_path, tmp_path / "store")
    big = [n for n, line in enumerate(lines, start=1) if len(line) > CAP + CHUNK]
    found = _too_large(result)
    assert [f["line"] for f in found] == big and len(big) == 2
    assert [Path(f["saved_to"]).read_bytes() for f in found] == [lines[n - 1] for n in big]
    (session,) = result.json["sessions"]
    assert session["skipped"]["record-too-large"] == 2
    assert session["source_items"] == session["carried"] + sum(session["skipped"].values())
