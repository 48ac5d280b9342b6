"""How many worker processes ``--jobs`` means (fsck, migrate and import alike): a module of its own,
so choosing loads neither the checker nor the forking machinery."""

from __future__ import annotations

import os
from pathlib import Path

#: ``--jobs`` automatic (0): below this many bytes in total, worker processes cost more than they save.
PARALLEL_THRESHOLD = 32 << 20


def worker_count(requested: int, total_bytes: int, count: int) -> int:
    """Workers for ``count`` items of ``total_bytes``: ``requested`` (at most one per item), or for
    0 one per core once there are :data:`PARALLEL_THRESHOLD` bytes."""
    if requested > 0:
        return min(requested, max(count, 1))
    if total_bytes < PARALLEL_THRESHOLD or count < 2:
        return 1
    return min(os.cpu_count() or 1, count)


def file_size(path: Path) -> int:
    """A file's size for :func:`worker_count`'s total (0 when it cannot be stat'ed: it is read, and met, later)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
