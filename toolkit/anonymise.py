"""Take user, host and project names out of a support bundle's documents, keeping their shape.

Paths keep the folders levelsess and the tools it reads own (``~/.claude/projects/<p1>/<uuid>.jsonl``):
support still sees which tree and which session; every other name becomes a placeholder, the same
one for the same name throughout one run.  Then every name learnt that way, and the user and host
names, are replaced wherever they appear (a message, a next step, copied bytes), case-insensitively
and in the forms a tool writes them (a slug ``-home-ada-app``, a ``file://`` URI's ``%20``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote, unquote

# names that say which tool's tree a path is in, never who or what project it is
SAFE = frozenset(name.casefold() for name in (
    "home", "Users", "root", "tmp", "var", "private", "opt", "usr", "mnt", "media", "Volumes", "srv", "run", "data",
    "Library", "Application Support", "AppData", "Roaming", "Local", "LocalLow", ".config", ".local", "share", "state",
    ".cache", "cache", "levelsess", ".levelsess", ".levelcode", "sessions", ".logician", "recovered", "quarantine",
    "backup", "restore", "schedule", "_unassigned", ".claude", "projects", "subagents", "settings.json", "history.jsonl",
    ".codex", "archived_sessions", "session_index.jsonl", ".cursor", "Cursor", "agent-transcripts", "Code",
    "Code - Insiders", "Code - OSS", "VSCodium", "User", "globalStorage", "workspaceStorage", "chatSessions",
    "chatEditingSessions", "state.vscdb", "state.vscdb-wal", "state.vscdb-shm", "workspace.json", ".copilot",
    "session-state", "events.jsonl", "index.json", "meta.json", "messages.jsonl", "index.json.lock"))
_UUID = r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"
# a session id, a uuid, a date or a hash (with a tool's prefix and extension): names no person chose
_ID = re.compile(rf"(?:claude-|codex-|cursor-|vscode-|copilot-|agent-|rollout-)?"
                 rf"(?:{_UUID}(?:-side-{_UUID})?|\d{{4}}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d(?:-[0-9a-z]{{4}}|-{_UUID})?"
                 rf"|(?=[0-9a-f]*\d)[0-9a-f]{{6,}}|\d+)(?:\.[a-z]+)*", re.IGNORECASE)
# a path inside text: POSIX (``/a/b``, ``~/a``, ``file:///a``) or Windows (``C:\\a``, ``\\\\host\\a``); a lone
# backslash is an escape (``\\x00``), not a folder
_PATH = re.compile(r"(?:file://)?(?:~|[A-Za-z]:)?(?:/[^/\\\s\"'`<>|,;()\[\]{}]+)+/?"
                   r"|(?:[A-Za-z]:|\\\\[^\\\s\"'`<>|]+)(?:\\[^\\\s\"'`<>|,;()\[\]{}]+)+")
MIN_SUBSTRING = 3  # a shorter folder name is replaced only as a whole path component


class Anonymiser:
    def __init__(self, home: str, user: list[str], host: list[str]) -> None:
        self.homes = sorted({h.rstrip("/\\") for h in (home, os.path.realpath(home)) if len(h.rstrip("/\\")) > 1}, key=len,
                            reverse=True)
        self.names: dict[str, str] = {}  # lower-cased name (and its variants) -> placeholder
        self.original: dict[str, str] = {}  # the same, as written (a case-insensitive match of it may lower differently)
        self.exact: dict[str, str] = {}  # names too short to replace inside words: whole components only
        for name in user:
            self._add(name, "<user>", force=True)
        for name in host:
            self._add(name, "<host>", force=True)
        self._pattern: re.Pattern | None = None

    @classmethod
    def here(cls) -> Anonymiser:
        """For this machine: its home, user and host names."""
        import getpass
        import platform
        import socket

        users = [os.environ.get(v, "") for v in ("USER", "LOGNAME", "USERNAME")] + [Path.home().name]
        try:
            users.append(getpass.getuser())
        except (KeyError, OSError):  # no passwd entry (a container's uid)
            pass
        hosts = [socket.gethostname(), platform.node()]
        hosts += [h.split(".")[0] for h in hosts]
        return cls(str(Path.home()), [u for u in users if u], [h for h in hosts if h])

    def _add(self, name: str, placeholder: str | None = None, force: bool = False) -> None:
        key = name.lower()
        if not key or key in self.names or key in self.exact or (not force and (key in SAFE or _ID.fullmatch(name))):
            return
        placeholder = placeholder or f"<p{len({*self.names.values(), *self.exact.values()} - {'<user>', '<host>'}) + 1}>"
        if len(name) < (2 if force else MIN_SUBSTRING):
            self.exact[key] = placeholder
            return
        for variant in {name, re.sub(r"[^A-Za-z0-9]", "-", name), quote(name, errors="surrogateescape")}:  # (a name need not be UTF-8)
            if len(variant.strip("-")) >= (2 if force else MIN_SUBSTRING):
                self.names.setdefault(variant.lower(), placeholder)
                self.original.setdefault(variant, placeholder)
        self._pattern = None

    def learn(self, value: object) -> None:
        """Collect the names in every path of ``value`` (strings, lists, dicts; keys too)."""
        texts = list(_strings(value))
        # whole-string paths first: their names may hold spaces, where a path inside a message stops
        paths = [t for t in texts if _is_path(t)] + [p for t in texts if not _is_path(t) for p in _PATH.findall(t)]
        for path in paths:
            for part in re.split(r"[/\\]", self._home(path)):
                if part not in ("", "~", "file:") and not re.fullmatch(r"[A-Za-z]:", part):
                    self._add(unquote(part))

    def apply(self, value: object) -> object:
        """``value`` with every home, name, user and host replaced."""
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        if isinstance(value, dict):
            return {self._scrub(k) if isinstance(k, str) else k: self.apply(v) for k, v in value.items()}
        return value

    def _home(self, text: str) -> str:
        for home in self.homes:
            text = re.sub(re.escape(home) + r"(?=$|[/\\\s\"'`])", "~", text)
        return text

    def _scrub(self, text: str) -> str:
        text = self._home(text)
        if self.names:
            if self._pattern is None:
                words = sorted({*self.names, *self.original}, key=len, reverse=True)
                self._pattern = re.compile("|".join(map(re.escape, words)), re.IGNORECASE)
            text = self._pattern.sub(lambda m: self.original.get(m.group()) or self.names.get(m.group().lower(), "<p>"), text)
        if self.exact:  # after the longer names: a short one may be a word of a longer one ("my" of "my app")
            text = _PATH.sub(lambda m: re.sub(r"[^/\\]+", lambda c: self.exact.get(c.group().lower(), c.group()), m.group()), text)
        return text


def _is_path(text: str) -> bool:
    return text.startswith(("/", "~/", "\\\\")) or bool(re.match(r"[A-Za-z]:[/\\]", text))


def _strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
