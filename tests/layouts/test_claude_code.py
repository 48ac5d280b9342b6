"""The Claude Code layout on real (anonymised) trees: discovery, clean checks, what is never a
journal, live writers, listings and exports, and hostile inputs.

Every tree is a copy of ``shared/fixtures/claude-code`` in ``tmp_path`` (never the original);
levelsess's own data folder is the autouse fixture's temporary home, outside that tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli, snapshot
from tests.layouts.claude import (PROJECTS, copy_tree, data_dir, expected_graph, expected_title, fixture_bytes,
                                  fixture_files, graph_findings, holder, join, lines_of, main_files, need_fixtures,
                                  one_session, run_sub, saved_tails, subagent_files)

FILES = fixture_files()
MAINS = main_files()
SMALL_MAIN = Path("-loru-rnwdo-kwobudct-tkoccuw/d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl")
SUBAGENT = Path("Z--03-NDV-Dftcor-Nmmoat/a572bd87-2e28-4d70-9b73-cd08231cacb6/subagents/agent-a5aeeeb76a8225a77.jsonl")


def _errors(result) -> list[dict]:
    return [f for f in result.json["findings"] if f["severity"] == "error"]


# --- 1. every fixture is clean, whatever PATH names it ---------------------------------------


def _targets():
    need = [("root", None), ("projects", Path("."))]
    need += [(f"project {p.parts[0][:24]}", Path(p.parts[0])) for p in sorted({Path(f.parts[0]) for f in FILES})]
    need += [(f"file {f.name[:14]}", f) for f in FILES]
    need += [("session folder", SUBAGENT.parent.parent), ("subagents folder", SUBAGENT.parent)]
    return [pytest.param(rel, id=name) for name, rel in need]


@pytest.mark.parametrize("rel", _targets())
def test_every_fixture_checks_clean_whatever_path_names_it(tmp_path, rel):
    root = copy_tree(tmp_path)
    target = root if rel is None else root / "projects" / rel
    result = run_cli("fsck", "--json", target)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert not _errors(result), _errors(result)
    named = {Path(f["path"]).resolve() for f in result.json["findings"]}
    assert named <= {p.resolve() for p in (root / "projects").rglob("*.jsonl")}
    if target.is_file():
        assert result.json["files"] == 1
    else:
        assert result.json["files"] == sum(1 for _ in target.rglob("*.jsonl"))
    # the only warning the real tree earns: one session was killed mid-tool (33593808)
    for f in result.json["findings"]:
        rel_path = Path(f["path"]).relative_to(root / "projects")
        assert (f["code"], f["line"], f["offset"]) in expected_graph(fixture_bytes(rel_path)).findings, f


@pytest.mark.parametrize("rel", [pytest.param(None, id="root"), pytest.param(Path("."), id="projects"),
                                 pytest.param(SMALL_MAIN, id="file"), pytest.param(SUBAGENT, id="subagent")])
def test_repair_of_a_clean_tree_changes_no_byte_and_creates_no_file(tmp_path, rel):
    root = copy_tree(tmp_path)
    target = root if rel is None else root / "projects" / rel
    tree = snapshot(tmp_path)
    for command in (["fsck", "--repair"], ["fsck", "--salvage", "--yes"], ["fsck"]):  # --strict: see its own test
        result = run_cli(*command, "--json", target)
        assert result.exit_code in (0, 4) and not any(f["repaired"] for f in result.json["findings"]), (command, result.stdout)
        assert snapshot(tmp_path) == tree, f"{command}: the tree is as it was, to the mtime"
    assert not data_dir().exists() or not any(data_dir().rglob("*")), "nothing saved: there was nothing to cut"


def test_the_real_tree_is_counted_whole(tmp_path):
    root = copy_tree(tmp_path)
    result = run_cli("fsck", "--json", root)
    assert result.json["files"] == len(FILES)
    assert result.json["bytes"] == sum((PROJECTS / f).stat().st_size for f in FILES)
    records = sum(1 for f in FILES for line in lines_of(fixture_bytes(f)) if line)
    assert result.json["records"] == records


# --- 6. files that are never journals ----------------------------------------------------------


NOT_JOURNALS = {
    "projects/{slug}/sessions-index.json": json.dumps({"version": 1, "originalPath": "/x", "entries": [
        {"sessionId": "d6e0bada-1959-4eec-a9d2-0bfade768d8f", "fullPath": "/x", "messageCount": 3}]}),
    "projects/{slug}/{sid}/subagents/agent-x.meta.json": '{"agentType":"Explore","description":"look around"}',
    "projects/{slug}/{sid}/tool-results/toolu_1.txt": "a large tool output\n" * 50,
    "projects/{slug}/{sid}/tool-results/b7x2k9q1z.txt": "",
    "file-history/{sid}/0123456789abcdef@v1": "old file contents {\"type\":\"x\"",
    "file-history/{sid}/0123456789abcdef@v2": "",
    "history.jsonl": '{"display":"fix it","pastedContents":{},"timestamp":1770000000000,"project":"/x","sessionId":"s"}\n'
                     '{"display":"torn',
    "todos/{sid}-agent-{sid}.json": "[]",
    "debug/{sid}.txt": "debug log\n",
    "plans/brave-blue-fox.md": "# plan\n",
}


def _add_never_journals(root: Path) -> list[Path]:
    slug, sid = SMALL_MAIN.parts[0], SMALL_MAIN.stem
    made = []
    for pattern, text in NOT_JOURNALS.items():
        path = root / pattern.format(slug=slug, sid=sid)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        made.append(path)
    return made


@pytest.mark.parametrize("where", ["root", "projects", "project", "session folder"])
def test_caches_history_and_spilled_output_are_never_journals_and_never_flagged(tmp_path, where):
    root = copy_tree(tmp_path)
    made = _add_never_journals(root)
    slug, sid = SMALL_MAIN.parts[0], SMALL_MAIN.stem
    target = {"root": root, "projects": root / "projects", "project": root / "projects" / slug,
              "session folder": root / "projects" / slug / sid}[where]
    target.mkdir(parents=True, exist_ok=True)
    before = snapshot(tmp_path)
    for command in (["fsck"], ["fsck", "--repair"], ["fsck", "--salvage", "--yes"]):
        result = run_cli(*command, "--json", target)
        assert "Traceback" not in result.stderr
        named = {Path(f["path"]).name for f in result.json.get("findings", [])}
        assert not named & {p.name for p in made}, result.stdout
        assert result.exit_code == 0 or where == "session folder", result.stdout + result.stderr
    assert snapshot(tmp_path) == before
    listed = run_cli("ls", "--json", root)
    assert {Path(s["path"]).name for s in listed.json["sessions"]} <= {p.name for p in MAINS}


# --- 5. live writers -------------------------------------------------------------------------------


def _torn_copy(tmp_path: Path, rel: Path = SMALL_MAIN) -> tuple[Path, Path, bytes, bytes]:
    data = fixture_bytes(rel)
    last = lines_of(data)[-1]
    torn = data[: len(data) - len(last) - 1] + last[:40]  # inside the envelope: a torn tail by any rule
    root, journal = one_session(tmp_path, rel, torn)
    return root, journal, data, torn


def test_a_process_holding_a_session_open_for_append_makes_it_in_use(tmp_path):
    root, journal, data, torn = _torn_copy(tmp_path)
    with holder(journal) as proc:
        check = run_sub("fsck", "--json", root)
        assert check.exit_code == 4, check.stdout + check.stderr
        in_use = [f for f in check.json["findings"] if f["code"] == "in-use"]
        assert len(in_use) == 1 and Path(in_use[0]["path"]) == journal
        assert f"pid {proc.pid}" in in_use[0]["message"]
        assert in_use[0]["severity"] == "warning"
        assert not any(f["code"] == "torn-tail" for f in check.json["findings"]), "skipped, not read"
        before = snapshot(tmp_path)
        repair = run_sub("fsck", "--repair", "--json", root)
        assert repair.exit_code == 4, repair.stdout
        assert snapshot(tmp_path) == before and journal.read_bytes() == torn, "a live writer's file is never cut"
        assert saved_tails() == []
        forced = run_sub("fsck", "--repair", "--force", "--json", root)  # --force overrides a lock, not a writer's descriptor
        assert forced.exit_code == 4 and journal.read_bytes() == torn, forced.stdout
        assert "even with --force" in next(f["message"] for f in forced.json["findings"] if f["code"] == "in-use")
    repair = run_sub("fsck", "--repair", "--json", root)  # the writer is gone
    assert repair.exit_code & 1, repair.stdout
    assert journal.read_bytes() == data[: len(data) - len(lines_of(data)[-1]) - 1]
    assert saved_tails() == [torn[len(journal.read_bytes()):]]


def test_a_rewriter_holding_the_session_read_write_makes_it_in_use(tmp_path):
    """performRemoveByUuid opens the transcript r+ (SOURCES-AGENTS §1.11)."""
    root, journal, data, torn = _torn_copy(tmp_path)
    with holder(journal, "r+b") as proc:
        repair = run_sub("fsck", "--repair", "--json", root)
    assert repair.exit_code == 4 and journal.read_bytes() == torn
    assert [f"pid {proc.pid}" in f["message"] for f in repair.json["findings"] if f["code"] == "in-use"] == [True]


def test_a_reader_does_not_make_a_session_in_use(tmp_path):
    root, journal, data, torn = _torn_copy(tmp_path)
    with holder(journal, "rb"):
        repair = run_sub("fsck", "--repair", "--json", root)
    assert repair.exit_code == 1, repair.stdout
    assert not any(f["code"] == "in-use" for f in repair.json["findings"])


def test_a_live_subagent_transcript_is_in_use_and_its_session_is_still_checked(tmp_path):
    root = copy_tree(tmp_path)
    agent = root / "projects" / SUBAGENT
    with holder(agent):
        check = run_sub("fsck", "--json", root)
    in_use = [Path(f["path"]) for f in check.json["findings"] if f["code"] == "in-use"]
    assert in_use == [agent] and check.exit_code == 4
    assert check.json["files"] == len(FILES) - 1


def test_a_compaction_temp_file_beside_a_session_makes_it_in_use(tmp_path):
    root, journal, data, torn = _torn_copy(tmp_path)
    temp = journal.with_name(journal.name + ".compact.tmp.1f2e3d")
    temp.write_bytes(torn[:100])
    before = snapshot(tmp_path)
    check = run_cli("fsck", "--json", root)
    assert check.exit_code == 4
    assert [(f["code"], Path(f["path"])) for f in check.json["findings"]] == [("in-use", journal)]
    assert temp.name in check.json["findings"][0]["message"]
    assert run_cli("fsck", "--repair", root).exit_code == 4
    assert snapshot(tmp_path) == before, "neither the journal nor Claude Code's temp file is touched"


def test_a_forced_repair_of_an_in_use_journal_is_still_refused(tmp_path):
    """--force overrides a lock levelsess cannot judge, never a process holding the file open to
    write: it may append at any moment, so nothing is cut and the run is not clean."""
    root, journal, data, torn = _torn_copy(tmp_path)
    with holder(journal):
        forced = run_sub("fsck", "--repair", "--force", "--json", root)
    assert journal.read_bytes() == torn
    assert forced.exit_code == 4 and "in-use" in {f["code"] for f in forced.json["findings"]}, forced.stdout


def test_a_writer_that_opens_the_session_between_check_and_repair_stops_the_repair(tmp_path):
    from toolkit.fsck import check_folders, plan_repair
    from toolkit.stores import discover_all

    root, journal, data, torn = _torn_copy(tmp_path)
    code = f"import sys,time; sys.stdin.readline(); f=open({str(journal)!r},'ab'); print('ok',flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        report = check_folders(discover_all([root]))  # nobody has it open yet
        assert "torn-tail" in {f.code for f in report.findings}
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == b"ok"  # now Claude Code (say) has it open to append
        plan_repair(report).execute()
        assert journal.read_bytes() == torn, "the repair saw the writer just before writing and left the file"
    finally:
        proc.kill()
        proc.wait()


# --- 7. ls, show, export ---------------------------------------------------------------------------


def test_ls_lists_every_main_session_with_its_title(tmp_path):
    root = copy_tree(tmp_path)
    for target in (root, root / "projects"):
        result = run_cli("ls", "--json", target)
        assert result.exit_code == 0, result.stderr
        rows = {Path(r["path"]).relative_to(root / "projects"): r for r in result.json["sessions"]}
        assert set(rows) == set(MAINS), "one row per main transcript; subagents go with their session"
        for rel, row in rows.items():
            assert row["id"] == rel.stem and row["layout"] == "claude-code" and row["state"] == "clean"
            assert row["title"] == expected_title(fixture_bytes(rel)), rel
            assert row["bytes"] == (PROJECTS / rel).stat().st_size


@pytest.mark.parametrize("rel", MAINS, ids=[m.stem[:8] for m in MAINS])
def test_show_and_export_every_main_session(tmp_path, rel):
    root = copy_tree(tmp_path)
    data = fixture_bytes(rel)
    before = snapshot(tmp_path)
    shown = run_cli("show", rel.stem, "--in", root)
    assert shown.exit_code == 0 and "Traceback" not in shown.stderr, shown.stderr
    title = expected_title(data) or rel.stem
    markdown = run_cli("export", rel.stem, "--in", root, "--format", "md")
    assert markdown.exit_code == 0, markdown.stderr
    assert markdown.stdout.startswith(f"# {title}")
    exact = run_cli("export", rel.stem, "--in", root, "--format", "jsonl", "-o", tmp_path / "out.jsonl")
    assert exact.exit_code == 0 and (tmp_path / "out.jsonl").read_bytes() == data
    (tmp_path / "out.jsonl").unlink()
    whole = run_cli("export", rel.stem[:8], "--in", root / "projects", "--format", "json")
    assert whole.exit_code == 0, whole.stderr
    records = whole.json["records"]
    assert records == [json.loads(line) for line in lines_of(data)], "every record, in order, as written"
    assert snapshot(tmp_path) == before


def test_show_by_path_of_a_main_session(tmp_path):
    root = copy_tree(tmp_path)
    result = run_cli("show", root / "projects" / SMALL_MAIN)
    assert result.exit_code == 0 and result.stdout.startswith(f"# {expected_title(fixture_bytes(SMALL_MAIN))}")


@pytest.mark.parametrize("command", [["show"], ["export", "--format", "md"], ["export", "--format", "jsonl"]], ids=" ".join)
def test_show_and_export_a_subagent_transcript_by_path(tmp_path, command):
    root = copy_tree(tmp_path)
    agent = root / "projects" / SUBAGENT
    result = run_cli(command[0], agent, *command[1:])  # raises AssertionError on a traceback
    assert result.exit_code in (0, 4, 8, 16), result.stderr


def _with_titles(tmp_path: Path, extra: list[dict]) -> tuple[Path, bytes]:
    data = fixture_bytes(SMALL_MAIN)
    data += b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in extra)
    root, _ = one_session(tmp_path, SMALL_MAIN, data)
    return root, data


SID = SMALL_MAIN.stem
LEAF = json.loads(lines_of(fixture_bytes(SMALL_MAIN))[-1])["uuid"] if FILES else "x"


@pytest.mark.parametrize("extra, title", [
    ([], "sizvp vyqsblp rb nhuoroydsr"),  # the first typed prompt
    ([{"type": "summary", "summary": "elsewhere", "leafUuid": "0" * 36}], "sizvp vyqsblp rb nhuoroydsr"),
    ([{"type": "summary", "summary": "Refunds", "leafUuid": LEAF}], "Refunds"),
    ([{"type": "summary", "summary": "Refunds", "leafUuid": LEAF}, {"type": "ai-title", "aiTitle": "AI one", "sessionId": SID},
      {"type": "ai-title", "aiTitle": "AI two", "sessionId": SID}], "AI two"),
    ([{"type": "custom-title", "customTitle": "Mine", "sessionId": SID}, {"type": "ai-title", "aiTitle": "AI", "sessionId": SID},
      {"type": "custom-title", "customTitle": "Mine, renamed", "sessionId": SID}], "Mine, renamed"),
], ids=["prompt", "summary-elsewhere", "summary", "ai-title", "custom-title"])
def test_titles_follow_the_precedence(tmp_path, extra, title):
    root, data = _with_titles(tmp_path, extra)
    assert expected_title(data) == title
    row = run_cli("ls", "--json", root).json["sessions"][0]
    assert row["title"] == title
    assert run_cli("export", SID, "--in", root).stdout.startswith(f"# {title}\n")


def test_injected_user_text_is_never_the_title(tmp_path):
    lines = lines_of(fixture_bytes(SMALL_MAIN))
    first = next(i for i, line in enumerate(lines) if b'"type":"user"' in line)
    record = json.loads(lines[first])
    injected = [dict(record, uuid=f"00000000-0000-4000-8000-00000000000{n}", message={"role": "user", "content": text})
                for n, text in enumerate(["<command-name>/clear</command-name>", "Caveat: the messages below",
                                          "This session is being continued from a previous conversation that ran out"])]
    injected.append(dict(record, uuid="00000000-0000-4000-8000-000000000009", isMeta=True,
                         message={"role": "user", "content": "meta text"}))
    data = join(lines[:first] + [json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() for r in injected]
                + lines[first:])
    root, _ = one_session(tmp_path, SMALL_MAIN, data)
    assert run_cli("ls", "--json", root).json["sessions"][0]["title"] == "sizvp vyqsblp rb nhuoroydsr"


# --- 8. hostile inputs ---------------------------------------------------------------------------


def test_a_fifo_named_like_a_session_is_not_read_and_not_a_traceback(tmp_path):
    root, journal = one_session(tmp_path, SMALL_MAIN)
    fifo = journal.with_name("11111111-2222-4333-8444-555555555555.jsonl")
    os.mkfifo(fifo)
    agent_fifo = journal.parent / journal.stem / "subagents" / "agent-a0000000000000000.jsonl"
    agent_fifo.parent.mkdir(parents=True)
    os.mkfifo(agent_fifo)
    first = run_sub("fsck", "--json", root, timeout=30)  # a process of its own first: a FIFO that blocks fails here
    assert first.exit_code == 0 and "Traceback" not in first.stderr, first.stderr
    for target in (root, journal.parent):
        result = run_cli("fsck", "--json", target)
        codes = {(f["code"], Path(f["path"]).name) for f in result.json["findings"]}
        assert ("not-a-journal", fifo.name) in codes and ("not-a-journal", agent_fifo.name) in codes, codes
        assert result.exit_code == 0, result.stdout
    for command in (["fsck", "--json", fifo], ["fsck", "--repair", "--json", fifo], ["show", fifo], ["export", fifo]):
        result = run_cli(*command)
        assert result.exit_code in (8, 16), (command, result.exit_code)
    listed = run_cli("ls", "--json", root)
    assert listed.exit_code == 0 and len(listed.json["sessions"]) == 1


def test_a_symlink_loop_named_like_a_session_is_an_operational_error(tmp_path):
    root, journal = one_session(tmp_path, SMALL_MAIN)
    loop = journal.with_name("22222222-2222-4333-8444-555555555555.jsonl")
    loop.symlink_to(loop.name)
    (root / "projects" / "looped").symlink_to("looped")  # a project folder that is a loop
    before = snapshot(tmp_path)
    for command in (["fsck"], ["fsck", "--repair"], ["fsck", "--salvage", "--yes"]):
        result = run_cli(*command, "--json", root)
        assert result.exit_code & 8, result.stdout
        mine = {f["code"] for f in result.json["findings"] if Path(f["path"]) == loop}
        assert "unreadable" in mine and "symlink" in mine, result.stdout
        assert not any(Path(f["path"]) == journal for f in result.json["findings"])
    assert snapshot(tmp_path) == before
    assert run_cli("ls", root).exit_code in (0, 8)
    assert run_cli("fsck", loop).exit_code == 8


def test_a_hash_in_the_path_is_just_a_character(tmp_path):
    data = fixture_bytes(SMALL_MAIN)
    last = lines_of(data)[-1]
    body = data[: len(data) - len(last) - 1]
    root = tmp_path / "we#ird" / ".claude"
    journal = root / "projects" / "-x#1-y" / SMALL_MAIN.name
    journal.parent.mkdir(parents=True)
    journal.write_bytes(body + last[:30])
    check = run_cli("fsck", "--json", root)
    assert [(f["code"], Path(f["path"])) for f in check.json["findings"]] == [("torn-tail", journal)]
    repair = run_cli("fsck", "--repair", "--json", journal)
    assert repair.exit_code == 1 and journal.read_bytes() == body
    assert run_cli("ls", "--json", root).json["sessions"][0]["path"] == str(journal)
    assert run_cli("show", SMALL_MAIN.stem, "--in", root).exit_code == 0
    assert run_cli("export", str(journal), "--format", "jsonl").stdout.encode() == body


@pytest.fixture
def unprivileged():
    from tests import test_unreadable

    if test_unreadable.SETPRIV is None and os.geteuid() == 0:
        pytest.skip("needs setpriv to drop root's DAC override")
    return test_unreadable.run_unprivileged


def test_an_unreadable_session_is_an_operational_error_and_never_touched(tmp_path, unprivileged):
    root = copy_tree(tmp_path)
    journal = root / "projects" / SMALL_MAIN
    with open(journal, "ab") as handle:
        handle.write(b'{"parentUuid":"x","isSide')
    original = journal.read_bytes()
    journal.chmod(0o000)
    try:
        for command in (["fsck"], ["fsck", "--repair"], ["fsck", "--salvage", "--yes"]):
            result = unprivileged(*command, "--json", root)
            assert result.exit_code & 8, (command, result.stdout)
            mine = [f for f in result.json["findings"] if Path(f["path"]) == journal]
            assert [f["code"] for f in mine] == ["unreadable"], mine
            assert not any(f["code"] in ("torn-tail", "invalid-json") for f in mine)
        listed = unprivileged("ls", "--json", root)
        assert any(s["state"] == "unreadable" for s in listed.json["sessions"])
    finally:
        journal.chmod(0o644)
    assert journal.read_bytes() == original


def test_an_unreadable_project_folder_is_reported_and_the_rest_is_checked(tmp_path, unprivileged):
    root = copy_tree(tmp_path)
    project = root / "projects" / SMALL_MAIN.parts[0]
    project.chmod(0o000)
    try:
        result = unprivileged("fsck", "--json", root)
    finally:
        project.chmod(0o755)
    assert result.exit_code & 8, result.stdout
    assert any(f["code"] == "unreadable" and Path(f["path"]) == project for f in result.json["findings"])
    assert result.json["files"] == len(FILES) - 2


def test_a_zero_byte_session_is_an_empty_journal_warning(tmp_path):
    root = copy_tree(tmp_path)
    empty = root / "projects" / SMALL_MAIN.parts[0] / "ffffffff-0000-4000-8000-000000000000.jsonl"
    empty.write_bytes(b"")
    result = run_cli("fsck", "--json", root)
    assert result.exit_code == 0
    assert [(f["code"], Path(f["path"])) for f in result.json["findings"] if Path(f["path"]) == empty] == [("empty-journal", empty)]


def test_a_zero_byte_session_first_in_its_project_does_not_hide_the_project(tmp_path):
    need_fixtures()
    projects = tmp_path / "projects"  # a projects folder copied out of its .claude root
    slug = SMALL_MAIN.parts[0]
    (projects / slug).mkdir(parents=True)
    for rel in (f for f in MAINS if f.parts[0] == slug):
        (projects / rel).write_bytes(fixture_bytes(rel))
    (projects / slug / "00000000-0000-4000-8000-000000000000.jsonl").write_bytes(b"")
    result = run_cli("fsck", "--json", projects)
    assert result.exit_code == 0, result.stdout
    listed = run_cli("ls", "--json", projects)
    assert {s["state"] for s in listed.json["sessions"]} == {"clean"}, listed.stdout


def test_subagent_files_only_warn_about_their_link_to_the_session(tmp_path):
    for rel in subagent_files():
        lines = lines_of(fixture_bytes(rel))
        root, journal = one_session(tmp_path / rel.stem, rel, join(lines[1:]))  # starts mid-conversation
        result = run_cli("fsck", "--json", journal)
        assert result.exit_code == 0, result.stdout
        assert graph_findings(result.json["findings"]) == expected_graph(journal.read_bytes()).findings
        assert {f["code"] for f in result.json["findings"]} <= {"parent-elsewhere"}


@pytest.mark.parametrize("first", [
    {"type": "content-replacement", "replacements": [], "sessionId": SID},
    {"type": "content-replacement", "replacements": []},
], ids=["with a sessionId", "without one"])
def test_an_unknown_first_record_type_does_not_disown_the_file(tmp_path, first):
    data = json.dumps(first, separators=(",", ":")).encode() + b"\n" + fixture_bytes(SMALL_MAIN)
    root, journal = one_session(tmp_path, SMALL_MAIN, data)
    result = run_cli("fsck", "--json", root)
    assert result.exit_code == 0, result.stdout
    assert not any(f["severity"] == "error" for f in result.json["findings"])
    assert run_cli("ls", "--json", root).json["sessions"][0]["state"] == "clean"


@pytest.mark.parametrize("born", [b'{"t', b'{"parentUu', b"{"], ids=["{\"t", "{\"parentUu", "{"])
@pytest.mark.parametrize("path", [
    "root",
    "project",
    "file",
])
def test_a_session_killed_inside_its_first_key_is_a_torn_tail_whatever_path_names_it(tmp_path, path, born):
    root, journal = one_session(tmp_path, SMALL_MAIN, born)
    target = {"root": root, "project": journal.parent, "file": journal}[path]
    check = run_cli("fsck", "--json", target)
    assert [(f["code"], f["line"], f["offset"]) for f in check.json.get("findings", [])] == [("torn-tail", 1, 0)], check.stdout
    repair = run_cli("fsck", "--repair", "--json", target)
    assert repair.exit_code == 1 and journal.read_bytes() == b""
    assert saved_tails() == [born]


def test_a_tool_result_anywhere_in_the_file_answers_the_last_call(tmp_path):
    """The rule: a tool_use of the last assistant message with no tool_result *anywhere in the file*."""
    lines = lines_of(fixture_bytes(SMALL_MAIN))
    last = json.loads(lines[-1])
    call = {"parentUuid": last["uuid"], "isSidechain": False, "type": "assistant", "uuid": "aaaaaaaa-0000-4000-8000-000000000001",
            "message": {"id": "msg_01Last", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01X", "name": "Task",
                                                                            "input": {}}]}, "sessionId": SID}
    answer = {"parentUuid": call["uuid"], "isSidechain": False, "type": "user", "uuid": "aaaaaaaa-0000-4000-8000-000000000002",
              "message": {"role": "user", "content": [{"tool_use_id": "toolu_01X", "type": "tool_result", "content": "done"}]},
              "sessionId": SID}
    for records, flagged in (([call], True), ([call, answer], False)):
        data = join(lines + [json.dumps(r, separators=(",", ":")).encode() for r in records])
        root, journal = one_session(tmp_path / str(len(records)), SMALL_MAIN, data)
        codes = [f["code"] for f in run_cli("fsck", "--json", journal).json["findings"]]
        assert ("dangling-tool-use" in codes) is flagged, codes


def test_a_tool_result_in_a_sidechain_record_still_answers_the_call(tmp_path):
    lines = lines_of(fixture_bytes(SMALL_MAIN))
    last = json.loads(lines[-1])
    call = {"parentUuid": last["uuid"], "isSidechain": False, "type": "assistant", "uuid": "aaaaaaaa-0000-4000-8000-000000000001",
            "message": {"id": "msg_01Last", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01X", "name": "Task",
                                                                            "input": {}}]}, "sessionId": SID}
    answer = {"parentUuid": call["uuid"], "isSidechain": True, "type": "user", "uuid": "aaaaaaaa-0000-4000-8000-000000000002",
              "message": {"role": "user", "content": [{"tool_use_id": "toolu_01X", "type": "tool_result", "content": "done"}]},
              "sessionId": SID}
    data = join(lines + [json.dumps(r, separators=(",", ":")).encode() for r in (call, answer)])
    root, journal = one_session(tmp_path, SMALL_MAIN, data)
    assert "dangling-tool-use" not in [f["code"] for f in run_cli("fsck", "--json", journal).json["findings"]]


@pytest.mark.parametrize("content", [b"", b"{"], ids=["zero bytes", "cut at {"])
@pytest.mark.parametrize("target", ["project", "projects"])
def test_a_project_of_unsniffable_sessions_gets_nothing_written_into_it(tmp_path, content, target):
    root = tmp_path / ".claude"
    journal = root / "projects" / SMALL_MAIN.parts[0] / SMALL_MAIN.name
    journal.parent.mkdir(parents=True)
    journal.write_bytes(content)
    run_cli("fsck", "--repair", "--json", journal.parent if target == "project" else journal.parent.parent)
    made = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p != journal and p.is_file())
    assert made == [], made


# --- other commands on a Claude Code tree: no cache, no traceback, nothing written ----------------------


def test_a_dry_run_repair_writes_nothing_anywhere(tmp_path):
    root, journal, data, torn = _torn_copy(tmp_path)
    before = snapshot(tmp_path)
    result = run_cli("fsck", "--repair", "--dry-run", "--json", root)
    assert result.exit_code == 4 and snapshot(tmp_path) == before
    assert not data_dir().exists()



@pytest.mark.parametrize("command", [["reindex"], ["reindex", "--check"]], ids=" ".join)
@pytest.mark.parametrize("rel", [pytest.param(None, id="root"), pytest.param(SMALL_MAIN, id="file")])
def test_reindex_of_a_claude_code_tree_writes_nothing_and_raises_nothing(tmp_path, command, rel):
    root = copy_tree(tmp_path)
    before = snapshot(tmp_path)
    result = run_cli(*command, root if rel is None else root / "projects" / rel)  # raises AssertionError on a traceback
    assert result.exit_code == 0, result.stderr
    assert snapshot(tmp_path) == before


def test_strict_does_not_judge_claude_code_records_by_the_levelcode_schema(tmp_path):
    root = copy_tree(tmp_path)
    result = run_cli("fsck", "--strict", "--json", root)
    assert not any(f["code"] == "schema-violation" for f in result.json["findings"]), result.stdout[:2000]


def test_migrate_on_a_claude_code_tree_names_it_for_what_it_is(tmp_path):
    root = copy_tree(tmp_path)
    before = snapshot(tmp_path)
    result = run_cli("migrate", root)
    assert result.exit_code == 0 and snapshot(tmp_path) == before
    assert "Logician" not in result.stdout + result.stderr, result.stdout


def _held_by_a_check(tmp_path: Path, records: int) -> tuple[int, int]:
    """(bytes traced while a check of a transcript of ``records`` records judges its graph, its chain records)."""
    import tracemalloc

    import toolkit.layouts.claude_code as claude_code
    from tests.bench.claude_transcript import write
    from toolkit.journal import scan_journal

    path = write(tmp_path / str(records), records)
    held: list[tuple[int, int]] = []
    finish = claude_code.ClaudeRules.finish

    def measured(rules, *args):
        held.append((tracemalloc.get_traced_memory()[0], len(rules.up)))
        return finish(rules, *args)

    claude_code.ClaudeRules.finish = measured
    tracemalloc.start()
    try:
        scan_journal(path, "claude-code")
    finally:
        tracemalloc.stop()
        claude_code.ClaudeRules.finish = finish
    return held[0]


def test_a_check_holds_under_230_bytes_a_chain_record(tmp_path):
    """What a check of a transcript of up to RECENT chain records holds until it judges the graph grows
    with its chain records: each record's uuid, where it is, and its parent as a number (190 bytes).
    Each parsed parentUuid kept was 85 bytes more (271)."""
    small, large = _held_by_a_check(tmp_path, 10_000), _held_by_a_check(tmp_path, 20_000)
    per_record = (large[0] - small[0]) / (large[1] - small[1])
    assert per_record < 230, f"{per_record:.0f} bytes a chain record"


def test_past_recent_a_check_holds_under_100_bytes_a_chain_record(tmp_path, monkeypatch):
    """DESIGN §8: a check of any transcript in under 100 MiB.  Past RECENT chain records the uuids
    are aged out of their strings (two hashes and a number, behind a Bloom filter): a 366 MB transcript
    of 600,000 small lines peaked at 169 MiB with every uuid a string, 90-94 MiB aged."""
    import toolkit.layouts.claude_code as claude_code

    monkeypatch.setattr(claude_code, "RECENT", 2_000)
    small, large = _held_by_a_check(tmp_path, 10_000), _held_by_a_check(tmp_path, 20_000)
    per_record = (large[0] - small[0]) / (large[1] - small[1])
    assert per_record < 90, f"{per_record:.0f} bytes a chain record"


_UUIDS = ["a", "b", "c", "d", "e", "f"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_UUIDS),
                          st.one_of(st.none(), st.sampled_from(_UUIDS), st.sampled_from([5, "gone", True]))),
                min_size=1, max_size=24))
def test_each_parent_is_the_record_its_uuid_names_at_the_end(tmp_path, chain):
    """A chain record's parent, kept as the number of the record its parentUuid named when it was read,
    is the record that uuid names once the file is read (its last record, as resume maps a repeated
    uuid), whether the parent came before it, after it, is itself, repeats, or is no record or string."""
    import toolkit.layouts.claude_code as claude_code
    from toolkit.journal import scan_journal

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                                          "message": {"role": "user", "content": "hi"}}).encode() + b"\n"
                              for uuid, parent in chain))
    kept: list = []
    finish = claude_code.ClaudeRules.finish

    def keep(rules, *args):
        kept.append(rules)
        return finish(rules, *args)

    claude_code.ClaudeRules.finish = keep
    try:
        scan_journal(path, "claude-code")
    finally:
        claude_code.ClaudeRules.finish = finish
    last = {uuid: number for number, (uuid, _parent) in enumerate(chain)}  # (a repeated uuid names its last record)
    rules = kept[0]
    assert [rules._parent(number) for number in range(len(chain))] == \
           [last.get(parent) if type(parent) is str else None for _uuid, parent in chain]


_RECORD_KINDS = ["user", "assistant", "system"]


def _graph_line(kind: str, uuid: str, parent, extra: dict) -> bytes:
    record = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", **extra}
    return json.dumps(record).encode() + b"\n"


_graph_records = st.lists(
    st.tuples(st.sampled_from(_RECORD_KINDS), st.sampled_from(_UUIDS),
              st.one_of(st.none(), st.sampled_from(_UUIDS), st.sampled_from([5, "gone", True])),
              st.sampled_from(["plain", "side", "result", "result", "use", "use", "compact", "summary", "title"]),
              st.sampled_from(["t1", "t2", "t3"])),
    min_size=1, max_size=30)


def _graph_bytes(records) -> bytes:
    out = []
    for kind, uuid, parent, shape, tool in records:
        extra: dict = {}
        if shape == "side":
            extra["isSidechain"] = True
        if kind == "user":
            extra["message"] = ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": "ok"}]}
                                if shape == "result" else {"role": "user", "content": f"prompt {uuid}"})
            if shape == "result":
                extra["toolUseResult"] = {"ok": 1}
        elif kind == "assistant":
            content = [{"type": "text", "text": "hi"}] + ([{"type": "tool_use", "id": tool, "name": "Bash", "input": {}}]
                                                         if shape == "use" else [])
            extra["message"] = {"id": f"m{uuid}", "role": "assistant", "model": "claude-x", "content": content}
        elif shape == "compact":
            extra.update(subtype="compact_boundary", logicalParentUuid=parent if isinstance(parent, str) else "gone")
            parent = None
        out.append(_graph_line(kind, uuid, parent, extra))
        if shape == "summary":
            out.append(json.dumps({"type": "summary", "summary": "s", "leafUuid": uuid}).encode() + b"\n")
        elif shape == "title":
            out.append(json.dumps({"type": "ai-title", "aiTitle": f"t {uuid}", "sessionId": "s"}).encode() + b"\n")
    return b"".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_graph_records, st.integers(min_value=1, max_value=3))
@example([("user", "a", None, "result", "t1"), ("user", "b", "a", "result", "t2"), ("assistant", "c", "b", "use", "t1")], 1)
def test_a_check_that_ages_its_uuids_finds_what_one_holding_them_all_finds(tmp_path, records, recent):
    """Past RECENT uuids (and tool_use ids) a check holds the older ones as hashes: on any graph (repeated
    uuids, parents before, after and at themselves, dangling, sidechains, compactions, summaries, tool
    calls and their results), every finding and fact is the one a check holding every uuid makes."""
    import dataclasses

    import toolkit.layouts.claude_code as claude_code
    from toolkit.journal import scan_journal

    path = tmp_path / "s.jsonl"
    path.write_bytes(_graph_bytes(records))

    def scanned():
        scan = scan_journal(path, "claude-code")
        return scan.findings, dataclasses.asdict(scan.facts), scan.records

    whole, kept = scanned(), claude_code.RECENT
    claude_code.RECENT = recent
    try:
        aged = scanned()
    finally:
        claude_code.RECENT = kept
    assert aged == whole


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from([f"u{n}" for n in range(40)]), st.integers(0, 10**6), max_size=25),
                max_size=8),
       st.integers(min_value=1, max_value=64), st.lists(st.sampled_from([f"u{n}" for n in range(48)]), max_size=20))
def test_aged_uuids_name_the_number_their_last_aging_gave_them(batches, expected, asked):
    """Whatever the filter was sized for (it grows as uuids are aged), a uuid names the number of the
    last batch that aged it, and one never aged names nothing."""
    from toolkit.layouts.claude_code import _Aged

    aged, last = _Aged(expected), {}
    for batch in batches:
        if batch:
            aged.add(batch)
            last.update(batch)
    for uuid in [*asked, *last]:
        assert aged.get(uuid) == last.get(uuid)


@pytest.mark.parametrize("odd", [["x"], {"a": 1}, 7, None, True, 1.5], ids=lambda odd: type(odd).__name__)
@pytest.mark.parametrize("place", ["use", "result"])
def test_an_id_of_any_json_shape_in_a_tool_call_stops_no_command(tmp_path, odd, place):
    """A tool_use ``id`` (or a tool_result's ``tool_use_id``) that is a list or an object in the last
    assistant message raised a TypeError (unhashable) out of every check of the file; any shape is
    an id no result answers, said as written."""
    use = {"type": "tool_use", "id": odd if place == "use" else "t1", "name": "Bash", "input": {}}
    result = {"type": "tool_result", "tool_use_id": odd if place == "result" else "t0", "content": "ok"}
    project = tmp_path / ".claude" / "projects" / "-home-ada-code"
    project.mkdir(parents=True)
    path = project / "5e55a0e1-0000-4000-8000-000000000009.jsonl"
    path.write_bytes(b"".join(json.dumps(record).encode() + b"\n" for record in [
        {"type": "user", "uuid": "a", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}},
        {"type": "user", "uuid": "b", "parentUuid": "a", "sessionId": "s", "toolUseResult": {},
         "message": {"role": "user", "content": [result]}},
        {"type": "assistant", "uuid": "c", "parentUuid": "b", "sessionId": "s",
         "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "ok"}, use]}}]))
    checked = run_cli("fsck", path, "--json")
    assert checked.exit_code == 0 and [f["code"] for f in checked.json["findings"]] == ["dangling-tool-use"], checked.stdout
    for args in (("fsck", tmp_path / ".claude" / "projects"), ("ls", tmp_path / ".claude" / "projects"), ("show", path),
                 ("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", tmp_path / "store")):
        assert run_cli(*args).exit_code in (0, 1), args
