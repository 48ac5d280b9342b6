"""Recover Cursor chats from ``state.vscdb`` files, every storage era (SOURCES.md §2, §4).

* ``detect()`` finds Cursor ``User`` folders (platformdirs, per OS).
* ``resolve()`` turns ``--source`` (a ``User`` folder, one ``workspaceStorage/<id>`` folder, or
  one ``state.vscdb``; or agent transcripts) into the databases and files to read.
* ``scan()`` yields one :class:`~toolkit.importers.output.Session` per conversation, converted to
  LevelCode v2 records, reading one composer at a time (bounded memory): legacy chat tabs,
  inline ``composer.composerData`` conversations, global ``composerData:<id>`` with an inline
  ``conversation`` or ordered ``fullConversationHeadersOnly`` + ``bubbleId:`` rows.  Eras are
  told apart by the fields present, never by ``_v``; and agent transcripts
  (``~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl``, :mod:`.transcripts`).

Nothing here writes; ``cursorAuth/*`` is never read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from ...findings import Finding
from ..base import Farm
from ..output import Session
from . import transcripts
from .scan import APP, Options, Scan
from .sources import default_user_dirs, detect, resolve

__all__ = ["APP", "Options", "default_user_dirs", "detect", "resolve", "scan", "source_files"]


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every Cursor conversation under ``source`` as a converted :class:`Session`."""
    sources = resolve(source)
    scanner = Scan(sources, options, report)
    found = scanner.sessions()
    if sources.transcripts:
        found = transcripts.sessions(sources.transcripts, options, report, transcripts.Projects(default_user_dirs()))
    for session in found:
        if type(session) is Farm:  # the global database's composers (run_import may convert them in workers)
            yield _orphans_only(session) if options.orphans_only else session
        elif not (options.orphans_only and not session.orphaned):
            yield session


def _orphans_only(farm: Farm) -> Farm:
    """``--orphans-only``: of each composer's sessions, the orphaned ones (the scan learns of all of them)."""
    def make(index: int, report: Callable[[Finding], None]) -> tuple[list[Session], object]:
        sessions, said = farm.make(index, report)
        return [session for session in sessions if session.orphaned], said
    return Farm(farm.count, farm.size, make, farm.after, farm.release)


def source_files(source: Path) -> list[Path]:
    """The database files an import of ``source`` reads (to prove they were not written)."""
    sources = resolve(source)
    files = [w.db for w in sources.workspaces if w.db is not None]
    if sources.global_db is not None:
        files.append(sources.global_db)
    return files + sources.transcripts


