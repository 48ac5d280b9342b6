"""Give kept Codex CLI rollouts back (SOURCES-AGENTS §2.1): to ``<codex home>/sessions/YYYY/MM/DD/
<its original file name>``, or ``archived_sessions/<name>`` when it was archived there, byte for
byte as last imported.  ``codex resume <id>`` then finds it.

Making rollouts visible in ``state_5.sqlite`` (``restore --app codex``) is a separate step.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from .. import shellwords
from ..errors import UsageError
from ..layouts.codex import ARCHIVED, CODEX, SESSIONS, default_roots
from .contract import SessionFiles

APP = "codex"
LAYOUT = CODEX
_DATED = re.compile(r"rollout-(\d{4})-(\d{2})-(\d{2})T")


def session_files(journal: Path, meta: dict, to: Path | None) -> SessionFiles:
    """The kept rollout ``journal`` (meta ``meta``) and where it goes."""
    source = meta["source"]
    root, where = _root(source, to)
    sid = source.get("key") or meta["id"].removeprefix("codex-")
    return SessionFiles(meta["id"], root, (((journal,), root / where),), f"codex resume {shellwords.quote(str(sid))}")


def _root(source: dict, to: Path | None) -> tuple[Path, PurePath]:
    """The Codex home to write under (``--to``, else the one the rollout was in when it is still
    there, else this user's: $CODEX_HOME or ~/.codex) and the rollout's path below it."""
    text = str(source.get("path") or "")
    original = (PureWindowsPath if text[1:3] in (":\\", ":/") or "\\" in text else PurePosixPath)(text)
    parts = original.parts
    if len(parts) >= 6 and parts[-5] == SESSIONS:
        where, depth = PurePath(*parts[-5:]), 5
    elif len(parts) >= 3 and parts[-2] == ARCHIVED:
        where, depth = PurePath(*parts[-2:]), 2
    else:  # imported from elsewhere (a copy): the date folder from its name, as Codex makes it
        dated = _DATED.match(original.name)
        if dated is None:
            raise UsageError(f"the kept rollout's source path {text!r} does not say where Codex had it")
        where, depth = PurePath(SESSIONS, *dated.groups(), original.name), 0
    if to is not None:
        return Path(to).expanduser(), where
    was = Path(*parts[:-depth]) if depth else None
    if was is not None and isinstance(original, type(PurePath())) and was.is_dir():
        return was, where
    return default_roots()[0], where
