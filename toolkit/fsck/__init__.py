"""fsck: check journals, locks and caches; plan and apply the repairs DESIGN.md §2.4 allows."""

from .check import CheckReport, FolderCheck, SessionCheck, check_folders, exit_code_for
from .repair import RepairPlan, RepairResult, plan_repair

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
