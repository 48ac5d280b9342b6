"""The import's index memo is lean (issue 27: peak RSS): it keeps of each journal's meta record only
what an index entry reads (not the source row it carries: a Cursor chat's meta holds its composer's
row, and an import of two thousand chats kept 60 MB of them until the memo was saved; nor its
source), and the indexes made from it are
still the journals' own: `reindex --check` finds nothing to change after a first import, a re-import
that extends a journal, and one that finds nothing new."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


from tests.helpers import run_cli
from toolkit.fsck.incremental import read_file
from toolkit.index import ENTRY_META
from tests.importers.cursor_db import FIXTURES, add_bubble, modern_user_dir, real_bubbles


def _memo_metas(cache: Path) -> list[dict]:
    metas = []
    for path in (cache / "levelsess" / "import-index").glob("*.json"):
        if path.name.endswith(".states.json"):
            continue
        for entry in read_file(path)["journals"].values():
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
    assert len(metas) > 10 and all(meta.keys() <= ENTRY_META for meta in metas)  # (no source row, no source)
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


def _memo_states(cache: Path) -> dict[str, object]:
    import base64
    import pickle

    states = {}
    for path in (cache / "levelsess" / "import-index").glob("*.states.json"):
        for journal, state in read_file(path)["journals"].items():
            states[journal] = pickle.loads(base64.b64decode(state))
    return states


def test_the_memos_reader_states_keep_no_source_row_and_a_journal_grown_is_indexed_from_them(tmp_path, monkeypatch):
    """The reader state the memo keeps of each journal (what reindex goes on from when it grew) is
    lean as its facts are (journal.lean_checkpoint): a Codex rollout's session_meta was 15 of its
    16 kB, rewritten on every import that changed one.  Made by the workers and by a reindex that
    went on from one alike; the index of the journals grown from them is the journals' own."""
    import pickle
    import random

    from tests.bench.grow import grow_codex
    from tests.restore.kit import CODEX
    from toolkit.journal import lean_checkpoint, scan_journal

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home, store = tmp_path / "home", tmp_path / "store"
    shutil.copytree(CODEX, home)
    imported = lambda *extra: run_cli("import", "--from", "codex", "--source", str(home), "--store", str(store), "--json", *extra)  # noqa: E731
    for jobs in ("2", "1"):  # (a first import's scans from workers, then a re-import's from this process)
        assert imported("--jobs", jobs).exit_code in (0, 4)
        states = _memo_states(tmp_path / "cache")
        assert len(states) == 3 and all(state.facts.meta is not None and "raw" not in state.facts.meta for state in states.values())
        _check(store)
        rng = random.Random(int(jobs))
        assert all(grow_codex(path, rng) for path in sorted(home.rglob("rollout-*.jsonl")))
    assert imported().exit_code in (0, 4)
    _check(store)
    journal = next(store.rglob("codex-*.jsonl"))
    full = scan_journal(journal, checkpoint=True)
    lean = lean_checkpoint(full.resume_state[0])
    assert b'"raw":' in journal.read_bytes().split(b"\n", 1)[0] and len(lean) < len(full.resume_state[0]) // 3
    direct = pickle.loads(scan_journal(journal, checkpoint=True, lean=True).resume_state[0])
    made = pickle.loads(lean)
    assert lean_checkpoint(lean) == lean and made.facts == direct.facts and "raw" not in made.facts.meta
    assert (made.records, made.lineno, made.rules.turn_seqs) == (direct.records, direct.lineno, direct.rules.turn_seqs)
    # fsck --incremental keeps its own cache, not lean: a scan it goes on from is a full read's
    assert run_cli("fsck", str(store), "--incremental", "--json").exit_code == 0


def test_a_lean_scan_is_what_the_lean_memo_keeps_of_the_whole_one(tmp_path, monkeypatch):
    """What a worker ships to its parent (:func:`lean_scan`, made in the worker) is remembered
    exactly as the whole scan was: the same entry, the same reader state; and it carries no row."""
    import pickle

    from toolkit.fsck.incremental import IncrementalCache, lean_scan, read_back
    from toolkit.journal import scan_journal

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "codex"
    shutil.copytree(FIXTURES / "codex", source)
    store = tmp_path / "store"
    result = run_cli("import", "--from", "codex", "--source", str(source), "--store", str(store), "--json")
    assert result.exit_code in (0, 4), result.stdout
    journals = sorted(store.rglob("codex-*.jsonl"))
    assert journals
    for journal in journals:
        whole = scan_journal(journal, "levelcode", checkpoint=True)
        assert "raw" in whole.facts.meta  # (a Codex journal's meta carries its rollout's session_meta row)
        lean = lean_scan(whole)
        assert "raw" not in lean.facts.meta and b"raw" not in lean.resume_state[0]
        assert len(pickle.dumps(lean)) < len(pickle.dumps(whole))
        assert read_back(journal)[0] == lean and read_back(journal)[0].resume_state == lean.resume_state
        entries = []
        for scan in (whole, lean):
            memo = IncrementalCache(False, root=tmp_path / f"memo-{len(entries)}", lean=True)
            info = journal.stat()
            stamp = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
            memo.remember_scan(journal.parent, journal, scan, stamp, 0)
            memo.save()
            entries.append([path.read_bytes() for path in sorted((tmp_path / f"memo-{len(entries)}").glob("*.json"))])
        assert entries[0] == entries[1]
