"""Reading and tidying a store: ``ls``, ``show``, ``export``, ``locks``, ``trash``."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .base import JsonOpt, Output, PathsArg, QuietOpt, StoreOpt, UsageError, VerboseOpt, _output, _progress, _store, _targets, app, default_store, discover_all, printable, write_json



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
    from ..render_cli.sessions import render_ls
    from ..sessions import select_sessions

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
    from ..sessions import find_session

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

    from ..layouts import get as get_layout
    from ..render import as_json, markdown

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
    from ..render import export_chunks

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
    from .. import durable

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
    from ..locks import survey_locks
    from ..render_cli.sessions import render_locks

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
    from ..trash import trash_sessions

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
    from ..tombstones import read

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
    from ..doctor import store_flag
    from ..tombstones import import_name

    for root, name in dict.fromkeys((root, import_name(stone)) for root, stone in stones):
        out.say(f"next: levelsess import --from {name or 'APP'} --include-trashed{store_flag(root)}", style="bold")
    return 0
