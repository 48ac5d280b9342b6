"""Render results for people (rich) and for scripts (one JSON document on stdout)."""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections import Counter

from typing import TYPE_CHECKING

from .findings import Finding
from .streams import ESCAPED, tolerant_streams  # noqa: F401 - re-exported
from .encode import dumps

if TYPE_CHECKING:  # rich is imported where a table or a coloured line is drawn: a check whose
    # output is a line or a JSON document never loads it (a fifth of a command's start-up)
    from collections.abc import Callable

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow"}


class Output:
    """Where and how to render: human (rich) or json; quiet drops everything but errors.  (A plain
    class, as :class:`AlikeGroup`: making a dataclass is a millisecond of every command's start-up.)"""

    def __init__(self, json: bool = False, quiet: bool = False, verbose: bool = False, base: str | None = None,
                 targets: list | None = None) -> None:
        self.json, self.quiet, self.verbose, self.base = json, quiet, verbose, base
        self.targets: list = targets if targets is not None else []  # the PATHs as given, for the commands a "next:" line names
        self._out: Console | None = None
        self._err: Console | None = None

    @property
    def out(self) -> Console:
        """The rich console on stdout (made when first needed: a table, a coloured line).  No
        markup and no emoji codes: text levelsess prints (a path, a title, a message) is printed
        as written; styles are given as styles."""
        if self._out is None:
            from rich.console import Console

            self._out = Console(file=sys.stdout, highlight=False, soft_wrap=False, markup=False, emoji=False)
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            from rich.console import Console

            self._err = Console(file=sys.stderr, highlight=False, stderr=True, markup=False, emoji=False)
        return self._err

    def emit_json(self, document: dict) -> None:
        write_json(dumps(document, indent=True) + b"\n")  # lone surrogates become \u escapes

    def say(self, message: str, style: str | None = None) -> None:
        """A message for a person: stderr, never in --json mode or --quiet.  Plain text: a ``[...]``
        in it (``[exit 0]``, a path) is printed as written, never read as rich markup."""
        if not self.json and not self.quiet:
            self.line([(message, style)], stderr=True)

    def fail(self, message: str, hint: str = "") -> None:
        """One red line (plus a hint) on stderr, in every mode."""
        self.line([("error: ", "bold red"), (message, None)], stderr=True)
        if hint:
            self.line([("hint: ", "cyan"), (hint, None)], stderr=True)

    def line(self, parts: list[tuple[str, str | None]], *, stderr: bool = False) -> None:
        """One line of text made of (text, style) parts, never wrapped: styled on a terminal;
        elsewhere (a pipe, a file, a test) the text as is, without loading rich."""
        stream = sys.stderr if stderr else sys.stdout
        if stderr:  # what went to stdout before this line is shown before it (a pipe buffers it)
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
        if _plain_stream(stream):
            stream.write("".join(printable(text) for text, _style in parts) + "\n")
            stream.flush()
            return
        from rich.text import Text

        text = Text()
        for part, style in parts:
            text.append(printable(part), style=style or "")
        (self.err if stderr else self.out).print(text, soft_wrap=True)


def _plain_stream(stream) -> bool:
    """True when rich would print no colour to ``stream`` (not a terminal, no FORCE_COLOR)."""
    if any(os.environ.get(name) for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError, OSError):
        return True


def _is_utf8(stream) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "utf-8"
    except LookupError:
        return False


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _json_escape(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # astral: a surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def ascii_json(text: str) -> str:
    """``text`` (serialised JSON) with every non-ASCII character as a ``\\uXXXX`` escape.

    Outside strings JSON is ASCII, so this only rewrites string contents: the document
    parses to the same value."""
    return _NON_ASCII.sub(_json_escape, text)


def write_json(data: bytes) -> None:
    """Write serialised JSON (UTF-8 bytes) to stdout: as is when stdout is UTF-8, else as ASCII
    with ``\\u`` escapes, so it stays valid JSON with the same value whatever the encoding."""
    text = data.decode("utf-8")
    sys.stdout.write(text if _is_utf8(sys.stdout) else ascii_json(text))
    sys.stdout.flush()


def printable(text: object) -> str:
    """Text safe to print: a lone surrogate (a cut emoji, kept by the importers) is shown as its
    ``\\udXXX`` escape, and a byte of a file name that is not UTF-8 as ``\\xNN``
    (:func:`toolkit.streams.escape`), instead of stopping the output with an encoding error."""
    text = str(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", ESCAPED).decode("utf-8")
    return text


def relative(text: str, base: str | None) -> str:
    """Drop ``base/`` wherever it appears in ``text`` (paths in tables and step lines)."""
    return text.replace(base.rstrip("/") + "/", "") if base else text


def _where(finding: Finding, base: str | None = None) -> str:
    where = relative(finding.path, base)
    if finding.line is not None:
        where += f":{finding.line}"
    if finding.offset is not None:
        where += f" @{finding.offset}"
    return where


def true_base(base: str | None, paths) -> str | None:
    """``base`` when every path lies under it (so "paths relative to BASE" is true), else None.

    A symlinked target, several trees whose only common folder is ``/``, or a path reported
    outside the targets all get full paths and no caption."""
    if not base or os.path.dirname(base) == base:  # the filesystem root: nothing to shorten
        return None
    prefix = base.rstrip(os.sep) + os.sep
    return base if all(str(p).startswith(prefix) for p in paths) else None


#: Columns that hold a path or an id: never broken mid-name (a person copies them into the next command).
NAME_COLUMNS = frozenset({"where", "saved to", "file", "session", "id", "project", "folder", "workspace"})
WORD_COLUMNS = frozenset({"severity", "code", "state", "status", "repaired"})


def findings_table(findings: list[Finding], title: str | None = None, verbose: bool = False, base: str | None = None) -> Table:
    """A table of findings; paths are shown relative to ``base`` (named in the caption) when
    every finding lies under it, else in full.  Where a repair put the bytes it removed or
    replaced is its own column."""
    base = true_base(base, [f.path for f in findings] + [f.saved_to for f in findings if f.saved_to])
    caption = f"paths relative to {base}" if base else None
    table = name_table(title=title, caption=caption)
    for column in ("severity", "code", "where", "what"):
        add_column(table, column, style="bold" if column == "code" else None)
    any_repaired = any(f.repaired for f in findings)
    any_saved = any(f.saved_to for f in findings)
    if any_repaired:
        add_column(table, "repaired")
    if any_saved:
        add_column(table, "saved to")
    from rich.text import Text

    for f in findings:
        what = f.message + (f"\n  {f.excerpt!r}" if verbose and f.excerpt else "")
        row = [Text(f.severity, style=SEVERITY_STYLE.get(f.severity, "")), f.code, _where(f, base), what]
        if any_repaired:
            row.append(Text("yes", style="green") if f.repaired else "")
        if any_saved:
            row.append(relative(f.saved_to, base) if f.saved_to else "")
        table.add_row(*row)
    return table


class AlikeGroup:
    """Warnings with the same code and message (N empty transcripts): one line with a count."""

    __slots__ = ("severity", "code", "message", "paths")

    def __init__(self, severity: str, code: str, message: str, paths: list) -> None:
        self.severity, self.code, self.message, self.paths = severity, code, message, paths

    @property
    def where(self) -> str:
        folders = {os.path.dirname(p.split("#")[0]) for p in self.paths}
        return f"{len(self.paths)} files in {folders.pop()}" if len(folders) == 1 else f"{len(self.paths)} files, first {self.paths[0]}"


def alike_groups(findings: list[Finding], verbose: bool = False, least: int = 3) -> tuple[list[Finding], list[AlikeGroup]]:
    """Split ``findings`` into those shown one by one and groups of ``least`` or more alike
    warnings (same code and message), each shown as one line.  Errors, and everything with -v,
    are shown one by one."""
    if verbose:
        return list(findings), []
    single, groups = grouped_warnings(findings, lambda f: (f.code, f.message), least)
    return single, [AlikeGroup("warning", code, message, [f.path for f in members]) for (code, message), members in groups]


def grouped_warnings(findings: list[Finding], key: Callable[[Finding], object],
                     least: int) -> tuple[list[Finding], list[tuple[object, list[Finding]]]]:
    """Split ``findings`` into those shown one by one and, as ``(key, them)`` in the order first
    met, the warnings of each ``key`` that ``least`` or more of them share; errors are never grouped."""
    by_key: dict[object, list[Finding]] = {}
    for f in findings:
        if f.severity == "warning":
            by_key.setdefault(key(f), []).append(f)
    grouped = {k for k, members in by_key.items() if len(members) >= least}
    return ([f for f in findings if f.severity != "warning" or key(f) not in grouped],
            [(k, members) for k, members in by_key.items() if k in grouped])


def name_table(**options) -> Table:
    from rich.table import Table

    return Table(show_lines=False, expand=False, title_justify="left", **options)


def add_column(table: Table, name: str, **options) -> None:
    """Add a column; a path or id column (:data:`NAME_COLUMNS`) never wraps."""
    options = {k: v for k, v in options.items() if v is not None}
    if name in NAME_COLUMNS:
        options.update(no_wrap=True, overflow="ignore")
    elif name in WORD_COLUMNS:  # a finding code or a state is one word: never split
        options.update(no_wrap=True)
    else:
        options.setdefault("overflow", "fold")
    table.add_column(name, **options)


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` if its path and id columns fit the terminal whole; else one block per row,
    each path or id on a line of its own that is never wrapped (copyable at any width)."""
    from rich.text import Text

    if _needed_width(table) <= console.width or not any(c.header in NAME_COLUMNS for c in table.columns):
        console.print(table)
        return
    if table.title:
        console.print(Text(str(table.title), style="bold"), soft_wrap=True)
    cells = [list(column.cells) for column in table.columns]
    headers = [c.header for c in table.columns]
    # a card is headed by what names its row: a title and an id when the table has them (an import's
    # session), else its first two short cells (a finding's severity and code)
    named = [headers.index(h) for h in ("title",) if h in headers] + [i for i, h in enumerate(headers) if h in ("id", "session")][:1]
    heading = named if len(named) == 2 else [i for i, h in enumerate(headers) if h not in NAME_COLUMNS][:2]
    for row in range(table.row_count):
        head = [_counted(_plain(cells[i][row]), headers[i]) for i in heading]
        console.print(Text(bullet(console) + " ") + Text("  ").join(t for t in head if t.plain), soft_wrap=True)
        for i, column in enumerate(table.columns):
            value = _plain(cells[i][row])
            if value.plain and i not in heading and (column.header in NAME_COLUMNS or i >= 2 or heading == named):
                console.print(Text(f"  {column.header}: ", style="dim") + value, soft_wrap=True)
    if table.caption:
        console.print(Text(str(table.caption), style="dim"), soft_wrap=True)


def _counted(value, header: object):
    """A card heading's cell: a bare count says what it counts (``2,000 bytes``, not ``2,000``; ``1 session``)."""
    plain = value.plain
    if plain and plain.replace(",", "").replace(".", "").isdigit() and isinstance(header, str):
        value = value.copy()
        one = plain == "1" and header.endswith("s") and " " not in header and "(" not in header
        value.append(f" {header[:-1] if one else header}")
    return value


def bullet(console: Console) -> str:
    """``•`` where the output encoding holds it (UTF-8), else ``*``: a latin-1 or ASCII terminal
    (``LANG=C``, a Windows code page) never gets an escape like ``\\u2022`` for a bullet."""
    return "\u2022" if is_utf8_encoding(getattr(console, "encoding", None) or getattr(console.file, "encoding", None)) else "*"


def ellipsis(console: Console) -> str:
    """``…`` where the output encoding holds it, else ``...`` (see :func:`bullet`)."""
    return "\u2026" if is_utf8_encoding(getattr(console, "encoding", None) or getattr(console.file, "encoding", None)) else "..."


def middle(text: str, width: int, dots: str = "\u2026") -> str:
    """``text`` at most ``width`` characters, cut in the middle: a path keeps its root and, longer,
    its last folders (``/home/ada/…/code/thin.ly``)."""
    if len(text) <= width:
        return text
    keep = max(width - len(dots), 2)
    head = keep // 3
    return text[:head] + dots + text[len(text) - (keep - head):]


def fit_column(table: Table, name: str, console: Console, least: int = 20, give_way: dict[str, int] | None = None) -> None:
    """Cut the cells of column ``name`` in the middle so the table fits the console, when that is
    all it takes (the column gets at least ``least`` characters); otherwise leave them whole, and
    :func:`print_table` prints one card per row with each value on its own line.  ``give_way``
    names columns that keep up to that many characters before this one gets more (a title stays
    readable rather than folded into a narrow column).  Terminal only: ``--json`` never goes
    through a table."""
    column = next((c for c in table.columns if c.header == name), None)
    cells = list(column.cells) if column is not None else []
    if not cells:
        return
    longest = max(len(_plain(cell).plain) for cell in cells + [name])
    room = console.width - (_needed_width(table) - longest)
    for other in table.columns:  # _needed_width counts a wrapping column as 12 characters at most
        if other.header in (give_way or {}) and other.cells:
            room -= max(0, min(max(len(_plain(c).plain) for c in other.cells), give_way[other.header]) - 12)
    if room >= longest or room < least:
        return
    dots = ellipsis(console)
    column._cells[:] = [middle(_plain(cell).plain, room, dots) for cell in cells]


def is_utf8_encoding(name: str | None) -> bool:
    try:
        return codecs.lookup(name or "ascii").name == "utf-8"
    except LookupError:
        return False


def _needed_width(table: Table) -> int:
    """The narrowest the table can be with every path and id whole: their longest line, plus a
    few characters for each other column, plus borders and padding."""
    width = 1
    for column in table.columns:
        lines = [line for cell in column.cells for line in _plain(cell).plain.splitlines()] + [str(column.header)]
        longest = max(map(len, lines))
        width += (longest if column.header in NAME_COLUMNS or column.no_wrap else min(longest, 12)) + 3
    return width


def _plain(cell: object) -> Text:
    from rich.text import Text

    return cell.copy() if isinstance(cell, Text) else Text(str(cell))


def mb(size: int) -> str:
    """A size for a table cell: bytes below 100 kB, else MB with one decimal."""
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size:,} B"


def common_base(paths: list) -> str | None:
    """The folder that all target paths share (for shorter, readable tables)."""
    folders = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths]
    try:
        return os.path.commonpath(folders) if folders else None
    except ValueError:
        return None


def summary_line(findings: list[Finding], files: int, records: int, size: int, exit_code: int) -> list[tuple[str, str | None]]:
    """fsck's last line, as (text, style) parts for :meth:`Output.line`."""
    counts = Counter(f.severity for f in findings if not f.repaired)
    repaired = sum(1 for f in findings if f.repaired)
    parts = [(f"{files} journal(s), {records} records, {size:,} bytes: ", None),
             (f"{counts['error']} error(s)", "bold red" if counts["error"] else "green"),
             (f", {counts['warning']} warning(s)", "yellow" if counts["warning"] else None)]
    if repaired:
        parts.append((f", {repaired} repaired", "green"))
    parts.append((f"  [exit {exit_code}]", None))
    return parts


def fsck_json(findings: list[Finding], files: int, records: int, size: int, exit_code: int, plan: list[str] | None = None) -> dict:
    doc = {
        "version": 1,
        "files": files,
        "records": records,
        "bytes": size,
        "findings": [f.to_json() for f in findings],
        "exit": exit_code,
    }
    if plan is not None:
        doc["plan"] = plan
    return doc


TABLE_ROWS = 20
STATUS_STYLE = {"migrated": "green", "rebuilt": "green", "migrate": "cyan", "rebuild": "cyan", "refused": "bold red",
                "pending": "yellow", "skipped": "dim", "up-to-date": "dim"}


def migrate_table(result, base: str | None = None, steps: list | None = None, everything: bool = False) -> Table:
    """Files of a migration: what each was, is or would be (up-to-date ones only when ``everything``)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"migrate to v{result.to}" + (" (dry run)" if result.dry_run and steps is None else ""), title_justify="left")
    for column in ("file", "format", "from", "to", "status", "note"):
        add_column(table, column)
    rows = [s for s in result.files if everything or s.status not in ("up-to-date", "skipped")]
    base = true_base(base, [s.path for s in rows])
    if not everything and len(rows) > TABLE_ROWS:  # refusals first, then as many others as fit
        rows.sort(key=lambda s: s.status != "refused")
        table.caption = f"… and {len(rows) - TABLE_ROWS} more; -v lists every file"
        rows = rows[:TABLE_ROWS]
    for state in rows:
        label = {"migrate": "would migrate", "rebuild": "would rebuild"}.get(state.status, state.status) if result.dry_run else state.status
        table.add_row(relative(str(state.path), base), state.format, _v(state.from_v), _v(state.to_v),
                      Text(label, style=STATUS_STYLE.get(state.status, "")), state.note)
    if steps:
        table.caption = (table.caption + "\n" if table.caption else "") + "steps: " + "; ".join(f"{s.format} v{s.from_v}->v{s.to_v}: {s.summary}" for s in steps)
    return table


def _v(version) -> str:
    return "-" if version is None else f"v{version}"


# -- restore ---------------------------------------------------------------------------------------

_RESTORE_ACTIONS = {"create": ("create", "created", "cyan"), "append": ("append", "appended", "cyan"),
                    "nothing": ("as kept: nothing to do", "as kept: nothing to do", "green"), "refused": ("refused", "refused", "bold red")}


def restore_table(result) -> Table:
    """Every file a restore plan names: what it does to it (or did), bytes and lines written."""
    from rich.table import Table
    from rich.text import Text

    title = "restore" if result.applied else "restore plan (nothing written; --yes applies it)"
    table = Table(title=title, title_justify="left")
    for column in ("session", "file", "action", "bytes", "lines"):
        add_column(table, column)
    for session in result.plan.sessions:
        for step in session.files:
            plan, done, style = _RESTORE_ACTIONS[step.action]
            verb = done if result.applied and step.path in result.written else plan
            if step.action == "append":
                verb += f" (keeps its {step.existing:,} bytes)"
            elif step.note:
                verb += f" ({step.note})"
            table.add_row(session.id, str(step.path), Text(verb, style=style), f"{step.added:,}" if step.writes else "",
                          f"{step.lines:,}" if step.writes else "")
    return table


def restore_summary(result) -> str:
    """One line: how many files were (or would be) created and appended, refused, and the exit."""
    files = [f for s in result.plan.sessions for f in s.files]
    count = {a: sum(f.action == a for f in files) for a in ("create", "append", "nothing", "refused")}
    if result.undone:
        lead = "restore undone: a written file did not read back as the kept source"
    elif result.applied:
        lead = f"{len(result.written)} file(s) written"
    else:
        lead = f"would create {count['create']} file(s) and append to {count['append']}"
    return (f"{lead}; {count['nothing']} already as kept, {count['refused']} refused, in {len(result.plan.sessions)} "
            f"session(s)  [exit {result.exit_code}]")


def undo_table(result) -> Table:
    from rich.table import Table

    table = Table(title=f"undo of restore {result.stamp}" + (" (dry run)" if result.dry_run else ""), title_justify="left")
    for column in ("file", "action"):
        add_column(table, column)
    for entry in result.entries:
        table.add_row(entry["path"], entry["action"])
    return table


def restore_runs_table(runs: list[dict]) -> Table:
    from rich.table import Table

    table = Table(title="restores on this machine", title_justify="left")
    for column in ("stamp", "state", "sessions", "created", "changed"):
        add_column(table, column, no_wrap=column == "stamp" or None)
    for run in runs:
        table.add_row(run["stamp"], str(run["state"]), ", ".join(map(str, run["sessions"])), str(run["created"]), str(run["changed"]))
    return table
