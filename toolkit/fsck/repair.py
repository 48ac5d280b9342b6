"""Plan repairs from a check, then apply them through :mod:`toolkit.durable`.

Only what DESIGN.md §2.4 allows: terminate a complete unterminated final record, save and
trim a torn tail, remove stale locks, rebuild caches - and, opted into twice, salvage.
A journal with any uncorrectable finding is never touched (not even its tail).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from .. import durable, locks, shellwords, verified
from ..errors import (RELINKABLE, SALVAGEABLE, UNCORRECTABLE, DurabilityError, FileChangedError, FileInUseError,
                      LevelsessError, LockBusyError, OperationalError, RelinkRefusedError, SalvageRefusedError,
                      SymlinkedFolderError)
from ..findings import Finding
from ..index import load_cache
from ..journal import JournalScan, TailState, judge_tail, scan_journal
from ..locks import LockState, inspect_lock
from ..stores import Folder
from .check import CheckReport, FolderCheck, exit_code_for, folder_leftovers

#: Record-level problems salvage carries over unchanged (they are reported again, not fixed);
#: anything else uncorrectable (a future version) means salvage keeps its hands off.
SALVAGE_KEEPS = frozenset({"schema-violation", "seq-gap", "seq-duplicate", "missing-meta", "duplicate-meta",
                           "dangling-parent", "duplicate-id", "duplicate-uuid", "broken-chain"})
RECOVERED = "recovered"
QUARANTINE = "quarantine"
REPLACED = "replaced"


class Action(NamedTuple):
    """One planned write: terminate-tail | trim-tail | remove-lock | remove-temp | rebuild-cache | salvage."""

    kind: str
    path: Path
    detail: str
    fixes: tuple[str, ...]  # finding codes this action repairs, on ``path`` (or the folder's files)
    folder: Folder | None = None
    scan: JournalScan | None = None
    scans: tuple[JournalScan, ...] = ()  # rebuild-cache: the check's scans, reused where untouched
    saved_to: Path | None = None  # once done: where the removed or replaced bytes went

    def describe(self) -> str:
        saved = f" (saved to {self.saved_to})" if self.saved_to is not None else ""
        return f"{self.kind}: {self.path}: {self.detail}{saved}"


class RepairResult(NamedTuple):
    """What a repair did: every finding (``repaired`` set where fixed) and the exit code."""

    findings: tuple[Finding, ...]
    done: tuple[Action, ...]
    interrupted: bool = False
    fatal: str | None = None

    @property
    def exit_code(self) -> int:
        code = exit_code_for(self.findings)
        if self.fatal:
            code |= 8
        if self.interrupted:
            code |= 32
        return code


class RepairPlan(NamedTuple):
    """The writes a repair would make, computed from a check, and nothing written yet."""

    report: CheckReport
    actions: tuple[Action, ...]
    force: bool = False
    refusals: tuple[Finding, ...] = ()  # --salvage: why each blocked journal is left as it is

    def execute(self, *, progress: Callable[[Action], None] | None = None,
                should_stop: Callable[[], bool] = lambda: False) -> RepairResult:
        """Apply the actions in order; stop cleanly between actions when asked."""
        repaired: set[tuple[str, str]] = set()
        saved: dict[tuple[str, str], str] = {}
        notes: list[Finding] = []
        done: list[Action] = []
        touched: dict[Path, set[Path]] = {}
        interrupted, fatal = False, None
        for action in self.actions:
            if should_stop():
                interrupted = True
                break
            try:
                with durable.confined(action.folder.confinement):  # the plan looked; this holds at the write
                    fixed, where = _apply(action, touched, self.force)
            except SymlinkedFolderError as exc:
                notes.append(symlink_refusal(action, exc))
                continue
            except RelinkRefusedError as exc:
                notes.append(Finding("relink-refused", "error", str(action.path), None, None, exc.detail))
                continue
            except SalvageRefusedError as exc:  # the journal is as it was; say why, in words
                notes.append(Finding("salvage-refused", "error", str(action.path), None, None, exc.detail))
                continue
            except LockBusyError as exc:
                notes.append(Finding("locked", "warning", str(action.path), None, None, f"not repaired: {exc.detail}"))
                continue
            except FileInUseError as exc:
                notes.append(Finding("in-use", "warning", str(action.path), None, None, f"not repaired: {exc.detail}"))
                continue
            except FileChangedError as exc:
                notes.append(Finding("changed-during-repair", "warning", str(action.path), None, None, str(exc)))
                continue
            except LevelsessError as exc:
                if exc.stops_run:  # a failed fsync, a full disk: stop, keep every backup, report no success
                    fatal = str(exc)
                    notes.append(Finding("repair-failed", "error", str(action.path), None, None, f"repair stopped: {exc}"))
                    break
                notes.append(Finding("repair-failed", "error", str(action.path), None, None, f"not repaired: {exc}"))
                continue
            repaired.update(fixed)
            if where is not None:
                where = Path(os.path.realpath(where))  # where the bytes are, whatever links lie above the store
                saved.update({key: str(where) for key in fixed})
            done.append(action._replace(saved_to=where))
            if progress:
                progress(action)
        findings = tuple(
            f.as_repaired(saved.get((f.code, f.path))) if (f.code, f.path) in repaired else f for f in self.report.findings
        ) + self.refusals + tuple(notes)
        return RepairResult(findings, tuple(done), interrupted, fatal)


def plan_repair(report: CheckReport, *, salvage: bool = False, relink: bool = False, force: bool = False) -> RepairPlan:
    """Return the actions that would repair what ``report`` found; writes nothing."""
    actions: list[Action] = []
    refusals: list[Finding] = []
    for check in report.folders:
        folder = check.folder
        journal_actions, folder_actions = [], []
        for session in check.sessions:
            if session.skipped or session.scan is None or session.in_use:
                continue
            if salvage and (why := salvage_refusal(session.journal, session.scan)) and not (relink and relink_would_help(session.scan)):
                refusals.append(Finding("salvage-refused", "error", str(session.journal), None, None, why))
            if relink and (why := relink_refusal(session.journal, session.scan, salvage)):
                refusals.append(Finding("relink-refused", "error", str(session.journal), None, None, why))
            if session.lock is not None and session.lock.state is LockState.STALE:
                folder_actions.append(Action("remove-lock", session.lock.path, session.lock.reason, ("stale-lock",), folder))
            journal_actions.extend(_journal_actions(session.journal, session.scan, folder, salvage, relink))
        for info in check.orphan_locks:
            if info.state is LockState.STALE:
                folder_actions.append(Action("remove-lock", info.path, info.reason, ("stale-lock",), folder))
        for temp in check.leftover_temps:
            folder_actions.append(Action("remove-temp", temp, "temporary file of an interrupted write", ("leftover-temp",), folder))
        folder_actions.extend(journal_actions)
        unreadable = any(f.code == "unreadable" for f in check.cache_findings)  # never replaced
        if not unreadable and _cache_rebuildable(check, journal_actions) and (check.cache_findings or journal_actions):
            codes = tuple(f.code for f in check.cache_findings)
            scans = tuple(s.scan for s in check.sessions if s.scan is not None)
            folder_actions.append(Action("rebuild-cache", folder.cache, "; ".join(f.message for f in check.cache_findings)
                                         or "journals changed", codes, folder, scans=scans))
        for action in folder_actions:
            error = _symlinked(action)
            if error is None:
                actions.append(action)
            else:
                refusals.append(symlink_refusal(action, error))
    return RepairPlan(report, tuple(actions), force, tuple(refusals))


def _symlinked(action: Action) -> SymlinkedFolderError | None:
    assert action.folder is not None
    return write_refusal(action.folder, action.kind, action.path)


def write_refusal(folder: Folder, kind: str, path: Path) -> SymlinkedFolderError | None:
    """Why a ``kind`` step on ``path`` would write through a symlinked folder (the file's own, or
    the one it saves bytes in), or None."""
    places = [path.parent]
    if kind == "trim-tail":
        places.append(recovery_dir(folder, RECOVERED))
    elif kind in ("salvage", "relink"):
        places.append(folder.state_dir / QUARANTINE)
    elif kind == "rebuild-cache" and not folder.layout.cache_is_derived:
        places.append(recovery_dir(folder, REPLACED))
    confinement = folder.confinement
    return next((e for e in map(confinement.refusal, places) if e is not None), None)


def symlink_refusal(action: Action, error: SymlinkedFolderError) -> Finding:
    """The finding for a repair step refused because a folder on its way is a symlink."""
    where = action.path if os.path.lexists(action.path) else action.folder.path  # a missing cache: its folder
    return Finding("symlinked-folder", "error", str(where), None, None,
                   f"not repaired ({action.kind}): {error.detail}, and levelsess never writes through a symlinked folder; "
                   f"{error.hint}")


def _cache_rebuildable(check: FolderCheck, journal_actions: list[Action]) -> bool:
    """A Logician meta.json is not rebuilt from a journal that needs a person (unless salvaged first)."""
    if not check.cache_checked:
        return False
    salvaged = {a.path for a in journal_actions if a.kind == "salvage"}
    return check.folder.layout.cache_is_derived or not any(
        s.scan and s.scan.blocked and s.journal not in salvaged for s in check.sessions)


def _journal_actions(journal: Path, scan: JournalScan, folder: Folder, salvage: bool, relink: bool = False) -> list[Action]:
    if journal.is_symlink():
        return []  # never written through
    if scan.blocked:
        actions = []
        if salvage and salvage_would_help(scan):
            fixes = tuple(sorted(scan.codes & (SALVAGEABLE | {"unterminated-tail"})))
            actions.append(Action("salvage", journal, f"rewrite from byte-exact slices; original to {folder.state_dir / QUARANTINE}/", fixes, folder, scan))
        if relink and (relink_would_help(scan) or (actions and scan.codes & {"dangling-parent"})):
            fixes = scan.layout.relink_fixes(scan)  # a layout whose relink mends something else (Gemini: its metadata line)
            if fixes is None:
                fixes = tuple(sorted(scan.codes & (RELINKABLE | {"unterminated-tail", "torn-tail"})))
            actions.append(Action("relink", journal, _relink_detail(journal, scan, folder, bool(actions)), fixes, folder, scan))
        return actions
    if scan.tail is TailState.UNTERMINATED:
        return [Action("terminate-tail", journal, "append the missing newline", ("unterminated-tail",), folder, scan)]
    if scan.tail is TailState.TORN:
        cut = scan.size - scan.body_end
        return [Action("trim-tail", journal, f"save {cut} bytes to {recovery_dir(folder, RECOVERED)}/, truncate to byte {scan.body_end}",
                       ("torn-tail",), folder, scan)]
    return []


def relink_would_help(scan: JournalScan) -> bool:
    """True when ``fsck --relink`` would mend this journal: a layout that relinks, a dangling
    parent, and nothing else blocking it but the broken chain that parent makes."""
    own = scan.layout.relink_needed(scan) if scan.identified else None
    if own is not None:  # a layout's own rule (Gemini: a torn or missing metadata line)
        return own and scan.layout.relink_refusal(scan) is None
    blocking = scan.codes & UNCORRECTABLE
    return (scan.identified and scan.layout.relinks and "dangling-parent" in scan.codes
            and blocking <= RELINKABLE)


def relink_refusal(journal: Path, scan: JournalScan, salvage: bool) -> str | None:
    """Why ``--relink`` leaves a journal with a broken chain or a dangling parent (Gemini: a lost
    metadata line) as it is."""
    own = scan.layout.relink_needed(scan) if scan.identified else None
    if own is not None:
        if not own:
            return None
        if journal.is_symlink():
            return f"a symlinked journal is never written through; relink the file it points to, {journal.resolve()}"
        return scan.layout.relink_refusal(scan)
    if not scan.codes & RELINKABLE or not scan.identified or relink_would_help(scan):
        return None
    if journal.is_symlink():
        return f"a symlinked journal is never written through; relink the file it points to, {journal.resolve()}"
    if salvage and salvage_would_help(scan):
        return None  # salvaged first, then relinked in the same run
    if "dangling-parent" not in scan.codes:
        return "the chain breaks at a parentUuid cycle, which relink does not mend; it needs a person"
    beyond = sorted(scan.codes & UNCORRECTABLE - RELINKABLE)
    if beyond and salvage_would_help(scan):
        return (f"it also has {', '.join(beyond)}: `levelsess fsck --salvage --relink --yes {shellwords.quote(str(journal))}` "
                "salvages it first, then relinks it")
    return f"it also has {', '.join(beyond)}, which relink does not mend; it is left exactly as it is"


def _relink_detail(journal: Path, scan: JournalScan, folder: Folder, after_salvage: bool) -> str:
    where = f"original to {folder.state_dir / QUARANTINE}/"
    own = scan.layout.relink_detail(scan)
    if own is not None:
        return f"{own}; {where}"
    if after_salvage:
        return f"after salvage, relink each dangling parentUuid to the nearest earlier message; {where}"
    try:
        splices = scan.layout.plan_relinks(journal)
    except LevelsessError as exc:
        return f"relink: {exc}"
    lines = ", ".join(f"line {s.line} -> line {s.target_line}" for s in splices[:20])
    more = f" and {len(splices) - 20} more" if len(splices) > 20 else ""
    return f"relink {len(splices)} dangling parentUuid(s) to the nearest earlier message ({lines}{more}); {where}"


def salvage_would_help(scan: JournalScan) -> bool:
    """True when ``fsck --salvage`` would rewrite this journal: it is identified, holds records, and
    every finding that blocks it is line damage salvage cuts around or a record problem it keeps."""
    blocking = scan.codes & UNCORRECTABLE
    return (scan.identified and scan.records > 0 and bool(blocking & SALVAGEABLE)
            and blocking <= SALVAGEABLE | SALVAGE_KEEPS)


def salvage_refusal(journal: Path, scan: JournalScan) -> str | None:
    """Why ``--salvage`` leaves a journal that needs a person as it is (None: it salvages it, or
    nothing blocks it, or it is not a journal levelsess knows, which its own finding says)."""
    if not scan.blocked or not scan.identified:
        return None
    if journal.is_symlink():
        return f"a symlinked journal is never written through; salvage the file it points to, {journal.resolve()}"
    if salvage_would_help(scan):
        return None
    blocking = scan.codes & UNCORRECTABLE
    if scan.records == 0:
        return f"it holds no whole record of {scan.layout.value}: a rewrite would empty it"
    from .salvage import MAY_BE_A_RECORD  # (a blocked journal's: not loaded by a run that meets none)

    unsure = sorted(blocking & MAY_BE_A_RECORD.keys())
    if unsure:
        return (f"it holds {'; and '.join(MAY_BE_A_RECORD[code] + f' ({code})' for code in unsure)}: that may be a whole "
                "record, and salvage never removes one, so the journal is left exactly as it is; it needs a person")
    beyond = sorted(blocking - SALVAGEABLE - SALVAGE_KEEPS)
    if beyond:
        return f"salvage does not touch a journal with {', '.join(beyond)}; it is left exactly as it is"
    return (f"salvage cuts out line damage only, and this journal has none; {', '.join(sorted(blocking))} "
            "need a person (the journal is left exactly as it is)")


def recovery_dir(folder: Folder, kind: str) -> Path:
    """``<store>/.levelsess/<kind>/<folder name>``: a saved file's folder names its session's folder
    (a LevelCode project slug, or a Logician session id: its journals are all messages.jsonl)."""
    return folder.state_dir / kind / folder.path.name


def _apply(action: Action, touched: dict[Path, set[Path]], force: bool) -> tuple[set[tuple[str, str]], Path | None]:
    """Make one planned write; return the (code, path) findings it repaired and where saved bytes went."""
    folder = action.folder
    assert folder is not None
    if action.kind == "remove-lock":
        return _remove_stale_lock(action.path), None
    if action.kind == "remove-temp":
        durable.remove(action.path)
        return {("leftover-temp", str(action.path))}, None
    if action.kind == "rebuild-cache":
        done, saved = _rebuild_cache(action, touched.get(folder.path, set()))
        where = (str(action.path), str(folder.path))  # a missing cache's finding names its folder
        return ({(code, path) for code in action.fixes for path in where} if done else set()), saved
    scan = action.scan
    assert scan is not None
    saved = None
    with folder.layout.holding(action.path, force=force):
        if action.kind == "terminate-tail":
            durable.append_newline(action.path, scan.size, _still(action.path, folder, TailState.UNTERMINATED))
        elif action.kind == "trim-tail":
            where = recovery_dir(folder, RECOVERED)  # made by the save, and removed again if the save fails
            saved = durable.truncate_saving(action.path, scan.body_end, scan.size, where, _still(action.path, folder, TailState.TORN))
        elif action.kind == "salvage":
            from .salvage import salvage_journal  # (salvage's: not loaded by a run that salvages nothing)

            saved = salvage_journal(scan, folder.state_dir / QUARANTINE, folder.path.name)
        elif action.kind == "relink":
            if action.path in touched.get(folder.path, set()) or not scan.unchanged():  # salvaged a moment ago
                scan = scan_journal(action.path, folder.layout)
            if not relink_would_help(scan):
                if scan.codes & SALVAGEABLE:
                    raise RelinkRefusedError("its line damage is still there (salvage did not rewrite it: see salvage-refused), "
                                             "so its chain was not relinked either; it is left as it is")
                raise RelinkRefusedError(relink_refusal(action.path, scan, False) or f"{action.path}: nothing to relink")
            saved = folder.layout.relink_journal(scan, folder.state_dir / QUARANTINE, folder.path.name)
        if action.kind in ("terminate-tail", "trim-tail"):
            _verify_tail(action.path)
    touched.setdefault(folder.path, set()).add(action.path)
    return {(code, str(action.path)) for code in action.fixes}, saved


def _still(journal: Path, folder: Folder, state: TailState):
    """Judge a journal's final bytes as they are at the instant of the write (the file held still):
    the repair goes ahead only if they are still what the check planned for (``state``)."""
    return lambda data, offset: judge_tail(journal, folder.layout, data, offset) is state


def _remove_stale_lock(path: Path) -> set[tuple[str, str]]:
    """Remove a lock only if it is still stale now; a lock that came alive is left alone."""
    info = inspect_lock(path)
    if info is not None and info.state is not LockState.STALE:
        raise LockBusyError(f"{path} ({info.reason}); left in place")
    if info is not None:
        locks.remove_if_unchanged(info)
    return {("stale-lock", str(path))}


def remove_dead_temps(folder: Folder, prefix: str = ".") -> list[Finding]:
    """Remove the temp files of dead levelsess writes in ``folder`` whose names start with
    ``prefix`` (a rerun tidies what its killed predecessor left); return repaired findings."""
    found = []
    for temp in folder_leftovers(folder)[1]:
        if temp.name.startswith(prefix):
            durable.remove(temp)
            found.append(Finding("leftover-temp", "warning", str(temp), None, None,
                                 "temporary file of an interrupted levelsess write", repaired=True))
    return found


def _verify_tail(journal: Path) -> None:
    """After a write, the journal must end on a newline (or be empty)."""
    with open(journal, "rb") as handle:
        size = handle.seek(0, 2)
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                raise DurabilityError(f"{journal} does not end on a newline after repair")


def rebuild_cache(folder: Folder, scans: list[JournalScan], saved: list[Path] | None = None) -> bytes | None:
    """Write the folder's index.json / meta.json if it differs from the journals; return the bytes written.

    With a ``saved`` list, the bytes of a Logician meta.json it replaces are first saved under
    ``.levelsess/replaced/`` and their path appended: a meta.json may hold the only copy of a
    session's name.  index.json is derived from the journals alone, so nothing of it is lost."""
    loaded = load_cache(folder.cache)
    data = derived_cache(folder, scans, loaded)
    if data is None:
        return None
    if saved is not None and loaded.raw is not None and not folder.layout.cache_is_derived:
        saved.append(_save_replaced(folder, loaded.raw))  # index.json is derived from the journals alone; meta.json is not
    durable.atomic_write(folder.cache, data)
    verified.vouch(folder, scans, data)  # index.json only (meta.json is never stat-skipped)
    return data


def derived_cache(folder: Folder, scans: list[JournalScan], loaded=None) -> bytes | None:
    """The bytes :func:`rebuild_cache` would write (None: the cache as it is is right, and an index
    compared in full is vouched for), writing nothing else; ``loaded``: the cache as read."""
    loaded = load_cache(folder.cache) if loaded is None else loaded
    if loaded.state == "unreadable":  # never replaced: it may hold what only it holds (a session's name)
        raise OperationalError(f"{folder.cache}: {loaded.detail}; left as is")
    return folder.layout.derive_cache(folder, scans, loaded)


def _save_replaced(folder: Folder, data: bytes) -> Path:
    """Keep the bytes of the cache about to be replaced (the bytes judged, not a second read)."""
    where = recovery_dir(folder, REPLACED) / f"{folder.cache.name}.{durable.utc_stamp()}"
    durable.ensure_dir(where.parent)
    durable.write_new(where, data)
    return where


def _rebuild_cache(action: Action, touched: set[Path]) -> tuple[bool, Path | None]:
    """Rebuild from the check's scans, rescanning only journals a repair changed.

    Returns (False, None) when the cache must stay as it is: a journal of a future schema or not
    identified, or (for Logician) a journal that still needs a person after the repairs; else
    (True, where the old cache's bytes were saved, if there was one).
    """
    folder = action.folder
    assert folder is not None
    by_path = {scan.path: scan for scan in action.scans}
    scans = [by_path[j] if j not in touched and j in by_path and by_path[j].unchanged() else scan_journal(j, folder.layout)
             for j in folder.journals]
    if any(s.version is not None and s.version > 2 or not s.identified for s in scans):
        return False, None
    if not folder.layout.cache_is_derived and any(s.blocked for s in scans):
        return False, None
    saved: list[Path] = []
    rebuild_cache(folder, scans, saved)
    return True, (saved[0] if saved else None)
