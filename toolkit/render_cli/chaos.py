"""``levelsess chaos run``: the live table while it runs, the final table, violations and verdict."""

from __future__ import annotations

import contextlib
import sys

from ..report import Output

#: The table's rows: label, key of the report's JSON document (a key absent from it is left out).
ROWS = (("cycles", "cycles"), ("kills", "kills"), ("ACKed records", "acked"), ("lost", "lost"),
        ("records torn mid-write", "torn_records"), ("bytes trimmed by repair", "trimmed_bytes"),
        ("bytes LazyFS discarded (power cuts)", "discarded_bytes"), ("cycles that discarded bytes", "dropped_cycles"),
        ("cycles that filled LazyFS's cache", "cache_full"),
        ("false corruption", "false_corruption"), ("cycles per minute", "cycles_per_minute"))


def render_chaos(out: Output, report, document: dict, reproducers) -> None:
    """The counts, each violation (20 unless -v), where the reproducers are, and the verdict."""
    out.out.print(chaos_table(document))
    for violation in report.violations[:20 if not out.verbose else None]:
        out.line([("violation", "bold red"), (f" cycle {violation['cycle']}: {violation['kind']} "
                                             f"{violation['path'] or ''} - {violation['detail']}", None)])
    if report.violations and reproducers:
        out.say(f"reproducers in {reproducers} (each has repro.json with the seed and the replay command)")
    out.say(("nothing lost, no violation" if report.ok else f"{report.lost} ACKed record(s) lost, {len(report.violations)} violation(s)")
            + f"  [exit {report.exit_code}]", style="green" if report.ok else "bold red")


@contextlib.contextmanager
def live_chaos(out: Output):
    """Yield an on_cycle(report) callback that redraws the table on stderr (a terminal only)."""
    if out.json or out.quiet or not sys.stderr.isatty():
        yield lambda report: None
        return
    from rich.live import Live

    with Live(console=out.err, transient=True, refresh_per_second=4) as live:
        yield lambda report: live.update(chaos_table({**report.to_json(), "exit": report.exit_code}))


def chaos_table(document: dict):
    from rich.table import Table

    on = " on lazyfs" if document.get("fs") == "lazyfs" else ""
    table = Table(title=f"chaos {document['mode']}{on} (seed {document['seed']})", title_justify="left", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, key in ROWS:
        if key in document:
            table.add_row(label, f"{document[key]:,}" if isinstance(document[key], int) else str(document[key]))
    for kind, counts in document.get("landings", {}).items():
        table.add_row(f"{kind}: torn / unterminated / between records",
                      " / ".join(f"{counts.get(where, 0):,}" for where in ("torn", "unterminated", "between")))
    if str(document["mode"]).startswith("target:"):
        table.add_row("kills mid-run", str(document.get("mid_run_kills", 0)))
    table.add_row("violations", str(len(document["violations"])), style="bold red" if document["violations"] else "green")
    return table
