"""`levelsess restore` of kept Gemini CLI sessions, on folders built from SOURCES-MORE §1.9's shapes
(every line kind: metadata, user/gemini/info/error/warning messages, updates by a repeated id,
``$set``, ``$set.messages``, ``$rewindTo``; a subagent session): a session that is gone comes back
byte-identical under ``tmp/<project>/chats``, and an independent reader of §1.5 lists it with
every message; a second run changes nothing; undo puts every byte back; a cut file gets only its
missing bytes; other bytes are refused; a running Gemini is refused; any prefix becomes the source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli
from tests.layouts.gemini import (G1, G2, SID, SLUG, U1, U2, every_kind, gemini, gemini_home, gemini_lists, line,
                                  load_like_gemini, meta, name, user)
from tests.restore.kit import do_import, last_state, restore, sha256, tree

SUB = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
SUBFILE = f"{SID}/{SUB}.jsonl"


@pytest.fixture(autouse=True)
def no_gemini_home(monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)


def rich_session() -> bytes:
    """Every line kind Gemini writes (§1.2), updates, a rewind and a $set.messages rewrite."""
    notes = [{"id": f"n{n}", "timestamp": "2026-08-21T16:17:00.000Z", "type": kind, "content": f"an {kind}"}
             for n, kind in enumerate(("info", "error", "warning"))]
    rewrite = {"$set": {"messages": [user(U1, "add a README (masked)"), gemini(G2, "Here is a README."), user(U2, "thanks")],
                        "lastUpdated": "2026-08-21T16:20:00.000Z"}}
    return (every_kind() + b"".join(map(line, notes)) + line(rewrite)
            + line(gemini("g3", "You're welcome.")) + line({"$set": {"sessionId": SID}}))


def subagent() -> bytes:
    return b"".join(map(line, [meta(SUB, kind="subagent"), user("s1", "look at the repo"), gemini("s2", "done")]))


def _kept(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    files = {name(): rich_session(), SUBFILE: subagent()}
    home = gemini_home(tmp_path, files)
    store = tmp_path / "store"
    do_import("gemini", home, store)
    return home, store, files


def chats(home: Path) -> Path:
    return home / "tmp" / SLUG / "chats"


def test_a_lost_session_comes_back_byte_identical_listed_by_gemini_and_undo_takes_it_back(tmp_path):
    home, store, files = _kept(tmp_path)
    listed = load_like_gemini(chats(home) / name())
    assert gemini_lists(chats(home)) == [SID] and len(listed["messages"]) == 4
    for rel in files:
        (chats(home) / rel).unlink()
    gone = tree(home)
    plan = restore(SID[:8], "--store", store)
    steps = {Path(f["path"]).relative_to(chats(home)).as_posix(): f for f in plan.json["sessions"][0]["files"]}
    assert plan.exit_code == 4 and {k: (v["action"], v["bytes"]) for k, v in steps.items()} == {
        rel: ("create", len(data)) for rel, data in files.items()}
    assert tree(home) == gone, "the plan writes nothing"
    done = restore(SID[:8], "--store", store, "--yes")
    assert done.exit_code == 0, done.stdout
    for rel, data in files.items():
        assert (chats(home) / rel).read_bytes() == data
    journal = next(store.rglob(f"gemini-{SID}.jsonl"))
    assert last_state(journal)["sha256"] == sha256(files[name()])
    assert gemini_lists(chats(home)) == [SID], "Gemini lists it again"
    assert load_like_gemini(chats(home) / name()) == listed, "with every message, as before"
    assert done.json["sessions"][0]["next"] == f"cd /home/ana/src/my-app && gemini --resume {SID}"
    assert run_cli("fsck", home).exit_code == 0
    restored = tree(home)
    again = restore(SID, "--store", store, "--yes")
    assert again.exit_code == 0 and again.json["stamp"] is None and tree(home) == restored
    assert run_cli("restore", "--undo", done.json["stamp"]).exit_code == 0
    assert tree(home) == gone


def test_a_cut_session_gets_only_its_missing_lines_and_other_bytes_are_refused(tmp_path):
    home, store, files = _kept(tmp_path)
    session = chats(home) / name()
    source = files[name()]
    session.write_bytes(source[:source.index(b"\n", 400) + 1])
    done = restore(SID, "--store", store, "--yes")
    step = done.json["sessions"][0]["files"][0]
    assert done.exit_code == 0 and step["action"] == "append" and session.read_bytes() == source
    other = source[:100] + b"X" + source[101:]
    session.write_bytes(other)
    refused = restore(SID, "--store", store, "--yes")
    (finding,) = refused.json["findings"]
    assert refused.exit_code == 4 and finding["code"] == "restore-conflict" and session.read_bytes() == other
    assert str(session) in finding["message"] and "gemini-" + SID in finding["message"]


def test_to_writes_under_another_gemini_home(tmp_path):
    home, store, files = _kept(tmp_path)
    fresh = tmp_path / "elsewhere" / ".gemini"
    done = restore(SID, "--store", store, "--to", fresh, "--yes")
    assert done.exit_code == 0, done.stdout
    assert {rel: (chats(fresh) / rel).read_bytes() for rel in files} == files
    assert gemini_lists(chats(fresh)) == [SID]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names processes the Linux way")
def test_a_running_gemini_in_the_project_is_refused(tmp_path):
    home, store, files = _kept(tmp_path)
    project = tmp_path / "my-app"
    project.mkdir()
    (home / "tmp" / SLUG / ".project_root").write_text(str(project))
    (chats(home) / name()).unlink()
    before = tree(home)
    exe = tmp_path / "bin" / "gemini"
    exe.parent.mkdir()
    exe.symlink_to(os.path.realpath(sys.executable))
    proc = subprocess.Popen([str(exe), "-c", "import time; print('ok', flush=True); time.sleep(120)"], cwd=project,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ok"
        result = restore(SID, "--store", store, "--yes")
        assert result.exit_code == 4 and {f["code"] for f in result.json["findings"]} == {"in-use"}
        assert "Gemini CLI is running" in result.json["findings"][0]["message"]
        assert tree(home) == before
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def kept_once(tmp_path_factory):
    base = tmp_path_factory.mktemp("gkept")
    home = gemini_home(base, {name(): rich_session()})
    store = base / "store"
    do_import("gemini", home, store)
    return store, (chats(home) / name()).read_bytes()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.one_of(st.integers(min_value=-1, max_value=10**6), st.tuples(st.just("line"), st.integers(0, 100))),
       extra=st.one_of(st.just(b""), st.binary(min_size=1, max_size=8)))
def test_any_prefix_becomes_the_source_and_no_byte_is_ever_removed(kept_once, tmp_path_factory, cut, extra):
    store, source = kept_once
    to = tmp_path_factory.mktemp("to") / ".gemini"
    target = to / "tmp" / SLUG / "chats" / name()
    target.parent.mkdir(parents=True)
    if isinstance(cut, tuple):
        ends = [0] + [i + 1 for i, byte in enumerate(source) if byte == 0x0A]
        cut = ends[cut[1] % len(ends)]
    before = None
    if cut >= 0:
        before = source[:cut % (len(source) + 1)] + extra
        target.write_bytes(before)
    result = restore(SID, "--store", store, "--to", to, "--yes")
    after = target.read_bytes() if target.exists() else None
    if before is None or source.startswith(before):
        assert result.exit_code == 0, result.stdout
        assert after == source
    elif before.startswith(source):
        assert result.exit_code == 0 and after == before
    else:
        assert result.exit_code == 4 and [f["code"] for f in result.json["findings"]] == ["restore-conflict"]
        assert after == before
    assert before is None or after.startswith(before), "restore never removes or changes a byte"


def test_an_old_session_s_next_line_says_to_resume_it_directly(tmp_path):
    old = every_kind(hours=24 * 45)
    home = gemini_home(tmp_path, {name(): old})
    store = tmp_path / "store"
    do_import("gemini", home, store)
    (chats(home) / name()).unlink()
    done = restore(SID, "--store", store, "--yes")
    assert done.exit_code == 0 and (chats(home) / name()).read_bytes() == old
    assert done.json["sessions"][0]["next"].startswith(f"cd /home/ana/src/my-app && gemini --resume {SID}   # resume it directly")


def test_a_session_kept_without_its_metadata_line_is_not_written_back(tmp_path):
    data = every_kind() + line({"$set": {"sessionId": SID}})
    home = gemini_home(tmp_path, {name(): data[data.index(b"\n") + 1:]})
    store = tmp_path / "store"
    do_import("gemini", home, store)
    (chats(home) / name()).unlink()
    before = tree(home)
    result = restore(SID, "--store", store, "--yes")
    assert result.exit_code == 16 and "without its metadata line" in result.stderr
    assert tree(home) == before
