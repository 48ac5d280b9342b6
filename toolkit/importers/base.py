"""What every importer and an import's run share without the writer: the options an importer
takes, the outcome of each session, and the store's journal names as an import lists them once.

An import that finds nothing new reports each session's kept :class:`Outcome` and writes nothing:
it loads this module, not :mod:`toolkit.importers.output` (the writer, and the durability layer
under it), so that its cost is the stat of each file (issue 27; start-up, DESIGN.md §8).
:mod:`toolkit.importers.output` gives these names too.
"""

from __future__ import annotations

import contextvars
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path


def unconverted(exc: Exception, what: str = "") -> str:
    """The words of the finding of a session (a task, a row) an importer could not convert: a bug
    met on untrusted data, isolated (the session is skipped, the import goes on).  ``what``: the
    item named first (``task 1234``).  Under the test suite (``LEVELSESS_SELF_CHECK``) it is raised
    instead: no input a test builds may end here, whatever shape its values take."""
    if os.environ.get("LEVELSESS_SELF_CHECK"):
        raise exc
    return f"{what + ' ' if what else ''}could not be converted ({type(exc).__name__}: {exc}); skipped"


#: The words that end a :func:`skipped_message`'s head, before its reasons; and one of its reasons
#: (compiled when first read back, by re's own cache: every import loads this module, few read one).
_NO_RECORD = " lines became no record: "
_SKIPPED_PART = r"(?P<reason>[^\s;()]+) (?P<count>[\d,]+) \((?P<why>[^;()]*); line [\d, ]+…?\)(?:; |$)"


def skipped_message(sid: str, skipped: dict[str, list], why: dict[str, str]) -> str:
    """What a session's ``source-skipped`` warning says of its source lines that became no record,
    by reason (``skipped``: reason -> [count, its first five line numbers]; ``why``: each reason's
    words).  :func:`skipped_tallies` reads it back: an import's summary adds them up."""
    parts = [f"{reason} {count:,} ({why.get(reason, reason)}; line {', '.join(map(str, lines))}{'…' if count > 5 else ''})"
             for reason, (count, lines) in sorted(skipped.items())]
    return f"session {sid}: {sum(count for count, _lines in skipped.values()):,}{_NO_RECORD}" + "; ".join(parts)


def skipped_tallies(message: str) -> dict[str, tuple[int, str]] | None:
    """``{reason: (count, its words)}`` of a :func:`skipped_message`; None for any other message."""
    head, found, rest = message.partition(_NO_RECORD)
    if not found or not head.startswith("session ") or not rest:
        return None
    total = head.rpartition(" ")[2].replace(",", "")
    tallies: dict[str, tuple[int, str]] = {}
    at = 0
    for match in re.finditer(_SKIPPED_PART, rest):
        if match.start() != at:
            return None
        tallies[match["reason"]] = (int(match["count"].replace(",", "")), match["why"])
        at = match.end()
    if at != len(rest) or not total.isdigit() or int(total) != sum(count for count, _why in tallies.values()):
        return None
    return tallies


class Options:
    """What every importer takes from the command line.  (A plain class: making a dataclass cost
    every import 0.4 ms of its start-up.  Its ``repr`` is the dataclass's, which names an import's
    cache file: :func:`toolkit.importers.unchanged.cache_path`.)"""

    __slots__ = ("mapping", "project", "orphans_only")

    def __init__(self, mapping: list[tuple[str, str]] | None = None, project: str | None = None,
                 orphans_only: bool = False) -> None:
        self.mapping = [] if mapping is None else mapping  # --map OLD=NEW
        self.project = project  # --project
        self.orphans_only = orphans_only  # --orphans-only

    def __repr__(self) -> str:
        return f"Options(mapping={self.mapping!r}, project={self.project!r}, orphans_only={self.orphans_only!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Options:
            return NotImplemented
        return (self.mapping, self.project, self.orphans_only) == (other.mapping, other.project, other.orphans_only)

    __hash__ = None  # (as the dataclass: mutable, unhashable)


class Outcome:
    """What became of one session: its journal, its records, its status and what the source held.
    Immutable, compared and hashed on every field but ``keys`` and ``after``.  (A plain class: the
    frozen dataclass it was cost every import 1.1-1.6 ms of its start-up to make; :meth:`replace`
    and :data:`FIELDS` are what ``dataclasses.replace`` and ``fields`` gave.)"""

    #: Every field, in order (the constructor's positions); the ones compared are all but the last two.
    FIELDS = ("id", "project", "path", "records", "new_records", "status", "orphaned", "source_status", "orphan",
              "source_items", "skipped", "source_lines", "merged", "title", "keys", "after")
    _COMPARED = FIELDS[:-2]

    id: str
    project: str | None
    path: Path
    records: int
    new_records: int
    status: str  # created | updated | unchanged | skipped | trashed (left out: the user trashed it from the store)
    orphaned: bool
    source_status: str  # live | orphaned | unknown, as the editor sees it
    orphan: tuple[str, ...]  # why: folder-missing, not-indexed, index-corrupt, editor-unreadable
    source_items: int  # items the source holds for this session (bubbles, requests, parts, lines)
    skipped: tuple[tuple[str, int], ...]  # (reason, count) of source items that became no record
    source_lines: int | None
    merged: int
    title: str | None  # the session's title, for the card a person reads
    # after a write: the source keys the journal holds now (what a re-read counts as ``records``),
    # when counted; the import cache's prediction of the next, unchanged, import (issue 27)
    keys: int | None
    # after a write (or a read that found nothing new): the journal's last seq and its title, which a
    # resumed import continues from (issue 27)
    after: tuple | None

    def __init__(self, id: str, project: str | None, path: Path, records: int, new_records: int, status: str,  # noqa: A002
                 orphaned: bool, source_status: str = "live", orphan: tuple[str, ...] = (), source_items: int = 0,
                 skipped: tuple[tuple[str, int], ...] = (), source_lines: int | None = None, merged: int = 0,
                 title: str | None = None, keys: int | None = None, after: tuple | None = None) -> None:
        self.__dict__.update(id=id, project=project, path=path, records=records, new_records=new_records, status=status,
                             orphaned=orphaned, source_status=source_status, orphan=orphan, source_items=source_items,
                             skipped=skipped, source_lines=source_lines, merged=merged, title=title, keys=keys, after=after)

    @classmethod
    def kept(cls, value: dict) -> Outcome:
        """The outcome the import cache kept, ``value``: every field of :data:`FIELDS` as
        :func:`toolkit.importers.unchanged.remember` wrote it (``path`` a string, tuples as lists,
        checked by the caller), unpacked when a field is first asked for.  A re-import that finds
        nothing new reports 800 of them as JSON and asks none (:meth:`to_json` reads ``value``):
        making each one's fields and path took a tenth of its time, net of start-up (issue 27)."""
        made = object.__new__(cls)
        made.__dict__["_kept"] = value
        return made

    def __getattr__(self, name: str) -> object:
        """A field of a kept outcome not unpacked yet (only called for a name its ``__dict__`` lacks)."""
        own = self.__dict__
        if name.startswith("__") or "_kept" not in own:
            raise AttributeError(name)
        self._unpack()
        try:
            return own[name]
        except KeyError:
            raise AttributeError(name) from None

    def _unpack(self) -> dict:
        """The fields (``__dict__``), a kept outcome's made from what the cache kept first."""
        own = self.__dict__
        value = own.pop("_kept", None)
        if value is not None:
            own.update(value)
            own["path"] = kept_path(value["path"])
            own["orphan"] = tuple(value["orphan"])
            own["skipped"] = tuple(map(tuple, value["skipped"]))
        return own

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"an Outcome is immutable: cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"an Outcome is immutable: cannot delete field {name!r}")

    def _compared(self) -> tuple:
        own = self._unpack()
        return tuple(own[name] for name in Outcome._COMPARED)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        own = self._unpack()
        return "Outcome(" + ", ".join(f"{name}={own[name]!r}" for name in Outcome.FIELDS) + ")"

    def replace(self, **changes) -> Outcome:
        """A copy with ``changes`` (field: value), as ``dataclasses.replace`` made one."""
        unknown = changes.keys() - set(Outcome.FIELDS)
        if unknown:
            raise TypeError(f"Outcome has no field {sorted(unknown)[0]!r}")
        return Outcome(**{**self.fields(), **changes})

    def fields(self) -> dict:
        """Every field and its value (what ``remember`` keeps of it)."""
        own = self._unpack()
        return {name: own[name] for name in Outcome.FIELDS}

    def to_json(self) -> dict:
        kept = self.__dict__.get("_kept")
        if kept is not None:  # (the same, from the kept fields as they are)
            skipped = kept["skipped"]
            carried = kept["source_items"] - sum(n for _, n in skipped)
            out = {"id": kept["id"], "project": kept["project"], "path": kept["path"], "records": kept["records"],
                   "new_records": kept["new_records"], "status": kept["status"], "orphaned": kept["orphaned"],
                   "source_status": kept["source_status"], "orphan": list(kept["orphan"]),
                   "source_items": kept["source_items"], "carried": carried, "skipped": dict(skipped),
                   "converted": carried - kept["merged"], "merged": kept["merged"]}
            if kept["source_lines"] is not None:
                out["source_lines"] = kept["source_lines"]
            return out
        carried = self.source_items - sum(n for _, n in self.skipped)
        out = {"id": self.id, "project": self.project, "path": str(self.path), "records": self.records,
               "new_records": self.new_records, "status": self.status, "orphaned": self.orphaned,
               "source_status": self.source_status, "orphan": list(self.orphan),
               "source_items": self.source_items, "carried": carried, "skipped": dict(self.skipped),
               # every importer, the same keys: source_items == converted + merged + sum(skipped)
               "converted": carried - self.merged, "merged": self.merged}
        if self.source_lines is not None:
            out["source_lines"] = self.source_lines
        return out


_FOLDERS: dict[str, Path] = {}  # a project folder's path, made once for all the journals in it


def kept_path(text: str) -> Path:
    """``Path(text)`` of a journal's path as the import cache keeps it, its folder's part made once
    (a store holds many journals in a few folders: joining a name to a folder's path is half the
    cost of parsing the whole path)."""
    folder, _, name = text.rpartition(os.sep)
    if os.sep not in folder.rstrip(os.sep):  # (a name at a root: "/x", "//x", "C:\\x": parsed whole)
        return Path(text)
    parent = _FOLDERS.get(folder)
    if parent is None:
        parent = _FOLDERS[folder] = Path(folder)
    return parent / name


#: While an import sets a dict: per store, the files of its project folders by name (listed once,
#: then each journal the import creates added), so finding a session id's journal in another
#: project folder costs no listing of the store per new session.
NAMES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("names", default=None)


def loaded_later(module: str) -> Callable[[str], object]:
    """An importer's listing module's ``__getattr__`` (PEP 562): every name it does not define is
    ``module``'s (the converter's), imported the first time one is asked for."""
    def __getattr__(name: str) -> object:
        if name.startswith("__"):  # (what the import system and tools probe modules for)
            raise AttributeError(name)
        loaded = sys.modules.get(module)  # (asked for each unit: import_module's own path cost 10 us a call)
        return getattr(loaded if loaded is not None else importlib.import_module(module), name)
    return __getattr__


class Farm:
    """What a scan yields, in place of sessions, for items it can convert in worker processes
    (issue 27: a Cursor database's composers).  ``make(i, report)`` converts item ``i`` (its
    findings go to ``report``) and gives ``(sessions, said)``: the sessions to write, in order, and
    what the scan must learn of the item (small, picklable); ``after(i, said)`` is that, told in
    the process that runs the scan, in item order.  :func:`toolkit.importers.run_import` calls
    ``make`` here or, with ``--jobs``, in forked workers, each of which writes the sessions it made
    and gives back their outcomes: the journals and the report are those of ``make`` and ``after``
    called here for each item in turn.  ``make`` of one item must not depend on another's (a worker
    sees the scan as it was when the workers were forked), nor two items make one session id.
    ``size``: the bytes they read (how many workers are worth it); ``release``: called before the
    workers are forked, to let go of what must not cross a fork (an open SQLite connection)."""

    __slots__ = ("count", "size", "make", "after", "release")

    def __init__(self, count: int, size: int, make: Callable[[int, Callable], tuple[list, object]],
                 after: Callable[[int, object], None], release: Callable[[], None] = lambda: None) -> None:
        self.count, self.size, self.make, self.after, self.release = count, size, make, after, release


def unfarmed(found: Iterable, report: Callable) -> Iterator:
    """A scan's sessions, each :class:`Farm`'s made here in turn (what reads sessions without writing them)."""
    for item in found:
        if type(item) is Farm:
            for index in range(item.count):
                sessions, said = item.make(index, report)
                yield from sessions
                item.after(index, said)
        else:
            yield item
