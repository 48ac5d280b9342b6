"""import --from cursor of a large chat keeps its rows, not its records (issue 27): the journals
and the report are the same, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.cursor_db import CURSOR, add_bubble, modern_user_dir, new_db, put
from toolkit.importers.cursor import replay


def _journals(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*.jsonl"))}


def _report(result, store: Path) -> str:
    return result.stdout.replace(str(store), "STORE")


def _import(source: Path, store: Path):
    return run_cli("import", "--from", "cursor", "--source", source, "--store", store, "--json")


@pytest.mark.parametrize("fixture", ["synthetic-global-nulls.state.vscdb", "legacy-workspace-2024-11.state.vscdb"])
def test_the_fixtures_kept_as_rows_import_to_the_same_bytes(tmp_path, monkeypatch, fixture):
    source = tmp_path / "src" / fixture
    source.parent.mkdir()
    shutil.copyfile(CURSOR / fixture, source)
    runs = []
    for limit in (1 << 30, 0):
        monkeypatch.setattr(replay, "ROWS_IN_MEMORY", limit)
        store = tmp_path / f"store-{limit}"
        result = _import(source, store)
        runs.append((_journals(store), _report(result, store)))
    assert runs[0] == runs[1]


def _untimed_user_dir(root: Path) -> dict:
    """An unnamed, archived composer whose bubbles mostly have no time (settle_times fills them in),
    one orphan row, and a deleted composer's rows: every path of a replay."""
    conn = new_db(root / "User" / "globalStorage" / "state.vscdb")
    composer = {"composerId": "c1", "isArchived": True, "fullConversationHeadersOnly": [
        {"bubbleId": b, "type": 1 if b[0] == "u" else 2} for b in ("u1", "a1", "u2", "a2", "gone")]}
    rows = {"u1": {"type": 1, "text": "first question"},
            "a1": {"type": 2, "text": "an answer", "timingInfo": {"clientRpcSendTime": 1765808554907}},
            "u2": {"type": 1, "text": "a second one"}, "a2": {"type": 2, "text": "another answer"},
            "o1": {"type": 2, "text": "an orphan"}}
    for bid, value in rows.items():
        put(conn, f"bubbleId:c1:{bid}", value)
    put(conn, "composerData:c1", composer)
    put(conn, "bubbleId:d1:x1", {"type": 1, "text": "a deleted chat's question"})
    put(conn, "bubbleId:d1:x2", {"type": 2, "text": "its answer", "createdAt": "2025-12-15T15:00:00.000Z"})
    conn.commit()
    return {"conn": conn, "user": root / "User", "cid": "c1", "composer": composer}


@pytest.mark.parametrize("build", [modern_user_dir, _untimed_user_dir])
def test_a_chat_kept_as_rows_imports_and_extends_to_the_same_bytes(tmp_path, monkeypatch, build):
    project = tmp_path / "code" / "thin.ly"
    project.mkdir(parents=True)
    replayed = []
    monkeypatch.setattr(replay.Replay, "__iter__", lambda self, it=replay.Replay.__iter__: replayed.append(1) or it(self))
    runs = {}
    for mode in ("records", "rows"):
        monkeypatch.setattr(replay, "ROWS_IN_MEMORY", 0 if mode == "rows" else 16 << 20)
        shutil.rmtree(tmp_path / "src", ignore_errors=True)  # the same source path: the meta names it
        info = build(tmp_path / "src", project) if build is modern_user_dir else build(tmp_path / "src")
        store = tmp_path / f"store-{mode}"
        try:
            first = _import(info["user"], store)
            add_bubble(info, "brand-new-bubble", {"type": 1, "bubbleId": "brand-new-bubble", "text": "one more question"})
            second = _import(info["user"], store)
        finally:
            info["conn"].close()
        assert "updated" in [s["status"] for s in second.json["sessions"]]
        runs[mode] = (_journals(store), _report(first, store), _report(second, store))
        assert bool(replayed) == (mode == "rows"), "a chat is replayed from its rows only past ROWS_IN_MEMORY"
    assert runs["rows"] == runs["records"]
