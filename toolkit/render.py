"""Render a session for ``show`` and ``export`` ("Copy as Markdown" from the seed).

Markdown: the title, then a heading per turn; user text and assistant text verbatim (code blocks
stay code blocks); thinking folded into ``<details>``; tool calls summarised in one line each
with their result's size; compact briefings marked; other events as one italic line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


from .journal import Layout, iter_records
from .lines import dumps


def records_of(path: Path, layout: Layout) -> Iterator[dict]:
    """Every complete record (a torn tail is skipped; damage earlier raises a typed error)."""
    for _line, _offset, record in iter_records(path, layout):
        yield record


def _summary(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else dumps(value).decode() if value is not None else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _content_text(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return parts


def _assistant_md(record: dict) -> list[str]:
    out = []
    content = record.get("content")
    for block in content if isinstance(content, list) else [{"type": "text", "text": content}] if isinstance(content, str) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
        elif kind == "thinking":
            thought = block.get("thinking") or ""
            out.append(f"<details><summary>Thinking</summary>\n\n{thought}\n\n</details>" if thought else "_(thinking, signed and hidden)_")
        elif kind == "tool_use":
            out.append(f"> 🔧 **{block.get('name', 'tool')}** `{_summary(block.get('input'), 100)}`")
        elif kind == "tool_result":
            result = block.get("content")
            text = result if isinstance(result, str) else dumps(result).decode() if result is not None else ""
            lines = text.count("\n") + 1 if text else 0
            mark = "error" if block.get("is_error") else "result"
            out.append(f"> ↳ {mark}: {_summary(text.splitlines()[0] if text else '', 100)}" + (f" _({lines} lines)_" if lines > 1 else ""))
        elif kind == "tool_call" or kind == "function_call":
            out.append(f"> 🔧 **{block.get('name', 'tool')}**")
    return out


def markdown(path: Path, layout: Layout, title: object = None) -> Iterator[str]:
    """The session as Markdown, chunk by chunk (streaming: memory stays per record).

    ``title`` is the session's current title (the last ``title`` record's, from the listing)."""
    turn = 0
    for record in records_of(path, layout):
        if layout is Layout.LOGICIAN:
            role = record.get("role") or record.get("type") or "entry"
            text = record.get("text") if isinstance(record.get("text"), str) else _summary(record.get("content") or record, 400)
            yield f"### {role}\n\n{text}\n\n"
            continue
        kind = record.get("kind")
        when = record.get("t") or ""
        if kind == "meta":
            title = title or record.get("title") or record.get("id")
            yield f"# {title}\n\n_{record.get('project') or ''} · {record.get('createdAt') or ''} · {record.get('id')}_\n\n"
        elif kind == "user":
            turn += 1
            body = "\n\n".join(_content_text(record.get("content")))
            yield f"## Turn {turn} · {when}\n\n### You\n\n{body}\n\n"
        elif kind == "assistant":
            model = f" ({record['model']})" if record.get("model") else ""
            body = "\n\n".join(_assistant_md(record))
            yield f"### Assistant{model}\n\n{body}\n\n"
        elif kind == "compact":
            briefing = "\n".join(f"> {line}" for line in str(record.get("briefing") or "").splitlines())
            yield f"> **Compacted: briefing for the turns through {record.get('coversThrough', '?')}** (the full transcript stays above)\n>\n{briefing}\n\n"
        elif kind == "agent":
            yield f"_agent: {len(record.get('messages') or [])} message(s)_\n\n"
        elif kind == "title":
            yield f"_renamed: {record.get('title')}_\n\n"
        elif kind == "event":
            detail = f": {_summary(record.get('content'), 120)}" if record.get("type") == "orphan-message" else ""
            yield f"_{record.get('type', 'event')} · {when}{detail}_\n\n"


def as_json(path: Path, layout: Layout) -> bytes:
    records = list(records_of(path, layout))
    if layout is Layout.LOGICIAN:
        return dumps({"entries": records}, indent=True) + b"\n"
    return dumps({"meta": records[0] if records else None, "records": records[1:]}, indent=True) + b"\n"
