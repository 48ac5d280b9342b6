"""Start-up fast paths (DESIGN.md §8, issue 16) change nothing a user sees, and use only public
typer/click/rich APIs (issue 24).

toolkit.cli.main builds only the invoked command; --help is drawn by toolkit._help through
public ``cls=`` subclasses (typer's rich help is its fallback).  Each is checked here against
typer's own path; no timing is asserted (see tests/bench/bench_startup.py for the figures).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import make_store, run_cli
from toolkit import cli

ROOT = Path(__file__).resolve().parents[1]
#: The command line's own modules (toolkit/cli/): the shell, not the library.
CLI_MODULES = {f"toolkit.cli.{p.stem}" for p in (ROOT / "toolkit" / "cli").glob("*.py") if p.stem not in ("__init__", "__main__")}


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
    assert {m for m in loaded if m.startswith("toolkit")} <= {"toolkit", "toolkit.cli", "toolkit._help",
                                                             "toolkit.errors", "toolkit.streams", *CLI_MODULES}
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
    assert "Invalid value for '--jobs' / '-j': 'x' is not a valid integer" in result.stderr
    result = _run(MAIN, "fsck", "--jobs", "-1")
    assert result.returncode == 16 and "-1 is not in the range x>=0" in result.stderr


# typer's rich help is the fallback when toolkit._help cannot draw a command (tests/test_help.py)
RICH_HELP = ("import sys; sys.argv = ['levelsess', *sys.argv[1:]]\n"
             "import toolkit._help as plain\n"
             "def cannot(*args, **kwargs): raise AttributeError('a parameter shape it does not know')\n"
             "plain.render = cannot\n"
             "from toolkit.cli import main; main()")


@pytest.mark.parametrize("args", [["fsck", "--help"], ["--help"], ["chaos", "run", "--help"], ["chaos"]])
def test_help_that_cannot_be_drawn_plainly_is_typers_own(args):
    plain, rich_help = _run(MAIN, *args), _run(RICH_HELP, *args)
    assert plain.returncode == rich_help.returncode
    assert "╭─ Options" in rich_help.stdout and "Usage: levelsess" in rich_help.stdout
    assert "Traceback" not in rich_help.stderr
    # every option name is in both
    names = {word for word in plain.stdout.split() if word.startswith("--")}
    assert names and all(name in rich_help.stdout for name in names)


def _imports(tree):
    import ast

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                yield node.args[0].value


def test_no_private_typer_click_or_rich_name_is_imported():
    """A private module or name of typer, click or rich (``typer._click``, ``from click.core import
    _x``) could move in any release; the pinned range in pyproject.toml is only for public ones."""
    import ast

    found = []
    for path in sorted((ROOT / "toolkit").rglob("*.py")) + sorted((ROOT / "chaos").rglob("*.py")):
        for name in _imports(ast.parse(path.read_text("utf-8"))):
            parts = name.split(".")
            if parts[0] in ("typer", "click", "rich") and any(part.startswith("_") for part in parts[1:]):
                found.append(f"{path.relative_to(ROOT)}: {name}")
    assert not found


def test_no_framework_class_is_patched_in_place():
    """Subclasses passed as ``cls=``, never attributes set on typer's or click's own classes."""
    import re

    patched = re.compile(r"^\s*(Typer\w+|click\.\w+|typer\.\w+(\.\w+)*)\.\w+\s*=", re.M)
    for path in sorted((ROOT / "toolkit").rglob("*.py")):
        assert not patched.search(path.read_text("utf-8")), path


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


_BUILT = r"""
import contextlib, json, sys
import click, typer
from toolkit import cli
out = {}
for info in list(cli.app.registered_commands):
    name = info.name or typer.main.get_command_name(info.callback.__name__)
    with cli._only(info) if sys.argv[1] == "evaluated" else contextlib.nullcontext():
        group = typer.main.get_command(cli.app)
    command = group.commands[name]
    out[name] = [command.to_info_dict(click.Context(command, info_name=name)),
                 group.to_info_dict(click.Context(group, info_name="levelsess"))["params"]]
print(json.dumps(out, default=repr, sort_keys=True))
"""


def test_annotations_evaluated_at_once_build_every_command_as_typer_does():
    """cli._evaluated makes a command's (and the group's) string annotations objects in one
    evaluation, before typer reads them: every command's options, types, defaults and help come out
    as typer builds them from the strings."""
    built = {mode: subprocess.run([sys.executable, "-c", _BUILT, mode], capture_output=True, text=True, check=True).stdout
             for mode in ("evaluated", "as-written")}
    assert built["evaluated"] == built["as-written"]
    assert '"import"' in built["evaluated"] and "0x" not in built["evaluated"]


def _codex_fixtures(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A copy of the Codex fixture rollouts, a store to import them into, and an import cache of
    the test's own (skipped when the fixtures are not here)."""
    import shutil

    from tests.layouts.codex import FIXTURES

    if not FIXTURES.is_dir():
        pytest.skip(f"{FIXTURES} is not here")
    home = tmp_path / ".codex"
    shutil.copytree(FIXTURES, home)
    return home, tmp_path / "store", {"XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_an_import_that_resumes_grown_rollouts_loads_no_module_it_has_no_use_for(tmp_path):
    """A nightly import that only appends what a few rollouts added (issue 27) pays the start-up of
    every module it loads: not pickle.py (the C pickle is enough), base64 (binascii's), shlex (no
    command is printed) or the salvager."""
    import random

    from tests.bench.grow import grow_codex

    home, store, env = _codex_fixtures(tmp_path)
    args = ("import", "--from", "codex", "--source", str(home), "--store", str(store), "--json")
    first = _run_env(env, LOADED, *args)
    assert first.returncode in (0, 4), first.stderr
    rng = random.Random(5)
    assert sum(grow_codex(path, rng) > 0 for path in sorted(home.rglob("rollout-*.jsonl"))[:2]) == 2
    result = _run_env(env, LOADED, *args)
    assert result.returncode in (0, 4), result.stderr
    assert '"resumed": 2' in result.stdout
    loaded = _loaded(result)
    assert "toolkit.importers.codex" in loaded and "toolkit.reindex" in loaded  # (it did resume, and reindex)
    assert not loaded & {"pickle", "base64", "shlex", "toolkit.fsck.salvage"}


def test_the_nightly_quiet_import_loads_no_rich(tmp_path):
    """The nightly job's import (`schedule`: ``import --from APP --store S -q``) shows errors only,
    to a log: a first import and one that finds nothing new draw no table, and load none (rich's
    table and its modules were a quarter of an unchanged import's time)."""
    home, store, env = _codex_fixtures(tmp_path)
    args = ("import", "--from", "codex", "--source", str(home), "--store", str(store), "-q")
    for run in ("first", "nothing new"):
        result = _run_env(env, LOADED, *args)
        assert result.returncode == 0, (run, result.stderr)
        loaded = _loaded(result)
        assert "toolkit.importers.codex" in loaded or run == "nothing new"
        assert not {m for m in loaded if m.split(".")[0] == "rich"}, run
    assert len(list(store.rglob("codex-*.jsonl"))) == 3


def _run_env(env: dict, code: str, *args: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=full, cwd=ROOT)
