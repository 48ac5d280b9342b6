"""Remember which index.json bytes levelsess itself wrote or verified (DESIGN.md §2.3, §8).

``reindex`` and ``ls`` skip reading a folder's journals when its index can be trusted by
stat alone.  An index is only trusted when levelsess has vouched for its exact bytes: after
writing it, or after comparing it in full with the journals.  The voucher is a fingerprint
kept at ``<store>/.levelsess/verified/<folder>.json``:

* the index's sha256 and its (st_ino, st_size, st_mtime_ns, st_ctime_ns);
* (name, st_ino, st_size, st_mtime_ns, st_ctime_ns) of every journal it was derived from;
* the levelsess version that derived it (a new version may derive differently).

The trust test needs all of it to match exactly, the journal list included, and the index
bytes to hash to the recorded sha256.  An index edited by anyone else (an editor, a sync
tool, a person), a journal replaced or touched, added or removed: each changes something the
fingerprint holds, so the folder is scanned in full, as ``fsck`` would.  A missing, corrupt
or unreadable fingerprint only means "scan".  Only write commands call :func:`vouch`;
:func:`trusted_index` never writes.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path

from . import __version__, durable
from .errors import LevelsessError
from .index import Loaded, build_index, index_drift
from .journal import JournalScan
from .lines import dumps, loads, open_regular, read_regular
from .locks import process_start
from .layouts.base import Folder

VERIFIED = "verified"
FORMAT = 1


def fingerprint_path(folder: Folder) -> Path:
    """Return where the fingerprint of ``folder``'s index lives (one small file per folder)."""
    name = folder.path.name
    if len(name) > 200:  # stay under NAME_MAX with the suffix and durable's temp-name prefix
        import hashlib  # here, not at the top: a plain fsck never needs it (start-up, DESIGN.md §8)

        name = name[:180] + "-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return folder.state_dir / VERIFIED / f"{name}.json"


def _stamp(info: os.stat_result) -> list[int]:
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def journal_stamps(folder: Folder) -> list[list] | None:
    """Return [name, ino, size, mtime_ns, ctime_ns] per journal, by name; None if one cannot be stat'ed."""
    try:
        return [[j.name, *_stamp(os.stat(j))] for j in sorted(folder.journals, key=lambda p: p.name)]
    except OSError:
        return None


def _read_index(folder: Folder) -> tuple[bytes, list[int]] | None:
    """Return the index's bytes and the stamp of the very file they were read from."""
    try:
        with open_regular(folder.cache) as handle:
            return handle.read(), _stamp(os.fstat(handle.fileno()))
    except OSError:
        return None


def _document(folder: Folder, data: bytes, index_stamp: list[int], journals: list[list]) -> dict:
    import hashlib

    return {"format": FORMAT, "levelsess": __version__, "folder": folder.path.name,
            "index": [hashlib.sha256(data).hexdigest(), *index_stamp], "journals": journals}


def _load_fingerprint(folder: Folder) -> object:
    try:
        return loads(read_regular(fingerprint_path(folder)))
    except (OSError, ValueError):  # missing, unreadable or corrupt: nothing is vouched for
        return None


def trusted_index(folder: Folder) -> object | None:
    """Return the parsed index of ``folder`` if levelsess vouched for it and nothing changed since.

    None means "read the journals": no fingerprint, or the index or any journal differs from
    what it recorded.  Reads the fingerprint, one stat per file and the index itself; writes nothing.
    """
    return trusted(folder)[0]


def trusted(folder: Folder) -> tuple[object | None, list[list] | None]:
    """:func:`trusted_index`, and the journals' stamps it took (:func:`journal_stamps`; None when
    it took none): a reindex that goes on to bring the index up to date starts from them."""
    recorded = _fingerprint(folder)
    journals = journal_stamps(folder) if recorded is not None else None
    read = _read_index(folder) if journals is not None and journals == recorded.get("journals") else None
    if read is None:
        return None, journals
    data, index_stamp = read
    if _document(folder, data, index_stamp, journals) != recorded:  # the sha256 proves the bytes, not just the stat
        return None, journals
    loaded = _parse(data)
    return (loaded.value if loaded.state == "ok" else None), journals


def vouched(folder: Folder) -> tuple[dict[str, list], object, bytes] | None:
    """The journals' stamps (by name) levelsess last vouched ``folder``'s index on, and that index
    (parsed, and its bytes), when the index is still exactly the bytes vouched for (whatever the
    journals did since); else None.  Writes nothing."""
    recorded = _fingerprint(folder)
    read = _read_index(folder) if recorded is not None else None
    journals = recorded.get("journals") if recorded is not None else None
    if read is None or not isinstance(journals, list) or _document(folder, *read, journals) != recorded:
        return None
    loaded = _parse(read[0])
    try:
        stamps = {name: stamp for name, *stamp in journals}
    except (TypeError, ValueError):
        return None
    return (stamps, loaded.value, read[0]) if loaded.state == "ok" and len(stamps) == len(journals) else None


def _fingerprint(folder: Folder) -> dict | None:
    """``folder``'s fingerprint, when its layout's index may be vouched for and this levelsess wrote it."""
    if not folder.layout.vouchable or not folder.whole:
        return None
    recorded = _load_fingerprint(folder)
    if not isinstance(recorded, dict) or recorded.get("format") != FORMAT or recorded.get("levelsess") != __version__:
        return None
    return recorded


def _parse(data: bytes) -> Loaded:
    try:
        return Loaded("ok", loads(data))
    except ValueError:
        return Loaded("corrupt")


def vouch(folder: Folder, scans: list[JournalScan], known: bytes | None = None, kept: dict[str, list] | None = None) -> bool:
    """Record that ``folder``'s index matches ``scans``, if it does and they are still current.

    Called by the commands that write an index, after the write or after a full comparison.
    It re-reads the index and compares it with the journals' derived index itself, so it never
    vouches for bytes someone else put there in the meantime; a journal changed since it was
    scanned (size or mtime) is not vouched for either.  ``known``: bytes the caller already found
    to match ``scans`` (derived from them and written, or compared with them in full); an index
    that reads back as exactly those is not derived and compared a second time.  ``kept``: the
    journals not in ``scans``, by name, each with the stamp of the vouched index ``known`` was
    derived from (:func:`vouched`); each must still be at exactly that stamp, and the index exactly
    ``known``.
    Returns whether a fingerprint is on disk now.  A failure to write it is not the command's
    failure: the index is already right, and without a fingerprint the next run simply reads the
    journals.
    """
    if not folder.layout.vouchable or not folder.whole:
        return False
    journals = journal_stamps(folder)
    if journals is None or not _as_scanned(journals, scans, kept or {}):
        return False
    read = _read_index(folder)
    if read is None or (read[0] != known and (kept or index_drift(_parse(read[0]), *build_index(scans)) is not None)):
        return False
    document = _document(folder, read[0], read[1], journals)
    if _load_fingerprint(folder) == document:
        return True  # already on disk: a verify-only run rewrites nothing
    target, data = fingerprint_path(folder), dumps(document) + b"\n"
    held = _HELD.get()
    if held is not None:  # written when the enclosing :func:`held_fingerprints` block ends, as confined as here
        held[str(target)] = (target, data, durable.confinements())
        return True
    return _write_fingerprint(target, data)


def _write_fingerprint(target: Path, data: bytes) -> bool:
    try:
        with durable.new_dirs(target.parent):  # a fingerprint that does not fit leaves no empty folder
            remove_dead_temps(target)
            durable.atomic_write(target, data)
    except LevelsessError:
        return False
    return True


#: The fingerprints :func:`vouch` made within a :func:`held_fingerprints` block, by path, to write at its end:
#: (path, bytes, the confinements it was made under).
_HELD: contextvars.ContextVar[dict[str, tuple] | None] = contextvars.ContextVar("levelsess_fingerprints", default=None)


@contextlib.contextmanager
def held_fingerprints() -> Iterator[None]:
    """Within this block, :func:`vouch` computes each fingerprint as ever and holds it; they are all
    written when the block ends, their fsyncs at once (:func:`~toolkit.durable.atomic_writes`): a
    reindex of many folders wrote two small files a folder, one fsync after another.  A fingerprint
    only ever vouches for the index bytes and journal stamps it records (each checked when it is
    read), so writing it later than :func:`vouch` returned changes nothing it says; held, the
    block's vouches say True for a fingerprint not yet on disk.  When writing them together fails,
    each is written alone, a failure again not the command's (as :func:`vouch`).  A block that
    raises writes none: without a fingerprint, the next run reads the journals."""
    held: dict[str, tuple] = {}
    token = _HELD.set(held)
    try:
        yield
    finally:
        _HELD.reset(token)
    if held:
        write_fingerprints(list(held.values()))


def write_fingerprints(items: list[tuple]) -> None:
    """Write each (fingerprint path, bytes, confinements): all at once, or each alone when that fails."""
    if len(items) > 1:
        try:
            with contextlib.ExitStack() as stack:
                stack.enter_context(durable.confined(*dict.fromkeys(c for _t, _d, confined in items for c in confined)))
                for parent in dict.fromkeys(target.parent for target, _data, _confined in items):
                    stack.enter_context(durable.new_dirs(parent))  # (no empty folder left when they do not fit)
                remove_dead_temps(*(target for target, _data, _confined in items))
                durable.atomic_writes([(target, data) for target, data, _confined in items])
            return
        except (LevelsessError, OSError):
            pass
    for target, data, confined in items:  # (a full disk, a folder refused: what can be written, alone)
        with durable.confined(*confined):
            _write_fingerprint(target, data)


def _as_scanned(journals: list[list], scans: list[JournalScan], kept: dict[str, list]) -> bool:
    """True when the folder holds exactly the scanned journals, each at the size and mtime it was
    read at, and the ``kept`` ones, each at exactly its stamp."""
    by_name = {s.path.name: (s.size, s.mtime_ns) for s in scans}
    return (len(by_name) + len(kept) == len(journals) and not by_name.keys() & kept.keys()
            and all(by_name.get(name) == (size, mtime) if name in by_name else kept.get(name) == [ino, size, mtime, ctime]
                    for name, ino, size, mtime, ctime in journals))


def remove_dead_temps(*targets: Path) -> None:
    """Remove the temp files of writes to ``targets`` (a fingerprint, a cache) whose process was
    killed: one listing of each folder they are in."""
    by_folder: dict[Path, set[str]] = {}
    for target in targets:
        by_folder.setdefault(target.parent, set()).add(target.name)
    for folder, names in by_folder.items():
        try:
            with os.scandir(folder) as entries:
                dead = [Path(e.path) for e in entries if e.name.startswith(".") and _temp_of(e.name) in names
                        and (pid := durable.temp_owner(e.name)) is not None and process_start(pid) is None]
        except OSError:  # tidying is a courtesy; the write that follows reports a real problem
            continue
        for temp in dead:
            durable.remove(temp)


def _temp_of(name: str) -> str:
    """The name a temp file ``.NAME.PID.tmp`` (:func:`~toolkit.durable.temp_name`) is written for."""
    return name[1:].rsplit(".", 2)[0] if name.endswith(".tmp") else ""
