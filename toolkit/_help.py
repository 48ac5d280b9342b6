"""``--help`` drawn without rich: the same panels as typer's, in a few milliseconds (DESIGN.md §8).

typer draws help with rich, whose console, table and panel modules cost more to import and
to lay out (~40 ms) than the rest of ``levelsess fsck --help``.  This module draws the same
thing with the standard library: a usage line, the command's text, then the Arguments,
Options and Commands panels (and any ``rich_help_panel`` a parameter names), boxed as typer
boxes them.  Two things differ, both on purpose:

- nothing is cut: rich ends a cell that has no room with ``…`` (``~/.copilot/session-stat…``),
  here every word of every help text is printed, wrapped;
- an example line that has to wrap continues under its own ``#`` comment, and lines carry no
  trailing spaces.

Colours (typer's: option names cyan, switches green, metavars yellow, borders dim) are drawn
only on a terminal, and never with ``NO_COLOR`` set or ``TERM=dumb``.  The width is
``TERMINAL_WIDTH`` or ``COLUMNS`` when set, else the terminal's (at most 100 columns, for
reading), else 80.  Markup in help texts: ``[bold]``, ``[dim]``, ``[italic]``, ``[underline]``
and their closing tags; any other bracket is text.

``command_classes()`` gives typer's command and group classes with ``format_help`` drawn here,
passed to typer as ``cls=`` (public subclassing); if this module meets a command or parameter it
does not understand, that command's help goes through typer's own rich path instead, so help is
never lost.  Only click's and typer's public attributes are read (``default``, ``show_default``,
``opts``, ``metavar``, ``IntRange.min``…), so a typer release that moves its internals changes
nothing here.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from collections.abc import Iterable

_STYLES = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "red": "31", "green": "32", "yellow": "33",
           "magenta": "35", "cyan": "36"}
_TAG = re.compile(r"\[(/?)(bold|dim|italic|underline|)\]")
_OPTION_WORD = re.compile(r"(?<![\w-])(--[\w-]+|-\w)(?![\w-])")
_COMMENT = re.compile(r"\s{2,}# ")
MIN_WIDTH, MAX_TERMINAL_WIDTH = 40, 100
BOX, ASCII_BOX = "╭─╮│╰╯", "+-+|++"  # corners, rule, side: typer's rounded box, or plain ASCII


class Styled:
    """A line of plain text with styled spans: (start, end, style words)."""

    __slots__ = ("text", "spans")

    def __init__(self, text: str = "", spans: list[tuple[int, int, str]] | None = None):
        self.text, self.spans = text, spans or []

    @classmethod
    def markup(cls, source: str, style: str = "") -> Styled:
        """Read the small markup help texts use; everything else is literal text."""
        out, spans, stack, at = [], [], [], 0
        for match in _TAG.finditer(source):
            out.append(source[at:match.start()])
            here = sum(map(len, out))
            closing, name = match.group(1), match.group(2)
            if closing:
                if stack and (not name or stack[-1][0] == name):
                    opened_name, opened_at = stack.pop()
                    spans.append((opened_at, here, opened_name))
                else:
                    out.append(match.group(0))  # a stray closing tag is text
            elif name:
                stack.append((name, here))
            else:
                out.append(match.group(0))  # "[]"
            at = match.end()
        out.append(source[at:])
        text = "".join(out)
        spans.extend((opened_at, len(text), name) for name, opened_at in stack)
        if style:
            spans.insert(0, (0, len(text), style))
        return cls(text, spans)

    def __add__(self, other: Styled) -> Styled:
        shift = len(self.text)
        return Styled(self.text + other.text, self.spans + [(a + shift, b + shift, s) for a, b, s in other.spans])

    def slice(self, start: int, end: int) -> Styled:
        spans = [(max(a, start) - start, min(b, end) - start, s) for a, b, s in self.spans if a < end and b > start]
        return Styled(self.text[start:end], spans)

    def render(self, color: bool) -> str:
        if not color or not self.spans:
            return self.text
        cuts = sorted({0, len(self.text), *(p for a, b, _ in self.spans for p in (a, b))})
        pieces = []
        for a, b in zip(cuts, cuts[1:]):
            codes = [_STYLES[w] for s0, s1, style in self.spans if s0 <= a and b <= s1 for w in style.split() if w in _STYLES]
            piece = self.text[a:b]
            pieces.append(f"\x1b[{';'.join(codes)}m{piece}\x1b[0m" if codes and piece else piece)
        return "".join(pieces)


def wrap(line: Styled, width: int, indent: int = 0) -> list[Styled]:
    """Break a line at whitespace into pieces of at most ``width`` characters.

    Spaces inside a piece are kept as written (an example's aligned comments stay aligned);
    the spaces at a break are dropped; a word longer than the room is cut.  Pieces after the
    first are meant to be printed ``indent`` columns further in, and get that much less room."""
    text, pieces, start = line.text, [], 0
    room = width
    while len(text) - start > room:
        cut = text.rfind(" ", start, start + room + 1)
        if cut <= start:  # one word longer than the room: cut after a / | or , in it, else at the edge
            marks = [text.rfind(mark, start, start + room) for mark in "/|,"]
            cut = max(marks) + 1 if max(marks) > start else start + room
            resume = cut
        else:
            resume = cut
            while cut > start and text[cut - 1] == " ":
                cut -= 1
            while resume < len(text) and text[resume] == " ":
                resume += 1
        pieces.append(line.slice(start, cut))
        start = resume
        room = max(width - indent, 1)
    if start < len(text) or not pieces:
        pieces.append(line.slice(start, len(text)))
    return pieces


def block(line: Styled, width: int) -> list[Styled]:
    """A line of a help text, wrapped.  An indented line is an example: one too long first
    closes the gap before its ``# comment`` to two spaces, then wraps the comment under
    itself, or, with no room beside the command, puts the comment on lines of its own."""
    text = line.text
    leading = len(text) - len(text.lstrip(" "))
    if not leading or len(text) <= width:
        return wrap(line, width)
    indent = leading + 4
    gap = _COMMENT.search(text, leading)
    if gap is None:
        return _hanging(wrap(line, width, indent), indent)
    command, comment = line.slice(0, gap.start()), line.slice(gap.end() - 2, len(text))
    joined = command + Styled("  ") + comment
    if len(joined.text) <= width:
        return [joined]
    column = len(command.text) + 2
    if width - column >= 20:
        return _hanging(wrap(joined, width, column + 2), column + 2)
    return _hanging(wrap(command, width, indent), indent) + _hanging(wrap(comment, width - indent, 2), 2, indent)


def _hanging(pieces: list[Styled], indent: int, every: int = 0) -> list[Styled]:
    """Pieces of a wrapped line, those after the first moved ``indent`` in (all of them ``every`` more)."""
    return [Styled(" " * (every + (indent if n else 0))) + piece for n, piece in enumerate(pieces)]


def _highlight(line: Styled) -> Styled:
    """Option names in a help text get the option colour, as typer's highlighter gives them."""
    spans = list(line.spans)
    for match in _OPTION_WORD.finditer(line.text):
        spans.append((match.start(), match.end(), "bold cyan" if match.group().startswith("--") else "bold green"))
    return Styled(line.text, spans)


class Canvas:
    """Lines of output at one width, with or without colour."""

    def __init__(self, width: int, color: bool, box: str = BOX):
        self.width, self.color, self.lines, self.box = max(width, MIN_WIDTH), color, [], box

    def add(self, line: Styled | str = "") -> None:
        self.lines.append((line if isinstance(line, Styled) else Styled(line)).render(self.color))

    def text(self, paragraphs: Iterable[Styled], pad: int = 1) -> None:
        for line in paragraphs:
            for piece in block(line, self.width - 2 * pad):
                self.add(Styled(" " * pad) + piece if piece.text else "")

    def panel(self, title: str, rows: list[tuple[Styled, Styled]], name_cap: int | None = None) -> None:
        """A box of (names, help) rows, every row's help starting in the same column.

        Names wider than the column (``--from cursor|vscode|…``) get a line of their own, and
        their help starts under the column on the next."""
        if not rows:
            return
        inner, dim = self.width - 4, "dim"
        cap = name_cap if name_cap is not None else max(16, min(inner * 2 // 5, 40))
        fitting = [len(names.text) for names, _ in rows if len(names.text) <= cap]  # a wider one gets a line of its own
        names_width = max(fitting) if fitting else cap
        column = names_width + 2
        tl, h, tr, v, bl, br = self.box
        rule = h * max(inner - len(title) - 1, 1)
        self.add(Styled(f"{tl}{h} {title} {rule}{tr}", [(0, 2, dim), (len(title) + 4, len(title) + 5 + len(rule), dim)]))
        for names, help_ in rows:
            helps, at = [], 0
            for part in help_.text.split("\n"):
                helps.extend(wrap(help_.slice(at, at + len(part)), inner - column))
                at += len(part) + 1
            if len(names.text) > names_width:
                own = wrap(names, inner, 2)
                lines = [own[0], *(Styled("  ") + piece for piece in own[1:])]
                lines += [Styled(" " * column) + line for line in helps]
            else:
                lines = [names + Styled(" " * (column - len(names.text))) + helps[0]]
                lines += [Styled(" " * column) + line for line in helps[1:]]
            for line in lines:
                line = line.slice(0, len(line.text.rstrip(" ")))
                gap = inner - len(line.text)
                self.add(Styled(v + " ", [(0, 1, dim)]) + line + Styled(" " * gap + " " + v, [(gap + 1, gap + 2, dim)]))
        self.add(Styled(bl + h * (inner + 2) + br, [(0, inner + 4, dim)]))


def box_for(stream=None) -> str:
    """The rounded box where the output's encoding has its characters; ASCII where it has not
    (a latin-1 or ASCII terminal would otherwise get escapes where the lines should be)."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        BOX.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return ASCII_BOX
    return BOX


def width_and_color(stream=None) -> tuple[int, bool]:
    stream = stream or sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    width = None
    for variable in ("TERMINAL_WIDTH", "COLUMNS"):
        value = os.environ.get(variable, "")
        if value.isdigit() and int(value) > 0:
            width = int(value)
            break
    if width is None and tty:
        try:
            width = min(os.get_terminal_size(stream.fileno()).columns, MAX_TERMINAL_WIDTH)
        except (OSError, AttributeError, ValueError):
            width = None
    color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    return width or 80, color


def _paragraphs(help_text: str) -> tuple[str, list[str]]:
    """typer's reading: the first paragraph is one line; the others keep their line breaks."""
    text = inspect.cleandoc(help_text or "").partition("\f")[0]
    first, *rest = text.split("\n\n")
    if not first.startswith("\b"):
        first = first.replace("\n", " ")
    return first.strip().lstrip("\b").lstrip("\n"), rest


def _param_help(param, ctx) -> Styled:
    """An option's help as typer joins it, then its env var, default and [required]."""
    text = getattr(param, "help", None) or ""
    parts = []
    for paragraph in text.split("\n\n"):
        parts.append(paragraph.strip("\b\n") if paragraph.startswith("\b") else paragraph.replace("\n", " ").strip())
    line = _highlight(Styled.markup("\n".join(parts).strip()))
    extras: list[tuple[str, str]] = []
    envvar = getattr(param, "envvar", None)
    if envvar is None and getattr(param, "allow_from_autoenv", None) and getattr(ctx, "auto_envvar_prefix", None) and param.name:
        envvar = f"{ctx.auto_envvar_prefix}_{param.name.upper()}"
    if envvar and getattr(param, "show_envvar", None):
        extras.append((f"[env var: {envvar if isinstance(envvar, str) else ', '.join(map(str, envvar))}]", "dim yellow"))
    shown = _default_text(param, ctx)
    if shown:
        extras.append((f"[default: {shown}]", "dim"))
    if param.required:
        extras.append(("[required]", "dim red"))
    for extra, style in extras:
        sep = " " if line.text and not line.text.endswith("\n") else ""
        line += Styled(sep + extra, [(len(sep), len(sep) + len(extra), style)])
    return line


def _default_text(param, ctx) -> str:
    """What typer prints as ``[default: …]``, from click's public attributes: the text of
    ``show_default`` when it is one, else the default when shown (a callable is "(dynamic)"; a
    flag with an off switch names the switch it is; a flag alone that is off shows nothing)."""
    if isinstance(param.show_default, str):
        return param.show_default
    show = param.show_default if param.show_default is not None else ctx.show_default
    if not show:
        return ""
    default = param.default
    if callable(default):
        return "(dynamic)"
    if default is None or (isinstance(default, (list, tuple)) and not default):
        return ""
    if getattr(param, "is_bool_flag", False):
        if param.secondary_opts:
            return (param.opts if default else param.secondary_opts)[0].split("/")[0]
        return ""
    if isinstance(default, (list, tuple)):
        return ", ".join(str(item) for item in default)
    if hasattr(default, "value") and type(default).__module__ != "builtins":  # an Enum: its value
        return str(default.value)
    return str(default)


def _type_text(param) -> str:
    """A flag shows nothing; a value option its metavar (``N``, ``PATH``); an argument nothing
    (its name column shows it).  Never a Python type such as ``<list[Path]>``."""
    import click

    if isinstance(param, click.Argument) or getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    return (param.metavar or "VALUE") + ("..." if param.nargs != 1 else "")


def _range_text(param) -> str:
    """click's range note (``x>=1``, ``0<=x<=9``), from ``IntRange``/``FloatRange``'s public fields."""
    import click

    kind = param.type
    if not isinstance(kind, (click.IntRange, click.FloatRange)):
        return ""
    if getattr(param, "count", False) and kind.min == 0 and kind.max is None:
        return ""
    low, high = kind.min, kind.max
    if low is None and high is None:
        return ""
    if low is None:
        text = f"x{'<' if kind.max_open else '<='}{high}"
    elif high is None:
        text = f"x{'>' if kind.min_open else '>='}{low}"
    else:
        text = f"{low}{'<' if kind.min_open else '<='}x{'<' if kind.max_open else '<='}{high}"
    return text + (" clamped" if kind.clamp else "")


def _param_rows(params, ctx) -> list[tuple[Styled, Styled]]:
    """typer's columns: required mark, long names, short names, negative forms, metavar; then the help."""
    import click

    cells = []
    for param in params:
        display = None
        if isinstance(param, click.Argument):
            display = (param.metavar or param.name.upper()) + ("..." if param.metavar is None and param.nargs != 1 else "")
        kind = _type_text(param)
        span = _range_text(param)
        cells.append(("*" if param.required else "",
                      ",".join(o for o in param.opts if "--" in o),
                      ",".join(display or o for o in param.opts if "--" not in o),
                      ",".join(o for o in param.secondary_opts if "--" in o),
                      ",".join(o for o in param.secondary_opts if "--" not in o),
                      f"{kind} [{span}]".strip() if span else kind,
                      _param_help(param, ctx)))
    styles = ("red", "bold cyan", "bold green", "bold magenta", "bold red", "bold yellow")
    widths = [max(len(cell[i]) for cell in cells) for i in range(5)]
    rows = []
    for cell in cells:
        names = Styled()
        for value, style, width in zip(cell[:5], styles, widths):  # the aligned columns; an empty one takes no room
            if width:
                names += Styled(value + " " * (width - len(value) + 2), [(0, len(value), style)] if value else [])
        kind = cell[5]  # the metavar, last: not padded
        names += Styled(kind, [(0, len(kind), styles[5])] if kind else [])
        rows.append((names.slice(0, len(names.text.rstrip(" "))), cell[6]))
    return rows


def _usage_pieces(command, ctx) -> list[str]:
    """click's usage pieces, with ``...`` after an argument that takes many values (``[PATH]...``)
    however the metavar was given."""
    import click

    pieces = list(command.collect_usage_pieces(ctx))
    for param in command.get_params(ctx):
        if isinstance(param, click.Argument) and param.nargs != 1:
            for piece in param.get_usage_pieces(ctx):
                if not piece.endswith("...") and piece in pieces:
                    pieces[pieces.index(piece)] = piece + "..."
    return pieces


def render(command, ctx, width: int | None = None, color: bool | None = None, box: str | None = None) -> str:
    """The whole --help text of ``command`` (a typer command or group) in ``ctx``."""
    import click

    found_width, found_color = width_and_color()
    canvas = Canvas(width or found_width, found_color if color is None else color, box or box_for())
    canvas.add()
    usage = " ".join(["Usage:", ctx.command_path, *_usage_pieces(command, ctx)])  # text, never markup
    canvas.text([Styled(usage, [(0, 6, "yellow"), (7, len(usage), "bold")])])
    canvas.add()
    if command.help:
        first, rest = _paragraphs(command.help)
        lines = []
        if command.deprecated:
            lines.append(Styled("(deprecated)", [(0, 12, "red")]))
        lines.append(_highlight(Styled.markup(first)))
        if rest:
            lines.append(Styled())
            for line in "\n\n".join(rest).split("\n"):
                lines.append(_highlight(Styled.markup(line.rstrip(), "dim")))
        canvas.text(lines)
        canvas.add()
    arguments: dict[str, list] = {}
    options: dict[str, list] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, click.Argument):
            arguments.setdefault(getattr(param, "rich_help_panel", None) or "Arguments", []).append(param)
        elif isinstance(param, click.Option):
            options.setdefault(getattr(param, "rich_help_panel", None) or "Options", []).append(param)
        else:
            raise TypeError(f"a parameter click does not make: {param!r}")  # typer's own path draws it
    for panels, default in ((arguments, "Arguments"), (options, "Options")):
        for name in sorted(panels, key=lambda n: n != default):
            canvas.panel(name, _param_rows(panels[name], ctx))
    if isinstance(command, click.Group):
        groups: dict[str, list] = {}
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                groups.setdefault(getattr(sub, "rich_help_panel", None) or "Commands", []).append(sub)
        longest = max((len(sub.name or "") for subs in groups.values() for sub in subs), default=0)
        for name in sorted(groups, key=lambda n: n != "Commands"):
            rows = []
            for sub in groups[name]:
                first, _ = _paragraphs(sub.short_help or sub.help or "")
                text = Styled.markup(first)
                if sub.deprecated:
                    text = Styled("(deprecated) ", [(0, 12, "red")]) + text
                rows.append((Styled(sub.name or "", [(0, len(sub.name or ""), "dim" if sub.deprecated else "bold cyan")]), text))
            canvas.panel(name, rows, name_cap=longest)
    if command.epilog:
        canvas.add()
        canvas.text(Styled.markup(line) for line in command.epilog.split("\n"))
    return "\n".join(canvas.lines)


def _format_help(draw_with_typer):
    """A ``format_help`` drawing here; a command this module cannot draw goes typer's own way."""
    def format_help(self, ctx, formatter):
        try:
            text = render(self, ctx)
        except Exception:  # noqa: BLE001 - a parameter shape this module does not know: typer's rich help, never none
            return draw_with_typer(self, ctx, formatter)
        formatter.write(text + "\n")

    return format_help


def command_classes():
    """typer's command and group classes with ``format_help`` drawn here (public subclassing,
    passed as ``cls=``: no typer internals are replaced)."""
    from typer.core import TyperCommand, TyperGroup

    class Command(TyperCommand):
        format_help = _format_help(TyperCommand.format_help)

    class Group(TyperGroup):
        format_help = _format_help(TyperGroup.format_help)

    return Command, Group
