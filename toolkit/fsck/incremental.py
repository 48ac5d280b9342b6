"""Remember what ``fsck --incremental`` verified, so an unchanged journal is not read again.

The cache lives outside every store, under ``platformdirs.user_cache_dir("levelsess")``:
one small file per folder (``fsck-incremental/<sha256 of the folder's absolute path>.json``),
written through :func:`toolkit.durable.atomic_writes`, and only when something in it changed.
Its first line is a JSON head (format, version, the folder's verdict); then a line a journal,
``<its path as a JSON string><TAB><its entry as JSON>``, each parsed only when that journal is
looked up (:class:`_Lines`): a run that finds a few journals grown parses those, not all.
A plain ``fsck`` never imports this module: it reads and writes nothing here.

Each entry holds the journal's (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns), a sha256 of
its last (up to) 4 KiB, and the whole :class:`~toolkit.journal.JournalScan` of those bytes (its
findings, counts, tail state and layout facts), keyed by the layout, ``--strict`` and the
levelsess version.  An entry is used only when every one of those matches; anything else (an
append, a truncation, an in-place rewrite even with its mtime put back, a replaced file) is read
again in full.  ctime is the stamp a writer cannot set back, so it is what catches a rewrite
outside the hashed tail (not on Windows, where st_ctime is the creation time: there only the
hashed tail catches it).

A journal that only grew (same device and inode, larger, the same sha256 of the 4 KiB before
the end of the prefix verified) is read from there: the reader's state at the end of its last
terminated line (:attr:`~toolkit.journal.JournalScan.resume_state`, a pickle of the classifier:
sink, counts, the layout's rules and facts) is kept in ``<key>.states.json`` beside the folder's
cache, read only when some journal grew.  The states are levelsess's own, in the user's own cache
folder (whoever can write there can write the user's shell start-up files too); one that does
not load is simply a full read.  A state is kept only while small (RESUME_MIN, or 1/RESUME_SHARE
of its journal).

A folder's cache file (index.json, meta.json) is judged against its journals' facts.  That
verdict is kept too, with the file's stamp and the sha256 of all its bytes (taken before it was
read) and a hash of the journals it was judged on with their stamps; it is used again only when
every one of those journals came from the cache in this run and the cache file has the same
stamp and bytes.  A missing cache file is remembered as missing; one that cannot be read, is
too big or just changed is judged again every time.

Racy entries (git's "racily clean" index entries): a journal changed within :data:`RACY_NS` of
the moment it was read may be changed again within the same timestamp tick, leaving every stamp
as it was.  Such an entry is kept, but never trusted: the next run reads the journal in full
again (and then, the file being older, trusts what it finds).

Every journal whose scan succeeded is cached, damaged ones too: the entry reproduces the very
findings a full read gives, and a change to the file makes it read again.  A journal that could
not be read, or whose facts would not come back equal from JSON, is simply not cached.  A
Logician entry holds every entry id of its journal (meta.json's check needs them), so its size
follows the journal's record count.

A missing, unreadable or corrupt cache file only means "read everything"; a cache that cannot be
written leaves the check's verdict as it is (the report says so).
"""

from __future__ import annotations

import binascii  # (base64's encodings, without base64 and struct: a grown import's start-up)
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import orjson

from .. import __version__, durable
from ..blobs import Blob, Blobs
from ..encode import dumps
from ..errors import LevelsessError
from ..findings import Finding
from ..journal import JournalScan, TailState
from ..layouts import get as get_layout
from ..lines import open_regular
from ..parse import loads
from ..verified import remove_dead_temps

FORMAT = 2  # 2: a line a journal, each parsed when asked for (1: one JSON document)
SUBDIR = "fsck-incremental"
TAIL_BYTES = 4096
#: A reader's state is kept for a journal that may grow only when it is small: at most this many
#: bytes, or 1/RESUME_SHARE of the journal (a Claude Code transcript's state holds every uuid).
RESUME_MIN = 64 << 10
RESUME_SHARE = 16
#: A journal whose ctime is this close to the moment it was read is re-read next time (FAT and
#: some network filesystems keep 1-2 s timestamps; Linux's coarse clock ticks every few ms).
RACY_NS = 2_000_000_000
#: index.json / meta.json bigger than this are judged again on every run, never remembered.
WHOLE_PROBE_MAX = 64 << 20


def cache_dir() -> Path:
    """Return the folder that holds the incremental-check cache (outside every store)."""
    from ..places import user_cache_dir

    return Path(user_cache_dir()) / SUBDIR


def cache_file(folder: Path, where: Path | None = None) -> Path:
    """Return the cache file of ``folder`` (in ``where``, by default :func:`cache_dir`)."""
    key = hashlib.sha256(os.path.abspath(folder).encode("utf-8", "surrogateescape")).hexdigest()[:40]
    return (where or cache_dir()) / f"{key}.json"


def _stamp(info: os.stat_result) -> list[int]:
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


stamp_of = _stamp  # (a journal's stamp as the caches keep it, for a scan made elsewhere)


def _on_file(path: Path, read, missing=None):
    """``read(fd)`` on ``path`` opened read-only (never blocking on a FIFO); ``missing`` when there
    is no such file, None on any other OSError."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return missing
    except OSError:
        return None
    try:
        return read(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def _sha256_of(fd: int, start: int, end: int) -> str | None:
    """sha256 of bytes [start, end) of an open file; None when fewer are there."""
    data = os.pread(fd, end - start, start)
    return hashlib.sha256(data).hexdigest() if len(data) == end - start else None


def _probe(path: Path, entry: dict | None = None) -> tuple[list[int] | None, str | None]:
    """Return the stamp of ``path`` and, when it matches ``entry``'s (or there is no entry), the
    sha256 of its last TAIL_BYTES, both from one open file: the hash is of the file stat'ed."""
    def read(fd):
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, None
        stamp = _stamp(info)
        if entry is not None and entry.get("stamp") != stamp:
            return stamp, None
        return stamp, _sha256_of(fd, max(info.st_size - TAIL_BYTES, 0), info.st_size)

    return _on_file(path, read) or (None, None)


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


# -- facts: layout dataclasses to JSON and back ------------------------------------------------

def _encode_value(value: object) -> tuple[str | None, object]:
    if isinstance(value, (set, frozenset)):
        return "set", sorted(value, key=repr)
    if isinstance(value, bytearray):
        return "bytearray", binascii.b2a_base64(value, newline=False).decode()
    if isinstance(value, tuple):
        return "tuple", list(value)
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return "tuples", [list(v) for v in value]
    return None, value


_DECODE = {"set": set, "bytearray": lambda v: bytearray(binascii.a2b_base64(v)), "tuple": tuple,
           "tuples": lambda v: [tuple(x) for x in v]}


def encode_facts(facts: object) -> dict | None:
    """Return ``facts`` as JSON-ready data, or None when it would not come back equal."""
    if facts is None:
        return {"class": None}
    cls = type(facts)
    if not dataclasses.is_dataclass(facts) or not cls.__module__.startswith("toolkit.layouts."):
        return None
    fields, tags = {}, {}
    for f in dataclasses.fields(facts):
        tag, fields[f.name] = _encode_value(getattr(facts, f.name))
        if tag:
            tags[f.name] = tag
    doc = {"class": f"{cls.__module__}:{cls.__qualname__}", "fields": fields, "tags": tags}
    try:
        if decode_facts(loads(dumps(doc))) != facts:  # (as the cache file will hold them: a path need not be UTF-8)
            return None
    except (TypeError, ValueError, KeyError, AttributeError, orjson.JSONEncodeError):
        return None
    return doc


@functools.lru_cache(maxsize=None)
def _facts_class(name: str) -> type:
    module, _, qualname = name.partition(":")
    if not module.startswith("toolkit.layouts."):
        raise ValueError(f"facts class {name!r} is not a layout's")
    cls = getattr(importlib.import_module(module), qualname)
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"{name!r} is not a facts class")
    return cls


def decode_facts(doc: dict) -> object:
    if doc["class"] is None:
        return None
    cls = _facts_class(doc["class"])
    fields = dict(doc["fields"])
    for key, tag in doc["tags"].items():
        fields[key] = _DECODE[tag](fields[key])
    return cls(**fields)


# -- entries -----------------------------------------------------------------------------------

def _encode_scan(scan: JournalScan, stamp: list[int], tail: str, read_ns: int, strict: bool,
                 prefix: str | None = None, lean: bool = False) -> dict | None:
    where = str(scan.path)
    if any(f.path != where for f in scan.findings):
        return None
    facts = encode_facts(_lean_facts(scan.facts) if lean else scan.facts)
    if facts is None:
        return None
    entry = {"layout": scan.layout.name, "strict": strict, "stamp": stamp, "tail_sha256": tail, "read_ns": read_ns,
             "records": scan.records, "body_end": scan.body_end, "tail": scan.tail.value, "foreign": scan.foreign,
             "findings": [[f.code, f.severity, f.line, f.offset, f.message, f.excerpt] for f in scan.findings],
             "facts": facts}
    state = scan.resume_state
    if state is not None and prefix is not None and len(state[0]) <= max(RESUME_MIN, scan.size // RESUME_SHARE):
        entry["resume"] = {"at": state[1], "prefix_sha256": prefix}  # the state itself: in the sidecar file
    return entry


def _lean_facts(facts: object) -> object:
    """``facts`` as a lean cache keeps them: of the meta record, only what an index entry reads of it
    (:data:`~toolkit.index.ENTRY_META`), before the facts are encoded and checked.  Its source row
    (``raw``: a Codex rollout's session_meta made most of the work of remembering each journal, in the
    import's parent while its workers wrote) and its ``source`` are left out: an import of 8,000
    sessions into one project folder held 8,000 scans at its settle, each with its meta."""
    from ..index import ENTRY_META

    meta = getattr(facts, "meta", None)
    if isinstance(meta, dict) and not meta.keys() <= ENTRY_META and dataclasses.is_dataclass(facts):
        return dataclasses.replace(facts, meta={k: v for k, v in meta.items() if k in ENTRY_META})
    return facts


def held_scan(scan: JournalScan, lean: bool) -> JournalScan:
    """:meth:`IncrementalCache.held` of a cache that is ``lean`` or not."""
    facts = _lean_facts(scan.facts) if lean else scan.facts
    if facts is scan.facts and scan.resume_state is None:
        return scan
    return dataclasses.replace(scan, facts=facts, resume_state=None)


def lean_scan(scan: JournalScan) -> JournalScan:
    """``scan`` as a lean cache (the import's memo) keeps it: facts without the meta record's source
    row, its reader state a :func:`~toolkit.journal.lean_checkpoint`.  What an import's worker gives
    its parent to remember: the whole scan, pickled, was 18 kB a Codex rollout, 15 of them the
    session_meta row the parent then left out (15 MB through the pipes of a 400 MB import)."""
    facts = _lean_facts(scan.facts)
    state = scan.resume_state
    if state is not None:
        from ..journal import lean_checkpoint

        state = (lean_checkpoint(state[0]), state[1])
    if facts is scan.facts and state is scan.resume_state:
        return scan
    return dataclasses.replace(scan, facts=facts, resume_state=state)


def _prefix_hash(path: Path, end: int) -> str | None:
    """sha256 of the (up to) TAIL_BYTES before ``end``: the end of the verified prefix."""
    return _on_file(path, lambda fd: _sha256_of(fd, max(end - TAIL_BYTES, 0), end))


def _decode_scan(entry: dict, journal: Path) -> JournalScan:
    where = str(journal)
    _dev, _ino, size, mtime_ns, _ctime = entry["stamp"]
    return JournalScan(
        path=journal, layout=get_layout(entry["layout"]), size=size, mtime_ns=mtime_ns,
        records=entry["records"], body_end=entry["body_end"], tail=TailState(entry["tail"]),
        findings=tuple(Finding(code, severity, where, line, offset, message, excerpt)
                       for code, severity, line, offset, message, excerpt in entry["findings"]),
        facts=decode_facts(entry["facts"]), foreign=entry["foreign"])


class IncrementalCache:
    """The cache of one check run: look journals up before scanning, record scans after."""

    def __init__(self, strict: bool, *, root: Path | None = None, racy_ns: int | None = None, lean: bool = False) -> None:
        """``root``: another folder of the user's cache (``import`` keeps its own, for the indexes it
        rebuilds); ``racy_ns``: how close to its read a journal's change makes its entry untrusted;
        ``lean``: the facts kept, and the reader states (:func:`~toolkit.journal.lean_checkpoint`),
        leave out the source row (``raw``) of each journal's meta record, for
        a cache whose scans only make index entries (``import``'s: a Cursor chat's meta record holds
        its composer's row, and thousands of them were most of an import's memory)."""
        self.strict = strict
        self.lean = lean
        self.root = cache_dir() if root is None else root
        self._racy_ns = racy_ns
        self.where: dict[Path, Path] = {}      # folder -> its cache file
        self.files: dict[Path, _Lines] = {}    # cache file -> {journal key: entry}
        self.states: dict[Path, _Lines] = {}   # cache file -> {journal key: base64 reader state}, read when needed
        self.verdicts: dict[Path, dict] = {}   # cache file -> the folder's index.json / meta.json verdict
        self.hit: set[Path] = set()            # journals this run took from the cache
        # journal key -> (its stamp, when it was read) of each entry made this run: a lookup of it in the
        # same run is a stat, not a read and hash of its tail (no scan is held: memory stays flat)
        self.fresh: dict[str, tuple[list, int]] = {}
        self.dirty: set[Path] = set()
        self.before: dict[Path, tuple] = {}  # journal -> (cache file, its key, stamp before the scan, when)
        self.hits = 0
        self._counting = threading.Lock()  # (reindex reads folders from several threads: counts are never lost)
        self.resumed = 0  # journals that had only grown: read from where the last check stopped
        self.error: str | None = None
        self._blobs = Blobs()  # each new entry and state line, held until the save: past a few MiB, in a temporary file

    @property
    def racy_ns(self) -> int:
        return RACY_NS if self._racy_ns is None else self._racy_ns

    def _entries(self, folder: Path) -> tuple[Path, dict]:
        where = self.where.get(folder)
        if where is None:
            where = self.where[folder] = cache_file(folder, self.root)
        if where not in self.files:
            self.files[where], self.verdicts[where] = _load(where, self._blobs.keep)
        return where, self.files[where]

    def lookup(self, folder: Path, journal: Path, layout_name: str) -> JournalScan | None:
        """Return the cached scan of ``journal`` if nothing about it changed since; else None
        (and remember its stamp, taken before the scan, for :meth:`record`)."""
        where, entries = self._entries(folder)
        key = os.path.abspath(journal)
        read_ns = time.time_ns()
        entry = entries.get(key)
        if not isinstance(entry, dict):
            entry = None
        stamp = tail = None
        fresh = self.fresh.get(key)
        if fresh is not None and entry is not None:  # recorded this run: while it is the same file, as it was
            with contextlib.suppress(OSError):
                now = _stamp(os.stat(journal))
                if now == fresh[0] and now[4] < fresh[1] - self.racy_ns:  # (racy: judged as below, read again)
                    stamp, tail = now, entry.get("tail_sha256")  # (its tail is the one hashed when it was recorded)
        if stamp is None:
            stamp, tail = _probe(journal, entry or {})
        self.before[journal] = (where, key, stamp, read_ns)
        if entry is None or tail is None:
            return None
        try:
            if (entry["layout"] != layout_name or entry["strict"] != self.strict
                    or stamp[4] >= entry["read_ns"] - self.racy_ns or tail != entry["tail_sha256"]):
                return None
            scan = _decode_scan(entry, journal)
        except (KeyError, TypeError, ValueError, AttributeError, ImportError):
            return None
        with self._counting:
            self.hits += 1
        self.hit.add(journal)
        return scan

    def unknown(self, folder: Path, journals: list[Path]) -> list[Path]:
        """Those of ``journals`` (of ``folder``) this cache holds nothing of."""
        _where, entries = self._entries(folder)
        return [journal for journal in journals if os.path.abspath(journal) not in entries]

    def kept(self, folder: Path, journal: Path, layout_name: str) -> tuple[list[int], JournalScan] | None:
        """The scan this cache holds of ``journal`` and the stamp it was taken at, as they are,
        without looking at the journal (what it was when last read: an import's reindex derives
        the index entry that read gave, to find it in a vouched index); None when it holds none."""
        _where, entries = self._entries(folder)
        entry = entries.get(os.path.abspath(journal))
        try:
            if entry["layout"] != layout_name or entry["strict"] != self.strict:
                return None
            return list(entry["stamp"]), _decode_scan(entry, journal)
        except (KeyError, TypeError, ValueError, AttributeError, ImportError):
            return None

    # -- the folder's index.json / meta.json verdict ------------------------------------------

    def _journals_key(self, journals: list[Path]) -> str | None:
        """A hash of the journals a cache verdict was judged on, each with its stamp; None when
        one was not looked up this run."""
        digest = hashlib.sha256()
        for journal in journals:
            before = self.before.get(journal)
            if before is None or before[2] is None:
                return None
            digest.update(dumps([before[1], before[2]]))
        return digest.hexdigest()

    def cache_verdict(self, folder: Path, layout_name: str, cache: Path, journals: list[Path]) -> tuple[Finding, ...] | None:
        """The last run's findings on ``folder``'s cache file, when nothing they were judged on
        changed: every journal came from the cache this run, they are the same journals, and the
        cache file has the same stamp and bytes.  Else None: judge it again."""
        where, _entries = self._entries(folder)
        verdict = self.verdicts.get(where)
        if not verdict or not all(j in self.hit for j in journals):
            return None
        try:
            probe = _whole_probe(cache)
            if (probe is None or verdict["layout"] != layout_name or verdict["strict"] != self.strict
                    or verdict["cache"] != str(cache) or verdict["journals"] != self._journals_key(journals)
                    or verdict["probe"] != probe):
                return None
            return tuple(Finding(*fields) for fields in verdict["findings"])
        except (KeyError, TypeError, ValueError):
            return None

    @staticmethod
    def probe_cache_file(cache: Path) -> list | None:
        """Stamp and sha256 of a folder's cache file, taken before it is judged (see remember_verdict)."""
        return _whole_probe(cache)

    def remember_verdict(self, folder: Path, layout_name: str, cache: Path, journals: list[Path],
                         findings: tuple[Finding, ...], probe: list | None) -> None:
        """Keep the findings on ``folder``'s cache file, judged on ``journals`` and on the cache
        file as ``probe`` found it before it was read, if it held still and is not racy."""
        where, _entries = self._entries(folder)
        key = self._journals_key(journals)
        keep = (key is not None and probe is not None and _whole_probe(cache) == probe
                and (probe == ["missing"] or probe[0][4] < time.time_ns() - RACY_NS))
        verdict = ({"layout": layout_name, "strict": self.strict, "cache": str(cache), "journals": key,
                    "probe": probe, "findings": [list(f) for f in findings]} if keep else None)
        if verdict != self.verdicts.get(where):
            self.verdicts[where] = verdict
            self.dirty.add(where)

    def resume_point(self, folder: Path, journal: Path, layout_name: str) -> tuple[bytes, int] | None:
        """For a journal that only grew since it was verified (same file, larger, the bytes at the
        end of the verified prefix unchanged): the reader's state there, and where to go on.
        Anything else (rewritten, truncated, replaced, racy, another layout or mode) is None: a
        full read."""
        where, entries = self._entries(folder)
        entry = entries.get(os.path.abspath(journal))
        stamp = self.before.get(journal, (None, None, None, None))[2]
        try:
            resume = entry["resume"]
            old = entry["stamp"]
            if (stamp is None or entry["layout"] != layout_name or entry["strict"] != self.strict
                    or stamp[:2] != old[:2] or stamp[2] <= old[2] or old[4] >= entry["read_ns"] - self.racy_ns):
                return None
            at = resume["at"]
            if not (isinstance(at, int) and 0 < at <= old[2]) or _prefix_hash(journal, at) != resume["prefix_sha256"]:
                return None
            state = self._states(where).get(os.path.abspath(journal))
            return (binascii.a2b_base64(state), at) if isinstance(state, str) else None
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def _states(self, where: Path) -> dict:
        if where not in self.states:
            self.states[where] = _load(_sidecar(where), self._blobs.keep)[0]
        return self.states[where]

    def record(self, journal: Path, scan: JournalScan | None, resumed: bool = False) -> None:
        """Remember a fresh scan, if the journal held still while it was read; forget it otherwise."""
        where, key, stamp, read_ns = self.before[journal]  # kept: PATHs may name a journal twice
        with self._counting:
            self.resumed += resumed and scan is not None
        self._keep(where, key, stamp, read_ns, *encoded_scan(journal, scan, stamp, read_ns, self.strict, self.lean))

    def _keep(self, where: Path, key: str, stamp: list | None, read_ns: int, entry: bytes | None, state: bytes | None) -> None:
        """The entry (and reader state) :func:`encoded_scan` made of a journal's scan, kept; None: forgotten."""
        entries = self.files[where]
        if entry is not None:
            self.fresh[key] = (stamp, read_ns)
        else:
            self.fresh.pop(key, None)
        states = self._states(where)  # (the lines as the files will hold them, made now: an import's parent makes them
        # while its workers write, not in the save that comes after them; a lookup parses one when asked, as if loaded)
        if state is not None:
            states[key] = self._blobs.keep(state)
        else:
            states.pop(key, None)
        if entry is None and key not in entries:
            return
        if entry is None:
            del entries[key]
        else:
            entries[key] = self._blobs.keep(entry)
        self.dirty.add(where)

    def held(self, scan: JournalScan) -> JournalScan:
        """``scan`` as a :meth:`lookup` of it would give it back: without its reader state, and its
        facts lean in a lean cache.  What a caller holding the scans of a whole folder keeps (an
        import's reindex of a folder of 800 Codex journals held each one's session_meta row and
        reader state: 45 MiB more, growing with the folder)."""
        return held_scan(scan, self.lean)

    def remember_scan(self, folder: Path, journal: Path, scan: JournalScan, stamp: list[int], read_ns: int) -> None:
        """Keep a scan made elsewhere (an import's worker, :func:`read_back`) as if this run had made it."""
        where, _entries = self._entries(folder)
        self.before[journal] = (where, os.path.abspath(journal), stamp, read_ns)
        self.record(journal, scan)

    def remember_encoded(self, folder: Path, journal: Path, encoded: Encoded) -> None:
        """:meth:`remember_scan` of a scan an import's worker made into what this cache keeps of it
        (:func:`encoded_scan`, with the memo's own ``strict`` and ``lean``)."""
        where, _entries = self._entries(folder)
        key = os.path.abspath(journal)
        self.before[journal] = (where, key, encoded.stamp, encoded.read_ns)
        self._keep(where, key, encoded.stamp, encoded.read_ns, encoded.entry, encoded.state)

    def forget_missing(self, folder: Path, journals: list[Path]) -> None:
        """Drop entries of journals a whole folder no longer holds."""
        where, entries = self._entries(folder)
        present = {os.path.abspath(j) for j in journals}
        for key in [k for k in entries if k not in present]:
            del entries[key]
            self._states(where).pop(key, None)
            self.fresh.pop(key, None)
            self.dirty.add(where)

    def save(self) -> None:
        """Write every changed cache file atomically; a failure is noted, never raised."""
        if not self.dirty:
            return
        try:
            durable.ensure_dir(self.root)
            writes: list[tuple[Path, bytes]] = []
            for where in sorted(self.dirty):
                head = {"format": FORMAT, "levelsess": __version__}
                if where in self.states:  # renamed first: an entry never points at a state not yet saved
                    entries = self.files[where]
                    states = {k: v for k, v in dict.items(self.states[where]) if k in entries}
                    writes.append((_sidecar(where), _pieces(dumps(head), states)))
                if self.verdicts.get(where):
                    head["verdict"] = self.verdicts[where]
                writes.append((where, _pieces(dumps(head), self.files[where])))
            remove_dead_temps(*(path for path, _data in writes))  # what a run killed mid-write left
            durable.atomic_writes(writes)  # (their fsyncs at once: an import's settling saves one pair a folder)
        except (LevelsessError, OSError) as exc:
            self.error = f"the incremental-check cache could not be written: {exc}"
        self.dirty.clear()


class Encoded(NamedTuple):
    """What a cache keeps of one journal's scan (:func:`encoded_scan`), made where the journal was
    written: an import's worker sends it to the parent, which keeps it as it is
    (:meth:`IncrementalCache.remember_encoded`), not the scan to be pickled, unpickled and encoded there."""

    stamp: list | None
    read_ns: int
    entry: bytes | None  # None: the journal did not hold still (nothing is kept of it)
    state: bytes | None  # its reader state's line, when the entry keeps one to resume from


def encoded_scan(journal: Path, scan: JournalScan | None, stamp: list | None, read_ns: int, strict: bool,
                 lean: bool) -> tuple[bytes | None, bytes | None]:
    """The entry a cache keeps of ``scan`` (as its file holds it) and the line of its reader state,
    when the journal held still since ``stamp`` (taken before it was read) and is the one scanned;
    else ``(None, None)``.  Reads the journal's stamp and last bytes again (and those before where
    its state resumes)."""
    if scan is None or stamp is None:
        return None, None
    if lean and scan.resume_state is not None:  # (one a worker made is lean already)
        from ..journal import lean_checkpoint

        scan = dataclasses.replace(scan, resume_state=(lean_checkpoint(scan.resume_state[0]), scan.resume_state[1]))
    after, tail = _probe(journal)
    if not (after == stamp and tail and (stamp[2], stamp[3]) == (scan.size, scan.mtime_ns)):
        return None, None
    at = scan.resume_state[1] if scan.resume_state else None  # (at the end: the tail just hashed)
    prefix = None if at is None else tail if at == stamp[2] else _prefix_hash(journal, at)
    entry = _encode_scan(scan, stamp, tail, read_ns, strict, prefix, lean)
    if entry is None:
        return None, None
    state = b'"' + binascii.b2a_base64(scan.resume_state[0], newline=False) + b'"' if "resume" in entry else None  # (base64 is a JSON string as it is)
    return bytes(memoryview(dumps(entry))), state  # (a copy of its size: orjson's bytes hold ~8 kB each)


def read_back(journal: Path, layout_name: str = "levelcode") -> tuple[JournalScan, list[int], int] | None:
    """A journal just written, read as ``reindex`` reads it (with a checkpoint to go on from), with
    its stamp taken before: what :meth:`IncrementalCache.remember_scan` of the import's lean memo
    keeps (:func:`lean_scan`); None if it cannot be read."""
    from ..journal import scan_journal

    read_ns = time.time_ns()
    stamp, _tail = _probe(journal)
    if stamp is None:
        return None
    try:
        return lean_scan(scan_journal(journal, layout_name, checkpoint=True)), stamp, read_ns
    except LevelsessError:
        return None


def _sidecar(where: Path) -> Path:
    """The file beside a folder's cache that holds its journals' reader states (read only when a
    journal grew, so an unchanged store's check never loads them)."""
    return where.with_name(where.stem + ".states.json")


class _Lines(dict):
    """A cache file's entries (or reader states) by journal key, each kept as its line's bytes and
    parsed when asked for: a grown import looks up the few journals that changed, not every one (a
    Codex home of 814 rollouts: 3 MB of memo parsed and written again for the 81 that grew), and
    :func:`_dump` writes every line back as it is, not encoded again (an import's settle looks up
    each journal it just wrote once; nothing changes a value in place: a new one is set whole)."""

    __slots__ = ()

    def get(self, key, default=None):
        value = dict.get(self, key, default)
        if type(value) is Blob:
            value = bytes(value)
        if type(value) is bytes:
            try:
                return loads(value)
            except ValueError:  # (a damaged line: as if the journal had no entry)
                dict.__delitem__(self, key)
                return default
        return value

    def __getitem__(self, key):
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        return value


_ABSENT = object()


def _dump(head: dict, values: dict) -> bytes:
    """A cache file: ``head`` (its format, version and verdict) on the first line, then a line a
    journal, ``<its key as JSON><TAB><its value as JSON>`` (no JSON text holds a raw tab or newline)."""
    return b"".join(_pieces(dumps(head), values))  # (the encoder that never fails, and the parser that reads it back)


def _pieces(head: bytes, values: dict) -> Iterator[bytes]:
    """:func:`_dump`'s bytes in pieces, each entry as it is held (``head``: its line, made): a save
    writes them without a copy of the whole (8,000 journals' entries, joined, took 27 MiB more at the
    end of an import, its peak)."""
    yield head
    for key, value in dict.items(values):
        yield b"\n" + dumps(key) + b"\t"
        yield value if type(value) is bytes else bytes(value) if type(value) is Blob else dumps(value)
    yield b"\n"


def _load(where: Path, keep: Callable[[bytes], bytes | Blob] | None = None) -> tuple[_Lines, dict | None]:
    """Return a cache file's entries (each parsed when asked for) and its folder verdict; a
    missing, unreadable, corrupt or stale file has neither.  ``keep``: where each entry's line is
    held (:meth:`Blobs.keep`)."""
    head, entries = _read(where, keep)
    verdict = head.get("verdict") if head is not None else None
    return entries, (verdict if isinstance(verdict, dict) else None)


#: A cache file larger than this is read a block at a time, each entry's line held as ``keep``
#: gives it back (:func:`_read`): the memo of a folder of 12,000 sessions is 15 MB, and a settle
#: holds the memo of every folder it touched (29 MiB of 21,600 journals' lines), where a whole
#: read and its lines were twice the file's size at once.
READ_WHOLE = 1 << 20


def _read(where: Path, keep: Callable[[bytes], bytes | Blob] | None = None) -> tuple[dict | None, _Lines]:
    """A cache file's head and its entries; (None, nothing) for a missing, unreadable, corrupt or
    stale file.  ``keep``: each entry's line is held as it gives it back (the bytes, or a
    :class:`Blob` of them), and a file larger than :data:`READ_WHOLE` is read a block at a time."""
    try:
        with open_regular(where, buffered=False) as handle:
            if keep is None or os.fstat(handle.fileno()).st_size <= READ_WHOLE:
                return _lines_of(handle.readall(), keep)
            return _lines_of(_blocks(handle), keep)
    except (OSError, LevelsessError):
        return None, _Lines()


#: What :func:`_blocks` reads at a time.
BLOCK = 1 << 20


def _blocks(handle) -> Iterator[bytes]:
    while block := handle.read(BLOCK):
        yield block


def _lines_of(data: bytes | Iterator[bytes], keep: Callable[[bytes], bytes | Blob] | None) -> tuple[dict | None, _Lines]:
    """:func:`_read` of a file's bytes, whole or in blocks."""
    lines = _split(data) if type(data) is not bytes else iter(data.split(b"\n"))
    head = next(lines, b"")
    try:
        doc = loads(head)
    except ValueError:
        return None, _Lines()
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("levelsess") != __version__:
        return None, _Lines()
    entries = _Lines()
    last = None
    for line in lines:
        if last is not None:
            key, tab, value = last.partition(b"\t")
            try:
                key = loads(key)
            except ValueError:
                key = None
            if not tab or type(key) is not str:  # not a line this build writes: the file is not trusted at all
                return None, _Lines()
            dict.__setitem__(entries, key, keep(value) if keep is not None else value)
        last = line
    if last != b"":  # (what follows the last newline: a file that does not end with one is not one this build wrote)
        return None, _Lines()
    return doc, entries


def _split(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The pieces ``b"".join(blocks).split(b"\n")`` gives, without joining the blocks."""
    rest = b""
    for block in blocks:
        pieces = (rest + block).split(b"\n") if rest else block.split(b"\n")
        rest = pieces.pop()
        yield from pieces
    yield rest


def read_file(path: Path) -> dict | None:
    """A cache file as one document, every line parsed: its head (format, version, verdict) with
    ``journals``, each journal's value by its key; None when this build would not use it (for
    tests and tools: a run parses only the lines it asks for)."""
    head, entries = _read(path)
    if head is None:
        return None
    journals = {key: entries.get(key) for key in list(entries)}
    return {**head, "journals": {key: value for key, value in journals.items() if value is not None}}


def write_file(path: Path, doc: dict) -> None:
    """Write ``doc`` (as :func:`read_file` gives it) as a cache file, through :mod:`toolkit.durable`."""
    head = {key: value for key, value in doc.items() if key != "journals"}
    durable.atomic_write(path, _dump(head, doc.get("journals", {})))


def _whole_probe(path: Path) -> list | None:
    """[stamp, sha256 of every byte] of a small file, from one open file; ["missing"] when there
    is none (a folder without index.json is judged on that too); None when it cannot vouch for it
    (unreadable, not a regular file, too big, short read)."""
    def read(fd):
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > WHOLE_PROBE_MAX:
            return None
        digest = _sha256_of(fd, 0, info.st_size)
        return None if digest is None else [_stamp(info), digest]

    return _on_file(path, read, missing=["missing"])
