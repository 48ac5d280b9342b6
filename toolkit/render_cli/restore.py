"""``levelsess restore``: the plan or what was written, an app's own chat lists, undo, past restores."""

from __future__ import annotations

from ..report import Output, add_column, findings_table, print_table


def render_restore(out: Output, result, keys: list[str], *, to=None, store: str | None = None) -> int:
    from .. import shellwords

    from ..report import restore_summary, restore_table

    if out.json:
        out.emit_json(result.to_json())
        return result.exit_code
    if not out.quiet:
        print_table(out.out, restore_table(result))
    if result.findings:
        print_table(out.out, findings_table([f for f in result.findings if f.severity == "error" or not out.quiet], verbose=out.verbose))
    out.say(restore_summary(result))
    if result.stamp and not result.undone:
        out.say(f"backup and manifest: {result.folder}; undo: levelsess restore --undo {result.stamp}")
    if not result.applied and result.plan.steps:
        given = [*keys, *(["--to", str(to)] if to is not None else []), *(["--store", str(store)] if store else [])]
        out.say("next: levelsess restore " + shellwords.join(given) + " --yes", style="bold")  # the same run, applied
    elif result.applied and not result.undone:
        for session in result.plan.sessions:
            if session.next and any(f.action != "refused" for f in session.files):
                out.say(f"next: {session.next}", style="bold")
    return result.exit_code


def restore_app(out: Output, name: str, source, maps: list[str], *, apply: bool) -> int:
    from rich.table import Table

    from ..restore import app_restore

    module = app_restore(name)
    result = module.run_app(source, maps, apply=apply)
    if out.json:
        out.emit_json(result.to_json())
        return result.exit_code
    rows = module.rows(result)
    if rows and not out.quiet:
        table = Table(title=f"restore --app {name}" + ("" if result.applied else " plan (nothing written; --yes applies it)"), title_justify="left")
        for column in ("file", "action", "what"):
            add_column(table, column)
        for row in rows:
            table.add_row(*row)
        print_table(out.out, table)
    if result.findings:
        print_table(out.out, findings_table([f for f in result.findings if f.severity == "error" or not out.quiet], verbose=out.verbose))
    out.say(module.summary(result))
    if result.stamp and not result.undone:
        out.say(f"backup and manifest: {result.folder}; undo: levelsess restore --undo {result.stamp}")
    if not result.applied and rows:
        from .. import shellwords

        out.say(f"next: levelsess restore --app {name}" + (f" --source {shellwords.quote(str(source))}" if source else "")
                + "".join(f" --map {shellwords.quote(m)}" for m in maps) + " --yes", style="bold")
    elif result.stamp and not result.undone:
        out.say(f"next: {module.NEXT}", style="bold")
    return result.exit_code


def render_undo(out: Output, result) -> int:
    from ..report import undo_table

    if out.json:
        out.emit_json(result.to_json())
        return result.exit_code
    if not out.quiet:
        print_table(out.out, undo_table(result))
    if result.findings:
        print_table(out.out, findings_table(list(result.findings), verbose=out.verbose))
    refused = len(result.findings)
    done = "would be as before the restore" if result.dry_run else "as before the restore"
    out.say(f"undo of {result.stamp}: {len(result.entries) - refused} file(s) and folder(s) {done}, {refused} refused "
            f"(left as they are){' (dry run: nothing changed)' if result.dry_run else ''}  [exit {result.exit_code}]")
    return result.exit_code


def render_restore_runs(out: Output, runs: list[dict]) -> int:
    from ..report import restore_runs_table

    if out.json:
        out.emit_json({"version": 1, "restores": runs, "exit": 0})
    elif runs:
        print_table(out.out, restore_runs_table(runs))
    else:
        out.say("no restore on this machine yet")
    return 0
