"""The layouts levelsess knows, in the order discovery tries them (the plug-in registry).

Each layout is one module implementing :class:`~toolkit.layouts.base.Layout`.  A new layout is
a new module here plus its tests; fsck, repair, the reader and the CLI ask the layout.
"""

from __future__ import annotations

from .base import BaseLayout, Folder, Layout
from .registry import NAMES, get
from .claude_code import CLAUDE_CODE
from .codex import CODEX
from .gemini import GEMINI
from .levelcode import LEVELCODE
from .logician import LOGICIAN

#: Discovery order: the first layout that claims a PATH gets it (LevelCode, the broadest, last).
#: Codex claims only folders whose ``rollout-*.jsonl`` files open with a Codex record (or a
#: ``.codex`` home), so it cannot take what the others claim; it goes before LevelCode, which
#: would otherwise take a folder of rollouts and call every file foreign.
#: Gemini claims only a Gemini folder (``tmp/`` beside ``projects.json``, or named ``.gemini``) and its
#: ``chats/`` folders whose sessions open with a Gemini line.
ALL: tuple[BaseLayout, ...] = (LOGICIAN, CLAUDE_CODE, CODEX, GEMINI, LEVELCODE)
assert [layout.name for layout in ALL] == list(NAMES), "toolkit.layouts.registry.NAMES lists them in this order"


__all__ = ["ALL", "CLAUDE_CODE", "CODEX", "GEMINI", "LEVELCODE", "LOGICIAN", "BaseLayout", "Folder", "Layout", "get"]
