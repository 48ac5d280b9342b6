"""Accounting closes for every importer (issue 23): each session's ``--json`` holds the same keys,
and ``source_items == converted + merged + sum(skipped)``, on intact sources and on copies damaged
at random (records run together, bytes cut, ``}{`` spliced in, NUL runs).  Where every record
keeps its source line under ``raw``, ``converted`` is also counted independently: the journal's
records that carry one.  Sources are real files (the shared fixtures, or built from the
documented shapes) and are never written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli, snapshot
from tests.importers.cursor_db import FIXTURES
from tests.importers.test_copilot import SID as COPILOT_SID, copilot_session, encode as copilot_encode, events as copilot_events
from tests.importers.test_cursor_accounting import transcript_tree
from tests.layouts.gemini import every_kind, gemini_home, name as gemini_name
from toolkit.lines import loads

KEYS = {"source_items", "converted", "merged", "skipped", "carried", "records", "new_records", "status"}
#: Importers whose every converted record carries its source line under ``raw`` (line-based sources).
RAW_PER_ITEM = {"claude", "codex", "copilot", "cursor", "gemini"}
DAMAGE = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def _journal(path: str) -> list[dict]:
    return [loads(line) for line in Path(path).read_bytes().splitlines()]


def closes(app: str, source: Path, store: Path, *, exact: bool = True) -> dict:
    """Import ``source``; check every session's accounting; return the report."""
    before = snapshot(source if source.is_dir() else source.parent)
    result = run_cli("import", "--from", app, "--source", source, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    report = result.json
    assert snapshot(source if source.is_dir() else source.parent) == before, "the source is never written"
    for session in report["sessions"]:
        assert KEYS <= set(session), (app, sorted(session))
        skipped = sum(session["skipped"].values())
        assert session["converted"] >= 0 and session["merged"] >= 0, (app, session)
        assert session["source_items"] == session["converted"] + session["merged"] + skipped, (app, session)
        assert session["carried"] == session["converted"] + session["merged"], (app, session)
        if exact and app in RAW_PER_ITEM and session["status"] == "created":
            records = _journal(session["path"])[1:]
            carrying = [r for r in records if "raw" in r and r.get("type") not in ("source-line", "source-state")]
            assert session["converted"] == len(carrying), (app, session["id"], session)
    return report


# -- the real fixtures ---------------------------------------------------------------------------


def test_claude_fixtures_close(tmp_path):
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES / "claude-code", root)
    report = closes("claude", root, tmp_path / "store")
    assert report["sessions"]


def test_codex_fixtures_close_and_report_merged(tmp_path):
    root = tmp_path / ".codex"
    shutil.copytree(FIXTURES / "codex", root)
    report = closes("codex", root, tmp_path / "store")
    assert report["sessions"] and all(s["merged"] >= 1 for s in report["sessions"]), "session_meta is carried by the meta"


# -- damaged copies ------------------------------------------------------------------------------


def damage(data: bytes, ops: list[tuple[str, float, int]]) -> bytes:
    """Apply ``ops`` (what, where as a fraction of the file, how much) to ``data``."""
    for what, where, size in ops:
        at = int(where * len(data))
        if what == "join":  # two records run together: a newline lost
            cut = data.find(b"\n", at)
            if 0 <= cut < len(data) - 1:
                data = data[:cut] + data[cut + 1:]
        elif what == "splice":
            data = data[:at] + b"}{" + data[at:]
        elif what == "nul":
            start = data.rfind(b"\n", 0, at) + 1
            data = data[:start] + b"\0" * size + b"\n" + data[start:]
        elif what == "cut":
            data = data[:max(at, 1)]
    return data


OPS = st.lists(st.tuples(st.sampled_from(["join", "splice", "nul", "cut"]), st.floats(0, 1), st.integers(1, 64)),
               min_size=1, max_size=3)


def _one_file(tmp_path: Path, rel: str, data: bytes) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


_CLAUDE = next(p for p in sorted((FIXTURES / "claude-code" / "projects").rglob("*.jsonl")) if "subagents" not in p.parts
               and 20_000 < p.stat().st_size < 400_000)
_CODEX = min((FIXTURES / "codex").rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_size)


@DAMAGE
@given(ops=OPS)
def test_damaged_claude_transcripts_close(tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("claude")
    rel = _CLAUDE.relative_to(FIXTURES / "claude-code")
    _one_file(tmp / ".claude", str(rel), damage(_CLAUDE.read_bytes(), ops))
    closes("claude", tmp / ".claude", tmp / "store")


@DAMAGE
@given(ops=OPS)
def test_damaged_codex_rollouts_close(tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("codex")
    rel = _CODEX.relative_to(FIXTURES / "codex")
    _one_file(tmp / ".codex", str(rel), damage(_CODEX.read_bytes(), ops))
    closes("codex", tmp / ".codex", tmp / "store")


@DAMAGE
@given(ops=OPS)
def test_damaged_copilot_logs_close(tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("copilot")
    cwd = tmp / "app"
    cwd.mkdir()
    log = copilot_session(tmp / ".copilot", COPILOT_SID, cwd)
    log.write_bytes(damage(log.read_bytes(), ops))
    closes("copilot", tmp / ".copilot", tmp / "store")


@DAMAGE
@given(ops=OPS)
def test_damaged_gemini_sessions_close(tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("gemini")
    home = gemini_home(tmp, {gemini_name(): damage(every_kind(), ops)})
    closes("gemini", home, tmp / "store")


@DAMAGE
@given(ops=OPS)
def test_damaged_cursor_agent_transcripts_close(tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("cursor")
    path = transcript_tree(tmp / "home", tmp / "gone")
    path.write_bytes(damage(path.read_bytes(), ops))
    closes("cursor", path.parent, tmp / "store")


# -- the known traps -----------------------------------------------------------------------------


def test_damage_inside_the_first_copilot_line_loses_only_that_line(tmp_path):
    cwd = tmp_path / "app"
    cwd.mkdir()
    log = copilot_session(tmp_path / ".copilot", COPILOT_SID, cwd)
    data = log.read_bytes()
    log.write_bytes(data.replace(b'"data"', b'"da}{ta"', 1))  # the first record's envelope, damaged
    report = closes("copilot", tmp_path / ".copilot", tmp_path / "store")
    assert not [f for f in report["findings"] if f["code"] == "unknown-format"]
    (session,) = report["sessions"]
    assert session["status"] == "created" and session["converted"] >= 7
    meta = _journal(session["path"])[0]
    assert "raw" not in meta, "the meta carries line 1's bytes only when line 1 is a session.start"
    assert session["source_items"] == 15 and sum(session["skipped"].values()) >= 1


def test_intact_copilot_log_accounting(tmp_path):
    cwd = tmp_path / "app"
    cwd.mkdir()
    copilot_session(tmp_path / ".copilot", COPILOT_SID, cwd)
    (session,) = closes("copilot", tmp_path / ".copilot", tmp_path / "store")["sessions"]
    assert (session["source_items"], session["converted"], session["merged"], session["skipped"]) == (15, 7, 5, {"ui-only": 3})


@pytest.mark.parametrize("app", ["claude", "codex", "copilot", "cursor", "gemini"])
def test_records_run_together_are_named(tmp_path, app):
    """A line holding two whole records: a source-joined finding naming the file and the line."""
    if app == "claude":
        src = _one_file(tmp_path / ".claude", str(_CLAUDE.relative_to(FIXTURES / "claude-code")), _CLAUDE.read_bytes())
        source = tmp_path / ".claude"
    elif app == "codex":
        src = _one_file(tmp_path / ".codex", str(_CODEX.relative_to(FIXTURES / "codex")), _CODEX.read_bytes())
        source = tmp_path / ".codex"
    elif app == "copilot":
        (tmp_path / "app").mkdir()
        src = copilot_session(tmp_path / ".copilot", COPILOT_SID, tmp_path / "app")
        source = tmp_path / ".copilot"
    elif app == "cursor":
        src = transcript_tree(tmp_path / "home", tmp_path / "gone")
        source = src.parent
    else:
        source = gemini_home(tmp_path, {gemini_name(): every_kind()})
        src = next(source.rglob("*.jsonl"))
    lines = src.read_bytes().split(b"\n")
    src.write_bytes(b"\n".join(lines[:2] + [lines[2] + lines[3]] + lines[4:]))  # lines 3 and 4 run together
    report = closes(app, source, tmp_path / "store")
    joined = [f for f in report["findings"] if f["code"] == "source-joined"]
    assert [(f["path"], f["line"]) for f in joined] == [(str(src), 3)], report["findings"]


def test_an_empty_cursor_agent_transcript_is_said(tmp_path):
    path = transcript_tree(tmp_path / "home", tmp_path / "gone")
    path.write_bytes(b"")
    report = closes("cursor", path.parent, tmp_path / "store")
    assert not report["sessions"]
    assert [f["code"] for f in report["findings"] if f["path"] == str(path)] == ["source-skipped"]
    claude = tmp_path / ".claude" / "projects" / "-home-ana-app"
    claude.mkdir(parents=True)
    (claude / "0f3c2a9e-5b1d-4c7e-9a2f-1e2d3c4b5a69.jsonl").write_bytes(b"")
    twin = closes("claude", tmp_path / ".claude", tmp_path / "store2")
    ours = [f["message"] for f in report["findings"] if f["path"] == str(path)]
    theirs = [f["message"] for f in twin["findings"] if f["code"] == "source-skipped"]
    assert ours == theirs, "the same warning as a zero-byte Claude Code transcript"


# -- intact sources of the other importers ------------------------------------------------------


def test_vscode_tree_closes(tmp_path):
    from tests.importers.vscode_tree import build_tree

    build_tree(tmp_path)
    report = closes("vscode", tmp_path / "User", tmp_path / "store")
    assert report["sessions"]


def test_opencode_db_closes(tmp_path):
    from tests.importers.opencode_data import make_db, session_row

    (tmp_path / "opencode").mkdir()
    make_db(tmp_path / "opencode" / "opencode.db", [session_row("ses_abc")])
    report = closes("opencode", tmp_path / "opencode", tmp_path / "store")
    assert report["sessions"]


def test_cursor_db_closes(tmp_path):
    from tests.importers.cursor_db import modern_user_dir

    project = tmp_path / "app"
    project.mkdir()
    info = modern_user_dir(tmp_path, project)
    report = closes("cursor", tmp_path / "User", tmp_path / "store")
    info["conn"].close() if isinstance(info, dict) and hasattr(info.get("conn"), "close") else None
    assert report["sessions"]


def test_a_markdown_file_named_jsonl_is_one_unknown_format_finding(tmp_path):
    """Identify before reading: not "an empty VS Code session with 638 unreadable lines"."""
    from tests.importers.vscode_tree import workspace

    user = tmp_path / "User"
    ws = workspace(user, "ws-md", {"folder": (tmp_path / "app").as_uri()})
    (ws / "chatSessions").mkdir(parents=True, exist_ok=True)
    notes = ws / "chatSessions" / "notes.jsonl"
    notes.write_bytes(b"".join(b"# heading %d\n\nsome *text* {not json}\n" % i for i in range(200)))
    report = closes("vscode", user, tmp_path / "store")
    about = [f for f in report["findings"] if f["path"] == str(notes)]
    assert [f["code"] for f in about] == ["unknown-format"], about
    assert not [s for s in report["sessions"] if "notes" in s["id"]]
