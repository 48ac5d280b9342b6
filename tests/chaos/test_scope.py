"""Where a kill left a journal (torn / unterminated / between records), and what a cycle checks."""

from __future__ import annotations

import pytest

from chaos.scope import discover_chaos, journals, landing

RECORD = b'{"kind":"user","t":"2026-12-01T00:00:00Z","content":"hi"}'


@pytest.mark.parametrize("data, where", [
    (b"", "between"),
    (RECORD + b"\n", "between"),
    (RECORD + b"\n" + RECORD, "unterminated"),
    (RECORD, "unterminated"),
    (RECORD + b"\n" + RECORD[:-7], "torn"),
    (RECORD + b"\n" + b"\0" * 300, "torn"),
    (RECORD + b"\n" + b"[1,2]", "torn"),  # JSON, but not a record
    (RECORD + b"\n" + b"x" * (3 << 20), "torn"),  # a tail longer than one read block
])
def test_landing_judges_the_bytes_after_the_last_newline(tmp_path, data, where):
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    assert landing(path) == where


def test_every_folder_with_a_journal_or_cache_is_discovered_but_never_levelsess_own(tmp_path):
    meta = b'{"kind":"meta","v":2,"id":"2026-12-01T00-00-00-abcd","project":"/p","createdAt":"2026-12-01T00:00:00Z","title":null}\n'
    places = ["-root-slug/a.jsonl", "store/-s/a.jsonl", "deep/er/-d/a.jsonl", "ws/.logician/sessions/sessions/s1/messages.jsonl",
              ".logician/sessions/sessions/s2/messages.jsonl"]
    for place in places:
        (tmp_path / place).parent.mkdir(parents=True)
        (tmp_path / place).write_bytes(meta if place.endswith("a.jsonl") else b'{"id":"e1","parentId":null}\n')
    (tmp_path / "store" / ".levelsess" / "recovered").mkdir(parents=True)
    (tmp_path / "store" / ".levelsess" / "recovered" / "x.jsonl").write_bytes(b"junk")
    (tmp_path / "ws" / ".logician" / "sessions" / "sessions" / "s3").mkdir()
    (tmp_path / "ws" / ".logician" / "sessions" / "sessions" / "s3" / "meta.json").write_bytes(b"{}")  # a cache, no journal yet
    folders, refused = discover_chaos(tmp_path)
    assert not refused
    found = {str(j.relative_to(tmp_path)) for f in folders for j in f.journals}
    assert found == set(places) == {str(j.relative_to(tmp_path)) for j in journals(tmp_path)}
    assert any(f.path.name == "s3" for f in folders), "a session folder holding only its meta.json is checked too"
