"""``chaos run --target fsck|reindex|migrate``: kill levelsess's own writing commands.

Each cycle builds a seeded store that gives the command work (torn tails, stale locks and
broken caches for ``fsck --repair``; missing and stale caches for ``reindex``; v1 journals for
``migrate``), runs the command once uninterrupted on a copy to learn the expected result, then
runs it on the store and SIGKILLs it at a random moment, mostly inside the window in which the
uninterrupted run was seen changing files (polled), sometimes anywhere in the run.  At the kill
every journal must be exactly its original or its expected bytes and every cache whole JSON;
then the command is rerun to completion and the store must equal the uninterrupted result
(journals byte for byte, caches up to ``generatedAt``, no lock or temp file left, every torn
tail saved under ``recovered/``).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from toolkit.lines import loads

from .harness import Config, Report, kill_tree, watch_writes
from .writer import payload

TARGETS = ("fsck", "reindex", "migrate", "import")
COMMANDS = {"fsck": ["fsck", "--repair"], "reindex": ["reindex"], "migrate": ["migrate"],
            "import": ["import", "--from", "cursor", "--source", "{source}"]}


def _session(rng: random.Random, sid: str, v: int) -> list[bytes]:
    meta = {"kind": "meta", "v": v, "id": sid, "project": "/chaos/target", "createdAt": "2026-11-30T00:00:00.000Z", "title": None}
    lines = [orjson.dumps(meta)]
    for n in range(1, rng.randint(2, 14)):
        size = 60_000 if rng.random() < 0.05 else rng.randint(50, 3000)
        record = {"kind": "user" if n % 2 else "assistant", "t": f"2026-11-30T00:{n:02d}:00.000Z", "content": payload(rng, size)}
        if v == 2:
            record["seq"] = n
        lines.append(orjson.dumps(record))
    return lines


def build_cursor_source(root: Path, rng: random.Random, composers: int = 120) -> Path:
    """A Cursor ``User`` folder (split era) for ``--target import``."""
    import sqlite3

    user = root / "cursor" / "User"
    (user / "globalStorage").mkdir(parents=True)
    conn = sqlite3.connect(user / "globalStorage" / "state.vscdb")
    for table in ("ItemTable", "cursorDiskKV"):
        conn.execute(f"create table {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    for n in range(composers):
        cid = f"chaos-{n:04d}"
        headers = []
        for b in range(rng.randint(2, 30)):
            bid, kind = f"b{b:03d}", 1 if b % 2 == 0 else 2
            headers.append({"bubbleId": bid, "type": kind})
            bubble = {"type": kind, "bubbleId": bid, "createdAt": f"2026-11-30T00:{b % 60:02d}:00.000Z",
                      "text": payload(rng, 30_000 if rng.random() < 0.03 else rng.randint(40, 2000))}
            conn.execute("insert into cursorDiskKV values (?, ?)", (f"bubbleId:{cid}:{bid}", orjson.dumps(bubble)))
        composer = {"composerId": cid, "name": f"chat {n}", "createdAt": 1764460800000, "fullConversationHeadersOnly": headers}
        conn.execute("insert into cursorDiskKV values (?, ?)", (f"composerData:{cid}", orjson.dumps(composer)))
    conn.commit()
    conn.close()
    return user


def build_store(target: str, root: Path, rng: random.Random, sessions: int = 150) -> Path:
    """A store that gives ``target`` work to do (for import: an empty store and a Cursor source)."""
    store = root / "store"
    if target == "import":
        store.mkdir(parents=True)
        build_cursor_source(root, rng)
        return store
    for n in range(sessions):
        project = store / f"-chaos-target-p{n % 3}"
        project.mkdir(parents=True, exist_ok=True)
        sid = f"2026-11-30T00-{n // 60:02d}-{n % 60:02d}-t{n:03d}"
        lines = _session(rng, sid, 1 if target == "migrate" else 2)
        data = b"".join(line + b"\n" for line in lines)
        if target == "fsck" and rng.random() < 0.4:
            data += lines[-1][: rng.randint(1, len(lines[-1]) - 1)]  # a torn final record
        (project / f"{sid}.jsonl").write_bytes(data)
        if target == "fsck" and rng.random() < 0.1:
            dead = {"pid": 2**22 + n, "host": os.uname().nodename, "startedAt": 1.0, "acquiredAt": 1.0}
            (project / f"{sid}.jsonl.lock").write_bytes(orjson.dumps(dead))
    if target == "fsck":
        (store / "-chaos-target-p1" / "index.json").write_bytes(b'{"v":2,"sessi')
    return store


def _run(store: Path, target: str) -> subprocess.Popen:
    source = store.parent.parent / "pristine" / "cursor" / "User"  # one read-only source for every run
    argv = [sys.executable, "-m", "toolkit.cli", *(a.format(source=source) for a in COMMANDS[target]), "-q", "--store", str(store)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def _state(store: Path) -> tuple[dict, dict, list, set]:
    """Journals (bytes), caches (sessions, or the raw bytes when not JSON), leftovers, saved tails."""
    journals = {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.glob("*/*.jsonl"))}
    caches: dict[str, object] = {}
    for path in sorted(store.glob("*/index.json")):
        raw = path.read_bytes()
        try:
            document = loads(raw)
        except ValueError:
            caches[str(path.relative_to(store))] = raw
            continue
        caches[str(path.relative_to(store))] = document.get("sessions") if isinstance(document, dict) else document
    leftovers = sorted(p.name for p in store.glob("*/*") if p.name.endswith((".tmp", ".lock")))
    tails = {p.read_bytes() for p in (store / ".levelsess" / "recovered").rglob("*.tail")}
    return journals, caches, leftovers, tails


def run_target(config: Config, target: str, on_cycle=None) -> Report:
    """Kill ``levelsess <target>`` at random moments; check each rerun converges."""
    report = Report(seed=config.seed, mode=f"target:{target}")
    rng = random.Random(config.seed)
    root = Path(config.work) if config.work else Path(tempfile.mkdtemp(prefix="levelsess-chaos-target-"))
    cycles = config.cycles if config.cycles is not None else (None if config.duration else 10)
    started = time.monotonic()
    probe = time.monotonic()
    subprocess.run([sys.executable, "-m", "toolkit.cli", "--version"], capture_output=True, check=False)
    startup = time.monotonic() - probe  # kill after start-up, while the command works
    number = 0
    try:
        while (cycles is None or number < cycles) and (config.duration is None or time.monotonic() - started < config.duration):
            folder = root / f"cycle-{number:05d}"
            pristine = build_store(target, folder / "pristine", random.Random(f"{config.seed}-{number}"))
            reference = folder / "reference" / "store"
            shutil.copytree(pristine.parent, reference.parent)
            begun = time.monotonic()
            proc = _run(reference, target)
            window = watch_writes(proc, reference.parent, begun)  # learn when the command writes
            if proc.wait() not in (0, 1):
                raise RuntimeError(f"levelsess {target} failed on a fresh store: {proc.stderr.read().decode()}")
            expected = _state(reference)
            originals = _state(pristine)
            store = folder / "work" / "store"
            shutil.copytree(pristine.parent, store.parent)
            found: list[dict] = []
            kills = misses = 0
            while kills < 3 and misses < 3:  # a few kills on the same store, then let it finish
                proc = _run(store, target)
                time.sleep(window.kill_moment(rng, floor=startup * 0.8) * 0.5**misses)
                killed = kill_tree(proc.pid)
                proc.wait()
                proc.stderr.close()
                if not killed:  # it finished first (a loaded machine runs slower or faster than the probe)
                    misses += 1
                    if kills:
                        break
                    shutil.rmtree(store.parent)  # no kill yet this cycle: start over, and kill sooner
                    shutil.copytree(pristine.parent, store.parent)
                    continue
                kills += 1
                report.kills += 1
                journals, caches, _left, _tails = _state(store)
                report.mid_run_kills += (journals, caches) not in ((originals[0], originals[1]), (expected[0], expected[1]))
                for name, data in journals.items():  # an import's new journal appears whole or not at all
                    if data not in (originals[0].get(name), expected[0].get(name)):
                        found.append({"cycle": number, "kind": "half-written", "path": name, "detail": "neither the original nor the result"})
                if not set(originals[0]) <= set(journals) <= set(expected[0]):
                    found.append({"cycle": number, "kind": "lost-file", "path": None, "detail": "a journal went missing or was doubled"})
                for name, value in caches.items():
                    if isinstance(value, bytes) and value != originals[1].get(name):
                        found.append({"cycle": number, "kind": "cache-torn", "path": name, "detail": "index.json is not whole JSON"})
            proc = _run(store, target)
            if proc.wait() not in (0, 1):
                found.append({"cycle": number, "kind": "rerun-failed", "path": None, "detail": proc.stderr.read().decode()[-500:]})
            proc.stderr.close()
            journals, caches, leftovers, tails = _state(store)
            if journals != expected[0]:
                found.append({"cycle": number, "kind": "diverged", "path": None, "detail": "journals differ from the uninterrupted run"})
            if caches != expected[1]:
                found.append({"cycle": number, "kind": "cache-diverged", "path": None, "detail": "index.json differs from the uninterrupted run"})
            if leftovers:
                found.append({"cycle": number, "kind": "leftovers", "path": None, "detail": ", ".join(leftovers)})
            if not expected[3] <= tails:
                found.append({"cycle": number, "kind": "tail-not-saved", "path": None, "detail": "a trimmed tail is missing from recovered/"})
            report.cycles += 1
            report.violations += found
            if found and config.out is not None:
                shutil.copytree(folder, Path(config.out) / f"target-{target}-cycle-{number:05d}")
            shutil.rmtree(folder, ignore_errors=True)
            number += 1
            report.elapsed = time.monotonic() - started
            if on_cycle:
                on_cycle(report)
    finally:
        report.elapsed = time.monotonic() - started
        if not config.keep and not config.work:
            shutil.rmtree(root, ignore_errors=True)
    return report
