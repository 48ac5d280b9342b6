"""The Logician layout: ``<workspace>/.logician/sessions/sessions/<id>/messages.jsonl`` entry logs
of ``id`` records linked by ``parentId``, with a ``meta.json`` beside each (DESIGN.md §2.2)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .base import BaseLayout, Folder, entries
from ..errors import PermissionDeniedError

SESSIONS_DIR = Path(".logician") / "sessions"
ENTRIES = "messages.jsonl"


@dataclass
class LogicianFacts:
    """What meta.json needs from a Logician journal (DESIGN.md §2.2)."""

    ids: set = field(default_factory=set)
    first_timestamp: object = None
    last_timestamp: object = None
    last_id: str | None = None


class LogicianRules:
    """Unique entry ids, parents that name an earlier entry, and the facts meta.json needs."""

    def __init__(self, reader) -> None:
        self.c = reader
        self.facts = LogicianFacts()

    def record(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        c = self.c
        sink, facts = c.sink, self.facts
        if type(obj) is not dict or not isinstance(entry_id := obj.get("id"), str):
            sink.add("invalid-record", "JSON but not an entry object with a string \"id\"", c.lineno, offset, line)
            return
        c.records += 1
        ids = facts.ids
        if entry_id in ids:
            sink.add("duplicate-id", f"entry id {entry_id!r} appears again", c.lineno, offset, line)
        parent = obj.get("parentId")
        if parent is not None and (not isinstance(parent, str) or parent not in ids):
            sink.add("dangling-parent", f"parentId {parent!r} names no earlier entry", c.lineno, offset, line)
        if c.validator is not None:
            c.validator(obj, "entry", None, sink, c.lineno, offset, line)
        ids.add(entry_id)
        facts.last_id = entry_id
        facts.last_timestamp = obj.get("timestamp")
        if c.records == 1:
            facts.first_timestamp = facts.last_timestamp

    def finish(self, size: int, tail_state: object) -> None:
        pass


def is_session_folder(folder: Path) -> bool:
    """Only ``<workspace>/.logician/sessions/sessions/<id>/`` is a whole session (to trash, say);
    any other ``messages.jsonl`` stands alone (never the folder around it)."""
    return folder.parent.name == "sessions" and folder.parent.parent.name == "sessions" and folder.parent.parent.parent.name == ".logician"


class Logician(BaseLayout):
    name = "logician"
    key = "id"
    first_key = b"id"
    cache_name = "meta.json"
    cache_is_derived = False  # meta.json may hold the only copy of a session's name
    cache_lists_journals = False

    def identify(self, obj: object, found: str | None) -> bool:
        # an entry's other fields are opaque, so only a foreign format's keys rule it out
        return found == self.name or (type(obj) is dict and isinstance(obj.get("id"), str) and found is None
                                      and not any(k in obj for k in ("uuid", "parentUuid", "payload")))

    def rules(self, reader) -> LogicianRules:
        return LogicianRules(reader)

    # -- discovery ------------------------------------------------------------------------

    def session(self, folder: Path, store: Path | None = None) -> Folder:
        if store is None:
            store = folder.parent.parent if folder.parent.name == "sessions" else folder.parent
        try:
            names = {e.name for e in entries(folder)}
        except PermissionDeniedError as exc:  # its meta.json may hold the only copy of the name: hands off
            return Folder(folder, self, store, (), problem=str(exc))
        return Folder(folder, self, store, (folder / ENTRIES,) if ENTRIES in names else ())

    def sessions(self, store: Path) -> list[Folder]:
        sessions = store / "sessions"
        if not sessions.is_dir():
            return []
        return [self.session(Path(e.path), store) for e in entries(sessions) if e.is_dir()]

    def claim_file(self, path: Path) -> Folder | None:
        if path.name != ENTRIES:
            return None
        session = self.session(path.parent)
        return Folder(session.path, self, session.store, (path,))

    def claim_dir(self, path: Path) -> list[Folder] | None:
        if (path / SESSIONS_DIR).is_dir():
            return self.sessions(path / SESSIONS_DIR)
        if path.name == ".logician" and (path / "sessions").is_dir():
            return self.sessions(path / "sessions")
        if path.name == "sessions" and path.parent.name == ".logician":
            return self.sessions(path)
        if path.name == "sessions" and path.parent.parent.name == ".logician":
            return self.sessions(path.parent)
        if (path / ENTRIES).exists() or (path / "meta.json").exists():
            return [self.session(path)]
        return None

    def session_id(self, folder: Folder, journal: Path) -> str:
        return folder.path.name

    # -- caches ---------------------------------------------------------------------------

    def _derived(self, folder, scans, loaded) -> dict:
        from ..index import build_meta

        return build_meta(folder.path, scans[0] if scans else None, loaded.value if loaded.state == "ok" else None)

    def cache_findings(self, folder, scans, loaded) -> list:
        from ..findings import Finding
        from ..index import meta_drift

        drift = meta_drift(loaded, self._derived(folder, scans, loaded))
        if drift is None:
            return []
        code, reason = drift
        severity = "error" if code == "meta-ahead" else "warning"
        return [Finding(code, severity, str(folder.path) if code == "missing-meta-json" else str(folder.cache), None, None, reason)]

    def derive_cache(self, folder, scans, loaded) -> bytes | None:
        from ..index import dump_cache, meta_drift

        derived = self._derived(folder, scans, loaded)
        return None if meta_drift(loaded, derived) is None else dump_cache(derived)

    # -- listings and rendering -----------------------------------------------------------

    def row(self, folder, journal, scan, state, reason):
        from ..index import load_cache, utc_iso
        from ..rows import SessionRow

        facts = scan.facts
        meta = load_cache(folder.cache)
        value = meta.value if meta.state == "ok" and isinstance(meta.value, dict) else {}
        return SessionRow(folder.path.name, journal, self.name, value.get("workspace"), value.get("name"),
                          value.get("createdAt") or facts.first_timestamp, facts.last_timestamp or utc_iso(scan.mtime_ns / 1e9),
                          scan.records, None, scan.size, state, reason)

    def markdown(self, path: Path, title: object) -> Iterator[str]:
        from ..render import logician_markdown

        return logician_markdown(path, self, title)

    def json_open(self, records: Iterator[bytes]) -> bytes:
        return b'{\n  "entries": '

    def trash_paths(self, journal: Path) -> tuple[Path, ...]:
        return (journal.parent,) if is_session_folder(journal.parent) else (journal,)


LOGICIAN = Logician()
