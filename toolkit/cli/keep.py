"""Keeping chats: ``import``, ``doctor``, ``schedule``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from .base import JsonOpt, Output, PathNotFoundError, QuietOpt, StoreOpt, UsageError, VerboseOpt, _output, _progress, _steps, _store, add_column, app, default_store, findings_table, print_table, printable



@app.command("import")
def import_(
    ctx: typer.Context,
    from_: Annotated[str, typer.Option("--from", metavar="cursor|vscode|claude|codex|copilot|gemini|opencode|cline", help="Where to recover chats from: cursor, vscode (also Code - Insiders, Code - OSS, VSCodium), claude (Claude Code transcripts, ~/.claude/projects), codex (Codex CLI rollouts, ~/.codex/sessions and archived_sessions), copilot (GitHub Copilot CLI session logs, ~/.copilot/session-state/<id>/events.jsonl), gemini (Gemini CLI sessions, ~/.gemini/tmp/<project>/chats) or opencode (OpenCode and the Kilo CLI: every opencode*.db / kilo.db and the older storage/ JSON tree of ~/.local/share/opencode and ~/.local/share/kilo) or cline (Cline, Roo Code and Kilo Code task folders: globalStorage/<extension id>/tasks of VS Code, Insiders, Cursor, VSCodium, Windsurf, and ~/.cline/data).", show_default=False)],
    source: Annotated[Optional[list[Path]], typer.Option("--source", metavar="PATH", help="The editor's User folder, one workspaceStorage/<id> folder, or one state.vscdb (Cursor) / session .json or .jsonl (VS Code); for Cursor agent transcripts also ~/.cursor/projects, a project folder or one transcript; for claude a Claude Code root (~/.claude), its projects folder, one project folder or one transcript; for codex a Codex home (~/.codex), its sessions or archived_sessions folder or one rollout; for cline an extension's globalStorage folder, its tasks/ folder or ~/.cline/data; repeatable; default: every install found on this machine.", show_default=False)] = None,
    project: Annotated[Optional[str], typer.Option("--project", metavar="PATH", help="File every imported session under this project path.", show_default=False)] = None,
    map_: Annotated[Optional[list[str]], typer.Option("--map", metavar="OLD=NEW", help="OLD=NEW: re-home sessions of a moved or renamed project folder (repeatable).", show_default=False)] = None,
    orphans_only: Annotated[bool, typer.Option("--orphans-only", help="Import only chats the editor no longer shows (folder missing or renamed, not in its index or catalog, unreadable to the editor).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read and convert everything, write nothing; say what would be created or appended.")] = False,
    no_raw: Annotated[bool, typer.Option("--no-raw", help="Leave out each record's original source JSON (\"raw\").")] = False,
    include_trashed: Annotated[bool, typer.Option("--include-trashed", help="Also import sessions trashed from the store (`levelsess trash`; `levelsess trash --list` lists them), and forget that they were trashed.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", help="Worker processes importing sessions, for claude, codex, gemini and cursor (the chats of its global database) (0 = automatic: one per core for 32 MiB or more to read, where a transcript that only grew counts the bytes it added; 1 = none); also for the store's journals an index must read again, those the import's memo lost with a cleaned cache folder. The journals, the indexes and the report are the same whatever N. Example: levelsess import --from claude --jobs 2", min=0)] = 0,
    reread: Annotated[bool, typer.Option("--reread", help="Read every source file again and list every folder again, even those unchanged since the last import into this store (which an import otherwise skips: it kept what that import saw and the listing that found it, in the user's cache folder), and read every journal a source read again is compared with (a Cursor or VS Code chat the last import found whole in its journal is otherwise not compared again while it and its journal are the same). Example: levelsess import --from claude --reread")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Recover chats from an editor's storage into the store as v2 journals, never writing to the source.

    Databases are opened read-only (a snapshot copy when the editor has rows in its write-ahead log) and transcripts are only read, so the sources stay byte-identical. Each session becomes <store>/<project-slug>/cursor-<id>.jsonl, vscode-<id>.jsonl, claude-<sessionId>.jsonl, codex-<id>.jsonl, opencode-<id>.jsonl or cline-<id>.jsonl / roo-<id>.jsonl / kilo-<id>.jsonl (or _unassigned/ when its project is unknown), with the original JSON of every source row or line under "raw". Re-importing appends only new messages and never rewrites a journal; a session deleted at the source stays in the store, so a nightly `levelsess import --from claude` keeps what Claude Code's 30-day cleanup deletes (`levelsess schedule install` puts that job in this machine's scheduler). Exit 0 when done, 4 when some source rows could not be read or a journal was refused (see the findings), 8 when a source cannot be opened.

    [bold]Examples[/bold]:
      levelsess import --from cursor                           # every Cursor install on this machine
      levelsess import --from cursor --source ~/.config/Cursor/User --dry-run
      levelsess import --from cursor --orphans-only --map /home/ada/old=/home/ada/new
      levelsess import --from cursor --source ./state.vscdb --json
      levelsess import --from vscode --orphans-only --map /home/ada/old-name=/home/ada/new-name
      levelsess import --from vscode --project ~/code/app --no-raw -v   # file everything under one project
      levelsess import --from cursor --store ~/other-store -q
      levelsess import --from copilot --source ~/.copilot/session-state/<id>/events.jsonl
      levelsess import --from opencode --source ~/.local/share/opencode   # every channel's DB and the JSON tree
      levelsess import --from cline                            # Cline, Roo Code and Kilo Code, every editor
      levelsess import --from cline --source ~/.config/Code/User/globalStorage/saoudrizwan.claude-dev --dry-run
      levelsess import --from gemini                           # before Gemini CLI's start-up sweep deletes them
      levelsess import --from claude                           # every Claude Code install: ~/.claude, $CLAUDE_CONFIG_DIR
      levelsess import --from claude --source ~/.claude/projects/-home-ada-app --json
      levelsess import --from codex --source ~/.codex --dry-run
      levelsess import --from claude --jobs 2                  # two worker processes (default: one per core)
      levelsess import --from claude --include-trashed         # also the sessions `levelsess trash` took out
      levelsess import --from claude --reread                  # read even the transcripts unchanged since the last import
    """
    from ..importers import load, run_import, source_bytes

    out = _output(ctx, json_, quiet, verbose)
    importer = load(from_)
    mapping = []
    for item in map_ or []:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"--map {item}: expected OLD=NEW")
        mapping.append((old, new))
    sources = [Path(os.path.abspath(s)) for s in source] if source else importer.detect()  # kept sources name where they were
    _check_sources(from_, sources, given=bool(source))
    target = default_store(_store(ctx, store))
    with _progress(out, f"importing from {from_}", lambda: source_bytes(from_, sources), unit="bytes") as advance:
        report = run_import(from_, sources, target, importer.Options(mapping=mapping, project=project, orphans_only=orphans_only),
                            dry_run=dry_run, no_raw=no_raw, include_trashed=include_trashed, read=advance, reread=reread, jobs=jobs)
    code = report.exit_code
    if out.json:
        out.emit_json(report.to_json())
        return code
    _render_import(out, report, target, kept_raw=not no_raw)
    return code


#: Where each app keeps its chats, for "no install found" (SOURCES*.md).
INSTALL_PLACES = {
    "claude": ("Claude Code", "a Claude Code root (~/.claude, or $CLAUDE_CONFIG_DIR) with a projects/ folder"),
    "codex": ("Codex CLI", "a Codex home (~/.codex, or $CODEX_HOME) with sessions/ or archived_sessions/"),
    "cursor": ("Cursor", "Cursor's User folder (~/.config/Cursor/User, ~/Library/Application Support/Cursor/User, "
               "%APPDATA%\\Cursor\\User) or ~/.cursor/projects"),
    "vscode": ("VS Code", "VS Code's User folder (~/.config/Code/User, ~/Library/Application Support/Code/User, "
               "%APPDATA%\\Code\\User; also Insiders, Code - OSS, VSCodium)"),
    "copilot": ("Copilot CLI", "a Copilot CLI home (~/.copilot, or $COPILOT_HOME) with session-state/"),
    "gemini": ("Gemini CLI", "a Gemini CLI folder (~/.gemini) with tmp/"),
    "opencode": ("OpenCode or Kilo", "an OpenCode or Kilo data folder (~/.local/share/opencode, ~/.local/share/kilo)"),
}


def _check_sources(from_: str, sources: list[Path], given: bool) -> None:
    """Refuse, before any work, a --source that is not there or is another tool's folder (saying
    which, and the import that reads it), and say where an install would be when none is found."""
    from ..errors import NotASourceError, SourceMissingError
    from ..importers.whatis import identify

    app, place = INSTALL_PLACES.get(from_, (from_, "its data folder"))
    if not sources:  # what to pass is the fix: a usage error, as before
        raise UsageError(f"no {app} install found on this machine (looked for {place})", hint=(
            f"point --source at {place.split(' (')[0]} if it is elsewhere (a copied home, another user's)"))
    for path in sources if given else []:
        if not os.path.lexists(path):
            raise SourceMissingError(f"--source {path}: there is nothing at that path", hint=(
                f"check the path; {app} keeps its chats in {place}, and `levelsess doctor` lists every install it finds"))
        kind = identify(path)
        if kind is not None and from_ not in kind.apps:
            from .. import shellwords

            other = kind.apps[0] if kind.apps else None
            raise NotASourceError(f"{path} is {kind.what}, not {place.split(' (')[0]}", hint=(
                f"to import it: `levelsess import --from {other} --source {shellwords.quote(str(path))}`" if other else
                f"{app} keeps its chats in {place}"))


#: Past this many warnings of one code, each in its own words, an import's summary shows the first and a count.
MANY_ALIKE = 10


def _skip_summary(findings: list, verbose: bool, kept_raw: bool = False) -> tuple[list, str | None]:
    """Each session's warning of its source lines that became no record (a Codex rollout's mirrors,
    injected context and UI bookkeeping: every rollout has some), added up into one line when three
    or more sessions have one, with the other findings as they are.  An import of 800 rollouts
    printed 2,400 lines of them, and again on each import that found nothing new (0.2 s of a 0.3 s
    run).  ``-v`` lists each, as ``--json`` always does; the nightly job's ``-q`` shows errors only.
    ``kept_raw``: the journals keep each such line as a ``source-line`` event (an import without
    ``--no-raw``, not a dry run), which the line says: nothing of the rollout is lost."""
    from ..importers.base import skipped_tallies

    if verbose:
        return findings, None
    rest, sessions, totals = [], 0, {}
    for finding in findings:
        tallies = skipped_tallies(finding.message) if finding.code == "source-skipped" and finding.severity == "warning" else None
        if tallies is None:
            rest.append(finding)
            continue
        sessions += 1
        for reason, (count, why) in tallies.items():
            totals[reason] = (totals.get(reason, (0, why))[0] + count, why)
    if sessions < 3:
        return findings, None
    lines = sum(count for count, _why in totals.values())
    parts = "; ".join(f"{reason} {count:,} ({why})" for reason, (count, why) in
                      sorted(totals.items(), key=lambda item: (-item[1][0], item[0])))
    kept = "; each is in its journal as a source line, for restore" if kept_raw else ""
    return rest, (f"source-skipped  x{sessions}: {lines:,} source lines of {sessions:,} sessions became no record: {parts}"
                  f"{kept} (-v lists each session's)")


def _many_alike(findings: list, verbose: bool) -> tuple[list, list[tuple[str, list]]]:
    """The findings to list one by one, and the warnings of each code that has more than
    :data:`MANY_ALIKE` of them (each in its own words: a count in each), as (code, them): one line each."""
    from ..report import grouped_warnings

    if verbose:
        return findings, []
    return grouped_warnings(findings, lambda f: f.code, MANY_ALIKE + 1)


def _render_import(out: Output, report, target: Path, kept_raw: bool) -> None:
    from ..importers.uris import NOT_HERE
    from ..report import alike_groups

    shown = [s for s in report.sessions if out.verbose or s.status != "unchanged"]
    if shown and not out.quiet:
        from rich.table import Table  # (here: the nightly `-q` import that finds nothing new draws no table, nor loads one)

        table = Table(title=f"import from {report.app}" + (" (dry run)" if report.dry_run else ""), title_justify="left")
        for column in ("title", "session", "project", "records", "new", "status", "editor"):
            add_column(table, column)
        for outcome in shown[: None if out.verbose else 30]:
            editor = "orphaned" if outcome.orphaned else "not on this machine" if NOT_HERE in outcome.orphan else ""
            table.add_row(printable(outcome.title or "(untitled)"), outcome.id, outcome.project or "-", str(outcome.records),
                          str(outcome.new_records), ("would be " if report.dry_run else "") + outcome.status, editor)
        if len(shown) > 30 and not out.verbose:
            table.caption = f"… and {len(shown) - 30} more; -v lists every session"
        print_table(out.out, table)
    shown_findings = [f for f in report.findings if f.severity == "error" or not out.quiet]  # -q: errors only
    written = kept_raw and not report.dry_run and all(s.status in ("created", "updated", "unchanged") for s in report.sessions)
    shown_findings, skips = _skip_summary(shown_findings, out.verbose, kept_raw=written)
    single, groups = alike_groups(shown_findings, verbose=out.verbose)
    single, many = _many_alike(single, out.verbose)
    if single:
        print_table(out.out, findings_table(single, verbose=out.verbose))
    for group in groups:  # N alike warnings (empty transcripts, ...): one line, -v lists each
        out.line([(group.severity, "yellow"), (f"  {group.code}  x{len(group.paths)}: {group.message} ({group.where}; "
                                                  "-v lists each)", None)])
    for code, members in many:  # N warnings of one code, each its own words: the first, and how many more
        out.line([("warning", "yellow"), (f"  {code}  x{len(members)}: {members[0].message} ({members[0].path}; and "
                                          f"{len(members) - 1:,} more like it; -v lists each)", None)])
    if skips:
        out.line([("warning", "yellow"), (f"  {skips}", None)])
    counts = {status: sum(s.status == status for s in report.sessions)
              for status in ("created", "updated", "unchanged", "skipped", "trashed")}
    orphaned = sum(s.orphaned for s in report.sessions)
    elsewhere = sum(NOT_HERE in s.orphan for s in report.sessions)
    trashed = f", {counts['trashed']} trashed (left out; --include-trashed)" if counts["trashed"] else ""
    where = [f"{orphaned} orphaned in the editor"] if orphaned else []
    where += [f"{report.from_cache} not read (unchanged since the last import)"] if report.from_cache else []
    where += [f"{report.resumed} read from where the last import stopped"] if report.resumed else []
    where += [f"{elsewhere} whose project folder is not on this machine"] if elsewhere else []
    out.say(f"{len(report.sessions)} session(s): {counts['created']} created, {counts['updated']} updated, "
            f"{counts['unchanged']} unchanged, {counts['skipped']} skipped{trashed}; " + "; ".join(where + [""])
            + f"store {target}{' (dry run: nothing written)' if report.dry_run else ''}  [exit {report.exit_code}]")


@app.command()
def doctor(
    ctx: typer.Context,
    paths: Annotated[Optional[list[Path]], typer.Argument(metavar="FOLDER", help="Folders to search for Logician workspaces (.logician/), a few levels deep (default: the current folder).", show_default=False)] = None,
    bundle: Annotated[Optional[Path], typer.Option("--bundle", metavar="FILE.zip", help="Also write a support bundle (zip) of four JSON files: about.json (levelsess, Python and OS versions), doctor.json (this report), findings.json (every finding without its excerpt; for each damaged region its length and first and last 32 bytes with letters and digits masked) and files.json (each journal's size, mtime, sha256 and lock owner). No message content, and no user, host or project name: the home folder is ~, every other folder or file name that is not one levelsess or the tools it reads use becomes <p1>, <p2>... (the same name, the same placeholder), the user and host names <user> and <host>, wherever they appear.", show_default=False)] = None,
    include_content: Annotated[bool, typer.Option("--include-content", help="Put the raw bytes of damaged regions and finding excerpts in the bundle (they may hold message text).")] = False,
    include_paths: Annotated[bool, typer.Option("--include-paths", help="Keep paths, user, host and project names in the bundle as they are.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Find every store, Logician workspace and chat tool install on this machine; show their health and the next commands to run.

    Looks at the LevelCode store ($LEVELSESS_HOME, ~/.levelcode/sessions or --store), Logician workspaces under PATH, every Claude Code root ($CLAUDE_CONFIG_DIR, ~/.claude, a Windows home seen from WSL: its transcripts' health, how many its next start-up's cleanup will delete, per cleanupPeriodDays in settings.json, and how many of those the store already keeps), every Codex CLI home ($CODEX_HOME, ~/.codex), Gemini CLI ($GEMINI_CLI_HOME/.gemini, ~/.gemini), Copilot CLI (~/.copilot), OpenCode and Kilo CLI data folders, and Cline, Roo Code and Kilo Code storage in every editor, with for each how many sessions an import would write (the same count `import --dry-run` gives), how many the store already keeps, the import for the rest, the restore for kept sessions the tool no longer has, and the one `levelsess schedule install` command that keeps them all every night; and every Cursor and VS Code (Insiders, OSS, VSCodium) install found per OS. For VS Code it lists the workspaces holding chats VS Code no longer shows (folder renamed or moved, missing from the index). Every command it prints names the store it looked at. On a terminal a progress line (stderr) names each check and count as it begins, out of their total. Read-only: it writes nothing.

    [bold]Examples[/bold]:
      levelsess doctor
      levelsess doctor ~/code --json
      levelsess doctor --bundle support.zip      # to send to support: no message content, no names
      levelsess doctor --bundle support.zip --include-content -v   # with the damaged bytes
      levelsess doctor --bundle support.zip --include-paths        # with paths and names as they are
      levelsess doctor --store ~/other-store -q
    """
    from ..doctor import diagnose
    from ..render_cli.doctor import render_doctor

    out = _output(ctx, json_, quiet, verbose)
    for path in paths or []:  # a folder named on the command line must exist, as for every other command
        if not Path(path).exists():
            raise PathNotFoundError(str(path))
    with _steps(out, "doctor") as step:
        result = diagnose(_store(ctx, store), [Path(p) for p in paths] if paths else None, progress=step)
    if (include_content or include_paths) and bundle is None:
        raise UsageError(f"{'--include-content' if include_content else '--include-paths'} only applies to --bundle FILE.zip")
    if bundle is not None:
        from ..bundle import write as write_bundle

        size = write_bundle(bundle, result, include_content, include_paths)
        out.say(f"support bundle: {bundle} ({size:,} bytes{', with message content' if include_content else ', no message content'}"
                f"{', with paths and names' if include_paths else ', paths anonymised'})")
    if out.json:
        out.emit_json({**result.to_json(), **({"bundle": str(bundle)} if bundle else {})})
        return 0
    render_doctor(out, result)
    return 0


@app.command()
def schedule(
    ctx: typer.Context,
    action: Annotated[str, typer.Argument(metavar="install|remove|status", help="install (or bring up to date) the nightly keep, remove it, or read back what is installed.", show_default=False)],
    apps: Annotated[Optional[list[str]], typer.Option("--app", metavar="claude|codex|cursor|vscode|copilot|gemini|opencode|cline", help="Keep this app's chats (repeatable; cline also keeps Roo Code and Kilo Code; default: every app with an install on this machine, or what is installed).", show_default=False)] = None,
    at: Annotated[Optional[str], typer.Option("--at", metavar="HH:MM", help="Time of day it runs, local time (default 03:17, or what is installed).", show_default=False)] = None,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", metavar="cron|systemd|launchd|schtasks", help="Which scheduler (default: Task Scheduler on Windows, launchd on macOS, the crontab where `crontab` exists, else a systemd user timer).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be written and run; change nothing.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Run the imports that keep every chat (past Claude Code's 30-day cleanup, a lost editor database) every night.

    install writes one job that runs `levelsess import --from APP --source PATH --store STORE -q` for each app, with absolute paths: a block between marker lines in your crontab (the rest of it is kept byte for byte, and saved first), or ~/.config/systemd/user/levelsess-keep.{service,timer} enabled with `systemctl --user`, or ~/Library/LaunchAgents/dev.levelsess.keep.plist loaded with launchctl, or a Task Scheduler task "levelsess keep". Installing the same job again changes nothing; remove takes out exactly that job. status exits 0 when the job is installed and is what install would write now, 4 otherwise.

    [bold]Examples[/bold]:
      levelsess schedule install                        # every app found on this machine, at 03:17
      levelsess schedule install --app claude --app codex --at 02:30 --dry-run
      levelsess schedule install --app cline --app opencode   # Cline, Roo Code, Kilo Code and OpenCode / Kilo CLI
      levelsess schedule install --scheduler systemd --store ~/other-store -v
      levelsess schedule status --json
      levelsess schedule remove -q
    """
    from .. import schedule as nightly
    from ..render_cli.schedule import render_schedule, render_schedule_status

    out = _output(ctx, json_, quiet, verbose)
    if action not in ("install", "remove", "status"):
        raise UsageError(f"schedule {action}: expected install, remove or status")
    if dry_run and action == "status":
        raise UsageError("--dry-run applies to install and remove; status writes nothing")
    if action == "remove" and (apps or at):
        raise UsageError(f"schedule remove takes out the one nightly job; {'--app' if apps else '--at'} does not apply to it")
    backend, given = nightly.scheduler(scheduler), Path(_store(ctx, store)) if _store(ctx, store) else None
    if action == "status":
        found = nightly.status(backend, apps, at, given, default_store(None))
        return render_schedule_status(out, found)
    run = nightly.install if action == "install" else lambda b, *_a, dry_run: nightly.remove(b, dry_run)
    outcome = run(backend, apps, at, given, default_store(None), dry_run=dry_run)
    if out.json:
        out.emit_json(outcome.to_json())
        return 0
    render_schedule(out, outcome)
    return 0
