"""Exit codes and advice that are true: follow every "next:" line the output prints.

For each damaged store, run `fsck`, run every command a "next:" line names (as printed), and
go on until no line names a command.  A hint that names a command that changes nothing, or
that comes back after it was followed, is a loop: the test fails.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import orjson
import pytest

from tests.helpers import PROJECT_SLUG, encode, logician_session, make_store, meta, run_cli, session_records, snapshot, torn_store, write_journal
from toolkit.locks import lock_content

SID = "2026-11-30T09-00-00-a1b0"
COMMAND = re.compile(r"`(levelsess [^`]+)`")


def _torn(root: Path) -> Path:
    return torn_store(root)[0]


def _spliced(root: Path) -> Path:
    store = make_store(root / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join(lines[:2]) + lines[2] + b"\n" + b"\n".join(lines[3:]))
    return store


def _duplicate_meta(root: Path) -> Path:
    store = make_store(root / "store", sessions=1)
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    journal.write_bytes(journal.read_bytes() + orjson.dumps(meta(SID)) + b"\n")
    return store


def _future(root: Path) -> Path:
    store = root / "store"
    write_journal(store / PROJECT_SLUG / f"{SID}.jsonl", [meta(SID, v=9)])
    return store


def _invalid_meta_v(root: Path) -> Path:
    store = root / "store"
    write_journal(store / PROJECT_SLUG / f"{SID}.jsonl", [meta(SID, v="two")])
    return store


def _dangling(root: Path) -> Path:
    logician_session(root / "ws", entries=[{"id": "e1"}, {"id": "e2", "parentId": "nope"}])
    return root / "ws"


def _symlinked_torn(root: Path) -> Path:
    _, journal = torn_store(root / "real")
    store = make_store(root / "store", sessions=0)
    (store / PROJECT_SLUG).mkdir(parents=True)
    (store / PROJECT_SLUG / journal.name).symlink_to(journal)
    return store


def _locked(root: Path) -> Path:
    store, journal = torn_store(root)
    journal.with_name(journal.name + ".lock").write_bytes(lock_content(os.getpid()))  # this test process: live
    return store


def _cr_only(root: Path) -> Path:
    store = root / "store"
    write_journal(store / PROJECT_SLUG / f"{SID}.jsonl", b"\r".join(orjson.dumps(r) for r in session_records(SID)))
    return store


def _foreign_beside_torn(root: Path) -> Path:
    store, _ = torn_store(root)
    write_journal(store / PROJECT_SLUG / "b27ffd47.jsonl", b'{"type":"summary","summary":"s","leafUuid":"l"}\n')
    return store


STORES = {f.__name__[1:]: f for f in (_torn, _spliced, _duplicate_meta, _future, _invalid_meta_v, _dangling, _symlinked_torn,
                                      _locked, _cr_only, _foreign_beside_torn)}
NEVER_SALVAGE = {"duplicate_meta", "future", "invalid_meta_v", "dangling", "locked", "foreign_beside_torn"}


def _hints(result) -> list[str]:
    return [line[len("next: "):] for line in result.stderr.splitlines() if line.startswith("next: ")]


@pytest.mark.parametrize("name", sorted(STORES))
def test_following_every_next_line_ends_without_a_loop(tmp_path, name):
    target = STORES[name](tmp_path)
    followed: list[str] = []
    result = run_cli("fsck", target)
    for _ in range(6):
        commands = [c for hint in _hints(result) for c in COMMAND.findall(hint)]
        if name in NEVER_SALVAGE:
            assert not any("--salvage" in c for c in commands), (name, commands)
        if not commands:
            break
        command = commands[0]
        assert command not in followed, f"{name}: `{command}` is suggested again after it was followed: {followed}"
        before = snapshot(tmp_path)
        result = run_cli(*shlex.split(command)[1:])
        assert "Traceback" not in result.stderr
        assert snapshot(tmp_path) != before or result.exit_code & 8, f"{name}: `{command}` changed nothing"
        followed.append(command)
        result = run_cli("fsck", target)
    else:
        pytest.fail(f"{name}: still suggesting commands after {followed}")
    assert not any("free disk space" in h for h in _hints(result))


def test_a_repair_of_a_folder_whose_only_session_is_live_locked_is_not_clean(tmp_path):
    store = _locked(tmp_path)
    for args in (["fsck"], ["fsck", "--repair"], ["fsck", "--strict"]):
        result = run_cli(*args, store)
        assert result.exit_code == 4, (args, result.exit_code)
        assert "1 session(s) not checked" in result.stderr and "locked" in result.stderr
    assert run_cli("fsck", "--json", store).json["exit"] == 4


def test_a_symlinked_journal_names_its_target_to_repair(tmp_path):
    store = _symlinked_torn(tmp_path)
    hints = _hints(run_cli("fsck", store))
    target = next((tmp_path / "real" / "store" / PROJECT_SLUG).glob("*.jsonl"))
    assert any(str(target) in h for h in hints), hints
    after_repair = _hints(run_cli("fsck", "--repair", store))
    assert not any(f"--repair {shlex.quote(str(store))}" in h for h in after_repair), after_repair


@pytest.mark.parametrize("name, why", [("duplicate_meta", "line damage only"), ("future", "future-version"),
                                       ("dangling", "line damage only")])
def test_salvage_that_refuses_says_why_in_words_and_exits_4(tmp_path, name, why):
    target = STORES[name](tmp_path)
    journals = {p: p.read_bytes() for p in target.rglob("*.jsonl")}
    result = run_cli("fsck", "--salvage", "--yes", "--json", target)
    assert result.exit_code & 4 and not result.exit_code & 8  # 1 too when a cache was rebuilt meanwhile
    refusal = next(f for f in result.json["findings"] if f["code"] == "salvage-refused")
    assert why in refusal["message"]
    assert {p: p.read_bytes() for p in target.rglob("*.jsonl")} == journals, "every journal exactly as it was"
    assert not list(tmp_path.rglob("quarantine")), "no quarantine copy"


def test_salvage_never_empties_a_journal_and_a_rerun_leaves_no_second_quarantine_copy(tmp_path):
    store = _spliced(tmp_path)
    first = run_cli("fsck", "--salvage", "--yes", "--json", store)
    assert first.exit_code == 1, first.json
    copies = sorted((store / ".levelsess" / "quarantine").rglob(f"{SID}.jsonl"))
    assert len(copies) == 1 and copies[0].parent.name == PROJECT_SLUG
    journal = store / PROJECT_SLUG / f"{SID}.jsonl"
    assert journal.read_bytes() == encode(session_records(SID, turns=2))
    again = run_cli("fsck", "--salvage", "--yes", store)
    assert again.exit_code == 0
    assert sorted((store / ".levelsess" / "quarantine").rglob(f"{SID}.jsonl")) == copies


def test_every_repair_names_where_the_bytes_went_and_the_path_exists(tmp_path):
    store = _torn(tmp_path)
    ws = logician_session(tmp_path / "ws")
    (ws / "meta.json").write_bytes(b'{"formatVersion":1,"name":"refu')  # cut mid-write: the name is in these bytes
    with open(ws / "messages.jsonl", "ab") as handle:
        handle.write(b'{"id":"e3","te')
    result = run_cli("fsck", "--repair", "--json", store, tmp_path / "ws")
    saved = {f["code"]: f["saved_to"] for f in result.json["findings"] if f["repaired"] and f["saved_to"]}
    assert set(saved) >= {"torn-tail", "corrupt-meta"}, result.json
    for path in saved.values():
        assert Path(path).is_file(), path
    assert Path(saved["corrupt-meta"]).read_bytes() == b'{"formatVersion":1,"name":"refu'
    assert "s1" in saved["torn-tail"] or PROJECT_SLUG in saved["torn-tail"]
    verbose = run_cli("fsck", "--repair", "-v", _torn(tmp_path / "again"))
    assert "saved to " in verbose.stdout
    for finding in result.json["findings"]:
        assert Path(finding["path"]).exists() or Path(finding["path"]).is_symlink(), finding


# --- the chain as a person follows it: each command's own "next:" lines, not a fresh check's ---

CLAUDE_SOURCE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"
if not CLAUDE_SOURCE.is_dir():
    CLAUDE_SOURCE = Path("/work/shared/fixtures/claude-code/projects")
CLAUDE_PROJECT = "-loru-rnwdo-kwobudct-tkoccuw"
CLAUDE_SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"


def _claude(root: Path, drop: set[int], garbage: int | None = None) -> Path:
    """A copy of a real Claude Code transcript with messages dropped (their children dangle) and
    maybe a line cut to invalid JSON (line damage for salvage)."""
    lines = (CLAUDE_SOURCE / CLAUDE_PROJECT / CLAUDE_SESSION).read_bytes().splitlines(keepends=True)
    if garbage is not None:
        lines[garbage] = b'{"type":"user","uuid":\n'
    journal = root / "claude" / "projects" / CLAUDE_PROJECT / CLAUDE_SESSION
    journal.parent.mkdir(parents=True)
    journal.write_bytes(b"".join(line for n, line in enumerate(lines) if n not in drop))
    return root / "claude" / "projects"


def _seq_gap_after_salvage(root: Path) -> Path:
    store = root / "store"
    write_journal(store / PROJECT_SLUG / f"{SID}.jsonl", encode([meta(SID)]) + b"{bad\n"
                  + encode([{"kind": "user", "t": "2026-11-30T09:00:00Z", "seq": 2, "content": "x"}]))
    return store


CHAINS = {
    "claude_line_damage_and_dangling": lambda root: _claude(root, {11}, garbage=24),
    "claude_two_dangling_one_session": lambda root: _claude(root, {11, 27}),
    "salvage_leaves_a_seq_gap": _seq_gap_after_salvage,
    "spliced": _spliced,
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_each_command_prints_its_own_next_step_until_the_chain_ends(tmp_path, name):
    target = CHAINS[name](tmp_path)
    result = run_cli("fsck", target)
    followed: list[str] = []
    for _ in range(6):
        hints = _hints(result)
        if result.exit_code & 4:  # something is left: the run says what to do about it
            assert hints, f"{name}: exit {result.exit_code} after {followed or ['fsck']} and no next: line\n{result.stderr}"
        commands = [c for hint in hints for c in COMMAND.findall(hint)]
        if not commands:
            break
        command = commands[0]
        assert command not in followed, f"{name}: `{command}` suggested again after {followed}"
        result = run_cli(*shlex.split(command)[1:])  # its own output says what comes next
        assert "Traceback" not in result.stderr
        followed.append(command)
    else:
        pytest.fail(f"{name}: still suggesting commands after {followed}")
    final = run_cli("fsck", target)
    assert final.exit_code == 0 or any("need a person" in h for h in _hints(final)), (name, followed, final.stderr)


def test_claude_line_damage_and_a_dangling_parent_is_one_salvage_relink_run(tmp_path):
    target = _claude(tmp_path, {11}, garbage=24)
    (hint,) = [c for h in _hints(run_cli("fsck", target)) for c in COMMAND.findall(h)]
    assert "--salvage --relink --yes" in hint
    refused = run_cli("fsck", "--relink", "--yes", target)  # the relink alone is refused, and names what fixes it
    (finding,) = [f for f in run_cli("fsck", "--relink", "--yes", target, "--json").json["findings"] if f["code"] == "relink-refused"]
    assert "--salvage --relink --yes" in finding["message"]
    assert any("--salvage --relink --yes" in h for h in _hints(refused))
    assert run_cli(*shlex.split(hint)[1:]).exit_code in (1, 5)
    assert run_cli("fsck", target).exit_code == 0


def test_two_dangling_parents_in_one_session_count_as_one_session(tmp_path):
    target = _claude(tmp_path, {11, 27})
    result = run_cli("fsck", target, "--json").json
    assert sum(f["code"] == "dangling-parent" for f in result["findings"]) == 2
    assert sum(f["code"] == "broken-chain" for f in result["findings"]) == 1
    assert any(h.startswith("1 Claude Code session(s) have a broken parentUuid chain") for h in _hints(run_cli("fsck", target)))


@pytest.mark.parametrize("command", ["show", "export", "trash"])
def test_a_file_that_is_no_journal_is_never_sent_to_salvage(tmp_path, command):
    text = tmp_path / "notes.jsonl"
    text.write_bytes(b"hello\nworld\n")
    result = run_cli(command, text)
    said = result.stdout + result.stderr
    assert "salvage" not in said and "not a journal" in said
    assert result.exit_code == (4 if command == "trash" else 8), "trash refuses what it does not know (exit 4, DESIGN §5)"
    assert text.read_bytes() == b"hello\nworld\n"


def test_a_damaged_journal_named_by_path_gets_a_hint_aimed_at_that_file(tmp_path):
    journal = _seq_gap_after_salvage(tmp_path) / PROJECT_SLUG / f"{SID}.jsonl"
    result = run_cli("export", journal)
    (command,) = COMMAND.findall(result.stderr)
    assert command.endswith(shlex.quote(str(journal)))
    followed = run_cli(*shlex.split(command)[1:])
    assert followed.exit_code & 1 and "need a person" in followed.stderr
