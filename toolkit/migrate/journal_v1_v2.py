"""Journal v1 -> v2: number every record after meta (``"seq": n``) and set meta ``"v": 2``.

Pure byte splicing: ``,"seq":n`` goes just before each record's closing brace and the meta
line's ``v`` value is replaced (or inserted after ``kind``).  The caller has already proven
every line a valid record object without a top-level ``seq`` (the journal scan refuses a v1
record that has one), so each spliced line is that record plus exactly one member.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .members import set_member

BOM = b"\xef\xbb\xbf"
_TRAILING = b" \t\r"


def upgrade(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Yield the v2 form of each raw journal line (meta first; blank lines pass through)."""
    seq = -1
    for line in lines:
        if not line.strip():  # blank, as the journal scan defines it
            yield line
            continue
        body = line.rstrip(_TRAILING)
        seq += 1
        if seq == 0:
            bom = BOM if body.startswith(BOM) else b""
            yield bom + set_member(line[len(bom):], "v", b"2", after="kind")
            continue
        yield b"%b,\"seq\":%d}%b" % (body[:-1], seq, line[len(body):])
