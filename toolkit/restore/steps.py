"""What a restore plans and reports: its steps per file and session, the result, and the few
file helpers both the planner (:mod:`toolkit.restore.contract`) and the backups
(:mod:`toolkit.restore.backups`) use.  Below both of them."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SALVAGEABLE
from ..findings import Finding
from ..lines import loads, open_regular

if TYPE_CHECKING:
    from ..layouts.base import BaseLayout
    from .kept import Kept

CREATE, APPEND, NOTHING, REFUSED = "create", "append", "nothing", "refused"
#: What a whole-line copy of a source can never show, so a verify that sees it fails.
DAMAGE = SALVAGEABLE | {"missing-meta", "duplicate-meta", "unknown-format", "too-deep", "bom", "crlf"}


@dataclass(frozen=True)
class SessionFiles:
    """What an app says about one kept session: the files to give back (the journals holding each
    one's lines, the first one's source-state saying what it was; where it goes), the tool's root
    they go under, and what the user opens afterwards."""

    id: str
    root: Path
    files: tuple[tuple[tuple[Path, ...], Path], ...]
    next: str | None = None


@dataclass(frozen=True)
class FileStep:
    """One file of the tool: what restore does to it, and the bytes it will then hold."""

    path: Path
    action: str  # create | append | nothing | refused
    journal: Path  # the kept journal it comes from
    size: int = 0  # its size when done
    sha256: str = ""  # its sha256 when done: the source's at its last import
    existing: int = 0  # bytes already there (an append keeps them)
    existing_sha256: str = ""
    lines: int = 0  # lines written (an append that completes a cut line counts it)
    finding: Finding | None = None
    note: str = ""  # why there is nothing to do, when that is not plain
    kept: Kept | None = field(default=None, repr=False, compare=False)

    @property
    def writes(self) -> bool:
        return self.action in (CREATE, APPEND)

    @property
    def added(self) -> int:
        return self.size - self.existing if self.writes else 0

    def to_json(self) -> dict:
        return {"path": str(self.path), "action": self.action, "journal": str(self.journal), "bytes": self.added,
                "lines": self.lines, "size": self.size, "sha256": self.sha256 or None, "existing": self.existing,
                "reason": self.finding.message if self.finding else self.note or None}


@dataclass(frozen=True)
class SessionPlan:
    id: str
    app: str
    root: Path
    files: tuple[FileStep, ...]
    next: str | None
    layout: BaseLayout = field(repr=False, compare=False)

    def to_json(self) -> dict:
        return {"id": self.id, "app": self.app, "root": str(self.root), "next": self.next,
                "files": [f.to_json() for f in self.files]}


@dataclass(frozen=True)
class RestorePlan:
    sessions: tuple[SessionPlan, ...]

    @property
    def steps(self) -> list[tuple[FileStep, SessionPlan]]:
        return [(f, s) for s in self.sessions for f in s.files if f.writes]

    @property
    def findings(self) -> list[Finding]:
        return [f.finding for s in self.sessions for f in s.files if f.finding is not None]

    @property
    def exit_code(self) -> int:
        """4 while there is something to write or something was refused; 0 when there is nothing to do."""
        return 4 if self.steps or self.findings else 0


@dataclass(frozen=True)
class RestoreResult:
    plan: RestorePlan
    applied: bool  # --yes (False: the plan only)
    findings: tuple[Finding, ...]
    exit_code: int
    stamp: str | None = None  # the backup folder's name, for --undo
    folder: Path | None = None
    written: tuple[Path, ...] = ()
    undone: bool = False  # the verify failed, so the run was undone

    def to_json(self) -> dict:
        return {"version": 1, "applied": self.applied, "stamp": self.stamp, "backup": str(self.folder) if self.folder else None,
                "sessions": [s.to_json() for s in self.plan.sessions], "written": [str(p) for p in self.written],
                "undone": self.undone, "findings": [f.to_json() for f in self.findings], "exit": self.exit_code}



def file_digest(path: Path) -> tuple[int, str]:
    """(size, sha256) of a file, read in chunks."""
    digest, size = hashlib.sha256(), 0
    with open_regular(path) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def read_meta(journal: Path) -> dict | None:
    """A kept journal's meta record (its first line), or None."""
    try:
        with open_regular(journal) as handle:
            value = loads(handle.readline())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and value.get("kind") == "meta" else None


def missing_dirs(folder: Path) -> list[Path]:
    """The folders ``ensure_dir(folder)`` would create, outermost first."""
    out = []
    while not os.path.lexists(folder) and folder != folder.parent:
        out.append(folder)
        folder = folder.parent
    return out[::-1]


@dataclass(frozen=True)
class AppResult:
    """What ``restore --app APP`` did (or, not applied, would do): the plan, the findings, the
    backup run's stamp and folder, and whether a failed verify undid it."""

    plan: object
    applied: bool
    findings: tuple[Finding, ...]
    exit_code: int
    stamp: str | None = None
    folder: Path | None = None
    undone: bool = False
    app = ""  # the --app name (a subclass sets it)

    def to_json(self) -> dict:
        return {"version": 1, "app": self.app, "applied": self.applied, "stamp": self.stamp,
                "backup": str(self.folder) if self.folder else None, **self.plan.to_json(), "undone": self.undone,
                "findings": [f.to_json() for f in self.findings], "exit": self.exit_code}
