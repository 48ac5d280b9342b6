"""Start-up fast paths (DESIGN.md §8, issue 16) change nothing a user sees.

toolkit._typer_fast converts simple option values without typer's pydantic adapters and lets
typer's rich --help (the fallback of toolkit._help, tested in tests/test_help.py) render without
markdown-it and pygments; toolkit.cli.main builds only the invoked command.  Each is checked here against typer's own path; no timing is asserted (see
tests/bench/bench_startup.py for the figures).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import make_store, run_cli
from toolkit import _typer_fast, cli

ROOT = Path(__file__).resolve().parents[1]
_coercion = pytest.importorskip("typer._coercion", reason="typer without pydantic adapters: nothing to bypass")


def _params():
    import typer.main

    def walk(command):
        yield from ((command, p) for p in command.params)
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub)

    return list(walk(typer.main.get_command(cli.app)))


def _outcome(runtime, value, param, ctx):
    try:
        result = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return ("error", type(exc).__name__, getattr(exc, "message", str(exc)))
    return ("value", type(result).__name__, [(type(r).__name__, r) for r in result] if isinstance(result, list) else result)


def test_fast_conversion_gives_what_typers_adapter_gives(tmp_path):
    from typer import _click

    (tmp_path / "file").write_text("x")
    texts = ["abc", "", "café", "\udcff", "a\x00b", "-x", "0", "5", "007", "-1", "-0", " 5", "5 ", "5_0", "+5", "1e3",
             "5.0", "1.5", ".5", "-0.5", "inf", "nan", "٣", "9" * 30, str(tmp_path), str(tmp_path / "file"),
             str(tmp_path / "missing")]
    values = [None, *texts, 0, 3, 150, 1.5, True, False, tmp_path, tuple(texts[:6]), (str(tmp_path), "x"), (), ["a"]]
    fast_seen = set()
    for command, param in _params():
        kind = _typer_fast._fast_kind(param.type_descriptor)
        if kind is None:
            continue
        ctx = _click.Context(command)
        param._runtime_param = None
        fast = param.get_runtime_param()
        assert type(fast).__name__ == "FastRuntimeParam", param.name
        fast_seen.add(kind)
        adapter = _coercion.build_runtime_param(param.type_descriptor)
        for value in [*values, param.default]:
            assert _outcome(fast, value, param, ctx) == _outcome(adapter, value, param, ctx), (command.name, param.name, value)
    assert {(str, False), (int, False), (float, False), (Path, False), (Path, True), (str, True), (bool, False)} <= fast_seen


def test_other_types_keep_typers_adapter():
    from enum import Enum
    from typing import Literal

    from typer._coercion import resolve_type_descriptor
    from typer.models import OptionInfo

    class Colour(Enum):
        red = "red"

    for annotation, info in ((Colour, OptionInfo()), (Literal["a", "b"], OptionInfo()), (int, OptionInfo(min=0, clamp=True)),
                             (str, OptionInfo(parser=str)), (Path, OptionInfo(path_type=str)), (tuple[int, int], OptionInfo()),
                             (str, OptionInfo(resolve_path=True))):
        assert _typer_fast._fast_kind(resolve_type_descriptor(annotation, info)) is None, annotation


def test_install_changes_nothing_without_typers_hooks(monkeypatch):
    monkeypatch.setitem(sys.modules, "typer._coercion", None)  # as if typer had moved or dropped it
    assert _typer_fast.install() is False


def test_stand_ins_are_the_real_classes_when_used():
    markdown = _typer_fast._stand_in("rich.markdown", "Markdown")
    traceback = _typer_fast._stand_in("rich.traceback", "Traceback")
    from rich.markdown import Markdown
    from rich.traceback import Traceback

    made = markdown("# title")
    assert type(made) is Markdown and isinstance(made, markdown)
    assert traceback.from_exception == Traceback.from_exception


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT)


LOADED = ("import atexit, sys\n"
          "atexit.register(lambda: sys.__stderr__.write('\\nLOADED ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
          "sys.argv = ['levelsess', *sys.argv[1:]]\n"
          "from toolkit.cli import main; main()\n")


def _loaded(result) -> set[str]:
    return set(result.stderr.rsplit("LOADED ", 1)[1].split())


@pytest.mark.parametrize("args", [["--version"], ["fsck", "--help"], ["--help"]])
def test_version_and_help_load_no_library_module(args):
    result = _run(LOADED, *args)
    assert result.returncode == 0, result.stderr
    loaded = _loaded(result)
    assert {m for m in loaded if m.startswith("toolkit")} <= {"toolkit", "toolkit.cli", "toolkit._typer_fast", "toolkit._help",
                                                             "toolkit.errors", "toolkit.streams"}
    assert not {m for m in loaded if m.split(".")[0] in ("pydantic", "pygments", "markdown_it", "psutil", "orjson", "rich")}
    assert ("Usage: levelsess" if "--help" in args else "levelsess 0.") in result.stdout


def test_fsck_of_a_store_loads_no_pydantic(tmp_path):
    store = make_store(tmp_path / "store")
    result = _run(LOADED, "fsck", "--jobs", "1", str(store))
    assert result.returncode in (0, 1), result.stderr
    assert not {m for m in _loaded(result) if m.split(".")[0] == "pydantic"}


# main() builds only the invoked command; app() (what tests/helpers.run_cli calls) builds them all.
# "full" also imports rich.markdown and rich.traceback first, so --help goes typer's usual way.
MAIN = "import sys; sys.argv = ['levelsess', *sys.argv[1:]]; from toolkit.cli import main; main()"
FULL = ("import sys, rich.markdown, rich.traceback; sys.argv = ['levelsess', *sys.argv[1:]]\n"
        "from toolkit.cli import app; app(prog_name='levelsess')")
CASES = [["fsck", "--help"], ["chaos", "run", "--help"], ["ls", "-h"], ["--help"], [], ["chaos"], ["--version"],
         ["fsck", "--jobs", "x", "STORE"], ["fsck", "--jobs", "-1"], ["fsck", "--frobnicate"], ["fsk"], ["ls", "--limit", "x"],
         ["--json", "fsck", "STORE"], ["-q", "--store", "STORE", "fsck"], ["--store=STORE", "reindex", "--check"],
         ["--store", "fsck", "ls", "STORE"], ["-qv", "fsck", "STORE"], ["--frob", "fsck"], ["fsck", "--jobs", " 2", "STORE"],
         ["show"], ["export", "nope", "--format", "xml"], ["chaos", "run", "--cycles", "0"],
         ["--version", "--help"], ["--version", "fsck", "--frob"], ["--version", "--frob"], ["--json", "--version"]]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a) or "(none)")
def test_building_only_the_invoked_command_changes_nothing(tmp_path, args):
    store = str(make_store(tmp_path / "store"))
    args = [a.replace("STORE", store) for a in args]
    lazy, full = _run(MAIN, *args), _run(FULL, *args)
    assert (lazy.returncode, lazy.stdout, lazy.stderr) == (full.returncode, full.stdout, full.stderr)
    assert "Traceback" not in lazy.stderr


def test_usage_errors_keep_typers_message_and_exit_16():
    result = _run(MAIN, "fsck", "--jobs", "x")
    assert result.returncode == 16
    assert "Invalid value for '--jobs' / '-j': Input should be a valid integer" in result.stderr
    result = _run(MAIN, "fsck", "--jobs", "-1")
    assert result.returncode == 16 and "Input should be greater than or equal to 0" in result.stderr


# typer's rich help is the fallback when toolkit._help cannot draw a command (tests/test_help.py)
RICH_HELP = ("import sys; sys.argv = ['levelsess', *sys.argv[1:]]\n"
             "import toolkit._help as plain\n"
             "def cannot(*args, **kwargs): raise AttributeError('typer changed')\n"
             "plain.render = cannot\n")
LIGHT_HELP = RICH_HELP + "from toolkit.cli import main; main()"
USUAL_HELP = RICH_HELP + "import rich.markdown, rich.traceback\nfrom toolkit.cli import main; main()"


@pytest.mark.parametrize("args", [["fsck", "--help"], ["--help"], ["chaos", "run", "--help"], ["chaos"]])
def test_rich_help_rendered_without_markdown_and_pygments_is_the_same(args):
    light, usual = _run(LIGHT_HELP, *args), _run(USUAL_HELP, *args)  # usual: rich_utils finds the real modules loaded
    assert "╭─ Options" in light.stdout + light.stderr
    assert light.returncode == usual.returncode
    assert (light.stdout, light.stderr) == (usual.stdout, usual.stderr)


def test_invoked_command_is_found_only_when_certain():
    def named(name):
        return next(i for i in [*cli.app.registered_commands, *cli.app.registered_groups]
                    if getattr(i, "name", None) == name or getattr(getattr(i, "callback", None), "__name__", None) == name)

    for args, expected in ((["fsck"], "fsck"), (["--json", "-q", "fsck", "x"], "fsck"), (["--store", "fsck", "ls"], "ls"),
                           (["--store=fsck", "ls", "--help"], "ls"), (["-v", "--quiet", "chaos", "run"], "chaos")):
        assert cli._invoked_command(args) is named(expected), args
    for args in ([], ["--help", "fsck"], ["--version", "fsck"], ["-qv", "fsck"], ["nope"], ["--", "fsck"], ["--store"]):
        assert cli._invoked_command(args) is None, args


def test_group_option_lists_match_main_options():
    import typer.main

    group = typer.main.get_command(cli.app)
    flags, values = set(), set()
    for param in group.params:
        if param.name in ("version", "help"):
            continue
        (flags if param.is_flag else values).update(param.opts + param.secondary_opts)
    assert (flags, values) == (set(cli._GROUP_FLAGS), set(cli._GROUP_VALUES))


def test_a_check_that_finds_nothing_loads_no_rich_and_no_repair_code(tmp_path):
    """A clean store's check prints one line: neither rich nor the repair side is needed for it."""
    store = make_store(tmp_path / "store")
    assert run_cli("reindex", "-q", str(store)).exit_code == 0
    result = _run(LOADED, "fsck", "--jobs", "1", str(store))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("0 error(s), 0 warning(s)  [exit 0]")
    loaded = _loaded(result)
    assert not {m for m in loaded if m.split(".")[0] == "rich"} and "toolkit.fsck.repair" not in loaded


def test_messages_print_brackets_as_written_and_never_as_markup(tmp_path):
    """A path or an "[exit N]" in a message is text: once, rich ate "[exit 0]" and a "[/x]" in a
    path raised MarkupError (a traceback for a user whose folder has brackets in its name)."""
    store = tmp_path / "odd [/x] [bold]name"
    make_store(store)
    result = run_cli("reindex", str(store))
    assert result.exit_code == 0 and "Traceback" not in result.stderr
    assert "[exit 0]" in result.stderr
    missing = run_cli("fsck", str(tmp_path / "gone [/y]"))
    assert missing.exit_code == 8 and "gone [/y]" in missing.stderr


def test_a_next_line_naming_a_bracketed_path_is_printed_whole(tmp_path):
    from tests.helpers import torn_store

    store, _journal = torn_store(tmp_path / "odd [/x] store")
    result = run_cli("fsck", str(store))
    assert result.exit_code == 4 and "Traceback" not in result.stderr
    assert "next: run `levelsess fsck --repair" in result.stderr and "odd [/x] store" in result.stderr
