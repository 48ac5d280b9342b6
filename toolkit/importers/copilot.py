"""Recover GitHub Copilot CLI sessions (``~/.copilot/session-state/<id>/events.jsonl``) as
LevelCode v2 journals (SOURCES-AGENTS.md §4).

A file is taken for a Copilot CLI log only when its first record says so
(:func:`toolkit.identify.sniff` is ``"copilot"``), never by its name.  Every event line is a
source item: a prompt becomes a ``user`` record, an assistant step an ``assistant`` record (its
text, reasoning and tool calls, each joined by ``toolCallId`` to its execution's result), the
session's other events (resume, model change, error, compaction, shutdown…) ``event`` records;
turn markers and ephemeral events are counted as ``ui-only``; a line that cannot be parsed is a
``source-unreadable`` finding.  Session id ``copilot-<data.sessionId>``; project from the
session's ``context.cwd`` (then ``vscode.metadata.json``, then ``workspace.yaml``).  Never writes.
A log past :data:`KEEP_BYTES` is read as a stream (:func:`session_from_stream`): memory stays flat.
"""

from __future__ import annotations

import hashlib
import os
import re
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import FileChangedError, NotASourceError, PathNotFoundError
from ..findings import Finding
from ..identify import IDENTIFY_LINES, identify_lines
from ..lines import first_line, loads, open_regular, split_line
from .base import unconverted
from .output import Options, Raw, Session, json_object, safe_id
from .unchanged import Unit
from .uris import apply_map, folder_status, is_foreign

__all__ = ["APP", "Options", "detect", "scan", "scan_unit", "session_from_log", "source_files", "unit_key", "units"]

APP = "copilot"
LOG = "events.jsonl"
BOM = b"\xef\xbb\xbf"
#: Events that only mark a step for the CLI's own display; nothing a user reads is lost.
UI_ONLY = frozenset({"assistant.turn_start", "assistant.turn_end", "session.compaction_start", "assistant.message_delta",
                     "assistant.intent", "assistant.usage", "session.usage_info", "session.idle", "tool.execution_progress",
                     "tool.execution_partial_result"})
TOOL_EVENTS = ("tool.execution_start", "tool.execution_complete")
MAX_REJOIN = 64  # physical lines one event split by raw newlines may span (github/copilot-cli#2649)
#: A log of at most this many bytes is read whole and its records held; a larger one is read as a
#: stream, once for what its records need and again for each pass over them (:func:`session_from_stream`):
#: a 20 MB log (Copilot CLI's users report 18-20 MB ones) held peaked at 169 MiB, some 7 times its size.
KEEP_BYTES = 8 << 20


def detect() -> list[Path]:
    """``$COPILOT_HOME``, else ``~/.copilot``; also the older ``$XDG_STATE_HOME/.copilot``."""
    homes = [Path(os.environ["COPILOT_HOME"])] if os.environ.get("COPILOT_HOME") else []
    homes.append(Path.home() / ".copilot")
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    homes.append(Path(state) / ".copilot")
    return [home for home in dict.fromkeys(homes) if (home / "session-state").is_dir()]


def _logs(source: Path) -> list[Path]:
    """``--source``: a Copilot home, its ``session-state`` folder, one session folder or one log."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        return [source]
    if (source / LOG).is_file():
        return [source / LOG]
    state = source / "session-state" if (source / "session-state").is_dir() else source
    if state.name == "session-state" or any((p / LOG).is_file() for p in state.iterdir() if p.is_dir()):
        return sorted(p / LOG for p in state.iterdir() if (p / LOG).is_file())
    raise NotASourceError(f"{source} (expected a Copilot CLI home (~/.copilot), its session-state folder, a session folder or an events.jsonl)")


def source_files(source: Path) -> list[Path]:
    files = []
    for log in _logs(source):
        files += [p for p in (log, log.parent / "workspace.yaml", log.parent / "vscode.metadata.json") if p.is_file()]
    return files


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every Copilot CLI session under ``source`` as a converted :class:`Session`."""
    for unit in units(source, report):
        yield from scan_unit(unit, options, report)


# -- one unit per session log: a re-import reads only the logs that changed (issue 27) ----------


def units(source: Path, report: Callable[[Finding], None]) -> list[Unit]:
    """One unit per session log; each also depends on what its folder says of it beside the log
    (``workspace.yaml``, ``vscode.metadata.json``: its project and title)."""
    return [Unit(str(log), (log,), (log.parent / "workspace.yaml", log.parent / "vscode.metadata.json"), log)
            for log in _logs(source)]


def scan_unit(unit: Unit, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """The session of one log."""
    log = Path(unit.handle)
    try:
        streamed = os.stat(log).st_size > KEEP_BYTES
        data = None if streamed else log.read_bytes()
    except OSError as exc:
        report(Finding("unreadable", "error", str(log), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    try:
        session = session_from_stream(log, options, report) if data is None else session_from_log(log, data, options, report)
    except OSError as exc:
        report(Finding("unreadable", "error", str(log), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
        report(Finding("source-unreadable", "error", str(log), None, None, unconverted(exc)))
        return
    if session is not None and not (options.orphans_only and not session.orphaned):
        yield session


def unit_key(unit: Unit) -> str:
    """The session id a log's journal is named after (:func:`session_from_log`'s, folded to lower
    case): logs that share it (a session folder copied under another name) write one journal, one
    after the other, in one worker of ``import --jobs``.  Its first line says it, as Copilot CLI
    writes a log; else the log is read as a conversion reads it."""
    log = Path(unit.handle)
    try:
        line = first_line(log)
    except OSError:
        return str(log)  # (scan_unit reports it)
    try:
        event = loads(line)  # (a line cut at first_line's cap does not parse: the log is read below)
    except ValueError:
        event = None
    data = event.get("data") if isinstance(event, dict) and event.get("type") == "session.start" else None
    sid = data.get("sessionId") if isinstance(data, dict) else None
    if not (isinstance(sid, str) and sid):
        events = _stream(_file_lines(log), str(log), lambda _finding: None, _Read())
        try:
            start = next((e["data"] for _n, e, _r, _at in events if e["type"] == "session.start" and isinstance(e.get("data"), dict)), {})
        except Exception:  # noqa: BLE001 - untrusted data, unreadable here: scan_unit reports it
            start = {}
        finally:
            events.close()
        sid = start.get("sessionId") if isinstance(start.get("sessionId"), str) else None
        sid = sid or _yaml_scalars(log.parent / "workspace.yaml").get("id") or (
            log.parent.name if log.parent.parent.name == "session-state" else None)
    return (sid or str(log)).lower()


# -- reading the log ---------------------------------------------------------------------------


class _Read:
    """What a read of a log counted: its source items (non-empty lines; an event rejoined from several
    lines is one) and the lines skipped, by why (each is a finding of its own as it is met)."""

    def __init__(self) -> None:
        self.items = 0
        self.skipped: dict[str, int] = {}

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _lines_of(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """``(number, offset, bytes)`` of each line of ``data`` (after a BOM), as ``split(b"\\n")`` gives them."""
    offset = len(BOM) if data.startswith(BOM) else 0
    for number, line in enumerate(data[offset:].split(b"\n"), start=1):
        yield number, offset, line
        offset += len(line) + 1


def _file_lines(path: Path, block: int = 1 << 20) -> Iterator[tuple[int, int, bytes]]:
    """:func:`_lines_of` the file at ``path``, read ``block`` bytes at a time: only the line at hand
    (and those a reader looks ahead to) is held, whatever the log's size."""
    with open_regular(path, buffered=False) as handle:
        number, offset, held = 0, 0, []  # held: the pieces of the line not ended yet
        data = handle.read(block)
        if data.startswith(BOM):
            data, offset = data[len(BOM):], len(BOM)
        while data:
            pieces = data.split(b"\n")
            if len(pieces) > 1:
                held.append(pieces[0])
                pieces[0] = b"".join(held)
                held = [pieces.pop()]
                for line in pieces:
                    number += 1
                    yield number, offset, line
                    offset += len(line) + 1
            else:
                held.append(data)
            data = handle.read(block)
        yield number + 1, offset, b"".join(held)


def _events(data: bytes, path: str, report: Callable[[Finding], None]) -> tuple[list[tuple[int, dict, bytes]], int, dict[str, int]]:
    """(line number, event, its bytes) for every parsable event; the count of source items
    (non-empty lines; an event rejoined from several lines is one); the lines skipped, by why."""
    read = _Read()
    events = [(number, value, raw) for number, value, raw, _at in _stream(_lines_of(data), path, report, read)]
    return events, read.items, read.skipped


def _stream(lines: Iterator[tuple[int, int, bytes]], path: str, report: Callable[[Finding], None],
            read: _Read) -> Iterator[tuple[int, dict, bytes, tuple[int, int, bool]]]:
    """``(line number, event, its bytes, where)`` of every parsable event of ``lines``
    (:func:`_lines_of`, :func:`_file_lines`), counted into ``read``; ``where``: the offset and length of
    the bytes the event was read from, and whether it was rejoined (their newlines became ``\\n``).
    A line looks ahead at most MAX_REJOIN lines to rejoin them, and past blank and NUL lines to tell
    whether it is the last."""
    ahead: deque[tuple[int, int, bytes]] = deque()

    def filled(count: int) -> bool:
        while len(ahead) < count:
            line = next(lines, None)
            if line is None:
                return False
            ahead.append(line)
        return True

    def more() -> bool:  # a line with more than blanks and NULs after this one
        if any(item[2].strip(b" \t\r\0") for item in ahead):
            return True
        for item in lines:
            ahead.append(item)
            if item[2].strip(b" \t\r\0"):
                return True
        return False

    while ahead or filled(1):
        number, offset, line = ahead.popleft()
        if not line.strip(b" \t\r"):
            continue
        read.items += 1
        if not line.strip(b"\0"):
            read.skip("nul-tail")
            report(Finding("source-torn", "warning", path, number, None, f"{len(line)} NUL bytes after the last event (a crash); ignored"))
            continue
        value, used = _parse(line, ahead, filled)
        if value is None:
            final = not more()
            pieces = split_line(line, _is_event)
            whole = [p for p in pieces if p.kind == "record"]
            if len(whole) > 1 or (whole and not final):  # events run together on one line (`}{`): each imported
                read.items += len(whole) - 1
                for piece in whole:
                    raw = line[piece.start:piece.end]
                    yield number, loads(raw), raw, (offset + piece.start, len(raw), False)
                lost = sum(p.end - p.start for p in pieces if p.kind == "cut")
                report(Finding("source-joined", "warning", path, number, None,
                               f"{len(whole)} whole event(s) run together on one line; each was imported on its own"
                               + (f"; {lost:,} bytes of a cut-off event beside them were not" if lost else "")))
                if lost:
                    read.items += 1
                    read.skip("cut-record")
                continue
            if final:
                read.skip("torn-line")
                report(Finding("source-torn", "warning", path, number, None, "the last line is incomplete (written mid-turn?); ignored"))
            else:
                read.skip("unreadable-line")
                report(Finding("source-unreadable", "error", path, number, None, "not a JSON event; line skipped"))
            continue
        joined = [ahead.popleft()[2] for _ in range(used)]
        if used:
            report(Finding("source-torn", "warning", path, number, None,
                           f"one event was split over {used + 1} lines by raw newlines in its text; rejoined"))
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            read.skip("not-an-event")
            report(Finding("source-unreadable", "error", path, number, None, "not an event object with a type; line skipped"))
            continue
        raw = line if not used else b"\\n".join([line, *joined])
        yield number, value, raw, (offset, len(raw) - used, bool(used))


def _parse(line: bytes, ahead: deque, filled: Callable[[int], bool]) -> tuple[object, int]:
    """Parse a line; failing that, rejoin it with the lines after it (raw newlines inside a
    string, #2649) while that makes one valid event.  Returns (value or None, lines rejoined)."""
    try:
        return loads(line), 0
    except ValueError:
        pass
    joined = line
    for extra in range(1, MAX_REJOIN + 1):
        if not filled(extra):
            break
        joined += b"\\n" + ahead[extra - 1][2]
        try:
            return loads(joined), extra
        except ValueError:
            continue
    return None, 0


# -- the session's side files -------------------------------------------------------------------


def _yaml_scalars(path: Path) -> dict[str, str]:
    """Top-level ``key: value`` scalars of ``workspace.yaml`` (plain or quoted; a ``|`` block is skipped)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    for match in re.finditer(r"^([a-z_]+):[ \t]*(.*?)[ \t]*$", text, re.MULTILINE):
        key, value = match.groups()
        if not value or value[0] in "|>":
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out


def _vscode_metadata(path: Path) -> dict:
    try:
        value = loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# -- conversion ------------------------------------------------------------------------------


def _attachments(data: dict) -> list[str]:
    files = []
    for item in data.get("attachments") if isinstance(data.get("attachments"), list) else []:
        if isinstance(item, dict):
            path = item.get("path") or item.get("filePath") or item.get("displayName")
            if isinstance(path, str) and path:
                files.append(path)
        elif isinstance(item, str):
            files.append(item)
    return files


def _tool_blocks(request: dict, starts: dict, completes: dict) -> list[dict]:
    """A requested call as ``tool_use``, then its result when the log holds one."""
    call_id = request.get("toolCallId") if isinstance(request.get("toolCallId"), str) else ""
    start = starts.get(call_id, {}) if "arguments" not in request or not request.get("name") else {}  # (only when it is asked)
    arguments = request.get("arguments", start.get("arguments"))
    parsed = json_object(arguments)
    block: dict = {"type": "tool_use", "id": call_id, "name": request.get("name") or start.get("toolName") or "",
                   "input": parsed if parsed is not None else ({} if arguments is None else {"raw": arguments})}
    if isinstance(request.get("intentionSummary"), str) and request["intentionSummary"]:
        block["display"] = request["intentionSummary"]
    blocks = [block]
    done = completes.get(call_id)
    if done is not None:
        blocks.append(_tool_result(call_id, done))
    return blocks


def _tool_result(call_id: str, done: dict) -> dict:
    result, error = done.get("result"), done.get("error")
    if isinstance(result, dict):
        content = result.get("content")
        content = content if isinstance(content, str) else result.get("detailedContent") if isinstance(result.get("detailedContent"), str) else ""
    elif isinstance(error, dict):
        content = error.get("message") if isinstance(error.get("message"), str) else ""
    else:
        content = ""
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": done.get("success") is False or error is not None}


def _assistant(data: dict, t: str, starts: dict, completes: dict, model: str | None) -> tuple[dict, set[str]]:
    content: list[dict] = []
    if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
        content.append({"type": "thinking", "thinking": data["reasoningText"]})
    if isinstance(data.get("content"), str) and data["content"]:
        content.append({"type": "text", "text": data["content"]})
    calls: set[str] = set()
    for request in data.get("toolRequests") if isinstance(data.get("toolRequests"), list) else []:
        if isinstance(request, dict):
            content += _tool_blocks(request, starts, completes)
            if isinstance(request.get("toolCallId"), str):
                calls.add(request["toolCallId"])
    record: dict = {"kind": "assistant", "t": t, "content": content}
    if model:
        record["model"] = model
    if any(c not in completes for c in calls):
        record["status"], record["partial"] = "pending", True  # a call still running: superseded once it completes
    else:
        record["status"] = "complete"
    return record, calls


def first_number(data: bytes) -> int | None:
    """The line number of the first non-blank line of ``data``."""
    for number, line in enumerate((data[len(BOM):] if data.startswith(BOM) else data).split(b"\n"), start=1):
        if line.strip(b" \t\r"):
            return number
    return None


def _is_event(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def is_copilot_log(data: bytes) -> bool:
    """Whether ``data`` is a Copilot CLI event log (SOURCES-AGENTS §5): decided by the first record
    that identifies a specific format (:func:`toolkit.identify.identify_lines`): damage inside the
    first line's envelope (``"da}{ta"``, which then sniffs as a generic Logician entry) does not
    make the whole log foreign."""
    return identify_lines(data)[0] == "copilot"


def _requested(data: dict) -> set[str]:
    """The call ids an assistant step requests (those :func:`_assistant` carries)."""
    return {request["toolCallId"] for request in (data.get("toolRequests") if isinstance(data.get("toolRequests"), list) else [])
            if isinstance(request, dict) and isinstance(request.get("toolCallId"), str)}


def _is_start(event: dict) -> bool:
    """A ``session.start`` with its data: the first one is the session's start (its meta, its model)."""
    return event["type"] == "session.start" and isinstance(event.get("data"), dict)


def _is_call(event: dict, kind: str) -> bool:
    return event["type"] == kind and isinstance(event.get("data"), dict) and isinstance(event["data"].get("toolCallId"), str)


class _Conversation:
    """The records of one log, built event by event (tool executions joined to their calls): ``starts``
    and ``completes`` are the tool events by call id (the last of each), ``start`` the data of the first
    ``session.start`` (the event numbered ``start_at`` among the events), ``first`` the number of the
    log's first line.  ``build=False`` only counts them, and what the count depends on (a large log's
    first read: :class:`_Records` builds them on each pass)."""

    def __init__(self, start: dict, start_at: int | None, first: int | None, starts, completes, *, build: bool = True) -> None:
        self.starts, self.completes, self.start, self.start_at = starts, completes, start, start_at
        self.model = start.get("selectedModel") if isinstance(start.get("selectedModel"), str) else None
        self.build = build
        self.last_t = start.get("startTime")  # the time of the last record (the next one's when it has none)
        self.count = 0  # records
        self.carried: set[str] = set()  # tool calls an assistant record holds
        self.contexts: list[dict] = []  # session.start / session.resume contexts, in order
        self.ui_only = 0  # events that became no record
        self.ui_shown: list[str] = []  # the first ten of their keys
        self.first = first  # the number of the log's first line: the meta carries it when it is this session.start
        self.merged = 0  # events carried inside another record (the meta, an assistant step)

    @classmethod
    def of(cls, events: list[tuple[int, dict, bytes]], first: int | None) -> tuple[_Conversation, list[dict]]:
        """A log's conversation and its records, its events held (a log of at most KEEP_BYTES)."""
        def by_call(kind: str) -> dict:
            return {e["data"]["toolCallId"]: e["data"] for _n, e, _r in events if _is_call(e, kind)}  # (a call is looked up by a string id)

        start_at = next((index for index, (_n, e, _r) in enumerate(events) if _is_start(e)), None)
        log = cls(events[start_at][1]["data"] if start_at is not None else {}, start_at, first,
                  by_call("tool.execution_start"), by_call("tool.execution_complete"))
        records = []
        for index, (number, event, raw) in enumerate(events):
            record = log.add(index, number, event, raw)
            if record is not None:
                records.append(record)
        return log, records

    def add(self, index: int, number: int, event: dict, raw: bytes) -> dict | None:
        """The record of the ``index``-th event (None: it became none; or counted only)."""
        kind, body = event["type"], event.get("data") if isinstance(event.get("data"), dict) else {}
        t = event.get("timestamp") if isinstance(event.get("timestamp"), str) else self.last_t
        if isinstance(body.get("context"), dict):
            self.contexts.append(body["context"])
        if kind in UI_ONLY:
            self.ui_only += 1
            if len(self.ui_shown) < 10:
                self.ui_shown.append(f"event:{event.get('id')}" if isinstance(event.get("id"), str) else f"line:{number}")
            return None
        if (kind == "session.start" and index == self.start_at and number == self.first) or (
                kind in TOOL_EVENTS and isinstance(body.get("toolCallId"), str) and body["toolCallId"] in self.carried):
            self.merged += 1
            return None  # carried by the meta record / by the assistant record that requested the call
        if kind == "session.model_change" and isinstance(body.get("newModel"), str):
            self.model = body["newModel"]
        self.count += 1
        self.last_t = t
        if not self.build:
            if kind == "assistant.message":
                self.carried |= _requested(body)
            return None
        record = self._record(kind, body, t)
        record["sourceKey"] = f"event:{event.get('id')}" if isinstance(event.get("id"), str) else f"line:{number}"
        record["raw"] = Raw(raw)
        return record

    def _record(self, kind: str, body: dict, t: str | None) -> dict:
        if kind == "user.message":
            record: dict = {"kind": "user", "t": t, "content": body.get("content") if isinstance(body.get("content"), str) else ""}
            files = _attachments(body)
            if files:
                record["contextFiles"] = files
            return record
        if kind == "assistant.message":
            record, calls = _assistant(body, t, self.starts, self.completes, self.model)
            self.carried |= calls
            return record
        if kind in TOOL_EVENTS:  # a call no assistant step requested (or requested later): its own record
            call_id = body.get("toolCallId") if isinstance(body.get("toolCallId"), str) else ""
            blocks = (_tool_blocks({"toolCallId": call_id, "name": body.get("toolName"), "arguments": body.get("arguments")},
                                   self.starts, self.completes)
                      if kind == "tool.execution_start" else [_tool_result(call_id, body)])
            return {"kind": "assistant", "t": t, "content": blocks, "status": "complete"}
        record = {"kind": "event", "t": t, "type": kind}
        text = body.get("message") if kind == "session.error" else body.get("summaryContent") if kind == "session.compaction_complete" else None
        if isinstance(text, str):
            record["content"] = text
        return record


def _place(folder: Path, contexts: list[dict]) -> tuple[object, str | None, str, list[str], dict]:
    """Project, title, status and orphan reasons of a session folder; and its workspace.yaml."""
    yaml = _yaml_scalars(folder / "workspace.yaml")
    vsmeta = _vscode_metadata(folder / "vscode.metadata.json")
    context = next((c for c in contexts if isinstance(c.get("cwd"), str) and c["cwd"]), {})
    workspace = vsmeta.get("workspaceFolder") if isinstance(vsmeta.get("workspaceFolder"), dict) else {}
    project = context.get("cwd") or workspace.get("folderPath") or yaml.get("cwd") or yaml.get("git_root")
    title = next((v for v in (vsmeta.get("customTitle"), yaml.get("name"), yaml.get("summary")) if isinstance(v, str) and v), None)
    status, orphan = "live", []
    if isinstance(project, str) and project:
        if is_foreign(project) or not Path(project).is_absolute():
            status = "unknown"  # another OS's path (a Windows cwd read on Linux): cannot be judged here
        else:
            status, orphan = folder_status(project)
    return project, title, status, orphan, yaml


def session_from_log(path: Path, data: bytes, options: Options, report: Callable[[Finding], None]) -> Session | None:
    """Convert one ``events.jsonl`` held in ``data``; None (and a finding) when it is not a Copilot CLI log."""
    where = str(path)
    if not is_copilot_log(data):
        report(Finding("unknown-format", "error", where, 1, None, "not a GitHub Copilot CLI event log (its first record says otherwise); skipped"))
        return None
    events, items, skipped = _events(data, where, report)
    if not events:
        report(Finding("source-skipped", "warning", where, None, None,
                       f"holds no whole event ({items} line(s) read): no journal made; an import after it has one picks it up"))
        return None
    first = events[0][0] if events[0][0] == first_number(data) and _is_start(events[0][1]) else None  # else line 1 is a record of its own
    log, records = _Conversation.of(events, first)
    return _session(path, log, records, events[0][1], events[0][2] if first is not None else None, events[0][2], items, skipped,
                    options, report)


def session_from_stream(path: Path, options: Options, report: Callable[[Finding], None]) -> Session | None:
    """:func:`session_from_log` of a log read as a stream (one past :data:`KEEP_BYTES`): what the
    records need is kept, where each event is and the tool events by call id, and the records are
    converted again on each pass (:class:`_Records`), so memory stays flat whatever the log's size."""
    where = str(path)
    head = _head(path)
    line_one = first_number(head)
    if not is_copilot_log(head):
        report(Finding("unknown-format", "error", where, 1, None, "not a GitHub Copilot CLI event log (its first record says otherwise); skipped"))
        return None
    read, at = _Read(), _Located(path)
    starts: dict[str, int] = {}
    completes: dict[str, int] = {}
    log = _Conversation({}, None, None, None, None, build=False)
    first_event = first_raw = None
    events = _stream(_file_lines(path), where, report, read)
    try:
        for index, (number, event, raw, place) in enumerate(events):
            if index == 0:
                first_event, first_raw = event, raw
                log.first = number if number == line_one and _is_start(event) else None
            if log.start_at is None and _is_start(event):
                log.start, log.start_at = event["data"], index
            if _is_call(event, "tool.execution_start"):
                starts[event["data"]["toolCallId"]] = index
            elif _is_call(event, "tool.execution_complete"):
                completes[event["data"]["toolCallId"]] = index
            at.add(place, raw)
            log.add(index, number, event, raw)
    finally:
        events.close()
    if first_event is None:
        report(Finding("source-skipped", "warning", where, None, None,
                       f"holds no whole event ({read.items} line(s) read): no journal made; an import after it has one picks it up"))
        return None
    records = _Records(at, log, starts, completes)
    return _session(path, log, records, first_event, first_raw if log.first is not None else None, first_raw, read.items,
                    read.skipped, options, report)


def _session(path: Path, log: _Conversation, records, first: dict, meta: bytes | None, first_raw: bytes, items: int,
             skipped: dict[str, int], options: Options, report: Callable[[Finding], None]) -> Session:
    """The session of a log read (its first event ``first``, of bytes ``first_raw``; ``meta``: the meta's bytes)."""
    where, start, folder = str(path), log.start, path.parent
    project, title, status, orphan, yaml = _place(folder, log.contexts)
    sid = start.get("sessionId") if isinstance(start.get("sessionId"), str) and start["sessionId"] else None
    sid = sid or yaml.get("id") or (folder.name if folder.parent.name == "session-state" else None)
    sid = sid or "h" + hashlib.sha256(first_raw).hexdigest()[:32]
    source = {"app": APP, "path": where, "key": sid, "version": f"events:{start.get('version', 'none')}"}
    created = start.get("startTime") if isinstance(start.get("startTime"), str) else first.get("timestamp")
    session = Session(safe_id("copilot", sid), None, created if isinstance(created, str) else None, title, source,
                      Raw(meta) if meta is not None else None, records, status=status, orphan=orphan)
    session.project = options.project or _mapped(project, options)
    session.source_items = items
    session.merged = log.merged
    for reason, count in skipped.items():
        session.skip(reason, count)
    if log.ui_only:
        count = log.ui_only
        session.skip("ui-only", count)
        shown = ", ".join(log.ui_shown) + (f" and {count - 10} more" if count > 10 else "")
        report(Finding("source-skipped", "warning", where, None, None,
                       f"session {session.id}: {count} turn-marker or ephemeral event{'s' if count > 1 else ''} became no record, ui-only: {shown}"))
    return session


def _head(path: Path) -> bytes:
    """The lines of ``path`` up to its IDENTIFY_LINES-th non-blank one: what :func:`is_copilot_log`
    and :func:`first_number` read of a log held whole."""
    lines, seen = [], 0
    source = _file_lines(path)
    try:
        for _number, _offset, line in source:
            lines.append(line)
            seen += bool(line.strip())
            if seen >= IDENTIFY_LINES:
                break
    finally:
        source.close()
    return b"\n".join(lines)


class _Located:
    """Where each event of a large log was read from (its offset, length, whether it was rejoined:
    :func:`_stream`'s ``where``) and a hash of its bytes, 25 bytes an event: each pass checks that
    the log still holds them, and a tool event is read again by its number."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets, self.lengths, self.hashes, self.rejoined = array("q"), array("q"), array("q"), bytearray()

    def add(self, place: tuple[int, int, bool], raw: bytes) -> None:
        self.offsets.append(place[0])
        self.lengths.append(place[1])
        self.rejoined.append(place[2])
        self.hashes.append(hash(raw))

    def __len__(self) -> int:
        return len(self.offsets)

    def same(self, index: int, place: tuple[int, int, bool], raw: bytes) -> bool:
        return self.offsets[index] == place[0] and self.hashes[index] == hash(raw)

    def data(self, index: int, handle) -> dict:
        """The ``data`` of event ``index``, read again through ``handle`` (the log open)."""
        handle.seek(self.offsets[index])
        raw = handle.read(self.lengths[index])
        if self.rejoined[index]:
            raw = raw.replace(b"\n", b"\\n")
        try:
            value = loads(raw) if hash(raw) == self.hashes[index] else None
        except ValueError:
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("data"), dict):
            raise self.changed()
        return value["data"]

    def changed(self) -> FileChangedError:
        return FileChangedError(f"{self.path} changed while it was being imported (Copilot CLI rewrote it?); import again")


class _ByCall:
    """Tool events by call id (the last of each), as :meth:`_Conversation.of` holds them, read again when asked."""

    def __init__(self, at: dict[str, int], located: _Located, handle) -> None:
        self.at, self.located, self.handle = at, located, handle

    def __contains__(self, call_id: object) -> bool:
        return call_id in self.at

    def get(self, call_id: str, default=None):
        index = self.at.get(call_id)
        return default if index is None else self.located.data(index, self.handle)


class _Records:
    """A large log's records, converted again on each pass (re-iterable, sized): each event must be
    the one the first read saw (where it is and its hash), else the log changed meanwhile
    (:class:`FileChangedError`: nothing of it is written); events written since are the next import's."""

    def __init__(self, at: _Located, log: _Conversation, starts: dict[str, int], completes: dict[str, int]) -> None:
        self.at, self.count, self.starts, self.completes = at, log.count, starts, completes
        self.start, self.start_at, self.first = log.start, log.start_at, log.first

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        at, path = self.at, self.at.path
        events = _stream(_file_lines(path), str(path), lambda _finding: None, _Read())
        try:  # (what this pass reads is the log's: an OSError here is never the journal's)
            with open_regular(path) as handle:
                log = _Conversation(self.start, self.start_at, self.first, _ByCall(self.starts, at, handle),
                                    _ByCall(self.completes, at, handle))
                seen = 0
                for index, (number, event, raw, place) in enumerate(events):
                    if index == len(at):
                        break  # an event written since the first read: the next import's
                    if not at.same(index, place, raw):
                        raise at.changed()
                    seen += 1
                    record = log.add(index, number, event, raw)
                    if record is not None:
                        yield record
                if seen != len(at):
                    raise at.changed()
        except OSError as exc:
            raise FileChangedError.read_again(path, exc) from exc
        finally:
            events.close()


def _mapped(project: object, options: Options) -> str | None:
    return apply_map(project, options.mapping) if isinstance(project, str) and project else None
