"""A task's messages -> LevelCode v2 records (SOURCES-MORE §4.2).

``api_conversation_history.json`` is the conversation the model saw: each element becomes a
``user`` or ``assistant`` record whose ``content`` is the element's, verbatim (a string or its
blocks: text, image, tool_use, tool_result, thinking, reasoning…).  Text Cline or Roo put into a
user message (``<environment_details>``, a tool's ``[… ] Result:``, ``<file_content>``…) is marked
by block index under ``added``; a message of tool results alone is ``toolResult``; what the person
typed inside ``<task>``/``<feedback>``/``<answer>``/``<user_message>`` is kept as ``prompt``.

``ui_messages.json`` is what the panel showed: each element becomes one ``event`` of type
``cline-ui`` (``ui`` = ``say:<kind>`` or ``ask:<kind>``, its ``text``, and for a request its
tokens and cost under ``usage``).  A message still streaming (``partial``), or a request whose
cost is not written yet, is ``partial`` and superseded once the panel has it whole.

Keys: an API message ``api:<ts>:<digest>`` (``api:#<index>:<digest>`` without ``ts``), a panel
message ``ui:<ts>:<ask|say>:<kind>``; the digest covers role and content, so a message the tool
rewrote is added again, beside the first, and a re-import of a grown file adds only the new ones.
"""

from __future__ import annotations

import hashlib
import re

import orjson

from ..output import Raw, iso_from_ms, json_object

#: Text blocks the extension writes into a user message (never typed by the person).
_ADDED = re.compile(r"\s*(<environment_details>|<file_content|<files>|<explicit_instructions|<slash-command|"
                    r"\[[^\]\n]{1,200}\] Result:|\[TASK RESUMPTION\]|\[ERROR\]|<error>|<notice>)")
_RESULT = re.compile(r"\s*\[[^\]\n]{1,200}\] Result:")
_TYPED = re.compile(r"<(task|feedback|answer|user_message)>\n?(.*?)\n?</\1>", re.S)
_CWD = re.compile(r"# Current (?:Working Directory|Workspace Directory) \(([^)\n]+)\)")


def _digest(*parts: object) -> str:
    data = b"".join(_dump(p) for p in parts)
    return hashlib.sha256(data).hexdigest()[:16]


def _dump(value: object) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(value).encode("utf-8", "surrogatepass")


class Keys:
    """Source keys made unique within one task (a repeat gets ``#2``, ``#3``…)."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, key: str) -> str:
        n = self.seen[key] = self.seen.get(key, 0) + 1
        return key if n == 1 else f"{key}#{n}"


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)] \
        if isinstance(content, list) else []


def _is_result(content: object) -> bool:
    """A message answering a tool call: a ``tool_result`` block, or Cline's ``[tool] Result:`` text."""
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return True
    texts = _texts(content)
    return bool(texts) and _RESULT.match(texts[0]) is not None


def typed(content: object) -> str | None:
    """What the person typed in a user message: the inside of its first ``<task>``-like tag, or
    (in a message that answers no tool) a text block the extension did not add; else None."""
    texts = _texts(content)
    for text in texts:
        found = _TYPED.search(text)
        if found and found.group(2).strip():
            return found.group(2)
    if _is_result(content):
        return None
    for text in texts:
        if text.strip() and not _ADDED.match(text):
            return text
    return None


def cwd_of(content: object) -> str | None:
    """The working folder ``<environment_details>`` names, if any."""
    for text in _texts(content):
        found = _CWD.search(text)
        if found:
            return found.group(1).strip()
    return None


def _user(message: dict, t: str) -> dict:
    content = message.get("content")
    record: dict = {"kind": "user", "t": t, "content": content if isinstance(content, (str, list)) else []}
    prompt = typed(content)
    if prompt is None and content:
        record["toolResult" if _is_result(content) else "injected"] = True
    if isinstance(content, list):
        added = [i for i, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str) and _ADDED.match(b["text"]) and not _TYPED.search(b["text"])]
        if added:
            record["added"] = added
    if prompt is not None and (not isinstance(content, str) or prompt != content):
        record["prompt"] = prompt
    return record


def api_record(message: object, index: int, t: str, model: str | None, keys: Keys) -> dict:
    """One element of ``api_conversation_history.json`` (Cline ``ClineStorageMessage``, Roo ``ApiMessage``)."""
    value = message if isinstance(message, dict) else {"value": message}
    role = value.get("role")
    if role == "user":
        record = _user(value, t)
    elif role == "assistant":
        content = value.get("content")
        record = {"kind": "assistant", "t": t, "content": content if isinstance(content, (str, list)) else []}
        info = value.get("modelInfo") if isinstance(value.get("modelInfo"), dict) else {}
        named = info.get("modelId") or info.get("id")
        if isinstance(named, str) and named or model:
            record["model"] = named if isinstance(named, str) and named else model
        metrics = value.get("metrics")
        if isinstance(metrics, dict):
            record["usage"] = metrics
    else:  # a Roo reasoning item, or something newer: kept whole, shown as an event
        record = {"kind": "event", "t": t, "type": "cline-api", "role": role if isinstance(role, str) else "unknown"}
        if isinstance(value.get("text"), str):
            record["content"] = value["text"]
    if value.get("isSummary") is True:
        record["summary"] = True  # Roo's condensed summary of the messages before it
    ts = value.get("ts")
    stamp = f"{ts}" if isinstance(ts, (int, float)) and not isinstance(ts, bool) else f"#{index}"
    record["sourceKey"] = keys(f"api:{stamp}:{_digest(role, value.get('content'), value.get('type'), value.get('text'))}")
    record["index"] = index
    record["raw"] = Raw(value=message)
    return record


def _usage(text: object) -> dict | None:
    info = json_object(text)
    if info is None:
        return None
    usage = {k: info[k] for k in ("tokensIn", "tokensOut", "cacheWrites", "cacheReads", "cost", "cancelReason", "streamingFailedMessage")
             if k in info}
    return usage


def ui_record(message: object, index: int, t_fallback: str, keys: Keys) -> dict:
    """One element of ``ui_messages.json`` (``ClineMessage``): an ``event`` of type ``cline-ui``."""
    value = message if isinstance(message, dict) else {"value": message}
    kind = value.get("type")
    name = value.get(kind) if kind in ("ask", "say") else None
    ui = f"{kind}:{name}" if isinstance(kind, str) and isinstance(name, str) else str(kind or "unknown")
    ts = value.get("ts")
    record: dict = {"kind": "event", "t": iso_from_ms(ts) or t_fallback, "type": "cline-ui", "ui": ui}
    if isinstance(value.get("text"), str):
        record["text"] = value["text"]
    if isinstance(value.get("reasoning"), str):
        record["reasoning"] = value["reasoning"]
    for extra in ("images", "files"):
        if isinstance(value.get(extra), list) and value[extra]:
            record[extra] = value[extra]
    partial = value.get("partial") is True
    if ui == "say:api_req_started":
        usage = _usage(value.get("text"))
        if usage is not None:
            record["usage"] = usage
        partial = partial or usage is None or "cost" not in usage  # the cost is written when the reply ends
    if partial:
        record["partial"] = True
    stamp = f"{ts}" if isinstance(ts, (int, float)) and not isinstance(ts, bool) else f"#{index}"
    record["sourceKey"] = keys(f"ui:{stamp}:{ui}")
    record["raw"] = Raw(value=message)
    return record


def metadata_record(value: object, t: str) -> dict:
    """``task_metadata.json`` whole, as one ``cline-task-metadata`` event (a new one each time it changes)."""
    record = {"kind": "event", "t": t, "type": "cline-task-metadata"}
    if isinstance(value, dict):
        files = value.get("files_in_context")
        if isinstance(files, list):
            record["files"] = len(files)
    record["sourceKey"] = f"metadata:{_digest(value)}"
    record["raw"] = Raw(value=value)
    return record
