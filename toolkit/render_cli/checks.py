"""``fsck``, ``reindex``, ``migrate`` and ``demo``: findings tables, plans, summaries, ``next:`` lines."""

from __future__ import annotations

from ..report import Output, findings_table, fsck_json, print_table, relative, summary_line


def render_fsck(out: Output, findings, report, exit_code: int, steps: list[str] | None = None, ran: str = "check") -> None:
    """A check's (or repair's) findings, its summary line, what was not checked and the next commands."""
    from ..fsck.advice import next_steps

    if out.json:
        doc = fsck_json(findings, report.files, report.records, report.bytes, exit_code, steps)
        if report.from_cache is not None:  # --incremental
            doc["from_cache"] = report.from_cache
            doc["resumed"] = report.resumed or 0
        out.emit_json(doc)
        return
    shown = [f for f in findings if f.severity == "error" or not out.quiet]
    if shown:
        print_table(out.out, findings_table(shown, verbose=out.verbose, base=out.base))
    if out.quiet:
        return
    out.line(summary_line(findings, report.files, report.records, report.bytes, exit_code))
    if report.not_checked:
        out.say(f"{report.not_checked} session(s) not checked: locked by a live or uncheckable writer", style="yellow")
    if report.from_cache is not None:
        grown = f" ({report.resumed} of them only grew: read from where the last check stopped)" if report.resumed else ""
        out.say(f"{report.files - report.from_cache} journal(s) read{grown}, {report.from_cache} unchanged since the last "
                "--incremental check (verdict from the cache)")
    if report.cache_error:
        out.say(report.cache_error, style="yellow")
    for step in next_steps(report, list(findings), out.targets, ran):
        out.say(f"next: {step}", style="cyan")


def render_fsck_plan(out: Output, report, steps: list[str]) -> None:
    """``fsck --repair --dry-run``: each step it would take, then the check's findings."""
    if not out.json:
        for step in steps:
            out.out.print(f"would {step}", markup=False, soft_wrap=True)
        out.say(f"{len(steps)} repair step(s) planned; nothing written (--dry-run)")
    render_fsck(out, report.findings, report, report.exit_code, steps)


def render_fsck_repair(out: Output, report, result, ran: str, stopped_by: str) -> None:
    """A repair: each step done (-v), an interruption, then what is left."""
    if out.verbose and not out.json:
        for action in result.done:
            out.out.print(f"did {action.describe()}", markup=False, soft_wrap=True)
    if result.interrupted:
        out.fail(f"interrupted ({stopped_by}) after a completed step", "rerun the same command to finish the repair")
    render_fsck(out, list(result.findings), report, result.exit_code, [a.describe() for a in result.done], ran=ran)


def render_reindex(out: Output, result) -> None:
    if result.findings:
        print_table(out.out, findings_table(list(result.findings), verbose=out.verbose, base=out.base))
    verb = "differ" if result.check_only else "written"
    if result.no_cache:
        out.say(f"{len(result.no_cache)} folder(s) of a layout that keeps no cache (Claude Code, Codex CLI): nothing to rebuild there")
    out.say(f"{len(result.written)} cache(s) {verb}, {len(result.unchanged)} unchanged, {len(result.refused)} refused  [exit {result.exit_code}]")


#: How ``migrate`` names the folders of layouts with one format version so far.
UNVERSIONED = {"logician": "Logician sessions", "claude-code": "Claude Code projects", "codex": "Codex CLI rollouts"}


def render_migrate(out: Output, plan, result, stopped_by: str) -> None:
    """A migration (or its --dry-run, or --list): the files, refusals, what has one version only, the summary."""
    from ..migrate import STEPS
    from ..report import migrate_table

    if result.listing:
        print_table(out.out, migrate_table(result, base=out.base, steps=list(STEPS.values()), everything=True))
        return
    table = migrate_table(result, base=out.base, everything=out.verbose)
    if table.row_count and not out.quiet:
        print_table(out.out, table)
    if result.findings:
        print_table(out.out, findings_table(list(result.findings), verbose=out.verbose, base=out.base))
    if plan.unversioned:
        kinds = " and ".join(UNVERSIONED.get(n, n) for n in plan.others)
        out.say(f"{len(plan.unversioned)} folder(s) of {kinds}: one format version so far, nothing to migrate")
    out.say(_migrate_summary(result, result.exit_code))
    if result.interrupted:
        out.fail(f"interrupted ({stopped_by}) after a completed file", "rerun the same command to finish the migration")


def _migrate_summary(result, code: int) -> str:
    if result.dry_run:
        return (f"would migrate {result.count('migrate')} journal(s) and rebuild {result.count('rebuild')} index file(s) to v{result.to}; "
                f"{result.count('up-to-date')} up to date, {result.count('refused')} refused; nothing written (--dry-run)  [exit {code}]")
    backups = ", ".join(str(p) for p in result.backups)
    kept = f"; originals kept in {backups}" if backups else ""
    return (f"{result.count('migrated')} journal(s) migrated to v{result.to}, {result.count('rebuilt')} index file(s) rebuilt, "
            f"{result.count('up-to-date')} up to date, {result.count('refused')} refused, {result.count('pending')} pending{kept}  [exit {code}]")


def render_demo(out: Output, result) -> None:
    """Each demo step as its fsck command would print it: the repairs it did, findings, summary line."""
    base = str(result.paths[0].parent)
    for step in result.steps:
        out.out.print()
        out.line([(f"levelsess fsck{' --repair' if step.repair else ''}", "bold"), (f"  ({step.title})", None)])
        for action in step.done if not out.quiet else []:  # under the repair step that did them, not the check before it
            out.line([(f"  did {relative(action.describe(), base)}", None)])
        if step.findings:
            print_table(out.out, findings_table(step.findings, base=base))
        out.line(summary_line(step.findings, step.report.files, step.report.records, step.report.bytes, step.exit_code))
