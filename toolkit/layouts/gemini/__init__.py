"""The Gemini CLI layout: ``$GEMINI_CLI_HOME/.gemini`` (else ``~/.gemini``), sessions in
``tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`` (``<project>`` a slug from
``projects.json``, or the older sha256 of the project root) and subagent sessions in
``chats/<parentId>/<id>.jsonl`` (SOURCES-MORE.md §1).

A session file is append-only JSONL: a metadata line, then messages (a repeated ``id`` replaces
the message: an update, never a duplicate), ``$set`` and ``$rewindTo`` lines (:mod:`.chat`).
Gemini's tree is not levelsess's: no cache, no lock file, and what a repair saves goes to
levelsess's own data folder.  Legacy whole-file ``session-*.json`` files are read as one JSON
document and never written (:mod:`.sweep` checks them with the folder).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..base import Folder, ForeignLayout, entries, one_line
from ...errors import NotAStoreError, PermissionDeniedError
from .chat import META, OTHER, Chain, is_message_shape, resumable, text_of
from ..gemini_names import default_roots, is_session_name  # noqa: F401 (the layout's names, as ever)
from .places import CHATS, TMP, _is_dir, _projects, home_of, project_root, project_sha  # noqa: F401

_OPENINGS = (b'{"sessionId":', b'{"id":', b'{"$set":', b'{"$rewindTo":')
_FOREIGN_KEYS = re.compile(rb'"(parentUuid|uuid|payload|leafUuid|isSidechain|parentId)"\s*:')


def _sketch(record: dict) -> list:
    """What a listing keeps of one message: [type, resumable, preview, model] (plain JSON, so
    ``fsck --incremental`` can keep the facts)."""
    kind = record.get("type")
    preview = one_line(text_of(record.get("content"))) if kind == "user" else ""
    model = record.get("model") if isinstance(record.get("model"), str) else None
    return [kind if isinstance(kind, str) else None, resumable(record), preview, model]


@dataclass
class GeminiFacts:
    """What listings, show, the sweep and import need from one session file: its metadata (``$set``s
    merged) and a sketch of each message on the chain Gemini would resume, id -> [type, resumable,
    preview, model], in order."""

    meta: dict = field(default_factory=dict)
    messages: dict = field(default_factory=dict)
    meta_first: bool = False   # its first line is the metadata line, whole (what Gemini needs, §1.5)
    first_timestamp: object = None
    last_timestamp: object = None
    updates: int = 0   # lines that replaced a message still on the chain
    rewinds: int = 0
    dropped: int = 0   # messages that left the chain (rewound, or left out of a $set.messages)
    settled: list | None = None  # once the file is read (settle): [turns, resumable, opening, model]

    def chain(self) -> Chain:
        """A chain that goes on from these facts (it shares their metadata and messages)."""
        return Chain(_sketch, meta=self.meta, messages=self.messages)

    def settle(self) -> None:
        """Once the file is read: keep what the properties below answer, not a sketch of each message.

        A check of a whole ``~/.gemini`` holds every session's facts until its report is printed:
        the sketches (id, type, preview, model of every message) made ``fsck`` of 400 MB of
        sessions peak at 104 MiB, growing with the tree.  A scan that goes on later (``--incremental``)
        goes on from its checkpoint, taken before this, which holds the chain whole."""
        if self.settled is None:
            self.settled = [self.turns, self.resumable, self._opening(), self.model]
            self.messages = {}

    def _opening(self) -> str | None:
        return next((s[2] for s in self.messages.values() if s[0] == "user" and s[1]), None)

    def _text(self, key: str) -> str | None:
        value = self.meta.get(key)
        return value if isinstance(value, str) else None

    @property
    def session_id(self) -> str | None:
        return self._text("sessionId")

    @property
    def project_hash(self) -> str | None:
        return self._text("projectHash")

    @property
    def start_time(self) -> str | None:
        return self._text("startTime")

    @property
    def last_updated(self) -> str | None:
        return self._text("lastUpdated")

    @property
    def kind(self) -> str | None:
        return self._text("kind")

    @property
    def loadable(self) -> bool:
        """Gemini loads the file: its metadata has a string sessionId and projectHash (§1.3, §1.5)."""
        return isinstance(self.meta.get("sessionId"), str) and isinstance(self.meta.get("projectHash"), str)

    @property
    def resumable(self) -> bool:
        if self.settled is not None:
            return self.settled[1]
        return any(s[1] for s in self.messages.values())

    @property
    def turns(self) -> int:
        if self.settled is not None:
            return self.settled[0]
        return sum(1 for s in self.messages.values() if s[0] == "user" and s[1])

    @property
    def title(self) -> str | None:
        summary = self._text("summary")
        if summary:
            return one_line(summary)
        return self.settled[2] if self.settled is not None else self._opening()

    @property
    def model(self) -> str | None:
        if self.settled is not None:
            return self.settled[3]
        return next((s[3] for s in reversed(self.messages.values()) if s[3]), None)

    def hidden_because(self) -> str | None:
        """Why Gemini's session list leaves this file out (``sessionInfo: null``, §1.5), or None."""
        if not self.loadable:
            return "its metadata line is missing or does not parse"
        if self.kind == "subagent":
            return "it is a subagent session (kind \"subagent\")"
        if not self.resumable:
            return "it holds no resumable message"
        return None


class GeminiRules:
    """Line rules: metadata first; every other line one of §1.2's kinds; and the facts.

    A record recovered from inside a damaged line (``quiet``) is counted but not applied: Gemini
    parses each line whole and skips one that does not parse."""

    def __init__(self, reader) -> None:
        self.c = reader
        self.facts = GeminiFacts()
        self.chain = self.facts.chain()
        self.seen_first = False

    def record(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        c = self.c
        if type(obj) is not dict:
            c.sink.add("invalid-record", "JSON but not an object: Gemini skips the line", c.lineno, offset, line)
            return
        c.records += 1
        if quiet:
            return
        facts = self.facts
        kind = self.chain.apply(obj)
        if kind == OTHER:
            c.sink.add("unknown-kind", "an object that is no message ($rewindTo, id), $set or metadata line: Gemini "
                       "skips it", c.lineno, offset, line)
        if not self.seen_first:
            self.seen_first = True
            facts.meta_first = kind == META and c.lineno == 1
            if not facts.meta_first:
                c.sink.add("missing-meta", "the file does not open with its metadata line (sessionId, projectHash): "
                           "Gemini cannot load it, and its next start deletes it", c.lineno, offset, line)
        stamp = obj.get("timestamp") if kind != META else obj.get("startTime")
        if isinstance(stamp, str):
            facts.first_timestamp = facts.first_timestamp or stamp
            facts.last_timestamp = stamp

    def finish(self, size: int, tail_state: object) -> None:
        facts, chain = self.facts, self.chain
        facts.updates, facts.rewinds, facts.dropped = chain.updates, chain.rewinds, chain.dropped
        facts.settle()


def first_record(path: Path) -> tuple[object, bytes]:
    """The first line of ``path`` parsed (None when it does not parse) and its bytes (at most 1 MiB)."""
    from ...lines import first_line, loads

    try:
        line = first_line(path)
    except OSError:
        return None, b""
    try:
        return loads(line), line
    except ValueError:
        return None, line


def sniff_file(path: Path) -> str | None:
    """``gemini`` when ``path`` opens with a Gemini line (or bytes that can only be a cut-off one),
    another format's name, or None."""
    from ...identify import sniff

    record, line = first_record(path)
    if record is None:
        return GEMINI.name if line and GEMINI.partial_ok(line) and line.lstrip().startswith(b"{") else None
    found = sniff(record)
    return GEMINI.name if GEMINI.identify(record, found) else found


def _chat_folders(project_dir: Path) -> list[Path]:
    chats = project_dir / CHATS
    return [chats] if _is_dir(chats) else []


class Gemini(ForeignLayout):
    name = "gemini"
    key = "id"
    first_key = b"sessionId"
    cache_lists_journals = False
    data_name = "gemini"   # ~/.gemini -> <data>/levelsess/gemini/gemini-<hash>
    tool = "gemini"
    tool_title = "Gemini CLI"

    def identify(self, obj: object, found: str | None) -> bool:
        """Its metadata line (identify.sniff's ``gemini`` row), or, where the metadata line was lost,
        a Gemini message by its own keys (a bare ``id`` entry reads as Logician to the sniffer)."""
        return found == self.name or (found in (None, "logician") and is_message_shape(obj))

    def is_record(self, obj: dict) -> bool:
        from .chat import classify

        return classify(obj) != OTHER

    def partial_ok(self, data: bytes) -> bool:
        """Bytes holding no whole record are still a session when they open one of its lines."""
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        body = body.lstrip(b"\0 \t\r\n")
        if not body:
            return True
        if _FOREIGN_KEYS.search(body[:4096]):
            return False
        compact = re.sub(rb"\s+", b"", body[:64])
        return any(compact.startswith(o) or o.startswith(compact) for o in _OPENINGS)

    def rules(self, reader) -> GeminiRules:
        return GeminiRules(reader)

    # -- discovery ------------------------------------------------------------------------

    def _votes(self, folders: list[Path], sample: int = 3) -> tuple[int, int]:
        ours = theirs = 0
        for folder in folders:
            try:
                listed = [Path(e.path) for e in entries(folder) if is_session_name(e.name)][:20]
            except (PermissionDeniedError, NotAStoreError):
                continue
            for journal in listed:
                found = sniff_file(journal)
                ours += found == self.name
                theirs += found is not None and found != self.name
                if ours + theirs >= sample:
                    return ours, theirs
        return ours, theirs

    def _folders(self, chats: list[Path], home: Path) -> list[Folder]:
        """One folder per ``chats/`` (its ``session-*.jsonl``), one per subagent folder in it."""
        found = []
        for folder in chats:
            try:
                listed = entries(folder)
            except PermissionDeniedError as exc:
                found.append(Folder(folder, self, home, (), problem=str(exc)))
                continue
            except NotAStoreError:
                continue
            found.append(Folder(folder, self, home, tuple(Path(e.path) for e in listed if is_session_name(e.name))))
            for entry in listed:
                sub = Path(entry.path)
                if not entry.name.startswith(".") and _is_dir(sub):
                    found += self._subagent_folder(sub, home)
        return found

    def _subagent_folder(self, sub: Path, home: Path, whole: bool = True) -> list[Folder]:
        """A session's subagent folder (``whole=False`` when it was named itself: its sessions are listed)."""
        try:
            journals = tuple(Path(e.path) for e in entries(sub) if e.name.endswith(".jsonl") and not e.name.startswith("."))
        except PermissionDeniedError as exc:
            return [Folder(sub, self, home, (), problem=str(exc))]
        except NotAStoreError:
            return []
        return [Folder(sub, self, home, journals, whole=whole)] if journals else []

    def claim_dir(self, path: Path) -> list[Folder] | None:
        home = home_of(path)
        if home is None:
            return None
        tmp = home / TMP
        if path == home or path == tmp:
            try:
                projects = [Path(e.path) for e in entries(tmp) if not e.name.startswith(".") and _is_dir(Path(e.path))]
            except (PermissionDeniedError, NotAStoreError):
                projects = []
            chats = [c for p in projects for c in _chat_folders(p)]
        elif path.parent == tmp:
            chats = _chat_folders(path)
        elif path.name == CHATS and path.parent.parent == tmp:
            chats = [path]
        elif path.parent.name == CHATS and path.parent.parent.parent == tmp:  # one session's subagents
            ours, theirs = self._subagent_votes(path)
            return self._subagent_folder(path, home, whole=False) if ours and not theirs else None
        else:
            return None
        ours, theirs = self._votes(chats)
        if not (home.name == ".gemini" or ours > theirs):  # a stray foreign file is reported, never taken for all
            return None
        return self._folders(chats, home)

    def _subagent_votes(self, folder: Path) -> tuple[int, int]:
        ours = theirs = 0
        try:
            listed = [Path(e.path) for e in entries(folder) if e.name.endswith(".jsonl")][:3]
        except (PermissionDeniedError, NotAStoreError):
            return 0, 0
        for journal in listed:
            found = sniff_file(journal)
            ours += found == self.name
            theirs += found is not None and found != self.name
        return ours, theirs

    def claim_file(self, path: Path) -> Folder | None:
        home = home_of(path.parent)
        if home is None or sniff_file(path) != self.name:
            return None
        in_chats = path.parent.name == CHATS or path.parent.parent.name == CHATS
        if not in_chats:
            return None
        return Folder(path.parent, self, home, (path,), whole=False)

    def session_id(self, folder: Folder, journal: Path) -> str:
        return journal.stem

    # -- what Gemini's sweep and its list make of a folder ----------------------------------

    def folder_findings(self, folder: Folder, scans: list) -> list:
        """Legacy ``.json`` sessions checked as one JSON document, and the sessions the next Gemini
        start in this project deletes (``sweep-due``): :mod:`.sweep`."""
        from .sweep import folder_findings

        return folder_findings(self, folder, scans)

    def extra_rows(self, folder: Folder) -> list:
        """Legacy whole-file ``session-*.json`` sessions in a ``chats/`` folder, read as one document."""
        from .sweep import legacy_files

        if not folder.whole or folder.path.name != CHATS or folder.problem is not None:
            return []
        return [legacy_row(path) for path in legacy_files(folder)]

    # -- live writers: no lock file; an open descriptor, a running Gemini --------------------

    def session_of(self, journal: Path) -> str | None:
        record, _line = first_record(journal)
        sid = record.get("sessionId") if isinstance(record, dict) else None
        return sid if isinstance(sid, str) and sid else None

    def project_of(self, journal: Path) -> str | None:
        chats = journal.parent if journal.parent.name == CHATS else journal.parent.parent
        root = project_root(chats.parent)
        return os.path.normcase(os.path.normpath(root)) if root else None

    def works_in(self, proc, project: str) -> bool:
        return os.path.normcase(os.path.normpath(proc.cwd)) == project

    # -- listings and rendering -------------------------------------------------------------

    def row(self, folder, journal, scan, state, reason):
        from ...index import utc_iso
        from ...rows import SessionRow

        facts = scan.facts
        subagent = journal.parent.name != CHATS
        if subagent and folder.whole:
            return None  # Gemini lists no subagent session; shown with its parent's folder when named
        hidden = None if subagent or not scan.identified else facts.hidden_because() or _twin_wins(journal, facts)
        if hidden:  # shown all the same (the sweep deletes it next): the state and reason say so
            reason = f"{reason}; " * bool(reason) + f"Gemini does not list it: {hidden}"
            state = "hidden" if state == "clean" else state
        chats = journal.parent if not subagent else journal.parent.parent
        project = project_root(chats.parent, facts.project_hash) or chats.parent.name
        return SessionRow(facts.session_id or journal.stem, journal, self.name, project, facts.title,
                          facts.start_time or facts.first_timestamp,
                          facts.last_updated or facts.last_timestamp or utc_iso(scan.mtime_ns / 1e9),
                          facts.turns, facts.model, scan.size, state, reason)

    def markdown(self, path: Path, title: object) -> Iterator[str]:
        from .render import markdown

        return markdown(path, self, title)

    def json_open(self, records: Iterator[bytes]) -> bytes:
        return b'{\n  "records": '

    def trash_paths(self, journal: Path) -> tuple[Path, ...]:
        return (journal,)

    # -- fsck --relink: rebuild a torn or missing metadata line (:mod:`.rescue`) -------------

    relinks = True

    def relink_needed(self, scan) -> bool:
        """The session's metadata line is torn or missing (Gemini cannot load it; its sweep deletes it)."""
        from .rescue import needs

        return needs(scan)

    def relink_refusal(self, scan) -> str | None:
        """Why the metadata line cannot be rebuilt (the value that cannot be proven), or None."""
        from .rescue import plan_meta

        plan = plan_meta(scan)
        return plan if isinstance(plan, str) else None

    def relink_detail(self, scan) -> str:
        from .rescue import plan_meta

        plan = plan_meta(scan)
        return plan if isinstance(plan, str) else plan.describe()

    def relink_fixes(self, scan) -> tuple[str, ...]:
        from .rescue import fixes

        return fixes(scan)

    def relink_journal(self, scan, quarantine_root: Path, label: str) -> Path:
        from .rescue import rescue_journal

        return rescue_journal(scan, quarantine_root, label)


def _updated(facts: GeminiFacts) -> float:
    from ...rows import instant

    moment = instant(facts.last_updated)
    return moment.timestamp() if moment is not None else float("-inf")


def _twin_wins(path: Path, facts: GeminiFacts) -> str | None:
    """Resuming a legacy ``.json`` writes ``<name>.jsonl`` beside it with the same sessionId; Gemini's
    list keeps the one updated last (§1.3).  Why ``path`` is the one left out, or None."""
    twin = path.with_suffix(".jsonl" if path.suffix == ".json" else ".json")
    try:
        if not twin.is_file():
            return None
    except OSError:
        return None
    if twin.suffix == ".json":
        from .sweep import legacy_session

        theirs = legacy_facts(legacy_session(twin)[0])
    else:
        from ...journal import scan_journal
        from ...errors import LevelsessError

        try:
            theirs = scan_journal(twin, GEMINI).facts
        except LevelsessError:
            return None
    if theirs.hidden_because() or theirs.session_id != facts.session_id:
        return None
    mine, other = _updated(facts), _updated(theirs)
    later = other > mine or (other == mine and twin.suffix == ".json")  # a tie: the first listed (.json sorts first)
    return f"it lists its twin {twin.name} (same session, updated later) instead" if later else None


def legacy_facts(value: dict | None) -> GeminiFacts:
    """The facts of a legacy whole-file session (its ``messages`` are the chain, §1.3)."""
    facts = GeminiFacts(meta_first=value is not None)
    if value is not None:
        facts.meta.update({k: v for k, v in value.items() if k != "messages"})
        facts.chain().replace(value["messages"] if isinstance(value.get("messages"), list) else [])
    facts.settle()
    return facts


def legacy_row(path: Path):
    """A listing row for a legacy ``.json`` session (never written: shown, checked, imported from)."""
    from ...index import utc_iso
    from ...rows import SessionRow
    from .sweep import legacy_session

    value, problem = legacy_session(path)
    facts = legacy_facts(value)
    try:
        info = path.stat()
        size, mtime = info.st_size, utc_iso(info.st_mtime)
    except OSError:
        size, mtime = 0, None
    state, reason = ("corrupt", problem.message) if problem is not None else ("clean", "legacy whole-file .json, read only")
    hidden = facts.hidden_because() or _twin_wins(path, facts)
    if hidden:
        reason = f"{reason}; Gemini does not list it: {hidden}"
        state = "hidden" if state == "clean" else state
    project = project_root(path.parent.parent, facts.project_hash) or path.parent.parent.name
    return SessionRow(facts.session_id or path.stem, path, GEMINI.name, project, facts.title, facts.start_time,
                      facts.last_updated or mtime, facts.turns, facts.model, size, state, reason)


GEMINI = Gemini()
