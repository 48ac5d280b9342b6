"""The machine's limits on real file systems: a full tmpfs, a read-only mount, a name too long.

Each error is typed (exit 8, one line saying what happened and what to do), nothing half-made is
left (no empty folder, no 0-byte saved file, no temp file a rerun would not tidy), and a rerun
after freeing space finishes the job.  The full disks are real tmpfs mounts (root only).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG, encode, make_store, run_cli, session_records, snapshot, torn_store
from toolkit import durable
from toolkit.errors import (DiskFullError, FileTooLargeError, NameTooLongError, OperationalError, QuotaExceededError,
                            ReadOnlyError)
from toolkit.importers.output import fit_id

PAGE = 4096
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tmpfs(tmp_path):
    """``tmpfs(kb)`` mounts a tmpfs of ``kb`` KiB and returns its folder; unmounted at teardown."""
    mounted: list[Path] = []

    def mount(kb: int, name: str = "disk") -> Path:
        target = tmp_path / name
        target.mkdir()
        if not sys.platform.startswith("linux") or shutil.which("mount") is None:
            pytest.skip("a real full disk needs Linux's mount -t tmpfs")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kb}k", "tmpfs", str(target)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"mounting a tmpfs is not permitted here (needs root): {done.stderr.decode().strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], check=False)


def fill(disk: Path, leave_pages: int = 0) -> Path:
    """Fill ``disk`` to the last page, then free ``leave_pages`` pages; returns the filler file."""
    filler = disk / "filler"
    size = 0
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                size += handle.write(b"\0" * PAGE)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(filler, max(0, size - leave_pages * PAGE))
    return filler


def leftovers(root: Path) -> list[str]:
    """Empty folders, 0-byte saved tails and levelsess temp files anywhere under ``root``."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if not dirnames and not filenames and Path(dirpath) != root:
            found.append(f"empty folder {dirpath}")
        for name in filenames:
            path = Path(dirpath) / name
            if durable.temp_owner(name) is not None:
                found.append(f"temp file {path}")
            elif name.endswith(".tail") and path.stat().st_size == 0:
                found.append(f"0-byte saved tail {path}")
    return found


def contents(root: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None) under ``root``: what a failed write must not change."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


# --- import ------------------------------------------------------------------------------------


def vscode_user(root: Path, sessions: dict[str, tuple[str, list[str]]]) -> Path:
    """A VS Code ``User`` folder: for each workspace name, (sessionId, user texts) in one chat file."""
    from tests.importers.vscode_tree import entry, session, workspace, write_index

    user = root / "User"
    for name, (sid, texts) in sessions.items():
        project = root / f"proj-{name}"
        project.mkdir(parents=True)
        folder = workspace(user, f"ws-{name}", {"folder": project.as_uri()})
        (folder / "chatSessions" / f"{name}.json").write_text(json.dumps(session(sid, texts)))
        write_index(folder / "state.vscdb", {sid: entry(sid)})
    return user


def journals(store: Path) -> dict[str, list[dict]]:
    return {p.stem: [json.loads(line) for line in p.read_bytes().splitlines()] for p in sorted(store.glob("*/*.jsonl"))}


def test_import_onto_a_full_disk_stops_with_one_line_and_a_rerun_finishes(tmp_path, tmpfs):
    user = vscode_user(tmp_path / "src", {"a": ("s-a", ["a small chat"]), "b": ("s-b", ["x" * 200_000])})
    disk = tmpfs(2048)
    store = disk / "store"
    filler = fill(disk, leave_pages=16)  # room for the small chat, not for the big one
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", store)
    assert result.exit_code == 8, result.stdout + result.stderr
    line = one_error_line(result.stderr)
    assert "disk full" in line and f"free space on {disk}" in line
    assert leftovers(disk) == [], "no empty project folder, no temp file"
    assert set(journals(store)) == {"vscode-s-a"}, "the chat before the full disk is there; the big one not at all"
    for journal in store.glob("*/*.jsonl"):
        assert run_cli("fsck", "--strict", journal).exit_code == 0, "a session written before the full disk is whole"
    filler.unlink()
    again = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert again.exit_code == 0, again.stdout
    assert set(journals(store)) == {"vscode-s-a", "vscode-s-b"}
    assert run_cli("fsck", "--strict", store).exit_code == 0
    before = snapshot(store)
    assert run_cli("import", "--from", "vscode", "--source", user, "--store", store).exit_code == 0
    assert snapshot(store) == before, "a re-import with nothing new writes nothing"


def test_import_onto_a_read_only_file_system_is_one_typed_line(tmp_path, tmpfs):
    user = vscode_user(tmp_path / "src", {"a": ("s-a", ["hello"])})
    disk = tmpfs(256)
    (disk / "store").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", disk / "store")
    assert result.exit_code == 8
    line = one_error_line(result.stderr)
    assert "read-only file system" in line and f"{disk} is mounted read-only" in line
    assert list((disk / "store").iterdir()) == []


def test_a_session_too_large_for_the_machine_is_a_finding_and_the_sessions_after_it_import(tmp_path):
    """A limit one session alone meets (here `ulimit -f`, EFBIG) never stops the sessions after it."""
    user = vscode_user(tmp_path / "src", {"a": ("s-a", ["first"]), "b": ("s-b", ["x" * 200_000]), "z": ("s-z", ["last"])})
    store = tmp_path / "store"
    child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import resource, signal, sys
        from toolkit.cli import main
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
        sys.argv = ["levelsess", *sys.argv[1:]]
        main()
    """), "import", "--from", "vscode", "--source", str(user), "--store", str(store), "--json"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert child.returncode == 8 and "Traceback" not in child.stderr, child.stderr
    report = json.loads(child.stdout)
    (failed,) = [f for f in report["findings"] if f["code"] == "write-failed"]
    assert "vscode-s-b" in failed["path"] and "file too large" in failed["message"] and "ulimit -f" in failed["message"]
    statuses = {s["id"]: s["status"] for s in report["sessions"]}
    assert statuses == {"vscode-s-a": "created", "vscode-s-b": "skipped", "vscode-s-z": "created"}
    assert set(journals(store)) == {"vscode-s-a", "vscode-s-z"}
    assert leftovers(store) == [], "no empty project folder and no temp file for the session that failed"
    assert run_cli("fsck", "--strict", store).exit_code == 0
    again = run_cli("import", "--from", "vscode", "--source", user, "--store", store)
    assert again.exit_code == 0 and set(journals(store)) == {"vscode-s-a", "vscode-s-b", "vscode-s-z"}


def test_an_append_that_does_not_fit_leaves_the_journal_as_it_was(tmpfs):
    disk = tmpfs(256)
    journal = disk / "j.jsonl"
    journal.write_bytes(encode(session_records()))  # its last page has room for part of the append
    before = journal.read_bytes()
    assert len(before) % PAGE
    fill(disk)
    with pytest.raises(DiskFullError, match=f"free space on {disk}"):
        durable.append_lines(journal, [b'{"kind":"user","content":"' + b"x" * 3 * PAGE + b'"}'])
    assert journal.read_bytes() == before, "not torn: the part that fit was taken back"


# --- migrate, repair, salvage --------------------------------------------------------------------


def test_migrate_onto_a_full_disk_changes_nothing_and_a_rerun_finishes(tmpfs):
    disk = tmpfs(256)
    store = make_store(disk / "store", sessions=1, v=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    journal.write_bytes(encode(session_records(journal.stem, turns=80, v=1)))  # a few pages: they cannot be copied
    assert journal.stat().st_size > 3 * PAGE
    before = contents(store)
    filler = fill(disk, leave_pages=1)  # room for the session lock only
    result = run_cli("migrate", "--json", store)
    assert result.exit_code == 8, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    failed = [f for f in result.json["findings"] if f["code"] == "repair-failed"]
    assert failed and failed[0]["message"].startswith("disk full:") and f"free space on {disk}" in failed[0]["message"]
    assert contents(store) == before, "the journal is as it was, and no backup folder is left"
    assert leftovers(disk) == []
    filler.unlink()
    assert run_cli("migrate", store).exit_code == 0
    assert journals(store)[journal.stem][0]["v"] == 2
    assert leftovers(disk) == []


def test_repair_with_a_page_free_leaves_no_empty_saved_tail(tmp_path, tmpfs):
    disk = tmpfs(256)
    store, journal = torn_store(disk)
    before = contents(store)
    filler = fill(disk, leave_pages=1)  # the lock takes it; the saved tail does not fit
    result = run_cli("fsck", "--repair", "--json", store)
    assert result.exit_code & 8, result.stdout
    assert "Traceback" not in result.stderr
    failed = [f for f in result.json["findings"] if f["code"] == "repair-failed"]
    assert failed and "disk full" in failed[0]["message"]
    assert contents(store) == before, "journal untouched, no recovered/ folder, no 0-byte .tail"
    assert leftovers(disk) == []
    filler.unlink()
    assert run_cli("fsck", "--repair", store).exit_code == 1
    (saved,) = (store / ".levelsess" / "recovered").rglob("*.tail")
    assert saved.stat().st_size > 0


def test_repair_on_a_read_only_mount_is_a_typed_finding(tmpfs):
    disk = tmpfs(256)
    store, journal = torn_store(disk)
    before = snapshot(store)
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    result = run_cli("fsck", "--repair", "--json", store)
    assert result.exit_code & 8 and "Traceback" not in result.stderr
    failed = [f for f in result.json["findings"] if f["code"] == "repair-failed"]
    assert failed and "read-only file system" in failed[0]["message"] and "remount it read-write" in failed[0]["message"]
    assert snapshot(store) == before


def _damaged(store_root: Path, extra: int = 0) -> tuple[Path, Path, bytes]:
    """A store whose one journal has a spliced line and a NUL run (salvageable damage)."""
    store = make_store(store_root, sessions=1)
    journal = next((store / PROJECT_SLUG).glob("*.jsonl"))
    lines = encode(session_records(turns=3 + extra)).splitlines(keepends=True)
    data = lines[0] + lines[1].rstrip(b"\n") + lines[2] + b"\0" * 4096 + b"".join(lines[3:])
    journal.write_bytes(data)
    return store, journal, data


def test_salvage_on_a_full_disk_leaves_the_journal_and_no_quarantine(tmpfs):
    disk = tmpfs(256)
    store, journal, data = _damaged(disk / "store", extra=20)
    before = contents(store)
    filler = fill(disk, leave_pages=1)
    result = run_cli("fsck", "--salvage", "--yes", "--json", store)
    assert result.exit_code & 8, result.stdout
    assert "Traceback" not in result.stderr
    assert any(f["code"] == "repair-failed" and "disk full" in f["message"] for f in result.json["findings"])
    assert contents(store) == before, "journal untouched; no quarantine stamp folder, no .levelsess left"
    assert leftovers(disk) == []
    filler.unlink()
    assert run_cli("fsck", "--salvage", "--yes", store).exit_code & 1
    assert journal.read_bytes() != data and b"\0" not in journal.read_bytes()


# the child salvages, and stops for good at one of these moments, where the parent kills it
_PAUSE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from toolkit import durable
    from toolkit.cli import main
    from toolkit.fsck import salvage

    marker, moment = Path(sys.argv[1]), sys.argv[2]

    def stop():
        marker.write_text("ready")
        time.sleep(600)

    if moment == "mid-write":  # the new journal and the rejected bytes half written
        pieces = salvage._iter_salvage
        def slow(path, layout):
            for n, piece in enumerate(pieces(path, layout)):
                if n == 3:
                    stop()
                yield piece
        salvage._iter_salvage = slow
    else:  # everything written, the original kept: just before the journal is replaced
        keep = durable._keep
        def slow_keep(held, dst):
            keep(held, dst)
            stop()
        durable._keep = slow_keep
    sys.argv = ["levelsess", "fsck", "--salvage", "--yes", *sys.argv[3:]]
    main()
""")


@pytest.mark.parametrize("moment", ["mid-write", "before-replace"])
def test_salvage_killed_mid_write_leaves_nothing_a_rerun_does_not_tidy(tmp_path, moment):
    store, journal, data = _damaged(tmp_path / "store")
    marker = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c", _PAUSE, str(marker), moment, str(store)], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        for _ in range(6000):  # until the child stands at the moment (or dies)
            if marker.exists() or child.poll() is not None:
                break
            time.sleep(0.01)
        assert marker.exists(), f"the child never reached {moment} (exit {child.poll()})"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert journal.read_bytes() == data, "killed before the replace: the journal is as it was"
    temps = [name for name in leftovers(store) if name.startswith("temp file")]
    assert temps, "the kill left temp files behind (the test killed it mid-write)"
    result = run_cli("fsck", "--salvage", "--yes", "--json", store)
    assert result.exit_code & 1 and not result.exit_code & 8, result.stdout
    assert leftovers(store) == [], "the rerun tidied every temp file and every folder that held only those"
    stamps = sorted((store / ".levelsess" / "quarantine").iterdir())
    whole = [journal.name, f"{journal.name}.rejected", f"{journal.name}.rejected.map.json"]
    for stamp in stamps:  # mid-write: the killed run's copies are gone; before the replace they were whole already
        assert sorted(p.name for p in stamp.rglob("*") if p.is_file()) == whole
        assert (stamp / PROJECT_SLUG / journal.name).read_bytes() == data
    assert len(stamps) == (1 if moment == "mid-write" else 2)


# --- long ids ------------------------------------------------------------------------------------


def test_a_300_character_vscode_session_id_imports_and_the_sessions_after_it_too(tmp_path):
    long_id = "s" + "0123456789" * 30  # 301 characters, all of them safe
    user = vscode_user(tmp_path / "src", {"a": ("s-a", ["first"]), "m": (long_id, ["the long one"]), "z": ("s-z", ["last"])})
    store = tmp_path / "store"
    result = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    found = journals(store)
    assert {"vscode-s-a", "vscode-s-z"} <= set(found) and len(found) == 3
    (stem,) = set(found) - {"vscode-s-a", "vscode-s-z"}
    meta = found[stem][0]
    assert meta["id"] == stem and stem.startswith("vscode-s0123456789")
    assert len(f"{stem}.jsonl".encode()) <= 255 - 48
    assert meta["source"]["id"] == f"vscode-{long_id}", "the whole id stays in the meta"
    assert run_cli("fsck", "--strict", store).exit_code == 0
    before = snapshot(store)
    again = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert again.exit_code == 0 and {s["status"] for s in again.json["sessions"]} == {"unchanged"}
    assert snapshot(store) == before, "the re-import finds the same journal"


def test_a_journal_an_earlier_import_named_by_a_long_whole_id_is_still_found(tmp_path, monkeypatch):
    from toolkit.importers import output

    long_id = "s" + "0123456789" * 22  # 221 characters: a file name once, hashed now
    user = vscode_user(tmp_path / "src", {"m": (long_id, ["the long one"])})
    store = tmp_path / "store"
    with monkeypatch.context() as patch:
        patch.setattr(output, "fit_id", lambda session_id, limit: session_id)  # as levelsess named it before
        assert run_cli("import", "--from", "vscode", "--source", user, "--store", store).exit_code == 0
    assert set(journals(store)) == {f"vscode-{long_id}"}
    before = snapshot(store)
    again = run_cli("import", "--from", "vscode", "--source", user, "--store", store, "--json")
    assert again.exit_code == 0 and [s["status"] for s in again.json["sessions"]] == ["unchanged"]
    assert snapshot(store) == before, "no second journal under the hashed name"


def _cursor_user(root: Path, composers: list[str]) -> Path:
    """A Cursor ``User`` folder whose global DB holds a two-bubble conversation per composer id."""
    from tests.importers.cursor_db import new_db, put

    user = root / "User"
    conn = new_db(user / "globalStorage" / "state.vscdb")
    for n, cid in enumerate(composers):
        bubbles = [(f"b{n}-1", 1, f"question {n}"), (f"b{n}-2", 2, f"answer {n}")]
        put(conn, f"composerData:{cid}", {"_v": 10, "composerId": cid, "name": f"chat {n}", "createdAt": 1765808373121 + n,
                                          "fullConversationHeadersOnly": [{"bubbleId": b, "type": t} for b, t, _ in bubbles],
                                          "conversationMap": {}})
        for bid, kind, text in bubbles:
            put(conn, f"bubbleId:{cid}:{bid}", {"_v": 3, "type": kind, "bubbleId": bid, "text": text,
                                                 "createdAt": "2025-12-15T14:20:00.000Z"})
    conn.commit()
    conn.close()
    return user


def test_a_5000_character_cursor_composer_id_imports_and_the_sessions_after_it_too(tmp_path):
    long_id = "c" * 5000
    user = _cursor_user(tmp_path / "src", ["aaaa-first", long_id, "zzzz-last"])
    store = tmp_path / "store"
    result = run_cli("import", "--from", "cursor", "--source", user, "--store", store, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    found = journals(store)
    assert {"cursor-aaaa-first", "cursor-zzzz-last"} <= set(found) and len(found) == 3
    (stem,) = set(found) - {"cursor-aaaa-first", "cursor-zzzz-last"}
    texts = [r.get("content") for r in found[stem] if r["kind"] == "user"]
    assert texts == ["question 1"]
    source = found[stem][0]["source"]
    assert (source["key"], source["id"]) == (f"composerData:{long_id}", f"cursor-{long_id}"), "the whole id stays in the meta"
    assert all(len(p.name.encode()) <= 255 for p in store.rglob("*"))
    before = snapshot(store)
    assert run_cli("import", "--from", "cursor", "--source", user, "--store", store).exit_code == 0
    assert snapshot(store) == before, "the re-import finds the same journal"


_SAFE = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=6000)


@settings(max_examples=200, deadline=None)
@given(source=_SAFE, other=_SAFE, limit=st.sampled_from([143, 200, 255, 1024]))
def test_a_fitted_id_fits_is_stable_and_keeps_distinct_ids_apart(source, other, limit):
    session_id = f"vscode-{source}"
    fitted = fit_id(session_id, limit)
    assert len(f"{fitted}.jsonl".encode()) + 48 <= limit
    assert fit_id(session_id, limit) == fitted, "deterministic: a re-import finds the same file"
    if len(f"{session_id}.jsonl".encode()) + 48 <= limit:
        assert fitted == session_id, "an id that fits is left as it is"
    else:
        assert fitted.startswith(session_id[: min(40, len(fitted) - 34)])
    if other != source:
        assert fit_id(f"vscode-{other}", limit) != fitted


def test_a_name_too_long_and_a_file_too_large_are_typed_per_file(tmp_path):
    with pytest.raises(NameTooLongError, match="use a shorter path") as caught:
        durable.write_new(tmp_path / "new" / ("n" * 300), b"data")
    assert not caught.value.stops_run and list(tmp_path.iterdir()) == [], "the folder made for it is gone again"
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import resource, signal, sys
        from pathlib import Path
        from toolkit import durable
        from toolkit.errors import FileTooLargeError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
        try:
            durable.atomic_write(Path({str(tmp_path)!r}) / "big", b"x" * 100_000)
        except FileTooLargeError as exc:
            print(exc)
            sys.exit(0)
        sys.exit(1)
    """)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    assert "file too large" in child.stdout and "ulimit -f" in child.stdout
    assert list(tmp_path.iterdir()) == [], "no temp file is left"


@pytest.mark.parametrize("code, cls, stops", [(errno.ENOSPC, DiskFullError, True), (errno.EDQUOT, QuotaExceededError, True),
                                              (errno.EROFS, ReadOnlyError, True), (errno.ENAMETOOLONG, NameTooLongError, False),
                                              (errno.EFBIG, FileTooLargeError, False)])
def test_each_limit_is_an_operational_error_with_exit_8_and_a_next_step(tmp_path, code, cls, stops):
    error = durable.typed_error("write", tmp_path / "x", OSError(code, os.strerror(code)))
    assert type(error) is cls and isinstance(error, OperationalError)
    assert error.exit_code == 8 and error.stops_run is stops
    assert "\n" not in str(error) and "rerun" in str(error)


def test_an_incremental_check_tidies_its_cache_temps_a_killed_run_left(tmp_path):
    from toolkit.fsck.incremental import cache_dir, cache_file

    store = make_store(tmp_path / "store", sessions=1)
    assert run_cli("fsck", "--incremental", store).exit_code == 0
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    cache = cache_file(store / PROJECT_SLUG)
    temps = [cache_dir() / f".{cache.name}.{child.pid}.tmp", cache_dir() / f".{cache.stem}.states.json.{child.pid}.tmp"]
    for temp in temps:
        temp.write_bytes(b'{"format"')  # a run killed before its rename
    (store / PROJECT_SLUG / "extra.jsonl").write_bytes(encode(session_records("extra")))  # something to save
    assert run_cli("fsck", "--incremental", store).exit_code == 0
    assert not any(t.exists() for t in temps)
