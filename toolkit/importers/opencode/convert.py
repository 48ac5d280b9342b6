"""One OpenCode message and its parts -> one LevelCode v2 record (SOURCES-MORE.md §3.3).

A message is one record, keyed ``message:<id>``; its parts, in id order (ids ascend with
creation), are that record's content blocks, each part's key listed under ``partKeys`` and its
row or file kept, with the message's, under ``raw``.  ``text`` -> text, ``reasoning`` -> thinking,
``tool`` -> ``tool_use`` plus its ``tool_result`` (output, or the error) once it finished,
``file`` -> an attached file (an image with its data), ``patch`` -> one ``file_edit`` per file,
``retry`` and a message's ``error`` -> a warning; the step, snapshot, agent, subtask and
compaction parts are bookkeeping a reader does not read: they are kept under ``raw`` only.
"""

from __future__ import annotations

from ..output import PART_KEYS, Raw, iso_from_ms

#: Part types that become no block of their own (kept under the record's ``raw``).
QUIET = frozenset({"step-start", "step-finish", "snapshot", "agent", "compaction", "subtask"})


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _tool(part: dict) -> list[dict]:
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    call = _str(part.get("callID"))
    given = state.get("input")
    block: dict = {"type": "tool_use", "id": call, "name": _str(part.get("tool")) or "tool",
                   "input": given if isinstance(given, dict) else ({} if given is None else {"raw": given})}
    if _str(state.get("title")):
        block["display"] = state["title"]
    status = state.get("status")
    if status == "completed":
        output = state.get("output")
        return [block, {"type": "tool_result", "tool_use_id": call, "content": output if isinstance(output, str) else output or "", "is_error": False}]
    if status == "error":
        return [block, {"type": "tool_result", "tool_use_id": call, "content": _str(state.get("error")), "is_error": True}]
    return [block]


def _file(part: dict) -> tuple[list[dict], str | None]:
    """A file part: an image with inline data becomes an image block; every file is named."""
    mime, url = _str(part.get("mime")), _str(part.get("url"))
    source = part.get("source") if isinstance(part.get("source"), dict) else {}
    name = _str(part.get("filename")) or _str(source.get("path")) or (url if not url.startswith("data:") else "") or "file"
    if mime.startswith("image/") and url.startswith("data:") and ";base64," in url:
        return [{"type": "image", "source": {"type": "base64", "media_type": mime, "data": url.split(";base64,", 1)[1]}}], name
    block = {"type": "file", "name": name, "mime": mime}
    if url and not url.startswith("data:"):
        block["url"] = url
    return [block], name


def blocks(part: dict) -> tuple[list[dict], str | None]:
    """The content blocks of one part, and the file it attaches (if any)."""
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            return [], None
        block = {"type": "text", "text": part["text"]}
        block.update({flag: True for flag in ("synthetic", "ignored") if part.get(flag) is True})  # added by OpenCode, not typed
        return [block], None
    if kind == "reasoning":
        return ([{"type": "thinking", "thinking": part["text"]}] if _str(part.get("text")) else []), None
    if kind == "tool":
        return _tool(part), None
    if kind == "file":
        return _file(part)
    if kind == "patch":
        files = part.get("files") if isinstance(part.get("files"), list) else []
        return [{"type": "file_edit", "path": f} for f in files if isinstance(f, str)], None
    if kind == "retry":
        error = part.get("error") if isinstance(part.get("error"), dict) else {}
        return [{"type": "warning", "text": f"retry {part.get('attempt')}: {_error_text(error)}"}], None
    return [], None


def _error_text(error: dict) -> str:
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    return " ".join(x for x in (_str(error.get("name")), _str(data.get("message"))) if x) or "error"


def _time(message: dict, fallback: int) -> str | None:
    when = message.get("time") if isinstance(message.get("time"), dict) else {}
    return iso_from_ms(when.get("created")) or iso_from_ms(fallback)


def record(mid: str, message: dict | None, row: object, parts: list[tuple[str, dict, object]], fallback: int) -> dict:
    """The record of one message (``message`` None: its row is lost, its parts are not)."""
    content, files = [], []
    for _pid, part, _row in parts:
        got, name = blocks(part)
        content += got
        if name:
            files.append(name)
    keys = [f"part:{pid}" for pid, _part, _row in parts]
    raw = Raw(value={"message": row, "parts": [r for _pid, _part, r in parts]})
    if message is None:
        first = parts[0][1] if parts else {}
        when = first.get("time") if isinstance(first.get("time"), dict) else {}
        out = {"kind": "event", "t": iso_from_ms(when.get("start")) or iso_from_ms(fallback) or "", "type": "orphan-message",
               "role": "unknown", "reason": "message-unreadable", "content": content}
    else:
        out = _message(message, content, files, fallback)
    out["sourceKey"] = f"message:{mid}"
    if keys:
        out[PART_KEYS] = keys
    out["raw"] = raw
    return out


def _message(message: dict, content: list[dict], files: list[str], fallback: int) -> dict:
    role, t = message.get("role"), _time(message, fallback)
    if role == "user":
        texts = [b for b in content if b.get("type") == "text"]
        out: dict = {"kind": "user", "t": t, "content": texts[0]["text"] if len(content) == 1 and texts else content}
        if files:
            out["contextFiles"] = files
        return out
    if role == "assistant":
        if isinstance(message.get("error"), dict):
            content = content + [{"type": "warning", "text": _error_text(message["error"])}]
        out = {"kind": "assistant", "t": t, "content": content}
        if _str(message.get("modelID")):
            out["model"] = message["modelID"]
        when = message.get("time") if isinstance(message.get("time"), dict) else {}
        done = when.get("completed") is not None or message.get("error") is not None
        out["status"] = "complete" if done else "pending"
        if not done:
            out["partial"] = True  # still being generated: superseded once OpenCode completes it
        return out
    return {"kind": "event", "t": t or "", "type": "opencode-message", "role": _str(role) or "unknown", "content": content}
