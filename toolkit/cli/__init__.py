"""The ``levelsess`` command line: a thin typer shell over the library.

Each command parses its arguments, makes one library call, renders the result and exits
with its code (DESIGN.md §3).  Known errors print one line with a next step; anything else
is a bug and shows its traceback (without locals: journals hold user content).

``base`` holds the app and what every command shares; the commands live in ``checks``, ``keep``,
``sessions``, ``give`` and ``harness``, imported here in the order ``--help`` lists them.
"""

from __future__ import annotations

import contextlib
import gc
import sys

#: Container allocations between two young collections in a levelsess process (Python's default:
#: 700).  Loading the command line's modules allocates objects that all live: at 700 the collector
#: made some twenty passes over them before a command began (about 3 ms of every start-up; with
#: main()'s freeze below, an import that finds nothing new is 7 ms shorter).  An import runs at the
#: same number (toolkit.importers.YOUNG_COLLECTION); what dies young dies by reference count.
YOUNG_COLLECTION = 20_000
gc.set_threshold(max(gc.get_threshold()[0], YOUNG_COLLECTION), *gc.get_threshold()[1:])

import typer  # noqa: E402 (after the collector's threshold: loading typer is most of start-up)

from . import checks, keep, sessions, give, harness  # noqa: F401, E402 (each registers its commands, in this order)
from .base import app  # noqa: E402

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


def _evaluated(function) -> None:
    """Make ``function``'s annotations (strings: ``from __future__ import annotations``) the objects
    they name, all in one evaluation.  typer evaluates them itself, each string compiled on its own and
    twice over (``inspect.signature``, then ``get_type_hints``): for ``import``'s options, nearly two
    milliseconds of its start-up.  What it builds from them is the same; annotations that cannot be
    evaluated here are left as they are, for typer to evaluate (or refuse) as before."""
    hints = getattr(function, "__annotations__", None)
    names = [name for name, hint in (hints or {}).items() if isinstance(hint, str)]
    if not names:
        return
    try:
        values = eval(f"({', '.join(hints[name] for name in names)},)", function.__globals__)  # noqa: S307 (our own source)
    except Exception:  # noqa: BLE001 - typer meets it, as before
        return
    hints.update(zip(names, values))


@contextlib.contextmanager
def _only(invoked):
    """Build the click group with just the invoked command: typer otherwise builds every command's
    parameters (~15 ms) to run one (start-up, DESIGN.md §8).  What that command parses, prints and
    exits with is the same: the group's own options, the command and its help are built as usual."""
    commands, groups = app.registered_commands, app.registered_groups
    for function in (getattr(invoked, "callback", None), getattr(app.registered_callback, "callback", None)):
        if function is not None:
            _evaluated(function)
    app.registered_commands = [c for c in commands if c is invoked]
    app.registered_groups = [g for g in groups if g is invoked]
    try:
        yield
    finally:
        app.registered_commands, app.registered_groups = commands, groups


_NO_COMMAND = object()


def main() -> None:
    """Console entry point."""
    # What start-up loaded lives as long as the process: the collector's passes over it while the
    # command runs are skipped (frozen, as at exit below; a command's own module loads then cost
    # their own objects' walks, not the command line's).
    gc.freeze()
    argv = sys.argv[1:]
    # --version first: its eager callback prints and exits before any other option or command is looked at
    invoked = _NO_COMMAND if argv[:1] == ["--version"] else _invoked_command(argv)
    try:
        with _only(invoked) if invoked is not None else contextlib.nullcontext():
            app()
    finally:
        # What is alive now goes with the process: the collector's last pass over it at exit is
        # skipped (after an import that found nothing new, a tenth of its time).  Nothing here is
        # left for it to do: every file is written, synced and closed by the command itself.
        gc.freeze()


if __name__ == "__main__":
    main()
