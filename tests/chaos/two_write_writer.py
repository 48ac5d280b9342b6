"""An external chaos writer that is legal but odd: each record's JSON and its newline go out in
two ``write()`` calls (then fsync, then ACK), so a kill between them leaves a whole record
without its newline, which a repair must keep.  It takes no lock and writes no cache.

usage: two_write_writer.py PLACE [--layout levelcode|logician] [--stall-after N] [--gap SECONDS] [--no-fsync]

PLACE says where under $LEVELSESS_CHAOS_DIR the journal goes:
  root        <dir>/-chaos-extN/<id>.jsonl                  (the chaos folder as a store root)
  store       <dir>/store/-chaos-extN/<id>.jsonl
  nested      <dir>/stores/main/-chaos-extN/<id>.jsonl      (a store root deeper down)
  ws          <dir>/ws/.logician/sessions/sessions/extN/messages.jsonl
  root-ws     <dir>/.logician/sessions/sessions/extN/messages.jsonl  (the chaos folder as a workspace)
--stall-after N writes N whole records, then the next record's JSON without its newline, and
waits to be killed (the kill lands between a record and its newline every time).
--no-fsync makes it unsafe: it ACKs after the two writes without syncing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path

import orjson


def fsync_dirs(path: Path, root: Path) -> None:
    for folder in [path, *path.parents]:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if folder == root:
            return


def journal_path(root: Path, place: str, layout: str, n: str) -> Path:
    if layout == "logician" or place in ("ws", "root-ws"):
        workspace = root / "ws" if place == "ws" else root
        return workspace / ".logician" / "sessions" / "sessions" / f"ext{n}" / "messages.jsonl"
    base = {"root": root, "store": root / "store", "nested": root / "stores" / "main"}[place]
    return base / f"-chaos-ext{n}" / f"2026-12-01T00-00-00-ex{int(n):02d}.jsonl"


def settle(journal: Path) -> tuple[int, bytes | None]:
    """Open an existing journal as a careful writer would: keep a whole unterminated record
    (append its newline), cut a torn one; return (records, last line)."""
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return 0, None
    keep = data.rfind(b"\n") + 1
    tail = data[keep:]
    if tail:
        try:
            whole = isinstance(orjson.loads(tail), dict)
        except orjson.JSONDecodeError:
            whole = False
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND)
        try:
            if whole:
                os.write(fd, b"\n")
                keep = len(data) + 1
                data += b"\n"
            else:
                os.ftruncate(fd, keep)
                data = data[:keep]
            os.fsync(fd)
        finally:
            os.close(fd)
    lines = data.split(b"\n")[:-1]
    return len(lines), (lines[-1] if lines else None)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("place", choices=("root", "store", "nested", "ws", "root-ws"))
    parser.add_argument("--layout", choices=("levelcode", "logician"), default="levelcode")
    parser.add_argument("--stall-after", type=int)
    parser.add_argument("--gap", type=float, default=0.004, help="longest pause between a record and its newline")
    parser.add_argument("--largest", type=int, default=200_000)
    parser.add_argument("--no-fsync", action="store_true", help="the bug: ACK without fsync")
    args = parser.parse_args()
    root = Path(os.environ["LEVELSESS_CHAOS_DIR"])
    n = os.environ.get("LEVELSESS_CHAOS_WRITER", "0")
    rng = random.Random(f"{os.environ.get('LEVELSESS_CHAOS_SEED', '0')}/two-write/{n}")
    journal = journal_path(root, args.place, args.layout, n)
    logician = journal.name == "messages.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    fsync_dirs(journal.parent, root)
    count, last = settle(journal)
    last_id = orjson.loads(last).get("id") if logician and last else None
    relpath = str(journal.relative_to(root))
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    if count == 0:
        fsync_dirs(journal.parent, root)
    written = 0
    while True:
        text = rng.randbytes(rng.randint(50, args.largest) // 2).hex()
        if logician:
            record = {"id": f"ext{n}-{rng.getrandbits(48):012x}", "parentId": last_id, "timestamp": "2026-12-01T00:00:00.000Z", "text": text}
            last_id = record["id"]
        elif count == 0:
            record = {"kind": "meta", "v": 2, "id": journal.stem, "project": f"/chaos/ext{n}", "createdAt": "2026-12-01T00:00:00.000Z", "title": None}
        else:
            record = {"kind": "user" if count % 2 else "assistant", "t": "2026-12-01T00:00:01.000Z", "content": text, "seq": count}
        line = orjson.dumps(record)
        os.write(fd, line)  # write 1: the record
        if args.stall_after is not None and written >= args.stall_after:
            time.sleep(3600)  # killed here: a whole record without its newline
        if args.gap:
            time.sleep(rng.uniform(0, args.gap))
        os.write(fd, b"\n")  # write 2: its newline
        if not args.no_fsync:
            os.fsync(fd)
        end = os.lseek(fd, 0, os.SEEK_CUR)
        sys.stdout.write(f"ACK {relpath} {end} {hashlib.sha256(line).hexdigest()}\n")
        sys.stdout.flush()
        count += 1
        written += 1


if __name__ == "__main__":
    sys.exit(main())
