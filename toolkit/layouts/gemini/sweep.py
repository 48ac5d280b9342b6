"""What Gemini CLI's start-up sweep will delete, and legacy ``.json`` sessions checked whole.

SOURCES-MORE.md §1.6: at every start Gemini deletes, in the project it starts in, (1) every session
its list calls corrupt (metadata unreadable, no resumable content, ``kind: "subagent"``) at any
age, (2) sessions last updated before ``maxAge``, (3) sessions beyond ``maxCount`` (the newest
kept, the new session taking a slot); and every file sharing a deleted file's short id goes too.
Settings: ``general.sessionRetention`` in ``<gemini>/settings.json``, defaults enabled, ``30d``,
no maxCount, ``minRetention`` ``1d``.  Nothing here writes; a session due is a ``sweep-due``
warning, so the user can keep it (``levelsess import --from gemini``) before Gemini starts.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from ...findings import Finding
from .chat import resumable

_DURATION = re.compile(r"^(\d+)([hdwm])$")
_HOURS = {"h": 1, "d": 24, "w": 24 * 7, "m": 24 * 30}
_SHORT_ID = re.compile(r"-([a-zA-Z0-9]{8})\.jsonl?$")
LEGACY_CAP = 64 << 20  # a legacy file larger than this is not parsed (reported, never touched)


@dataclass(frozen=True)
class Retention:
    """``general.sessionRetention`` as Gemini would read it, and where it came from."""

    enabled: bool = True
    max_age: str | None = "30d"
    max_count: int | None = None
    min_retention: str = "1d"
    source: str = "the defaults"

    @property
    def max_age_hours(self) -> int | None:
        return duration_hours(self.max_age)

    @property
    def active(self) -> bool:
        """False when the sweep deletes nothing: disabled, or maxAge shorter than minRetention."""
        age, floor = self.max_age_hours, duration_hours(self.min_retention)
        return self.enabled and not (age is not None and floor is not None and age < floor)

    def describe(self) -> str:
        parts = [f"maxAge {self.max_age}" if self.max_age else "no maxAge"]
        if self.max_count is not None:
            parts.append(f"maxCount {self.max_count}")
        return f"sessionRetention {', '.join(parts)} ({self.source})"


def duration_hours(text: object) -> int | None:
    """``30d`` -> 720; None for anything Gemini's ``^\\d+[hdwm]$`` refuses (``m`` is 30 days)."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    return int(match.group(1)) * _HOURS[match.group(2)] if match else None


def _strip_comments(data: bytes) -> bytes:
    """settings.json may hold ``//`` line comments (Gemini strips them); drop whole comment lines."""
    return b"\n".join(line for line in data.split(b"\n") if not line.lstrip().startswith(b"//"))


def load_retention(home: Path) -> Retention:
    """The retention settings in ``<home>/settings.json``, with §1.6's defaults for what is unset."""
    path = home / "settings.json"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Retention(source="the defaults: no settings.json")
    except OSError as exc:
        return Retention(source=f"the defaults: {path} cannot be read ({exc.strerror})")
    try:
        value = orjson.loads(_strip_comments(data))
    except orjson.JSONDecodeError:
        return Retention(source=f"the defaults: {path} does not parse")
    general = value.get("general") if isinstance(value, dict) else None
    given = general.get("sessionRetention") if isinstance(general, dict) else None
    if not isinstance(given, dict):
        return Retention(source=f"the defaults: {path} does not set general.sessionRetention")
    default = Retention()
    count = given.get("maxCount")
    return Retention(
        enabled=given["enabled"] if isinstance(given.get("enabled"), bool) else default.enabled,
        max_age=given["maxAge"] if isinstance(given.get("maxAge"), str) else default.max_age,
        max_count=count if type(count) is int and count > 0 else None,
        min_retention=given["minRetention"] if isinstance(given.get("minRetention"), str) else default.min_retention,
        source=str(path))


@dataclass(frozen=True)
class Candidate:
    """One session file as the sweep sees it."""

    path: Path
    hidden: str | None        # why Gemini's list calls it corrupt, or None
    updated: float | None     # lastUpdated, epoch seconds
    session_id: str | None

    @property
    def short_id(self) -> str | None:
        match = _SHORT_ID.search(self.path.name)
        return match.group(1) if match else None


def plan_sweep(candidates: list[Candidate], retention: Retention, now: float, *, whole: bool = True) -> dict[Path, str]:
    """Which files the next start deletes, and why (§1.6).  ``whole``: the candidates are the
    whole ``chats/`` folder (needed for maxCount and for twins)."""
    if not retention.active:
        return {}
    due: dict[Path, str] = {}
    valid = []
    for item in candidates:
        if item.hidden:
            due[item.path] = f"Gemini calls it corrupt: {item.hidden}; it is deleted at any age"
        else:
            valid.append(item)
    hours = retention.max_age_hours
    if hours is not None:
        cutoff = now - hours * 3600
        for item in valid:
            if item.updated is not None and item.updated < cutoff:
                days = (now - item.updated) / 86400
                due[item.path] = f"last updated {days:.0f} days ago, older than maxAge {retention.max_age}"
    if retention.max_count is not None and whole:
        left = sorted((i for i in valid if i.path not in due), key=lambda i: i.updated or 0, reverse=True)
        for item in left[max(retention.max_count - 1, 0):]:
            due[item.path] = f"beyond maxCount {retention.max_count} (the newest {retention.max_count - 1} are kept; the new session takes a slot)"
    if whole:
        gone = {item.short_id: item.path for item in candidates if item.path in due and item.short_id}
        for item in candidates:
            if item.path not in due and item.short_id in gone:
                due[item.path] = f"it shares its short id with {gone[item.short_id].name}, which is deleted"
    return due


def _instant(value: object) -> float | None:
    from ...rows import instant

    moment = instant(value)
    return moment.timestamp() if moment is not None else None


def _from_scan(scan) -> Candidate:
    facts = scan.facts if scan.identified else None
    if facts is None:
        return Candidate(scan.path, "its first line is not a Gemini metadata line", None, None)
    updated = _instant(facts.last_updated) or _instant(facts.start_time) or scan.mtime_ns / 1e9
    return Candidate(scan.path, facts.hidden_because(), updated, facts.session_id)


def legacy_session(path: Path) -> tuple[dict | None, Finding | None]:
    """A legacy whole-file ``.json`` session parsed as one document (never written), or the finding
    that says why it cannot be."""
    try:
        size = path.stat().st_size
        if size > LEGACY_CAP:
            return None, Finding("oversize", "warning", str(path), None, None,
                                 f"legacy session of {size:,} bytes: too large to check here; left as is")
        data = path.read_bytes()
    except OSError as exc:
        return None, Finding("unreadable", "error", str(path), None, None, f"cannot read it: {exc.strerror or exc}")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        line = data.count(b"\n", 0, exc.pos) + 1 if isinstance(exc.pos, int) else None
        return None, Finding("invalid-json", "error", str(path), line, exc.pos,
                             f"legacy whole-file session is not one JSON document ({exc.msg}); Gemini cannot load "
                             "it; levelsess never rewrites it", data[max(0, (exc.pos or 0) - 30):][:60].decode("utf-8", "replace"))
    return (value if isinstance(value, dict) else None), None


def _legacy_candidate(path: Path, value: dict | None) -> Candidate:
    if value is None or not (isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str)):
        return Candidate(path, "it is not a session record (no sessionId and projectHash)", None, None)
    messages = value.get("messages") if isinstance(value.get("messages"), list) else []
    hidden = ("it is a subagent session (kind \"subagent\")" if value.get("kind") == "subagent"
              else None if any(resumable(m) for m in messages) else "it holds no resumable message")
    updated = _instant(value.get("lastUpdated")) or _instant(value.get("startTime"))
    if updated is None:
        try:
            updated = path.stat().st_mtime
        except OSError:
            updated = None
    return Candidate(path, hidden, updated, value["sessionId"])


def legacy_files(folder) -> list[Path]:
    try:
        return sorted(p for p in folder.path.iterdir() if p.name.startswith("session-") and p.name.endswith(".json") and p.is_file())
    except OSError:
        return []


def folder_findings(layout, folder, scans: list) -> list[Finding]:
    """The legacy files' findings and one ``sweep-due`` warning per file the next start deletes."""
    from .places import CHATS, home_of, project_root

    if folder.path.name != CHATS or home_of(folder.path) is None:
        return []  # a subagent folder: Gemini's sweep never lists it (it goes with its parent)
    found: list[Finding] = []
    candidates = [_from_scan(scan) for scan in scans]
    if folder.whole:
        for path in legacy_files(folder):
            value, problem = legacy_session(path)
            if problem is not None:
                found.append(problem)
            candidates.append(_legacy_candidate(path, value))
    retention = load_retention(folder.store)
    due = plan_sweep(candidates, retention, time.time(), whole=folder.whole)
    project = project_root(folder.path.parent) or folder.path.parent.name
    for item in candidates:
        if item.path in due:
            subagents = folder.path / item.session_id if item.session_id else None
            extra = " (with its subagent sessions in chats/{})".format(item.session_id) if subagents and subagents.is_dir() else ""
            found.append(Finding("sweep-due", "warning", str(item.path), None, None,
                                 f"the next Gemini CLI start in {project} deletes this session{extra}: {due[item.path]} "
                                 f"[{retention.describe()}]; keep it first: levelsess import --from gemini"
                                 + (f"; then rebuild its metadata line: levelsess fsck --relink --yes {item.path}"
                                    if item.hidden and "metadata" in item.hidden and item.path.suffix == ".jsonl" else "")))
    return found
