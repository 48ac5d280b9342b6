"""The registry of layout names: which module holds each layout, in discovery order.

It sits below every layout and below the reader: :mod:`toolkit.journal`, :mod:`toolkit.render`
and a pickled layout (:meth:`BaseLayout.__reduce__`) turn a name into its layout here, and the
layout's module is imported only then, so nothing below the layouts imports one of them.  A new
layout is one line in :data:`NAMES` (and its module).
"""

from __future__ import annotations

import importlib

#: name -> "module:attribute" of the layout's singleton, in discovery order: the first layout
#: that claims a PATH gets it (LevelCode, the broadest, last).
NAMES: dict[str, str] = {
    "logician": "toolkit.layouts.logician:LOGICIAN",
    "claude-code": "toolkit.layouts.claude_code:CLAUDE_CODE",
    "codex": "toolkit.layouts.codex:CODEX",
    "gemini": "toolkit.layouts.gemini:GEMINI",
    "levelcode": "toolkit.layouts.levelcode:LEVELCODE",
}

_loaded: dict[str, object] = {}


def get(name):
    """The layout called ``name`` (a layout passes through): KeyError for an unknown one."""
    if not isinstance(name, str):
        return name
    layout = _loaded.get(name)
    if layout is None:
        module, attribute = NAMES[name].split(":")
        layout = _loaded[name] = getattr(importlib.import_module(module), attribute)
    return layout


def every() -> tuple:
    """Every layout, in discovery order."""
    return tuple(get(name) for name in NAMES)
