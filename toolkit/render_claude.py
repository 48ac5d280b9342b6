"""Render a Claude Code session for ``show`` and ``export --format md``.

The conversation follows the chain resume follows (the path from the last main-chain record
back to its root, with the results of parallel tool calls beside it), in file order; thinking,
tool calls and tool results are marked distinctly; a line says how many records are off that
chain; each subagent transcript follows, under its own heading.  Two streaming passes: the
first learns the chain (one byte per record), the second renders; memory stays per record.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .journal import iter_records, scan_journal
from .layouts.base import PLACEHOLDER_MODELS
from .layouts.claude_records import CHAIN, _subagents, added_only, is_subagent, split_user
from .render import _demote, _fenced, _summary, _text, dumps, image_md, you_and_added


def _block(block: dict) -> str | None:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return _demote(block["text"])
    if kind == "thinking":
        thought = _text(block.get("thinking"), 10**9)
        return f"<details><summary>Thinking</summary>\n\n{thought}\n\n</details>" if thought else "_(thinking: signed, text not kept)_"
    if kind == "redacted_thinking":
        return "_(thinking: redacted)_"
    if kind == "tool_use":
        return f"> 🔧 **{_text(block.get('name', 'tool'))}** `{_summary(block.get('input'), 160)}`"
    if kind == "tool_result":
        result = block.get("content")
        if isinstance(result, list):
            text = "\n".join(b.get("text", "") if isinstance(b, dict) and b.get("type") == "text"
                             else f"[{_text(b.get('type')) if isinstance(b, dict) else 'item'}]" for b in result)
        else:
            text = result if isinstance(result, str) else dumps(result).decode() if result is not None else ""
        mark = "Tool error" if block.get("is_error") else "Tool result"
        return f"<details><summary>↳ {mark} ({len(text):,} characters)</summary>\n\n{_fenced(text)}\n\n</details>"
    if kind == "image":
        return image_md(block)
    return f"_[{_text(kind or 'block')} block]_"


def _content(content: object) -> list[str]:
    if isinstance(content, str):
        return [_demote(content)]
    return [part for block in content if isinstance(block, dict) and (part := _block(block)) is not None] if isinstance(content, list) else []


def _assistant_heading(message: dict) -> str:
    model = message.get("model")
    if isinstance(model, str) and model in PLACEHOLDER_MODELS:  # Claude Code's own placeholder (an error, an interrupt): no model wrote it
        return "### Assistant (Claude Code's own message, no model)\n\n"
    return f"### Assistant ({_text(model)})\n\n" if isinstance(model, str) and model else "### Assistant\n\n"


def _record(record: dict, state: dict) -> str | None:
    kind = record.get("type")
    message = record.get("message") if isinstance(record.get("message"), dict) else {}
    when = _text(record.get("timestamp"))
    if kind == "user":
        parts = _content(message.get("content"))
        results_only = isinstance(message.get("content"), list) and all(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in message["content"])
        if record.get("isCompactSummary"):
            return "> **Compaction summary** (what the model saw after compacting)\n>\n" + \
                "\n".join(f"> {line}" for line in "\n\n".join(parts).splitlines()) + "\n\n"
        content = message.get("content")
        typed, added = split_user(content)
        if typed is None and added_only(content) and not record.get("isMeta"):  # a command, a reminder: not a turn
            state["role"] = None
            return f"_(added by the tool · {when})_\n\n" + "\n\n".join(parts) + "\n\n" if parts else None
        if results_only or record.get("isMeta") or typed is None or "toolUseResult" in record:  # a tool's result: never a turn
            state["role"] = None
            return "\n\n".join(parts) + "\n\n" if parts else None
        state["turn"] += 1
        state["role"] = "user"
        if added:  # an IDE's blocks beside the typed ones (VS Code, JetBrains)
            body = you_and_added([(i in added, part) for i, block in enumerate(content)
                                  if isinstance(block, dict) and (part := _block(block)) is not None])
        else:
            body = you_and_added([(False, part) for part in parts])
        return f"## Turn {state['turn']} · {when}\n\n{body}\n\n"
    if kind == "assistant":
        key = message.get("id") or record.get("uuid")
        heading = "" if state.get("message") == key and state.get("role") == "assistant" else \
            _assistant_heading(message)
        state["message"], state["role"] = key, "assistant"
        parts = _content(message.get("content"))
        return heading + "\n\n".join(parts) + "\n\n" if parts or heading else None
    if kind == "system":
        if record.get("subtype") == "compact_boundary":
            return "_— conversation compacted —_\n\n"
        if record.get("subtype") in ("turn_duration", "stop_hook_summary"):
            return None
        return f"_system: {_summary(record.get('content') or record.get('subtype'), 160)}_\n\n"
    return None  # progress, attachments and metadata: not part of what the conversation shows


def markdown(path: Path, layout, title: object = None) -> Iterator[str]:
    """The session as Markdown, chunk by chunk."""
    scan = scan_journal(path, layout)
    facts = scan.facts
    yield f"# {_text(title) or facts.title or path.stem}\n\n"
    line = " · ".join(part for part in (_text(facts.cwd), _text(facts.first_timestamp), path.stem) if part)
    yield f"_{line}_\n\n"
    state = {"turn": 0, "role": None}
    shown, number, off = facts.shown, 0, 0
    for _line, _offset, record in iter_records(path, layout):
        if record.get("type") in CHAIN and isinstance(record.get("uuid"), str):
            on = number < len(shown) and shown[number]
            number += 1
            if not on and not facts.sidechain:
                off += record.get("isSidechain") is not True
                continue
        chunk = _record(record, state)
        if chunk is not None:
            yield chunk
    if off:
        yield (f"_{off:,} record(s) of this file are off the chain resume follows (other branches, or records cut "
               "off by a break); `levelsess export --format jsonl` keeps every one._\n\n")
    if not is_subagent(path):
        for agent in _subagents(path.parent / path.stem):
            yield f"## Subagent `{agent.stem}`\n\n"
            sub = {"turn": 0, "role": None}
            for _line, _offset, record in iter_records(agent, layout):
                chunk = _record(record, sub)
                if chunk is not None:
                    yield chunk
