"""Turn Cursor bubbles into LevelCode v2 records (SOURCES.md §2.5, §4.2): exact text, content
blocks for text, thinking and tools, the time fallback chain, orphan events."""

from __future__ import annotations

from dataclasses import dataclass

from ...lines import loads
from ..output import Raw, iso_from_ms, json_object

BLOCK_TYPES = {"paragraph", "heading", "quote", "code", "listitem", "list"}


def iso(ms: object) -> str | None:
    """Epoch milliseconds or an ISO string -> ISO-8601 UTC with ms and Z; None if unusable."""
    if isinstance(ms, str) and ms[:2].isdigit():
        return ms
    return iso_from_ms(ms)


def lexical_text(rich: object) -> str:
    """Text of a Lexical editor state (a JSON string or object): depth-first, blocks on lines."""
    if isinstance(rich, str):
        try:
            rich = loads(rich.encode("utf-8", "surrogatepass"))
        except ValueError:
            return ""
    if not isinstance(rich, dict):
        return ""
    root = rich.get("root", rich)

    def walk(node: object) -> str:
        if not isinstance(node, dict):
            return ""
        if node.get("type") == "linebreak":
            return "\n"
        if isinstance(node.get("text"), str):
            return node["text"]
        children = [c for c in node.get("children") or [] if isinstance(c, dict)]
        parts = [walk(c) for c in children]
        if any(isinstance(c.get("type"), str) and c["type"] in BLOCK_TYPES for c in children):
            return "\n".join(parts)
        return "".join(parts)

    return walk(root)


def bubble_text(bubble: dict) -> str:
    text = bubble.get("text")
    if isinstance(text, str) and text:  # (most bubbles: asked first, the delegate's only without it)
        return text
    delegate = bubble.get("delegate")
    text = delegate.get("a") if isinstance(delegate, dict) else None
    if isinstance(text, str) and text:
        return text
    for rich in (bubble.get("richText"), bubble.get("initText")):
        text = lexical_text(rich)
        if text:
            return text
    raw = bubble.get("rawText")
    return raw if isinstance(raw, str) else ""


def model_name(*names: object) -> str | None:
    for name in names:
        if isinstance(name, str) and name and name != "default":
            return name
    return None


def _selection_lists(bubble: dict, name: str) -> list[dict]:
    """``name`` from the bubble's ``context`` and (legacy chat tabs) from its top level."""
    found = []
    context = bubble.get("context")
    for holder in (context if isinstance(context, dict) else {}, bubble):
        listed = holder.get(name)
        found += [item for item in listed if isinstance(item, dict)] if isinstance(listed, list) else []
    return found


def _fs_path(item: dict) -> str | None:
    uri = item.get("uri")
    path = (uri.get("fsPath") or uri.get("path")) if isinstance(uri, dict) else None
    return path if isinstance(path, str) else None


def _context_files(bubble: dict) -> list[str]:
    """Files the user attached: file selections, then code selections' files (each once)."""
    files: list[str] = []
    for name in ("fileSelections", "selections"):
        for item in _selection_lists(bubble, name):
            path = _fs_path(item)
            if path is not None and path not in files:
                files.append(path)
    return files


def attachment_blocks(bubble: dict) -> list[dict]:
    """What a user bubble carried besides its text: images (path, size), files, folders and code
    selections (file, range, text), as content blocks."""
    blocks: list[dict] = []
    for image in _selection_lists(bubble, "selectedImages"):
        if isinstance(image.get("path"), str):
            block: dict = {"type": "image", "path": image["path"]}
            size = image.get("dimension")
            if isinstance(size, dict) and isinstance(size.get("width"), int) and isinstance(size.get("height"), int):
                block["width"], block["height"] = size["width"], size["height"]
            blocks.append(block)
    for name, kind in (("fileSelections", "file"), ("folderSelections", "folder")):
        for item in _selection_lists(bubble, name):
            path = _fs_path(item)
            if path is not None:
                blocks.append({"type": kind, "path": path})
    for item in _selection_lists(bubble, "selections"):
        block = {"type": "selection", "path": _fs_path(item)}
        span = item.get("range")
        if isinstance(span, dict):
            block["range"] = {k: span[k] for k in ("selectionStartLineNumber", "selectionStartColumn",
                                                   "positionLineNumber", "positionColumn") if isinstance(span.get(k), int)}
        text = item.get("rawText") if isinstance(item.get("rawText"), str) else item.get("text")
        if isinstance(text, str):
            block["text"] = text
        if block["path"] is not None or "text" in block:
            blocks.append(block)
    return blocks


def request_time(bubble: dict) -> str | None:
    """When the request behind an assistant bubble was sent (``timingInfo.clientRpcSendTime``)."""
    timing = bubble.get("timingInfo")
    return iso_from_ms(timing.get("clientRpcSendTime")) if isinstance(timing, dict) else None


def assistant_blocks(bubble: dict) -> list[dict]:
    """Content blocks of an assistant bubble: text, thinking, tool_use (+ tool_result)."""
    blocks: list[dict] = []
    thinking = bubble.get("thinking")
    if isinstance(thinking, dict) and (thinking.get("text") or thinking.get("signature")):
        block = {"type": "thinking", "thinking": thinking.get("text") or ""}
        if thinking.get("signature"):
            block["signature"] = thinking["signature"]
        blocks.append(block)
    text = bubble_text(bubble)
    if text:
        blocks.append({"type": "text", "text": text})
    else:
        listed = bubble.get("codeBlocks")
        code = [c for c in (listed if isinstance(listed, list) else []) if isinstance(c, dict) and isinstance(c.get("content"), str) and c["content"]]
        if code:
            blocks.append({"type": "text", "text": "\n\n".join(f"```{c.get('languageId') or ''}\n{c['content']}\n```" for c in code)})
    tool = bubble.get("toolFormerData")
    if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"]:
        tool_id = tool.get("toolCallId") or bubble.get("bubbleId") or ""
        args = json_object(tool.get("rawArgs"))
        if args is None:  # (params parsed only when rawArgs gives no object: it usually does)
            args = json_object(tool.get("params"))
        if args is None:
            raw = tool.get("rawArgs") if tool.get("rawArgs") is not None else tool.get("params")
            args = {"raw": raw} if raw is not None else {}
        blocks.append({"type": "tool_use", "id": tool_id, "name": tool["name"], "input": args})
        failed = tool.get("status") == "error"
        result = tool.get("error") if failed and tool.get("error") is not None else tool.get("result")
        if result is not None:
            blocks.append({"type": "tool_result", "tool_use_id": tool_id,
                           "content": result if isinstance(result, str) else str(result), "is_error": failed})
    return blocks


@dataclass
class Clock:
    """The time fallback chain (SOURCES §2.5): never "now"."""

    last: str | None
    generations: dict[str, str]

    def time_of(self, bubble: dict, user: bool) -> tuple[str | None, bool]:
        when = iso(bubble.get("createdAt"))
        if when is None and isinstance(bubble.get("timingInfo"), dict):
            timing = bubble["timingInfo"]
            for name in ("clientRpcSendTime", "clientSettleTime", "clientEndTime", "clientStartTime"):
                when = iso(timing.get(name))
                if when:
                    break
        if when is None and user and isinstance(bubble.get("requestId"), str):
            when = self.generations.get(bubble["requestId"])
        if when is not None:
            self.last = when
            return when, False
        return self.last, True


def convert_bubble(bubble: dict, source_key: str, clock: Clock, model: str | None, partial: bool,
                   default_type: object = None, raw: Raw | None = None) -> dict | None:
    """One bubble -> one user / assistant record, or None when it holds nothing convertible."""
    kind = bubble.get("type", default_type)
    user = kind in (1, "user")
    if not user and kind not in (2, "ai", "assistant"):
        return None
    t, inferred = clock.time_of(bubble, user)
    if user:
        text = bubble_text(bubble)
        content: str | list[dict] = text or attachment_blocks(bubble)
        if not content:
            return None
        record: dict = {"kind": "user", "t": t, "content": content}
        files = _context_files(bubble)
        if files:
            record["contextFiles"] = files
    else:
        blocks = assistant_blocks(bubble)
        if not blocks:
            return None
        record = {"kind": "assistant", "t": t, "content": blocks}
        info = bubble.get("modelInfo")
        name = model_name(info.get("modelName") if isinstance(info, dict) else None, model, bubble.get("modelType"))
        if name:
            record["model"] = name
        tokens = bubble.get("tokenCount")
        if isinstance(tokens, dict):
            for count in tokens.values():  # (a count above 0: a loop, not any() over a generator, a bubble at a time)
                if isinstance(count, int) and count > 0:
                    record["usage"] = tokens
                    break
    if inferred:
        record["tInferred"] = True
    if partial:
        record["partial"] = True
    record["sourceKey"] = source_key
    record["raw"] = raw if raw is not None else Raw(value=bubble)
    return record


def skip_reason(bubble: object, default_type: object = None) -> str:
    """Why :func:`convert_bubble` made no record of this bubble."""
    if not isinstance(bubble, dict):
        return "unreadable"
    kind = bubble.get("type", default_type)
    return "empty" if kind in (1, "user", 2, "ai", "assistant") else "unknown-type"


def settle_times(records: list[dict], requests: list[str | None], fallback: str | None) -> None:
    """Give every record a time (SOURCES §2.5, the chain's last steps), in place.

    A user record with no time of its own takes the request time of the assistant bubble that
    answered it (the next one, before any other user record), else the previous record's
    (``Clock`` did that already), else the next record's, else ``fallback``; all flagged
    ``tInferred``.  ``requests[i]`` is record i's request time (assistant bubbles only).
    """
    for i, record in enumerate(records):
        if record.get("kind") != "user" or not record.get("tInferred"):
            continue
        for j in range(i + 1, len(records)):
            if records[j].get("kind") == "user":
                break
            if requests[j] is not None:
                record["t"] = requests[j]
                break
    later = fallback
    for record in reversed(records):  # no earlier time (Clock carries those): the next record's
        if record.get("t") is None:
            record["t"], record["tInferred"] = later, True
        else:
            later = record["t"]


def orphan_event(record: dict) -> dict:
    """A bubble no header references, kept aside as an event (never a turn)."""
    event = {"kind": "event", "t": record.get("t"), "type": "orphan-message",
             "role": record["kind"], "reason": "not-in-headers", "content": record.get("content"),
             "sourceKey": record["sourceKey"], "raw": record.get("raw")}
    if record.get("tInferred"):
        event["tInferred"] = True
    return event


