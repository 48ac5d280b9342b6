"""Keep every Claude Code session: transcripts (``~/.claude/projects/<slug>/<sessionId>.jsonl``
and their subagents) as LevelCode v2 journals (SOURCES-AGENTS.md §1, DESIGN.md §2.6 and §5).

Claude Code deletes transcripts older than ``cleanupPeriodDays`` (default 30) at start-up; a
nightly ``levelsess import --from claude`` is the copy that survives.  Each transcript becomes
``<store>/<slug(cwd)>/claude-<sessionId>.jsonl``.  What goes where (the shape is documented
in the README):

- **The conversation, in the order resume shows it**: the path from the last main-chain record
  back to its root (across a compaction through ``logicalParentUuid``), with the results of
  parallel tool calls after their call.  A typed prompt or tool result is a ``user`` record
  whose ``content`` is the source's, verbatim (strings, text, images, ``tool_result`` blocks);
  one API response written over several lines (same ``message.id`` and ``requestId``) is one
  ``assistant`` record at its first part's place, its content blocks verbatim and in order
  (text, thinking with its signature, tool_use), ``usage`` from its last part, so counted once;
  a compaction summary is a ``compact`` record; interrupts and API errors are ``event`` records,
  as are the system, progress and attachment records on the chain.
- **Then everything else, in file order**: records off that chain (other branches, what a
  break cut off, records beside the chain) as ``off-chain`` events saying which line they were
  on, their uuid and parent and why; titles (custom-title > ai-title > a summary of this
  conversation) as ``title`` records; other metadata as events.
- **Subagents** (``<session>/subagents/agent-*.jsonl``, and the inline ``isSidechain`` records
  of 1.0.x, one per root) are sessions of their own, ``claude-<sessionId>-agent-<agentId>`` /
  ``claude-<sessionId>-side-<root uuid>``, in the same project folder; their meta ``source``
  names the parent, and the parent holds a ``subagent`` event naming each, after the tool
  result that returned it.
- Every record keeps its source line under ``raw`` (a merged message: the list of its lines).

Every source record has a stable key (its uuid; a metadata line: a hash of its bytes and its
occurrence), so a re-import appends only what is new and never rewrites a journal; a message
still being written is imported ``partial`` and superseded once it is whole.  The source is
opened read-only and never written; damaged lines import every whole record in them and report
the rest (:mod:`toolkit.importers.sourcelines`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import FileChangedError, NotASourceError, PathNotFoundError
from ..findings import Finding
from ..layouts.claude_code import CHAIN, CLAUDE_CODE, SUBAGENTS, _INJECTED, _subagents, default_roots, is_subagent, prompt_text
from ..index import utc_iso
from ..lines import loads, open_regular
from .output import ALIAS, AT, COVERS_PREVIOUS, PART_KEYS, Options, Raw, Session, SourceState, safe_id
from .sourcelines import SourceLine, SourceReader
from .uris import apply_map, is_foreign

__all__ = ["APP", "Options", "detect", "scan", "source_files"]

APP = "claude-code"
#: Files up to this size keep their lines in memory between the two passes; larger ones are
#: re-read line by line (memory stays per record whatever the transcript's size).
KEEP_IN_MEMORY = 16 << 20
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_INTERRUPT = "[Request interrupted by user"
_FINAL = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal", "pause_turn"})  # nothing of the response follows
_TITLES = {"custom-title": ("customTitle", 3), "ai-title": ("aiTitle", 2), "summary": ("summary", 1)}
#: Metadata fields worth carrying on the event (the whole line stays under raw).
_META_FIELDS = {"queue-operation": ("operation", "content"), "last-prompt": ("lastPrompt", "leafUuid"),
                "permission-mode": ("permissionMode",), "agent-name": ("agentName",), "pr-link": ("prNumber", "prUrl"),
                "file-history-snapshot": ("messageId", "isSnapshotUpdate"), "summary": ("summary", "leafUuid"),
                "ai-title": ("aiTitle",), "custom-title": ("customTitle",), "mode": ("mode",)}


def detect() -> list[Path]:
    """Every Claude Code root on this machine that has a ``projects/`` folder (as doctor lists them)."""
    return [root for root in default_roots() if (root / "projects").is_dir()]


# -- which files ---------------------------------------------------------------------------------


def _groups(source: Path, report: Callable[[Finding], None]) -> list[tuple[Path | None, list[Path]]]:
    """(main transcript or None, its subagent transcripts) for every session under ``source``:
    a Claude Code root, its projects folder, one project, one session folder, or one file."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        folder = CLAUDE_CODE.claim_file(source)
        if folder is not None and not is_subagent(source):  # a session named: its subagents come with it
            folder = replace(folder, journals=(source, *_subagents(source.parent / source.stem)))
        folders = [folder]
    else:
        folders = CLAUDE_CODE.claim_dir(source)
    if not folders or folders == [None]:
        raise NotASourceError(f"{source} (expected a Claude Code root such as ~/.claude, its projects folder, one project "
                              "folder, or one transcript .jsonl)")
    groups: list[tuple[Path | None, list[Path]]] = []
    for folder in folders:
        if folder.problem:
            report(Finding("unreadable", "error", str(folder.path), None, None, f"{folder.problem}; its sessions were not imported"))
            continue
        current: tuple[Path | None, list[Path]] | None = None
        for journal in folder.journals:
            if not is_subagent(journal):
                current = (journal, [])
                groups.append(current)
            elif current is not None and current[0] is not None and journal.parent.parent == current[0].parent / current[0].stem:
                current[1].append(journal)
            elif current is not None and current[0] is None and journal.parent == current[1][0].parent:
                current[1].append(journal)
            else:  # a subagent whose session transcript is gone (or was not named)
                current = (None, [journal])
                groups.append(current)
    return groups


def source_files(source: Path) -> list[Path]:
    files = []
    for main, agents in _groups(source, lambda _f: None):
        files += ([main] if main else []) + agents
    return files


# -- one transcript, read once for its graph ------------------------------------------------------


class _Item:
    """One whole source record: where it is, and what its graph and merging need."""

    __slots__ = ("n", "line", "offset", "size", "kind", "uuid", "parent", "side", "msg", "results", "uses", "stop",
                 "stamp", "logical", "agent", "src", "key")

    def __init__(self, n: int, src: SourceLine, value: dict, stamp: str | None) -> None:
        self.n, self.line, self.offset, self.size = n, src.line, src.offset, len(src.data)
        self.kind = value["type"]
        uuid = value.get("uuid")
        self.uuid = uuid if isinstance(uuid, str) and self.kind in CHAIN else None
        self.parent = value.get("parentUuid")
        self.side = value.get("isSidechain") is True
        self.stamp = stamp
        self.logical = value.get("logicalParentUuid") if value.get("subtype") == "compact_boundary" else None
        message = value.get("message") if isinstance(value.get("message"), dict) else {}
        content = message.get("content") if isinstance(message.get("content"), list) else ()
        self.msg = None
        self.uses: tuple = ()
        self.results: tuple = ()
        self.stop = False
        self.agent = None
        if self.kind == "assistant":
            if isinstance(message.get("id"), str):
                request = value.get("requestId")
                self.msg = (message["id"], request if isinstance(request, str) else None)
            self.uses = tuple(b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str))
            self.stop = message.get("stop_reason") in _FINAL
        elif self.kind == "user":
            self.results = tuple(b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else "" for b in content
                                 if isinstance(b, dict) and b.get("type") == "tool_result")
            result = value.get("toolUseResult")
            if isinstance(result, dict) and isinstance(result.get("agentId"), str):
                self.agent = result["agentId"]
        self.src: SourceLine | None = src
        self.key = ""


class _Transcript:
    """A transcript file read once: every whole record as an :class:`_Item`, plus the facts."""

    def __init__(self, path: Path, report: Callable[[Finding], None]) -> None:
        self.path = path
        self.reader = SourceReader(path, CLAUDE_CODE.is_record, report, what="Claude Code record")
        self.items: list[_Item] = []
        self.cwd = self.version = self.session_id = None
        self.first_stamp: str | None = None
        stamp = None
        seen: dict[str, int] = {}
        for src in self.reader:
            value = src.value
            if isinstance(value.get("timestamp"), str):
                stamp = value["timestamp"]
                self.first_stamp = self.first_stamp or stamp
            item = _Item(len(self.items), src, value, stamp)
            base = f"claude:{item.uuid}" if item.uuid else "claude:h:" + hashlib.sha256(src.data).hexdigest()[:24]
            seen[base] = seen.get(base, 0) + 1
            item.key = base if seen[base] == 1 else f"{base}#{seen[base]}"  # a copied line, a repeated title
            if item.uuid and self.session_id is None:
                self.cwd = value.get("cwd") if isinstance(value.get("cwd"), str) else None
                self.version = value.get("version") if isinstance(value.get("version"), str) else None
                self.session_id = value.get("sessionId") if isinstance(value.get("sessionId"), str) else None
            self.items.append(item)
        try:
            self.mtime: str | None = utc_iso(path.stat().st_mtime)
        except OSError:
            self.mtime = None
        self.keep = self.reader.size <= KEEP_IN_MEMORY
        if not self.keep:
            for item in self.items:
                item.src = None
        self._handle = None

    def value(self, item: _Item) -> tuple[dict, bytes]:
        """The record and its bytes (from memory, or re-read at its offset)."""
        if item.src is not None:
            return item.src.value, item.src.data
        if self._handle is None:
            self._handle = open_regular(self.path)
        self._handle.seek(item.offset)
        data = self._handle.read(item.size)
        try:
            value = loads(data)
        except ValueError:
            value = None
        if type(value) is not dict or value.get("type") != item.kind or (item.uuid is not None and value.get("uuid") != item.uuid):
            raise FileChangedError(f"{self.path} changed while it was being imported (Claude Code rewrote it?): line "
                                   f"{item.line} is no longer the record it was; import again")
        return value, data

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def state(self, items: list[_Item]) -> SourceState:
        """The file as read, for ``restore``, with the lines of ``items`` (one session's)."""
        by_offset = {it.offset: it for it in items}

        def read(offset: int, _length: int) -> bytes:
            try:
                return self.value(by_offset[offset])[1]
            finally:
                self.close()

        return SourceState(str(self.path), self.reader.covered, self.reader.sha256, [(it.offset, it.size) for it in items], read)


# -- the conversation ---------------------------------------------------------------------------


class _Plan:
    """Which records a session's journal gets, in order: units (one item, or a merged message)."""

    def __init__(self, items: list[_Item], *, whole_sidechain: bool) -> None:
        chain = [it for it in items if it.uuid is not None]
        main = chain if whole_sidechain else [it for it in chain if not it.side]
        index = {it.uuid: it for it in chain}
        path: list[_Item] = []
        if main:
            seen: set[int] = set()
            current: _Item | None = main[-1]
            while current is not None and current.n not in seen:
                seen.add(current.n)
                path.append(current)
                parent = current.parent
                if parent is None and isinstance(current.logical, str):
                    parent = current.logical  # kept for display past a compaction
                current = index.get(parent) if isinstance(parent, str) else None
            path.reverse()
        on = {it.n for it in path}
        siblings: dict[str, list[_Item]] = {}
        for it in chain:  # results of parallel calls: beside the chain, collected by resume
            if it.results and it.n not in on and isinstance(it.parent, str) and it.parent in index and index[it.parent].n in on:
                siblings.setdefault(it.parent, []).append(it)
        shown: list[_Item] = []
        for it in path:
            shown.append(it)
            for sibling in siblings.get(it.uuid, ()):
                if sibling.n not in on:
                    on.add(sibling.n)
                    shown.append(sibling)
        self.units: list[list[_Item]] = []
        first: dict[tuple, list[_Item]] = {}
        for it in shown:
            if it.kind == "assistant" and it.msg is not None and it.msg in first:
                first[it.msg].append(it)  # a later part of one API response: merged at its first part's place
                continue
            unit = [it]
            if it.kind == "assistant" and it.msg is not None:
                first[it.msg] = unit
            self.units.append(unit)
        self.on = on
        self.index = index
        self.rest = [it for it in items if it.n not in on]
        self.merged = len(shown) - len(self.units)
        self._memo: dict[int, bool] = {}
        self.partial = self._partial(items)

    def _partial(self, items: list[_Item]) -> list[_Item] | None:
        """The unit of a response that may still be being written: the last assistant message of the
        file, after which nothing but its own tool results was written, unless its last part says
        the turn ended.  (``stop_reason`` is null on most parts, and ``tool_use`` on parts that
        more parts follow when calls run in parallel, so only a final reason proves it whole.)"""
        unit = next((u for u in reversed(self.units) if u[0].kind == "assistant"), None)
        if unit is None or unit[-1].stop:
            return None
        last = max(it.n for it in unit)
        uses = {use for it in unit for use in it.uses}
        for it in items[last + 1:]:
            if it.uuid is None or it.side or it.kind not in ("user", "assistant"):
                continue
            if it.kind == "user" and it.results and set(it.results) <= uses:
                continue
            if it.kind == "assistant" and it.msg == unit[0].msg:
                continue
            return None
        return unit

    def reason(self, item: _Item) -> str:
        """Why a chain record is off the resumed chain."""
        if item.side:
            return "sidechain"
        if item.kind not in ("user", "assistant"):
            return "beside-the-chain"
        return "other-branch" if self._rooted(item) else "cut-off"

    def _rooted(self, item: _Item) -> bool:
        """Whether walking up from ``item`` reaches the chain or a root (``parentUuid: null``: a tree
        of its own, a 1.0.x compaction root) rather than a parent that names nothing, or a cycle.
        Memoised along the walk, so every record is walked once (a long branch stays linear)."""
        memo = self._memo
        walked: list[int] = []
        seen: set[int] = set()
        current: _Item | None = item
        answer = False
        while current is not None:
            if current.n in memo:
                answer = memo[current.n]
                break
            if current.n in self.on or current.parent is None:
                answer = True
                walked.append(current.n)
                break
            if current.n in seen:  # a cycle: never reaches a root
                break
            seen.add(current.n)
            walked.append(current.n)
            parent = current.parent
            current = self.index.get(parent) if isinstance(parent, str) else None
        for n in walked:
            memo[n] = answer
        return answer


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _content(content: object) -> object:
    """The source's content as is; anything but a string or a list (never seen) becomes a list of it."""
    if isinstance(content, (str, list)):
        return content
    return [] if content is None else [content]


def _user(value: dict, t: str, item: _Item) -> dict:
    message = value.get("message") if isinstance(value.get("message"), dict) else {}
    content = message.get("content")
    if value.get("isCompactSummary") is True:
        return {"kind": "compact", "t": t, "briefing": _text(content), "content": _content(content), COVERS_PREVIOUS: True}
    text = _text(content)
    if not item.results and text.startswith(_INTERRUPT) and len(text) < 200:
        return {"kind": "event", "t": t, "type": "interrupt", "content": text}
    record: dict = {"kind": "user", "t": t, "content": _content(content)}
    if item.results:
        record["toolResult"] = True
    elif value.get("isMeta") is True or (text and prompt_text(content) is None and _INJECTED.match(text)):
        record["injected"] = True  # Claude Code's own text (a command, a caveat, a reminder), not typed
    return record


def _assistant(values: list[dict], t: str) -> dict:
    blocks: list = []
    messages = [v.get("message") if isinstance(v.get("message"), dict) else {} for v in values]
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            blocks += content
        elif isinstance(content, str):
            blocks.append({"type": "text", "text": content})
    last = messages[-1]
    error = next((v for v in values if v.get("isApiErrorMessage") is True), None)
    if error is not None:
        record = {"kind": "event", "t": t, "type": "api-error", "content": _text(blocks)}
        for key in ("error", "apiErrorStatus"):
            if key in error:
                record[key] = error[key]
        return record
    record = {"kind": "assistant", "t": t, "content": blocks}
    model = next((m["model"] for m in messages if isinstance(m.get("model"), str)), None)
    if model:
        record["model"] = model
    if isinstance(last.get("id"), str):
        record["messageId"] = last["id"]
    if isinstance(last.get("usage"), dict):
        record["usage"] = last["usage"]  # repeated on every part, grown on later ones: the last counts once
    if last.get("stop_reason") is not None:
        record["stopReason"] = last["stop_reason"]
    return record


def _event(value: dict, t: str) -> dict:
    kind = value["type"]
    if kind == "system":
        subtype = value.get("subtype")
        record = {"kind": "event", "t": t, "type": "compact-boundary" if subtype == "compact_boundary" else "system"}
        if isinstance(subtype, str) and subtype != "compact_boundary":
            record["subtype"] = subtype
        if isinstance(value.get("content"), str):
            record["content"] = value["content"]
        return record
    if kind == "progress":
        data = value.get("data") if isinstance(value.get("data"), dict) else {}
        return {"kind": "event", "t": t, "type": "progress", **({"dataType": data["type"]} if isinstance(data.get("type"), str) else {})}
    if kind == "attachment":
        data = value.get("attachment") if isinstance(value.get("attachment"), dict) else {}
        return {"kind": "event", "t": t, "type": "attachment", **({"attachmentType": data["type"]} if isinstance(data.get("type"), str) else {})}
    record = {"kind": "event", "t": t, "type": kind}
    for key in _META_FIELDS.get(kind, ()):
        if key in value and not isinstance(value[key], (dict, list)):
            record[key] = value[key]
    return record


class _Records:
    """A session's journal records, converted from the source on each pass (re-iterable, sized)."""

    def __init__(self, transcript: _Transcript, plan: _Plan, *, title_rank: int, links: list[tuple[_Item | None, dict]],
                 created: str | None) -> None:
        self.t, self.plan, self.title_rank, self.created = transcript, plan, title_rank, created
        self.links = links
        self.count = len(plan.units) + len(plan.rest) + len(links)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        return self.select(None)

    def select(self, known: dict | None) -> Iterator[dict]:
        """The records, converted; with ``known`` (a journal's source keys, a partial record's mapped
        to its seq), only those that may be new to it: the rest are skipped before conversion."""
        def maybe_new(key: str, alias: str) -> bool:
            if known is None:
                return True
            if key in known:
                return known[key] is not None  # a partial record: its whole version may supersede it
            return alias not in known

        plan = self.plan
        after: dict[int, list[dict]] = {}
        loose = []
        for anchor, link in self.links:
            (after.setdefault(anchor.n, []) if anchor is not None else loose).append(link)
        self.shown_title = None
        try:
            for unit in plan.units:
                if maybe_new(unit[0].key, unit[0].key + ":off"):
                    yield self._unit(unit)
                for it in unit:
                    yield from after.get(it.n, ())
            yield from loose
            for item in plan.rest:
                key = item.key + ":off" if item.uuid is not None else item.key
                if maybe_new(key, item.key if item.uuid is not None else key):
                    yield self._rest(item)
                elif item.uuid is None and item.kind in _TITLES:
                    self._rest(item)  # not new, but the titles after it are judged against it
        finally:
            self.t.close()

    def _when(self, item: _Item) -> str:
        return item.stamp or self.created or ""

    def _unit(self, unit: list[_Item]) -> dict:
        head = unit[0]
        pairs = [self.t.value(it) for it in unit]
        value = pairs[0][0]
        t = self._when(head)
        if head.kind == "assistant":
            record = _assistant([v for v, _ in pairs], t)
        elif head.kind == "user":
            record = _user(value, t, head)
        else:
            record = _event(value, t)
        record["sourceKey"] = head.key
        record[ALIAS] = head.key + ":off"
        if len(unit) > 1:
            record["parts"] = len(unit)
            record[PART_KEYS] = [it.key for it in unit[1:]]
            record[AT] = [it.offset for it in unit]
            record["raw"] = Raw(b"[" + b",".join(data for _, data in pairs) + b"]")
        else:
            record[AT] = head.offset
            record["raw"] = Raw(pairs[0][1])
        if unit is self.plan.partial:
            record["partial"] = True  # a response still being written: superseded once it is whole
        return record

    def _rest(self, item: _Item) -> dict:
        value, data = self.t.value(item)
        t = self._when(item)
        if item.uuid is not None:  # a chain record off the resumed chain
            record = _event(value, t) if item.kind not in ("user", "assistant") else {"kind": "event", "t": t, "type": "off-chain"}
            record.update({"offChain": self.plan.reason(item), "claudeType": item.kind, "line": item.line, "uuid": item.uuid,
                           "parentUuid": item.parent if isinstance(item.parent, str) else None})
            if isinstance(value.get("message"), dict):
                record["message"] = value["message"]
            record["sourceKey"], record[ALIAS] = item.key + ":off", item.key
        else:
            field_rank = _TITLES.get(item.kind)
            title = value.get(field_rank[0]) if field_rank else None
            if (field_rank and field_rank[1] == self.title_rank and isinstance(title, str) and title != self.shown_title
                    and _titles(item, value, self.plan)):
                record = {"kind": "title", "t": t, "title": title}
                self.shown_title = title
            elif field_rank and title == self.shown_title:
                record = {**_event(value, t), "sameTitle": True}  # rewritten unchanged (ai-title, often): no new title
            else:
                record = _event(value, t)
            record["sourceKey"] = item.key
        record[AT] = item.offset
        record["raw"] = Raw(data)
        return record


def _titles(item: _Item, value: dict, plan: _Plan) -> bool:
    """A summary titles this conversation only when its leafUuid is a record of this file."""
    return item.kind != "summary" or (isinstance(value.get("leafUuid"), str) and value["leafUuid"] in plan.index)


def _title_rank(transcript: _Transcript, plan: _Plan) -> tuple[int, str | None]:
    """The highest kind of title the file has (3 custom, 2 ai, 1 summary of this file, 0 none),
    and the title a listing shows: the last of that kind."""
    rank, title = 0, None
    for item in plan.rest:
        field_rank = _TITLES.get(item.kind)
        if not field_rank or item.uuid is not None or field_rank[1] < rank:
            continue
        value, _data = transcript.value(item)
        text = value.get(field_rank[0])
        if isinstance(text, str) and _titles(item, value, plan):
            rank, title = field_rank[1], text
    transcript.close()
    return rank, title


def _first_prompt(transcript: _Transcript, plan: _Plan) -> str | None:
    for unit in plan.units:
        if unit[0].kind == "user" and not unit[0].results:
            value, _data = transcript.value(unit[0])
            message = value.get("message") if isinstance(value.get("message"), dict) else {}
            if value.get("isMeta") is True or value.get("isCompactSummary") is True:
                continue
            text = prompt_text(message.get("content"))
            if text is not None and not text.startswith(_INTERRUPT):
                transcript.close()
                return " ".join(text.split())[:120]
    transcript.close()
    return None


# -- sessions -------------------------------------------------------------------------------------


def _session_id(path: Path) -> str:
    """The file's stem: Claude Code names a transcript after its sessionId.  A renamed copy keeps
    its own name, so two files never share a journal (their records may say the same sessionId)."""
    return path.stem


def _place(project: str | None) -> tuple[str, list[str]]:
    if not project:
        return "unknown", []
    if is_foreign(project) or not Path(project).is_absolute():
        return "unknown", []  # another OS's path (a Windows cwd read on Linux): cannot be judged here
    return ("live", []) if Path(project).is_dir() else ("orphaned", ["folder-missing"])


def _agent_meta(path: Path) -> dict:
    """``agent-<id>.meta.json`` beside a subagent transcript: its agentType and description."""
    try:
        value = loads((path.parent / (path.stem + ".meta.json")).read_bytes())
    except (OSError, ValueError):
        return {}
    return {k: value[k] for k in ("agentType", "description") if isinstance(value, dict) and isinstance(value.get(k), str)}


def _build(transcript: _Transcript, items: list[_Item], sid: str, session_key: str, project: str | None, options: Options, *,
           whole_sidechain: bool, extra_source: dict, links: list[tuple[_Item | None, dict]] = (),
           title: str | None = None, skipped: dict[str, int] | None = None, lines: int | None = None,
           too_large: list | None = None) -> Session:
    plan = _Plan(items, whole_sidechain=whole_sidechain)
    rank, line_title = _title_rank(transcript, plan)
    title = line_title or title or _first_prompt(transcript, plan)
    created = next((it.stamp for it in items if it.stamp), None) or transcript.mtime  # summary-only files have no time
    status, orphan = _place(project)
    source = {"app": APP, "path": str(transcript.path), "key": session_key, "version": transcript.version, **extra_source}
    if transcript.session_id and transcript.session_id != session_key.split("/", 1)[0]:
        source["sessionId"] = transcript.session_id  # a renamed file, or a 1.0.x copy re-stamped on resume
    session = Session(sid, options.project or (apply_map(project, options.mapping) if project else None), created, title,
                      source, None, status=status, orphan=orphan)
    session.records = _Records(transcript, plan, title_rank=rank, links=list(links), created=created)
    session.state = transcript.state(items)
    session.merged = plan.merged
    session.source_lines = lines
    session.source_items = len(items) + sum((skipped or {}).values())
    for reason, count in (skipped or {}).items():
        session.skip(reason, count)
    session.too_large = list(too_large or ())
    return session


def _first_cwd(path: Path) -> str | None:
    """The first ``cwd`` of a transcript's chain records (its project), reading no further."""
    try:
        for src in SourceReader(path, CLAUDE_CODE.is_record, lambda _f: None):
            value = src.value
            if value.get("type") in CHAIN and isinstance(value.get("cwd"), str):
                return value["cwd"]
    except OSError:
        return None
    return None


def _sidechains(items: list[_Item]) -> dict[str, list[_Item]]:
    """1.0.x inline subagents of a main transcript: its ``isSidechain`` chain records, by root."""
    side = {it.uuid: it for it in items if it.uuid is not None and it.side}
    if not side or len(side) == sum(1 for it in items if it.uuid is not None):
        return {}
    roots: dict[str, list[_Item]] = {}
    root_of: dict[str, str] = {}  # memoised: every record is walked once
    for it in items:
        if it.uuid is None or not it.side:
            continue
        walked, seen, current = [], set(), it
        while current.uuid not in root_of and isinstance(current.parent, str) and current.parent in side \
                and current.uuid not in seen:
            seen.add(current.uuid)
            walked.append(current.uuid)
            current = side[current.parent]
        root = root_of.get(current.uuid, current.uuid)
        for uuid in walked:
            root_of[uuid] = root
        root_of.setdefault(current.uuid, root)
        roots.setdefault(root, []).append(it)
    return roots


def _sessions(main: Path | None, agents: list[Path], options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    parent_sid = None
    project = None
    subagent_sessions: list[tuple[Path, _Transcript, str]] = []
    if main is not None:
        transcript = _Transcript(main, report)
        parent_sid = _session_id(main)
        project = transcript.cwd
    else:  # only subagents: the session's transcript is gone, or was not named; its folder is named after it
        parent_sid = agents[0].parent.parent.name
        parent_file = agents[0].parent.parent.parent / f"{parent_sid}.jsonl"
        project = _first_cwd(parent_file) if parent_file.is_file() else None  # file it beside its session
    parent_id = safe_id("claude", parent_sid)
    for agent in agents:
        sub = _Transcript(agent, report)
        agent_id = agent.stem[len("agent-"):]
        subagent_sessions.append((agent, sub, agent_id))
        if project is None:
            project = sub.cwd
    if main is not None:
        groups = _sidechains(transcript.items)
        moved = {it.n for group in groups.values() for it in group}
        items = [it for it in transcript.items if it.n not in moved]
        links: list[tuple[_Item | None, dict]] = []
        anchors = {it.agent: it for it in items if it.agent}
        for agent, sub, agent_id in subagent_sessions:
            child = safe_id("claude", f"{parent_sid}-agent-{agent_id}")
            anchor = anchors.get(agent_id)
            link = {"kind": "event", "t": (anchor.stamp if anchor else None) or sub.first_stamp or transcript.first_stamp or "",
                    "type": "subagent", "session": child, "agentId": agent_id, "sourceKey": f"claude:subagent:{agent_id}"}
            if anchor is not None and anchor.results:
                link["toolUseId"] = anchor.results[0]
            links.append((anchor, link))
        chain_before = {it.n: it for it in items if it.uuid is not None}
        for root, group in groups.items():
            child = safe_id("claude", f"{parent_sid}-side-{root}")
            before = max((n for n in chain_before if n < group[0].n), default=None)
            anchor = chain_before.get(before) if before is not None else None
            links.append((anchor, {"kind": "event", "t": group[0].stamp or "", "type": "subagent", "session": child,
                                   "sidechainRoot": root, "sourceKey": f"claude:sidechain:{root}"}))
        skipped = dict(transcript.reader.skipped)
        if moved:
            skipped["in-sidechain-session"] = len(moved)
        yield _build(transcript, items, parent_id, parent_sid, project, options, whole_sidechain=False,
                     extra_source={}, links=links, skipped=skipped, lines=transcript.reader.lines,
                     too_large=transcript.reader.too_large)
        for root, group in groups.items():
            yield _build(transcript, group, safe_id("claude", f"{parent_sid}-side-{root}"), f"{parent_sid}/sidechain/{root}",
                         project, options, whole_sidechain=True, extra_source={"parent": parent_id, "sidechainRoot": root},
                         lines=len({it.line for it in group}))
    for agent, sub, agent_id in subagent_sessions:
        extra = {"parent": parent_id, "agentId": agent_id, **_agent_meta(agent)}
        if main is None and not (agent.parent.parent.parent / f"{parent_sid}.jsonl").is_file():
            extra["parentMissing"] = True  # the session's transcript is gone (deleted at the source before it was imported)
        yield _build(sub, sub.items, safe_id("claude", f"{parent_sid}-agent-{agent_id}"), f"{parent_sid}/{SUBAGENTS}/{agent.stem}",
                     project, options, whole_sidechain=True, extra_source=extra, title=extra.get("description"),
                     skipped=dict(sub.reader.skipped), lines=sub.reader.lines, too_large=sub.reader.too_large)


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every Claude Code session under ``source`` (and each of its subagents) as a converted :class:`Session`."""
    for main, agents in _groups(source, report):
        where = main or agents[0]
        try:
            sessions = list(_sessions(main, agents, options, report))
        except OSError as exc:
            report(Finding("unreadable", "error", str(where), None, None, f"cannot read: {exc.strerror or exc}; not imported"))
            continue
        except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
            report(Finding("source-unreadable", "error", str(where), None, None,
                           f"could not be converted ({type(exc).__name__}: {exc}); skipped"))
            continue
        for session in sessions:
            if not len(session.records) and not session.too_large:  # a record too large to parse is kept all the same
                report(Finding("source-skipped", "warning", session.source["path"], None, None,
                               "holds no whole record (yet): no journal made; an import after it has one picks it up"))
                continue
            if not (options.orphans_only and not session.orphaned):
                yield session
