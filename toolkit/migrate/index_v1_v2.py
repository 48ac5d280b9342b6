"""index.json v1 (a bare list of seven seed fields) -> v2 (``{"v":2,"generatedAt","sessions"}``).

The index is a cache (DESIGN.md §1): the v2 entries, with ``bytes``, ``pinned`` and
``archived``, come from the journals themselves, exactly as ``levelsess reindex`` builds them.
"""

from __future__ import annotations

from ..index import build_index, index_document
from ..journal import JournalScan


def upgrade(scans: list[JournalScan]) -> object:
    return index_document(2, build_index(scans, version=2)[1])
