"""Read the next conversation while the last one is being written (issue 27).

Writing a journal ends in an ``fsync`` that waits on the disk with the GIL released, and SQLite
reads release it too: a reader thread one conversation ahead of the writer fills those waits.
What the caller sees is exactly the sequential run's: the same sessions in the same order, each
finding reported just before the session it was found with (so a report lists findings and
write outcomes in the same order), and the reader's exception raised where it happened.

At most one conversation is read ahead: the reader waits, with its finished session, until the
writer asks for the next one, so two sessions at most are in memory at once.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from ...findings import Finding

T = TypeVar("T")
_DONE = object()


class _Stopped(Exception):
    """The consumer stopped asking: the reader ends."""


def read_ahead(make: Callable[[Callable[[Finding], None]], Iterator[T]], report: Callable[[Finding], None]) -> Iterator[T]:
    """Yield what ``make(note)`` yields, produced in a thread one item ahead; the findings it
    ``note``\\ s are passed to ``report`` in the consumer, each before the item that followed it."""
    handoff: queue.Queue = queue.Queue(maxsize=1)
    turn = threading.Semaphore(0)  # the writer asked for the next item: the reader may hand one over
    stop = threading.Event()

    notes: list[Finding] = []  # the reader's findings since the item it handed over last

    def hand_over(item: object, error: BaseException | None = None) -> None:
        nonlocal notes
        turn.acquire()
        if stop.is_set():  # the consumer is gone: nothing more is taken
            raise _Stopped
        handoff.put((item, notes, error))
        notes = []

    def run() -> None:
        try:
            items = make(lambda finding: notes.append(finding))
            try:
                for item in items:
                    hand_over(item)
                    del item
            finally:
                close = getattr(items, "close", None)
                if close is not None:
                    close()
            hand_over(_DONE)
        except _Stopped:
            return
        except BaseException as exc:  # noqa: BLE001 - raised again in the consumer, where it belongs
            try:
                hand_over(_DONE, exc)
            except _Stopped:
                return

    reader = threading.Thread(target=run, name="levelsess-cursor-reader", daemon=True)
    reader.start()
    try:
        while True:
            turn.release()
            got, said, error = handoff.get()
            for finding in said:
                report(finding)
            if error is not None:
                raise error
            if got is _DONE:
                return
            yield got
            del got  # written: only the reader's next one stays in memory
    finally:
        stop.set()
        turn.release()  # a reader waiting for its turn sees the stop
        reader.join()
