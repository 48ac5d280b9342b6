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
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import NotASourceError, PathNotFoundError
from ..findings import Finding
from ..identify import identify_lines
from ..lines import first_line, loads, split_line
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
        data = log.read_bytes()
    except OSError as exc:
        report(Finding("unreadable", "error", str(log), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    try:
        session = session_from_log(log, data, options, report)
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
        try:
            events = _events(log.read_bytes(), str(log), lambda _finding: None)[0]
        except Exception:  # noqa: BLE001 - untrusted data, unreadable here: scan_unit reports it
            events = []
        start = next((e["data"] for _n, e, _r in events if e["type"] == "session.start" and isinstance(e.get("data"), dict)), {})
        sid = start.get("sessionId") if isinstance(start.get("sessionId"), str) else None
        sid = sid or _yaml_scalars(log.parent / "workspace.yaml").get("id") or (
            log.parent.name if log.parent.parent.name == "session-state" else None)
    return (sid or str(log)).lower()


# -- reading the log ---------------------------------------------------------------------------


def _events(data: bytes, path: str, report: Callable[[Finding], None]) -> tuple[list[tuple[int, dict, bytes]], int, list[tuple[int, str]]]:
    """(line number, event, its bytes) for every parsable event; the count of source items
    (non-empty lines; an event rejoined from several lines is one); the lines skipped, with why."""
    lines = (data[len(BOM):] if data.startswith(BOM) else data).split(b"\n")
    events, skipped, items = [], [], 0
    n = 0
    while n < len(lines):
        line, number = lines[n], n + 1
        n += 1
        if not line.strip(b" \t\r"):
            continue
        items += 1
        if not line.strip(b"\0"):
            skipped.append((number, "nul-tail"))
            report(Finding("source-torn", "warning", path, number, None, f"{len(line)} NUL bytes after the last event (a crash); ignored"))
            continue
        value, used = _parse(line, lines, n)
        if value is None:
            final = n == len(lines) or not any(rest.strip(b" \t\r\0") for rest in lines[n:])
            pieces = split_line(line, _is_event)
            whole = [p for p in pieces if p.kind == "record"]
            if len(whole) > 1 or (whole and not final):  # events run together on one line (`}{`): each imported
                items += len(whole) - 1
                for piece in whole:
                    events.append((number, loads(line[piece.start:piece.end]), line[piece.start:piece.end]))
                lost = sum(p.end - p.start for p in pieces if p.kind == "cut")
                report(Finding("source-joined", "warning", path, number, None,
                               f"{len(whole)} whole event(s) run together on one line; each was imported on its own"
                               + (f"; {lost:,} bytes of a cut-off event beside them were not" if lost else "")))
                if lost:
                    items += 1
                    skipped.append((number, "cut-record"))
                continue
            if final:
                skipped.append((number, "torn-line"))
                report(Finding("source-torn", "warning", path, number, None, "the last line is incomplete (written mid-turn?); ignored"))
            else:
                skipped.append((number, "unreadable-line"))
                report(Finding("source-unreadable", "error", path, number, None, "not a JSON event; line skipped"))
            continue
        if used:
            report(Finding("source-torn", "warning", path, number, None,
                           f"one event was split over {used + 1} lines by raw newlines in its text; rejoined"))
            n += used
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            skipped.append((number, "not-an-event"))
            report(Finding("source-unreadable", "error", path, number, None, "not an event object with a type; line skipped"))
            continue
        raw = line if not used else b"\\n".join(lines[number - 1:number + used])
        events.append((number, value, raw))
    return events, items, skipped


def _parse(line: bytes, lines: list[bytes], after: int) -> tuple[object, int]:
    """Parse a line; failing that, rejoin it with the lines after it (raw newlines inside a
    string, #2649) while that makes one valid event.  Returns (value or None, lines rejoined)."""
    try:
        return loads(line), 0
    except ValueError:
        pass
    joined = line
    for extra in range(1, MAX_REJOIN + 1):
        if after + extra - 1 >= len(lines):
            break
        joined += b"\\n" + lines[after + extra - 1]
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
    start = starts.get(call_id, {})
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


class _Conversation:
    """The records of one log, built event by event (tool executions joined to their calls)."""

    def __init__(self, events: list[tuple[int, dict, bytes]], first: int | None) -> None:
        def by_call(kind: str) -> dict:
            return {e["data"]["toolCallId"]: e["data"] for _n, e, _r in events  # (by a string id: the only kind a call is looked up by)
                    if e["type"] == kind and isinstance(e.get("data"), dict) and isinstance(e["data"].get("toolCallId"), str)}

        self.starts, self.completes = by_call("tool.execution_start"), by_call("tool.execution_complete")
        self.start = next((e["data"] for _n, e, _r in events if e["type"] == "session.start" and isinstance(e.get("data"), dict)), {})
        self.model = self.start.get("selectedModel") if isinstance(self.start.get("selectedModel"), str) else None
        self.records: list[dict] = []
        self.carried: set[str] = set()  # tool calls an assistant record holds
        self.contexts: list[dict] = []  # session.start / session.resume contexts, in order
        self.ui_only: list[str] = []  # keys of the events that became no record
        self.first = first  # the number of the log's first line: the meta carries it when it is this session.start
        self.merged = 0  # events carried inside another record (the meta, an assistant step)
        for number, event, raw in events:
            self.add(number, event, raw)

    def add(self, number: int, event: dict, raw: bytes) -> None:
        kind, body = event["type"], event.get("data") if isinstance(event.get("data"), dict) else {}
        previous = self.records[-1]["t"] if self.records else self.start.get("startTime")
        t = event.get("timestamp") if isinstance(event.get("timestamp"), str) else previous
        key = f"event:{event.get('id')}" if isinstance(event.get("id"), str) else f"line:{number}"
        if isinstance(body.get("context"), dict):
            self.contexts.append(body["context"])
        if kind in UI_ONLY:
            self.ui_only.append(key)
            return
        if (kind == "session.start" and body is self.start and number == self.first) or (
                kind in TOOL_EVENTS and isinstance(body.get("toolCallId"), str) and body["toolCallId"] in self.carried):
            self.merged += 1
            return  # carried by the meta record / by the assistant record that requested the call
        if kind == "session.model_change" and isinstance(body.get("newModel"), str):
            self.model = body["newModel"]
        record = self._record(kind, body, t)
        record["sourceKey"] = key
        record["raw"] = Raw(raw)
        self.records.append(record)

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
    """Convert one ``events.jsonl``; None (and a finding) when it is not a Copilot CLI log."""
    where = str(path)
    if not is_copilot_log(data):
        report(Finding("unknown-format", "error", where, 1, None, "not a GitHub Copilot CLI event log (its first record says otherwise); skipped"))
        return None
    events, items, skipped = _events(data, where, report)
    if not events:
        report(Finding("source-skipped", "warning", where, None, None,
                       f"holds no whole event ({items} line(s) read): no journal made; an import after it has one picks it up"))
        return None
    line_one = first_number(data)
    head = events[0] if (events[0][0] == line_one and events[0][1].get("type") == "session.start"
                         and isinstance(events[0][1].get("data"), dict)) else None  # else line 1 is a record of its own
    log = _Conversation(events, head[0] if head is not None else None)
    start, folder = log.start, path.parent
    project, title, status, orphan, yaml = _place(folder, log.contexts)
    sid = start.get("sessionId") if isinstance(start.get("sessionId"), str) and start["sessionId"] else None
    sid = sid or yaml.get("id") or (folder.name if folder.parent.name == "session-state" else None)
    sid = sid or "h" + hashlib.sha256(events[0][2]).hexdigest()[:32]
    source = {"app": APP, "path": where, "key": sid, "version": f"events:{start.get('version', 'none')}"}
    created = start.get("startTime") if isinstance(start.get("startTime"), str) else events[0][1].get("timestamp")
    session = Session(safe_id("copilot", sid), None, created if isinstance(created, str) else None, title, source,
                      Raw(head[2]) if head is not None else None, log.records, status=status, orphan=orphan)
    session.project = options.project or _mapped(project, options)
    session.source_items = items
    session.merged = log.merged
    for _number, reason in skipped:
        session.skip(reason)
    if log.ui_only:
        count = len(log.ui_only)
        session.skip("ui-only", count)
        shown = ", ".join(log.ui_only[:10]) + (f" and {count - 10} more" if count > 10 else "")
        report(Finding("source-skipped", "warning", where, None, None,
                       f"session {session.id}: {count} turn-marker or ephemeral event{'s' if count > 1 else ''} became no record, ui-only: {shown}"))
    return session


def _mapped(project: object, options: Options) -> str | None:
    return apply_map(project, options.mapping) if isinstance(project, str) and project else None
