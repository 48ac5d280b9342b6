"""Byte strings a run keeps until its end, in memory up to a budget and past it in a private temporary file.

What an import keeps of each journal it writes, to write at its end (the index memo's line and reader
state of each journal, the import cache's resume states of each unit), grows with the number of
journals: 8,000 Claude Code sessions held 40 MB of such lines, most of an import's peak.  They are
read again once, as the run writes its files, or not at all.  :class:`Blobs` keeps them in memory
while they add up to less than :data:`IN_MEMORY`; past that, each is written to a temporary file
(unlinked as it is made: a killed run leaves nothing behind) and held as a :class:`Blob`, its place
in the file, read back when asked for.  The memory a run holds for them is flat.

The file is scratch, never the user's data, so it is not made durable: no fsync, no rename.  When it
cannot be made or written (no temporary folder, a full disk), the bytes are held in memory, as
before: a run never fails for it.  A process forked after the file was opened (a worker) holds its
own bytes in memory and never writes to its parent's file.
"""

from __future__ import annotations

import os
import threading

#: Bytes :class:`Blobs` holds in memory before it writes the rest to its temporary file.
IN_MEMORY = 4 << 20


class Blob:
    """A byte string kept in a :class:`Blobs`' file: ``bytes(blob)`` reads it back, ``len`` is its size.
    Pickled, it is its bytes (what a worker sends holds no place in a file of another process)."""

    __slots__ = ("_blobs", "_at", "_size")

    def __init__(self, blobs: Blobs, at: int, size: int) -> None:
        self._blobs, self._at, self._size = blobs, at, size

    def __bytes__(self) -> bytes:
        return self._blobs.read(self._at, self._size)

    def __len__(self) -> int:
        return self._size

    def __reduce__(self):
        return bytes, (bytes(self),)


class Blobs:
    """Where a run keeps byte strings until its end: :meth:`keep` gives back the bytes themselves, or
    a :class:`Blob` once :data:`IN_MEMORY` (``in_memory``) bytes are held.  Safe from several threads."""

    def __init__(self, in_memory: int | None = None) -> None:
        self._limit = IN_MEMORY if in_memory is None else in_memory
        self._held = 0  # bytes given back as themselves (never taken back: a replaced value still counts)
        self._file = None
        self._pid = 0  # the process that made the file
        self._end = 0
        self._lock = threading.Lock()
        self.failed = False  # the file could not be made or written: everything since is in memory

    def keep(self, data: bytes) -> bytes | Blob:
        """``data``, or a :class:`Blob` of it written to the file."""
        size = len(data)
        with self._lock:
            if self._held + size <= self._limit or self.failed or (self._file is not None and self._pid != os.getpid()):
                self._held += size
                return data
            if self._file is None and not self._opened():
                self._held += size
                return data
            at = self._end
            self._end += size
        try:
            _write_at(self._file.fileno(), data, at)
        except OSError:  # a full disk: this one (and those after it) in memory
            self.failed = True
            return data
        return Blob(self, at, size)

    def _opened(self) -> bool:
        import tempfile

        try:
            self._file = tempfile.TemporaryFile(prefix="levelsess-")
        except OSError:
            self.failed = True
            return False
        self._pid = os.getpid()
        return True

    def read(self, at: int, size: int) -> bytes:
        """The ``size`` bytes written at ``at``."""
        from .errors import DurabilityError

        pieces, fd = [], self._file.fileno()
        while size:
            try:
                piece = os.pread(fd, size, at)
            except OSError as exc:
                raise DurabilityError(f"a temporary file of this run could not be read back: {exc}") from exc
            if not piece:
                raise DurabilityError("a temporary file of this run is shorter than what was written to it")
            pieces.append(piece)
            at += len(piece)
            size -= len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def close(self) -> None:
        """Let the file go (it is deleted; a forked worker closes only its own copy of the descriptor);
        a :class:`Blob` of it cannot be read after.  Done when the last of them goes."""
        if self._file is not None:
            self._file.close()
        self._file = None

    __del__ = close


def _write_at(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, at)
        view, at = view[written:], at + written
