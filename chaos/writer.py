"""Chaos writers: the reference writers the harness kills, and deliberately unsafe ones.

A writer appends records under ``$LEVELSESS_CHAOS_DIR`` (seeded by ``$LEVELSESS_CHAOS_SEED``)
and, once a record is durable, prints ``ACK <relpath> <end-offset> <sha256>`` on stdout
(DESIGN.md §7).  The reference writers follow the seeds exactly: take the session lock, remove
only an incomplete final record left by a killed predecessor, append with one ``write`` +
fsync (toolkit.durable), ACK, and only then advance index.json / meta.json atomically.

The unsafe writers each break one rule, so the harness can be seen to catch them:

* ``ack-before-write`` - ACKs a record, then writes it (a debounced write).
* ``rewrite-in-place`` - rewrites the whole journal for every record (truncate + write).
* ``meta-before-append`` - (Logician) advances meta.json before the append is durable.
* ``no-fsync`` - appends with one ``write()`` and ACKs, never fsyncs (the bytes sit in the page
  cache).  Only a real power cut (``--mode power-loss --fs lazyfs``) catches it: a kill -9
  leaves the page cache intact, and the simulated cut never goes below the last ACK.

Run as ``python -m chaos.writer`` (what the harness does: it imports no CLI machinery, so it
starts fast) or ``levelsess chaos writer``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import orjson

from toolkit import durable, locks
from toolkit.errors import LevelsessError

UNSAFE = {"ack-before-write": "levelcode", "rewrite-in-place": "levelcode", "meta-before-append": "logician",
          "no-fsync": "levelcode"}
MIN_RECORD, MAX_RECORD = 100, 4 << 20
HEARTBEAT = 2.0
STATE_DIR = ".levelsess"


def record_size(rng: random.Random, largest: int = MAX_RECORD) -> int:
    """Log-uniform from ~100 B to ``largest``; arbitrary (mostly odd, never aligned) sizes."""
    size = int(math.exp(rng.uniform(math.log(MIN_RECORD), math.log(largest))))
    return size | 1 if size % 4096 == 0 else size


def payload(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of text: hex noise with some escapes and multi-byte characters."""
    head = "".join(rng.choice(("é", "日本", "😀", '"q"', "\\", "\n", " ", "x")) for _ in range(8))
    body = rng.randbytes(max(size - 60, 2) // 2).hex()
    return head + body


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Writer:
    """One chaos writer process: appends to its journal until killed (or ``max_records``)."""

    def __init__(self, root: Path, seed: str, name: str, layout: str, unsafe: str | None,
                 shared: bool, use_lock: bool, largest: int, max_records: int | None) -> None:
        self.root, self.name, self.layout, self.unsafe = root, name, layout, unsafe
        self.shared, self.use_lock, self.max_records = shared, use_lock, max_records
        self.rng = random.Random(f"{seed}/{name}")
        self.largest = largest
        if layout == "logician":
            self.folder = root / "ws" / ".logician" / "sessions" / "sessions" / ("shared" if shared else name)
            self.journal = self.folder / "messages.jsonl"
            self.recovered = root / "ws" / ".logician" / "sessions" / STATE_DIR / "recovered"
        else:
            self.folder = root / "store" / ("-chaos-shared" if shared else f"-chaos-{name}")
            self.journal = self.folder / ("2026-11-30T00-00-00-shrd.jsonl" if shared else f"2026-11-30T00-00-00-{name[-4:]:0>4}.jsonl")
            self.recovered = root / "store" / STATE_DIR / "recovered"
        self.relpath = str(self.journal.relative_to(root))
        self.lines: list[bytes] = []  # rewrite-in-place keeps the whole file
        self.count = 0  # records (LevelCode: after meta) already in the journal
        self.last_id: str | None = None
        self.created = now_iso()
        self.last_beat = 0.0
        self.parent = os.getppid()  # a writer whose harness died (SIGKILL) stops instead of appending forever

    def orphaned(self) -> bool:
        return os.getppid() != self.parent

    # -- the ACK protocol -------------------------------------------------------------------

    def ack(self, end: int, line: bytes) -> None:
        sys.stdout.write(f"ACK {self.relpath} {end} {hashlib.sha256(line).hexdigest()}\n")
        sys.stdout.flush()

    # -- locking and recovery ---------------------------------------------------------------

    def lock(self) -> None:
        while True:
            if self.orphaned():
                raise SystemExit("chaos writer: the harness that started it is gone")
            try:
                if locks.try_acquire(self.journal):
                    self.last_beat = time.monotonic()
                    return
            except LevelsessError:
                pass
            time.sleep(0.001 + self.rng.random() * 0.004)

    def unlock(self) -> None:
        durable.remove(locks.lock_path(self.journal))

    def heartbeat(self) -> None:
        if time.monotonic() - self.last_beat > HEARTBEAT:
            os.utime(locks.lock_path(self.journal))
            self.last_beat = time.monotonic()

    def recover(self, full: bool = True) -> None:
        """Open an existing journal: cut an incomplete final record (saved first), then learn
        where it stands.  ``full`` reads the whole file (once per writer start); otherwise only
        its last line is read (the shared journal, under the lock, before every record)."""
        try:
            size = self.journal.stat().st_size
        except FileNotFoundError:
            return
        with open(self.journal, "rb") as handle:
            if full:
                data = handle.read()
                keep = data.rfind(b"\n") + 1
                lines = data[:keep].split(b"\n")[:-1]
                last = lines[-1] if lines else None
                self.count = len(lines) - (1 if self.layout == "levelcode" and lines else 0)
                if self.unsafe == "rewrite-in-place":
                    self.lines = lines
            else:
                keep, last = _last_line(handle, size)
        if keep < size:
            durable.ensure_dir(self.recovered)
            durable.truncate_saving(self.journal, keep, size, self.recovered)
        if last is not None:
            record = orjson.loads(last)
            if self.layout == "logician":
                self.last_id = record.get("id")
            elif not full:
                self.count = record.get("seq", 0) if record.get("kind") != "meta" else 0

    def _empty(self) -> bool:
        try:
            return self.journal.stat().st_size == 0
        except FileNotFoundError:
            return True

    # -- records ----------------------------------------------------------------------------

    def meta_line(self) -> bytes:
        return orjson.dumps({"kind": "meta", "v": 2, "id": self.journal.stem, "project": f"/chaos/{self.name}",
                             "createdAt": self.created, "title": None, "writer": {"app": "levelsess-chaos", "pid": os.getpid()}})

    def next_line(self) -> bytes:
        text = payload(self.rng, record_size(self.rng, self.largest))
        n = self.count + 1
        if self.layout == "logician":
            entry = {"id": f"{self.name}-{self.rng.getrandbits(64):016x}", "parentId": self.last_id, "timestamp": now_iso(), "role": "assistant", "text": text}
            return orjson.dumps(entry)
        kind = "user" if n % 2 else "assistant"
        content = text if kind == "user" else [{"type": "text", "text": text}]
        return orjson.dumps({"kind": kind, "t": now_iso(), "content": content, "seq": n})

    def append(self, line: bytes) -> int:
        if self.unsafe == "rewrite-in-place":
            self.lines.append(line)
            with open(self.journal, "wb") as handle:  # the bug: truncate, then write everything again
                handle.write(b"\n".join(self.lines) + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            return self.journal.stat().st_size
        if self.unsafe == "no-fsync":
            return _append_unsynced(self.journal, line)
        return durable.append_line(self.journal, line)

    # -- caches, only after the append is durable -----------------------------------------

    def index_entry(self, size: int) -> dict:
        return {"id": self.journal.stem, "title": None, "createdAt": self.created, "updatedAt": now_iso(),
                "turns": (self.count + 1) // 2, "model": None, "preview": None, "bytes": size, "pinned": False, "archived": False}

    def advance_cache(self, size: int, count: int) -> None:
        if self.layout == "logician" and not self.shared:
            meta = {"formatVersion": 1, "name": self.name, "workspace": str(self.root / "ws"), "createdAt": self.created,
                    "updatedAt": now_iso(), "entryCount": count, "parentSession": None, "activeLeaf": self.last_id}
            durable.atomic_write(self.folder / "meta.json", orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")
        elif not self.shared:
            document = {"v": 2, "generatedAt": now_iso(), "sessions": [self.index_entry(size)]}
            durable.atomic_write(self.folder / "index.json", orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        durable.ensure_dir(self.folder)
        per_record_lock = self.shared and self.use_lock
        if self.use_lock and not per_record_lock:
            self.lock()
        if not self.shared or self.use_lock:
            if per_record_lock:
                self.lock()
            self.recover(full=not per_record_lock)
            if self.layout == "levelcode" and self._empty():  # new, or its torn meta line was trimmed
                line = self.meta_line()
                end = _append_unsynced(self.journal, line) if self.unsafe == "no-fsync" else durable.append_line(self.journal, line)
                self.ack(end, line)
            if per_record_lock:
                self.unlock()
        elif self.layout == "levelcode" and durable.create_exclusive(self.journal, b""):
            line = self.meta_line()
            self.ack(durable.append_line(self.journal, line), line)
        written = 0
        while (self.max_records is None or written < self.max_records) and not self.orphaned():
            if per_record_lock:
                self.lock()
                self.recover(full=False)
            elif self.use_lock:
                self.heartbeat()
            line = self.next_line()
            if self.unsafe == "ack-before-write":
                self.ack(self.journal.stat().st_size + len(line) + 1, line)
                time.sleep(0.002 + self.rng.random() * 0.01)  # the debounce window
            if self.unsafe == "meta-before-append":
                self.last_id = orjson.loads(line)["id"]
                self.advance_cache(0, self.count + 1)
                time.sleep(0.002 + self.rng.random() * 0.01)  # the window before the append is durable
            end = self.append(line)
            if self.unsafe != "ack-before-write":
                self.ack(end, line)
            self.count += 1
            if self.layout == "logician":
                self.last_id = orjson.loads(line)["id"]
            if self.unsafe != "meta-before-append":
                self.advance_cache(end, self.count)
            if per_record_lock:
                self.unlock()
            written += 1
        if self.use_lock and not per_record_lock:
            self.unlock()


def _append_unsynced(path: Path, line: bytes) -> int:
    """The ``no-fsync`` bug: one O_APPEND ``write()`` of the record and its newline, no fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        data = memoryview(line + b"\n")
        while data:
            data = data[os.write(fd, data):]
        return os.lseek(fd, 0, os.SEEK_CUR)
    finally:
        os.close(fd)


def _last_line(handle, size: int) -> tuple[int, bytes | None]:
    """Return (offset just past the last newline, the last complete line) reading backwards."""
    end, block, tail = size, 1 << 16, b""
    while end > 0:  # find the last newline
        start = max(0, end - block)
        handle.seek(start)
        chunk = handle.read(end - start)
        tail = chunk + tail
        at = chunk.rfind(b"\n")
        if at >= 0:
            keep = start + at + 1
            break
        end = start
    else:
        return 0, None
    body = tail[: keep - (size - len(tail))][:-1]  # bytes before that newline that we hold
    start_of_last = body.rfind(b"\n")
    while start_of_last < 0 and keep - 1 - len(body) > 0:  # the last line began further back
        begin = max(0, keep - 1 - len(body) - block)
        handle.seek(begin)
        body = handle.read(keep - 1 - len(body) - begin) + body
        start_of_last = body.rfind(b"\n")
    return keep, body[start_of_last + 1 :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="levelsess chaos writer", description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default="w0", help="writer name: its session folder and id")
    parser.add_argument("--layout", choices=("levelcode", "logician"), default="levelcode")
    parser.add_argument("--unsafe", choices=sorted(UNSAFE), help="run a deliberately unsafe writer")
    parser.add_argument("--shared-file", action="store_true", help="append to the one shared journal")
    parser.add_argument("--no-lock", action="store_true", help="skip the lock protocol (with --shared-file: shows what the lock buys)")
    parser.add_argument("--largest", type=int, default=MAX_RECORD, help="largest record in bytes (log-uniform from 100 B)")
    parser.add_argument("--max-records", type=int, help="stop after this many records (default: until killed)")
    args = parser.parse_args(argv)
    root = os.environ.get("LEVELSESS_CHAOS_DIR")
    if not root:
        parser.error("LEVELSESS_CHAOS_DIR is not set")
    layout = UNSAFE.get(args.unsafe, args.layout) if args.unsafe else args.layout
    writer = Writer(Path(root), os.environ.get("LEVELSESS_CHAOS_SEED", "0"), args.name, layout, args.unsafe,
                    args.shared_file, not args.no_lock, args.largest, args.max_records)
    writer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
