"""Tombstones: the sessions a user trashed from a store, so an import does not bring them back.

``<store>/.levelsess/trashed.jsonl`` is append-only (written through :mod:`toolkit.durable`):
``{"kind": "trashed", "id", "path", "t", "source"}`` when ``trash`` moves a session's journal to
the OS trash, ``{"kind": "untrashed", "id", "t"}`` when ``import --include-trashed`` imports it
again.  The last line of an id decides.  A tombstone holds only while its journal is gone: a
journal put back from the OS trash is the session again, and the next import extends it.

Damaged lines (a torn tail of a killed append, a hand edit) are skipped when read: the file is
a list of wishes, not a journal; losing one line brings at most one session back.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import orjson

from .layouts.base import STATE_DIR
from .parse import loads

NAME = "trashed.jsonl"


def path_of(store: Path) -> Path:
    return Path(store) / STATE_DIR / NAME


class Tombstone(NamedTuple):
    id: str
    path: str  # the journal that went to the OS trash
    t: str | None
    source: dict | None

    def to_json(self) -> dict:
        return {"id": self.id, "path": self.path, "t": self.t, "source": self.source}


def read(store: Path) -> dict[str, Tombstone]:
    """The sessions trashed from ``store`` and not imported again since, by id (in file order).
    A journal back at its path (restored from the OS trash) is no longer trashed."""
    try:
        with open(path_of(store), "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:
        return {}  # unreadable: nothing is held back (an import then brings trashed sessions back, never loses one)
    found: dict[str, Tombstone] = {}
    for line in data.split(b"\n"):
        try:
            value = loads(line) if line.strip() else None
        except ValueError:
            continue
        if not isinstance(value, dict) or not isinstance(value.get("id"), str):
            continue
        if value.get("kind") == "trashed" and isinstance(value.get("path"), str):
            found.pop(value["id"], None)
            found[value["id"]] = Tombstone(value["id"], value["path"], value.get("t") if isinstance(value.get("t"), str) else None,
                                           value.get("source") if isinstance(value.get("source"), dict) else None)
        elif value.get("kind") == "untrashed":
            found.pop(value["id"], None)
    return {key: stone for key, stone in found.items() if not os.path.lexists(stone.path)}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _append(store: Path, records: list[dict]) -> None:
    if not records:
        return
    from . import durable  # (here: reading the tombstones, as every import does, writes nothing)

    target = path_of(store)
    durable.ensure_dir(target.parent)
    lines = []
    for record in records:
        try:
            lines.append(orjson.dumps(record))
        except TypeError:  # a lone surrogate in a path: as a \u escape
            import json

            lines.append(json.dumps(record, separators=(",", ":")).encode("ascii"))
    durable.append_lines(target, lines)


def bury(store: Path, entries: list[tuple[str, Path, dict | None]]) -> None:
    """Record that each ``(id, journal, source)`` was trashed from ``store``."""
    when = _now()
    _append(store, [{"kind": "trashed", "id": sid, "path": str(journal), "t": when, "source": source}
                    for sid, journal, source in entries])


def unbury(store: Path, ids: list[str]) -> None:
    """Drop the tombstones of ``ids`` (imported again with ``--include-trashed``)."""
    when = _now()
    _append(store, [{"kind": "untrashed", "id": sid, "t": when} for sid in ids])


#: The ``import --from`` name of a journal id's prefix (``claude-…``, ``roo-…``).
_IMPORTERS = {"claude": "claude", "codex": "codex", "gemini": "gemini", "copilot": "copilot", "opencode": "opencode",
              "cline": "cline", "roo": "cline", "kilo": "cline", "cursor": "cursor", "vscode": "vscode"}


def import_name(stone: Tombstone) -> str | None:
    """The ``import --from`` name that brings ``stone`` back (from the journal id's prefix), or None."""
    return _IMPORTERS.get(stone.id.split("-", 1)[0])
