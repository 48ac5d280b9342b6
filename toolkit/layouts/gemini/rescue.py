"""``fsck --relink --yes`` for Gemini CLI: rebuild a session's lost metadata line.

A session whose first line is torn (does not parse) or missing is one Gemini cannot load, and its
start-up sweep deletes it at any age (SOURCES-MORE §1.5, §1.6; gemini-cli#27276).  Every message
may still be there.  This rebuilds the metadata line from what the file, its name and Gemini's
own project files prove, and nothing else:

- ``sessionId``: the id a later ``$set`` names (a resume writes it), a whole one left in the torn
  line, a subagent file's own name, or the one session artefact of the project (``logs/session-
  <id>.jsonl``, ``tool-outputs/session-<id>/``, ``chats/<id>/``, ``<id>/``) whose id begins with the
  8 characters the file name ends with; each must agree with the name and with each other;
- ``projectHash``: sha256 of the project root (``.project_root``, ``projects.json``), or the
  folder's own name when it is the older ``tmp/<sha256>``; a whole one left in the torn line must agree;
- ``startTime``: a whole one in the torn line, else the first timestamp of the file's lines;
  ``lastUpdated``: the latest timestamp of its lines (messages and ``$set.lastUpdated``);
- ``kind``: ``subagent`` in ``chats/<parentId>/``, ``main`` in ``chats/``.

A value that cannot be proven refuses the rescue, saying which.  The new file is the rebuilt line
followed by every byte of the old one from its first whole line after the torn one (a missing
line: from byte 0), byte for byte; the torn line's bytes stay in the original, which is kept in
levelsess's quarantine before the swap (:func:`toolkit.durable.rewriting`: compare-and-swap,
lines appended meanwhile carried over).  The new file must check free of ``missing-meta`` and
line damage, with every record of the old one, before it replaces it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import LevelsessError, RelinkRefusedError
from .chat import META, MESSAGE, SET, classify

#: what a rescue mends: the lost metadata line (and, in the same pass, a torn tail left in the original)
MENDS = frozenset({"missing-meta", "invalid-json", "torn-tail", "unterminated-tail"})
_ID8 = re.compile(r"-([a-zA-Z0-9]{8})\.jsonl$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_OPENINGS = (b'{"id":', b'{"$set":', b'{"$rewindTo":', b'{"sessionId":')


@dataclass(frozen=True)
class MetaPlan:
    """The rebuilt metadata line and where the kept bytes begin."""

    line: bytes
    keep_from: int  # byte offset of the first kept byte of the old file
    torn: int  # bytes of the torn first line that are left out (0: the line was missing)
    values: dict

    def describe(self) -> str:
        what = f"replace the torn first line ({self.torn:,} bytes)" if self.torn else "insert the missing metadata line"
        shown = ", ".join(f"{k} {v}" for k, v in self.values.items())
        return f"{what} with one rebuilt from what the file proves ({shown}); every other line kept byte for byte"


def needs(scan) -> bool:
    """True when the file's metadata line is torn or missing (what a rescue is for)."""
    return scan.identified and "missing-meta" in scan.codes


_PLANS: dict[tuple, MetaPlan | str] = {}  # (path, size, mtime): a plan is asked for several times per run


def plan_meta(scan) -> MetaPlan | str:
    """The metadata line to rebuild for ``scan.path``, or why it cannot be (reads only)."""
    key = (str(scan.path), scan.size, scan.mtime_ns)
    if key not in _PLANS:
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[key] = _plan_meta(scan)
    return _PLANS[key]


def _plan_meta(scan) -> MetaPlan | str:
    from ...journal import TailState

    path = scan.path
    blocking = sorted(c for c in scan.codes if c not in MENDS and _blocks(c))
    if blocking:
        return f"it also has {', '.join(blocking)}, which a rebuilt metadata line does not mend; it is left exactly as it is"
    end = scan.body_end if scan.tail is TailState.TORN else scan.size
    records: list = []
    torn, keep_from, prefix = 0, 0, b""
    try:
        with open(path, "rb") as handle:
            position = 0
            while position < end and (raw := handle.readline(end - position)):
                number, position = len(records), position + len(raw)
                value = _parse(raw.rstrip(b"\n"))
                if number == 0 and not torn and not records and value is None and not prefix:
                    prefix = raw.rstrip(b"\n")  # the torn first line: only bytes of one line, never a whole record among them
                    torn, keep_from = len(prefix), len(raw)
                    records.append(None)
                    continue
                if value is None and raw.strip():
                    return "a line other than the first does not parse either; run `levelsess fsck --salvage --yes` first"
                records.append(value)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if prefix or torn:
        if any(prefix.find(o, 1) > 0 for o in _OPENINGS):
            return "its first line holds the start of another line after the torn one: it may hold a whole record, so it is left for a person"
        if keep_from >= end:
            return "it holds nothing after its torn first line"
    elif records and classify(records[0]) == META:
        return "its first line is a whole metadata line"
    records = [v for v in records if v is not None]
    values = _prove(path, records, prefix)
    if isinstance(values, str):
        return values
    line = json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
    return MetaPlan(line, keep_from, torn, values)


def fixes(scan) -> tuple[str, ...]:
    """The codes a rescue of ``scan.path`` repairs: its line findings, and ``sweep-due`` when the
    rebuilt session is one Gemini's next start keeps (resumable, not a subagent, not too old)."""
    import time

    from .places import home_of
    from .sweep import _instant, load_retention

    codes = set(scan.codes & MENDS)
    plan = plan_meta(scan)
    if not isinstance(plan, str) and plan.values["kind"] == "main" and scan.facts.resumable:
        home = home_of(scan.path.parent)
        retention = load_retention(home) if home is not None else None
        updated = _instant(plan.values["lastUpdated"])
        hours = retention.max_age_hours if retention is not None else None
        if (retention is not None and retention.max_count is None and updated is not None
                and (hours is None or updated >= time.time() - hours * 3600)):
            codes.add("sweep-due")
    return tuple(sorted(codes))


def _blocks(code: str) -> bool:
    from ...errors import UNCORRECTABLE

    return code in UNCORRECTABLE


def _parse(raw: bytes) -> object:
    from ...lines import loads

    try:
        return loads(raw)
    except ValueError:
        return None


def _prefix_value(prefix: bytes, key: str) -> str | None:
    """A whole string value of ``key`` in the torn line's bytes (its closing quote is there), or None."""
    match = re.search(rb'"' + key.encode() + rb'"\s*:\s*("(?:[^"\\]|\\.)*")', prefix)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _prove(path: Path, records: list, prefix: bytes) -> dict | str:
    from .places import CHATS, project_root, project_sha

    subagent = path.parent.name != CHATS
    chats = path.parent.parent if subagent else path.parent
    project_dir = chats.parent
    sid = _session_id(path, records, prefix, project_dir, subagent)
    if sid.startswith("!"):
        return sid[1:]
    root = project_root(project_dir)
    if root is not None:
        project_hash = project_sha(root)
    elif _HEX64.match(project_dir.name):
        project_hash = project_dir.name
    else:
        return (f"projectHash cannot be proven: {project_dir / '.project_root'} is missing and projects.json names no project "
                f"for the folder {project_dir.name!r}, so the project root it is the sha256 of is unknown")
    torn_hash = _prefix_value(prefix, "projectHash")
    if torn_hash is not None and torn_hash != project_hash:
        return (f"projectHash cannot be proven: the torn line says {torn_hash}, the project root {root or project_dir.name} "
                f"gives {project_hash}")
    stamps = [r["timestamp"] for r in records if classify(r) == MESSAGE and isinstance(r.get("timestamp"), str)]
    stamps += [r["$set"]["lastUpdated"] for r in records
               if classify(r) == SET and isinstance(r["$set"].get("lastUpdated"), str)]
    start = _prefix_value(prefix, "startTime")
    if start is None:
        firsts = [r["timestamp"] for r in records if classify(r) == MESSAGE and isinstance(r.get("timestamp"), str)]
        if not firsts:
            return "startTime cannot be proven: no message in the file carries a timestamp"
        start = min(firsts)
    if not stamps:
        return "lastUpdated cannot be proven: no line in the file carries a timestamp"
    values = {"sessionId": sid, "projectHash": project_hash, "startTime": start, "lastUpdated": max(stamps + [start]),
              "kind": "subagent" if subagent else "main"}
    return values


def _session_id(path: Path, records: list, prefix: bytes, project_dir: Path, subagent: bool) -> str:
    """The session id the file proves, or ``!why`` it proves none."""
    if subagent:
        short = None
        named = {path.stem}
    else:
        match = _ID8.search(path.name)
        if match is None:
            return f"!sessionId cannot be proven: the file name {path.name!r} does not end with the id's 8 characters"
        short = match.group(1)
        named = set()
    said = {r["$set"]["sessionId"] for r in records if classify(r) == SET and isinstance(r["$set"].get("sessionId"), str)}
    torn = _prefix_value(prefix, "sessionId")
    if torn is not None:
        said.add(torn)
    candidates = named | said
    if not subagent and not candidates:
        candidates = _artefacts(project_dir, short)
    if short is not None:
        wrong = sorted(c for c in candidates if _safe(c)[:8] != short)
        if wrong:
            return f"!sessionId cannot be proven: {', '.join(wrong)} does not begin with {short!r}, as the file name does"
    if len(candidates) != 1:
        found = f"it names {len(candidates)} ({', '.join(sorted(candidates))})" if candidates else "no $set names it"
        return (f"!sessionId cannot be proven: the file name gives only its first 8 characters ({short}) and {found}; "
                "no single session artefact of the project (logs/, tool-outputs/, chats/<id>/) completes it")
    return candidates.pop()


def _safe(sid: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", sid)


def _artefacts(project_dir: Path, short: str) -> set[str]:
    """Full session ids the project folder's own artefacts name that begin with ``short``."""
    uuid = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
    found = set()
    for where, strip in ((project_dir / "logs", ("session-", ".jsonl")), (project_dir / "tool-outputs", ("session-", "")),
                         (project_dir / "chats", ("", "")), (project_dir, ("", ""))):
        with contextlib.suppress(OSError):
            for name in os.listdir(where):
                head, tail = strip
                if name.startswith(head) and name.endswith(tail):
                    sid = name[len(head):len(name) - len(tail)] if tail else name[len(head):]
                    if uuid.match(sid) and sid.startswith(short):
                        found.add(sid)
    return found


def rescue_journal(scan, quarantine_root: Path, label: str) -> Path:
    """Rewrite ``scan.path`` with its metadata line rebuilt; the original goes to quarantine first.
    Returns the quarantine folder."""
    from ... import durable
    from ...encode import dumps
    from ...journal import TailState, scan_journal

    path = scan.path
    plan = plan_meta(scan)
    if isinstance(plan, str):
        raise RelinkRefusedError(f"{path}: the metadata line was not rebuilt: {plan}")
    end = scan.body_end if scan.tail is TailState.TORN else scan.size
    stamp = quarantine_root / durable.utc_stamp()
    quarantine = stamp / label
    created = durable.ensure_dir(quarantine)
    jobs: list = []

    def verify(candidate: Path) -> None:
        after = scan_journal(candidate, scan.layout)
        left = sorted(after.codes & {"missing-meta", "invalid-json", "spliced-records", "nul-padding", "torn-tail", "unknown-kind"})
        if left or after.records != scan.records + 1 or not after.facts.meta_first:
            raise RelinkRefusedError(f"{path}: the rebuilt session would still have {', '.join(left) or 'a different record count'}; "
                                     "the file was left as it was")

    try:
        with durable.rewriting(path, scan.size, keep_original=quarantine / path.name, before_replace=verify) as job:
            jobs.append(job)
            job.out.write(plan.line)
            job.source.read(plan.keep_from)
            left = end - plan.keep_from
            while left > 0 and (chunk := job.source.read(min(1 << 20, left))):
                job.out.write(chunk)
                left -= len(chunk)
            if scan.tail is TailState.UNTERMINATED:
                job.out.write(b"\n")
    except BaseException:
        if not (jobs and jobs[0].replaced):
            with contextlib.suppress(LevelsessError):
                durable.remove(stamp, tree=True)
            durable.remove_new_dirs(created)
        raise
    durable.atomic_write(quarantine / f"{path.name}.rescued.json", dumps(
        {"source": str(path), "carried_over": job.carried, "torn_bytes": plan.torn, "kept_from": plan.keep_from,
         "metadata": plan.values}, indent=True) + b"\n")
    return quarantine
