"""A Gemini session file past KEEP_RECORDS is read again for each pass instead of held (memory flat,
issue 27): the same journals, report and index as one held in memory, for every line kind, damage
and growth; a file that changed between the read and a pass is refused, never half written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import import_report, store_files
from tests.layouts.gemini import G2, SLUG, every_kind, gemini, gemini_home, line, meta, name, user
from toolkit.errors import FileChangedError
from toolkit.importers import gemini as importer
from toolkit.importers import spill
from toolkit.importers.output import Options


_files = store_files


def _import(home: Path, store: Path) -> str:
    return import_report("gemini", home, store)


SHAPES = {
    "every kind": every_kind(),
    "damaged": b"\n".join(every_kind().split(b"\n")[:3] + [b"\0" * 12] + every_kind().split(b"\n")[3:]) + b'{"id":"x","ty',
    "no metadata line": b"".join(map(line, [user("u1", "hello there"), gemini("g1", "hi")])),
    "no typed text": b"".join(map(line, [meta(), {"$set": {"lastUpdated": "x"}}, gemini("g1", "hi")])),
    "repeated lines": b"".join(map(line, [meta(), user("u1", "same"), user("u1", "same"), gemini(G2, "a"), gemini(G2, "a")])),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_session_read_again_for_each_pass_imports_as_one_held(tmp_path, monkeypatch, shape):
    data = SHAPES[shape]
    home = gemini_home(tmp_path / "a", {name(): data})
    held = _import(home, tmp_path / "held")
    monkeypatch.setattr(importer, "KEEP_RECORDS", 0)
    monkeypatch.setattr(spill, "KNOWN_IN_MEMORY", 2)  # ids seen and repeated lines counted on disk too
    streamed = _import(home, tmp_path / "streamed")
    assert streamed == held and _files(tmp_path / "streamed") == _files(tmp_path / "held")
    session = home / "tmp" / SLUG / "chats" / name()  # grown: the re-import appends the same records either way
    session.write_bytes(data.rstrip(b"x\"ty{:id,") + b"\n" + line(gemini(G2, "an update")) + line({"$set": {"summary": "named"}}))
    monkeypatch.setattr(importer, "KEEP_RECORDS", 8 << 20)
    held2 = _import(home, tmp_path / "held")
    monkeypatch.setattr(importer, "KEEP_RECORDS", 0)
    streamed2 = _import(home, tmp_path / "streamed")
    assert streamed2 == held2 and _files(tmp_path / "streamed") == _files(tmp_path / "held")
    assert json.loads(streamed2)["sessions"][0]["status"] == "updated"


def test_a_file_rewritten_between_the_read_and_a_pass_is_refused_and_one_that_grew_gives_what_was_read(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "KEEP_RECORDS", 0)
    home = gemini_home(tmp_path, {name(): every_kind()})
    path = home / "tmp" / SLUG / "chats" / name()
    session = importer.session_from_file(path, Options(), lambda _f: None)
    first = [record["sourceKey"] for record in session.records]
    path.write_bytes(path.read_bytes() + line(user("u9", "later")))
    assert [record["sourceKey"] for record in session.records] == first, "lines written since: the next import's"
    data = path.read_bytes()
    for old, new in ((b'"sessionId":"', b'"sessionId":"0'), (b'"content":"', b'"content":"!')):  # the metadata line, a record
        at = data.index(old, data.index(b"\n") + 1 if old.startswith(b'"content"') else 0)
        path.write_bytes(data[:at] + new + data[at + len(old) + 1:])  # same size, rewritten in place
        with pytest.raises(FileChangedError):
            list(session.records)


def test_a_large_session_is_not_held(tmp_path):
    """Well past KEEP_RECORDS, the records are a re-readable view, not a list."""
    turns = [line(meta())] + [line(user(f"u{n}", "x" * 4000)) + line(gemini(f"g{n}", "y" * 4000)) for n in range(1200)]
    home = gemini_home(tmp_path, {name(): b"".join(turns)})
    session = importer.session_from_file(home / "tmp" / SLUG / "chats" / name(), Options(), lambda _f: None)
    assert not isinstance(session.records, list) and len(session.records) == 2400
    assert sum(1 for _ in session.records) == 2400 and session.title.startswith("xxx")
