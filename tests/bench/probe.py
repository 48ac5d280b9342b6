"""The peak-memory probe shared by the benchmark and the memory test."""

#: Run ``levelsess ARGS`` exactly as the console script does (toolkit.cli.main) and write this
#: process's own peak RSS in bytes to argv[1] at exit.  On Linux this reads VmHWM, not
#: ru_maxrss: a child's ru_maxrss starts at its *parent's* high-water mark (exec records the
#: RSS of the mm it replaces, which after vfork/fork is the parent's), so a pytest worker
#: that had grown to 150 MiB would make every child look like 150 MiB.  VmHWM belongs to the
#: new program's memory alone.  Elsewhere, fall back to ru_maxrss (bytes on macOS, KiB else).
#: ``argv[1].children`` gets the peak RSS of the largest worker process it forked (ru_maxrss of
#: its reaped children: a forked worker's starts at the parent's RSS when it forked, as it should).
PROBE = r"""
import atexit, sys
def _peak():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
_report = sys.argv[1]
def _write():
    with open(_report, "w") as out:
        out.write(str(_peak()))
    import resource  # the largest of its worker processes (reaped by now), beside it, for who wants it
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(_report + ".children", "w") as out:
        out.write(str(children if sys.platform == "darwin" else children * 1024))
atexit.register(_write)
sys.argv = ["levelsess", *sys.argv[2:]]
from toolkit.cli import main
main()
"""


def timed(fn) -> float:
    """Seconds one call of ``fn`` takes (wall clock)."""
    import time

    started = time.perf_counter()
    fn()
    return time.perf_counter() - started
