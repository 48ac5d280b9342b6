"""Standard streams that never raise on a character their encoding cannot hold (no rich, no
library import: the CLI calls this before anything else)."""

from __future__ import annotations

import sys


def tolerant_streams() -> None:
    """Make stdout and stderr print what their encoding cannot hold as escapes instead of
    raising UnicodeEncodeError (a Windows redirect, ``PYTHONIOENCODING=cp1252``, ``LANG=C``)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: nothing to print there anyway
                pass
