"""--help drawn without rich (toolkit/_help.py): nothing a parameter says is lost, at any width.

Every command's help, at widths from 40 to 200 columns, must hold every option name, metavar,
range, help text, default and [required] mark that click knows of, and every subcommand's
summary; no line may be wider than asked, none may end in spaces, every box must close.  A
hypothesis property does the same over made-up commands (help texts of any words, long
unbreakable ones included, metavars, required options, defaults).  Colour is checked to be
the plain text plus escapes, and a command the renderer cannot draw still gets typer's help.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.core import TyperGroup

from tests.helpers import on_a_terminal, run_cli
from toolkit import _help, cli

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BOX = str.maketrans("", "", "│╭╮╰╯─")
WIDTHS = (40, 57, 80, 120, 200)


def squeeze(text: str) -> str:
    """The text with every space, line break and box character gone: what wrapping cannot change."""
    return "".join(text.translate(BOX).split())


def commands(command, ctx, path=()):
    """(context, command) for the group and every command under it."""
    yield ctx, command
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            yield from commands(sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True), (*path, name))


def root():
    group = typer.main.get_command(cli.app)
    return group, group.make_context("levelsess", [], resilient_parsing=True)


def expected_pieces(command, ctx) -> list[str]:
    """What click knows the help must say, each piece squeezed: a parameter's row (names, then
    metavar and range, then help, env var, default, [required]) and each subcommand's summary."""
    pieces = []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        for row in _help._param_rows([param], ctx):
            names, help_ = row
            pieces.append(squeeze(names.text + help_.text))
        if isinstance(param, typer.core.TyperOption):
            pieces.extend(squeeze(o) for o in param.opts + param.secondary_opts)
            if param.metavar:
                pieces.append(squeeze(param.metavar))
        if param.help:
            pieces.append(squeeze(_help.Styled.markup(param.help).text))
        if param.show_default is True and isinstance(param.default, (int, str)) and not isinstance(param.default, bool):
            pieces.append(squeeze(f"[default: {param.default}]"))
        if param.required:
            pieces.append("[required]")
    if command.help:
        first, rest = _help._paragraphs(command.help)
        pieces.append(squeeze(_help.Styled.markup(first).text))
        pieces.extend(squeeze(_help.Styled.markup(p).text) for p in rest)
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if not sub.hidden:
                pieces.append(squeeze(name + _help.Styled.markup(_help._paragraphs(sub.short_help or sub.help or "")[0]).text))
    return pieces


def assert_well_drawn(text: str, width: int) -> None:
    lines = text.split("\n")
    assert all(len(line) <= max(width, _help.MIN_WIDTH) for line in lines), [line for line in lines if len(line) > width]
    assert not [line for line in lines if line != line.rstrip()]
    opened = 0
    for line in lines:
        if line.startswith("╭"):
            assert opened == 0 and line.endswith("╮")
            opened = 1
        elif line.startswith("╰"):
            assert opened == 1 and line.endswith("╯")
            opened = 0
        elif opened:
            assert line.startswith("│ ") and line.endswith(" │")
    assert opened == 0


@pytest.mark.parametrize("width", WIDTHS)
def test_every_commands_help_says_everything_click_knows_at_every_width(width):
    group, ctx = root()
    seen = 0
    for sub_ctx, command in commands(group, ctx):
        text = _help.render(command, sub_ctx, width=width, color=False)
        assert_well_drawn(text, width)
        assert text.startswith(f"\n Usage: {sub_ctx.command_path}")
        flat = squeeze(text)
        for piece in expected_pieces(command, sub_ctx):
            assert piece in flat, (sub_ctx.command_path, width, piece)
        assert "…" not in text  # rich cut cells short; nothing is cut here
        seen += 1
    assert seen >= 14


def test_panels_are_as_wide_as_asked():
    group, ctx = root()
    for width in WIDTHS:
        boxed = [line for line in _help.render(group, ctx, width=width, color=False).split("\n") if line and line[0] in "╭│╰"]
        assert boxed and {len(line) for line in boxed} == {width}


def test_examples_keep_their_comments_readable():
    group, ctx = root()
    fsck = group.get_command(ctx, "fsck")
    text = _help.render(fsck, fsck.make_context("fsck", [], parent=ctx, resilient_parsing=True), width=80, color=False)
    assert "   levelsess fsck ./.logician --json  # a Logician workspace, for scripts\n" in text
    lines = text.split("\n")
    at = next(n for n, line in enumerate(lines) if "levelsess fsck ~/.claude/projects  # Claude Code" in line)
    comment = lines[at].index("# ")
    assert lines[at + 1].startswith(" " * (comment + 2)) and lines[at + 1].strip()  # continues under its comment


def test_markup_is_read_and_other_brackets_are_text():
    styled = _help.Styled.markup("[bold]Examples[/bold]: see [exit 0], a [/x] path and [] or [dim]dim")
    assert styled.text == "Examples: see [exit 0], a [/x] path and [] or dim"
    assert (0, 8, "bold") in styled.spans and (len(styled.text) - 3, len(styled.text), "dim") in styled.spans


def test_colour_is_the_plain_text_plus_escapes():
    group, ctx = root()
    for sub_ctx, command in commands(group, ctx):
        plain, coloured = (_help.render(command, sub_ctx, width=90, color=c) for c in (False, True))
        assert "\x1b[" in coloured and ANSI.sub("", coloured) == plain


def _on_a_terminal(env_extra: dict) -> str:
    """`levelsess fsck --help` with its stdout on a pseudo-terminal."""
    code, shown = on_a_terminal("fsck", "--help", env=env_extra)
    assert code == 0, shown
    return shown


def test_a_terminal_gets_colour_unless_no_color_or_a_dumb_terminal():
    assert "\x1b[1;36m--repair" in _on_a_terminal({"TERM": "xterm"})
    assert "\x1b[" not in _on_a_terminal({"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b[" not in _on_a_terminal({"TERM": "dumb"})


def test_a_command_it_cannot_draw_gets_typers_own_help(monkeypatch):
    def cannot(*args, **kwargs):
        raise AttributeError("typer moved an internal")

    monkeypatch.setattr(_help, "render", cannot)
    result = run_cli("fsck", "--help")
    assert result.exit_code == 0 and "╭─ Options" in result.stdout and "--incremental" in result.stdout


def test_levelsess_alone_prints_its_help_on_stdout_and_exits_16():
    result = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['levelsess']; from toolkit.cli import main; main()"],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 16 and "Usage: levelsess [OPTIONS] COMMAND" in result.stdout and not result.stderr.strip()


def test_width_comes_from_the_environment_then_the_terminal(monkeypatch):
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    monkeypatch.setenv("COLUMNS", "133")
    assert _help.width_and_color(open(os.devnull))[0] == 133
    monkeypatch.setenv("TERMINAL_WIDTH", "61")
    assert _help.width_and_color(open(os.devnull))[0] == 61
    monkeypatch.delenv("TERMINAL_WIDTH")
    monkeypatch.delenv("COLUMNS")
    assert _help.width_and_color(open(os.devnull)) == (80, False)  # not a terminal: 80 columns, no colour


# --- the class, not the example: made-up commands -------------------------------------------

WORD = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789/.-_|,<>~$()'"), min_size=1, max_size=60)
HELP = st.lists(WORD, min_size=0, max_size=40).map(" ".join)
NAME = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=1, max_size=24)


@st.composite
def made_up_command(draw):
    options = draw(st.lists(st.tuples(NAME, HELP, st.one_of(st.none(), st.text(alphabet="ABCDEFGHIJ|", min_size=1, max_size=40)),
                                      st.booleans(), st.one_of(st.none(), st.integers(0, 10**12))),
                            min_size=1, max_size=8, unique_by=lambda o: o[0]))
    return draw(HELP), draw(HELP), options


def build(description, more, options):
    import inspect

    app = typer.Typer(add_completion=False, rich_markup_mode="rich")

    def callback(**kwargs):
        pass

    callback.__doc__ = description + ("\n\n" + more if more else "")
    callback.__signature__ = inspect.Signature([  # typer reads each parameter's Option from the signature
        inspect.Parameter(f"p{n}", inspect.Parameter.KEYWORD_ONLY, annotation=int if default is not None else str,
                          default=typer.Option(... if required else default, f"--{name}", help=help_, metavar=metavar,
                                               show_default=default is not None))
        for n, (name, help_, metavar, required, default) in enumerate(options)])
    app.command()(callback)
    app.command("other", help=more or "x")(lambda: None)
    group = typer.main.get_command(app)
    ctx = group.make_context("made", [], resilient_parsing=True)
    name = group.list_commands(ctx)[0]
    command = group.get_command(ctx, name)
    return group, ctx, command, command.make_context(name, [], parent=ctx, resilient_parsing=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made_up_command(), st.integers(40, 160))
def test_any_command_is_drawn_whole_at_any_width(made, width):
    group, ctx, command, sub_ctx = build(*made)
    for c, x in ((group, ctx), (command, sub_ctx)):
        text = _help.render(c, x, width=width, color=False)
        assert_well_drawn(text, width)
        flat = squeeze(text)
        for piece in expected_pieces(c, x):
            assert piece in flat, (width, piece)


@pytest.mark.parametrize("encoding", ["latin-1", "ascii", "cp1252"])
def test_a_terminal_without_box_characters_gets_ascii_boxes(encoding):
    """Where stdout cannot encode the rounded box, it is drawn in ASCII, not as \\u2502 escapes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": encoding, "COLUMNS": "80"}
    code = "import sys; sys.argv = ['levelsess', 'fsck', '--help']; from toolkit.cli import main; main()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, cwd=ROOT)
    text = result.stdout.decode(encoding)
    assert result.returncode == 0 and "\\u25" not in text  # U+2500-257F: the box drawing characters
    boxed = [line for line in text.split("\n") if line[:1] in ("+", "|")]
    assert boxed and {len(line) for line in boxed} == {80}
    assert "| --incremental" in text and text.count("+- Options -") == 1


def test_ascii_boxes_say_the_same_as_rounded_ones():
    group, ctx = root()
    for sub_ctx, command in commands(group, ctx):
        rounded = _help.render(command, sub_ctx, width=80, color=False)
        plain = _help.render(command, sub_ctx, width=80, color=False, box=_help.ASCII_BOX)
        assert plain == rounded.translate(str.maketrans(_help.BOX, _help.ASCII_BOX))
