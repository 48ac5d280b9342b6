"""An independent reader of Claude Code transcripts and of the journals `import --from claude`
writes, for the import tests.  Standard library ``json`` only, no levelsess code: the
expectations come from SOURCES-AGENTS.md §1.7–1.8 (the resumed chain, parallel tool results,
one API response over several lines), so a test compares two implementations.
"""

from __future__ import annotations

import json
from pathlib import Path

CHAIN = {"user", "assistant", "system", "progress", "attachment"}


def source_records(data: bytes) -> list[tuple[bytes, dict]]:
    """(line bytes, record) for every line that is a whole JSON object."""
    out = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(value, dict):
            out.append((line, value))
    return out


def _results(record: dict) -> bool:
    content = (record.get("message") or {}).get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def resumed(records: list[dict], whole_sidechain: bool) -> list[dict]:
    """The records resume shows: walk ``parentUuid`` from the last main-chain record (through
    ``logicalParentUuid`` at a compact boundary), then each parallel call's result after its call."""
    chain = [r for r in records if r.get("type") in CHAIN and isinstance(r.get("uuid"), str)]
    by_uuid = {r["uuid"]: r for r in chain}
    main = chain if whole_sidechain else [r for r in chain if r.get("isSidechain") is not True]
    if not main:
        return []
    path, seen, current = [], set(), main[-1]
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        path.append(current)
        parent = current.get("parentUuid")
        if parent is None and current.get("subtype") == "compact_boundary":
            parent = current.get("logicalParentUuid")
        current = by_uuid.get(parent) if isinstance(parent, str) else None
    path.reverse()
    shown, on = [], {id(r) for r in path}
    for record in path:
        shown.append(record)
        for other in chain:
            if (id(other) not in on and other.get("type") == "user" and _results(other)
                    and by_uuid.get(other.get("parentUuid")) is record):
                on.add(id(other))
                shown.append(other)
    return shown


def conversation(records: list[dict], whole_sidechain: bool = False) -> list[tuple[str, object]]:
    """What the journal must hold as ``user`` / ``assistant`` records, in order: each user record's
    content (typed prompts, images, tool results), and each API response's content blocks, all of
    its parts (same message.id and requestId) joined at its first part.  Compaction summaries,
    interrupts and API errors are not in it (they are compact and event records)."""
    out: list[tuple[str, object]] = []
    messages: dict[tuple, list] = {}
    for record in resumed(records, whole_sidechain):
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        content = message.get("content")
        if record["type"] == "user":
            text = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
            if record.get("isCompactSummary") is True:
                continue
            if not _results(record) and text.startswith("[Request interrupted by user") and len(text) < 200:
                continue
            out.append(("user", content))
        elif record["type"] == "assistant":
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if isinstance(content, str) else []
            key = (message["id"], record.get("requestId")) if isinstance(message.get("id"), str) else None
            if key is not None and key in messages:
                messages[key].extend(blocks)
                continue
            if record.get("isApiErrorMessage") is True:
                continue
            entry = list(blocks)
            if key is not None:
                messages[key] = entry
            out.append(("assistant", entry))
    return out


def journal(path: Path) -> list[dict]:
    """A journal's records in order, each ``replaces`` applied (the later record takes the place
    of the one it supersedes)."""
    records = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    by_seq = {r.get("seq"): i for i, r in enumerate(records)}
    out = list(records)
    for record in records:
        if isinstance(record.get("replaces"), int):
            out[by_seq[record["replaces"]]] = record
            out[by_seq[record["seq"]]] = None
    return [r for r in out if r is not None]


def journal_conversation(records: list[dict]) -> list[tuple[str, object]]:
    return [(r["kind"], r["content"]) for r in records if r["kind"] in ("user", "assistant")]


def raw_lines(records: list[dict]) -> list[bytes]:
    """Every source record a journal carries under ``raw`` (a merged message carries a list),
    compact-serialised the way Claude Code writes lines (SOURCES-AGENTS §0's round trip)."""
    out = []
    for record in records:
        raw = record.get("raw")
        if raw is None:
            continue
        for value in raw if record.get("parts") else [raw]:
            out.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return out
