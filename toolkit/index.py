"""Derive the caches from journals: LevelCode index.json (§2.3), Logician meta.json (§2.2).

Pure functions over :class:`~toolkit.journal.JournalScan` results plus loaders that never
write; writing goes through :mod:`toolkit.durable` in the callers.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

from .errors import CODES
from .journal import JournalScan
from .lines import dumps, loads, read_regular

SEED_FIELDS = ("id", "title", "createdAt", "updatedAt", "turns", "model", "preview")


from .scan import Loaded  # noqa: E402,F401 (a cache as found: below the layouts that judge it)


def load_cache(path: Path) -> Loaded:
    """Read and parse a cache file without writing anything."""
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        return Loaded("missing")
    except OSError as exc:
        return Loaded("unreadable", detail=f"{exc.strerror or exc} (cannot read it)")
    try:
        return Loaded("ok", loads(raw), raw=raw)
    except ValueError as exc:
        return Loaded("corrupt", detail=f"not valid JSON ({exc})", raw=raw)


def same(a: object, b: object) -> bool:
    """``a == b`` for parsed JSON of any depth (``==`` recurses; past Python's limit, compare the
    encodings, which agree for values levelsess derived and wrote itself)."""
    try:
        return a == b
    except RecursionError:
        return dumps(a) == dumps(b)


def dump_cache(value: object) -> bytes:
    """Serialise a cache the way levelsess always writes it (stable, indented, newline)."""
    return dumps(value, indent=True) + b"\n"


def utc_iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


# --- LevelCode index.json ----------------------------------------------------------------


#: What an index entry reads of a journal's meta record (:func:`index_entry`): all an import's lean memo keeps of it.
ENTRY_META = frozenset({"id", "title", "createdAt", "model"})


def index_entry(scan: JournalScan, v2: bool) -> dict:
    """Return the §2.3 index entry for one journal."""
    facts = scan.facts  # LevelCodeFacts (toolkit.layouts.levelcode)
    meta = facts.meta or {}
    sid = meta.get("id")
    entry = {
        "id": sid if isinstance(sid, str) else scan.path.stem,
        "title": facts.title if facts.title_set else meta.get("title"),
        "createdAt": meta.get("createdAt"),
        "updatedAt": facts.last_t if facts.last_t is not None else meta.get("createdAt"),
        "turns": facts.turns,
        "model": facts.model if facts.model else meta.get("model"),
        "preview": facts.preview,
    }
    if v2:
        entry.update(bytes=scan.size, pinned=facts.pinned, archived=facts.archived)
        # by each code's own severity, so a --strict check (warnings as errors) derives the same index
        damage = next((f for f in scan.findings if CODES.get(f.code) is not None and CODES[f.code].severity == "error"
                       and f.code != "schema-violation"), None)
        if damage is not None:  # a levelsess extension: `ls` reads torn / corrupt from a fresh index
            entry["damage"] = f"{damage.code} at line {damage.line}"
    return entry


def _order(entry: dict) -> tuple[str, str]:
    updated = entry.get("updatedAt")
    return (updated if isinstance(updated, str) else "", str(entry.get("id")))


def build_index(scans: list[JournalScan], version: int | None = None) -> tuple[int, list[dict]]:
    """Return (index version, entries sorted by updatedAt descending) for a folder.

    The version is 2 when any journal is v2, else 1 (§2.3), unless ``version`` is given.
    """
    if version is None:
        version = 2 if any(s.version == 2 for s in scans) else 1
    entries = sorted((index_entry(s, version == 2) for s in scans), key=_order, reverse=True)
    return version, entries


def index_changed(stored: object, gone: list[JournalScan], scans: list[JournalScan]) -> tuple[int, list[dict]] | None:
    """:func:`build_index` of a folder some of whose journals changed, from its index as it was
    (``stored``, derived from them all), the scans the journals that changed or went had when it
    was derived (``gone``) and the scans of the journals that changed or came (``scans``): the same
    version and entries, without reading the journals that did not change.

    None when that cannot be known from these alone: an entry of ``gone`` the index does not hold,
    a version the unchanged journals decide (a v2 index none of whose changed journals is v2
    any more), or two entries in the same place of the order (their order is the journals')."""
    if isinstance(stored, list):
        version, entries = 1, list(stored)
    elif isinstance(stored, dict) and stored.get("v") == 2 and isinstance(stored.get("sessions"), list):
        version, entries = 2, list(stored["sessions"])
    else:
        return None
    now_v2 = any(s.version == 2 for s in scans)
    if now_v2 != (version == 2):  # v1 -> v2 rewrites every entry; v2 -> ? depends on the journals not read
        return None
    if not all(isinstance(entry, dict) for entry in entries):
        return None
    places: dict[object, list[int]] = {}  # an entry's id -> where the entries of that id are, in order
    for i, entry in enumerate(entries):
        key = entry.get("id")
        places.setdefault(key if isinstance(key, str) else None, []).append(i)
    removed: set[int] = set()
    for old in (index_entry(scan, version == 2) for scan in gone):  # each the first entry equal to it (one of that id)
        at = next((i for i in places.get(old["id"], ()) if i not in removed and same(entries[i], old)), None)
        if at is None:
            return None
        removed.add(at)
    entries = [entry for i, entry in enumerate(entries) if i not in removed]
    entries += (index_entry(s, version == 2) for s in scans)
    entries.sort(key=_order, reverse=True)
    if any(_order(a) == _order(b) and not same(a, b) for a, b in zip(entries, entries[1:])):
        return None
    return version, entries


def index_document(version: int, entries: list[dict]) -> object:
    if version == 1:
        return entries
    return {"v": 2, "generatedAt": utc_iso(datetime.now(timezone.utc).timestamp()), "sessions": entries}


def index_drift(loaded: Loaded, version: int, entries: list[dict]) -> str | None:
    """Return why a stored index differs from the derived one, or None if it matches."""
    value = loaded.value
    if version == 1:
        if not isinstance(value, list):
            return "index is not the v1 list this folder's journals call for"
        stored = value
    else:
        if not isinstance(value, dict) or value.get("v") != 2 or not isinstance(value.get("sessions"), list):
            return "index is not the v2 object this folder's journals call for"
        stored = value["sessions"]
    if same(stored, entries):
        return None
    have = {e.get("id") for e in stored if isinstance(e, dict) and isinstance(e.get("id"), str)}
    want = {e["id"] for e in entries}
    if have != want:
        missing, extra = len(want - have), len(have - want)
        return f"index lists {len(have)} sessions; journals hold {len(want)} ({missing} missing, {extra} extra)"
    stored_by_id = {e["id"]: e for e in stored if isinstance(e, dict) and isinstance(e.get("id"), str)}
    changed = [(e["id"], sorted(k for k in set(e) | set(stored_by_id[e["id"]]) if not same(e.get(k), stored_by_id[e["id"]].get(k))))
               for e in entries if not same(stored_by_id.get(e["id"]), e)]
    if not changed:
        return "index entries are out of order"
    first_id, fields = changed[0]
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    return f"{len(changed)} entr{'y differs' if len(changed) == 1 else 'ies differ'} from the journals: {first_id} ({', '.join(fields)}){more}"


# --- Logician meta.json ------------------------------------------------------------------

META_ORDER = ("formatVersion", "name", "workspace", "createdAt", "updatedAt", "entryCount", "parentSession", "activeLeaf")


def workspace_of(session_dir: Path) -> str | None:
    """Return the absolute path of the folder holding ``.logician`` for a session folder, if the
    layout is standard.

    Folders arrive as typed (``fsck --repair .`` gives ``.logician/sessions/sessions/s1``), so
    the path is resolved first: meta.json must name the workspace, not ``.``.  Symlinks are
    resolved too, as the process's working directory would be."""
    parents = Path(session_dir).resolve().parents
    if len(parents) >= 4 and parents[1].name == "sessions" and parents[2].name == ".logician":
        return str(parents[3])
    return None


#: The facts of a Logician session folder with no journal to read.
_NO_ENTRIES = SimpleNamespace(ids=frozenset(), first_timestamp=None, last_timestamp=None, last_id=None)


def build_meta(session_dir: Path, scan: JournalScan | None, old: object) -> dict:
    """Return the meta.json a Logician session folder should hold (§2.2 rebuild rules)."""
    facts = scan.facts if scan is not None else _NO_ENTRIES  # LogicianFacts (toolkit.layouts.logician)
    kept = dict(old) if isinstance(old, dict) else {}
    if facts.last_timestamp is not None:
        updated = facts.last_timestamp
    elif scan is not None:
        updated = utc_iso(scan.mtime_ns / 1e9)
    else:
        updated = kept.get("updatedAt")
    leaf = kept.get("activeLeaf")
    derived = {
        "formatVersion": 1,
        "name": kept.get("name"),
        "workspace": kept["workspace"] if "workspace" in kept else workspace_of(session_dir),
        "createdAt": kept["createdAt"] if "createdAt" in kept else facts.first_timestamp,
        "updatedAt": updated,
        "entryCount": scan.records if scan is not None else 0,
        "parentSession": kept.get("parentSession"),
        "activeLeaf": leaf if isinstance(leaf, str) and leaf in facts.ids else facts.last_id,
    }
    extras = {k: v for k, v in kept.items() if k not in META_ORDER}
    return {**derived, **extras}


def meta_drift(loaded: Loaded, derived: dict) -> tuple[str, str] | None:
    """Return (code, reason) when a stored meta.json differs from the derived one."""
    if loaded.state == "missing":
        return "missing-meta-json", "meta.json is missing"
    if loaded.state == "corrupt" or not isinstance(loaded.value, dict):
        return "corrupt-meta", loaded.detail or "meta.json is not a JSON object"
    stored = loaded.value
    if same(stored, derived):
        return None
    count = stored.get("entryCount")
    if type(count) is int and count > derived["entryCount"]:
        return "meta-ahead", f"meta.json counts {count} entries; the journal holds {derived['entryCount']}"
    changed = sorted(k for k in set(stored) | set(derived) if not same(stored.get(k), derived.get(k)))
    return "stale-meta", f"meta.json differs from the journal in: {', '.join(changed)}"
