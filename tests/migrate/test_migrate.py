"""levelsess migrate end to end: byte-exact v1 -> v2, idempotence, refusals, backups, failures."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys

import orjson
import pytest

from tests.audit import no_writes
from tests.helpers import PROJECT_SLUG, make_store, run_cli, snapshot, write_journal
from toolkit import durable
from toolkit.journal import scan_journal
from toolkit.lines import loads
from toolkit.locks import lock_content, lock_path
from toolkit.migrate import plan_migration
from toolkit.stores import discover_all

# Hand-written v1 lines: escapes, odd spacing, big numbers, unknown fields and kinds.
TRICKY = [
    rb'{"kind":"meta","v":1,"id":"2026-01-02T03-04-05-tr1k","project":"/home/ada/caf\u00e9","createdAt":"2026-01-02T03:04:05Z","title":"a \/ b","extra":{"v":7,"seq":1}}',
    rb'{"kind":"user","t":"2026-01-02T03:04:06Z","content":"line\nbreak \ud83d cut emoji","n":1.50,"big":12345678901234567890,"e":1E+2}',
    rb'{ "kind" : "assistant" , "t":"2026-01-02T03:04:07Z", "content":[{"type":"text","text":"}{ \"quoted\" \\"}], "model":"m-1" }  ',
    rb'{"kind":"widget","x":[],"nested":{"seq":"not top level"}}',
    rb'{"kind":"event","t":"2026-01-02T03:04:08Z","type":"pin"}',
    rb'{"kind":"title","t":"2026-01-02T03:04:09Z","title":"\u65e5\u672c \ud83d\ude00 \u00e9"}',
]


def tricky_store(root):
    project = root / PROJECT_SLUG
    write_journal(project / "2026-01-02T03-04-05-tr1k.jsonl", b"\n".join(TRICKY) + b"\n")
    return root


def _lines(path):
    return path.read_bytes().split(b"\n")[:-1]


def test_v1_records_keep_every_byte_and_gain_seq(tmp_path):
    store = make_store(tricky_store(tmp_path / "store"), sessions=3, v=1)
    originals = {p.name: p.read_bytes() for p in (store / PROJECT_SLUG).glob("*.jsonl")}
    result = run_cli("migrate", "--json", "--store", store)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert {f["status"] for f in result.json["files"] if f["format"] == "journal"} == {"migrated"}
    for name, before in originals.items():
        old_lines = before.split(b"\n")[:-1]
        new_lines = _lines(store / PROJECT_SLUG / name)
        assert len(new_lines) == len(old_lines)
        old_meta, new_meta = loads(old_lines[0]), loads(new_lines[0])
        assert new_meta == {**old_meta, "v": 2}
        assert list(new_meta) == list(old_meta), "meta keeps its key order"
        for seq, (old, new) in enumerate(zip(old_lines[1:], new_lines[1:]), start=1):
            body = old.rstrip(b" ")
            assert new == body[:-1] + b',"seq":%d}' % seq + old[len(body):], "only seq is spliced in"
            assert loads(new) == {**loads(old), "seq": seq}
        scan = scan_journal(store / PROJECT_SLUG / name)
        assert scan.version == 2 and not [f for f in scan.findings if f.severity == "error"]
    tricky = _lines(store / PROJECT_SLUG / "2026-01-02T03-04-05-tr1k.jsonl")
    assert tricky[0] == TRICKY[0].replace(b'"v":1', b'"v":2', 1), "nested v untouched"
    assert rb"\ud83d cut emoji" in tricky[1] and b"1.50" in tricky[1] and b"12345678901234567890" in tricky[1]
    assert run_cli("fsck", "--store", store).exit_code == 0


def test_index_becomes_v2_and_matches_reindex(tmp_path):
    store = make_store(tricky_store(tmp_path / "store"), sessions=4, v=1)
    assert run_cli("reindex", "--store", store).exit_code == 0
    assert isinstance(loads((store / PROJECT_SLUG / "index.json").read_bytes()), list)
    assert run_cli("migrate", "--store", store).exit_code == 0
    migrated = loads((store / PROJECT_SLUG / "index.json").read_bytes())
    assert migrated["v"] == 2
    fresh = tmp_path / "fresh"
    shutil.copytree(store, fresh)
    (fresh / PROJECT_SLUG / "index.json").unlink()
    assert run_cli("reindex", "--store", fresh).exit_code == 0
    rebuilt = loads((fresh / PROJECT_SLUG / "index.json").read_bytes())
    assert migrated["sessions"] == rebuilt["sessions"]
    assert run_cli("reindex", "--check", "--store", store).exit_code == 0


def test_rerun_dry_run_and_list_change_nothing(tmp_path):
    store = make_store(tmp_path / "store", sessions=3, v=1)
    before = snapshot(store)
    with no_writes():
        dry = run_cli("migrate", "--dry-run", "--json", "--store", store)
        listed = run_cli("migrate", "--list", "--json", "--store", store)
    assert snapshot(store) == before
    assert dry.exit_code == 4, "a dry run with work to do exits 4"
    assert {f["status"] for f in dry.json["files"]} == {"migrate", "rebuild"}
    assert listed.exit_code == 0 and {s["format"] for s in listed.json["steps"]} == {"journal", "index"}
    assert {(f["from"], f["to"]) for f in listed.json["files"] if f["format"] == "journal"} == {(1, 2)}
    assert run_cli("migrate", "--store", store).exit_code == 0
    after_first = snapshot(store)
    again = run_cli("migrate", "--json", "--store", store)
    assert again.exit_code == 0
    assert {f["status"] for f in again.json["files"]} == {"up-to-date"}
    assert snapshot(store) == after_first, "a second run changes no byte (and no mtime)"
    assert run_cli("migrate", "--dry-run", "--store", store).exit_code == 0


def test_future_torn_and_locked_journals_are_refused_untouched_while_the_rest_migrate(tmp_path):
    store = make_store(tmp_path / "store", sessions=3, v=1)
    project = store / PROJECT_SLUG
    future = write_journal(project / "2026-11-30T10-00-00-fut9.jsonl",
                           b'{"kind":"meta","v":99,"id":"f","project":"/p","createdAt":"2026-11-30T10:00:00Z"}\n{"kind":"hologram","seq":1}\n')
    torn = write_journal(project / "2026-11-30T10-00-01-torn.jsonl",
                         b'{"kind":"meta","v":1,"id":"t","project":"/p","createdAt":"x"}\n{"kind":"user","t":"x","content":"in fli')
    held = write_journal(project / "2026-11-30T10-00-02-held.jsonl",
                         b'{"kind":"meta","v":1,"id":"h","project":"/p","createdAt":"x"}\n{"kind":"user","t":"x","content":"hi"}\n')
    lock_path(held).write_bytes(lock_content(os.getpid()))  # a live owner: this test process
    refused = {future: future.read_bytes(), torn: torn.read_bytes(), held: held.read_bytes()}
    result = run_cli("migrate", "--json", "--store", store)
    assert result.exit_code == 4
    by_path = {f["path"]: f for f in result.json["files"]}
    for path, data in refused.items():
        assert path.read_bytes() == data, f"{path.name} was touched"
        assert by_path[str(path)]["status"] == "refused"
    codes = {(f["code"], os.path.basename(f["path"])) for f in result.json["findings"]}
    assert {("future-version", future.name), ("torn-tail", torn.name), ("locked", held.name)} <= codes
    torn_finding = next(f for f in result.json["findings"] if f["code"] == "torn-tail")
    assert "fsck --repair" in torn_finding["message"] and torn_finding["line"] == 2
    migrated = [f for f in result.json["files"] if f["status"] == "migrated"]
    assert len(migrated) == 3
    assert lock_path(held).exists(), "a live owner's lock is never taken away"
    # The index is left alone: a journal of a newer schema is in the folder (as reindex does).
    assert next(f for f in result.json["files"] if f["format"] == "index")["status"] == "skipped"


def test_torn_journal_migrates_after_fsck_repair(tmp_path):
    store = make_store(tmp_path / "store", sessions=1, v=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    with open(journal, "ab") as handle:
        handle.write(b'{"kind":"user","t":"x","content":"in fli')
    assert run_cli("migrate", "--store", store).exit_code == 4
    assert run_cli("fsck", "--repair", "--store", store).exit_code == 1
    assert run_cli("migrate", "--store", store).exit_code == 0
    assert scan_journal(journal).version == 2


def test_seq_field_in_a_v1_record_is_refused(tmp_path):
    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T10-00-00-sq01.jsonl",
                            b'{"kind":"meta","id":"s","project":"/p","createdAt":"x"}\n{"kind":"user","t":"x","content":"a"}\n{"kind":"agent","seq":"mine"}\n')
    before = journal.read_bytes()
    result = run_cli("migrate", "--json", "--store", tmp_path / "store")
    assert result.exit_code == 4 and journal.read_bytes() == before
    finding = next(f for f in result.json["findings"] if f["code"] == "seq-conflict")
    assert (finding["line"], finding["offset"]) == (3, before.index(b'{"kind":"agent"'))


def test_meta_without_v_gets_it_after_kind(tmp_path):
    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T10-00-00-nov1.jsonl",
                            b'{"kind":"meta","id":"s","project":"/p","createdAt":"x"}\n{"kind":"user","t":"x","content":"a"}\n')
    assert run_cli("migrate", "--store", tmp_path / "store").exit_code == 0
    assert journal.read_bytes() == b'{"kind":"meta","v":2,"id":"s","project":"/p","createdAt":"x"}\n{"kind":"user","t":"x","content":"a","seq":1}\n'


def test_hand_edited_bom_crlf_and_blank_lines_keep_their_bytes(tmp_path):
    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T10-00-00-crlf.jsonl",
                            b'\xef\xbb\xbf{"kind":"meta","v":1,"id":"s","project":"/p","createdAt":"x"}\r\n{"kind":"user","t":"x","content":"a"}\r\n\n{"kind":"title","t":"y","title":"T"}\r\n')
    assert run_cli("migrate", "--store", tmp_path / "store").exit_code == 0
    assert journal.read_bytes() == (b'\xef\xbb\xbf{"kind":"meta","v":2,"id":"s","project":"/p","createdAt":"x"}\r\n'
                                    b'{"kind":"user","t":"x","content":"a","seq":1}\r\n\n{"kind":"title","t":"y","title":"T","seq":2}\r\n')
    result = run_cli("fsck", "--json", journal)
    assert result.exit_code == 0
    assert {f["code"] for f in result.json["findings"]} == {"bom", "crlf", "blank-line"}


def test_to_and_downgrade(tmp_path):
    store = make_store(tmp_path / "store", sessions=2, v=2)
    result = run_cli("migrate", "--to", "1", "--json", "--store", store)
    assert result.exit_code == 4 and {f["code"] for f in result.json["findings"]} == {"no-downgrade"}
    assert run_cli("migrate", "--to", "3", "--store", store).exit_code == 16
    assert run_cli("migrate", "--to", "2", "--store", store).exit_code == 0
    v1 = make_store(tmp_path / "v1", sessions=1, v=1)
    assert run_cli("migrate", "--to", "1", "--json", "--store", v1).json["files"][0]["status"] == "up-to-date"


def test_backups_are_pruned_after_success_or_kept_on_request(tmp_path):
    store = make_store(tmp_path / "store", sessions=2, v=1)
    assert run_cli("migrate", "--store", store).exit_code == 0
    assert not (store / ".levelsess" / "backup").exists(), "pruned, empty folders included"
    kept = make_store(tmp_path / "kept", sessions=2, v=1)
    originals = {p.name: p.read_bytes() for p in (kept / PROJECT_SLUG).glob("*.jsonl")}
    result = run_cli("migrate", "--keep-backup", "--json", "--store", kept)
    (backup,) = result.json["backups"]
    assert backup.startswith(str(kept / ".levelsess" / "backup")) and not backup.endswith(".partial")
    assert {p.name: p.read_bytes() for p in (tmp_path / backup / PROJECT_SLUG).iterdir()} == originals


def test_a_single_journal_migrates_and_its_folder_index_follows(tmp_path):
    store = make_store(tmp_path / "store", sessions=2, v=1)
    assert run_cli("reindex", "--store", store).exit_code == 0
    first, second = sorted((store / PROJECT_SLUG).glob("*.jsonl"))
    assert run_cli("migrate", first).exit_code == 0
    assert scan_journal(first).version == 2 and scan_journal(second).version == 1
    assert run_cli("reindex", "--check", "--store", store).exit_code == 0, "the index follows the migrated journal"
    assert orjson.loads((store / PROJECT_SLUG / "index.json").read_bytes())["v"] == 2


def test_logician_workspaces_have_nothing_to_migrate(tmp_path):
    from tests.helpers import logician_session

    logician_session(tmp_path / "ws")
    before = snapshot(tmp_path / "ws")
    result = run_cli("migrate", tmp_path / "ws")
    assert result.exit_code == 0 and "nothing to migrate" in result.stderr
    assert snapshot(tmp_path / "ws") == before


def test_failed_fsync_stops_with_exit_8_and_the_original_intact(tmp_path, monkeypatch):
    store = make_store(tmp_path / "store", sessions=2, v=1)
    originals = {p: p.read_bytes() for p in (store / PROJECT_SLUG).glob("*.jsonl")}
    real_fsync, calls = os.fsync, []

    def flaky(fd):
        calls.append(fd)
        if len(calls) == 4:  # the fourth fsync, part-way through the first journal, fails
            raise OSError(errno.EIO, "Input/output error")
        return real_fsync(fd)

    monkeypatch.setattr(durable.os, "fsync", flaky)
    result = run_cli("migrate", "--json", "--store", store)
    monkeypatch.setattr(durable.os, "fsync", real_fsync)
    assert result.exit_code & 8
    assert {p: p.read_bytes() for p in originals} == originals
    assert not [p for p in (store / PROJECT_SLUG).iterdir() if p.name.endswith((".tmp", ".lock"))]
    assert run_cli("migrate", "--store", store).exit_code == 0, "a rerun finishes the job"


def test_interrupt_between_files_exits_32_and_a_rerun_finishes(tmp_path):
    store = make_store(tmp_path / "store", sessions=3, v=1)
    plan = plan_migration(discover_all([store]))
    seen = []
    result = plan.execute(progress=lambda n: seen.append(n), should_stop=lambda: bool(seen))
    assert result.interrupted and result.exit_code == 32
    assert [f.status for f in result.files].count("migrated") == 1
    assert result.backups, "an interrupted run keeps its backups"
    assert run_cli("migrate", "--store", store).exit_code == 0
    assert not (store / ".levelsess" / "backup").exists(), "the finishing run prunes the killed run's backups too"
    assert all(scan_journal(j).version == 2 for j in (store / PROJECT_SLUG).glob("*.jsonl"))


def test_missing_path_and_help(tmp_path):
    result = run_cli("migrate", tmp_path / "nope")
    assert result.exit_code == 8 and "Traceback" not in result.stderr
    help_text = run_cli("migrate", "--help").stdout
    for option in ("--to", "--dry-run", "--list", "--keep-backup", "--json", "Examples"):
        assert option in help_text


def test_cli_subprocess_json_is_one_document(tmp_path):
    store = make_store(tmp_path / "store", sessions=2, v=1)
    proc = subprocess.run([sys.executable, "-m", "toolkit.cli", "migrate", "--json", "--store", str(store)],
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["exit"] == 0


def test_whitespace_only_lines_stay_blank(tmp_path):
    journal = write_journal(tmp_path / "store" / PROJECT_SLUG / "2026-11-30T10-00-00-vtab.jsonl",
                            b'{"kind":"meta","v":1,"id":"s","project":"/p","createdAt":"x"}\n\x0b\n{"kind":"user","t":"x","content":"a"}\n \t\n')
    assert run_cli("migrate", "--store", tmp_path / "store").exit_code == 0
    assert journal.read_bytes() == b'{"kind":"meta","v":2,"id":"s","project":"/p","createdAt":"x"}\n\x0b\n{"kind":"user","t":"x","content":"a","seq":1}\n \t\n'
    assert run_cli("fsck", journal).exit_code == 0


def test_a_journal_that_grew_after_planning_is_judged_again_under_the_lock(tmp_path):
    store = make_store(tmp_path / "store", sessions=1, v=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    plan = plan_migration(discover_all([store]))
    with open(journal, "ab") as handle:  # a writer appends between the plan and the run
        handle.write(b'{"kind":"user","t":"late","content":"one more"}\n')
    result = plan.execute()
    assert result.exit_code == 0 and result.files[0].status == "migrated"
    last = loads(journal.read_bytes().split(b"\n")[-2])
    assert last["content"] == "one more" and last["seq"] == result.files[0].records - 1


def test_a_named_journal_outside_a_store_gets_no_index(tmp_path):
    loose = tmp_path / "downloads"
    write_journal(loose / "a.jsonl", b'{"kind":"meta","v":1,"id":"a","project":"/p","createdAt":"x"}\n{"kind":"user","t":"x","content":"hi"}\n')
    (loose / "analytics.jsonl").write_bytes(b'{"event":"click"}\n')
    assert run_cli("migrate", loose / "a.jsonl").exit_code == 0
    assert sorted(p.name for p in loose.iterdir()) == ["a.jsonl", "analytics.jsonl"], "nothing but the migrated journal changed"


def test_worker_processes_give_the_same_bytes(tmp_path):
    serial = make_store(tmp_path / "serial", sessions=6, v=1)
    parallel = make_store(tmp_path / "parallel", sessions=6, v=1)
    assert run_cli("migrate", "--jobs", "1", "--store", serial).exit_code == 0
    result = run_cli("migrate", "--jobs", "2", "--json", "--store", parallel)
    assert result.exit_code == 0 and {f["status"] for f in result.json["files"] if f["format"] == "journal"} == {"migrated"}
    for journal in (serial / PROJECT_SLUG).glob("*.jsonl"):
        assert (parallel / PROJECT_SLUG / journal.name).read_bytes() == journal.read_bytes()
    assert run_cli("reindex", "--check", "--store", parallel).exit_code == 0
    assert not [p for p in (parallel / PROJECT_SLUG).iterdir() if p.name.endswith((".lock", ".tmp"))]
