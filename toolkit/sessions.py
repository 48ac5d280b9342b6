"""List and find sessions for ``ls``, ``show``, ``export`` and ``trash`` (DESIGN.md §3).

The journals are the truth.  A folder whose index.json levelsess itself wrote or verified, with
nothing changed since (:func:`toolkit.verified.trusted_index`, the test ``reindex`` uses), is
listed from the index plus two cheap checks per journal: its lock, and whether its last byte
is a newline (``torn``).
Any other folder is listed by scanning its journals, which also tells ``corrupt`` apart.
``--verify`` scans every journal.  Nothing here writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .errors import LevelsessError, NotAJournalError, UsageError
from .journal import TailState, open_journal, scan_journal
from .lines import Batch, iter_batches, loads
from .locks import LockState, inspect_lock, lock_path
from .rows import SessionRow, instant  # noqa: F401 (the listing's row, below the layouts that build it)
from .stores import Folder, discover_all
from .verified import trusted_index

TAIL_CODES = {"torn-tail", "unterminated-tail"}


def _lock_state(journal: Path, layout=None) -> tuple[str | None, str]:
    if layout is not None and layout.lock_path(journal) is None:  # no lock files: an open descriptor
        who = layout.writer(journal)
        return ("in-use", who) if who else (None, "")
    info = inspect_lock(lock_path(journal))
    if info is None or info.state is LockState.STALE:
        return None, ""
    return "locked", info.reason


def _scan_row(folder: Folder, journal: Path) -> SessionRow | None:
    try:
        scan = scan_journal(journal, folder.layout)
    except NotAJournalError:
        return None  # a folder or FIFO named like a journal is no session
    except LevelsessError as exc:
        return SessionRow(folder.layout.session_id(folder, journal), journal, folder.layout.value, None, None, None, None, None, None, 0, "unreadable", str(exc))
    errors = [f for f in scan.findings if f.severity == "error"]
    state, reason = "clean", ""
    if not scan.identified:
        state, reason = "unknown-format", f"looks like {scan.foreign}"
    elif any(f.code not in TAIL_CODES for f in errors):
        first = next(f for f in errors if f.code not in TAIL_CODES)
        state, reason = "corrupt", f"{first.code} at line {first.line}"
    elif scan.tail is TailState.TORN:
        state, reason = "torn", "incomplete final record"
    locked, why = _lock_state(journal, folder.layout)
    if locked:
        state, reason = locked, why
    return folder.layout.row(folder, journal, scan, state, reason)


def _index_rows(folder: Folder) -> list[SessionRow] | None:
    """Rows from a trusted v2 index (None when the index cannot be trusted: scan instead)."""
    value = trusted_index(folder)  # never a foreign-edited index: its titles are not the journals'
    if not isinstance(value, dict):
        return None
    by_id = {j.stem: j for j in folder.journals}
    with os.scandir(folder.path) as entries:  # one listing for the folder's locks, not a stat per journal
        held = {e.name[: -len(".lock")] for e in entries if e.name.endswith(".jsonl.lock")}
    rows = []
    for entry in value.get("sessions") or []:
        journal = by_id.get(entry.get("id")) if isinstance(entry, dict) else None
        if journal is None:
            return None  # ids and file names disagree: scan instead
        size = entry.get("bytes", 0)
        damage = entry.get("damage")
        # fresh: every journal is as the index saw it, so its "damage" field is the whole story
        state, reason = ("clean", "") if not isinstance(damage, str) else (
            "torn" if damage.split(" ")[0] in TAIL_CODES else "corrupt", damage)
        if journal.name in held:
            locked, why = _lock_state(journal)
            if locked:
                state, reason = locked, why
        rows.append(SessionRow(entry["id"], journal, folder.layout.name, None, entry.get("title"), entry.get("createdAt"),
                               entry.get("updatedAt"), entry.get("turns"), entry.get("model"), size, state, reason, True))
    return rows


def list_sessions(paths: list[Path], *, verify: bool = False) -> list[SessionRow]:
    """Every session under ``paths``, newest first."""
    rows = []
    folders = discover_all(paths)
    for layout in dict.fromkeys(f.layout for f in folders):
        layout.begin()
    for folder in folders:
        fast = None if verify else _index_rows(folder)
        if fast is not None:
            project = None
            rows += [_with_project(r, folder, project) for r in fast]
            continue
        if folder.problem is not None:  # a folder that cannot be listed is shown, not left out
            rows.append(SessionRow(folder.path.name, folder.path, folder.layout.value, None, None, None, None, None, None, 0,
                                   "unreadable", folder.problem))
        rows += [row for row in (_scan_row(folder, journal) for journal in folder.journals) if row is not None]
        rows += folder.layout.extra_rows(folder)  # sessions that are not journals (Gemini's legacy .json)
    rows.sort(key=_newest_key, reverse=True)
    return rows


def _newest_key(row: SessionRow) -> tuple:
    """Sort key for newest first: timestamps by instant (offsets honoured); a row whose time is
    missing or unparsable sorts after every dated row, among its kind by the raw text."""
    moment = instant(row.updated_at)
    return (1, moment, row.id) if moment is not None else (0, str(row.updated_at or ""), row.id)


def _with_project(row: SessionRow, folder: Folder, project: str | None) -> SessionRow:
    row.project = project or folder.path.name  # the index does not hold the path: show the slug
    return row


# --- filters ------------------------------------------------------------------------------

_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")
_SINCE_FORMS = "use an ISO date or time (2026-11-01, 2026-11-01T09:00:00+01:00) or an age like 7d, 12h, 30m, 2w"


class SinceBound(str):
    """The ``--since`` lower bound: its text is the canonical UTC time (``...T..:..:..mmmZ``), and it
    compares with timestamp strings as instants, so ``10:00:00+09:00`` is before ``02:00:00Z``.

    ``updated_at >= bound`` (a plain str on the left) calls ``bound.__le__`` first, because a
    subclass's reflected comparison takes priority.  Aware datetimes compare without converting
    to UTC, so no offset can overflow.  A timestamp that does not parse is compared as text with
    the canonical bound (the behaviour before offsets were honoured: dates still order, and a
    session is not hidden just because its time is odd).
    """

    moment: datetime

    def __new__(cls, moment: datetime) -> "SinceBound":
        self = super().__new__(cls, moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        self.moment = moment
        return self

    def _compare(self, other: object, by_instant, by_text):
        if not isinstance(other, str):
            return NotImplemented
        theirs = instant(other)
        return by_instant(self.moment, theirs) if theirs is not None else by_text(str(self), str(other))

    def __le__(self, other):  # other >= self
        return self._compare(other, datetime.__le__, str.__le__)

    def __lt__(self, other):  # other > self
        return self._compare(other, datetime.__lt__, str.__lt__)

    def __ge__(self, other):  # other <= self
        return self._compare(other, datetime.__ge__, str.__ge__)

    def __gt__(self, other):  # other < self
        return self._compare(other, datetime.__gt__, str.__gt__)

    __hash__ = str.__hash__


def parse_since(text: str) -> SinceBound:
    """``7d``, ``12h``, ``30m``, ``2w`` or an ISO date/time -> a UTC lower bound (see SinceBound).

    A form that does not parse, or a moment outside what a UTC datetime can hold (years 1-9999),
    is a UsageError that names the accepted forms.
    """
    stripped = text.strip()
    match = _RELATIVE.match(stripped)
    try:
        if match:
            unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
            moment = datetime.now(timezone.utc) - timedelta(**{unit: int(match.group(1))})
        else:
            try:
                moment = datetime.fromisoformat(stripped[:-1] + "+00:00" if stripped.endswith("Z") else stripped)
            except ValueError as exc:
                raise UsageError(f"--since {text}: {_SINCE_FORMS}") from exc
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            moment = moment.astimezone(timezone.utc)
    except OverflowError as exc:
        raise UsageError(f"--since {text}: out of range (years 1-9999 only); {_SINCE_FORMS}") from exc
    return SinceBound(moment)


def _texts(record: dict) -> Iterator[str]:
    """The message text of a record (user/assistant content, titles, briefings)."""
    for key in ("content", "title", "briefing", "text"):
        value = record.get(key)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for block in value:
                if isinstance(block, dict):
                    for key in ("text", "thinking", "content"):
                        if isinstance(block.get(key), str):
                            yield block[key]


def grep(path: Path, needle: str, progress: Callable[[int], None] | None = None) -> str | None:
    """The first message line of ``path`` that contains ``needle`` (case-insensitive), streaming.

    Lines are tested as raw bytes first and parsed only on a hit, so a big journal costs one
    read; memory stays bounded by the reader's chunk size.
    """
    folded = needle.casefold()
    # An ASCII needle without characters JSON may escape can be tested on the raw bytes;
    # anything else (é, "quotes", a/b) is tested on the parsed text of every line.
    quick = needle.isascii() and needle.isprintable() and not any(c in needle for c in '"\\/')
    lowered = needle.lower().encode("ascii") if quick else b""
    try:
        handle = open_journal(path)
    except LevelsessError:
        return None
    with handle:
        for item in iter_batches(handle):
            if type(item) is not Batch:
                continue
            if progress:
                progress(1)
            for line in item.lines:
                if quick and lowered not in line.lower():
                    continue
                try:
                    record = loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    for text in _texts(record):
                        at = text.casefold().find(folded)
                        if at >= 0:
                            start = max(0, at - 40)
                            return " ".join(text[start : at + len(needle) + 40].split())
    return None


@dataclass(frozen=True)
class Listing:
    """What ``ls`` lists: the sessions that passed its filters, newest first, and the grep hits."""

    rows: list[SessionRow]
    limit: int = 0  # show at most this many (0 = all)
    hits: dict[Path, str] = field(default_factory=dict)  # journal -> the matching text, for --grep
    missing: Path | None = None  # the default store, when there is none yet (a new user: not an error)
    copies: dict[str, list[Path]] = field(default_factory=dict)  # id -> other journals holding it (older imports)

    @property
    def shown(self) -> list[SessionRow]:
        return self.rows[: self.limit] if self.limit else self.rows

    @property
    def unreadable(self) -> int:
        return sum(r.state == "unreadable" for r in self.rows)

    @property
    def exit_code(self) -> int:
        return 8 if self.unreadable else 0  # something could not be listed: not clean

    def to_json(self) -> dict:
        return {"version": 1, "sessions": [{**r.to_json(), **({"match": self.hits[r.path]} if r.path in self.hits else {}),
                                            **({"copies": [str(p) for p in self.copies[r.id]]} if r.id in self.copies else {})}
                                           for r in self.shown], "total": len(self.rows), "exit": self.exit_code}


def select_sessions(paths: list[Path], *, default: bool = False, verify: bool = False, project: str | None = None,
                    since: str | None = None, needle: str | None = None, limit: int = 0,
                    progress: Callable[[int], None] | None = None) -> Listing:
    """The sessions under ``paths`` whose project (path or folder name) holds ``project``, updated
    since ``since`` (:func:`parse_since`), whose message text holds ``needle`` (:func:`grep`).

    ``default``: ``paths`` is the default store, which may not exist yet (an empty listing)."""
    if default and not paths[0].exists():
        return Listing([], limit, missing=paths[0])
    rows, copies = one_per_id(list_sessions(paths, verify=verify))
    if project:
        wanted = project.casefold()
        rows = [r for r in rows if wanted in str(r.project or "").casefold() or wanted in r.path.parent.name.casefold()]
    if since:
        bound = parse_since(since)
        rows = [r for r in rows if isinstance(r.updated_at, str) and r.updated_at >= bound]
    hits = {}
    if needle:
        for row in rows:
            hit = grep(row.path, needle, progress=progress)
            if hit is not None:
                hits[row.path] = hit
        rows = [r for r in rows if r.path in hits]
    return Listing(rows, limit, hits, copies={r.id: copies[r.id] for r in rows if r.id in copies})


def one_per_id(rows: list[SessionRow]) -> tuple[list[SessionRow], dict[str, list[Path]]]:
    """One row per session id: journals an older import stored twice (one id in two project
    folders) are one session, listed by its most recently active journal (the one ``show``
    reads), with the others' paths.  Rows without an id stay as they are."""
    groups: dict[tuple, list[SessionRow]] = {}
    for row in rows:  # one store's LevelCode journals only (two Logician workspaces may each have an "s1")
        if row.id and row.layout == "levelcode":
            groups.setdefault((row.id, str(row.path.parent.parent)), []).append(row)
    current = {key: max(group, key=_newest_key) for key, group in groups.items() if len(group) > 1}
    dropped = {id(r) for key, keep in current.items() for r in groups[key] if r is not keep}
    copies = {key[0]: [r.path for r in groups[key] if r is not keep] for key, keep in current.items()}
    return [r for r in rows if id(r) not in dropped], copies


def find_session(paths: list[Path], key: str, *, known: bool = True, note=None) -> SessionRow:
    """A session by id, unique id prefix, or journal path.  With ``note`` (show, export: reading),
    journals that hold one session id (in two project folders: an older import stored it twice)
    are one session: the most recently active is read, and ``note`` is told which and where the
    others are."""
    candidate = Path(key).expanduser()
    if candidate.suffix == ".jsonl" and candidate.exists():
        row = list_sessions([candidate], verify=True)[0]
        if known and row.state == "unknown-format":  # not a journal: no hint may send it to salvage or relink
            from .errors import UnknownFormatError

            raise UnknownFormatError(f"{candidate}: not a journal of a layout levelsess knows ({row.reason}); nothing was read as one")
        return row
    every = list_sessions(paths)
    rows = [r for r in every if r.id == key] or [r for r in every if r.id.startswith(key)]
    if not rows:
        raise UsageError(f"no session {key!r} in {', '.join(map(str, paths))}; see `levelsess ls`")
    if len(rows) > 1 and note is not None and len({r.id for r in rows}) == 1:
        current = max(rows, key=_newest_key)  # (rows come newest first; max keeps the first of equals)
        others = ", ".join(str(r.path) for r in rows if r is not current)
        note(f"{len(rows)} journals hold session {current.id} (an older import stored it twice): reading {current.path}, "
             f"the most recently active; the other copy: {others}")
        return current
    if len(rows) > 1:
        exact = all(r.id == key for r in rows)
        listed = ", ".join(str(r.path) if exact else r.id for r in rows[:4])
        raise UsageError(f"{key!r} matches {len(rows)} sessions ({listed}…); "
                         + ("name the journal by its path" if exact else "give more of the id"))
    return rows[0]


def relative_time(iso: object, now: datetime | None = None) -> str:
    if not isinstance(iso, str):
        return "-"
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    seconds = ((now or datetime.now(timezone.utc)) - moment).total_seconds()
    for size, unit in ((86400 * 365, "y"), (86400 * 30, "mo"), (86400 * 7, "w"), (86400, "d"), (3600, "h"), (60, "m")):
        if abs(seconds) >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"

