"""Checking and repairing: ``fsck``, ``reindex``, ``migrate``."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from .base import JsonOpt, PathsArg, QuietOpt, StoreOpt, UsageError, VerboseOpt, _ctrl_c_deferred, _output, _progress, _targets, app, check_folders, common_base, discover_all, plan_repair, stopped_by



@app.command()
def fsck(
    ctx: typer.Context,
    paths: PathsArg = None,
    repair: Annotated[bool, typer.Option("--repair", help="Fix what is safe: terminate or save-and-trim a torn final record, remove stale locks, rebuild caches.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the repairs that would be made; write nothing.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Validate every record against schemas/ and count warnings as errors.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Also check and repair sessions whose lock is held by a live or uncheckable owner.")] = False,
    salvage: Annotated[bool, typer.Option("--salvage", help="Rebuild journals damaged mid-file from byte-exact slices (needs --yes); the original goes to .levelsess/quarantine/ (for Claude Code, to levelsess's own data folder).")] = False,
    relink: Annotated[bool, typer.Option("--relink", help="Claude Code: make a broken parentUuid chain whole again in a new journal (each dangling parentUuid value spliced to the nearest earlier message); Gemini CLI: rebuild a torn or missing metadata line from what the file proves, so Gemini's start-up sweep keeps the session. Needs --yes (or --dry-run); the original goes to quarantine. Example: levelsess fsck ~/.gemini --relink --yes")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm --salvage or --relink (or set LEVELSESS_SALVAGE=YES).")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Worker processes for reading journals (0 = automatic).", min=0)] = 0,
    incremental: Annotated[bool, typer.Option("--incremental", help="Skip journals unchanged since the last --incremental check (same inode, size, mtime, ctime and last 4 KiB), and read a journal that only grew from where that check stopped; remembers its verdicts in levelsess's user cache folder, never in a store.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Check journals, locks and caches; with --repair, fix exactly what is safe to fix.

    A check is read-only: it writes nothing at all. A repair cuts only bytes after the last newline that are proven to hold no record (saved under <store>/.levelsess/recovered/<folder>/ first; for Claude Code, in levelsess's own data folder, never in its tree); a file with damage earlier in it, or whose last line holds a whole record among other bytes, is left untouched for a person (or for --salvage, or --relink for a broken Claude Code chain or a lost Gemini CLI metadata line). Layouts: LevelCode, Logician, Claude Code and Codex CLI rollouts, told apart by the files' own records; a file of any other shape (a Cursor agent transcript, text) is reported as unknown-format and never written, nor is any cache beside it.

    Exit codes (bit flags): 0 clean, 1 corrected, 4 left uncorrected, 8 operational error, 16 usage error, 32 interrupted.

    [bold]Examples[/bold]:
      levelsess fsck                              # check the default store
      levelsess fsck ~/.levelcode/sessions/-Users-ada-code-app --repair
      levelsess fsck ./.logician --json           # a Logician workspace, for scripts
      levelsess fsck broken.jsonl --salvage --yes
      levelsess fsck ~/.claude/projects                    # Claude Code transcripts: lines, tails and the parentUuid chain
      levelsess fsck ~/.codex                              # Codex CLI rollouts (sessions/ and archived_sessions/)
      levelsess fsck ~/.claude/projects/-Users-ada-app --relink --yes   # resume shows the whole session again
      levelsess fsck ~/.gemini --relink --yes          # Gemini sessions with a torn metadata line: listed again, not swept
      levelsess fsck --repair --dry-run -v                 # preview every repair step
      levelsess fsck --strict --force --jobs 4 -q --store ~/other-store
      levelsess fsck --incremental -q                      # editor start-up / nightly: re-read only what changed
    """
    from ..render_cli.checks import render_fsck, render_fsck_plan, render_fsck_repair

    out = _output(ctx, json_, quiet, verbose)
    _check_fsck_flags(repair=repair, dry_run=dry_run, salvage=salvage, relink=relink, yes=yes, incremental=incremental)
    targets = _targets(ctx, paths, store)
    folders = discover_all(targets)
    out.base = common_base(targets)
    with _progress(out, "checking", sum(len(f.journals) for f in folders)) as advance:
        report = check_folders(folders, strict=strict, force=force, jobs=jobs, progress=advance, incremental=incremental)
    report.refuse_foreign_only(targets)
    out.targets = targets
    if not (repair or salvage or relink or dry_run):
        render_fsck(out, report.findings, report, report.exit_code)
        return report.exit_code
    plan = plan_repair(report, salvage=salvage, relink=relink, force=force)
    if dry_run:
        render_fsck_plan(out, report, [a.describe() for a in plan.actions])
        return report.exit_code
    with _ctrl_c_deferred() as stopped, _progress(out, "repairing", len(plan.actions)) as advance:
        result = plan.execute(progress=lambda _a: advance(1), should_stop=stopped)
    ran = "+".join(n for n, on in (("salvage", salvage), ("relink", relink)) if on) or "repair"
    render_fsck_repair(out, report, result, ran, stopped_by())
    return result.exit_code


def _check_fsck_flags(*, repair: bool, dry_run: bool, salvage: bool, relink: bool, yes: bool, incremental: bool) -> None:
    """Reject contradictory or unconfirmed fsck flags before any work, naming them."""
    salvage_ok = yes or os.environ.get("LEVELSESS_SALVAGE") == "YES"
    if salvage and not (salvage_ok or dry_run):
        raise UsageError("--salvage rewrites journals: confirm with --yes (or LEVELSESS_SALVAGE=YES), or add --dry-run to preview")
    if relink and not (salvage_ok or dry_run):
        raise UsageError("--relink rewrites journals: confirm with --yes, or add --dry-run to preview")
    if yes and not (salvage or relink):
        raise UsageError("--yes only confirms --salvage or --relink; add one of them or drop --yes")
    if incremental and (writes := [n for n, on in (("--repair", repair), ("--salvage", salvage), ("--relink", relink), ("--dry-run", dry_run)) if on]):
        raise UsageError(f"--incremental only checks: drop {writes[0]} (a repair reads every journal in full), or drop --incremental")


@app.command()
def reindex(
    ctx: typer.Context,
    paths: PathsArg = None,
    check: Annotated[bool, typer.Option("--check", help="Only report caches that differ from the journals, comparing every folder in full (exit 4 if any).")] = False,
    full: Annotated[bool, typer.Option("--full", help="Rescan every folder, even ones whose index levelsess wrote or verified and that nothing changed since.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Rebuild index.json (LevelCode) and meta.json (Logician) from the journals, atomically.

    A folder is skipped without reading only when its index.json holds exactly the bytes levelsess itself last wrote or verified and no journal changed since (a fingerprint under <store>/.levelsess/verified/; use --full to rescan); an index edited by anyone else is always re-derived. A folder holding a journal of a schema newer than this levelsess, a file of another layout, or a cache it cannot read is refused and left as it is. Exit 0 when done, 4 when a folder was refused (or, with --check, when a cache differs).

    [bold]Examples[/bold]:
      levelsess reindex                    # the default store
      levelsess reindex ./.logician --check
      levelsess reindex --full -v
      levelsess reindex --store ~/other-store --json -q
    """
    from ..reindex import reindex as run_reindex
    from ..render_cli.checks import render_reindex

    out = _output(ctx, json_, quiet, verbose)
    targets = _targets(ctx, paths, store)
    folders = discover_all(targets)
    out.base = common_base(targets)
    with _progress(out, "reindexing", len(folders)) as advance:
        result = run_reindex(folders, check_only=check, full=full, progress=advance)
    result.refuse_foreign_only(targets)
    if out.json:
        out.emit_json(result.to_json())
    else:
        render_reindex(out, result)
    return result.exit_code


@app.command()
def migrate(
    ctx: typer.Context,
    paths: PathsArg = None,
    to: Annotated[Optional[int], typer.Option("--to", metavar="N", help="Target journal version (default: the newest this levelsess knows). levelsess never migrates down.", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say, per file, what would change; write nothing (exit 4 when there is work to do).")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the known migration steps and every file's current version; write nothing.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Worker processes for reading and migrating journals (0 = automatic: one per core for 32 MiB or more).", min=0)] = 0,
    keep_backup: Annotated[bool, typer.Option("--keep-backup", help="Keep the originals under <store>/.levelsess/backup/<stamp>/ after a successful run (default: pruned once every file is migrated and verified).")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Upgrade journals and index.json to a newer schema version, crash-safe and idempotent.

    Each journal is migrated under its session lock: streamed through the migration steps into a temp file, verified as a whole journal of the new version, its original hard-linked into <store>/.levelsess/backup/<stamp>.<pid>.partial/, then atomically replaced. Field values keep every byte; only "seq" and the meta "v" are added or changed. index.json is rebuilt from the journals, as reindex would. A kill at any moment leaves every journal a valid old or new one; rerun to finish.

    Refused, untouched and reported: a journal with a torn tail or any fsck error (run `levelsess fsck --repair` first), one of a newer schema (upgrade levelsess), one held by a live writer. Exit 0 when done (rerunning changes nothing), 4 when a file was refused, 8 on an I/O error (originals kept), 32 when interrupted.

    [bold]Examples[/bold]:
      levelsess migrate --dry-run             # what would change in the default store
      levelsess migrate                       # migrate everything to the newest version
      levelsess migrate ~/.levelcode/sessions/-Users-ada-code-app --keep-backup
      levelsess migrate --list --json
      levelsess migrate --to 2 --jobs 4 -v
      levelsess migrate --store ~/other-store -q
    """
    from ..migrate import plan_migration
    from ..render_cli.checks import render_migrate

    out = _output(ctx, json_, quiet, verbose)
    targets = _targets(ctx, paths, store)
    folders = discover_all(targets)
    out.base = common_base(targets)
    with _progress(out, "reading", sum(len(f.journals) for f in folders)) as advance:
        plan = plan_migration(folders, to, progress=advance, jobs=jobs)
    plan.result().refuse_foreign_only(targets)
    if list_ or dry_run:
        result = plan.result(listing=list_)
    else:
        with _ctrl_c_deferred() as stopped, _progress(out, "migrating", plan.work_bytes) as advance:
            result = plan.execute(keep_backup=keep_backup, progress=advance, should_stop=stopped, jobs=jobs)
    if out.json:
        out.emit_json(result.to_json())
    else:
        render_migrate(out, plan, result, stopped_by())
    return result.exit_code
