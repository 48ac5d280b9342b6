"""Recover Codex CLI rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and
``archived_sessions/``) as LevelCode v2 journals (SOURCES-AGENTS.md §2, DESIGN.md §5).

A file is taken for a rollout only when its first record says so (:func:`toolkit.identify.sniff`
is ``"codex"``).  It is read with :class:`~toolkit.importers.sourcelines.SourceReader`: every
whole record imports, damage is counted and reported with its line and offset.  Each record
then goes one way, decided by :func:`toolkit.layouts.codex_seen.decide` (one stream per kind,
§2.8 "Decision (import)"):

- a typed prompt -> ``user`` (text exact; images as ``image`` blocks with a ``url`` or ``path`` source);
- assistant text -> ``assistant`` with ``text`` blocks, and ``phase`` when Codex wrote one;
- reasoning -> ``assistant`` with one ``thinking`` block: ``thinking`` (the summary parts joined
  by a blank line, often empty), ``summary`` (the parts as written) and ``encrypted_content``;
- a tool call -> ``assistant`` with a ``tool_use`` block (``id`` = call_id, ``input`` = the
  parsed ``arguments`` object, else the string as written); its output -> a ``user`` record
  marked ``"toolResult": true`` holding a ``tool_result`` block (``exit_code`` added from
  ``exec_command_end``), the API's shape and the one ``import --from claude`` writes (a store
  counts only typed prompts as turns);
- ``compacted`` -> ``compact`` (``briefing`` = its message, or a note when it kept only an
  encrypted history; ``coversThrough`` 0: the seq it covers is not known before writing);
  ``turn_aborted`` -> ``event`` ``interrupt``; ``error`` -> ``event`` ``error``; a record of a
  type newer than this reader -> ``event`` ``codex:<type>[:<payload type>]``, raw kept;
- everything else becomes no record and is counted in ``session.skipped``: ``mirror`` (the
  other stream's copy of an imported item), ``context`` (developer messages, injected user-role
  context, ``turn_context``), ``ui-only`` (task start/complete, token counts…), ``meta-copy``
  (a fork's copy of its parent's ``session_meta``), and SourceReader's damage reasons.  So
  ``source_items`` = 1 (the ``session_meta`` line, the meta record) + records + skipped.

``sourceKey`` is ``sha256:<16 hex>`` of the source line's bytes (``#2``… for a repeat): a
rollout is append-only, and unlike a line number or byte offset the key survives ``fsck
--salvage`` or a trimmed torn tail on the source.  An item and its mirror share the key of the
earlier line, so a copy imported before its mirror was written is not imported twice.  A fork's
replay of its parent is marked ``"inherited": true``.  Never writes the source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import NotASourceError, PathNotFoundError
from ..findings import Finding
from ..identify import describe, sniff
from ..layouts.codex import ARCHIVED, SESSIONS, default_roots, first_record, home_of, is_rollout_name, thread_id
from ..layouts.codex_seen import decide, sketch, summary_texts, user_item_text
from ..lines import loads
from .output import AT, Options, Raw, Session, SourceState, json_object, safe_id
from .sourcelines import SourceLine, SourceReader
from .uris import apply_map, is_foreign

__all__ = ["APP", "Options", "detect", "scan", "session_from_rollout", "source_files"]

APP = "codex"
WHY = {"mirror": "the other stream's copy of an imported item", "context": "context Codex injected or never showed",
       "ui-only": "the UI's own bookkeeping", "meta-copy": "a fork's copy of its parent's session_meta"}


def detect() -> list[Path]:
    """The Codex homes on this machine that hold rollouts: $CODEX_HOME, ~/.codex, %USERPROFILE%\\.codex."""
    return [home for home in default_roots() if (home / SESSIONS).is_dir() or (home / ARCHIVED).is_dir()]


def _walk(top: Path, depth: int) -> list[Path]:
    """Rollouts in ``top`` and its date folders (``YYYY/MM/DD``), by name."""
    if not top.is_dir():
        return []
    found = sorted(p for p in top.iterdir() if is_rollout_name(p.name) and p.is_file())
    if depth:
        for sub in sorted(p for p in top.iterdir() if p.name.isdigit() and p.is_dir()):
            found += _walk(sub, depth - 1)
    return found


def _rollouts(source: Path) -> list[Path]:
    """``--source``: a Codex home, its sessions/ or archived_sessions/ folder, a date folder, or one rollout."""
    source = Path(source).expanduser()
    if not source.exists():
        raise PathNotFoundError(str(source))
    if source.is_file():
        return [source]
    if (source / SESSIONS).is_dir() or (source / ARCHIVED).is_dir():
        return _walk(source / SESSIONS, 3) + _walk(source / ARCHIVED, 0)
    found = _walk(source, 0 if source.name == ARCHIVED else 3)
    if found or source.name in (SESSIONS, ARCHIVED):
        return found
    raise NotASourceError(f"{source} (expected a Codex home (~/.codex), its sessions/ or archived_sessions/ folder, "
                          "a date folder or a rollout-*.jsonl)")


def source_files(source: Path) -> list[Path]:
    return _rollouts(source)


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every rollout under ``source`` as a converted :class:`Session`."""
    names: dict[Path, dict[str, str]] = {}
    for path in _rollouts(source):
        home = home_of(path.parent)
        if home not in names:
            names[home] = thread_names(home / "session_index.jsonl")
        try:
            session = session_from_rollout(path, options, report, names[home])
        except OSError as exc:  # a permission error among them
            report(Finding("unreadable", "error", str(path), None, None, f"cannot read: {exc.strerror or exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
            report(Finding("source-unreadable", "error", str(path), None, None,
                           f"could not be converted ({type(exc).__name__}: {exc}); skipped"))
            continue
        if session is not None and not (options.orphans_only and not session.orphaned):
            yield session


def thread_names(path: Path) -> dict[str, str]:
    """``session_index.jsonl``: thread id -> its name, the last entry for an id winning (§2.1)."""
    names: dict[str, str] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return names
    for line in data.split(b"\n"):
        try:
            entry = loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("thread_name"), str):
            names[entry["id"]] = entry["thread_name"]
    return names


# -- conversion ------------------------------------------------------------------------------


def _keys(lines: list[SourceLine]) -> list[str]:
    """A stable key per source line: the hash of its bytes, ``#n`` on the n-th repeat."""
    seen: dict[str, int] = {}
    keys = []
    for line in lines:
        key = "sha256:" + hashlib.sha256(line.data).hexdigest()[:16]
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    return keys


def _image(value: object) -> dict | None:
    if isinstance(value, dict):
        value = value.get("image_url") or value.get("url") or value.get("path")
    if not isinstance(value, str):
        return None
    kind = "url" if value.startswith(("data:", "http:", "https:")) else "path"
    return {"type": "image", "source": {"type": kind, kind: value}}


def _prompt(payload: dict) -> object:
    """A prompt's content: its text exactly; a list of blocks when images came with it."""
    kind = payload.get("type")
    if kind == "user_message":
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        extra = [payload.get(k) for k in ("images", "local_images") if isinstance(payload.get(k), list)]
        images = [block for group in extra for item in group if (block := _image(item)) is not None]
        return [{"type": "text", "text": text}, *images] if images else text
    if kind == "item_completed":
        return user_item_text(payload.get("item")) or ""
    blocks = []
    for block in payload.get("content") if isinstance(payload.get("content"), list) else []:
        if isinstance(block, dict) and block.get("type") == "input_text" and isinstance(block.get("text"), str):
            blocks.append({"type": "text", "text": block["text"]})
        elif isinstance(block, dict) and block.get("type") == "input_image" and (image := _image(block)) is not None:
            blocks.append(image)
        elif isinstance(block, dict):
            blocks.append(block)
    return blocks[0]["text"] if len(blocks) == 1 and blocks[0].get("type") == "text" else blocks


def _answer(payload: dict) -> tuple[list, object]:
    """(text blocks, phase) of assistant text, from a ``message`` or an ``agent_message``."""
    if payload.get("type") == "agent_message":
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        return [{"type": "text", "text": text}], payload.get("phase")
    content = payload.get("content") if isinstance(payload.get("content"), list) else []
    blocks = [{"type": "text", "text": b["text"]} if isinstance(b, dict) and b.get("type") == "output_text"
              and isinstance(b.get("text"), str) else b for b in content]
    return blocks, payload.get("phase")


def _thinking(payload: dict) -> dict:
    if payload.get("type") == "agent_reasoning":
        return {"type": "thinking", "thinking": payload.get("text") if isinstance(payload.get("text"), str) else ""}
    block = {"type": "thinking", "thinking": "\n\n".join(summary_texts(payload)), "summary": payload.get("summary"),
             "encrypted_content": payload.get("encrypted_content")}
    if payload.get("content") is not None:
        block["content"] = payload["content"]
    return block


def _tool_use(payload: dict) -> dict:
    kind = payload.get("type")
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else payload.get("id")
    if kind == "web_search_call":
        name, value = "web_search", payload.get("action")
    elif kind == "local_shell_call":
        name, value = "local_shell", payload.get("action")
    else:
        name = payload.get("name") if isinstance(payload.get("name"), str) else kind
        value = payload.get("arguments", payload.get("input"))
    parsed = json_object(value) if isinstance(value, str) and kind == "function_call" else None
    return {"type": "tool_use", "id": call_id if isinstance(call_id, str) else "", "name": name,
            "input": parsed if parsed is not None else value}


def _tool_result(payload: dict, exits: dict) -> dict:
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else ""
    block = {"type": "tool_result", "tool_use_id": call_id, "content": payload.get("output")}
    if call_id in exits:
        block["exit_code"] = exits[call_id]
        block["is_error"] = exits[call_id] != 0
    return block


def _record(role: str, envelope: dict, t: str, model: str | None, exits: dict) -> dict:
    payload = envelope["payload"]
    if role == "prompt":
        return {"kind": "user", "t": t, "content": _prompt(payload)}
    if role == "compact":
        message = payload.get("message")
        history = payload.get("replacement_history")
        briefing = message if isinstance(message, str) and message else (
            "(Codex compacted the conversation here; what it kept is "
            + (f"{len(history)} items of replacement history, encrypted" if isinstance(history, list) else "not in the rollout")
            + "; they repeat earlier turns and are not imported as turns)")
        return {"kind": "compact", "t": t, "briefing": briefing, "coversThrough": 0}
    if role == "interrupt":
        return {"kind": "event", "t": t, "type": "interrupt", "reason": payload.get("reason")}
    if role == "error":
        return {"kind": "event", "t": t, "type": "error", "content": payload.get("message")}
    if role == "other":
        kind = payload.get("type")
        return {"kind": "event", "t": t, "type": f"codex:{envelope['type']}" + (f":{kind}" if isinstance(kind, str) else "")}
    phase = None
    if role == "assistant":
        content, phase = _answer(payload)
    elif role == "reasoning":
        content = [_thinking(payload)]
    elif role == "tool_use":
        content = [_tool_use(payload)]
    else:  # a tool's output: a tool_result block in a user record, as the API has it (as import --from claude does)
        return {"kind": "user", "t": t, "content": [_tool_result(payload, exits)], "toolResult": True}
    record = {"kind": "assistant", "t": t, "content": content}
    if isinstance(phase, str):
        record["phase"] = phase
    if model:
        record["model"] = model
    return record


def _exit_codes(lines: list[SourceLine]) -> dict[str, int]:
    exits = {}
    for line in lines:
        payload = line.value.get("payload")
        if line.value.get("type") == "event_msg" and payload.get("type") == "exec_command_end" and isinstance(payload.get("call_id"), str) \
                and type(payload.get("exit_code")) is int:
            exits[payload["call_id"]] = payload["exit_code"]
    return exits


def _place(cwd: object) -> tuple[str, list[str]]:
    if not isinstance(cwd, str) or not cwd:
        return "unknown", []
    if is_foreign(cwd) or not Path(cwd).is_absolute():
        return "unknown", []  # another OS's path (a Windows cwd read on Linux): cannot be judged here
    return ("live", []) if Path(cwd).is_dir() else ("orphaned", ["folder-missing"])


def _whole_record(obj: object) -> bool:
    """A rollout record as an importer takes one: the envelope, perhaps with a key a newer writer
    adds (a line is never dropped for it).  The splitter of damaged lines looks for the same
    shape; no value nested in a payload carries ``timestamp``, ``type`` and an object ``payload``."""
    return type(obj) is dict and "timestamp" in obj and isinstance(obj.get("type"), str) and isinstance(obj.get("payload"), dict)


def session_from_rollout(path: Path, options: Options, report: Callable[[Finding], None],
                         names: dict[str, str] | None = None) -> Session | None:
    """Convert one rollout; None (and a finding) when it is not one or holds no session."""
    where = str(path)
    first, _partial = first_record(path)
    if first is not None and sniff(first) != "codex":  # another tool's file: one finding, not one per line
        report(Finding("unknown-format", "error", where, 1, None,
                       f"{describe(sniff(first))}, not a Codex CLI rollout (its first record says so); skipped"))
        return None
    reader = SourceReader(path, _whole_record, report, what="rollout record")
    lines = list(reader)
    if not lines:
        report(Finding("source-skipped", "warning", where, None, None, "holds no whole rollout record; nothing to import"))
        for item in reader.too_large:  # no session to keep it under: said, never silent
            report(Finding("record-too-large", "error", where, item.line, item.offset, f"a line of {item.length:,} bytes is "
                           "too large for levelsess to parse here, and no session could be made of this rollout to keep "
                           "it with: not imported (the source file still holds it)"))
        return None
    if sniff(lines[0].value) != "codex":
        report(Finding("unknown-format", "error", where, lines[0].line, lines[0].offset,
                       "not a Codex CLI rollout (its first whole record says otherwise); skipped"))
        return None
    metas = [line for line in lines if line.value["type"] == "session_meta"]
    meta = metas[0].value["payload"] if metas else {}
    sid = meta.get("id") if isinstance(meta.get("id"), str) and meta["id"] else thread_id(path)
    if sid is None:
        report(Finding("source-unreadable", "error", where, None, None, "no session_meta and no thread id in the file name; skipped"))
        return None
    text = {k: meta.get(k) for k in ("timestamp", "cwd", "cli_version", "originator", "forked_from_id") if isinstance(meta.get(k), str)}
    source = {"app": APP, "path": where, "key": sid, "version": text.get("cli_version")}
    for key, value in (("originator", text.get("originator")), ("source", meta.get("source")), ("parent", text.get("forked_from_id"))):
        if value is not None:
            source[key] = value
    status, orphan = _place(text.get("cwd"))
    created = text.get("timestamp") or next((l.value["timestamp"] for l in lines if isinstance(l.value.get("timestamp"), str)), None)
    session = Session(safe_id("codex", sid), options.project or _mapped(text.get("cwd"), options), created, None, source,
                      Raw(metas[0].data) if metas else None, status=status, orphan=orphan)
    session.raw_at = metas[0].offset if metas else None
    by_offset = {line.offset: line for line in lines}
    session.state = SourceState(where, reader.covered, reader.sha256, [(line.offset, len(line.data)) for line in lines],
                                lambda offset, _length: by_offset[offset].data)
    _convert(session, lines, reader)
    session.title = (names or {}).get(sid) or _first_prompt(session)
    return session


def _convert(session: Session, lines: list[SourceLine], reader: SourceReader) -> None:
    decisions = decide([sketch(line.value) for line in lines])
    keys = _keys(lines)
    exits = _exit_codes(lines)
    t, model = session.created_at or "", None
    skipped: dict[str, list[int]] = {}
    for line, decision in zip(lines, decisions):
        envelope = line.value
        if isinstance(envelope.get("timestamp"), str):
            t = envelope["timestamp"]
        if envelope["type"] == "turn_context" and isinstance(envelope["payload"].get("model"), str):
            model = envelope["payload"]["model"]
        if decision.role == "meta":
            continue
        if decision.skip is not None:
            skipped.setdefault(decision.skip, []).append(line.line)
            continue
        record = _record(decision.role, envelope, t, model, exits)
        if decision.inherited:
            record["inherited"] = True
        record["sourceKey"] = keys[decision.group]
        record[AT] = line.offset
        record["raw"] = Raw(line.data)
        session.records.append(record)
    # an item is a whole record or a damaged piece of a line: two records spliced on one line are two
    session.source_items = reader.records + sum(reader.skipped.values())
    for reason, count in reader.skipped.items():
        session.skip(reason, count)
    session.too_large = list(reader.too_large)  # counted above as record-too-large; the writer keeps their bytes
    for reason, numbers in skipped.items():
        session.skip(reason, len(numbers))
    if skipped:
        parts = [f"{reason} {len(n):,} ({WHY.get(reason, reason)}; line {', '.join(map(str, n[:5]))}{'…' if len(n) > 5 else ''})"
                 for reason, n in sorted(skipped.items())]
        report = Finding("source-skipped", "warning", str(reader.path), None, None,
                         f"session {session.id}: {sum(map(len, skipped.values())):,} lines became no record: " + "; ".join(parts))
        reader.report(report)


def _first_prompt(session: Session) -> str | None:
    """The thread's own first typed prompt, one line, at most 120 characters (a fork's replayed one if none)."""
    prompts = [r for r in session.records if r["kind"] == "user"]
    own = [r for r in prompts if not r.get("inherited")] or prompts
    for record in own:
        content = record["content"]
        text = content if isinstance(content, str) else next((b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"), None)
        if isinstance(text, str) and text.strip():
            return " ".join(text.split())[:120]
    return None


def _mapped(project: object, options: Options) -> str | None:
    return apply_map(project, options.mapping) if isinstance(project, str) and project else None
