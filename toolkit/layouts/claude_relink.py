"""``fsck --relink --yes`` for Claude Code: make a broken ``parentUuid`` chain whole again.

Each dangling ``parentUuid`` value of the main chain, and nothing else, is spliced to the uuid of
the nearest earlier main-chain record, in a new journal that must check free of dangling parents
and broken chains before it replaces the original; the original and a map of every relinked line
go to quarantine (levelsess's own data folder).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import LevelsessError, RelinkRefusedError
from .claude_records import CHAIN

CLAUDE_CODE = "claude-code"  # the layout, by name (the reader resolves it): relink sits below the layout

@dataclass(frozen=True)
class Splice:
    """Replace the ``old`` parentUuid value (JSON bytes at ``offset``) on ``line`` by ``new``."""

    line: int
    offset: int  # file offset of the value's first byte (its opening quote)
    old: bytes
    new: bytes
    target_line: int  # the line of the record it now points at


_PARENT_KEY = re.compile(rb'"parentUuid"\s*:\s*')


def plan_relinks(path: Path) -> list[Splice]:
    """The splices that relink each dangling ``parentUuid`` of the main chain to the nearest
    earlier main-chain record (never a parent that exists, never a subagent transcript, never
    the first record: a file may start mid-conversation).  Read-only; raises a typed error on
    line damage (salvage first)."""
    from ..encode import dumps
    from ..journal import iter_records
    from ..lines import open_regular

    chain: list[tuple[str, object, bool, int, int]] = []  # uuid, parent, sidechain, line, offset
    for line, offset, record in iter_records(path, CLAUDE_CODE):
        if record.get("type") in CHAIN and isinstance(record.get("uuid"), str):
            chain.append((record["uuid"], record.get("parentUuid"), record.get("isSidechain") is True, line, offset))
    uuids = {c[0] for c in chain}
    if not chain or all(c[2] for c in chain):
        return []
    splices, previous = [], None
    with open_regular(path) as handle:
        for number, (uuid, parent, side, line, offset) in enumerate(chain):
            if (number and not side and isinstance(parent, str) and parent not in uuids and previous is not None):
                handle.seek(offset)
                raw = handle.readline()
                old = dumps(parent)
                match = _PARENT_KEY.search(raw)
                if match is None or raw[match.end(): match.end() + len(old)] != old:
                    raise RelinkRefusedError(f"{path} line {line}: its parentUuid is not spelled as levelsess expects; left as is")
                splices.append(Splice(line, offset + match.end(), old, dumps(previous[0]), previous[1]))
            if not side:
                previous = (uuid, line)
    return splices


def relink_journal(scan, quarantine_root: Path, label: str) -> Path:
    """Rewrite ``scan.path`` with its dangling parents relinked; the original goes to quarantine.

    The new journal is the old one byte for byte except the spliced values (a torn tail is left
    in the quarantined original; an unterminated last record gets its newline).  It must check
    free of dangling parents and broken chains, and hold every record, before it replaces the
    original.  Returns the quarantine folder."""
    from .. import durable
    from ..journal import TailState, scan_journal

    path = scan.path
    end = scan.body_end if scan.tail is TailState.TORN else scan.size
    splices = [s for s in plan_relinks(path) if s.offset + len(s.old) <= end]  # what was checked; the rest is carried over
    if not splices:
        raise RelinkRefusedError(f"{path}: no dangling parent to relink (a cycle, or a subagent transcript, needs a person)")
    stamp = quarantine_root / durable.utc_stamp()
    quarantine = stamp / label
    created = durable.ensure_dir(quarantine)
    jobs: list = []

    def verify(candidate: Path) -> None:
        after = scan_journal(candidate, CLAUDE_CODE)
        left = sorted(after.codes & {"dangling-parent", "broken-chain", "invalid-json", "spliced-records", "torn-tail"})
        if left or after.records != scan.records:
            raise RelinkRefusedError(f"{path}: the relinked journal would still have {', '.join(left) or 'a different record count'}; "
                                      "the journal was left as it was")

    try:
        with durable.rewriting(path, scan.size, keep_original=quarantine / path.name, before_replace=verify) as job:
            jobs.append(job)
            source, out = job.source, job.out
            position = 0
            for splice in splices:
                out.write(source.read(splice.offset - position))
                source.read(len(splice.old))
                out.write(splice.new)
                position = splice.offset + len(splice.old)
            out.write(source.read(end - position))
            if scan.tail is TailState.UNTERMINATED:
                out.write(b"\n")
    except BaseException:  # refused, changed, a full disk: the journal is as it was, so no copy and no folder is left
        if not (jobs and jobs[0].replaced):
            with contextlib.suppress(LevelsessError):
                durable.remove(stamp, tree=True)
            durable.remove_new_dirs(created)
        raise
    from ..encode import dumps

    durable.atomic_write(quarantine / f"{path.name}.relinked.json", dumps(
        {"source": str(path), "carried_over": job.carried, "relinked": [{"line": s.line, "offset": s.offset, "old": s.old.decode(), "new": s.new.decode(),
                                             "now_points_at_line": s.target_line} for s in splices]}, indent=True) + b"\n")
    return quarantine
