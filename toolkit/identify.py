"""Recognise what wrote a JSONL file from its first record (SOURCES-AGENTS.md §5).

levelsess writes to or beside a journal only once its own records say which layout it is
(DESIGN.md §1, principle 7).  :func:`sniff` names the format of one parsed record; the rows
are tried top to bottom and the first that matches wins, exactly as the table says, so a
record that matches none is ``None`` (unknown): report it, never guess.
"""

from __future__ import annotations

import re


LEVELCODE = "levelcode"
LOGICIAN = "logician"

#: What a person is told a foreign file looks like.
DESCRIPTIONS = {
    LEVELCODE: "a LevelCode journal",
    LOGICIAN: "a Logician entry log",
    "claude-code": "a Claude Code session",
    "codex": "a Codex CLI rollout",
    "gemini": "a Gemini CLI session",
    "copilot": "a GitHub Copilot CLI event log",
    "cursor-agent": "a Cursor agent transcript",
    "vscode-log": "a VS Code chat session log",
}

_LEVELCODE_KINDS = frozenset({"meta", "user", "assistant", "agent", "event", "title", "compact"})
_CODEX_TYPES = frozenset({"session_meta", "event_msg", "response_item", "turn_context", "compacted"})
_CLAUDE_CHAIN = frozenset({"user", "assistant", "system", "progress", "attachment"})
_CLAUDE_META = frozenset({"summary", "file-history-snapshot", "queue-operation", "permission-mode", "last-prompt",
                          "ai-title", "custom-title", "agent-name", "pr-link", "mode"})
_COPILOT_KEYS = frozenset({"type", "data", "id", "timestamp", "parentId"})
_DOTTED = re.compile(r"^[a-z]+(\.[a-z_]+)+$")


def sniff(record: object) -> str | None:
    """Return the format one parsed first record belongs to, or None when it matches no row."""
    if type(record) is not dict:
        return None
    kind, kind_of = record.get("kind"), record.get("type")
    if type(kind) is int and isinstance(record.get("v"), dict | list):
        return "vscode-log"
    if _is_gemini(record):
        return "gemini"
    if isinstance(kind, str) and kind in _LEVELCODE_KINDS and not _has(record, "payload", "uuid", "parentUuid"):
        return LEVELCODE
    if "payload" in record and isinstance(kind_of, str) and kind_of in _CODEX_TYPES and not _has(record, "parentUuid", "kind", "role"):
        return "codex"
    if set(record) == _COPILOT_KEYS and isinstance(kind_of, str) and _DOTTED.match(kind_of):
        return "copilot"
    if set(record) == {"role", "message"} and record.get("role") in ("user", "assistant"):
        return "cursor-agent"
    if isinstance(kind_of, str) and not _has(record, "id", "kind", "payload", "role"):
        if "parentUuid" in record and kind_of in _CLAUDE_CHAIN:
            return "claude-code"
        if kind_of in _CLAUDE_META and "uuid" not in record:
            return "claude-code"
    from .layouts.codex_seen import is_legacy_meta  # (loaded only for a record nothing above named)

    if is_legacy_meta(record):  # a Codex rollout from before the envelope (mid-2025): its bare session metadata
        return "codex"
    if isinstance(record.get("id"), str) and not _has(record, "uuid", "parentUuid", "kind"):
        parent = record.get("parentId")
        if parent is None or isinstance(parent, str):
            return LOGICIAN
    return None


def _is_gemini(record: dict) -> bool:
    """A Gemini CLI metadata line (string sessionId and projectHash, no message or foreign key), or
    one of its ``$set`` / ``$rewindTo`` lines (SOURCES-MORE §1.2)."""
    if len(record) == 1 and ("$set" in record or "$rewindTo" in record):
        return True
    return (isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)
            and not _has(record, "id", "type", "uuid", "parentUuid", "payload"))


def _has(record: dict, *keys: str) -> bool:
    return any(key in record for key in keys)


def describe(found: str | None) -> str:
    """What a file whose first record is ``found`` looks like, in words."""
    return DESCRIPTIONS.get(found or "", "JSONL of an unknown shape")


#: Keys only foreign formats use, as they appear in raw bytes (for files with no whole record).
_FOREIGN_KEYS = re.compile(rb'"(parentUuid|sessionId|uuid|payload|leafUuid|isSidechain)"\s*:')
_LEADING_KEY = re.compile(rb'^\s*\{\s*"([^"\\]{1,40})"\s*:')


def sniff_partial(data: bytes, own: bytes) -> bool:
    """True when the bytes of a file holding no whole record can be a cut-off record of a layout
    whose writers put the key ``own`` first (``kind`` for LevelCode, ``id`` for Logician).

    All NUL (a power cut at birth) or whitespace qualifies; otherwise the bytes must open a JSON
    object whose first key is ``own`` and name no key of another format.
    """
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    if not body.strip(b"\0 \t\r\n"):
        return True
    head = body.lstrip(b"\0 \t\r\n")[:4096]
    if _FOREIGN_KEYS.search(head):
        return False
    match = _LEADING_KEY.match(head)
    if match is None:  # cut inside the first key: it must be able to become the layout's own
        compact = re.sub(rb"\s+", b"", head)
        return compact.startswith(b"{") and (b'{"' + own + b'":').startswith(compact)
    return match.group(1) == own


#: Lines :func:`identify_lines` reads, at most, for a record that says which format a file is.
IDENTIFY_LINES = 32
#: Formats a record of almost any shape falls into (a Logician entry is any object with a string
#: ``id``): a damaged envelope of another format (an extra or a cut key) sniffs as one, so a
#: record that sniffs only as this says nothing about the file.
GENERIC = frozenset({LOGICIAN})


#: A line longer than this is known by its head (:func:`toolkit.jsonarray.skeleton`), not parsed whole.
LONG_LINE = 1 << 20
_BLANK = re.compile(rb"[ \t\r\n\f\v]*")  # (what bytes.strip() strips)


def identify_lines(data: bytes, limit: int = IDENTIFY_LINES) -> tuple[str | None, bool]:
    """What wrote the JSONL bytes ``data``: the format of the first record, among the first ``limit``
    non-blank lines, that sniffs as a specific format (a line that does not parse, sniffs as
    nothing or only as a :data:`GENERIC` one is passed over, so one damaged line does not make a
    file foreign); and whether any of those lines parsed as JSON at all (False: not JSONL, e.g. a
    Markdown file renamed ``.jsonl``).  ``(None, True)``: JSON whose format no line tells."""
    from .lines import loads

    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    seen, parsed, view = 0, False, memoryview(data)
    while start < len(data) and seen < limit:
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if _BLANK.fullmatch(data, start, end):
            start = end + 1
            continue
        line, first, start = view[start:end], start, end + 1
        seen += 1
        if len(line) > LONG_LINE:  # (a compacted VS Code log is one line of the whole chat: 49 MB parsed took 105 MiB)
            from .jsonarray import skeleton

            value = skeleton(data, first, end)
            if value is None:
                continue
        else:
            try:
                value = loads(line)
            except ValueError:
                continue
        parsed = True
        found = sniff(value)
        if found is not None and found not in GENERIC:
            return found, True
    return None, parsed
