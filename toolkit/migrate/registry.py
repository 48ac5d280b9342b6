"""The registry of migration steps, keyed by ``(format, from_version)`` (DESIGN.md §6).

Each step is one small module in this package.  A journal step exposes
``upgrade(lines) -> lines`` (raw lines without their ``\\n``, meta first); an index step
exposes ``upgrade(scans) -> document``.  Adding v3 later is one new module plus one line in
:data:`STEPS`, and raising :data:`toolkit.journal.NEWEST_VERSION`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from ..errors import UsageError


@dataclass(frozen=True)
class Step:
    """Upgrade one ``format`` ("journal" or "index") from ``from_v`` to ``to_v``."""

    format: str
    from_v: int
    to_v: int
    module: str
    summary: str

    def load(self) -> ModuleType:
        return importlib.import_module(f"{__package__}.{self.module}")


STEPS: dict[tuple[str, int], Step] = {
    ("journal", 1): Step("journal", 1, 2, "journal_v1_v2", 'add "seq": 1, 2, 3 … to every record after meta; set meta "v": 2'),
    ("index", 1): Step("index", 1, 2, "index_v1_v2", 'list -> {"v": 2, "generatedAt", "sessions"} with bytes, pinned, archived'),
}

#: The newest version of each format that this levelsess can write.
NEWEST = {fmt: max(s.to_v for s in STEPS.values() if s.format == fmt) for fmt, _ in STEPS}


def chain(fmt: str, from_v: int, to_v: int) -> list[Step]:
    """Return the steps that take ``fmt`` from ``from_v`` to ``to_v`` (empty when equal)."""
    steps, version = [], from_v
    while version < to_v:
        step = STEPS.get((fmt, version))
        if step is None:
            raise UsageError(f"no migration step for {fmt} v{version}")
        steps.append(step)
        version = step.to_v
    return steps


def check_target(to: int | None) -> int:
    """Validate ``--to``; None means the newest journal version."""
    newest = NEWEST["journal"]
    if to is None:
        return newest
    if not 1 <= to <= newest:
        raise UsageError(f"--to {to}: this levelsess knows journal versions 1 to {newest}")
    return to
