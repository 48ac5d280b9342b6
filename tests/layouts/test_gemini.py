"""The Gemini CLI layout on folders built from SOURCES-MORE §1.9's shapes: discovery, identification,
§1.2's record grammar (updates, $set, $set.messages, rewinds), the damage shapes, what Gemini's
start-up sweep deletes, legacy .json sessions, ls against an independent reader of §1.5, and
every command leaving ~/.gemini byte-identical except a repaired journal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.gemini import (G1, G2, PROJECT_HASH, ROOT, SID, SLUG, U1, U2, every_kind, gemini, gemini_home,
                                  gemini_lists, line, meta, name, user)
from toolkit.fsck import check_folders
from toolkit.journal import TailState, scan_journal
from toolkit.layouts import GEMINI
from toolkit.layouts.gemini import default_roots
from toolkit.layouts.gemini.render import replay
from toolkit.layouts.gemini.sweep import Candidate, Retention, plan_sweep
from toolkit.sessions import list_sessions
from toolkit.stores import discover

SUB = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
TWIN = "abababab-0000-4000-8000-000000000000"


@pytest.fixture(autouse=True)
def no_gemini_home(monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)


def chats(home: Path) -> Path:
    return home / "tmp" / SLUG / "chats"


def findings(home: Path) -> list:
    return check_folders(discover(home)).findings


def codes(home: Path) -> list[tuple[str, str]]:
    return [(Path(f.path).name, f.code) for f in findings(home)]


def full_tree(tmp_path: Path) -> Path:
    sub = b"".join(map(line, [meta(SUB, kind="subagent"), user("s1", "look at the repo"), gemini("s2", "done")]))
    legacy = json.dumps({**meta("22222222-0000-4000-8000-000000000000"), "messages": [user("l1", "old question"), gemini("l2", "old answer")]}, indent=2)
    return gemini_home(tmp_path, {name(): every_kind(), f"{SID}/{SUB}.jsonl": sub,
                                  "session-2026-01-01T00-00-22222222.json": legacy.encode()})


WHERE = {"home": ".", "tmp": "tmp", "project": f"tmp/{SLUG}", "chats": f"tmp/{SLUG}/chats"}


@pytest.mark.parametrize("where", sorted(WHERE))
def test_discovery_finds_sessions_and_subagents_and_files_them_under_the_home(tmp_path, where):
    home = full_tree(tmp_path)
    folders = discover(home / WHERE[where])
    assert {f.layout for f in folders} == {GEMINI}
    assert {str(j.relative_to(chats(home))) for f in folders for j in f.journals} == {name(), f"{SID}/{SUB}.jsonl"}
    assert {f.store for f in folders} == {home}


def test_default_roots_honour_gemini_cli_home(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    assert default_roots()[0] == tmp_path / ".gemini"


def test_one_session_file_and_a_subagent_folder_are_claimed(tmp_path):
    home = full_tree(tmp_path)
    [one] = discover(chats(home) / name())
    assert one.layout is GEMINI and not one.whole
    [sub] = discover(chats(home) / SID)
    assert sub.journals == (chats(home) / SID / f"{SUB}.jsonl",)


def test_a_folder_of_other_jsonl_is_not_claimed(tmp_path):
    folder = tmp_path / "g" / "tmp" / "x" / "chats"
    folder.mkdir(parents=True)
    (tmp_path / "g" / "projects.json").write_text("{}")
    (folder / "session-a.jsonl").write_bytes(line({"type": "user", "parentUuid": None, "uuid": "u"}))
    assert GEMINI.claim_dir(folder) is None


def test_a_foreign_file_named_like_a_session_is_left_alone(tmp_path):
    home = gemini_home(tmp_path, {name(): every_kind(), "session-x-abcdefgh.jsonl": line({"kind": "meta", "v": 2, "id": "x"})})
    assert (("session-x-abcdefgh.jsonl", "unknown-format")) in codes(home)


def test_the_grammar_applies_updates_set_and_rewinds(tmp_path):
    home = gemini_home(tmp_path)
    scan = scan_journal(chats(home) / name(), GEMINI)
    assert scan.identified and scan.tail is TailState.NONE and not [f for f in scan.findings if f.severity == "error"]
    facts = scan.facts
    assert list(replay(chats(home) / name()).messages) == [U1, G2, U2], "G1 was updated in place, then rewound; a repeated id is no duplicate"
    assert facts.messages == {} and facts.settled is not None, "a scan keeps the answers, not a sketch of each message"
    assert facts.updates == 1 and facts.rewinds == 1 and facts.dropped == 1
    assert facts.session_id == SID and facts.project_hash == PROJECT_HASH and facts.turns == 2
    assert facts.title == "README for my-app" and facts.model == "gemini-2.5-pro"


def test_set_messages_replaces_the_list_and_unknown_rewind_clears_it(tmp_path):
    data = b"".join(map(line, [meta(), user(U1, "one"), gemini(G1, "two"),
                               {"$set": {"messages": [user(U1, "one (masked)"), gemini(G2, "compressed")]}}]))
    home = gemini_home(tmp_path, {name(): data})
    chain = replay(chats(home) / name())
    assert list(chain.messages) == [U1, G2] and chain.messages[U1]["content"][0]["text"] == "one (masked)"
    assert [len(b.values) for b in chain.off] == [1]
    (chats(home) / name()).write_bytes(data + line({"$rewindTo": "nope"}))
    chain = replay(chats(home) / name())
    assert chain.messages == {} and "unknown id" in chain.off[-1].reason


DAMAGE = {
    "torn-meta": (lambda d: d[: d.index(b"\n") // 2] + b"\n" + d[d.index(b"\n") + 1:], {"invalid-json", "missing-meta", "sweep-due"}),
    "torn-tail": (lambda d: d + b'{"id":"x","type":"us', {"torn-tail"}),
    "nul-run": (lambda d: d.replace(b"\n", b"\n" + b"\0" * 40 + b"\n", 2), {"nul-padding"}),
    "joined": (lambda d: _join_two(d), {"spliced-records"}),
}


def _join_two(data: bytes) -> bytes:
    lines = data.split(b"\n")
    return b"\n".join(lines[:2] + [lines[2] + lines[3]] + lines[4:])


@pytest.mark.parametrize("shape", sorted(DAMAGE))
def test_damage_shapes_are_typed_findings_with_line_and_offset(tmp_path, shape):
    cut, expected = DAMAGE[shape]
    home = gemini_home(tmp_path, {name(): cut(every_kind())})
    found = [f for f in findings(home) if Path(f.path).name == name()]
    assert expected <= {f.code for f in found}, found
    for f in found:
        if f.code in expected - {"sweep-due"}:
            assert f.offset is not None and (f.line is not None or f.code == "torn-tail")


def test_repair_trims_a_torn_tail_and_saves_it_outside_the_tree(tmp_path):
    good = every_kind()
    home = gemini_home(tmp_path, {name(): good + b'{"id":"x","type":"us'})
    before = snapshot(home)
    result = run_cli("fsck", "--repair", home)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert (chats(home) / name()).read_bytes() == good
    after = snapshot(home)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {f"tmp/{SLUG}/chats/{name()}"}, "only the journal changed; nothing new in ~/.gemini"
    saved = list((Path(os.environ["XDG_DATA_HOME"]) / "levelsess" / "gemini").rglob("*.tail"))
    assert [p.read_bytes() for p in saved] == [b'{"id":"x","type":"us']


def test_a_torn_metadata_line_is_never_repaired(tmp_path):
    cut, _ = DAMAGE["torn-meta"]
    home = gemini_home(tmp_path, {name(): cut(every_kind())})
    before = snapshot(home)
    result = run_cli("fsck", "--repair", home)
    assert result.exit_code == 4 and snapshot(home) == before


COMMANDS = [("fsck",), ("fsck", "--repair"), ("fsck", "--strict"), ("fsck", "--salvage", "--yes"), ("ls",), ("ls", "--verify"),
            ("locks",), ("reindex",), ("migrate", "--dry-run")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_leaves_a_gemini_folder_byte_identical(tmp_path, command):
    home = full_tree(tmp_path)
    (home / "settings.json").write_text('{"general": {"sessionRetention": {"maxAge": "30d"}}}')
    before = snapshot(tmp_path)
    result = run_cli(*command, home)
    assert "Traceback" not in result.stdout + result.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", [("show", SID), ("export", SID), ("export", SID, "--format", "jsonl")], ids=" ".join)
def test_show_and_export_read_without_writing(tmp_path, command):
    home = full_tree(tmp_path)
    before = snapshot(tmp_path)
    result = run_cli(*command, "--store", home)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert snapshot(tmp_path) == before


def test_show_reads_a_legacy_json_session(tmp_path):
    home = full_tree(tmp_path)
    before = snapshot(home)
    result = run_cli("show", "22222222", "--store", home)
    assert result.exit_code == 0 and "old question" in result.stdout and "old answer" in result.stdout
    assert snapshot(home) == before


def test_show_renders_the_resumed_conversation_and_marks_the_rewound_part(tmp_path):
    home = gemini_home(tmp_path)
    out = run_cli("show", SID, "--store", home).stdout
    assert out.index("add a README") < out.index("off the chain") < out.index("Here is a README.") < out.index("thanks")
    assert out.count("WriteFile") == 1, "the updated message is shown once, in its last version"


def _session(sid: str, body: list, hours: float = 1.0) -> bytes:
    return b"".join(map(line, [meta(sid, hours=hours), *body]))


def test_ls_agrees_with_what_gemini_would_list(tmp_path):
    ids = [f"{n}{n}{n}{n}{n}{n}{n}{n}-0000-4000-8000-000000000000" for n in "34567"]
    files = {
        name(ids[0]): _session(ids[0], [user("a", "hello"), gemini("b", "hi")]),
        name(ids[1]): _session(ids[1], [user("a", "/clear")]),                      # nothing resumable
        name(ids[2]): _session(ids[2], [user("a", "task")])[:40] + b"\n" + line(user("b", "x")),  # torn metadata line
        name(ids[3]): b"".join(map(line, [meta(ids[3], kind="subagent"), user("a", "go")])),     # top-level subagent
        name(ids[4]): _session(ids[4], [user("a", "q"), {"$rewindTo": "a"}, gemini("b", "still here")]) + b'{"id":',
        "session-2026-01-01T00-00-77777777.json": json.dumps({**meta("77777777-0000-4000-8000-000000000000"),
                                                              "messages": [user("l1", "legacy question")]}, indent=2).encode(),
        "session-2026-01-01T00-00-78787878.json": json.dumps({**meta("78787878-0000-4000-8000-000000000000"),
                                                              "messages": [user("l1", "/help")]}, indent=2).encode(),
        "session-2026-01-01T00-00-79797979.json": b'{\n  "sessionId": "79797979-0000-4000-8000-000000000000",\n  "proj',
        # a legacy session resumed: Gemini wrote <name>.jsonl beside the .json; it lists the later one
        f"session-2026-01-01T00-00-{TWIN[:8]}.json": json.dumps({**meta(TWIN, hours=5), "messages": [user("t1", "before")]}).encode(),
        f"session-2026-01-01T00-00-{TWIN[:8]}.jsonl": _session(TWIN, [user("t1", "before"), user("t2", "after")], hours=1),
    }
    home = gemini_home(tmp_path, files)
    rows = list_sessions([home])
    shown = {r.id for r in rows if "Gemini does not list" not in r.reason}
    assert shown == set(gemini_lists(chats(home))) == {ids[0], ids[4], "77777777-0000-4000-8000-000000000000", TWIN}
    assert len(rows) == 10, "ls still shows the sessions Gemini hides, saying why"
    [twin] = [r for r in rows if r.id == TWIN and "Gemini does not list" not in r.reason]
    assert twin.path.suffix == ".jsonl" and twin.turns == 2
    assert {r.state for r in rows if r.path.suffix == ".json"} == {"clean", "hidden", "corrupt"}


def test_sweep_due_for_each_reason(tmp_path):
    old = _session("99999999-0000-4000-8000-000000000000", [user("a", "old work")], hours=24 * 40)
    files = {name(): every_kind(), name("88888888-0000-4000-8000-000000000000"): _session("88888888-0000-4000-8000-000000000000", []),
             name("99999999-0000-4000-8000-000000000000"): old}
    home = gemini_home(tmp_path, files)
    due = {Path(f.path).name: f.message for f in findings(home) if f.code == "sweep-due"}
    assert set(due) == {name("88888888-0000-4000-8000-000000000000"), name("99999999-0000-4000-8000-000000000000")}
    assert "no resumable message" in due[name("88888888-0000-4000-8000-000000000000")]
    assert "older than maxAge 30d" in due[name("99999999-0000-4000-8000-000000000000")] and "the defaults" in due[name("99999999-0000-4000-8000-000000000000")]
    (home / "settings.json").write_text(json.dumps({"general": {"sessionRetention": {"maxAge": "60d"}}}))
    due = {Path(f.path).name for f in findings(home) if f.code == "sweep-due"}
    assert due == {name("88888888-0000-4000-8000-000000000000")}
    (home / "settings.json").write_text(json.dumps({"general": {"sessionRetention": {"enabled": False}}}))
    assert not [f for f in findings(home) if f.code == "sweep-due"]


def test_max_count_keeps_the_newest_and_twins_go_together():
    now = 1_000_000.0
    items = [Candidate(Path(f"session-x-{n}aaaaaaa.jsonl"), None, now - n * 60, f"{n}") for n in range(4)]
    twin = Candidate(Path("session-y-3aaaaaaa.json"), None, now, "3")
    due = plan_sweep([*items, twin], Retention(max_count=4), now)
    assert set(due) == {items[2].path, items[3].path, twin.path}, "the newest three stay: the twin, 0, 1"
    assert "shares its short id" in due[twin.path]
    assert plan_sweep(items, Retention(max_age="1h", min_retention="1d"), now) == {}, "maxAge under minRetention disables it"


def test_legacy_json_is_checked_whole_and_never_written(tmp_path):
    good = json.dumps({**meta("44444444-0000-4000-8000-000000000000"), "messages": [user("l1", "q")]}, indent=2).encode()
    home = gemini_home(tmp_path, {name(): every_kind(), "session-2026-01-01T00-00-44444444.json": good,
                                  "session-2026-01-01T00-00-55555555.json": good[:-20]})
    found = {(Path(f.path).name, f.code) for f in findings(home)}
    assert ("session-2026-01-01T00-00-55555555.json", "invalid-json") in found
    assert ("session-2026-01-01T00-00-44444444.json", "invalid-json") not in found
    assert ("session-2026-01-01T00-00-55555555.json", "sweep-due") in found
    before = snapshot(home)
    run_cli("fsck", "--repair", home)
    assert snapshot(home) == before


def test_the_project_is_named_from_the_marker_or_projects_json(tmp_path):
    home = gemini_home(tmp_path)
    [row] = list_sessions([home])
    assert row.project == ROOT and row.layout == "gemini" and row.turns == 2
    (home / "tmp" / SLUG / ".project_root").unlink()
    assert list_sessions([home])[0].project == ROOT


def test_doctor_counts_what_the_next_start_deletes(tmp_path, monkeypatch):
    from toolkit.doctor import diagnose

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    home = gemini_home(tmp_path, {name(): every_kind(), name("88888888-0000-4000-8000-000000000000"): _session("88888888-0000-4000-8000-000000000000", [])})
    before = snapshot(home)
    result = diagnose(roots=[tmp_path])
    [health] = [s for s in result.stores if s.kind == "gemini"]
    assert health.path == home and health.codes.get("sweep-due") == 1
    assert any("import --from gemini" in step and "its next start deletes 1 of its sessions" in step for step in result.next)
    [install] = [i for i in result.installs if i.app == "gemini"]
    assert (install.user, install.sessions, install.due, install.kept) == (home, 2, 1, 0) and install.schedule
    store = tmp_path / "store"
    run_cli("import", "--from", "gemini", "--source", home, "--store", store)
    after = diagnose(str(store), roots=[tmp_path])
    [install] = [i for i in after.installs if i.app == "gemini"]
    assert (install.in_store, install.due, install.kept, install.gone) == (2, 1, 1, []), "the nightly import's sessions are kept"
    assert install.to_json()["sweep"] == {"due_at_next_start": 1, "due_already_in_store": 1}
    assert not [step for step in after.next if "import --from gemini" in step], "nothing left to keep: no import advised"
    shown = run_cli("doctor", "--store", store).stdout
    rows: list[list[str]] = []
    for line in shown.splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            if cells[0] or not rows:
                rows.append(cells)
            else:  # a cell wrapped onto the next line
                rows[-1] = [" ".join(filter(None, pair)) for pair in zip(rows[-1], cells)]
    [cells] = [row for row in rows if row[0] == "Gemini CLI"]  # (not its sessions' health row)
    assert cells[5] == "" and cells[7] == "2 in the store; its next start deletes 1, 1 of them in the store", \
        "what the store keeps is a note of its own, never under the tool's warnings"
    assert snapshot(home) == before
    [due] = [Path(f.path) for f in findings(home) if f.code == "sweep-due"]
    due.unlink()  # what its next start does
    gone = diagnose(str(store), roots=[tmp_path])
    [install] = [i for i in gone.installs if i.app == "gemini"]
    assert len(install.gone) == 1 and install.due == 0
    [step] = [step for step in gone.next if step.startswith("levelsess restore")]
    assert install.gone[0] in step and f"--store {store}" in step and "no longer has" in step
    assert install.to_json()["kept_but_gone"]["sessions"] == install.gone


def test_incremental_keeps_the_verdict_and_the_facts(tmp_path, monkeypatch):
    import time

    from toolkit.fsck import incremental

    monkeypatch.setattr(incremental, "RACY_NS", 50_000_000)  # a file changed within this is read again
    home = full_tree(tmp_path)
    time.sleep(0.1)
    first = check_folders(discover(home), incremental=True)
    again = check_folders(discover(home), incremental=True)
    assert again.from_cache == 2, "both session files' verdicts come from the cache"
    assert sorted(f.code for f in again.findings) == sorted(f.code for f in first.findings)
    assert [r.to_json() for r in list_sessions([home])] == [r.to_json() for r in list_sessions([home])]


def test_a_running_gemini_is_recognised_by_its_command_line():
    from toolkit.live import tool_of

    assert tool_of(("gemini", "--resume", "latest")) == "gemini"
    assert tool_of(("node", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js")) == "gemini"
    assert tool_of(("node", "server.js")) is None


def test_a_gemini_working_in_the_project_holds_its_sessions(tmp_path, monkeypatch):
    from toolkit import live

    home = gemini_home(tmp_path)
    journal = chats(home) / name()
    proc = live.ToolProcess(4242, "gemini", ("gemini",), ROOT)
    monkeypatch.setattr(live, "processes", lambda fresh=False: (proc,))
    assert GEMINI.running(journal) == f"Gemini CLI is running in {ROOT} (pid 4242)"
    proc = live.ToolProcess(4242, "gemini", ("gemini",), "/elsewhere")
    monkeypatch.setattr(live, "processes", lambda fresh=False: (proc,))
    assert GEMINI.running(journal) is None
