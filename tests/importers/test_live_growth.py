"""The nightly keep while the tool is writing (issue 27): a real writer process appends to
transcripts as Claude Code, Codex CLI, Gemini CLI and Copilot CLI do (open, append, close; a line now and then
in two writes, so an import may meet it half written) while ``levelsess import`` runs again and
again into one store, reading only what changed.  Whatever the interleaving, once the writer is
done and one more import has run, the store holds every source line a fresh import of the final
files holds, and a line twice only where a record replaces one made of it while it was being
written (a response imported half streamed, superseded once whole): nothing lost, nothing made
twice.  The store passes ``fsck``, and an import after that reads nothing."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
if not FIXTURES.is_dir():
    FIXTURES = Path("/work/shared/fixtures")
BENCH = Path(__file__).resolve().parents[1] / "bench"

#: The writer: appends each file's remaining lines, files picked at random, a few ms apart; a
#: third of the lines in two writes with a pause between (an import may read the first half).
WRITER = r"""
import pickle, random, sys, time
plan, rng = pickle.loads(sys.stdin.buffer.read()), random.Random(int(sys.argv[1]))
while any(rest for _path, rest in plan):
    path, rest = rng.choice([item for item in plan if item[1]])
    line = rest.pop(0)
    if rng.random() < 0.3 and len(line) > 2:
        cut = rng.randrange(1, len(line) - 1)
        with open(path, "ab") as out:
            out.write(line[:cut])
        time.sleep(rng.random() * 0.01)
        line = line[cut:]
    with open(path, "ab") as out:
        out.write(line)
    time.sleep(rng.random() * 0.003)
"""


def _tree(app: str, home: Path) -> tuple[Path, list[Path]]:
    """The source tree an import reads, and its transcripts, as they end."""
    if app == "claude":
        root = home / "projects"
        shutil.copytree(FIXTURES / "claude-code" / "projects", root)
        return root, [p for p in sorted(root.glob("*/*.jsonl")) if p.stat().st_size > 20_000]
    if app == "codex":
        root = home / ".codex"
        shutil.copytree(FIXTURES / "codex", root)
        return root, sorted(root.rglob("rollout-*.jsonl"))
    if app == "copilot":
        from tests.importers.test_copilot import _event, copilot_session, events

        root, cwd, logs = home / ".copilot", home / "app", []
        cwd.mkdir(parents=True)
        for n in range(3):
            sid = f"0d7f5c3a-9b1e-4c2d-8e6f-{n:012x}"
            objects = events(sid, cwd)
            for k in range(len(objects), 300):  # a long session: prompts and answers, each event of its own
                body = ({"content": f"ask {k}", "agentMode": "interactive"} if k % 2 else
                        {"messageId": f"m{k}", "content": f"answer {k} " + "word " * (k % 40), "toolRequests": []})
                objects.append(_event("user.message" if k % 2 else "assistant.message", body, k, objects[-1]["id"]))
            logs.append(copilot_session(root, sid, cwd, objects=objects))
        return root, logs
    sys.path.insert(0, str(BENCH))
    try:
        import gemini_session
    finally:
        sys.path.remove(str(BENCH))
    root = home / ".gemini"
    return root, [gemini_session.write(root, 600)]


def _import(root: Path, app: str, store: Path, cache: Path, jobs: int = 0) -> tuple[int, dict]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "toolkit.cli", "import", "--from", app, "--source", str(root),
                           "--store", str(store), "--json", "--jobs", str(jobs)], env=env, capture_output=True, timeout=120)
    assert not proc.stderr.strip().startswith(b"Traceback"), proc.stderr.decode(errors="replace")[-2000:]
    return proc.returncode, json.loads(proc.stdout)


def _lines(journal: Path) -> tuple[Counter, Counter]:
    """(every source line the journal's records carry, counted; those carried by a record that
    replaces another or is partial, counted)."""
    every, redone = Counter(), Counter()
    for line in journal.read_bytes().splitlines():
        record = orjson.loads(line)
        raw = record.get("raw")
        for item in raw if isinstance(raw, list) else ([raw] if raw is not None else []):
            key = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
            every[key] += 1
            if "replaces" in record or record.get("partial") is True:
                redone[key] += 1
    return every, redone


def _journals(store: Path) -> dict[str, Path]:
    return {p.name: p for p in store.rglob("*.jsonl") if ".levelsess" not in p.parts}


@pytest.mark.parametrize("app, jobs", [("claude", 0), ("codex", 0), ("gemini", 0), ("copilot", 0), ("claude", 2), ("codex", 2), ("copilot", 2)])
def test_imports_while_the_tool_writes_lose_and_repeat_nothing(app: str, jobs: int, tmp_path: Path) -> None:
    """``jobs``: as ``import --jobs`` (2: the transcripts in two worker processes, each resuming its own)."""
    if app in ("claude", "codex") and not FIXTURES.is_dir():
        pytest.skip("shared/fixtures is not beside the checkout")
    root, transcripts = _tree(app, tmp_path / "home")
    rng = random.Random(27)
    plan = []
    for path in transcripts:  # each starts with a quarter of its lines; the writer appends the rest
        lines = path.read_bytes().splitlines(keepends=True)
        keep = max(1, len(lines) // 4) if app != "gemini" else 40
        path.write_bytes(b"".join(lines[:keep]))
        plan.append((str(path), lines[keep:]))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(rng.randrange(10**6))], stdin=subprocess.PIPE)
    writer.stdin.write(pickle.dumps(plan))
    writer.stdin.close()
    store, cache, runs = tmp_path / "store", tmp_path / "cache", 0
    try:
        while writer.poll() is None or runs < 2:
            code, _report = _import(root, app, store, cache, jobs)
            assert code in (0, 4)
            runs += 1
    finally:
        writer.kill()
        writer.wait()
    code, last = _import(root, app, store, cache, jobs)
    assert code == 0, last
    fresh_code, _fresh = _import(root, app, tmp_path / "fresh", tmp_path / "fresh-cache")
    assert fresh_code == 0
    mine, theirs = _journals(store), _journals(tmp_path / "fresh")
    assert mine.keys() == theirs.keys()
    for name, journal in theirs.items():
        fresh, _ = _lines(journal)
        kept, redone = _lines(mine[name])
        lost = [key for key, count in fresh.items() if kept[key] < count]
        assert not lost, f"{name}: {len(lost)} source lines a fresh import keeps are not in the store"
        twice = {key: count - fresh[key] for key, count in kept.items() if count - fresh[key] > redone[key]}
        assert not twice, f"{name}: {len(twice)} source lines kept more often than a fresh import keeps them, not as a replacement"
    check = subprocess.run([sys.executable, "-m", "toolkit.cli", "fsck", str(store), "--json"], capture_output=True, timeout=120)
    assert check.returncode == 0, check.stdout.decode()[-2000:]
    code, again = _import(root, app, store, cache)
    assert code == 0 and again["read"] == 0 and again["resumed"] == 0, {k: again.get(k) for k in ("read", "resumed", "from_cache")}
