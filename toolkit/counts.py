"""Count what ``import`` would recover, the way ``import`` finds it (one counting for every command).

``doctor`` shows, for each install, the number of sessions ``import --from APP --source DIR``
would write: it runs the importer's own ``scan`` (its identify-before-read, its twins, its
subagents) and counts what it yields, so the two numbers can never disagree.  Read-only: the
importers only read their sources (DESIGN §5), and nothing is written to a store.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LevelsessError

#: A session that is part of another (a Claude Code subagent or sidechain): its meta ``source``
#: names the parent session.
CHILD_KIND = "subagent"


@dataclass
class Count:
    """What an import of ``source`` would recover: ``sessions`` journals, by kind."""

    app: str  # the importer's name on the command line (``--from``)
    source: Path
    sessions: int = 0
    kinds: dict = field(default_factory=dict)  # "session" | "subagent" -> how many
    orphaned: int = 0  # the editor no longer shows them
    elsewhere: int = 0  # their project folder is not on this machine
    ids: list = field(default_factory=list)  # the journal ids import would write, in scan order
    unreadable: int = 0  # source items the importer could not read (source-unreadable findings)
    problem: str | None = None  # the source could not be read at all

    @property
    def children(self) -> int:
        return self.kinds.get(CHILD_KIND, 0)

    def to_json(self) -> dict:
        return {"from": self.app, "source": str(self.source), "sessions": self.sessions, "kinds": dict(self.kinds),
                "orphaned": self.orphaned, "not_on_this_machine": self.elsewhere, "unreadable": self.unreadable,
                "problem": self.problem}

    def describe(self) -> str:
        """``12 (5 of them subagents)``: the number import would write, and what it holds."""
        if not self.children:
            return str(self.sessions)
        return f"{self.sessions} ({self.children} of them subagent{'s' if self.children != 1 else ''})"


def count_import(app: str, source: Path, options=None, jobs: int = 0) -> Count:
    """Count the sessions ``import --from app --source source`` would write (a dry run's number).

    ``jobs``: as ``import --jobs`` (0: every core for 32 MiB or more), for an importer whose source
    splits into independent units (Claude Code, Codex CLI, Gemini CLI): each worker converts its
    units and gives back what the count needs of each session, taken here in the units' order, so
    the count is a serial one's (a 400 MB ~/.gemini: 5.2 s in one process)."""
    from .importers import load
    from .importers.output import Options

    importer = load(app)
    count = Count(app, Path(source))
    kinds: Counter = Counter()
    seen: set[str] = set()
    try:
        for sid, child, orphaned, elsewhere in _sessions(importer, Path(source), options or Options(), count, jobs):
            if sid in seen:  # the same journal written twice is one session in the store
                continue
            seen.add(sid)
            count.ids.append(sid)
            kinds[CHILD_KIND if child else "session"] += 1
            count.orphaned += orphaned
            count.elsewhere += elsewhere
    except LevelsessError as exc:
        count.problem = str(exc)
    count.sessions = len(seen)
    count.kinds = dict(kinds)
    return count


def _summary(session) -> tuple[str, bool, bool, bool]:
    """What the count needs of one session: its id, whether it is a child, orphaned, elsewhere."""
    return (session.id, isinstance(session.source, dict) and bool(session.source.get("parent")), bool(session.orphaned),
            "not-on-this-machine" in (session.orphan or ()))


def _sessions(importer, source: Path, options, count: Count, jobs: int):
    """The summary of each session the import would write, in its order; a source's units in
    worker processes when ``jobs`` and their size ask for it."""
    from .importers import parallel
    from .importers.base import unfarmed

    def sink(finding) -> None:
        count.unreadable += finding.code == "source-unreadable"

    if parallel.supports(importer) and jobs != 1:
        from .importers.unchanged import sizes

        units = importer.units(source, sink)
        workers = parallel.worker_count(jobs, sum(sizes(unit, None) for unit in units), len(units))
        if workers > 1:
            yield from _in_workers(importer, units, options, count, workers)
            return
        for unit in units:
            yield from map(_summary, importer.scan_unit(unit, options, sink))
        return
    yield from map(_summary, unfarmed(importer.scan(source, options, sink), sink))


def _in_workers(importer, units: list, options, count: Count, workers: int):
    """:func:`_sessions` of ``units`` by ``workers`` forked processes (:mod:`toolkit.forked`),
    each unit's units of the same key together, in order, as an import keeps them; a unit's typed
    error stops the count where a serial one stops, after the units before it."""
    from . import forked
    from .importers import parallel

    keys = [importer.unit_key(unit) for unit in units]

    def one(index: int) -> tuple[list, int, LevelsessError | None]:
        unreadable = [0]

        def sink(finding) -> None:
            unreadable[0] += finding.code == "source-unreadable"

        found: list = []
        try:
            for session in importer.scan_unit(units[index], options, sink):
                found.append(_summary(session))
        except LevelsessError as exc:
            return found, unreadable[0], exc
        return found, unreadable[0], None

    results: dict[int, tuple] = {}
    for batch in forked.map_batches(lambda batch: [(index, one(index)) for index in batch], parallel.batches(keys, workers), workers):
        results.update(batch)
    for index in range(len(units)):
        found, unreadable, error = results[index]
        count.unreadable += unreadable
        yield from found
        if error is not None:
            raise error
