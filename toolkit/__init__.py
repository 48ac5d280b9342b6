"""levelsess: check, repair, migrate and recover append-only JSONL chat journals."""

__version__ = "0.1.0"
