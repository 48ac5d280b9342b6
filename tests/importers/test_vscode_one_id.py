"""VS Code: one session id is one journal (issue 23 item 3).  Importing the orphans, then again
with ``--map OLD=NEW``, extends the journals already there instead of storing every session twice;
``show`` of a store an older import doubled reads the most recent copy and says so; a
``chatSessions/<uuid>.json`` without ``sessionId`` is ``vscode-<uuid>``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import run_cli
from tests.importers.vscode_tree import build_tree, session


def _import(*args) -> dict:
    result = run_cli("import", "--from", "vscode", *map(str, args), "--json")
    assert "Traceback" not in result.stdout + result.stderr
    return result.json


def test_orphans_then_mapped_are_one_journal_per_session(tmp_path):
    tree = build_tree(tmp_path / "home")
    store = tmp_path / "store"
    first = _import("--source", tree["user"], "--store", store, "--orphans-only")
    old = tree["expect"]["s-renamed"]["project"]
    new = old.replace("old-name", "new-name")
    mapped = _import("--source", tree["user"], "--store", store, "--map", f"{old}={new}")
    journals = sorted(p.name for p in store.rglob("*.jsonl"))
    assert len(journals) == len(set(journals)), "no session stored twice"
    paths = {s["id"]: s["path"] for s in first["sessions"]}
    for s in mapped["sessions"]:
        if s["id"] in paths:
            assert s["path"] == paths[s["id"]] and s["status"] in ("unchanged", "updated")
    shown = run_cli("show", "vscode-s-renamed", "--store", store)
    assert shown.exit_code == 0 and "matches" not in shown.stderr


def test_show_reads_the_current_copy_of_a_store_an_older_import_doubled(tmp_path):
    tree = build_tree(tmp_path / "home")
    store = tmp_path / "store"
    report = _import("--source", tree["user"], "--store", store)
    kept = Path(next(s["path"] for s in report["sessions"] if s["id"] == "vscode-s-renamed"))
    twin = store / "-elsewhere" / kept.name  # what an older import left: the same id in a second folder
    twin.parent.mkdir()
    shutil.copyfile(kept, twin)
    shown = run_cli("show", "vscode-s-renamed", "--store", store)
    assert shown.exit_code == 0, shown.stderr
    assert "matches" not in shown.stderr and "2 journals hold session vscode-s-renamed" in shown.stderr
    listed = run_cli("export", "vscode-s-renamed", "--store", store, "--format", "json")
    assert listed.exit_code == 0 and json.loads(listed.stdout)["meta"]["id"] == "vscode-s-renamed"
    ls = run_cli("ls", "--store", store, "--json")
    rows = [r for r in ls.json["sessions"] if r["id"] == "vscode-s-renamed"]
    assert len(rows) == 1 and len(rows[0]["copies"]) == 1, "ls lists one session per id, naming the other copy"
    assert ls.json["total"] == len(report["sessions"]), "ls counts what import wrote, once each"
    human = run_cli("ls", "--store", store)
    assert "older import's copy" in human.stdout + human.stderr


def test_a_session_file_without_session_id_is_named_by_its_stem(tmp_path):
    tree = build_tree(tmp_path / "home")
    folder = next(tree["user"].rglob("chatSessions"))
    state = session("ignored", ["a prompt kept by its file name"])
    del state["sessionId"]
    state.pop("version", None)
    stem = "0b5a7c9e-1111-4222-8333-444455556666"
    (folder / f"{stem}.json").write_text(json.dumps(state))
    before = (folder / f"{stem}.json").read_bytes()
    report = _import("--source", tree["user"], "--store", tmp_path / "store")
    assert f"vscode-{stem}" in {s["id"] for s in report["sessions"]}
    assert (folder / f"{stem}.json").read_bytes() == before


def test_a_log_with_entries_run_together_imports_with_a_source_joined_finding(tmp_path):
    tree = build_tree(tmp_path / "home")
    log = next(p for p in tree["user"].rglob("chatSessions/*.jsonl") if p.stem == "s-mut")
    lines = log.read_bytes().split(b"\n")
    lines[2:4] = [lines[2] + lines[3]]
    log.write_bytes(b"\n".join(lines))
    before = log.read_bytes()
    report = _import("--source", tree["user"], "--store", tmp_path / "store")
    joined = [f for f in report["findings"] if f["code"] == "source-joined"]
    assert len(joined) == 1 and joined[0]["line"] == 3 and Path(joined[0]["path"]) == log
    assert log.read_bytes() == before
    (mut,) = [s for s in report["sessions"] if s["id"] == "vscode-s-mut"]
    assert mut["source_items"] == mut["converted"] + mut["merged"] + sum(mut["skipped"].values())
    assert "editor-unreadable" in mut["orphan"]
