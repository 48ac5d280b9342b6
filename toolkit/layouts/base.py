"""What every layout provides (the plug-in protocol), and the layout-free pieces they share.

A layout is one on-disk shape of chat journals (LevelCode, Logician, …).  Everything that
differs between them lives behind :class:`Layout`; the reader, fsck, repair, salvage, reindex,
ls, show and export ask the layout and never branch on which one it is.  Line splitting, the
tail classifier, durable writes and the finding sink stay layout-free.
"""

from __future__ import annotations

import contextvars
import functools
import operator
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ..errors import NotAStoreError, PermissionDeniedError

if TYPE_CHECKING:  # only for annotations
    from ..findings import Finding
    from ..rows import SessionRow
    from ..scan import JournalScan, Loaded

STATE_DIR = ".levelsess"
#: Models that are no model, never a session's model: Claude Code's own placeholder messages
#: (``<synthetic>``: an API error, an interrupt, "No response requested.").
PLACEHOLDER_MODELS = frozenset({"<synthetic>"})


def one_line(text: str, limit: int = 120) -> str:
    """``" ".join(text.split())[:limit]`` (a title, a preview: the words on one line, cut), read
    from only as much of ``text`` as that takes: a first prompt may be a pasted file of megabytes,
    and every journal's preview is one.  Of a prefix, the words before its last are whole words of
    ``text`` (the last may go on past the cut); once they fill ``limit`` they are the answer's start."""
    size = 4 * limit + 64
    while size < len(text):
        words = text[:size].split()
        whole = " ".join(words[:-1])
        if len(whole) >= limit:
            return whole[:limit]
        size *= 4
    return " ".join(text.split())[:limit]


class Folder(NamedTuple):
    """A unit of checking: a project folder, a session folder; the journals found in it.

    ``journals`` are the journals to check; ``whole`` says whether the folder's cache is in
    scope (not when one journal was named); ``problem`` says why it could not be listed.
    """

    path: Path
    layout: Layout
    store: Path
    journals: tuple[Path, ...]
    whole: bool = True
    problem: str | None = None  # why the folder could not be listed (its journals are unknown)

    @property
    def cache(self) -> Path | None:
        """The folder's cache file, or None for a layout without one."""
        name = self.layout.cache_name
        return self.path / name if name else None

    @property
    def state_dir(self) -> Path:
        return self.layout.state_dir(self)

    @property
    def confinement(self):
        """What a write for this folder stays below, never through a symlinked folder: the store
        (or the tool's tree) and the folder levelsess keeps saved bytes in (:mod:`toolkit.durable`)."""
        return _confinement(str(self.store), str(self.layout.own_root(self)))  # once per store (a check asks per folder)

    def symlinked(self, memo: dict | None = None) -> list:
        """The symlinked folders a write for this folder could go through, as the errors a write
        would be refused with: its own folder (and a journal's, a subagent's), the state folder,
        its entries and, one level below them, the folders saved bytes go to (``recovered/<folder>``).
        Read-only: a few ``lstat``; ``memo`` keeps what a store's folders share (its state folder)."""
        confinement = self.confinement
        found = {}
        for place in dict.fromkeys([str(self.path), *(os.path.dirname(j) for j in self.journals)]):
            error = confinement.refusal(place)
            if error is not None:
                found.setdefault(error.link, error)
        memo = {} if memo is None else memo
        key = (self.layout.name, str(self.store))  # a state folder depends on the store alone
        if key not in memo:
            memo[key] = _state_links(confinement, str(self.state_dir))
        shared, kinds = memo[key]
        for error in shared:
            found.setdefault(error.link, error)
        for kind, links in kinds:  # real folders: only the one named after this folder is left to look at
            if self.path.name in links:
                error = confinement.refusal(os.path.join(kind, self.path.name))
                found.setdefault(error.link, error)
        return list(found.values())


@functools.lru_cache(maxsize=64)
def _confinement(store: str, own: str):
    from ..durable import Confinement

    return Confinement.of((store,), (own,))


def _state_links(confinement, state: str) -> tuple[list, list[tuple[str, set[str]]]]:
    """The errors for links on the way to ``state`` and among its entries, and each real subfolder
    with the names of the links in it (``recovered/<folder>``): one listing each, for a whole store."""
    error = confinement.refusal(state)
    if error is not None:
        return [error], []  # not listed: that would go through the link
    links, kinds = [], []
    for entry in _listing(state):
        if entry.is_symlink() and not entry.is_file():  # a link to a folder, or to nothing yet
            links.append(confinement.refusal(entry.path))
        elif entry.is_dir():
            kinds.append((entry.path, {e.name for e in _listing(entry.path) if e.is_symlink() and not e.is_file()}))
    return [e for e in links if e is not None], kinds


def _listing(folder: str) -> list[os.DirEntry]:
    """A real folder's entries, or none (none yet, or unreadable: nothing written there can go through a link)."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


class Rules(Protocol):
    """Per-journal record rules: fed every parsed record, in order; they hold the facts.

    Optionally ``unread(offset, length)``: told of a line too large to parse here
    (``record-too-large``), so the rules can still place the record it may be (Claude Code reads
    its uuid from the line's two ends, :mod:`toolkit.peek`); rules without it ignore such lines."""

    facts: object

    def record(self, obj: object, offset: int, line: bytes, quiet: bool = False) -> None:
        """Judge one parsed record (``quiet``: a whole record recovered from a damaged line)."""

    def finish(self, size: int, tail_state: object) -> None:
        """Add findings that need the whole file (after its last record)."""


class Layout(Protocol):
    """One journal layout.  Instances are singletons in :mod:`toolkit.layouts` (``is`` compares).

    Every member a caller outside the layouts uses is declared here, grouped by concern;
    ``tests/test_layout_protocol.py`` checks each registered layout has them all and that no
    caller reaches for a member this protocol does not declare.
    """

    # what it is
    name: str          # "levelcode": the value in --json output and listings
    value: str         # the same name (a layout passes where an enum-like value is expected)
    describes: str     # how a person calls the format ("a Claude Code transcript")
    key: str           # the field every record has as a string: "kind", "id", "type"
    first_key: bytes   # the key its writers put first (a cut-off first record is judged by it)

    # identification and records
    def identify(self, obj: object, found: str | None) -> bool: ...
    def is_record(self, obj: dict) -> bool: ...
    def record_test(self, first: object) -> Callable[[dict], bool]: ...
    def partial_ok(self, data: bytes) -> bool: ...
    def rules(self, reader) -> Rules: ...

    # discovery and where levelsess keeps what it saves
    def claim_file(self, path: Path) -> Folder | None: ...
    def claim_dir(self, path: Path) -> list[Folder] | None: ...
    def session_id(self, folder: Folder, journal: Path) -> str: ...
    def state_dir(self, folder: Folder) -> Path: ...
    def own_root(self, folder: Folder) -> Path: ...
    def folder_findings(self, folder: Folder, scans: list) -> list: ...
    def extra_rows(self, folder: Folder) -> list: ...

    # caches
    cache_name: str | None        # "index.json", "meta.json", or None
    cache_is_derived: bool        # False: the cache holds what no journal holds (save it first)
    cache_lists_journals: bool    # True: trashing a journal means refreshing the cache
    vouchable: bool               # True: a verified cache may stand in for reading the journals
    def cache_findings(self, folder: Folder, scans: list[JournalScan], loaded: Loaded) -> list[Finding]: ...
    def derive_cache(self, folder: Folder, scans: list[JournalScan], loaded: Loaded) -> bytes | None: ...

    # live writers (DESIGN.md §2.5, principle 10)
    def lock_path(self, journal: Path) -> Path | None: ...
    def lock_name(self, journal_name: str) -> str | None: ...
    def writer(self, journal: Path, *, fresh: bool = False) -> str | None: ...
    def holder(self, journal: Path, *, fresh: bool = False) -> str | None: ...
    def running(self, journal: Path, *, fresh: bool = False) -> str | None: ...
    def begin(self) -> None: ...
    def holding(self, journal: Path, *, force: bool = False) -> AbstractContextManager: ...
    def session_of(self, journal: Path) -> str | None: ...

    # repairs beyond the tail (fsck --relink), migrations, trash
    relinks: bool                 # fsck --relink mends a dangling parent in this layout
    migrates: bool                # `levelsess migrate` moves its journals between schema versions
    def plan_relinks(self, path: Path) -> list: ...
    def relink_journal(self, scan: JournalScan, quarantine_root: Path, label: str) -> Path: ...
    # a layout whose relink mends something else than a parentUuid chain (Gemini: a lost
    # metadata line) answers these; None from them means "the parentUuid chain rule"
    def relink_needed(self, scan: JournalScan) -> bool | None: ...
    def relink_refusal(self, scan: JournalScan) -> str | None: ...
    def relink_detail(self, scan: JournalScan) -> str | None: ...
    def relink_fixes(self, scan: JournalScan) -> tuple[str, ...] | None: ...
    def trash_paths(self, journal: Path) -> tuple[Path, ...]: ...

    # listings and rendering
    def row(self, folder: Folder, journal: Path, scan: JournalScan, state: str, reason: str) -> SessionRow: ...
    def markdown(self, path: Path, title: object) -> Iterator[str]: ...
    def json_open(self, records: Iterator[bytes]) -> bytes: ...


class BaseLayout:
    """Defaults shared by the layouts: pickled by name, so a worker's scan keeps ``is``."""

    name = ""
    key = ""
    first_key = b""
    cache_name: str | None = None
    cache_is_derived = True  # False: the cache holds what no journal holds (save it before replacing)
    cache_lists_journals = False  # True: the cache names each journal (refresh it when one is trashed)
    vouchable = False        # True: a verified cache may stand in for reading the journals (ls)
    relinks = False          # True: fsck --relink mends a dangling parent (plan_relinks, relink_journal)
    migrates = False         # True: `levelsess migrate` moves its journals between schema versions

    def __reduce__(self):
        from .registry import get

        return get, (self.name,)

    def __repr__(self) -> str:
        return f"<layout {self.name}>"

    @property
    def value(self) -> str:
        return self.name

    @property
    def describes(self) -> str:
        from ..identify import describe

        return describe(self.name)

    def is_record(self, obj: dict) -> bool:
        return isinstance(obj.get(self.key), str)

    def record_test(self, first: object):
        """The test of a whole record for a file whose first record is ``first`` (a layout with
        more than one era of records answers per file)."""
        return self.is_record

    def state_dir(self, folder: Folder) -> Path:
        """Where levelsess keeps what it saves for this folder (recovered bytes, quarantine)."""
        return folder.store / STATE_DIR

    def own_root(self, folder: Folder) -> Path:
        """The top of what levelsess keeps for this folder's store: the state folder itself
        (a symlink there or below is refused, see :attr:`Folder.confinement`)."""
        return self.state_dir(folder)

    def lock_path(self, journal: Path) -> Path | None:
        """The lock file its writers take, or None for a layout whose writers take none."""
        name = self.lock_name(journal.name)
        return None if name is None else journal.with_name(name)

    def lock_name(self, journal_name: str) -> str | None:
        """The name of that lock file, beside the journal (``toolkit.locks.lock_path``), or None."""
        return journal_name + ".lock"

    def writer(self, journal: Path, *, fresh: bool = False) -> str | None:
        """For a layout without lock files: who is writing ``journal`` now, or None."""
        return self.holder(journal, fresh=fresh) or self.running(journal, fresh=fresh)

    def holder(self, journal: Path, *, fresh: bool = False) -> str | None:
        """Who is writing ``journal`` this instant (it holds it open to write), or None."""
        return None

    def running(self, journal: Path, *, fresh: bool = False) -> str | None:
        """A running process of the tool that writes ``journal`` that may append to it at any moment
        without holding it open (it works in the session's project, or names the session), or None."""
        return None

    def begin(self) -> None:
        """A command is about to look at this layout's journals (refresh what it caches)."""

    def holding(self, journal: Path, *, force: bool = False):
        """Own ``journal`` for one repair step (the lock protocol of DESIGN.md §2.5)."""
        from ..locks import holding

        return holding(journal, force=force)

    def partial_ok(self, data: bytes) -> bool:
        """True when the bytes of a file holding no whole record can be a cut-off record of it."""
        from ..identify import sniff_partial

        return sniff_partial(data, self.first_key)

    def session_id(self, folder: Folder, journal: Path) -> str:
        return journal.stem

    def folder_findings(self, folder: Folder, scans: list) -> list:
        """Findings about a whole folder that are not about a cache (Gemini: what its sweep deletes)."""
        return []

    def extra_rows(self, folder: Folder) -> list:
        """Listing rows for sessions in ``folder`` that are not journals (Gemini's legacy whole-file .json)."""
        return []

    def session_of(self, journal: Path) -> str | None:
        """The session id the tool's own command line names ``journal`` by, or None."""
        return None

    def plan_relinks(self, path: Path) -> list:
        """The splices ``fsck --relink`` would make in ``path`` (none for a layout that does not relink)."""
        return []

    def relink_journal(self, scan, quarantine_root: Path, label: str) -> Path:
        raise NotImplementedError(f"the {self.name} layout does not relink")  # callers ask .relinks first

    def relink_needed(self, scan) -> bool | None:
        """Whether relink would mend ``scan`` by a rule of this layout's own; None: by the parentUuid
        chain rule (a dangling parent), which :mod:`toolkit.fsck.repair` applies."""
        return None

    def relink_refusal(self, scan) -> str | None:
        """Why this layout's own relink cannot mend ``scan`` (the value it cannot prove), or None."""
        return None

    def relink_detail(self, scan) -> str | None:
        """What this layout's own relink would write, for the plan; None: the chain rule's splices."""
        return None

    def relink_fixes(self, scan) -> tuple[str, ...] | None:
        """The finding codes this layout's own relink mends; None: the chain rule's."""
        return None

    def trash_paths(self, journal: Path) -> tuple[Path, ...]:
        """What ``levelsess trash`` moves for the session ``journal`` (the journal; a layout adds its companions)."""
        return (journal,)


class ForeignLayout(BaseLayout):
    """Defaults of a layout whose tree belongs to another tool (Claude Code, Codex CLI): no lock
    file, no cache, a live writer seen as an open descriptor or as a running process of the tool
    (:mod:`toolkit.live`), and what levelsess saves kept in its own data folder,
    ``<data dir>/levelsess/<data_name>/<tree>-<hash>``."""

    cache_name = None
    data_name = ""  # the folder under levelsess's data folder
    tool = ""       # toolkit.live's name of the tool that writes this tree ("claude-code", "codex")
    tool_title = ""  # how a person calls it ("Claude Code")

    def tree_name(self, store: Path) -> str:
        """The readable part of a tree's folder name there (``~/.claude/projects`` -> ``claude``)."""
        return store.name.lstrip(".") or "root"

    def state_dir(self, folder: Folder) -> Path:
        """levelsess's own data folder, never the other tool's tree (it would list the folder)."""
        import hashlib

        import platformdirs

        store = os.path.abspath(folder.store)
        tag = hashlib.sha256(store.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        return Path(platformdirs.user_data_dir("levelsess", appauthor=False)) / self.data_name / f"{self.tree_name(Path(store))}-{tag}"

    def own_root(self, folder: Folder) -> Path:
        """levelsess's data folder (it may be a symlink; the folders below it may not)."""
        import platformdirs

        return Path(platformdirs.user_data_dir("levelsess", appauthor=False))

    def lock_path(self, journal: Path) -> Path | None:
        return None

    def lock_name(self, journal_name: str) -> str | None:
        return None

    def begin(self) -> None:
        from ..live import processes, snapshot

        snapshot(fresh=True)  # who has what open, and which tools run, now: not a second ago
        processes(fresh=True)

    def holder(self, journal: Path, *, fresh: bool = False) -> str | None:
        """A process holding ``journal`` open for writing, or None."""
        from ..live import writers_of

        return writers_of(journal, fresh=fresh)

    def running(self, journal: Path, *, fresh: bool = False) -> str | None:
        """"<Tool> is running in <cwd> (pid N)": a process of the tool whose command line names the
        session, or whose working folder is the session's project, or None."""
        from ..live import processes

        procs = [p for p in processes(fresh) if p.tool == self.tool]
        if not procs:
            return None  # the usual case costs nothing more: no file of the session is read
        session = self.session_of(journal)
        found = next((p for p in procs if session and p.names(session)), None)
        if found is None:
            project = self.project_of(journal)
            found = next((p for p in procs if project is not None and p.cwd and self.works_in(p, project)), None)
        if found is None:
            return None
        where = f" in {found.cwd}" if found.cwd else ""
        return f"{self.tool_title} is running{where} (pid {found.pid})"

    def session_of(self, journal: Path) -> str | None:
        """The session id the tool's command line names ``journal`` by, or None."""
        return None

    def project_of(self, journal: Path) -> str | None:
        """What tells ``journal``'s project (:meth:`works_in` compares a process with it), or None."""
        return None

    def works_in(self, proc, project: str) -> bool:
        """True when ``proc`` (a :class:`toolkit.live.ToolProcess` with a cwd) works in ``project``."""
        return False

    @contextmanager
    def holding(self, journal: Path, *, force: bool = False) -> Iterator[None]:
        """No lock to take: make sure, just before writing, that nobody has it open for writing."""
        from ..errors import LockBusyError

        who = None if force else self.writer(journal, fresh=True)
        if who is not None:
            raise LockBusyError(f"{journal}: {who}")
        yield

    def cache_findings(self, folder, scans, loaded) -> list:
        return []

    def derive_cache(self, folder, scans, loaded) -> bytes | None:
        return None


def home_roots(variable: str, name: str) -> list[Path]:
    """Where a tool keeps its home: ``$variable`` when set, ``~/name``, and ``%USERPROFILE%\\name``."""
    roots = []
    if os.environ.get(variable):
        roots.append(Path(os.environ[variable]).expanduser())
    roots.append(Path.home() / name)
    if os.environ.get("USERPROFILE"):
        roots.append(Path(os.environ["USERPROFILE"]) / name)
    return roots


_NAME = operator.attrgetter("name")


#: While an import keeps its listing (:func:`toolkit.importers.unchanged.list_units`): each folder
#: (or file) the listing looked at, with its stamp taken before it was looked at (:func:`looked`).
LOOKED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("looked", default=None)
#: A folder changed this recently (ns) may change again within the same tick of its clock, which
#: its mtime would not show: its listing is not kept (git's "racy" entries).
RACY_NS = 2_000_000_000


def looked(path: Path | str) -> None:
    """Note that a listing looks at ``path`` (a folder it lists or probes), when an
    import keeps its listing: its device, inode, size, mtime and ctime before it is looked at, "absent",
    or None when it changed too recently to be told from a change in the same tick."""
    seen = LOOKED.get()
    if seen is not None and str(path) not in seen:
        seen[str(path)] = look_stamp(path)


#: What a listing reads of a file's head, by the name of the layout that reads it (a vote on whose
#: folder it is): :func:`looked_head` keeps what it found, and :func:`still` reads it again.
SNIFFERS: dict[str, Callable[[Path], object]] = {}


def looked_head(path: Path | str, sniffer: str, found: object) -> None:
    """Note that a listing read the head of the file ``path`` (``SNIFFERS[sniffer]``) and found
    ``found``: what decided the listing is that, whatever else of the file changes (it grows)."""
    seen = LOOKED.get()
    if seen is not None and str(path) not in seen:
        seen[str(path)] = ["head", sniffer, found]


def still(path: str, mark: object) -> bool:
    """Whether ``path`` is as a listing kept it (:func:`looked`, :func:`looked_head`)."""
    if isinstance(mark, list) and len(mark) == 3 and mark[0] == "head":
        sniff = SNIFFERS.get(mark[1]) if isinstance(mark[1], str) else None
        return sniff is not None and sniff(Path(path)) == mark[2]
    return look_stamp(path) == mark


def look_stamp(path: Path | str) -> list | str | None:
    """What :func:`looked` keeps of ``path`` now."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "absent"
    except OSError:
        return None
    if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def entries(folder: Path) -> list[os.DirEntry]:
    """The entries of ``folder``, by name; typed errors for an unreadable or non-folder."""
    looked(folder)
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=_NAME)
    except PermissionError as exc:
        raise PermissionDeniedError(f"cannot list {folder}") from exc
    except NotADirectoryError as exc:
        raise NotAStoreError(str(folder)) from exc


def journals_in(folder: Path) -> tuple[Path, ...]:
    return journals_of(entries(folder))


def journals_of(listed: list[os.DirEntry]) -> tuple[Path, ...]:
    """:func:`journals_in` of the folder ``listed`` (its :func:`entries`) lists, from that listing."""
    return tuple(Path(e.path) for e in listed if e.name.endswith(".jsonl") and not e.name.startswith("."))
