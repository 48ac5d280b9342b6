"""reindex: caches rebuilt from journals, atomically, in the version the journals call for."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT_SLUG, logician_session, make_store, run_cli, session_records, snapshot, write_journal
from toolkit.schema import document_errors


def test_v2_journals_get_a_v2_index_that_matches_the_schema(tmp_path):
    store = make_store(tmp_path, sessions=3, v=2)
    result = run_cli("reindex", "--json", store)
    assert result.exit_code == 0 and len(result.json["written"]) == 1
    index = orjson.loads((store / PROJECT_SLUG / "index.json").read_bytes())
    assert index["v"] == 2 and document_errors("index-v2", index) == []
    first = index["sessions"][-1]
    assert first["turns"] == 2 and first["title"] == "Refunds" and first["model"] == "claude-sonnet"
    assert first["preview"] == "question 0 about refunds"
    assert [s["updatedAt"] for s in index["sessions"]] == sorted((s["updatedAt"] for s in index["sessions"]), reverse=True)
    sizes = {p.stem: p.stat().st_size for p in (store / PROJECT_SLUG).glob("*.jsonl")}
    assert {s["id"]: s["bytes"] for s in index["sessions"]} == sizes


def test_v1_journals_get_a_bare_list_of_seed_fields(tmp_path):
    store = make_store(tmp_path, sessions=2, v=1)
    run_cli("reindex", store)
    index = orjson.loads((store / PROJECT_SLUG / "index.json").read_bytes())
    assert isinstance(index, list) and document_errors("index-v1", index) == []
    assert set(index[0]) == {"id", "title", "createdAt", "updatedAt", "turns", "model", "preview"}


def test_pin_and_archive_events_last_one_wins(tmp_path):
    records = session_records(turns=1)
    records += [{"kind": "event", "t": "2026-11-30T10:00:00Z", "type": "pin", "seq": len(records)},
                {"kind": "event", "t": "2026-11-30T10:01:00Z", "type": "archive", "seq": len(records) + 1},
                {"kind": "event", "t": "2026-11-30T10:02:00Z", "type": "unpin", "seq": len(records) + 2}]
    write_journal(tmp_path / PROJECT_SLUG / "a.jsonl", records)
    run_cli("reindex", tmp_path)
    entry = orjson.loads((tmp_path / PROJECT_SLUG / "index.json").read_bytes())["sessions"][0]
    assert (entry["pinned"], entry["archived"], entry["updatedAt"]) == (False, True, "2026-11-30T10:02:00Z")


def test_check_reports_drift_then_rebuild_is_idempotent(tmp_path):
    store = make_store(tmp_path, sessions=2)
    assert run_cli("reindex", "--check", store).exit_code == 4
    assert not (store / PROJECT_SLUG / "index.json").exists()
    assert run_cli("reindex", store).exit_code == 0
    assert run_cli("reindex", "--check", "--full", store).exit_code == 0
    before = snapshot(store)
    assert run_cli("reindex", "--full", store).exit_code == 0
    assert snapshot(store) == before, "an unchanged index is not rewritten"


def test_stat_skip_notices_an_append(tmp_path):
    store = make_store(tmp_path, sessions=1)
    run_cli("reindex", store)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    index = store / PROJECT_SLUG / "index.json"
    os.utime(index, (1, 1))  # an index older than its journal is never trusted
    with open(journal, "ab") as handle:
        handle.write(orjson.dumps({"kind": "user", "t": "2026-12-01T00:00:00Z", "content": "more", "seq": 9}) + b"\n")
    run_cli("reindex", store)
    assert orjson.loads(index.read_bytes())["sessions"][0]["turns"] == 3


def test_future_version_folder_is_refused_and_left_alone(tmp_path):
    store = make_store(tmp_path, sessions=1)
    write_journal(store / PROJECT_SLUG / "future.jsonl", [{"kind": "meta", "v": 99, "id": "future"}])
    result = run_cli("reindex", "--json", store)
    assert result.exit_code == 4 and result.json["refused"]
    assert not (store / PROJECT_SLUG / "index.json").exists()


def test_logician_meta_is_rebuilt_and_keeps_what_it_cannot_derive(tmp_path):
    session = logician_session(tmp_path / "ws")
    (session / "meta.json").write_bytes(orjson.dumps({"formatVersion": 1, "name": "My chat", "workspace": "/w",
                                                      "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "x",
                                                      "entryCount": 1, "parentSession": None, "activeLeaf": "e1",
                                                      "custom": 7}))
    run_cli("reindex", tmp_path / "ws")
    meta = orjson.loads((session / "meta.json").read_bytes())
    assert meta == {"formatVersion": 1, "name": "My chat", "workspace": "/w", "createdAt": "2026-01-01T00:00:00Z",
                    "updatedAt": "2026-11-30T12:00:05Z", "entryCount": 2, "parentSession": None, "activeLeaf": "e1",
                    "custom": 7}
    assert document_errors("logician-meta", meta) == []


def test_logician_missing_meta_is_derived(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    run_cli("reindex", ws)
    meta = orjson.loads((session / "meta.json").read_bytes())
    assert meta["workspace"] == str(ws) and meta["createdAt"] == "2026-11-30T12:00:00Z"
    assert meta["activeLeaf"] == "e2" and meta["entryCount"] == 2 and meta["name"] is None


def test_reindex_removes_its_own_dead_temp_file(tmp_path):
    import subprocess
    import sys

    from tests.helpers import PROJECT_SLUG, make_store

    store = make_store(tmp_path / "store", sessions=1)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    temp = store / PROJECT_SLUG / f".index.json.{child.pid}.tmp"
    temp.write_bytes(b'{"v":2,"sess')  # a reindex killed before its rename
    result = run_cli("reindex", "--json", store)
    assert not temp.exists() and ("leftover-temp", True) in {(f["code"], f["repaired"]) for f in result.json["findings"]}


def test_strict_and_plain_checks_agree_on_the_index(tmp_path):
    from tests.helpers import PROJECT_SLUG, make_store

    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join(lines[:2] + [b""] + lines[2:]))  # a blank line: a warning only
    assert run_cli("reindex", "--store", store).exit_code == 0
    strict = run_cli("fsck", "--strict", "--json", "--store", store)
    assert "stale-index" not in {f["code"] for f in strict.json["findings"]}
    assert run_cli("fsck", "--strict", "--repair", "--store", store).exit_code in (4,)
    assert run_cli("reindex", "--check", "--store", store).exit_code == 0
    assert run_cli("ls", "--json", "--store", store).json["sessions"][0]["state"] == "clean"


NOT_JOURNALS = {"text": b"# notes\nhello\n", "json-of-another-shape": b'{"a":1}\n{"b":2}\n', "binary": bytes(range(256)) * 2,
                "cursor-transcript": b'{"role":"user","message":{"content":[{"type":"text","text":"hi"}]}}\n'}


@pytest.mark.parametrize("shape", sorted(NOT_JOURNALS))
@pytest.mark.parametrize("beside", [False, True], ids=["alone", "beside-a-journal"])
def test_reindex_of_a_file_that_is_not_a_journal_is_fscks_exit_8_and_line(tmp_path, shape, beside):
    store = make_store(tmp_path / "store", sessions=1) if beside else tmp_path / "store"
    path = write_journal(store / PROJECT_SLUG / "notes.jsonl", NOT_JOURNALS[shape])
    before = snapshot(store)
    fsck = run_cli("fsck", path)
    assert fsck.exit_code == 8 and "Traceback" not in fsck.stderr
    for args in ((), ("--check",), ("--full",)):
        result = run_cli("reindex", path, *args)
        assert result.exit_code == 8, (args, result.stdout, result.stderr)
        assert result.stderr.splitlines()[0] == fsck.stderr.splitlines()[0], result.stderr
        assert result.stdout == "", result.stdout  # one line on stderr, no findings table
    scripted = run_cli("reindex", path, "--json")
    assert scripted.exit_code == 8 and scripted.json["exit"] == 8 and scripted.json["error"]["type"] == "UnknownFormatError"
    assert snapshot(store) == before  # nothing written beside it, not even its neighbours' index


def test_reindex_of_a_journal_and_a_file_that_is_not_one_refuses_that_folder(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    journal = next(store.glob("*/*.jsonl"))
    notes = write_journal(store / PROJECT_SLUG / "notes.jsonl", NOT_JOURNALS["text"])
    result = run_cli("reindex", journal, notes, "--json")
    assert result.exit_code == 4 and [f["code"] for f in result.json["findings"]] == ["unknown-format"]


def _store_of_many_folders(root):
    """Folders of every fate a reindex gives: written, current (vouched), refused (a future schema,
    a file of another tool), and a journal in a folder that is a symlink, among plain ones."""
    for n in range(9):
        sid = f"2026-11-30T09-00-0{n}-a1b{n}"
        write_journal(root / f"-home-ada-p{n}" / f"{sid}.jsonl", session_records(sid, turns=1 + n % 3))
    write_journal(root / "-home-ada-future" / "s.jsonl", b'{"kind":"meta","v":9,"id":"s","project":"/p","createdAt":"t"}\n')
    write_journal(root / "-home-ada-foreign" / "s.jsonl", b'{"type":"summary","summary":"x","leafUuid":"u"}\n')
    real = root.parent / "elsewhere" / "-home-ada-linked"
    write_journal(real / "s.jsonl", session_records("s"))
    (root / "-home-ada-linked").symlink_to(real)
    return root


def _reindexed(store, monkeypatch, *, alone: bool):
    """Reindex ``store`` (two of its journals grown since a first pass): its result, as JSON with
    the root replaced, and every index (but its time).  ``alone``: each new index written on its own."""
    import toolkit.reindex as reindex_module
    from toolkit import durable
    from toolkit.stores import discover_all

    run_cli("reindex", "--store", store, "-q")  # (a first pass: some folders are current for the second)
    for n in (0, 4):
        journal = next((store / f"-home-ada-p{n}").glob("*.jsonl"))
        with open(journal, "ab") as handle:
            handle.write(orjson.dumps({"kind": "user", "t": "2026-11-30T10:00:00Z", "content": "one more", "seq": 99}) + b"\n")
    batches = []
    real = durable.atomic_writes
    monkeypatch.setattr(durable, "atomic_writes", lambda items, *a, **k: (batches.append(len(items)), real(items, *a, **k))[1])
    if alone:
        each = reindex_module._write_indexes
        monkeypatch.setattr(reindex_module, "_write_indexes", lambda writes: [each([write]) for write in writes])
    result = reindex_module.reindex(discover_all([store]))
    monkeypatch.undo()
    caches = {str(p.relative_to(store)): {**orjson.loads(p.read_bytes()), "generatedAt": None}
              for p in sorted(store.rglob("index.json"))}
    said = orjson.dumps(result.to_json()).replace(str(store.parent).encode(), b"ROOT")  # (the link's target too)
    return orjson.loads(said), caches, batches


def test_indexes_written_together_give_what_one_at_a_time_gives(tmp_path, monkeypatch):
    """A reindex writes its folders' new indexes together, then their fingerprints together: the
    result (its order, every finding), the indexes and what the next run trusts are those of one
    folder after another."""
    from toolkit.stores import discover_all
    from toolkit.verified import trusted_index

    together = _reindexed(_store_of_many_folders(tmp_path / "a" / "store"), monkeypatch, alone=False)
    alone = _reindexed(_store_of_many_folders(tmp_path / "b" / "store"), monkeypatch, alone=True)
    assert together[:2] == alone[:2]
    assert together[0]["refused"] and together[0]["written"] and together[0]["unchanged"]
    assert together[2] == [2, 2] and alone[2] == [2]  # (the two grown folders' indexes, then their fingerprints)
    for root in (tmp_path / "a" / "store", tmp_path / "b" / "store"):
        folders = [f for f in discover_all([root]) if f.path.name.startswith("-home-ada-p")]
        assert len(folders) == 9 and all(trusted_index(folder) is not None for folder in folders)  # every one vouched for


@pytest.mark.parametrize("bound", [1, 2, 3, 5, 10_000])
def test_indexes_held_to_be_written_together_hold_so_many_scans_at_most(tmp_path, monkeypatch, bound):
    """The new indexes held to be written together are written as soon as the scans they hold reach
    SCANS_AT_ONCE (a scan is some 3 kB held: 8,000 journals in 40 folders held all 8,000): each batch
    holds fewer than the bound before its last folder, and the indexes, the result and what the next
    run trusts are those of one batch of every folder."""
    import toolkit.reindex as reindex_module
    from toolkit.stores import discover_all
    from toolkit.verified import trusted_index

    journals = [1, 3, 2, 1, 2, 1]  # a folder's journals
    results = {}
    for name, at_once in (("bounded", bound), ("whole", 10**9)):
        store = tmp_path / name
        for n, count in enumerate(journals):
            for k in range(count):
                sid = f"2026-11-30T09-0{k}-0{n}-a1b{n}"
                write_journal(store / f"-home-ada-p{n}" / f"{sid}.jsonl", session_records(sid, turns=1 + (n + k) % 3))
        batches, real = [], reindex_module._write_indexes
        monkeypatch.setattr(reindex_module, "SCANS_AT_ONCE", at_once)
        monkeypatch.setattr(reindex_module, "_write_indexes", lambda writes: (batches.append([w.held for w in writes]), real(writes)))
        result = reindex_module.reindex(sorted(discover_all([store]), key=lambda folder: folder.path.name))
        monkeypatch.undo()
        batches = [batch for batch in batches if batch]
        assert sum(batches, []) == journals  # every folder's index, in order, each holding its journals' scans
        if name == "bounded":
            assert all(sum(batch[:-1]) < bound and (sum(batch) >= bound or batch is batches[-1]) for batch in batches)
        else:
            assert batches == [journals]
        caches = {str(p.relative_to(store)): {**orjson.loads(p.read_bytes()), "generatedAt": None} for p in sorted(store.rglob("index.json"))}
        said = orjson.dumps(result.to_json()).replace(str(store).encode(), b"STORE")
        assert all(trusted_index(folder) is not None for folder in discover_all([store]))
        results[name] = (orjson.loads(said), caches)
    assert results["bounded"] == results["whole"]


def test_an_index_that_cannot_be_written_is_that_folders_finding_and_the_others_are_written(tmp_path, monkeypatch):
    """One folder's index cannot be put in place (its rename fails: a full disk, a file the user holds
    open on Windows): written together they fail, so each is written alone; that folder is refused
    with its finding and keeps no temp file, every other is written and trusted next time."""
    from toolkit.stores import discover_all
    from toolkit.verified import trusted_index

    store = tmp_path / "store"
    for n in range(4):
        sid = f"2026-11-30T09-00-0{n}-a1b{n}"
        write_journal(store / f"-home-ada-p{n}" / f"{sid}.jsonl", session_records(sid, turns=1 + n))
    refused = store / "-home-ada-p2" / "index.json"
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst) == refused:
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    result = run_cli("reindex", "--store", store, "--json")
    monkeypatch.undo()
    assert [Path(p).parent.name for p in result.json["refused"]] == ["-home-ada-p2"]
    assert sorted(Path(p).parent.name for p in result.json["written"]) == ["-home-ada-p0", "-home-ada-p1", "-home-ada-p3"]
    assert [(f["code"], Path(f["path"])) for f in result.json["findings"]] == [("unreadable", refused)]
    assert "disk is full" in result.json["findings"][0]["message"] or "space" in result.json["findings"][0]["message"]
    assert result.exit_code & 4 and not refused.exists() and not any(store.rglob(".*.tmp"))
    folders = {f.path.name: f for f in discover_all([store])}
    assert all(trusted_index(folders[f"-home-ada-p{n}"]) is not None for n in (0, 1, 3))
    assert run_cli("reindex", "--store", store, "--json").json["written"] == [str(refused)]  # (room again: it is written)


def test_a_reindex_stopped_midway_still_writes_the_indexes_it_derived(tmp_path, monkeypatch):
    """Ctrl-C (or a bug) in the third folder: the two indexes derived before it, held to be written
    together, are written before it stops; the third and those after it are not touched."""
    import toolkit.reindex as reindex_module
    from toolkit.stores import discover_all

    store = tmp_path / "store"
    for n in range(5):
        sid = f"2026-11-30T09-00-0{n}-a1b{n}"
        write_journal(store / f"-home-ada-p{n}" / f"{sid}.jsonl", session_records(sid, turns=1 + n))
    folders = sorted(discover_all([store]), key=lambda folder: folder.path.name)
    real, seen = reindex_module._one, []

    def one(folder, *args):
        seen.append(folder.path.name)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return real(folder, *args)

    monkeypatch.setattr(reindex_module, "_one", one)
    with pytest.raises(KeyboardInterrupt):
        reindex_module.reindex(folders)
    assert [f.path.name for f in folders if (f.path / "index.json").exists()] == seen[:2]
    assert not any(store.rglob(".*.tmp"))
