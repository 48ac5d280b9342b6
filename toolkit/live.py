"""Who is writing a file right now, for layouts whose writers take no lock: a process holding it
open for writing, or a running Claude Code or Codex CLI process (:func:`processes`).

On Linux this reads ``/proc/<pid>/fd`` and ``/proc/<pid>/fdinfo`` (the open mode is there);
elsewhere it asks psutil, which cannot always tell a reader from a writer, so any other
process that has the file open counts.  Read-only; the snapshot of every process's open files
is taken once and reused for a moment, so checking a thousand journals costs one walk.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

_WRITE_MODES = os.O_WRONLY | os.O_RDWR
#: path -> (pid, process name, its /proc fd link or None, inode or None)
_SNAPSHOT: tuple[float, dict[str, tuple[int, str, str | None, int | None]]] | None = None
FRESH_FOR = 1.0  # seconds a snapshot stays good


def _proc_snapshot() -> dict[str, tuple[int, str, str | None, int | None]]:
    """The path of every file some other process has open for writing -> (pid, name, link, inode).

    Only /proc is read: the fd link's target is a path string (readlink), the inode comes from
    fdinfo, so no other process's file is ever stat'ed.  A stat would go to that file's own file
    system, and a hung FUSE or NFS mount anywhere on the machine would hang the check with it."""
    found: dict[str, tuple[int, str, str | None, int | None]] = {}
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to look at
            continue
        name = None
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as handle:
                    info = handle.read(512)
                flags = int(info.split(b"flags:", 1)[1].split()[0], 8)
                if not flags & _WRITE_MODES:
                    continue
                target = os.readlink(f"{fd_dir}/{fd}")
            except (OSError, IndexError, ValueError):
                continue
            if not target.startswith("/") or target.endswith(" (deleted)"):
                continue  # a pipe, socket or anonymous inode; a deleted file
            ino = None
            if b"\nino:" in info:
                try:
                    ino = int(info.split(b"\nino:", 1)[1].split()[0])
                except (IndexError, ValueError):
                    ino = None
            if name is None:
                name = _name(pid)
            found.setdefault(target, (pid, name, f"{fd_dir}/{fd}", ino))
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def _psutil_snapshot() -> dict[str, tuple[int, str, str | None, int | None]]:
    import psutil

    found: dict[str, tuple[int, str, str | None, int | None]] = {}
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.info["pid"] == me:
            continue
        try:
            files = proc.open_files()
        except (psutil.Error, OSError):
            continue
        for item in files:
            mode = getattr(item, "mode", None)
            if mode == "r":
                continue
            found.setdefault(os.path.normcase(item.path), (proc.info["pid"], proc.info["name"] or "?", None, None))
    return found


def snapshot(fresh: bool = False) -> dict[str, tuple[int, str, str | None, int | None]]:
    global _SNAPSHOT
    now = time.monotonic()
    if fresh or _SNAPSHOT is None or now - _SNAPSHOT[0] > FRESH_FOR:
        table = _proc_snapshot() if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd") else _psutil_snapshot()
        _SNAPSHOT = (time.monotonic(), table)
    return _SNAPSHOT[1]


def writers_of(path: Path, *, fresh: bool = False) -> str | None:
    """"held open for writing by <name> (pid N)" when another process has ``path`` open to write."""
    try:
        st = os.stat(path)
        real = os.path.realpath(path)
    except OSError:
        return None
    table = snapshot(fresh)
    holder = table.get(real) or table.get(os.path.normcase(real))
    if holder is None:
        return None
    pid, name, link, ino = holder
    if ino is not None and ino != st.st_ino:
        return None  # another file now has that name (replaced since the process opened it)
    if link is not None:  # still open there? (the snapshot may be a moment old)
        try:
            if os.readlink(link) != real:
                return None
        except OSError:
            return None
    return f"held open for writing by {name} (pid {pid})"


# -- the processes of tools that write without a lock -------------------------------------------
#
# Claude Code appends the way Node's fs.appendFile does (open, write, close), so between two
# records no descriptor shows it; Codex CLI holds a rollout open while its thread runs, but not
# before it resumes one.  What does show, all the time, is the process: its command line says which
# tool it is (and sometimes which session), its working folder says which project.


@dataclass(frozen=True)
class ToolProcess:
    """A running process of a tool whose writers take no lock."""

    pid: int
    tool: str              # "claude-code" | "codex"
    argv: tuple[str, ...]
    cwd: str | None        # None when it cannot be read (another user's process)

    def names(self, session: str) -> bool:
        """True when its command line names ``session`` (``claude --resume <uuid>``, ``codex resume <id>``)."""
        if not _SESSION_ID.fullmatch(session):  # a file name that is no id could be any word
            return False
        wanted = session.lower()
        return any(wanted in arg.lower() for arg in self.argv[1:])


#: pid, tool, argv, cwd of every such process, and when they were read
_PROCESSES: tuple[float, tuple[ToolProcess, ...]] | None = None
_RUNTIMES = frozenset({"node", "nodejs", "bun", "deno"})
_SESSION_ID = re.compile(r"[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")
#: process names (/proc/<pid>/comm, psutil's name()) worth reading a command line for: the tools
#: themselves and the runtimes that run their scripts; "codex-" covers the release binaries
#: (``codex-x86_64-unknown-linux-musl``, cut to 15 characters in comm)
_NAMES = frozenset({"claude", "claude-code", "codex", "gemini"}) | _RUNTIMES


def _base(arg: str) -> str:
    """The file name of a command-line word, without ``.exe``/``.cmd`` (any case on Windows)."""
    name = arg.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if os.name == "nt":  # CLAUDE.EXE is claude there; on macOS, Claude.app's "Claude" is not Claude Code
        name = name.lower()
    return name[:-4] if name.lower().endswith((".exe", ".cmd")) else name


def may_be_tool(name: str) -> bool:
    """True when a process of this name may be Claude Code or Codex CLI (its command line tells)."""
    base = _base(name)
    return base in _NAMES or base.startswith("codex-")


def tool_of(argv: tuple[str, ...] | list[str]) -> str | None:
    """Which tool a command line runs: ``claude-code``, ``codex`` or None.

    Claude Code runs as ``claude`` (the native binary, the npm bin script) or as a runtime with its
    package's script (``node …/@anthropic-ai/claude-code/cli.js``); Codex CLI as ``codex``, a release
    binary ``codex-<target>``, or ``node …/@openai/codex/bin/codex.js``."""
    if not argv:
        return None
    first = _base(argv[0])
    if first in ("claude", "claude-code"):
        return "claude-code"
    if first == "codex" or first.startswith("codex-"):
        return "codex"
    if first == "gemini":  # Gemini CLI's npm bin script
        return "gemini"
    if first not in _RUNTIMES:
        return None
    script = next((a for a in argv[1:] if not a.startswith("-")), None)  # past the runtime's own options
    if script is None:
        return None
    path, name = script.replace("\\", "/"), _base(script)
    if "@anthropic-ai/claude-code/" in path or name in ("claude", "claude-code"):
        return "claude-code"
    if "@openai/codex/" in path or name in ("codex", "codex.js"):
        return "codex"
    if "@google/gemini-cli/" in path or name == "gemini":
        return "gemini"
    return None


def _read(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return None


def _proc_tools() -> tuple[ToolProcess, ...]:
    """Every Claude Code and Codex CLI process, from /proc only.

    The process name (comm) is read first: it never waits on the process, while its command line
    is read from its memory, so only the few named like a tool or a runtime are read further."""
    found = []
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return ()
    for pid in pids:
        if pid == me:
            continue
        comm = _read(f"/proc/{pid}/comm", 64)
        if comm is None or not may_be_tool(comm.decode("utf-8", "replace").strip()):
            continue
        raw = _read(f"/proc/{pid}/cmdline", 1 << 16)
        if not raw:
            continue
        argv = tuple(os.fsdecode(a) for a in raw.rstrip(b"\0").split(b"\0"))
        tool = tool_of(argv)
        if tool is None:
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")  # a path string: nothing of that folder is touched
        except OSError:
            cwd = None
        found.append(ToolProcess(pid, tool, argv, None if cwd is None or cwd.endswith(" (deleted)") else cwd))
    return tuple(found)


def _psutil_tools() -> tuple[ToolProcess, ...]:
    import psutil

    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.info["pid"] == me or not may_be_tool(proc.info["name"] or ""):
            continue
        try:
            argv = tuple(proc.cmdline())
        except (psutil.Error, OSError):
            continue
        tool = tool_of(argv)
        if tool is None:
            continue
        try:
            cwd = proc.cwd() or None
        except (psutil.Error, OSError):
            cwd = None
        found.append(ToolProcess(proc.info["pid"], tool, argv, cwd))
    return tuple(found)


def processes(fresh: bool = False) -> tuple[ToolProcess, ...]:
    """The running Claude Code and Codex CLI processes: one walk, reused for a moment."""
    global _PROCESSES
    now = time.monotonic()
    if fresh or _PROCESSES is None or now - _PROCESSES[0] > FRESH_FOR:
        table = _proc_tools() if sys.platform.startswith("linux") and os.path.isdir("/proc/self") else _psutil_tools()
        _PROCESSES = (time.monotonic(), table)
    return _PROCESSES[1]


# -- editors of the VS Code family --------------------------------------------------------------
#
# An extension (Cline, Roo Code, Kilo Code) writes its files from the editor's extension host; the
# editor holds its own ``state.vscdb`` open, but between two writes no descriptor shows a task
# file.  What shows is the editor: a process of the VS Code family whose user data folder
# (``--user-data-dir``, else the host's default) is the one the extension's folder is in.

#: process name -> the host folder its default user data folder is named after
EDITORS = {"code": "Code", "code-insiders": "Code - Insiders", "cursor": "Cursor", "codium": "VSCodium", "vscodium": "VSCodium",
           "windsurf": "Windsurf", "positron": "Positron", "antigravity": "Antigravity", "code-oss": "Code - OSS"}


def _default_data_dir(host: str) -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / host
    if os.name == "nt":
        return Path(os.environ.get("APPDATA") or home) / host
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / host


def _data_dir_of(argv: tuple[str, ...]) -> str | None:
    for n, arg in enumerate(argv):
        if arg.startswith("--user-data-dir="):
            return arg.split("=", 1)[1]
        if arg == "--user-data-dir" and n + 1 < len(argv):
            return argv[n + 1]
    return None


def _argv_of(pid: int) -> tuple[str, ...] | None:
    raw = _read(f"/proc/{pid}/cmdline", 1 << 16)
    if raw:
        return tuple(os.fsdecode(a) for a in raw.rstrip(b"\0").split(b"\0"))
    return None


def _named_processes() -> list[tuple[int, str]]:
    """(pid, process name) of every other process."""
    me = os.getpid()
    if sys.platform.startswith("linux") and os.path.isdir("/proc/self"):
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != me:
                comm = _read(f"/proc/{entry}/comm", 64)
                if comm is not None:
                    out.append((int(entry), comm.decode("utf-8", "replace").strip()))
        return out
    import psutil

    return [(p.info["pid"], p.info["name"] or "") for p in psutil.process_iter(["pid", "name"]) if p.info["pid"] != me]


def _cmdline(pid: int) -> tuple[str, ...] | None:
    argv = _argv_of(pid) if sys.platform.startswith("linux") else None
    if argv is None:
        try:
            import psutil

            argv = tuple(psutil.Process(pid).cmdline())
        except Exception:  # noqa: BLE001 - gone, or not ours to read
            return None
    return argv


def editors_using(data_dir: Path | None, *, mention: str | None = None) -> str | None:
    """"<name> (pid N) is running on <folder>" for an editor of the VS Code family whose user data
    folder is ``data_dir``; with ``data_dir`` None (an extension folder outside an editor's, such as
    ``~/.cline/data``), any editor or runtime whose command line mentions ``mention``."""
    wanted = os.path.realpath(data_dir) if data_dir is not None else None
    remote = data_dir is not None and any(part.startswith(".") and part.endswith("-server") for part in Path(data_dir).parts)
    for pid, name in _named_processes():
        base = _base(name).lower()
        if wanted is not None and not remote and base not in EDITORS:
            continue
        if (wanted is None or remote) and base not in EDITORS and base not in _RUNTIMES:
            continue
        argv = _cmdline(pid)
        if not argv:
            continue
        if wanted is None or remote:
            needle = mention if wanted is None else str(Path(data_dir).parent)
            if needle and any(needle in arg for arg in argv):
                return f"{name} (pid {pid}) is running"
            continue
        given = _data_dir_of(argv)
        theirs = given if given is not None else str(_default_data_dir(EDITORS[base]))
        if os.path.realpath(theirs) == wanted:
            return f"{name} (pid {pid}) is running on {data_dir}"
    return None
