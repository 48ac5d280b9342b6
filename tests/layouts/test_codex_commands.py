"""The Codex CLI layout on copies of the real rollouts: every command leaves a clean Codex home
exactly as it was; ls/show/export read it; fsck finds a torn tail and `--repair` saves it outside
the tree before trimming; the layout's own rules (session_meta first, ordinals increasing)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli, snapshot
from tests.layouts.claude import own_data_home
from tests.layouts.codex import BIG, FIXTURES, SMALL, SUBAGENT, codex_home, envelope, lines_of, rollouts
from tests.layouts.conftest import forget_open_files
from toolkit.fsck import check_folders, plan_repair
from toolkit.layouts import CODEX
from toolkit.layouts.codex import default_roots
from toolkit.stores import discover, discover_all

if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)

COMMANDS = [("fsck",), ("fsck", "--repair"), ("fsck", "--salvage", "--yes"), ("fsck", "--strict"), ("reindex",),
            ("reindex", "--check"), ("migrate",), ("migrate", "--dry-run"), ("ls",), ("ls", "--verify"), ("locks",)]
WHERE = {"home": ".", "sessions": "sessions", "archived": "archived_sessions", "date": "sessions/2026/04/10",
         "year": "sessions/2026", "rollout": SUBAGENT}


@pytest.mark.parametrize("where", sorted(WHERE))
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_clean_codex_home_is_left_exactly_as_it_was(tmp_path, command, where):
    home = codex_home(tmp_path)
    for name, data in (("history.jsonl", b'{"session_id":"s","ts":1,"text":"hi"}\n'),
                       ("session_index.jsonl", b'{"id":"x","thread_name":"n","updated_at":"t"}\n'),
                       ("state_5.sqlite", b"SQLite format 3\0"), ("logs_2.sqlite", b"")):
        (home / name).write_bytes(data)  # beside the rollouts, never read as journals
    before = snapshot(tmp_path)
    result = run_cli(*command, home / WHERE[where])
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code == 0, result.stdout + result.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("where", sorted(WHERE))
def test_discovery_finds_the_rollouts_and_nothing_else(tmp_path, where):
    home = codex_home(tmp_path)
    (home / "history.jsonl").write_bytes(b'{"session_id":"s","ts":1,"text":"hi"}\n')
    folders = discover(home / WHERE[where])
    assert {f.layout for f in folders} == {CODEX}
    journals = {str(j.relative_to(home)) for f in folders for j in f.journals}
    expected = {r for r in rollouts() if where in ("home", "rollout") and (where == "home" or r == SUBAGENT)
                or r.startswith(WHERE[where] + "/")}
    assert journals == expected
    assert {f.store for f in folders} == {home}, "saved bytes are filed under the home, whatever was named"


def test_default_roots_honour_codex_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    assert default_roots()[0] == tmp_path / "elsewhere" and Path.home() / ".codex" in default_roots()


def test_ls_lists_each_rollout_with_its_facts(tmp_path):
    home = codex_home(tmp_path)
    rows = {r["id"]: r for r in run_cli("ls", "--json", home).json["sessions"]}
    assert len(rows) == len(rollouts())
    for rel in rollouts():
        lines = lines_of((FIXTURES / rel).read_bytes())
        records = [json.loads(line) for line in lines]
        meta = records[0]["payload"]
        row = rows[meta["id"]]
        prompts = [r["payload"]["message"] for r in records if r["type"] == "event_msg" and r["payload"]["type"] == "user_message"]
        models = [r["payload"]["model"] for r in records if r["type"] == "turn_context"]
        assert row["layout"] == "codex" and row["state"] == "clean" and row["project"] == meta["cwd"]
        assert row["turns"] == len(prompts) and row["model"] == models[-1]
        assert row["title"] == " ".join(prompts[0].split())[:120]
        assert row["createdAt"] == meta["timestamp"] and row["updatedAt"] == records[-1]["timestamp"]


def test_show_and_export_render_every_rollout(tmp_path):
    home = codex_home(tmp_path)
    for rel in rollouts():
        sid = Path(rel).stem[-36:]
        shown = run_cli("show", sid, "--in", home)
        assert shown.exit_code == 0 and shown.stdout.startswith("# ")
        records = [json.loads(line) for line in lines_of((FIXTURES / rel).read_bytes())]
        prompts = [r for r in records if r["type"] == "event_msg" and r["payload"]["type"] == "user_message"]
        assert shown.stdout.count("### You") == len(prompts), "each typed prompt once; injected context not shown"
        answer = next(r["payload"]["message"] for r in records if r["type"] == "event_msg" and r["payload"]["type"] == "agent_message")
        assert shown.stdout.count(answer.splitlines()[0]) >= 1
        exported = tmp_path / f"{sid}.jsonl"
        assert run_cli("export", sid, "--in", home, "-f", "jsonl", "-o", exported).exit_code == 0
        assert exported.read_bytes() == (FIXTURES / rel).read_bytes()
        document = run_cli("export", sid, "--in", home, "-f", "json").json
        assert len(document["records"]) == len(records)


def test_a_torn_tail_is_found_and_repair_saves_it_outside_the_tree_then_trims(tmp_path):
    home = codex_home(tmp_path)
    rollout = home / SMALL
    whole = rollout.read_bytes()
    tail = envelope("2026-04-01T03:33:00.000Z", "event_msg", {"type": "token_count", "info": None})[:37]
    rollout.write_bytes(whole + tail)
    check = run_cli("fsck", "--json", home)
    assert check.exit_code == 4
    (torn,) = [f for f in check.json["findings"] if f["code"] == "torn-tail"]
    assert torn["path"] == str(rollout) and torn["offset"] == len(whole) and torn["line"] == len(lines_of(whole)) + 1
    before = {p for p in home.rglob("*")}
    repaired = run_cli("fsck", "--repair", "--json", home)
    assert repaired.exit_code == 1, repaired.stdout
    assert rollout.read_bytes() == whole
    assert {p for p in home.rglob("*")} == before, "nothing new inside the Codex home"
    saved = [p for p in Path.home().joinpath(".local", "share", "levelsess", "codex").rglob("*") if p.is_file()]
    assert [p.read_bytes() for p in saved] == [tail], "the cut bytes, saved in levelsess's data folder"
    (finding,) = [f for f in repaired.json["findings"] if f["code"] == "torn-tail"]
    assert finding["repaired"] and Path(finding["saved_to"]) in saved
    assert run_cli("fsck", home).exit_code == 0


def test_a_live_writer_is_in_use_and_its_rollout_is_not_repaired(tmp_path):
    home = codex_home(tmp_path)
    rollout = home / SMALL
    whole = rollout.read_bytes()
    rollout.write_bytes(whole + b'{"timestamp":"2026')
    writer = subprocess.Popen([sys.executable, "-c", f"import time; f = open({str(rollout)!r}, 'ab'); print('open', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    try:
        assert writer.stdout.readline() == b"open\n"
        forget_open_files()
        result = run_cli("fsck", "--repair", "--json", home)
        assert result.exit_code == 4
        assert any(f["code"] == "in-use" and f["path"] == str(rollout) for f in result.json["findings"])
        assert rollout.read_bytes() == whole + b'{"timestamp":"2026'
    finally:
        writer.kill()
        writer.wait()


def _rollout(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / ".codex" / "sessions" / "2026" / "05" / "01" / "rollout-2026-05-01T00-00-00-019d0000-0000-7000-8000-000000000000.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _meta(sid: str = "019d0000-0000-7000-8000-000000000000") -> bytes:
    return envelope("2026-05-01T00:00:00.000Z", "session_meta", {"id": sid, "timestamp": "2026-05-01T00:00:00.000Z",
                                                                  "cwd": "/p", "cli_version": "0.121.0"})


def _event(n: int | None, kind: str = "token_count") -> bytes:
    record = {"timestamp": "2026-05-01T00:00:01.000Z", **({"ordinal": n} if n is not None else {}), "type": "event_msg",
              "payload": {"type": kind}}
    return json.dumps(record, separators=(",", ":")).encode()


def _codes(path: Path) -> list[tuple[str, int]]:
    findings = run_cli("fsck", "--json", path).json["findings"]
    return [(f["code"], f["line"]) for f in findings]


def test_a_rollout_whose_first_record_is_not_session_meta_is_missing_meta(tmp_path):
    path = _rollout(tmp_path, [_event(None, "task_started"), _meta()])
    assert _codes(path) == [("missing-meta", 1)]


def test_a_forks_second_session_meta_is_fine(tmp_path):
    assert _codes(_rollout(tmp_path, [_meta(), _meta("019d0000-0000-7000-8000-00000000beef"), _event(None)])) == []


def test_ordinals_must_increase(tmp_path):
    path = _rollout(tmp_path, [_meta(), _event(1), _event(2), _event(2), _event(5), _event(3)])
    assert _codes(path) == [("seq-duplicate", 4), ("seq-gap", 6)]


def test_a_record_not_shaped_like_a_rollout_record_is_invalid(tmp_path):
    path = _rollout(tmp_path, [_meta(), b'{"timestamp":"t","type":"event_msg","payload":"x"}', _event(None)])
    assert _codes(path) == [("invalid-record", 2)]


# -- truncation property over a real rollout -----------------------------------------------------

SETTINGS = settings(max_examples=60, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CUT_FILES = [SMALL, SUBAGENT]


@settings(SETTINGS)
@given(data=st.data())
def test_any_cut_of_a_real_rollout_is_repaired_to_exactly_its_whole_records(data):
    rel = data.draw(st.sampled_from(CUT_FILES), label="rollout")
    original = (FIXTURES / rel).read_bytes()
    lines = lines_of(original)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    k = data.draw(st.integers(0, len(lines[i])), label="bytes kept of the line")
    start = sum(len(line) + 1 for line in lines[:i])
    with tempfile.TemporaryDirectory() as tmp, own_data_home() as saved:
        journal = Path(tmp) / ".codex" / rel
        journal.parent.mkdir(parents=True)
        journal.write_bytes(original[:start + k])
        forget_open_files()
        plan_repair(check_folders(discover_all([Path(tmp) / ".codex"]))).execute()
        after = journal.read_bytes()
        tails = [p.read_bytes() for p in saved.rglob("*") if p.is_file()]
        if k == 0:
            assert after == original[:start] and tails == []
        elif k == len(lines[i]):
            assert after == original[:start + k] + b"\n" and tails == [], "a whole record lacking its newline is kept"
        else:
            assert after == original[:start], "exactly the cut-off record is removed, every whole one kept"
            assert tails == [lines[i][:k]], "and its bytes are saved, outside the Codex home"
        assert not any(p.name.startswith(".levelsess") for p in Path(tmp).rglob("*"))
        again = plan_repair(check_folders(discover_all([Path(tmp) / ".codex"])))
        assert again.actions == (), "a second repair has nothing to do"


def test_the_big_rollout_checks_clean_with_strict(tmp_path):
    home = codex_home(tmp_path)
    result = run_cli("fsck", "--strict", "--json", home / BIG)
    assert result.exit_code == 0 and result.json["findings"] == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.sampled_from([10, 4_000, (1 << 14) - 60, (1 << 14) + 7, 40_000, (1 << 16) + 3, 200_000, (1 << 20) + 10]),
       blank=st.sampled_from([b"", b"\n", b"\n\n  \n", b"\0\0\n"]), bom=st.booleans(), terminated=st.booleans())
def test_first_record_reads_the_whole_first_line_whatever_its_length(tmp_path, size, blank, bom, terminated):
    """first_record reads on until the first line's newline (at most 1 MiB): a session_meta of any
    length, after blank lines or a BOM, parses whole; one cut at 1 MiB is a partial record."""
    from toolkit.layouts.codex import first_record

    line = envelope("2026-05-05T00:00:00.000Z", "session_meta",
                    {"id": "019e0000-0000-7000-8000-000000000001", "base_instructions": {"text": "x" * size}})
    path = tmp_path / f"rollout-{size}-{len(blank)}-{bom}-{terminated}.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + blank + line + (b"\n" + line + b"\n" if terminated else b""))
    found, partial = first_record(path)
    if 3 * bom + len(blank) + len(line) < 1 << 20:
        assert found == json.loads(line) and partial is False
    else:  # cut at 1 MiB: what it holds could be the start of a record
        assert found is None and partial is True
