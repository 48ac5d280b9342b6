"""`levelsess restore` of kept Codex CLI rollouts, on copies of the real fixtures: a rollout that
is gone comes back byte-identical where it was (sessions/YYYY/MM/DD or archived_sessions), Codex's
own reading rules find the thread with every message; a second run changes nothing; undo puts
every byte back; a cut rollout gets only its missing bytes; a running tool is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.restore.kit import CODEX, copy_home, do_import, journal_records, last_state, restore, sha256, tree
from tests.restore.readers import codex_messages, codex_threads

if CODEX is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)

ROLLOUTS = sorted(str(p.relative_to(CODEX)) for p in CODEX.rglob("rollout-*.jsonl"))


def _kept(tmp_path: Path, rel: str) -> tuple[Path, Path, Path, bytes]:
    home = copy_home(CODEX, tmp_path / ".codex")
    store = tmp_path / "store"
    rollout = home / rel
    do_import("codex", rollout, store)
    return home, store, rollout, rollout.read_bytes()


@pytest.mark.parametrize("rel", ROLLOUTS, ids=lambda r: Path(r).parts[0] + "-" + r[-12:-6])
def test_a_lost_rollout_comes_back_byte_identical_and_undo_takes_it_back(tmp_path, rel):
    home, store, rollout, original = _kept(tmp_path, rel)
    thread = rollout.stem[-36:]
    messages = codex_messages(original)
    rollout.unlink()
    gone = tree(home)
    plan = restore(thread, "--store", store)
    step = plan.json["sessions"][0]["files"][0]
    assert plan.exit_code == 4 and (step["path"], step["action"], step["bytes"]) == (str(rollout), "create", len(original))
    assert tree(home) == gone
    done = restore(thread, "--store", store, "--yes")
    assert done.exit_code == 0, done.stdout
    assert rollout.read_bytes() == original
    journal = next(store.rglob(f"codex-{thread}.jsonl"))
    assert sha256(original) == last_state(journal)["sha256"]
    assert codex_threads(home)[thread] == rollout, "Codex finds the thread by its first session_meta"
    assert codex_messages(rollout.read_bytes()) == messages and messages
    assert run_cli("fsck", rollout).exit_code == 0
    assert done.json["sessions"][0]["next"] == f"codex resume {thread}"
    restored = tree(home)
    assert restore(thread, "--store", store, "--yes").json["stamp"] is None and tree(home) == restored
    assert run_cli("restore", "--undo", done.json["stamp"]).exit_code == 0
    assert tree(home) == gone


def test_a_cut_rollout_gets_only_its_missing_bytes(tmp_path):
    home, store, rollout, original = _kept(tmp_path, ROLLOUTS[-1])
    rollout.write_bytes(original[:12345])
    done = restore(rollout.stem[-36:], "--store", store, "--yes")
    step = done.json["sessions"][0]["files"][0]
    assert done.exit_code == 0 and (step["action"], step["existing"]) == ("append", 12345)
    assert rollout.read_bytes() == original


def test_a_rollout_codex_holds_open_is_refused(tmp_path):
    home, store, rollout, original = _kept(tmp_path, ROLLOUTS[0])
    rollout.write_bytes(original[:5000])
    before = tree(home)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'ab'); print('open', flush=True); "
                               "time.sleep(60)", str(rollout)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        result = restore(rollout.stem[-36:], "--store", store, "--yes")
        assert result.exit_code == 4 and [f["code"] for f in result.json["findings"]] == ["in-use"]
        assert tree(home) == before
    finally:
        holder.kill()
        holder.wait()


def test_a_rollout_imported_from_a_copy_goes_to_its_date_folder_under_to(tmp_path):
    copy = tmp_path / "copies"
    copy.mkdir()
    source = CODEX / ROLLOUTS[0]
    (copy / source.name).write_bytes(source.read_bytes())
    do_import("codex", copy / source.name, tmp_path / "store")
    fresh = tmp_path / "fresh" / ".codex"
    result = restore(source.stem[-36:], "--store", tmp_path / "store", "--to", fresh, "--yes")
    assert result.exit_code == 0, result.stdout
    year, month, day = source.name[len("rollout-"):len("rollout-") + 10].split("-")
    assert (fresh / "sessions" / year / month / day / source.name).read_bytes() == source.read_bytes()
    assert list(codex_threads(fresh)) == [source.stem[-36:]]
    assert journal_records(next((tmp_path / "store").rglob("*.jsonl")))[0]["source"]["app"] == "codex"
