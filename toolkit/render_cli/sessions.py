"""``levelsess ls`` and ``levelsess locks``: a table (or cards on a narrow terminal) and a count."""

from __future__ import annotations

from ..report import Output, add_column, fit_column, mb, print_table, printable

STATE_STYLE = {"clean": "green", "torn": "yellow", "corrupt": "bold red", "locked": "cyan", "unreadable": "bold red"}
LOCK_STYLE = {"live": "green", "stale": "yellow", "unknown": "cyan"}


def render_ls(out: Output, listing) -> None:
    """The sessions ``ls`` shows, then how many there are (and how many could not be read)."""
    if listing.missing is not None:
        out.say(f"no sessions yet (no store at {listing.missing})")
        return
    shown = listing.shown
    if shown:
        table = _sessions_table(listing, shown)
        fit_column(table, "project", out.out, give_way={"title": 30})  # a long path is cut in the middle to keep the table; --json has it whole
        print_table(out.out, table)
    total, unreadable = len(listing.rows), listing.unreadable
    more = f" (showing {len(shown)}; --limit 0 for all)" if len(shown) < total else ""
    out.say(f"{total} session(s){more}" + (f"; {unreadable} could not be read (state unreadable)" if unreadable else ""))
    if listing.copies:  # an older import stored these ids twice: one session each, listed once
        out.say(f"note: {len(listing.copies)} session(s) are also held by an older import's copy (listed once, by the "
                "most recently active journal; --json names the copies under \"copies\")")


def _sessions_table(listing, shown):
    from rich.table import Table
    from rich.text import Text

    from ..sessions import relative_time

    table = Table(title_justify="left", show_edge=False)
    for column in ("title", "project", "updated", "turns", "model", "size", "state", "id"):
        add_column(table, column, no_wrap=True if column in ("updated", "size") else None)
    for row in shown:
        title = row.title if isinstance(row.title, str) and row.title else "(untitled)"
        if row.path in listing.hits:
            title += f"\n  … {listing.hits[row.path]}"
        table.add_row(printable(title), printable(row.project or "-"), relative_time(row.updated_at),
                      "-" if row.turns is None else str(row.turns), printable(row.model or "-"),
                      mb(row.bytes), Text(row.state, style=STATE_STYLE.get(row.state, "")), row.id)
    return table


def render_locks(out: Output, report) -> None:
    """The locks as a table, then how many were removed and how many stale ones are left."""
    rows = report.rows
    if rows:
        print_table(out.out, _locks_table(rows))
    stale = sum(r["state"] == "stale" and not r["removed"] for r in rows)
    out.say(f"{len(rows)} lock(s), {len(report.removed)} removed" + (f"; {stale} stale: `levelsess locks --break-stale` removes them" if stale else ""))


def _locks_table(rows: list[dict]):
    from rich.table import Table
    from rich.text import Text

    table = Table(title_justify="left", show_edge=False)
    for column in ("session", "pid", "host", "age", "state", "why"):
        add_column(table, column)
    for row in rows:
        state = row["state"] + (" (removed)" if row["removed"] else "")
        table.add_row(row["session"], str(row["pid"] or "-"), str(row["host"] or "-"), f"{row['age']:.0f}s",
                      Text(state, style=LOCK_STYLE.get(row["state"], "")), row["why"])
    return table
