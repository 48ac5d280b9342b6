"""Recover Codex CLI rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and
``archived_sessions/``) as LevelCode v2 journals (SOURCES-AGENTS.md §2, DESIGN.md §5).

A file is taken for a rollout only when its first record says so (:func:`toolkit.identify.sniff`
is ``"codex"``).  It is read with :class:`~toolkit.importers.sourcelines.SourceReader`: every
whole record imports, damage is counted and reported with its line and offset.  Each record
then goes one way, decided by :func:`toolkit.layouts.codex_seen.decide_stream` (one stream per kind,
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
  ``source_items`` = merged (the ``session_meta`` line, carried by the meta record) + records + skipped,
  reported as ``converted``, ``merged`` and ``skipped`` like every importer's.

``sourceKey`` is ``sha256:<16 hex>`` of the source line's bytes (``#2``… for a repeat): a
rollout is append-only, and unlike a line number or byte offset the key survives ``fsck
--salvage`` or a trimmed torn tail on the source.  An item and its mirror share the key of the
earlier line, so a copy imported before its mirror was written is not imported twice.  A fork's
replay of its parent is marked ``"inherited": true``.  Never writes the source.

Memory does not grow with the rollout's records: a first read keeps, per record, a row of a
temporary SQLite database (where it is, its hash, its sketch) and the call ids, exit codes and
facts of the whole file; :func:`~toolkit.layouts.codex_seen.decide_stream` then keeps two bytes
a record; the records are converted from their lines, re-read at their offsets (and refused
if those changed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import DurabilityError, FileChangedError, NotASourceError, PathNotFoundError
from ..findings import Finding
from ..identify import describe, sniff
from ..layouts.codex import ARCHIVED, SESSIONS, default_roots, first_record, home_of, is_rollout_name, legacy_record, thread_id
from ..layouts.codex_seen import (MIRROR_WINDOW, Decision, Replay, Sketch, as_envelope, context_cwd, decide_stream, is_legacy_meta,
                                  message_text, parent_of, sketch, summary_texts, typed_start, user_item_text)
from ..lines import loads, open_regular
from .output import AT, LINE_ID, Options, Raw, Session, SourceState, json_object, offset_line_key, safe_id
from .sourcelines import SourceLine, SourceReader
from .unchanged import Unit
from .spill import from_db, guarded, temp_db, to_db
from .uris import apply_map, folder_status, is_foreign

__all__ = ["APP", "Options", "detect", "scan", "scan_unit", "session_from_rollout", "source_files", "unit_key", "units"]

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


def units(source: Path, report: Callable[[Finding], None]) -> list[Unit]:
    """One unit per rollout; each also depends on its home's ``session_index.jsonl`` (thread names)."""
    names: dict[Path, dict[str, str]] = {}  # read once per home, when a rollout of it is read
    found = []
    for path in _rollouts(source):
        home = home_of(path.parent)
        found.append(Unit(str(path), (path,), (home / "session_index.jsonl",), (path, home, names)))
    return found


def unit_key(unit: Unit) -> str:
    """The thread id a rollout's session is named after, as far as its first record or its name
    says: rollouts that share it (a copy in archived_sessions) write one journal, one after the other."""
    path = unit.handle[0]
    try:
        first, _partial = first_record(path)
    except Exception:  # noqa: BLE001 - unreadable here: scan_unit reports it
        first = None
    payload = first.get("payload") if isinstance(first, dict) else None
    sid = payload.get("id") if isinstance(payload, dict) else first.get("id") if isinstance(first, dict) else None  # legacy: bare
    return (sid if isinstance(sid, str) and sid else thread_id(path) or str(path)).lower()


def scan(source: Path, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """Yield every rollout under ``source`` as a converted :class:`Session`."""
    for unit in units(source, report):
        yield from scan_unit(unit, options, report)


def scan_unit(unit: Unit, options: Options, report: Callable[[Finding], None]) -> Iterator[Session]:
    """The session of one rollout."""
    path, home, names = unit.handle
    if home not in names:
        names[home] = thread_names(home / "session_index.jsonl")
    try:
        with guarded("reading a rollout"):
            session = session_from_rollout(path, options, report, names[home])
    except DurabilityError:
        raise  # the temporary folder is full: so it is for the rollouts after this one
    except OSError as exc:  # a permission error among them
        report(Finding("unreadable", "error", str(path), None, None, f"cannot read: {exc.strerror or exc}"))
        return
    except Exception as exc:  # noqa: BLE001 - untrusted data: isolate each session
        report(Finding("source-unreadable", "error", str(path), None, None,
                       f"could not be converted ({type(exc).__name__}: {exc}); skipped"))
        return
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


def _typed(record: dict) -> dict:
    """Mark what Codex or the IDE added to a prompt (:func:`~toolkit.layouts.codex_seen.typed_start`):
    a text that opens with an IDE's context becomes two text blocks, the context and the request,
    the first listed in ``added``; a prompt with nothing typed is ``injected`` (no turn, no title).
    The blocks joined are the text exactly; ``raw`` keeps the line as written."""
    content = record["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out, added, typed = [], [], False
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        start = typed_start(text) if isinstance(text, str) else 0
        if start is None:
            added.append(len(out))
        elif start:
            added.append(len(out))
            out.append({"type": "text", "text": text[:start]})
            block = {"type": "text", "text": text[start:]}
        typed = typed or start is not None
        out.append(block)
    if not typed and added:
        record["injected"] = True
    elif added:
        record["content"], record["added"] = out, added
    return record


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


def _tool_result(payload: dict, exits) -> dict:
    call_id = payload.get("call_id") if isinstance(payload.get("call_id"), str) else ""
    block = {"type": "tool_result", "tool_use_id": call_id, "content": payload.get("output")}
    code = exits.get(call_id)
    if code is not None:
        block["exit_code"] = code
        block["is_error"] = code != 0
    return block


def _record(role: str, envelope: dict, t: str, model: str | None, exits) -> dict:
    payload = envelope["payload"]
    if role == "prompt":
        return _typed({"kind": "user", "t": t, "content": _prompt(payload)})
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


def _place(cwd: object) -> tuple[str, list[str]]:
    if not isinstance(cwd, str) or not cwd:
        return "unknown", []
    if is_foreign(cwd) or not Path(cwd).is_absolute():
        return "unknown", []  # another OS's path (a Windows cwd read on Linux): cannot be judged here
    return folder_status(cwd)


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
    rollout = _Rollout(path, report, legacy=is_legacy_meta(first))
    if rollout.first is None:
        report(Finding("source-skipped", "warning", where, None, None, "holds no whole rollout record; nothing to import"))
        for item in rollout.reader.too_large:  # no session to keep it under: said, never silent
            report(Finding("record-too-large", "error", where, item.line, item.offset, f"a line of {item.length:,} bytes is "
                           "too large for levelsess to parse here, and no session could be made of this rollout to keep "
                           "it with: not imported (the source file still holds it)"))
        return None
    if sniff(rollout.first.value) != "codex":
        report(Finding("unknown-format", "error", where, rollout.first.line, rollout.first.offset,
                       "not a Codex CLI rollout (its first whole record says otherwise); skipped"))
        return None
    meta = as_envelope(rollout.meta.value)["payload"] if rollout.meta is not None else {}
    sid = meta.get("id") if isinstance(meta.get("id"), str) and meta["id"] else thread_id(path)
    if sid is None:
        report(Finding("source-unreadable", "error", where, None, None, "no session_meta and no thread id in the file name; skipped"))
        return None
    text = {k: meta.get(k) for k in ("timestamp", "cwd", "cli_version", "originator", "forked_from_id") if isinstance(meta.get(k), str)}
    if "cwd" not in text and rollout.cwd is not None:
        text["cwd"] = rollout.cwd
    source = {"app": APP, "path": where, "key": sid, "version": text.get("cli_version")}
    for key, value in (("originator", text.get("originator")), ("source", meta.get("source")), ("parent", parent_of(meta))):
        if value is not None:
            source[key] = value
    status, orphan = _place(text.get("cwd"))
    created = text.get("timestamp") or rollout.first_time
    session = Session(safe_id("codex", sid), options.project or _mapped(text.get("cwd"), options), created, None, source,
                      Raw(rollout.meta.data) if rollout.meta is not None else None, status=status, orphan=orphan)
    session.raw_at = rollout.meta.offset if rollout.meta is not None else None
    session.state = SourceState(where, rollout.reader.covered, rollout.reader.sha256, _Lines(rollout), rollout.read_line)
    _convert(session, rollout)
    session.title = (names or {}).get(sid) or _first_prompt(rollout)
    return session


#: A decision as a rollout keeps it, in two bytes: role and skip (``role * 8 + skip``), and the
#: record keying it (at most MIRROR_WINDOW before: ``n - group``) with ``inherited`` (``+ 8``).
_ROLES = (None, "prompt", "assistant", "reasoning", "tool_use", "tool_result", "compact", "interrupt", "error", "other", "meta")
_SKIPS = (None, "mirror", "context", "ui-only", "meta-copy")
_DIGEST = 12  # bytes of a sketch's digests (codex_seen._digest)


class _Exits:
    """exec_command_end's exit code by call id (the last one), as the rollout's table holds them."""

    def __init__(self, db) -> None:
        self.db = db

    def get(self, call_id: str) -> int | None:
        row = self.db.execute("SELECT code FROM exits WHERE call = ?", (to_db(call_id),)).fetchone()
        return None if row is None else row[0]


class _Rollout:
    """A rollout read once: a row per whole record in a temporary database (where it is, the hash
    its key is made of, its sketch), the call ids and exit codes, and what needs the whole file
    (typed prompts, the replayed range, the first ``session_meta``).  :meth:`decide` then keeps two
    bytes a record, and :meth:`records` converts them, each re-read at its offset: memory does not
    grow with the rollout's records (a 37 GB one is reported, SOURCES-AGENTS §2.10)."""

    def __init__(self, path: Path, report: Callable[[Finding], None], legacy: bool = False) -> None:
        self.path = path
        # a pre-envelope rollout's records are bare items: only in such a file is one a record
        self.reader = SourceReader(path, legacy_record if legacy else _whole_record, report, what="rollout record")
        self.db = temp_db()
        self.db.execute("CREATE TABLE line (n INTEGER PRIMARY KEY, line INTEGER NOT NULL, offset INTEGER NOT NULL, "
                        "size INTEGER NOT NULL, hash TEXT NOT NULL, repeat INTEGER NOT NULL DEFAULT 1, kind TEXT NOT NULL, "
                        "text BLOB NOT NULL, alt BLOB NOT NULL, call BLOB)")
        self.db.execute("CREATE TABLE calls (call BLOB PRIMARY KEY) WITHOUT ROWID")
        self.db.execute("CREATE TABLE exits (call BLOB PRIMARY KEY, code INTEGER NOT NULL) WITHOUT ROWID")
        self.first: SourceLine | None = None
        self.meta: SourceLine | None = None  # the first session_meta
        self.first_time: str | None = None
        self.cwd: str | None = None  # the working folder an <environment_context> message names
        self.prompts_typed = False
        replay = Replay()
        rows, calls, exits = [], [], []
        for line in self.reader:
            value, item = as_envelope(line.value), sketch(line.value)  # a pre-envelope line as its envelope
            replay.feed(item)
            self.first = self.first or line
            self.meta = self.meta or (line if value["type"] == "session_meta" else None)
            if self.cwd is None and item.kind == "injected":  # a pre-envelope meta has no cwd: the context names it
                self.cwd = context_cwd(message_text(value["payload"].get("content"), ("input_text",)))
            self.first_time = self.first_time or (value["timestamp"] if isinstance(value.get("timestamp"), str) else None)
            self.prompts_typed = self.prompts_typed or item.kind in ("prompt", "user_item")
            if item.kind == "call" and item.call is not None:
                calls.append((to_db(item.call),))
            payload = value["payload"]
            if value["type"] == "event_msg" and payload.get("type") == "exec_command_end" and isinstance(payload.get("call_id"), str) \
                    and type(payload.get("exit_code")) is int:
                exits.append((to_db(payload["call_id"]), payload["exit_code"]))
            rows.append((replay.count - 1, line.line, line.offset, len(line.data), hashlib.sha256(line.data).hexdigest()[:16],
                         item.kind, item.text, b"".join(sorted(item.alt)), to_db(item.call)))
            if len(rows) >= 4096:
                self._write(rows, calls, exits)
        self._write(rows, calls, exits)
        self.count, self.replay = replay.count, replay.range
        self._number_repeats()
        self.db.execute("CREATE INDEX line_offset ON line (offset, n)")  # restore's lines no record carries, read by offset
        self.codes = self.groups = b""
        self._handle = None
        self.listed: dict[int, tuple] = {}  # offset -> (n, size, hash) of the line a pass of _Lines is at

    def _write(self, rows: list, calls: list, exits: list) -> None:
        self.db.executemany("INSERT INTO line (n, line, offset, size, hash, kind, text, alt, call) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        self.db.executemany("INSERT OR IGNORE INTO calls VALUES (?)", calls)
        self.db.executemany("INSERT OR REPLACE INTO exits VALUES (?, ?)", exits)  # the last one wins
        for batch in (rows, calls, exits):
            batch.clear()

    def _number_repeats(self) -> None:
        """A line seen before (same bytes) is keyed ``#<occurrence>``."""
        self.db.execute("CREATE TABLE repeats AS SELECT hash, n FROM line WHERE hash IN "
                        "(SELECT hash FROM line GROUP BY hash HAVING COUNT(*) > 1) ORDER BY hash, n")
        updates, previous, seen = [], None, 0
        for digest, n in self.db.execute("SELECT hash, n FROM repeats ORDER BY rowid"):
            seen = seen + 1 if digest == previous else 1
            previous = digest
            if seen > 1:
                updates.append((seen, n))
            if len(updates) >= 4096:
                self.db.executemany("UPDATE line SET repeat = ? WHERE n = ?", updates)
                updates.clear()
        self.db.executemany("UPDATE line SET repeat = ? WHERE n = ?", updates)

    def decide(self) -> Iterator[tuple[int, int, Decision]]:
        """(record, line number, decision) for every record, in file order, kept in :attr:`codes` and :attr:`groups`."""
        def sketches() -> Iterator[Sketch]:
            for kind, text, alt, call in self.db.execute("SELECT kind, text, alt, call FROM line ORDER BY n"):
                yield Sketch(kind, text, frozenset(alt[k:k + _DIGEST] for k in range(0, len(alt), _DIGEST)), from_db(call))

        def is_call(call: str | None) -> bool:
            return call is not None and self.db.execute("SELECT 1 FROM calls WHERE call = ?", (to_db(call),)).fetchone() is not None

        codes, groups = bytearray(self.count), bytearray(self.count)
        lines = self.db.execute("SELECT line FROM line ORDER BY n")
        for n, decision in enumerate(decide_stream(sketches(), prompts_typed=self.prompts_typed, is_call=is_call, replay=self.replay)):
            codes[n] = _ROLES.index(decision.role) * 8 + _SKIPS.index(decision.skip)
            groups[n] = (n - decision.group) + (8 if decision.inherited else 0)
            yield n, lines.fetchone()[0], decision
        self.codes, self.groups = codes, groups

    def decision(self, n: int) -> tuple[str | None, str | None, int, bool]:
        """(role, skip, group, inherited) of record ``n``, as :meth:`decide` kept it."""
        code, group = self.codes[n], self.groups[n]
        return _ROLES[code >> 3], _SKIPS[code & 7], n - (group & 7), bool(group & 8)

    def value(self, n: int, offset: int, size: int, digest: str) -> tuple[dict, bytes]:
        """Record ``n`` and its bytes, re-read at its offset; refused if they are not those read first."""
        return as_envelope(loads(data := self._bytes(n, offset, size, digest))), data

    def _bytes(self, n: int, offset: int, size: int, digest: str) -> bytes:
        if self._handle is None:
            self._handle = open_regular(self.path)
        self._handle.seek(offset)
        data = self._handle.read(size)
        if hashlib.sha256(data).hexdigest()[:16] != digest:
            self.close()
            raise FileChangedError(f"{self.path} changed while it was being imported (rewritten?): record {n + 1} is no "
                                   "longer the one it was; import again")
        return data

    def read_line(self, offset: int, _length: int) -> bytes:
        """The bytes of the (last) record at ``offset``, re-read; the handle is closed after a pass of :class:`_Lines`."""
        row = self.listed.get(offset)  # the line :class:`_Lines` just listed (a pass of restore's lines)
        if row is None:
            row = self.db.execute("SELECT n, size, hash FROM line WHERE offset = ? ORDER BY n DESC LIMIT 1", (offset,)).fetchone()
        n, size, digest = row
        return self._bytes(n, offset, size, digest)

    def records(self, created: str | None) -> Iterator[dict]:
        """The journal's records, converted from the re-read lines."""
        t, model = created or "", None
        exits = _Exits(self.db)
        keys: dict[int, str] = {}  # the keys of the last records: a record is keyed by one at most MIRROR_WINDOW before it
        try:
            for n, offset, size, digest, repeat in self.db.execute("SELECT n, offset, size, hash, repeat FROM line ORDER BY n"):
                keys[n] = f"sha256:{digest}" + (f"#{repeat}" if repeat > 1 else "")
                keys.pop(n - MIRROR_WINDOW - 1, None)
                data = self._bytes(n, offset, size, digest)
                value = loads(data)
                envelope = as_envelope(value)
                if isinstance(envelope.get("timestamp"), str):
                    t = envelope["timestamp"]
                if envelope["type"] == "turn_context" and isinstance(envelope["payload"].get("model"), str):
                    model = envelope["payload"]["model"]
                role, skip, group, inherited = self.decision(n)
                if role == "meta" or skip is not None:
                    continue
                identity = offset_line_key(value) if group == n else None  # (a mirror's key is another line's)
                record = _record(role, envelope, t, model, exits)
                if inherited:
                    record["inherited"] = True
                record["sourceKey"] = keys[group]
                record[AT] = offset
                record["raw"] = Raw(data)
                if identity is not None:
                    record[LINE_ID] = identity
                yield record
        finally:
            self.close()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class _Lines:
    """``(offset, size)`` of each whole record of a rollout, in file order, on each pass."""

    def __init__(self, rollout: _Rollout) -> None:
        self.rollout = rollout

    def __iter__(self) -> Iterator[tuple[int, int]]:
        listed = self.rollout.listed
        try:
            for n, offset, size, digest in self.rollout.db.execute("SELECT n, offset, size, hash FROM line ORDER BY n"):
                listed.clear()  # (several records may share an offset: lifted from one damaged line)
                listed[offset] = (n, size, digest)
                yield offset, size
        finally:
            listed.clear()
            self.rollout.close()


class _Records:
    """A rollout's journal records, converted on each pass (re-iterable, sized)."""

    def __init__(self, rollout: _Rollout, count: int, created: str | None) -> None:
        self.rollout, self.count, self.created = rollout, count, created

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        return self.rollout.records(self.created)


def _convert(session: Session, rollout: _Rollout) -> None:
    records = 0
    skipped: dict[str, list] = {}  # reason -> [count, the first line numbers]
    for _n, number, decision in rollout.decide():
        if decision.role == "meta":
            session.merged += 1  # carried by the meta record (its raw)
            continue
        if decision.skip is not None:
            count_lines = skipped.setdefault(decision.skip, [0, []])
            count_lines[0] += 1
            if len(count_lines[1]) < 5:
                count_lines[1].append(number)
            continue
        records += 1
    session.records = _Records(rollout, records, session.created_at)
    reader = rollout.reader
    # an item is a whole record or a damaged piece of a line: two records spliced on one line are two
    session.source_items = reader.records + sum(reader.skipped.values())
    for reason, count in reader.skipped.items():
        session.skip(reason, count)
    session.too_large = list(reader.too_large)  # counted above as record-too-large; the writer keeps their bytes
    for reason, (count, _numbers) in skipped.items():
        session.skip(reason, count)
    if skipped:
        parts = [f"{reason} {count:,} ({WHY.get(reason, reason)}; line {', '.join(map(str, n))}{'…' if count > 5 else ''})"
                 for reason, (count, n) in sorted(skipped.items())]
        report = Finding("source-skipped", "warning", str(reader.path), None, None,
                         f"session {session.id}: {sum(c for c, _n in skipped.values()):,} lines became no record: " + "; ".join(parts))
        reader.report(report)


def _first_prompt(rollout: _Rollout) -> str | None:
    """The thread's own first typed prompt, one line, at most 120 characters (a fork's replayed one if none)."""
    def user(n: int) -> bool:  # a record of kind "user": a prompt or a tool's output
        role, skip, _group, _inherited = rollout.decision(n)
        return role in ("prompt", "tool_result") and skip is None

    own = any(user(n) and not rollout.decision(n)[3] for n in range(rollout.count))
    for n in range(rollout.count):
        role, skip, _group, inherited = rollout.decision(n)
        if role != "prompt" or skip is not None or (own and inherited):
            continue
        offset, size, digest = rollout.db.execute("SELECT offset, size, hash FROM line WHERE n = ?", (n,)).fetchone()
        envelope, _data = rollout.value(n, offset, size, digest)
        record = _typed({"content": _prompt(envelope["payload"])})
        content, added = record["content"], record.get("added", ())
        text = content if isinstance(content, str) else next((b.get("text") for i, b in enumerate(content) if i not in added
                                                              and isinstance(b, dict) and b.get("type") == "text"), None)
        if not record.get("injected") and isinstance(text, str) and text.strip():
            rollout.close()
            return " ".join(text.split())[:120]
    rollout.close()
    return None


def _mapped(project: object, options: Options) -> str | None:
    return apply_map(project, options.mapping) if isinstance(project, str) and project else None
