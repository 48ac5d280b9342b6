"""A Gemini CLI import keeps the listing of its source too, and the next one uses it only while
listing again would find the same units (issue 27: toolkit/importers/gemini_units.py's
``units_from``, as test_kept_listing.py for Claude Code).  Every change a Gemini folder sees (a new
session, project, chats/ folder, subagent folder, legacy ``.json``; one removed, a project renamed,
a stray file) is compared with a listing made afresh: the units, and what an import says."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from tests.helpers import run_cli
from tests.importers.kept_listing_kit import imports_alike, walk_changes
from tests.layouts.gemini import ROOT, every_kind, gemini, gemini_home, line, meta, name, user
from toolkit.importers import gemini_units as importer  # (the importer as --from gemini loads it: its listing)
from toolkit.layouts import base

_FRESH = itertools.count()


def _sid() -> str:
    return f"{next(_FRESH):08x}-5f60-4a71-8b92-a3b4c5d6e7f8"


def _session(sid: str) -> bytes:
    return b"".join(map(line, [meta(sid), user(f"u-{sid}", "hello"), gemini(f"g-{sid}", "hi")]))


def _as_read(units: list) -> list[tuple]:
    """What a unit is to an import: its key, its files' and deps' names, and the file it reads (a
    kept listing's unit holds its name, made a path when read)."""
    return [(unit.key, tuple(map(str, unit.files)), tuple(map(str, unit.deps)), str(importer.handle_path(unit)))
            for unit in units]


def _change(kind: str, pick: int, home: Path) -> None:
    """One change to the folder; all but "grow", "stray-home" and "none" change what a listing finds (or may)."""
    projects = sorted(p for p in (home / "tmp").iterdir() if p.is_dir())
    project = projects[pick % len(projects)]
    sessions = sorted(home.glob("tmp/*/chats/session-*.json*"))
    sid = _sid()
    if kind == "grow" and sessions:
        with open(sessions[pick % len(sessions)], "ab") as out:
            out.write(line({"$set": {"lastUpdated": "2026-08-21T17:00:00.000Z"}}))
    elif kind == "new-session":
        (project / "chats").mkdir(exist_ok=True)
        (project / "chats" / name(sid)).write_bytes(_session(sid))
    elif kind == "new-project":
        chats = home / "tmp" / f"other-{pick}" / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        (chats.parent / ".project_root").write_text(ROOT + f"-{pick}")
        (chats / name(sid)).write_bytes(_session(sid))
    elif kind == "project-without-chats":  # a project folder Gemini CLI made before any session was saved
        (home / "tmp" / f"empty-{pick}").mkdir(exist_ok=True)
    elif kind == "chats-made":  # ... whose chats/ comes later, with a session
        empty = sorted((home / "tmp").glob("empty-*"))
        if empty:
            (empty[0] / "chats").mkdir(exist_ok=True)
            (empty[0] / "chats" / name(sid)).write_bytes(_session(sid))
    elif kind == "subagent" and sessions:  # chats/<sessionId>/<subagent>.jsonl
        folder = sessions[pick % len(sessions)].parent / f"parent-{pick}"
        folder.mkdir(exist_ok=True)
        (folder / f"{sid}.jsonl").write_bytes(_session(sid))
    elif kind == "legacy":
        (project / "chats").mkdir(exist_ok=True)
        (project / "chats" / name(sid).replace(".jsonl", ".json")).write_text(
            orjson.dumps({**meta(sid), "messages": [user(f"u-{sid}", "old")]}).decode())
    elif kind == "remove" and sessions:
        sessions[pick % len(sessions)].unlink()
    elif kind == "rename-project":
        project.rename(project.with_name(project.name + "-moved"))
    elif kind == "stray" and (project / "chats").is_dir():  # a file no listing counts: its folder changed, the units did not
        (project / "chats" / f"notes-{pick}.txt").write_text("x")
    elif kind == "stray-home":  # beside tmp/: the home changed, the listing did not
        (home / f"notes-{pick}.txt").write_text("x")


KINDS = ["none", "grow", "new-session", "new-project", "project-without-chats", "chats-made", "subagent", "legacy", "remove",
         "rename-project", "stray", "stray-home"]


@pytest.fixture
def settled(monkeypatch):
    """Nothing is too recent to keep: the listing kept is what these tests test."""
    monkeypatch.setattr(base, "RACY_NS", 0)


def _home(root: Path) -> Path:
    return gemini_home(root, {name(): every_kind(), f"{_sid()}/sub.jsonl": _session(_sid())})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 10 ** 6)), min_size=1, max_size=4))
@example([("project-without-chats", 0), ("chats-made", 0)])  # a project's chats/ made after the listing
@example([("subagent", 0), ("subagent", 0)])  # a subagent folder, then another file in it
def test_a_kept_listing_gives_the_units_a_listing_finds(tmp_path_factory, settled, changes):
    walk_changes(importer, _home(tmp_path_factory.mktemp("listing")), changes, _change, _as_read)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "none"])
def test_after_each_change_a_kept_listing_imports_what_a_fresh_one_does(tmp_path, settled, monkeypatch, kind):
    home, store, full = _home(tmp_path / "a"), tmp_path / "store", tmp_path / "full"
    _change("project-without-chats", 1, home)  # (so that "chats-made" has a project to make its chats/ in)
    first = run_cli("import", "--from", "gemini", "--source", home, "--store", store, "--json").json
    run_cli("import", "--from", "gemini", "--source", home, "--store", full, "--json")
    calls = []
    listing = importer.source_files
    monkeypatch.setattr(importer, "source_files", lambda *a: calls.append(a) or listing(*a))
    again = run_cli("import", "--from", "gemini", "--source", home, "--store", store, "--json").json
    assert calls == [] and again["read"] == 0 and again["from_cache"] == len(first["sessions"]) > 0, "nothing changed: nothing listed"
    imports_alike("gemini", home, store, full, lambda: _change(kind, 3, home))
