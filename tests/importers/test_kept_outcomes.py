"""A kept session's outcome comes back from the import cache as the outcome that was kept
(:meth:`Outcome.kept`: its fields unpacked when first asked for, its JSON made from them as they
are, when they are the ones :func:`~toolkit.importers.unchanged.remember` writes; else
toolkit/importers/unchanged.py ``_outcome``, by the ``__init__`` of :class:`Outcome`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest
from hypothesis import given, strategies as st

from toolkit.importers import unchanged
from toolkit.importers.output import Outcome

TEXT = st.text(max_size=12)
OUTCOMES = st.builds(
    Outcome, id=TEXT, project=st.none() | TEXT, path=st.builds(Path, st.sampled_from(["s/a.jsonl", "/x/#b c.jsonl", "ü.jsonl"])),
    records=st.integers(0, 10**9), new_records=st.integers(0, 5), status=st.sampled_from(["unchanged", "trashed", "created"]),
    orphaned=st.booleans(), source_status=st.sampled_from(["live", "orphaned", "unknown"]),
    orphan=st.lists(TEXT, max_size=3).map(tuple), source_items=st.integers(0, 99),
    skipped=st.lists(st.tuples(TEXT, st.integers(0, 9)), max_size=3).map(tuple), source_lines=st.none() | st.integers(0, 99),
    merged=st.integers(0, 9), title=st.none() | TEXT)


def _kept(outcome: Outcome) -> dict:
    """What the cache file gives back for it (remember's fields, through JSON)."""
    return orjson.loads(orjson.dumps({**unchanged._fields(outcome), "path": str(outcome.path), "keys": None, "after": None}))


def _attributes(outcome: Outcome) -> dict:
    return {name: (type(getattr(outcome, name)), getattr(outcome, name)) for name in Outcome.FIELDS}


@given(OUTCOMES, st.sampled_from(["equal", "hash", "attributes", "repr", "fields", "to_json", "pickle", "copy", "replace"]))
def test_a_kept_outcome_comes_back_equal_field_by_field_and_type_by_type(outcome, first):
    """Whatever is asked of it first (its fields are unpacked then), and whatever after."""
    import copy
    import pickle

    outcome = outcome.replace(keys=None, after=None)
    value = _kept(outcome)
    assert unchanged._as_remembered(value)
    for back in (Outcome.kept(value), unchanged._outcome(_kept(outcome))):
        asked = {"equal": lambda: back == outcome, "hash": lambda: hash(back) == hash(outcome),
                 "attributes": lambda: _attributes(back) == _attributes(outcome), "repr": lambda: repr(back) == repr(outcome),
                 "fields": lambda: back.fields() == outcome.fields(), "to_json": lambda: back.to_json() == outcome.to_json(),
                 "pickle": lambda: pickle.loads(pickle.dumps(back)) == outcome, "copy": lambda: copy.copy(back) == outcome,
                 "replace": lambda: back.replace(title="t") == outcome.replace(title="t")}
        assert asked.pop(first)()
        assert all(check() for check in asked.values())
        assert back == outcome and hash(back) == hash(outcome) and outcome == back
        assert back.to_json() == outcome.to_json()
        with pytest.raises(AttributeError):
            back.status = "created"  # (still immutable)
        with pytest.raises(AttributeError):
            del back.title
        with pytest.raises(AttributeError):
            back.future  # noqa: B018 (a field no outcome has)
    assert value == _kept(outcome)  # (what the cache kept is not changed by it)


@given(OUTCOMES)
def test_a_kept_outcomes_json_is_made_without_unpacking_it(outcome):
    """What a re-import that finds nothing new asks of most outcomes: their JSON, from the kept fields."""
    kept = Outcome.kept(_kept(outcome.replace(keys=None, after=None)))
    assert kept.to_json() == outcome.to_json() and "_kept" in kept.__dict__
    assert kept.status == outcome.status and "_kept" not in kept.__dict__  # (a field asked: unpacked, once)
    assert kept.to_json() == outcome.to_json()


@pytest.mark.parametrize("change", ["path None", "path a list", "orphan a string", "skipped a dict", "a pair of three",
                                    "a count not a number", "a field more", "a field less", "not a dict"])
def test_kept_fields_not_as_remember_writes_them_are_not_taken_as_they_are(change):
    """Anything else is made by ``__init__`` (its defaults), or refused: never unpacked late, where a
    damaged cache would fail in the middle of a report instead of being read again."""
    value = _kept(Outcome("s", None, Path("/s/a.jsonl"), 1, 0, "unchanged", False, skipped=(("ui", 2),)))
    if change == "path None":
        value["path"] = None
    elif change == "path a list":
        value["path"] = ["/s", "a.jsonl"]
    elif change == "orphan a string":
        value["orphan"] = "folder-missing"
    elif change == "skipped a dict":
        value["skipped"] = {"ui": 2}
    elif change == "a pair of three":
        value["skipped"] = [["ui", 2, 3]]
    elif change == "a count not a number":
        value["skipped"] = [["ui", "2"]]
    elif change == "a field more":
        value["future"] = 1
    elif change == "a field less":
        del value["title"]
    else:
        value = [value]
    assert not unchanged._as_remembered(value)
    entry = {"sessions": [value], "findings": [], "journals": {}, "projects": {}}
    standing = unchanged._standing(entry)
    assert standing is None or all("_kept" not in o.__dict__ for o in standing[0])


@given(OUTCOMES, st.sampled_from(["keys", "after", "title"]), st.booleans())
def test_a_kept_outcome_of_other_fields_is_made_the_careful_way(outcome, name, drop):
    """A field missing, or one this build does not know: the class's own __init__ (its defaults)."""
    outcome = outcome.replace(keys=None, after=None)
    value = _kept(outcome)
    if drop:
        del value[name]
    else:
        value["future"] = 1
    assert unchanged._outcome(value) == (outcome if name != "title" or not drop else outcome.replace(title=None))


@given(st.lists(st.sampled_from(["", "a", "ü b", "#x", ".", "..", "s.jsonl"]), max_size=5), st.integers(0, 3), st.booleans())
def test_a_kept_journal_path_is_the_path_it_names(parts, absolute, trailing):
    """A journal's path comes back from the cache by joining its name to its folder's path, made once
    per folder: the same path as one parsed whole, whatever the string."""
    text = "/" * absolute + "/".join(parts) + ("/" if trailing else "")  # (two slashes first: POSIX keeps them)
    from toolkit.importers.base import kept_path

    made = kept_path(text)
    assert made == Path(text) and str(made) == str(Path(text)) and type(made) is type(Path(text))


@pytest.mark.parametrize("head, rest", [(b"", b""), (b"{}", b""), (b"{}\n", b"states\n"), (b'{"a":"' + b"x" * (1 << 20) + b'"}\n', b"1\n2"),
                                        (b'{"b":"' + b"y" * (3 << 20) + b'"}\n', b""), (b'{"c":"' + b"z" * ((1 << 20) - 9) + b'"}\n', b"after"),
                                        (b'{"d":"' + b"w" * ((1 << 20) - 8) + b'"}\n', b"after"), (b'{"e":"' + b"v" * (2 << 20) + b'"}', b""),
                                        (b'{"f":"\\ud83d"}\n', b"{}\n"), (b"[1, 2\n", b"]\n"), (b"not json\n", b"")])
def test_the_cache_files_first_line_is_read_whole_at_any_length(tmp_path, monkeypatch, head, rest):
    """The first line (the units) is parsed where it lies, mapped: at, across and past a MiB, with
    no newline at all, with a lone surrogate (loads' fallback), it is what a readline gives, parsed;
    its length is the line's; a line that is no JSON is a ValueError.  So it is read, a MiB at a
    time, where the file cannot be mapped."""
    import mmap

    path = tmp_path / "cache.json"
    path.write_bytes(head + rest)
    with open(path, "rb") as handle:
        line = handle.readline()
    for mapped in (True, False):
        if not mapped:
            monkeypatch.setattr(mmap, "mmap", lambda *a, **k: (_ for _ in ()).throw(OSError("no mmap here")))
        try:
            expected = unchanged.loads(line)
        except ValueError:
            with pytest.raises(ValueError):
                unchanged._head(path)
            continue
        value, length, info = unchanged._head(path)
        assert value == expected and length == len(line) and info.st_size == len(head + rest)


@given(st.lists(st.tuples(TEXT, TEXT), max_size=3), st.none() | TEXT, st.booleans())
def test_the_options_name_the_cache_file_as_the_dataclass_did(mapping, project, orphans_only):
    """``Options`` is a plain class now; its repr, which an import's cache file is named by
    (``unchanged._key``), is the dataclass's it replaced, so no kept cache is lost to an upgrade;
    and it compares as that did."""
    from toolkit.importers.base import Options

    @dataclasses.dataclass
    class Before:
        mapping: list = dataclasses.field(default_factory=list)
        project: str | None = None
        orphans_only: bool = False

    Before.__qualname__ = "Options"  # (the dataclass's repr names its class so: it was toolkit.importers.base's)
    options = Options(mapping=mapping, project=project, orphans_only=orphans_only)
    assert repr(options) == repr(Before(mapping, project, orphans_only))
    assert repr(Options()) == "Options(mapping=[], project=None, orphans_only=False)"
    assert options == Options(list(mapping), project, orphans_only) and options != Options(mapping, project, not orphans_only)
    assert Options().mapping is not Options().mapping  # (each its own list)


@dataclasses.dataclass(frozen=True)
class _Before:
    """The frozen dataclass ``Outcome`` was, field for field: what the plain class must still be."""

    id: str
    project: str | None
    path: Path
    records: int
    new_records: int
    status: str
    orphaned: bool
    source_status: str = "live"
    orphan: tuple = ()
    source_items: int = 0
    skipped: tuple = ()
    source_lines: int | None = None
    merged: int = 0
    title: str | None = None
    keys: int | None = dataclasses.field(default=None, compare=False)
    after: tuple | None = dataclasses.field(default=None, compare=False)


@given(OUTCOMES, OUTCOMES, st.none() | st.integers(0, 9), st.none() | st.tuples(st.integers(0, 9), TEXT))
def test_an_outcome_is_what_the_frozen_dataclass_was(a, b, keys, after):
    """Fields in the dataclass's order (positions), equality and hash on all but keys and after,
    replace, immutability, and a pickle (a worker's outcomes cross one) giving it back equal."""
    import pickle

    assert Outcome.FIELDS == tuple(f.name for f in dataclasses.fields(_Before))
    a = a.replace(keys=keys, after=after)
    before_a, before_b = (_Before(*(getattr(o, name) for name in Outcome.FIELDS)) for o in (a, b))
    assert (a == b) == (before_a == before_b) and (a == a.replace(keys=None, after=None))
    assert hash(a) == hash(a.replace(keys=None, after=None)) and (a != b) == (before_a != before_b)
    assert Outcome(*(getattr(a, name) for name in Outcome.FIELDS)).fields() == a.fields()
    changed = a.replace(status="x")
    assert changed.fields() == {**a.fields(), "status": "x"} and changed is not a
    with pytest.raises(TypeError):
        a.replace(nothing=1)
    for name in Outcome.FIELDS:
        assert f"{name}={getattr(a, name)!r}" in repr(a)
    back = pickle.loads(pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == a and back.fields() == a.fields() and back.to_json() == a.to_json()
