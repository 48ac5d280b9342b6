"""A re-import reads only the sources that changed since the last import (issue 27).

An import walks its source as *units*: the files one conversation is read from (a Claude Code
transcript with its subagents, a Codex rollout, a Gemini session; an importer without units is
one unit, its whole source).  After an import of one source (``--from APP --source DIR``) into a
store, levelsess keeps in the user's cache folder (``~/.cache/levelsess/import-cache/<store>/
<key>.json`` on Linux, written through :mod:`toolkit.durable`; never in the store or the source),
per unit, what the run saw and what the next import would report of it:

- each file the unit is read from, and each it depends on (Codex's thread names): device, inode,
  size, mtime, ctime and a BLAKE2b (128 bits) of its last 4 KiB;
- each journal the unit's sessions have in the store: its inode, size and mtime;
- whether each session's project folder existed (it decides "orphaned" and "not on this
  machine"), and the sessions the store has trashed;
- its outcomes and findings as a re-import would say them: a unit that found nothing new as it
  was; one whose journals this run wrote, and that met no finding, as ``unchanged``, holding the
  source keys the write left (:attr:`~toolkit.importers.output.Outcome.keys`);
- what resuming each of its sessions needs (a transcript that only grew is read on from where
  the last import stopped), after the units' entries (a line each, checked by its CRC-32, after
  the first, which holds the version and the trash): the lengths of the units' states on a line,
  then each unit's on a line of its own.  Two thirds of the file's bytes, which an import that
  finds nothing new never reads, and one that resumes a few units parses only theirs.

The next import of the same source into the same store, with the same options, compares each
unit with the disk.  When nothing of it differs, every file is as it was when it was read (a
rewrite in place changes ctime, which no one can set back; a file that grew or was cut changes
size; one replaced changes inode), and every journal as this tool left it, so reading it again
would find nothing new: the unit's outcomes and findings are reported as kept, and nothing is
read or written.  Anything else (one file, one journal, one folder) and the unit is read as
before; an option or a trash changes the key or the kept trash, and every unit is read.  A
cache that cannot be read, or of another version, is ignored.

Beside the cache file, ``<key>.listing.json`` keeps the listing that found the units (for an
importer that can make its units again from it: ``units_from``): each folder the listing looked in
(its device, inode, size, mtime and ctime, or that it was not there) and each file whose head it
read to tell whose a folder is (what it found).  The next import uses it, without listing a folder,
while every one of them is as it was (:func:`list_units`); a folder changed in the two seconds
before it was looked at may change again within the same tick of its clock, which its mtime would
not show, so such a listing is not kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from stat import S_ISREG
from typing import NamedTuple
from zlib import adler32, crc32

import orjson

from ..blobs import Blob
from ..digest import blake2b, sha256
from ..findings import Finding
from ..parse import loads
from ..places import user_cache_dir
from .base import Outcome

# (toolkit.durable is loaded by what writes the cache: an import that finds nothing new keeps the file as it is)

#: 3: a resume's Bloom filters hash with BLAKE2b (a state of 2 would answer wrongly); 4: the resume
#: states on a second line; 5: each unit's on a line of its own, after their lengths; 6: a file's
#: last bytes checked by CRC-32 and Adler-32 (:func:`stamp`); 7: each unit's entry on a line of its
#: own after the first (:func:`_head`; a file of 3 to 6 is read as it is, found under the same
#: name: :data:`NAMED`, and written again in this form)
VERSION = 7
NAMED = 3  # the version a cache file's name is made with (a file of 3 to 7 is found by a build of any)
FOLDER = "import-cache"
#: The statuses a re-import reports as they were.
SETTLED = frozenset({"unchanged", "trashed"})
#: The statuses whose journal this run wrote: a re-import reports them ``unchanged``.
WRITTEN = frozenset({"created", "updated"})
TAIL = 4096


class Unit(NamedTuple):
    """The files one conversation is read from (``files``, counted in the progress total), those
    it also depends on (``deps``), a stable ``key``, and what the importer needs to read it.  A
    file is a path, or its name as a string (a listing kept by the import cache: compared as one)."""

    key: str
    files: tuple[Path | str, ...]
    deps: tuple[Path | str, ...] = ()
    handle: object = None


class Later:
    """A kept unit's ``handle``, made by ``make(*args)`` when first unpacked or indexed: a kept
    listing's units keep the strings kept, and a re-import that finds nothing new unpacks none
    (issue 27: making paths of 800 units' names took a sixth of what one took, net of start-up)."""

    __slots__ = ("make", "args", "made")

    def __init__(self, make: Callable[..., tuple], *args) -> None:
        self.make, self.args, self.made = make, args, None

    def _made(self) -> tuple:
        if self.made is None:
            self.made = self.make(*self.args)
        return self.made

    def __iter__(self):
        return iter(self._made())

    def __getitem__(self, index: int):
        return self._made()[index]


def _key(app: str, source: Path, options, no_raw: bool, include_trashed: bool) -> str:
    what = _json([NAMED, app, os.path.abspath(source), repr(options), no_raw, include_trashed])  # (a path need not be UTF-8)
    return sha256(what).hexdigest()[:32]


def cache_path(store: Path, app: str, source: Path, options, no_raw: bool, include_trashed: bool) -> Path:
    """In the user's cache folder, never in the store or the source: a store holds journals only,
    and an import that finds nothing new writes nothing there."""
    where = sha256(os.path.abspath(store).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (Path(user_cache_dir()) / FOLDER / where
            / f"{_key(app, source, options, no_raw, include_trashed)}.json")


_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)  # (a FIFO never blocks a stamp)


def stamp(path: str, hashed: Callable[[bytes], object] | None = None) -> list | None:
    """What says a source file is the one read: identity, size, times, its last bytes (all of
    the one file opened; ``hashed``: how those bytes are hashed, when not as this build does).

    The last bytes are checked by their CRC-32 and Adler-32 (16 hex digits): beside the same
    device, inode, size and times to the nanosecond, what they guard against is a file rewritten in
    place whose size and times still match (a clock set back, a file system's coarse times), not an
    adversary; a 64-bit check of 4 KiB costs a quarter of a BLAKE2b, and a re-import that finds
    nothing new stamps every source file (issue 27: 3 ms of 50, 814 rollouts)."""
    try:
        fd = os.open(path, _OPEN)
    except OSError:
        return None
    return _stamp_open(fd, hashed)


def _stamp_open(fd: int, hashed: Callable[[bytes], object] | None = None) -> list | None:
    """:func:`stamp` of the file open as ``fd``, which it closes."""
    try:
        info = os.fstat(fd)
        last = os.pread(fd, TAIL, max(0, info.st_size - TAIL))
        tail = _check(last) if hashed is None else hashed(last)
    except (OSError, AttributeError):  # not a file that can be read at an offset (a FIFO, a folder; os.pread off Unix)
        return None
    finally:
        os.close(fd)
    return _mark(info, tail)


def _mark(info: os.stat_result, tail: object) -> list:
    """A source file's stamp (:func:`stamp`) of its stat and the check of its last bytes."""
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, tail]


#: Source files whose last bytes :func:`stamp_all` asks the disk for at once.
AHEAD = 64
_NOWAIT = getattr(os, "RWF_NOWAIT", None)  # (Linux: a read that gives what the page cache holds, or nothing)


def stamp_all(paths: list[str]) -> dict[str, list | None]:
    """:func:`stamp` of each of ``paths``.  A file whose last bytes the page cache holds is stamped
    at once; the disk is asked for the others' (``posix_fadvise`` WILLNEED, a hint), :data:`AHEAD`
    files at a time, before any of them is read.  A nightly import finds its sources out of the page
    cache: here, the 814 tails of a Codex home read one after another took 61-88 ms cold, 21-30 ms
    so; warm, 9.1 ms so against 8.4 ms one after another (a cached tail is read in one call that
    does not wait, as :func:`stamp` reads it)."""
    marks: dict[str, list | None] = {}
    buffer = memoryview(bytearray(TAIL))  # (one for every cached tail: each is checked, not kept)
    for start in range(0, len(paths), AHEAD):
        waiting: list[tuple[str, int]] = []
        try:
            for path in paths[start:start + AHEAD]:
                try:
                    fd = os.open(path, _OPEN)
                except OSError:
                    marks[path] = None
                    continue
                mark = _cached_stamp(fd, buffer)
                if mark is False:  # (not in the page cache: asked for, read below)
                    waiting.append((path, fd))
                else:
                    marks[path] = mark
            while waiting:
                path, fd = waiting.pop(0)
                marks[path] = _stamp_open(fd)
        finally:
            for _path, fd in waiting:  # (interrupted: none is left open)
                os.close(fd)
    return marks


def _cached_stamp(fd: int, buffer: memoryview) -> list | None | bool:
    """:func:`stamp` of the file open as ``fd`` (closed) when the page cache holds its last bytes
    (read into ``buffer``, of :data:`TAIL` bytes); else False, the disk asked for them (``fd`` left
    open for :func:`_stamp_open`)."""
    if _NOWAIT is None or not hasattr(os, "posix_fadvise"):
        return _stamp_open(fd)
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode):  # (a FIFO, a folder: as stamp says what it is)
            return _stamp_open(fd)
        start = max(0, info.st_size - TAIL)
        last = buffer[:min(TAIL, info.st_size)]
        got = os.preadv(fd, [last], start, _NOWAIT) if last else 0
    except BlockingIOError:  # (none of it cached)
        got = -1
    except OSError:  # (a file system without such reads: as stamp reads it)
        return _stamp_open(fd)
    if got == len(last):
        os.close(fd)
        return _mark(info, _check(last))
    try:
        os.posix_fadvise(fd, start, TAIL, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    return False


def _check(last: bytes) -> str:
    """This build's check of a file's last bytes (:func:`stamp`)."""
    return f"{crc32(last):08x}{adler32(last):08x}"


def journal_stamp(path: Path | str) -> list | None:
    """A journal's stamp as the cache keeps it (inode, size, mtime); None when it is not there."""
    try:
        return journal_mark(os.stat(path))
    except OSError:
        return None


def journal_mark(info: os.stat_result) -> list:
    """:func:`journal_stamp` of a journal whose stat is ``info``."""
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def units_of(importer, source: Path, report: Callable[[Finding], None]) -> list[Unit]:
    """The units of an import of ``source``: the importer's own (``units``), or the whole source as one."""
    listing = getattr(importer, "units", None)
    if listing is not None:
        return listing(source, report)
    try:
        files = tuple(Path(p) for p in importer.source_files(source))
    except Exception:  # noqa: BLE001 - a source that cannot be listed is read as before (scan says why)
        files = None
    return [Unit("*", files if files is not None else (), (), None if files is not None else False)]


def list_units(importer, source: Path, report: Callable[[Finding], None],
               kept: Kept) -> tuple[list[Unit], list[dict | None], dict | None, bool]:
    """The units of ``source``, their files' stamps (:func:`stamps`), the listing to keep for the
    next import (None: none to keep), and whether it is the one kept.

    The kept listing is used, without listing a folder, when every folder the last listing looked
    in is as it was then (the same inode, size, mtime and ctime: an entry added, removed or renamed
    changes its folder's, and what changed in the two seconds before it was looked at is not
    kept), and every file whose head it read to tell whose a folder is tells the same again.  The
    units are then what the importer makes of the kept ones (``units_from``), and each is
    compared with the disk as always.  Anything else is listed as it always is; a listing that
    reported a finding (a folder it could not read) is not kept."""
    from ..layouts.base import LOOKED, look_stamp, still

    listing = kept.listing
    rebuild = getattr(importer, "units_from", None)
    units = None
    if rebuild is not None and _well_formed(listing, source) and all(still(p, mark) for p, mark in listing["looked"].items()):
        units = rebuild(source, [(key, files, deps) for key, files, deps in listing["units"]])  # (None: not as this build makes them)
    listed = units is not None
    if not listed:
        seen: dict = {}
        found: list[Finding] = []
        token = LOOKED.set(seen)
        try:
            seen[str(source)] = look_stamp(source)
            units = units_of(importer, source, lambda finding: (found.append(finding), report(finding)))
        finally:
            LOOKED.reset(token)
        keep = rebuild is not None and not found and all(mark is not None for mark in seen.values())
        listing = {"looked": seen, "units": [[unit.key, [str(p) for p in unit.files], [str(p) for p in unit.deps]]
                                             for unit in units]} if keep else None
    shared: dict = {}
    ahead = stamp_all([str(path) for unit in units if unit.handle is not False for path in unit.files])
    return units, [stamps(unit, shared, ahead) for unit in units], listing, listed


def _well_formed(listing: object, source: Path) -> bool:
    """A kept listing as :func:`list_units` writes it: the source among what it looked at, and each
    unit's key, files and deps as strings."""
    if not isinstance(listing, dict):
        return False
    looked, units = listing.get("looked"), listing.get("units")
    return (isinstance(looked, dict) and str(source) in looked and isinstance(units, list)
            and all(type(unit) is list and len(unit) == 3 and type(unit[0]) is str and type(unit[1]) is list
                    and type(unit[2]) is list and all(type(p) is str for p in unit[1] + unit[2]) for unit in units))


def scan_unit(importer, source: Path, unit: Unit, options, report: Callable[[Finding], None]) -> Iterator:
    if getattr(importer, "units", None) is not None:
        return importer.scan_unit(unit, options, report)
    return importer.scan(source, options, report)


def stamps(unit: Unit, shared: dict[str, list | str | None] | None = None,
           ahead: dict[str, list | None] | None = None) -> dict[str, list | None] | None:
    """The fingerprint of every file ``unit`` is read from or depends on; None when it cannot be
    listed.  ``shared``: the stamps of the files the units of one run depend on, taken once each
    (every rollout of a Codex home depends on its ``session_index.jsonl``); ``ahead``: the stamps
    of its files taken already (:func:`stamp_all`)."""
    if unit.handle is False:
        return None
    taken = stamp if not ahead else lambda path: ahead[path] if path in ahead else stamp(path)
    if len(unit.files) == 1:  # (the common unit: a rollout, a session file)
        name = str(unit.files[0])
        marks = {name: taken(name)}
    else:
        marks = {str(path): taken(str(path)) for path in sorted({str(p) for p in unit.files})}
    for path in sorted({str(p) for p in unit.deps} - marks.keys()) if unit.deps else ():  # a file it looks at that may well not be there
        mark = shared.get(path, False) if shared is not None else False
        if mark is False:
            mark = stamp(path) or ("absent" if not os.path.lexists(path) else None)
            if shared is not None:
                shared[path] = mark
        marks[path] = mark
    return marks


def sizes(unit: Unit, stamped: dict[str, list | None] | None) -> int:
    """The bytes of the unit's files (the import's progress total)."""
    total = 0
    for path in unit.files:
        mark = (stamped or {}).get(str(path)) or stamp(str(path))
        total += mark[2] if mark else 0
    return total


def _only_grown(entry: object, stamped: dict | None) -> tuple[str, int] | None:
    """(the one file of a kept unit ``entry`` that changed, the bytes it added) when it only grew
    (the same device and inode, larger) and no other file of the unit changed; else None."""
    before = entry.get("files") if isinstance(entry, dict) else None
    changed = _changed(before, stamped)
    if changed is None or len(changed) != 1:
        return None
    old, new = before[changed[0]], stamped[changed[0]]
    if not (isinstance(old, list) and isinstance(new, list) and len(old) > 2 and old[:2] == new[:2]
            and type(old[2]) is int and type(new[2]) is int and new[2] > old[2]):
        return None  # not the same file (device, inode), or not larger
    return changed[0], new[2] - old[2]


def _changed(kept: object, stamped: dict | None) -> list[str] | None:
    """The files of a unit whose stamps today are not the kept ones (:func:`_alike`); None when its
    files are not the ones kept (or either is unknown)."""
    if stamped is None or not isinstance(kept, dict) or kept.keys() != stamped.keys():
        return None
    if kept == stamped:  # (the common case: nothing changed)
        return []
    return [path for path, mark in stamped.items() if not _alike(path, kept[path], mark)]


def _alike(path: str, kept: object, mark: object) -> bool:
    """Whether a file's kept stamp and today's say the same file: equal, or the kept one an earlier
    build's, which hashed the file's last 4 KiB with BLAKE2b or, before, sha256 (32 hex digits where
    this build's check has 16), and those bytes hash so today: an upgrade reads no unchanged file again."""
    if kept == mark:
        return True
    if not (type(kept) is list and type(mark) is list and len(kept) == len(mark) == 6 and kept[:5] == mark[:5]
            and type(kept[5]) is str and len(kept[5]) == 32):
        return False
    return kept[5] in _earlier_tails(path, mark)


def _earlier_tails(path: str, mark: list) -> tuple[str, ...]:
    """Earlier builds' hashes of the file's last 4 KiB (BLAKE2b, sha256), of the file ``mark``
    stamps (none if it is not that one now)."""
    import hashlib  # (only an upgrade's first import asks: OpenSSL is a start-up cost, toolkit.digest)

    found = stamp(path, lambda last: last)
    if found is None or found[:5] != mark[:5]:
        return ()
    last = found[5]
    return blake2b(last, digest_size=16).hexdigest(), hashlib.sha256(last).hexdigest()[:32]


def _projects(outcomes: list[Outcome], known: dict[str, bool] | None = None) -> dict[str, bool]:
    """Whether each session's project folder exists (``known``: what was found of them already, filled in)."""
    return _found({o.project for o in outcomes if isinstance(o.project, str)}, known)


def _found(projects: set[str], known: dict[str, bool] | None = None) -> dict[str, bool]:
    """Whether each of these project folders exists, in order (``known``: what was found of them already, filled in)."""
    known = {} if known is None else known
    for project in projects:
        if project not in known:
            known[project] = os.path.isdir(project)
    return {project: known[project] for project in sorted(projects)}


def _head(path: Path) -> tuple[object, int, os.stat_result]:
    """The cache file's units (its first line, parsed, and in this build's form each unit's entry on
    a line of its own after it: :class:`_Units`, each parsed when asked for), the length of those
    lines with their newlines, and the file's stat.  Read mapped, parsed where it lies: reading 1.5 MB
    of it (814 rollouts) into new memory and joining the pieces took 1.9 ms, as long as the file's
    page faults, twice this."""
    import mmap

    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        try:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # empty, or a file system that maps nothing: read it
            line = _first_line(handle)
            value = loads(line)
            if not _units_follow(value):
                return value, len(line), info
            rest = line + handle.read()
            units, length = _with_units(rest, len(line), _Units(data=rest))
            return {**value, "units": units}, length, info
        with mapped:
            end = mapped.find(b"\n")
            length = end + 1 if end >= 0 else len(mapped)
            value = _parsed(mapped, 0, length)
            if not _units_follow(value):
                return value, length, info
            held = _Units(fd=os.dup(handle.fileno())) if hasattr(os, "pread") else _Units(data=mapped[:])  # (no pread: Windows)
            units, length = _with_units(mapped, length, held)
            return {**value, "units": units}, length, info


def _parsed(mapped, start: int, end: int) -> object:
    """The JSON of ``mapped[start:end]``, parsed where it lies."""
    view = memoryview(mapped)[start:end]
    try:
        try:
            return orjson.loads(view)
        except orjson.JSONDecodeError:  # (a lone surrogate, which loads' fallback reads: from bytes)
            return loads(bytes(view))
    finally:
        view.release()


def _units_follow(value: object) -> bool:
    """Whether a cache file's first line is this build's: its units on the lines after it."""
    return type(value) is dict and value.get("version") == VERSION and "units" not in value


def _with_units(data, start: int, units: _Units) -> tuple[_Units, int]:
    """The units of a cache file (``data``) whose first line ends at ``start``: a line ``[key,
    entry, check]`` each (:func:`_unit_line`), up to the first line that is no such line (their
    states' lengths, an object), and where that line starts.  Only each line's key is read here:
    held parsed, 12,000 units' entries were 38 MiB, and one document of them (11 MB) took orjson
    177 MiB to parse.  What follows the last unit is the resume states', damaged or not (a unit
    missing, or whose line is damaged, is read again); a key given twice is a ValueError (not a
    file this build wrote: nothing of it is used)."""
    while data[start:start + 1] == b"[":
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        key = _key_at(data, start, end)
        if key is None:
            break
        if key in units:
            raise ValueError("a unit given twice in the import cache")
        dict.__setitem__(units, key, (start, end))
        start = min(end + 1, len(data))
    return units, start


def _key_at(data, start: int, end: int) -> str | None:
    """The key of the unit line ``data[start:end]`` (``["<key>",{…}]``): its first string, up to the
    first quote not escaped; None when the line does not start so."""
    if data[start + 1:start + 2] != b'"':
        return None
    close = start + 1
    while True:
        close = data.find(b'"', close + 1, end)
        if close < 0:
            return None
        before = close - 1
        while data[before] == 0x5C:  # (a backslash: the quote is escaped when an odd number of them precede it)
            before -= 1
        if (close - 1 - before) % 2 == 0:
            break
    if data[close + 1:close + 3] != b",{":
        return None
    try:
        key = loads(bytes(data[start + 1:close + 1]))
    except ValueError:
        return None
    return key if type(key) is str else None


class _Units(dict):
    """A cache file's units in this build's form: each unit's key, and where its line is (the file
    stays open, its bytes as they were, until :meth:`close`); :meth:`get` parses a unit's line when
    asked for (the last one asked for is kept: a unit is asked for several times in a row).  A line
    that is not that unit's entry, or cannot be read, is no entry (the unit is read again)."""

    __slots__ = ("_fd", "_data", "_last")

    def __init__(self, fd: int | None = None, data: bytes | None = None) -> None:
        super().__init__()
        self._fd, self._data, self._last = fd, data, None

    def get(self, key, default=None):
        span = dict.get(self, key)
        if span is None:
            return default
        last = self._last
        if last is None or last[0] != key:
            last = self._last = (key, self._entry(key, *span))
        return last[1] if last[1] is not None else default

    def _entry(self, key: str, start: int, end: int) -> dict | None:
        try:
            line = self._data[start:end] if self._fd is None else os.pread(self._fd, end - start, start)
            found = loads(line)
        except (OSError, ValueError, TypeError):  # (TypeError: closed)
            return None
        if (type(found) is not list or len(found) != 3 or found[0] != key or type(found[1]) is not dict
                or type(found[2]) is not int):
            return None
        return found[1] if crc32(memoryview(line)[:line.rfind(b",")]) == found[2] else None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = self._data = self._last = None


def _unit_line(key: str, entry: dict) -> bytes:
    """A unit's line in the cache file: ``[key, entry, check]``, the check the CRC-32 of the bytes
    before it (a byte of the entry changed, a count or a title, would be said again as kept)."""
    line = _json([key, entry])[:-1]
    return b"%s,%d]" % (line, crc32(line))


def _first_line(handle) -> bytes:
    """The first line (with its newline) of the file ``handle`` reads, a MiB at a time (a buffered
    ``readline`` of a 400 kB line took 0.5 ms, eight times this)."""
    parts = []
    while True:
        block = handle.read(1 << 20)
        end = block.find(b"\n")
        if end >= 0 or not block:
            parts.append(block[:end + 1] if end >= 0 else block)
            return b"".join(parts)
        parts.append(block)


class Kept:
    """The cache of one source's last import: each unit's entry, usable when the trash is as it was."""

    def __init__(self, path: Path | None, trashed: set[str]) -> None:
        self.units: dict = {}
        self.listing: dict | None = None  # the folders the last listing looked at, and the units it found
        #: Whether each project folder exists, as the units are recalled before any is read (a folder
        #: one unit's import makes is looked at again by those after it): None once reading begins.
        self.folders: dict[str, bool] | None = {}
        self._resumes: dict = {}  # each unit's resume states, parsed (by unit key)
        self._later: tuple | None = None  # where the resume states are (the file, its stamp, the offset, its version):
        # read when one is first asked for (an import that finds nothing new never does)
        self._spans: dict[str, tuple[int, int]] = {}  # where each unit's line of states is in the file, until parsed
        self._file = None  # the cache file, open while its units' states are asked for (:meth:`hold`)
        self._keys: dict[str, object] = {}  # the kept unit_key of each unit recalled
        self.current = False  # the file is this build's (:meth:`as_kept`)
        if path is None:  # --reread
            return
        try:
            self.listing = loads(listing_path(path).read_bytes())
        except (OSError, ValueError):
            pass
        try:
            cached, length, info = _head(path)
        except (OSError, ValueError):
            return
        if (isinstance(cached, dict) and cached.get("version") in (3, 4, 5, 6, VERSION) and isinstance(cached.get("units"), dict)
                and sorted(cached.get("trashed", [])) == sorted(trashed)):
            self.units = cached["units"]
            self._later = (path, (info.st_ino, info.st_size, info.st_mtime_ns), length, cached["version"])
            self.current = cached["version"] == VERSION
            if cached["version"] == 3:  # an older build's file, its states in each unit: read as they are (an upgrade reads nothing again)
                self._resumes = {key: unit.pop("resume", None) for key, unit in self.units.items() if isinstance(unit, dict)}
                self._later = None

    def resumes(self, unit: Unit) -> object:
        """The unit's kept resume states (a dict by session id when the cache holds one), parsed when first asked for."""
        self.hold()
        key = unit.key
        if key not in self._resumes:
            line = self._line(self._spans.pop(key, None))
            self._resumes[key] = _states(line, (0, len(line)), key) if line is not None else None
        return self._resumes[key]

    def hold(self) -> None:
        """Open the cache file for the kept resume states, once (before the cache file goes:
        :func:`forget`; the file stays open, its bytes as they were, until :meth:`close`): the
        lengths of the units' lines of them are read now, and each unit's line when that unit's are
        first asked for.  Read whole, they were an import's peak (12,000 transcripts: 13 MB, twice)."""
        if self._later is None:
            return
        path, stamp, offset, version = self._later
        self._later = None
        try:
            handle = open(path, "rb")
        except OSError:  # gone: no state, so a grown file is read in full
            return
        try:
            info = os.fstat(handle.fileno())
            if (info.st_ino, info.st_size, info.st_mtime_ns) != stamp:  # not the file whose units were read
                return
            handle.seek(offset)
            if version == 4:  # an older build's file: every unit's states in one document
                try:
                    found = loads(handle.read())
                except ValueError:  # a damaged second line: as above
                    found = {}
                self._resumes = found if isinstance(found, dict) else {}
                return
            lengths = _first_line(handle)
            self._spans = _spans_at(lengths, offset + len(lengths), info.st_size)
            if self._spans:
                self._file, handle = handle, None
        except OSError:
            return
        finally:
            if handle is not None:
                handle.close()

    def _line(self, span: tuple[int, int] | None) -> bytes | None:
        """The line of the cache file at ``span`` (without its newline); None when it cannot be
        read or does not end there (not the file the lengths were read of)."""
        if span is None or self._file is None:
            return None
        start, end = span
        try:
            data = os.pread(self._file.fileno(), end - start + 1, start)
        except (OSError, AttributeError):  # (AttributeError: no pread, Windows; no states, so a grown file is read in full)
            return None
        return data[:-1] if len(data) == end - start + 1 and data[-1:] == b"\n" else None

    def close(self) -> None:
        """Let the cache file go (the kept entries and resume states cannot be read after)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if type(self.units) is _Units:
            self.units.close()

    def raw_states(self, unit: Unit) -> bytes | None:
        """The unit's line of resume states as the file holds it, while not parsed (what :meth:`as_kept`
        keeps again without parsing it)."""
        self.hold()
        return self._line(self._spans.get(unit.key))

    def recall(self, unit: Unit, stamped: dict | None) -> tuple[list[Outcome], list[Finding]] | None:
        """The unit's outcomes and findings, as kept, when nothing it depends on changed; else None (read it)."""
        entry = self.units.get(unit.key)
        if not isinstance(entry, dict) or _changed(entry.get("files"), stamped) != []:
            return None
        standing = _standing(entry, self.folders)
        if standing is None:
            return None
        self._keys[unit.key] = entry.get("unit_key")  # (asked for next, of every unit recalled: not parsed again)
        return standing[:2]

    def unit_key(self, unit: Unit) -> str | None:
        """The importer's ``unit_key`` of ``unit`` as the last import found it, if it kept one: the
        caller's to use only for a unit recalled (its files as they were then)."""
        if unit.key in self._keys:
            found = self._keys[unit.key]
        else:
            entry = self.units.get(unit.key)
            found = entry.get("unit_key") if isinstance(entry, dict) else None
        return found if isinstance(found, str) else None

    def as_kept(self, unit: Unit) -> Kept.Entry | None:
        """A recalled unit's entry to keep again, as the file holds it (with its resume states): what
        :func:`entry` would make of it, which :func:`remember` writes back without making it again
        (a grown import of 800 rollouts made and wrote again the 730 it recalled: 20 ms).  None when
        the file is another build's (made again, in this build's form)."""
        entry = self.units.get(unit.key)
        if not self.current or not isinstance(entry, dict):
            return None
        raw = self.raw_states(unit)
        if raw is not None:  # (never parsed: kept as the file holds it)
            return Kept.Entry(entry, raw)
        resume = self.resumes(unit)
        return Kept.Entry(entry, dict(resume) if isinstance(resume, dict) else {})

    class Entry(NamedTuple):
        """A unit's entry as the cache file holds it, and its resume states (:meth:`as_kept`): parsed,
        or its line of them as the file holds it."""

        kept: dict
        resume: dict | bytes

    def journals(self, unit: Unit) -> dict | None:
        """The stamps of the unit's journals as kept (a recalled unit keeps them, not today's)."""
        entry = self.units.get(unit.key)
        found = entry.get("journals") if isinstance(entry, dict) else None
        return dict(found) if isinstance(found, dict) else None

    def states(self, unit: Unit) -> dict:
        """What resuming the unit's sessions needs, as kept (a unit recalled keeps it for the next import)."""
        entry = self.units.get(unit.key)
        resume = self.resumes(unit) if isinstance(entry, dict) else None
        return dict(resume) if isinstance(resume, dict) else {}

    def grown(self, unit: Unit, stamped: dict | None, findings: bool = False) -> tuple[str, dict] | None:
        """(the one file of ``unit`` that only grew, the unit's entry) when nothing else it depends
        on changed, its journals are as kept and it met no finding (``findings``: or any, for an
        importer whose resume says again what a full read would, and checks the kept ones); else None."""
        entry = self.units.get(unit.key)
        if stamped is None or not isinstance(entry, dict) or (entry.get("findings") and not findings):
            return None
        resume = self.resumes(unit)
        if not resume or not isinstance(resume, dict):
            return None
        grew = _only_grown(entry, stamped)
        standing = _standing(entry) if grew is not None else None
        if standing is None:
            return None
        return grew[0], {"outcomes": standing[0], "findings": standing[1], "journals": standing[2], "resume": resume}

    def only_grown(self, unit: Unit, stamped: dict | None) -> tuple[str, int] | None:
        """(the one file of ``unit`` that only grew, the bytes it added: what a resume of it would
        read) when that file has the same device and inode and is larger, and no other file of it
        changed; else None.  :meth:`grown` decides whether it resumes."""
        return _only_grown(self.units.get(unit.key), stamped)

    def resumed_journals(self, unit: Unit) -> list[str]:
        """The journals a resume of ``unit`` would append to: those of its kept sessions that have a
        kept resume state (whose locks it takes)."""
        entry, states = self.units.get(unit.key), self.resumes(unit)
        if not isinstance(entry, dict) or not isinstance(entry.get("sessions"), list) or not isinstance(states, dict):
            return []
        return [s["path"] for s in entry["sessions"] if isinstance(s, dict) and s.get("id") in states and isinstance(s.get("path"), str)]

    def prior(self, unit: Unit) -> dict:
        """The kept resume states of ``unit``'s sessions whose journal is still as the state left it
        (one that keeps its journal's stamp under ``journal``), by session id: a full read may continue them."""
        entry = self.units.get(unit.key)
        resume = self.resumes(unit) if isinstance(entry, dict) else None
        if not isinstance(resume, dict):
            return {}
        if not any(isinstance(state, dict) and state.get("journal") is not None for state in resume.values()):
            return {}  # (an importer whose states keep no journal stamp: nothing to check the journals for)
        standing = _standing(entry)
        if standing is None:
            return {}
        found = {}
        for outcome in standing[0]:
            state = resume.get(outcome.id)
            if isinstance(state, dict) and state.get("journal") is not None and state["journal"] == standing[2].get(str(outcome.path)):
                found[outcome.id] = state
        return found


def _standing(entry: dict, folders: dict[str, bool] | None = None) -> tuple[list[Outcome], list[Finding], dict] | None:
    """A unit's kept outcomes, findings and journal stamps, when its journals are as this tool left
    them and its project folders are where they were; else None."""
    try:
        outcomes = [Outcome.kept(o) if _as_remembered(o) else _outcome(o) for o in entry["sessions"]]
        findings = [Finding(**f) for f in entry["findings"]]
        journals = entry["journals"]
        projects = {o["project"] for o in entry["sessions"] if isinstance(o["project"], str)}
    except (KeyError, TypeError, AttributeError):
        return None
    if any(journal_stamp(p) != mark for p, mark in journals.items()) or _found(projects, folders) != entry.get("projects"):
        return None
    return outcomes, findings, journals


def _as_remembered(value: object) -> bool:
    """Whether a kept session's fields are every field, as :func:`remember` writes them (its
    :class:`Outcome` is then made of them as they are, when first asked: :meth:`Outcome.kept`)."""
    if type(value) is not dict or value.keys() != _FIELDS or type(value["path"]) is not str:
        return False
    orphan, skipped = value["orphan"], value["skipped"]
    return (type(orphan) is list and type(skipped) is list
            and all(type(pair) is list and len(pair) == 2 and type(pair[1]) is int for pair in skipped))


def entry(stamped: dict | None, outcomes: list[Outcome], findings: list[Finding], resume: dict | None = None,
          journals: dict | None = None, key: str | None = None, unread: bool = False) -> dict | None:
    """What the next import of this unit reports when nothing of it changes, or None when that is
    known only by reading it again: an error, or a write whose keys were not counted.  (The caller
    passes no entry for a unit whose write met a finding of its own: a lock, a repaired tail.)
    Its journals' stamps are taken now, when the unit is done (``journals``: a recalled unit's, as
    kept): a journal another unit of the run writes later (a rollout's copy in archived_sessions)
    then differs at the next import, which reads this unit again and counts what it holds then.
    What reading the source found (a skipped mirror, a torn last line) is found again.  ``key``: the
    unit's, when its resume states are to be kept as the line the cache file holds them on (made here,
    in the worker that read the unit, not by the parent as it writes the file).  ``unread``: a source
    read as one unit (a Cursor database), whose sessions' states let the next read in full leave their
    journals unread (output.same_state): after an error (a NULL row, as real databases hold) the
    entry is kept for them, its files' stamps None, so that no import (of any build) recalls it."""
    if stamped is None or any(mark is None for mark in stamped.values()):
        return None
    if any(f.severity == "error" for f in findings):
        if not (unread and resume):
            return None
        stamped = dict.fromkeys(stamped)  # (never the stamp of a file: read again, always)
    kept = []
    for outcome in outcomes:
        if outcome.status in SETTLED:
            kept.append(outcome)
        elif outcome.status in WRITTEN and outcome.keys is not None:
            kept.append(outcome.replace(records=outcome.keys, new_records=0, status="unchanged"))
        else:
            return None
    return {"files": stamped, "outcomes": kept, "findings": findings,
            "resume": (bytes(memoryview(_json([key, resume]))) if key is not None else resume) if resume else {},  # (held until the run
            # ends: a copy of its size, where orjson's bytes hold 4-16 kB each, 124 MiB for 8,000 transcripts)
            "journals": journals if journals is not None else {str(o.path): journal_stamp(o.path) for o in kept
                                                                   if o.status == "unchanged"}}


def remember(path: Path, trashed: set[str], entries: dict) -> None:
    """Keep each unit's entry (or the call that makes it) for the next import (after the run's journals
    and indexes are durable).
    The file is written as it is made, a unit at a time: the whole of it, made first, was an import's
    peak (8,000 sessions: 14 MiB more at its very end)."""
    if not any(_kept(_made_now(value)) for value in entries.values()):
        forget(path)
        return
    from .. import durable

    durable.ensure_dir(path.parent)
    durable.atomic_write(path, _made(trashed, entries))


def _made_now(value: object) -> object:
    """A unit's entry, or the one the call given makes (a recalled unit's, made as the file is written)."""
    return value() if callable(value) else value


def _kept(value: object) -> bool:
    """Whether the cache file keeps a unit's entry: one was made, and every journal it wrote was stamped
    (one that could not be is read again next time).  A recalled unit's is kept as the file held it."""
    return value is not None and (type(value) is Kept.Entry or all(mark is not None for mark in value["journals"].values()))


def _made(trashed: set[str], entries: dict) -> Iterator[bytes]:
    """The cache file's bytes, as :func:`dump` makes them of the same units, a unit at a time."""
    resumes = {}
    found: dict[str, bool] = {}  # whether each project folder exists, looked at once (814 rollouts of one project: one stat)
    yield _json({"version": VERSION, "trashed": sorted(trashed)})
    for key, value in entries.items():
        value = _made_now(value)
        if not _kept(value):
            continue
        if type(value) is Kept.Entry:
            unit, resume = value
        else:
            outcomes, resume = value["outcomes"], value["resume"]
            unit = {"files": value["files"], "journals": value["journals"],  # (as the unit left them: one another unit
                    # wrote since is read again next time)
                    "projects": _projects(outcomes, found),
                    "sessions": [{**_fields(o), "path": str(o.path), "keys": None, "after": None} for o in outcomes],
                    "findings": [_fields(f) for f in value["findings"]]}
            if isinstance(value.get("unit_key"), str):  # (the importer's, read from the files as they are: Kept.unit_key)
                unit["unit_key"] = value["unit_key"]
        yield b"\n" + _unit_line(key, unit)
        if resume:
            resumes[key] = resume
    yield from _pieces(None, resumes)


def listing_path(path: Path) -> Path:
    """Where the listing of the source whose cache is ``path`` is kept: beside it, on its own (it
    holds for as long as the folders it looked at are as they were, whatever became of the units)."""
    return path.with_name(path.stem + ".listing.json")


def keep_listing(path: Path, listing: dict) -> None:
    """Keep a source's listing (:func:`list_units`) for the next import (the cache file at ``path``)."""
    from .. import durable

    durable.ensure_dir(path.parent)
    durable.atomic_write(listing_path(path), _json(listing))


def dump(document: dict, resumes: dict) -> bytes:
    """The cache file: its version and the trash on its first line, then each unit's entry on a
    line of its own (``[key, entry, check]``: :func:`_unit_line`; a document of an earlier version:
    its units on that line); then their resume states (two thirds of its bytes, which an import
    that finds nothing new never reads): the length of each unit's line of them, then each unit's
    line (``[key, states]``; ``states`` parsed, or its line as kept)."""
    return b"".join(_pieces(document, resumes))


def _pieces(document: dict | None, resumes: dict) -> Iterator[bytes]:
    """:func:`dump`'s bytes, in pieces (never joined); ``document`` None: those after its units."""
    lines = [states if type(states) in (bytes, Blob) else _json([key, states]) for key, states in resumes.items()]
    if document is not None and document.get("version") != VERSION:  # (an earlier build's: its units on its first line)
        yield _json(document)
    elif document is not None:
        yield _json({key: value for key, value in document.items() if key != "units"})
        for key, unit in document["units"].items():
            yield b"\n" + _unit_line(key, unit)
    yield b"\n"
    yield _json({key: len(line) for key, line in zip(resumes, lines)})
    yield b"\n"
    for line in lines:
        yield bytes(line) if type(line) is Blob else line  # (one at a time: read back from a temporary file)
        yield b"\n"


def load(path: Path) -> tuple[dict, dict]:
    """A cache file's units and every unit's resume states (a test reads and damages them)."""
    document, length, _info = _head(path)
    units = document.get("units") if isinstance(document, dict) else None
    if type(units) is _Units:
        document["units"] = {key: units.get(key) for key in units}
        units.close()
    data = path.read_bytes()
    lengths = data[length:].partition(b"\n")[0]
    spans = _spans_at(lengths, length + len(lengths) + 1, len(data))
    return document, {key: _states(data, span, key) for key, span in spans.items() if data[span[1]:span[1] + 1] == b"\n"}


def _spans_at(lengths: bytes, start: int, size: int) -> dict[str, tuple[int, int]]:
    """Where each unit's line of states is in a cache file of ``size`` bytes whose lines of them
    start at ``start``, from the lengths the file gives them (each line is checked to end with a
    newline as it is read: :meth:`Kept._line`, :func:`load`); none when they do not add up to the
    file's end."""
    try:
        found = loads(lengths)
    except ValueError:
        return {}
    spans = {}
    for key, length in found.items() if isinstance(found, dict) else ():
        if type(length) is not int or length < 0:
            return {}
        spans[key], start = (start, start + length), start + length + 1
    return spans if start == size else {}


def _states(raw: bytes, span: tuple[int, int], key: str) -> dict | None:
    """A unit's resume states from its line (``[key, states]``); None when it is not that unit's."""
    try:
        found = loads(raw[span[0]:span[1]])
    except ValueError:
        return None
    if type(found) is not list or len(found) != 2 or found[0] != key:
        return None
    return found[1]


def _json(document: dict | list) -> bytes:
    """One line of JSON (orjson and json never write a raw newline: one in a string is escaped)."""
    try:
        return orjson.dumps(document)
    except TypeError:  # a lone surrogate (a title cut mid-emoji): as a \u escape, which loads reads back
        return json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _fields(value) -> dict:
    """An outcome's or a named tuple's (a finding's) fields (their values are strings, numbers and
    tuples of them: no copy needed)."""
    if isinstance(value, tuple):
        return value._asdict()
    return value.fields()


def forget(path: Path) -> None:
    """Drop the cache (a run that did not finish: the next one reads everything; its listing holds)."""
    try:
        os.unlink(path)
    except OSError:
        pass


_FIELDS = frozenset(Outcome.FIELDS)


def _outcome(value: dict) -> Outcome:
    """The outcome a kept session's fields make (what :func:`remember` wrote: every field of
    :class:`Outcome`, ``path`` as a string, tuples as lists)."""
    value = {k: v for k, v in value.items() if k in _FIELDS}
    value["path"] = Path(value["path"])
    value["orphan"] = tuple(value.get("orphan", ()))
    value["skipped"] = tuple(tuple(pair) for pair in value.get("skipped", ()))
    return Outcome(**value)
