"""`levelsess import --from claude`: every real fixture imports, the conversation is the one an
independent reader sees, every source line is carried or counted, re-imports append only what
is new, damaged sources keep every whole record, and the source is never written."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli, snapshot
from tests.importers import claude_shapes
from tests.importers.claude_reader import conversation, journal, journal_conversation, raw_lines, source_records

from tests.importers.cursor_db import FIXTURES as SHARED_FIXTURES

FIXTURES = SHARED_FIXTURES / "claude-code"
if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)

TRANSCRIPTS = sorted(p.relative_to(FIXTURES / "projects") for p in (FIXTURES / "projects").rglob("*.jsonl"))
BIG = Path("Z--03-NDV-Dftcor-Nmmoat/a572bd87-2e28-4d70-9b73-cd08231cacb6.jsonl")  # 2.1.128: compactions, 3 subagents
OLD = Path("-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo/2728bf45-2222-4b9c-818e-dde0cdded47a.jsonl")  # 1.0.17, inline sidechains


def copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES, root)
    return root


def journal_id(rel: Path) -> str:
    if "subagents" in rel.parts:
        return f"claude-{rel.parent.parent.name}-agent-{rel.stem[len('agent-'):]}"
    return f"claude-{rel.stem}"


def imported(store: Path) -> dict[str, tuple[Path, list[dict]]]:
    out = {}
    for path in store.rglob("*.jsonl"):
        records = journal(path)
        out[records[0]["id"]] = (path, records)
    return out


def do_import(root: Path, store: Path, *extra: str):
    result = run_cli("import", "--from", "claude", "--source", str(root), "--store", str(store), "--json", *extra)
    return result, result.json


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("claude-import")
    root = copy_tree(tmp)
    before = snapshot(root)
    store = tmp / "store"
    result, report = do_import(root, store)
    return root, store, result, report, before


def test_every_fixture_imports_and_the_store_passes_fsck_strict(whole):
    root, store, result, report, before = whole
    assert result.exit_code == 0, result.stdout
    assert {s["status"] for s in report["sessions"]} == {"created"}
    ids = set(imported(store))
    assert {journal_id(rel) for rel in TRANSCRIPTS} <= ids
    check = run_cli("fsck", "--strict", "--json", str(store))
    assert check.exit_code == 0, check.stdout
    assert snapshot(root) == before, "the source tree was changed"


@pytest.mark.parametrize("rel", TRANSCRIPTS, ids=str)
def test_the_conversation_is_the_one_an_independent_reader_sees(whole, rel):
    _root, store, _result, _report, _before = whole
    records = [value for _line, value in source_records((FIXTURES / "projects" / rel).read_bytes())]
    expected = conversation(records, whole_sidechain="subagents" in rel.parts)
    _path, got = imported(store)[journal_id(rel)]
    assert journal_conversation(got) == expected
    messages = [r.get("messageId") for r in got if r["kind"] == "assistant" and r.get("messageId")]
    ids = Counter((v["message"]["id"], v.get("requestId")) for v in records
                  if v.get("type") == "assistant" and isinstance((v.get("message") or {}).get("id"), str))
    assert len(messages) <= len(ids)  # a split message is one record, never doubled


def test_a_split_message_counts_its_usage_once(whole):
    _root, store, _result, _report, _before = whole
    records = [v for _l, v in source_records((FIXTURES / "projects" / BIG).read_bytes())]
    last_usage = {}
    for v in records:
        if v.get("type") == "assistant" and isinstance((v.get("message") or {}).get("id"), str):
            last_usage[(v["message"]["id"], v.get("requestId"))] = v["message"].get("usage")
    _path, got = imported(store)[journal_id(BIG)]
    merged = [r for r in got if r["kind"] == "assistant" and r.get("parts", 1) > 1]
    assert merged, "the fixture has responses over several lines"
    for record in merged:
        parts = record["raw"]
        assert len(parts) == record["parts"] and len({p["message"]["id"] for p in parts}) == 1
        assert record["usage"] == parts[-1]["message"]["usage"] == last_usage[(parts[0]["message"]["id"], parts[0].get("requestId"))]


@pytest.mark.parametrize("rel", TRANSCRIPTS, ids=str)
def test_every_source_line_is_in_exactly_one_journal_record(whole, rel):
    """raw carries each source line once, in the parent's journal or in one sidechain's."""
    _root, store, _result, _report, _before = whole
    data = (FIXTURES / "projects" / rel).read_bytes()
    source = Counter(line for line, _v in source_records(data))
    carried: Counter = Counter()
    for jid, (_path, records) in imported(store).items():
        if jid == journal_id(rel) or ("subagents" not in rel.parts and jid.startswith(journal_id(rel) + "-side-")):
            carried.update(raw_lines(records[1:]))
    assert carried == source


def test_accounting_adds_up_for_every_session(whole):
    _root, _store, _result, report, _before = whole
    for session in report["sessions"]:
        assert session["source_items"] == session["carried"] + sum(session["skipped"].values()), session
        assert session["records"] >= session["carried"] - session["merged"], session
        assert session["source_lines"] is not None


def test_subagents_are_sessions_linked_from_their_parent(whole):
    _root, store, _result, _report, _before = whole
    sessions = imported(store)
    parent_id = journal_id(BIG)
    links = [r for r in sessions[parent_id][1] if r["kind"] == "event" and r["type"] == "subagent"]
    agents = [rel for rel in TRANSCRIPTS if "subagents" in rel.parts and rel.parent.parent.name == BIG.stem]
    assert sorted(link["session"] for link in links) == sorted(journal_id(rel) for rel in agents)
    for rel in agents:
        path, records = sessions[journal_id(rel)]
        assert records[0]["source"]["parent"] == parent_id
        assert path.parent == sessions[parent_id][0].parent, "a subagent lives in its parent's project folder"
    old = sessions[journal_id(OLD)][1]
    inline = [r for r in old if r["kind"] == "event" and r["type"] == "subagent"]
    assert len(inline) == 2 and all(sessions[r["session"]][1][0]["source"]["parent"] == journal_id(OLD) for r in inline)


def test_titles_and_meta_source(whole):
    _root, store, _result, _report, _before = whole
    path, records = imported(store)[journal_id(BIG)]
    meta = records[0]
    assert meta["source"]["app"] == "claude-code" and meta["source"]["key"] == BIG.stem
    assert meta["source"]["version"] and meta["source"]["path"].endswith(BIG.name)
    source = [v for _l, v in source_records((FIXTURES / "projects" / BIG).read_bytes())]
    cwd = next(v["cwd"] for v in source if isinstance(v.get("cwd"), str))
    assert meta["project"] == cwd
    ai = [v["aiTitle"] for v in source if v.get("type") == "ai-title"]
    titles = [r["title"] for r in records if r["kind"] == "title"]
    assert titles and titles[-1] == ai[-1] == meta["title"]
    assert len(titles) == len(dict.fromkeys(ai)) or len(titles) < len(ai), "an unchanged rewrite is no new title"


def test_no_raw_leaves_raw_out_and_still_passes_strict(tmp_path):
    root = copy_tree(tmp_path)
    store = tmp_path / "store"
    result, _report = do_import(root, store, "--no-raw")
    assert result.exit_code == 0
    for path in store.rglob("*.jsonl"):
        assert b'"raw"' not in path.read_bytes()
    assert run_cli("fsck", "--strict", str(store)).exit_code == 0


# -- incremental -----------------------------------------------------------------------------


def _chain_tail(path: Path) -> dict:
    return [v for _l, v in source_records(path.read_bytes()) if v.get("type") in ("user", "assistant") and v.get("isSidechain") is not True][-1]


def _new_turn(after: dict, n: int) -> bytes:
    base = {k: after[k] for k in ("sessionId", "cwd", "version") if k in after}
    prompt = {"parentUuid": after["uuid"], "isSidechain": False, "type": "user", "message": {"role": "user", "content": f"next question {n} ✓"},
              "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": "2026-12-01T10:00:00.000Z", **base}
    reply = {"parentUuid": prompt["uuid"], "isSidechain": False, "type": "assistant",
             "message": {"id": f"msg_new{n}", "type": "message", "role": "assistant", "model": "claude-x",
                         "content": [{"type": "text", "text": f"answer {n}"}], "stop_reason": "end_turn", "usage": {"output_tokens": 3}},
             "requestId": f"req_new{n}", "uuid": f"00000000-0000-4000-9000-{n:012d}", "timestamp": "2026-12-01T10:00:01.000Z", **base}
    return b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in (prompt, reply))


def test_reimport_is_a_noop_appends_only_new_lines_and_keeps_deleted_sessions(tmp_path):
    root = copy_tree(tmp_path)
    store = tmp_path / "store"
    assert do_import(root, store)[0].exit_code == 0
    first = snapshot(store)
    result, report = do_import(root, store)
    assert result.exit_code == 0 and {s["status"] for s in report["sessions"]} == {"unchanged"}
    assert snapshot(store) == first, "a re-import with nothing new changed the store"

    source = root / "projects" / BIG
    before = imported(store)[journal_id(BIG)][0].read_bytes()
    with open(source, "ab") as handle:
        handle.write(_new_turn(_chain_tail(source), 1))
    result, report = do_import(root, store)
    updated = [s for s in report["sessions"] if s["status"] == "updated"]
    assert [s["id"] for s in updated] == [journal_id(BIG)] and updated[0]["new_records"] == 2
    path, records = imported(store)[journal_id(BIG)]
    assert path.read_bytes().startswith(before), "a journal is only ever appended to"
    assert journal_conversation(records)[-2:] == [("user", "next question 1 ✓"), ("assistant", [{"type": "text", "text": "answer 1"}])]
    assert journal_conversation(records) == conversation([v for _l, v in source_records(source.read_bytes())])

    source.unlink()
    shutil.rmtree(source.parent / source.stem)
    kept = path.read_bytes()
    result, _report = do_import(root, store)
    assert result.exit_code == 0 and path.read_bytes() == kept, "a session deleted at the source stays in the store"
    assert run_cli("fsck", "--strict", str(store)).exit_code == 0


def test_a_response_imported_while_being_written_is_superseded_once_whole(tmp_path):
    """Cut the source inside a response written over several lines (a live session), import,
    let it finish, import again: the finished response supersedes the partial one."""
    root = tmp_path / ".claude"
    target = root / "projects" / BIG
    target.parent.mkdir(parents=True)
    full = (FIXTURES / "projects" / BIG).read_bytes()
    lines = full.split(b"\n")[:-1]
    values = [json.loads(line) for line in lines]
    keys = [((v.get("message") or {}).get("id"), v.get("requestId")) if v.get("type") == "assistant" else None for v in values]
    cut = next(i for i in range(1, len(values)) if keys[i] and keys[i - 1] == keys[i] and values[i].get("isSidechain") is not True
               and any(keys[j] == keys[i] for j in range(i + 1, len(values))) and i > 50)
    target.write_bytes(b"".join(line + b"\n" for line in lines[:cut]))
    store = tmp_path / "store"
    assert do_import(root, store)[0].exit_code == 0
    path, records = imported(store)[journal_id(BIG)]
    partial = [r for r in records if r.get("partial")]
    assert len(partial) == 1 and partial[0]["kind"] == "assistant"
    target.write_bytes(full)
    assert do_import(root, store)[0].exit_code == 0
    path, records = imported(store)[journal_id(BIG)]
    raw = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert any(r.get("replaces") == partial[0]["seq"] for r in raw)
    assert journal_conversation(records) == conversation(values)
    assert run_cli("fsck", "--strict", str(store)).exit_code == 0


# -- damaged sources -------------------------------------------------------------------------


def _damaged(tmp_path: Path, damage) -> tuple[Path, Path, list[bytes], list[bytes]]:
    root = tmp_path / ".claude"
    target = root / "projects" / BIG
    target.parent.mkdir(parents=True)
    lines = (FIXTURES / "projects" / BIG).read_bytes().split(b"\n")[:-1]
    data, whole = damage(lines)
    target.write_bytes(data)
    return root, target, lines, whole


def test_a_damaged_source_keeps_every_whole_record_and_reports_the_rest(tmp_path):
    def damage(lines):
        # line 11 spliced into a cut-off copy of line 10; a NUL run after line 20; a torn tail
        spliced = lines[9][: len(lines[9]) // 2] + lines[10]
        body = lines[:9] + [spliced] + lines[11:20] + [b"\0" * 400] + lines[20:-1]
        data = b"".join(line + b"\n" for line in body) + lines[-1][:37]
        whole = lines[:9] + lines[10:-1]
        return data, whole

    root, target, _lines, whole = _damaged(tmp_path, damage)
    before = snapshot(root)
    store = tmp_path / "store"
    result, report = do_import(root, store)
    assert result.exit_code == 4, "bytes of a cut-off record were lost at the source: the run says so"
    _path, records = imported(store)[journal_id(BIG)]
    assert Counter(raw_lines(records[1:])) == Counter(whole)
    by_code = {}
    for finding in report["findings"]:
        by_code.setdefault(finding["code"], []).append(finding)
    data = target.read_bytes()
    spliced = by_code["source-unreadable"][0]
    assert spliced["path"] == str(target) and spliced["line"] == 10
    assert data[spliced["offset"]:].startswith(_lines[9][:20])
    torn = [f for f in by_code["source-torn"] if f["offset"] == len(data) - 37 and f["line"] == data.count(b"\n") + 1]
    nul = [f for f in by_code["source-torn"] if data[f["offset"]:f["offset"] + 1] == b"\0"]
    assert torn and nul and nul[0]["line"] == 20
    session = next(s for s in report["sessions"] if s["id"] == journal_id(BIG))
    assert session["skipped"] == {"cut-record": 1, "nul-run": 1, "torn-tail": 1}
    assert session["source_items"] == session["carried"] + 3
    assert snapshot(root) == before
    assert run_cli("fsck", "--strict", str(store)).exit_code == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=1, max_value=10**9))
def test_any_cut_of_a_live_transcript_imports_every_whole_line(tmp_path_factory, cut):
    tmp = tmp_path_factory.mktemp("cut")
    rel = OLD  # 1.0.17: inline sidechains, splits, a 2.8 MB file
    full = (FIXTURES / "projects" / rel).read_bytes()
    cut = cut % len(full)
    root = tmp / ".claude"
    target = root / "projects" / rel
    target.parent.mkdir(parents=True)
    target.write_bytes(full[:cut])
    store = tmp / "store"
    result, report = do_import(root, store)
    assert result.exit_code == 0, report["findings"]
    whole = [line for line in full[:cut].split(b"\n")[:-1] if line.strip()]
    tail = full[:cut].split(b"\n")[-1]
    found = imported(store)
    records = found[journal_id(rel)][1] if journal_id(rel) in found else []
    carried = Counter(raw_lines(records[1:]))
    for other, (_p, more) in found.items():
        if other.startswith(journal_id(rel) + "-side-"):
            carried.update(raw_lines(more[1:]))
    expected = Counter(whole)
    if tail.strip():
        try:
            json.loads(tail)
            expected[tail] += 1  # a last line that is whole but not yet terminated
        except ValueError:
            pass
    assert carried == expected
    assert not expected or run_cli("fsck", "--strict", str(store)).exit_code == 0


# -- branches, big files, odd shapes, bad sources ------------------------------------------------


def test_a_rewind_makes_a_branch_and_nothing_is_written_twice(tmp_path):
    """A prompt whose parent is an early record (a /rewind): the chain now goes through it, the
    abandoned turns are off the chain; a re-import adds the prompt alone, no copy of the old turns."""
    root = tmp_path / ".claude"
    rel = Path("-loru-rnwdo-kwobudct-tkoccuw") / next(p.name for p in (FIXTURES / "projects" / "-loru-rnwdo-kwobudct-tkoccuw").glob("*.jsonl"))
    target = root / "projects" / rel
    target.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "projects" / rel, target)
    store = tmp_path / "store"
    assert do_import(root, store)[0].exit_code == 0
    values = [v for _l, v in source_records(target.read_bytes())]
    early = next(v for v in values if v.get("type") == "user" and isinstance(v.get("uuid"), str))
    with open(target, "ab") as handle:
        handle.write(_new_turn(early, 7).split(b"\n")[0] + b"\n")
    result, report = do_import(root, store)
    session = next(s for s in report["sessions"] if s["id"] == journal_id(rel))
    assert session["status"] == "updated" and session["new_records"] == 1
    _path, records = imported(store)[journal_id(rel)]
    keys = Counter(r["sourceKey"].removesuffix(":off") for r in records[1:] if r.get("sourceKey"))
    assert max(keys.values()) == 1, "a record that left the chain was written again"
    fresh = tmp_path / "fresh"
    _result, _report = do_import(root, fresh)
    _p, again = imported(fresh)[journal_id(rel)]
    off = [r for r in again if r.get("type") == "off-chain"]
    assert off and {r["offChain"] for r in off} <= {"other-branch", "cut-off", "beside-the-chain"}
    assert journal_conversation(again) == conversation(values + [json.loads(_new_turn(early, 7).split(b"\n")[0])])


@pytest.mark.parametrize("rows", ["held", "spilled", "midway"])
def test_the_journals_are_the_reference_bytes_and_so_is_what_a_reimport_appends(tmp_path, monkeypatch, rows):
    """Byte for byte the journals the importer wrote when it held every record in memory (issue
    28; tests/data/claude_import_reference.json, pinned by that code), on the real fixtures, a
    regular transcript and odd shapes, then after each transcript grew: with each group's rows
    held in memory, with every group's rows in a temporary database, and with a group's first
    rows held and the rest moved to a database as the limit is passed (in a transcript, in a
    subagent's after the session's was held)."""
    from toolkit.importers import claude

    if rows != "held":
        monkeypatch.setattr(claude, "ROWS_IN_MEMORY", -1 if rows == "spilled" else 30)
    reference = json.loads(claude_shapes.REFERENCE.read_text())
    root = claude_shapes.reference_tree(tmp_path / ".claude", FIXTURES)
    store = tmp_path / "store"
    for name in ("first", "again"):
        if name == "again":
            claude_shapes.grow(root / "projects")
        result, _report = do_import(root, store)
        assert result.exit_code in (0, 4), result.stdout
        got = claude_shapes.digests(store, root)
        assert sorted(got) == sorted(reference[name])
        assert [path for path in got if got[path] != reference[name][path]] == [], f"journals differ ({name} import)"


def _portable(report: dict, *roots: Path) -> str:
    text = json.dumps(report, sort_keys=True)
    for n, root in enumerate(roots):
        text = text.replace(json.dumps(str(root))[1:-1], f"<root{n}>")
    return text


def _parallel_results(path: Path) -> None:
    """A response of two parts whose three calls ran in parallel: two results beside the chain
    after it (in file order), the chain going on from the third."""
    def rec(uuid, parent, kind, content, **extra):
        return {"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid, "sessionId": "p", "cwd": "/x/parallel",
                "timestamp": f"2026-01-01T00:00:{len(lines):02d}.000Z", "message": {"role": kind, "content": content, **extra}}

    def use(call):
        return [{"type": "tool_use", "id": call, "name": "Bash", "input": {}}]

    def result(call):
        return [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]

    lines: list[dict] = []
    for args, extra in ((("u1", None, "user", "run three"), {}), (("a1", "u1", "assistant", use("t1")), {"id": "m1"}),
                        (("a2", "a1", "assistant", use("t2") + use("t3")), {"id": "m1", "stop_reason": "tool_use"}),
                        (("r1", "a2", "user", result("t1")), {}), (("r2", "a2", "user", result("t2")), {}),
                        (("r3", "a2", "user", result("t3")), {}), (("a3", "r3", "assistant", use("t4")), {"id": "m2"}),
                        (("r4", "a3", "user", result("t4")), {}), (("a4", "r4", "assistant", [{"type": "text", "text": "done"}]),
                                                                    {"id": "m3", "stop_reason": "end_turn"})):
        lines.append(rec(*args, **extra))
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _first_and_grown(where: Path, seed: int, *, sessions: int) -> tuple:
    """Odd shapes (claude_shapes, and a response whose calls ran in parallel) imported into a store
    of their own, grown, and imported again: the journals' digests and both reports, portable."""
    root, store = where / ".claude", where / "store"
    (root / "projects").mkdir(parents=True)
    claude_shapes.build(root / "projects", sessions=sessions, seed=seed)
    _parallel_results(root / "projects" / "-x-parallel" / "00000000-0000-4000-8000-00000000aaaa.jsonl")
    reports = []
    for step in ("first", "grown"):
        if step == "grown":
            claude_shapes.grow(root / "projects", seed=seed + 100)
        result, report = do_import(root, store)
        assert result.exit_code in (0, 4), result.stdout
        reports.append(_portable(report, root, store))
    return claude_shapes.digests(store, root), reports


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_rows_held_in_memory_or_in_a_database_write_and_report_the_same(tmp_path_factory, monkeypatch, seed):
    """A small group's rows are held in lists (no database); a large one's go to a temporary
    database.  Each answers every question of the conversation alike: the same journals and the
    same report, on odd shapes, on the first import and on the resumed one after they grew."""
    from toolkit.importers import claude

    tmp_path = tmp_path_factory.mktemp("rows")
    opened = []
    real_db, limit_now = claude.temp_db, claude.ROWS_IN_MEMORY
    monkeypatch.setattr(claude, "temp_db", lambda: opened.append(1) or real_db())
    got = {}
    for rows, limit in (("held", limit_now), ("spilled", -1), ("midway", 7)):
        monkeypatch.setattr(claude, "ROWS_IN_MEMORY", limit)
        opened.clear()
        got[rows] = _first_and_grown(tmp_path / rows, seed, sessions=16)
        assert bool(opened) == (rows != "held"), "a held group opens no database; a spilled one does"
    assert got["held"] == got["spilled"] == got["midway"]
    monkeypatch.setattr(claude, "ROWS_IN_MEMORY", limit_now)  # (hypothesis runs every example in this one monkeypatch)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), keep=st.sampled_from([2000, 4 << 20]))
def test_values_held_from_the_first_read_or_parsed_again_write_and_report_the_same(tmp_path_factory, monkeypatch, seed, keep):
    """A kept chain record's parsed value, held from the first read for the conversion to take, or
    parsed again from its kept bytes (none held, those of 1 kB or more as it does, every one), with
    some or all lines kept: the same journals and the same report, on odd shapes (copied lines,
    rewinds, parallel results, damage), first and resumed after they grew."""
    from toolkit.importers import claude

    tmp_path = tmp_path_factory.mktemp("held")
    sizes, keep_now = claude._HELD_SIZE, claude.KEEP_IN_MEMORY
    got = {}
    try:
        for held, size in (("none", 1 << 40), ("large", sizes), ("every", 0)):
            monkeypatch.setattr(claude, "_HELD_SIZE", size)
            monkeypatch.setattr(claude, "KEEP_IN_MEMORY", keep)
            got[held] = _first_and_grown(tmp_path / held, seed, sessions=8)
    finally:  # (hypothesis runs every example in this one monkeypatch)
        monkeypatch.setattr(claude, "_HELD_SIZE", sizes)
        monkeypatch.setattr(claude, "KEEP_IN_MEMORY", keep_now)
    assert got["none"] == got["large"] == got["every"]


def test_a_held_value_is_taken_once_and_parsed_again_when_asked_again(tmp_path):
    """The conversion owns the value it is given: a second ask for the same line parses its kept
    bytes again (a new object, equal), so nothing one caller changes reaches another."""
    from toolkit.importers import claude

    path = tmp_path / "projects" / "-x-parallel" / "00000000-0000-4000-8000-00000000aaaa.jsonl"
    _parallel_results(path)
    item = SimpleNamespace(n=0, offset=0, size=len(path.read_bytes().split(b"\n")[0]))
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(claude, "_HELD_SIZE", 0)
        transcript = claude._HeldTranscript(path, lambda _f: None, claude._Db())
    first, data = transcript.value(item)
    second, again = transcript.value(item)
    assert first == second == json.loads(data) and first is not second and data is again
    first["message"] = "changed by its caller"
    assert transcript.value(item)[0] == second


def test_keys_held_on_disk_and_appends_in_batches_write_the_same_bytes(tmp_path, monkeypatch):
    """Past KNOWN_IN_MEMORY a journal's keys move to a temporary database, and an extension is
    appended APPEND_BATCH bytes at a time (here one record at a time): same journals, and a
    re-import after that finds nothing new."""
    from toolkit.importers import output, spill

    digests = []
    for name, known, batch in (("memory", spill.KNOWN_IN_MEMORY, output.APPEND_BATCH), ("disk", 0, 1)):
        monkeypatch.setattr(spill, "KNOWN_IN_MEMORY", known)
        monkeypatch.setattr(output, "APPEND_BATCH", batch)
        root, store = copy_tree(tmp_path / name), tmp_path / name / "store"
        do_import(root, store)
        claude_shapes.grow(root / "projects")
        _result, report = do_import(root, store)
        assert "updated" in {s["status"] for s in report["sessions"]}
        _result, report = do_import(root, store)
        assert {s["status"] for s in report["sessions"]} == {"unchanged"}
        digests.append(claude_shapes.digests(store, root))
    assert digests[0] == digests[1]


def test_lines_re_read_from_disk_give_the_journals_of_lines_kept_in_memory(tmp_path, monkeypatch):
    """Past the group's KEEP_IN_MEMORY budget a transcript's lines are re-read by offset: same journals."""
    from toolkit.importers import claude

    root = copy_tree(tmp_path)
    kept = tmp_path / "kept"
    do_import(root, kept)
    monkeypatch.setattr(claude, "KEEP_IN_MEMORY", 0)
    read = tmp_path / "read"
    result, _report = do_import(root, read)
    assert result.exit_code == 0
    for path in kept.rglob("*.jsonl"):
        assert (read / path.relative_to(kept)).read_bytes() == path.read_bytes()


def test_a_transcript_rewritten_between_its_two_passes_is_refused_not_mixed(tmp_path, monkeypatch):
    from toolkit.importers import claude

    root = tmp_path / ".claude"
    target = root / "projects" / BIG
    target.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "projects" / BIG, target)
    monkeypatch.setattr(claude, "KEEP_IN_MEMORY", 0)
    real = claude._build

    def rewrite_then_build(transcript, *args, **kwargs):
        session = real(transcript, *args, **kwargs)
        if transcript.path == target:
            lines = target.read_bytes().split(b"\n")
            target.write_bytes(b"\n".join(lines[:5] + lines[6:]))  # Claude Code's tombstone removal
        return session

    monkeypatch.setattr(claude, "_build", rewrite_then_build)
    store = tmp_path / "store"
    result, report = do_import(root, store)
    assert result.exit_code == 4
    assert any(f["code"] == "source-unreadable" and "changed while it was being imported" in f["message"] for f in report["findings"])
    assert not (store / "Z--03-NDV-Dftcor-Nmmoat" / f"{journal_id(BIG)}.jsonl").exists()
    assert not list(store.rglob("*.tmp*")), "no temp file left behind"


def test_dry_run_writes_nothing(tmp_path):
    root = copy_tree(tmp_path)
    store = tmp_path / "store"
    result, report = do_import(root, store, "--dry-run")
    assert result.exit_code == 0 and report["dry_run"] and not store.exists()
    assert {s["status"] for s in report["sessions"]} == {"created"}


def test_a_source_that_is_not_claude_code_is_a_typed_error(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("hello")
    result = run_cli("import", "--from", "claude", "--source", str(tmp_path / "notes"), "--store", str(tmp_path / "store"))
    assert result.exit_code == 8 and "Claude Code" in result.stderr + result.stdout
    assert not (tmp_path / "store").exists()


_TYPES = st.sampled_from(["user", "assistant", "system", "progress", "attachment", "summary", "ai-title", "custom-title",
                          "queue-operation", "file-history-snapshot", "brand-new-type"])
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=4), max_size=2),
                    st.dictionaries(st.sampled_from(["type", "text", "id"]), st.text(max_size=4), max_size=2))


@st.composite
def _transcripts(draw):
    uuids = [f"00000000-0000-4000-8000-{n:012d}" for n in range(12)]
    records = []
    for n in range(draw(st.integers(min_value=1, max_value=12))):
        kind = draw(_TYPES)
        record = {"type": kind, "sessionId": "s"}
        if kind in ("user", "assistant", "system", "progress", "attachment"):
            record = {"parentUuid": draw(st.one_of(st.none(), st.sampled_from(uuids))), "isSidechain": draw(st.booleans()),
                      **record, "uuid": uuids[n], "timestamp": f"2026-01-01T00:00:{n:02d}.000Z"}
            content = draw(st.one_of(st.text(max_size=10), st.lists(st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "thinking", "tool_use", "tool_result", "image", "odd"])},
                optional={"text": st.text(max_size=5), "id": st.sampled_from(["t1", "t2"]), "tool_use_id": st.sampled_from(["t1", "t2"])}),
                max_size=3), _VALUES))
            message = draw(st.one_of(_VALUES, st.fixed_dictionaries({"content": st.just(content)}, optional={
                "id": st.sampled_from(["msg_a", "msg_b"]), "stop_reason": st.sampled_from([None, "tool_use", "end_turn"]),
                "usage": st.just({"output_tokens": n}), "model": st.text(max_size=3)})))
            record["message"] = message
            for key in draw(st.lists(st.sampled_from(["isMeta", "isCompactSummary", "toolUseResult", "isApiErrorMessage",
                                                      "logicalParentUuid", "subtype", "requestId"]), max_size=3)):
                record[key] = draw(_VALUES) if key not in ("logicalParentUuid",) else draw(st.sampled_from(uuids))
        else:
            for key in ("aiTitle", "customTitle", "summary", "leafUuid", "operation", "content"):
                if draw(st.booleans()):
                    record[key] = draw(_VALUES)
        records.append(record)
    return records


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=_transcripts())
def test_any_record_shapes_import_without_loss_and_pass_strict(tmp_path_factory, records):
    """Whatever the records hold (odd types, missing or wrong-typed fields, cycles, dangling
    parents), the import succeeds, passes fsck --strict, and carries every line once."""
    tmp = tmp_path_factory.mktemp("shapes")
    root = tmp / ".claude"
    target = root / "projects" / "-p" / "00000000-0000-4000-8000-00000000abcd.jsonl"
    target.parent.mkdir(parents=True)
    data = b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records)
    target.write_bytes(data)
    store = tmp / "store"
    result, report = do_import(root, store)
    assert result.exit_code == 0, report["findings"]
    carried: Counter = Counter()
    for _jid, (_path, journal_records) in imported(store).items():
        carried.update(raw_lines(journal_records[1:]))
    assert carried == Counter(line for line, _v in source_records(data))
    assert run_cli("fsck", "--strict", str(store)).exit_code == 0
    again, second = do_import(root, store)
    assert {s["status"] for s in second["sessions"]} == {"unchanged"}


def test_a_transcript_with_no_whole_record_makes_no_journal_until_it_has_one(tmp_path):
    root = tmp_path / ".claude"
    folder = root / "projects" / "-p"
    folder.mkdir(parents=True)
    empty, brace, nul = (folder / f"00000000-0000-4000-8000-00000000000{n}.jsonl" for n in (1, 2, 3))
    empty.write_bytes(b"")
    brace.write_bytes(b'{"parentUuid":null,"isSid')
    nul.write_bytes(b"\0" * 300)
    store = tmp_path / "store"
    result, report = do_import(root, store)
    assert result.exit_code == 0 and report["sessions"] == [] and not list(store.rglob("*.jsonl"))
    assert sum(f["code"] == "source-skipped" for f in report["findings"]) == 3
    whole = {"parentUuid": None, "isSidechain": False, "type": "user", "message": {"role": "user", "content": "hi"},
             "uuid": "00000000-0000-4000-8000-0000000000aa", "timestamp": "2026-12-01T00:00:00.000Z", "sessionId": brace.stem, "cwd": "/p"}
    brace.write_bytes(json.dumps(whole).encode() + b"\n")
    result, report = do_import(root, store)
    assert [s["status"] for s in report["sessions"]] == ["created"]
    assert journal_conversation(imported(store)[f"claude-{brace.stem}"][1]) == [("user", "hi")]


def test_ls_counts_typed_prompts_as_turns_not_tool_results(whole):
    _root, store, _result, _report, _before = whole
    listing = run_cli("ls", "--json", str(store))
    row = next(s for s in listing.json["sessions"] if s["id"] == journal_id(BIG))
    _path, records = imported(store)[journal_id(BIG)]
    typed = [r for r in records if r["kind"] == "user" and not r.get("toolResult") and not r.get("injected")]
    assert row["turns"] == len(typed) and len(typed) < sum(r["kind"] == "user" for r in records)


def test_show_of_an_imported_session_renders_tool_results_images_and_no_empty_turns(tmp_path):
    root = tmp_path / ".claude"
    target = root / "projects" / "-p" / "00000000-0000-4000-8000-0000000000cd.jsonl"
    target.parent.mkdir(parents=True)
    base = {"isSidechain": False, "sessionId": target.stem, "cwd": "/p", "timestamp": "2026-12-01T00:00:00.000Z"}
    records = [
        {"parentUuid": None, **base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}},
        {"parentUuid": "u1", **base, "type": "assistant", "uuid": "a1", "requestId": "r1", "message": {
            "id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}},
        {"parentUuid": "a1", **base, "type": "user", "uuid": "u2", "toolUseResult": {}, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "file body"}]}},
    ]
    target.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    store = tmp_path / "store"
    assert do_import(root, store)[0].exit_code == 0
    shown = run_cli("show", f"claude-{target.stem}", "--store", str(store))
    assert shown.exit_code == 0
    text = shown.stdout
    assert "[image: image/png" in text, "an image-only prompt is shown, never an empty turn"
    assert text.count("## Turn") == 1 and "↳ result: file body" in text


def test_naming_one_transcript_imports_its_subagents_with_it(tmp_path):
    root = copy_tree(tmp_path)
    store = tmp_path / "store"
    result, report = do_import(root / "projects" / BIG, store)
    assert result.exit_code == 0
    agents = [rel for rel in TRANSCRIPTS if "subagents" in rel.parts and rel.parent.parent.name == BIG.stem]
    assert sorted(s["id"] for s in report["sessions"]) == sorted([journal_id(BIG)] + [journal_id(rel) for rel in agents])


def test_naming_one_subagent_files_it_beside_its_session(tmp_path):
    root = copy_tree(tmp_path)
    agent = next(rel for rel in TRANSCRIPTS if "subagents" in rel.parts and rel.parent.parent.name == BIG.stem)
    store = tmp_path / "store"
    result, report = do_import(root / "projects" / agent, store)
    assert result.exit_code == 0 and [s["id"] for s in report["sessions"]] == [journal_id(agent)]
    path, records = imported(store)[journal_id(agent)]
    assert records[0]["source"]["parent"] == journal_id(BIG) and "parentMissing" not in records[0]["source"]
    session_cwd = next(v["cwd"] for _l, v in source_records((FIXTURES / "projects" / BIG).read_bytes()) if isinstance(v.get("cwd"), str))
    assert records[0]["project"] == session_cwd
    (root / "projects" / BIG).unlink()  # the session's own transcript deleted at the source
    again = tmp_path / "again"
    _result, _report = do_import(root / "projects" / agent, again)
    assert imported(again)[journal_id(agent)][1][0]["source"]["parentMissing"] is True


SUMMARY_ONLY = Path("-Ftuwt-cruqtcuw-Domu-Dsquact-ndxfqwn-pftqautt-kwodutt/b27ffd47-4fa7-49ae-a8c3-6c924324cb7a.jsonl")


@pytest.mark.parametrize("folder, placed", [
    ("-home-ada-code-thin-ly", "-home-ada-code-thin-ly"),  # as Claude Code names it: its sessions' store folder
    ("Z--03-NDV-Omoo-Modt", "Z--03-NDV-Omoo-Modt"),  # a Windows one, beside its session that names its cwd
    ("my.project", "_unassigned"),  # no name Claude Code (or the store) gives a project folder
    ("café", "_unassigned"),
])
def test_a_transcript_that_names_no_folder_goes_where_its_tool_keeps_it(tmp_path, folder, placed):
    """A summary-only transcript (and the subagents of a session whose transcript names no folder)
    has no ``cwd``: it goes to the store folder named as the Claude Code project folder it is in,
    which is the one its neighbours that name their folder go to; anywhere else, _unassigned."""
    root = tmp_path / ".claude"
    projects = root / "projects" / folder
    projects.mkdir(parents=True)
    shutil.copy(FIXTURES / "projects" / SUMMARY_ONLY, projects / SUMMARY_ONLY.name)
    agents = projects / "0b0b0b0b-0000-4000-8000-000000000001" / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-a1.jsonl").write_bytes((FIXTURES / "projects" / SUMMARY_ONLY).read_bytes())
    named = FIXTURES / "projects" / "Z--03-NDV-Omoo-Modt" / "8d94c819-dc94-47e1-9338-b1489e7612a3.jsonl"
    if folder == "Z--03-NDV-Omoo-Modt":
        shutil.copy(named, projects / named.name)
    store = tmp_path / "store"
    result, report = do_import(root, store)
    assert result.exit_code == 0, result.stdout
    where = {Path(s["path"]).name: Path(s["path"]).parent.name for s in report["sessions"]}
    assert where[f"claude-{SUMMARY_ONLY.stem}.jsonl"] == placed
    assert where["claude-0b0b0b0b-0000-4000-8000-000000000001-agent-a1.jsonl"] == placed
    if folder == "Z--03-NDV-Omoo-Modt":
        assert where[f"claude-{named.stem}.jsonl"] == placed  # (its cwd Z:\03_NDV\Omoo_Modt)
    shown = json.loads(run_cli("ls", "--json", "--store", str(store)).stdout)
    assert {Path(s["path"]).parent.name for s in shown["sessions"] if SUMMARY_ONLY.stem in s["id"]} == {placed}
    again, report = do_import(root, store)  # the next import finds them there (from its memo or read again)
    assert again.exit_code == 0 and {s["status"] for s in report["sessions"]} == {"unchanged"}
    assert sorted(p.relative_to(store).parts[0] for p in store.rglob("*.jsonl")) == sorted(where.values())
