"""The ``levelsess`` command line: a thin typer shell over the library.

Each command parses its arguments, makes one library call, renders the result and exits
with its code (DESIGN.md §3).  Known errors print one line with a next step; anything else
is a bug and shows its traceback (without locals: journals hold user content).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import __version__, _help
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, Interrupted, LevelsessError, PathNotFoundError, UsageError


def _lazy(module: str, name: str):
    """``from module import name``, done at the first call: ``--version`` and ``--help`` load no
    library module, and each command loads only what it uses (start-up, DESIGN.md §8)."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(module, __package__), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


check_folders, plan_repair = _lazy(".fsck.check", "check_folders"), _lazy(".fsck.repair", "plan_repair")
Output, add_column, common_base, findings_table, print_table, printable, write_json = (_lazy(".report", name) for name in (
    "Output", "add_column", "common_base", "findings_table", "print_table", "printable", "write_json"))
from .streams import tolerant_streams  # noqa: E402 (light: called before every command)
default_store, discover_all = _lazy(".stores", "default_store"), _lazy(".stores", "discover_all")


import click  # noqa: E402 (typer's own dependency: its public exceptions)

_USAGE_ERRORS = (click.UsageError,)
_CLICK_ERRORS = (click.ClickException,)
_ABORTS = (typer.Abort, click.Abort, KeyboardInterrupt)
HelpCommand, HelpGroup = _help.command_classes()  # --help drawn without rich


class App(typer.Typer):
    """Every command's --help drawn by ``_help`` (a command may still name its own ``cls``)."""

    def command(self, *args, cls=None, **kwargs):
        return super().command(*args, cls=cls or HelpCommand, **kwargs)


class LevelsessGroup(HelpGroup):
    """Map usage errors to exit 16, Ctrl-C to 32 and typed errors to one line plus a hint."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # typer would make it exit 130; DESIGN §3 says 32
            raise Interrupted(stopped_by()) from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # noqa: D401
        tolerant_streams()  # an encoding that cannot hold a title or path degrades to escapes, never a traceback
        try:
            with _ctrl_c_in_this_process_only():
                code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _USAGE_ERRORS as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `levelsess` alone: its help, on stdout as --help prints it
                typer.echo(exc.format_message())
            else:
                exc.show()
            sys.exit(EXIT_USAGE)
        except _CLICK_ERRORS as exc:
            exc.show()
            sys.exit(EXIT_USAGE)
        except _ABORTS:
            Output().fail(f"interrupted: {stopped_by()}", "rerun the command to continue")
            sys.exit(EXIT_INTERRUPTED)
        except LevelsessError as exc:
            argv = list(sys.argv[1:] if args is None else args)
            hint = exc.hint.replace("COMMAND", _command_words(self, argv)) if exc.hint else exc.hint
            hint = _aimed(hint, exc)
            Output().fail(str(exc), hint)
            if "--json" in argv:  # scripts still get one document
                Output().emit_json({"version": 1, "error": {"type": type(exc).__name__, "message": str(exc),
                                                           "hint": hint}, "exit": exc.exit_code})
            sys.exit(exc.exit_code)
        if code == 130:  # typer's own exit for a Ctrl-C (or SIGTERM) that came while it parsed the arguments
            Output().fail(f"interrupted: {stopped_by()}", "rerun the command to continue")
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)


#: The signals that stopped this run, in order (a handler notes each before it acts on it).
_SIGNALS: list[int] = []


def stopped_by() -> str:
    """What stopped the run, for "interrupted: ...": ``Ctrl-C`` for SIGINT (a terminal), the
    signal's name for anything else (``SIGTERM``: `kill PID`, a service manager, a timeout)."""
    if not _SIGNALS or _SIGNALS[-1] == signal.SIGINT:
        return "Ctrl-C"
    return signal.Signals(_SIGNALS[-1]).name


@contextlib.contextmanager
def _ctrl_c_in_this_process_only():
    """Let Ctrl-C interrupt levelsess, but not the worker processes it forks.

    A terminal sends SIGINT to the whole process group; forked workers inherit this handler
    and ignore it, so the parent stops them cleanly instead of each printing a traceback.
    An ignored SIGINT (``nohup``, a background job) stays ignored."""
    parent = os.getpid()
    term = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):  # `kill PID`, a service manager stopping it: as Ctrl-C (exit 32)
        if os.getpid() == parent:
            _SIGNALS.append(signum)
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker dies of it, as before
        os.kill(os.getpid(), signal.SIGTERM)

    if term is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_sigterm)
    previous = signal.getsignal(signal.SIGINT)
    try:
        if previous is not signal.default_int_handler:
            yield
            return

        def on_sigint(signum, frame):
            if os.getpid() == parent:
                _SIGNALS.append(signum)
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        if term is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, term)


def _aimed(hint: str | None, exc: LevelsessError) -> str | None:
    """A damaged journal's hint with the journal's path in the fsck command it names, so the
    command runs on that file (not on the default store)."""
    path = getattr(exc, "path", None)
    if not hint or not isinstance(path, str) or path in ("", "?") or not os.path.isfile(path):
        return hint
    import re
    import shlex

    return re.sub(r"`(levelsess fsck [^`]*)`", lambda m: f"`{m.group(1)} {shlex.quote(path)}`", hint)


def _command_words(group, argv: list[str]) -> str:
    """The (sub)command named on the command line, for a hint: ``chaos run``, ``ls``."""
    words, command = [], group
    for arg in argv:
        commands = getattr(command, "commands", None)
        if not commands or arg not in commands:
            break
        words.append(arg)
        command = commands[arg]
    return " ".join(words) or "COMMAND"


app = App(
    cls=LevelsessGroup,
    name="levelsess",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else there.")]
QuietOpt = Annotated[bool, typer.Option("-q", "--quiet", help="Print only errors.")]
VerboseOpt = Annotated[bool, typer.Option("-v", "--verbose", help="Show excerpts and every step.")]
StoreOpt = Annotated[Optional[str], typer.Option("--store", metavar="PATH", help="Store root (default: $LEVELSESS_HOME or ~/.levelcode/sessions).")]
PathsArg = Annotated[Optional[list[Path]], typer.Argument(
    metavar="PATH", help="Store roots, project folders, Logician workspaces or single journals (default: the store).",
    show_default=False, readable=False)]  # a PATH that cannot be read is the library's operational error (exit 8), not a usage error


def _output(ctx: typer.Context, json_: bool, quiet: bool, verbose: bool) -> Output:
    parent = ctx.obj or {}
    return Output(json=json_ or parent.get("json", False), quiet=quiet or parent.get("quiet", False),
                  verbose=verbose or parent.get("verbose", False))


def _store(ctx: typer.Context, store: str | None) -> str | None:
    return store or (ctx.obj or {}).get("store")


def _targets(ctx: typer.Context, paths: list[Path] | None, store: str | None) -> list[Path]:
    return list(paths) if paths else [default_store(_store(ctx, store))]


@contextlib.contextmanager
def _progress(out: Output, label: str, total, *, unit: str = "items"):
    """Yield an advance(n) callback; draws a bar on stderr only when it is a terminal.

    ``total=None`` counts without a known end (a pulsing bar); a callable total is asked only
    when the bar is drawn (a count that costs a walk of the sources).  ``unit="bytes"`` shows
    sizes (``1.2/3.4 MB``) instead of counts."""
    if out.json or out.quiet or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    if callable(total):
        total = total()
    if total is not None and total < 2:
        yield lambda n=1: None
        return
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # styles as styles, never as markup: the console reads none (a label or path could hold brackets)
    with Progress(TextColumn("{task.description}", style="progress.description", markup=False), BarColumn(),
                  DownloadColumn() if unit == "bytes" else MofNCompleteColumn(), TimeElapsedColumn(),
                  console=out.err, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextlib.contextmanager
def _ctrl_c_deferred():
    """Turn Ctrl-C into a flag so the current atomic step finishes first."""
    hit = []

    def note(signum, _frame):
        hit.append(signum)
        _SIGNALS.append(signum)  # for the "interrupted" line: Ctrl-C or SIGTERM

    previous = signal.signal(signal.SIGINT, note)
    term = signal.signal(signal.SIGTERM, note)  # SIGTERM too: the same clean stop
    try:
        yield lambda: bool(hit)
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, term)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"levelsess {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> None:
    """Check, repair, migrate and recover AI-editor chat journals (append-only JSONL).

    Exit codes are bit flags, as in e2fsck: 0 clean, 1 problems corrected, 4 problems left uncorrected, 8 operational error, 16 usage error, 32 interrupted.

    [bold]Examples[/bold]:
      levelsess fsck ~/.levelcode/sessions
      levelsess --version
      levelsess --json -q --store ~/other-store fsck   # common options also go before the command
      levelsess -v fsck
    """
    ctx.obj = {"json": json_, "quiet": quiet, "verbose": verbose, "store": store}


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
    from .render_cli.checks import render_fsck, render_fsck_plan, render_fsck_repair

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
    from .reindex import reindex as run_reindex
    from .render_cli.checks import render_reindex

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
    from .migrate import plan_migration
    from .render_cli.checks import render_migrate

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
      levelsess import --from claude --include-trashed         # also the sessions `levelsess trash` took out
    """
    from .importers import load, run_import, source_bytes

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
                            dry_run=dry_run, no_raw=no_raw, include_trashed=include_trashed, read=advance)
    code = report.exit_code
    if out.json:
        out.emit_json(report.to_json())
        return code
    _render_import(out, report, target)
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
    from .errors import NotASourceError, SourceMissingError
    from .importers.whatis import identify

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
            other = kind.apps[0] if kind.apps else None
            raise NotASourceError(f"{path} is {kind.what}, not {place.split(' (')[0]}", hint=(
                f"to import it: `levelsess import --from {other} --source {shlex.quote(str(path))}`" if other else
                f"{app} keeps its chats in {place}"))


def _render_import(out: Output, report, target: Path) -> None:
    from rich.table import Table

    from .importers.uris import NOT_HERE
    from .report import alike_groups

    shown = [s for s in report.sessions if out.verbose or s.status != "unchanged"]
    if shown and not out.quiet:
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
    single, groups = alike_groups(shown_findings, verbose=out.verbose)
    if single:
        print_table(out.out, findings_table(single, verbose=out.verbose))
    for group in groups:  # N alike warnings (empty transcripts, ...): one line, -v lists each
        out.line([(group.severity, "yellow"), (f"  {group.code}  x{len(group.paths)}: {group.message} ({group.where}; "
                                                  "-v lists each)", None)])
    counts = {status: sum(s.status == status for s in report.sessions)
              for status in ("created", "updated", "unchanged", "skipped", "trashed")}
    orphaned = sum(s.orphaned for s in report.sessions)
    elsewhere = sum(NOT_HERE in s.orphan for s in report.sessions)
    trashed = f", {counts['trashed']} trashed (left out; --include-trashed)" if counts["trashed"] else ""
    where = [f"{orphaned} orphaned in the editor"] if orphaned else []
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

    Looks at the LevelCode store ($LEVELSESS_HOME, ~/.levelcode/sessions or --store), Logician workspaces under PATH, every Claude Code root ($CLAUDE_CONFIG_DIR, ~/.claude, a Windows home seen from WSL: its transcripts' health, how many its next start-up's cleanup will delete, per cleanupPeriodDays in settings.json, and how many of those the store already keeps), every Codex CLI home ($CODEX_HOME, ~/.codex), Gemini CLI ($GEMINI_CLI_HOME/.gemini, ~/.gemini), Copilot CLI (~/.copilot), OpenCode and Kilo CLI data folders, and Cline, Roo Code and Kilo Code storage in every editor, with for each how many sessions an import would write (the same count `import --dry-run` gives), how many the store already keeps, the import for the rest, the restore for kept sessions the tool no longer has, and the one `levelsess schedule install` command that keeps them all every night; and every Cursor and VS Code (Insiders, OSS, VSCodium) install found per OS. For VS Code it lists the workspaces holding chats VS Code no longer shows (folder renamed or moved, missing from the index). Every command it prints names the store it looked at. Read-only: it writes nothing.

    [bold]Examples[/bold]:
      levelsess doctor
      levelsess doctor ~/code --json
      levelsess doctor --bundle support.zip      # to send to support: no message content, no names
      levelsess doctor --bundle support.zip --include-content -v   # with the damaged bytes
      levelsess doctor --bundle support.zip --include-paths        # with paths and names as they are
      levelsess doctor --store ~/other-store -q
    """
    from .doctor import diagnose
    from .render_cli.doctor import render_doctor

    out = _output(ctx, json_, quiet, verbose)
    for path in paths or []:  # a folder named on the command line must exist, as for every other command
        if not Path(path).exists():
            raise PathNotFoundError(str(path))
    result = diagnose(_store(ctx, store), [Path(p) for p in paths] if paths else None)
    if (include_content or include_paths) and bundle is None:
        raise UsageError(f"{'--include-content' if include_content else '--include-paths'} only applies to --bundle FILE.zip")
    if bundle is not None:
        from .bundle import write as write_bundle

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
    from . import schedule as nightly
    from .render_cli.schedule import render_schedule, render_schedule_status

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


@app.command("ls")
def ls_(
    ctx: typer.Context,
    paths: PathsArg = None,
    project: Annotated[Optional[str], typer.Option("--project", metavar="TEXT", help="Only sessions whose project path or folder name contains this text.", show_default=False)] = None,
    since: Annotated[Optional[str], typer.Option("--since", metavar="WHEN", help="Only sessions updated since: an ISO date (2026-11-01) or an age (7d, 12h, 30m).", show_default=False)] = None,
    grep_: Annotated[Optional[str], typer.Option("--grep", metavar="TEXT", help="Only sessions whose message text contains TEXT (case-insensitive; streams every journal).", show_default=False)] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Read every journal in full (finds corrupt ones even when the index is fresh).")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="Show at most N sessions (0 = all).", min=0)] = 50,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """List sessions, newest first: title, project, last activity, turns, model, size and state (clean, torn, corrupt, locked).

    The journals are the truth: a folder whose index.json is fresh is listed from it (plus a lock and last-byte check per journal); any other folder is read in full. Read-only.

    [bold]Examples[/bold]:
      levelsess ls
      levelsess ls --since 7d --project thin.ly
      levelsess ls --grep "refund" --json
      levelsess ls --verify --limit 0 -v
      levelsess ls --store ~/other-store -q
    """
    from .render_cli.sessions import render_ls
    from .sessions import select_sessions

    out = _output(ctx, json_, quiet, verbose)
    targets = _targets(ctx, paths, store)
    with _progress(out, "searching", None) if grep_ else contextlib.nullcontext() as advance:
        listing = select_sessions(targets, default=not paths, verify=verify, project=project, since=since, needle=grep_,
                                  limit=limit, progress=advance)
    if out.json:
        out.emit_json(listing.to_json())
    else:
        render_ls(out, listing)
    return listing.exit_code


def _session_row(ctx: typer.Context, key: str, paths, store, *, known: bool = True, note=None):
    from .sessions import find_session

    return find_session(_targets(ctx, paths, store), key, known=known, note=note)


@app.command()
def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id (or a unique prefix, or a journal path).", show_default=False)],
    paths: Annotated[Optional[list[Path]], typer.Option("--in", metavar="PATH", help="Look in these stores or workspaces (default: the store).", show_default=False)] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Print a session's transcript: rich on a terminal, plain Markdown text when piped.

    [bold]Examples[/bold]:
      levelsess show 2026-11-30T09-00-00-a1b2
      levelsess show cursor-59f6 | less
      levelsess show s1 --in ./.logician -q
      levelsess show 2026-11 --store ~/other-store --json -v   # the records as one JSON document
    """
    from rich.markdown import Markdown

    from .layouts import get as get_layout
    from .render import as_json, markdown

    out = _output(ctx, json_, quiet, verbose)
    row = _session_row(ctx, session, paths, store, note=lambda text: out.say(f"note: {text}", style="yellow"))
    layout = get_layout(row.layout)
    if out.json:
        for chunk in as_json(row.path, layout):
            write_json(chunk)
        return 0
    if sys.stdout.isatty():
        out.out.print(Markdown(printable("".join(markdown(row.path, layout, row.title)))))
    else:
        for chunk in markdown(row.path, layout, row.title):
            sys.stdout.buffer.write(chunk.encode("utf-8", "backslashreplace"))
        sys.stdout.flush()
    if row.state != "clean":
        out.say(f"note: this session is {row.state}{': ' + row.reason if row.reason else ''}", style="yellow")
    return 0


@app.command()
def export(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id (or a unique prefix, or a journal path).", show_default=False)],
    format_: Annotated[Optional[str], typer.Option("--format", "-f", metavar="md|jsonl|json", help="md (Copy as Markdown; the default), jsonl (the journal's bytes, exactly) or json (one document: the session as it stands, a superseded record given way to its replacement, each record as the journal spells it).", show_default=False)] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="Write to this file instead of stdout: a regular file is replaced atomically, a pipe or device is written into; a session journal, lock or cache is refused.", show_default=False)] = None,
    paths: Annotated[Optional[list[Path]], typer.Option("--in", metavar="PATH", help="Look in these stores or workspaces (default: the store).", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="With -o: print one JSON document saying what was written (session, format, output, bytes). Without -o: the export itself is that document, so --format json is implied and md or jsonl is refused.")] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Export a session as Markdown (headings per turn, code blocks kept, tool calls summarised, briefings marked), its exact JSONL, or JSON.

    Markdown and JSON are UTF-8 whatever the terminal's encoding: they are files, not messages.

    [bold]Examples[/bold]:
      levelsess export 2026-11-30T09-00-00-a1b2 > refunds.md
      levelsess export cursor-59f6 --format json -o chat.json
      levelsess export cursor-59f6 -f jsonl -o backup.jsonl --json     # a script learns what was written
      levelsess export s1 --in ./.logician --json > s1.json            # the session as one JSON document
      levelsess export 2026-11 --store ~/other-store -q -v   # -q: no 'wrote' line; -v: every step
    """
    from .render import export_chunks

    out = _output(ctx, json_, quiet, verbose)
    if out.json and output is None and format_ not in (None, "json"):
        raise UsageError(f"--json --format {format_} without -o: stdout holds one JSON document; add -o FILE for the {format_}, or drop --format")
    format_ = format_ or ("json" if out.json and output is None else "md")
    if format_ not in ("md", "jsonl", "json"):
        raise UsageError(f"--format {format_}: choose md, jsonl or json")
    row = _session_row(ctx, session, paths, store, note=lambda text: out.say(f"note: {text}", style="yellow"))
    return _write_export(out, row, export_chunks(row, format_), output, format_)


def _write_export(out: Output, row, chunks, output: Path | None, format_: str) -> int:
    """The export's bytes to ``output`` (through durable: whole or not at all) or to stdout."""
    from . import durable

    if output is None:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return 0
    written = 0
    with durable.output_writer(output) as handle:
        for chunk in chunks:
            handle.write(chunk)
            written += len(chunk)
    if out.json:
        out.emit_json({"version": 1, "session": row.id, "path": str(row.path), "format": format_, "output": str(output),
                       "bytes": written, "exit": 0})
    out.say(f"wrote {output}")
    return 0


@app.command()
def locks(
    ctx: typer.Context,
    paths: PathsArg = None,
    break_stale: Annotated[bool, typer.Option("--break-stale", help="Remove the stale ones (owner dead, pid recycled, or silent and uncheckable for 30 s).")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """List session locks: owner pid, host, age, live or stale, and why.

    [bold]Examples[/bold]:
      levelsess locks
      levelsess locks ./.logician --break-stale
      levelsess locks --json
      levelsess locks --store ~/other-store -q -v
    """
    from .locks import survey_locks
    from .render_cli.sessions import render_locks

    out = _output(ctx, json_, quiet, verbose)
    report = survey_locks(discover_all(_targets(ctx, paths, store)), remove_stale=break_stale)
    if out.json:
        out.emit_json(report.to_json())
    else:
        render_locks(out, report)
    return report.exit_code


@app.command()
def trash(
    ctx: typer.Context,
    sessions: Annotated[Optional[list[str]], typer.Argument(metavar="ID", help="Session ids (or unique prefixes, or journal paths).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go to the trash; move nothing.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the sessions trashed from the store that an import leaves out (until they are restored from the OS trash or imported with `import --include-trashed`).")] = False,
    paths: Annotated[Optional[list[Path]], typer.Option("--in", metavar="PATH", help="Look in these stores or workspaces (default: the store).", show_default=False)] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Move sessions to the OS trash (never deleted: restore them from there), then reindex.

    A session held by a live writer is refused. An imported session stays trashed: the store notes it (<store>/.levelsess/trashed.jsonl) and `import` leaves it out, counted, until it is put back from the OS trash or imported with `import --include-trashed`; --list lists them. Exit 0 when done, 4 when one was refused.

    [bold]Examples[/bold]:
      levelsess trash 2026-11-30T09-00-00-a1b2 --dry-run
      levelsess trash 2026-11-30T09-00-00-a1b2 2026-11-29T18-12-44-zz91
      levelsess trash s1 --in ./.logician --json -v
      levelsess trash 2026-11-30T09-00-00-a1b2 --store ~/other-store -q
      levelsess trash --list --json
    """
    from .trash import trash_sessions

    out = _output(ctx, json_, quiet, verbose)
    if list_:
        return _render_trashed(out, ctx, sessions, paths, store)
    if not sessions:
        raise UsageError("name the sessions to trash (ID...), or --list the trashed ones")
    rows = [_session_row(ctx, key, paths, store, known=False) for key in sessions]  # trash refuses a non-journal itself (exit 4)
    results = trash_sessions(rows, dry_run=dry_run)
    code = 4 if any(r.status == "refused" for r in results) else 0
    if out.json:
        out.emit_json({"version": 1, "sessions": [r.to_json() for r in results], "dry_run": dry_run, "exit": code})
        return code
    for result in results:
        verb = {"trashed": "moved to the trash", "would-trash": "would move to the trash", "refused": "refused", "gone": "already gone"}[result.status]
        out.out.print(f"{result.id}: {verb}" + (f" ({result.reason})" if result.reason else ""), markup=False, highlight=False)
    return code


def _render_trashed(out: Output, ctx: typer.Context, sessions, paths, store) -> int:
    from .tombstones import read

    if sessions:
        raise UsageError("--list takes no session ID")
    roots = [Path(p) for p in paths] if paths else [default_store(_store(ctx, store))]
    stones = [(root, stone) for root in roots for stone in read(root).values()]
    if out.json:
        out.emit_json({"version": 1, "trashed": [{"store": str(root), **stone.to_json()} for root, stone in stones], "exit": 0})
        return 0
    if not stones:
        out.say("no session is trashed from " + ", ".join(map(str, roots)) + ": every import brings back all it finds")
        return 0
    for _root, stone in stones:
        out.out.print(f"{stone.id}: trashed {stone.t or ''} ({stone.path})", markup=False, highlight=False)
    out.say(f"{len(stones)} trashed session(s) an import leaves out; to bring them back:")
    from .doctor import store_flag
    from .tombstones import import_name

    for root, app in dict.fromkeys((root, import_name(stone)) for root, stone in stones):
        out.say(f"next: levelsess import --from {app or 'APP'} --include-trashed{store_flag(root)}", style="bold")
    return 0


@app.command()
def restore(
    ctx: typer.Context,
    sessions: Annotated[Optional[list[str]], typer.Argument(metavar="ID", help="Kept sessions to give back (ids as `levelsess ls` shows them, unique prefixes, a Claude Code sessionId, Codex thread id or Gemini CLI sessionId, or journal paths).", show_default=False)] = None,
    to: Annotated[Optional[Path], typer.Option("--to", metavar="DIR", help="Write under this tool root instead (a Claude Code root such as ~/.claude, a Codex home such as ~/.codex, a Gemini CLI folder such as ~/.gemini); default: where the session was, else $CLAUDE_CONFIG_DIR or ~/.claude, $CODEX_HOME or ~/.codex, $GEMINI_CLI_HOME/.gemini or ~/.gemini.", show_default=False)] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Write: without it restore only shows its plan.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan (every file it would create or append to, bytes and lines); write nothing.")] = False,
    undo: Annotated[Optional[str], typer.Option("--undo", metavar="STAMP", help="Take back the restore STAMP: remove the files it created and cut the ones it appended to back, each only while it still holds what restore wrote.", show_default=False)] = None,
    list_: Annotated[bool, typer.Option("--list", help="List past restores with their stamps.")] = False,
    app_: Annotated[Optional[str], typer.Option("--app", metavar="APP", help="Restore an app's own chat list instead of kept sessions: vscode (rebuild every workspace's chat index from its session files, copy orphans with --map, repair logs VS Code cannot open); codex (make rollouts that have no row in Codex's state DB visible in `codex resume` again); cline (make Cline, Roo Code and Kilo Code list every task folder on disk again: Cline's taskHistory.json, Roo's history_item.json).", show_default=False)] = None,
    source: Annotated[Optional[Path], typer.Option("--source", metavar="DIR", help="With --app: the app's folder (VS Code: its User folder, e.g. ~/.config/Code/User; Codex: its home, e.g. ~/.codex; Cline, Roo Code, Kilo Code: the extension's globalStorage folder, e.g. ~/.config/Code/User/globalStorage/saoudrizwan.claude-dev, or ~/.cline/data); default: the one on this machine.", show_default=False)] = None,
    map_: Annotated[Optional[list[str]], typer.Option("--map", metavar="OLD=NEW", help="With --app vscode: the chats of the folder OLD (renamed or moved) go to the workspace VS Code uses for NEW (repeatable).", show_default=False)] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Give kept Claude Code sessions, Codex CLI rollouts and Gemini CLI sessions back where the tool shows them, byte for byte as last imported.

    Plans first: without --yes it lists every file it would create or append to and exits 4 (0 when there is nothing to do). With --yes it refuses any file the tool is running on, copies every file it will change into a backup folder with a manifest before its first write, never overwrites or removes a byte, reads every written file back by the tool's own rules and undoes itself when that fails (exit 8). A second run changes nothing. With --app vscode it rebuilds VS Code's own chat lists instead (each workspace's chat index from its session files; --map OLD=NEW copies a renamed folder's chats to its new workspace); with --app codex it sets Codex's backfill back to pending so its next start writes the rows of rollouts its state DB lacks; with --app cline it adds an entry to Cline's task list (Roo Code, Kilo Code: a history_item.json) for every task folder the extension does not list, keeping every entry there as it is; all under the same contract. Cursor chats are not written back: read them with show or export.

    [bold]Examples[/bold]:
      levelsess restore claude-0f2c1d3e-aaaa-4bbb-8ccc-123456789abc          # the plan
      levelsess restore claude-0f2c1d3e-aaaa-4bbb-8ccc-123456789abc --yes
      levelsess restore codex-019d4719 --to ~/.codex --yes --json
      levelsess restore gemini-1b2c3d4e --to ~/.gemini --yes          # back into tmp/<project>/chats, subagents too
      levelsess restore 0f2c1d3e --dry-run -v --store ~/other-store
      levelsess restore --list
      levelsess restore --undo 20261130T151236.123456Z -q
      levelsess restore --app vscode --source ~/.config/Code/User          # the plan for VS Code's chat lists
      levelsess restore --app vscode --map ~/old-name=~/new-name --yes
      levelsess restore --app codex --source ~/.codex          # rollouts Codex's state DB has no row for
      levelsess restore --app cline --source ~/.config/Code/User/globalStorage/saoudrizwan.claude-dev          # tasks Cline's history does not list
    """
    from .render_cli.restore import render_restore, render_restore_runs, render_undo, restore_app
    from .restore import list_restores, plan_restore, restore as run_restore, undo_restore

    out = _output(ctx, json_, quiet, verbose)
    _check_restore_flags(sessions, to, yes, dry_run, undo, list_, app_, source, map_)
    if app_ is not None:
        return restore_app(out, app_, source, map_ or [], apply=yes and not dry_run)
    if list_:
        return render_restore_runs(out, list_restores())
    if undo is not None:
        return render_undo(out, undo_restore(undo, dry_run=dry_run))
    plan = plan_restore(default_store(_store(ctx, store)), list(sessions), to)
    with _ctrl_c_deferred() as stopped:
        result = run_restore(plan, apply=yes and not dry_run, interrupted=stopped)
    return render_restore(out, result, sessions, to=to, store=_store(ctx, store))


def _check_restore_flags(sessions, to, yes: bool, dry_run: bool, undo, list_: bool, app_=None, source=None, map_=None) -> None:
    if app_ is not None and (sessions or to is not None or undo is not None or list_):
        raise UsageError("--app restores an app's own chat list: it takes no session ID, --to, --undo or --list")
    if app_ is None and (source is not None or map_):
        raise UsageError("--source and --map go with --app (e.g. restore --app vscode --source ~/.config/Code/User)")
    if yes and dry_run:
        raise UsageError("--yes writes and --dry-run writes nothing: give one of them")
    for flag, given in (("--list", list_), ("--undo", undo is not None)):
        if given and (sessions or to is not None):
            raise UsageError(f"{flag} takes no session ID or --to")
    if list_ and (undo is not None or yes or dry_run):
        raise UsageError("--list only lists: it takes no --undo, --yes or --dry-run")
    if not sessions and undo is None and not list_ and app_ is None:
        raise UsageError("name the kept sessions to give back (see `levelsess ls`), or use --undo STAMP or --list")


@app.command()
def demo(
    ctx: typer.Context,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the demo store and print where it is.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    store: StoreOpt = None,
) -> int:
    """Build a damaged demo store in a temporary folder, check it, repair it, check again.

    The store holds a crash-torn journal, a corrupt index.json, a stale lock and a Logician session whose meta.json ran ahead of its journal. Nothing outside the temporary folder is touched.

    [bold]Examples[/bold]:
      levelsess demo --keep
      levelsess demo --json -q
      levelsess demo -v --store ~/any   # common options are accepted; the demo never touches a store
    """
    from .demo import build_demo, run_demo
    from .render_cli.checks import render_demo

    out = _output(ctx, json_, quiet, verbose)
    with build_demo(keep=keep) as paths:
        out.say(f"Demo store in {paths[0].parent}: the editor was killed mid-append (torn journal), its lock\n"
                "was left behind, index.json was cut off, and a Logician meta.json ran ahead of its journal.")
        result = run_demo(paths)
        if out.json:
            out.emit_json(result.to_json())
        else:
            render_demo(out, result)
            if keep:
                out.say(f"demo store kept at {paths[0].parent}")
    return result.exit_code


chaos_app = App(cls=HelpGroup, help="The kill -9 harness: prove that no acknowledged record is lost (DESIGN.md §7).",
                        no_args_is_help=True, rich_markup_mode="rich")
app.add_typer(chaos_app, name="chaos")


@chaos_app.command("run")
def chaos_run(
    ctx: typer.Context,
    cycles: Annotated[Optional[int], typer.Option("--cycles", metavar="N", help="Kill cycles to run (default 20, or unbounded with --duration).", min=1, show_default=False)] = None,
    duration: Annotated[Optional[float], typer.Option("--duration", metavar="SECONDS", help="Stop starting cycles after this many seconds (the nightly run: --duration 3600).", min=0, show_default=False)] = None,
    writers: Annotated[int, typer.Option("--writers", metavar="N", help="Writer processes per cycle, each killed at its own random moment.", min=1)] = 2,
    seed: Annotated[Optional[int], typer.Option("--seed", metavar="N", help="Seed for record sizes and kill moments (default: random, printed in the report).", show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", metavar="kill|power-loss", help="kill: SIGKILL only. power-loss: also cut the power after the kills; on the default --fs disk that is simulated (each file cut back to a random offset at or past its last ACK, maybe zero-filled), which cannot catch a writer that ACKs before fsync: use --fs lazyfs for that.")] = "kill",
    fs: Annotated[str, typer.Option("--fs", metavar="disk|lazyfs", help="lazyfs (with --mode power-loss): run the writers on a LazyFS mount and drop every unsynced byte after the kills, a real power cut that catches a missing fsync. Needs FUSE and LazyFS (--lazyfs).")] = "disk",
    lazyfs: Annotated[Optional[str], typer.Option("--lazyfs", metavar="PATH", help="The LazyFS program for --fs lazyfs (default: $LEVELSESS_LAZYFS, else lazyfs on PATH); build it with shared/tools/build-lazyfs.sh.", show_default=False)] = None,
    layout: Annotated[str, typer.Option("--layout", metavar="levelcode|logician|both", help="Reference writers: levelcode, logician, or both (alternating).")] = "both",
    unsafe: Annotated[Optional[str], typer.Option("--unsafe", metavar="NAME", help="Run a deliberately unsafe writer the harness must catch: ack-before-write, rewrite-in-place, meta-before-append, no-fsync (ACKs after write(), never fsyncs: only --mode power-loss --fs lazyfs catches it).", show_default=False)] = None,
    shared_file: Annotated[bool, typer.Option("--shared-file", help="Put every writer on one journal (taking the lock per record).")] = False,
    no_lock: Annotated[bool, typer.Option("--no-lock", help="Writers skip the lock protocol (with --shared-file: shows what the lock buys).")] = False,
    writer_cmd: Annotated[Optional[str], typer.Option("--writer-cmd", metavar="COMMAND", help="Run this command as the writer instead; it gets LEVELSESS_CHAOS_DIR and LEVELSESS_CHAOS_SEED and prints 'ACK <relpath> <end-offset> <sha256>' per durable record (relpath from LEVELSESS_CHAOS_DIR), and nothing else, until it is killed: exiting early, any other stdout line, or no ACK at all is a violation. Its journals may go anywhere under LEVELSESS_CHAOS_DIR where a layout keeps them: LEVELSESS_CHAOS_DIR is a LevelCode store root (<slug>/<id>.jsonl), and so is its store/ folder; Logician sessions go under a workspace's .logician/sessions/sessions/<id>/messages.jsonl (the workspace may be LEVELSESS_CHAOS_DIR itself or its ws/). Every journal there is checked, repaired and compared with a fresh index; an ACK for a file the harness cannot check (another place, another format) is an 'unchecked' violation. Durable means fsync or fdatasync of the file (or O_SYNC / O_DSYNC writes): --fs lazyfs does not see sync() or syncfs().", show_default=False)] = None,
    largest: Annotated[int, typer.Option("--largest", metavar="BYTES", help="Largest record in bytes (sizes are log-uniform from ~100 B).", min=200)] = 4 << 20,
    target: Annotated[Optional[str], typer.Option("--target", metavar="fsck|reindex|migrate|import", help="Kill levelsess's own writing command instead: fsck, reindex, migrate or import (from a generated Cursor database); each rerun must converge to the uninterrupted result.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="FOLDER", help="Keep a reproducer (seed, cycle, files, ACKs) here for every cycle with a violation.", show_default=False)] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary chaos folders.")] = False,
    replay: Annotated[Optional[int], typer.Option("--replay", metavar="N", help="Run cycle N's writer seeds and kill moments in every cycle, from a fresh folder (what a reproducer's repro.json says to run).", min=0, show_default=False)] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> int:
    """Start writers, SIGKILL them at random moments, repair, and prove no ACKed record was lost.

    After each cycle: every ACKed record is present, byte-identical, at its offset; a repair removed only the unacknowledged tail; no corruption error on a file whose only damage is a torn tail; caches match the journals; killed writers' locks are stale; every ACKed file was checked. The report counts, per cycle kind, where the kills (and power cuts) left each journal written: mid-record (torn), after a record but before its newline (unterminated), or between records. Exit 0 only when nothing was lost and there was no violation (else 4); 8 when the run could not be made (e.g. --fs lazyfs without LazyFS or FUSE).

    [bold]Examples[/bold]:
      levelsess chaos run --cycles 20                          # the CI smoke
      levelsess chaos run --duration 3600 --writers 4 --mode power-loss --fs lazyfs --json   # nightly
      levelsess chaos run --mode power-loss --fs lazyfs --lazyfs ~/.cache/levelsess/lazyfs/bin/lazyfs --unsafe no-fsync --cycles 10   # caught
      levelsess chaos run --unsafe rewrite-in-place --out ./repro   # watch it get caught
      levelsess chaos run --writer-cmd './my-writer --fast' --cycles 200
      levelsess chaos run --target migrate --cycles 10
      levelsess chaos run --shared-file --no-lock --layout levelcode --largest 65536 -v   # what the lock buys
      levelsess chaos run --seed 1234 --replay 7 --keep -q        # rerun a reproducer's cycle
    """
    from chaos.harness import Config, run as run_chaos
    from chaos.targets import run_target

    from .render_cli.chaos import live_chaos, render_chaos

    out_ = _output(ctx, json_, quiet, verbose)
    _check_chaos_flags(target, layout, fs, lazyfs)
    config = Config(cycles=cycles, duration=duration, writers=writers, seed=seed if seed is not None else int.from_bytes(os.urandom(4), "big"),
                    mode=mode, fs=fs, lazyfs=lazyfs, layout=layout, unsafe=unsafe, shared_file=shared_file, no_lock=no_lock,
                    writer_cmd=writer_cmd, largest=largest, out=out, keep=keep, replay=replay)
    with live_chaos(out_) as on_cycle:
        report = run_target(config, target, on_cycle) if target else run_chaos(config, on_cycle)
    document = report.to_json(command=config.command())
    if out_.json:
        out_.emit_json(document)
    else:
        render_chaos(out_, report, document, out)
    return report.exit_code


def _check_chaos_flags(target: str | None, layout: str, fs: str, lazyfs: str | None) -> None:
    """Reject an unknown --target or --layout, and --fs / --lazyfs with --target, before any work."""
    from chaos.targets import TARGETS

    if target is not None and target not in TARGETS:
        raise UsageError(f"--target {target}: choose one of {', '.join(TARGETS)}")
    if layout not in ("levelcode", "logician", "both"):
        raise UsageError(f"--layout {layout}: choose levelcode, logician or both")
    if target is not None and (fs != "disk" or lazyfs is not None):
        raise UsageError(f"--target {target} kills levelsess's own commands on disk; drop --fs / --lazyfs")


@chaos_app.command("writer", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def chaos_writer(ctx: typer.Context) -> int:
    """Run one chaos writer (what `chaos run` starts): appends records under $LEVELSESS_CHAOS_DIR and prints an ACK line per durable record.

    Options: --name, --layout levelcode|logician, --unsafe NAME, --shared-file, --no-lock, --largest BYTES, --max-records N (see `python -m chaos.writer --help`).

    [bold]Example[/bold]: LEVELSESS_CHAOS_DIR=/tmp/c levelsess chaos writer --max-records 3
    """
    from chaos.writer import main as writer_main

    return writer_main(list(ctx.args))


# The options main_options takes before a command word: flags, and those that take a value.
_GROUP_FLAGS = frozenset({"--json", "-q", "--quiet", "-v", "--verbose"})
_GROUP_VALUES = frozenset({"--store"})


def _invoked_command(argv: list[str]):
    """The registered command (or sub-typer) that argv runs, when that is certain; else None.

    Certain means: every word before it is one of main_options' flags or --store with its value.
    ``--help``, ``--version``, no command, an unknown word or option: None (the whole app is built)."""
    words = iter(argv)
    for arg in words:
        if arg in _GROUP_VALUES:
            next(words, None)
        elif arg.startswith(tuple(f"{o}=" for o in _GROUP_VALUES)) or arg in _GROUP_FLAGS:
            continue
        elif arg.startswith("-"):
            return None
        else:
            for info in app.registered_commands:
                if (info.name or typer.main.get_command_name(info.callback.__name__)) == arg:
                    return info
            for info in app.registered_groups:
                if getattr(info, "name", None) == arg:
                    return info
            return None
    return None


@contextlib.contextmanager
def _only(invoked):
    """Build the click group with just the invoked command: typer otherwise builds every command's
    parameters (~15 ms) to run one (start-up, DESIGN.md §8).  What that command parses, prints and
    exits with is the same: the group's own options, the command and its help are built as usual."""
    commands, groups = app.registered_commands, app.registered_groups
    app.registered_commands = [c for c in commands if c is invoked]
    app.registered_groups = [g for g in groups if g is invoked]
    try:
        yield
    finally:
        app.registered_commands, app.registered_groups = commands, groups


_NO_COMMAND = object()


def main() -> None:
    """Console entry point."""
    argv = sys.argv[1:]
    # --version first: its eager callback prints and exits before any other option or command is looked at
    invoked = _NO_COMMAND if argv[:1] == ["--version"] else _invoked_command(argv)
    with _only(invoked) if invoked is not None else contextlib.nullcontext():
        app()


if __name__ == "__main__":
    main()
