"""The composers that own bubble rows, found by seeking the key index once per composer (issue 27:
not a read of every bubble's key), are those a read of every key finds, in the same order."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.importers import sqlite as db
from toolkit.importers.cursor.scan import _bubble_owners


def _owners_by_every_key(conn: sqlite3.Connection) -> list[str]:
    """What _bubble_owners found before: every ``bubbleId:`` key read, in key order."""
    owners: list[str] = []
    for key in db.keys(conn, "cursorDiskKV", "bubbleId:"):
        cid = key[len("bubbleId:"):].partition(":")[0]
        if not owners or owners[-1] != cid:
            owners.append(cid)
    return owners


_PART = st.text(st.sampled_from("ab:;-\x00é\U0001f600"), max_size=4)
_KEY = st.one_of(st.builds(lambda a, b: f"bubbleId:{a}{b}".encode(), _PART, _PART),
                 st.builds(lambda a: f"bubbleIc{a}".encode() if a else b"bubbleId", _PART),
                 st.binary(max_size=12).map(lambda b: b"bubbleId:" + b))  # not UTF-8 too


@settings(max_examples=300, deadline=None)
@given(keys=st.sets(_KEY, max_size=40), indexed=st.booleans())
def test_bubble_owners_by_seeking_are_those_of_every_key(tmp_path_factory, keys, indexed):
    path = tmp_path_factory.mktemp("owners") / "state.vscdb"
    conn = sqlite3.connect(path)
    conn.execute("create table cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)" if indexed
                 else "create table cursorDiskKV (key TEXT, value BLOB)")
    conn.executemany("insert into cursorDiskKV values (cast(? as text), 'x')", [(k,) for k in keys])
    conn.commit()
    conn.close()
    with db.open_db(path) as read:
        assert _bubble_owners(read) == _owners_by_every_key(read)
