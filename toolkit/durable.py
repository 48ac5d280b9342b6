"""Durable writes: the only module in levelsess that changes bytes on disk.

Primitives (DESIGN.md §4):

* :func:`append_line` - one ``write`` of ``line + b"\\n"`` with O_APPEND, then fsync;
  a newly created file also fsyncs its directory.
* :func:`atomic_write` / :func:`atomic_writer` - temp file in the same directory, write,
  fsync, ``os.replace``, fsync the directory.
* :func:`truncate_saving` - save the removed bytes to a recovery file (fsynced) first,
  then truncate and fsync.
* :func:`append_if_unchanged` / :func:`truncate_if_unchanged` - one append, or one cut back,
  only if the file is still exactly the bytes a plan saw (``restore`` and its undo, inside
  another tool's tree).
* :func:`create_exclusive`, :func:`remove`, :func:`remove_empty_dir`, :func:`preserve`,
  :func:`move`, :func:`ensure_dir` for locks, quarantine and backups.
* :func:`held_still` / :func:`rewriting` - compare-and-swap against writers that take no lock
  (Claude Code opens, appends and closes per record): a journal is changed in place only while
  no other process can open it (a write lease on Linux), after proving it is still the file and
  the bytes that were read; a rewrite carries over what was appended since it read.

A failed fsync is fatal: it raises :class:`DurabilityError` and nothing is retried.

Inside a :func:`confined` block every one of them refuses, with :class:`SymlinkedFolderError`
and before writing a byte, a path that goes through a symlinked folder below one of the
block's roots (a store, a tool's tree, levelsess's own data folder): a project folder or a
``.levelsess/recovered`` that is a symlink would send the write somewhere nobody asked for.

A limit of the machine (a full disk, a quota, a read-only file system, a name or file too long) is its own
typed error, one line with the next step; a write that fails leaves no partial file and no
folder it created.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import io
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from .errors import (DiskFullError, DurabilityError, FileChangedError, FileInUseError, FileTooLargeError,
                     LevelsessError, NameTooLongError, PathNotFoundError, PermissionDeniedError, QuotaExceededError,
                     ReadOnlyError, SymlinkedFolderError, UsageError)

_IS_MAC = sys.platform == "darwin"
_IS_WINDOWS = os.name == "nt"
_REPLACE_RETRIES = 8


def utc_stamp() -> str:
    """Return a filesystem-safe UTC timestamp with microseconds, e.g. 20261130T151236.123456Z."""
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def _fail(action: str, path: Path | str, exc: OSError) -> LevelsessError:
    if isinstance(exc, PermissionError):
        return PermissionDeniedError(f"cannot {action} {path}: {exc.strerror}")
    limit = _limit(action, path, exc)
    if limit is not None:
        return limit
    return DurabilityError(f"cannot {action} {path}: {exc.strerror or exc}")


def symlinked_folder(root: Path | str, path: Path | str) -> Path | None:
    """Return the first folder below ``root`` on the way to ``path`` (``path`` included) that is a
    symlink, else None; read-only, one ``lstat`` per component.

    ``root`` itself and whatever lies above it may be symlinks (a store kept on another disk,
    ``/tmp`` on macOS): only what lies below it counts.  A path outside ``root`` gives None, and
    so does a component that does not exist yet (levelsess creates real folders) or cannot be
    examined (the write itself then reports that)."""
    return _first_link(os.path.abspath(root), os.path.abspath(path))


def _first_link(base: str, target: str) -> Path | None:
    rest = _below(target, base)
    if not rest:  # the root itself, or not below it (another drive, on Windows)
        return None
    probe = base
    for part in rest.split(os.sep):
        probe = os.path.join(probe, part)
        try:
            mode = os.lstat(probe).st_mode
        except OSError:
            return None
        if stat.S_ISLNK(mode) or (_IS_WINDOWS and getattr(os.path, "isjunction", lambda _p: False)(probe)):
            return Path(probe)
    return None


def _below(path: str, root: str) -> str | None:
    """The part of ``path`` below ``root`` (both absolute and normalised): "" for ``root`` itself,
    None when ``path`` is not below it.  String work: a check walks this for every folder."""
    if path == root:
        return ""
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path[len(prefix):] if os.path.normcase(path[:len(prefix)]) == os.path.normcase(prefix) else None


class Confinement(NamedTuple):
    """Folders levelsess writes below and never through a symlink: ``trees`` (a store, a tool's
    tree) and ``own`` (where levelsess keeps what it saves: ``<store>/.levelsess``, or its own
    data folder for another tool's tree).  The ``own`` folders' links get their own advice."""

    trees: tuple[str, ...]
    own: tuple[str, ...] = ()

    @classmethod
    def of(cls, trees: Iterable[Path | str], own: Iterable[Path | str] = ()) -> Confinement:
        return cls(tuple(os.path.abspath(t) for t in trees), tuple(os.path.abspath(o) for o in own))

    def refusal(self, path: Path | str) -> SymlinkedFolderError | None:
        """The error a write at ``path`` (a folder, or a file's folder) would be refused with, or None."""
        target = os.path.abspath(path)
        for root in self.trees + self.own:
            link = _first_link(root, target)
            if link is not None:
                return symlinked_folder_error(link, own=any(_below(str(link), o) is not None for o in self.own))
        return None


def symlinked_folder_error(link: Path, *, own: bool = False) -> SymlinkedFolderError:
    """The typed error for a write refused because ``link`` is a symlinked folder: it names where
    the link points, and what to do (``own``: a folder of levelsess's, where running on the link's
    target would not help)."""
    target = os.path.realpath(link)
    if own:
        hint = f"replace the symlink with a real folder (move {target} into its place, or remove the link), then rerun"
    else:
        hint = f"replace the symlink with the folder it points to, or run levelsess on {target} directly"
    return SymlinkedFolderError(f"{link} is a symlink to {target}", hint=hint, link=str(link), target=target)


_CONFINED: contextvars.ContextVar[tuple[Confinement, ...]] = contextvars.ContextVar("levelsess_confined", default=())


@contextlib.contextmanager
def confined(*confinements: Confinement) -> Iterator[None]:
    """Within this block, every write of this module under a confinement's folders refuses to go
    through a symlinked folder below them (:class:`SymlinkedFolderError`, nothing written)."""
    token = _CONFINED.set(_CONFINED.get() + confinements)
    try:
        yield
    finally:
        _CONFINED.reset(token)


def confinements() -> tuple[Confinement, ...]:
    """The confinements of the enclosing :func:`confined` blocks: a write held for later (a
    fingerprint, :func:`toolkit.verified.held_fingerprints`) is made under those it was asked under."""
    return _CONFINED.get()


def refuse_symlinked(folder: Path) -> None:
    """Raise :class:`SymlinkedFolderError` when writing in ``folder`` would go through a symlinked
    folder below a root of the enclosing :func:`confined` blocks."""
    for confinement in _CONFINED.get():
        error = confinement.refusal(folder)
        if error is not None:
            raise error


def typed_error(action: str, path: Path | str, exc: OSError) -> LevelsessError:
    """The typed error for ``exc``, met while trying to ``action`` ``path``: a full disk, a quota,
    a read-only file system, a name or file too long, a permission; else a DurabilityError."""
    return _fail(action, path, exc)


#: errno -> the limit of the machine it means; the callers' own writes through a handle map these too.
_LIMITS = {errno.ENOSPC: DiskFullError, errno.EROFS: ReadOnlyError, errno.ENAMETOOLONG: NameTooLongError,
           errno.EFBIG: FileTooLargeError, getattr(errno, "EDQUOT", -1): QuotaExceededError}


def _limit(action: str, path: Path | str, exc: OSError) -> LevelsessError | None:
    """One line for a limit of the machine: what happened, where, and what to do next."""
    error = _LIMITS.get(exc.errno) if exc.errno is not None else None
    if error is None:
        return None
    what = f"cannot {action} {path}"
    if error is NameTooLongError:
        return error(f"{what} (a name there may be at most {name_max(Path(path).parent)} bytes); "
                     "use a shorter path (or --store) and rerun")
    mount = mount_point(Path(path))
    if error is ReadOnlyError:
        return error(f"{what}; {mount} is mounted read-only: remount it read-write (or use a writable --store) and rerun")
    if error is FileTooLargeError:
        return error(f"{what}; raise `ulimit -f` or use a file system on which the file fits, and rerun")
    if error is QuotaExceededError:
        return error(f"{what}; free space in your quota on {mount} (or raise the quota) and rerun")
    return error(f"{what}; free space on {mount} and rerun")


def mount_point(path: Path) -> Path:
    """The mount point of the file system ``path`` is on (of its nearest existing folder)."""
    probe = Path(os.path.abspath(path))
    while not os.path.exists(probe) and probe != probe.parent:
        probe = probe.parent
    while not os.path.ismount(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def name_max(folder: Path) -> int:
    """The longest file name, in bytes, the file system holding ``folder`` (or its nearest
    existing parent) allows; 255 where the system cannot say."""
    probe = Path(os.path.abspath(folder))
    while probe != probe.parent:
        try:
            return int(os.pathconf(probe, "PC_NAME_MAX"))
        except (OSError, ValueError, AttributeError):  # missing (look higher up), or no pathconf here
            if os.path.lexists(probe) or not hasattr(os, "pathconf"):
                return 255
        probe = probe.parent
    return 255


def fsync_fd(fd: int, path: Path | str) -> None:
    """Flush ``fd`` to stable storage (F_FULLFSYNC on macOS); a failure is fatal."""
    try:
        if _IS_MAC and hasattr(os, "F_FULLFSYNC"):
            import fcntl

            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
        else:
            os.fsync(fd)
    except OSError as exc:
        raise _fail("fsync", path, exc) from exc


#: The bytes at the end of a file :func:`release_written` leaves in the page cache: what is read of
#: a new journal next, its stamp and tail hash (fsck's incremental cache reads its last 4 KiB).
KEEP_CACHED = 8192


def release_written(path: Path) -> None:
    """Let the kernel drop a file's pages from the page cache, all but its last KEEP_CACHED bytes:
    for a file on disk (fsynced) that nothing reads again soon.  An import writes hundreds of MB of
    journals: kept, they push the user's working set out of memory, and each new journal takes
    fresh pages (on a VM, pages the host must back first: measured here, 400 MB written into 600
    new files took 0.8-1.0 s of system time, 0.15 s when each was released after its fsync).
    Released, the next journal reuses them.  Only a hint: a system without ``posix_fadvise``
    keeps its cache as ever, and nothing written or read depends on it."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size > KEEP_CACHED:  # (the kernel drops only the whole pages before it)
            os.posix_fadvise(fd, 0, info.st_size - KEEP_CACHED, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


#: The folders whose fsync :func:`batched_dir_syncs` holds back (None: each is synced at once).
_DIR_SYNCS: contextvars.ContextVar[dict[str, Path] | None] = contextvars.ContextVar("levelsess_dir_syncs", default=None)


def fsync_dir(directory: Path) -> None:
    """Make a directory entry change (create, rename, unlink) durable (within
    :func:`batched_dir_syncs`, when that block ends)."""
    if _IS_WINDOWS:  # directories cannot be opened for fsync on Windows
        return
    held = _DIR_SYNCS.get()
    if held is not None:
        held.setdefault(os.path.abspath(directory), Path(directory))
        return
    _fsync_dir(directory)


@contextlib.contextmanager
def batched_dir_syncs() -> Iterator[None]:
    """Each folder whose entries the block changes is fsynced once, when it ends, several at a
    time: an import's settling renames an index, a fingerprint and two caches into the same few
    folders, each an fsync of its folder that waited on the disk in turn.  For writes whose names
    nothing counts on before the block ends (what they name is checked when read: a stamp, a
    digest); the block's end is before the command reports anything done.  A block that raises
    still syncs what it renamed; an error of those syncs then does not hide its own."""
    held: dict[str, Path] = {}
    token = _DIR_SYNCS.set(held)
    failed = True
    try:
        yield
        failed = False
    finally:
        _DIR_SYNCS.reset(token)
        folders = [folder for folder in held.values() if os.path.isdir(folder)]  # (one removed since: its parent's)
        if failed:
            for folder in folders:
                with contextlib.suppress(LevelsessError):
                    _fsync_dir(folder)
        else:
            _fsync_dirs_at_once(folders)


def _fsync_dirs_at_once(folders: list[Path], threads: int = 8) -> None:
    """fsync ``folders`` from up to ``threads`` threads at once (:func:`_at_once`)."""
    _at_once(_fsync_dir, folders, threads, "levelsess-dirsync")


def _at_once(fn: Callable, jobs: list, threads: int, name: str) -> None:
    """``fn(job)`` for every job, from up to ``threads`` threads at once (each waits on the disk,
    not the CPU; a single job in this thread); the first failure is raised once every one was
    tried.  (Plain threads: loading concurrent.futures took longer than the syncs it would run.)"""
    if len(jobs) <= 1:
        for job in jobs:
            fn(job)
        return
    import threading

    failed: list[BaseException] = []

    def run(share: list) -> None:
        for job in share:
            try:
                fn(job)
            except BaseException as exc:  # noqa: BLE001 - given to the caller below
                failed.append(exc)

    workers = [threading.Thread(target=run, args=(jobs[k::threads],), name=name, daemon=True)
               for k in range(min(threads, len(jobs)))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failed:
        raise failed[0]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as exc:
        raise _fail("open directory", directory, exc) from exc
    try:
        fsync_fd(fd, directory)
    finally:
        os.close(fd)


def ensure_dir(directory: Path) -> list[Path]:
    """Create ``directory`` and its parents, fsyncing each parent whose entries changed.

    Returns the folders it created, outermost first, for :func:`remove_new_dirs` to undo when the
    write they were made for fails; a failure here removes what this call made."""
    refuse_symlinked(directory)
    missing = []
    probe = directory
    while not os.path.exists(probe) and probe != probe.parent:  # os.path: a name too long is "missing" too
        missing.append(probe)
        probe = probe.parent
    created: list[Path] = []
    try:
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                raise _fail("create folder", folder, exc) from exc
            created.append(folder)
            fsync_dir(folder.parent)
    except BaseException:
        remove_new_dirs(created)
        raise
    return created


def remove_new_dirs(created: list[Path]) -> None:
    """Remove again, innermost first, folders a failed write created (:func:`ensure_dir`'s list),
    each only while it is empty: a failure leaves no empty folder behind, and never another's file."""
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            continue
        except OSError:  # another writer put something in it meanwhile: it and its parents stay
            return
        with contextlib.suppress(LevelsessError):  # tidying up after a failure must not hide it
            fsync_dir(folder.parent)


@contextlib.contextmanager
def new_dirs(directory: Path) -> Iterator[list[Path]]:
    """:func:`ensure_dir` for a write that may fail: if the block raises, the folders this made
    are removed again (each only while empty)."""
    created = ensure_dir(directory)
    try:
        yield created
    except BaseException:
        remove_new_dirs(created)
        raise


def _write_all(fd: int, data: bytes | memoryview, path: Path, done: list[int] | None = None) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError as exc:
            raise _fail("write", path, exc) from exc
        view = view[written:]
        if done is not None:  # how much landed, should a later write fail
            done[0] += written


def _write_pieces(fd: int, data: bytes | Iterable[bytes], path: Path) -> None:
    """:func:`_write_all` of ``data``, or of its pieces a MiB at a time (never all joined)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        _write_all(fd, data, path)
        return
    batch: list[bytes] = []
    size = 0
    for piece in data:
        batch.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            _write_all(fd, b"".join(batch), path)
            batch, size = [], 0
    if batch:
        _write_all(fd, b"".join(batch), path)


def append_line(path: Path, line: bytes) -> int:
    """Append ``line`` plus a newline with one write and fsync; return the end offset."""
    return append_lines(path, [line])


def append_lines(path: Path, lines: list[bytes], commits: Committer | None = None) -> int:
    """Append each line plus a newline in one write, then fsync; return the end offset.

    A kill mid-write leaves at most a torn final record, which ``fsck --repair`` trims; a full
    disk leaves the file as it was.  With ``commits``, the fsync of a file that existed is its
    thread's (:meth:`Committer.sync`): the caller waits for it before it counts the lines written.
    """
    if any(line.find(b"\n") >= 0 for line in lines):  # (find: ``in`` raises and clears a TypeError first)
        raise ValueError("a journal record must not contain a raw newline")
    refuse_symlinked(path.parent)
    created = not path.exists()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _fail("open for append", path, exc) from exc
    try:
        start, written = os.fstat(fd).st_size, [0]
        try:
            _write_all(fd, b"".join(line + b"\n" for line in lines), path, written)
        except LevelsessError:  # a full disk mid-append: the part that fit is taken back
            _take_back(fd, start, written[0])
            raise
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if commits is not None and not created:
            handed, fd = fd, -1  # (the thread's to close from here, or sync's if it cannot hand it)
            commits.sync(handed, path)
            return end
        fsync_fd(fd, path)
    finally:
        if fd >= 0:
            os.close(fd)
    if created:
        fsync_dir(path.parent)
    return end


def _take_back(fd: int, start: int, written: int) -> None:
    """Cut the ``written`` bytes a failed append left after ``start``, so the journal is as it
    was (not torn), only if they are the file's last bytes: nothing else was appended since."""
    with contextlib.suppress(OSError, LevelsessError):  # else a torn tail, which a repair saves and trims
        if written and os.fstat(fd).st_size == start + written:
            os.ftruncate(fd, start)
            fsync_fd(fd, "")


def append_newline(path: Path, expected_size: int, still_whole: Callable[[bytes, int], bool] | None = None) -> None:
    """Terminate an unterminated final record, if the file is still ``expected_size`` bytes and
    its final bytes (after the last newline, at their offset) still pass ``still_whole``."""
    refuse_symlinked(path.parent)
    with held_still(path) as held:
        size = held.size()
        if size != expected_size:
            raise FileChangedError(f"{path} changed size since it was checked ({expected_size} -> {size} bytes); nothing was written")
        if still_whole is not None:
            start = held.line_start(size)
            if not still_whole(held.read(start, size - start), start):
                raise FileChangedError(f"{path}: its final line is no longer a complete record; nothing was written")
        try:
            os.pwrite(held.fd, b"\n", size)
        except OSError as exc:
            raise _fail("write", path, exc) from exc
        fsync_fd(held.fd, path)


def append_if_unchanged(path: Path, expected_size: int, expected_digest: str, data: bytes) -> int:
    """Append ``data`` to ``path`` only if the file is still exactly ``expected_size`` bytes whose
    sha256 is ``expected_digest`` (checked with the file held still, just before the write); one
    write, fsynced.  Returns the new size.  Raises :class:`FileChangedError` and writes nothing
    otherwise."""
    with held_still(path) as held:
        size = held.size()
        if size != expected_size:
            raise FileChangedError(f"{path} is {size} bytes, not the {expected_size} planned; nothing was written")
        if held.sha256(size) != expected_digest:
            raise FileChangedError(f"{path} no longer holds the bytes the plan was made on; nothing was written")
        held.expect(size)
        view, at = memoryview(data), size
        while view:
            try:
                written = os.pwrite(held.fd, view, at)
            except OSError as exc:
                raise _fail("write", path, exc) from exc
            view, at = view[written:], at + written
        fsync_fd(held.fd, path)
        return at


def _replace(src: Path, dst: Path) -> None:
    for attempt in range(_REPLACE_RETRIES):
        try:
            os.replace(src, dst)
            return
        except PermissionError as exc:  # Windows: a reader holds the target open
            if not _IS_WINDOWS or attempt == _REPLACE_RETRIES - 1:
                raise _fail("replace", dst, exc) from exc
            time.sleep(0.05 * 2**attempt)
        except OSError as exc:
            raise _fail("replace", dst, exc) from exc


#: The errors of a ``link`` where no hard link can be made (a file system without them, another device,
#: too many links to the file): the caller renames, or makes the file itself, instead.
_NO_HARD_LINK = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK)


def _link_new(tmp: Path, path: Path) -> None:
    """Put ``tmp`` at ``path`` only if nothing is there (link, then drop the temp name)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINK:
            raise _fail("create", path, exc) from exc
        if os.path.lexists(path):  # no hard links here: check, then rename (a narrow window)
            raise FileExistsError(errno.EEXIST, "exists", str(path)) from exc
        _replace(tmp, path)
        return
    os.unlink(tmp)


def temp_name(path: Path) -> Path:
    """The temp file atomic_writer uses for ``path``: hidden, same folder, tagged with our pid."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def temp_owner(name: str) -> int | None:
    """Return the pid in a temp file name made by :func:`temp_name`, else None."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    pid = name[:-4].rpartition(".")[2]
    return int(pid) if pid.isdigit() else None


@contextlib.contextmanager
def atomic_writer(path: Path, before_replace: Callable[[Path], None] | None = None,
                  sync_dir: bool = True, exclusive: bool = False, mode: int | None = None) -> Iterator[BinaryIO]:
    """Yield a binary file whose contents atomically replace ``path`` on clean exit.

    ``before_replace(temp)`` runs once the temp file is durable and before it takes
    ``path``'s place: a verifier that raises keeps ``path`` as it was (the temp is removed).
    ``sync_dir=False`` leaves the folder's fsync to the caller, who must call
    :func:`fsync_dir` once after a batch of new files (an importer creating thousands of
    journals); until then a power cut may undo the rename, never tear the file.
    ``exclusive=True`` creates ``path`` and never replaces it: the temp file is hard-linked
    into place, and :class:`FileExistsError` is raised if ``path`` appeared meanwhile.
    ``mode`` sets the new file's permission bits (a file put back as it was: a 0600 database
    stays 0600), before it is made durable; else they are the umask's.
    """
    refuse_symlinked(path.parent)
    tmp = temp_name(path)
    with temp_file(tmp, path) as handle:
        yield handle
        if mode is not None:
            os.fchmod(handle.fileno(), stat.S_IMODE(mode))
    try:
        if before_replace is not None:
            before_replace(tmp)
        if exclusive:
            _link_new(tmp, path)
        else:
            _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)


class _Creating:
    """A new file (``tmp``) that another thread creates (:func:`_create_files`) while its writer goes
    on: on a file system writing back what was written before, a create can wait on the disk (ext4
    on the team's VM: 0.5-1 ms a file while an import writes, 5 % of a first import's time; while
    creates are quick, the writer makes its files itself: :data:`SLOW_CREATE`).  Written
    to as a file: what is written before it exists is held, up to WRITE_BUFFER, then written into
    it; once it exists, into its buffered handle (:attr:`handle`).  A create that failed is its
    typed error at the first write past that, or at the flush."""

    __slots__ = ("tmp", "handle", "took", "_fd", "_error", "_done", "_held", "_size")

    def __init__(self, tmp: Path) -> None:
        import _thread

        self.tmp = tmp
        self.handle: BinaryIO | None = None
        self.took = 0.0  # seconds the create took
        self._fd: int | None = None
        self._error: OSError | None = None
        self._done = _thread.allocate_lock()
        self._done.acquire()  # (released by the creating thread: the file exists, or could not be made)
        self._held: list[bytes] = []
        self._size = 0

    def create(self) -> None:
        """In the creating thread: what ``open(tmp, "wb")`` does (a descriptor, no buffer yet), timed."""
        started = time.perf_counter()
        try:
            self._fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            self._error = exc
        finally:
            self.took = time.perf_counter() - started
            self._done.release()

    def write(self, data: bytes) -> int:
        if self.handle is None:
            if self._done.locked() and self._size < WRITE_BUFFER:
                self._held.append(bytes(data))  # (a bytes is held as it is, not copied)
                self._size += len(data)
                return len(data)
            self.opened()
        return self.handle.write(data)  # type: ignore[union-attr]

    def opened(self) -> BinaryIO:
        """The file's buffered handle, once the thread made it, with what was held written into it."""
        if self.handle is None:
            with self._done:  # (waits for the thread)
                pass
            if self._error is not None:
                raise _fail("create", self.tmp, self._error) from self._error
            self.handle = open(self._fd, "wb", buffering=WRITE_BUFFER)  # noqa: SIM115 - the writer's to close
            self._fd = None
            held, self._held = self._held, []
            for piece in held:
                self.handle.write(piece)
        return self.handle

    def flush(self) -> None:
        self.opened().flush()

    def fileno(self) -> int:
        return self.opened().fileno()

    def close(self) -> None:
        """Closed, once the thread is done with it (so nothing creates it after its writer removed it)."""
        if self.handle is None:
            with self._done:
                pass
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            return
        self.handle.close()


#: A Committer's creates go to its creating thread while they take this long (a running mean of the
#: last few): handing one over costs the writer two or three switches of threads (50-150 us on the
#: team's VM), which a quick create (20-100 us on a quiet ext4) does not win back.
SLOW_CREATE = 250e-6


def _create_files(creates) -> None:
    """The creating thread of a :class:`Committer`: each new file in turn, until None."""
    while True:
        creating = creates.get()
        if creating is None:
            return
        creating.create()


class Committer:
    """New files written one after another, each made durable by one background thread while the
    caller writes the next: an fsync waits on the disk, not the CPU, so an importer writing hundreds
    of journals converts the next while the last one syncs.

    :meth:`new_file` is ``atomic_writer(path, sync_dir=False, exclusive=True)`` whose last step is
    deferred: the thread fsyncs each file, in the order they were written, and each synced one is
    closed and hard-linked into place (never over a file that appeared meanwhile) by the caller's
    next call (:meth:`_finish`).  So the thread wants the interpreter's lock twice a file, not after
    each of the four calls that finish one: with both threads busy, each hand-over wakes the other
    (measured here, half a Cursor worker's context switches).  :meth:`wait` returns once every file
    is in place or removed again, with what failed for each one that is not in place (a
    :class:`FileExistsError` when another writer made the path first; a typed error for a failed
    fsync or a full disk): the caller writes those again as it would have without the thread.  The
    guarantees are :func:`atomic_writer`'s: a file is only ever linked after its fsync, and the
    folder's fsync stays the caller's.  At most ``limit`` written files wait for the thread (each an open file).
    Make one in the thread that uses it, and :meth:`wait` before a fork: the thread ends there.

    :meth:`mark` and :meth:`wait_through` wait for the files handed until a point only (a unit's),
    while the thread goes on with those handed since (the next unit's)."""

    def __init__(self, limit: int = 8) -> None:
        import queue
        import threading

        self._jobs: queue.Queue = queue.Queue(limit)
        self._thread = None
        self._creates: queue.SimpleQueue = queue.SimpleQueue()  # the new files to create, for the creating thread
        self._creator = None
        self._took = 0.0  # what the last creates took, a running mean (SLOW_CREATE)
        self._failed: list[tuple[int, Path, BaseException]] = []  # (its mark, path, why)
        # the new files handed to the thread and not yet settled: path -> (its mark, its stat once written)
        self._pending: dict[str, tuple[int, os.stat_result]] = {}
        self._handed = self._reached = 0  # files handed to the thread, and synced by it, so far
        self._synced: list = []  # (job, its fsync's error) of each file synced and not yet finished
        self._done = threading.Condition()

    @contextlib.contextmanager
    def new_file(self, path: Path) -> Iterator[BinaryIO]:
        """Raises :class:`FileExistsError` at once when ``path`` exists, after the thread settled
        an earlier file of the same path (its temp name is this one's)."""
        refuse_symlinked(path.parent)
        self._finish()
        if str(path) in self._pending:
            self._until(self._pending[str(path)][0])
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "exists", str(path))
        tmp = temp_name(path)
        if self._took < SLOW_CREATE:  # (created here, timed)
            started = time.perf_counter()
            with _filled(tmp, path) as handle:  # (closed by the thread, after its fsync)
                took = time.perf_counter() - started
                yield handle
        else:  # (created by the creating thread while the caller writes on)
            creating = _Creating(tmp)
            if self._creator is None:
                import threading

                self._creator = threading.Thread(target=_create_files, args=(self._creates,), name="levelsess-create",
                                                 daemon=True)
                self._creator.start()
            self._creates.put(creating)
            with _filled(tmp, path, creating):  # (from here a Ctrl-C closes and removes it, once the thread made it)
                time.sleep(0)  # (the interpreter's lock let go a moment: the thread takes it to start the create)
                yield creating  # type: ignore[misc]
            handle, took = creating.handle, creating.took  # (flushed: open)
        self._took += (took - self._took) / 4
        info = os.fstat(handle.fileno())
        self._start()
        self._handed += 1
        self._pending[str(path)] = (self._handed, info)
        self._jobs.put((handle, tmp, path, self._handed))

    def sync(self, fd: int, path: Path) -> None:
        """Hand the thread an open file's fsync, closed after it (``fd``: what :func:`append_lines` just
        appended to ``path``, which exists).  A failed fsync is :meth:`wait_through`'s to give, as
        for a new file; the caller raises it: what was appended is not known to be durable."""
        self._start()
        mark = self._handed + 1
        try:
            self._jobs.put((fd, None, path, mark))
        except BaseException:  # (Ctrl-C while the queue was full: never handed, so closed here)
            os.close(fd)
            raise
        self._handed = mark  # (after the put: a mark is never waited for that no job will settle)

    def _start(self) -> None:
        if self._thread is None:
            import threading

            self._thread = threading.Thread(target=self._run, name="levelsess-commit", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        """Each file's fsync, in order: only the wait on the disk is the thread's."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            handle, tmp, path, mark = job
            error = None
            try:
                fsync_fd(handle if tmp is None else handle.fileno(), path if tmp is None else tmp)
            except BaseException as exc:  # noqa: BLE001 - handed to wait(), which the caller reads
                error = exc
            with self._done:
                self._synced.append((job, error))
                self._reached = mark
                self._done.notify_all()

    def _finish(self) -> None:
        """Close and link each file the thread synced (or remove it when its fsync failed), in order:
        from then on it is settled, in place or in :attr:`_failed`.  Interrupted (Ctrl-C), the file
        at hand is settled as failed and the rest wait for the next call."""
        while self._synced:
            with self._done:
                synced, self._synced = self._synced, []
            for index, (job, error) in enumerate(synced):
                try:
                    self._settle(*job, error)
                except BaseException:
                    with self._done:
                        self._synced[:0] = synced[index + 1:]
                    raise

    def _settle(self, handle, tmp: Path | None, path: Path, mark: int, error: BaseException | None) -> None:
        try:
            if tmp is None:  # an append's fsync (handle: its descriptor)
                os.close(handle)
                if error is not None:
                    raise error
                return
            handle.close()
            if error is not None:
                raise error
            _link_new(tmp, path)
        except BaseException as exc:  # noqa: BLE001 - handed to wait(), which the caller reads
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            self._failed.append((mark, path, exc))
            if not isinstance(exc, Exception) and exc is not error:  # (Ctrl-C here: the caller's to see too)
                raise
        finally:
            if tmp is not None:
                self._pending.pop(str(path), None)

    def mark(self) -> int:
        """The point reached: every file handed so far is at or before it."""
        return self._handed

    def _until(self, mark: int) -> None:
        if self._thread is not None:
            with self._done:
                self._done.wait_for(lambda: self._reached >= mark)
        self._finish()

    def wait_through(self, mark: int, after: int = 0) -> list[tuple[Path, BaseException]]:
        """Every file handed up to ``mark`` is in place or removed: the ones not in place, with why
        (the thread goes on with those handed after it).  ``after``: only the failures of what was
        handed after that mark are given (and forgotten); the earlier ones stay for their unit's wait."""
        self._until(mark)
        failed = [(path, why) for at, path, why in self._failed if after < at <= mark]
        self._failed = [item for item in self._failed if not after < item[0] <= mark]
        return failed

    def waiting(self, path: Path) -> bool:
        """Whether ``path`` still waits for the thread (neither in place nor given up yet)."""
        self._finish()
        return str(path) in self._pending

    def written(self, path: Path) -> os.stat_result | None:
        """The stat of the new file handed for ``path`` and not yet settled, as it was written: what
        the file in place will show but its ``st_ctime`` (a link changes no inode, size or mtime),
        for a caller that needs no more than those and must not wait for the thread; None when no
        new file of that path waits (it is in place, given up, or was never handed)."""
        pending = self._pending.get(str(path))
        return pending[1] if pending is not None else None

    def settle(self, name: str) -> None:
        """Wait until the files named ``name`` (in any folder) that wait for the thread are settled
        (the thread goes on with the others): whoever looks for that name next finds it in place
        (or, if it failed, not; the failure is still the unit's wait's to give)."""
        marks = [mark for pending, (mark, _info) in list(self._pending.items()) if os.path.basename(pending) == name]
        if marks:
            self._until(max(marks))

    def _drain(self) -> None:
        if self._creator is not None:  # (idle: each file's create was waited for before new_file returned)
            self._creates.put(None)
            self._creator.join()
            self._creator = None
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None
        self._finish()

    def pause(self) -> None:
        """Every file handed so far is in place or removed, and the thread has ended (before a
        fork); what failed stays for :meth:`wait_through` to give, and the next file starts it again."""
        self._drain()

    def wait(self) -> list[tuple[Path, BaseException]]:
        """Every file written is in place or removed: the ones not in place, with why."""
        self._drain()
        failed, self._failed = [(path, why) for _at, path, why in self._failed], []
        return failed


@contextlib.contextmanager
def output_writer(path: Path) -> Iterator[BinaryIO]:
    """Write a file the user named (``export -o``, ``doctor --bundle``).

    A symlink is followed and its target replaced atomically; a FIFO, a terminal or a device
    (``/dev/stdout``) is written into, never replaced; a session journal or lock, or a store's
    cache, is refused (an export must never take a journal's place); a missing folder is
    reported as such."""
    try:
        mode = os.stat(path).st_mode  # through a symlink: /dev/stdout may lead to a pipe
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise PermissionDeniedError(f"cannot write {path}: {exc.strerror}") from exc
    special = str(path).startswith(("/dev/", "/proc/"))  # /dev/stdout redirected to a file: write into it
    if mode is not None and (special or not stat.S_ISREG(mode)):
        if stat.S_ISDIR(mode):
            raise UsageError(f"{path} is a folder; give a file name", hint="for example: -o chat.md")
        try:
            with open(path, "wb", buffering=0) as handle:
                yield handle
        except OSError as exc:
            raise _fail("write", path, exc) from exc
        return
    target = Path(os.path.realpath(path))
    name = target.name
    store_file = (mode is not None and name.endswith(".jsonl")) or name.endswith(".jsonl.lock") or (
        name in ("index.json", "meta.json") and any(target.parent.glob("*.jsonl")))
    if store_file:
        raise UsageError(f"refusing to overwrite {path}: it looks like a session journal, lock or cache",
                         hint="choose another output file (exports never replace session files)")
    if not target.parent.is_dir():
        raise PathNotFoundError(f"{target.parent} (the folder for {path})", hint="create the folder first, or choose another path")
    with atomic_writer(target) as handle:
        try:
            yield handle
        except OSError as exc:  # the caller's write hit a full disk or a failing device
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
                raise _fail("write", path, exc) from exc
            raise


def atomic_write(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Replace ``path`` with ``data`` atomically and durably (``data``: bytes, or pieces of them
    written in turn, never joined: an import cache of several MB is not held twice)."""
    with atomic_writer(path) as handle:
        try:
            if isinstance(data, (bytes, bytearray, memoryview)):
                handle.write(data)
            else:
                for piece in data:
                    handle.write(piece)
        except OSError as exc:
            raise _fail("write", path, exc) from exc


def atomic_writes(items: list[tuple[Path, bytes | Iterable[bytes]]], threads: int = 8) -> None:
    """Replace each ``path`` with its ``data``, atomically and durably as :func:`atomic_write`
    does, their fsyncs at once: every temp file written, then all fsynced from up to ``threads``
    threads (each waits on the disk, not the CPU: an import's settling saved its memo's files one
    fsync after another), then each renamed into place in the order given (a file is never in
    place before one given ahead of it), then their folders synced.  When a write or an fsync
    fails, nothing is renamed and every temp file is removed; a failed rename leaves the files
    before it in place."""
    if len({str(path) for path, _data in items}) != len(items):
        raise ValueError("atomic_writes: a path given twice")
    if len(items) <= 1:
        for path, data in items:
            atomic_write(path, data)
        return
    made: list[list] = []  # [fd (None once closed), temp, path] of each file written
    try:
        for path, data in items:
            refuse_symlinked(path.parent)
            tmp = temp_name(path)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            except OSError as exc:
                raise _fail("create", tmp, exc) from exc
            made.append([fd, tmp, path])
            _write_pieces(fd, data, path)
        _at_once(lambda job: fsync_fd(job[0], job[1]), made, threads, "levelsess-fsync")
        for job in made:  # (closed first: a rename never names a file still being written)
            fd, job[0] = job[0], None
            os.close(fd)
    except BaseException:
        for fd, tmp, _path in made:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    for index, (_fd, tmp, path) in enumerate(made):
        try:
            _replace(tmp, path)
        except BaseException:
            for _fd, left, _path in made[index:]:
                with contextlib.suppress(OSError):
                    os.unlink(left)
            raise
    for folder in dict.fromkeys(path.parent for path, _data in items):
        fsync_dir(folder)


def write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) holding ``data``, durably."""
    created = ensure_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        remove_new_dirs(created)
        raise _fail("create", path, exc) from exc
    try:
        _write_all(fd, data, path)
        fsync_fd(fd, path)
    except BaseException:  # a full disk: no partial (or 0-byte) file is left to pass for a saved copy
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        remove_new_dirs(created)
        raise
    os.close(fd)
    fsync_dir(path.parent)


def truncate_saving(path: Path, keep: int, expected_size: int, recovery_dir: Path,
                    still_torn: Callable[[bytes, int], bool] | None = None) -> Path:
    """Save the bytes after ``keep`` to ``recovery_dir``, then truncate ``path`` to ``keep``.

    Done while the file is held still (:func:`held_still`): it must still be ``expected_size``
    bytes, byte ``keep - 1`` a newline, and the bytes to cut still garbage by
    ``still_torn(data, offset)`` (else: no newline among them) - judged as they are at that
    instant, not as a check saw them.  The saved copy is fsynced before a single byte is removed.  Returns its path.
    """
    refuse_symlinked(path.parent)
    refuse_symlinked(recovery_dir)
    with held_still(path) as held:
        size = held.size()
        if size != expected_size:
            raise FileChangedError(f"{path} changed size since it was checked ({expected_size} -> {size} bytes); nothing was cut")
        if keep and held.read(keep - 1, 1) != b"\n":
            raise FileChangedError(f"{path}: byte {keep - 1} is no longer a line end; nothing was cut")
        removed = held.read(keep, size - keep)
        if still_torn is None and b"\n" in removed:
            raise FileChangedError(f"{path}: the bytes after byte {keep} hold a line end; nothing was cut")
        if still_torn is not None and not still_torn(removed, keep):
            raise FileChangedError(f"{path}: its final bytes are no longer an incomplete record; nothing was cut")
        return _save_and_cut(held, keep, size, removed, recovery_dir)


def truncate_if_unchanged(path: Path, keep: int, expected_size: int, expected_digest: str, recovery_dir: Path) -> Path:
    """Cut ``path`` back to its first ``keep`` bytes, only if it still holds exactly
    ``expected_size`` bytes whose sha256 is ``expected_digest`` (judged while it is held still,
    :func:`held_still`); the bytes cut are saved to ``recovery_dir``, fsynced, first
    (``restore --undo`` taking back what it appended).  Returns the saved file."""
    with held_still(path) as held:
        size = held.size()
        if size != expected_size or held.sha256(size) != expected_digest:
            raise FileChangedError(f"{path} changed since it was checked; nothing was cut")
        return _save_and_cut(held, keep, size, held.read(keep, size - keep), recovery_dir)


def _save_and_cut(held: Held, keep: int, size: int, removed: bytes, recovery_dir: Path) -> Path:
    """Save ``removed`` (the held file's bytes after ``keep``) to ``recovery_dir``, fsynced, then
    cut the file to ``keep`` and fsync it; returns the saved file."""
    saved = recovery_dir / f"{held.path.name}.{utc_stamp()}.tail"
    write_new(saved, removed)
    held.expect(size)  # without a lease: the last look before the cut
    try:
        os.ftruncate(held.fd, keep)
    except OSError as exc:
        raise _fail("truncate", held.path, exc) from exc
    fsync_fd(held.fd, held.path)
    return saved


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists; return False if it does.

    The bytes are written and fsynced in a temp file first, then hard-linked into place
    (``link`` fails if ``path`` exists, like O_CREAT|O_EXCL).  So a lock is never seen empty
    or half-written, even when its creator is killed mid-way: an empty lock would read as
    "owner cannot be checked" and block the session for 30 s.  Where hard links are not
    supported, falls back to O_CREAT|O_EXCL.

    The folder is not fsynced (it is for locks alone, DESIGN.md §2.5): a lock that a power cut
    takes away belonged to a process that died with it, and one it brings back is stale at once
    (its pid's create time is not the one it holds).  The bytes are, so it never comes back empty.
    """
    refuse_symlinked(path.parent)
    tmp = temp_name(path)
    _durable_temp(tmp, data)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except FileNotFoundError as exc:
            raise _fail("create", path, exc) from exc
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINK:
                raise _fail("create", path, exc) from exc
            return _create_excl_fallback(path, data)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return True


def link_exclusive(source: Path, path: Path) -> bool | None:
    """Hard-link ``source`` (a durable file, kept: a lock body, :class:`~toolkit.locks.LockBodies`) at
    ``path`` unless ``path`` exists: True, or False when it does (``link`` fails then, like
    O_CREAT|O_EXCL).  None when it cannot be linked there (``source`` gone, a file system without
    hard links, too many links to it): the caller makes ``path`` as :func:`create_exclusive` does.
    The folder is not fsynced (it is for locks alone, as :func:`create_exclusive`)."""
    refuse_symlinked(path.parent)
    try:
        os.link(source, path)
    except FileExistsError:
        return False
    except FileNotFoundError as exc:
        if os.path.isdir(path.parent):
            return None  # (the body went: made as always)
        raise _fail("create", path, exc) from exc
    except OSError as exc:
        if exc.errno in _NO_HARD_LINK:
            return None
        raise _fail("create", path, exc) from exc
    return True


def make_ready(path: Path, data: bytes) -> None:
    """``data`` written and fsynced in ``path``'s temp file (:func:`temp_name`), which the caller then
    links (:func:`link_exclusive`: a lock body) and removes."""
    refuse_symlinked(path.parent)
    _durable_temp(temp_name(path), data)


def _durable_temp(tmp: Path, data: bytes) -> None:
    """``tmp`` (created or truncated) holding ``data``, fsynced; removed again when that fails."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        raise _fail("create", tmp, exc) from exc
    try:
        try:
            _write_all(fd, data, tmp)
            fsync_fd(fd, tmp)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_excl_fallback(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        raise _fail("create", path, exc) from exc
    try:
        _write_all(fd, data, path)
        fsync_fd(fd, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)  # a lock we could not make durable is not ours to leave behind
        raise
    os.close(fd)
    return True


def remove(path: Path, *, tree: bool = False, lasting: bool = True) -> None:
    """Unlink ``path`` (a lock or temp file; with ``tree``, a folder levelsess made, such as a
    finished run's backups) and make the removal durable; missing is fine.  ``lasting=False`` (a
    released lock) skips the fsync of the folder: a lock a power cut brings back is stale at once."""
    refuse_symlinked(path.parent)
    try:
        shutil.rmtree(path) if tree else os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _fail("remove", path, exc) from exc
    if lasting:
        fsync_dir(path.parent)


def remove_empty_dir(path: Path) -> bool:
    """Remove ``path`` if it is an empty folder (one levelsess made) and make that durable;
    return whether it is gone.  A folder holding anything is left as it is."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            return False
        raise _fail("remove", path, exc) from exc
    fsync_dir(path.parent)
    return True


def preserve(src: Path, dst: Path) -> None:
    """Keep ``src``'s current bytes at ``dst`` (a hard link, else a durable copy)."""
    with new_dirs(dst.parent):  # a copy that fails leaves no empty backup folder
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError:
            try:
                with open(src, "rb") as reader, atomic_writer(dst) as writer:
                    while chunk := reader.read(1 << 20):
                        writer.write(chunk)
            except OSError as exc:
                raise _fail("copy", src, exc) from exc
            return
    fsync_dir(dst.parent)


def move(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst`` in the same file system and make the rename durable."""
    refuse_symlinked(src.parent)
    refuse_symlinked(dst.parent)
    _replace(src, dst)
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)


# --- compare-and-swap: changing a journal another process may be appending to -------------------


class Held:
    """A file held still for one change: this process's only descriptor of it, and whether a lease
    keeps every other process from opening it (else the checks run just before the change)."""

    def __init__(self, path: Path, fd: int, leased: bool) -> None:
        self.path, self.fd, self.leased = path, fd, leased

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``, through the held descriptor (opening the path again
        would break our own lease)."""
        parts, done = [], 0
        while done < length:
            try:
                chunk = os.pread(self.fd, min(length - done, 1 << 22), offset + done)
            except OSError as exc:
                raise _fail("read", self.path, exc) from exc
            if not chunk:
                break
            parts.append(chunk)
            done += len(chunk)
        return b"".join(parts)

    def chunks(self, end: int) -> Iterator[bytes]:
        """The file's first ``end`` bytes, 4 MiB at a time, through the held descriptor."""
        offset = 0
        while offset < end:
            chunk = self.read(offset, min(end - offset, 1 << 22))
            if not chunk:
                return
            yield chunk
            offset += len(chunk)

    def sha256(self, end: int) -> str:
        """The sha256 of the file's first ``end`` bytes."""
        digest = hashlib.sha256()
        for chunk in self.chunks(end):
            digest.update(chunk)
        return digest.hexdigest()

    def line_start(self, end: int) -> int:
        """The offset just past the last newline before ``end`` (0 when there is none)."""
        position = end
        while position > 0:
            start = max(0, position - (1 << 16))
            cut = self.read(start, position - start).rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            position = start
        return 0

    def expect(self, size: int) -> None:
        """Raise unless the file is still ``size`` bytes (the check that stands in for a lease)."""
        now = self.size()
        if now != size:
            raise FileChangedError(f"{self.path} changed size while it was being repaired ({size} -> {now} bytes); "
                                   "nothing was changed")

    def waiting(self) -> bool:
        """True when another process is waiting to open the file (it resolved this inode)."""
        from . import lease

        return self.leased and lease.broken(self.fd)


def _open_held(path: Path, flags: int) -> int:
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):  # another process holds a lease on it
            raise FileInUseError(f"{path}: another process is changing it") from exc
        if exc.errno == errno.ELOOP:
            raise FileChangedError(f"{path} is now a symlink; nothing was changed") from exc
        raise _fail("open", path, exc) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileChangedError(f"{path} is no longer a regular file; nothing was changed")
    return fd


@contextlib.contextmanager
def _holding(path: Path, fd: int) -> Iterator[Held]:
    """Hold the file behind ``fd`` (our only descriptor of it) still for the block."""
    from . import lease

    state = lease.acquire(fd)
    if state == lease.BUSY:  # some process keeps it open: a writer refuses us; readers only, the checks stand in
        from .live import writers_of

        who = writers_of(path, fresh=True)
        if who is not None:
            raise FileInUseError(f"{path}: {who}; nothing was changed (even with --force: it may append at any moment)")
    try:
        yield Held(path, fd, state == lease.HELD)
    finally:
        if state == lease.HELD:
            lease.release(fd)


@contextlib.contextmanager
def held_still(path: Path) -> Iterator[Held]:
    """Open ``path`` and keep every other process from opening it until the block ends.

    On Linux a write lease: taken only while no other process has the file open, and an
    ``open`` by another process waits until the block ends.  Inside the block, read the file
    through the :class:`Held` object only.  Raises :class:`FileInUseError` when another process
    keeps the file open.  Without leases the block runs unguarded and the caller's checks
    (:meth:`Held.expect`) narrow the window to the moment before the change."""
    refuse_symlinked(path.parent)
    fd = _open_held(path, os.O_RDWR)
    try:
        with _holding(path, fd) as held:
            yield held
    finally:
        os.close(fd)


class _Upto(io.RawIOBase):
    """The first ``end`` bytes of an open file, read with pread (the descriptor's offset unused)."""

    def __init__(self, fd: int, end: int) -> None:
        self.fd, self.end, self.position = fd, end, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self.end - self.position)
        if want <= 0:
            return 0
        data = os.pread(self.fd, want, self.position)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: self.end}[whence]
        self.position = max(0, base + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def close(self) -> None:  # the descriptor belongs to :func:`rewriting`
        super().close()


class Rewrite:
    """What :func:`rewriting` yields: ``source`` reads the file's first ``upto`` bytes, ``out`` takes
    the new version; ``carried`` is set once done (bytes appended meanwhile and carried over)."""

    def __init__(self, source: BinaryIO, out: BinaryIO, upto: int) -> None:
        self.source, self.out, self.upto, self.carried = source, out, upto, 0
        self.replaced = False  # set the moment the new version takes the file's name


#: How long a finished rewrite keeps watching the replaced file for a writer that opened it just
#: before the rename (it waited on our lease and writes there now); what it writes is carried over.
HANDOVER_SECONDS = 3.0
HANDOVER_GRACE = 0.02


@contextlib.contextmanager
def rewriting(path: Path, upto: int, *, keep_original: Path | None = None,
              before_replace: Callable[[Path], None] | None = None, carry: bool = True) -> Iterator[Rewrite]:
    """Write a new version of ``path`` from its first ``upto`` bytes and swap it in, compare-and-swap.

    The rewrite reads ``Rewrite.source`` (exactly those bytes) and writes ``Rewrite.out`` (a temp
    file).  Then, with the file held still: it must be the same inode, at least ``upto`` bytes;
    bytes appended since (whole lines after a line end) are carried over byte-exact into the new
    version (``carry=False``: refused instead); the original is kept at ``keep_original`` (a hard
    link, else a copy) and the new version renamed over it.  A writer that opened the old file just
    before the rename writes there once we let go: we watch it, and carry that over too.
    Anything else raises :class:`FileChangedError` and leaves ``path`` exactly as it was."""
    refuse_symlinked(path.parent)
    if keep_original is not None:
        refuse_symlinked(keep_original.parent)
    fd = _open_held(path, os.O_RDONLY)
    try:
        if os.fstat(fd).st_size < upto:
            raise FileChangedError(f"{path} is shorter than when it was checked; nothing was changed")
        source = io.BufferedReader(_Upto(fd, upto), 1 << 20)
        tmp = temp_name(path)
        with temp_file(tmp, path) as out:
            job = Rewrite(source, out, upto)
            yield job
        try:
            if before_replace is not None:
                before_replace(tmp)
            job.carried = _swap(job, path, fd, tmp, keep_original, carry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        fsync_dir(path.parent)
        if keep_original is not None:
            fsync_dir(keep_original.parent)
    finally:
        os.close(fd)


@contextlib.contextmanager
def temp_file(tmp: Path, shown: Path | None = None) -> Iterator[BinaryIO]:
    """Yield ``tmp`` to write; it is flushed and fsynced on clean exit and removed on error.  A
    limit of the machine met by the caller's own writes is its typed error, naming ``shown``."""
    shown = shown or tmp
    with _filled(tmp, shown) as handle:
        yield handle
    try:
        written = False
        try:
            fsync_fd(handle.fileno(), tmp)
            written = True
        finally:  # close() flushes again: on a full disk it must not replace the typed error
            try:
                handle.close()
            except OSError as exc:
                if written:
                    raise _fail("write", shown, exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: The buffer of a file written whole (a journal an importer creates): a journal's lines are a few
#: KB each, and an 8 KiB buffer made a write call for nearly each of them.  128 KiB, not more: the
#: buffer stays in the core's cache while the kernel copies it out (a 1 MiB one did not: the first
#: Claude Code import of 405 MB took 0.5 s more system time and 7 % more wall, six runs interleaved).
WRITE_BUFFER = 1 << 17


@contextlib.contextmanager
def _filled(tmp: Path, shown: Path, creating: _Creating | None = None) -> Iterator[BinaryIO]:
    """``tmp`` created and yielded to write, then flushed; a limit of the machine met by the
    caller's writes or the flush is its typed error, naming ``shown``.  On any error it is closed and
    removed; on a clean exit it is left open, for the caller to fsync and close.  ``creating``:
    ``tmp`` as another thread creates it (:class:`_Creating`), yielded instead."""
    if creating is not None:
        handle: BinaryIO = creating  # type: ignore[assignment]
    else:
        try:
            handle = open(tmp, "wb", buffering=WRITE_BUFFER)  # noqa: SIM115 - the caller's to close
        except OSError as exc:
            raise _fail("create", tmp, exc) from exc
    try:
        try:
            yield handle
        except OSError as exc:  # the caller's own write through ``handle`` met a limit of the machine
            if exc.errno not in _LIMITS:
                raise
            raise _fail("write", shown, exc) from exc
        try:
            handle.flush()
        except OSError as exc:
            raise _fail("write", shown, exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            handle.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _swap(job: Rewrite, path: Path, fd: int, tmp: Path, keep_original: Path | None, carry: bool) -> int:
    """Under the lease: prove, carry over, keep the original, rename; then watch the old inode."""
    upto = job.upto
    try:
        same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    except OSError:
        same = False
    if not same:
        raise FileChangedError(f"{path} was replaced while it was being rewritten; nothing was changed")
    with _holding(path, fd) as held:
        size = held.size()
        if size > upto and not (carry and (upto == 0 or held.read(upto - 1, 1) == b"\n")):
            raise FileChangedError(f"{path} grew by {size - upto} bytes while it was being rewritten; it was left "
                                   "as it was")
        if size < upto:
            raise FileChangedError(f"{path} shrank while it was being rewritten; nothing was changed")
        if size > upto:
            _append_to(tmp, held.read(upto, size - upto))
        if keep_original is not None:
            _keep(held, keep_original)
        held.expect(size)  # without a lease: the last look before the rename
        _replace(tmp, path)
        job.replaced = True
    return size - upto + _handover(path, fd, size)


def _keep(held: Held, dst: Path) -> None:
    """Keep the held file's bytes at ``dst``: a hard link (no open: our lease holds), else a copy
    read through the held descriptor."""
    ensure_dir(dst.parent)
    try:
        os.link(held.path, dst, follow_symlinks=False)
        return
    except OSError:
        pass
    with atomic_writer(dst) as out:
        for chunk in held.chunks(held.size()):
            out.write(chunk)


def _append_to(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` as it is (bytes carried over from the file it replaces), fsynced."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise _fail("open for append", path, exc) from exc
    try:
        _write_all(fd, data, path)
        fsync_fd(fd, path)
    finally:
        os.close(fd)


def _handover(path: Path, fd: int, carried_to: int) -> int:
    """Carry over what is written to the replaced file (``fd``) after we let it go; return how many
    bytes.  A writer that waited on our lease opens the old inode, writes and closes: until it has,
    no lease can be taken again; once one is, and stays unbroken a moment, nobody else is coming."""
    from . import lease

    start, deadline = carried_to, time.monotonic() + HANDOVER_SECONDS
    while True:
        state = lease.take(fd)
        if state == lease.UNSUPPORTED:
            return _carry_rest(path, fd, carried_to) - start
        if state == lease.HELD:
            size = os.fstat(fd).st_size
            if size == carried_to:
                time.sleep(HANDOVER_GRACE)
                late = lease.broken(fd)
                lease.release(fd)
                if not late and os.fstat(fd).st_size == carried_to:
                    return carried_to - start
                continue
            lease.release(fd)
            carried_to = _carry_rest(path, fd, carried_to)
            continue
        if time.monotonic() >= deadline:  # someone keeps the old file open: carry what is there
            return _carry_rest(path, fd, carried_to) - start
        time.sleep(0.001)


def _carry_rest(path: Path, fd: int, carried_to: int) -> int:
    size = os.fstat(fd).st_size
    if size > carried_to:
        data = os.pread(fd, size - carried_to, carried_to)
        _append_to(path, data)
        carried_to += len(data)
    return carried_to
