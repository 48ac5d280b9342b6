"""Plan a migration read-only, then run it file by file, crash-safe (DESIGN.md §6).

Planning scans every journal (the same read-only scan as ``fsck``) and decides, per file,
whether it migrates, is already up to date, or is refused with a finding that says what to
do next.  Running takes each session's lock, streams the journal through the step chain into
a temp file (fsynced), checks its meta, its record count and that the original did not change,
hard-links the original into ``<store>/.levelsess/backup/<stamp>.<pid>.partial/`` and atomically
replaces it.
A kill at any instant leaves each journal as it was or as it will be; a rerun finishes the job.
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import durable, locks, verified
from ..errors import OPERATIONAL, DurabilityError, FileChangedError, LevelsessError, LockBusyError, SymlinkedFolderError, UnknownFormatError
from ..findings import Finding
from ..fsck.check import worker_count, run_scans, scan_one, file_size, exit_code_for
from ..index import build_index, dump_cache, index_document, index_drift, load_cache
from ..journal import BOM, JournalScan, foreign_only, scan_journal
from ..layouts import LEVELCODE
from ..layouts.levelcode import NEWEST_VERSION
from ..lines import Batch, Tail, iter_batches, loads
from ..locks import LockState, inspect_lock, lock_path, process_start
from ..stores import Folder, discover
from .registry import NEWEST, STEPS, chain, check_target

BACKUP = "backup"
PARTIAL = ".partial"
_TAIL_CODES = {"torn-tail", "unterminated-tail"}
_FLUSH = 1 << 20


@dataclass
class FileState:
    """One file of a migration: a journal or a folder's index.json.

    ``status`` while planned: ``migrate`` | ``rebuild`` | ``up-to-date`` | ``skipped`` | ``refused``;
    after a run: ``migrated`` | ``rebuilt`` | ``up-to-date`` | ``skipped`` | ``refused`` | ``pending``.
    """

    path: Path
    format: str  # "journal" | "index"
    folder: Folder
    from_v: int | None
    to_v: int | None
    status: str
    records: int = 0
    bytes: int = 0
    scan: JournalScan | None = field(default=None, repr=False)
    note: str = ""

    def to_json(self) -> dict:
        return {"path": str(self.path), "format": self.format, "from": self.from_v, "to": self.to_v,
                "status": self.status, "records": self.records, "bytes": self.bytes, "note": self.note}


@dataclass(frozen=True)
class MigrationResult:
    to: int
    files: tuple[FileState, ...]
    findings: tuple[Finding, ...]
    backups: tuple[Path, ...]
    dry_run: bool
    interrupted: bool = False
    listing: bool = False  # `migrate --list`: every file's version and the known steps; 4 only for a refused file

    @property
    def exit_code(self) -> int:
        if self.listing:
            return 4 if any(f.status == "refused" for f in self.files) else 0
        code = exit_code_for(f for f in self.findings if f.code in OPERATIONAL)
        if any(f.status == "refused" for f in self.files):
            code |= 4
        if self.dry_run and any(f.status in ("migrate", "rebuild") for f in self.files):
            code |= 4
        if self.interrupted:
            code |= 32
        return code

    def count(self, *statuses: str) -> int:
        return sum(f.status in statuses for f in self.files)

    def to_json(self) -> dict:
        document = {"version": 1, "to": self.to, "dry_run": self.dry_run, "files": [f.to_json() for f in self.files],
                    "findings": [f.to_json() for f in self.findings], "backups": [str(p) for p in self.backups],
                    "interrupted": self.interrupted, "exit": self.exit_code}
        if self.listing:
            document["steps"] = [{"format": s.format, "from": s.from_v, "to": s.to_v, "summary": s.summary} for s in STEPS.values()]
        return document

    def refuse_foreign_only(self, targets: list) -> None:
        """Raise one clear error when the journals found are all of layouts levelsess does not know."""
        if why := self.foreign_only:
            raise UnknownFormatError(f"{', '.join(map(str, targets))}: {why}")

    @property
    def foreign_only(self) -> str | None:
        """Why nothing here is a LevelCode journal, when every journal found is of another layout."""
        return foreign_only([f.scan for f in self.files if f.format == "journal" and f.scan is not None])


def _refusal(code: str, path: Path, message: str, line: int | None = None, offset: int | None = None) -> Finding:
    return Finding(code, "error", str(path), line, offset, message)


# --- planning (read-only) ----------------------------------------------------------------


def _judge_journal(journal: Path, folder: Folder, to: int,
                   scanned: JournalScan | LevelsessError | None = None) -> tuple[FileState, list[Finding]]:
    """Decide what to do with one journal (scanning it unless ``scanned``), writing nothing."""
    state = FileState(journal, "journal", folder, None, to, "refused")
    if journal.is_symlink():
        return state, [_refusal("symlink", journal, "not migrated: a symlinked journal is never written through; migrate the file it points to")]
    if scanned is None:
        scanned = scan_one((journal, LEVELCODE, False))
    if isinstance(scanned, LevelsessError):
        return state, [_refusal("unreadable", journal, f"not migrated: {scanned}")]
    scan = scanned
    state.scan, state.from_v, state.records, state.bytes = scan, scan.version, scan.records, scan.size
    version = scan.version
    if version is not None and version > NEWEST_VERSION:
        return state, [_refusal("future-version", journal, f"not migrated: schema v{version} is newer than this levelsess (v{NEWEST_VERSION}); upgrade levelsess", 1, 0)]
    errors = [f for f in scan.findings if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        step = ("run `levelsess fsck --repair` first" if first.code in _TAIL_CODES
                else "it is not a LevelCode journal" if first.code == "unknown-format"
                else "it needs a person: see `levelsess fsck`")
        return state, [Finding(first.code, "error", str(journal), first.line, first.offset, f"not migrated: {first.message}{more}; {step}", first.excerpt)]
    info = inspect_lock(lock_path(journal))
    mine = info is not None and info.pid == os.getpid() and info.host == locks.this_host()  # judged again under our lock
    if info is not None and info.state is not LockState.STALE and not mine:
        return state, [_refusal("locked", journal, f"not migrated: {info.reason}; close the editor and rerun")]
    if version is None:
        state.status, state.note = "skipped", "no records"
        return state, []
    if version > to:
        return state, [_refusal("no-downgrade", journal, f"not migrated: already v{version}; levelsess does not migrate down to v{to}", 1, 0)]
    if version == to:
        state.status = "up-to-date"
        return state, []
    if scan.facts.seq_field is not None:
        line, offset = scan.facts.seq_field
        return state, [_refusal("seq-conflict", journal, 'not migrated: this v1 record already has a top-level "seq" field, which v2 gives a meaning; rename it by hand, then rerun', line, offset)]
    state.status = "migrate"
    return state, []


def _index_version(value: object) -> int | None:
    if isinstance(value, list):
        return 1
    if isinstance(value, dict) and type(value.get("v")) is int:
        return value["v"]
    return None


def _judge_index(folder: Folder, journals: list[FileState]) -> tuple[FileState | None, list[Finding]]:
    """Decide what to do with a folder's index.json once its journals are judged."""
    cache = folder.cache
    if any((j.status == "refused" and j.scan is None) or (j.from_v or 0) > NEWEST_VERSION
           or (j.scan is not None and not j.scan.identified) for j in journals):
        note = "left as is: a journal in this folder is unreadable, of a newer schema or not a LevelCode journal"
        return FileState(cache, "index", folder, None, None, "skipped", note=note), []
    loaded = load_cache(cache)
    if loaded.state == "unreadable":  # never replaced: it may hold what only it holds
        return FileState(cache, "index", folder, None, None, "skipped", note=f"left as is: {loaded.detail}"), [
            Finding("unreadable", "error", str(cache), None, None, f"{loaded.detail}; left as is")]
    current = _index_version(loaded.value) if loaded.state == "ok" else None
    if current is not None and current > NEWEST["index"]:
        return None, [_refusal("future-version", cache, f"index v{current} is newer than this levelsess; left as is")]
    after = [j.to_v if j.status == "migrate" else j.from_v for j in journals if j.scan is not None]
    target = 2 if 2 in after else 1
    state = FileState(cache, "index", folder, current, target, "up-to-date")
    if not folder.whole:  # one named journal: its folder's index follows, if it has one
        if loaded.state == "missing":
            return None, []
        if any(j.status == "migrate" for j in journals):
            state.status = "rebuild"
        return state, []
    scans = [j.scan for j in journals if j.scan is not None]
    if not scans and loaded.state == "missing":
        return None, []
    if any(j.status == "migrate" for j in journals) or current != target or loaded.state != "ok":
        state.status = "rebuild"
    elif index_drift(loaded, *build_index(scans)) is not None:
        state.status, state.note = "rebuild", "stale: it did not match the journals"
    return state, []


def _leftovers(folder: Folder) -> list[Path]:
    """Stale locks and dead levelsess temp files in a folder about to be written."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder.path):
            if entry.name.endswith(".jsonl.lock"):
                info = inspect_lock(Path(entry.path))
                if info is not None and info.state is LockState.STALE:
                    found.append(Path(entry.path))
            elif (pid := durable.temp_owner(entry.name)) is not None and process_start(pid) is None:
                found.append(Path(entry.path))
    return sorted(found)


@dataclass
class MigrationPlan:
    """Every file's fate, decided read-only; :meth:`execute` carries it out."""

    to: int
    files: list[FileState]
    findings: list[Finding]
    tidy: list[Path]
    unversioned: list[Path]  # folders of the layouts without schema versions (Logician, Claude Code, Codex, Gemini)
    others: tuple[str, ...] = ()  # the names of those layouts

    def result(self, *, listing: bool = False) -> MigrationResult:
        """The plan as a dry-run result (``listing``: as ``migrate --list`` shows it)."""
        return MigrationResult(self.to, tuple(self.files), tuple(self.findings), (), dry_run=True, listing=listing)

    @property
    def work_bytes(self) -> int:
        return sum(f.bytes for f in self.files if f.status == "migrate")

    def execute(self, *, keep_backup: bool = False, progress: Callable[[int], None] | None = None,
                should_stop: Callable[[], bool] | None = None, jobs: int = 1) -> MigrationResult:
        """Run the plan; ``jobs`` worker processes (0 = automatic) share the journals."""
        return _Run(self, keep_backup, progress or (lambda n: None), should_stop or (lambda: False), jobs).go()


def plan_migration(folders: list[Folder], to: int | None = None,
                   progress: Callable[[int], None] | None = None, jobs: int = 0) -> MigrationPlan:
    """Read every journal and cache under ``folders`` and decide what migrating them means.

    Journals are read as ``fsck`` reads them, with ``jobs`` processes (0 = automatic).
    """
    target = check_target(to)
    files, findings, tidy, unversioned = [], [], [], []
    others: tuple[str, ...] = ()
    work = [(j, f.layout, False) for f in folders if f.layout.migrates
            for j in f.journals if not j.is_symlink()]
    workers = worker_count(jobs, sum(file_size(w[0]) for w in work), len(work))
    scanned = dict(zip((w[0] for w in work), run_scans(work, workers, progress)))
    for folder in folders:
        if not folder.layout.migrates:  # the schema migrations are LevelCode's
            unversioned.append(folder.path)
            others = (*others, folder.layout.name) if folder.layout.name not in others else others
            continue
        journals = []
        for journal in folder.journals:
            state, found = _judge_journal(journal, folder, target, scanned.get(journal))
            journals.append(state)
            findings += found
        symlinked = folder.confinement.refusal(folder.path)
        findings += _refuse_symlinked(journals, symlinked or folder.confinement.refusal(_backup_root(folder.store)))
        index, found = _judge_index(folder, journals)
        findings += found
        if index is not None:
            findings += _refuse_symlinked([index], symlinked)
        files += journals
        if index is not None:
            files.append(index)
        if any(f.status in ("migrate", "rebuild") for f in journals + [index] if f is not None):
            tidy += _leftovers(folder)
    return MigrationPlan(target, files, findings, tidy, unversioned, others)


def _refuse_symlinked(states: list[FileState], error: SymlinkedFolderError | None) -> list[Finding]:
    """Refuse every planned write among ``states`` when ``error`` says its folder (or the backup
    folder) is a symlink: nothing is written through one."""
    if error is None:
        return []
    found = []
    for state in states:
        if state.status in ("migrate", "rebuild"):
            state.status = "refused"
            found.append(_symlink_finding(state.path, error))
    return found


def _symlink_finding(path: Path, error: SymlinkedFolderError) -> Finding:
    where = path if path.exists() else Path(error.link or path.parent)  # a missing index: name the link
    return _refusal("symlinked-folder", where, f"not migrated: {error.detail}, and levelsess never writes through a "
                    f"symlinked folder; {error.hint}")


# --- running ------------------------------------------------------------------------------


def _backup_root(store: Path) -> Path:
    return store / ".levelsess" / BACKUP


def _lines(handle) -> Iterator[bytes]:
    for item in iter_batches(handle):
        if type(item) is Batch:
            yield from item.lines
        elif type(item) is not Tail or item.data or item.overlong is not None:  # the scan saw no tail
            raise FileChangedError("the journal changed while it was being migrated; nothing was written")


def _migrate_journal(state: FileState, to: int, backup_dir: Path) -> list[Finding]:
    """Migrate one journal under its session lock (updating ``state``); return findings."""
    findings: list[Finding] = []
    journal = state.path
    with locks.holding(journal):
        scan = state.scan
        if scan is None or not scan.unchanged():  # it moved on since planning: judge it again
            fresh, found = _judge_journal(journal, state.folder, to)
            state.scan, state.from_v, state.records, state.bytes = fresh.scan, fresh.from_v, fresh.records, fresh.bytes
            if fresh.status != "migrate" or found:
                state.status = fresh.status
                return findings + found
            scan = fresh.scan
        assert scan is not None and scan.version is not None
        steps = [step.load() for step in chain("journal", scan.version, to)]
        expected_meta = {**(scan.facts.meta or {}), "v": to}
        written = {"records": 0, "meta": None}

        def verify(temp: Path) -> None:
            # Each step splices bytes into lines the scan proved to be record objects, so
            # the copy is valid by construction (tests/migrate/test_properties.py); check
            # what construction cannot promise: the meta, the count, and no concurrent write.
            if written["meta"] != expected_meta or written["records"] != scan.records:
                raise DurabilityError(f"{journal}: the migrated copy did not verify "
                                      f"({written['records']} of {scan.records} records); the original is untouched")
            if not scan.unchanged():
                raise FileChangedError(f"{journal} changed while it was being migrated; the original is untouched")

        # carry=False: a line appended meanwhile is v1 and would not fit the v2 copy; refused, not lost
        with durable.rewriting(journal, scan.size, keep_original=backup_dir / _relative(journal, state.folder.store),
                               before_replace=verify, carry=False) as job:
            target = job.out
            lines: Iterator[bytes] = _lines(job.source)
            for step in steps:
                lines = step.upgrade(lines)
            buffer, size, records = [], 0, 0
            for line in lines:
                if line.strip():
                    records += 1
                    if records == 1:
                        written["meta"] = loads(line.removeprefix(BOM))
                buffer.append(line)
                size += len(line)
                if size >= _FLUSH:
                    target.write(b"\n".join(buffer) + b"\n")
                    buffer, size = [], 0
            if buffer:
                target.write(b"\n".join(buffer) + b"\n")
            written["records"] = records
        info = journal.stat()
        state.scan = replace(scan, path=journal, size=info.st_size, mtime_ns=info.st_mtime_ns,
                             facts=replace(scan.facts, meta=written["meta"], version=to))
        state.status, state.to_v, state.bytes = "migrated", to, info.st_size
    return findings


def _migrate_safely(args: tuple[FileState, int, Path]) -> tuple[FileState, list[Finding], bool]:
    """One journal, with its typed errors turned into findings: ``(state, findings, fatal)``.
    Runs in this process or in a worker (it returns only picklable data)."""
    state, to, backup_dir = args
    try:
        with durable.confined(state.folder.confinement):  # the plan looked; this holds at the write
            return state, _migrate_journal(state, to, backup_dir), False
    except SymlinkedFolderError as exc:
        state.status = "refused"
        return state, [_symlink_finding(state.path, exc)], False
    except LockBusyError as exc:
        state.status = "refused"
        return state, [_refusal("locked", state.path, f"not migrated: {exc}; close the editor and rerun")], False
    except FileChangedError as exc:
        state.status = "refused"
        return state, [Finding("changed-during-repair", "error", str(state.path), None, None, f"not migrated: {exc}; rerun")], False
    except LevelsessError as exc:
        return state, [Finding("repair-failed", "error", str(state.path), None, None, f"{exc}; every original is kept in the backup folder")], True


class _Run:
    def __init__(self, plan: MigrationPlan, keep_backup: bool, progress, should_stop, jobs: int = 1) -> None:
        self.plan, self.keep, self.progress, self.should_stop, self.jobs = plan, keep_backup, progress, should_stop, jobs
        self.findings: list[Finding] = list(plan.findings)
        self.backups: dict[Path, Path] = {}  # store -> this run's partial backup folder
        self.interrupted = self.fatal = False

    def go(self) -> MigrationResult:
        confinements = dict.fromkeys(f.folder.confinement for f in self.plan.files)
        with durable.confined(*confinements):  # indexes, backups and tidying: never through a symlinked folder
            return self._go()

    def _go(self) -> MigrationResult:
        files = self.plan.files
        for path in self.plan.tidy:
            self._tidy(path)
        groups: dict[Path, list[FileState]] = {}
        for state in files:
            groups.setdefault(state.folder.path, []).append(state)
        work = [s for s in files if s.format == "journal" and s.status == "migrate"]
        left = {key: sum(s in work for s in group) for key, group in groups.items()}
        for key, group in groups.items():  # folders with nothing to migrate: only their index
            if not left[key]:
                self._indexes(group)
        for state, found, fatal in self._run(work):
            self.findings += found
            self.fatal = self.fatal or fatal
            self.progress(state.bytes or 1)
            key = state.folder.path
            left[key] -= 1
            if not left[key] and not self.fatal:
                self._indexes(groups[key])
        for state in files:
            if state.status in ("migrate", "rebuild"):
                state.status = "pending"
        kept = self._finish_backups()
        return MigrationResult(self.plan.to, tuple(files), tuple(self.findings), kept, dry_run=False,
                               interrupted=self.interrupted)

    def _run(self, work: list[FileState]) -> Iterator[tuple[FileState, list[Finding], bool]]:
        """Migrate journals, in worker processes when there is enough to share (--jobs).

        Workers inherit the deferred Ctrl-C, so each finishes its current file; no new file
        is started once Ctrl-C was pressed or a write failed."""
        tasks = [(s, self.plan.to, self._backup_dir(s.folder)) for s in work]
        workers = worker_count(self.jobs, sum(s.bytes for s in work), len(work))
        if workers <= 1:
            for task in tasks:
                if self.should_stop() or self.fatal:
                    self.interrupted = self.interrupted or self.should_stop()
                    return
                yield _merge(task[0], _migrate_safely(task))
            return
        try:
            pool = ProcessPoolExecutor(max_workers=workers)
        except OSError:  # no way to start workers here: the serial path gives the same result
            self.jobs = 1
            yield from self._run(work)
            return
        with pool:
            queue, running = list(tasks), {}
            while queue or running:
                while queue and len(running) < workers and not (self.should_stop() or self.fatal):
                    task = queue.pop(0)
                    running[pool.submit(_migrate_safely, task)] = task[0]
                if not running:
                    self.interrupted = self.interrupted or self.should_stop()
                    return
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield _merge(running.pop(future), future.result())

    def _indexes(self, group: list[FileState]) -> None:
        for state in group:
            if state.format == "index" and state.status == "rebuild" and self.should_stop():
                self.interrupted = True  # an index left to rebuild: the run did not finish
            if state.format == "index" and state.status == "rebuild" and not self.should_stop():
                try:
                    self._index(state, group)
                except SymlinkedFolderError as exc:  # a folder that became a link since the plan: nothing written
                    state.status = "refused"
                    self.findings.append(_symlink_finding(state.path, exc))
                except LevelsessError as exc:
                    self.fatal = True
                    self.findings.append(Finding("repair-failed", "error", str(state.path), None, None, str(exc)))

    def _index(self, state: FileState, group: list[FileState]) -> None:
        folder = state.folder if state.folder.whole else discover(state.folder.path)[0]
        known = {s.path: s.scan for s in group if s.format == "journal" and s.scan is not None}
        scans = []
        for journal in folder.journals:
            scan = known.get(journal)
            scans.append(scan if scan is not None and scan.unchanged() else scan_journal(journal, LEVELCODE))
        if any(s.version is not None and s.version > NEWEST_VERSION for s in scans):
            state.status, state.note = "skipped", "left as is: a journal in this folder is of a newer schema"
            return
        loaded = load_cache(folder.cache)
        if loaded.state == "unreadable" or any(not s.identified for s in scans):
            state.status, state.note = "skipped", "left as is: unreadable, or a file in this folder is not a journal"
            return
        current = _index_version(loaded.value) if loaded.state == "ok" else None
        version, entries = build_index(scans)
        if current is not None and current < version:  # the registry's index steps
            document = chain("index", current, version)[-1].load().upgrade(scans)
        elif loaded.state == "ok" and index_drift(loaded, version, entries) is None:
            state.status = "up-to-date"
            return
        else:
            document = index_document(version, entries)
        durable.atomic_write(folder.cache, dump_cache(document))
        verified.vouch(folder, scans)  # a later reindex may trust these bytes by stat
        state.status, state.to_v = "rebuilt", version

    def _tidy(self, path: Path) -> None:
        try:
            if path.name.endswith(".lock"):
                info = inspect_lock(path)
                if info is None or info.state is not LockState.STALE or not locks.remove_if_unchanged(info):
                    return
                self.findings.append(Finding("stale-lock", "warning", str(path), None, None, info.reason, repaired=True))
            else:
                durable.remove(path)
                self.findings.append(Finding("leftover-temp", "warning", str(path), None, None,
                                             "temporary file of an interrupted levelsess write", repaired=True))
        except LevelsessError as exc:
            self.findings.append(Finding("repair-failed", "error", str(path), None, None, str(exc)))

    # backups: <store>/.levelsess/backup/<stamp>.<pid>.partial until the run succeeds
    def _backup_dir(self, folder: Folder) -> Path:
        store = folder.store
        if store not in self.backups:
            self.backups[store] = _backup_root(store) / f"{durable.utc_stamp()}.{os.getpid()}{PARTIAL}"
        return self.backups[store]

    def _finish_backups(self) -> tuple[Path, ...]:
        """After a run that finished: keep (rename) or prune this run's backups and those of
        earlier runs that were killed.  An interrupted or failed run keeps everything."""
        if self.interrupted or self.fatal:
            return tuple(p for p in self.backups.values() if p.exists())
        kept = []
        stores = {f.folder.store for f in self.plan.files}
        for store in sorted(stores):
            root = _backup_root(store)
            if durable.Confinement.of((store,)).refusal(root) is not None:
                continue  # a symlinked .levelsess or backup folder: this run wrote nothing there, and tidies nothing
            for partial in sorted(root.glob(f"*{PARTIAL}")) if root.is_dir() else []:
                pid = partial.name[: -len(PARTIAL)].rpartition(".")[2]
                mine = partial == self.backups.get(store)
                if not mine and (not pid.isdigit() or (int(pid) != os.getpid() and process_start(int(pid)) is not None)):
                    continue  # another migrate is running
                try:
                    if self.keep:
                        final = partial.with_name(partial.name[: -len(PARTIAL)].rpartition(".")[0])
                        durable.move(partial, final)
                        kept.append(final)
                    else:
                        durable.remove(partial, tree=True)
                except LevelsessError as exc:
                    self.findings.append(Finding("repair-failed", "error", str(partial), None, None, str(exc)))
            for empty in (root, root.parent):  # leave no empty .levelsess/backup behind
                if empty.is_dir() and not any(empty.iterdir()):
                    durable.remove(empty, tree=True)
        return tuple(kept)


def _merge(state: FileState, result: tuple[FileState, list[Finding], bool]) -> tuple[FileState, list[Finding], bool]:
    """Copy a (possibly worker-made) result back into the plan's own FileState."""
    done, findings, fatal = result
    if done is not state:
        state.scan, state.from_v, state.to_v, state.status = done.scan, done.from_v, done.to_v, done.status
        state.records, state.bytes = done.records, done.bytes
    return state, findings, fatal


def _relative(journal: Path, store: Path) -> Path:
    try:
        return journal.relative_to(store)
    except ValueError:
        return Path(journal.parent.name) / journal.name
