"""Importers: recover chats from other editors into LevelCode v2 journals (DESIGN.md §5).

A small explicit registry: each importer module exposes ``APP``, ``detect()`` (the default
source folders on this machine), ``scan(source, options, report)`` (converted sessions) and
``source_files(source)``.  :func:`run_import` writes what they yield through
:mod:`toolkit.importers.output` and rebuilds the touched folders' caches.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import os
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from .. import tombstones
from ..blobs import Blobs
from ..errors import FileChangedError, LevelsessError, OperationalError, UsageError, exit_code_for
from ..findings import Finding
from . import parallel, unchanged
from .base import NAMES, Farm, Outcome

if TYPE_CHECKING:
    from .. import durable
    from .output import Session

# The writer (toolkit.importers.output) and the durability layer are loaded where a unit is read or
# written: an import that finds nothing new reports what was kept without them (issue 27).

#: --from NAME -> the importer's module.  Claude Code's and Codex's are their listings (claude_units,
#: codex_units), which load the converter (toolkit.importers.claude, .codex) only when a file is read.
IMPORTERS = {"cursor": "toolkit.importers.cursor", "vscode": "toolkit.importers.vscode", "copilot": "toolkit.importers.copilot",
             "claude": "toolkit.importers.claude_units", "codex": "toolkit.importers.codex_units",
             "opencode": "toolkit.importers.opencode", "gemini": "toolkit.importers.gemini_units", "cline": "toolkit.importers.cline"}


def load(name: str) -> ModuleType:
    if name not in IMPORTERS:
        raise UsageError(f"--from {name}: levelsess can import from {', '.join(sorted(IMPORTERS))}")
    return importlib.import_module(IMPORTERS[name])


class ImportReport:
    """What an import did: each session's outcome, the findings, and how many sessions it read,
    resumed and took from the import cache.  (A plain class, as the two below, not a dataclass:
    making one costs an import that finds nothing new half a millisecond of its start-up.)"""

    def __init__(self, app: str, sources: list[Path] | None = None, dry_run: bool = False) -> None:
        self.app = app
        self.sessions: list[Outcome] = []
        self.findings: list[Finding] = []
        self.sources: list[Path] = sources if sources is not None else []
        self.dry_run = dry_run
        self.read = 0        # sessions read from their sources
        self.from_cache = 0  # sessions whose sources had not changed since the last import (not read)
        self.resumed = 0     # sessions whose source only grew: read from where the last import stopped

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings) & ~1

    def to_json(self) -> dict:
        return {"version": 1, "source": self.app, "sources": [str(p) for p in self.sources],
                "sessions": [s.to_json() for s in self.sessions], "findings": [f.to_json() for f in self.findings],
                "dry_run": self.dry_run, "read": self.read, "resumed": self.resumed, "from_cache": self.from_cache,
                "exit": self.exit_code}


#: Container allocations between two young collections during an import (Python's default: 700).
#: An import's parsed lines die young, by reference count, and what lives (a group's kept lines, its
#: rows) is walked at each collection while it lives: at 700 a Claude Code import spent 5 % of its
#: time in the collector, at 20,000 0.5 %; at this, an import that finds nothing new (the import
#: cache of 814 rollouts parsed: 50,000 objects) runs no collection, where one took 1.2 ms of its 37.
#: No cycle is left to wait for it (test_import_frees.py).
YOUNG_COLLECTION = 100_000


def _fewer_collections(function: Callable) -> Callable:
    @functools.wraps(function)
    def run(*args, **kwargs):
        before = gc.get_threshold()
        gc.set_threshold(max(before[0], YOUNG_COLLECTION), *before[1:])
        try:
            return function(*args, **kwargs)
        finally:
            gc.set_threshold(*before)
    return run


@_fewer_collections
def run_import(name: str, sources: list[Path], store: Path, options, *, dry_run: bool = False, no_raw: bool = False,
               progress: Callable[[Outcome], None] | None = None, include_trashed: bool = False,
               read: Callable[[int], None] | None = None, reread: bool = False, jobs: int = 1) -> ImportReport:
    """Import every session ``name``'s importer finds under ``sources`` into ``store``.

    A session trashed from the store (``levelsess trash``: a tombstone in
    ``<store>/.levelsess/trashed.jsonl``) is not imported again, but counted (status ``trashed``,
    a ``trashed`` finding); ``include_trashed`` imports it and drops its tombstone.

    ``read(n)`` is told the bytes of each source file as its first session arrives, and the rest of
    a source's bytes when it is done: together they add up to :func:`source_bytes` (a progress bar
    with a total).

    A unit of the source (a transcript with its subagents, a rollout) that has not changed since
    the last import is not read: its outcomes come from :mod:`toolkit.importers.unchanged`'s cache,
    unless ``reread``; one that only grew is read from where the last import stopped.

    ``jobs``: worker processes for an importer whose source splits into independent units
    (:mod:`toolkit.importers.parallel`); 0 = automatic, as ``fsck --jobs``; 1 = this process
    alone.  The journals, the report and the order of everything in it are the same."""
    importer = load(name)
    report = ImportReport(importer.APP, sources=list(sources), dry_run=dry_run)
    touched: set[Path] = set()
    landed: set[Path] = set()
    stones = tombstones.read(store)
    raised: list[str] = []
    trashed_ids = set(stones)
    done: list = []  # (cache, each unit's entry) of each source
    kepts: list[unchanged.Kept] = []  # each source's, closed at the end
    lists: list = []  # (cache, a listing made this run, to keep) of each source
    memo = _Memo()  # the import's index memo, loaded when first used (an import that writes nothing never is)
    blobs = Blobs()  # each unit's resume states until the cache file is written: past a few MiB, in a temporary file
    names = NAMES.set({})  # the store's journal names, listed once (output._same_id)
    try:
        for source in sources:
            cache = unchanged.cache_path(store, name, source, options, no_raw, include_trashed)
            kept = unchanged.Kept(None if reread else cache, trashed_ids)
            kepts.append(kept)
            entries: dict[str, dict | None] = {}
            units, stamped, listing, listed = unchanged.list_units(importer, source, report.findings.append, kept)
            context = _Context(store, importer, source, options, kept, stones, dry_run, no_raw, include_trashed, jobs=jobs)
            context.remember = lambda scanned: _remember(memo.get(), *scanned)
            context.advance = read

            def take(part: _Part, unit: unchanged.Unit) -> None:  # in the order of the units, whoever read them
                report.sessions += part.sessions
                report.findings += part.findings
                report.read += part.read
                report.resumed += part.resumed
                report.from_cache += part.from_cache
                touched.update(part.touched)
                landed.update(part.landed)
                raised.extend(part.raised)
                for outcome in part.sessions:
                    if progress:
                        progress(outcome)
                if read:  # the unit's files are done, whether they made sessions or not (less what a Farm told as it went)
                    read(part.size - part.advanced)
                entry = part.entry
                if type(entry) is dict and type(entry.get("resume")) is bytes:  # (its line of resume states, for the cache file)
                    entry["resume"] = blobs.keep(entry["resume"])
                entries[unit.key] = entry
                for journal, scanned in part.scans:
                    if scanned is not None:
                        _remember(memo.get(), journal, scanned)

            ready: dict[int, _Part] = {}  # what each unit came to, until those before it are reported
            for index, unit in enumerate(units):  # the units as kept (nothing of them changed): here, at once
                part = _recalled(context, unit, stamped[index], later=True)
                if part is not None:
                    ready[index] = part
            kept.folders = None  # (units are read from here on: a project folder may appear)
            unit_key, known_keys = _unit_keys(importer, units, kept, set(ready))
            todo = [index for index in range(len(units)) if index not in ready]
            if todo and ready and hasattr(importer, "unit_key"):  # a unit that may write a journal a kept one reads:
                keys = [unit_key(index) for index in range(len(units))]  # both go in order, as one process does
                busy = {keys[index] for index in todo}
                for index in [i for i in ready if keys[i] in busy]:
                    del ready[index]
                todo = [index for index in range(len(units)) if index not in ready]
            # the cache file stays as it is (unless an earlier build's: written again in this one's form)
            as_kept = not todo and kept.current and set(kept.units) == {unit.key for unit in units}
            if not dry_run and not as_kept:
                kept.hold()  # (what resuming needs is read from the file first)
                unchanged.forget(cache)  # until this source's run is done and durable
            reported = [0]

            def release(index: int | None = None, part: _Part | None = None) -> None:
                if index is not None:
                    ready[index] = part
                while reported[0] in ready:
                    take(ready.pop(reported[0]), units[reported[0]])
                    reported[0] += 1

            release()
            workers = (parallel.worker_count(jobs, sum(_to_read(context, units[i], stamped[i]) for i in todo), len(todo))
                       if jobs != 1 and len(todo) > 1 and parallel.supports(importer) else 1)
            keys = [unit_key(i) for i in todo] if hasattr(importer, "unit_key") else list(map(str, todo))
            if workers > 1:
                context.read_back = not dry_run
                context.remember = None  # a worker's scans go back to this process with its units
                parallel.run(keys, lambda k: _begin(context, units[todo[k]], stamped[todo[k]]), workers,
                             lambda k, part: release(todo[k], part))
            else:
                def begin(k: int) -> Callable[[], _Part]:
                    part = _Part()

                    def failed() -> None:  # what it wrote is still settled below
                        touched.update(part.touched)
                        landed.update(part.landed)
                        raised.extend(part.raised)

                    try:
                        finish = _begin(context, units[todo[k]], stamped[todo[k]], part)
                    except BaseException:
                        failed()
                        raise

                    def finished() -> _Part:
                        try:
                            return finish()
                        except BaseException:
                            failed()
                            raise
                    return finished

                with _worked_ahead(*_ahead_of(context, [units[i] for i in todo], [stamped[i] for i in todo])):
                    for k, part in parallel.pipelined(keys, range(len(todo)), begin):
                        release(todo[k], part)
            context.close()
            if not dry_run and not as_kept:
                done.append((cache, _with_keys(entries, known_keys)))
            if not dry_run and listing is not None and not listed:
                lists.append((cache, listing))
    except BaseException:  # a full disk, Ctrl-C: what was written is still made durable and indexed, if it can be
        try:
            if landed and not dry_run:
                with contextlib.suppress(LevelsessError):  # on a full disk the index may not fit: the error that stopped us is the news
                    _settle(sorted(touched), sorted(landed), report, memo.get())  # (no workers forked on the way out)
        finally:
            for kept in kepts:
                kept.close()
        raise
    finally:
        NAMES.reset(names)
        if raised:  # imported again: the tombstones go (one append), even when the run stops later
            tombstones.unbury(store, raised)
    try:
        if landed and not dry_run:
            _settle(sorted(touched), sorted(landed), report, memo.get(), jobs)
        for cache, entries in done:  # after the journals and indexes are durable
            with contextlib.suppress(LevelsessError):
                unchanged.remember(cache, trashed_ids - set(raised), entries)
        for cache, listing in lists:
            with contextlib.suppress(LevelsessError):
                unchanged.keep_listing(cache, listing)
    finally:
        for kept in kepts:  # (what a recalled unit keeps again was read from its file as it was written)
            kept.close()
    return report


def _remember(memo, journal: Path, scanned: tuple) -> None:
    """Keep a journal's scan in the import memo: ``(scan, stamp, when)``, or as a worker encoded it (:func:`_read_back`)."""
    from ..fsck.incremental import Encoded  # (loaded with the memo)

    if type(scanned) is Encoded:
        memo.remember_encoded(journal.parent, journal, scanned)
    else:
        memo.remember_scan(journal.parent, journal, *scanned)


def _unit_keys(importer, units: list[unchanged.Unit], kept: unchanged.Kept,
               recalled: set[int]) -> tuple[Callable[[int], str], dict[str, str]]:
    """(the importer's ``unit_key`` of unit ``index``, the keys known, by unit key, to keep with the
    entries): as the last import kept it for a unit recalled (its files are as they were then, so is
    what the key is read from), else the importer's, found once (a Codex rollout's key is in its
    first record: read, for each of 800 rollouts, it took a grown import 30 ms)."""
    known = {units[i].key: found for i in recalled if (found := kept.unit_key(units[i])) is not None}

    def unit_key(index: int) -> str:
        unit = units[index]
        if unit.key not in known:
            known[unit.key] = importer.unit_key(unit)
        return known[unit.key]

    return unit_key, known


def _with_keys(entries: dict, known: dict[str, str]) -> dict:
    """Each unit's cache entry with its unit key, when found: a call that makes it, made as the cache file
    is written (:func:`unchanged.remember`), one at a time (a re-import after 600 of 6,000 transcripts
    grew made the 5,400 it recalled all at once, each with a copy of its resume states)."""
    return {key: functools.partial(_keyed, entry, known[key]) if key in known else entry for key, entry in entries.items()}


def _keyed(entry, unit_key: str):
    """The unit's cache entry (``entry``, or the call that makes it) with ``unit_key``."""
    value = entry() if callable(entry) else entry
    if type(value) is unchanged.Kept.Entry:
        if value.kept.get("unit_key") != unit_key:
            value = value._replace(kept={**value.kept, "unit_key": unit_key})
    elif value is not None:
        value = {**value, "unit_key": unit_key}
    return value


class _Context:
    """What every unit of one source is imported with."""

    def __init__(self, store: Path, importer, source: Path, options, kept: unchanged.Kept, stones: dict, dry_run: bool,
                 no_raw: bool, include_trashed: bool, *, jobs: int = 1) -> None:
        self.store, self.importer, self.source, self.options, self.kept = store, importer, source, options, kept
        self.stones, self.dry_run, self.no_raw, self.include_trashed = stones, dry_run, no_raw, include_trashed
        # a source read as one unit (a database, a folder of chat files): when any of it changed, each of its
        # sessions is read again, most of them as they were (output.same_state: their journals need not be;
        # a dry run keeps no state, and hashes none)
        self.whole = not hasattr(importer, "units") and not dry_run
        self.read_back = False
        self.jobs = jobs  # --jobs, for the items a scan lets workers convert (a Farm: Cursor's composers)
        self.advance: Callable[[int], None] | None = None  # the progress's bytes, told as a Farm's items are taken
        self.remember: Callable[[tuple], None] | None = None  # this process's index memo takes a new journal's scan
        self._commits: tuple | None = None  # (pid, the Committer of this process's units)

    def close(self) -> None:
        """The background thread ends (every journal it was given is in place or given up already)."""
        if self._commits is not None and self._commits[0] == os.getpid():
            self._commits[1].wait()
        self._commits = None

    def committer(self) -> durable.Committer:
        """This process's background thread for new journals, one for all its units (a forked
        worker makes its own: a thread does not cross a fork)."""
        if self._commits is None or self._commits[0] != os.getpid():
            from .. import durable

            self._commits = (os.getpid(), durable.Committer())
        return self._commits[1]


class _Part:
    """What one unit came to, for :func:`run_import` to report in the order of the units."""

    __slots__ = ("sessions", "findings", "read", "resumed", "from_cache", "touched", "landed", "raised", "entry", "size",
                 "scans", "advanced", "clean")

    def __init__(self, size: int = 0) -> None:
        self.sessions: list = []
        self.findings: list = []
        self.read = self.resumed = self.from_cache = 0
        self.touched: set = set()
        self.landed: set = set()
        self.raised: list = []
        self.entry: dict | Callable[[], dict | None] | None = None  # (or the call that makes it: _recalled, later)
        self.size = size
        self.scans: list = []  # (journal, read_back) of the journals a worker wrote
        self.advanced = 0  # bytes of it told to the progress already (a Farm's items, as each was taken)
        self.clean = True  # no write met anything of its own (a lock, a repair)


def _recalled(context: _Context, unit: unchanged.Unit, stamped: dict | None, *, later: bool = False) -> _Part | None:
    """The unit as the import cache kept it, when nothing of it changed; else None.  ``later``: its
    cache entry is a call that makes it, for a run that writes the cache again (one that finds
    nothing new keeps the file as it is, and never parses the kept resume states)."""
    recalled = context.kept.recall(unit, stamped)
    if recalled is None:
        return None
    part = _Part(size=unchanged.sizes(unit, stamped))
    part.sessions, part.findings = recalled
    part.from_cache = len(part.sessions)
    kept, sessions, findings = context.kept, part.sessions, part.findings  # (not the part: it holds the call)

    def entry() -> dict | unchanged.Kept.Entry | None:
        return kept.as_kept(unit) or unchanged.entry(stamped, sessions, findings, kept.states(unit), kept.journals(unit))
    part.entry = entry if later else entry()
    return part


def _process(context: _Context, unit: unchanged.Unit, stamped: dict | None, part: _Part | None = None) -> _Part:
    """Import one unit (into ``part``): as kept, if nothing of it changed (a unit that went after
    another that may write its journal); from where the last import stopped, if only one file
    grew; else read in full (issue 27).  ``stamped``: its files' stamps, taken before."""
    return _begin(context, unit, stamped, part)()


def _begin(context: _Context, unit: unchanged.Unit, stamped: dict | None, part: _Part | None = None) -> Callable[[], _Part]:
    """:func:`_process` up to the fsync of the unit's new journals, which a background thread does:
    the call returned waits for them and finishes the unit (its index scans, its cache entry) and
    gives its part.  A caller may begin the next unit first, so the thread syncs this unit's
    journals while the next one converts (issue 27: a first import waited for each unit's fsync)."""
    recalled = _recalled(context, unit, stamped)
    if recalled is not None:
        done = recalled if part is None else _fill(part, recalled)
        return lambda: done
    part = _Part() if part is None else part
    part.size = unchanged.sizes(unit, stamped)
    states: dict | None = {}
    commits = context.committer() if not context.dry_run else None
    before = commits.mark() if commits is not None else 0
    try:
        resumed = commits is not None and _resume(context, unit, stamped, part, states, commits)  # (only one file grew)
    except BaseException:
        if commits is not None:  # what it appended is synced before the error goes on
            commits.wait_through(commits.mark(), after=before)
        raise
    if resumed:
        linked = _synced(commits, before, commits.mark())
    else:
        if commits is not None and commits.mark() > before:  # a journal appended to before another changed: synced first
            _synced(commits, before, commits.mark())()
        linked = _read_unit(context, unit, part, states, deferred=not context.dry_run)

    def finish() -> _Part:
        nonlocal states
        failed = linked()
        if failed:  # a journal another writer made first, or a failed fsync: the unit again, each journal linked at once
            states = _again(context, unit, part, failed)
        elif states is not None and not part.clean:  # what a write met (a lock, a repair) is not what the next import meets
            states = None
        if states is not None:
            part.entry = unchanged.entry(stamped, part.sessions, part.findings, states, key=unit.key, unread=context.whole)
        if context.read_back:  # a worker: the journals it appended to read now, while in the page cache, not by the settle
            _read_back(part)
        return part
    return finish


def _read_back(part: _Part) -> None:
    """The journals ``part``'s sessions created or extended that have no scan yet, read into its
    scans (a worker's: while in the page cache, not by the parent's settle)."""
    from .. import durable
    from ..fsck.incremental import Encoded, encoded_scan, read_back

    fed = {journal for journal, _scanned in part.scans}
    for outcome in part.sessions:
        if outcome.status in ("created", "updated") and outcome.path not in fed:
            part.scans.append((outcome.path, read_back(outcome.path)))
            if outcome.status == "created":
                durable.release_written(outcome.path)  # (read: now nothing of this import reads it again)
    # each as the parent's memo keeps it, made here: what goes through the pipe is its bytes, not
    # the scan (a first import's parent unpickled and encoded 814 scans while its workers wrote)
    part.scans = [(journal, scanned if scanned is None or type(scanned) is Encoded else  # (one a Farm's worker encoded)
                   Encoded(scanned[1], scanned[2], *encoded_scan(journal, *scanned, MEMO_STRICT, MEMO_LEAN)))
                  for journal, scanned in part.scans]


def _read_unit(context: _Context, unit: unchanged.Unit, part: _Part, states: dict, *,
               deferred: bool) -> Callable[[], list]:
    """Read the unit in full and write its sessions, into ``part``.  ``deferred``: each new journal
    is fsynced and linked by the import's background thread (:class:`~toolkit.durable.Committer`)
    while the next session converts.  Returns the call that waits for them (all of them before it
    returns), adds their index scans, and gives what it could not link (path, why), for :func:`_again`."""
    from . import output

    commits = context.committer() if deferred else None
    begun = commits.mark() if commits is not None else 0
    written: list = []
    token, fed = output.COMMITS.set(commits), output.WRITTEN.set(None if context.dry_run else written)

    def scans(done: bool = False) -> None:  # each new journal's scan, once it is in place, to the memo (or the parent)
        waiting = []
        for item in written:
            if not done and commits is not None and commits.waiting(item[0]):
                waiting.append(item)
                continue
            scanned = _written_scan(*item)
            if scanned is not None:
                (context.remember or part.scans.append)(scanned)
        written[:] = waiting

    def linked() -> list:
        failed = commits.wait_through(mark) if commits is not None else []
        scans(done=True)  # (a journal not linked is not the one written: its scan is none)
        return failed + farmed

    prior = context.kept.prior(unit) if not context.dry_run else {}  # what a kept resume state says of each session
    farmed: list = []  # what workers of a Farm could not link
    try:
        for session in unchanged.scan_unit(context.importer, context.source, unit, context.options, part.findings.append):
            if type(session) is Farm:
                farmed += _farm(context, session, part, states, commits, scans, prior)
                continue
            _write(context, session, part, states, prior)
            scans()
        part.read = len(part.sessions)
    except BaseException:
        if commits is not None:  # what it wrote is in place (or removed) before the error goes on
            commits.wait_through(commits.mark(), after=begun)  # (the unit before's failures stay its own)
        raise
    finally:
        output.COMMITS.reset(token)
        output.WRITTEN.reset(fed)
    mark = commits.mark() if commits is not None else 0
    return linked


def _farm(context: _Context, farm: Farm, part: _Part, states: dict, commits: durable.Committer | None,
          scans: Callable[[], None], prior: dict) -> list:
    """The items of a scan's :class:`~toolkit.importers.base.Farm`, into ``part``: here, each
    one's sessions written as any other's; or, with ``--jobs`` and enough to read, in forked
    workers (:func:`parallel.run`), each writing the sessions it makes and giving back what they
    came to, taken here in item order.  Returns what a worker could not link (path, why): the
    unit's wait gives it with its own."""
    budget = max(0, min(farm.size, part.size - part.advanced))  # (of the unit's bytes, the progress's, those the farm reads)
    workers = 1
    if commits is not None and context.jobs != 1 and not context.read_back and farm.count > 1:  # (never in a unit's worker)
        workers = parallel.worker_count(context.jobs, farm.size, farm.count)
    if workers <= 1:
        for index in range(farm.count):
            sessions, said = farm.make(index, part.findings.append)
            for session in sessions:
                _write(context, session, part, states, prior)
                scans()
            farm.after(index, said)
            _advanced(context, farm, index, part, budget)
        return []
    failed: list = []

    def take(index: int, done: tuple) -> None:
        got, got_states, said, lost = done
        part.sessions += got.sessions
        part.findings += got.findings
        part.raised += got.raised
        part.touched |= got.touched
        part.landed |= got.landed
        part.clean &= got.clean
        for scanned in got.scans:  # to the index memo now, while the workers go on (else with the unit)
            if context.remember is None:
                part.scans.append(scanned)
            elif scanned[1] is not None:
                context.remember(scanned)
        states.update(got_states)
        failed.extend(lost)
        farm.after(index, said)
        _advanced(context, farm, index, part, budget)

    commits.pause()  # (its thread ends before the fork: a thread does not cross it)
    farm.release()
    parallel.run([str(index) for index in range(farm.count)], lambda index: _farmed(context, farm, index, prior), workers, take)
    return failed


def _advanced(context: _Context, farm: Farm, index: int, part: _Part, budget: int) -> None:
    """The progress moves on by item ``index``'s share of the ``budget`` bytes the farm reads (the
    rest of the unit's when it is done): a database of a thousand chats does not sit at 0 % until its end."""
    if context.advance is not None and budget > 0 and not context.read_back:  # (a unit's worker tells its parent nothing)
        share = budget * (index + 1) // farm.count - budget * index // farm.count
        part.advanced += share
        context.advance(share)


def _farmed(context: _Context, farm: Farm, index: int, prior: dict) -> Callable[[], tuple]:
    """Item ``index`` of ``farm`` made and its sessions written by this process (a worker, or the
    parent after a worker was lost), up to their fsync, which its background thread does: the call
    returned waits for it and gives (its part, its resume states, what the scan learns of it, what
    was not linked), the journals it wrote read back for the index while in the page cache."""
    from . import output

    commits = context.committer()  # (this process's own)
    part, states, written = _Part(), {}, []
    before = commits.mark()
    token, fed = output.COMMITS.set(commits), output.WRITTEN.set(written)
    try:
        sessions, said = farm.make(index, part.findings.append)
        for session in sessions:
            _write(context, session, part, states, prior)
    except BaseException:
        commits.wait_through(commits.mark(), after=before)  # what it wrote is in place (or removed) first
        raise
    finally:
        output.COMMITS.reset(token)
        output.WRITTEN.reset(fed)
    mark = commits.mark()

    def finish() -> tuple:
        failed = commits.wait_through(mark, after=before)
        part.scans += [scanned for item in written if (scanned := _written_scan(*item)) is not None]
        _read_back(part)
        return part, states, said, failed
    return finish


def _write(context: _Context, session: Session, part: _Part, states: dict, prior: dict) -> None:
    """One session of a unit read in full written (or counted trashed) into ``part``, as the last
    import's kept resume state of it says it began (``prior``)."""
    session.resumed_from = prior.get(session.id)
    if session.resume_state is None and session.state is None and context.whole:  # its journal need not be read (output.same_state)
        from .output import same_state

        written = weakref.ref(session)  # (not the session: a cycle kept it until a collection)
        session.keeps_same, session.resume_state = True, lambda outcome: same_state(written(), outcome)
    part.clean &= _one(context, session, part, states)
    session.resume_state = None  # (its closure may hold the session: a cycle that kept what was read until a collection)


def _synced(commits: durable.Committer, before: int, mark: int) -> Callable[[], list]:
    """The wait for the fsyncs of what a resume appended (the thread's, while the next unit
    converts; ``before``, ``mark``: the thread's marks when it began and when it was done): a failed
    one stops the run as the append's own fsync would have.  What the unit before handed (a new
    journal another import made first) is that unit's wait's to give, not this one's."""
    def wait() -> list:
        for _path, why in commits.wait_through(mark, after=before):
            raise why
        return []
    return wait


def _written_scan(path: Path, fed, info) -> tuple | None:
    """(journal, (scan, stamp, when)) of a new journal, from what its writer wrote, for the index:
    when the file linked is still the one written (same inode, size and time: nothing appended
    since), else None (the reindex reads it)."""
    from .. import durable
    from ..fsck.incremental import lean_scan, stamp_of

    try:
        now = os.stat(path)
    except OSError:
        fed.close()
        return None
    if (now.st_ino, now.st_size, now.st_mtime_ns) != (info.st_ino, info.st_size, info.st_mtime_ns):
        fed.close()
        return None
    scan = fed.scan(now, lean=True)  # (for the import's memo, which is lean)
    if scan is None:
        return None  # (read back for its scan: by a worker, which then releases it, or by the settle)
    if os.environ.get("LEVELSESS_SELF_CHECK"):  # the test suite's: every such scan is what a read of the file makes
        _check_written_scan(path, scan)
    durable.release_written(path)  # nothing of this import reads it again (but its tail, kept)
    return path, (lean_scan(scan), stamp_of(now), time.time_ns())  # (what the memo keeps: a worker's pipe carries no more)


def _check_written_scan(path: Path, scan) -> None:
    from ..journal import scan_journal

    read = scan_journal(path, "levelcode", checkpoint=True, lean=True)
    if read != scan or read.resume_state != scan.resume_state:
        raise AssertionError(f"the scan made while writing {path} is not what reading it makes:\n{scan}\n{read}")


def _again(context: _Context, unit: unchanged.Unit, part: _Part, failed: list) -> dict | None:
    """Read the unit again when a journal of it was not linked (another import made it first, an
    fsync failed): as one process without the background thread does, so a journal that appeared is
    extended under its lock and a failure is reported (or stops the run) as it always is.  A journal
    the first pass did link is reported as created, as it was, not as the unchanged one it now is."""
    missed = {path for path, _why in failed}
    linked = {o.path: o for o in part.sessions if o.status == "created" and o.path not in missed}
    touched, landed = set(part.touched), set(part.landed)
    part.sessions, part.findings, part.raised, part.clean, part.scans = [], [], [], True, []
    states: dict | None = {}
    _read_unit(context, unit, part, states, deferred=False)()
    part.sessions = [linked.get(o.path, o) if o.status == "unchanged" else o for o in part.sessions]
    part.touched |= touched
    part.landed |= landed
    return states if part.clean else None


def _to_read(context: _Context, unit: unchanged.Unit, stamped: dict | None) -> int:
    """The bytes importing ``unit`` is expected to read, for the choice of workers: what its one
    file that only grew added, when it may resume (forking for a few kB of new lines cost more than
    reading them), else its files' bytes."""
    if stamped is not None and _resumes(context):
        grew = context.kept.only_grown(unit, stamped)
        if grew is not None:
            return grew[1]
    return unchanged.sizes(unit, stamped)


def _resumes(context: _Context) -> bool:
    """Whether this import may resume a unit (a write, keeping ``raw``, by an importer that resumes)."""
    return not context.dry_run and not context.no_raw and hasattr(context.importer, "resume_unit")


def _ahead_of(context: _Context, units: list[unchanged.Unit],
              stamped: list[dict | None]) -> tuple[list[tuple[str, int]], list[Path]]:
    """What the resumes of ``units`` will ask for, in order, from one look at each unit's kept
    entry: the prefixes they check (each kept resume state's ``(path, covered)`` for the one file of
    its unit that only grew: :func:`sourcelines.grown_from`) and the journals whose locks they take."""
    prefixes: list[tuple[str, int]] = []
    journals: list[Path] = []
    if not units or not _resumes(context):  # (nothing to read: the importer's reader is not even loaded)
        return prefixes, journals
    for unit, stamps in zip(units, stamped):
        grew = context.kept.only_grown(unit, stamps)
        states = context.kept.resumes(unit) if grew is not None else None
        if not isinstance(states, dict):
            continue
        prefixes += [(grew[0], state["covered"]) for state in states.values()
                     if isinstance(state, dict) and state.get("path") == grew[0] and type(state.get("covered")) is int
                     and isinstance(state.get("sha256"), str)]
        journals += map(Path, context.kept.resumed_journals(unit))
    return prefixes, journals


@contextlib.contextmanager
def _worked_ahead(prefixes: list[tuple[str, int]], journals: list[Path]):
    """While the units are imported here, a background thread hashes the prefixes their resumes will
    check (:class:`sourcelines.Prefixes`), and the session locks they take are links to one body of
    this process's lock bytes a folder (:class:`toolkit.locks.LockBodies`)."""
    with contextlib.ExitStack() as stack:
        if prefixes:
            from ..ahead import running
            from .sourcelines import AHEAD, Prefixes  # (only an import that resumes loads the reader)

            stack.enter_context(running(AHEAD, Prefixes(prefixes)))
        if journals:
            from .. import locks  # (only an import that resumes takes locks)

            stack.enter_context(locks.bodies())
        yield


def _fill(part: _Part, recalled: _Part) -> _Part:
    for name in ("sessions", "findings", "from_cache", "size", "entry"):
        setattr(part, name, getattr(recalled, name))
    return part


def _resume(context: _Context, unit: unchanged.Unit, stamped: dict | None, part: _Part, states: dict,
            commits: durable.Committer | None = None) -> bool:
    """Import a unit one of whose files only grew, reading only its new bytes (issue 27): True when
    done; False when it must be read in full (nothing reported).  With ``commits``, the fsyncs of
    what it appended are that thread's, for the caller to wait for."""
    resume_unit = getattr(context.importer, "resume_unit", None)
    if context.no_raw:  # a resume appends the source's lines and state, which --no-raw leaves out: read it all
        return False
    grown = context.kept.grown(unit, stamped, getattr(context.importer, "RESUME_FINDINGS", False)) if resume_unit is not None else None
    if grown is None:
        return False
    path, entry = grown
    try:
        items = resume_unit(unit, path, entry)
    except (KeyError, TypeError, ValueError, IndexError):  # a kept state this build cannot use: read it all
        return False
    if items is None:
        return False
    from .output import write_resumed

    written = {}
    for one in (item for item in items if not isinstance(item, Outcome)):  # (the main conversation first)
        journal = entry["journals"].get(str(one.journal))
        done = write_resumed(context.store, one, journal, commits)
        if done is None:
            return False  # a journal changed meanwhile: read it all (what was appended is found held)
        written[id(one)] = done
    if not written:
        return False
    for item in items:
        if isinstance(item, Outcome):
            outcome, found = item, []
            part.from_cache += 1
            if entry["resume"].get(item.id) is not None:
                states[item.id] = entry["resume"][item.id]
        else:
            (outcome, found), session = written[id(item)], item.session
            found = [*item.findings, *found]  # what reading it says (as a full read would), then the write
            part.resumed += 1
            if outcome.status == "updated":
                part.touched.add(outcome.path.parent)
                part.landed.add(outcome.path.parent)
                state = session.resume_state(outcome) if session.resume_state else None
                if state is not None:
                    states[session.id] = state
            session.resume_state = None
        part.sessions.append(outcome)
        part.findings += found
    return True


def _one(context: _Context, session: Session, part: _Part, states: dict) -> bool:
    """Write one session the importer yielded (or count it trashed), into ``part``; False when
    writing it met something (a finding of the write's own)."""
    store = context.store
    stone = context.stones.get(session.id)
    if stone is not None and not context.include_trashed:
        from .output import trashed

        part.sessions.append(trashed(store, session))
        part.findings.append(Finding(
            "trashed", "warning", str(session.source.get("path") or context.source), None, None,
            f"session {session.id} was trashed from the store{' on ' + stone.t if stone.t else ''} "
            f"({stone.path}): not imported again; `import --include-trashed` brings it back"))
        return True
    try:
        outcome, found = _write_one(store, session, context.dry_run, context.no_raw)
    except FileChangedError as exc:  # a source rewritten between its two passes: nothing was written
        part.findings.append(Finding("source-unreadable", "error", str(session.source.get("path")), None, None, str(exc)))
        return False
    part.sessions.append(outcome)
    part.findings += found
    if stone is not None and outcome.status in ("created", "updated", "unchanged") and not context.dry_run:
        part.raised.append(session.id)
    if outcome.status in ("created", "updated"):
        part.touched.add(outcome.path.parent)
    if outcome.status in ("created", "updated", "unchanged"):
        part.landed.add(outcome.path.parent)
        if session.resume_state is not None and not context.dry_run and not found:
            state = session.resume_state(outcome)
            if state is not None:
                states[session.id] = state
    return not found


def source_bytes(name: str, sources: list[Path]) -> int:
    """The bytes an import of ``sources`` reads: the total of :func:`run_import`'s ``read``."""
    importer = load(name)
    total = 0
    for source in sources:
        try:
            total += sum(unchanged.sizes(unit, None) for unit in unchanged.units_of(importer, source, lambda _f: None))
        except (LevelsessError, OSError):  # the import itself says why
            continue
    return total


def _write_one(store: Path, session: Session, dry_run: bool, no_raw: bool) -> tuple[Outcome, list[Finding]]:
    """Write one session; a limit of the machine or a permission that this session alone meets
    (a name too long, a file too large, a folder it cannot write) is a finding on it, and the
    sessions after it still import.  What would fail every session (a full disk, a read-only file
    system, a failed fsync) stops the run: the error says what to do."""
    from .. import durable
    from .output import journal_path, not_written, write_session

    try:
        return write_session(store, session, dry_run=dry_run, no_raw=no_raw)
    except OSError as exc:  # met outside durable (a stat of a path the system will not take)
        error = durable.typed_error("write", journal_path(store, session), exc)
        if error.stops_run:
            raise error from exc
    except OperationalError as exc:
        if exc.stops_run or isinstance(exc, FileChangedError):
            raise
        error = exc
    return not_written(store, session, error)


class _Memo:
    def __init__(self) -> None:
        self._memo = None

    def get(self):
        if self._memo is None:
            self._memo = _index_memo()
        return self._memo


def _index_memo():
    """What the import's reindex read of each journal (:class:`~toolkit.fsck.incremental.IncrementalCache`,
    in the user's cache folder): a journal it only appended to is read from where that read
    stopped.  A store's journals are only ever appended to or replaced (a repair renames), so an
    entry is trusted right after it is read (no racy window, which guards against same-size
    rewrites in place).  Lean: its scans only make index entries, so a meta record's source row is
    not kept."""
    from ..fsck.incremental import IncrementalCache, cache_dir

    return IncrementalCache(MEMO_STRICT, root=cache_dir().parent / "import-index", racy_ns=0, lean=MEMO_LEAN)


#: The import memo's modes (:func:`_index_memo`), with which a worker encodes its scans for it (:func:`_read_back`).
MEMO_STRICT, MEMO_LEAN = False, True


def _project(folder: Path) -> list:
    """The store folder an import wrote journals in, as the LevelCode project it is (an importer
    writes nothing else there): not discovered by sniffing the heads of its journals for every other
    layout, heads that a new journal no longer keeps in memory (durable.release_written)."""
    from ..layouts.registry import get
    from ..stores import discover

    found = get("levelcode").claim_dir(folder)
    if found is not None and len(found) == 1 and found[0].path == folder:
        return found
    return discover(folder)[:1]


def _settle(touched: list[Path], landed: list[Path], report: ImportReport, memo, jobs: int = 1) -> None:
    """fsync each folder that got new journals; in every folder the import's sessions live in,
    remove this tool's dead temp files and bring the index up to date (``jobs``: for the journals
    it must read, as ``--jobs``).

    Folders with nothing new are included: an import killed after its last journal but before
    its reindex leaves a rerun with nothing to write and an index still to build.  ``reindex``
    skips a folder whose index is already current after a stat of each journal.
    """
    from .. import durable
    from ..fsck.repair import remove_dead_temps
    from ..reindex import reindex

    with durable.batched_dir_syncs():  # each folder once, at the end: before the import cache says anything is done
        for folder in touched:  # the new journals' renames, made durable once per folder
            durable.fsync_dir(folder)
        folders = [found for folder in landed for found in _project(folder)]
        for folder in folders:  # temp files of an import that was killed mid-write
            report.findings += remove_dead_temps(folder)
        report.findings += reindex(folders, memo=memo, jobs=jobs).findings
        memo.save()
