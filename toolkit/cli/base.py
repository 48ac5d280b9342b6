"""The ``levelsess`` command line's shared parts: the app, its error handling, the common
options and the helpers every command uses (the commands are in the sibling modules).

The command line: a thin typer shell over the library.

Each command parses its arguments, makes one library call, renders the result and exits
with its code (DESIGN.md §3).  Known errors print one line with a next step; anything else
is a bug and shows its traceback (without locals: journals hold user content).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import __version__, _help
from ..errors import EXIT_INTERRUPTED, EXIT_USAGE, Interrupted, LevelsessError, PathNotFoundError, UsageError  # noqa: F401 (the commands use them)


def _lazy(module: str, name: str):
    """``from module import name``, done at the first call: ``--version`` and ``--help`` load no
    library module, and each command loads only what it uses (start-up, DESIGN.md §8)."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(module, "toolkit"), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


check_folders, plan_repair = _lazy(".fsck.check", "check_folders"), _lazy(".fsck.repair", "plan_repair")
Output, add_column, common_base, findings_table, print_table, printable, write_json = (_lazy(".report", name) for name in (
    "Output", "add_column", "common_base", "findings_table", "print_table", "printable", "write_json"))
from ..streams import tolerant_streams  # noqa: E402 (light: called before every command)
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
                if not _NO_LIBRARY.intersection(sys.argv[1:] if args is None else args):  # (these print and exit, loading nothing)
                    _load_orjson()
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


_NO_LIBRARY = frozenset({"--version", "--help", "-h"})


def _load_orjson() -> None:
    """Load orjson (nearly every command does) with SIGINT and SIGTERM held back: a KeyboardInterrupt
    raised inside its module's initialisation (a Ctrl-C, a ``kill`` in those few milliseconds) crashed
    the interpreter (SIGSEGV, no message, exit -11).  A signal that came meanwhile is taken right
    after, here, as any Ctrl-C (exit 32)."""
    if "orjson" in sys.modules:
        return
    mask = getattr(signal, "pthread_sigmask", None)
    held = mask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) if mask is not None else None
    try:
        import orjson  # noqa: F401
    finally:
        if held is not None:
            mask(signal.SIG_SETMASK, held)


def _aimed(hint: str | None, exc: LevelsessError) -> str | None:
    """A damaged journal's hint with the journal's path in the fsck command it names, so the
    command runs on that file (not on the default store)."""
    path = getattr(exc, "path", None)
    if not hint or not isinstance(path, str) or path in ("", "?") or not os.path.isfile(path):
        return hint
    import re
    from .. import shellwords

    return re.sub(r"`(levelsess fsck [^`]*)`", lambda m: f"`{m.group(1)} {shellwords.quote(path)}`", hint)


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
def _steps(out: Output, label: str):
    """Yield ``step(total, what)`` for work told of as it goes (``doctor``: each tree it checks,
    each install it counts): a bar of steps on stderr, when it is a terminal, naming the one under
    way; None otherwise, for the caller to pass on as "no progress"."""
    if out.json or out.quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    begun = [0]
    with Progress(TextColumn("{task.description}", style="progress.description", markup=False), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=out.err, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def step(total: int, what: str) -> None:
            bar.update(task, total=total, completed=begun[0], description=f"{label}: {what}", refresh=True)  # (each step drawn)
            begun[0] += 1
        yield step


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
