"""The names Gemini CLI gives its folders and session files (SOURCES-MORE.md §1.1, §1.2), on their
own: listing a Gemini folder needs these and not the layout in :mod:`toolkit.layouts.gemini` (an
import that finds nothing new lists, at most, and reads nothing: issue 27)."""

from __future__ import annotations

import os
import re
from pathlib import Path

TMP = "tmp"
CHATS = "chats"
_SESSION = re.compile(r"^session-.*\.jsonl$")


def default_roots() -> list[Path]:
    """Every Gemini CLI folder this machine may have: ``$GEMINI_CLI_HOME/.gemini`` (Gemini's own
    ``homedir()``), ``~/.gemini`` and ``%USERPROFILE%\\.gemini``."""
    roots = []
    if os.environ.get("GEMINI_CLI_HOME"):
        roots.append(Path(os.environ["GEMINI_CLI_HOME"]).expanduser() / ".gemini")
    roots.append(Path.home() / ".gemini")
    if os.environ.get("USERPROFILE"):
        roots.append(Path(os.environ["USERPROFILE"]) / ".gemini")
    return list(dict.fromkeys(roots))


def is_session_name(name: str) -> bool:
    return bool(_SESSION.match(name))
