"""The Codex CLI layout: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`` and
``archived_sessions/rollout-*.jsonl``, append-only rollouts of ``{timestamp, [ordinal,] type,
payload}`` records whose first is ``session_meta`` (SOURCES-AGENTS.md §2, DESIGN.md §2.6).

Codex's tree is not levelsess's: no cache, no lock file, and nothing levelsess saves (recovered
bytes, quarantine) goes inside it; those live in levelsess's own data folder.  A live writer
shows as an open file descriptor or as a running Codex whose working folder is the thread's cwd
or whose command line names the thread (:mod:`toolkit.live`), not as a lock.  Only rollouts are
journals: ``history.jsonl``, ``session_index.jsonl``, ``state_*.sqlite`` and ``logs_*`` are
never read as such.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .base import Folder, ForeignLayout, entries, one_line
from .codex_names import ARCHIVED, SESSIONS, default_roots, home_of, is_rollout_name, thread_id  # noqa: F401 (re-exported)
from .codex_seen import as_envelope, context_cwd, is_legacy_line, is_legacy_meta, message_text, parent_of, typed_prompt
from ..errors import NotAStoreError, PermissionDeniedError

TYPES = frozenset({"session_meta", "event_msg", "response_item", "turn_context", "compacted"})
_ENVELOPE = ({"timestamp", "type", "payload"}, {"timestamp", "ordinal", "type", "payload"})
_OPENING = b'{"timestamp":'
_LEGACY_OPENING = b'{"id":'  # a pre-envelope rollout's bare session metadata
#: Response items a pre-envelope rollout writes bare (what the splitter of a damaged line takes for a
#: record: a content block's ``type`` is none of these).
_LEGACY_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output", "local_shell_call",
                           "custom_tool_call", "custom_tool_call_output", "web_search_call"})
_FOREIGN_KEYS = re.compile(rb'"(parentUuid|uuid|sessionId|kind|role|leafUuid)"\s*:')


@dataclass
class CodexFacts:
    """What listings, show and import need from a rollout."""

    session_id: str | None = None
    created_at: str | None = None     # session_meta.payload.timestamp
    cwd: str | None = None
    cli_version: str | None = None    # Codex's own version string: not a schema version
    originator: str | None = None
    source: str | None = None         # cli | vscode | exec | subagent | …
    forked_from_id: str | None = None
    parent_id: str | None = None      # the thread it was forked or spawned from (codex_seen.parent_of)
    first_timestamp: object = None
    last_timestamp: object = None
    first_prompt: str | None = None        # the first prompt typed in this thread
    inherited_prompt: str | None = None    # a fork's: the parent's replayed one
    turns: int = 0
    model: str | None = None

    @property
    def title(self) -> str | None:
        return self.first_prompt or self.inherited_prompt


def legacy_record(obj: object) -> bool:
    """A whole line of a pre-envelope rollout (what the splitter of a damaged line takes for a record
    in such a file): its bare session metadata, a state marker, or a bare response item."""
    if type(obj) is not dict:
        return False
    if is_legacy_meta(obj) or (set(obj) <= {"record_type"} | _STATE_KEYS and isinstance(obj.get("record_type"), str)):
        return True
    kind = obj.get("type")
    return isinstance(kind, str) and kind in _LEGACY_ITEMS and "payload" not in obj and (kind != "message" or isinstance(obj.get("role"), str))


_STATE_KEYS = frozenset({"previous_response_id"})


def _source(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value:
        return next(iter(value))  # {"subagent": {...}} -> "subagent"
    return None


class CodexRules:
    """Line-level record rules: ``session_meta`` first, ``ordinal`` increasing; and the facts."""

    def __init__(self, reader) -> None:
        self.c = reader
        self.facts = CodexFacts()
        self.ordinal: int | None = None
        self.ordinal_at = 0
        self.metas = 0
        self.legacy = False      # a pre-envelope rollout: bare items, read as the envelopes they stand for
        self.replaying = False   # inside a fork's replay of its parent (SOURCES-AGENTS §2.9)
        self.replayed_turn = False

    def record(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        c = self.c
        if c.records == 0 and is_legacy_meta(obj):
            self.legacy = True  # a pre-envelope rollout (mid-2025): bare items and state markers follow
            c.is_record = legacy_record  # so a damaged line of this file is split at its own records
        if self.legacy:
            if not (is_legacy_meta(obj) if c.records == 0 else is_legacy_line(obj)):
                c.sink.add("invalid-record", "JSON but not a line of a pre-envelope rollout (a bare item with a string "
                           "\"type\", or a \"record_type\" marker)", c.lineno, offset, line)
                return
            obj = as_envelope(obj)
        elif type(obj) is not dict or type(obj.get("type")) is not str or type(obj.get("payload")) is not dict:
            c.sink.add("invalid-record", "JSON but not a rollout record (a string \"type\" and an object \"payload\")",
                       c.lineno, offset, line)
            return
        c.records += 1
        facts, payload, kind = self.facts, obj["payload"], obj["type"]
        if c.records == 1 and kind != "session_meta":
            c.sink.add("missing-meta", f"the first record is {kind!r}, not session_meta: Codex finds no thread id in it "
                       "and lists no session for the file", c.lineno, offset, line)
        self._ordinal(obj.get("ordinal"), offset, line)
        stamp = obj.get("timestamp")
        if stamp is not None:
            if facts.first_timestamp is None:
                facts.first_timestamp = stamp
            facts.last_timestamp = stamp
        if kind == "session_meta":
            self._meta(payload)
        elif kind == "event_msg":
            self._event(payload)
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            facts.model = payload["model"]
        elif self.legacy and kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            self._prompt(message_text(payload.get("content"), ("input_text",)))  # no user_message events yet

    def _ordinal(self, ordinal: object, offset: int, line: bytes) -> None:
        """Newer writers number records; a reused or lower ordinal blocks resume (#35746, #45150)."""
        if type(ordinal) is not int:
            return
        c = self.c
        if self.ordinal is not None:
            if ordinal == self.ordinal:
                c.sink.add("seq-duplicate", f"ordinal {ordinal} repeats the one at line {self.ordinal_at}: Codex "
                           "cannot resume the thread", c.lineno, offset, line)
            elif ordinal < self.ordinal:
                c.sink.add("seq-gap", f"ordinal {ordinal} goes back (line {self.ordinal_at} has {self.ordinal}): Codex "
                           "cannot resume the thread", c.lineno, offset, line)
        self.ordinal, self.ordinal_at = ordinal, c.lineno

    def _meta(self, payload: dict) -> None:
        facts = self.facts
        self.metas += 1
        if self.metas > 1:  # a fork carries its parent's session_meta next: the replay starts
            if facts.parent_id is not None and self.metas == 2:
                self.replaying = True
            return
        text = {key: value if isinstance(value, str) else None for key, value in payload.items()
                if key in ("id", "timestamp", "cwd", "cli_version", "originator", "forked_from_id")}
        facts.session_id, facts.created_at, facts.cwd = text.get("id"), text.get("timestamp"), text.get("cwd")
        facts.cli_version, facts.originator = text.get("cli_version"), text.get("originator")
        facts.forked_from_id, facts.parent_id = text.get("forked_from_id"), parent_of(payload)
        facts.source = _source(payload.get("source"))

    def _event(self, payload: dict) -> None:
        kind = payload.get("type")
        if self.replaying:
            if kind == "task_started" and self.replayed_turn:
                self.replaying = False
            elif kind in ("user_message", "agent_message"):
                self.replayed_turn = True
        if kind == "user_message" and isinstance(payload.get("message"), str):
            self._prompt(payload["message"])

    def _prompt(self, message: str | None) -> None:
        typed = typed_prompt(message)
        if typed is None:  # only context Codex or the IDE put in: no turn, never a title
            if self.legacy and self.facts.cwd is None:
                self.facts.cwd = context_cwd(message)  # a pre-envelope meta has no cwd: the context names it
            return
        text = one_line(typed) or None
        facts = self.facts
        if self.replaying:
            facts.inherited_prompt = facts.inherited_prompt or text
            return
        facts.turns += 1
        facts.first_prompt = facts.first_prompt or text

    def finish(self, size: int, tail_state: object) -> None:
        pass


def first_record(path: Path, info: list | None = None) -> tuple[object, bool]:
    """The first record of ``path`` parsed (reading at most 1 MiB: a session_meta line is big,
    :func:`~toolkit.lines.first_line`) and whether its bytes could be one cut off; (None, False)
    for an unreadable file.  ``info``: the stat of the file read is appended to it."""
    from ..lines import first_line, loads

    try:
        line = first_line(path, info=info)
    except OSError:
        return None, False
    try:
        return loads(line), False
    except ValueError:
        return None, CODEX.partial_ok(line)


class FirstFacts(NamedTuple):
    """What an importer asks of a rollout's first record before it reads the rollout: whether
    there is one, the format it says (:func:`~toolkit.identify.sniff`), and whether it opens a
    pre-envelope rollout (:func:`~toolkit.layouts.codex_seen.is_legacy_meta`)."""

    present: bool
    sniffed: str | None
    legacy: bool

    @classmethod
    def of(cls, record: object) -> FirstFacts:
        from ..identify import sniff

        return cls(record is not None, sniff(record) if record is not None else None, is_legacy_meta(record))


def sniff_file(path: Path) -> str | None:
    """What the first record of ``path`` looks like (identify.sniff); None when it cannot tell."""
    from ..identify import sniff

    record, _partial = first_record(path)
    return sniff(record) if record is not None else None


def _folder(path: str) -> str:
    """A folder's path as a string to compare (never resolved: no other file system is asked)."""
    return os.path.normcase(os.path.normpath(path))


def _cd_args(argv: tuple[str, ...]) -> list[str]:
    """The folders ``codex -C DIR`` / ``--cd DIR`` / ``--cd=DIR`` / ``-CDIR`` sets the thread's cwd to."""
    found = []
    for i, arg in enumerate(argv[1:], 1):
        if arg in ("-C", "--cd") and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--cd="):
            found.append(arg[len("--cd="):])
        elif arg.startswith("-C") and len(arg) > 2 and not arg.startswith("--"):
            found.append(arg[2:])
    return found


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _rollout_folders(top: Path, depth: int) -> Iterator[Path]:
    """``top`` and the date folders under it, ``depth`` levels down (``sessions/YYYY/MM/DD``), by
    name.  Only all-digit names are date folders: a LevelCode store named ``sessions`` costs
    one listing, not a walk."""
    if not _is_dir(top):  # a home with sessions/ but no archived_sessions/ yet, say
        return
    yield top
    if depth == 0:
        return
    try:
        listed = entries(top)
    except (PermissionDeniedError, NotAStoreError):
        return
    for entry in listed:
        if entry.name.isdigit() and _is_dir(Path(entry.path)):
            yield from _rollout_folders(Path(entry.path), depth - 1)


def _rollouts(folder: Path) -> tuple[Path, ...]:
    return tuple(Path(e.path) for e in entries(folder) if is_rollout_name(e.name))


def _ours(ours: int, theirs: int) -> bool:
    """Rollouts that open with a Codex record outvote the others: a stray file of another format
    among them is that file's own ``unknown-format`` finding, never a reason to leave every
    rollout of the home unchecked."""
    return ours > 0 and ours >= theirs


class Codex(ForeignLayout):
    name = "codex"
    key = "type"
    first_key = b"timestamp"
    cache_lists_journals = False

    def identify(self, obj: object, found: str | None) -> bool:
        return found == self.name

    def is_record(self, obj: dict) -> bool:
        """A rollout record exactly: the envelope's keys and no others, a string type, an object
        payload (what the splitter tells from a value nested inside a payload)."""
        if set(obj) in _ENVELOPE:
            return isinstance(obj.get("type"), str) and isinstance(obj.get("payload"), dict)
        # a pre-envelope file's first line; its bare items only in such a file (legacy_record):
        # in an envelope file they are the payloads nested inside records
        return is_legacy_meta(obj)

    def record_test(self, first: object):
        """A pre-envelope rollout's records are its bare lines; every other file's, envelopes."""
        return legacy_record if is_legacy_meta(first) else self.is_record

    def partial_ok(self, data: bytes) -> bool:
        """A file holding no whole record is still a rollout when its bytes open one."""
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        body = body.lstrip(b"\0 \t\r\n")
        if not body:
            return True
        if _FOREIGN_KEYS.search(body[:4096]):
            return False
        compact = re.sub(rb"\s+", b"", body[:64])
        return any(compact.startswith(opening) or opening.startswith(compact) for opening in (_OPENING, _LEGACY_OPENING))

    def rules(self, reader) -> CodexRules:
        return CodexRules(reader)

    # -- discovery ------------------------------------------------------------------------

    def _votes(self, folders: list[Path], sample: int = 3) -> tuple[int, int]:
        """(Codex rollouts, files of another format) among the first few rollouts in ``folders``."""
        ours = theirs = 0
        for folder in folders:
            try:
                rollouts = _rollouts(folder)
            except (PermissionDeniedError, NotAStoreError):
                continue
            for rollout in rollouts[:20]:
                found = sniff_file(rollout)
                ours += found == self.name
                theirs += found is not None and found != self.name
                if ours + theirs >= sample:
                    return ours, theirs
        return ours, theirs

    def _folders(self, tops: list[tuple[Path, int]], home: Path) -> list[Folder]:
        found = []
        for top, depth in tops:
            for folder in _rollout_folders(top, depth):
                try:
                    journals = _rollouts(folder)
                except PermissionDeniedError as exc:
                    found.append(Folder(folder, self, home, (), problem=str(exc)))
                    continue
                except NotAStoreError:
                    continue
                if journals:
                    found.append(Folder(folder, self, home, journals))
        return found

    def _claims(self, tops: list[tuple[Path, int]], named: bool) -> bool:
        folders = [f for top, depth in tops for f in _rollout_folders(top, depth)]
        ours, theirs = self._votes(folders)
        return _ours(ours, theirs) or (theirs == 0 and named)

    def claim_dir(self, path: Path) -> list[Folder] | None:
        home = home_of(path)
        if _is_dir(path / SESSIONS) or _is_dir(path / ARCHIVED):  # a Codex home
            tops = [(path / SESSIONS, 3), (path / ARCHIVED, 0)]
            if self._claims(tops, path.name == ".codex"):
                return self._folders(tops, path)
            return None
        if path.name in (SESSIONS, ARCHIVED) or home != path:  # sessions/, archived_sessions/, YYYY/, …, a date folder
            tops = [(path, 0 if path.name == ARCHIVED else 3)]
            if self._claims(tops, home.name == ".codex"):
                return self._folders(tops, home)
            return None
        tops = [(path, 0)]  # any folder holding rollouts (a copy, an older generation's flat folder)
        ours, theirs = self._votes([path])
        return self._folders(tops, path) if _ours(ours, theirs) else None

    def claim_file(self, path: Path) -> Folder | None:
        record, partial = first_record(path)
        from ..identify import sniff

        found = sniff(record) if record is not None else None
        if found != self.name and not (found is None and is_rollout_name(path.name) and (partial or record is None)):
            return None
        if not is_rollout_name(path.name) and self._among_others(path):
            return None  # a stray among another layout's journals: that layout reports it as foreign
        if found is None and not (home_of(path.parent) != path.parent or self._votes([path.parent])[0]):
            return None  # a rollout-named file that cannot tell, outside any Codex tree: not ours to judge
        return Folder(path.parent, self, home_of(path.parent), (path,), whole=False)

    def _among_others(self, path: Path) -> bool:
        """True when a journal beside ``path`` opens with a record of another format."""
        from ..identify import sniff

        try:
            beside = [e for e in entries(path.parent) if e.name.endswith(".jsonl") and e.name != path.name][:20]
        except (PermissionDeniedError, NotAStoreError):
            return False
        for entry in beside[:3]:
            record, _partial = first_record(Path(entry.path))
            if record is not None and sniff(record) not in (None, self.name):
                return True
        return False

    def session_id(self, folder: Folder, journal: Path) -> str:
        return thread_id(journal) or journal.stem

    data_name = "codex"  # ~/.codex -> codex-<hash>

    # -- live writers: no lock file; an open descriptor, a running Codex ---------------------

    tool = "codex"
    tool_title = "Codex CLI"

    def session_of(self, journal: Path) -> str | None:
        return thread_id(journal)

    def project_of(self, journal: Path) -> str | None:
        """``session_meta``'s cwd: the folder the thread works in (read only while Codex runs)."""
        record, _partial = first_record(journal)
        payload = record.get("payload") if isinstance(record, dict) and record.get("type") == "session_meta" else None
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        return _folder(cwd) if isinstance(cwd, str) and cwd else None

    def works_in(self, proc, project: str) -> bool:
        """The process works in ``project``: its own folder, or the one ``-C``/``--cd`` names."""
        return project in {_folder(proc.cwd), *(_folder(os.path.join(proc.cwd, d)) for d in _cd_args(proc.argv))}

    # -- listings and rendering -------------------------------------------------------------

    def row(self, folder, journal, scan, state, reason):
        from ..index import utc_iso
        from ..rows import SessionRow

        facts = scan.facts
        return SessionRow(facts.session_id or self.session_id(folder, journal), journal, self.name, facts.cwd, facts.title,
                          facts.created_at or facts.first_timestamp, facts.last_timestamp or utc_iso(scan.mtime_ns / 1e9),
                          facts.turns, facts.model, scan.size, state, reason)

    def markdown(self, path: Path, title: object) -> Iterator[str]:
        from ..render_codex import markdown

        return markdown(path, self, title)

    def json_open(self, records: Iterator[bytes]) -> bytes:
        return b'{\n  "records": '

    def trash_paths(self, journal: Path) -> tuple[Path, ...]:
        return (journal,)


CODEX = Codex()
