"""`levelsess restore --app cline` on real Cline, Roo Code and Kilo Code storage folders built from
SOURCES-MORE §4.8 (tests/importers/cline_data.py): the plan names exactly the tasks the tool does
not list; applied, an independent reader of §4.3 (tests/restore/readers.py) lists every task
folder with its prompt as title, the entries that were there keep their bytes and order; undo puts
every byte back; a second run changes nothing; a process holding the list open, or an editor whose
user data folder is this one, is refused with nothing written; a cut list keeps its whole entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.importers import cline_data as data
from tests.restore.kit import restore, tree
from tests.restore.readers import cline_listed, roo_listed

IDS = ["1787306400123", "1787306500123", "imported-7f3a", "0198c3a2-7b4e-7c1d-9e2f-0a1b2c3d4e5f"]


def prompt(storage: Path, tid: str, text: str) -> None:
    """Give a task its own prompt (the first panel message and the API history's <task>)."""
    folder = storage / "tasks" / tid
    ui = json.loads((folder / "ui_messages.json").read_bytes())
    ui[0]["text"] = text
    data.write(folder / "ui_messages.json", ui)
    api = json.loads((folder / "api_conversation_history.json").read_bytes())
    api[0]["content"][0]["text"] = f"<task>\n{text}\n</task>"
    data.write(folder / "api_conversation_history.json", api)


def cline(tmp_path: Path, listed: list[str]) -> Path:
    storage = data.cline_storage(tmp_path, IDS, listed=listed)
    for n, tid in enumerate(IDS):
        prompt(storage, tid, f"Task number {n}: fix {tid}")
    return storage


def test_the_plan_names_exactly_the_unlisted_tasks_and_writes_nothing(tmp_path):
    storage = cline(tmp_path, IDS[:1])
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage)
    assert result.exit_code == 4, result.stdout
    plan = result.json["installs"][0]
    assert sorted(e["id"] for e in plan["list"]["added"]) == sorted(IDS[1:])
    assert plan["list"]["kept"] == 1 and plan["listed"] == 1 and plan["tasks"] == 4
    assert tree(tmp_path) == before
    text = restore_text("--app", "cline", "--source", storage)
    assert all(tid in text for tid in IDS[1:]) and "next: levelsess restore --app cline --source" in text


def restore_text(*args: str) -> str:
    from tests.helpers import run_cli

    result = run_cli("restore", *args)
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout + result.stderr


def test_apply_lists_every_task_folder_with_its_prompt_keeps_entries_and_undo_puts_every_byte_back(tmp_path):
    storage = cline(tmp_path, [IDS[2], IDS[0]])
    # one entry Cline wrote in the order it wrote it, with a title of its own
    old = (storage / "state" / "taskHistory.json").read_bytes()
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0, result.stdout
    listed = cline_listed(storage)
    assert set(listed) == set(IDS)
    for n in (1, 3):
        assert listed[IDS[n]] == f"Task number {n}: fix {IDS[n]}"  # the prompt, never environment_details
    new = (storage / "state" / "taskHistory.json").read_bytes()
    assert new.startswith(old[:-1] + b",") and b"\n" not in new  # kept byte for byte, in order; compact as Cline writes
    entries = json.loads(new)
    assert entries[:2] == json.loads(old)
    added = {e["id"]: e for e in entries[2:]}
    assert added[IDS[1]]["cwdOnTaskInitialization"] == "/home/ana/app" and added[IDS[1]]["modelId"] == "claude-sonnet-4-5"
    assert added[IDS[1]]["tokensIn"] == 1200 and added[IDS[1]]["totalCost"] == 0.0123 and "ulid" not in added[IDS[1]]
    assert added[IDS[1]]["size"] == sum(p.stat().st_size for p in (storage / "tasks" / IDS[1]).iterdir())
    stamp = result.json["stamp"]
    assert restore("--undo", stamp).exit_code == 0
    assert tree(tmp_path) == before


def test_a_second_run_plans_nothing_and_changes_no_byte(tmp_path):
    storage = cline(tmp_path, [])
    assert restore("--app", "cline", "--source", storage, "--yes").exit_code == 0
    after = tree(tmp_path)
    again = restore("--app", "cline", "--source", storage)
    assert again.exit_code == 0 and again.json["installs"][0]["list"] is None
    assert restore("--app", "cline", "--source", storage, "--yes").exit_code == 0
    assert tree(tmp_path) == after


def test_no_list_at_all_is_created_naming_every_task(tmp_path):
    storage = cline(tmp_path, [])
    (storage / "state" / "taskHistory.json").unlink()
    (storage / "state").rmdir()
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0, result.stdout
    assert set(cline_listed(storage)) == set(IDS)
    assert restore("--undo", result.json["stamp"]).exit_code == 0
    assert tree(tmp_path) == before


def hold_open(path: Path, *argv_tail: str, exe: str = sys.executable) -> subprocess.Popen:
    holder = subprocess.Popen([exe, "-c", "import sys, time; f = open(sys.argv[1], 'r+b') if sys.argv[1] != '-' else None; "
                               "print('open', flush=True); time.sleep(60)", str(path), *argv_tail], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "open"
    return holder


def test_a_process_holding_the_list_open_is_refused_and_nothing_is_written(tmp_path):
    storage = cline(tmp_path, IDS[:1])
    before = tree(tmp_path)
    holder = hold_open(storage / "state" / "taskHistory.json")
    try:
        result = restore("--app", "cline", "--source", storage, "--yes")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 4
    refused = [f for f in result.json["findings"] if f["code"] == "in-use"]
    assert refused and f"pid {holder.pid}" in refused[0]["message"]
    assert tree(tmp_path) == before and result.json["stamp"] is None


def test_an_editor_running_on_this_user_data_folder_is_refused(tmp_path):
    storage = cline(tmp_path, IDS[:1])
    code = tmp_path / "bin" / "code"  # an editor process as the OS names it: its executable's name
    code.parent.mkdir()
    code.symlink_to(sys.executable)
    before = tree(tmp_path / "Code")
    holder = hold_open(Path("-"), f"--user-data-dir={tmp_path / 'Code'}", exe=str(code))
    try:
        result = restore("--app", "cline", "--source", storage, "--yes")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 4
    assert any(f["code"] == "in-use" and f"pid {holder.pid}" in f["message"] for f in result.json["findings"])
    assert tree(tmp_path / "Code") == before
    elsewhere = hold_open(Path("-"), f"--user-data-dir={tmp_path / 'Other'}", exe=str(code))
    try:
        assert restore("--app", "cline", "--source", storage, "--yes").exit_code == 0  # another editor's folder: not this one
    finally:
        elsewhere.kill()
        elsewhere.wait()


def test_a_cut_list_keeps_every_whole_entry_adds_the_rest_and_keeps_the_original_in_the_backup(tmp_path):
    storage = cline(tmp_path, IDS[:2])
    path = storage / "state" / "taskHistory.json"
    whole = path.read_bytes()
    cut = whole[: whole.index(b',{"id"') + 30]  # the second entry cut mid-write (Cline's auto-reconstruct case)
    path.write_bytes(cut)
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0, result.stdout
    assert any(f["code"] == "index-corrupt" for f in result.json["findings"])
    entries = json.loads(path.read_bytes())
    assert entries[0] == json.loads(whole)[0]  # the whole entry, as it was
    assert set(cline_listed(storage)) == set(IDS)
    assert (Path(result.json["backup"]) / "backup" / "0-taskHistory.json").read_bytes() == cut
    assert restore("--undo", result.json["stamp"]).exit_code == 0
    assert tree(tmp_path) == before


def test_a_list_that_is_no_array_is_refused(tmp_path):
    storage = cline(tmp_path, [])
    (storage / "state" / "taskHistory.json").write_bytes(b'{"not":"a list"}')
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 4 and any(f["code"] == "restore-conflict" for f in result.json["findings"])
    assert tree(tmp_path) == before


def test_entries_whose_folder_is_gone_are_kept_and_named(tmp_path):
    storage = cline(tmp_path, IDS[:2] + ["1700000000000"])
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0
    assert result.json["installs"][0]["listed_without_folder"] == ["1700000000000"]
    assert "1700000000000" in cline_listed(storage)
    assert any(f["code"] == "listed-without-folder" for f in result.json["findings"])


def test_a_task_with_only_its_api_history_gets_the_task_text_and_an_unreadable_one_is_skipped(tmp_path):
    storage = cline(tmp_path, IDS[:2])
    (storage / "tasks" / IDS[2] / "ui_messages.json").unlink()
    (storage / "tasks" / IDS[3] / "ui_messages.json").write_bytes(b'[{"ts":1,')
    (storage / "tasks" / IDS[3] / "api_conversation_history.json").unlink()
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0, result.stdout
    listed = cline_listed(storage)
    assert listed[IDS[2]] == f"Task number 2: fix {IDS[2]}" and IDS[3] not in listed
    assert any(f["code"] == "source-skipped" and IDS[3] in f["path"] for f in result.json["findings"])


def test_a_list_still_in_the_memento_is_refused(tmp_path):
    storage = cline(tmp_path, IDS[:1])
    data.memento(storage.parent, data.CLINE_ID, [data.history_item(IDS[1])])
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 4 and any(f["code"] == "restore-refused" for f in result.json["findings"])
    assert tree(tmp_path) == before


def test_roo_gets_a_history_item_for_each_folder_without_one_and_none_is_overwritten(tmp_path):
    ids = ["0198c3a2-7b4e-7c1d-9e2f-0a1b2c3d4e5f", "0198c3a2-7b4e-7c1d-9e2f-0a1b2c3d4e60", "0198c3a2-7b4e-7c1d-9e2f-0a1b2c3d4e61"]
    storage = data.roo_storage(tmp_path, ids, items=ids[:1], cached=ids[:1])
    own = (storage / "tasks" / ids[0] / "history_item.json").read_bytes()
    (storage / "tasks" / ids[2] / "history_item.json").write_bytes(b'{"id":')  # one Roo cannot read: left as it is
    index = (storage / "tasks" / "_index.json").read_bytes()
    before = tree(tmp_path)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0, result.stdout
    assert [i["id"] for i in result.json["installs"][0]["items"]] == [ids[1]]
    listed = roo_listed(storage)
    assert set(listed) == set(ids[:2]) and listed[ids[1]] == "Fix the failing tests"
    item = json.loads((storage / "tasks" / ids[1] / "history_item.json").read_bytes())
    assert item["number"] == 1 and item["workspace"] == "/home/ana/app" and item["tokensIn"] == 1200
    assert (storage / "tasks" / ids[0] / "history_item.json").read_bytes() == own
    assert (storage / "tasks" / ids[2] / "history_item.json").read_bytes() == b'{"id":'
    assert (storage / "tasks" / "_index.json").read_bytes() == index
    assert any(f["code"] == "restore-conflict" and ids[2] in f["path"] for f in result.json["findings"])
    assert restore("--undo", result.json["stamp"]).exit_code == 0
    assert tree(tmp_path) == before


def test_kilo_legacy_folders_are_treated_as_roo(tmp_path):
    storage = data.roo_storage(tmp_path, ["k1", "k2"], items=["k1"], name=data.KILO_ID)
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 0 and set(roo_listed(storage)) == {"k1", "k2"}


def test_bad_usage_is_a_clear_error(tmp_path):
    from tests.helpers import run_cli

    missing = run_cli("restore", "--app", "cline", "--source", tmp_path / "nope")
    assert missing.exit_code == 8 and "Traceback" not in missing.stdout + missing.stderr
    mapped = run_cli("restore", "--app", "cline", "--map", "a=b")
    assert mapped.exit_code == 16 and "--map" in mapped.stdout + mapped.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(listed=st.lists(st.sampled_from(IDS), unique=True), order=st.randoms(use_true_random=False))
def test_any_unlisted_subset_ends_up_listed_and_every_entry_there_is_untouched(listed, order):
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        order.shuffle(listed)
        storage = data.cline_storage(root, IDS, listed=listed)
        old = (storage / "state" / "taskHistory.json").read_bytes()
        result = restore("--app", "cline", "--source", storage, "--yes")
        assert result.exit_code == 0, result.stdout
        assert set(cline_listed(storage)) == set(IDS)
        new = (storage / "state" / "taskHistory.json").read_bytes()
        assert new == old or new.startswith(old[:-1])
        assert json.loads(new)[:len(listed)] == json.loads(old)
        after = tree(root)
        assert restore("--app", "cline", "--source", storage, "--yes").exit_code == 0 and tree(root) == after


def test_doctor_names_the_restore_when_tasks_are_on_disk_but_not_listed(tmp_path):
    from tests.helpers import run_cli

    config = Path(os.environ["XDG_CONFIG_HOME"])
    storage = data.cline_storage(config, IDS, listed=IDS[:1])
    store = tmp_path / "store"
    store.mkdir()
    result = run_cli("doctor", "--json", "--store", store)
    steps = json.dumps(result.json)
    assert f"levelsess restore --app cline --source {storage}" in steps, steps
    assert restore("--app", "cline", "--source", storage, "--yes").exit_code == 0
    again = json.dumps(run_cli("doctor", "--json", "--store", store).json)
    assert "restore --app cline" not in again


def test_an_entry_cline_hides_is_kept_as_it_is_and_named(tmp_path):
    storage = cline(tmp_path, IDS[:2])
    path = storage / "state" / "taskHistory.json"
    entries = json.loads(path.read_bytes())
    del entries[1]["task"]  # Cline's history shows only `item.ts && item.task`
    data.write(path, entries)
    old = path.read_bytes()
    result = restore("--app", "cline", "--source", storage, "--yes")
    assert result.exit_code == 4  # that task is still not shown: not clean
    assert any(f["code"] == "restore-refused" and IDS[1] in f["path"] for f in result.json["findings"])
    assert path.read_bytes().startswith(old[:-1] + b",") and set(cline_listed(storage)) == {IDS[0], IDS[2], IDS[3]}


def test_every_install_found_is_restored_without_source_and_a_failed_verify_undoes_the_whole_run(tmp_path, monkeypatch):
    from toolkit.findings import Finding
    from toolkit.restore import cline_list

    config = Path(os.environ["XDG_CONFIG_HOME"])
    clines = cline(config, IDS[:1])
    roo = data.roo_storage(config, ["r1", "r2"], items=["r1"])
    before = tree(config)
    real = cline_list.verify
    monkeypatch.setattr(cline_list, "verify", lambda plan: [Finding("restore-verify-failed", "error", "x", None, None, "read back wrong")])
    failed = restore("--app", "cline", "--yes")
    assert (failed.exit_code, failed.json["undone"]) == (8, True)
    assert tree(config) == before, "the rewritten list and every history_item.json made are taken back"
    monkeypatch.setattr(cline_list, "verify", real)  # (monkeypatch.undo would take the isolated HOME back too)
    result = restore("--app", "cline", "--yes")
    assert result.exit_code == 0, result.stdout
    assert {p["folder"] for p in result.json["installs"]} == {str(clines), str(roo)}
    assert set(cline_listed(clines)) == set(IDS) and set(roo_listed(roo)) == {"r1", "r2"}
