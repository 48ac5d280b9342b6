"""A re-import of a source that has not changed reads none of it (issue 27, first slice).

After an import of one source (``--from APP --source DIR``) into a store, levelsess keeps in the
user's cache folder (``~/.cache/levelsess/import-cache/<store>/<key>.json`` on Linux, written
through :mod:`toolkit.durable`; never in the store or the source) what the run saw and what it
reported:

- each file the importer reads (its ``source_files``): device, inode, size, mtime, ctime and the
  sha256 of its last 4 KiB;
- each journal the run left in the store: its size, mtime and inode;
- whether each session's project folder existed (it decides "orphaned" and "not on this
  machine"), and the sessions the store had trashed;
- the run's outcomes and findings.

Only a run that found nothing new is kept (every session ``unchanged``, ``skipped`` or
``trashed``): the next import of the same source into the same store, with the same options,
first compares all of that with what is on disk now.  When nothing differs, every file is as it
was when it was read (a rewrite in place changes ctime, which no one can set back; a file that
grew or was cut changes size; one replaced changes inode), so reading it again would find
nothing new: the run reports exactly what that run reported, and writes nothing.  Anything else
(one file, one journal, one folder, an option) and the whole source is read as before, and the
cache is written anew.  A cache that cannot be read, or of another version, is ignored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import orjson

from .. import durable
from ..findings import Finding
from ..lines import loads
from .output import Outcome

VERSION = 1
FOLDER = "import-cache"
#: The statuses of a run that found nothing new: only such a run is kept, and replayed as it was.
SETTLED = frozenset({"unchanged", "skipped", "trashed"})
TAIL = 4096


def _key(app: str, source: Path, options, no_raw: bool, include_trashed: bool) -> str:
    what = orjson.dumps([VERSION, app, os.path.abspath(source), repr(options), no_raw, include_trashed])
    return hashlib.sha256(what).hexdigest()[:32]


def cache_path(store: Path, app: str, source: Path, options, no_raw: bool, include_trashed: bool) -> Path:
    """In the user's cache folder, never in the store or the source: a store holds journals only,
    and an import that finds nothing new writes nothing there."""
    import platformdirs

    where = hashlib.sha256(os.path.abspath(store).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (Path(platformdirs.user_cache_dir("levelsess", appauthor=False)) / FOLDER / where
            / f"{_key(app, source, options, no_raw, include_trashed)}.json")


def _file(path: str) -> list | None:
    """What says a source file is the one read: identity, size, times, its last bytes."""
    try:
        info = os.stat(path)
        with open(path, "rb") as handle:
            handle.seek(max(0, info.st_size - TAIL))
            tail = hashlib.sha256(handle.read(TAIL)).hexdigest()[:32]
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, tail]


def _journal(path: Path) -> list | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def files_of(importer, source: Path) -> dict[str, list | None] | None:
    """The fingerprint of every file an import of ``source`` reads, or None when they cannot be listed."""
    try:
        files = importer.source_files(source)
    except Exception:  # noqa: BLE001 - a source that cannot be listed is simply read as before
        return None
    return {str(path): _file(str(path)) for path in sorted(map(str, files))}


def sizes(files: dict[str, list | None] | None) -> dict[str, int]:
    """The size of each listed file that could be read (the import's progress total)."""
    return {path: stamp[2] for path, stamp in (files or {}).items() if stamp is not None}


def _projects(outcomes: list[Outcome]) -> dict[str, bool]:
    return {p: os.path.isdir(p) for p in sorted({o.project for o in outcomes if isinstance(o.project, str)})}


def recall(path: Path, files: dict | None, trashed: set[str]) -> tuple[list[Outcome], list[Finding]] | None:
    """The outcomes and findings of the last import, as ``unchanged``, when nothing it depended on
    changed; else None (read the source)."""
    if files is None:
        return None
    try:
        cached = loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("version") != VERSION or cached.get("files") != files:
        return None
    if sorted(cached.get("trashed", [])) != sorted(trashed):
        return None
    try:
        outcomes = [_outcome(o) for o in cached["sessions"]]
        findings = [Finding(**f) for f in cached["findings"]]
        journals = cached["journals"]
    except (KeyError, TypeError):
        return None
    if any(_journal(Path(p)) != stamp for p, stamp in journals.items()):
        return None
    if _projects(outcomes) != cached.get("projects"):
        return None
    return outcomes, findings


def remember(path: Path, files: dict | None, trashed: set[str], outcomes: list[Outcome], findings: list[Finding]) -> None:
    """Keep what this import saw and reported, for the next one (nothing when it could not list its files)."""
    if files is None or any(stamp is None for stamp in files.values()):
        return
    if any(o.status not in SETTLED for o in outcomes):  # what a re-import says of a journal it just wrote is
        return  # only known from that re-import: the first one that finds nothing new is kept
    journals = {str(o.path): _journal(o.path) for o in outcomes if o.status in ("created", "updated", "unchanged")}
    if any(stamp is None for stamp in journals.values()):
        return
    document = {"version": VERSION, "files": files, "trashed": sorted(trashed), "journals": journals,
                "projects": _projects(outcomes),
                "sessions": [{**dataclasses.asdict(o), "path": str(o.path)} for o in outcomes],
                "findings": [dataclasses.asdict(f) for f in findings]}
    durable.ensure_dir(path.parent)
    durable.atomic_write(path, orjson.dumps(document))


def forget(path: Path) -> None:
    """Drop the cache (a run that did not finish: the next one reads everything)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _outcome(value: dict) -> Outcome:
    fields = {f.name for f in dataclasses.fields(Outcome)}
    value = {k: v for k, v in value.items() if k in fields}
    value["path"] = Path(value["path"])
    value["orphan"] = tuple(value.get("orphan", ()))
    value["skipped"] = tuple(tuple(pair) for pair in value.get("skipped", ()))
    return Outcome(**value)
