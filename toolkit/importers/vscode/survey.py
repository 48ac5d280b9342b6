"""A quick, read-only survey of a VS Code ``User`` folder for ``levelsess doctor``: which
workspaces hold chats VS Code no longer shows, and how many (SOURCES.md §1.4, §3.4)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ...errors import LevelsessError
from .. import sqlite as db
from .sources import INDEX_KEY, Store, resolve


@dataclass(frozen=True)
class WorkspaceSurvey:
    id: str
    kind: str
    project: str | None
    status: str  # live | orphaned | unknown (of the workspace folder itself)
    reasons: tuple[str, ...]
    sessions: int
    unindexed: int
    index: str  # ok | missing | corrupt

    @property
    def orphaned_sessions(self) -> int:
        if self.status == "orphaned" or self.index == "corrupt":
            return self.sessions
        return self.unindexed

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "project": self.project, "status": self.status,
                "reasons": list(self.reasons), "sessions": self.sessions, "unindexed": self.unindexed,
                "orphaned_sessions": self.orphaned_sessions, "index": self.index}


def _index(store: Store) -> tuple[set[str], str]:
    if store.db is None:
        return set(), "missing"
    try:
        with db.open_db(store.db) as conn:
            if "ItemTable" not in db.tables(conn) or not db.has_key(conn, "ItemTable", INDEX_KEY):
                return set(), "missing"
            value = db.value(conn, "ItemTable", INDEX_KEY)
    except (db.SourceUnreadable, LevelsessError, sqlite3.DatabaseError, OSError):
        return set(), "unreadable"
    entries = value.get("entries") if isinstance(value, dict) and value.get("version") == 1 else None
    if not isinstance(entries, dict):
        return set(), "corrupt"
    valid = {k for k, v in entries.items() if isinstance(v, dict) and isinstance(v.get("sessionId"), str)
             and isinstance(v.get("title"), str) and isinstance(v.get("lastMessageDate"), (int, float))}
    return valid, "ok" if len(valid) == len(entries) else "corrupt"


def survey(user: Path) -> list[WorkspaceSurvey]:
    """Every store under a VS Code ``User`` folder with its session counts; reads only names
    and the index, never the sessions themselves."""
    out = []
    for store in resolve(user):
        try:
            stems = {p.stem for p in store.folder.iterdir() if p.suffix in (".json", ".jsonl")} if store.folder.is_dir() else set()
        except OSError:
            continue
        if not stems:
            continue
        indexed, state = _index(store)
        out.append(WorkspaceSurvey(store.workspace_id or store.kind, store.kind, store.project, store.status,
                                   tuple(store.orphan), len(stems), len(stems - indexed), state))
    return out
