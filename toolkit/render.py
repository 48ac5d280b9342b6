"""Render a session for ``show`` and ``export`` ("Copy as Markdown" from the seed).

Markdown: the title, then a heading per turn; user text and assistant text verbatim (code blocks
stay code blocks) except that their own headings are pushed below the export's (``# x`` →
``#### x``); attached files listed one per line; thinking folded into ``<details>``; tool calls
summarised in one line each with their result's size (and the line the editor showed); file
edits in one line; compact briefings marked; messages the editor no longer showed quoted whole
after a line saying why; other events as one italic line.  Logician:
the session's name, then every entry's message text in full.

JSON: each record is its journal bytes (nothing is re-serialised); values that must be
serialised go through :func:`dumps`, which never fails on depth, lone surrogates or big ints.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .encode import dumps
from .journal import BOM, iter_records
from .layouts.base import PLACEHOLDER_MODELS, BaseLayout as Layout
from .layouts.registry import get as get_layout
from .lines import open_regular


def records_of(path: Path, layout: Layout) -> Iterator[dict]:
    """Every complete record (a torn tail is skipped; damage earlier raises a typed error)."""
    for _line, _offset, record in iter_records(path, layout):
        yield record


def record_bytes(path: Path, layout: Layout) -> Iterator[tuple[dict, bytes]]:
    """Every complete record with its own bytes from the journal (without BOM, CR or LF).

    The bytes are the truth: re-serialising could change a number (``1e400``, a 30-digit int)
    or fail on a record nested deeper than a serialiser's limit."""
    with open_regular(path) as handle:
        for line, offset, record in iter_records(path, layout):
            if handle.tell() != offset:
                handle.seek(offset)
            raw = handle.readline().rstrip(b"\n").rstrip(b"\r")
            yield record, raw[len(BOM):] if line == 1 and raw.startswith(BOM) else raw


def _summary(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else dumps(value).decode() if value is not None else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: object, limit: int = 120) -> str:
    """A field shown inline (a title, a role, a time): itself when it is text, else a short
    JSON summary, so a list or a 3,000-deep value never reaches ``repr``."""
    return value if isinstance(value, str) else "" if value is None else _summary(value, limit)


def _fenced(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    fence = "`" * max([3] + [len(run) + 1 for run in re.findall("`{3,}", text)])
    return f"{fence}{info}\n{text}\n{fence}"


_HEADING = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _demote(text: str, by: int = 3) -> str:
    """Push the Markdown headings of a message below the export's own (``#`` title, ``##``
    turn, ``###`` speaker): ``# x`` becomes ``#### x``; code fences are left alone."""
    out, fence = [], None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
            fence = None
        elif fence is None:
            line = _HEADING.sub(lambda m: m.group(1) + "#" * min(6, len(m.group(2)) + by), line)
        out.append(line)
    return "\n".join(out)


def _content_text(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return parts


def _block_md(block: dict) -> str | None:
    """One provider content block: text verbatim, thinking folded, a tool call in one line."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return _demote(block["text"])
    if kind == "thinking":
        thought = _text(block.get("thinking"), 10**9)
        return f"<details><summary>Thinking</summary>\n\n{thought}\n\n</details>" if thought else "_(thinking, signed and hidden)_"
    if kind == "tool_use":
        shown = f" {_summary(block['display'], 100)}" if isinstance(block.get("display"), str) else ""
        hidden = " _(hidden in the editor)_" if block.get("hidden") is True else ""
        return f"> 🔧 **{_text(block.get('name', 'tool'))}**{shown} `{_summary(block.get('input'), 100)}`{hidden}"
    if kind == "file_edit":
        edits = block.get("edits")
        return f"> ✏️ edited `{_text(block.get('path'))}`" + (f" ({edits} edit{'s' if edits != 1 else ''})" if isinstance(edits, int) else "")
    if kind == "warning":
        return "> ⚠️ " + _text(block.get("text"), 10**9)
    if kind == "tool_result":
        result = block.get("content")
        text = result if isinstance(result, str) else dumps(result).decode() if result is not None else ""
        lines = text.count("\n") + 1 if text else 0
        mark = "error" if block.get("is_error") else "result"
        return f"> ↳ {mark}: {_summary(text.splitlines()[0] if text else '', 100)}" + (f" _({lines} lines)_" if lines > 1 else "")
    if kind == "image":
        return image_md(block)
    if kind in ("tool_call", "function_call"):
        return f"> 🔧 **{_text(block.get('name', 'tool'))}**"
    return None


def image_md(block: dict) -> str:
    """An image block in one line: its media type and size, never its data."""
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    data = source.get("data")
    size = f", {len(data) * 3 // 4:,} bytes" if isinstance(data, str) else ""
    return f"_[image: {_text(source.get('media_type') or source.get('type') or 'image')}{size}]_"


def _blocks_md(content: object) -> list[str]:
    """Message content as Markdown parts: a string verbatim, a list of blocks block by block."""
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    return [part for block in blocks if isinstance(block, dict) and (part := _block_md(block)) is not None]


def you_and_added(parts: list[tuple[bool, str]]) -> str:
    """A prompt's parts, ``(added, markdown)``, in file order: what the person typed under
    "### You", each run the tool or the IDE added under "_(added by the tool)_"."""
    out, current = [], None
    for added, part in parts:
        if added is not current:
            out.append("_(added by the tool)_" if added else "### You")
            current = added
        out.append(part)
    return "\n\n".join(out) if out else "### You"


def _logician_md(record: dict) -> str:
    """One Logician entry: its role and time, then every character of its message text.

    Entries are opaque beyond ``id``/``parentId``/``timestamp`` (DESIGN §2.2): the text is
    ``text`` or ``content`` (a string or provider blocks), on the entry or on its ``message``
    object; an entry with neither is shown whole as JSON, so nothing is left out."""
    message = record.get("message") if isinstance(record.get("message"), dict) else record
    role = _text(message.get("role") or record.get("role") or record.get("type") or "entry")
    when = _text(record.get("timestamp"))
    parts = [part for key in ("text", "content") for part in _blocks_md(message.get(key))]
    if not parts:
        parts = [_fenced(dumps(record, indent=True).decode(), "json")]
    return f"### {role}" + (f" · {when}" if when else "") + "\n\n" + "\n\n".join(parts) + "\n\n"


def _logician_heading(name: object, path: Path) -> str:
    """The session's name from meta.json, with its id beneath; the id alone when it has none."""
    sid = path.parent.name
    return f"# {name}\n\n_{sid}_\n\n" if isinstance(name, str) and name else f"# {sid}\n\n"


def _levelcode_md(record: dict, state: dict) -> str | None:
    """One LevelCode record; ``state`` carries the title and the turn count across records."""
    kind = record.get("kind")
    when = _text(record.get("t"))
    if kind == "meta":
        title = state["title"] if isinstance(state["title"], str) and state["title"] else None
        title = title or _text(record.get("title")) or _text(record.get("id"))
        line = " · ".join(part for part in (_text(record.get(k)) for k in ("project", "createdAt", "id")) if part)
        return f"# {title}\n\n" + (f"_{line}_\n\n" if line else "")
    if kind == "user":
        content = record.get("content")
        parts = [_demote(content)] if isinstance(content, str) else _blocks_md(content)  # images and results too
        if record.get("toolResult") is True:  # an imported tool result: part of the reply, not a turn
            return "\n\n".join(parts) + "\n\n" if parts else None
        if record.get("injected") is True:  # text the tool put in (a command, a reminder), not typed
            return f"_(added by the tool · {when})_\n\n" + "\n\n".join(parts) + "\n\n" if parts else None
        state["turn"] += 1
        added = record.get("added")
        if isinstance(content, list) and isinstance(added, list) and added:  # an IDE's blocks beside the typed ones
            marks = {i for i in added if type(i) is int}
            body = you_and_added([(i in marks, part) for i, block in enumerate(content)
                                  if isinstance(block, dict) and (part := _block_md(block)) is not None])
        else:
            body = you_and_added([(False, part) for part in parts])
        return f"## Turn {state['turn']} · {when}\n\n{body}\n\n" + _attachments_md(record.get("contextFiles"))
    if kind == "assistant":
        model = record.get("model")
        placeholder = isinstance(model, str) and model in PLACEHOLDER_MODELS  # <synthetic>: no model wrote it
        model = "" if not model or placeholder else f" ({_text(model)})"
        lead = "" if state["turn"] or state.get("lead") else "## Before the first prompt\n\n"
        state["lead"] = True  # that heading once, so a reply never hangs under the title
        return f"{lead}### Assistant{model}\n\n" + "\n\n".join(_blocks_md(record.get("content"))) + "\n\n"
    if kind == "compact":
        briefing = "\n".join(f"> {line}" for line in _text(record.get("briefing"), 10**9).splitlines())
        covers = _text(record.get("coversThrough", "?"))
        return f"> **Compacted: briefing for the turns through {covers}** (the full transcript stays above)\n>\n{briefing}\n\n"
    if kind == "agent":
        messages = record.get("messages")
        return f"_agent: {len(messages) if isinstance(messages, list) else 0} message(s)_\n\n"
    if kind == "title":
        return f"_renamed: {_text(record.get('title'))}_\n\n"
    if kind == "event":
        if record.get("type") == "orphan-message":
            return _orphan_md(record, when)
        of_type = record.get("type") if isinstance(record.get("type"), str) else None  # (a list there names no type: no set's member)
        if of_type in _BOOKKEEPING:
            state["quiet"] = state.get("quiet", 0) + 1
            return None
        if of_type in _RESTORE_ONLY:
            return None
        if record.get("type") == "off-chain":
            message = record.get("message") if isinstance(record.get("message"), dict) else {}
            text = _summary(" ".join(_content_text(message.get("content"))), 100)
            return (f"_off the resumed chain ({_text(record.get('offChain'))}, source line {_text(record.get('line'))}) · "
                    f"{_text(record.get('claudeType'))}{': ' + text if text else ''}_\n\n")
        if record.get("type") == "subagent":
            return f"_subagent: session `{_text(record.get('session'))}` · {when}_\n\n"
        detail = f": {' '.join(record['content'].split())}" if isinstance(record.get("content"), str) and record["content"] else ""
        return f"_{_text(record.get('type', 'event'))} · {when}{detail}_\n\n"
    return None


#: Imported bookkeeping events (Claude Code's progress, attachment and metadata lines): counted
#: at the end of a rendering, not shown one by one; export --format jsonl keeps every one.
_BOOKKEEPING = frozenset({"progress", "attachment", "file-history-snapshot", "permission-mode", "last-prompt",
                          "queue-operation", "agent-name", "pr-link", "ai-title", "custom-title", "summary", "mode",
                          "cline-ui", "cline-task-metadata"})  # Cline's panel messages and task metadata (import --from cline)


#: What an import keeps for ``restore`` alone (a source line no record carries, the source's state):
#: never part of the conversation.
_RESTORE_ONLY = frozenset({"source-line", "source-state"})


def _attachments_md(files: object) -> str:
    """A user message's attached files, one per line (each whole, never cut)."""
    names = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    return "_Attached:_\n\n" + "".join(f"- `{name}`\n" for name in names) + "\n" if names else ""


def _orphan_md(record: dict, when: str) -> str:
    """A message the editor no longer showed, after the conversation: who, why, then its
    whole content quoted (text verbatim, tool calls one line each)."""
    who = ", ".join(_text(record.get(k)) for k in ("role", "reason") if record.get(k))
    parts = _blocks_md(record.get("content"))
    quoted = "\n>\n".join("\n".join(f"> {line}" if line else ">" for line in part.split("\n")) for part in parts if part)
    return f"_Not shown in the editor ({who}) · {when}_\n\n" + (f"{quoted}\n\n" if quoted else "")


def markdown(path: Path, layout: Layout, title: object = None) -> Iterator[str]:
    """The session as Markdown, chunk by chunk (streaming: memory stays per record).

    ``title`` is the session's current title (the last ``title`` record's, from the listing;
    for Logician the ``name`` in meta.json)."""
    yield from get_layout(layout).markdown(path, title)


def logician_markdown(path: Path, layout: Layout, title: object) -> Iterator[str]:
    """A Logician session: its name, then every entry's message text in full."""
    yield _logician_heading(title, path)
    for record in records_of(path, layout):
        yield _logician_md(record)


#: In :func:`superseded`: a seq a later record supersedes together with another (``alsoReplaces``:
#: one response's parts first kept one by one), shown nowhere (its replacement stands in the first's place).
ABSORBED: dict = {}


def superseded(path: Path, layout: Layout) -> dict[int, dict]:
    """Each seq a later record ``replaces`` (an import's partial reply completed or grown, a source
    line whose bytes changed since, a record kept off the chain that is on it now), mapped to the
    record that replaces it (:data:`ABSORBED` for its ``alsoReplaces``); only those are held."""
    out: dict[int, dict] = {}
    with open_regular(path) as handle:
        if not any(line.find(b'"replaces":') >= 0 for line in handle):  # most journals: one cheap pass of bytes
            return out
    for record in records_of(path, layout):
        replaced, seq = record.get("replaces"), record.get("seq")
        if type(replaced) is int and type(seq) is int and replaced < seq:
            out[replaced] = record
            also = record.get("alsoReplaces")
            for other in also if isinstance(also, list) else ():
                if type(other) is int and other < seq:
                    out[other] = ABSORBED
    return out


def current(records: Iterator[dict], replaced: dict[int, dict]) -> Iterator[dict]:
    """``records`` as the session now stands: a superseded record gives way, in its place, to the
    last record of its chain of replacements; a replacement is not shown again where it was
    appended; a record superseded with another (``alsoReplaces``) is not shown."""
    replacements = {r["seq"] for r in replaced.values() if r is not ABSORBED}
    for record in records:
        shown = _in_place(record, replaced, replacements)
        if shown is not None:
            yield shown


def _in_place(record: dict, replaced: dict[int, dict], replacements: set[int]) -> dict | None:
    """What stands at ``record``'s place: itself, its latest replacement, or nothing (a replacement
    stands in its copy's place, unless it is ``moved``: the conversation's order changed, and it
    stands where it was appended)."""
    seq = record.get("seq")
    if not replaced or type(seq) is not int:
        return record
    if seq in replacements and record.get("moved") is not True:
        return None  # shown in the place of the record it replaces
    latest, hops = record, 0
    while type(latest.get("seq")) is int and latest["seq"] in replaced and hops <= len(replaced):
        latest, hops = replaced[latest["seq"]], hops + 1
        if latest is ABSORBED or latest.get("moved") is True:
            return None  # absorbed by another, or shown where its replacement was appended
    return latest


def current_bytes(path: Path, layout: Layout) -> tuple[Iterator[bytes], int]:
    """The journal's records as the session now stands (:func:`current`), each as its journal bytes,
    and how many superseded records are left out."""
    replaced = superseded(path, layout)
    if not replaced:
        return (raw for _record, raw in record_bytes(path, layout)), 0
    replacements = {r["seq"] for r in replaced.values() if r is not ABSORBED}
    raws = {record["seq"]: raw for record, raw in record_bytes(path, layout) if record.get("seq") in replacements}

    def chunks() -> Iterator[bytes]:
        for record, raw in record_bytes(path, layout):
            shown = _in_place(record, replaced, replacements)
            if shown is not None:
                yield raw if shown is record else raws[shown["seq"]]
    return chunks(), len(replaced)


def levelcode_markdown(path: Path, layout: Layout, title: object) -> Iterator[str]:
    """A LevelCode session: its title, then a heading per turn (a superseded record gives way to
    the one that replaces it, in its place)."""
    state = {"title": title, "turn": 0}
    for record in current(records_of(path, layout), superseded(path, layout)):
        chunk = _levelcode_md(record, state)
        if chunk is not None:
            yield chunk
    if state.get("quiet"):
        yield (f"_{state['quiet']:,} bookkeeping event(s) of the source (progress, attachments, snapshots…) are not shown; "
               "`levelsess export --format jsonl` keeps every one._\n\n")


def as_json(path: Path, layout: Layout) -> Iterator[bytes]:
    """The session as one JSON document, chunk by chunk: each record is its journal bytes, as the
    session now stands (a superseded record gives way, in its place, to the one that replaces it:
    the record a reader means; ``export --format jsonl`` keeps every line).

    LevelCode: ``{"meta": <meta>, "records": [...]}``; Logician: ``{"entries": [...]}``.
    Every record stays on one line, exactly as the journal holds it, so no value changes and
    no depth of nesting that fsck accepts can fail."""
    records, _superseded = current_bytes(path, layout)
    yield get_layout(layout).json_open(records)
    empty = True
    for raw in records:
        yield (b"[\n    " if empty else b",\n    ") + raw
        empty = False
    yield (b"[]" if empty else b"\n  ]") + b"\n}\n"


def export_chunks(row, format_: str) -> Iterator[bytes]:
    """The bytes ``levelsess export`` writes for the session ``row``: ``jsonl`` the journal's exact
    bytes, ``json`` the session as it stands, ``md`` its Markdown."""
    layout = get_layout(row.layout)
    if format_ == "jsonl":
        with open_regular(row.path) as handle:
            while chunk := handle.read(1 << 20):
                yield chunk
    elif format_ == "json":
        yield from as_json(row.path, layout)
    else:
        yield from (c.encode("utf-8", "backslashreplace") for c in markdown(row.path, layout, row.title))
