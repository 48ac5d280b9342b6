"""``levelsess schedule``: install, read back and remove the nightly keep (the imports that keep
every chat past its tool's own cleanup) in this machine's scheduler.

One job, owned by levelsess and marked so it can be found again: a block between two marker lines
in the user's crontab (where ``crontab`` exists), else a systemd user timer, a launchd agent on
macOS, a Task Scheduler task on Windows.  Everything else in the user's crontab is kept byte for
byte.  Install is idempotent (the same job twice changes nothing), ``status`` reads back what is
installed and compares it with what install would write, ``remove`` takes out exactly the job.
The job records the arguments it was installed with, so ``status`` and a reinstall re-plan it the
same way.  The library never prints; it returns :class:`Outcome` / :class:`Status`.
"""

from __future__ import annotations

import json
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import durable, shellwords
from .errors import SchedulerError, UsageError

APPS = ("claude", "codex", "cursor", "vscode", "copilot", "gemini", "opencode", "cline")
MARK = "# levelsess nightly keep (managed by levelsess schedule)"
END = "# end of levelsess nightly keep"
UNIT = "levelsess-keep"
LABEL = "dev.levelsess.keep"
TASK = "levelsess keep"
DEFAULT_AT = "03:17"
SCHEDULERS = ("cron", "systemd", "launchd", "schtasks")
_RECORD = re.compile(r"levelsess schedule (\{[^\n]*?\})")


@dataclass(frozen=True)
class Job:
    """What runs every night: one ``levelsess import`` per app, at ``hour:minute``."""

    apps: tuple[str, ...]
    at: str
    store: str
    commands: tuple[tuple[str, ...], ...]
    missing: tuple[str, ...] = ()  # apps with no install found now: their import looks again each night

    @property
    def hour(self) -> int:
        return int(self.at[:2])

    @property
    def minute(self) -> int:
        return int(self.at[3:])

    def record(self) -> str:
        """The arguments it was planned from, as one line a later run reads back (no ``--``: XML comments)."""
        text = json.dumps({"apps": list(self.apps), "at": self.at, "store": self.store}, sort_keys=True)
        return "levelsess schedule " + text.replace("--", "-\\u002d")

    def shell(self) -> str:
        """The commands as one POSIX shell line (``;``: one app's failure does not skip the next)."""
        return "; ".join(shlex.join(argv) for argv in self.commands)  # (cron's sh: POSIX quotes, which hold any bytes)


@dataclass(frozen=True)
class Status:
    scheduler: str
    where: str
    installed: bool
    matches: bool
    active: bool | None  # enabled in the scheduler; None when it cannot be asked here
    installed_text: str | None
    expected_text: str
    job: Job
    note: str = ""

    @property
    def exit_code(self) -> int:
        return 0 if self.installed and self.matches and self.active is not False else 4

    def to_json(self) -> dict:
        return {"scheduler": self.scheduler, "where": self.where, "installed": self.installed, "matches": self.matches,
                "active": self.active, "installed_text": self.installed_text, "expected_text": self.expected_text,
                "apps": list(self.job.apps), "at": self.job.at, "store": self.job.store,
                "commands": [list(c) for c in self.job.commands], "missing": list(self.job.missing), "note": self.note}


@dataclass(frozen=True)
class Outcome:
    action: str  # install | remove
    changed: bool
    dry_run: bool
    ran: tuple[str, ...] = ()    # scheduler commands run (dry run: that would run)
    todo: tuple[str, ...] = ()   # commands the user must run: the scheduler cannot be asked from here
    status: Status | None = None  # read back after the change (before it, on a dry run)
    text: str = ""                # what was (or would be) written or removed
    backup: str | None = None     # the user's crontab as it was, saved before it was replaced
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {"version": 1, "action": self.action, "changed": self.changed, "dry_run": self.dry_run, "ran": list(self.ran),
                "todo": list(self.todo), "text": self.text, "backup": self.backup, "notes": list(self.notes),
                "status": self.status.to_json() if self.status else None, "exit": 0}


# -- the job ------------------------------------------------------------------------------------


def parse_at(text: str) -> str:
    """``HH:MM`` (24-hour) normalised to two digits each, or a UsageError."""
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise UsageError(f"--at {text}: expected a time of day as HH:MM (00:00 to 23:59)")
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def levelsess_argv() -> list[str]:
    """How a scheduler (no PATH, no virtualenv) starts this levelsess: absolute paths only."""
    name = "levelsess.exe" if sys.platform == "win32" else "levelsess"
    beside = Path(sys.executable).with_name(name)
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("levelsess")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "toolkit.cli"]


def plan_job(apps: list[str] | None, at: str | None, store: Path) -> Job:
    """The job for ``apps`` (default: every app with an install on this machine) at ``at``."""
    from .importers import load

    for app in apps or []:
        if app not in APPS:
            raise UsageError(f"--app {app}: levelsess keeps {', '.join(APPS)}")
    chosen = list(dict.fromkeys(apps)) if apps else [a for a in APPS if load(a).detect()]
    if not chosen:
        raise UsageError("found no Claude Code, Codex, Cursor, VS Code, Copilot CLI, Gemini CLI, OpenCode or Cline (Roo, Kilo Code) install to keep",
                         hint="name one with --app " + "|".join(APPS))
    store_text = os.path.abspath(store)
    exe, commands, missing = levelsess_argv(), [], []
    for app in chosen:
        sources = [os.path.abspath(s) for s in load(app).detect()]
        missing += [] if sources else [app]
        argv = [*exe, "import", "--from", app]
        for source in sources:
            argv += ["--source", source]
        commands.append(tuple(argv + ["--store", store_text, "-q"]))
    return Job(tuple(chosen), parse_at(at or DEFAULT_AT), store_text, tuple(commands), tuple(missing))


def recorded(text: str | None) -> dict | None:
    """The arguments an installed job was planned from, or None."""
    match = _RECORD.search(text or "")
    if not match:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# -- running a scheduler's command ----------------------------------------------------------------


def _run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="surrogateescape", timeout=120,
                              stdin=subprocess.DEVNULL)  # (a crontab may name a path that is not UTF-8: its bytes kept)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SchedulerError(f"{shellwords.join(argv)}: {exc}") from exc
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise SchedulerError(f"{shellwords.join(argv)} exited {done.returncode}" + (f": {detail[-1]}" if detail else ""))
    return done


def _private_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("levelsess", appauthor=False)) / "schedule"


# -- crontab ------------------------------------------------------------------------------------


class Cron:
    """A block between :data:`MARK` and :data:`END` in the user's crontab, read with ``crontab -l``
    and written back with ``crontab FILE``.  ``$LEVELSESS_CRONTAB`` names another crontab program."""

    name = "cron"

    def __init__(self) -> None:
        self.exe = os.environ.get("LEVELSESS_CRONTAB") or shutil.which("crontab")
        if not self.exe:
            raise SchedulerError("there is no crontab command on this machine", hint="pass --scheduler systemd")

    @property
    def where(self) -> str:
        return "crontab"

    def current(self) -> str:
        done = _run([self.exe, "-l"], check=False)
        if done.returncode == 0:
            return done.stdout
        if "no crontab" in (done.stderr or "").lower():
            return ""
        raise SchedulerError(f"{self.exe} -l exited {done.returncode}: {(done.stderr or '').strip()}")

    @staticmethod
    def block(job: Job) -> str:
        command = job.shell().replace("%", "\\%")  # cron turns a bare % into a newline
        return (f"{MARK}\n# {job.record()}\n# remove with: levelsess schedule remove\n"
                f"{job.minute} {job.hour} * * * {command}\n{END}\n")

    @staticmethod
    def split(text: str) -> tuple[str, str | None, str]:
        """(before, block or None, after): the crontab around levelsess's block."""
        lines = text.splitlines(keepends=True)
        starts = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == MARK]
        ends = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == END]
        if not starts and not ends:
            return text, None, ""
        if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
            raise SchedulerError("the crontab holds levelsess's marker lines but not as one block",
                                 hint="fix it with `crontab -e` (one block from the levelsess marker to its end line), then rerun")
        start, end = starts[0], ends[0]
        return "".join(lines[:start]), "".join(lines[start:end + 1]), "".join(lines[end + 1:])

    def status(self, job: Job) -> Status:
        _before, block, _after = self.split(self.current())
        expected = self.block(job)
        note = "" if block is None or _cron_daemon_runs() is not False else \
            "no cron daemon runs on this machine now: the job runs once one does (a container? start cron)"
        return Status(self.name, self.where, block is not None, block == expected, block is not None, block, expected, job, note)

    def install(self, job: Job, dry_run: bool) -> Outcome:
        text = self.current()
        before, block, after = self.split(text)
        wanted = self.block(job)
        if block == wanted:
            return Outcome("install", False, dry_run, status=self.status(job), text=wanted)
        if block is None:
            before, after = (text + "\n" if text and not text.endswith("\n") else text), ""
        return self._write(text, before + wanted + after, "install", job, dry_run, wanted)

    def remove(self, job: Job, dry_run: bool) -> Outcome:
        text = self.current()
        before, block, after = self.split(text)
        if block is None:
            return Outcome("remove", False, dry_run, status=self.status(job))
        return self._write(text, before + after, "remove", job, dry_run, block)

    def _write(self, old: str, new: str, action: str, job: Job, dry_run: bool, shown: str) -> Outcome:
        private = _private_dir()
        command = f"{self.exe} {private / 'crontab.new'}"
        if dry_run:
            return Outcome(action, True, True, ran=(command,), status=self.status(job), text=shown)
        durable.ensure_dir(private)
        backup = private / f"crontab.{durable.utc_stamp()}.before"
        durable.write_new(backup, old.encode("utf-8", "surrogateescape"))  # the user's crontab as it was: never lost
        durable.atomic_write(private / "crontab.new", new.encode("utf-8", "surrogateescape"))  # (bytes as read, paths as named)
        _run([self.exe, str(private / "crontab.new")])
        if self.current() != new:
            raise SchedulerError(f"crontab -l does not read back what was written (it was saved in {backup})")
        return Outcome(action, True, False, ran=(command,), status=self.status(job), text=shown, backup=str(backup))


def _cron_daemon_runs() -> bool | None:
    """Whether a cron daemon is running (None: cannot tell); read-only."""
    try:
        import psutil

        return any((p.info.get("name") or "") in ("cron", "crond", "cronie", "busybox-crond", "fcron") for p in psutil.process_iter(["name"]))
    except Exception:  # noqa: BLE001 - a process table we cannot read says nothing either way
        return None


# -- schedulers configured by files -------------------------------------------------------------------


class Files:
    """A scheduler configured by files levelsess writes (each holding :data:`MARK`), then loaded
    by the scheduler's own tool when it answers here; else the files are written and the commands
    that load them are returned for the user to run."""

    name = ""

    def files(self, job: Job) -> dict[Path, bytes]:
        raise NotImplementedError

    def available(self) -> bool:
        raise NotImplementedError

    def is_active(self) -> bool:
        raise NotImplementedError

    def load_commands(self) -> list[list[str]]:
        raise NotImplementedError

    def unload_commands(self) -> list[list[str]]:
        raise NotImplementedError

    def after_remove(self) -> list[list[str]]:
        return []

    def show(self, argv: list[str]) -> str:
        """A command as the user would type it in this scheduler's shell."""
        return shellwords.join(argv)

    @property
    def where(self) -> str:
        return ", ".join(str(p) for p in self.files(_EMPTY))

    def _read(self, path: Path) -> bytes | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SchedulerError(f"cannot read {path}: {exc.strerror}") from exc
        if MARK[2:].encode() not in data and MARK[2:].encode("utf-16-le") not in data:
            raise SchedulerError(f"{path} exists and was not written by levelsess schedule",
                                 hint="move it away (it is not levelsess's), then rerun")
        return data

    def status(self, job: Job) -> Status:
        wanted = self.files(job)
        found = {path: self._read(path) for path in wanted}
        installed = any(data is not None for data in found.values())
        active = (self.is_active() if self.available() else None) if installed else False
        note = "" if active is not None else f"{self.name} cannot be asked from here; the files are written"
        shown = "".join(_text(data) for data in found.values() if data is not None) or None
        return Status(self.name, self.where, installed, found == wanted, active, shown,
                      "".join(_text(data) for data in wanted.values()), job, note)

    def install(self, job: Job, dry_run: bool) -> Outcome:
        wanted = self.files(job)
        stale = [path for path, data in wanted.items() if self._read(path) != data]
        live = self.available()
        load = stale or (live and not self.is_active())
        commands = self.load_commands() if load else []
        shown = "".join(_text(data) for data in wanted.values())
        if not stale and not load:
            return Outcome("install", False, dry_run, status=self.status(job), text=shown)
        if dry_run:
            return Outcome("install", True, True, ran=tuple(map(self.show, commands)) if live else (),
                           todo=() if live else tuple(map(self.show, commands)), status=self.status(job), text=shown)
        for path in stale:
            durable.ensure_dir(path.parent)
            durable.atomic_write(path, wanted[path])
        if live:
            for argv in commands:
                _run(argv)
        return Outcome("install", True, False, ran=tuple(map(self.show, commands)) if live else (),
                       todo=() if live else tuple(map(self.show, commands)), status=self.status(job), text=shown)

    def remove(self, job: Job, dry_run: bool) -> Outcome:
        present = [path for path in self.files(job) if self._read(path) is not None]
        live = self.available()
        unload = self.unload_commands() if live and (present or self.is_active()) else []
        if not present and not unload:
            return Outcome("remove", False, dry_run, status=self.status(job))
        after = self.after_remove() if live else []
        ran = tuple(map(self.show, unload + after))
        shown = "".join(_text(self._read(path)) for path in present)
        if dry_run:
            return Outcome("remove", True, True, ran=ran, status=self.status(job), text=shown)
        for argv in unload:
            _run(argv, check=False)  # not loaded is fine: the files go either way
        for path in present:
            durable.remove(path)
        for argv in after:
            _run(argv)
        return Outcome("remove", True, False, ran=ran, status=self.status(job), text=shown)


def _text(data: bytes | None) -> str:
    if data is None:
        return ""
    if data.startswith(b"\xff\xfe"):
        return data[2:].decode("utf-16-le")
    return data.decode("utf-8", "backslashreplace")


def _systemd_quote(arg: str) -> str:
    """One ExecStart= word: double-quoted, with systemd's specifiers (%) and variables ($) escaped,
    and each byte of a name that is not UTF-8 as ``\\xNN`` (a unit file is UTF-8; systemd reads the
    escape back as that byte)."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    if any("\udc80" <= ch <= "\udcff" for ch in escaped):
        escaped = "".join(f"\\x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else ch for ch in escaped)
    return f'"{escaped}"'


class Systemd(Files):
    """``~/.config/systemd/user/levelsess-keep.{service,timer}``, enabled with ``systemctl --user``."""

    name = "systemd"

    def folder(self) -> Path:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        return Path(config) / "systemd" / "user"

    def files(self, job: Job) -> dict[Path, bytes]:
        # "-": one app's failed import does not stop the next one's
        execs = "".join(f"ExecStart=-{' '.join(map(_systemd_quote, argv))}\n" for argv in job.commands)
        service = (f"{MARK}\n# {job.record()}\n[Unit]\nDescription=levelsess nightly keep: import chats into the store\n\n"
                   f"[Service]\nType=oneshot\n{execs}")
        timer = (f"{MARK}\n# {job.record()}\n[Unit]\nDescription=levelsess nightly keep at {job.at}\n\n"
                 f"[Timer]\nOnCalendar=*-*-* {job.at}:00\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n")
        return {self.folder() / f"{UNIT}.service": service.encode(), self.folder() / f"{UNIT}.timer": timer.encode()}

    def available(self) -> bool:
        return bool(shutil.which("systemctl")) and _run(["systemctl", "--user", "show-environment"], check=False).returncode == 0

    def is_active(self) -> bool:
        return _run(["systemctl", "--user", "is-enabled", f"{UNIT}.timer"], check=False).stdout.strip() == "enabled"

    def load_commands(self) -> list[list[str]]:
        return [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", f"{UNIT}.timer"]]

    def unload_commands(self) -> list[list[str]]:
        return [["systemctl", "--user", "disable", "--now", f"{UNIT}.timer"]]

    def after_remove(self) -> list[list[str]]:
        return [["systemctl", "--user", "daemon-reload"]]


class Launchd(Files):
    """``~/Library/LaunchAgents/dev.levelsess.keep.plist``, loaded with ``launchctl``."""

    name = "launchd"

    def path(self) -> Path:
        return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"

    def files(self, job: Job) -> dict[Path, bytes]:
        argv = list(job.commands[0]) if len(job.commands) == 1 else ["/bin/sh", "-c", job.shell()]
        body = plistlib.dumps({"Label": LABEL, "ProgramArguments": argv,
                               "StartCalendarInterval": {"Hour": job.hour, "Minute": job.minute}}, sort_keys=False)
        head, _, rest = body.partition(b"\n")  # the marker after the XML declaration, which must come first
        comment = f"<!-- {MARK[2:]} -->\n<!-- {job.record()} -->\n"
        return {self.path(): head + b"\n" + comment.encode() + rest}

    def _domain(self) -> str:
        return f"gui/{os.getuid()}" if hasattr(os, "getuid") else "gui"

    def available(self) -> bool:
        return bool(shutil.which("launchctl"))

    def is_active(self) -> bool:
        return _run(["launchctl", "print", f"{self._domain()}/{LABEL}"], check=False).returncode == 0

    def load_commands(self) -> list[list[str]]:
        # bootout fails for a job that is not loaded: only a loaded (older) one is taken out first
        bootout = [["launchctl", "bootout", f"{self._domain()}/{LABEL}"]] if self.available() and self.is_active() else []
        return bootout + [["launchctl", "bootstrap", self._domain(), str(self.path())]]

    def unload_commands(self) -> list[list[str]]:
        return [["launchctl", "bootout", f"{self._domain()}/{LABEL}"]]


class Schtasks(Files):
    """A task ``levelsess keep`` registered from an XML file with ``schtasks /Create /XML``."""

    name = "schtasks"

    def path(self) -> Path:
        return _private_dir() / f"{UNIT}.xml"

    def files(self, job: Job) -> dict[Path, bytes]:
        from xml.sax.saxutils import escape

        actions = "".join(f"<Exec><Command>{escape(argv[0])}</Command><Arguments>{escape(subprocess.list2cmdline(argv[1:]))}"
                          "</Arguments></Exec>" for argv in job.commands)
        xml = ('<?xml version="1.0" encoding="UTF-16"?>\n'
               f"<!-- {MARK[2:]} -->\n<!-- {job.record()} -->\n"
               '<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">'
               "<RegistrationInfo><Description>levelsess nightly keep: import chats into the store</Description></RegistrationInfo>"
               f"<Triggers><CalendarTrigger><StartBoundary>2026-01-01T{job.at}:00</StartBoundary>"
               "<ScheduleByDay><DaysInterval>1</DaysInterval></ScheduleByDay></CalendarTrigger></Triggers>"
               "<Settings><StartWhenAvailable>true</StartWhenAvailable><DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>"
               "</Settings>"
               f'<Actions Context="Author">{actions}</Actions></Task>\n')
        return {self.path(): b"\xff\xfe" + xml.encode("utf-16-le")}

    def available(self) -> bool:
        return bool(shutil.which("schtasks"))

    def is_active(self) -> bool:
        return _run(["schtasks", "/Query", "/TN", TASK], check=False).returncode == 0

    def load_commands(self) -> list[list[str]]:
        return [["schtasks", "/Create", "/TN", TASK, "/XML", str(self.path()), "/F"]]

    def show(self, argv: list[str]) -> str:
        return subprocess.list2cmdline(argv)  # cmd.exe quotes with "", never ''


    def unload_commands(self) -> list[list[str]]:
        return [["schtasks", "/Delete", "/TN", TASK, "/F"]]


_EMPTY = Job((), DEFAULT_AT, "", ())


def scheduler(name: str | None = None, platform: str | None = None):
    """The scheduler to use: ``name``, else Task Scheduler on Windows, launchd on macOS, the
    crontab where ``crontab`` exists, else a systemd user timer."""
    if name is not None and name not in SCHEDULERS:
        raise UsageError(f"--scheduler {name}: expected one of {', '.join(SCHEDULERS)}")
    platform = platform or sys.platform
    if name is None:
        name = {"win32": "schtasks", "darwin": "launchd"}.get(platform)
    if name is None:
        name = "cron" if os.environ.get("LEVELSESS_CRONTAB") or shutil.which("crontab") else "systemd"
    return {"cron": Cron, "systemd": Systemd, "launchd": Launchd, "schtasks": Schtasks}[name]()


# -- the three verbs ------------------------------------------------------------------------------


def _job_for(backend, apps: list[str] | None, at: str | None, store: Path | None, default_store: Path) -> Job:
    """The job the arguments name; what they leave out comes from the installed job's record."""
    if apps and at and store:
        return plan_job(apps, at, store)
    text = backend.status(_EMPTY).installed_text
    found = recorded(text) or {}
    return plan_job(apps or found.get("apps") or None, at or found.get("at"), store or Path(found.get("store") or default_store))


def install(backend, apps, at, store, default_store: Path, dry_run: bool = False) -> Outcome:
    """Install (or bring up to date) the nightly keep; a second identical install changes nothing."""
    job = _job_for(backend, apps, at, store, default_store)
    outcome = backend.install(job, dry_run)
    notes = tuple(f"no {app} install found now: its import looks again each night" for app in job.missing)
    return Outcome(**{**outcome.__dict__, "notes": notes})


def remove(backend, dry_run: bool = False) -> Outcome:
    """Take out exactly the nightly keep (nothing else of the user's)."""
    return backend.remove(_EMPTY, dry_run)


def status(backend, apps, at, store, default_store: Path) -> Status:
    """What is installed, and whether it is what install would write now."""
    if not _installed(backend):
        job = _EMPTY if not apps else plan_job(apps, at, store or default_store)
        return backend.status(job)
    return backend.status(_job_for(backend, apps, at, store, default_store))


def _installed(backend) -> bool:
    return backend.status(_EMPTY).installed
