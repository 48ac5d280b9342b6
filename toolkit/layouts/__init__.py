"""The layouts levelsess knows, in the order discovery tries them (the plug-in registry).

Each layout is one module implementing :class:`~toolkit.layouts.base.Layout`.  A new layout is
a new module here plus its tests; fsck, repair, the reader and the CLI ask the layout.
"""

from __future__ import annotations

from .base import BaseLayout, Folder, Layout
from .registry import NAMES, every, get

#: The singletons by the names they are imported as, each loaded when first asked for (an import
#: that reads Claude Code transcripts never loads the Codex or Gemini layouts: issue 27's start-up).
_SINGLETONS = {"LOGICIAN": "logician", "CLAUDE_CODE": "claude-code", "CODEX": "codex", "GEMINI": "gemini",
               "LEVELCODE": "levelcode"}


def __getattr__(name: str):
    """``ALL`` (discovery order: the first layout that claims a PATH gets it, LevelCode, the
    broadest, last; :data:`~toolkit.layouts.registry.NAMES` lists them in that order) and the
    singletons, loaded on first use."""
    if name == "ALL":
        return every()
    if name in _SINGLETONS:
        return get(_SINGLETONS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ALL", "CLAUDE_CODE", "CODEX", "GEMINI", "LEVELCODE", "LOGICIAN", "BaseLayout", "Folder", "Layout", "get"]
