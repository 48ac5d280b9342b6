"""Rebuild index.json / meta.json from journals (DESIGN.md §2.2, §2.3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import LevelsessError
from .findings import Finding
from .fsck.check import FolderCheck, SessionCheck, check_cache, exit_code_for
from .fsck.repair import rebuild_cache, remove_dead_temps
from .index import load_cache
from .journal import JournalScan, Layout, scan_journal
from .stores import Folder, discover


@dataclass(frozen=True)
class ReindexResult:
    """Per folder: written, unchanged, skipped (stat) or refused; plus findings."""

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]
    refused: tuple[Path, ...]
    findings: tuple[Finding, ...]
    check_only: bool

    @property
    def exit_code(self) -> int:
        code = exit_code_for(f for f in self.findings if f.code == "unreadable")
        if self.refused or (self.check_only and any(f.code != "unreadable" for f in self.findings)):
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


def unchanged_by_stat(folder: Folder) -> bool:
    """True when index.json is newer than every journal and matches their count and sizes."""
    if folder.layout is not Layout.LEVELCODE:
        return False
    try:
        index_mtime = folder.cache.stat().st_mtime_ns
        stats = [j.stat() for j in folder.journals]
    except OSError:
        return False
    if any(s.st_mtime_ns >= index_mtime for s in stats):
        return False
    loaded = load_cache(folder.cache)
    entries = loaded.value if isinstance(loaded.value, list) else (loaded.value or {}).get("sessions") if isinstance(loaded.value, dict) else None
    if not isinstance(entries, list) or len(entries) != len(stats):
        return False
    if isinstance(loaded.value, dict):
        return sorted(e.get("bytes", -1) for e in entries if isinstance(e, dict)) == sorted(s.st_size for s in stats)
    return True


def reindex(folders: list[Folder], *, check_only: bool = False, full: bool = False,
            progress: Callable[[int], None] | None = None) -> ReindexResult:
    """Rebuild (or with ``check_only`` compare) each folder's cache from its journals."""
    written, unchanged, refused, findings = [], [], [], []
    for folder in whole_folders(folders):
        if progress:
            progress(1)
        if not (full or check_only) and unchanged_by_stat(folder):  # --check always compares in full
            unchanged.append(folder.cache)
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
        try:
            written_now = rebuild_cache(folder, scans)
        except LevelsessError as exc:  # an unreadable cache is never replaced
            findings.append(Finding("unreadable", "error", str(folder.cache), None, None, str(exc)))
            refused.append(folder.cache)
            continue
        if written_now is None:
            unchanged.append(folder.cache)
        else:
            written.append(folder.cache)
    return ReindexResult(tuple(written), tuple(unchanged), tuple(refused), tuple(findings), check_only)
