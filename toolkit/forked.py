"""Map a function over batches in forked worker processes, with nothing in between (DESIGN.md §8).

``concurrent.futures.ProcessPoolExecutor`` costs a 2-core machine what it saves on a few
hundred MB: its feeder and manager threads wake the parent for every message, each task and
result goes through two queues, and the pool's own start-up is paid on every check.  Here:

- the parent writes every batch's number into one pipe before it forks, and each worker takes
  the next one by reading 4 bytes (a pipe read that small is atomic, so no two workers get the
  same batch, and a worker that is fast on its share simply takes more);
- each worker sends back each batch's results on a pipe of its own, pickled, as soon as they
  are ready, so the parent (asleep in ``selectors``' epoll or kqueue) counts progress per batch;
- the parent does no work in between and uses no CPU: both cores read journals.

A worker ends with ``os._exit``: it never runs the parent's ``atexit`` handlers or flushes its
buffers.  An exception in a worker comes back and is raised in the parent; a worker that dies
(SIGKILL, out of memory) raises :class:`WorkerLost`, and every worker still running is stopped
when the parent leaves for any reason (Ctrl-C included).  Only where ``os.fork`` exists;
:func:`available` says whether it does.
"""

from __future__ import annotations

import gc
import os
import pickle
import selectors
import signal
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

_INDEX = struct.Struct("<I")
_HEADER = struct.Struct("<IQ")  # batch number, length of the pickle that follows
_FAILED = 0xFFFFFFFF  # in place of a batch number: the pickle is the worker's exception
MAX_BATCHES = 4096  # their numbers (4 bytes each) must fit an empty pipe: 16 KiB is the smallest buffer (macOS)


class WorkerLost(RuntimeError):
    """A worker process ended before it sent the results of a batch it took."""


def available() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def map_batches(fn: Callable[[Any], list], batches: Sequence[Any], jobs: int,
                done: Callable[[int, list], None] | None = None, *, overlap: bool = False) -> list[list]:
    """``[fn(batch) for batch in batches]``, computed by ``jobs`` forked workers.

    ``done(number, results)`` is called in the parent as each batch's results arrive.  ``overlap``:
    ``fn(batch)`` does the batch's work up to what it waits for (a background thread's fsync) and
    returns the call that waits and gives its results; a worker calls it after it began its next
    batch, so the wait overlaps that batch's work (its last batch's, when no batch is left)."""
    results: list[list | None] = [None] * len(batches)
    if not batches:
        return []
    if len(batches) > MAX_BATCHES:
        raise ValueError(f"{len(batches)} batches: at most {MAX_BATCHES} fit the queue pipe")
    queue_read, queue_write = os.pipe()
    numbers = b"".join(_INDEX.pack(n) for n in range(len(batches)))
    children: dict[int, int] = {}  # result pipe -> pid
    finished = False
    try:
        _fill(queue_write, numbers)
        queue_write = -1
        gc.freeze()  # the parent's objects stay out of the workers' collections: no copy of every page they sit on
        for _ in range(max(1, min(jobs, len(batches)))):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: whatever happens, it never returns into the parent's code
                try:
                    os.close(read_end)
                    for fd in children:
                        os.close(fd)
                    _work(fn, batches, queue_read, write_end, overlap)
                finally:
                    os._exit(1)
            os.close(write_end)
            children[read_end] = pid
        os.close(queue_read)
        queue_read = -1
        gc.unfreeze()  # (in the parent: its own collections go on as before)
        _collect(children, results, done)
        finished = True
    finally:
        gc.unfreeze()
        _stop(children, kill=not finished)
        for fd in (queue_read, queue_write):
            if fd >= 0:
                _close(fd)
    missing = [n for n, r in enumerate(results) if r is None]
    if missing:
        raise WorkerLost(f"a worker process ended before returning batch {missing[0]}")
    return results  # type: ignore[return-value]


def _fill(fd: int, data: bytes) -> None:
    """Write the batch numbers before any worker starts, then close: a worker's read of 0 bytes means done.

    More numbers than an empty pipe holds would block here: MAX_BATCHES keeps them within the
    smallest pipe buffer there is."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def _work(fn, batches, queue: int, out: int, overlap: bool = False) -> None:
    code = 0
    begun: tuple[int, Callable[[], list]] | None = None  # (overlap) the batch begun and not yet finished

    def finish() -> None:  # the batch begun before: its wait, then its results sent
        nonlocal begun
        if begun is not None:
            number, wait = begun
            begun = None
            _send(out, number, pickle.dumps(wait(), protocol=pickle.HIGHEST_PROTOCOL))

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is the parent's to handle
        while True:
            taken = os.read(queue, _INDEX.size)
            if len(taken) < _INDEX.size:
                break
            number = _INDEX.unpack(taken)[0]
            try:
                if overlap:
                    try:
                        wait = fn(batches[number])
                    finally:  # (the batch before is finished and sent even when this one fails)
                        finish()
                    begun = (number, wait)
                    continue
                blob = pickle.dumps(fn(batches[number]), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
                _send(out, _FAILED, _pickled_error(exc))
                code = 1
                break
            _send(out, number, blob)
        try:
            finish()
        except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
            _send(out, _FAILED, _pickled_error(exc))
            code = 1
    except BaseException:  # noqa: BLE001 - the parent sees the missing batch
        code = 1
    finally:
        os._exit(code)


def _pickled_error(exc: BaseException) -> bytes:
    try:
        return pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an exception that does not pickle still says what it was
        return pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"), protocol=pickle.HIGHEST_PROTOCOL)


def _send(fd: int, number: int, blob: bytes) -> None:
    view = memoryview(_HEADER.pack(number, len(blob)) + blob)
    while view:
        view = view[os.write(fd, view):]


def _collect(children: dict[int, int], results: list, done) -> None:
    buffers = {fd: bytearray() for fd in children}
    open_fds = set(children)
    waiting = selectors.DefaultSelector()  # epoll / kqueue / poll: no FD_SETSIZE limit, unlike select()
    for fd in children:
        waiting.register(fd, selectors.EVENT_READ)
    try:
        _drain(waiting, open_fds, buffers, results, done)
    finally:
        waiting.close()


def _drain(waiting, open_fds: set[int], buffers: dict[int, bytearray], results: list, done) -> None:
    while open_fds:
        for key, _events in waiting.select():
            fd = key.fd
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                open_fds.discard(fd)
                waiting.unregister(fd)
                if buffers[fd]:
                    raise WorkerLost("a worker process ended in the middle of sending results")
                continue
            buffer = buffers[fd]
            buffer += chunk
            while len(buffer) >= _HEADER.size:
                number, length = _HEADER.unpack_from(buffer)
                if len(buffer) < _HEADER.size + length:
                    break
                value = pickle.loads(bytes(buffer[_HEADER.size:_HEADER.size + length]))
                del buffer[:_HEADER.size + length]
                if number == _FAILED:
                    raise value
                results[number] = value
                if done is not None:
                    done(number, value)


def _stop(children: dict[int, int], kill: bool) -> None:
    """Reap every worker; when the parent is leaving early (an error, Ctrl-C), kill them first."""
    for fd, pid in children.items():
        _close(fd)
        try:
            if kill:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
