"""fsck: check journals, locks and caches; plan and apply the repairs DESIGN.md §2.4 allows.

The repair side is imported when first named (``from toolkit.fsck import plan_repair`` works as
before): a check that repairs nothing never loads it.
"""

from .check import CheckReport, FolderCheck, SessionCheck, check_folders, exit_code_for

__all__ = [
    "CheckReport",
    "FolderCheck",
    "RepairPlan",
    "RepairResult",
    "SessionCheck",
    "check_folders",
    "exit_code_for",
    "plan_repair",
]

_REPAIR = frozenset({"RepairPlan", "RepairResult", "plan_repair"})


def __getattr__(name: str):
    if name in _REPAIR:
        from . import repair

        return getattr(repair, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
