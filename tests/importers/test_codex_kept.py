"""`import --from codex` holds a rollout's rows in lists up to ROWS_IN_MEMORY records (a temporary
database past it) and the bytes of its first lines up to KEEP_IN_MEMORY (the rest re-read at their
offsets): whichever it does, the journals and the report are the same, byte for byte, on a first
import, a resumed one and a full re-read of a rollout that grew."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli
from tests.importers import codex_shapes
from tests.layouts.codex import FIXTURES
from toolkit.importers import codex

#: Held as the defaults do for these small rollouts: every row in lists, every line kept.
ALL_IN_MEMORY = (1 << 30, 1 << 40)


def _journals(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*.jsonl"))}


def _imports(root: Path, build, limits: tuple[int, int], monkeypatch, *, reread: bool = False) -> tuple:
    """The journals and reports of a first import of the home ``build`` makes, then of a second one
    after it grew (``--reread``: read in full, the journals extended), rows and lines held as ``limits`` say."""
    monkeypatch.setattr(codex, "ROWS_IN_MEMORY", limits[0])
    monkeypatch.setattr(codex, "KEEP_IN_MEMORY", limits[1])
    home = root / "src" / ".codex"  # the same source path for every run: the journals name it
    shutil.rmtree(home.parent, ignore_errors=True)
    build(home)
    store = Path(tempfile.mkdtemp(dir=root, prefix="store-"))  # a store of its own: its import cache too
    reports = []
    for step in ("first", "grown"):
        if step == "grown":
            codex_shapes.grow(home)
        args = ["import", "--from", "codex", "--source", home, "--store", store, "--json"]
        result = run_cli(*args, *(["--reread"] if reread and step == "grown" else []))
        assert result.exit_code in (0, 4), result.stdout + result.stderr
        reports.append(result.stdout.replace(str(store), "STORE"))
    return _journals(store), reports


def _fixtures_and_a_long_rollout(home: Path) -> None:
    from tests.bench.codex_rollout import write

    shutil.copytree(FIXTURES, home)
    write(home, 3000)
    codex_shapes.settle(home)


@pytest.mark.parametrize("limits", [(0, 0), (0, 1 << 40), (1 << 30, 0), (40, 5000), (2999, 300_000), (3000, 1 << 40)])
@pytest.mark.parametrize("reread", [False, True], ids=["resumed", "reread"])
def test_real_rollouts_held_either_way_import_to_the_same_bytes(tmp_path, monkeypatch, limits, reread):
    if not FIXTURES.is_dir():
        pytest.skip(f"{FIXTURES} is not here")
    kept = _imports(tmp_path, _fixtures_and_a_long_rollout, ALL_IN_MEMORY, monkeypatch, reread=reread)
    assert _imports(tmp_path, _fixtures_and_a_long_rollout, limits, monkeypatch, reread=reread) == kept


#: Which kept lines' parsed values a first read holds for the conversion (codex._HELD_KINDS): none,
#: as it does, and every kind a sketch has.
HELD = [frozenset(), codex._HELD_KINDS,
        frozenset({"prompt", "agent", "end", "user_item", "agent_reasoning", "interrupt", "error", "task_started", "ui-only",
                   "injected", "user", "assistant", "context", "reasoning", "call", "output", "other", "session_meta", "compact"})]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), rows=st.sampled_from([0, 1, 3, 20, 1 << 30]),
       keep=st.sampled_from([0, 1, 150, 2000, 1 << 40]), reread=st.booleans(), held=st.sampled_from(HELD))
def test_odd_rollouts_held_either_way_import_to_the_same_bytes(tmp_path, monkeypatch, seed, rows, keep, reread, held):
    """Forks, mirrors, copied lines, damage mid-file, torn tails, lone surrogates (codex_shapes);
    the parsed values of none, some or all of the kept lines held from the first read."""
    def build(home: Path) -> None:
        codex_shapes.build(home, rollouts=6, seed=seed)

    with monkeypatch.context() as patched:
        patched.setattr(codex, "_HELD_KINDS", frozenset())
        kept = _imports(tmp_path, build, ALL_IN_MEMORY, patched, reread=reread)
        patched.setattr(codex, "_HELD_KINDS", held)
        assert _imports(tmp_path, build, (rows, keep), patched, reread=reread) == kept


def test_a_second_pass_over_a_rollouts_records_converts_them_alike(tmp_path, monkeypatch):
    """The parsed values the first read held are the first pass's: a second pass over the records
    (a dry run's plan, then its write) parses them again, and the records are the same, as are
    those of a read that held none."""
    home = tmp_path / ".codex"
    codex_shapes.build(home, rollouts=6, seed=11)
    from toolkit.importers.codex import Options, session_from_rollout

    def passes(held: frozenset) -> list:
        monkeypatch.setattr(codex, "_HELD_KINDS", held)
        found = []
        for path in sorted(home.rglob("rollout-*.jsonl")):
            session = session_from_rollout(path, Options(mapping={}, project=None, orphans_only=False), lambda _f: None)
            if session is not None:
                first = [{**r, "raw": r["raw"].data} for r in session.records]
                second = [{**r, "raw": r["raw"].data} for r in session.records]
                assert first == second
                found.append(first)
        return found

    records = passes(HELD[-1])
    assert records and any(records) and records == passes(frozenset())


def test_copied_lines_are_keyed_alike_however_they_are_counted(tmp_path, monkeypatch):
    """A line copied several times (the same bytes: ``#2``, ``#3`` keys), short and long, among
    lines that share their size and first bytes but not the rest: counted by their bytes while
    they are kept, the keys are those the hashes of every line give."""
    import json

    from tests.layouts.codex import envelope

    def build(home: Path) -> None:
        folder = home / "sessions" / "2026" / "04" / "01"
        folder.mkdir(parents=True)
        meta = {"id": "019d0000-0000-7000-8000-00000000c0de", "timestamp": "2026-04-01T10:00:00.000Z", "cwd": "/tmp/p",
                "originator": "codex_cli_rs", "cli_version": "0.119.0"}
        t = "2026-04-01T10:00:01.000Z"
        said = [envelope(t, "response_item", {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": text}]})
                for text in ("a", "b" * 700, "c" * 700 + "x", "c" * 700 + "y")]
        lines = [envelope("2026-04-01T10:00:00.000Z", "session_meta", meta), said[0], said[1], said[0], said[2], said[3],
                 said[1], said[3], said[1], said[0]]
        (folder / "rollout-2026-04-01T10-00-00-019d0000-0000-7000-8000-00000000c0de.jsonl").write_bytes(
            b"".join(line + b"\n" for line in lines))

    with monkeypatch.context() as patched:
        journals, _reports = _imports(tmp_path, build, ALL_IN_MEMORY, patched)
        patched.setattr(codex, "KEEP_IN_MEMORY", 0)  # every line hashed as it is read: the reference
        hashed, _reports = _imports(tmp_path, build, (1 << 30, 0), patched)
    assert journals == hashed
    keys = [json.loads(line).get("sourceKey") for journal in journals.values() for line in journal.splitlines()]
    assert sum(1 for key in keys if key and "#3" in key) == 2  # said[0] and said[1], each a third time


def test_a_rollout_and_its_kept_lines_are_freed_once_its_journal_is_written(tmp_path, monkeypatch):
    """Nothing keeps a rollout (its rows, its kept lines) in a reference cycle: with the garbage
    collector off, each is freed before the next one is read, so memory holds one at a time."""
    import gc
    import weakref

    home = tmp_path / ".codex"
    codex_shapes.build(home, rollouts=5, seed=7)
    alive: set[int] = set()
    most = []
    real = codex._Rollout.__init__

    def counted(self, *args, **kwargs):
        most.append(len(alive))  # the rollouts still alive when this one is read
        real(self, *args, **kwargs)
        alive.add(id(self))
        weakref.finalize(self, alive.discard, id(self))

    monkeypatch.setattr(codex._Rollout, "__init__", counted)
    gc.disable()
    try:
        result = run_cli("import", "--from", "codex", "--source", home, "--store", tmp_path / "store", "--json", "--jobs", "1")
    finally:
        gc.enable()
    assert result.exit_code in (0, 4), result.stdout + result.stderr
    assert len(most) == 5 and max(most) == 0


#: Lines for :func:`test_a_lines_repeats_are_counted_alike_by_its_bytes_or_its_hash`: copies, and lines
#: alike in size and first 64 bytes that differ after them (what a kept line is first told apart by).
_ALIKE = b"{" + b"x" * 70
_POOL = [b"{}", b"{" + b"y" * 80 + b"}", _ALIKE + b"1}", _ALIKE + b"2}", _ALIKE + b"3}", _ALIKE + b"12}", b"{" + b"x" * 64 + b"}"]


@settings(max_examples=200, deadline=None)
@given(picks=st.lists(st.integers(0, len(_POOL) - 1), min_size=1, max_size=40), kept=st.integers(0, 41))
def test_a_lines_repeats_are_counted_alike_by_its_bytes_or_its_hash(picks, kept):
    """A rollout's rows count each line's copies so far (its key's ``#N``): by its bytes while the
    lines are kept (``add_kept``), by its hash after (``hash_kept``, then ``add``).  Whatever the
    lines and wherever keeping stops, each line's count is the number of lines with its bytes up
    to it, as hashing every line gives."""
    from toolkit.layouts.codex_seen import Sketch

    lines = [_POOL[i] for i in picks]
    rows, item, offset = codex._Listed(), Sketch("other"), 0
    for n, data in enumerate(lines):
        if n < kept:
            rows.add_kept(n + 1, offset, data, item, None, None)
        else:
            if n == kept:
                rows.hash_kept()
            rows.add(n + 1, offset, len(data), codex._hash(data), item, None, None)
        offset += len(data) + 1
    assert [place[4] for place in rows.places] == [lines[:n + 1].count(data) for n, data in enumerate(lines)]
    assert [place[2] for place in rows.places] == [len(data) for data in lines]
