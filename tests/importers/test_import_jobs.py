"""`import --jobs N` (issue 27): worker processes write the same journals, the same index and the
same report, in the same order, as one process does, for Claude Code and Codex CLI sources."""

from __future__ import annotations

import base64
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.importers.cursor_db import FIXTURES as SHARED_FIXTURES
from toolkit import forked
from toolkit.importers import claude, parallel, run_import
from toolkit.importers.unchanged import Unit

CLAUDE = SHARED_FIXTURES / "claude-code"
CODEX = SHARED_FIXTURES / "codex"
pytestmark = [pytest.mark.skipif(not CLAUDE.is_dir() or not CODEX.is_dir(), reason="the real fixtures are not here"),
              pytest.mark.skipif(not forked.available(), reason="no os.fork: --jobs imports in this process")]


def store_files(store: Path) -> dict[str, bytes]:
    """Every file of a store but levelsess's stat cache (inodes, times), indexes without their time."""
    out = {}
    for path in sorted(store.rglob("*")):
        rel = path.relative_to(store).as_posix()
        if path.is_file() and not rel.startswith(".levelsess/verified/"):
            data = path.read_bytes()
            out[rel] = re.sub(rb'"generatedAt": "[^"]*"', b"", data) if path.name == "index.json" else data
    return out


def forks_asked(monkeypatch) -> list[int]:
    """The worker counts the import's runs in workers ask for (parallel.run, spied on), in order."""
    forks: list[int] = []
    real = parallel.run
    monkeypatch.setattr(parallel, "run", lambda *args: (forks.append(args[2]), real(*args))[1])
    return forks


def imported(app: str, source: Path, store: Path, *extra: str) -> tuple[int, str]:
    result = run_cli("import", "--from", app, "--source", str(source), "--store", str(store), "--json", *extra)
    return result.exit_code, result.stdout.replace(str(store), "STORE")


@pytest.mark.parametrize("app, fixtures", [("claude", CLAUDE), ("codex", CODEX)])
def test_jobs_2_writes_the_journals_and_report_of_jobs_1(tmp_path, app, fixtures):
    source = tmp_path / "source"
    shutil.copytree(fixtures, source)
    one = imported(app, source, tmp_path / "one", "--jobs", "1")
    two = imported(app, source, tmp_path / "two", "--jobs", "2")
    assert one[0] in (0, 4) and one == two
    assert '"status": "created"' in one[1]
    assert store_files(tmp_path / "one") == store_files(tmp_path / "two")
    # a re-import in workers finds nothing new, as one process does (from the import cache), and so
    # does one that reads every source again
    again_one = imported(app, source, tmp_path / "one", "--jobs", "1")
    again_two = imported(app, source, tmp_path / "two", "--jobs", "2")
    assert again_one == again_two and '"status": "created"' not in again_two[1]
    assert store_files(tmp_path / "one") == store_files(tmp_path / "two")
    reread_one = imported(app, source, tmp_path / "one", "--jobs", "1", "--reread")
    reread_two = imported(app, source, tmp_path / "two", "--jobs", "2", "--reread")
    assert reread_one == reread_two and '"status": "created"' not in reread_two[1]


def test_progress_and_bytes_read_arrive_in_the_serial_order(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(CLAUDE, source)
    seen: dict[int, tuple[list, list]] = {}
    for jobs in (1, 2):
        outcomes, read = [], []
        report = run_import("claude", [source], tmp_path / f"store-{jobs}", claude.Options(), progress=outcomes.append,
                            read=read.append, jobs=jobs)
        seen[jobs] = ([(o.id, o.status, o.records) for o in outcomes], read)
        assert [o.id for o in report.sessions] == [o[0] for o in seen[jobs][0]]
    assert seen[1] == seen[2] and seen[1][0]


def test_units_that_may_share_a_journal_go_to_one_worker_in_order():
    # a transcript named like another's subagent writes the journal that subagent would: never two workers at once
    keys = [claude.unit_key(Unit(stem, (), (), (Path(f"p/{stem}.jsonl"), []))) for stem in ("abc", "other", "abc-agent-x", "ABC-side-y", "z")]
    assert keys[0] == keys[2] == keys[3] != keys[1]
    assert parallel.batches(keys) == [[0, 2, 3], [1], [4]]


def test_import_help_shows_jobs_with_an_example():
    result = run_cli("import", "--help")
    assert result.exit_code == 0
    assert "--jobs" in result.stdout and "levelsess import --from claude --jobs 2" in result.stdout


@pytest.mark.parametrize("app, fixtures", [("claude", CLAUDE), ("codex", CODEX)])
def test_a_re_import_of_a_few_grown_files_reads_them_here_not_in_workers(tmp_path, monkeypatch, app, fixtures):
    # the choice of workers counts what a resume reads (the bytes a file added), not the whole
    # file: forking for a few kB of new lines cost more than reading them (issue 27)
    import random

    from tests.bench.grow import grow_claude, grow_codex
    from toolkit import workers
    from toolkit.importers import codex

    monkeypatch.setattr(workers, "PARALLEL_THRESHOLD", 64 << 10)  # the fixtures are small: a few kB is "much" here
    forks = forks_asked(monkeypatch)
    source, store = tmp_path / "source", tmp_path / "store"
    shutil.copytree(fixtures, source)
    options = claude.Options() if app == "claude" else codex.Options()
    files = sorted(p for p in source.rglob("*.jsonl") if "subagents" not in p.parts)
    assert sum(p.stat().st_size for p in files) > workers.PARALLEL_THRESHOLD
    run_import(app, [source], store, options, jobs=0)
    assert forks == [2]  # a first import reads every file: in workers
    rng = random.Random(5)
    grown = sorted(files, key=lambda p: p.stat().st_size)[-2:]
    assert sum(p.stat().st_size for p in grown) > workers.PARALLEL_THRESHOLD  # (whole, they would be read in workers)
    for path in grown:
        (grow_claude if app == "claude" else grow_codex)(path, rng)
    report = run_import(app, [source], store, options, jobs=0)
    assert report.resumed >= 1 and forks == [2]  # two files grew by a turn: resumed (or read) here
    for path in files:  # rewritten in place (the same bytes, a new ctime): each read in full, in workers again
        path.write_bytes(path.read_bytes())
    report = run_import(app, [source], store, options, jobs=0)
    assert report.read > 0 and forks == [2, 2]


def test_gemini_sessions_import_in_workers_to_the_bytes_and_report_of_one_process(tmp_path, monkeypatch):
    # a Gemini CLI folder of many sessions (SOURCES-MORE §1.2, §1.3): main sessions, a subagent's,
    # a legacy whole-file .json with its resumed .jsonl twin (one short id: one worker, in order)
    import json as _json

    from tests.layouts.gemini import every_kind, gemini, gemini_home, line, meta, name, user
    from toolkit.importers import gemini as gemini_importer

    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    files = {}
    for n in range(12):
        sid = f"{n:08x}-5f60-4a71-8b92-a3b4c5d6e7f8"
        files[name(sid, f"2026-08-{n + 1:02d}T16-16")] = every_kind(sid, hours=n + 1.0)
    parent = "00000003-5f60-4a71-8b92-a3b4c5d6e7f8"
    sub = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    files[f"{parent}/{sub}.jsonl"] = b"".join(map(line, [meta(sub, kind="subagent"), user("s1", "look"), gemini("s2", "done")]))
    old = "0ld0ld00-5f60-4a71-8b92-a3b4c5d6e7f8"
    legacy = {**meta(old), "messages": [user("l1", "old question"), gemini("l2", "old answer")]}
    files[f"session-2026-01-01T00-00-{old[:8]}.json"] = _json.dumps(legacy, indent=2).encode()
    files[f"session-2026-01-01T00-00-{old[:8]}.jsonl"] = every_kind(old)
    home = gemini_home(tmp_path / "src", files)
    units = gemini_importer.units(home, lambda _f: None)
    keys = [gemini_importer.unit_key(u) for u in units]
    assert keys.count(old[:8].lower()) == 2 and len(set(keys)) == len(keys) - 1  # the twins together, the rest apart
    forks = forks_asked(monkeypatch)
    one = imported("gemini", home, tmp_path / "one", "--jobs", "1")
    two = imported("gemini", home, tmp_path / "two", "--jobs", "2")
    assert forks == [2] and one == two and one[0] in (0, 4)
    assert _json.loads(one[1])["sessions"] and '"status": "created"' in one[1]
    assert store_files(tmp_path / "one") == store_files(tmp_path / "two")
    again = [imported("gemini", home, tmp_path / s, "--jobs", j, "--reread") for s, j in (("one", "1"), ("two", "2"))]
    assert again[0] == again[1] and '"status": "created"' not in again[1][1]


def _memo(cache: Path, store: Path) -> tuple[dict, dict]:
    """The import memo's entries and reader states of ``store``'s journals, by journal name, less
    what differs between two runs (the stamp, when it was read) and the store's own name."""
    from toolkit.fsck.incremental import read_file

    entries, states, prefix = {}, {}, str(store) + "/"
    for path in (cache / "levelsess" / "import-index").glob("*.json"):
        doc = read_file(path)
        kept = states if path.name.endswith(".states.json") else entries
        for key, value in (doc or {}).get("journals", {}).items():
            if key.startswith(prefix):
                name = key[len(prefix):]
                if kept is states:
                    kept[name] = base64.b64decode(value).replace(str(store).encode(), b"STORE")
                else:
                    kept[name] = {k: v for k, v in value.items() if k not in ("stamp", "read_ns")}
    return entries, states


@pytest.mark.parametrize("app, fixtures", [("claude", CLAUDE), ("codex", CODEX)])
def test_a_workers_scans_are_kept_in_the_memo_as_one_process_keeps_its_own(tmp_path, monkeypatch, app, fixtures):
    """A worker sends the parent each journal's memo entry made (toolkit.fsck.incremental.encoded_scan),
    not its scan: the memo holds the same entries and reader states either way, and a re-import
    after a source grew resumes from them alike."""
    from toolkit import reindex

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "source"
    shutil.copytree(fixtures, source)
    one, two = tmp_path / "one", tmp_path / "two"  # (names of one length: the reader states hold them)
    assert imported(app, source, one, "--jobs", "1") == imported(app, source, two, "--jobs", "2")
    memo_one, memo_two = _memo(tmp_path / "cache", one), _memo(tmp_path / "cache", two)
    assert memo_one[0] and memo_one[1] and memo_one == memo_two
    assert all(entry["resume"] for name, entry in memo_one[0].items() if name in memo_one[1])
    # and the parent's reindex takes every journal from what the workers sent: it reads none
    read: list = []
    real = reindex.scan_one
    monkeypatch.setattr(reindex, "scan_one", lambda args: (read.append(args[0]), real(args))[1])
    forks = forks_asked(monkeypatch)
    assert imported(app, source, tmp_path / "six", "--jobs", "2")[0] in (0, 4)
    assert forks == [2] and read == []
