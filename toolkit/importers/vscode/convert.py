"""Turn a VS Code chat session (v1-v3, replayed) into LevelCode v2 records (SOURCES.md §3.2, §4.2).

Each request becomes a ``user`` record (the prompt text, exact) and an ``assistant`` record
(markdown runs with inline references spliced in, tool calls and thinking as content blocks,
``model``, ``status``, ``error``).  Undone requests (``isHidden`` / ``shouldBeRemovedOnSend``)
are kept after the conversation as ``orphan-message`` events, never replayed as turns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ...jsonarray import Elements, LazyList
from ..output import Raw, iso_from_ms, json_object
from ..spill import Records
from ..uris import revived_uri_text, uri_to_project

STATUS = {1: "complete", 2: "cancelled", 3: "failed", 0: "pending", 4: "pending"}
#: Response parts that only drive VS Code's UI while a reply streams (a placeholder before a
#: tool call, an undo marker, a code block's file link, progress lines): nothing a user reads
#: later is lost; each is counted as ``ui-only`` and kept under the assistant record's ``raw``.
UI_ONLY = frozenset({"prepareToolInvocation", "undoStop", "codeblockUri", "progressMessage", "progressTask",
                     "progressTaskSerialized", "mcpServersStarting"})


@dataclass
class Tally:
    """The accounting of one session: every source item (request, response part) and the
    ones that became no record, each with its key and reason (SOURCES §4.2)."""

    items: int = 0
    skips: list[tuple[str, str]] = field(default_factory=list)  # (reason, item key)

    def skip(self, reason: str, key: str) -> None:
        self.skips.append((reason, key))


def iso(ms: object) -> str | None:
    return iso_from_ms(ms, floor=1e11)


def normalise(session: dict) -> dict:
    """v1/v2/v3 differences (SOURCES §3.2): title, string message/response, error details.  A long
    session's requests (:class:`~toolkit.jsonarray.Elements`) are normalised as they are read."""
    requests = session.get("requests")
    if isinstance(requests, (Elements, LazyList)):
        return {**session, "requests": _Normalised(requests)}
    return {**session, "requests": [_normalised(r) for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []}


def _normalised(request: dict) -> dict:
    request = dict(request)
    if isinstance(request.get("message"), str):
        request["message"] = {"text": request["message"]}
    if isinstance(request.get("response"), str):
        request["response"] = [{"value": request["response"]}]
    if request.get("responseErrorDetails") is not None and (request.get("result") is None or isinstance(request.get("result"), dict)):
        result = dict(request.get("result") or {})
        result.setdefault("errorDetails", request["responseErrorDetails"])
        request["result"] = result
    return request


class _Normalised:
    """The requests of a long session that are objects, normalised, each as it is read (sized, re-iterable)."""

    def __init__(self, requests: Elements | LazyList) -> None:
        self.requests = requests

    def __iter__(self) -> Iterator[dict]:
        return (_normalised(r) for r in self.requests if isinstance(r, dict))

    def __len__(self) -> int:
        return self.requests.objects()


def title_of(session: dict) -> str | None:
    for key in ("customTitle", "computedTitle"):
        if isinstance(session.get(key), str) and session[key]:
            return session[key]
    return None


def _uri_text(uri: object) -> str | None:
    """A readable path for a revived ``$mid: 1`` URI object or a URI string: a local file's
    path, any other scheme's URI (never a backslashed ``\\home\\…`` made from a WSL URI)."""
    if isinstance(uri, dict):
        return revived_uri_text(uri)
    if isinstance(uri, str):
        return uri_to_project(uri)[0] if uri.startswith("file:") else uri
    return None


def context_files(request: dict) -> list[str]:
    files = []
    variables = (request.get("variableData") or {}).get("variables") if isinstance(request.get("variableData"), dict) else None
    for variable in variables if isinstance(variables, list) else []:
        if not isinstance(variable, dict):
            continue
        value = variable.get("value")
        target = value.get("uri") if isinstance(value, dict) and "uri" in value else value
        text = _uri_text(target)
        if text:
            files.append(text)
    return files


def _inline_name(part: dict) -> str:
    if isinstance(part.get("name"), str) and part["name"]:
        return part["name"]
    ref = part.get("inlineReference")
    if isinstance(ref, dict) and isinstance(ref.get("name"), str):
        return ref["name"]
    target = ref.get("uri") if isinstance(ref, dict) and "uri" in ref else ref
    if isinstance(ref, dict) and "location" in ref:
        target = ref["location"].get("uri") if isinstance(ref["location"], dict) else None
    text = _uri_text(target) or ""
    return text.replace("\\", "/").rstrip("/").rpartition("/")[2] or text


#: Built-in tools whose name in ``toolCallRounds`` (the model's) is not their VS Code ``toolId``
#: with ``copilot_`` and case and ``_`` taken away (``read_file`` = ``copilot_readFile`` needs no entry).
ROUND_ALIASES = {"semantic_search": "searchcodebase", "file_search": "findfiles", "grep_search": "findtextinfiles",
                 "list_dir": "listdirectory", "get_changed_files": "getchangedfiles", "insert_edit_into_file": "insertedit",
                 "replace_string_in_file": "replacestring", "multi_replace_string_in_file": "multireplacestring",
                 "list_code_usages": "listcodeusages", "get_vscode_api": "getvscodeapi", "edit_notebook_file": "editnotebook"}


def _tool_key(name: str) -> str:
    return name.lower().removeprefix("copilot_").replace("_", "")


def _same_tool(round_name: object, tool_id: str) -> bool:
    if not isinstance(round_name, str):
        return False
    return round_name == tool_id or ROUND_ALIASES.get(round_name, _tool_key(round_name)) == _tool_key(tool_id)


def _round_call(part: dict, request: dict, cursor: dict) -> dict | None:
    """The model's call (``result.metadata.toolCallRounds``) behind this invocation.

    Round ids never equal ``toolCallId``, so invocations and round calls are aligned in order:
    each invocation takes the next round call whose name is its tool's (exactly, or the same
    tool under VS Code's other name); one with none (an internal sub-call) takes nothing."""
    if "calls" not in cursor:
        result = request.get("result") if isinstance(request.get("result"), dict) else {}
        rounds = (result.get("metadata") or {}).get("toolCallRounds") if isinstance(result.get("metadata"), dict) else None
        cursor["calls"] = [c for r in rounds if isinstance(r, dict) and isinstance(r.get("toolCalls"), list) for c in r["toolCalls"]
                           if isinstance(c, dict)] \
            if isinstance(rounds, list) else []
        cursor["next"] = 0
    tool_id = part.get("toolId")
    if not isinstance(tool_id, str):
        return None
    calls = cursor["calls"]
    for i in range(cursor["next"], len(calls)):
        if _same_tool(calls[i].get("name"), tool_id):
            cursor["next"] = i + 1
            return calls[i]
    return None


def _tool_input(part: dict, request: dict, cursor: dict) -> dict:
    """The call's input from the field that holds it: ``toolSpecificData`` (``rawInput``, a
    terminal's ``commandLine`` or older ``command``), ``resultDetails.input``, else the
    model's own call in ``toolCallRounds``; ``{}`` when none holds it."""
    matched = _round_call(part, request, cursor)  # always, so the alignment holds for later calls
    data = part.get("toolSpecificData")
    if isinstance(data, dict):
        if isinstance(data.get("rawInput"), dict):
            return data["rawInput"]
        command = data.get("commandLine")
        if isinstance(command, dict):
            command = command.get("original") or command.get("toolEdited") or command.get("userEdited")
        if isinstance(command, str):
            return {"command": command}
        if isinstance(data.get("command"), str):  # the older terminal shape: {kind: "terminal", command, language}
            return {"command": data["command"]}
    details = part.get("resultDetails")
    if isinstance(details, dict) and isinstance(details.get("input"), str):
        value = json_object(details["input"])
        if value is not None:
            return value
    if matched is not None:
        arguments = matched.get("arguments")
        parsed = json_object(arguments)
        if parsed is not None:
            return parsed
        if isinstance(arguments, str):
            return {"raw": arguments}
    return {}


def _tool_result(part: dict) -> tuple[str, bool] | None:
    details = part.get("resultDetails")
    data = part.get("toolSpecificData") if isinstance(part.get("toolSpecificData"), dict) else {}
    if isinstance(details, dict) and isinstance(details.get("output"), list):
        texts = [o.get("value") for o in details["output"] if isinstance(o, dict) and isinstance(o.get("value"), str)]
        return "\n".join(texts), bool(details.get("isError"))
    if isinstance(details, list):
        return "\n".join(t for t in (_uri_text(u) for u in details) if t), False
    output = data.get("output") if isinstance(data, dict) else None
    if isinstance(output, dict) and isinstance(output.get("text"), str):
        code = output.get("exitCode", data.get("exitCode"))
        return output["text"], isinstance(code, int) and code != 0
    return None


def _message(value: object) -> str | None:
    """``invocationMessage`` / ``pastTenseMessage``: a string or a markdown ``{value}``."""
    if isinstance(value, dict):
        value = value.get("value")
    return value if isinstance(value, str) and value else None


def _tool_use(part: dict, request: dict, seen: dict) -> dict:
    """A ``tool_use`` block with the line VS Code showed for it (``display``: the past-tense
    message once complete, else the invocation message) and ``hidden`` when VS Code hides it."""
    block = {"type": "tool_use", "id": part.get("toolCallId") or "", "name": part.get("toolId") or "",
             "input": _tool_input(part, request, seen)}
    shown = (_message(part.get("pastTenseMessage")) if part.get("isComplete") is not False else None) or _message(part.get("invocationMessage"))
    if shown:
        block["display"] = shown
    if part.get("presentation") == "hidden":
        block["hidden"] = True
    return block


def _edit_count(edits: object) -> int:
    """TextEdits in a ``textEditGroup``: a list of batches, each a list of edits."""
    if not isinstance(edits, list):
        return 0
    return sum(len(batch) if isinstance(batch, list) else 1 for batch in edits)


def response_blocks(request: dict, tally: Tally | None = None, rid: str = "") -> list[dict]:
    """Content blocks from the response parts, in order (VS Code's computeMarkdownContent).

    Every part is counted in ``tally``: it becomes (part of) a block, or is skipped with a reason."""
    tally = tally if tally is not None else Tally()
    blocks: list[dict] = []
    text: list[str] = []
    seen: dict = {}  # the alignment of invocations with toolCallRounds (see _round_call)

    def flush() -> None:
        if text:
            joined = "".join(text)
            if joined:
                blocks.append({"type": "text", "text": joined})
            text.clear()

    response = request.get("response") or []
    if not isinstance(response, list):  # (a number or an object there: no part VS Code would show; kept under raw)
        tally.items += 1
        tally.skip("unknown-shape", f"response:{rid}")
        response = []
    for n, part in enumerate(response):
        tally.items += 1
        key = f"response:{rid}#{n}"
        if not isinstance(part, dict):
            tally.skip("not-an-object", key)
            continue
        kind = part.get("kind")
        if kind is None or kind in ("markdownContent", "markdownVuln"):
            content = part.get("content")
            value = part.get("value") if kind is None else content.get("value") if isinstance(content, dict) else None
            if isinstance(value, str):
                text.append(value)
                if not value:
                    tally.skip("empty", key)
            else:
                tally.skip("unknown-shape", key)
        elif kind == "inlineReference":
            text.append(f"`{_inline_name(part)}`")
        elif kind == "thinking":
            flush()
            value = part.get("value")
            value = "".join(v for v in value if isinstance(v, str)) if isinstance(value, list) else value
            if isinstance(value, str) and value:
                blocks.append({"type": "thinking", "thinking": value})
            else:
                tally.skip("empty", key)
        elif kind == "toolInvocationSerialized":
            flush()
            block = _tool_use(part, request, seen)
            blocks.append(block)
            result = _tool_result(part)
            if result is not None:
                blocks.append({"type": "tool_result", "tool_use_id": block["id"], "content": result[0], "is_error": result[1]})
        elif kind in ("textEditGroup", "notebookEditGroup"):
            flush()
            edit = {"type": "file_edit", "path": _uri_text(part.get("uri")), "edits": _edit_count(part.get("edits"))}
            if part.get("done") is False:
                edit["done"] = False
            blocks.append(edit)
        elif kind == "warning":
            flush()
            value = _message(part.get("content"))
            if value:
                blocks.append({"type": "warning", "text": value})
            else:
                tally.skip("empty", key)
        elif kind == "clearToPreviousToolInvocation":
            text.clear()  # VS Code drops the text since the last tool block
        elif isinstance(kind, str) and kind in UI_ONLY:
            tally.skip("ui-only", key)
        else:
            tally.skip(f"unknown-kind:{kind}" if isinstance(kind, str) else "unknown-shape", key)
    flush()
    return blocks


def status_of(request: dict) -> str:
    state = request.get("modelState")
    if isinstance(state, dict) and isinstance(state.get("value"), (int, float)) and state["value"] in STATUS:  # (a list there is no key)
        return STATUS[state["value"]]
    if request.get("isCanceled"):
        return "cancelled"
    result = request.get("result")
    if isinstance(result, dict) and result.get("errorDetails"):
        return "failed"
    if isinstance(result, dict) and result:
        return "complete"
    return "pending"


def _assistant_time(request: dict) -> tuple[str | None, bool]:
    state = request.get("modelState")
    if isinstance(state, dict) and iso(state.get("completedAt")):
        return iso(state["completedAt"]), False
    waiting = request.get("timeSpentWaiting")
    if isinstance(waiting, (int, float)) and waiting > 1e12:
        return iso(waiting), False
    start = request.get("timestamp")
    elapsed = (((request.get("result") or {}).get("timings") or {}).get("totalElapsed")
               if isinstance(request.get("result"), dict) and isinstance(request["result"].get("timings"), dict) else None)
    if isinstance(start, (int, float)) and isinstance(elapsed, (int, float)):
        return iso(start + elapsed), True
    return iso(start), True


def convert(session: dict, fallback_time: str | None, tally: Tally | None = None) -> tuple[list[dict], str | None]:
    """Records for every request, hidden ones as trailing events; and the session's first time.

    ``tally`` counts every request and response part (a request always becomes a record)."""
    tally = tally if tally is not None else Tally()
    records, hidden = Records(), []  # (a long session's go to a temporary database as they are made)
    last = fallback_time
    first = None
    for index, request in enumerate(session.get("requests") or []):
        rid = request.get("requestId") if isinstance(request.get("requestId"), str) else f"#{index}"
        tally.items += 1
        message = request.get("message") if isinstance(request.get("message"), dict) else {}
        t = iso(request.get("timestamp"))
        inferred = t is None
        t = t or last
        last = t
        first = first or t
        user = {"kind": "user", "t": t, "content": message.get("text") if isinstance(message.get("text"), str) else ""}
        files = context_files(request)
        if files:
            user["contextFiles"] = files
        if inferred:
            user["tInferred"] = True
        user["sourceKey"] = f"request:{rid}"
        user["raw"] = Raw(value={k: v for k, v in request.items() if k not in ("response", "result")})
        a_time, a_inferred = _assistant_time(request)
        status = status_of(request)
        assistant: dict = {"kind": "assistant", "t": a_time or t, "content": response_blocks(request, tally, rid)}
        if isinstance(request.get("modelId"), str):
            assistant["model"] = request["modelId"]
        assistant["status"] = status
        error = ((request.get("result") or {}).get("errorDetails") or {}) if isinstance(request.get("result"), dict) else {}
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            assistant["error"] = error["message"]
        if status == "pending":
            assistant["partial"] = True
        if a_inferred or a_time is None:
            assistant["tInferred"] = True
        assistant["sourceKey"] = f"response:{rid}"
        assistant["raw"] = Raw(value={"response": request.get("response"), "result": request.get("result")})
        if request.get("isHidden") or request.get("shouldBeRemovedOnSend"):
            for record in (user, assistant):
                hidden.append({"kind": "event", "t": record["t"], "type": "orphan-message", "role": record["kind"],
                               "reason": "hidden-request", "content": record["content"], "sourceKey": record["sourceKey"],
                               "raw": record["raw"]})
            continue
        records.append(user)
        records.append(assistant)
    for record in hidden:
        records.append(record)
    return records, first
