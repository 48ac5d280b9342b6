"""Claude Code's transcripts as an import lists them (the registry's ``claude``): the installs on
this machine, one unit per session with its subagents and the files its conversion also looks at,
and a unit's key.  An import that finds nothing new needs nothing else: every other name of the
importer (``scan_unit``, ``resume_unit``, ...) is :mod:`toolkit.importers.claude`'s, loaded the
first time one is asked for, when a transcript is read (issue 27: loading the converter and the
writer under it was 7 of the 68 ms an unchanged re-import of 483 transcripts took, net of start-up)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from ..errors import NotASourceError, PathNotFoundError
from ..findings import Finding
from ..layouts.claude_code import CLAUDE_CODE, _subagents, default_roots, is_subagent
from .base import Options, loaded_later  # noqa: F401 (Options: what the importer takes from the command line)
from .unchanged import Later, Unit

APP = "claude-code"
__getattr__ = loaded_later("toolkit.importers.claude")  # the rest of the importer, loaded when first asked for


def detect() -> list[Path]:
    """Every Claude Code root on this machine that has a ``projects/`` folder (as doctor lists them)."""
    return [root for root in default_roots() if (root / "projects").is_dir()]


# -- which files ---------------------------------------------------------------------------------


def _groups(source: Path, report: Callable[[Finding], None]) -> list[tuple[Path | None, list[Path]]]:
    """(main transcript or None, its subagent transcripts) for every session under ``source``:
    a Claude Code root, its projects folder, one project, one session folder, or one file."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        folder = CLAUDE_CODE.claim_file(source)
        if folder is not None and not is_subagent(source):  # a session named: its subagents come with it
            folder = folder._replace(journals=(source, *_subagents(source.parent / source.stem)))
        folders = [folder]
    else:
        folders = CLAUDE_CODE.claim_dir(source)
        if folders is None and _no_project_yet(source):
            folders = []
    if folders is None or folders == [None]:
        raise NotASourceError(f"{source} (expected a Claude Code root such as ~/.claude, its projects folder, one project "
                              "folder, or one transcript .jsonl)")
    groups: list[tuple[Path | None, list[Path]]] = []
    for folder in folders:
        if folder.problem:
            report(Finding("unreadable", "error", str(folder.path), None, None, f"{folder.problem}; its sessions were not imported"))
            continue
        current: tuple[Path | None, list[Path]] | None = None
        for journal in folder.journals:
            if not is_subagent(journal):
                current = (journal, [])
                groups.append(current)
            elif current is not None and current[0] is not None and journal.parent.parent == current[0].parent / current[0].stem:
                current[1].append(journal)
            elif current is not None and current[0] is None and journal.parent == current[1][0].parent:
                current[1].append(journal)
            else:  # a subagent whose session transcript is gone (or was not named)
                current = (None, [journal])
                groups.append(current)
    return groups


def _no_project_yet(source: Path) -> bool:
    """``source`` is a Claude Code root (``~/.claude``, or one this machine names: $CLAUDE_CONFIG_DIR)
    or its ``projects/`` folder, and that holds no project folder yet: an install with no chat to
    import (as a Codex home with no rollout), not a folder of something else."""
    root = source.parent if source.name == "projects" else source
    if root.name != ".claude" and os.path.abspath(root) not in {os.path.abspath(r) for r in default_roots()}:
        return False
    try:
        return not any(e.name[:1] != "." and e.is_dir() for e in os.scandir(root / "projects"))
    except OSError:
        return False


def source_files(source: Path) -> list[Path]:
    files = []
    for main, agents in _groups(source, lambda _f: None):
        files += ([main] if main else []) + agents
    return files


# -- the units ---------------------------------------------------------------------------------


def units(source: Path, report: Callable[[Finding], None]) -> list[Unit]:
    """One unit per session with its subagents (what :func:`scan_unit` reads together), and the
    files its conversion also looks at: each subagent's ``.meta.json``, and the session's
    transcript when only its subagents were named."""
    found = []
    for main, agents in _groups(source, report):
        deps = [agent.parent / (agent.stem + ".meta.json") for agent in agents]
        if main is None:
            deps.append(agents[0].parent.parent.parent / f"{agents[0].parent.parent.name}.jsonl")
        found.append(Unit(str(main or agents[0]), tuple(([main] if main else []) + agents), tuple(deps), (main, agents)))
    return found


def units_from(source: Path, kept: list[tuple[str, list[str], list[str]]]) -> list[Unit]:
    """The units :func:`units` found, from what an import kept of them (key, files, deps): a
    session's transcript comes first, and never sits in a subagents folder.  Their files and
    deps stay the strings kept (what the import cache compares), and the transcripts become
    paths only when the unit is read (:class:`~toolkit.importers.unchanged.Later`)."""
    return [Unit(key, tuple(files), tuple(deps), Later(_handle, files)) for key, files, deps in kept]


def _handle(files: list[str]) -> tuple[Path | None, list[Path]]:
    """``(main transcript or None, its subagent transcripts)`` of a kept unit's file names."""
    paths = [Path(name) for name in files]
    main = paths[0] if paths and not is_subagent(paths[0]) else None
    return main, paths[1:] if main is not None else paths


def unit_key(unit: Unit) -> str:
    """What a unit's session ids start with: units that share it may write the same journal (a
    transcript named like another's subagent), so they are imported one after the other."""
    main, agents = unit.handle
    sid = main.stem if main is not None else agents[0].parent.parent.name
    return re.split(r"-(?:agent|side)-", sid, maxsplit=1)[0].lower()
