"""What to do next after a check or a repair: hints that name only commands that can help.

Each hint is derived from what a command would really do (the repair plan, salvage's own
test), never from finding codes alone, so following a hint never leads back to itself
(DESIGN.md §1, principle 9).
"""

from __future__ import annotations

from pathlib import Path

from .. import shellwords
from ..errors import SKIPPED, UNCORRECTABLE
from ..findings import Finding
from .check import CheckReport

#: Uncorrectable codes with advice of their own (not "needs a person").
_OTHER_ADVICE = frozenset({"unknown-format", "future-version"})
#: Findings a plain --repair fixes when nothing else blocks the file.
_REPAIRABLE_BY_REPAIR = ("torn-tail", "unterminated-tail")


def next_steps(report: CheckReport, findings: list[Finding], targets: list[Path], ran: str = "check") -> list[str]:
    """Return the "next:" lines for a run of ``ran`` (check | repair | salvage) that ended with ``findings``."""
    where = " ".join(shellwords.quote(str(t)) for t in targets)
    open_ = [f for f in findings if not f.repaired]
    steps = _symlink_steps(report, open_)  # first: repairing a link's target makes the folder's cache stale
    if not open_:  # nothing left to advise on (and the repair side stays unloaded)
        return steps
    if ran == "check" and _repair_would_act(report, open_):
        steps.append(f"run `levelsess fsck --repair {where}` to fix what is safe to fix (nothing complete is removed)")
    done = set(ran.split("+"))  # what this run did: check | repair | salvage | relink | salvage+relink
    acted = {f.path for f in findings if f.repaired}  # journals this run rewrote
    salvageable = _salvageable(report, open_)
    both = [(folder, s) for folder, s in salvageable if _relinks(s.scan)]
    alone = [(folder, s) for folder, s in salvageable if not _relinks(s.scan)]
    if alone and "salvage" not in done:
        steps.append(f"{len(alone)} journal(s) are damaged mid-file: `levelsess fsck --salvage --yes {where}` rewrites them "
                     f"from their whole records (originals kept in {_quarantine([f for f, _s in alone])})")
    if both and "salvage" not in done:
        steps.append(f"{len(both)} Claude Code session(s) are damaged mid-file and have a broken parentUuid chain: "
                     f"`levelsess fsck --salvage --relink --yes {where}` rewrites them from their whole records, then relinks "
                     f"each dangling parent, so resume shows the whole session (originals kept in "
                     f"{_quarantine([f for f, _s in both])})")
    rescuable = sum(1 for folder in report.folders for s in folder.sessions
                    if s.scan is not None and not s.is_symlink and not s.in_use and str(s.journal) in {f.path for f in open_}
                    and _rebuilds_meta(s.scan))
    if rescuable and "relink" not in done:
        steps.append(f"{rescuable} Gemini CLI session(s) lost their metadata line (Gemini deletes them at its next start): "
                     f"`levelsess fsck --relink --yes {where}` rebuilds it from what each file proves, every message line "
                     "kept byte for byte (originals kept in quarantine)")
    relinkable = _relinkable(report, open_) + len(_salvaged_unlinked(report, done, acted))
    if relinkable and "relink" not in done:
        steps.append(f"{relinkable} Claude Code session(s) have a broken parentUuid chain: `levelsess fsck --relink --yes {where}` "
                     "relinks each dangling parent to the nearest earlier message, so resume shows the whole session "
                     "(originals kept in quarantine)")
    people = _need_a_person(report, open_, done, acted)
    if people:
        codes = sorted(set().union(*people.values()))
        steps.append(f"{len(people)} journal(s) need a person ({', '.join(codes)}): see the findings, and the "
                     "README's table \"Findings that need a person\"")
    running = {str(s.journal) for f in report.folders for s in f.sessions if s.in_use and not s.skipped}
    steps += _symlinked_steps(report, open_, ran)
    steps += _operational_steps(open_, running)
    return steps


def _symlinked_steps(report: CheckReport, open_: list[Finding], ran: str) -> list[str]:
    """Repair steps refused (or, after a check, that would be) because a folder on the way is a symlink."""
    if not any(f.code == "symlinked-folder" for f in open_):
        return []
    if ran == "check":
        from .repair import plan_repair

        refused = [f for f in plan_repair(report).refusals if f.code == "symlinked-folder"]
        verb = "would be refused"
    else:
        refused = [f for f in open_ if f.code == "symlinked-folder" and f.severity == "error"]
        verb = "were refused"
    if not refused:
        return []
    return [f"{len(refused)} repair step(s) {verb}: a folder on the way is a symlink, and levelsess never writes through "
            "one; replace each symlink with the folder it points to, or run levelsess on that folder directly "
            "(see the symlinked-folder findings)"]


def _repair_would_act(report: CheckReport, open_: list[Finding]) -> bool:
    from .repair import plan_repair

    wanted = {(f.code, f.path) for f in open_}
    return any((code, place) in wanted for action in plan_repair(report).actions for code in action.fixes
               for place in _places(action))


def _places(action) -> tuple[str, ...]:
    """Where the findings an action fixes are reported: its file, and for a cache its folder
    (a missing or stale index.json is a finding on the project folder, the rebuild on the file)."""
    return (str(action.path),) + ((str(action.folder.path),) if action.folder is not None else ())


def _symlink_steps(report: CheckReport, open_: list[Finding]) -> list[str]:
    damaged = {f.path for f in open_ if f.code in _REPAIRABLE_BY_REPAIR}
    steps = []
    for folder in report.folders:
        for session in folder.sessions:
            if session.is_symlink and str(session.journal) in damaged:
                target = shellwords.quote(str(session.journal.resolve()))
                steps.append(f"{session.journal} is a symlink, never written through: repair the file it points to, "
                             f"`levelsess fsck --repair {target}`")
    return steps


def _salvageable(report: CheckReport, open_: list[Finding]) -> list:
    """(folder, session) of each journal salvage would rewrite."""
    from .repair import salvage_would_help

    paths = {f.path for f in open_}
    refused = {f.path for f in open_ if f.code == "salvage-refused"}  # suggesting it again would loop
    return [(folder.folder, s) for folder in report.folders for s in folder.sessions
            if s.scan is not None and str(s.journal) in paths and str(s.journal) not in refused
            and not s.is_symlink and not s.in_use and s.scan.blocked and salvage_would_help(s.scan)
            and not _rebuilds_meta(s.scan)]


def _rebuilds_meta(scan) -> bool:
    """Gemini: ``--relink`` rebuilds this session's lost metadata line (salvage would not make it loadable)."""
    from .repair import relink_would_help

    return scan.identified and scan.layout.relink_needed(scan) is not None and relink_would_help(scan)


def _salvaged_unlinked(report: CheckReport, done: set[str], acted: set[str]) -> set[str]:
    """Journals this run salvaged (without --relink) whose parentUuid chain is still to relink."""
    if "salvage" not in done or "relink" in done:
        return set()
    return {str(s.journal) for folder in report.folders for s in folder.sessions
            if s.scan is not None and str(s.journal) in acted and _relinks(s.scan)}


def _relinks(scan) -> bool:
    """A journal whose chain relink mends once salvage has cut its line damage out."""
    return scan.layout.relinks and "dangling-parent" in scan.codes


def _quarantine(folders: list) -> str:
    """Where salvage keeps the originals: ``.levelsess/quarantine/`` in a store, or levelsess's own
    data folder for a tree that is not levelsess's (Claude Code)."""
    places = {folder.state_dir for folder in folders}
    if all(place.name == ".levelsess" for place in places):
        return ".levelsess/quarantine/"
    return f"{next(iter(places)) / 'quarantine'}/" if len(places) == 1 else "levelsess's data folder"


def _relinkable(report: CheckReport, open_: list[Finding]) -> int:
    from .repair import relink_would_help

    paths = {f.path for f in open_ if f.code in ("dangling-parent", "broken-chain")}
    refused = {f.path for f in open_ if f.code == "relink-refused"}
    return sum(1 for folder in report.folders for s in folder.sessions
               if s.scan is not None and str(s.journal) in paths - refused and not s.is_symlink and not s.in_use
               and relink_would_help(s.scan))


def _need_a_person(report: CheckReport, open_: list[Finding], done: set[str] = frozenset(),
                   acted: set[str] = frozenset()) -> dict[str, set[str]]:
    """The journals that still need a person (neither repair, salvage nor relink can help, or
    this run already salvaged or relinked them and this is what is left), with their codes."""
    from .repair import relink_would_help, salvage_would_help

    salvage_refused = {f.path for f in open_ if f.code == "salvage-refused"}
    relink_refused = {f.path for f in open_ if f.code == "relink-refused"}
    helped = set()
    after = _salvaged_unlinked(report, done, acted)
    for folder in report.folders:
        for s in folder.sessions:
            path = str(s.journal)
            if s.scan is None or s.is_symlink:
                continue
            salvage = (salvage_would_help(s.scan) and path not in salvage_refused
                       and not ("salvage" in done and path in acted))
            salvage = salvage or path in after  # salvaged by this run: relink is what is left to run
            refused = path in relink_refused and not salvage  # "add --salvage" is no final refusal
            relink = ((relink_would_help(s.scan) or salvage and _relinks(s.scan)) and not refused
                      and not ("relink" in done and path in acted))
            if salvage or relink:
                helped.add(path)
    people: dict[str, set[str]] = {}
    for finding in open_:
        if finding.code in UNCORRECTABLE and finding.code not in _OTHER_ADVICE and finding.path not in helped:
            people.setdefault(finding.path, set()).add(finding.code)
    return people


def _operational_steps(open_: list[Finding], running: set[str] = frozenset()) -> list[str]:
    """``running``: journals read but left alone, for their tool runs in their project."""
    steps = []
    foreign = sum(1 for f in open_ if f.code == "unknown-format")
    if foreign:
        steps.append(f"{foreign} file(s) are not a journal of a layout levelsess knows; it left them alone")
    future = sum(1 for f in open_ if f.code == "future-version")
    if future:
        steps.append(f"{future} journal(s) were written by a newer levelsess: upgrade levelsess; this one leaves them untouched")
    changed = sum(1 for f in open_ if f.code == "changed-during-repair")
    if changed:
        steps.append(f"{changed} journal(s) were left as they were because another process wrote to them or kept them "
                     "open during the repair (nothing was lost); quit the tool writing them (see each finding), then rerun")
    skipped = sum(1 for f in open_ if f.code in SKIPPED and f.code != "changed-during-repair" and f.path not in running)
    busy = sum(1 for f in open_ if f.code == "in-use" and f.path in running)
    if busy:
        steps.append(f"{busy} session(s) are left to their tool: Claude Code or Codex CLI runs in their project and may "
                     "append at any moment, so no repair touches them (each finding names the process); quit it, then rerun")
    if skipped:
        steps.append(f"{skipped} session(s) were not checked: a writer holds them (locked: alive, or on a host or in a "
                     "state levelsess cannot check); close the editor that owns them and rerun, or add --force if you "
                     "are sure nothing is writing")
    unreadable = [f for f in open_ if f.code == "unreadable"]
    if unreadable:
        steps.append(f"{len(unreadable)} file(s) or folder(s) could not be read (see each finding: a permission, an I/O "
                     "error, or something that is not a regular file where one belongs); fix that, then rerun the same command")
    failed = [f for f in open_ if f.code == "repair-failed"]
    if any("disk full" in f.message for f in failed):
        steps.append("a write failed because the disk is full: free disk space, then rerun the same command")
    elif failed:
        steps.append("a write failed (see the findings); fix the cause named there, then rerun the same command")
    return steps
