"""Codex rollouts of the pre-envelope era (issue 23; SOURCES-AGENTS §2.1: "a bare metadata first
line and bare ResponseItems, or ``record_type:"state"`` lines"), built here from that documented
shape: a known format.  fsck checks them (read-only; a cut line is a torn tail like any other),
ls and show read them, ``import --from codex`` imports them; a home holding them beside today's
rollouts is checked whole, and a stray file of another format among them is its own finding."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli, snapshot
from tests.layouts.claude import own_data_home
from tests.layouts.codex import FIXTURES, codex_home, rollouts
from tests.layouts.conftest import forget_open_files
from toolkit.fsck import check_folders, plan_repair
from toolkit.identify import sniff
from toolkit.stores import discover_all

SID = "5f3c1a2e-7b8d-4e9f-a0b1-c2d3e4f5a6b7"
NAME = f"sessions/2025/05/20/rollout-2025-05-20T09-03-11-{SID}.jsonl"


def legacy_lines(meta_keys: str = "full") -> list[bytes]:
    """A pre-envelope rollout as Codex wrote one in mid-2025 (compact JSON, one a line)."""
    meta = {"id": SID, "timestamp": "2025-05-20T14:03:11.123Z", "instructions": None,
            "git": {"commit_hash": "abc123", "branch": "main", "repository_url": "git@github.com:ada/app.git"}}
    if meta_keys == "bare":
        meta = {"id": SID, "timestamp": "2025-05-20T14:03:11.123Z"}
    elif meta_keys == "instructions":
        meta = {"id": SID, "timestamp": "2025-05-20T14:03:11.123Z", "instructions": "be terse"}
    items = [meta, {"record_type": "state"},
             {"type": "message", "id": None, "role": "user",
              "content": [{"type": "input_text", "text": "<user_instructions>\n\nbe terse\n\n</user_instructions>"}]},
             {"type": "message", "id": None, "role": "user",
              "content": [{"type": "input_text", "text": "<environment_context>\nCurrent working directory: /home/ada/app\n"
                                                         "Approval policy: on-request\n</environment_context>"}]},
             {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "why does make test fail?"}]},
             {"record_type": "state"},
             {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Looking at the Makefile"}],
              "encrypted_content": None},
             {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"make\",\"test\"]}",
              "call_id": "call_1"},
             {"type": "function_call_output", "call_id": "call_1",
              "output": "{\"output\":\"FAIL: no fixture\",\"metadata\":{\"exit_code\":2,\"duration_seconds\":0.5}}"},
             {"record_type": "state"},
             {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "A missing fixture."}]},
             {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "add it then"}]},
             {"type": "message", "id": "msg_2", "role": "assistant", "content": [{"type": "output_text", "text": "Added."}]},
             {"record_type": "state"}]
    return [json.dumps(item, separators=(",", ":")).encode() for item in items]


def legacy_home(tmp_path: Path, with_fixtures: bool = True, meta_keys: str = "full") -> Path:
    home = codex_home(tmp_path) if with_fixtures else tmp_path / ".codex"
    path = home / NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in legacy_lines(meta_keys)))
    return home


@pytest.mark.parametrize("meta_keys", ["full", "instructions", "bare"])
def test_the_first_line_of_a_pre_envelope_rollout_is_a_codex_rollout_s(meta_keys):
    assert sniff(json.loads(legacy_lines(meta_keys)[0])) == "codex"


@pytest.mark.parametrize("entry", [{"id": "e1", "parentId": None, "timestamp": "t", "message": {"role": "user"}},
                                   {"id": "e2", "timestamp": "t", "role": "user", "content": "hi"},
                                   {"id": "e3", "timestamp": "t"}])
def test_a_logician_entry_stays_a_logician_entry(entry):
    assert sniff(entry) == "logician"


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="the real fixtures are not here")
def test_a_home_with_a_pre_envelope_rollout_is_checked_whole_and_left_as_it_was(tmp_path):
    home = legacy_home(tmp_path)
    before = snapshot(tmp_path)
    for command in (("fsck",), ("fsck", "--strict"), ("fsck", "--repair"), ("ls", "--verify")):
        result = run_cli(*command, "--json", home)
        assert result.exit_code == 0, (command, result.stdout + result.stderr)
    result = run_cli("fsck", "--json", home)
    assert result.json["findings"] == [] and result.json["files"] == len(rollouts()) + 1
    assert snapshot(tmp_path) == before, "read-only, and a repair of a clean home writes nothing"


def test_ls_and_show_read_a_pre_envelope_rollout(tmp_path):
    home = legacy_home(tmp_path, with_fixtures=False)
    (row,) = run_cli("ls", "--json", home).json["sessions"]
    assert (row["id"], row["title"], row["turns"], row["project"]) == (SID, "why does make test fail?", 2, "/home/ada/app")
    shown = run_cli("show", home / NAME).stdout
    assert shown.count("## Turn ") == 2 and "## Turn 1 · 2025-05-20T14:03:11.123Z" in shown
    assert shown.index("why does make test fail?") < shown.index("**shell**") < shown.index("FAIL: no fixture") \
        < shown.index("A missing fixture.") < shown.index("add it then") < shown.index("Added.")
    assert "be terse" not in shown and "environment_context" not in shown, "injected context is not a turn"


@pytest.mark.parametrize("meta_keys", ["full", "bare"])
def test_import_from_codex_imports_a_pre_envelope_rollout(tmp_path, meta_keys):
    home = legacy_home(tmp_path, with_fixtures=False, meta_keys=meta_keys)
    store = tmp_path / "store"
    result = run_cli("import", "--from", "codex", "--source", home, "--store", store, "--json")
    assert result.exit_code == 0, result.stdout
    (session,) = result.json["sessions"]
    assert session["id"] == f"codex-{SID}"
    assert session["source_items"] == 1 + session["records"] + sum(session["skipped"].values())
    assert session["skipped"] == {"context": 2, "ui-only": 4}, "the injected messages and the state markers"
    (journal,) = store.rglob("*.jsonl")
    meta, *records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert meta["title"] == "why does make test fail?" and meta["project"] == "/home/ada/app"
    assert meta["createdAt"] == "2025-05-20T14:03:11.123Z" and meta["raw"] == json.loads(legacy_lines(meta_keys)[0])
    records = [r for r in records if r["kind"] in ("user", "assistant")]  # not the source-state event restore keeps
    shapes = [(r["kind"], r["content"] if isinstance(r["content"], str) else r["content"][0]["type"]) for r in records]
    assert shapes == [("user", "why does make test fail?"), ("assistant", "thinking"), ("assistant", "tool_use"),
                      ("user", "tool_result"), ("assistant", "text"), ("user", "add it then"), ("assistant", "text")]
    assert all(r["t"] == "2025-05-20T14:03:11.123Z" for r in records), "a bare item takes the last time seen"
    assert run_cli("fsck", "--strict", store).exit_code == 0
    (row,) = run_cli("ls", "--json", "--store", store).json["sessions"]
    assert (row["turns"], row["title"]) == (2, "why does make test fail?")
    again = run_cli("import", "--from", "codex", "--source", home, "--store", store, "--json")
    assert again.exit_code == 0 and again.json["sessions"][0]["status"] == "unchanged", "a second import adds nothing"


def test_a_stray_file_among_the_rollouts_is_its_own_finding_and_the_others_are_checked(tmp_path):
    home = legacy_home(tmp_path, with_fixtures=False)
    folder = (home / NAME).parent
    (folder / "rollout-2025-05-20T10-00-00-aaaaaaaa-1111-4222-8333-444444444444.jsonl").write_text("# Notes\n\nsome markdown\n")
    (folder / "rollout-2025-05-20T11-00-00-bbbbbbbb-1111-4222-8333-444444444444.jsonl").write_text(
        '{"id":"e1","parentId":null,"timestamp":"2025-05-20T10:00:00Z","message":{"role":"user","content":"hi"}}\n')
    result = run_cli("fsck", "--json", home)
    assert result.exit_code == 4, result.stdout + result.stderr
    codes = sorted((Path(f["path"]).name[:30], f["code"]) for f in result.json["findings"])
    assert codes == [("rollout-2025-05-20T10-00-00-aa", "unknown-format"), ("rollout-2025-05-20T11-00-00-bb", "unknown-format")]
    assert result.json["files"] == 3 and result.json["records"] == len(legacy_lines()), "the rollout beside them is checked"


SETTINGS = settings(max_examples=60, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@SETTINGS
@given(data=st.data())
def test_any_cut_of_a_pre_envelope_rollout_is_repaired_to_exactly_its_whole_records(data):
    lines = legacy_lines()
    original = b"".join(line + b"\n" for line in lines)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    k = data.draw(st.integers(0, len(lines[i])), label="bytes kept of the line")
    start = sum(len(line) + 1 for line in lines[:i])
    with tempfile.TemporaryDirectory() as tmp, own_data_home() as saved:
        journal = Path(tmp) / ".codex" / NAME
        journal.parent.mkdir(parents=True)
        journal.write_bytes(original[:start + k])
        forget_open_files()
        found = run_cli("fsck", "--json", Path(tmp) / ".codex").json["findings"]
        want = (["empty-journal"] if start + k == 0 else [] if k == 0 else ["unterminated-tail"] if k == len(lines[i])
                else ["torn-tail"])
        assert [f["code"] for f in found] == want, "a cut line of this era is a torn tail like any other"
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


def test_two_lines_run_together_are_found_and_salvage_gives_back_every_line(tmp_path):
    lines = legacy_lines()
    original = b"".join(line + b"\n" for line in lines)
    for i in range(1, len(lines) - 1):  # each line run into the next one
        with own_data_home():
            journal = tmp_path / str(i) / ".codex" / NAME
            journal.parent.mkdir(parents=True)
            journal.write_bytes(b"\n".join(lines[:i] + [lines[i] + lines[i + 1]] + lines[i + 2:]) + b"\n")
            found = run_cli("fsck", "--json", journal).json["findings"]
            assert [f["code"] for f in found] == ["spliced-records"], i
            assert run_cli("fsck", "--salvage", "--yes", journal).exit_code == 1
            assert journal.read_bytes() == original, "every bare item and state marker is a record of this file"
            assert run_cli("fsck", "--strict", journal).exit_code == 0
