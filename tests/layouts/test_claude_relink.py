"""`fsck --relink --yes` on Claude Code transcripts built from the real fixtures: a broken chain is
found with the figure an independent walk gives, relinked by splicing only the dangling values,
and the original is kept outside Claude Code's tree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run_cli, snapshot

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code" / "projects"

if not FIXTURES.is_dir():  # the real fixtures live in shared/, beside the checkout
    pytest.skip(f"{FIXTURES} is not here (the repository is not checked out beside shared/)", allow_module_level=True)
SESSION = "a572bd87-2e28-4d70-9b73-cd08231cacb6"  # 2.1.x, two compactions, three subagents
CHAIN = {"user", "assistant", "system", "progress", "attachment"}


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES, root / "projects")
    return root


def _session(root: Path) -> Path:
    return next((root / "projects").glob(f"*/{SESSION}.jsonl"))


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def independent_walk(path: Path) -> tuple[int, int, bool]:
    """(records resume reaches, main-chain records, broken?) by the rule in SOURCES-AGENTS §1.8,
    written here from the text, not from levelsess."""
    chain = [r for r in _records(path) if r.get("type") in CHAIN and isinstance(r.get("uuid"), str)]
    by_uuid = {r["uuid"]: r for r in chain}
    main = [r for r in chain if r.get("isSidechain") is not True]
    record, seen, broken = main[-1], set(), False
    while record is not None and record["uuid"] not in seen:
        seen.add(record["uuid"])
        parent = record.get("parentUuid")
        if parent is None and record.get("subtype") == "compact_boundary":
            parent = record.get("logicalParentUuid")
            record = by_uuid.get(parent) if parent else None
            continue
        if parent is None:
            break
        if parent not in by_uuid:
            broken = record is not chain[0]
            break
        record = by_uuid[parent]
    else:
        broken = record is not None  # a cycle
    reached = sum(1 for r in main if r["uuid"] in seen)
    return reached, len(main), broken


def _drop_lines(path: Path, numbers: set[int]) -> None:
    lines = path.read_bytes().split(b"\n")[:-1]
    path.write_bytes(b"".join(line + b"\n" for i, line in enumerate(lines, 1) if i not in numbers))


def _main_lines(path: Path) -> list[int]:
    return [i for i, r in enumerate(_records(path), 1)
            if r.get("type") in ("user", "assistant") and r.get("isSidechain") is not True and i > 2]


def test_a_missing_parent_is_a_broken_chain_with_the_figure_of_an_independent_walk(tmp_path):
    root = _tree(tmp_path)
    session = _session(root)
    _drop_lines(session, {_main_lines(session)[len(_main_lines(session)) // 2]})
    reached, total, broken = independent_walk(session)
    assert broken and reached < total
    found = run_cli("fsck", "--json", session).json["findings"]
    chain = [f for f in found if f["code"] == "broken-chain"]
    assert len(chain) == 1 and f"resume shows {reached:,} of {total:,} messages" in chain[0]["message"]
    dangling = [f for f in found if f["code"] == "dangling-parent"]
    assert len(dangling) == 1 and dangling[0]["line"] == chain[0]["line"]


def test_relink_splices_only_the_dangling_value_and_keeps_the_original_outside_the_tree(tmp_path, isolated_home):
    root = _tree(tmp_path)
    session = _session(root)
    _drop_lines(session, {_main_lines(session)[40]})
    before_bytes = session.read_bytes()
    before_tree = set(snapshot(root))
    result = run_cli("fsck", "--json", "--relink", "--yes", session)
    assert result.exit_code == 1, result.stdout
    assert set(snapshot(root)) == before_tree, "nothing new inside Claude Code's tree"
    after = session.read_bytes()
    old_lines, new_lines = before_bytes.split(b"\n"), after.split(b"\n")
    assert len(old_lines) == len(new_lines)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
    assert len(changed) == 1
    old, new = json.loads(old_lines[changed[0]]), json.loads(new_lines[changed[0]])
    assert old["parentUuid"] != new["parentUuid"] and {**old, "parentUuid": None} == {**new, "parentUuid": None}
    assert len(old_lines[changed[0]]) == len(new_lines[changed[0]])  # a uuid for a uuid: only that value moved
    # the new parent is the nearest earlier main-chain record
    earlier = [r for r in _records(session)[: changed[0]] if r.get("type") in CHAIN and r.get("isSidechain") is not True]
    assert new["parentUuid"] == earlier[-1]["uuid"]
    reached, total, broken = independent_walk(session)
    assert not broken and reached > 1
    quarantine = list((isolated_home / ".local" / "share" / "levelsess" / "claude-code").rglob(session.name))
    assert len(quarantine) == 1 and quarantine[0].read_bytes() == before_bytes
    relinked = json.loads(next(quarantine[0].parent.glob("*.relinked.json")).read_text())
    assert [r["line"] for r in relinked["relinked"]] == [changed[0] + 1]
    again = run_cli("fsck", "--json", "--relink", "--yes", session)
    assert again.exit_code == 0 and session.read_bytes() == after
    assert run_cli("fsck", "--json", root).exit_code == 0


def test_relink_dry_run_names_each_line_and_writes_nothing(tmp_path):
    root = _tree(tmp_path)
    session = _session(root)
    mains = _main_lines(session)
    _drop_lines(session, {mains[10], mains[60]})
    before = snapshot(tmp_path)
    result = run_cli("fsck", "--relink", "--dry-run", session)
    assert snapshot(tmp_path) == before
    assert "would relink" in result.stdout and result.stdout.count(" -> line ") == 2


def test_a_check_suggests_relink_and_following_it_ends_clean(tmp_path):
    root = _tree(tmp_path)
    session = _session(root)
    _drop_lines(session, {_main_lines(session)[5]})
    check = run_cli("fsck", root)
    assert check.exit_code == 4
    hint = next(line for line in check.stderr.splitlines() if "--relink --yes" in line)
    command = hint.split("`")[1].split()[1:]  # levelsess <args>
    assert run_cli(*command).exit_code == 1
    final = run_cli("fsck", root)
    assert final.exit_code == 0 and "--relink" not in final.stderr


def test_a_parent_cycle_is_refused_by_relink_and_left_as_is(tmp_path):
    root = _tree(tmp_path)
    session = _session(root)
    records = session.read_bytes().split(b"\n")
    parsed = [json.loads(line) if line else None for line in records]
    last = max(i for i, r in enumerate(parsed) if r and r.get("type") == "assistant" and not r.get("isSidechain"))
    # point an ancestor at the leaf: the walk goes round
    ancestor = next(i for i in range(last - 1, 0, -1) if parsed[i] and parsed[i].get("uuid") == parsed[last]["parentUuid"])
    records[ancestor] = records[ancestor].replace(json.dumps(parsed[ancestor]["parentUuid"]).encode(),
                                                  json.dumps(parsed[last]["uuid"]).encode(), 1)
    session.write_bytes(b"\n".join(records))
    before = session.read_bytes()
    found = run_cli("fsck", "--json", session).json["findings"]
    assert any(f["code"] == "broken-chain" and "cycle" in f["message"] for f in found)
    result = run_cli("fsck", "--json", "--relink", "--yes", session)
    assert result.exit_code == 4 and session.read_bytes() == before
    assert any(f["code"] == "relink-refused" and "cycle" in f["message"] for f in result.json["findings"])


def test_salvage_then_relink_in_one_run_mends_line_damage_and_the_chain(tmp_path):
    root = _tree(tmp_path)
    session = _session(root)
    mains = _main_lines(session)
    _drop_lines(session, {mains[30]})
    lines = session.read_bytes().split(b"\n")
    lines.insert(100, b"\0" * 400)  # an interrupted append, valid records after it
    session.write_bytes(b"\n".join(lines))
    result = run_cli("fsck", "--json", "--salvage", "--relink", "--yes", session)
    assert result.exit_code == 1, result.stdout
    assert run_cli("fsck", "--json", session).exit_code == 0
    assert not independent_walk(session)[2]


def test_relink_never_touches_a_journal_a_live_process_holds_open(tmp_path):
    root = _tree(tmp_path)
    session = _session(root)
    _drop_lines(session, {_main_lines(session)[12]})
    before = session.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", f"import time; f = open({str(session)!r}, 'ab'); print('ok', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"ok\n"
        result = run_cli("fsck", "--json", "--relink", "--yes", session)
        in_use = [f for f in result.json["findings"] if f["code"] == "in-use"]
        assert in_use and f"pid {holder.pid}" in in_use[0]["message"]
        assert result.exit_code == 4 and session.read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    assert run_cli("fsck", "--json", "--relink", "--yes", session).exit_code == 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_relink_changes_only_dangling_parents_whatever_records_are_lost(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("relink")
    project = tmp / "projects" / "-p"
    project.mkdir(parents=True)
    source = next(FIXTURES.glob("*/d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"))
    session = project / source.name
    shutil.copyfile(source, session)
    mains = _main_lines(session)
    lost = set(data.draw(st.lists(st.sampled_from(mains), min_size=1, max_size=4, unique=True)))
    _drop_lines(session, lost)
    before = _records(session)
    uuids = {r.get("uuid") for r in before}
    result = run_cli("fsck", "--json", "--relink", "--yes", session)
    assert result.exit_code in (0, 1), result.stdout
    after = _records(session)
    assert len(after) == len(before)
    for old, new in zip(before, after):
        if old.get("parentUuid") in uuids or old.get("parentUuid") is None or old is before[0]:
            assert old == new, "a record whose parent exists is never touched"
        else:
            assert {**old, "parentUuid": 0} == {**new, "parentUuid": 0} and new["parentUuid"] in uuids
    assert not independent_walk(session)[2]
    assert run_cli("fsck", "--json", session).exit_code == 0
