"""`fsck --relink --yes` rescues a Gemini CLI session whose metadata line is torn or missing (Gemini
cannot load it and its next start deletes it, SOURCES-MORE §1.5–1.6): fsck reports sweep-due; the
rescue rebuilds the line from what the file proves; then fsck is clean, an independent reader of
§1.5 lists the session (the sweep keeps it), and every other line is byte-identical.  A value that
cannot be proven refuses it, naming the value; the original is kept outside the tree first."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.gemini import (PROJECT_HASH, SID, SLUG, every_kind, gemini, gemini_home, gemini_lists, line,
                                  load_like_gemini, meta, name, user)

SUB = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


@pytest.fixture(autouse=True)
def no_gemini_home(monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)


def chats(home: Path) -> Path:
    return home / "tmp" / SLUG / "chats"


def torn(data: bytes, keep: int | None = None) -> bytes:
    """The metadata line cut (at ``keep`` bytes, default half way), its newline kept: #27276."""
    end = data.index(b"\n")
    return data[:end // 2 if keep is None else keep] + data[end:]


def missing(data: bytes) -> bytes:
    return data[data.index(b"\n") + 1:]


def codes(result) -> set[str]:
    return {f["code"] for f in result.json["findings"]}


def rest_of(data: bytes) -> bytes:
    return data[data.index(b"\n") + 1:]


@pytest.mark.parametrize("damage", ["torn-half", "torn-at-2", "missing-with-set"])
def test_a_session_gemini_would_sweep_is_rescued_and_listed_again(tmp_path, damage):
    good = every_kind() + line({"$set": {"sessionId": SID}}) if damage != "torn-half" else every_kind()
    broken = {"torn-half": torn(good), "torn-at-2": torn(good, 2), "missing-with-set": missing(good)}[damage]
    home = gemini_home(tmp_path, {name(): broken})
    session = chats(home) / name()
    before = run_cli("fsck", home, "--json")
    assert {"missing-meta", "sweep-due"} <= codes(before) and gemini_lists(chats(home)) == []
    plan = run_cli("fsck", home, "--relink", "--dry-run")
    assert session.read_bytes() == broken and "rebuilt from what the file proves" in plan.stdout
    done = run_cli("fsck", home, "--relink", "--yes", "--json")
    assert done.exit_code == 1, done.stdout + done.stderr
    assert all(f["repaired"] for f in done.json["findings"]), done.json["findings"]
    after = session.read_bytes()
    assert rest_of(after) == rest_of(broken) if damage != "missing-with-set" else rest_of(after) == broken
    rebuilt = json.loads(after.split(b"\n", 1)[0])
    assert (rebuilt["sessionId"], rebuilt["projectHash"], rebuilt["kind"]) == (SID, PROJECT_HASH, "main")
    assert rebuilt["projectHash"] == hashlib.sha256(b"/home/ana/src/my-app").hexdigest()
    check = run_cli("fsck", home, "--json")
    assert check.exit_code == 0 and check.json["findings"] == [], check.json["findings"]
    assert gemini_lists(chats(home)) == [SID], "Gemini lists it again, so its sweep keeps it"
    assert load_like_gemini(session)["messages"] == load_like_gemini_messages(good)
    saved = list((Path(os.environ["XDG_DATA_HOME"]) / "levelsess" / "gemini").rglob(name()))
    assert [p.read_bytes() for p in saved] == [broken], "the original is kept outside the tree, byte for byte"
    again = run_cli("fsck", home, "--relink", "--yes")
    assert again.exit_code == 0 and session.read_bytes() == after


def load_like_gemini_messages(data: bytes) -> list:
    probe = Path(os.environ["XDG_DATA_HOME"]) / "probe.jsonl"
    probe.write_bytes(data)
    return load_like_gemini(probe)["messages"]


def test_a_subagent_session_gets_its_id_from_its_name_and_kind_subagent(tmp_path):
    good = b"".join(map(line, [meta(SUB, kind="subagent"), user("s1", "look at the repo"), gemini("s2", "done")]))
    home = gemini_home(tmp_path, {name(): every_kind(), f"{SID}/{SUB}.jsonl": missing(good)})
    done = run_cli("fsck", home, "--relink", "--yes")
    assert done.exit_code == 1, done.stdout
    rebuilt = json.loads((chats(home) / SID / f"{SUB}.jsonl").read_bytes().split(b"\n", 1)[0])
    assert (rebuilt["sessionId"], rebuilt["kind"]) == (SUB, "subagent")
    assert run_cli("fsck", home).exit_code == 0


def test_the_session_id_comes_from_the_project_s_own_artefacts(tmp_path):
    home = gemini_home(tmp_path, {name(): missing(every_kind())})
    (home / "tmp" / SLUG / "logs").mkdir()
    (home / "tmp" / SLUG / "logs" / f"session-{SID}.jsonl").write_bytes(b"")
    done = run_cli("fsck", home, "--relink", "--yes")
    assert done.exit_code == 1, done.stdout
    assert gemini_lists(chats(home)) == [SID]


@pytest.mark.parametrize("case,says", [
    ("no-id", "sessionId cannot be proven"),
    ("no-project", "projectHash cannot be proven"),
    ("other-id", "sessionId cannot be proven"),
    ("other-hash", "projectHash cannot be proven"),
])
def test_a_value_that_cannot_be_proven_refuses_and_writes_nothing(tmp_path, case, says):
    wrong_hash = b'{"sessionId":"' + SID.encode() + b'","projectHash":"' + b"0" * 64 + b'","startT\n'
    data = {"no-id": missing(every_kind()), "no-project": torn(every_kind()),
            "other-id": missing(every_kind()) + line({"$set": {"sessionId": "99999999-0000-4000-8000-000000000000"}}),
            "other-hash": wrong_hash + missing(every_kind())}[case]
    home = gemini_home(tmp_path, {name(): data})
    if case == "no-project":
        (home / "tmp" / SLUG / ".project_root").unlink()
        (home / "projects.json").write_text(json.dumps({"projects": {}}))
    before = snapshot(home)
    done = run_cli("fsck", home, "--relink", "--yes", "--json")
    refused = [f for f in done.json["findings"] if f["code"] == "relink-refused"]
    assert done.exit_code == 4 and len(refused) == 1 and says in refused[0]["message"], done.json["findings"]
    assert snapshot(home) == before


def test_a_first_line_holding_the_start_of_another_record_is_left_for_a_person(tmp_path):
    good = every_kind()
    end = good.index(b"\n")
    data = good[:end // 2] + good[end + 1:]  # the next line glued onto the torn one: it may hold a whole record
    home = gemini_home(tmp_path, {name(): data})
    before = snapshot(home)
    done = run_cli("fsck", home, "--relink", "--yes")
    assert done.exit_code == 4 and snapshot(home) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the appender races through /proc (Linux)")
@pytest.mark.parametrize("point", [("_keep", True, True), ("_swap", False, True), ("_replace", False, True), ("rewriting", False, False)],
                         ids=lambda p: f"{p[0]}-{'after' if p[1] else 'before'}")
def test_a_gemini_appending_during_the_rescue_loses_no_line(tmp_path, monkeypatch, point):
    """Gemini appends with appendFileSync (open, write one line, close), no lock: every line it
    wrote while the rescue ran is in the rescued file, after every line that was there."""
    from tests.test_races import Appender, hook

    good = every_kind() + line({"$set": {"sessionId": SID}})
    broken = torn(good, 2)
    home = gemini_home(tmp_path, {name(): broken})
    session = chats(home) / name()
    appender = Appender(session, "gemini", 0 if point[0] == "rewriting" else 5, tmp_path)
    name_, after, wait = point
    hook(monkeypatch, name_, appender, after=after, wait=wait)
    try:
        result = run_cli("fsck", session, "--relink", "--yes")
    finally:
        acks = appender.finish()
    assert appender.started and acks
    assert result.exit_code & ~5 == 0, result.stdout + result.stderr
    data = session.read_bytes()
    assert rest_of(broken) in data, "every line that was there is still there, byte for byte"
    lost = [ack for ack in acks if ack + b"\n" not in data]
    assert not lost, f"{len(lost)} of {len(acks)} appended lines are not in the session"
    if result.exit_code & 1:  # rescued: loadable, and Gemini lists it
        assert run_cli("fsck", session).exit_code == 0
        assert gemini_lists(chats(home)) == [SID]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names processes the Linux way")
def test_no_rescue_while_gemini_runs_in_the_project(tmp_path):
    import subprocess

    project = tmp_path / "my-app"
    project.mkdir()
    home = gemini_home(tmp_path, {name(): torn(every_kind())})
    (home / "tmp" / SLUG / ".project_root").write_text(str(project))
    exe = tmp_path / "bin" / "gemini"
    exe.parent.mkdir()
    exe.symlink_to(os.path.realpath(sys.executable))
    proc = subprocess.Popen([str(exe), "-c", "import time; print('ok', flush=True); time.sleep(120)"], cwd=project,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ok"
        before = snapshot(home)
        done = run_cli("fsck", home, "--relink", "--yes", "--json")
        assert done.exit_code == 4 and "in-use" in codes(done), done.json["findings"]
        assert snapshot(home) == before
    finally:
        proc.kill()
        proc.wait()


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keep=st.integers(min_value=0, max_value=10**4))
def test_any_cut_of_the_metadata_line_is_rescued_keeping_every_other_byte(tmp_path_factory, keep):
    """Cut anywhere inside the metadata line (its newline kept): the rescued file opens with a whole
    metadata line Gemini loads, the rest is byte-identical, and a second rescue changes nothing."""
    good = every_kind() + line({"$set": {"sessionId": SID}})
    cut = keep % good.index(b"\n")
    broken = torn(good, cut)
    home = gemini_home(tmp_path_factory.mktemp("cut"), {name(): broken})
    session = chats(home) / name()
    done = run_cli("fsck", home, "--relink", "--yes")
    assert done.exit_code == 1, done.stdout
    after = session.read_bytes()
    assert rest_of(after) == rest_of(broken)
    assert gemini_lists(chats(home)) == [SID]
    assert run_cli("fsck", home, "--relink", "--yes").exit_code == 0 and session.read_bytes() == after
