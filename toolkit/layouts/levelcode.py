"""The LevelCode layout: ``<store>/<slug>/<id>.jsonl`` journals of ``kind`` records, a meta
record first, and a derived ``index.json`` per project folder (DESIGN.md §2.1, §2.3)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .base import PLACEHOLDER_MODELS, BaseLayout, Folder, entries, journals_of, one_line
from ..errors import PermissionDeniedError

NEWEST_VERSION = 2
KNOWN_KINDS = frozenset({"meta", "user", "assistant", "agent", "event", "title", "compact"})


@dataclass
class LevelCodeFacts:
    """What index.json needs from a LevelCode journal (DESIGN.md §2.3)."""

    meta: dict | None = None
    version: int | None = None
    title: object = None
    title_set: bool = False
    last_t: object = None
    turns: int = 0
    model: object = None
    preview: str | None = None
    pinned: bool = False
    archived: bool = False
    seq_field: tuple[int, int] | None = None  # (line, offset) of a v1 record that already has "seq"


def preview_of(content: object, added: object = None) -> str | None:
    """Return the index preview of a user record's content (§2.3), or None; ``added`` are the
    indices of blocks the tool added (an importer marks them): never the preview."""
    text = None
    skip = {i for i in added if type(i) is int} if isinstance(added, list) else set()
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        for i, block in enumerate(content):
            if i in skip:
                continue
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                text = block["text"]
                break
    if text is None:
        return None
    return one_line(text)


class LevelCodeRules:
    """Meta first, known kinds, v2 ``seq`` order, and the facts index.json is derived from."""

    def __init__(self, reader) -> None:
        self.c = reader
        self.facts = LevelCodeFacts()
        self.expect_seq = 1
        self.last_seq = 0
        self.future = False
        self.turn_seqs: set[int] = set()  # the seqs of the prompts counted: a record that replaces one is no new turn

    def record(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        c = self.c
        sink, facts = c.sink, self.facts
        if type(obj) is not dict or not isinstance(kind := obj.get("kind"), str):
            sink.add("invalid-record", "JSON but not a record object with a string \"kind\"", c.lineno, offset, line)
            return
        c.records += 1
        if c.records == 1:
            if kind != "meta":
                sink.add("missing-meta", f"first record is {kind!r}, not meta", c.lineno, offset, line)
            else:
                self._meta(obj, offset, line)
            return
        if kind == "meta":
            if facts.meta is None:  # misplaced, not repeated: missing-meta already says so
                self._meta(obj, offset, line)
            else:
                sink.add("duplicate-meta", "a second meta record", c.lineno, offset, line)
            return
        if self.future:
            return
        if facts.version == 2:
            seq = obj.get("seq")
            if seq == self.expect_seq and type(seq) is int:  # the common case, inline
                self.last_seq, self.expect_seq = seq, seq + 1
            else:
                self._seq(seq, offset, line)
        elif "seq" in obj and facts.seq_field is None:  # v1: the name v2 gives a meaning
            facts.seq_field = (c.lineno, offset)
        if c.validator is not None:
            c.validator(obj, kind, facts.version, sink, c.lineno, offset, line)
        t = obj.get("t")
        if t is not None:
            facts.last_t = t
        if kind == "user":
            # a turn is a prompt someone typed: not a tool result, text the tool injected, or a
            # fork's copy of its parent's turn (importers mark those)
            if not (obj.get("toolResult") or obj.get("injected") or obj.get("inherited")):
                # a re-import's copy of a prompt (its source line changed, or it moved onto the
                # conversation: ``replaces``) is the same turn, counted once
                also = obj.get("alsoReplaces")
                copies = [obj.get("replaces"), *(also if isinstance(also, list) else ())]
                if not any(type(c) is int and c in self.turn_seqs for c in copies):
                    facts.turns += 1
                    if facts.turns == 1:
                        facts.preview = preview_of(obj.get("content"), obj.get("added"))
                if type(obj.get("seq")) is int:
                    self.turn_seqs.add(obj["seq"])
        elif kind == "assistant":
            model = obj.get("model")
            if model and not (isinstance(model, str) and model in PLACEHOLDER_MODELS):
                facts.model = model
        elif kind == "title":
            facts.title, facts.title_set = obj.get("title"), True
        elif kind == "event":
            kind_of = obj.get("type")
            if kind_of in ("pin", "unpin"):
                facts.pinned = kind_of == "pin"
            elif kind_of in ("archive", "unarchive"):
                facts.archived = kind_of == "archive"
        elif kind not in KNOWN_KINDS:
            sink.add("unknown-kind", f"unknown record kind {kind!r}", c.lineno, offset, line)

    def plain_events(self, seq: int, count: int, t: object) -> int:
        """What :meth:`record` does with ``count`` ``event`` records of a type that keeps no fact (an
        importer's ``source-line``), numbered from ``seq`` with time ``t``, done without the records:
        how many were done, all of them or none (none when :meth:`record` must read them: not the
        next seq, not a v2 journal with its meta read, a validator to run)."""
        c = self.c
        if count <= 0 or seq != self.expect_seq or self.future or self.facts.version != 2 or c.records < 1 \
                or c.validator is not None:
            return 0
        c.records += count
        self.last_seq, self.expect_seq = seq + count - 1, seq + count
        if t is not None:
            self.facts.last_t = t
        return count

    def _meta(self, obj: dict, offset: int, line: bytes) -> None:
        c, facts = self.c, self.facts
        facts.meta = obj
        version = obj.get("v", 1)
        if type(version) is not int or version < 1:
            c.sink.add("invalid-version", f"meta has an invalid version {version!r}", c.lineno, offset, line)
            version = 1
        facts.version = version
        if version > NEWEST_VERSION:
            self.future = True
            c.sink.add("future-version", f"schema v{version}; this levelsess knows up to v{NEWEST_VERSION}", c.lineno, offset, line)
        elif c.validator is not None:
            c.validator(obj, "meta", version, c.sink, c.lineno, offset, line)

    def _seq(self, seq: object, offset: int, line: bytes) -> None:
        c = self.c
        if type(seq) is not int:
            c.sink.add("seq-gap", f"no seq; expected {self.expect_seq}", c.lineno, offset, line)
            self.expect_seq += 1
            return
        if seq != self.expect_seq:
            if seq == self.last_seq:
                c.sink.add("seq-duplicate", f"seq {seq} repeats the previous record's", c.lineno, offset, line)
            else:
                c.sink.add("seq-gap", f"seq {seq}; expected {self.expect_seq}", c.lineno, offset, line)
        self.last_seq = seq
        self.expect_seq = max(self.expect_seq, seq + 1)

    def finish(self, size: int, tail_state: object) -> None:
        from ..journal import TailState

        if size and tail_state is TailState.NONE and self.c.records == 0 and self.facts.meta is None:
            self.c.sink.add("missing-meta", "no meta record: the journal holds only blank lines", None, 0)


def _holds_project(listed: list) -> bool:
    """Whether a folder's entries (:func:`~toolkit.layouts.base.entries`) make it a project folder."""
    return any((e.name.endswith(".jsonl") or e.name == "index.json") and not e.name.startswith(".") for e in listed)



class LevelCode(BaseLayout):
    name = "levelcode"
    key = "kind"
    first_key = b"kind"
    cache_name = "index.json"
    vouchable = True
    cache_lists_journals = True  # index.json names each journal: refresh it when one is trashed
    migrates = True  # schema versions 1 -> 2 (toolkit.migrate)
    versions = NEWEST_VERSION  # the newest schema this levelsess reads (migrate raises older ones)

    def identify(self, obj: object, found: str | None) -> bool:
        return found == self.name

    def rules(self, reader) -> LevelCodeRules:
        return LevelCodeRules(reader)

    # -- discovery ------------------------------------------------------------------------

    def claim_file(self, path: Path) -> Folder:
        parent = path.parent
        # a project folder's name is a slug ('-Users-…', '_unassigned') or it holds index.json
        in_project = parent.name.startswith(("-", "_")) or (parent / "index.json").exists()
        return Folder(parent, self, parent.parent if in_project else parent, (path,), whole=False)

    def claim_dir(self, path: Path) -> list[Folder] | None:
        listed = entries(path)  # (each folder listed once: what it holds is judged and taken from one listing)
        if _holds_project(listed):
            return [Folder(path, self, path.parent, journals_of(listed))]
        folders = []
        for entry in listed:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            sub = Path(entry.path)
            try:
                inner = entries(sub)
                if _holds_project(inner):
                    folders.append(Folder(sub, self, path, journals_of(inner)))
            except PermissionDeniedError as exc:  # one unreadable project is a finding, not the end of the check
                folders.append(Folder(sub, self, path, (), problem=str(exc)))
        visible = [e for e in listed if not e.name.startswith(".")]
        if folders or not visible or all(e.is_dir() and e.name.startswith(("-", "_")) for e in visible):
            return folders  # a store, maybe with only empty project folders (a writer killed at birth)
        return None

    # -- caches ---------------------------------------------------------------------------

    def cache_findings(self, folder, scans, loaded) -> list:
        from ..findings import Finding
        from ..index import build_index, index_drift

        where = str(folder.cache)
        if loaded.state == "missing":
            # named by its folder: a finding names only paths that exist
            return [Finding("missing-index", "warning", str(folder.path), None, None, "index.json is missing")] if scans else []
        if loaded.state == "corrupt":
            return [Finding("corrupt-index", "warning", where, None, None, f"index.json is {loaded.detail}")]
        version, index_entries = build_index(scans)
        drift = index_drift(loaded, version, index_entries)
        return [Finding("stale-index", "warning", where, None, None, drift)] if drift else []

    def derive_cache(self, folder, scans, loaded) -> bytes | None:
        from .. import verified
        from ..index import build_index, dump_cache, index_document, index_drift

        version, index_entries = build_index(scans)
        if loaded.state == "ok" and index_drift(loaded, version, index_entries) is None:
            verified.vouch(folder, scans, loaded.raw)  # compared in full: a later stat may trust these bytes
            return None
        return dump_cache(index_document(version, index_entries))

    # -- listings and rendering -----------------------------------------------------------

    def row(self, folder, journal, scan, state, reason):
        from ..index import build_index
        from ..rows import SessionRow

        entry = build_index([scan], version=2)[1][0]
        project = (scan.facts.meta or {}).get("project")
        return SessionRow(entry["id"], journal, self.name, project, entry["title"], entry["createdAt"], entry["updatedAt"],
                          entry["turns"], entry["model"], scan.size, state, reason)

    def markdown(self, path: Path, title: object) -> Iterator[str]:
        from ..render import levelcode_markdown

        return levelcode_markdown(path, self, title)

    def json_open(self, records: Iterator[bytes]) -> bytes:
        return b'{\n  "meta": ' + next(records, b"null") + b',\n  "records": '

    def trash_paths(self, journal: Path) -> tuple[Path, ...]:
        return (journal,)


LEVELCODE = LevelCode()
