"""Build OpenCode / Kilo CLI data folders for tests: real SQLite databases with the tables of
SOURCES-MORE.md §3.2 and the legacy JSON tree of §3.4, from the sample rows of §3.8 and every
message and part kind of §3.3."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text, icon_color text,
  time_created integer NOT NULL, time_updated integer NOT NULL, time_initialized integer, sandboxes text NOT NULL, commands text);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE, workspace_id text,
  parent_id text, slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL, version text NOT NULL, share_url text,
  summary_additions integer, summary_deletions integer, summary_files integer, summary_diffs text, cost real DEFAULT 0 NOT NULL,
  tokens_input integer DEFAULT 0 NOT NULL, tokens_output integer DEFAULT 0 NOT NULL, revert text, permission text, agent text,
  model text, time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_idx ON part (message_id, id);
CREATE TABLE todo (session_id text NOT NULL, content text NOT NULL, status text NOT NULL, priority text NOT NULL,
  position integer NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, PRIMARY KEY (session_id, position));
"""

T0 = 1787306400000
PROJECT = "4b1c0ffee0000000000000000000000000000000"


def conversation(sid: str, base: int = T0, n: int = 0) -> list[tuple[str, dict, list[tuple[str, dict]]]]:
    """(message id, message data, [(part id, part data)]) with every message and part kind."""
    m = lambda i: f"msg_{base // 1000 + n:012x}{i:02d}AbCdEfGhIjKl"  # noqa: E731 - ascending ids
    p = lambda i, j: f"prt_{base // 1000 + n:012x}{i:02d}{j:02d}CdEfGhIjKl"  # noqa: E731
    user = {"role": "user", "time": {"created": base + 1000}, "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    assistant = {"role": "assistant", "time": {"created": base + 2000, "completed": base + 9000}, "parentID": m(1), "modelID": "claude-sonnet-4-5",
                 "providerID": "anthropic", "mode": "build", "agent": "build", "path": {"cwd": "/home/ana/app", "root": "/home/ana/app"},
                 "cost": 0.01, "tokens": {"input": 10, "output": 20, "reasoning": 5, "cache": {"read": 0, "write": 0}}, "finish": "stop"}
    failed = {**assistant, "time": {"created": base + 20000}, "error": {"name": "APIError", "data": {"message": "overloaded"}}}
    return [
        (m(1), user, [(p(1, 1), {"type": "text", "text": f"fix the failing tests in {sid}"}),
                      (p(1, 2), {"type": "file", "mime": "text/plain", "filename": "app.test.ts", "url": "file:///home/ana/app/app.test.ts",
                                 "source": {"type": "file", "path": "app.test.ts", "text": {"value": "x", "start": 0, "end": 1}}}),
                      (p(1, 3), {"type": "file", "mime": "image/png", "filename": "shot.png", "url": "data:image/png;base64,iVBORw0KGgo="})]),
        (m(2), assistant, [(p(2, 1), {"type": "step-start", "snapshot": "abc"}),
                           (p(2, 2), {"type": "reasoning", "text": "the test imports a renamed helper", "time": {"start": base + 2100, "end": base + 2200}}),
                           (p(2, 3), {"type": "tool", "callID": "toolu_01", "tool": "bash", "state": {
                               "status": "completed", "input": {"command": "npm test"}, "output": "1 failing", "title": "npm test",
                               "metadata": {}, "time": {"start": base + 3000, "end": base + 4000}}}),
                           (p(2, 4), {"type": "tool", "callID": "toolu_02", "tool": "read", "state": {
                               "status": "error", "input": {"filePath": "/nope"}, "error": "ENOENT", "time": {"start": base + 4100, "end": base + 4200}}}),
                           (p(2, 5), {"type": "patch", "hash": "h1", "files": ["/home/ana/app/src/helper.ts"]}),
                           (p(2, 6), {"type": "text", "text": "Renamed the import; the tests pass now."}),
                           (p(2, 7), {"type": "snapshot", "snapshot": "def"}),
                           (p(2, 8), {"type": "agent", "name": "build"}),
                           (p(2, 9), {"type": "subtask", "prompt": "check", "description": "d", "agent": "general"}),
                           (p(2, 10), {"type": "retry", "attempt": 1, "error": {"name": "APIError", "data": {"message": "429"}}, "time": {"created": base + 2050}}),
                           (p(2, 11), {"type": "compaction", "auto": True}),
                           (p(2, 12), {"type": "step-finish", "reason": "stop", "cost": 0.01, "tokens": {"input": 10, "output": 20, "reasoning": 5, "cache": {"read": 0, "write": 0}}})]),
        (m(3), failed, [(p(3, 1), {"type": "tool", "callID": "toolu_03", "tool": "bash", "state": {
            "status": "running", "input": {"command": "sleep 1"}, "time": {"start": base + 20100}}})]),
    ]


def session_row(sid: str, project: str = PROJECT, directory: str = "/home/ana/app", title: str = "Fix tests", base: int = T0) -> dict:
    return {"id": sid, "project_id": project, "slug": "brave-otter", "directory": directory, "title": title, "version": "1.17.16",
            "time_created": base, "time_updated": base + 60000}


def make_db(path: Path, sessions: list[dict], projects: tuple[str, ...] = (PROJECT,), wal: bool = False, rowid: bool = True) -> Path:
    """A database holding ``sessions`` (session rows) with :func:`conversation` each."""
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("pragma journal_mode=wal")
    statements = [sql.strip() for sql in SCHEMA.split(";") if sql.strip()]
    conn.executescript(";\n".join(sql + (" WITHOUT ROWID" if not rowid and sql.startswith("CREATE TABLE") else "") for sql in statements) + ";")
    for project in projects:
        conn.execute("insert into project (id,worktree,vcs,time_created,time_updated,sandboxes) values (?,?,?,?,?,?)",
                     (project, "/home/ana/app", "git", T0, T0, "[]"))
    for n, row in enumerate(sessions):
        conn.execute(f"insert into session ({','.join(row)}) values ({','.join('?' * len(row))})", tuple(row.values()))
        for mid, data, parts in conversation(row["id"], row["time_created"], n):
            created = data["time"]["created"]
            conn.execute("insert into message values (?,?,?,?,?)", (mid, row["id"], created, created, json.dumps(data)))
            for pid, part in parts:
                conn.execute("insert into part values (?,?,?,?,?,?)", (pid, mid, row["id"], created, created, json.dumps(part)))
    conn.commit()
    conn.close()
    return path


def make_tree(storage: Path, sessions: list[dict], projects: tuple[str, ...] = (PROJECT,)) -> Path:
    """The legacy JSON tree: ``sessions`` are session rows (``project_id`` names their folder)."""
    for project in projects:
        write(storage / "project" / f"{project}.json", {"id": project, "worktree": "/home/ana/app", "vcs": "git", "time": {"created": T0}})
    for n, row in enumerate(sessions):
        sid = row["id"]
        info = {"id": sid, "slug": row["slug"], "projectID": row["project_id"], "directory": row["directory"], "title": row["title"],
                "version": row["version"], "time": {"created": row["time_created"], "updated": row["time_updated"]}}
        write(storage / "session" / row["project_id"] / f"{sid}.json", info)
        for mid, data, parts in conversation(sid, row["time_created"], n):
            write(storage / "message" / sid / f"{mid}.json", {"id": mid, "sessionID": sid, **data})
            for pid, part in parts:
                write(storage / "part" / mid / f"{pid}.json", {"id": pid, "sessionID": sid, "messageID": mid, **part})
    write(storage / "migration", 1)
    return storage


def write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))


def items(sessions: int = 1) -> int:
    """Source items (messages + parts) of ``sessions`` conversations."""
    return sessions * sum(1 + len(parts) for _m, _d, parts in conversation("x"))
