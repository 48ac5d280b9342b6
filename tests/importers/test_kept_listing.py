"""An import keeps the listing of its source, and the next one uses it only while listing again
would find the same units (issue 27, toolkit/importers/unchanged.py: list_units).

A Claude Code tree of a few hundred project folders took longer to list than to stamp: the next
import stats the folders the last listing looked in (and the files it sniffed) instead.  Every
test here compares with a listing made afresh: the units, and what an import says and writes.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from tests.helpers import run_cli
from tests.importers.kept_listing_kit import imports_alike, walk_changes
from tests.restore.kit import CLAUDE
from toolkit.importers import claude_units as claude  # (the importer as --from claude loads it: its listing)
from toolkit.importers.unchanged import Kept, list_units, stamps, units_of
from toolkit.layouts import base

if CLAUDE is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)

BIG = ("-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo",)  # the fixture's largest project: not needed here
NEW = "0bb1b6e8-0000-4000-8000-0000000{:05d}"
_FRESH = itertools.count()


def _as_read(units: list) -> list[tuple]:
    """What a unit is to an import: its key, its files' and deps' names, and its handle unpacked (a
    kept listing's units keep the names as strings and make their paths when first unpacked)."""
    return [(unit.key, tuple(map(str, unit.files)), tuple(map(str, unit.deps)), tuple(unit.handle)) for unit in units]


def _tree(root: Path) -> Path:
    shutil.copytree(CLAUDE, root, ignore=lambda folder, names: [n for n in names if n in BIG])
    return root


def _mains(source: Path) -> list[Path]:
    return sorted(p for p in (source / "projects").glob("*/*.jsonl"))


def _change(kind: str, pick: int, source: Path) -> None:
    """One change to the tree; all but "grow" and "none" change what a listing finds (or may)."""
    mains = _mains(source)
    main = mains[pick % len(mains)] if mains else None
    projects = sorted(p for p in (source / "projects").iterdir() if p.is_dir())
    new = NEW.format(next(_FRESH))
    if kind == "grow" and main is not None:
        with open(main, "ab") as handle:
            handle.write(main.read_bytes().splitlines(keepends=True)[-1])
    elif kind == "new-project" and main is not None:
        folder = source / "projects" / f"-home-new-{pick}"
        folder.mkdir(exist_ok=True)
        shutil.copyfile(main, folder / f"{new}.jsonl")
    elif kind == "new-transcript" and main is not None:
        shutil.copyfile(main, main.parent / f"{new}.jsonl")
    elif kind == "session-folder" and main is not None:  # (Claude Code makes one for a session's tool results)
        (main.parent / main.stem).mkdir(exist_ok=True)
    elif kind == "new-subagent" and main is not None:  # a session gets one (its folder made now, or there already)
        agents = main.parent / main.stem / "subagents"
        agents.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(main, agents / f"agent-a{next(_FRESH)}.jsonl")
    elif kind == "remove" and main is not None:
        main.unlink()
    elif kind == "rename-project" and projects:
        folder = projects[pick % len(projects)]
        folder.rename(folder.with_name(folder.name + "-moved"))
    elif kind == "remove-subagents":
        for agents in sorted((source / "projects").glob("*/*/subagents"))[:1]:
            shutil.rmtree(agents)
    elif kind == "stray" and projects:  # a file no listing counts: its folder changed, the units did not
        (projects[pick % len(projects)] / f"notes-{pick}.txt").write_text("x")


KINDS = ["none", "grow", "new-project", "new-transcript", "session-folder", "new-subagent", "remove", "rename-project", "remove-subagents",
         "stray"]


def _quiet(_finding) -> None:
    return None


@pytest.fixture
def settled(monkeypatch):
    """Nothing is too recent to keep: the tests change a folder long (many clock ticks) after an
    import looked at it, and the listing kept is what they test."""
    monkeypatch.setattr(base, "RACY_NS", 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 10 ** 6)), min_size=1, max_size=4))
@example([("session-folder", 0), ("new-subagent", 0), ("new-subagent", 0)])  # the session folder, then its subagents/ in it
@example([("new-subagent", 0), ("remove", 0), ("none", 0)])  # a session's subagents whose transcript is gone
def test_a_kept_listing_gives_the_units_a_listing_finds(tmp_path_factory, settled, changes):
    walk_changes(claude, _tree(tmp_path_factory.mktemp("listing") / ".claude"), changes, _change, _as_read)


def test_an_import_that_finds_nothing_new_lists_no_folder(tmp_path, settled, monkeypatch):
    source, store = _tree(tmp_path / ".claude"), tmp_path / "store"
    first = run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json").json
    calls = []
    listing = claude.units
    monkeypatch.setattr(claude, "units", lambda *a: calls.append(a) or listing(*a))
    again = run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json").json
    assert calls == [] and again["from_cache"] == len(first["sessions"]) > 0
    _change("new-transcript", 1, source)
    grown = run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json").json
    assert len(calls) == 1, "a transcript was added: the tree is listed"
    assert len(grown["sessions"]) == len(first["sessions"]) + 1
    assert [s["status"] for s in grown["sessions"]].count("created") == 1


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "none"])
def test_after_each_change_a_kept_listing_imports_what_a_fresh_one_does(tmp_path, settled, kind):
    source, store, full = _tree(tmp_path / ".claude"), tmp_path / "store", tmp_path / "full"
    run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json")
    run_cli("import", "--from", "claude", "--source", source, "--store", full, "--json")
    imports_alike("claude", source, store, full, lambda: _change(kind, 3, source))


def test_what_changed_in_the_last_seconds_is_not_kept(tmp_path, monkeypatch):
    """A folder changed within the window may change again in the same tick of its clock, which its
    mtime would not show: the listing is made again next time."""
    source = _tree(tmp_path / ".claude")
    monkeypatch.setattr(base, "RACY_NS", 10 ** 18)
    units, _stamped, listing, _listed = list_units(claude, source, _quiet, Kept(None, set()))
    assert units and listing is None


def test_a_listing_that_reported_a_finding_or_a_damaged_kept_one(tmp_path, settled, monkeypatch):
    source = _tree(tmp_path / ".claude")
    kept = Kept(None, set())
    found = []
    real = claude.units

    def unreadable(src, report):
        report("a folder it could not read")
        return real(src, report)
    monkeypatch.setattr(claude, "units", unreadable)
    assert list_units(claude, source, found.append, kept)[2] is None, "said again next time: listed again"
    assert found == ["a folder it could not read"]
    monkeypatch.setattr(claude, "units", real)
    units, _stamped, listing, _ = list_units(claude, source, _quiet, kept)
    for damaged in ({"looked": {str(source): listing["looked"][str(source)]}, "units": [["x", "not a list", 3]]},
                    {"looked": [], "units": []}, {"units": []}, {"looked": {str(source): "absent"}, "units": []}):
        kept.listing = damaged
        again, _stamped, _listing, listed = list_units(claude, source, _quiet, kept)
        assert _as_read(again) == _as_read(units) and not listed, damaged


def test_a_file_whose_first_bytes_decided_the_listing_is_looked_at_again(tmp_path, settled):
    """Named one project folder, the listing reads its transcripts' first bytes to tell whose it
    is: one rewritten in place as another tool's journal is not Claude Code's any more, though no
    folder changed."""
    from toolkit.errors import NotASourceError

    project = tmp_path / "project"
    project.mkdir()
    transcript = project / f"{NEW.format(0)}.jsonl"
    shutil.copyfile(_mains(CLAUDE.parent / CLAUDE.name)[0], transcript)
    kept = Kept(None, set())
    units, _stamped, kept.listing, _listed = list_units(claude, project, _quiet, kept)
    assert units and kept.listing is not None
    assert list_units(claude, project, _quiet, kept)[3], "nothing changed: the kept listing"
    transcript.write_bytes(b'{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}\n')
    with pytest.raises(NotASourceError):
        units_of(claude, project, _quiet)
    with pytest.raises(NotASourceError):
        list_units(claude, project, _quiet, kept)


def test_a_listing_kept_later_leaves_the_import_cache_as_it_is(tmp_path, monkeypatch):
    """A tree imported right after it was made (its folders too recent to keep the listing): the
    next import, finding nothing new, keeps the listing beside the cache and rewrites nothing else;
    the one after lists no folder."""
    from toolkit.importers.output import Options
    from toolkit.importers.unchanged import cache_path, listing_path

    source, store = _tree(tmp_path / ".claude"), tmp_path / "store"
    monkeypatch.setattr(base, "RACY_NS", 10 ** 18)  # (however slow this machine: everything is too recent)
    run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json")
    cache = cache_path(store, "claude", source, Options(), False, False)
    assert cache.is_file() and not listing_path(cache).exists(), "made this instant: not kept"
    before = cache.stat()
    monkeypatch.setattr(base, "RACY_NS", 0)
    again = run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json").json
    after = cache.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert listing_path(cache).is_file() and again["read"] == 0
    calls = []
    listing = claude.units
    monkeypatch.setattr(claude, "units", lambda *a: calls.append(a) or listing(*a))
    third = run_cli("import", "--from", "claude", "--source", source, "--store", store, "--json").json
    assert calls == [] and third["from_cache"] == again["from_cache"] > 0


def test_a_transcript_that_grew_keeps_the_listing_that_read_its_head(tmp_path, settled):
    """Named the projects folder itself (not ~/.claude), the listing reads a few transcripts' first
    record to tell whose folder it is: a transcript that grew still tells the same, and the kept
    listing is used (the nightly keep of a tree where those sessions are live)."""
    source = _tree(tmp_path / ".claude") / "projects"
    kept = Kept(None, set())
    units, _stamped, kept.listing, _listed = list_units(claude, source, _quiet, kept)
    heads = [path for path, mark in kept.listing["looked"].items() if isinstance(mark, list) and mark[0] == "head"]
    assert heads, "the projects folder was voted on"
    for main in _mains(source.parent):
        with open(main, "ab") as handle:
            handle.write(main.read_bytes().splitlines(keepends=True)[-1])
    again, _stamped, _listing, listed = list_units(claude, source, _quiet, kept)
    assert listed and _as_read(again) == _as_read(units) == _as_read(units_of(claude, source, _quiet))


def _codex_change(kind: str, pick: int, home: Path) -> None:
    rollouts = sorted(home.rglob("rollout-*.jsonl"))
    rollout = rollouts[pick % len(rollouts)] if rollouts else None
    name = f"rollout-2026-05-01T10-00-00-{NEW.format(next(_FRESH))}.jsonl"
    if kind == "grow" and rollout is not None:
        with open(rollout, "ab") as handle:
            handle.write(rollout.read_bytes().splitlines(keepends=True)[-1])
    elif kind == "new-rollout" and rollout is not None:
        shutil.copyfile(rollout, rollout.with_name(name))
    elif kind == "new-day" and rollout is not None:  # a date folder made for it
        day = home / "sessions" / "2026" / "05" / f"{pick % 28 + 1:02d}"
        day.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rollout, day / name)
    elif kind == "archive" and rollout is not None:  # moved to archived_sessions (made if need be)
        (home / "archived_sessions").mkdir(exist_ok=True)
        rollout.rename(home / "archived_sessions" / rollout.name)
    elif kind == "remove" and rollout is not None:
        rollout.unlink()
    elif kind == "not-a-rollout":  # a file no listing counts, beside the rollouts
        (home / "sessions" / f"notes-{pick}.txt").write_text("x")


CODEX_KINDS = ["none", "grow", "new-rollout", "new-day", "archive", "remove", "not-a-rollout"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(CODEX_KINDS), st.integers(0, 10 ** 6)), min_size=1, max_size=4))
def test_a_kept_codex_listing_gives_the_units_a_listing_finds(tmp_path_factory, settled, changes):
    from tests.restore.kit import CODEX
    from toolkit.importers import codex_units as codex  # (the importer as --from codex loads it: its listing)

    home = tmp_path_factory.mktemp("codex") / ".codex"
    shutil.copytree(CODEX, home)
    kept = Kept(None, set())
    units, _stamped, kept.listing, listed = list_units(codex, home, _quiet, kept)
    assert not listed and kept.listing is not None
    for kind, pick in changes:
        _codex_change(kind, pick, home)
        kept.listing = orjson.loads(orjson.dumps(kept.listing))
        units, stamped, again, listed = list_units(codex, home, _quiet, kept)
        assert _as_read(units) == _as_read(units_of(codex, home, _quiet)), kind
        assert stamped == [stamps(unit) for unit in units]
        if kind in ("none", "grow"):
            assert listed, kind
        kept.listing = again if again is not None else kept.listing
