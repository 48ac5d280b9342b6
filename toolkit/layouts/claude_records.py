"""What a Claude Code transcript's records and files are, with no reading rules: the record types
on the chain, what a person typed versus what the tool or an IDE added (``split_user``: ls, show,
export and import all ask it), and where subagent transcripts live.  Below the layout
(:mod:`toolkit.layouts.claude_code`), its relink and its Markdown (:mod:`toolkit.render_claude`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .base import looked

CHAIN = frozenset({"user", "assistant", "system", "progress", "attachment"})
#: Record types seen at the top level of a transcript (SOURCES-AGENTS §1.5); content blocks
#: (text, thinking, tool_use, tool_result, image) are never among them.
TOP_LEVEL_TYPES = CHAIN | {"summary", "file-history-snapshot", "queue-operation", "permission-mode", "last-prompt",
                           "ai-title", "custom-title", "agent-name", "pr-link", "mode"}
#: User text that Claude Code or an IDE injected, not typed (a command's ``<command-name>``, a
#: ``<system-reminder>``, VS Code's and JetBrains' ``<ide_opened_file>`` / ``<ide_selection>``, a
#: caveat): never a title, never a turn.
_INJECTED = re.compile(r"^\s*(<[a-z][a-z_-]*>|Caveat:|This session is being continued from a previous conversation)")
#: One whole injected element at the start of a text: ``<tag>…</tag>`` (the same tag).
_ELEMENT = re.compile(r"\s*<([a-z][a-z_-]*)>.*?</\1>", re.S)
SUBAGENTS = "subagents"


def typed_part(text: str) -> str | None:
    """What a person typed in one text, or None when all of it was added: whole injected elements
    at its start (``<system-reminder>…</system-reminder>``) are the tool's, the text after them
    the person's; a text opening with an injected marker and no typed text after it is added."""
    rest, end = text, 0
    while _INJECTED.match(rest) and (element := _ELEMENT.match(rest)):
        end += element.end()
        rest = rest[element.end():]
    if not rest.strip() or _INJECTED.match(rest):
        return None
    return rest.strip() if end else rest


def split_user(content: object) -> tuple[str | None, tuple[int, ...]]:
    """The one rule for a Claude Code user record's content (ls, show, export, import titles):
    ``(typed, added)``.  ``typed`` is the text the person typed (its typed blocks joined; "[image]"
    for an image alone), None when nothing was typed: a tool result, or only text the tool or the
    IDE added.  ``added`` are the indices of the text blocks the tool added, for list content."""
    if isinstance(content, str):
        return typed_part(content), ()
    if not isinstance(content, list) or any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None, ()  # a tool result is never a prompt, whatever text rides with it
    typed, added, image = [], [], False
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            part = typed_part(block["text"])
            if part is not None:
                typed.append(part)
            elif block["text"].strip():
                added.append(i)
        elif block.get("type") == "image":
            image = True
    text = "\n".join(typed)
    return (text or ("[image]" if image else None)), tuple(added)


def prompt_text(content: object) -> str | None:
    """The text a person typed in a user record's content, or None (tool results, injected text)."""
    return split_user(content)[0]


def added_only(content: object) -> bool:
    """True when the content holds text and all of it was added by the tool (never typed)."""
    typed, added = split_user(content)
    if typed is not None:
        return False
    return bool(added) or (isinstance(content, str) and bool(content.strip()))


def _subagents(session: Path) -> list[Path]:
    """The subagent transcripts of a session's folder, by name (as paths of one folder sort)."""
    folder = session / SUBAGENTS
    looked(folder)  # (when an import keeps its listing: one made later is no longer "absent")
    try:
        with os.scandir(folder) as listing:
            names = [e.name for e in listing if e.name.startswith("agent-") and e.name.endswith(".jsonl")]
    except OSError:
        return []
    return [folder / name for name in sorted(names, key=os.path.normcase)]  # (names sort as a path's parts: case-blind on Windows)


def is_subagent(journal: Path) -> bool:
    return journal.parent.name == SUBAGENTS and journal.name.startswith("agent-")
