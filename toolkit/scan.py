"""The contract between the reader, the caches and the layouts: what a scan of one journal found
(:class:`JournalScan`, with the :class:`TailState` of its last bytes) and a cache file as found
(:class:`Loaded`).  Below every layout and below the reader (:mod:`toolkit.journal`), which
fill them in; a layout names them without importing anything above it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from .errors import UNCORRECTABLE
from .findings import Finding


class TailState(str, Enum):
    """The bytes after the last newline, as the tail classifier judged them (one rule, one place).

    TORN is the only state a repair may cut: the bytes were proven to hold no record of the
    layout.  HELD means they may hold one (spliced records, a JSON value that is not a record,
    a line too long to inspect, an unidentified file): a finding blocks the file for a person.
    """

    NONE = "none"
    UNTERMINATED = "unterminated"
    TORN = "torn"
    HELD = "held"


@dataclass(frozen=True)
class JournalScan:
    """The result of reading one journal: findings, sizes, tail state and derived facts."""

    path: Path
    layout: object  # the layout it was read as (a toolkit.layouts.base.BaseLayout: the layouts sit above)
    size: int
    mtime_ns: int
    records: int
    body_end: int  # offset just past the last newline
    tail: TailState
    findings: tuple[Finding, ...]
    facts: object  # the layout's facts (what its caches and listings are derived from)
    foreign: str | None = None  # set when the file is not of ``layout``: what it looks like
    # with checkpoint=True: (the reader's state after the last terminated line, that line's end),
    # from which a later scan of the same file grown since can go on (fsck --incremental)
    resume_state: tuple[bytes, int] | None = field(default=None, compare=False, repr=False)

    @property
    def identified(self) -> bool:
        """True unless the file's own records say it is not a journal of ``layout``."""
        return self.foreign is None

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    @property
    def blocked(self) -> bool:
        """True when a finding needs a person: the file must not be modified at all."""
        return any(f.code in UNCORRECTABLE and f.code != "schema-violation" for f in self.findings)

    @property
    def version(self) -> int | None:
        return getattr(self.facts, "version", None)

    def unchanged(self) -> bool:
        """True when the journal still has the size and mtime it had when it was scanned."""
        try:
            info = os.stat(self.path)
        except OSError:
            return False
        return (info.st_size, info.st_mtime_ns) == (self.size, self.mtime_ns)


class Loaded(NamedTuple):
    """A cache file as found: ``state`` is missing | unreadable | corrupt | ok.

    Unreadable (permission denied, EIO, not a regular file) is an operational problem, never
    corruption: only bytes that were read and do not parse are corrupt, and only those may be
    replaced by a rebuild (DESIGN.md §1, principle 8)."""

    state: str
    value: object = None
    detail: str = ""
    raw: bytes | None = None  # the bytes judged (ok or corrupt), so a rebuild can keep exactly those
