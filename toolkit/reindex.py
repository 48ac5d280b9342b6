"""Rebuild index.json / meta.json from journals (DESIGN.md §2.2, §2.3)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from . import durable, verified
from .errors import LevelsessError, NotAJournalError, SymlinkedFolderError, UnknownFormatError
from .findings import Finding
from .fsck.check import FolderCheck, SessionCheck, by_size, check_cache, exit_code_for, scan_one
from .fsck.repair import derived_cache, remove_dead_temps, write_refusal
from .journal import JournalScan, foreign_only, scan_journal
from .stores import Folder, discover
from .scan import Loaded
from .verified import vouched


class ReindexResult(NamedTuple):
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
    foreign_only: str | None = None  # set when every journal found is of a layout levelsess does not know
    no_cache: tuple[Path, ...] = ()  # folders of a layout that keeps no cache (Claude Code): nothing to rebuild

    @property
    def exit_code(self) -> int:
        code = exit_code_for(f for f in self.findings if f.code == "unreadable")
        if self.refused or (self.check_only and any(f.code not in ("unreadable", "not-a-journal") for f in self.findings)):
            code |= 4
        return code

    def to_json(self) -> dict:
        return {"version": 1, "written": [str(p) for p in self.written], "unchanged": [str(p) for p in self.unchanged],
                "refused": [str(p) for p in self.refused], "no_cache": [str(p) for p in self.no_cache],
                "findings": [f.to_json() for f in self.findings], "exit": self.exit_code}

    def refuse_foreign_only(self, targets: list) -> None:
        """Raise one clear error when the journals found are all of layouts levelsess does not know."""
        if self.foreign_only:
            raise UnknownFormatError(f"{', '.join(map(str, targets))}: {self.foreign_only}")


def whole_folders(folders: list[Folder]) -> list[Folder]:
    """Widen single-journal targets to their whole folder (a cache covers every journal)."""
    out: dict[Path, Folder] = {}
    for folder in folders:
        if not folder.whole:
            folder = discover(folder.path)[0]
        out.setdefault(folder.path, folder)
    return list(out.values())


def _named_foreign_only(folders: list[Folder]) -> str | None:
    """Why nothing can be done, when every target names single files and none of them is a journal
    of a layout levelsess knows (the one line fsck prints for the same files); else None.

    A single file stands for its whole folder (:func:`whole_folders`), so without this a text file
    named on the command line would be one refusal among its neighbours instead of the error."""
    if not folders or any(folder.whole for folder in folders):
        return None
    scans = []
    for folder in folders:
        for journal in folder.journals:
            try:
                scans.append(scan_journal(journal, folder.layout))
            except LevelsessError:  # unreadable, or not a file: the folder pass reports it
                return None
    return foreign_only(scans)


def reindex(folders: list[Folder], *, check_only: bool = False, full: bool = False,
            progress: Callable[[int], None] | None = None, memo=None, jobs: int = 1) -> ReindexResult:
    """Rebuild (or with ``check_only`` compare) each folder's cache from its journals.

    ``memo`` (an :class:`~toolkit.fsck.incremental.IncrementalCache`, import's): a journal unchanged
    since it was last scanned is not read again, and one that only grew is read from where that
    scan stopped; the scans, and so the cache, are those a full read gives.  ``jobs`` (with a
    memo): the journals of a folder the memo has no scan of are read in that many forked workers
    (0: as ``fsck`` decides, one per core for 32 MiB or more), as :func:`_remembered` reads them."""
    why = _named_foreign_only(folders)
    if why:  # `reindex notes.jsonl`: refused as `fsck notes.jsonl` refuses it, before its folder is read
        return ReindexResult((), (), (), (), check_only, foreign_only=why)
    written, unchanged, refused, findings, skipped, no_cache = [], [], [], [], [], []
    scanned: list[JournalScan] = []  # the scans with bytes of no layout this knows
    known = False  # whether a journal with bytes of a layout this knows was read
    targets = whole_folders(folders)
    lists = {"written": written, "unchanged": unchanged, "refused": refused, "skipped": skipped, "no_cache": no_cache}
    with verified.held_fingerprints():  # (each folder's, written together at the end)
        dones, writes, held = [], [], 0
        try:
            for folder in targets:
                done = _one(folder, check_only, full, memo, jobs)
                dones.append(done)
                if type(done) is _Write:
                    writes.append(done)
                    held += done.held
                    if len(writes) == WRITES_AT_ONCE or held >= SCANS_AT_ONCE:
                        _write_indexes(writes)
                        writes, held = [], 0
                if progress:
                    progress(1)
        except BaseException:  # (Ctrl-C, a bug): the indexes derived before it are still written
            with contextlib.suppress(Exception):
                _write_indexes(writes)
            raise
        _write_indexes(writes)
    for done in dones:
        done = done if type(done) is _Done else done.done
        for name, path in done.put:
            lists[name].append(path)
        findings += done.findings
        # what foreign_only asks of the scans, not the scans: a store's every one, held to the end, grew with its journals
        scanned += done.foreign
        known = known or done.known
    why = None if written or skipped or no_cache or known else foreign_only(scanned)
    return ReindexResult(tuple(written), tuple(unchanged), tuple(refused), tuple(findings), check_only, tuple(skipped), why,
                         tuple(no_cache))


class _Done(NamedTuple):
    """What reindexing one folder came to: where its cache goes ((list, path) pairs, in order), findings, and of its
    scans those with bytes of no layout this knows, and whether one with bytes of a layout it knows was read."""

    put: list[tuple[str, Path]]
    findings: list[Finding]
    foreign: list[JournalScan]
    known: bool


#: New indexes written together at most (:func:`_write_indexes`): each holds its folder's scans until it is vouched for.
WRITES_AT_ONCE = 64
#: The scans those held indexes may hold together before they are written (a scan is some 3 kB held): an
#: import of 8,000 sessions into 40 project folders held all 8,000 at once, 28 MiB at its settle's peak.
SCANS_AT_ONCE = 1024


class _Write:
    """A folder's new index, to write with the others (:func:`_write_indexes`), then vouch for
    (``vouch``); ``done``: what the folder came to once it is written (or refused)."""

    __slots__ = ("folder", "data", "vouch", "done", "held")

    def __init__(self, folder: Folder, data: bytes, vouch: Callable[[], object], done: _Done, held: int = 0) -> None:
        self.folder, self.data, self.vouch, self.done = folder, data, vouch, done
        self.held = held  # the scans ``vouch`` holds


def _write_indexes(writes: list[_Write]) -> None:
    """Write the new indexes of several folders, their fsyncs at once (:func:`durable.atomic_writes`:
    a reindex of many folders waited on the disk for each in turn), then vouch for each.  When that
    fails, each is written alone, as one folder's reindex writes it: a failure (a full disk, a
    refused folder) is that folder's finding, its index left as it was."""
    if len(writes) > 1:
        try:
            with durable.confined(*dict.fromkeys(write.folder.confinement for write in writes)):
                durable.atomic_writes([(write.folder.cache, write.data) for write in writes])
        except (LevelsessError, OSError, ValueError):  # (ValueError: two folders' index at one path, never seen)
            pass
        else:
            for write in writes:
                with durable.confined(write.folder.confinement):
                    write.vouch()
                write.data = write.vouch = None  # (its scans are let go)
            return
    for write in writes:
        folder = write.folder
        try:
            with durable.confined(folder.confinement):
                durable.atomic_write(folder.cache, write.data)
                write.vouch()
            write.data = write.vouch = None
        except LevelsessError as exc:
            done = write.done
            write.done = _Done([("refused", folder.cache)], [*done.findings, _refusal(folder, exc)], done.foreign, done.known)


def _refusal(folder: Folder, exc: LevelsessError) -> Finding:
    """The finding of a folder whose index was not written: through a symlinked folder (nothing
    written, not through the link, not beside it), or an error (an unreadable cache is never replaced)."""
    if isinstance(exc, SymlinkedFolderError):
        return Finding("symlinked-folder", "error", str(folder.path), None, None,
                       f"not reindexed: {exc.detail}, and levelsess never writes through a symlinked folder; {exc.hint}")
    return Finding("unreadable", "error", str(folder.cache), None, None, str(exc))


def _one(folder: Folder, check_only: bool, full: bool, memo, jobs: int = 1) -> _Done | _Write:
    """Rebuild (or with ``check_only`` compare) one folder's cache (:func:`reindex`): what it came
    to, or its new index to write (:class:`_Write`)."""
    findings: list[Finding] = []
    if folder.cache is None:  # Claude Code keeps none, and levelsess writes none in its tree
        return _Done([("no_cache", folder.path)], findings, [], False)
    # only an index whose exact bytes levelsess wrote or verified may skip the journals;
    # --check always compares in full
    stamps = None  # the journals' stamps the trust test took (a reindex of what changed starts from them)
    if not (full or check_only):
        found, stamps = verified.trusted(folder)
        if found is not None:
            return _Done([("unchanged", folder.cache), ("skipped", folder.cache)], findings, [], False)
    if folder.problem is not None:  # an unreadable folder: its cache is never guessed at
        findings.append(Finding("unreadable", "error", str(folder.path), None, None, folder.problem))
        return _Done([("refused", folder.cache)], findings, [], False)
    changed = _changed(folder, memo, stamps) if memo is not None and not (full or check_only) else None
    scans: list[JournalScan] = [] if changed is None else changed.scans
    readable = True
    ahead = _read_ahead(memo, folder, jobs) if memo is not None and changed is None else {}
    for journal in folder.journals if changed is None else ():
        try:
            if memo is None:
                scans.append(scan_journal(journal, folder.layout))
            elif journal in ahead:
                scans.append(_taken(ahead.pop(journal)))
            else:
                scans.append(_remembered(memo, folder, journal))
        except NotAJournalError as exc:  # a folder or FIFO named like a journal: no data, no entry
            findings.append(Finding("not-a-journal", "warning", str(journal), None, None, str(exc)))
        except LevelsessError as exc:  # reported; the folder is refused
            findings.append(Finding("unreadable", "error", str(journal), None, None, str(exc)))
            readable = False
    foreign_scans = [scan for scan in scans if scan.size and not scan.identified]
    known = any(scan.size and scan.identified for scan in scans)
    future = [s for s in scans if s.version is not None and s.version > 2]
    foreign = [s for s in scans if not s.identified]
    if future or foreign or not readable:
        for scan in future:
            findings.append(Finding("future-version", "error", str(scan.path), 1, 0,
                                    f"schema v{scan.version} is newer than this levelsess; folder cache left as is"))
        for scan in foreign:
            findings.append(Finding("unknown-format", "error", str(scan.path), None, None,
                                    f"looks like {scan.foreign}; levelsess writes no cache beside it"))
        return _Done([("refused", folder.cache)], findings, foreign_scans, known)
    if check_only:
        sessions = tuple(SessionCheck(s.path, s, None, ()) for s in scans)
        drift = check_cache(FolderCheck(folder, sessions))
        findings.extend(drift)
        # not known to differ when it could not be read
        put = "refused" if any(f.code == "unreadable" for f in drift) else "unchanged" if not drift else "written"
        return _Done([(put, folder.cache)], findings, foreign_scans, known)
    symlinked = write_refusal(folder, "rebuild-cache", folder.cache)
    try:
        if symlinked is not None:
            raise symlinked
        with durable.confined(folder.confinement):
            findings += remove_dead_temps(folder, prefix=f".{folder.cache.name}.")  # a cache write killed before its rename
            if changed is None:
                data = derived_cache(folder, scans)  # (None: right as it is, and vouched for)
                vouch = lambda: verified.vouch(folder, scans, data)  # noqa: E731
            else:
                data = changed.data
                vouch = lambda: verified.vouch(folder, changed.scans, changed.data or changed.known, changed.kept)  # noqa: E731
                if data is None:
                    vouch()
    except LevelsessError as exc:
        return _Done([("refused", folder.cache)], [*findings, _refusal(folder, exc)], foreign_scans, known)
    if data is None:
        return _Done([("unchanged", folder.cache)], findings, foreign_scans, known)
    return _Write(folder, data, vouch, _Done([("written", folder.cache)], findings, foreign_scans, known),
                  len(scans) if changed is None else len(changed.scans))


class _Changed(NamedTuple):
    """A vouched index brought up to date from the journals that changed since (:func:`_changed`)."""

    data: bytes | None  # the new index's bytes; None: the index as it is is right
    scans: list[JournalScan]  # of the journals that changed or came
    kept: dict[str, list]  # the others, by name, at the stamp the index was vouched on
    known: bytes  # the index's bytes as vouched for


def _changed(folder: Folder, memo, stamps: list[list] | None = None) -> _Changed | None:
    """An import's reindex of a folder whose index levelsess vouched for and some of whose journals
    changed since (the import appended to them, or made them): only those are read (from where the
    memo's last read stopped), and the entries the index held for them, derived again from the
    memo's scans of what they were, are replaced by theirs.  None (read the folder in full, as
    ever) when anything is not as that needs it: no vouched index, a journal of the vouched ones
    the memo has no scan of at its vouched stamp, a journal that cannot be read or is not one
    levelsess writes an index beside, or an index :func:`~toolkit.index.index_changed` cannot
    bring up to date from these alone."""
    from .index import dump_cache, index_changed, index_document, index_drift

    found = vouched(folder)
    if found is None:
        return None
    recorded, stored, known = found
    stamps = verified.journal_stamps(folder) if stamps is None else stamps  # (the trust test's, taken a moment ago)
    if stamps is None or len({name for name, *_stamp in stamps}) != len(stamps):  # (two journals of one name: not a folder's listing)
        return None
    kept = {name: stamp for name, *stamp in stamps if recorded.get(name) == stamp}
    changed = [journal for journal in folder.journals if journal.name not in kept]
    gone = []
    for name in sorted(recorded.keys() - kept.keys()):  # what the index holds of the journals that changed or went
        held = memo.kept(folder.path, folder.path / name, folder.layout.name)
        if held is None or held[0][1:] != recorded[name]:
            return None
        gone.append(held[1])
    scans = []
    for journal in changed:
        try:
            scan = _remembered(memo, folder, journal)
        except LevelsessError:  # the full read says what it is
            return None
        if scan.version is not None and scan.version > 2 or not scan.identified:
            return None
        scans.append(scan)
    derived = index_changed(stored, gone, scans)
    if derived is None:
        return None
    data = None if index_drift(Loaded("ok", stored), *derived) is None else dump_cache(index_document(*derived))
    return _Changed(data, scans, kept, known)


def _read_ahead(memo, folder: Folder, jobs: int) -> dict[Path, JournalScan | LevelsessError]:
    """The folder's journals the memo holds nothing of, each read as :func:`_remembered` reads it
    (its scan as a lookup gives it back, or the error reading it gave), in ``jobs`` forked workers
    (0: as ``fsck`` decides, one per core for 32 MiB or more); none when that is one worker.  An
    import into a store whose memo went with the user's cache folder read every journal of each
    folder it touched here, one after the other (1.4 s for 814 Codex journals)."""
    from . import forked
    from .workers import file_size, worker_count

    unknown = memo.unknown(folder.path, folder.journals) if jobs != 1 and forked.available() else []
    workers = worker_count(jobs, sum(map(file_size, unknown)), len(unknown)) if len(unknown) > 1 else 1
    if workers < 2:
        return {}
    work: list[tuple] = []  # (journal, layout, stamp, when, strict, lean), each looked up first: its stamp before the read
    for journal in unknown:
        if memo.lookup(folder.path, journal, folder.layout.name) is None:  # (it holds nothing of it: nothing to go on from)
            _where, _key, stamp, when = memo.before[journal]
            work.append((journal, folder.layout, stamp, when, memo.strict, memo.lean))
    read: dict[Path, JournalScan | LevelsessError] = {}
    batches = by_size(work, workers)

    def keep(number: int, results: list) -> None:  # each as _remembered keeps it, as its batch comes back
        for k, (scan, encoded) in zip(batches[number], results):
            memo.remember_encoded(folder.path, work[k][0], encoded)
            read[work[k][0]] = scan

    try:
        forked.map_batches(_encoded_scans, [[work[k] for k in batch] for batch in batches], workers, keep)
    except (OSError, forked.WorkerLost):  # no pipes or processes left, a worker killed: the rest are read as ever
        pass
    return read


def _taken(scan: JournalScan | LevelsessError) -> JournalScan:
    if isinstance(scan, LevelsessError):
        raise scan
    return scan


def _encoded_scans(items: list[tuple]) -> list[tuple]:
    return [_encoded_scan(item) for item in items]


def _encoded_scan(item: tuple) -> tuple:
    """A journal read as :func:`_remembered` reads one the memo holds nothing of, in a worker: (its
    scan as a lookup gives it back, or the error reading it gave; what the memo keeps of it)."""
    from .fsck.incremental import Encoded, encoded_scan, held_scan

    journal, layout, stamp, when, strict, lean = item
    scan = scan_one((journal, layout, False, None, True))
    if not isinstance(scan, JournalScan):
        return scan, Encoded(stamp, when, None, None)
    return held_scan(scan, lean), Encoded(stamp, when, *encoded_scan(journal, scan, stamp, when, strict, lean))


def _remembered(memo, folder: Folder, journal: Path) -> JournalScan:
    """``journal``'s scan: as the memo kept it, read on from where it stopped, or read in full."""
    cached = memo.lookup(folder.path, journal, folder.layout.name)
    if cached is not None:
        return cached
    resume = memo.resume_point(folder.path, journal, folder.layout.name)
    scan = scan_one((journal, folder.layout, False, resume, True))
    memo.record(journal, scan if isinstance(scan, JournalScan) else None, resumed=resume is not None)
    if isinstance(scan, LevelsessError):
        raise scan
    return memo.held(scan)  # (as a lookup gives it: the folder's scans are held until its index is written)
