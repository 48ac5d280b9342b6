"""Durable writes: the only module in levelsess that changes bytes on disk.

Primitives (DESIGN.md §4):

* :func:`append_line` - one ``write`` of ``line + b"\\n"`` with O_APPEND, then fsync;
  a newly created file also fsyncs its directory.
* :func:`atomic_write` / :func:`atomic_writer` - temp file in the same directory, write,
  fsync, ``os.replace``, fsync the directory.
* :func:`truncate_saving` - save the removed bytes to a recovery file (fsynced) first,
  then truncate and fsync.
* :func:`create_exclusive`, :func:`remove`, :func:`preserve`, :func:`move`,
  :func:`ensure_dir` for locks, quarantine and backups.

A failed fsync is fatal: it raises :class:`DurabilityError` and nothing is retried.  A limit of
the machine (a full disk, a quota, a read-only file system, a name or file too long) is its own
typed error, one line with the next step; a write that fails leaves no partial file and no
folder it created.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import (DiskFullError, DurabilityError, FileChangedError, FileTooLargeError, LevelsessError, NameTooLongError,
                     PathNotFoundError, PermissionDeniedError, QuotaExceededError, ReadOnlyError, UsageError)

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


def fsync_dir(directory: Path) -> None:
    """Make a directory entry change (create, rename, unlink) durable."""
    if _IS_WINDOWS:  # directories cannot be opened for fsync on Windows
        return
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


def append_line(path: Path, line: bytes) -> int:
    """Append ``line`` plus a newline with one write and fsync; return the end offset."""
    return append_lines(path, [line])


def append_lines(path: Path, lines: list[bytes]) -> int:
    """Append each line plus a newline in one write, then fsync; return the end offset.

    A kill mid-write leaves at most a torn final record, which ``fsck --repair`` trims; a full
    disk leaves the file as it was.
    """
    if any(b"\n" in line for line in lines):
        raise ValueError("a journal record must not contain a raw newline")
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
        fsync_fd(fd, path)
        end = os.lseek(fd, 0, os.SEEK_CUR)
    finally:
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


def append_newline(path: Path, expected_size: int) -> None:
    """Terminate an unterminated final record, if the file is still ``expected_size`` bytes."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as exc:
        raise _fail("open for append", path, exc) from exc
    try:
        if os.fstat(fd).st_size != expected_size:
            raise FileChangedError(f"{path} changed size since it was checked; nothing was written")
        _write_all(fd, b"\n", path)
        fsync_fd(fd, path)
    finally:
        os.close(fd)


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


def _link_new(tmp: Path, path: Path) -> None:
    """Put ``tmp`` at ``path`` only if nothing is there (link, then drop the temp name)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
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
                  sync_dir: bool = True, exclusive: bool = False) -> Iterator[BinaryIO]:
    """Yield a binary file whose contents atomically replace ``path`` on clean exit.

    ``before_replace(temp)`` runs once the temp file is durable and before it takes
    ``path``'s place: a verifier that raises keeps ``path`` as it was (the temp is removed).
    ``sync_dir=False`` leaves the folder's fsync to the caller, who must call
    :func:`fsync_dir` once after a batch of new files (an importer creating thousands of
    journals); until then a power cut may undo the rename, never tear the file.
    ``exclusive=True`` creates ``path`` and never replaces it: the temp file is hard-linked
    into place, and :class:`FileExistsError` is raised if ``path`` appeared meanwhile.
    """
    tmp = temp_name(path)
    try:
        handle = open(tmp, "wb")  # noqa: SIM115 - closed below, after fsync
    except OSError as exc:
        raise _fail("create", tmp, exc) from exc
    try:
        written = False
        try:
            try:
                yield handle
            except OSError as exc:  # the caller's own write through ``handle`` met a limit of the machine
                if exc.errno not in _LIMITS:
                    raise
                raise _fail("write", path, exc) from exc
            try:
                handle.flush()
            except OSError as exc:
                raise _fail("write", path, exc) from exc
            fsync_fd(handle.fileno(), tmp)
            written = True
        finally:  # close() flushes again: on a full disk it must not replace the typed error
            try:
                handle.close()
            except OSError as exc:
                if written:
                    raise _fail("write", path, exc) from exc
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


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    with atomic_writer(path) as handle:
        try:
            handle.write(data)
        except OSError as exc:
            raise _fail("write", path, exc) from exc


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


def truncate_saving(path: Path, keep: int, expected_size: int, recovery_dir: Path) -> Path:
    """Save the bytes after ``keep`` to ``recovery_dir``, then truncate ``path`` to ``keep``.

    The file must still be ``expected_size`` bytes long; the saved copy is fsynced before a
    single byte is removed. Returns the recovery file's path.
    """
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size != expected_size:
                raise FileChangedError(f"{path} changed size since it was checked; nothing was written")
            handle.seek(keep)
            removed = handle.read()
    except OSError as exc:
        raise _fail("read", path, exc) from exc
    saved = recovery_dir / f"{path.name}.{utc_stamp()}.tail"
    write_new(saved, removed)
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        raise _fail("open for truncate", path, exc) from exc
    try:
        os.ftruncate(fd, keep)
        fsync_fd(fd, path)
    except OSError as exc:
        raise _fail("truncate", path, exc) from exc
    finally:
        os.close(fd)
    return saved


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists; return False if it does.

    The bytes are written and fsynced in a temp file first, then hard-linked into place
    (``link`` fails if ``path`` exists, like O_CREAT|O_EXCL).  So a lock is never seen empty
    or half-written, even when its creator is killed mid-way: an empty lock would read as
    "owner cannot be checked" and block the session for 30 s.  Where hard links are not
    supported, falls back to O_CREAT|O_EXCL.
    """
    tmp = temp_name(path)
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
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise _fail("create", path, exc) from exc
            return _create_excl_fallback(path, data)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return True


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
    fsync_dir(path.parent)
    return True


def remove(path: Path, *, tree: bool = False) -> None:
    """Unlink ``path`` (a lock or temp file; with ``tree``, a folder levelsess made, such as a
    finished run's backups) and make the removal durable; missing is fine."""
    try:
        shutil.rmtree(path) if tree else os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _fail("remove", path, exc) from exc
    fsync_dir(path.parent)


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
    _replace(src, dst)
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)
