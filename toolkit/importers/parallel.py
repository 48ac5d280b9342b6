"""Import a source's independent units in worker processes, reported as one process would (issue 27).

An importer that can (``units``, ``unit_key``, ``scan_unit``: Claude Code, Codex CLI) splits a
source into units that share nothing: a transcript with its subagents, a rollout.  With
``import --jobs N`` each of N forked workers (:mod:`toolkit.forked`) takes the next units and does
for each exactly what a serial run does (the import cache, a resume, or a read in full, and its
writes through :mod:`toolkit.importers.output`); the parent does nothing meanwhile but put what
each unit came to back in the order of the units: the report, the progress and the findings are
those of a serial run, whatever finished first.  It keeps the rest to itself: the tombstones, the
settling of the folders (one fsync each, their indexes), the import cache's file.

Units whose session ids could meet (the importer's ``unit_key``: a transcript named like
another's subagent, a rollout copied into archived_sessions) go to one worker, in order, so
which one creates a journal and which one extends it is the serial run's answer.  A worker that
dies (killed, out of memory) leaves its units to the parent, which imports them itself.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

#: Units given to a worker at a time: one key's units (they must stay together), merged with the
#: next keys' when there are more keys than the queue holds (forked.MAX_BATCHES), or so that a
#: worker has a few units in a row to overlap (:func:`pipelined`; at most :data:`_IN_A_ROW` keys).
_MAX_BATCHES = 4000
_IN_A_ROW = 4
#: Units begun and not yet finished (:func:`pipelined`): each one's wait for its fsyncs overlaps the next ones' work.
DEPTH = 2


def supports(importer) -> bool:
    return all(hasattr(importer, name) for name in ("units", "unit_key", "scan_unit"))


def worker_count(jobs: int, total_bytes: int, units: int) -> int:
    """``--jobs``: N as asked (at most one per unit), 0 as ``fsck`` (every core for 32 MiB or more)."""
    from ..workers import worker_count as workers

    count = 1 if jobs == 1 else workers(jobs, total_bytes, units)
    if count > 1:
        from .. import forked  # (only when it forks: loading it is a part of a small import's time)

        if not forked.available():
            return 1
    return count


def batches(keys: list[str], jobs: int = 1) -> list[list[int]]:
    """Unit indexes grouped by key (first appearance order), each group whole in one batch; a few
    keys a batch when each of ``jobs`` workers still gets eight batches or more."""
    groups: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    ordered = list(groups.values())
    if not ordered:
        return []
    size = max(-(-len(ordered) // _MAX_BATCHES), min(_IN_A_ROW, len(ordered) // (8 * jobs)))
    return [sorted(i for group in ordered[n:n + size] for i in group) for n in range(0, len(ordered), size)]


def pipelined(keys: list[str], indexes: Iterable[int], begin: Callable[[int], Callable[[], object]],
              held: list | None = None, depth: int = DEPTH) -> Iterator[tuple[int, object]]:
    """``(i, result)`` for each unit ``i`` in order, where ``begin(i)`` does the unit's work up to
    what it waits for (its journals' fsync, a background thread's) and returns the call that waits
    and gives its result.  Unit ``i`` is finished after unit ``i + depth`` began (or the last did),
    so the wait overlaps the next units' work; a unit that shares a key with one begun and not
    finished waits for it, and so for every unit before it (the second may extend a journal the
    first creates).  A unit that fails still lets the ones before it finish.  ``held``: the units
    not finished at the end are put there, in order, as ``(i, its wait)``."""
    pending: deque[tuple[int, Callable[[], object]]] = deque()
    for index in indexes:
        key = keys[index]
        if any(keys[i] == key for i, _finish in pending):
            yield from _finished(pending, lambda i: keys[i] == key)
        try:
            finish = begin(index)
        except BaseException:
            yield from _finished(pending)
            raise
        if len(pending) >= depth:
            yield from _finished(pending, lambda _i: True)
        pending.append((index, finish))
    if held is not None:
        held.extend(pending)
    else:
        yield from _finished(pending)


def _finished(pending: deque, last: Callable[[int], bool] | None = None) -> Iterator[tuple[int, object]]:
    """``(i, result)`` of the units waiting in ``pending``, first begun first: all of them, or up to the
    first one that is ``last``."""
    while pending:
        index, finish = pending.popleft()
        yield index, finish()
        if last is not None and last(index):
            return


def _load_before_fork() -> None:
    """Load here, once, the modules each worker's writes load (the journal writer's scan, the
    import memo's, the store's layout): loaded after the fork, every worker paid for them again,
    some 8 ms each, and the parent a third time when it settled the folders."""
    import importlib

    from ..layouts.registry import get

    for name in ("toolkit.journal", "toolkit.fsck.incremental"):
        importlib.import_module(name)
    get("levelcode")


def run(keys: list[str], begin: Callable[[int], Callable[[], object]], jobs: int, emit: Callable[[int, object], None]) -> None:
    """``begin(i)()`` for every unit ``i`` in ``jobs`` workers (each a few units in a row,
    :func:`pipelined`); ``emit(i, result)`` in the parent, in unit order.  Units a lost worker left
    are processed here."""
    from .. import forked

    _load_before_fork()
    plan = batches(keys, jobs)
    pending: dict[int, object] = {}
    state = {"next": 0}

    def work(batch: list[int]) -> Callable[[], list]:  # (the batch's last wait overlaps the worker's next batch)
        held: list = []
        results = list(pipelined(keys, batch, begin, held))

        def wait() -> list:
            results.extend((index, finish()) for index, finish in held)
            return results
        return wait

    def release() -> None:
        while state["next"] in pending:
            emit(state["next"], pending.pop(state["next"]))
            state["next"] += 1

    def done(_number: int, results: list) -> None:
        for index, result in results:
            pending[index] = result
        results.clear()  # (map_batches keeps the list: what it held is the report's now)
        release()

    try:
        forked.map_batches(work, plan, jobs, done, overlap=True)
    except (OSError, forked.WorkerLost):  # no pipes or processes left, a worker killed: the rest imported here
        pass
    except BaseException:  # the run stops: what the workers finished is still reported and settled
        for index in sorted(pending):
            emit(index, pending.pop(index))
        raise
    for index in range(state["next"], len(keys)):
        if index not in pending:
            pending[index] = begin(index)()
        release()
