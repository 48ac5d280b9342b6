"""Layout detection and slugs (DESIGN.md §2.1, §2.2)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG, logician_session, make_store
from toolkit.errors import NotAStoreError, PathNotFoundError
from toolkit.layouts import LEVELCODE, LOGICIAN
from toolkit.stores import discover, slug


def test_slug_examples():
    assert slug("/Users/ada/code/thin.ly") == "-Users-ada-code-thin-ly"
    long = "/" + "a" * 250
    assert len(slug(long)) == 189 and slug(long).startswith("-" + "a" * 179)
    unicode = slug("/Users/zoë/código")
    assert unicode.startswith("-Users-zo--c-digo-") and len(unicode.rsplit("-", 1)[1]) == 8
    assert slug("/a/b") != slug("/a/c")


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=260) | st.text(alphabet="/abcXYZ019.-_ é中\u0130\u212a\u0660\u00b2", max_size=260))
def test_slug_is_its_definition(project):
    """DESIGN §2.1 a character at a time: an ASCII letter or digit stays, anything else is a dash;
    a long or non-ASCII result is cut and given the path's hash (asked twice: the kept answer too)."""
    out = "".join(c if c.isascii() and c.isalnum() else "-" for c in project)
    if len(out) > 200 or not project.isascii():
        out = out[:180] + "-" + hashlib.sha256(project.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    try:
        project.encode("utf-8")
    except UnicodeEncodeError:  # (a lone surrogate: no path of this tool's is one)
        return
    assert slug(project) == out and slug(project) == out


def test_store_project_and_journal(tmp_path):
    store = make_store(tmp_path / "store", sessions=2)
    (store / ".levelsess").mkdir()
    [folder] = discover(store)
    assert folder.layout is LEVELCODE and len(folder.journals) == 2 and folder.store == store
    [project] = discover(store / PROJECT_SLUG)
    assert project.path == folder.path and project.whole
    journal = folder.journals[0]
    [single] = discover(journal)
    assert single.journals == (journal,) and not single.whole and single.store == store


def test_empty_folder_is_an_empty_store(tmp_path):
    assert discover(tmp_path) == []


def test_logician_workspace(tmp_path):
    ws = tmp_path / "ws"
    session = logician_session(ws)
    [folder] = discover(ws)
    assert folder.layout is LOGICIAN and folder.path == session
    assert folder.store == ws / ".logician" / "sessions"


def test_bad_paths_are_typed(tmp_path):
    with pytest.raises(PathNotFoundError):
        discover(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(NotAStoreError):
        discover(tmp_path / "notes.txt")
    with pytest.raises(NotAStoreError):
        discover(tmp_path)


def test_hash_in_path_is_just_a_path(tmp_path):
    store = make_store(tmp_path / "my#store?", sessions=1)
    [folder] = discover(store)
    assert len(folder.journals) == 1


def test_a_store_whose_only_project_folder_is_empty_is_still_a_store(tmp_path):
    from toolkit.stores import discover

    (tmp_path / "store" / "-home-ada-new-project").mkdir(parents=True)
    assert discover(tmp_path / "store") == []


def test_a_store_and_one_of_its_journals_are_checked_once(tmp_path):
    from tests.helpers import make_store, run_cli

    store = make_store(tmp_path / "store", sessions=2)
    journal = next(store.rglob("*.jsonl"))
    alone = run_cli("fsck", "--json", store).json
    for paths in ((store, journal), (journal, store)):
        both = run_cli("fsck", "--json", *paths).json
        assert (both["files"], both["records"], both["bytes"]) == (alone["files"], alone["records"], alone["bytes"])


def test_a_folder_is_listed_once_and_claims_what_journals_in_lists(tmp_path, monkeypatch):
    """A store and each project folder in it are listed once (what makes a folder a project and
    its journals come from one listing); the journals are journals_in's, hidden files, locks and
    other names left out."""
    from toolkit.layouts import base
    from toolkit.layouts.base import journals_in

    store = make_store(tmp_path / "store", sessions=3)
    project = store / PROJECT_SLUG
    for name in (".hidden.jsonl", "x.jsonl.lock", "notes.txt", "index.json", "b.jsonl.1.tail"):
        (project / name).write_text("{}")
    (project / "sub.jsonl").mkdir()  # a folder named like a journal: listed, as journals_in lists it
    other = store / "-home-ada-other"
    other.mkdir()
    (other / "one.jsonl").write_bytes((project / sorted(p.name for p in project.glob("*.jsonl") if p.is_file())[0]).read_bytes())
    listed: list = []
    real = base.entries
    monkeypatch.setattr("toolkit.layouts.levelcode.entries", lambda folder: (listed.append(folder), real(folder))[1])
    folders = LEVELCODE.claim_dir(store)
    assert sorted(listed) == sorted([store, project, other])
    assert {f.path: f.journals for f in folders} == {project: journals_in(project), other: journals_in(other)}
    listed.clear()
    [one] = LEVELCODE.claim_dir(project)
    assert listed == [project] and one.journals == journals_in(project) and len(one.journals) == 4
