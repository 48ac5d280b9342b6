"""The conversation a Gemini CLI session file holds, replayed by Gemini's own loading rules.

SOURCES-MORE.md §1.2: every line is classified, first match wins: ``{"$rewindTo": id}`` drops
that message and every later one (an id not found clears them all); an object with a string
``id`` is a message, and a repeated id replaces the earlier one where it first stood; ``$set``
shallow-merges into the metadata (``$set.messages`` replaces the whole message list); an object
with string ``sessionId`` and ``projectHash`` is metadata.  :class:`Chain` applies those rules to
whatever value the caller keeps per message (a small sketch for listings, the whole record for
``show``), and remembers what fell off the chain, and where, for a reader who wants to see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
#: A user turn starting with one of these is not a turn Gemini resumes (§1.5).
IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
META_KEYS = ("sessionId", "projectHash", "startTime", "lastUpdated", "kind", "summary")

REWIND, MESSAGE, SET, META, OTHER = "rewind", "message", "set", "meta", "other"


def classify(obj: object) -> str:
    """Which of §1.2's line kinds a parsed line is (the first rule that matches wins)."""
    if type(obj) is not dict:
        return OTHER
    if "$rewindTo" in obj:
        return REWIND
    if isinstance(obj.get("id"), str):
        return MESSAGE
    if isinstance(obj.get("$set"), dict):
        return SET
    if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
        return META
    return OTHER


def is_message_shape(obj: object) -> bool:
    """A Gemini message record by its own keys (what a file whose metadata line was lost opens with)."""
    return (type(obj) is dict and isinstance(obj.get("id"), str) and isinstance(obj.get("type"), str) and obj["type"] in MESSAGE_TYPES
            and "timestamp" in obj and "content" in obj
            and not any(k in obj for k in ("parentId", "uuid", "parentUuid", "payload", "kind")))


def text_of(content: object) -> str:
    """The text of a PartListUnion: a string, a Part, or a list of them (text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return content["text"] if isinstance(content.get("text"), str) else ""
    if isinstance(content, list):
        return "".join(text_of(part) for part in content)
    return ""


def resumable(message: object) -> bool:
    """True for a message that makes a session resumable (core/src/utils/sessionUtils.ts, §1.5)."""
    if type(message) is not dict:
        return False
    kind = message.get("type")
    if kind == "user":
        text = text_of(message.get("content")).strip()
        return bool(text) and not text.startswith(IGNORED_PREFIXES)
    if kind == "gemini":
        return bool(text_of(message.get("content")).strip() or message.get("toolCalls") or message.get("thoughts"))
    return False


@dataclass
class OffChain:
    """Messages that left the chain together: after ``anchor`` (None: at its start), and why."""

    anchor: str | None
    reason: str
    values: list = field(default_factory=list)


class Chain:
    """The message list Gemini would resume, built one line at a time.

    ``sketch`` turns a message record into what is kept for it; ``keep_off`` keeps what a
    rewind or a ``$set.messages`` dropped (for ``show``; a listing only counts it).
    """

    def __init__(self, sketch=lambda record: record, keep_off: bool = False, *, meta: dict | None = None,
                 messages: dict | None = None) -> None:
        self.sketch = sketch
        self.keep_off = keep_off
        self.messages: dict[str, object] = {} if messages is None else messages  # a listing's facts hold these two
        self.meta: dict = {} if meta is None else meta
        self.off: list[OffChain] = []
        self.dropped = 0   # messages that left the chain (rewound or replaced)
        self.updates = 0   # lines that replaced a message already on the chain
        self.rewinds = 0

    def apply(self, obj: object) -> str:
        """Apply one parsed line; return its kind."""
        kind = classify(obj)
        if kind == REWIND:
            self.rewind(obj["$rewindTo"])
        elif kind == MESSAGE:
            self.updates += obj["id"] in self.messages
            self.messages[obj["id"]] = self.sketch(obj)  # a dict keeps the first insertion's place
        elif kind == SET:  # the message list itself is kept as messages, not again in the metadata
            self.meta.update({k: v for k, v in obj["$set"].items() if k != "messages"})
            if isinstance(obj["$set"].get("messages"), list):
                self.replace(obj["$set"]["messages"])
        elif kind == META:
            self.meta.update({k: v for k, v in obj.items() if k != "messages"})
        return kind

    def rewind(self, target: object) -> None:
        self.rewinds += 1
        ids = list(self.messages)
        at = ids.index(target) if isinstance(target, str) and target in self.messages else 0
        self._drop(ids[at:], ids[at - 1] if at else None,
                   f"rewound to {target}" if at or (ids and ids[0] == target) else f"cleared: rewind to unknown id {target!r}")

    def replace(self, messages: list) -> None:
        """``$set.messages``: the list Gemini resumes is exactly this one from now on."""
        new: dict[str, object] = {}
        for n, item in enumerate(messages):
            if type(item) is dict:
                new[item["id"] if isinstance(item.get("id"), str) else f"#set-{n}"] = self.sketch(item)
        gone = [mid for mid in self.messages if mid not in new]
        self._drop(gone, None, "left out when the history was rewritten ($set.messages)")
        self.messages.clear()
        self.messages.update(new)

    def _drop(self, ids: list[str], anchor: str | None, reason: str) -> None:
        if not ids:
            return
        self.dropped += len(ids)
        block = OffChain(anchor, reason)
        for mid in ids:
            value = self.messages.pop(mid)
            if self.keep_off:
                block.values.append(value)
        if self.keep_off:
            self.off.append(block)

    @property
    def loadable(self) -> bool:
        """Gemini loads the file: its metadata has a string sessionId and projectHash (§1.3, §1.5)."""
        return isinstance(self.meta.get("sessionId"), str) and isinstance(self.meta.get("projectHash"), str)
