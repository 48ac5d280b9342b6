"""The import's index memo is lean (issue 27: peak RSS): it keeps each journal's facts without the
source row a meta record carries (a Cursor chat's meta holds its composer's row, and an import of
two thousand chats kept 60 MB of them until the memo was saved), and the indexes made from it are
still the journals' own: `reindex --check` finds nothing to change after a first import, a re-import
that extends a journal, and one that finds nothing new."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson

from tests.helpers import run_cli
from tests.importers.cursor_db import FIXTURES, add_bubble, modern_user_dir, real_bubbles


def _memo_metas(cache: Path) -> list[dict]:
    metas = []
    for path in (cache / "levelsess" / "import-index").glob("*.json"):
        if path.name.endswith(".states.json"):
            continue
        for entry in orjson.loads(path.read_bytes())["journals"].values():
            meta = entry["facts"]["fields"].get("meta")
            if isinstance(meta, dict):
                metas.append(meta)
    return metas


def _check(store: Path) -> None:
    result = run_cli("reindex", "--store", str(store), "--check", "--json")
    assert result.exit_code == 0, result.stdout


def test_the_memo_keeps_no_source_row_and_the_indexes_stay_right(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    info = modern_user_dir(tmp_path / "cursor", tmp_path / "project")
    claude = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude-code", claude)
    store = tmp_path / "store"
    for app, source in (("cursor", info["user"]), ("claude", claude)):
        result = run_cli("import", "--from", app, "--source", str(source), "--store", str(store), "--json")
        assert result.exit_code in (0, 4), result.stdout
    metas = _memo_metas(tmp_path / "cache")
    assert len(metas) > 10 and all("raw" not in meta for meta in metas)
    assert all(isinstance(meta.get("id"), str) for meta in metas)  # (what an index entry takes from it is there)
    journal = next(store.rglob(f"cursor-{info['cid']}.jsonl"))
    assert b'"raw":' in journal.read_bytes().split(b"\n", 1)[0]  # the journal's own meta keeps its row, as ever
    _check(store)
    # a chat that grew: its journal is extended, its index entry made from the memo and the new lines
    bid, value = real_bubbles()[3][1], real_bubbles()[3][2]
    add_bubble(info, "grown-0001", {**value, "bubbleId": "grown-0001", "text": "one more message"})
    result = run_cli("import", "--from", "cursor", "--source", str(info["user"]), "--store", str(store), "--json")
    assert result.exit_code in (0, 4) and '"status": "updated"' in result.stdout, bid
    _check(store)
    index = json.loads((journal.parent / "index.json").read_text())
    entry = next(e for e in index["sessions"] if e["id"] == f"cursor-{info['cid']}")
    assert entry["title"] == info["composer"]["name"]
    result = run_cli("import", "--from", "cursor", "--source", str(info["user"]), "--store", str(store), "--json")
    assert result.exit_code in (0, 4) and '"status": "updated"' not in result.stdout
    _check(store)
    assert all("raw" not in meta for meta in _memo_metas(tmp_path / "cache"))
    info["conn"].close()
