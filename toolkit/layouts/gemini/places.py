"""Where a Gemini CLI folder keeps its sessions and which project each ``tmp/<slug>`` folder is
(SOURCES-MORE §1.1): below the layout, its sweep and its rescue, which all ask it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..gemini_names import CHATS, TMP  # noqa: F401 (where they are named, for the listing alone)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def home_of(path: Path) -> Path | None:
    """The Gemini folder ``path`` lies in (the parent of its ``tmp``), or None."""
    for parent in (path, *path.parents):
        if parent.name == TMP and parent.parent != parent:
            return parent.parent
        if _is_dir(parent / TMP) and (parent.name == ".gemini" or (parent / "projects.json").is_file()):
            return parent
    return None


def project_sha(root: str) -> str:
    """``projectHash``: sha256 of the project root's path, as Gemini computes it (§1.1)."""
    return hashlib.sha256(root.encode("utf-8")).hexdigest()


def _projects(home: str) -> dict[str, str]:
    """``projects.json``'s path -> slug map (empty when missing or unreadable: Gemini resets it too)."""
    from ...lines import loads

    try:
        with open(os.path.join(home, "projects.json"), "rb") as handle:
            value = loads(handle.read(1 << 22))
    except (OSError, ValueError):
        return {}
    projects = value.get("projects") if isinstance(value, dict) else None
    return {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(projects, dict) else {}


def project_root(project_dir: Path, project_hash: str | None = None) -> str | None:
    """The project a ``tmp/<slug>`` (or ``tmp/<sha256>``) folder belongs to: its ``.project_root``
    marker, else ``projects.json``, else the path whose sha256 is the folder name or the file's
    ``projectHash``; None when nothing proves it."""
    try:
        with open(project_dir / ".project_root", "rb") as handle:
            marker = handle.read(1 << 16).decode("utf-8").strip()
        if marker:
            return marker
    except (OSError, UnicodeDecodeError):
        pass
    home = project_dir.parent.parent
    known = _projects(str(home))
    for root, slug in known.items():
        if slug == project_dir.name:
            return root
    for root in known:
        if project_sha(root) in (project_dir.name, project_hash):
            return root
    return None
