"""Giving chats back: ``restore``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .base import JsonOpt, QuietOpt, StoreOpt, UsageError, VerboseOpt, _ctrl_c_deferred, _output, _store, app, default_store



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
    from ..render_cli.restore import render_restore, render_restore_runs, render_undo, restore_app
    from ..restore import list_restores, plan_restore, restore as run_restore, undo_restore

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
