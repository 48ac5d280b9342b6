"""`ls` names each session's project (issue 23): a column in the table for every layout (LevelCode's
project, Claude Code's and Codex's cwd, Gemini's project root) and the whole path in --json; a long
path is cut in the middle only in the terminal table, so the table still fits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT, PROJECT_SLUG, make_store, on_a_terminal, run_cli, session_records, write_journal
from tests.layouts.gemini import ROOT as GEMINI_ROOT, gemini_home

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path("/work/shared/fixtures")
DEEP = "/home/ada/" + "a-rather-long-folder-name/" * 4 + "thin.ly"


def _cli(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "80", **(env or {})}
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True, env=environ, timeout=120)


def _cwds(path: Path) -> set[str]:
    """Every "cwd" value a transcript holds (Claude Code records, Codex session_meta payloads)."""
    found = re.findall(r'"cwd":\s*("(?:[^"\\]|\\.)*")', path.read_text(errors="replace"))
    return {orjson.loads(value) for value in found}


def test_levelcode_rows_name_their_project_from_the_journal_or_the_index(tmp_path):
    store = make_store(tmp_path / "store", sessions=2)
    scanned = run_cli("ls", "--json", "--store", store).json["sessions"]
    assert [r["project"] for r in scanned] == [PROJECT, PROJECT]
    assert run_cli("reindex", "--store", store).exit_code == 0
    indexed = run_cli("ls", "--json", "--store", store).json["sessions"]
    assert [r["project"] for r in indexed] == [PROJECT_SLUG, PROJECT_SLUG]  # the index holds no path: its folder


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_claude_code_and_codex_rows_name_the_cwd_they_ran_in(tmp_path, tool):
    shutil.copytree(FIXTURES / tool, tmp_path / tool)
    rows = run_cli("ls", "--json", "--limit", "0", tmp_path / tool).json["sessions"]
    named = [r for r in rows if r["project"]]
    assert named, rows[:2]
    for row in named:
        assert row["project"] in _cwds(Path(row["path"])), row


def test_gemini_rows_name_the_project_root(tmp_path):
    home = gemini_home(tmp_path)
    rows = run_cli("ls", "--json", home).json["sessions"]
    assert rows and all(r["project"] == GEMINI_ROOT for r in rows)


def test_every_row_of_the_table_shows_its_project_wide_or_as_cards(tmp_path):
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    rows = run_cli("ls", "--json", "--limit", "5", tmp_path / "codex").json["sessions"]
    wide = _cli("ls", "--limit", "5", tmp_path / "codex", env={"COLUMNS": "250"}).stdout.decode()
    lines = [line for line in wide.splitlines() if any(r["id"] in line for r in rows)]
    assert len(lines) == len(rows) and all(r["project"] in line for r, line in zip(rows, lines)), wide
    narrow = _cli("ls", "--limit", "5", tmp_path / "codex").stdout.decode()  # 80 columns: one card per session
    assert [line.strip() for line in narrow.splitlines() if line.strip().startswith("project:")] == [
        f"project: {r['project']}" for r in rows], narrow


def _deep_store(root: Path) -> Path:
    for n in range(3):
        sid = f"2026-11-30T09-00-0{n}-a1b{n}"
        records = session_records(sid, turns=1 + n)
        records[0]["project"] = DEEP
        write_journal(root / "-home-ada-deep" / f"{sid}.jsonl", records)
    return root


def test_a_long_project_path_is_cut_in_the_middle_on_a_terminal_and_whole_in_json(tmp_path):
    store = _deep_store(tmp_path / "store")
    code, shown = on_a_terminal("ls", "--store", str(store), env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert code == 0
    rows = [line for line in shown.replace("\r\n", "\n").split("\n") if "a1b" in line]
    assert len(rows) == 3, shown  # a table: one line per session, not cards
    assert all(len(line) <= 120 and "\u2026" in line and "thin.ly" in line and "/home/" in line for line in rows), shown
    assert DEEP not in shown
    assert [r["project"] for r in run_cli("ls", "--json", "--store", store).json["sessions"]] == [DEEP] * 3
    piped = _cli("ls", "--store", store, env={"COLUMNS": "120", "PYTHONIOENCODING": "ascii"}).stdout.decode("ascii")
    assert "..." in piped and "\\u" not in piped  # the cut is ASCII where the stream is


def test_a_project_that_fits_is_never_cut(tmp_path):
    store = _deep_store(tmp_path / "store")
    wide = _cli("ls", "--store", store, env={"COLUMNS": "300"}).stdout.decode()
    assert wide.count(DEEP) == 3 and "\u2026" not in wide
