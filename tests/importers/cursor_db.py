"""Build real Cursor SQLite databases for the importer tests (never touching shared/fixtures)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
if not FIXTURES.is_dir():  # the repository sits beside shared/ on the team machine
    FIXTURES = Path("/work/shared/fixtures")
CURSOR = FIXTURES / "cursor"
BENCH = Path(__file__).resolve().parents[1] / "bench"
DDL = "CREATE TABLE {} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"


def real_bubbles() -> list[tuple[str, str, dict]]:
    """The 118 real Dec-2025 bubbles: (composerId, bubbleId, value) in header order."""
    out = []
    for line in (CURSOR / "bubbles-2025-12.jsonl").read_text().splitlines():
        row = json.loads(line)
        _, cid, bid = row["key"].split(":", 2)
        value = row["value"] if isinstance(row["value"], dict) else json.loads(row["value"])
        out.append((cid, bid, value))
    return out


def new_db(path: Path, wal: bool = False, tables=("ItemTable", "cursorDiskKV")) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("pragma journal_mode=wal")
        conn.execute("pragma wal_autocheckpoint=0")
    for table in tables:
        conn.execute(DDL.format(table))
    conn.commit()
    return conn


def put(conn: sqlite3.Connection, key: str, value, table: str = "cursorDiskKV") -> None:
    data = value if value is None or isinstance(value, (str, bytes)) else json.dumps(value)
    conn.execute(f"insert into {table} values (?, ?)", (key, data))


def modern_user_dir(root: Path, project: Path, *, wal: bool = True) -> dict:
    """A Cursor ``User`` folder of the split era built from the real bubbles.

    The global DB holds one composer whose headers list the real bubbles in order, plus:
    one header whose row is NULL, one dangling header (no row), one header without a
    bubbleId, and one orphan row (no header).  A workspace DB maps the composer to
    ``project`` through its ``workspace.json`` and ``composer.composerData`` head.  Returns
    the connection (kept open so rows stay in the WAL) and the keys the tests need.
    """
    bubbles = real_bubbles()
    cid = bubbles[0][0]
    user = root / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb", wal=wal)
    headers = [{"bubbleId": bid, "type": value.get("type", 2)} for _, bid, value in bubbles]
    null_bid, orphan_bid = bubbles[5][1], "orphan-bubble-0001"
    headers.insert(40, {"bubbleId": "dangling-bubble-0001", "type": 2})
    headers.insert(60, {"bubbleId": "", "type": 2})
    composer = {"_v": 10, "composerId": cid, "name": "Reverse-engineer the Cursor DB", "createdAt": 1765808373121,
                "lastUpdatedAt": 1765810000000, "status": "completed", "fullConversationHeadersOnly": headers,
                "conversationMap": {}, "modelConfig": {"modelName": "claude-4.5-sonnet"}, "text": "an unsent draft"}
    put(conn, f"composerData:{cid}", composer)
    for _, bid, value in bubbles:
        put(conn, f"bubbleId:{cid}:{bid}", None if bid == null_bid else value)
    orphan = {**bubbles[1][2], "bubbleId": orphan_bid, "text": "an edited-away answer", "createdAt": "2025-12-15T14:30:00.000Z"}
    put(conn, f"bubbleId:{cid}:{orphan_bid}", orphan)
    put(conn, "cursorAuth/accessToken", "secret-token-never-read", table="ItemTable")
    put(conn, "agentKv:blob:0001", "x" * 1000)
    conn.commit()
    workspace = user / "workspaceStorage" / "94bae793e1c4b0f8a0a1b2c3d4e5f601"
    workspace.mkdir(parents=True)
    (workspace / "workspace.json").write_text(json.dumps({"folder": project.as_uri()}))
    ws = new_db(workspace / "state.vscdb", tables=("ItemTable",))
    put(ws, "composer.composerData", {"allComposers": [{"type": "head", "composerId": cid, "name": composer["name"],
                                                        "createdAt": 1765808373121}]}, table="ItemTable")
    ws.commit()
    ws.close()
    return {"conn": conn, "user": user, "cid": cid, "bubbles": bubbles, "null": f"bubbleId:{cid}:{null_bid}",
            "dangling": f"bubbleId:{cid}:dangling-bubble-0001", "orphan": f"bubbleId:{cid}:{orphan_bid}",
            "composer": composer}


def add_bubble(info: dict, bid: str, value: dict) -> None:
    """Append a bubble the way Cursor does: a row, then the composer's headers (one commit)."""
    conn, cid, composer = info["conn"], info["cid"], info["composer"]
    composer["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": value.get("type", 2)})
    put(conn, f"bubbleId:{cid}:{bid}", value)
    put(conn, f"composerData:{cid}", composer)
    conn.commit()


def bench_user(base: Path) -> Path:
    """The benchmark's synthetic Cursor folder, small: 13 composers (one of 100 bubbles), orphan rows, 5 workspaces."""
    sys.path.insert(0, str(BENCH))
    try:
        from bench_import_cursor import build_source
    finally:
        sys.path.remove(str(BENCH))
    build_source(base, 6, 7, CURSOR / "bubbles-2025-12.jsonl", lambda _text: None)
    return base / "User"


def nulls_user(base: Path) -> Path:
    """A ``User`` folder whose global database is the synthetic one with NULL rows (a copy)."""
    user = base / "User"
    (user / "globalStorage").mkdir(parents=True)
    shutil.copyfile(CURSOR / "synthetic-global-nulls.state.vscdb", user / "globalStorage" / "state.vscdb")
    return user
