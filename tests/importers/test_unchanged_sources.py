"""A re-import of an unchanged source reads none of it, and says and writes exactly what a full
re-import would (issue 27, toolkit/importers/unchanged.py).

Two stores take every import of the same source side by side: one keeps its import cache, the
other has it removed before each run (a full read).  After every change to the source (a file
grown, cut, rewritten in place with its mtime put back, replaced, removed, added, only touched),
the two stores hold the same bytes and the two reports the same sessions, statuses and findings;
only an untouched source is served from the cache.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tests.helpers import run_cli
from tests.restore.kit import CLAUDE, CODEX

if CLAUDE is None:
    pytest.skip("shared/fixtures is not beside the checkout", allow_module_level=True)



def _store_bytes(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*.jsonl"))
            if p.is_file() and ".levelsess" not in p.parts}


def _import(app: str, source: Path, store: Path, *, cached: bool) -> dict:
    if not cached:
        from toolkit.importers.unchanged import cache_path
        from toolkit.importers.output import Options

        cache_path(store, app, source, Options(), False, False).unlink(missing_ok=True)
    result = run_cli("import", "--from", app, "--source", source, "--store", store, "--json")
    assert "Traceback" not in result.stderr
    return result.json


def _said(report: dict) -> list:
    return sorted((s["id"], s["status"], s["records"], s["new_records"], s["orphaned"], tuple(s["orphan"]))
                  for s in report["sessions"]), sorted((f["code"], f["path"], f["message"]) for f in report["findings"])


def _transcripts(source: Path) -> list[Path]:
    return sorted(p for p in source.rglob("*.jsonl") if p.is_file())


def _change(kind: str, path: Path, source: Path) -> None:
    data = path.read_bytes()
    info = os.stat(path)
    lines = data.splitlines(keepends=True)
    if kind == "grow":
        path.write_bytes(data + lines[-1])
    elif kind == "cut":
        path.write_bytes(b"".join(lines[: max(1, len(lines) // 2)]))
    elif kind == "rewrite-same-size-mtime-back":  # one byte changed inside a string, the mtime put back
        at = data.find(b'"type"') + 2  # (a file rewritten so before has none left: its first string's byte)
        if at < 2:
            at = data.index(b'"') + 1
        path.write_bytes(data[:at] + (b"T" if data[at:at + 1] == b"t" else b"t") + data[at + 1:])
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif kind == "replace":  # the same bytes in a new file (a sync tool, a restore from backup)
        path.unlink()
        path.write_bytes(data)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif kind == "remove":
        path.unlink()
    elif kind == "touch":
        os.utime(path)
    elif kind == "add":
        path.with_name("0bb1b6e8-0000-4000-8000-00000000abcd.jsonl").write_bytes(data)


KINDS = ["grow", "cut", "rewrite-same-size-mtime-back", "replace", "remove", "touch", "add", "none"]


def _small_claude(root: Path) -> Path:
    """The fixture's Claude Code projects but its two large ones (each example imports it a few times)."""
    shutil.copytree(CLAUDE, root, ignore=lambda folder, names: [n for n in names if n in (
        "-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo", "Z--03-NDV-Dftcor-Nmmoat")])
    return root


@settings(max_examples=15, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 10 ** 6)), min_size=1, max_size=3))
def test_a_cached_import_says_and_writes_what_a_full_one_does(tmp_path_factory, changes):
    tmp = tmp_path_factory.mktemp("unchanged")
    source = _small_claude(tmp / ".claude")
    cached, full = tmp / "cached", tmp / "full"
    assert _said(_import("claude", source, cached, cached=True)) == _said(_import("claude", source, full, cached=False))
    for kind, pick in changes:
        pick_is_read = False
        if kind != "none":
            files = _transcripts(source)
            chosen = files[pick % len(files)]
            pick_is_read = chosen.parent.name != "subagents" or chosen.name.startswith("agent-")
            _change(kind, chosen, source)
        a, b = _import("claude", source, cached, cached=True), _import("claude", source, full, cached=False)
        assert _said(a) == _said(b), kind
        assert _store_bytes(cached) == _store_bytes(full), kind
        assert b["from_cache"] == 0
        if kind == "none":
            assert a["from_cache"] > 0, "nothing changed: the units that met no finding are not read"
        elif kind in ("grow", "cut", "rewrite-same-size-mtime-back", "replace") and pick_is_read and any(
                chosen.stem in s["id"] for s in b["sessions"]):
            assert a["from_cache"] < len(a["sessions"]), kind  # the changed file's unit is read


def test_an_unchanged_codex_home_and_a_trash_in_between(tmp_path):
    source = tmp_path / ".codex"
    shutil.copytree(CODEX, source)
    store = tmp_path / "store"
    first = _import("codex", source, store, cached=True)
    settled = _import("codex", source, store, cached=True)  # what it says of the journals the first one wrote: kept
    assert {s["status"] for s in settled["sessions"]} == {"unchanged"}
    full = tmp_path / "full"
    _import("codex", source, full, cached=False)
    assert _said(settled) == _said(_import("codex", source, full, cached=False)), "as a full read says it"
    again = _import("codex", source, store, cached=True)
    assert again["from_cache"] == len(first["sessions"]) and again["read"] == 0
    assert _said(again) == _said(settled)
    victim = first["sessions"][0]
    assert run_cli("trash", victim["id"], "--store", store).exit_code == 0
    after = _import("codex", source, store, cached=True)
    assert after["from_cache"] == 0, "a trash changes the store: read again"
    assert [s["status"] for s in after["sessions"] if s["id"] == victim["id"]] == ["trashed"]
    assert _import("codex", source, store, cached=True)["from_cache"] == len(first["sessions"])


def test_a_project_folder_that_appears_is_seen_without_a_change_to_the_source(tmp_path):
    """Whether a session is orphaned depends on its project folder, not on its files.  The folder
    is one of this test's own: the sessions of a fixture's project say it is under ``tmp_path``
    (made here, the fixtures' own project at / was seen by every test running beside this one,
    whose reports then said "live" in one import and "not on this machine" in the next)."""
    source = tmp_path / ".claude"
    shutil.copytree(CLAUDE, source)
    probe = _import("claude", source, tmp_path / "probe", cached=False)
    project = next(s["project"] for s in probe["sessions"] if s["project"] and not os.path.isdir(s["project"])
                   and s["project"].startswith("/") and not s["project"].startswith("/proc"))
    here = tmp_path / "elsewhere" / "app"
    said, saying = json.dumps(project)[1:-1].encode(), json.dumps(str(here))[1:-1].encode()
    moved = 0
    for path in _transcripts(source):
        data = path.read_bytes()
        if said in data:
            path.chmod(0o644)
            path.write_bytes(data.replace(said, saying))
            moved += 1
    store = tmp_path / "store"
    first = _import("claude", source, store, cached=True)
    assert moved and str(here) in [s["project"] for s in first["sessions"]] and not here.exists()
    here.mkdir(parents=True)
    again = _import("claude", source, store, cached=True)
    assert again["from_cache"] < len(again["sessions"]), "the sessions of that project are read again"
    full = _import("claude", source, tmp_path / "full", cached=False)
    assert [s["orphan"] for s in again["sessions"]] == [s["orphan"] for s in full["sessions"]]
    assert [s["orphan"] for s in again["sessions"] if s["project"] == str(here)] != \
        [s["orphan"] for s in first["sessions"] if s["project"] == str(here)]  # (folder-missing, then live)


def test_a_gemini_session_is_read_again_when_what_names_its_project_changes(tmp_path):
    """A Gemini session's project comes from the folder's ``.project_root`` and ``projects.json``:
    a change to either is read again, as a full import would say it."""
    from tests.layouts.gemini import SLUG, every_kind, gemini_home, name

    home = gemini_home(tmp_path, {name(): every_kind(), name("5e55a0e1-0000-4000-8000-00000000beef"): every_kind(
        "5e55a0e1-0000-4000-8000-00000000beef")})
    store, full = tmp_path / "store", tmp_path / "full"
    first = _import("gemini", home, store, cached=True)
    _import("gemini", home, full, cached=False)
    again = _import("gemini", home, store, cached=True)
    assert again["from_cache"] == len(first["sessions"]) == 2 and again["read"] == 0
    (home / "tmp" / SLUG / ".project_root").write_text("/somewhere/else")
    moved = _import("gemini", home, store, cached=True)
    assert moved["from_cache"] == 0, "the marker names another project: every session of the folder is read"
    assert _said(moved) == _said(_import("gemini", home, full, cached=False))
    assert _store_bytes(store) == _store_bytes(full)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_among_the_transcripts_never_blocks_its_stamp(tmp_path):
    """A stamp opens the file without waiting for a writer: a FIFO named like a transcript has no
    stamp (read in full, where the reader says what it is), as a folder or a missing file has none."""
    import threading

    from toolkit.importers.unchanged import stamp

    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    found: list = []
    worker = threading.Thread(target=lambda: found.append(stamp(str(fifo))), daemon=True)
    worker.start()
    worker.join(60)
    assert found == [None]
    assert stamp(str(tmp_path)) is None and stamp(str(tmp_path / "gone.jsonl")) is None
    regular = tmp_path / "r.jsonl"
    regular.write_bytes(b"x" * 5000 + b"tail")
    a = stamp(str(regular))
    regular.write_bytes(b"x" * 5000 + b"tale")  # the same size, another last byte
    assert a[:2] == stamp(str(regular))[:2] and a[-1] != stamp(str(regular))[-1]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else -1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("cache", ["as it is", "holds nothing", "no such read", "part of a tail"])
def test_stamps_taken_together_are_each_files_own_stamp(tmp_path, monkeypatch, cache):
    """``stamp_all`` stamps a file whose last bytes the page cache holds at once, and asks the disk
    for the others' (a hint) before it reads them: either way each stamp is what ``stamp`` gives,
    over more files than it asks for at a time, empty, short and long files, a symlink, a FIFO, a
    folder and a missing path among them, whatever the cache holds or the system can read that
    way; and no file is left open, even when a stamp is interrupted."""
    import errno

    from toolkit.importers import unchanged

    monkeypatch.setattr(unchanged, "AHEAD", 7)
    paths = []
    for n in range(23):
        path = tmp_path / f"r{n}.jsonl"
        path.write_bytes(bytes([65 + n % 26]) * (0, 1, 4095, 4096, 4097, 9000)[n % 6])
        paths.append(str(path))
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "r3.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    paths[5:5] = [str(tmp_path / name) for name in ("link.jsonl", "fifo.jsonl", "folder.jsonl", "gone.jsonl")]
    expected = {path: unchanged.stamp(path) for path in paths}
    real_preadv = getattr(os, "preadv", None)

    def preadv(fd, buffers, offset, flags=0):
        if cache == "holds nothing":
            raise BlockingIOError(errno.EAGAIN, "not cached")
        if cache == "no such read":
            raise OSError(errno.EOPNOTSUPP, "not supported")
        return max(0, real_preadv(fd, buffers, offset, flags) - 1)  # (all but its last byte cached)

    if cache != "as it is" and real_preadv is not None:
        monkeypatch.setattr(os, "preadv", preadv)
    before = _open_fds()
    assert unchanged.stamp_all(paths) == expected
    assert _open_fds() == before
    assert unchanged.stamp_all([]) == {}

    real, calls = unchanged._stamp_open, []

    def interrupted(fd, hashed=None):
        calls.append(fd)
        if len(calls) == 3:
            os.close(fd)
            raise KeyboardInterrupt
        return real(fd, hashed)

    if cache == "holds nothing":  # (each file waits for its read: an interruption leaves the rest open)
        monkeypatch.setattr(unchanged, "_stamp_open", interrupted)
        with pytest.raises(KeyboardInterrupt):
            unchanged.stamp_all(paths)
        assert _open_fds() == before
