"""``levelsess doctor``: one table of stores and installs, the orphaned VS Code chats, the next commands."""

from __future__ import annotations

from ..report import Output, add_column, mb, print_table

STORE_KINDS = {"levelcode": "LevelCode store", "logician": "Logician workspace", "claude-code": "Claude Code projects", "codex": "Codex CLI rollouts", "gemini": "Gemini CLI sessions"}
APP_NAMES = {"cursor": "Cursor", "vscode": "VS Code", "claude-code": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI",
             "copilot": "Copilot CLI", "opencode": "OpenCode / Kilo CLI", "cline": "Cline / Roo / Kilo Code"}
#: Store rows that check a tool's own files: their count is files read, not sessions an import writes.
TOOL_TREES = frozenset({"claude-code", "codex", "gemini"})


def render_doctor(out: Output, result) -> None:
    """Print the health table (or say nothing was found), VS Code's orphaned chats and the next commands."""
    table = _health_table(result)
    if table.row_count:
        print_table(out.out, table)
    else:
        out.say("found no store, Logician workspace, Claude Code, Cursor or VS Code install")
    for install in result.installs:
        if install.app == "vscode" and install.orphaned:
            print_table(out.out, _orphans_table(install))
    if result.next:
        out.out.print()
        out.line([("next", "bold")])
        for step in result.next:  # never hard-wrapped: a command copied from a narrow terminal still runs
            out.line([(f"  {step}", None)])


def _health_table(result):
    from rich.table import Table
    from rich.text import Text

    table = Table(title="levelsess doctor", title_justify="left")
    for column in ("what", "where", "sessions", "size", "errors", "warnings", "locks (stale)", "notes"):
        add_column(table, column)
    for health in result.stores:
        table.add_row(STORE_KINDS.get(health.kind, health.kind), str(health.path),
                      f"{health.sessions} files" if health.kind in TOOL_TREES else str(health.sessions),
                      mb(health.bytes), Text(str(health.errors), style="bold red" if health.errors else ""),
                      str(health.warnings), f"{health.locks} ({health.stale_locks})" if health.locks else "0", "")
    for install in result.installs:  # (what the store keeps of it: a column of its own, never read as its warnings)
        note = _install_note(install)
        table.add_row(APP_NAMES.get(install.app, install.app), str(install.user),
                      install.count.describe() if install.count else str(install.sessions),
                      mb(install.db_bytes) if install.db_bytes else "-", "", "", "", Text(note, style="yellow" if note else ""))
    return table


def _install_note(install) -> str:
    """The install's last column: orphans, Claude Code's cleanup, what the store keeps."""
    orphans = sum(w.orphaned_sessions for w in install.orphaned)
    note = f"{orphans} orphaned" if install.app == "vscode" and orphans else ""
    if install.app == "claude-code":
        note = (f"{install.in_store} in the store; " if install.count is not None else "") + (
            f"cleanup after {install.cleanup_days} d: {install.due} due, {install.kept} of them in the store" if install.due
            else f"cleanup after {install.cleanup_days} d") + (f"; {len(install.gone)} kept, gone here" if install.gone else "")
    if install.app == "codex":
        note = f"{install.in_store} in the store"
        if install.parity and (install.parity["without_row"] or install.parity["empty_first_message"]):
            note += f"; {install.parity['without_row']} with no DB row, {install.parity['empty_first_message']} hidden (empty first message)"
    if install.app == "gemini" and install.due:
        note = f"its next start deletes {install.due}, {install.kept} of them in the store"
    if install.app in ("gemini", "copilot", "opencode", "cursor", "vscode", "cline") and install.sessions:
        note = "; ".join(filter(None, [f"{install.in_store} in the store", note,
                                       f"{install.listed} in its own list" if install.listed is not None else ""]))
    if install.app in ("codex", "gemini") and install.gone:
        note += f"; {len(install.gone)} kept, gone here"
    if install.count and install.count.problem:
        note = install.count.problem
    return note


def _orphans_table(install):
    from rich.table import Table

    orphans = Table(title=f"VS Code chats it no longer shows ({install.user})", title_justify="left")
    for column in ("workspace", "folder", "why", "chats"):
        add_column(orphans, column)
    for workspace in install.orphaned:
        why = ", ".join(workspace.reasons) or ("index-corrupt" if workspace.index == "corrupt" else "not-indexed")
        orphans.add_row(workspace.id, workspace.project or "(no folder)", why, str(workspace.orphaned_sessions))
    return orphans
