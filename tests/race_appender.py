"""An appender that takes no lock, the way Claude Code writes (Node's ``fs.appendFileSync``): for
each record, open the file with O_APPEND|O_CREAT, write the line in one ``write``, close.  After
each close it prints ``ACK <sha256 of the record> <the record>`` (the record is in the file: any
later reader must find it).

usage: race_appender.py PATH LAYOUT COUNT [--go] [--pause SECONDS] [--stop FILE] [--parent UUID]

LAYOUT: claude | gemini | levelcode1 | levelcode2 (the record shape; gemini: a Gemini CLI user message).  COUNT: records to append (0: until
the --stop file exists).  --go: wait for a line on stdin before the first record (so a test can
start it at the worst moment without paying for the interpreter's start there).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import uuid as uuidlib


def record(layout: str, number: int, parent: str | None, seq: int) -> tuple[bytes, str | None]:
    text = f"appended while levelsess was working, number {number} " + "x" * (number * 37 % 400)
    if layout == "claude":
        me = str(uuidlib.uuid4())
        parent_json = "null" if parent is None else f'"{parent}"'
        line = (f'{{"parentUuid":{parent_json},"isSidechain":false,"type":"user","uuid":"{me}",'
                f'"timestamp":"2026-12-02T10:00:{number % 60:02d}.000Z","sessionId":"race",'
                f'"message":{{"role":"user","content":"{text}"}}}}')
        return line.encode(), me
    if layout == "gemini":
        return (f'{{"id":"{uuidlib.uuid4()}","timestamp":"2026-12-02T10:00:{number % 60:02d}.000Z","type":"user",'
                f'"content":[{{"text":"{text}"}}]}}').encode(), None
    if layout == "levelcode2":
        return f'{{"kind":"user","t":"2026-12-02T10:00:00Z","content":"{text}","seq":{seq}}}'.encode(), None
    return f'{{"kind":"user","t":"2026-12-02T10:00:00Z","content":"{text}"}}'.encode(), None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("layout", choices=["claude", "gemini", "levelcode1", "levelcode2"])
    parser.add_argument("count", type=int)
    parser.add_argument("--go", action="store_true")
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--stop")
    parser.add_argument("--parent")
    parser.add_argument("--seq", type=int, default=1)
    args = parser.parse_args()
    if args.go:
        sys.stdin.readline()
    parent, number = args.parent, 0
    while args.count == 0 or number < args.count:
        if args.stop and os.path.exists(args.stop):
            break
        line, made = record(args.layout, number, parent, args.seq + number)
        fd = os.open(args.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line + b"\n")
        finally:
            os.close(fd)
        print("ACK", hashlib.sha256(line).hexdigest(), line.decode(), flush=True)
        parent = made or parent
        number += 1
        if args.pause:
            time.sleep(args.pause)
    return 0


if __name__ == "__main__":
    sys.exit(main())
