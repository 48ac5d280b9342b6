"""`levelsess restore` of kept Claude Code sessions, on copies of the real fixtures: a transcript
Claude Code deleted comes back byte-identical where `claude --resume` finds it (with its
subagents), fsck of the project is clean, the tool's own reading rules see every kept uuid; a
second run changes nothing; undo puts every byte back; a cut transcript gets only its missing
bytes; a running tool, a file holding other bytes, a journal that cannot prove its bytes are
refused with nothing written; a verify that fails undoes the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli, write_journal, session_records
from tests.restore.kit import CLAUDE, copy_home, do_import, journal_records, kept_uuids, last_state, restore, sha256, tree
from tests.restore.readers import claude_sessions, resumed, uuids

if CLAUDE is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)

MAINS = sorted(p.relative_to(CLAUDE / "projects") for p in (CLAUDE / "projects").glob("*/*.jsonl"))
BIG = Path("Z--03-NDV-Dftcor-Nmmoat/a572bd87-2e28-4d70-9b73-cd08231cacb6.jsonl")  # 2.1.128, 3 subagents
OLD = Path("-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo/2728bf45-2222-4b9c-818e-dde0cdded47a.jsonl")  # 1.0.17, inline sidechains


def _kept(tmp_path: Path, rel: Path) -> tuple[Path, Path, Path, list[Path], dict[Path, bytes]]:
    """A Claude home with the fixtures, the session ``rel`` (and its subagents) imported into a store."""
    home = copy_home(CLAUDE, tmp_path / ".claude")
    store = tmp_path / "store"
    main = home / "projects" / rel
    do_import("claude", main, store)
    files = [main, *sorted((main.parent / main.stem / "subagents").glob("*.jsonl"))]
    return home, store, main, files, {f: f.read_bytes() for f in files}


def _delete(main: Path, files: list[Path]) -> None:
    """What Claude Code's cleanup does: the transcript and its session folder are gone."""
    for path in files:
        path.unlink()
    shutil.rmtree(main.parent / main.stem, ignore_errors=True)


@pytest.mark.parametrize("rel", MAINS, ids=lambda r: r.stem[:8])
def test_a_deleted_session_comes_back_byte_identical_and_undo_takes_it_back(tmp_path, rel):
    home, store, main, files, original = _kept(tmp_path, rel)
    _delete(main, files)
    deleted = tree(home)
    sid = f"claude-{main.stem}"

    plan = restore(sid, "--store", store)
    assert plan.exit_code == 4 and not plan.json["applied"]
    planned = {f["path"]: f for s in plan.json["sessions"] for f in s["files"]}
    assert set(planned) == {str(f) for f in files}
    for path in files:
        assert (planned[str(path)]["action"], planned[str(path)]["bytes"], planned[str(path)]["lines"]) == (
            "create", len(original[path]), original[path].count(b"\n"))
    assert tree(home) == deleted, "a plan writes nothing"

    done = restore(sid, "--store", store, "--yes")
    assert done.exit_code == 0, done.stdout
    journals = sorted(store.rglob("*.jsonl"))
    for path in files:
        assert path.read_bytes() == original[path]
        journal = next(j for j in journals if journal_records(j)[0]["source"]["path"] == str(path))
        assert sha256(path.read_bytes()) == last_state(journal)["sha256"], "the sha256 the source had at its last import"
    assert run_cli("fsck", main.parent).exit_code == 0
    assert set().union(*(uuids(p.read_bytes()) for p in files)) == kept_uuids(journals)
    if resumed(original[main]):
        assert claude_sessions(home)[main.stem] == main, "claude --resume lists it again"
        assert resumed(main.read_bytes()) == resumed(original[main])
    assert done.json["sessions"][0]["next"].endswith(f"claude --resume {main.stem}")

    restored = tree(home)
    again = restore(sid, "--store", store, "--yes")
    assert again.exit_code == 0 and again.json["stamp"] is None and tree(home) == restored, "a second run changes nothing"

    undone = run_cli("restore", "--undo", done.json["stamp"], "--json")
    assert undone.exit_code == 0, undone.stdout
    assert tree(home) == deleted, "undo puts every byte back"
    assert run_cli("restore", "--undo", done.json["stamp"]).exit_code == 0 and tree(home) == deleted, "undo is idempotent"


@pytest.mark.parametrize("cut", ["line", "mid-line", "empty"])
def test_a_cut_transcript_gets_only_its_missing_bytes_and_undo_cuts_them_again(tmp_path, cut):
    home, store, main, _files, original = _kept(tmp_path, BIG)
    data = original[main]
    at = {"line": data.index(b"\n", len(data) // 2) + 1, "mid-line": len(data) // 2 + 7, "empty": 0}[cut]
    main.write_bytes(data[:at])
    plan = restore(main.stem, "--store", store)
    step = next(f for f in plan.json["sessions"][0]["files"] if f["path"] == str(main))
    assert (step["action"], step["existing"], step["bytes"]) == ("append", at, len(data) - at)
    assert step["lines"] == data[at:].count(b"\n"), "a cut line counts as one"
    done = restore(main.stem, "--store", store, "--yes")
    assert done.exit_code == 0 and main.read_bytes() == data
    backup = Path(done.json["backup"])
    manifest = json.loads((backup / "manifest.json").read_bytes())
    changed = manifest["changed"][0]
    assert (backup / changed["backup"]).read_bytes() == data[:at], "the file's bytes before, copied before the write"
    assert changed["before"] == {"size": at, "sha256": sha256(data[:at])} and changed["after"]["sha256"] == sha256(data)
    assert restore(main.stem, "--store", store, "--yes").json["stamp"] is None
    assert run_cli("restore", "--undo", done.json["stamp"]).exit_code == 0
    assert main.read_bytes() == data[:at]


def test_a_file_the_tool_holds_open_for_writing_is_refused_and_nothing_is_written(tmp_path):
    home, store, main, _files, original = _kept(tmp_path, BIG)
    main.write_bytes(original[main][:1000])
    before = tree(home)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'ab'); print('open', flush=True); "
                               "time.sleep(60)", str(main)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        for extra in ((), ("--yes",)):
            result = restore(main.stem, "--store", store, *extra)
            assert result.exit_code == 4, result.stdout
            busy = [f for f in result.json["findings"] if f["code"] == "in-use"]
            assert busy and busy[0]["path"] == str(main) and f"pid {holder.pid}" in busy[0]["message"]
        assert tree(home) == before and result.json["written"] == [], "nothing written while the tool runs"
    finally:
        holder.kill()
        holder.wait()
    assert main.read_bytes() == original[main][:1000]


def test_a_file_holding_other_bytes_is_refused_naming_both_files(tmp_path):
    home, store, main, files, original = _kept(tmp_path, BIG)
    data = original[main]
    changed = data[:500] + (b"X" if data[500:501] != b"X" else b"Y") + data[501:]
    main.write_bytes(changed)
    other = files[1]
    other.write_bytes(original[other][:-2] + b' \n')  # the same length, its last record's closing brace gone
    grown = files[2]  # the tool wrote more since the last import: it already has every kept byte
    grown.write_bytes(original[grown] + b'{"type":"custom-title","customTitle":"added later","sessionId":"x"}\n')
    before = tree(home)
    result = restore(main.stem, "--store", store, "--yes")
    assert result.exit_code == 4
    conflicts = {f["path"]: f["message"] for f in result.json["findings"] if f["code"] == "restore-conflict"}
    assert set(conflicts) == {str(main), str(other)}
    step = next(f for f in result.json["sessions"][0]["files"] if f["path"] == str(grown))
    assert step["action"] == "nothing" and "more the tool wrote" in step["reason"]
    journal = next(p for p in store.rglob(f"claude-{main.stem}.jsonl"))
    assert str(journal) in conflicts[str(main)] and "from byte 500" in conflicts[str(main)]
    assert tree(home) == before, "never overwrites or removes a byte"


def test_a_journal_imported_with_no_raw_is_refused_saying_why(tmp_path):
    home = copy_home(CLAUDE, tmp_path / ".claude")
    main = home / "projects" / BIG
    do_import("claude", main, tmp_path / "store", "--no-raw")
    main.unlink()
    before = tree(home)
    result = restore(main.stem, "--store", tmp_path / "store", "--yes")
    assert result.exit_code == 4
    unproven = [f for f in result.json["findings"] if f["code"] == "restore-unproven"]
    assert unproven and all("--no-raw" in f["message"] for f in unproven)
    assert tree(home) == before


def test_a_journal_from_an_older_import_is_refused_until_imported_again(tmp_path):
    home, store, main, _files, original = _kept(tmp_path, OLD)
    for journal in store.rglob("*.jsonl"):  # as an import before restore existed wrote it: no at, no source events
        kept = [r for r in journal_records(journal) if r.get("type") not in ("source-line", "source-state")]
        write_journal(journal, b"".join(json.dumps({k: v for k, v in r.items() if k != "at"}, ensure_ascii=False,
                                                   separators=(",", ":")).encode() + b"\n" for r in kept))
    main.write_bytes(original[main][:2000])
    result = restore(main.stem, "--store", store, "--yes")
    assert result.exit_code == 4 and main.read_bytes() == original[main][:2000]
    assert any(f["code"] == "restore-unproven" and "older" in f["message"] for f in result.json["findings"])
    main.write_bytes(original[main])
    do_import("claude", main, store)  # the source is still there: the import adds what restore needs
    main.unlink()
    assert restore(main.stem, "--store", store, "--yes").exit_code == 0
    assert main.read_bytes() == original[main]


def test_a_restore_whose_verify_fails_undoes_itself(tmp_path, monkeypatch):
    """A stricter verify (the real transcript's unanswered last tool call counted as damage) fails
    on the real file: the run is undone and exits 8."""
    from toolkit.restore import contract

    rel = next(r for r in MAINS if r.stem.startswith("33593808"))  # ends in a tool call with no result
    home, store, main, files, _original = _kept(tmp_path, rel)
    _delete(main, files)
    deleted = tree(home)
    monkeypatch.setattr(contract, "DAMAGE", contract.DAMAGE | {"dangling-tool-use"})
    result = restore(main.stem, "--store", store, "--yes")
    assert result.exit_code == 8 and result.json["undone"]
    assert any(f["code"] == "restore-verify-failed" for f in result.json["findings"])
    assert tree(home) == deleted
    manifest = json.loads((Path(result.json["backup"]) / "manifest.json").read_bytes())
    assert manifest["state"] == "undone"


def test_to_writes_under_another_claude_root_and_a_subagent_or_sidechain_names_its_file(tmp_path):
    home, store, main, files, original = _kept(tmp_path, OLD)
    fresh = tmp_path / "fresh" / ".claude"
    side = next(p for p in store.rglob("*-side-*.jsonl"))
    before = tree(home)
    result = restore(side.stem, "--store", store, "--to", fresh, "--yes")  # a sidechain's lines are in its transcript
    assert result.exit_code == 0, result.stdout
    assert (fresh / "projects" / OLD).read_bytes() == original[main] and tree(home) == before, "only under --to"

    _home, store2, main2, files2, original2 = _kept(tmp_path / "big", BIG)
    agent = files2[1]
    agent_id = agent.stem.removeprefix("agent-")
    result = restore(f"claude-{main2.stem}-agent-{agent_id}", "--store", store2, "--to", fresh, "--yes")
    assert [f["path"] for f in result.json["sessions"][0]["files"]] == [str(fresh / "projects" / BIG.parent / main2.stem / "subagents" / agent.name)]
    assert (fresh / "projects" / BIG.parent / main2.stem / "subagents" / agent.name).read_bytes() == original2[agent]
    assert result.json["sessions"][0]["next"] is None


def test_a_session_not_kept_from_claude_or_codex_is_a_usage_error(tmp_path):
    store = tmp_path / "store"
    write_journal(store / "-p" / "2026-11-30T09-00-00-a1b2.jsonl", session_records())
    cursor = session_records("cursor-abc")
    cursor[0]["source"] = {"app": "cursor", "path": "/x/state.vscdb", "key": "abc", "version": None}
    write_journal(store / "-p" / "cursor-abc.jsonl", cursor)
    for sid, words in (("2026-11-30T09-00-00-a1b2", "levelsess session"), ("cursor-abc", "Cursor is out of scope")):
        result = run_cli("restore", sid, "--store", store)
        assert result.exit_code == 16 and words in result.stderr and "levelsess show" in result.stderr
    assert run_cli("restore", "nothing-like-it", "--store", store).exit_code == 16


@pytest.mark.parametrize("args", [("x", "--yes", "--dry-run"), ("x", "--undo", "s"), ("--list", "--yes"), (), ("--list", "x")])
def test_contradictory_or_missing_arguments_are_usage_errors(tmp_path, args):
    result = run_cli("restore", *args, "--store", tmp_path)
    assert result.exit_code == 16 and "Traceback" not in result.stderr


def test_undo_of_an_unknown_stamp_and_an_empty_list(tmp_path):
    assert run_cli("restore", "--undo", "20990101T000000.000000Z").exit_code == 16
    assert run_cli("restore", "--undo", "../etc").exit_code == 16
    listing = run_cli("restore", "--list", "--json")
    assert listing.exit_code == 0 and listing.json["restores"] == []


def test_ctrl_c_stops_before_the_next_file_and_a_rerun_finishes(tmp_path):
    from toolkit.restore import plan_restore, restore as run_restore

    home, store, main, files, original = _kept(tmp_path, BIG)
    _delete(main, files)
    asked = []
    stopped = run_restore(plan_restore(store, [main.stem]), apply=True, interrupted=lambda: bool(asked.append(1)) or len(asked) > 2)
    assert stopped.exit_code == 32 and len(stopped.written) == 2
    assert [p.read_bytes() for p in stopped.written] == [original[p] for p in stopped.written], "what was written is whole"
    rerun = restore(main.stem, "--store", store, "--yes")
    assert rerun.exit_code == 0 and all(p.read_bytes() == original[p] for p in files)
    assert len(rerun.json["written"]) == len(files) - 2


def test_a_file_changed_between_the_plan_and_the_backup_stops_the_run_before_any_write(tmp_path):
    from toolkit.errors import FileChangedError
    from toolkit.restore import plan_restore, restore as run_restore
    from toolkit.restore.backups import restore_root

    home, store, main, _files, original = _kept(tmp_path, BIG)
    main.write_bytes(original[main][:4000])
    plan = plan_restore(store, [main.stem])
    main.write_bytes(original[main][:4000] + b"written by the tool meanwhile\n")
    before = tree(home)
    with pytest.raises(FileChangedError):
        run_restore(plan, apply=True)
    assert tree(home) == before
    assert not restore_root().exists() or not list(restore_root().iterdir()), "no half-made backup folder"


def test_a_project_folder_that_is_a_symlink_is_refused_and_nothing_is_written_through_it(tmp_path):
    home, store, main, files, original = _kept(tmp_path, BIG)
    elsewhere = tmp_path / "elsewhere"
    main.parent.rename(elsewhere)
    main.parent.symlink_to(elsewhere, target_is_directory=True)
    for path in files:
        (elsewhere / path.relative_to(main.parent)).unlink()
    before = tree(elsewhere)
    result = restore(main.stem, "--store", store, "--yes")
    assert result.exit_code == 4 and {f["code"] for f in result.json["findings"]} == {"symlinked-folder"}
    assert tree(elsewhere) == before, "never written through a symlinked folder in the tool's tree"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names a process the Linux way")
@pytest.mark.parametrize("tool", ["claude", "codex"])
def test_a_running_tool_that_names_the_session_is_refused_even_before_its_file_exists(tmp_path, tool):
    """A real process named like the tool (a symlink to Python: Linux names a process after the file
    it runs) resuming the session: restore writes nothing, not even a file that is not there yet."""
    from tests.restore.kit import CODEX

    # the process is seen by every test running on the machine meanwhile: it names an id of this
    # test's own (the session copied under a fresh name), never a fixture's
    fresh = str(uuid.uuid4())
    store = tmp_path / "store"
    if tool == "claude":
        home = copy_home(CLAUDE, tmp_path / ".claude")
        main = (home / "projects" / BIG).with_name(f"{fresh}.jsonl")
        (home / "projects" / BIG).rename(main)
        do_import("claude", main, store)
        main.unlink()
        sid, watched = fresh, home
    else:
        home = copy_home(CODEX, tmp_path / ".codex")
        source = next(home.glob("sessions/*/*/*/rollout-*.jsonl"))
        main = source.with_name(source.name[:-43] + f"-{fresh}.jsonl")  # rollout-<time>-<thread id>.jsonl
        data = source.read_bytes().replace(source.stem[-36:].encode(), fresh.encode())
        source.unlink()
        main.write_bytes(data)
        do_import("codex", main, store)
        main.unlink()
        sid, watched = fresh, home
    exe = tmp_path / "bin" / tool
    exe.parent.mkdir()
    exe.symlink_to(os.path.realpath(sys.executable))
    proc = subprocess.Popen([str(exe), "-c", "import time; print('ok', flush=True); time.sleep(60)", "resume", sid],
                            cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ok"
        before = tree(watched)
        result = restore(sid, "--store", store, "--yes")
        assert result.exit_code == 4 and result.json["written"] == []
        busy = [f for f in result.json["findings"] if f["code"] == "in-use"]
        assert busy and all(f"pid {proc.pid}" in f["message"] for f in busy)
        assert tree(watched) == before
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert restore(sid, "--store", store, "--yes").exit_code == 0, "once it has quit, the session comes back"


def test_the_plan_s_next_line_run_as_printed_applies_that_plan(tmp_path):
    """Followed to its end: the plan's "next:" line names the store and the root it was given."""
    import shlex

    home, store, main, files, original = _kept(tmp_path, OLD)
    _delete(main, files)
    plan = run_cli("restore", main.stem[:8], "--to", str(home), "--store", str(store))
    assert plan.exit_code == 4, plan.output
    line = next(l for l in (plan.stdout + plan.stderr).splitlines() if l.startswith("next: "))
    argv = shlex.split(line.removeprefix("next: "))
    assert argv[0] == "levelsess"
    done = run_cli(*argv[1:])
    assert done.exit_code == 0, done.output
    assert all(path.read_bytes() == original[path] for path in files)
