"""A composer's bubble rows as SQLite may hold them: each becomes the record its bytes make, or is
counted and named, whatever way the row is read (a BLOB, TEXT, JSON with a lone surrogate that
only the standard library parses, an array, bytes that are not JSON, NULL, none at all)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.importers.cursor_db import modern_user_dir, put
from tests.importers.test_cursor_accounting import imported, journal

ODD_ROWS = {  # bubble id -> (the row's value as SQLite is given it, the text of its record or None: no record)
    "blob-row": (b'{"type":2,"text":"a row stored as a BLOB"}', "a row stored as a BLOB"),
    "text-row": ('{"type":2,"text":"a row stored as TEXT"}', "a row stored as TEXT"),
    "lone-surrogate": (b'{"type":2,"text":"cut mid-emoji \\ud83d"}', "cut mid-emoji \ud83d"),
    "an-array": (b'[{"type":2,"text":"not a bubble"}]', None),
    "not-json": (b'{"type":2,"text":"no end', None),
}


def test_each_kind_of_row_becomes_its_record_or_is_named(tmp_path):
    info = modern_user_dir(tmp_path / "home", tmp_path / "project", wal=False)
    conn, cid, composer = info["conn"], info["cid"], info["composer"]
    for bid, (value, _text) in ODD_ROWS.items():
        composer["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": 2})
        put(conn, f"bubbleId:{cid}:{bid}", value)
    put(conn, f"composerData:{cid}", composer)
    conn.commit()
    conn.close()
    (tmp_path / "project").mkdir()
    for jobs in ("1", "2"):
        result = imported(tmp_path / f"jobs{jobs}", info["user"], "--jobs", jobs, exit_code=4)  # (errors: the unreadable rows)
        (session,) = result.json["sessions"]
        records = journal(Path(session["path"]))
        keys = {r.get("sourceKey"): r for r in records}
        for bid, (value, text) in ODD_ROWS.items():
            key = f"bubbleId:{cid}:{bid}"
            if text is None:
                assert key not in keys
                assert any(f["code"] == "source-unreadable" and f["path"].endswith(f"#{key}") for f in result.json["findings"]), bid
            else:
                record = keys[key]
                assert record["content"][0]["text"] == text
                assert json.loads(json.dumps(record["raw"])) == json.loads(value), "the row's own JSON, under raw"
        assert session["skipped"]["unreadable"] == 1 + 2, "the NULL row, the array and the bytes that are not JSON"
