"""Recover VS Code chat sessions, orphaned ones included (SOURCES.md §3, §4).

Finds every user-data root (Code, Code - Insiders, Code - OSS, VSCodium, portable,
``$VSCODE_APPDATA``), reads every store (``workspaceStorage/<id>/chatSessions``,
``emptyWindowChatSessions``, ``no-workspace``, ``transferredChatSessions`` and the legacy
``interactive.sessions`` key), replays ``.jsonl`` mutation logs tolerantly, classifies each
session (live / orphaned / unknown) and converts it to LevelCode v2 records.  Never writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from ...findings import Finding
from ..output import Session
from .scan import APP, Options, scan_stores
from .sources import default_user_dirs, detect, resolve

__all__ = ["APP", "Options", "default_user_dirs", "detect", "resolve", "scan", "source_files"]


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every VS Code session under ``source`` as a converted :class:`Session`."""
    yield from scan_stores(resolve(source), options, report)


def source_files(source: Path) -> list[Path]:
    """The files an import of ``source`` reads (to prove they were not written)."""
    files = []
    for store in resolve(source):
        if store.db is not None:
            files.append(store.db)
        if store.files is not None:
            files += store.files
        elif store.folder.is_dir():
            files += sorted(p for p in store.folder.iterdir() if p.suffix in (".json", ".jsonl"))
    return files
