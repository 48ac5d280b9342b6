"""Claude Code and Codex CLI trees: a symlinked folder in the tool's tree (a project folder, a
session's subagents folder, a Codex ``sessions/YYYY/MM/DD`` folder) or in levelsess's own data
folder is never written through (issue 28).  The transcripts are built here, so these run
without the shared fixtures."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli, snapshot
from tests.layouts.claude import data_dir, own_data_home
from tests.layouts.codex import envelope, new_turn
from tests.layouts.conftest import forget_open_files

EXAMPLES = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SESSION = "00000000-0000-4000-8000-0000000000cd"
ROLLOUT = "rollout-2026-04-10T09-55-11-019d781a-be34-7041-abb1-577f9360b907.jsonl"


def link_out(folder: Path, outside: Path) -> Path:
    """Move ``folder`` to ``outside`` and leave a symlink to it in its place; return ``outside``."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), str(outside))
    os.symlink(outside, folder, target_is_directory=True)
    return outside


def claude_tree(base: Path) -> tuple[Path, Path, Path]:
    """``.claude`` with one session whose chain breaks at a dangling parent and whose subagent
    transcript ends torn; returns (root, session, subagent)."""
    project = base / ".claude" / "projects" / "-p"
    at = {"isSidechain": False, "sessionId": SESSION, "cwd": "/p", "timestamp": "2026-12-01T00:00:00.000Z"}

    def message(uuid, parent, kind, text):
        body = {"role": kind, "content": text} if kind == "user" else {
            "id": f"m-{uuid}", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}]}
        return {"parentUuid": parent, **at, "type": kind, "uuid": uuid, "message": body}

    records = [message("u1", None, "user", "q1"), message("a1", "u1", "assistant", "a"),
               message("u2", "gone", "user", "q2"), message("a2", "u2", "assistant", "b")]
    session = project / f"{SESSION}.jsonl"
    project.mkdir(parents=True)
    session.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    subagent = project / SESSION / "subagents" / "agent-x1.jsonl"
    subagent.parent.mkdir(parents=True)
    first = {**message("s1", None, "user", "sub"), "isSidechain": True, "agentId": "x1"}
    subagent.write_bytes(json.dumps(first).encode() + b'\n{"parentUuid":"s1","isSid')
    return base / ".claude", session, subagent


def codex_home(base: Path) -> tuple[Path, Path]:
    """``.codex`` with one rollout in ``sessions/2026/04/10`` that ends torn."""
    day = base / ".codex" / "sessions" / "2026" / "04" / "10"
    day.mkdir(parents=True)
    meta = envelope("2026-04-10T09:55:11.000Z", "session_meta", {"id": "019d781a-be34-7041-abb1-577f9360b907",
                    "timestamp": "2026-04-10T09:55:11.000Z", "cwd": "/p", "originator": "codex_cli_rs", "cli_version": "0.1"})
    lines = [meta, *new_turn("2026-04-10T09:56:00.000Z", "hi", "hello")]
    rollout = day / ROLLOUT
    rollout.write_bytes(b"".join(line + b"\n" for line in lines) + b'{"timestamp":"2026')
    return base / ".codex", rollout


def refusals(result) -> list[dict]:
    return [f for f in result.json["findings"] if f["code"] == "symlinked-folder" and f["severity"] == "error"]


def test_the_trees_repair_as_usual_without_a_link(tmp_path):
    """The baseline the tests below take away: each step does write when nothing is a link."""
    root, session, subagent = claude_tree(tmp_path)
    home, rollout = codex_home(tmp_path)
    assert run_cli("fsck", "--relink", "--yes", "--json", root).exit_code == 1
    assert not subagent.read_bytes().endswith(b"Sid")
    assert run_cli("fsck", "--repair", "--json", home).exit_code == 1
    assert rollout.read_bytes().endswith(b"\n")


@EXAMPLES
@given(where=st.sampled_from(["projects/-p", f"projects/-p/{SESSION}", f"projects/-p/{SESSION}/subagents"]),
       relink=st.booleans())
def test_a_symlinked_folder_in_a_claude_code_project_is_never_repaired_through(where, relink):
    forget_open_files()
    with tempfile.TemporaryDirectory() as tmp, own_data_home():
        base = Path(tmp)
        root, session, subagent = claude_tree(base)
        target = link_out(root / where, base / "elsewhere")
        before = snapshot(target)
        check = run_cli("fsck", "--json", root)
        assert {f["path"] for f in check.json["findings"] if f["code"] == "symlinked-folder"} == {str(root / where)}
        args = ("--relink", "--yes") if relink else ("--repair",)
        result = run_cli("fsck", "--json", *args, root)
        relinked = relink and where != "projects/-p"  # the session's own journal is outside the link: relinked as usual
        assert result.exit_code == (5 if relinked else 4), result.stdout
        assert snapshot(target) == before
        assert subagent.read_bytes().endswith(b'"isSid'), "the torn subagent transcript is as it was"
        assert not data_dir().exists() or not list(data_dir().rglob("*.tail")), "no tail saved for a trim not made"
        steps = {f["message"].split(")")[0] for f in refusals(result)}
        expected = {"not repaired (trim-tail"} | ({"not repaired (relink"} if relink and where == "projects/-p" else set())
        assert steps == expected, result.stdout
        assert all(f"run levelsess on {target} directly" in f["message"] for f in refusals(result))


@EXAMPLES
@given(where=st.sampled_from(["sessions", "sessions/2026", "sessions/2026/04", "sessions/2026/04/10"]))
def test_a_symlinked_folder_in_a_codex_sessions_tree_is_never_repaired_through(where):
    forget_open_files()
    with tempfile.TemporaryDirectory() as tmp, own_data_home():
        base = Path(tmp)
        home, rollout = codex_home(base)
        target = link_out(home / where, base / "elsewhere")
        before = snapshot(target)
        result = run_cli("fsck", "--repair", "--json", home)
        assert result.exit_code == 4, result.stdout
        assert snapshot(target) == before
        (refused,) = refusals(result)
        assert refused["path"] == str(rollout) and str(home / where) in refused["message"]
        assert not data_dir().exists() or not list(data_dir().rglob("*.tail"))


@EXAMPLES
@given(depth=st.integers(0, 3), layout=st.sampled_from(["claude", "codex"]))
def test_a_symlinked_folder_in_levelsess_own_data_folder_gets_nothing(depth, layout):
    """``<data>/claude-code/<tree>-<hash>/recovered/<folder>``: each folder on the way may be the link."""
    forget_open_files()
    with tempfile.TemporaryDirectory() as tmp, own_data_home():
        base = Path(tmp)
        if layout == "claude":
            tree, _session, journal = claude_tree(base)
            (tree / "projects" / "-p" / f"{SESSION}.jsonl").write_bytes(b"")  # only the torn subagent to repair
        else:
            tree, journal = codex_home(base)
        assert run_cli("fsck", "--repair", tree).exit_code == 1  # learn where its tails go, then put the torn tail back
        (saved,) = data_dir().rglob("*.tail")
        with open(journal, "ab") as handle:
            handle.write(saved.read_bytes())
        saved.unlink()
        state = next(p for p in saved.parents if p.parent.parent == data_dir())  # <data>/<layout>/<tree>-<hash>
        chain = [state.parent, state, state / "recovered", saved.parent]  # …/recovered/<folder>
        target = link_out(chain[depth], base / "elsewhere")
        before, torn = snapshot(target), journal.read_bytes()
        check = run_cli("fsck", "--json", tree)
        assert str(chain[depth]) in {f["path"] for f in check.json["findings"] if f["code"] == "symlinked-folder"}
        result = run_cli("fsck", "--repair", "--json", tree)
        assert result.exit_code == 4, result.stdout
        assert snapshot(target) == before and journal.read_bytes() == torn
        (refused,) = refusals(result)
        assert str(chain[depth]) in refused["message"] and "replace the symlink with a real folder" in refused["message"]
