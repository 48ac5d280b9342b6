"""import --from copilot reads only the logs that changed (issue 27): each session log is a unit of
its own, so a re-import of an unchanged ``~/.copilot`` reads nothing, and one after a single
session grew reads that one; with ``--jobs 2`` the journals are byte for byte the serial ones,
a session folder copied under another name still making one journal (its copy after it); and
doctor's count is import's."""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.test_copilot import copilot_session, encode, events
from toolkit.importers import copilot


def _home(tmp_path: Path, sessions: int = 6) -> tuple[Path, list[str]]:
    home, cwd = tmp_path / ".copilot", tmp_path / "app"
    cwd.mkdir()
    sids = [f"0d7f5c3a-9b1e-4c2d-8e6f-{n:012x}" for n in range(sessions)]
    for sid in sids:
        copilot_session(home, sid, cwd)
    return home, sids


def _import(home: Path, store: Path, *more: str) -> dict:
    result = run_cli("import", "--from", "copilot", "--source", str(home), "--store", str(store), "--json", *more)
    assert result.exit_code == 0, result.output
    return result.json


def _journals(store: Path) -> dict[str, Path]:
    return {p.name: p for p in store.rglob("*.jsonl") if ".levelsess" not in p.parts}


def test_a_re_import_reads_only_the_log_that_grew(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home, sids = _home(tmp_path)
    store, full = tmp_path / "store", tmp_path / "full"  # full: each import a --reread, the journals to match
    first = _import(home, store)
    _import(home, full, "--reread")
    assert first["read"] == 6 and {s["status"] for s in first["sessions"]} == {"created"}
    again = _import(home, store)
    assert again["read"] == 0 and again["from_cache"] == 6 and {s["status"] for s in again["sessions"]} == {"unchanged"}
    log = home / "session-state" / sids[2] / "events.jsonl"
    more = events(sids[2], tmp_path / "app")[-1:]
    more[0]["id"], more[0]["timestamp"] = "00000000-0000-0000-0000-0000000000ff", "2026-01-10T10:00:00.000Z"
    with open(log, "ab") as out:
        out.write(encode(more))
    grown = _import(home, store)
    assert grown["read"] == 1 and grown["from_cache"] == 5
    assert [s["status"] for s in grown["sessions"]] == ["unchanged", "unchanged", "updated", "unchanged", "unchanged", "unchanged"]
    _import(home, full, "--reread")
    a, b = _journals(store), _journals(full)
    assert a.keys() == b.keys() and all(filecmp.cmp(a[name], b[name], shallow=False) for name in a)
    (home / "session-state" / sids[4] / "workspace.yaml").write_text("id: x\ncwd: /elsewhere\n")  # what names it changed
    assert _import(home, store)["read"] == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="import --jobs forks its workers")
def test_two_workers_write_the_serial_journals_a_copied_folder_after_its_original(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    home, sids = _home(tmp_path, sessions=8)
    copy = home / "session-state" / "zz-copy-of-first"
    shutil.copytree(home / "session-state" / sids[0], copy)
    with open(copy / "events.jsonl", "ab") as out:  # the copy went on: it holds one event more
        extra = events(sids[0], tmp_path / "app")[-1:]
        extra[0]["id"], extra[0]["timestamp"] = "00000000-0000-0000-0000-0000000000fe", "2026-01-10T11:00:00.000Z"
        out.write(encode(extra))
    units = copilot.units(home, lambda finding: None)
    keys = [copilot.unit_key(unit) for unit in units]
    assert keys.count(sids[0].lower()) == 2 and len(set(keys)) == 8
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    one = _import(home, serial, "--jobs", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-2"))
    two = _import(home, parallel, "--jobs", "2")
    assert [(s["id"], s["status"]) for s in one["sessions"]] == [(s["id"], s["status"]) for s in two["sessions"]]
    assert [s["status"] for s in one["sessions"]].count("updated") == 1  # the copy extends its original's journal
    a, b = _journals(serial), _journals(parallel)
    assert a.keys() == b.keys() and len(a) == 8
    assert all(filecmp.cmp(a[name], b[name], shallow=False) for name in a)


def test_a_log_whose_first_line_is_not_its_start_is_keyed_by_the_start_it_holds(tmp_path):
    home, cwd = tmp_path / ".copilot", tmp_path / "app"
    objects = events("5e55c0de-0000-4000-8000-000000000001", cwd)
    log = copilot_session(home, "renamed-folder", cwd, objects=[objects[1], objects[0], *objects[2:]])
    (log.parent / "workspace.yaml").unlink()
    [unit] = copilot.units(home, lambda finding: None)
    assert copilot.unit_key(unit) == "5e55c0de-0000-4000-8000-000000000001"
    bare = copilot_session(home, "AnotherFolder", cwd, objects=objects[1:2])  # no start at all, no workspace.yaml id
    (bare.parent / "workspace.yaml").write_text("cwd: /x\n")
    assert copilot.unit_key(next(u for u in copilot.units(home, lambda f: None) if u.handle == bare)) == "anotherfolder"


def test_doctor_counts_what_import_writes(tmp_path, monkeypatch):
    home, _sids = _home(tmp_path, sessions=3)
    monkeypatch.setenv("HOME", str(tmp_path))
    from toolkit.counts import count_import

    count = count_import("copilot", home, jobs=2)
    result = _import(home, tmp_path / "store")
    assert count.sessions == 3 and count.ids == [s["id"] for s in result["sessions"]]
