"""Schema migrations for journals and indexes (DESIGN.md §6): a registry of small steps,
a read-only planner and a crash-safe runner."""

from .registry import NEWEST, STEPS, Step, chain
from .run import FileState, MigrationPlan, MigrationResult, plan_migration

__all__ = ["NEWEST", "STEPS", "FileState", "MigrationPlan", "MigrationResult", "Step", "chain", "plan_migration"]
