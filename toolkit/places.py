"""Where levelsess keeps its own files outside every store: the user's cache folder.

``platformdirs`` decides it; on Linux, where an import that finds nothing new takes a few tens of
milliseconds, the answer is worked out here as platformdirs works it out (``$XDG_CACHE_HOME`` when
it is an absolute path, else ``~/.cache`` of an absolute ``$HOME``), without the 4 ms of importing
it.  Anything else (another system, no usable ``$HOME``) asks platformdirs.  A test holds the two
answers equal under every shape of those variables.
"""

from __future__ import annotations

import os
import sys

APP = "levelsess"


def user_cache_dir() -> str:
    """``platformdirs.user_cache_dir("levelsess", appauthor=False)``."""
    if sys.platform.startswith("linux") and not hasattr(sys, "getandroidapilevel"):
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if xdg.startswith("/"):
            return os.path.join(xdg, APP)
        home = os.environ.get("HOME", "")
        if home.startswith("/"):
            return os.path.join(os.path.expanduser("~/.cache"), APP)
    import platformdirs

    return platformdirs.user_cache_dir(APP, appauthor=False)
