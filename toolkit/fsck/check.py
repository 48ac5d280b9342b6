"""Check journals, locks and caches; never writes (borg's "check is read-only by construction")."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..errors import LevelsessError, NotAJournalError, UnknownFormatError, exit_code_for  # noqa: F401 (exit_code_for: named here too)
from ..findings import Finding
from ..workers import file_size, worker_count  # (named here too: migrate imports them from here)
from ..index import load_cache
from ..journal import JournalScan, foreign_only, scan_journal
from ..layouts import BaseLayout as Layout
from .. import durable
from ..locks import LockInfo, LockState, inspect_lock, process_start
from ..stores import Folder

MAX_BATCHES = 4096  # toolkit.forked.MAX_BATCHES (not imported: a serial check never loads it)


class SessionCheck(NamedTuple):
    """One journal: its scan (None when skipped or unreadable), lock verdict and findings."""

    journal: Path
    scan: JournalScan | None
    lock: LockInfo | None
    findings: tuple[Finding, ...]
    skipped: bool = False

    @property
    def is_symlink(self) -> bool:
        return self.journal.is_symlink()

    @property
    def in_use(self) -> bool:
        """Read, but a live writer may append to it: no repair touches it."""
        return any(f.code == "in-use" for f in self.findings)


class FolderCheck(NamedTuple):
    """A project or Logician session folder: its sessions and its cache verdict."""

    folder: Folder
    sessions: tuple[SessionCheck, ...]
    cache_findings: tuple[Finding, ...] = ()
    orphan_locks: tuple[LockInfo, ...] = ()
    leftover_temps: tuple[Path, ...] = ()

    @property
    def cache_checked(self) -> bool:
        """True when the folder's cache can be judged: every journal read, identified, not future."""
        return (self.folder.whole and self.folder.problem is None and self.folder.cache is not None and all(s.scan is not None for s in self.sessions)
                and not any(s.scan.version is not None and s.scan.version > 2 or not s.scan.identified
                            for s in self.sessions if s.scan))


@dataclass(frozen=True)
class CheckReport:
    """Everything a check found; ``exit_code`` follows DESIGN.md §3 for a check."""

    folders: tuple[FolderCheck, ...]
    strict: bool = False
    extra: tuple[Finding, ...] = field(default=())
    from_cache: int | None = None  # --incremental: journals whose verdict came from the cache
    resumed: int | None = None  # --incremental: journals that had only grown, read from where the last check stopped
    cache_error: str | None = None  # --incremental: why the cache could not be written

    @property
    def findings(self) -> list[Finding]:
        out: list[Finding] = list(self.extra)
        for folder in self.folders:
            for session in folder.sessions:
                out.extend(session.findings)
            out.extend(folder.cache_findings)
        return out

    @property
    def files(self) -> int:
        return sum(1 for f in self.folders for s in f.sessions if s.scan is not None)

    @property
    def records(self) -> int:
        return sum(s.scan.records for f in self.folders for s in f.sessions if s.scan is not None)

    @property
    def bytes(self) -> int:
        return sum(s.scan.size for f in self.folders for s in f.sessions if s.scan is not None)

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings)

    @property
    def not_checked(self) -> int:
        """Sessions skipped because a live or uncheckable writer holds them."""
        return sum(1 for f in self.folders for s in f.sessions if s.skipped)

    def refuse_foreign_only(self, targets: list) -> None:
        """Raise one clear error when the journals found are all of layouts levelsess does not know."""
        why = foreign_only([s.scan for f in self.folders for s in f.sessions if s.scan is not None])
        if why:
            raise UnknownFormatError(f"{', '.join(str(t) for t in targets)}: {why}")


def scan_one(args: tuple) -> JournalScan | LevelsessError:
    """Scan one journal: ``(path, layout, strict)``, or with --incremental ``(path, layout, strict,
    resume, checkpoint)`` (go on from an earlier scan's state; return this one's)."""
    path, layout, strict = args[:3]
    resume, checkpoint = args[3:5] if len(args) > 3 else (None, False)
    validator = None
    if strict:
        from ..schema import validate_record

        validator = validate_record
    try:
        if resume is not None:
            try:
                return scan_journal(path, layout, strict=strict, validator=validator, resume=resume, checkpoint=checkpoint)
            except LevelsessError:
                raise
            except Exception:  # noqa: BLE001 - a state this version cannot use (unpickling fails many ways): read it all
                pass
        return scan_journal(path, layout, strict=strict, validator=validator, checkpoint=checkpoint)
    except LevelsessError as exc:
        return exc


def _scan_failure(journal: Path, error: LevelsessError) -> Finding:
    if isinstance(error, NotAJournalError):  # a folder or FIFO named like a journal holds no data to lose
        return Finding("not-a-journal", "warning", str(journal), None, None, f"{error}: not checked")
    return Finding("unreadable", "error", str(journal), None, None, str(error))


def _lock_findings(journal: Path, info: LockInfo | None, force: bool) -> tuple[list[Finding], bool]:
    """Return lock findings and whether the session must be skipped."""
    if info is None:
        return [], False
    where = str(info.path)
    if not info.readable:  # never judged stale, never removed: the session is skipped
        return [Finding("unreadable", "error", where, None, None, f"{info.reason}; left as is"),
                Finding("locked", "warning", str(journal), None, None, "skipped: its lock cannot be read")], True
    if info.state is LockState.STALE:
        return [Finding("stale-lock", "warning", where, None, None, f"stale lock: {info.reason}")], False
    findings = []
    if info.state is LockState.LIVE and not info.heartbeat_ok:
        findings.append(Finding("lock-no-heartbeat", "warning", where, None, None,
                                f"{info.reason}, but the lock was last touched {info.age:.0f}s ago (hung writer?)"))
    if force:
        return findings, False
    findings.append(Finding("locked", "warning", str(journal), None, None,
                            f"skipped: {info.reason} (use --force to check it anyway)"))
    return findings, True


def _lock_names(folder: str) -> tuple[set[str], set[str]] | None:
    """The names of the lock files in ``folder`` and of its symlinks, from one listing (None when
    it cannot be listed: ask per journal)."""
    try:
        with os.scandir(folder) as listing:
            locks, links = set(), set()
            for entry in listing:
                if entry.name.endswith(".lock"):
                    locks.add(entry.name)
                if entry.is_symlink():
                    links.add(entry.name)
            return locks, links
    except OSError:
        return None


def _writer_findings(layout, journal: Path, force: bool) -> tuple[list[Finding], bool]:
    """A journal a live process is writing (no lock file to read): skipped like ``locked``.  One its
    tool may append to at any moment (running in its project) is read, for a check only reads, but
    ``in-use`` keeps every repair away from it (:func:`toolkit.fsck.repair.plan_repair`)."""
    if force:  # as for a lock: --force checks and repairs it, and the run is judged on what it found
        return [], False
    who = layout.holder(journal)
    if who is not None:
        return [Finding("in-use", "warning", str(journal), None, None,
                        f"skipped: {who} (close it, or use --force to check it anyway)")], True
    who = layout.running(journal)
    if who is None:
        return [], False
    return [Finding("in-use", "warning", str(journal), None, None,
                    f"{who}, which may be writing it: no repair touches it; quit it, then rerun "
                    "(or use --force if you are sure it is not writing this session)")], False


def run_scans(work: list[tuple[Path, Layout, bool]], jobs: int, progress: Callable | None) -> list:
    """Scan every journal, in order of ``work``; with jobs > 1, largest files first."""
    if jobs <= 1:
        results = []
        for item in work:
            results.append(scan_one(item))
            if progress:
                progress(1)
        return results
    results: list = [None] * len(work)
    batches = by_size(work, jobs)
    from .. import forked

    if forked.available():
        if any(item[2] for item in work):  # --strict: its schemas loaded once, here, not in each worker
            from ..schema import validate_record  # noqa: F401

        def done(number, scans):
            for index, result in zip(batches[number], scans):
                results[index] = result
            if progress:
                progress(len(scans))

        try:
            forked.map_batches(_scan_batch, [[work[i] for i in b] for b in batches], jobs, done)
        except (OSError, forked.WorkerLost):  # no pipes or processes left, a worker killed: the rest read here
            pass
        for index, result in enumerate(results):
            if result is None:
                results[index] = scan_one(work[index])
                if progress:
                    progress(1)
        return results
    from concurrent.futures import ProcessPoolExecutor  # here, not at the top: a serial check never loads multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=jobs) as pool:  # no os.fork here: the platform's own start method
            for batch, scans in zip(batches, pool.map(_scan_batch, [[work[i] for i in b] for b in batches])):
                for index, result in zip(batch, scans):
                    results[index] = result
                if progress:
                    progress(len(batch))
    except (OSError, BrokenProcessPool):  # no /dev/shm, no fork: the serial path gives the same answer
        return run_scans(work, 1, None)
    return results


def by_size(work: list, jobs: int) -> list[list[int]]:
    """Indexes of ``work`` in batches, largest files first, each batch an eighth of what is left
    per worker (guided scheduling): big batches while there is much to do, small ones at the end
    so that no worker waits long for the other's last one; one task per file would cost more in
    messages than small files take to read.  At most MAX_BATCHES // 2 + 1 batches."""
    sizes = [file_size(item[0]) for item in work]
    order = sorted(range(len(work)), key=sizes.__getitem__, reverse=True)
    remaining = sum(sizes)
    floor = max(remaining // (MAX_BATCHES // 2), 1)
    target = max(remaining // (jobs * 8), floor)
    batches: list[list[int]] = []
    current: list[int] = []
    held = 0
    for index in order:
        current.append(index)
        held += sizes[index]
        if held >= target:
            batches.append(current)
            remaining -= held
            current, held = [], 0
            target = max(remaining // (jobs * 8), floor)
    if current:
        batches.append(current)
    return batches


def _scan_batch(items: list) -> list:
    return [scan_one(item) for item in items]


def check_folders(
    folders: list[Folder],
    *,
    strict: bool = False,
    force: bool = False,
    jobs: int = 0,
    progress: Callable[[int], None] | None = None,
    incremental: bool = False,
) -> CheckReport:
    """Check every journal, lock and cache in ``folders``; read-only.

    ``incremental`` reuses the verdict on journals unchanged since an earlier incremental
    check and records this run's (:mod:`.incremental`: a cache outside every store, the only
    thing it writes); without it nothing is read or written but the folders themselves.
    """
    plan: list[tuple[Folder, Path, LockInfo | None, list[Finding], bool]] = []
    for layout in dict.fromkeys(f.layout for f in folders):
        layout.begin()
    listed: dict[str, tuple[set[str], set[str]] | None] = {}  # per folder, once: its locks and symlinks
    for folder in folders:
        for journal in folder.journals:
            where, name = os.path.split(journal)
            names = listed[where] if where in listed else listed.setdefault(where, _lock_names(where))
            lock_name = folder.layout.lock_name(name)
            if lock_name is None:  # no lock protocol: is a process writing it now?
                info, (lock_findings, skip) = None, _writer_findings(folder.layout, journal, force)
            else:  # a lock file beside the journal, read only when the folder has one of that name
                info = None if names is not None and lock_name not in names[0] else inspect_lock(journal.with_name(lock_name))
                lock_findings, skip = _lock_findings(journal, info, force)
            if (name in names[1]) if names is not None else journal.is_symlink():
                lock_findings.append(Finding("symlink", "warning", str(journal), None, None,
                                             "journal is a symlink: checked, but never written through"))
            plan.append((folder, journal, info, lock_findings, skip))
    memo = None
    if incremental:
        from .incremental import IncrementalCache

        memo = IncrementalCache(strict)
    cached = {journal: memo.lookup(folder.path, journal, folder.layout.name)
              for folder, journal, _, _, skip in plan if memo is not None and not skip}
    if progress and cached:
        progress(sum(1 for scan in cached.values() if scan is not None))
    if memo is None:
        work = [(journal, folder.layout, strict) for folder, journal, _, _, skip in plan if not skip]
    else:  # a journal that only grew goes on from where the last check stopped
        work = [(journal, folder.layout, strict, memo.resume_point(folder.path, journal, folder.layout.name), True)
                for folder, journal, _, _, skip in plan if not skip and cached.get(journal) is None]
    total = sum(file_size(item[0]) for item in work)
    fresh = iter(zip(work, run_scans(work, worker_count(jobs, total, len(work)), progress)))
    scans = iter([cached.get(journal) or _fresh(memo, *next(fresh))
                  for _folder, journal, _, _, skip in plan if not skip])
    by_folder: dict[Path, list[SessionCheck]] = {f.path: [] for f in folders}
    for folder, journal, info, lock_findings, skip in plan:
        if skip:
            by_folder[folder.path].append(SessionCheck(journal, None, info, tuple(lock_findings), skipped=True))
            continue
        result = next(scans)
        if isinstance(result, LevelsessError):
            by_folder[folder.path].append(SessionCheck(journal, None, info, (*lock_findings, _scan_failure(journal, result))))
        else:
            by_folder[folder.path].append(SessionCheck(journal, result, info, (*lock_findings, *result.findings)))
    checks = []
    symlinked: tuple[Finding, ...] = ()
    links: dict = {}  # each symlinked folder reported once, with the first folder it concerns
    for folder in folders:
        sessions = tuple(by_folder[folder.path])
        partial = FolderCheck(folder, sessions, (), *folder_leftovers(folder))
        cache = _judged_cache(partial, memo) if partial.cache_checked else ()
        symlinked += _symlinked_findings(folder, links)  # the report's, not the cache's: they ask for no rebuild
        extra = cache + tuple(folder.layout.folder_findings(folder, [s.scan for s in sessions if s.scan is not None]))
        extra += tuple(_leftover_findings(partial))
        if folder.problem is not None:
            extra = (Finding("unreadable", "error", str(folder.path), None, None, folder.problem),) + extra
        if strict:
            sessions = tuple(s._replace(findings=_escalate(s.findings)) for s in sessions)
            extra = _escalate(extra)
        checks.append(FolderCheck(folder, sessions, extra, partial.orphan_locks, partial.leftover_temps))
    if strict:
        symlinked = _escalate(symlinked)
    if memo is None:
        return CheckReport(tuple(checks), strict, symlinked)
    for folder in folders:
        if folder.whole and folder.problem is None:
            memo.forget_missing(folder.path, folder.journals)
    memo.save()
    return CheckReport(tuple(checks), strict, symlinked, from_cache=memo.hits, cache_error=memo.error, resumed=memo.resumed)


def _symlinked_findings(folder: Folder, seen: dict) -> tuple[Finding, ...]:
    """A symlinked folder a repair of ``folder`` would have to write through (its own, or one of
    ``.levelsess``): reported once, as a warning; ``seen`` holds those reported and the memo."""
    memo = seen.setdefault(None, {})
    found = []
    for error in folder.symlinked(memo):
        if error.link not in seen:
            seen[error.link] = True
            found.append(Finding("symlinked-folder", "warning", error.link, None, None,
                                 f"a symlink to {error.target}: checked, but never written through; {error.hint}"))
    return tuple(found)


def _judged_cache(partial: FolderCheck, memo) -> tuple[Finding, ...]:
    """check_cache, or with --incremental its last verdict when neither the journals nor the
    cache file changed since (the cache file's stamp and bytes are taken before it is read)."""
    if memo is None:
        return tuple(check_cache(partial))
    folder = partial.folder
    journals = [s.journal for s in partial.sessions]
    found = memo.cache_verdict(folder.path, folder.layout.name, folder.cache, journals)
    if found is not None:
        return found
    probe = memo.probe_cache_file(folder.cache)
    found = tuple(check_cache(partial))
    memo.remember_verdict(folder.path, folder.layout.name, folder.cache, journals, found, probe)
    return found


def _fresh(cache, item: tuple, result: JournalScan | LevelsessError) -> JournalScan | LevelsessError:
    """A journal just read: with --incremental, remember (or forget) its scan."""
    if cache is not None:
        cache.record(item[0], result if isinstance(result, JournalScan) else None, resumed=item[3] is not None)
    return result


def _escalate(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """--strict: every warning counts as an error."""
    return tuple(f._replace(severity="error") if f.severity == "warning" else f for f in findings)


def folder_leftovers(folder: Folder) -> tuple[tuple[LockInfo, ...], tuple[Path, ...]]:
    """List a whole folder once: locks whose journal is gone, and temp files of dead writers.

    Temp files are durable.atomic_writer's ``.<name>.<pid>.tmp``; a live pid's are left alone.
    """
    if not folder.whole or folder.problem is not None or not folder.path.is_dir():
        return (), ()
    journals = {j.name for j in folder.journals}
    locks_found, temps = [], []
    try:
        entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
    except OSError:  # listed a moment ago; unreadable now: nothing to tidy
        return (), ()
    for entry in entries:
        if entry.name.endswith(".jsonl.lock") and entry.name[: -len(".lock")] not in journals:
            info = inspect_lock(Path(entry.path))
            if info is not None:
                locks_found.append(info)
        elif (pid := durable.temp_owner(entry.name)) is not None and process_start(pid) is None:
            temps.append(Path(entry.path))
    return tuple(locks_found), tuple(temps)


def _leftover_findings(check: FolderCheck) -> list[Finding]:
    stale = [Finding("stale-lock", "warning", str(info.path), None, None, f"lock without a journal: {info.reason}")
             for info in check.orphan_locks if info.state is LockState.STALE]
    return stale + [Finding("leftover-temp", "warning", str(path), None, None,
                            "temporary file of an interrupted levelsess write (its process is gone)")
                    for path in check.leftover_temps]


def check_cache(check: FolderCheck) -> list[Finding]:
    """Compare a folder's index.json / meta.json with what its journals say."""
    folder = check.folder
    scans = [s.scan for s in check.sessions if s.scan is not None]
    loaded = load_cache(folder.cache)
    where = str(folder.cache)
    if loaded.state == "unreadable":  # never replaced: only bytes that were read and do not parse are corrupt
        return [Finding("unreadable", "error", where, None, None, f"{loaded.detail}; left as is")]
    return folder.layout.cache_findings(folder, scans, loaded)
