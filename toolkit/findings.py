"""Findings: what a check found, with a stable code, and the sink that collects them."""

from __future__ import annotations

from typing import NamedTuple

from .errors import CODES, CorruptionError, LevelsessError, error_for

#: Past this many findings of one code in one file, the rest are only counted.
PER_CODE_CAP = 20
EXCERPT_BYTES = 60


class Finding(NamedTuple):
    """One problem: stable ``code``, ``severity`` (error|warning), where, and what."""

    code: str
    severity: str
    path: str
    line: int | None
    offset: int | None
    message: str
    excerpt: str | None = None
    repaired: bool = False
    saved_to: str | None = None  # where a repair put the bytes it removed or replaced

    def as_repaired(self, saved_to: str | None = None) -> Finding:
        return self._replace(repaired=True, saved_to=saved_to or self.saved_to)

    def to_error(self) -> LevelsessError:
        """Return the typed exception this finding stands for."""
        cls = error_for(self.code)
        if issubclass(cls, CorruptionError):
            return cls(self.message, path=self.path, line=self.line, offset=self.offset, excerpt=self.excerpt)
        return cls(f"{self.path}: {self.message}")

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "offset": self.offset,
            "message": self.message,
            "excerpt": self.excerpt,
            "repaired": self.repaired,
            "saved_to": self.saved_to,
        }


def excerpt(data: bytes) -> str:
    """Return a printable excerpt of at most EXCERPT_BYTES bytes."""
    return data[:EXCERPT_BYTES].decode("utf-8", "backslashreplace")


class FindingSink:
    """Collect findings for one file, capping repeats per code so memory stays bounded."""

    def __init__(self, path: str, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        self.items: list[Finding] = []
        self.counts: dict[str, int] = {}

    def add(self, code: str, message: str, line: int | None = None, offset: int | None = None, data: bytes | None = None) -> None:
        count = self.counts.get(code, 0) + 1
        self.counts[code] = count
        if count > PER_CODE_CAP:
            return
        severity = CODES[code].severity
        if self.strict and severity == "warning":
            severity = "error"
        self.items.append(Finding(code, severity, self.path, line, offset, message, excerpt(data) if data is not None else None))

    def has(self, *codes: str) -> bool:
        return any(code in self.counts for code in codes)

    def finish(self) -> tuple[Finding, ...]:
        """Return the findings, with a summary line for each capped code."""
        extra = []
        for code, count in self.counts.items():
            if count > PER_CODE_CAP:
                first = next(f for f in self.items if f.code == code)
                extra.append(first._replace(line=None, offset=None, excerpt=None,
                                     message=f"{count - PER_CODE_CAP} more {code} findings not listed"))
        return tuple(self.items + extra)
