"""A quick, read-only survey of the Cline, Roo Code and Kilo Code installs on this machine, for
``levelsess doctor``: how many tasks each has on disk and how many of them its own list shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import sdk, tasks
from .places import detect, resolve


@dataclass(frozen=True)
class InstallSurvey:
    """One install: ``tool`` (cline | roo | kilo), its folder, the task (and 4.x session) folders on
    disk, how many of them the tool's list shows, list entries with no folder, and the list's state
    (``ok`` | ``missing`` | ``corrupt``; ``unknown`` when only the editor's memento could say)."""

    tool: str
    folder: Path
    on_disk: int
    listed: int
    not_listed: int
    listed_without_folder: int
    index: str

    def to_json(self) -> dict:
        return {"tool": self.tool, "folder": str(self.folder), "on_disk": self.on_disk, "listed": self.listed,
                "not_listed": self.not_listed, "listed_without_folder": self.listed_without_folder, "index": self.index}


def survey(sources: list[Path] | None = None) -> list[InstallSurvey]:
    """Survey ``sources`` (default: every install :func:`detect` finds); reads folder names, the
    tools' lists and Roo's ``history_item.json`` files, never a conversation; writes nothing."""
    out = []
    for source in detect() if sources is None else sources:
        try:
            install = resolve(source)
        except Exception:  # noqa: BLE001 - a folder that went away or is not one: nothing to say
            continue
        findings: list = []
        index = tasks.load_index(install, findings.append)
        names = {f.name for f in tasks.task_folders(install)}
        own = {n for n in names if install.tool != "cline" and (install.tasks / n / tasks.ITEM).is_file()}
        sessions = {f.name for f in sdk.session_folders(install)}
        listed_sessions = sdk.load_index(install, findings.append) if sessions else tasks.TaskIndex()
        listed = (names & (set(index.items) | own)) | (sessions & set(listed_sessions.items))
        on_disk = len(names) + len(sessions)
        read = bool(index.where) or install.tool == "roo" or install.folder.joinpath(*tasks.INDEX_FILE).is_file()
        state = "corrupt" if index.corrupt else "ok" if read else "missing" if index.known else "unknown"
        out.append(InstallSurvey(install.tool, install.folder, on_disk, len(listed), on_disk - len(listed),
                                 len(set(index.items) - names), state))
    return out
