"""`levelsess import --from codex` on copies of the real Codex rollouts (shared/fixtures/codex):
what a user saw, once each and byte-exact; idempotent re-imports; a grown rollout appends only
its new records; damage imports every whole record and says where the rest was; forks are
their own sessions with the replay marked; the source is never written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.codex import (BIG, FIXTURES, SMALL, SUBAGENT, codex_home, envelope, lines_of, new_turn, rollouts,
                                 seen)
from toolkit.importers.codex import session_from_rollout
from toolkit.importers.output import Options

if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)


def _import(source: Path, store: Path, *extra: str):
    result = run_cli("import", "--from", "codex", "--source", source, "--store", store, "--json", *extra)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def _journals(store: Path) -> dict[str, Path]:
    return {p.stem: p for p in store.glob("*/codex-*.jsonl")}


def _records(journal: Path) -> list[dict]:
    """The journal's records, without the events kept for `restore` alone (source-line, source-state)."""
    records = [json.loads(line) for line in lines_of(journal.read_bytes())]
    return [r for r in records if r.get("type") not in ("source-line", "source-state")]


def _view(journal: Path) -> list[tuple]:
    """The imported journal read back with plain json, in the shape of :func:`tests.layouts.codex.seen`."""
    out = []
    for record in _records(journal)[1:]:
        if record["kind"] == "user" and record.get("toolResult"):
            continue
        if record["kind"] == "user":
            content = record["content"]
            out.append(("prompt", content if isinstance(content, str) else content[0]["text"]))
        elif record["kind"] == "assistant":
            for block in record["content"]:
                if block["type"] == "text":
                    out.append(("assistant", block["text"]))
                elif block["type"] == "tool_use":
                    out.append(("tool", block["name"], block["id"], block["input"]))
                elif block["type"] == "thinking":
                    out.append(("reasoning", block["encrypted_content"]))
    return out


def _id(rel: str) -> str:
    return "codex-" + Path(rel).stem[-36:]


@pytest.mark.parametrize("rel", rollouts())
def test_every_fixture_imports_what_the_user_saw_once_each_in_order(tmp_path, rel):
    home = codex_home(tmp_path)
    result = _import(home / rel, tmp_path / "store")
    assert result.exit_code == 0, result.stdout
    journal = _journals(tmp_path / "store")[_id(rel)]
    expected = seen(lines_of((FIXTURES / rel).read_bytes()))
    assert _view(journal) == expected
    assert len(expected) > 2


def test_the_whole_home_imports_and_the_store_passes_a_strict_check(tmp_path):
    home = codex_home(tmp_path)
    before = snapshot(tmp_path / ".codex")
    result = _import(home, tmp_path / "store")
    assert result.exit_code == 0, result.stdout
    sessions = {s["id"]: s for s in result.json["sessions"]}
    assert set(sessions) == {_id(rel) for rel in rollouts()}
    for rel in rollouts():
        session = sessions[_id(rel)]
        lines = lines_of((FIXTURES / rel).read_bytes())
        assert session["source_items"] == len(lines), "every line of the rollout is a source item"
        assert session["source_items"] == 1 + session["records"] + sum(session["skipped"].values()), \
            "each line became the meta record, a record, or is counted by reason"
        assert set(session["skipped"]) <= {"mirror", "context", "ui-only", "meta-copy"}
    strict = run_cli("fsck", "--strict", "--json", tmp_path / "store")
    assert strict.exit_code == 0, strict.stdout
    assert snapshot(tmp_path / ".codex") == before, "the source: not a byte, not an mtime, not a new file"


def test_meta_names_the_source_and_keeps_the_session_meta_line_raw(tmp_path):
    home = codex_home(tmp_path)
    _import(home / SUBAGENT, tmp_path / "store")
    meta, *records = _records(_journals(tmp_path / "store")[_id(SUBAGENT)])
    first = lines_of((FIXTURES / SUBAGENT).read_bytes())[0]
    payload = json.loads(first)["payload"]
    assert meta["project"] == payload["cwd"] and meta["createdAt"] == payload["timestamp"]
    assert meta["source"]["app"] == "codex" and meta["source"]["key"] == payload["id"]
    assert meta["source"]["version"] == payload["cli_version"] and meta["source"]["originator"] == payload["originator"]
    assert meta["source"]["source"] == payload["source"]
    # a spawned subagent names the thread that spawned it (nested: source.subagent.thread_spawn.parent_thread_id)
    assert meta["source"]["parent"] == payload["source"]["subagent"]["thread_spawn"]["parent_thread_id"]
    assert meta["raw"] == json.loads(first)
    assert all(isinstance(r["t"], str) and r["sourceKey"] for r in records)
    assert len({r["sourceKey"] for r in records}) == len(records)
    raws = [json.dumps(r["raw"], ensure_ascii=False, separators=(",", ":")).encode() for r in records]
    source = set(lines_of((FIXTURES / SUBAGENT).read_bytes()))
    assert all(raw in source for raw in raws), "each record keeps its source line, byte for byte"


def test_a_thread_name_from_session_index_is_the_title_and_a_rename_appends_a_title_record(tmp_path):
    home = codex_home(tmp_path)
    sid = Path(SMALL).stem[-36:]
    (home / "session_index.jsonl").write_bytes(b'{"id":"%s","thread_name":"first name","updated_at":"t1"}\n' % sid.encode())
    _import(home, tmp_path / "store")
    journal = _journals(tmp_path / "store")[_id(SMALL)]
    assert _records(journal)[0]["title"] == "first name"
    with open(home / "session_index.jsonl", "ab") as handle:
        handle.write(b'{"id":"%s","thread_name":"renamed","updated_at":"t2"}\n' % sid.encode())
    _import(home, tmp_path / "store")
    assert [r["title"] for r in _records(journal) if r["kind"] == "title"] == ["renamed"], "the last entry for an id wins"


def test_a_record_with_a_key_a_newer_writer_adds_still_imports(tmp_path):
    home = codex_home(tmp_path)
    line = b'{"timestamp":"2026-04-02T00:00:00.000Z","type":"event_msg","payload":{"type":"user_message","message":"new shape"},"world":1}'
    with open(home / SMALL, "ab") as handle:
        handle.write(line + b"\n")
    result = _import(home / SMALL, tmp_path / "store")
    assert result.exit_code == 0 and ("prompt", "new shape") in _view(_journals(tmp_path / "store")[_id(SMALL)])


def test_each_tool_call_is_answered_by_its_result(tmp_path):
    home = codex_home(tmp_path)
    _import(home / BIG, tmp_path / "store")
    records = _records(_journals(tmp_path / "store")[_id(BIG)])[1:]
    blocks = [b for r in records if r["kind"] == "assistant" or r.get("toolResult") for b in r["content"]]
    assert all(r["kind"] == "user" for r in records if any(b.get("type") == "tool_result" for b in r.get("content") or [] if isinstance(b, dict)))
    uses = [b["id"] for b in blocks if b["type"] == "tool_use" and b["id"]]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert uses and sorted(uses) == sorted(results)
    assert all(b["type"] != "tool_result" or isinstance(b["content"], (str, list)) for b in blocks)


def test_reimport_is_a_no_op_and_a_grown_rollout_appends_only_its_new_turn(tmp_path):
    home = codex_home(tmp_path)
    store = tmp_path / "store"
    _import(home, store)
    journal = _journals(store)[_id(SMALL)]
    first = journal.read_bytes()
    again = _import(home, store)
    assert {s["status"] for s in again.json["sessions"]} == {"unchanged"}
    assert journal.read_bytes() == first
    with open(home / SMALL, "ab") as handle:
        handle.write(b"".join(line + b"\n" for line in new_turn("2026-04-02T00:00:00.000Z", "and now? ü", "done — ✓")))
    grown = {s["id"]: s for s in _import(home, store).json["sessions"]}
    assert grown[_id(SMALL)]["status"] == "updated" and grown[_id(SMALL)]["new_records"] == 2
    assert {s["status"] for i, s in grown.items() if i != _id(SMALL)} == {"unchanged"}
    after = journal.read_bytes()
    assert after.startswith(first), "nothing already imported is rewritten"
    added = [r for r in (json.loads(line) for line in lines_of(after[len(first):])) if r.get("type") not in ("source-line", "source-state")]
    assert [(r["kind"], r.get("content")) for r in added] == [
        ("user", "and now? ü"), ("assistant", [{"type": "text", "text": "done — ✓"}])]
    assert [r["seq"] for r in added] == [len(lines_of(first)), len(lines_of(first)) + 1]
    assert run_cli("fsck", "--strict", store).exit_code == 0


def test_an_answer_imported_before_its_mirror_was_written_is_not_imported_again(tmp_path):
    home = codex_home(tmp_path)
    store = tmp_path / "store"
    turn = new_turn("2026-04-02T00:00:00.000Z", "question", "answer")
    with open(home / SMALL, "ab") as handle:  # Codex is writing: the agent_message is there, its mirror not yet
        handle.write(b"".join(line + b"\n" for line in turn[:5]))
    _import(home / SMALL, store)
    with open(home / SMALL, "ab") as handle:
        handle.write(b"".join(line + b"\n" for line in turn[5:]))
    _import(home / SMALL, store)
    texts = [v for v in _view(_journals(store)[_id(SMALL)]) if v == ("assistant", "answer")]
    assert len(texts) == 1, "one answer, however the import fell between its two copies"


def test_a_deleted_source_stays_in_the_store(tmp_path):
    home = codex_home(tmp_path)
    store = tmp_path / "store"
    _import(home, store)
    journal = _journals(store)[_id(SMALL)]
    kept = journal.read_bytes()
    (home / SMALL).unlink()
    result = _import(home, store)
    assert result.exit_code == 0 and _id(SMALL) not in {s["id"] for s in result.json["sessions"]}
    assert journal.read_bytes() == kept


# -- damage -------------------------------------------------------------------------------------


def _damaged(tmp_path: Path, build) -> tuple[Path, list[bytes], bytes]:
    home = codex_home(tmp_path)
    lines = lines_of((FIXTURES / SUBAGENT).read_bytes())
    data = build(lines)
    (home / SUBAGENT).write_bytes(data)
    return home / SUBAGENT, lines, data


def _imported_keys(store: Path, rel: str) -> list[bytes]:
    return [json.dumps(r["raw"], ensure_ascii=False, separators=(",", ":")).encode()
            for r in _records(_journals(store)[_id(rel)])[1:]]


def test_a_torn_tail_imports_every_whole_record_and_is_picked_up_once_whole(tmp_path):
    path, lines, data = _damaged(tmp_path, lambda lines: b"".join(l + b"\n" for l in lines[:-1]) + lines[-1][:40])
    result = _import(path, tmp_path / "store")
    assert result.exit_code == 0
    (torn,) = [f for f in result.json["findings"] if f["code"] == "source-torn"]
    assert torn["path"] == str(path) and torn["line"] == len(lines) and torn["offset"] == len(data) - 40
    session = result.json["sessions"][0]
    assert session["skipped"]["torn-tail"] == 1
    path.write_bytes(b"".join(l + b"\n" for l in lines))  # the writer finished the line
    finished = _import(path, tmp_path / "store").json["sessions"][0]
    assert finished["status"] in ("updated", "unchanged") and "torn-tail" not in finished["skipped"]


def test_a_nul_run_mid_file_is_reported_and_every_record_around_it_imports(tmp_path):
    def build(lines):
        return b"".join(l + b"\n" for l in lines[:10]) + b"\0" * 300 + b"\n" + b"".join(l + b"\n" for l in lines[10:])

    path, lines, data = _damaged(tmp_path, build)
    result = _import(path, tmp_path / "store")
    (nul,) = [f for f in result.json["findings"] if f["code"] == "source-torn"]
    assert nul["line"] == 11 and nul["offset"] == sum(len(l) + 1 for l in lines[:10])
    clean = _import(FIXTURES / SUBAGENT, tmp_path / "clean")
    assert _imported_keys(tmp_path / "store", SUBAGENT) == _imported_keys(tmp_path / "clean", SUBAGENT)
    session = result.json["sessions"][0]
    assert session["skipped"]["nul-run"] == 1 and session["records"] == clean.json["sessions"][0]["records"]


def test_two_records_spliced_on_one_line_both_import(tmp_path):
    def build(lines):
        return b"".join(l + b"\n" for l in lines[:20]) + lines[20] + lines[21] + b"\n" + b"".join(l + b"\n" for l in lines[22:])

    path, lines, data = _damaged(tmp_path, build)
    result = _import(path, tmp_path / "store")
    assert result.exit_code == 0
    _import(FIXTURES / SUBAGENT, tmp_path / "clean")
    assert _imported_keys(tmp_path / "store", SUBAGENT) == _imported_keys(tmp_path / "clean", SUBAGENT)


def test_a_cut_record_spliced_with_a_whole_one_imports_the_whole_one_and_names_the_line(tmp_path):
    def build(lines):
        return b"".join(l + b"\n" for l in lines[:20]) + lines[20][:50] + lines[21] + b"\n" + b"".join(l + b"\n" for l in lines[22:])

    path, lines, data = _damaged(tmp_path, build)
    result = _import(path, tmp_path / "store")
    assert result.exit_code == 4, "bytes lost at the source: the run is not clean"
    (cut,) = [f for f in result.json["findings"] if f["code"] == "source-unreadable"]
    assert cut["path"] == str(path) and cut["line"] == 21 and cut["offset"] == sum(len(l) + 1 for l in lines[:20])
    keys = _imported_keys(tmp_path / "store", SUBAGENT)
    clean = _import(FIXTURES / SUBAGENT, tmp_path / "clean")
    lost = _imported_keys(tmp_path / "clean", SUBAGENT)
    assert [k for k in lost if k != lines[20]] == keys, "every whole record imports; only the cut one is missing"
    assert clean.json["sessions"][0]["records"] == result.json["sessions"][0]["records"] + (lines[20] in lost)
    session = result.json["sessions"][0]
    assert session["skipped"]["cut-record"] == 1
    assert session["source_items"] == 1 + session["records"] + sum(session["skipped"].values())


def test_a_file_that_is_not_a_rollout_is_refused_by_name(tmp_path):
    folder = tmp_path / "sessions" / "2026" / "01" / "01"
    folder.mkdir(parents=True)
    (folder / "rollout-x.jsonl").write_bytes(b'{"kind":"meta","v":2,"id":"x","project":"/p","createdAt":"t"}\n')
    (folder / "rollout-y.jsonl").write_bytes(b"")
    result = _import(tmp_path, tmp_path / "store")
    assert result.exit_code == 4
    codes = {Path(f["path"]).name: f["code"] for f in result.json["findings"]}
    assert codes == {"rollout-x.jsonl": "unknown-format", "rollout-y.jsonl": "source-skipped"}
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").rglob("*.jsonl"))



def _first_record_calls(monkeypatch) -> list:
    from toolkit.importers import codex as importer

    calls: list = []
    real = importer.first_record
    monkeypatch.setattr(importer, "first_record", lambda path, *a: calls.append(path) or real(path, *a))
    return calls


def test_a_first_record_read_for_the_key_is_not_read_again_by_the_import(tmp_path, monkeypatch):
    """The key of a unit (its thread id) is read from the rollout's first record; the read of the
    rollout takes what that read found (the format, a pre-envelope file) instead of reading it again."""
    from toolkit.importers import codex_units

    home = codex_home(tmp_path)
    path = home / SMALL
    calls = _first_record_calls(monkeypatch)
    unit = next(u for u in codex_units.units(home, lambda f: None) if u.handle[0] == path)
    assert codex_units.unit_key(unit) == "019d4719-5460-7b10-bdb3-4728ca6f3192"
    assert session_from_rollout(path, Options(), lambda f: None) is not None
    assert calls == []  # taken from the key's read
    assert session_from_rollout(path, Options(), lambda f: None) is not None
    assert calls == [path]  # once: a second read of it reads it


@pytest.mark.parametrize("change", ["appended", "same size, mtime put back", "replaced"])
def test_a_rollout_changed_after_its_key_was_read_is_identified_by_what_it_holds_now(tmp_path, monkeypatch, change):
    """Between the listing (the unit's key) and the read (a worker, later), the file became another
    tool's: its first record is read again and the file refused, however the change hid itself."""
    import os

    from toolkit.importers import codex_units

    home = codex_home(tmp_path)
    path = home / SMALL
    unit = next(u for u in codex_units.units(home, lambda f: None) if u.handle[0] == path)
    codex_units.unit_key(unit)
    data, before = path.read_bytes(), path.stat()
    foreign = b'{"kind":"meta","v":2,"id":"x","project":"/p","createdAt":"t"}'
    if change == "appended":
        path.write_bytes(data + b"\n")
        path.write_bytes(foreign + b"\n" + data)
    else:
        body = (foreign + b" " * len(data))[:len(data) - 1] + b"\n"  # the same size
        if change == "replaced":
            path.unlink()
        path.write_bytes(body)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    calls = _first_record_calls(monkeypatch)
    findings: list = []
    assert session_from_rollout(path, Options(), findings.append) is None
    assert calls == [path]
    assert [f.code for f in findings] == ["unknown-format"]


# -- forks ----------------------------------------------------------------------------------------


def _fork(tmp_path: Path) -> tuple[Path, str, str]:
    """A child rollout as Codex 0.119 writes one (§2.9): its session_meta, the parent's, a replay of
    the parent's first turn without the assistant message mirrors, then its own turn."""
    parent = json.loads(lines_of((FIXTURES / SMALL).read_bytes())[0])
    child_id = "019d9999-0000-7000-8000-000000000001"
    meta = {**parent["payload"], "id": child_id, "forked_from_id": parent["payload"]["id"]}
    meta = {"id": child_id, "forked_from_id": parent["payload"]["id"], **{k: v for k, v in meta.items() if k not in ("id", "forked_from_id")}}
    t = "2026-04-03T10:00:00.000Z"
    lines = [envelope(t, "session_meta", meta), envelope(t, "session_meta", parent["payload"]),
             envelope(t, "event_msg", {"type": "task_started", "turn_id": "p1"}),
             envelope(t, "event_msg", {"type": "user_message", "message": "the parent's question", "images": []}),
             envelope(t, "event_msg", {"type": "agent_message", "message": "the parent's answer", "phase": None}),
             envelope(t, "event_msg", {"type": "token_count", "info": None}),
             envelope(t, "response_item", {"type": "message", "role": "developer",
                                           "content": [{"type": "input_text", "text": "<model_switch>"}]}),
             *new_turn("2026-04-03T10:00:05.000Z", "the child's own question", "the child's answer")]
    path = tmp_path / ".codex" / "sessions" / "2026" / "04" / "03" / f"rollout-2026-04-03T04-00-00-{child_id}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path, child_id, parent["payload"]["id"]


def test_a_fork_is_its_own_session_with_the_replayed_prefix_marked_inherited(tmp_path):
    path, child, parent = _fork(tmp_path)
    result = _import(path, tmp_path / "store")
    assert result.exit_code == 0
    session = result.json["sessions"][0]
    assert session["id"] == f"codex-{child}" and session["skipped"]["meta-copy"] == 1
    meta, *records = _records(_journals(tmp_path / "store")[f"codex-{child}"])
    assert meta["source"]["parent"] == parent and meta["title"] == "the child's own question"
    shown = [(r["kind"], r.get("inherited", False), r["content"] if r["kind"] == "user" else r["content"][0]["text"]) for r in records]
    assert shown == [("user", True, "the parent's question"), ("assistant", True, "the parent's answer"),
                     ("user", False, "the child's own question"), ("assistant", False, "the child's answer")]
    listed = run_cli("ls", "--json", tmp_path / ".codex").json["sessions"]
    (row,) = [r for r in listed if r["id"] == child]
    assert row["turns"] == 1 and row["title"] == "the child's own question", "the replayed turn is not counted twice"


def test_session_from_rollout_never_opens_the_source_for_writing(tmp_path):
    home = codex_home(tmp_path)
    before = snapshot(home)
    found = []
    session = session_from_rollout(home / SMALL, Options(), found.append)
    assert session is not None and session.records and snapshot(home) == before
    shutil.rmtree(home)


def test_the_journals_are_the_reference_bytes_and_so_is_what_a_reimport_appends(tmp_path):
    """Byte for byte the journals the importer wrote when it held every record in memory (issue
    28; tests/data/codex_import_reference.json, pinned by that code), on the real fixtures, a
    regular rollout and odd shapes, then after each rollout grew."""
    from tests.importers import claude_shapes, codex_shapes

    reference = json.loads(codex_shapes.REFERENCE.read_text())
    home = codex_shapes.reference_tree(tmp_path / ".codex", FIXTURES)
    store = tmp_path / "store"
    for name in ("first", "again"):
        if name == "again":
            codex_shapes.grow(home)
        result = _import(home, store)
        assert result.exit_code in (0, 4), result.stdout
        got = claude_shapes.digests(store, home)
        assert sorted(got) == sorted(reference[name])
        assert [path for path in got if got[path] != reference[name][path]] == [], f"journals differ ({name} import)"


@pytest.mark.parametrize("first", ["upper", "lower"])
def test_one_windows_folder_whose_drive_letter_codex_recorded_in_both_cases_is_one_store_folder(tmp_path, first):
    """Windows names one folder ``D:\\x`` and ``d:\\x``; Codex records its working folder as the shell
    gave it (the fixtures hold both): every session of that folder goes to one store folder, the
    same whichever case comes first (its drive letter upper case, as Windows writes it, unless the
    store has one already: then that one), with --jobs 1 or 2; each keeps its project as recorded;
    a POSIX project's folder is its own."""
    from toolkit.importers.output import Session, journal_path

    home = codex_home(tmp_path)
    assert len({json.loads(p.read_bytes().split(b"\n", 1)[0])["payload"]["cwd"][:1] for p in home.rglob("rollout-*.jsonl")}) == 2
    store = tmp_path / "store"
    sessions = [Session(f"codex-{n}", project, None, None, {"app": "codex"}, None)
                for n, project in enumerate(["D:\\Work\\app", "d:\\Work\\app", "/home/ada/D--x", "/home/ada/d--x"])]
    if first == "lower":
        sessions[:2] = sessions[1::-1]
    assert journal_path(store, sessions[0]).parent.name == journal_path(store, sessions[1]).parent.name == "D--Work-app"
    legacy = store / "d--Work-app"  # (a store an earlier build filed d:\\ sessions in)
    legacy.mkdir(parents=True)
    assert journal_path(store, sessions[0]).parent == journal_path(store, sessions[1]).parent == legacy
    assert len({journal_path(store, s).parent for s in sessions[2:]}) == 2, "POSIX paths are their own"
    for jobs in ("1", "2"):
        store = tmp_path / f"store-{jobs}"
        assert _import(home, store, "--jobs", jobs).exit_code == 0
        assert {p.parent.name for p in _journals(store).values()} == {"D--Ftuwt-sovnai-Modfruact-QMNLO-GNFSC"}
        projects = {json.loads(p.read_bytes().split(b"\n", 1)[0])["project"][:1] for p in _journals(store).values()}
        assert projects == {"D", "d"}, "each keeps its project as Codex recorded it"
        assert run_cli("fsck", "--strict", "--json", store).exit_code == 0
