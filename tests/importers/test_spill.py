"""The import's state kept out of memory (toolkit/importers/spill.py): a KnownKeys answers like
the dict it stands for, before and after its keys move to a temporary database, and that
database's file is deleted from the start; a full temporary folder is one line, not a traceback."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st

import pytest

from toolkit.importers import spill

_KEYS = st.text(alphabet="ab:#\udc80é", max_size=4)  # a lone surrogate is valid JSON, so a valid key
_OPS = st.lists(st.tuples(st.sampled_from(["set", "setdefault"]), _KEYS, st.one_of(st.none(), st.integers(0, 9))), max_size=40)


@pytest.fixture
def monkeypatch_limit(monkeypatch):
    """Set spill.KNOWN_IN_MEMORY for one example (hypothesis runs many in one test)."""
    return lambda limit: monkeypatch.setattr(spill, "KNOWN_IN_MEMORY", limit)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS, limit=st.integers(0, 5), probes=st.lists(_KEYS, max_size=10))
def test_known_keys_answer_like_a_dict_before_and_after_they_move_to_disk(monkeypatch_limit, ops, limit, probes):
    monkeypatch_limit(limit)
    known, model = spill.KnownKeys(), {}
    for op, key, seq in ops:
        if op == "set":
            known[key], model[key] = seq, seq
        else:
            known.setdefault(key, None)
            model.setdefault(key, None)
    assert len(known) == len(model)
    assert known.partials() == {key: seq for key, seq in model.items() if seq is not None}  # (a partial record's seq)
    for key in [*model, *probes, None]:
        assert (key in known) == (key in model)
        assert known.get(key, "absent") == model.get(key, "absent")
        if key in model:
            assert known[key] == model[key]
    known.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads the open files from /proc")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(added=st.lists(st.integers(-3, 2**64) | st.integers(0, 9), max_size=40), limit=st.integers(0, 5),
       probes=st.lists(st.integers(-3, 12) | st.none() | st.just(1.0) | st.just(True), max_size=10))
def test_offsets_answer_like_a_set_before_and_after_they_move_to_disk(monkeypatch_limit, added, limit, probes):
    """The source offsets a journal carries (restore's ``at``): ``in`` answers as a set's would,
    a bool or a float never being an offset (``at`` is typed int), nor one past 64 bits (no file's)."""
    monkeypatch_limit(limit)
    offsets, model = spill.Offsets(), set()
    half = len(added) // 2
    for offset in added[:half]:
        offsets.add(offset)
    offsets.update(added[half:])
    model.update(added)
    for probe in [*model, *probes]:
        assert (probe in offsets) == (type(probe) is int and probe < 2**63 and probe in model)
    held = {o for o in model if o < 2**63}
    for size in [*held, *(p for p in probes if type(p) is int)]:  # (what an import's proof of a journal asks)
        assert offsets.reaches(size) == any(o >= size for o in held)
    offsets.close()
    assert all(probe not in offsets for probe in model)


def test_the_temporary_database_spills_to_a_file_that_is_already_deleted():
    """Past its cache the database writes to a file; that file was unlinked as soon as it was
    made, so a killed import leaves nothing behind."""
    def spill_files() -> list[str]:
        links = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                continue
        return [link for link in links if "etilqs_" in link]

    before = spill_files()
    db = spill.temp_db()
    db.execute("CREATE TABLE t (a BLOB)")
    db.executemany("INSERT INTO t VALUES (?)", ((os.urandom(512),) for _ in range(40_000)))  # 20 MB: past its cache
    assert db.execute("SELECT COUNT(*) FROM t").fetchone() == (40_000,)
    opened = [link for link in spill_files() if link not in before]
    assert opened, "20 MB were written without a temporary file"
    assert all(link.endswith(" (deleted)") and not os.path.exists(link[:-len(" (deleted)")]) for link in opened), opened
    db.close()
    assert [link for link in spill_files() if link not in before] == []


def _capped(monkeypatch, module, pages: int = 64) -> None:
    """``module``'s temporary databases hold at most ``pages`` pages: SQLite's own "database or disk is full"."""
    real = spill.temp_db

    def small():
        db = real()
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(module, "temp_db", small)


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_a_full_temporary_folder_stops_the_import_with_one_line_and_no_journal(tmp_path, monkeypatch, source):
    from tests.bench import claude_transcript, codex_rollout
    from tests.helpers import run_cli
    from toolkit.errors import EXIT_OPERATIONAL
    from toolkit.importers import claude, codex

    root = tmp_path / "source"
    (claude_transcript if source == "claude" else codex_rollout).write(root, 5_000)
    _capped(monkeypatch, claude if source == "claude" else codex)
    monkeypatch.setattr(claude if source == "claude" else codex, "ROWS_IN_MEMORY", -1)  # (else rows this few are held in memory)
    result = run_cli("import", "--from", source, "--source", str(root), "--store", str(tmp_path / "store"), "--json")
    assert result.exit_code == EXIT_OPERATIONAL, result.stdout
    assert result.json["error"]["type"] == "DurabilityError" and "disk full" in result.json["error"]["message"]
    assert "Traceback" not in result.stdout + result.stderr
    assert not list((tmp_path / "store").rglob("*.jsonl"))


def test_a_full_temporary_folder_while_holding_a_journals_keys_is_one_line_too(tmp_path, monkeypatch):
    from tests.bench import claude_transcript
    from tests.helpers import run_cli
    from toolkit.errors import EXIT_OPERATIONAL

    root, store = tmp_path / "source", tmp_path / "store"
    claude_transcript.write(root, 5_000)
    assert run_cli("import", "--from", "claude", "--source", str(root), "--store", str(store)).exit_code == 0
    journal = next(store.rglob("*.jsonl"))
    before = journal.read_bytes()
    monkeypatch.setattr(spill, "KNOWN_IN_MEMORY", 10)
    _capped(monkeypatch, spill, pages=8)  # 32 KiB: not the 5,000 keys
    result = run_cli("import", "--from", "claude", "--source", str(root), "--store", str(store), "--json", "--reread")
    assert result.exit_code == EXIT_OPERATIONAL and result.json["error"]["type"] == "DurabilityError", result.stdout
    assert journal.read_bytes() == before


def test_a_full_temporary_database_is_a_durability_error_and_nothing_else_is():
    """``guarded`` turns SQLite's "database or disk is full" into the DurabilityError it is, and lets
    every other error through as it was (sqlite3 is loaded by the first database, not by the import)."""
    import sqlite3

    from toolkit.errors import DurabilityError
    from toolkit.importers.spill import guarded

    with pytest.raises(DurabilityError, match="disk full while reading a transcript"):
        with guarded("reading a transcript"):
            raise sqlite3.OperationalError("database or disk is full")
    for error in (sqlite3.OperationalError("no such table: x"), ValueError("full"), OSError(28, "No space left")):
        with pytest.raises(type(error)) as raised:
            with guarded("reading a transcript"):
                raise error
        assert raised.value is error


def test_an_import_that_opens_no_database_does_not_load_sqlite(tmp_path):
    import subprocess
    import sys

    code = ("import sys, toolkit.importers.claude, toolkit.importers.spill as s; "
            "assert 'sqlite3' not in sys.modules, 'loaded at import'; "
            "db = s.temp_db(); print('sqlite3' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "True"
