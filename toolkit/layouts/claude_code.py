"""The Claude Code layout: ``<root>/projects/<slug>/<sessionId>.jsonl`` transcripts of ``type``
records linked by ``parentUuid``, with subagents in ``<sessionId>/subagents/agent-*.jsonl``
(SOURCES-AGENTS.md §1, DESIGN.md §2.6).

Claude Code's tree is not levelsess's: it has no cache, no lock file, and nothing levelsess
saves (recovered bytes, quarantine) goes inside it; those live in levelsess's own data folder.
A live writer shows as an open file descriptor or as a running Claude Code whose working folder
is the session's project (:mod:`toolkit.live`), not as a lock.
"""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .base import PLACEHOLDER_MODELS, SNIFFERS, Folder, ForeignLayout, entries, home_roots, looked_head, one_line
from .claude_records import (CHAIN, SUBAGENTS, TOP_LEVEL_TYPES, _INJECTED, _ELEMENT, _subagents, added_only,  # noqa: F401
                             is_subagent, prompt_text, split_user, typed_part)
from ..errors import NotAStoreError, PermissionDeniedError

_LEADING = re.compile(rb'^\s*\{\s*"(parentUuid|type)"\s*:')



def default_roots() -> list[Path]:
    """Every Claude Code root this machine may have: $CLAUDE_CONFIG_DIR, ~/.claude, and on WSL
    each Windows user's ``%USERPROFILE%\\.claude`` seen under /mnt/c/Users."""
    roots = home_roots("CLAUDE_CONFIG_DIR", ".claude")
    users = Path("/mnt/c/Users")
    if os.environ.get("WSL_DISTRO_NAME") and users.is_dir():
        try:
            roots += sorted(p / ".claude" for p in users.iterdir() if (p / ".claude" / "projects").is_dir())
        except OSError:
            pass
    return list(dict.fromkeys(roots))


@dataclass
class ClaudeFacts:
    """What listings, show and import need from a Claude Code transcript."""

    session_id: str | None = None
    cwd: str | None = None
    app_version: str | None = None  # Claude Code's own version string ("2.1.38"): not a schema version
    first_timestamp: object = None
    last_timestamp: object = None
    custom_title: str | None = None
    ai_title: str | None = None
    summaries: list = field(default_factory=list)  # (leafUuid, summary)
    first_prompt: str | None = None
    turns: int = 0
    model: str | None = None
    chain: int = 0       # chain records of the main conversation
    reachable: int = 0   # of them, on the path resume follows
    sidechain: bool = False  # every chain record is a sidechain's (a subagent transcript)
    shown: bytearray = field(default_factory=bytearray)  # per chain record: 1 when resume shows it

    @property
    def title(self) -> str | None:
        """custom-title > ai-title > a summary of this conversation > the first typed prompt."""
        return self.custom_title or self.ai_title or next((s for _leaf, s in self.summaries), None) or self.first_prompt


_NONE, _ODD = -1, -2  # a chain record's parent (ClaudeRules.up): a null parentUuid; one looked up in ``odd``
#: The uuids a check holds as strings (ClaudeRules.index: about 170 bytes each, with their numbers); past
#: it the older ones are aged into :class:`_Aged` (28 bytes each).  A transcript of up to this many chain
#: records is checked as it always was.
RECENT = 1 << 15
_BLOOM_BITS = 32  # bits of the Bloom filter a uuid aged (two probes: about 1 in 270 uuids never aged is looked for)


class _Aged:
    """uuid -> number for the uuids aged out of a dict, held as numbers: per uuid its ``hash()``, the
    ``hash()`` of the uuid after a NUL (two 64-bit hashes under the process's own SipHash key: two
    uuids that differ share both once in 2**128) and its number, in arrays sorted by the first, one
    generation per aging (the newest last: a uuid aged twice names its later number), behind a
    Bloom filter.  DESIGN §8 asks a check of any transcript in under 100 MiB; the parsed strings
    were most of what a long one held (a 366 MB transcript of 600,000 lines peaked at 169 MiB)."""

    __slots__ = ("firsts", "seconds", "numbers", "count", "mask", "bits")

    def __init__(self, expected: int) -> None:
        self.firsts: list[array] = []
        self.seconds: list[array] = []
        self.numbers: list[array] = []
        self.count = 0
        self._filter(expected)

    def _filter(self, capacity: int) -> None:
        """A Bloom filter for ``capacity`` uuids, holding those aged so far."""
        size = 1 << max(16, (capacity * _BLOOM_BITS - 1).bit_length())
        self.mask, self.bits = size - 1, bytearray(size >> 3)
        for firsts in self.firsts:
            self._mark(firsts)

    def _mark(self, firsts: array) -> None:
        mask, bits = self.mask, self.bits
        for value in firsts:
            probe = value & mask
            bits[probe >> 3] |= 1 << (probe & 7)
            probe = (value >> 32) & mask
            bits[probe >> 3] |= 1 << (probe & 7)

    def add(self, named: dict[str, int]) -> None:
        """Age every uuid of ``named`` (each names its number), as one generation."""
        uuids = list(named)
        firsts = array("q", map(hash, uuids))  # (a str keeps its hash: the dict took it)
        order = sorted(range(len(uuids)), key=firsts.__getitem__)
        seconds, numbers = array("q", map(hash, map("\0".__add__, uuids))), array("q", named.values())
        self.firsts.append(array("q", map(firsts.__getitem__, order)))
        self.seconds.append(array("q", map(seconds.__getitem__, order)))
        self.numbers.append(array("q", map(numbers.__getitem__, order)))
        self.count += len(uuids)
        if self.count * _BLOOM_BITS > len(self.bits) * 8:
            self._filter(self.count * 2)
        else:
            self._mark(firsts)

    def may_hold(self, value: int) -> bool:
        """False when no uuid of hash ``value`` was aged; True when one may have been."""
        bits = self.bits
        probe = value & self.mask
        if not bits[probe >> 3] & (1 << (probe & 7)):
            return False
        probe = (value >> 32) & self.mask
        return bool(bits[probe >> 3] & (1 << (probe & 7)))

    def get(self, uuid: str) -> int | None:
        """The number the last aging of ``uuid`` gave it; None when none did."""
        value = hash(uuid)
        if not self.may_hold(value):
            return None
        second = hash("\0" + uuid)
        for firsts, seconds, numbers in zip(reversed(self.firsts), reversed(self.seconds), reversed(self.numbers)):
            at = bisect_left(firsts, value)
            while at < len(firsts) and firsts[at] == value:
                if seconds[at] == second:
                    return numbers[at]
                at += 1
        return None


class ClaudeRules:
    """Line-level record rules plus the conversation graph, judged when the file ends."""

    def __init__(self, reader) -> None:
        self.c = reader
        self.facts = ClaudeFacts()
        self.index: dict[str, int] = {}       # uuid -> chain record number (its last record, when it repeats), the latest RECENT
        self.aged: _Aged | None = None        # and those aged out of it (:meth:`named` looks in both)
        # chain record number -> its parent as read: the number of the record its parentUuid named then, or
        # _NONE (null), or _ODD (a parentUuid no record before it has, or no string: kept in ``odd``).  The parsed
        # parentUuid strings, kept, were a third of what a check of a long transcript held (100 bytes a record).
        self.up = array("q")
        self.odd: dict[int, object] = {}      # chain record number -> its parentUuid, where _ODD
        self.moved: dict[int, int] = {}       # a repeated uuid's record -> its next record of that uuid
        self.logical: dict[int, str] = {}     # compact boundaries: number -> logicalParentUuid
        self.where = array("q")               # line, offset per chain record
        self.side = bytearray()               # 1 where isSidechain
        self.result = bytearray()             # 1 where a user record carries tool results
        self.last_assistant: int | None = None  # chain number of the last main-chain assistant line
        self.assistants = array("i")          # chain numbers of main-chain assistant lines
        self.results: set[str] = set()        # tool_use ids a tool_result answers, anywhere in the file: the latest RECENT
        self.aged_results: _Aged | None = None  # and those aged out of it (:meth:`answered`)
        self.summaries: list = []
        self.first_stamp = self.last_stamp = None
        self.session_id: str | None = None
        self.turns = 0
        self.first_prompt: str | None = None
        self.unparsed: set[int] = set()       # chain numbers of records too large to parse here

    def unread(self, offset: int, length: int) -> None:
        """A line too large to parse (``record-too-large``): when its two ends name a chain record
        (its type, uuid and parentUuid), it takes its place in the graph, so the records that
        follow it are not reported as dangling or the chain as broken at it."""
        from ..peek import read_ends

        fields = read_ends(self.c.sink.path, offset, length)
        kind, uuid = fields.get("type"), fields.get("uuid")
        if not (type(kind) is str and kind in CHAIN and type(uuid) is str and "parentUuid" in fields):
            return
        self.unparsed.add(len(self.up))
        self._chain({key: fields[key] for key in ("type", "uuid", "parentUuid", "isSidechain", "sessionId", "cwd",
                                                  "version", "subtype", "logicalParentUuid") if key in fields},
                    kind, uuid, offset, b"", self.c)

    def record(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        c = self.c
        if type(obj) is not dict or type(kind := obj.get("type")) is not str:
            c.sink.add("invalid-record", "JSON but not a record object with a string \"type\"", c.lineno, offset, line)
            return
        c.records += 1
        stamp = obj.get("timestamp")
        if stamp is not None:
            if self.first_stamp is None:
                self.first_stamp = stamp
            self.last_stamp = stamp
        uuid = obj.get("uuid")
        if type(uuid) is str and kind in CHAIN:
            self._chain(obj, kind, uuid, offset, line, c)
            return
        if self.session_id is None and isinstance(obj.get("sessionId"), str):
            self.session_id = obj["sessionId"]
        facts = self.facts
        if kind == "custom-title" and isinstance(obj.get("customTitle"), str):
            facts.custom_title = obj["customTitle"]
        elif kind == "ai-title" and isinstance(obj.get("aiTitle"), str):
            facts.ai_title = obj["aiTitle"]
        elif kind == "summary" and isinstance(obj.get("summary"), str) and len(self.summaries) < 64:
            self.summaries.append((obj.get("leafUuid"), obj["summary"]))
        # no schema: Claude Code's record shapes are its own and change every release (--strict
        # still turns warnings into errors)

    def _chain(self, obj: dict, kind: str, uuid: str, offset: int, line: bytes, c) -> None:
        """The hot path: a few lookups per record; what needs more is re-read at the end."""
        index = self.index
        number = len(self.up)
        parent = obj.get("parentUuid")
        aged = self.aged
        if parent is None:
            self.up.append(_NONE)
        else:
            found = index.get(parent) if type(parent) is str else None  # (before this record's own uuid: a self-loop is _ODD)
            if found is None and aged is not None and type(parent) is str:
                found = aged.get(parent)
            if found is None:
                self.up.append(_ODD)
                self.odd[number] = parent
            else:
                self.up.append(found)
        first = index.get(uuid)
        if first is None and aged is not None:
            first = aged.get(uuid)
        if first is not None:
            c.sink.add("duplicate-uuid", f"uuid {uuid} appears again (first at line {self.where[2 * first]}); "
                       "resume maps it to this later record", c.lineno, offset, line)
            self.moved[first] = number
        index[uuid] = number
        if len(index) > RECENT:
            self._age()
        where = self.where
        where.append(c.lineno)
        where.append(offset)
        side = obj.get("isSidechain") is True
        self.side.append(side)
        if self.session_id is None:
            self._first_chain(obj)
        if kind == "user":
            result = "toolUseResult" in obj
            self.result.append(result)
            self._content(obj, offset, line)
            if not (result or side or obj.get("isMeta") or obj.get("isCompactSummary")):
                self._prompt(obj)
            return
        self.result.append(False)
        if side:
            return
        if kind == "assistant":
            self.last_assistant = number
            self.assistants.append(number)
        elif kind == "system" and obj.get("subtype") == "compact_boundary" and isinstance(obj.get("logicalParentUuid"), str):
            self.logical[number] = obj["logicalParentUuid"]

    def _content(self, obj: dict, offset: int, line: bytes) -> None:
        """A user record's content: the tool calls it answers, and a U+0000 in what goes to the model
        (tool output, pasted text: the next request is cut there, and resume brings it back).
        Searched in the parsed strings, one character, never in the raw bytes."""
        message = obj.get("message")
        content = message.get("content") if type(message) is dict else None
        nul = False
        if type(content) is str:
            nul = "\0" in content
        elif type(content) is list:
            for block in content:
                if type(block) is not dict:
                    continue
                kind = block.get("type")
                if kind == "tool_result":
                    if isinstance(block.get("tool_use_id"), str):
                        self.results.add(block["tool_use_id"])
                        if len(self.results) > RECENT:
                            self._age_results()
                    inner = block.get("content")
                    if type(inner) is str:
                        nul = nul or "\0" in inner
                    elif type(inner) is list:
                        nul = nul or any(type(b) is dict and type(b.get("text")) is str and "\0" in b["text"] for b in inner)
                elif kind == "text" and type(block.get("text")) is str:
                    nul = nul or "\0" in block["text"]
        if nul:
            c = self.c
            c.sink.add("nul-in-content", "a value holds a \\u0000 character: Claude Code's next request may be cut "
                       "there, and resume brings it back", c.lineno, offset, line)

    def _prompt(self, obj: dict) -> None:
        message = obj.get("message")
        text = prompt_text(message.get("content") if type(message) is dict else None)
        if text is not None:
            self.turns += 1
            if self.first_prompt is None:
                self.first_prompt = one_line(text)

    def _first_chain(self, obj: dict) -> None:
        """The session's own facts, from its first chain record that carries them."""
        if isinstance(obj.get("sessionId"), str):
            self.session_id = obj["sessionId"]
        if isinstance(obj.get("cwd"), str):
            self.facts.cwd = obj["cwd"]
        if isinstance(obj.get("version"), str):
            self.facts.app_version = obj["version"]

    def _age(self) -> None:
        """Move the uuids held as strings to :class:`_Aged` (the last one stays: the next record's parent, as a rule)."""
        index = self.index
        last = next(reversed(index))
        keep = index.pop(last)
        if self.aged is None:  # sized for the records the rest of the file holds at this rate
            try:
                size = os.stat(self.c.sink.path).st_size
            except (OSError, TypeError, ValueError):
                size = 0
            self.aged = _Aged(len(self.up) * max(size, 1) // max(self.where[-1], 1) + len(self.up))
        self.aged.add(index)
        index.clear()
        index[last] = keep

    def _age_results(self) -> None:
        if self.aged_results is None:
            self.aged_results = _Aged(RECENT * 4)
        self.aged_results.add(dict.fromkeys(self.results, 0))
        self.results.clear()

    def answered(self, use: object) -> bool:
        """Whether a tool_result in the file answers the tool call ``use``."""
        return type(use) is str and (use in self.results or (self.aged_results is not None and self.aged_results.get(use) is not None))

    def named(self, uuid: object) -> int | None:
        """The chain record ``uuid`` names (its last one), None when no record has it or it is no string."""
        if type(uuid) is not str:
            return None
        found = self.index.get(uuid)
        if found is None and self.aged is not None:
            found = self.aged.get(uuid)
        return found

    # -- the graph, once the whole file is read ---------------------------------------------

    def _last(self, number: int) -> int:
        """The record its uuid names at the end: the last of that uuid (``index``, as resume maps it)."""
        moved = self.moved
        while number in moved:
            number = moved[number]
        return number

    def _parent(self, number: int) -> int | None:
        """The record chain record ``number``'s parentUuid names in the file, None when none does."""
        up = self.up[number]
        if up >= 0:
            return self._last(up) if self.moved else up
        return self.named(self.odd.get(number)) if up == _ODD else None

    def finish(self, size: int, tail_state: object) -> None:
        up, named, sink = self.up, self.named, self.c.sink
        facts = self.facts
        facts.first_timestamp, facts.last_timestamp = self.first_stamp, self.last_stamp
        facts.session_id, facts.turns, facts.first_prompt = self.session_id, self.turns, self.first_prompt
        # a summary titles the conversation ending at its leafUuid, usually in another file
        self.facts.summaries = [(leaf, text) for leaf, text in self.summaries if named(leaf) is not None]
        if not up:
            return
        sidechain = all(self.side)
        self.facts.sidechain = sidechain
        for number, parent in self.odd.items():  # (in file order) a parent not read before its child, or none
            if named(parent) is not None:
                continue
            line, offset = self.where[2 * number], self.where[2 * number + 1]
            if number == 0 or sidechain:
                sink.add("parent-elsewhere", f"parentUuid {parent!r} is not in this file: "
                         + ("it starts mid-conversation" if number == 0 else "a subagent's link to its session"), line, offset)
            else:
                sink.add("dangling-parent", f"parentUuid {parent!r} names no record of this file", line, offset)
        if not sidechain:
            self._resume_path()
        if self.last_assistant is not None:
            self._last_message()

    def _read(self, handle, number: int) -> dict | None:
        """Re-read one chain record from the file (the end of a scan needs a few, never many)."""
        from ..lines import loads

        if number in self.unparsed:  # too large to parse here: nothing more is known of it
            return None
        try:
            handle.seek(self.where[2 * number + 1])
            obj = loads(handle.readline())
        except (OSError, ValueError):
            return None
        return obj if type(obj) is dict else None

    def _last_message(self) -> None:
        """The model of the last assistant message, and ``dangling-tool-use``: a tool it calls that no
        tool_result in the file answers.  The message's parts are the run of main-chain assistant
        lines sharing its ``message.id`` (one content block per line), re-read from the file."""
        from ..lines import open_regular

        try:
            with open_regular(Path(self.c.sink.path)) as handle:
                self._judge_last_message(handle)
        except OSError:  # gone or unreadable since it was read: the line checks already said what they could
            pass

    def _judge_last_message(self, handle) -> None:
        last = self._read(handle, self.last_assistant)
        self.facts.model = self._model(handle, last)

        def key(record: dict | None) -> object:
            body = record.get("message") if record else None
            return (body.get("id") if type(body) is dict else None) or (record or {}).get("uuid")

        wanted, parts = key(last), []
        for number in reversed(self.assistants[-64:]):
            record = last if number == self.last_assistant else self._read(handle, number)
            if record is None or key(record) != wanted:
                break
            parts.append((number, record))
        open_uses: dict[object, int] = {}  # a call written twice (a replayed line) counts at its later copy
        for number, record in reversed(parts):
            body = record.get("message")
            content = body.get("content") if type(body) is dict else None
            for block in content if type(content) is list else []:
                if type(block) is dict and block.get("type") == "tool_use" and not self.answered(block.get("id")):
                    use = block.get("id")
                    open_uses[use if type(use) is str or use is None else repr(use)] = number  # (an id no string: said as written)
        if open_uses:
            use, number = min(open_uses.items(), key=lambda item: item[1])
            self.c.sink.add("dangling-tool-use", f"the last assistant message calls a tool ({use}) that has no tool_result: "
                            "Claude Code may refuse to resume it", self.where[2 * number], self.where[2 * number + 1])

    def _model(self, handle, last: dict | None) -> str | None:
        """The model of the last assistant message a model wrote: a placeholder (``<synthetic>``,
        Claude Code's own message after an error or an interrupt) is no model; the earlier
        messages are re-read, the last 64 at most."""
        for number in reversed(self.assistants[-64:]):
            record = last if number == self.last_assistant else self._read(handle, number)
            message = record.get("message") if record else None
            model = message.get("model") if type(message) is dict else None
            if isinstance(model, str) and model and model not in PLACEHOLDER_MODELS:
                return model
        return None

    def _resume_path(self) -> None:
        """Walk from the leaf resume picks (the last main-chain record) to its root; report a break."""
        named, side = self.named, self.side
        main = len(side) - side.count(1)
        leaf = side.rindex(0)
        seen = bytearray(len(side))  # (a byte a record, not a set of numbers: 36 bytes each for a long transcript)
        current, broken, reachable = leaf, None, 0
        while True:
            if seen[current]:
                broken = (current, "a parentUuid cycle")
                break
            seen[current] = 1
            reachable += not side[current]
            if self.up[current] == _NONE:
                logical = named(self.logical.get(current))
                if logical is not None:  # kept for display past a compaction
                    current = logical
                    continue
                break
            parent = self._parent(current)
            if parent is not None:
                current = parent
                continue
            if current != 0:
                broken = (current, f"parentUuid {self.odd[current]!r} names no record of this file")
            break
        self.facts.chain, self.facts.reachable = main, reachable
        shown = bytearray(seen)
        results, parent_of = self.result, self._parent
        i = results.find(1)
        while i >= 0:  # results of parallel calls: siblings resume collects
            if not shown[i]:
                parent = parent_of(i)
                if parent is not None and seen[parent]:
                    shown[i] = 1
            i = results.find(1, i + 1)
        self.facts.shown = shown
        if broken is not None:
            number, why = broken
            line, offset = self.where[2 * number], self.where[2 * number + 1]
            self.c.sink.add("broken-chain", f"resume shows {reachable:,} of {main:,} messages: the chain breaks at line "
                            f"{line} ({why}); the {main - reachable:,} before it are off the resumed path", line, offset)


def project_slug(cwd: str) -> str:
    """The folder Claude Code keeps the sessions started in ``cwd`` in (SOURCES-AGENTS §1.2): each
    UTF-16 code unit that is not an ASCII letter or digit becomes ``-``; past 200 characters the
    rest is a hash this cannot reproduce (:func:`same_project` compares the first 200)."""
    out = []
    for char in cwd:
        if char.isascii() and char.isalnum():
            out.append(char)
        else:
            out.append("--" if ord(char) > 0xFFFF else "-")  # a surrogate pair is two code units
    return "".join(out)


def same_project(slug: str, folder: str) -> bool:
    """True when the project folder ``folder`` is the one Claude Code names ``slug`` (a long slug
    by its first 200 characters and the ``-`` before the hash; a drive letter in any case)."""
    if re.match(r"[A-Za-z]--", slug) and re.match(r"[A-Za-z]--", folder):
        slug, folder = slug[0].lower() + slug[1:], folder[0].lower() + folder[1:]
    if len(slug) > 200:
        return len(folder) > 201 and folder[:201] == slug[:200] + "-"
    return slug == folder


def sniff_head(path: Path) -> str | None:
    """What the first record of ``path`` looks like (identify.sniff), reading at most 1 MiB; None
    for an empty, unreadable or unrecognised file."""
    from ..identify import sniff
    from ..lines import first_line, loads

    try:
        line = first_line(path, bom=False)  # (a long first record read on, up to 1 MiB, to parse it whole)
    except OSError:
        return None
    try:
        obj = loads(line)
    except ValueError:
        if _LEADING.match(line) and line.find(b'"kind"', 0, 200) < 0:
            return "claude-code"
        compact = re.sub(rb"\s+", b"", line[:64])  # a first record cut inside its first key
        if compact.startswith((b'{"p', b'{"t')) and any(k.startswith(compact) for k in (b'{"parentUuid":', b'{"type":')):
            return "claude-code"
        return None
    found = sniff(obj)
    return "claude-code" if found is None and CLAUDE_CODE.identify(obj, None) else found


SNIFFERS["claude-code"] = sniff_head


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a symlink loop: not a folder to walk (fsck reports the file itself)
        return False


def _main_names(listed: list[os.DirEntry]) -> list[str]:
    """The main transcripts among a project folder's entries, by name."""
    return [e.name for e in listed if e.name.endswith(".jsonl") and not e.name.startswith(".")]


def _session_folders(listed: list[os.DirEntry]) -> list[str]:
    """The session folders among a project folder's entries, in the order their subagents are
    listed: each main transcript's, in its order, then those whose transcript is gone.  (A session
    without a folder has no subagents.)"""
    folders = {e.name for e in listed if _is_dir(e)}
    stems = [name[:-len(".jsonl")] for name in _main_names(listed)]
    known = set(stems)
    return [stem for stem in stems if stem in folders] + [e.name for e in listed if e.name in folders and e.name not in known]


def _session_journals(project: Path) -> tuple[Path, ...]:
    """Main transcripts, each followed by its subagents; subagents whose transcript is gone last."""
    listed = entries(project)
    agents = {name: _subagents(project / name) for name in _session_folders(listed)}
    out: list[Path] = []
    for name in _main_names(listed):
        out.append(project / name)
        out += agents.pop(name[:-len(".jsonl")], ())
    for found in agents.values():
        out += found
    return tuple(out)





class ClaudeCode(ForeignLayout):
    name = "claude-code"
    key = "type"
    first_key = b"parentUuid"
    cache_lists_journals = False
    relinks = True  # fsck --relink mends a dangling parentUuid

    def plan_relinks(self, path: Path) -> list:
        from .claude_relink import plan_relinks

        return plan_relinks(path)

    def relink_journal(self, scan, quarantine_root: Path, label: str) -> Path:
        from .claude_relink import relink_journal

        return relink_journal(scan, quarantine_root, label)

    def identify(self, obj: object, found: str | None) -> bool:
        if found == self.name:
            return True
        # a record type newer than the recognition table, in a folder discovery found to be Claude
        # Code's: a string "type" and no key of another format
        return (found is None and type(obj) is dict and isinstance(obj.get("type"), str)
                and not any(k in obj for k in ("kind", "payload", "id", "role", "data")))

    def is_record(self, obj: dict) -> bool:
        """A top-level record, as the splitter must tell one from a value nested inside a record
        (a content block ``{"type":"text",…}``, a tool result): a string ``type`` and a key only
        top-level records carry."""
        kind = obj.get("type")
        return isinstance(kind, str) and ("parentUuid" in obj or "sessionId" in obj or "leafUuid" in obj
                                          or kind in TOP_LEVEL_TYPES)

    def partial_ok(self, data: bytes) -> bool:
        """A file holding no whole record is still a transcript when its bytes open one."""
        body = data.lstrip(b"\0 \t\r\n")
        if not body:
            return True
        compact = re.sub(rb"\s+", b"", body[:64])
        return bool(_LEADING.match(body)) or any(p.startswith(compact) for p in (b'{"parentUuid":', b'{"type":'))

    def rules(self, reader) -> ClaudeRules:
        return ClaudeRules(reader)

    # -- discovery ------------------------------------------------------------------------

    def _project_votes(self, folder: Path, sample: int = 3) -> tuple[int, int]:
        """(Claude Code transcripts, journals of another layout) among the first few in ``folder``
        that can tell (an empty or ``{`` file casts no vote; at most 20 are opened, and the
        subagents of at most 20 session folders looked for)."""
        ours = theirs = opened = 0
        try:
            listed = entries(folder)
        except (PermissionDeniedError, NotAStoreError):
            return 0, 0
        mains = [folder / name for name in _main_names(listed)[:20]]

        def subagents() -> Iterator[Path]:  # looked for only when the main transcripts cannot tell (one folder per session)
            for name in _session_folders(listed)[:20]:
                yield from _subagents(folder / name)

        for batch in (mains, None):
            if opened == 20 or ours + theirs >= sample:
                break
            for journal in subagents() if batch is None else batch:
                if opened == 20 or ours + theirs >= sample:
                    break
                opened += 1
                found = sniff_head(journal)
                looked_head(journal, self.name, found)  # (the vote: an import keeping its listing notes what it read)
                if found == self.name:
                    ours += 1
                elif found is not None:
                    theirs += 1
        if ours + theirs == 0 and folder.parent.name == "projects" and opened:
            ours = 1  # nothing here can tell, and it sits where Claude Code keeps projects
        return ours, theirs

    def _is_project(self, folder: Path) -> bool:
        ours, theirs = self._project_votes(folder)
        return ours > 0 and theirs == 0

    def _is_projects(self, root: Path) -> bool:
        ours = theirs = 0
        for entry in entries(root)[:200]:
            if _is_dir(entry) and not entry.name.startswith("."):
                a, b = self._project_votes(Path(entry.path), sample=1)
                ours, theirs = ours + a, theirs + b
                if ours >= 3 or theirs:  # enough to tell, or another layout's: not a Claude Code projects folder
                    break
        return ours > 0 and theirs == 0

    def _in_projects(self, path: Path) -> bool:
        """A file with too few bytes to tell (``{``, ``{"``, NULs) inside ``.claude/projects/<slug>/``."""
        if path.parent.parent.name != "projects":
            return False
        from ..lines import open_regular

        try:
            with open_regular(path) as handle:  # never blocks on a FIFO
                head = handle.read(64)
        except OSError:
            return False
        compact = re.sub(rb"[\s\0]+", b"", head)
        return b'{"parentUuid":'.startswith(compact) or b'{"type":'.startswith(compact)

    def project(self, folder: Path, store: Path) -> Folder:
        try:
            return Folder(folder, self, store, _session_journals(folder))
        except PermissionDeniedError as exc:
            return Folder(folder, self, store, (), problem=str(exc))

    def projects(self, root: Path) -> list[Folder]:
        return [self.project(root / e.name, root) for e in entries(root)
                if _is_dir(e) and not e.name.startswith(".")]

    def claim_dir(self, path: Path) -> list[Folder] | None:
        if (path / "projects").is_dir() and (path.name == ".claude" or self._is_projects(path / "projects")):
            return self.projects(path / "projects")
        if self._is_project(path):
            return [self.project(path, path.parent)]
        if path.name == SUBAGENTS or (path / SUBAGENTS).is_dir():  # one session's folder
            session = path.parent if path.name == SUBAGENTS else path
            found = tuple(_subagents(session))
            if found and sniff_head(found[0]) == self.name:
                return [Folder(session.parent, self, session.parent.parent, found, whole=False)]
        if self._is_projects(path):
            return self.projects(path)
        return None

    def claim_file(self, path: Path) -> Folder | None:
        if not (is_subagent(path) or sniff_head(path) == self.name or self._in_projects(path)):
            return None
        if not is_subagent(path) and self._project_votes(path.parent)[1]:
            return None  # a stray among another layout's journals: that layout reports it as foreign
        project = path.parent.parent.parent if is_subagent(path) else path.parent
        return Folder(project, self, project.parent, (path,), whole=False)

    data_name = "claude-code"
    tool = "claude-code"
    tool_title = "Claude Code"

    def tree_name(self, store: Path) -> str:
        return store.parent.name.lstrip(".") or "root"  # ~/.claude/projects -> claude-<hash>

    # -- live writers: no lock file; an open descriptor, a rewrite, a running Claude Code ----

    def begin(self) -> None:
        super().begin()
        self._rewrites: dict[Path, set[str]] = {}  # per folder: journals with a compaction rewrite beside them

    def _rewriting(self, journal: Path, fresh: bool) -> str | None:
        """The ``<journal>.compact.tmp.*`` beside ``journal``, if any (one listing per folder)."""
        cache = getattr(self, "_rewrites", None)
        if cache is None or fresh:
            cache = self._rewrites = {}
        folder = journal.parent
        if folder not in cache:
            try:
                cache[folder] = {n for n in os.listdir(folder) if ".jsonl.compact.tmp." in n}
            except OSError:
                cache[folder] = set()
        prefix = f"{journal.name}.compact.tmp."
        return next((n for n in cache[folder] if n.startswith(prefix)), None)

    def holder(self, journal: Path, *, fresh: bool = False) -> str | None:
        """Who is writing ``journal`` this instant (a process holding it open for writing, or a
        compaction rewrite in progress), or None."""
        rewrite = self._rewriting(journal, fresh)
        if rewrite is not None:
            return f"Claude Code is rewriting it ({rewrite} exists)"
        return super().holder(journal, fresh=fresh)

    def session_of(self, journal: Path) -> str | None:
        """A main transcript's stem; a subagent's session is the folder its ``subagents/`` is in."""
        return journal.parent.parent.name if is_subagent(journal) else journal.stem

    def project_of(self, journal: Path) -> str | None:
        """The name of the journal's project folder."""
        return (journal.parent.parent.parent if is_subagent(journal) else journal.parent).name

    def works_in(self, proc, project: str) -> bool:
        """Claude Code writes a session to ``projects/<slug of its working folder>/``: the process's
        folder names ``project`` by the same rule (``/a/b_c`` and ``/a/b-c`` share a folder: both count)."""
        return same_project(project_slug(proc.cwd), project)

    # -- listings and rendering -------------------------------------------------------------

    def row(self, folder, journal, scan, state, reason):
        from ..index import utc_iso
        from ..rows import SessionRow

        facts = scan.facts
        if (facts.sidechain or is_subagent(journal)) and folder.whole:
            return None  # a subagent's transcript is shown with its session (unless it is named itself)
        return SessionRow(journal.stem, journal, self.name, facts.cwd, facts.title, facts.first_timestamp,
                          facts.last_timestamp or utc_iso(scan.mtime_ns / 1e9), facts.turns, facts.model, scan.size,
                          state, reason)

    def markdown(self, path: Path, title: object) -> Iterator[str]:
        from ..render_claude import markdown

        return markdown(path, self, title)

    def json_open(self, records: Iterator[bytes]) -> bytes:
        return b'{\n  "records": '

    def trash_paths(self, journal: Path) -> tuple[Path, ...]:
        session = journal.parent / journal.stem
        return (journal, session) if not is_subagent(journal) and (session / SUBAGENTS).is_dir() else (journal,)


CLAUDE_CODE = ClaudeCode()
