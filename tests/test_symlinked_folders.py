"""A symlinked folder inside a store is never written through (issue 28): a project folder, a
Logician session folder, ``.levelsess`` and what is under it.  A check reports it
(``symlinked-folder``, a warning); every writing verb refuses what would go through it, writes
nothing in the link's target, says why and what to do, and exits 4.  The store root itself, and
whatever lies above it, may be a symlink.  Claude Code and Codex trees: tests/layouts/test_symlinked_trees.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import (PROJECT_SLUG, encode, logician_session, make_store, run_cli, session_records, snapshot,
                           torn_store, write_journal)
from toolkit import durable
from toolkit.errors import SymlinkedFolderError
from toolkit.fsck import check_folders, plan_repair
from toolkit.stores import discover_all

HINT = "replace the symlink with the folder it points to"
EXAMPLES = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def link_out(folder: Path, outside: Path) -> Path:
    """Move ``folder`` to ``outside`` and leave a symlink to it in its place; return ``outside``."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        shutil.move(str(folder), str(outside))
    else:
        outside.mkdir()
    os.symlink(outside, folder, target_is_directory=True)
    return outside


def findings(result, code: str = "symlinked-folder") -> list[dict]:
    return [f for f in result.json["findings"] if f["code"] == code]


def refused(result) -> list[dict]:
    """The symlinked-folder findings that refused a write (errors), each saying what to do."""
    found = [f for f in findings(result) if f["severity"] == "error"]
    for finding in found:
        assert "symlink" in finding["message"] and ("replace the symlink" in finding["message"]), finding
    return found


# --- durable: the check every writer makes ------------------------------------------------------------


def _tree(base: Path, depth: int) -> tuple[Path, list[Path]]:
    """``base/root/d0/d1/…`` holding a journal, a torn journal and a file in the deepest folder."""
    root = base / "root"
    chain = [root]
    for n in range(depth):
        chain.append(chain[-1] / f"d{n}")
    chain[-1].mkdir(parents=True)
    (chain[-1] / "j.jsonl").write_bytes(b'{"a":1}\n')
    (chain[-1] / "u.jsonl").write_bytes(b'{"a":1}')
    (chain[-1] / "t.jsonl").write_bytes(b'{"a":1}\n{"b"')
    return root, chain[1:]


WRITES = {
    "ensure_dir": lambda d, o: durable.ensure_dir(d / "new" / "deeper"),
    "append_lines": lambda d, o: durable.append_lines(d / "j.jsonl", [b'{"c":3}']),
    "append_newline": lambda d, o: durable.append_newline(d / "u.jsonl", 7),
    "atomic_write": lambda d, o: durable.atomic_write(d / "index.json", b"[]\n"),
    "write_new": lambda d, o: durable.write_new(d / "saved.tail", b"x"),
    "truncate_saving": lambda d, o: durable.truncate_saving(d / "t.jsonl", 8, 12, o / "recovered"),
    "truncate_saving into it": lambda d, o: durable.truncate_saving(o / "t.jsonl", 8, 12, d / "recovered"),
    "create_exclusive": lambda d, o: durable.create_exclusive(d / "j.jsonl.lock", b"{}"),
    "remove": lambda d, o: durable.remove(d / "j.jsonl"),
    "preserve": lambda d, o: durable.preserve(o / "t.jsonl", d / "kept"),
    "move": lambda d, o: durable.move(d / "j.jsonl", o / "moved"),
}


@EXAMPLES
@given(depth=st.integers(1, 4), data=st.data(), write=st.sampled_from(sorted(WRITES)))
def test_every_durable_writer_refuses_a_path_through_a_symlinked_folder_below_the_root(depth, data, write):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, chain = _tree(base, depth)
        at = data.draw(st.integers(0, depth - 1), label="which folder is the symlink")
        target = link_out(chain[at], base / "elsewhere")
        spare = root / "spare"  # a real folder in the store, for the writes that have two ends
        spare.mkdir()
        (spare / "t.jsonl").write_bytes(b'{"a":1}\n{"b"')
        before, before_spare = snapshot(target), snapshot(spare)
        with durable.confined(durable.Confinement.of([root])), pytest.raises(SymlinkedFolderError) as caught:
            WRITES[write](chain[-1], spare)
        assert caught.value.link == str(chain[at]) and caught.value.target == os.path.realpath(target)
        assert f"run levelsess on {os.path.realpath(target)} directly" in caught.value.hint
        assert snapshot(target) == before, "nothing written in the link's target"
        assert snapshot(spare) == before_spare, "nor anything saved before the refusal"


@EXAMPLES
@given(depth=st.integers(1, 3), write=st.sampled_from(sorted(WRITES)), above=st.booleans())
def test_a_symlinked_root_or_a_link_above_it_is_followed(depth, write, above):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        real_root, chain = _tree(base / "real", depth)
        if above:  # /tmp -> /private/tmp on macOS: the whole store lies under a link
            os.symlink(base / "real", base / "via", target_is_directory=True)
            root = base / "via" / "root"
        else:  # ~/.levelcode/sessions -> /data/sessions
            os.symlink(real_root, base / "root-link", target_is_directory=True)
            root = base / "root-link"
        deepest = root.joinpath(*chain[-1].relative_to(real_root).parts)
        spare = root / "spare"
        spare.mkdir()
        (spare / "t.jsonl").write_bytes(b'{"a":1}\n{"b"')
        with durable.confined(durable.Confinement.of([root])):
            WRITES[write](deepest, spare)  # no error: only folders below the root count


def test_symlinked_folder_looks_only_below_the_root(tmp_path):
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    link_out(root / "a", tmp_path / "elsewhere")
    assert durable.symlinked_folder(root, root / "a" / "b" / "x") == root / "a"
    assert durable.symlinked_folder(root / "a", root / "a" / "b") is None  # a root may be a link
    assert durable.symlinked_folder(root, tmp_path / "other" / "a") is None  # not below the root
    assert durable.symlinked_folder(root, root / "missing" / "a") is None  # created real by levelsess
    assert durable.symlinked_folder(root, root) is None


# --- fsck: check reports, repair refuses ----------------------------------------------------------------


def _unterminated(tmp_path: Path) -> Path:
    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    journal.write_bytes(journal.read_bytes()[:-1])
    return store


def _spliced(tmp_path: Path) -> Path:
    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    lines = encode(session_records()).splitlines(keepends=True)
    journal.write_bytes(lines[0] + lines[1].rstrip(b"\n") + lines[2] + b"".join(lines[3:]))
    return store


def _index_missing(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store", sessions=2)


def _stale_lock(tmp_path: Path) -> Path:
    store = make_store(tmp_path / "store", sessions=1)
    run_cli("reindex", store)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    journal.with_name(journal.name + ".lock").write_bytes(orjson.dumps(
        {"pid": 2**22 - 3, "host": os.uname().nodename, "startedAt": 1.0, "acquiredAt": 1.0}))
    return store


REPAIRS = {  # the step a repair would take, the store that needs it, and the fsck arguments
    "trim-tail": (lambda p: torn_store(p)[0], ("--repair",)),
    "terminate-tail": (_unterminated, ("--repair",)),
    "rebuild-cache": (_index_missing, ("--repair",)),
    "remove-lock": (_stale_lock, ("--repair",)),
    "salvage": (_spliced, ("--salvage", "--yes")),
}


@pytest.mark.parametrize("step", sorted(REPAIRS))
def test_a_symlinked_project_folder_is_reported_and_no_repair_writes_through_it(tmp_path, step):
    build, args = REPAIRS[step]
    store = build(tmp_path)
    target = link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    before, before_state = snapshot(target), snapshot(store)
    check = run_cli("fsck", "--json", store)
    (warning,) = findings(check)
    assert warning["severity"] == "warning" and warning["path"] == str(store / PROJECT_SLUG)
    assert str(target) in warning["message"] and f"run levelsess on {target} directly" in warning["message"]
    result = run_cli("fsck", "--json", *args, store)
    assert result.exit_code == 4, result.stdout
    assert snapshot(target) == before, "the link's target is byte for byte as it was"
    assert snapshot(store) == before_state, "nothing saved in .levelsess for a repair that did not happen"
    assert any(f"not repaired ({step})" in f["message"] for f in refused(result)), result.stdout
    assert not any(f["repaired"] for f in result.json["findings"])
    human = run_cli("fsck", *args, store)
    assert "were refused" in human.stderr and "symlink" in human.stderr  # the "next:" line says what happened


def test_running_on_the_links_target_repairs_it(tmp_path):
    store, journal = torn_store(tmp_path)
    target = link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    assert run_cli("fsck", "--repair", store).exit_code == 4
    assert "would be refused" in run_cli("fsck", store).stderr
    fixed = run_cli("fsck", "--repair", "--json", target)
    assert fixed.exit_code == 1 and not findings(fixed)
    (torn,) = findings(fixed, "torn-tail")
    assert torn["repaired"] and Path(torn["saved_to"]).is_file()


def test_a_clean_store_with_a_symlinked_project_checks_clean_with_a_warning(tmp_path):
    store = make_store(tmp_path / "store")
    assert run_cli("reindex", store).exit_code == 0
    link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    check = run_cli("fsck", "--json", store)
    assert check.exit_code == 0 and [f["severity"] for f in findings(check)] == ["warning"]
    assert run_cli("fsck", "--repair", "--json", store).exit_code == 0, "nothing to write, nothing refused"


def test_a_folder_replaced_by_a_symlink_after_the_check_is_refused_at_the_write(tmp_path):
    store, journal = torn_store(tmp_path)
    plan = plan_repair(check_folders(discover_all([store])))
    assert {a.kind for a in plan.actions} == {"trim-tail", "rebuild-cache"}
    target = link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    before, before_store = snapshot(target), snapshot(store)
    result = plan.execute()
    assert snapshot(target) == before and snapshot(store) == before_store
    assert result.exit_code == 4 and not result.done
    assert {f.path for f in result.findings if f.code == "symlinked-folder"} == {str(journal), str(store / PROJECT_SLUG)}


def test_saved_to_is_where_the_bytes_are_when_the_store_root_is_a_symlink(tmp_path):
    real, journal = torn_store(tmp_path / "disk")
    store = tmp_path / "sessions"
    os.symlink(real, store, target_is_directory=True)  # ~/.levelcode/sessions -> /data/sessions
    tail = journal.read_bytes()[journal.read_bytes().rindex(b"\n") + 1:]
    result = run_cli("fsck", "--repair", "--json", store)
    assert result.exit_code == 1, result.stdout
    (torn,) = findings(result, "torn-tail")
    saved = Path(torn["saved_to"])
    assert saved == saved.resolve() and str(saved).startswith(str(real.resolve())), "the real path, not the link's"
    assert saved.read_bytes() == tail


@EXAMPLES
@given(where=st.sampled_from(["sessions", "sessions/s1"]), verb=st.sampled_from(["fsck --repair", "reindex"]),
       torn=st.booleans())
def test_a_symlinked_logician_session_folder_is_never_repaired_through(where, verb, torn):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        session = logician_session(base / "ws")  # no meta.json yet: a repair or reindex would write one
        if torn:
            with open(session / "messages.jsonl", "ab") as handle:
                handle.write(b'{"id":"e3","par')
        store = base / "ws" / ".logician" / "sessions"
        target = link_out(store / where, base / "elsewhere")
        before, before_store = snapshot(target), snapshot(base / "ws")
        result = run_cli(*verb.split(), "--json", base / "ws")
        assert result.exit_code == 4, result.stdout
        assert snapshot(target) == before and snapshot(base / "ws") == before_store
        assert refused(result) if verb != "reindex" else [f for f in result.json["findings"] if f["code"] == "symlinked-folder"]


# --- .levelsess and what is under it --------------------------------------------------------------------

STATE = {  # which state folder a step saves into, and the folders on the way that may be the link
    "trim-tail": [".levelsess", ".levelsess/recovered", f".levelsess/recovered/{PROJECT_SLUG}"],
    "salvage": [".levelsess", ".levelsess/quarantine"],
    "migrate": [".levelsess", ".levelsess/backup"],
    "replace-meta": [".levelsess", ".levelsess/replaced", ".levelsess/replaced/s1"],
}


def _state_store(base: Path, step: str) -> tuple[Path, Path, list[str]]:
    """A store whose repair (or migration) of ``step`` saves bytes under .levelsess; returns
    (store, the journal or cache it would change, the fsck/migrate arguments)."""
    if step == "trim-tail":
        store, journal = torn_store(base)
        return store, journal, ["fsck", "--repair"]
    if step == "salvage":
        store = _spliced(base)
        return store, next((store / PROJECT_SLUG).glob("*.jsonl")), ["fsck", "--salvage", "--yes"]
    if step == "migrate":
        store = make_store(base / "store", sessions=1, v=1)
        return store, next((store / PROJECT_SLUG).glob("*.jsonl")), ["migrate"]
    workspace = base / "ws"
    session = logician_session(workspace)
    (session / "meta.json").write_bytes(b'{"formatVersion":1,"name":"only copy of the name","entryCo')
    return workspace / ".logician" / "sessions", session / "meta.json", ["fsck", "--repair"]


@pytest.mark.parametrize("step", sorted(STATE))
@EXAMPLES
@given(data=st.data())
def test_a_symlinked_state_folder_gets_nothing_and_the_step_is_refused(step, data):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        store, changed, args = _state_store(base, step)
        where = data.draw(st.sampled_from(STATE[step]), label="the symlinked folder")
        link = store / where
        (link.parent).mkdir(parents=True, exist_ok=True)
        target = link_out(link, base / "elsewhere")
        (target / "unrelated").write_bytes(b"the user's own file")
        before, original = snapshot(target), changed.read_bytes()
        check = run_cli("fsck", "--json", store)
        assert str(link) in {f["path"] for f in findings(check)}, check.stdout
        result = run_cli(*args, "--json", store)
        assert result.exit_code & 4, result.stdout
        assert snapshot(target) == before, "nothing written in the link's target"
        assert changed.read_bytes() == original, "the journal (or meta.json) is as it was"
        errors = [f for f in result.json["findings"] if f["code"] == "symlinked-folder" and f["severity"] == "error"]
        assert errors and all(str(link) in f["message"] and "replace the symlink with a real folder" in f["message"]
                              for f in errors), result.stdout


# --- the other writing verbs ----------------------------------------------------------------------------


def test_migrate_refuses_a_symlinked_project_folder_and_migrates_the_others(tmp_path):
    store = make_store(tmp_path / "store", v=1)
    journals = {str(j) for j in (store / PROJECT_SLUG).glob("*.jsonl")}
    other = write_journal(store / "-other" / "2026-11-30T10-00-00-zz01.jsonl", session_records("2026-11-30T10-00-00-zz01", v=1))
    target = link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    before = snapshot(target)
    dry = run_cli("migrate", "--dry-run", "--json", store)
    assert dry.exit_code == 4 and any(f["code"] == "symlinked-folder" for f in dry.json["findings"])
    result = run_cli("migrate", "--json", store)
    assert result.exit_code == 4, result.stdout
    assert snapshot(target) == before
    refusals = [f for f in result.json["findings"] if f["code"] == "symlinked-folder"]
    assert journals <= {f["path"] for f in refusals} <= journals | {str(store / PROJECT_SLUG)}
    assert all(HINT in f["message"] and f"run levelsess on {target} directly" in f["message"] for f in refusals)
    assert orjson.loads(other.read_bytes().split(b"\n")[0])["v"] == 2, "the real project folder is migrated"


def test_reindex_refuses_a_symlinked_project_or_logician_session_folder(tmp_path):
    store = make_store(tmp_path / "store")
    target = link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    workspace = tmp_path / "ws"
    session = logician_session(workspace)
    session_target = link_out(session, tmp_path / "elsewhere-session")
    before = snapshot(target), snapshot(session_target)
    for where in (store, workspace):
        result = run_cli("reindex", "--json", where)
        assert result.exit_code == 4, result.stdout
        (finding,) = [f for f in result.json["findings"] if f["code"] == "symlinked-folder"]
        assert finding["severity"] == "error" and HINT in finding["message"]
    assert (snapshot(target), snapshot(session_target)) == before
    assert not (target / "index.json").exists() and not (session_target / "meta.json").exists()


def test_import_refuses_a_symlinked_project_folder_in_the_store(tmp_path):
    source = tmp_path / ".claude" / "projects" / "-p" / "00000000-0000-4000-8000-0000000000cd.jsonl"
    source.parent.mkdir(parents=True)
    record = {"parentUuid": None, "isSidechain": False, "type": "user", "uuid": "u1", "sessionId": source.stem, "cwd": "/p",
              "timestamp": "2026-12-01T00:00:00.000Z", "message": {"role": "user", "content": "hi"}}
    source.write_bytes(json.dumps(record).encode() + b"\n")
    store = tmp_path / "store"
    store.mkdir()
    target = link_out(store / "-p", tmp_path / "elsewhere")  # slug("/p")
    before = snapshot(target)
    args = ("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", store, "--json")
    for extra in (("--dry-run",), ()):
        result = run_cli(*args, *extra)
        assert result.exit_code == 4, result.stdout
        assert [s["status"] for s in result.json["sessions"]] == ["skipped"]
        (finding,) = [f for f in result.json["findings"] if f["code"] == "symlinked-folder"]
        assert finding["severity"] == "error" and f"run levelsess on {target} directly" in finding["message"]
    assert snapshot(target) == before
    os.unlink(store / "-p")  # the link replaced by a real folder: the import goes through
    assert run_cli(*args).exit_code == 0 and list((store / "-p").glob("*.jsonl"))


def test_import_never_saves_a_torn_tail_into_a_symlinked_recovered_folder(tmp_path):
    source = tmp_path / ".claude" / "projects" / "-p" / "00000000-0000-4000-8000-0000000000cd.jsonl"
    source.parent.mkdir(parents=True)
    base = {"isSidechain": False, "sessionId": source.stem, "cwd": "/p", "timestamp": "2026-12-01T00:00:00.000Z"}
    first = {"parentUuid": None, **base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    source.write_bytes(json.dumps(first).encode() + b"\n")
    store = tmp_path / "store"
    args = ("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", store, "--json")
    assert run_cli(*args).exit_code == 0
    (journal,) = (store / "-p").glob("*.jsonl")
    with open(journal, "ab") as handle:
        handle.write(b'{"kind":"user","t":"x","conte')  # an import killed mid-append
    second = {"parentUuid": "u1", **base, "type": "user", "uuid": "u2", "message": {"role": "user", "content": "more"}}
    source.write_bytes(source.read_bytes() + json.dumps(second).encode() + b"\n")
    (store / ".levelsess").mkdir(exist_ok=True)
    target = link_out(store / ".levelsess" / "recovered", tmp_path / "elsewhere")
    before, original = snapshot(target), journal.read_bytes()
    result = run_cli(*args)
    assert result.exit_code == 4, result.stdout
    assert snapshot(target) == before and journal.read_bytes() == original
    (finding,) = [f for f in result.json["findings"] if f["code"] == "symlinked-folder"]
    assert finding["path"] == str(journal) and "replace the symlink with a real folder" in finding["message"]
    assert not journal.with_name(journal.name + ".lock").exists()


def test_an_import_saves_a_torn_tail_and_names_its_real_path_through_a_symlinked_store_root(tmp_path):
    source = tmp_path / ".claude" / "projects" / "-p" / "00000000-0000-4000-8000-0000000000cd.jsonl"
    source.parent.mkdir(parents=True)
    first = {"parentUuid": None, "isSidechain": False, "type": "user", "uuid": "u1", "sessionId": source.stem, "cwd": "/p",
             "timestamp": "2026-12-01T00:00:00.000Z", "message": {"role": "user", "content": "hi"}}
    source.write_bytes(json.dumps(first).encode() + b"\n")
    real = tmp_path / "disk" / "sessions"
    real.mkdir(parents=True)
    store = tmp_path / "sessions"
    os.symlink(real, store, target_is_directory=True)  # the root may be a link: followed
    args = ("import", "--from", "claude", "--source", tmp_path / ".claude", "--store", store, "--json")
    assert run_cli(*args).exit_code == 0
    (journal,) = (store / "-p").glob("*.jsonl")
    with open(journal, "ab") as handle:
        handle.write(b'{"kind":"user","t":"x","conte')
    source.write_bytes(source.read_bytes() + json.dumps({**first, "uuid": "u2", "parentUuid": "u1"}).encode() + b"\n")
    result = run_cli(*args)
    assert result.exit_code == 0, result.stdout
    (torn,) = findings(result, "torn-tail")
    saved = Path(torn["saved_to"])
    assert torn["repaired"] and saved == saved.resolve() and saved.read_bytes() == b'{"kind":"user","t":"x","conte'
    assert str(saved).startswith(str(real.resolve()))


def test_trash_refuses_a_session_in_a_symlinked_folder(tmp_path):
    store = make_store(tmp_path / "store", sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    target = link_out(store / PROJECT_SLUG, tmp_path / "elsewhere")
    before = snapshot(target)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "toolkit.cli", "trash", journal.stem, "--json", "--store", str(store)],
                          capture_output=True, env=env, check=False)  # a real process: send2trash reads HOME at import
    assert proc.returncode == 4, proc.stderr
    (session,) = json.loads(proc.stdout)["sessions"]
    assert session["status"] == "refused" and HINT in session["reason"] and str(target) in session["reason"]
    assert snapshot(target) == before
    assert not (home / ".local" / "share" / "Trash").exists()


def test_locks_break_stale_never_removes_a_lock_through_a_symlinked_project_folder(tmp_path):
    """A stale lock in a project folder that is a symlink stays (its target is not the store's);
    the listing says why; the same lock in a real folder is removed."""
    from toolkit.locks import lock_path

    store = make_store(tmp_path / "store")
    [linked] = [p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")]
    real = store / "-home-bob-real"
    shutil.copytree(linked, real)
    link_out(linked, tmp_path / "elsewhere" / linked.name)
    stale = {"pid": 2**22 - 3, "host": os.uname().nodename, "startedAt": 1.0, "acquiredAt": 1.0}
    locks = [lock_path(next(folder.glob("*.jsonl"))) for folder in (linked, real)]
    for lock in locks:
        lock.write_bytes(json.dumps(stale).encode())
    target = tmp_path / "elsewhere" / linked.name / locks[0].name
    before = target.read_bytes()
    result = run_cli("locks", "--break-stale", "--json", "--store", store)
    rows = {row["path"]: row for row in result.json["locks"]}
    assert target.read_bytes() == before, "nothing removed in the link's target"
    assert not rows[str(locks[0])]["removed"] and "symlink" in rows[str(locks[0])]["why"]
    assert rows[str(locks[1])]["removed"] and not locks[1].exists()
