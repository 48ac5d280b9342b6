"""Rebuild index.json / meta.json from journals (DESIGN.md §2.2, §2.3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import LevelsessError
from .findings import Finding
from .fsck.check import FolderCheck, SessionCheck, check_cache, exit_code_for
from .fsck.repair import rebuild_cache, remove_dead_temps
from .journal import JournalScan, scan_journal
from .stores import Folder, discover
from .verified import trusted_index


@dataclass(frozen=True)
class ReindexResult:
    """Per folder: written, unchanged or refused; plus findings.

    ``skipped`` are the unchanged caches trusted without reading a journal (a subset of
    ``unchanged``): levelsess had vouched for their bytes and nothing changed since.
    """

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]
    refused: tuple[Path, ...]
    findings: tuple[Finding, ...]
    check_only: bool
    skipped: tuple[Path, ...] = ()

    @property
    def exit_code(self) -> int:
        code = exit_code_for(f for f in self.findings if f.code == "unreadable")
        if self.refused or (self.check_only and self.findings):
            code |= 4
        return code


def whole_folders(folders: list[Folder]) -> list[Folder]:
    """Widen single-journal targets to their whole folder (a cache covers every journal)."""
    out: dict[Path, Folder] = {}
    for folder in folders:
        if not folder.whole:
            folder = discover(folder.path)[0]
        out.setdefault(folder.path, folder)
    return list(out.values())


def reindex(folders: list[Folder], *, check_only: bool = False, full: bool = False,
            progress: Callable[[int], None] | None = None) -> ReindexResult:
    """Rebuild (or with ``check_only`` compare) each folder's cache from its journals."""
    written, unchanged, refused, findings, skipped = [], [], [], [], []
    for folder in whole_folders(folders):
        if progress:
            progress(1)
        # only an index whose exact bytes levelsess wrote or verified may skip the journals;
        # --check always compares in full
        if not (full or check_only) and trusted_index(folder) is not None:
            unchanged.append(folder.cache)
            skipped.append(folder.cache)
            continue
        scans: list[JournalScan] = []
        for journal in folder.journals:
            try:
                scans.append(scan_journal(journal, folder.layout))
            except LevelsessError as exc:  # reported; the folder is refused
                findings.append(Finding("unreadable", "error", str(journal), None, None, str(exc)))
        future = [s for s in scans if s.version is not None and s.version > 2]
        if future or len(scans) != len(folder.journals):
            for scan in future:
                findings.append(Finding("future-version", "error", str(scan.path), 1, 0,
                                        f"schema v{scan.version} is newer than this levelsess; folder cache left as is"))
            refused.append(folder.cache)
            continue
        if check_only:
            sessions = tuple(SessionCheck(s.path, s, None, ()) for s in scans)
            drift = check_cache(FolderCheck(folder, sessions))
            findings.extend(drift)
            (unchanged if not drift else written).append(folder.cache)
            continue
        findings += remove_dead_temps(folder, prefix=f".{folder.cache.name}.")  # a cache write killed before its rename
        if rebuild_cache(folder, scans) is None:  # either way, rebuild_cache vouches for the index it leaves
            unchanged.append(folder.cache)
        else:
            written.append(folder.cache)
    return ReindexResult(tuple(written), tuple(unchanged), tuple(refused), tuple(findings), check_only, tuple(skipped))
