"""What creating a file costs here, and waiting while it is slow (the import benches' helper).

A first import creates a journal a session (fsck creates none).  On ext4 without a journal, for
minutes after many files were removed (a test run, the last bench's stores), each create passes
over every inode freed recently and costs several times a quiet file system's (about 20 us on the
team's machine, 135 us right after a test run: a first import of a 405 MB Claude Code tree took
2.30 s then and 1.87 s six minutes later).  A bench that times a first import measures that cost,
waits while it is high (``settle``), and says so when it measured one anyway.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

#: Microseconds a file's creation takes on a quiet file system here (ext4, 2 cores): about 20.
SLOW_CREATE_US = 60
#: Seconds between two measures of a create's cost while it is slow.
SETTLE_STEP = 15


def create_cost(folder: Path, count: int = 200) -> float:
    """Microseconds to create a file (and write 1 kB to it) in ``folder``, the best of five rounds.
    The files are left in place (removing them would do to what comes next what is measured here)."""
    folder.mkdir(parents=True, exist_ok=True)
    best = float("inf")
    for round_ in range(5):
        began = time.perf_counter()
        for n in range(count):
            fd = os.open(folder / f"{round_}-{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, b"x" * 1000)
            os.close(fd)
        best = min(best, (time.perf_counter() - began) / count * 1e6)
    return best


def settle(folder: Path, seconds: int) -> tuple[float, int]:
    """(a create's cost, seconds waited): measured in ``folder``, then again every SETTLE_STEP
    seconds while it is above SLOW_CREATE_US, for ``seconds`` at most."""
    creating, waited = create_cost(folder / "creates"), 0
    while creating > SLOW_CREATE_US and waited < seconds:  # files removed in the last minutes: let that pass
        time.sleep(SETTLE_STEP)
        waited += SETTLE_STEP
        creating = create_cost(folder / f"creates-{waited}")
    return creating, waited


def slow_note(creating: float) -> str:
    """What a reader of the figures should know when a create was slow anyway."""
    return (f"creating a file takes {creating:.0f} us here, several times a quiet file system's: files removed in the last "
            "minutes, a test run's, slow each create on ext4 without a journal; the first import, which creates a journal "
            "a session, is slower than it will be once that passes")
