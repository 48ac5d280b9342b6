"""`import --from claude` and `--from codex` hold no state per record in memory (issue 28): a
200,000-record transcript imports, then re-imports, and a 200,000-record rollout imports, in a
child process whose peak RSS stays under 150 MiB (about 80 and 55 MiB here).

The code before held about 3 KiB per Claude Code record (a 1,000,000-record transcript peaked
at 3.4 GB, this one at about 700 MiB) and 1.7 KiB per Codex record; now a transcript keeps
about 11 bytes a record in memory and a rollout 2, the rest in a temporary database.  The
sources are the benchmark's (tests/bench/claude_transcript.py, codex_rollout.py: realistic
small records, turn after turn).  Memory is measured by tests/bench/probe.py (VmHWM).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.bench import claude_transcript, codex_rollout
from tests.bench.probe import PROBE

MIB = 1 << 20
RECORDS = 200_000
RSS_LIMIT = 150 * MIB


def _import(tmp_path: Path, root: Path, store: Path, source: str = "claude") -> tuple[dict, int]:
    """Run the import under the probe; return its --json report and its peak RSS in bytes."""
    report = tmp_path / f"rss-{len(list(tmp_path.glob('rss-*')))}"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(report), "import", "--from", source, "--source", str(root),
                           "--store", str(store), "--json"], capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    return orjson.loads(proc.stdout), int(report.read_text())


@pytest.mark.slow
def test_a_200k_record_transcript_imports_and_reimports_in_flat_memory(tmp_path):
    root, store = tmp_path / ".claude", tmp_path / "store"
    source = claude_transcript.write(root, RECORDS)
    doc, rss = _import(tmp_path, root, store)
    [session] = doc["sessions"]
    assert session["status"] == "created" and session["source_items"] == RECORDS
    assert rss < RSS_LIMIT, f"import of {RECORDS:,} records ({source.stat().st_size / MIB:.0f} MiB): peak RSS {rss / MIB:.1f} MiB"
    doc, again = _import(tmp_path, root, store)
    assert [s["status"] for s in doc["sessions"]] == ["unchanged"]
    # the journal's 200,000 keys add nothing either (held in a dict they would add about 40 MiB)
    assert again < min(RSS_LIMIT, rss + 16 * MIB), f"re-import: peak RSS {again / MIB:.1f} MiB, import {rss / MIB:.1f} MiB"


@pytest.mark.slow
def test_a_200k_record_codex_rollout_imports_in_flat_memory(tmp_path):
    home, store = tmp_path / ".codex", tmp_path / "store"
    source = codex_rollout.write(home, RECORDS)
    doc, rss = _import(tmp_path, home, store, "codex")
    [session] = doc["sessions"]
    assert session["status"] == "created" and session["source_items"] == RECORDS
    assert rss < RSS_LIMIT, f"import of {RECORDS:,} records ({source.stat().st_size / MIB:.0f} MiB): peak RSS {rss / MIB:.1f} MiB"


def test_what_an_import_holds_of_a_row_or_a_line_is_held_at_its_size():
    """orjson's bytes hold a buffer of 4 kB or more whatever their length: a ``raw`` made from a
    value (a Cline message, an OpenCode row), an appended line without one and a unit's resume states
    kept for the import cache are copied to their size, or 10,000 small rows held until their session
    is written would take 40 MB (and 8,000 transcripts' states, held until the run ends, 124 MiB)."""
    import tracemalloc

    from toolkit.importers.output import Raw, _numbered_line

    from toolkit.importers.unchanged import entry

    values = [{"type": "say", "say": "text", "text": f"message {n}", "ts": 1_700_000_000_000 + n} for n in range(2000)]
    records = [{"kind": "event", "t": "2026-12-06T00:00:00Z", "type": "title", "title": f"title {n}"} for n in range(2000)]
    states = [{f"/claude/projects/p/{n}.jsonl": [n, "0" * 64, "x" * 300]} for n in range(2000)]  # a unit's resume states
    kept = lambda state: entry({}, [], [], state, {}, key=f"unit {len(state)}")["resume"]  # noqa: E731 - held until the run ends
    for make, items in ((lambda v: Raw(value=v).data, values), (lambda r: _numbered_line(r, 1)[0], records), (kept, states)):
        tracemalloc.start()
        try:
            held = [make(item) for item in items]
            size = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        logical = sum(len(data) for data in held)
        assert size < 2 * logical + 100 * len(held), (size, logical)


@pytest.mark.slow
def test_the_largest_transcript_held_in_memory_imports_under_120_mib(tmp_path):
    """A session of up to ROWS_IN_MEMORY records keeps its rows in memory (a third faster than a temporary
    database): about 0.8 kB a record.  Each row's ids were held in orjson's 4 kB buffers, three of them
    for a tool call: a 24 MB transcript of the benchmark's small records peaked at about 200 MiB."""
    from toolkit.importers import claude

    root, store = tmp_path / ".claude", tmp_path / "store"
    claude_transcript.write(root, claude.ROWS_IN_MEMORY)
    doc, rss = _import(tmp_path, root, store)
    [session] = doc["sessions"]
    assert session["status"] == "created" and session["source_items"] == claude.ROWS_IN_MEMORY
    assert rss < 120 * MIB, f"import of {claude.ROWS_IN_MEMORY:,} records held in memory: peak RSS {rss / MIB:.1f} MiB"


@pytest.mark.slow
def test_a_transcript_of_tiny_records_holds_no_more_rows_than_the_limit(tmp_path):
    """The rows held are counted, not the file's bytes: 200,000 one-line ``progress`` records are a
    6 MB transcript, which the limit of 24 MiB of file held whole (a 23 MB one peaked at 436 MiB)."""
    root, store = tmp_path / ".claude", tmp_path / "store"
    path = root / "projects" / "-home-ada-tiny" / "7a7a7a7a-0000-4000-8000-000000000001.jsonl"
    path.parent.mkdir(parents=True)
    first = {"type": "user", "uuid": "7a7a7a7a-0000-4000-8000-0000000000aa", "parentUuid": None, "cwd": "/home/ada/tiny",
             "sessionId": "7a7a7a7a-0000-4000-8000-000000000001", "timestamp": "2026-01-01T00:00:00.000Z",
             "message": {"role": "user", "content": "hello"}}
    path.write_bytes(orjson.dumps(first) + b"\n" + b"".join(b'{"type":"progress","n":%d}\n' % n for n in range(200_000)))
    doc, rss = _import(tmp_path, root, store)
    [session] = doc["sessions"]
    assert session["status"] == "created" and session["source_items"] == 200_001
    assert rss < 120 * MIB, f"import of 200,001 tiny records: peak RSS {rss / MIB:.1f} MiB"


@pytest.mark.slow
def test_the_longest_rollout_held_in_memory_imports_under_120_mib(tmp_path):
    """A rollout of up to ROWS_IN_MEMORY records keeps its rows in lists (about 0.6 kB a record; two thirds
    faster than a temporary database): the longest of the benchmark's small records stays under 120 MiB."""
    from toolkit.importers import codex

    home, store = tmp_path / ".codex", tmp_path / "store"
    codex_rollout.write(home, codex.ROWS_IN_MEMORY - 1)
    doc, rss = _import(tmp_path, home, store, "codex")
    [session] = doc["sessions"]
    assert session["status"] == "created" and session["source_items"] == codex.ROWS_IN_MEMORY - 1
    assert rss < 120 * MIB, f"import of {codex.ROWS_IN_MEMORY - 1:,} records held in memory: peak RSS {rss / MIB:.1f} MiB"


def _opencode_db(path: Path, sessions: int, repeats: int) -> None:
    """An OpenCode database of ``sessions`` sessions, each :func:`conversation` ``repeats`` times (3 messages, 16 parts)."""
    import json
    import sqlite3

    from tests.importers.opencode_data import PROJECT, SCHEMA, T0, conversation, session_row

    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("insert into project (id,worktree,vcs,time_created,time_updated,sandboxes) values (?,?,?,?,?,?)",
                 (PROJECT, "/home/ana/app", "git", T0, T0, "[]"))
    for s in range(sessions):
        row = session_row(f"ses_{s:08d}")
        conn.execute(f"insert into session ({','.join(row)}) values ({','.join('?' * len(row))})", tuple(row.values()))
        messages, parts = [], []
        for n in range(repeats):
            for mid, data, held in conversation(row["id"], T0 + n * 100_000, s * repeats + n):
                created = data["time"]["created"]
                messages.append((mid, row["id"], created, created, json.dumps(data)))
                parts += [(pid, mid, row["id"], created, created, json.dumps(part)) for pid, part in held]
        conn.executemany("insert into message values (?,?,?,?,?)", messages)
        conn.executemany("insert into part values (?,?,?,?,?,?)", parts)
    conn.commit()
    conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("sessions, repeats", [(1, 8_000), (2_000, 4)], ids=["one-long-session", "many-sessions"])
def test_an_opencode_database_of_152k_items_imports_under_120_mib(tmp_path, sessions, repeats):
    """24,000 messages and 128,000 parts (a 55 MB database), in one session or in 2,000: the listing keeps
    a few words a row (it kept a Ref of each: 62 MiB), a session's messages are read one by one, and a
    long session's records go to a temporary database (spill.Records).  Before: 270 MiB for the one
    session.  (Each session written costs the run about 10 kB more until its end, its outcome and what
    the index and the caches keep of its journal: 8,000 sessions of this database peak at ~150 MiB.)"""
    data = tmp_path / "opencode"
    data.mkdir()
    _opencode_db(data / "opencode.db", sessions, repeats)
    doc, rss = _import(tmp_path, data, tmp_path / "store", "opencode")
    assert len(doc["sessions"]) == sessions and doc["exit"] == 0
    assert sum(s["source_items"] for s in doc["sessions"]) == 152_000
    assert rss < 120 * MIB, f"import of {sessions:,} sessions: peak RSS {rss / MIB:.1f} MiB"


@pytest.mark.slow
def test_a_cline_task_of_16_mb_of_small_messages_imports_under_120_mib(tmp_path):
    """Cline rewrites a task's files whole, and they are parsed whole while small: an 11 MB
    api_conversation_history.json and a 5 MB ui_messages.json of small messages (95,000 of them) took
    89 MiB parsed and peaked at 198 MiB with their records.  Past cline.jsonfile.WHOLE_BYTES an array is
    read element by element, and a long task's records go to a temporary database (spill.Records)."""
    from tests.importers import cline_data

    storage = cline_data.cline_storage(tmp_path / "cfg", ["1787306400123"])
    folder = storage / "tasks" / "1787306400123"
    api = [m for n in range(7_800) for m in cline_data.api_history(cline_data.T0 + n * 20_000)]
    ui = cline_data.ui_messages()[:1] + [m for n in range(5_100) for m in cline_data.ui_messages(cline_data.T0 + n * 20_000)[1:]]
    cline_data.write(folder / "api_conversation_history.json", api)
    cline_data.write(folder / "ui_messages.json", ui)
    assert (folder / "api_conversation_history.json").stat().st_size > 10 * 10**6
    doc, rss = _import(tmp_path, storage, tmp_path / "store", "cline")
    [session] = doc["sessions"]
    assert session["records"] == session["source_items"] == len(api) + len(ui) + 1 and doc["exit"] == 0
    assert rss < 120 * MIB, f"import of a 16 MB task: peak RSS {rss / MIB:.1f} MiB"


def _long_vscode_chat(tmp_path: Path, suffix: str) -> tuple[Path, dict]:
    """Where a long agent chat's session file goes in an indexed workspace (``suffix``: .json or
    .jsonl), and its state: 100 copies of the real export's request (490 kB each)."""
    import copy
    import json
    import uuid

    from tests.importers import vscode_tree

    export = json.loads((vscode_tree.VSCODE / "completed_chat.json").read_text())
    request = export["requests"][0]
    export["requests"] = [{**copy.deepcopy(request), "requestId": f"request_{n:06d}", "timestamp": request["timestamp"] + n * 60_000}
                          for n in range(100)]
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, "long" + suffix))
    folder = vscode_tree.workspace(tmp_path / "User", "ws-long", {"folder": (tmp_path / "project").as_uri()})
    vscode_tree.write_index(folder / "state.vscdb", {sid: vscode_tree.entry(sid)})
    return folder / "chatSessions" / f"{sid}{suffix}", {"version": 3, "sessionId": sid, "creationDate": request["timestamp"], **export}


@pytest.mark.slow
def test_a_49_mb_vs_code_chat_imports_under_120_mib(tmp_path):
    """A long agent chat's .json session file (100 requests of the real export's 490 kB each): parsed
    whole it took 86 MiB and peaked at 223 MiB with its records.  Past vscode.scan.WHOLE_BYTES its
    requests are read one by one (jsonarray.array_member) and its records go to a temporary database."""
    import json

    path, state = _long_vscode_chat(tmp_path, ".json")
    path.write_bytes(json.dumps(state).encode())
    assert path.stat().st_size > 45 * 10**6
    doc, rss = _import(tmp_path, tmp_path / "User", tmp_path / "store", "vscode")
    [session] = doc["sessions"]
    assert session["records"] == 200 and doc["exit"] == 0
    assert rss < 120 * MIB, f"import of a {path.stat().st_size / MIB:.0f} MiB chat: peak RSS {rss / MIB:.1f} MiB"


@pytest.mark.slow
def test_a_compacted_49_mb_vs_code_log_imports_under_120_mib(tmp_path):
    """VS Code compacts a chat's .jsonl into one kind 0 line past 1,024 entries: a long chat is one line
    of the whole session.  Parsed whole (orjson: 150 MiB at its peak for 49 MB), and parsed once more to
    know what wrote the file, it peaked at 268 MiB.  Now the line is known by its head and its requests
    are read as they are used (replay: jsonarray.array_at, LazyList); a mutation after it still applies."""
    from tests.importers import vscode_tree

    path, state = _long_vscode_chat(tmp_path, ".jsonl")
    path.write_bytes(vscode_tree.lines({"kind": 0, "v": state}, {"kind": 1, "k": ["requests", 99, "isHidden"], "v": True},
                                       {"kind": 1, "k": ["customTitle"], "v": "Long chat"}))
    assert path.stat().st_size > 45 * 10**6
    doc, rss = _import(tmp_path, tmp_path / "User", tmp_path / "store", "vscode")
    [session] = doc["sessions"]
    assert session["records"] == 200 and doc["exit"] == 0
    records = [orjson.loads(line) for line in Path(session["path"]).read_bytes().splitlines()]
    assert records[0]["title"] == "Long chat" and [r["reason"] for r in records if r.get("type") == "orphan-message"] == ["hidden-request"] * 2
    assert rss < 120 * MIB, f"import of a {path.stat().st_size / MIB:.0f} MiB log: peak RSS {rss / MIB:.1f} MiB"


@pytest.mark.slow
def test_a_50_mb_legacy_gemini_session_imports_under_120_mib(tmp_path):
    """A legacy whole-file session-*.json (Gemini CLI before JSONL) of 50,000 messages: parsed whole it
    peaked at 256 MiB.  Past gemini.WHOLE_BYTES its messages are read one by one (array_member) and its
    records, each holding its message as bytes, go to a temporary database."""
    import json
    import uuid

    from tests.layouts.gemini import TOOL, gemini, gemini_home, meta, user

    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, "legacy"))
    messages = [m for i in range(25_000) for m in (user(f"u{i}", f"question {i} " + "q" * 200),
                                                    gemini(f"g{i}", f"answer {i} " + "a" * 600, toolCalls=[TOOL]))]
    home = gemini_home(tmp_path, {f"session-2026-01-01T00-00-{sid[:8]}.json": json.dumps({**meta(sid), "messages": messages}, indent=2).encode()})
    assert sum(p.stat().st_size for p in home.rglob("session-*.json")) > 45 * 10**6
    doc, rss = _import(tmp_path, home, tmp_path / "store", "gemini")
    [session] = doc["sessions"]
    assert session["records"] == 50_000 and session["source_items"] == 50_001 and doc["exit"] == 0
    assert rss < 120 * MIB, f"import of a 50 MB legacy session: peak RSS {rss / MIB:.1f} MiB"
