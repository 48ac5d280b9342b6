"""The names the Codex CLI gives its homes, folders and rollouts (SOURCES-AGENTS.md §2), on their
own: listing a home needs these and not the reader of rollouts in :mod:`toolkit.layouts.codex`
(an import that finds nothing new lists, at most, and reads nothing: issue 27)."""

from __future__ import annotations

import re
from pathlib import Path

from .base import home_roots

SESSIONS = "sessions"
ARCHIVED = "archived_sessions"
_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")


def default_roots() -> list[Path]:
    """Every Codex home this machine may have: $CODEX_HOME, ~/.codex, and ``%USERPROFILE%\\.codex``."""
    return list(dict.fromkeys(home_roots("CODEX_HOME", ".codex")))


def is_rollout_name(name: str) -> bool:
    return name.startswith("rollout-") and name.endswith(".jsonl")


def thread_id(path: Path) -> str | None:
    """The thread id a rollout's file name ends with, or None."""
    match = _UUID.search(path.name)
    return match.group(1) if match else None


def home_of(folder: Path) -> Path:
    """The Codex home a folder of rollouts belongs to (what its saved bytes are filed under)."""
    for parent in (folder, *folder.parents):
        if parent.name in (SESSIONS, ARCHIVED):
            return parent.parent
    return folder
