"""The contract for writing inside another tool's tree (DESIGN.md §1 principle 10), shared by
every app ``restore`` gives chats back to: plan, back up, write, verify, and undo on failure.

- :func:`plan_file` decides, reading only, what one file of the tool needs: nothing (it holds the
  kept bytes), ``create`` (it is not there), ``append`` (it holds a byte prefix of them: cut, or
  left short by a crash), or a refusal with a finding: the file holds bytes the kept source does
  not (``restore-conflict``), the store cannot prove the bytes (``restore-unproven``), or the
  tool is running on it (``in-use``).  Restore never removes or overwrites a byte.
- :func:`apply_plan` copies every file it will change, byte-exact and fsynced, into a new backup
  folder with a manifest before its first write (:mod:`toolkit.restore.backups`); creates each
  new file with an exclusive create whose bytes are checked before they take their name; appends
  with one guarded write (:func:`toolkit.durable.append_if_unchanged`); re-checks right before
  each write that the tool is not running on the file; then reads every written file back by the
  tool's own rules (size, sha256, ``scan_journal`` with its layout) and undoes the whole run
  when that fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import durable
from ..errors import FileChangedError, FileInUseError, LevelsessError, SymlinkedFolderError
from ..findings import Finding
from ..layouts.base import BaseLayout
from ..lines import open_regular
from .kept import Kept, Unproven, read_kept
from .steps import (APPEND, CREATE, DAMAGE, NOTHING, REFUSED, FileStep, RestorePlan, RestoreResult,  # noqa: F401
                    SessionFiles, SessionPlan, file_digest, missing_dirs, read_meta)

# -- plan ----------------------------------------------------------------------------------------


def plan_session(app: str, layout: BaseLayout, files: SessionFiles) -> SessionPlan:
    confinement = confinement_of(files.root)
    steps = tuple(plan_file(journals, target, layout, confinement) for journals, target in files.files)
    return SessionPlan(files.id, app, files.root, steps, files.next, layout)


def confinement_of(root: Path) -> durable.Confinement:
    """The folders a restore under ``root`` writes below and never through a symlinked folder:
    the tool's tree, and levelsess's own restore folder."""
    from .backups import restore_root

    return durable.Confinement.of((root,), (restore_root(),))


def plan_file(journals: Sequence[Path], target: Path, layout: BaseLayout,
              confinement: durable.Confinement | None = None) -> FileStep:
    """What ``target`` needs to hold the source kept in ``journals``, reading only."""
    journal = journals[0]
    try:
        kept = read_kept(journals)
    except Unproven as exc:
        return _refused(target, journal, "restore-unproven", f"not written back: {exc}")
    except LevelsessError as exc:
        return _refused(target, journal, "restore-unproven", f"not written back: the kept journal {journal} cannot be read "
                        f"({exc}); run `levelsess fsck` on the store first")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        return _refused(target, journal, "restore-conflict", f"{target} is a symlink or not a regular file; restore never "
                        f"writes through one (the session is kept in {journal})")
    symlinked = confinement.refusal(target.parent) if confinement is not None else None
    if symlinked is not None:
        return _refused(target, journal, "symlinked-folder", f"not written back: {symlinked}", severity="warning")
    who = layout.writer(target, fresh=True)
    if who is not None:
        return _refused(target, journal, "in-use", f"not written back while the tool is running on it: {who}; "
                        "close it and run restore again", severity="warning")
    if not target.exists():
        return FileStep(target, CREATE, journal, kept.size, kept.sha256, lines=kept.lines, kept=kept)
    return _against(target, journal, kept)


def _against(target: Path, journal: Path, kept: Kept) -> FileStep:
    """``target`` exists: the kept bytes (nothing to do), a byte prefix of them (append the rest), or a conflict."""
    try:
        size, digest, differs = _compare(target, kept)
    except OSError as exc:
        return _refused(target, journal, "restore-conflict", f"cannot read {target}: {exc.strerror or exc}; nothing written")
    if differs is None and size == kept.size:
        return FileStep(target, NOTHING, journal, size, kept.sha256, size, digest, kept=kept)
    if differs is None:
        return FileStep(target, APPEND, journal, kept.size, kept.sha256, size, digest, kept.lines_from(size), kept=kept)
    if differs == kept.size:  # every kept byte is there, and the tool wrote more since the last import
        return FileStep(target, NOTHING, journal, size, digest, size, digest, kept=kept,
                        note=f"holds every kept byte and {size - kept.size:,} more the tool wrote since the last import")
    return _refused(target, journal, "restore-conflict", f"{target} holds {size:,} bytes that are not the start of the "
                    f"session kept in {journal} (they differ from byte {differs:,}); restore never overwrites or removes "
                    "a byte: move the file away to restore the kept one, or keep it")


def _compare(target: Path, kept: Kept) -> tuple[int, str, int | None]:
    """The target's size and sha256, and the first byte where it is not a prefix of the kept bytes (None: it is)."""
    digest = hashlib.sha256()
    offset, differs = 0, None
    source = kept.chunks()
    pending = b""
    with open_regular(target) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            if differs is None:
                while len(pending) < len(chunk) and (more := next(source, None)) is not None:
                    pending += more
                common = pending[:len(chunk)]
                if common != chunk:
                    differs = offset + next((i for i, (a, b) in enumerate(zip(common, chunk)) if a != b), len(common))
                pending = pending[len(chunk):]
            offset += len(chunk)
    return offset, digest.hexdigest(), differs


def _refused(target: Path, journal: Path, code: str, message: str, severity: str = "error") -> FileStep:
    return FileStep(target, REFUSED, journal, finding=Finding(code, severity, str(target), None, None, message))


# -- apply ---------------------------------------------------------------------------------------


def preview(plan: RestorePlan) -> RestoreResult:
    """The plan as a result: nothing written (no --yes, or --dry-run)."""
    return RestoreResult(plan, False, tuple(plan.findings), plan.exit_code)


def apply_plan(plan: RestorePlan, interrupted: Callable[[], bool] = lambda: False) -> RestoreResult:
    """Back up, write every step, verify; undo the run when the verify fails (exit 8)."""
    from . import backups

    steps = plan.steps
    findings = list(plan.findings)
    if not steps:
        return RestoreResult(plan, True, tuple(findings), 4 if findings else 0)
    with durable.confined(*(confinement_of(root) for root in {s.root for _step, s in steps})):
        run = backups.start(steps)
    written: list[Path] = []
    try:
        for step, session in steps:
            if interrupted():
                run.mark("interrupted", written=[str(p) for p in written])
                return RestoreResult(plan, True, tuple(findings), 32, run.stamp, run.folder, tuple(written))
            with durable.confined(confinement_of(session.root)):  # the plan looked; this holds at the write
                problem = _write(step, session.layout, run.appends.get(step.path))
            if problem is None:
                written.append(step.path)
            else:
                findings.append(problem)
    except LevelsessError as exc:  # a write that could not be made durable (disk full, I/O error): stop there
        run.mark("failed", written=[str(p) for p in written], error=str(exc))
        exc.hint = f"what it wrote is listed in {run.folder / backups.MANIFEST}; `levelsess restore --undo {run.stamp}` takes it back"
        raise
    problems = [_verify(step, session.layout) for step, session in steps if step.path in written]
    problems = [p for p in problems if p is not None]
    if problems:
        undone = backups.undo(run.stamp)
        findings += problems + list(undone.findings)
        return RestoreResult(plan, True, tuple(findings), 8, run.stamp, run.folder, tuple(written), undone=True)
    run.mark("applied", written=[str(p) for p in written])
    code = 4 if findings else 0  # each finding is a file left as it was
    return RestoreResult(plan, True, tuple(findings), code, run.stamp, run.folder, tuple(written))


def _write(step: FileStep, layout: BaseLayout, appended: bytes | None) -> Finding | None:
    """Write one step; a finding (nothing written to that file) when the file changed since the plan."""
    who = layout.writer(step.path, fresh=True)
    if who is not None:
        return Finding("in-use", "warning", str(step.path), None, None, f"not written back: {who}; nothing written to it")
    try:
        if step.action == APPEND:
            durable.append_if_unchanged(step.path, step.existing, step.existing_sha256, appended)
            return None
        durable.ensure_dir(step.path.parent)
        with durable.atomic_writer(step.path, before_replace=lambda temp: _check_bytes(temp, step), exclusive=True) as out:
            for chunk in step.kept.chunks():
                out.write(chunk)
    except FileInUseError as exc:
        return Finding("in-use", "warning", str(step.path), None, None, f"not written back: {exc}; nothing written to it")
    except SymlinkedFolderError as exc:
        return Finding("symlinked-folder", "warning", str(step.path), None, None, f"not written back: {exc}")
    except (FileChangedError, FileExistsError) as exc:
        return Finding("restore-conflict", "error", str(step.path), None, None,
                       f"changed since it was planned ({exc}); nothing written to it: run restore again")
    return None


def _check_bytes(temp: Path, step: FileStep) -> None:
    size, digest = file_digest(temp)
    if (size, digest) != (step.size, step.sha256):
        raise FileChangedError(f"the bytes read back from the store are not the kept source's ({size:,} bytes, sha256 {digest[:12]}…)")


def _verify(step: FileStep, layout: BaseLayout) -> Finding | None:
    """Read a written file back: the bytes the source had (size, sha256), and a journal of the
    tool's layout with no line damage (``scan_journal``).  A finding when it is not."""
    from ..journal import scan_journal

    size, digest = file_digest(step.path)
    if (size, digest) != (step.size, step.sha256):
        problem = f"holds {size:,} bytes (sha256 {digest[:12]}…), not the {step.size:,} bytes the source had"
    else:
        scan = scan_journal(step.path, layout)
        damage = sorted(scan.codes & DAMAGE)
        problem = (f"is not read as a {layout.describes} by its rules: {scan.foreign}" if not scan.identified else
                   f"reads with {', '.join(damage)}" if damage else None)
    if problem is None:
        return None
    return Finding("restore-verify-failed", "error", str(step.path), None, None,
                   f"after the write it {problem}; the whole restore was undone")
