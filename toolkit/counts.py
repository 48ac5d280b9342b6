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


def count_import(app: str, source: Path, options=None) -> Count:
    """Count the sessions ``import --from app --source source`` would write (a dry run's number)."""
    from .importers import load
    from .importers.base import unfarmed
    from .importers.output import Options

    importer = load(app)
    count = Count(app, Path(source))
    kinds: Counter = Counter()
    seen: set[str] = set()

    def sink(finding) -> None:
        count.unreadable += finding.code == "source-unreadable"

    try:
        for session in unfarmed(importer.scan(Path(source), options or Options(), sink), sink):
            if session.id in seen:  # the same journal written twice is one session in the store
                continue
            seen.add(session.id)
            count.ids.append(session.id)
            kinds[CHILD_KIND if isinstance(session.source, dict) and session.source.get("parent") else "session"] += 1
            count.orphaned += bool(session.orphaned)
            count.elsewhere += "not-on-this-machine" in (session.orphan or ())
    except LevelsessError as exc:
        count.problem = str(exc)
    count.sessions = len(seen)
    count.kinds = dict(kinds)
    return count
