"""Workspace folders shared by Cursor and VS Code: ``workspace.json``, URI -> project path,
and the orphan status of a workspace (SOURCES.md §1.3, §1.4)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import PermissionDeniedError
from ..lines import loads

_WSL_HOSTS = ("wsl.localhost", "wsl$")
_DRIVE = re.compile(r"^/?([A-Za-z])(:|%3[Aa])(/.*)?$")


def uri_to_project(uri: str) -> tuple[str, bool]:
    """Return ``(project, is_local)`` for a workspace URI, like VS Code's ``URI.fsPath``.

    ``file:///c%3A/Users/x`` -> ``c:\\Users\\x``; ``file://host/share/x`` -> ``\\\\host\\share\\x``;
    POSIX paths as decoded; on POSIX a WSL share (``file://wsl.localhost/Ubuntu/home/u``, as
    Windows names a WSL file) is the POSIX path inside the distribution (``/home/u``).  Other
    schemes (remote, dev container, ``vscode-remote://wsl+…``) keep the URI.
    """
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return uri, False
    path = unquote(parts.path)
    if parts.netloc.lower() in _WSL_HOSTS and os.name != "nt":  # \\wsl.localhost\<distro>\home\u seen from inside WSL
        return "/" + path.lstrip("/").partition("/")[2], True
    if parts.netloc:
        return "\\\\" + parts.netloc + path.replace("/", "\\"), True
    drive = _DRIVE.match(path)
    if drive:
        rest = (drive.group(3) or "\\").replace("/", "\\")
        return f"{drive.group(1).lower()}:{rest}", True
    return path, True


def revived_uri_text(uri: dict) -> str | None:
    """A readable path for a revived ``$mid: 1`` URI object: its ``fsPath`` for a local file,
    the URI itself for any other scheme (remote, WSL, web).

    VS Code on Windows computes ``fsPath`` for every scheme, so a WSL or SSH file
    (``vscode-remote://wsl+ubuntu/home/u/x``) arrives as ``\\home\\u\\x``: a path on no
    machine.  Such a file is written as its URI; a ``file:`` one without a drive or host as its
    POSIX ``path``."""
    scheme, path = uri.get("scheme"), uri.get("path")
    if scheme not in (None, "file"):
        if isinstance(uri.get("external"), str):
            return uri["external"]
        if isinstance(path, str):
            return f"{scheme}://{uri.get('authority') or ''}{path}"
        return None
    fs_path = uri.get("fsPath")
    rootless = isinstance(fs_path, str) and fs_path[:1] == "\\" and fs_path[:2] != "\\\\"  # \\home\\u, not \\\\host
    if isinstance(fs_path, str) and not rootless:
        return fs_path
    if isinstance(path, str):
        if uri.get("authority"):
            return uri_to_project(f"file://{uri['authority']}{path}")[0]
        return uri_to_project("file://" + path)[0] if _DRIVE.match(path) else path
    return fs_path if isinstance(fs_path, str) else None


def is_foreign(project: str) -> bool:
    """A path of another OS: a Windows path read on POSIX, or a POSIX path read on Windows."""
    windows = bool(re.match(r"^[A-Za-z]:\\", project)) or project.startswith("\\\\")
    return windows != (os.name == "nt")


def read_workspace_json(folder: Path) -> str | None:
    """The folder or .code-workspace URI recorded in ``workspace.json``, else None."""
    try:
        data = loads((folder / "workspace.json").read_bytes())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict):
        for key in ("folder", "workspace", "configuration"):
            if isinstance(data.get(key), str):
                return data[key]
    return None


#: Folders whose child is one person's home: ``/home/ada``, ``/Users/ada``, ``C:\\Users\\ada``.
_HOMES = frozenset({"home", "users"})

#: The reason a project folder is missing because the whole home (or root folder) it lived in is
#: not on this machine: a copied home, another user's, another machine's tree.  Not an orphan:
#: the editor on that machine still shows it.
NOT_HERE = "not-on-this-machine"


def home_of(project: str) -> Path:
    """The top of ``project`` that says which machine it is on: ``/home/x`` or ``/Users/x``
    (``C:\\Users\\x``), else its first folder (``/srv``, ``/Volumes``)."""
    parts = Path(project).parts
    if len(parts) >= 3 and parts[1].strip("\\/").casefold() in _HOMES:
        return Path(*parts[:3])
    return Path(*parts[:2]) if len(parts) >= 2 else Path(project)


def folder_status(project: str) -> tuple[str, list[str]]:
    """``(status, reasons)`` of a local absolute project folder: ``live`` when it is a folder here,
    ``unknown`` with ``not-on-this-machine`` when the home it lived in is not on this machine
    (nothing here can say the editor lost it), else ``orphaned`` with ``folder-missing``."""
    target = Path(project)
    if target.is_dir():
        return "live", []
    if not home_of(project).exists():
        return "unknown", [NOT_HERE]
    return "orphaned", ["folder-missing"]


def classify(uri: str | None) -> tuple[str | None, str, list[str]]:
    """Return ``(project, status, orphan reasons)`` for a workspace URI (SOURCES §1.4)."""
    if uri is None:
        return None, "live", []
    project, local = uri_to_project(uri)
    if not local or is_foreign(project):
        return project, "unknown", []
    target = Path(project)
    if project.endswith(".code-workspace") or target.name == "workspace.json":
        if target.exists():
            return project, "live", []
        return project, *(("unknown", [NOT_HERE]) if not home_of(project).exists() else ("orphaned", ["folder-missing"]))
    return project, *folder_status(project)


def apply_map(project: str | None, mapping: list[tuple[str, str]]) -> str | None:
    """Rewrite a project path by the first ``--map OLD=NEW`` whose OLD is a path prefix of it.

    Windows paths compare case-insensitively (``C:\\`` and ``c:\\`` are one drive); a root
    OLD (``/``) is a prefix of every path on it."""
    if project is None:
        return None
    for old, new in mapping:
        windows = bool(re.match(r"^[A-Za-z]:[\\/]", old)) or old.startswith("\\\\")
        trimmed = old.rstrip("/\\") or old[:1]
        have, want = (project.casefold(), trimmed.casefold()) if windows else (project, trimmed)
        if have == want:
            return new
        if want in ("/", "\\"):
            return new.rstrip("/\\") + "/" + project.lstrip("/\\")
        if have.startswith(want + "/") or have.startswith(want + "\\"):
            return new.rstrip("/\\") + project[len(trimmed):]
    return project


def subfolders(folder: Path) -> list[Path]:
    """The folders in ``folder`` (none if it does not exist), e.g. ``workspaceStorage/*``;
    a permission error is typed."""
    if not folder.is_dir():
        return []
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except PermissionError as exc:
        raise PermissionDeniedError(f"cannot list {folder}") from exc
