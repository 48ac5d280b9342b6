"""Read one of a task's whole-file JSON documents, keeping what a cut or damaged copy still holds.

Cline and Roo rewrite ``api_conversation_history.json``, ``ui_messages.json``, the task index and
``task_metadata.json`` whole on every change; ``task_metadata.json`` (Cline), a Cline 4.x manifest
and any copy a crash or a sync tool cut off end mid-document (SOURCES-MORE §4.4, §4.7).  A cut
array still holds every element before the cut: :func:`load_json` returns those, and says how
the rest was lost (a :class:`Damage`), so the caller counts it in a finding.  Nothing here writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...lines import loads, read_regular
from ...jsonarray import elements

BOM = b"\xef\xbb\xbf"
_WS = re.compile(r"[ \t\n\r]*")
#: A task's message array past this size is held as its bytes and read element by element (each parsed
#: when it is used, again on each pass), not parsed whole: 16 MB of small messages parsed took 89 MiB.
WHOLE_BYTES = 8 << 20


@dataclass
class Loaded:
    """A JSON document as read: ``value`` (None when nothing parsed), the elements of the array
    named by ``items_key`` (or of the top-level array) recovered one by one, and what was wrong."""

    path: Path
    value: object = None
    items: list = field(default_factory=list)
    whole: bool = True  # the document parsed whole
    problems: list[str] = field(default_factory=list)  # each a sentence for a finding
    lost_tail: bool = False  # bytes after the last whole element that are no element (a cut one)
    bom: bool = False
    replaced: int = 0  # bytes that were not UTF-8, read as U+FFFD
    missing: bool = False
    size: int = 0


def _decode(data: bytes, loaded: Loaded) -> str:
    if data.startswith(BOM):
        loaded.bom = True
        data = data[len(BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        loaded.replaced = text.count("\ufffd") - data.decode("utf-8", "ignore").count("\ufffd")
        loaded.problems.append(f"is not valid UTF-8 (first bad byte at offset {exc.start}); "
                               f"{loaded.replaced} undecodable byte run(s) read as U+FFFD")
        return text


def load_json(path: Path, items_key: str | None = None, lazy: bool = False) -> Loaded:
    """Read ``path``: the whole document when it parses, else every whole element of its array
    (the top level, or ``value[items_key]``) before the damage.  A missing file is ``missing``.
    ``lazy``: a top-level array past :data:`WHOLE_BYTES` is read as :class:`Elements`."""
    loaded = Loaded(path)
    try:
        data = read_regular(path)
    except FileNotFoundError:
        loaded.missing = True
        return loaded
    loaded.size = len(data)
    if lazy and items_key is None and len(data) > WHOLE_BYTES:
        found = elements(data[len(BOM):] if data.startswith(BOM) else data)
        if found is not None:
            loaded.bom = data.startswith(BOM)
            loaded.value = loaded.items = found
            return loaded
    if not data.strip():
        loaded.whole = False
        loaded.problems.append("is empty (0 bytes or only whitespace): a rewrite cut before its first byte")
        loaded.lost_tail = True  # the tools never write an empty file: what it held is lost
        return loaded
    clean = data[len(BOM):] if data.startswith(BOM) else data
    try:
        value = loads(clean)
    except ValueError:
        value = _NOTHING
    if value is not _NOTHING:
        if data.startswith(BOM):
            loaded.bom = True
        loaded.value = value
        loaded.items = _items(value, items_key)
        return loaded
    text = _decode(data, loaded)
    try:
        value = json.loads(text)
        loaded.value = value
        loaded.items = _items(value, items_key)
        return loaded
    except (ValueError, RecursionError):
        pass
    loaded.whole = False
    _salvage(text, items_key, loaded)
    return loaded


_NOTHING = object()


def _items(value: object, items_key: str | None) -> list:
    if items_key is None:
        return value if isinstance(value, list) else []
    inner = value.get(items_key) if isinstance(value, dict) else None
    return inner if isinstance(inner, list) else []


def _salvage(text: str, items_key: str | None, loaded: Loaded) -> None:
    """Every whole element of the (top-level or ``items_key``) array before the first damage."""
    if items_key is None:
        start = _WS.match(text).end()
        if not text.startswith("[", start):
            loaded.problems.append("is not a JSON array (it does not start with '[')")
            loaded.lost_tail = True
            return
        pos = start + 1
    else:
        found = re.search(r'"' + re.escape(items_key) + r'"\s*:\s*\[', text)
        if found is None:
            loaded.problems.append(f"is cut or damaged before its \"{items_key}\" list")
            loaded.lost_tail = True
            return
        pos = found.end()
    decoder = json.JSONDecoder()
    count = 0
    while True:
        pos = _WS.match(text, pos).end()
        if text.startswith("]", pos) and count == 0:
            break
        try:
            element, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            loaded.lost_tail = True
            break
        loaded.items.append(element)
        count += 1
        pos = _WS.match(text, end).end()
        if text.startswith(",", pos):
            pos += 1
            continue
        if not text.startswith("]", pos):
            loaded.lost_tail = True
        break
    where = f"\"{items_key}\" list" if items_key else "array"
    loaded.problems.append(f"is cut or damaged (not valid JSON); {count} whole element(s) of its {where} recovered"
                           + ("; the bytes after them hold no whole element" if loaded.lost_tail else ""))
