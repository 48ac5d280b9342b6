"""Cursor agent transcripts: ``~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl``
(SOURCES-AGENTS.md §3), a storage era of their own beside the ``state.vscdb`` databases.

Each line is ``{"role": "user"|"assistant", "message": {"content": [blocks]}}``: no ids, no
times, tool calls without ids.  One line is one record: a user line keeps its text byte-exact
(``<user_query>`` wrapper and all; the prompt inside is also given as ``prompt``), an assistant
line becomes text and ``tool_use`` blocks.  The last line usually has no LF: complete, it is the
newest record; unparsable, it is a torn tail (a finding), and everything before it imports.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from ...findings import Finding
from ...lines import loads, split_line
from ..output import Options, Raw, Session, iso_from_ms, safe_id
from ..uris import apply_map, classify, read_workspace_json, subfolders

APP = "cursor"
FOLDER = "agent-transcripts"
SUFFIXES = (".jsonl", ".txt")  # .txt: the plain-text transcripts of builds before February 2026
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_QUERY = re.compile(r"<user_query>\n?(.*?)\n?</user_query>", re.S)


def default_projects() -> Path:
    """``~/.cursor/projects`` (``%USERPROFILE%\\.cursor\\projects`` on Windows)."""
    return Path.home() / ".cursor" / "projects"


def slugify(path: str) -> str:
    """Cursor's project slug: each run of non-alphanumerics becomes one ``-``, ends trimmed."""
    return _NON_ALNUM.sub("-", path).strip("-")


def _transcripts_in(folder: Path) -> list[Path]:
    """``<id>/<id>.jsonl`` (and a flat ``<id>.jsonl``) under one ``agent-transcripts`` folder."""
    found = []
    for entry in sorted(folder.iterdir()):
        inner = [entry / f"{entry.name}{suffix}" for suffix in SUFFIXES] if entry.is_dir() else []
        found += [p for p in inner if p.is_file()]
        if entry.is_file() and entry.suffix in SUFFIXES:
            found.append(entry)
    return found


def find(source: Path) -> list[Path] | None:
    """The transcripts ``--source`` points at (a transcript, its folder, ``agent-transcripts``, a
    project folder, ``~/.cursor/projects`` or ``~/.cursor``); None if it is none of those."""
    if source.is_file():
        return [source] if source.suffix == ".jsonl" or (source.suffix == ".txt" and _slug_of(source)) else None
    if not source.is_dir():
        return None
    if source.parent.name == FOLDER and any((source / f"{source.name}{x}").is_file() for x in SUFFIXES):
        return [p for p in (source / f"{source.name}{x}" for x in SUFFIXES) if p.is_file()]
    if source.name == FOLDER:
        return _transcripts_in(source)
    if (source / FOLDER).is_dir():
        return _transcripts_in(source / FOLDER)
    projects = source / "projects" if (source / "projects").is_dir() and not (source / "workspaceStorage").is_dir() else source
    folders = [p / FOLDER for p in subfolders(projects) if (p / FOLDER).is_dir()]
    return [t for folder in folders for t in _transcripts_in(folder)] if folders else None


def _slug_of(path: Path) -> str | None:
    if path.parent.name == FOLDER:
        return path.parent.parent.name
    if path.parent.parent.name == FOLDER:
        return path.parent.parent.parent.name
    return None


def _walk(slug: str, folder: Path, depth: int = 0) -> list[Path]:
    """Existing folders under ``folder`` whose path slugifies to ``slug`` (a bounded search)."""
    if not slug:
        return [folder]
    if depth > 24:
        return []
    try:
        children = [c for c in folder.iterdir() if c.is_dir() and not c.is_symlink()]
    except OSError:
        return []
    found = []
    for child in children:
        name = slugify(child.name)
        if name and (slug == name or slug.startswith(name + "-")):
            found += _walk(slug[len(name) + 1:], child, depth + 1)
        elif not name:  # a name of only punctuation adds nothing to the slug
            continue
    return found


class Projects:
    """Slug -> project: the unique known folder that slugifies to it (SOURCES-AGENTS §3)."""

    def __init__(self, user_dirs: list[Path]) -> None:
        self._known: dict[str, set[str]] | None = None
        self._decoded: dict[str, str | None] = {}
        self.user_dirs = user_dirs

    def _candidates(self) -> dict[str, set[str]]:
        if self._known is None:
            self._known = {}
            for user in self.user_dirs:
                for folder in subfolders(user / "workspaceStorage"):
                    project, _status, _orphan = classify(read_workspace_json(folder))
                    if project:
                        self._known.setdefault(slugify(project), set()).add(project)
        return self._known

    def project(self, slug: str | None) -> str | None:
        if not slug:
            return None
        known = self._candidates().get(slug, set())
        if len(known) == 1:
            return next(iter(known))
        if not known and os.name != "nt":  # decode against this machine's folders (once per slug)
            if slug not in self._decoded:
                found = _walk(slug, Path("/"))
                self._decoded[slug] = str(found[0]) if len(found) == 1 else None
            return self._decoded[slug]
        return None


def _created(path: Path) -> str | None:
    info = path.stat()
    when = getattr(info, "st_birthtime", None) or info.st_mtime
    return iso_from_ms(when * 1000) or datetime.fromtimestamp(0, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _user_record(blocks: list, t: str) -> dict:
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    if len(texts) == len(blocks) == 1 and isinstance(texts[0], str):
        content: object = texts[0]
    else:
        content = blocks
    record = {"kind": "user", "t": t, "tInferred": True, "content": content}
    joined = "".join(t for t in texts if isinstance(t, str))
    match = _QUERY.search(joined)
    if match:
        record["prompt"] = match.group(1)
    return record


def _assistant_blocks(blocks: list, line: int) -> list:
    out = []
    for index, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            args = block.get("input")
            out.append({"type": "tool_use", "id": block.get("id") or f"line{line}-{index}",
                        "name": block.get("name"), "input": args if isinstance(args, dict) else {"raw": args}})
        else:
            out.append(block)
    return out


def _is_line(value: object) -> bool:
    return isinstance(value, dict)


def _joined(path: Path, number: int, data: bytes, report: Callable[[Finding], None]) -> list[tuple[int, str, object, bytes]]:
    """The whole records of a line holding several run together (``}{``), each with its own key
    (``line:<n>``, then ``line:<n>.2``…), and a ``source-joined`` finding; [] when it holds none."""
    whole = [data[p.start:p.end] for p in split_line(data, _is_line) if p.kind == "record"]
    if not whole:
        return []
    report(Finding("source-joined", "warning", str(path), number, None, f"{len(whole)} whole record(s) run together on line "
                   f"{number}; each was imported on its own"))
    return [(number, f"line:{number}" + (f".{i}" if i > 1 else ""), loads(piece), piece) for i, piece in enumerate(whole, start=1)]


def sessions(paths: list[Path], options: Options, report: Callable[[Finding], None], projects: Projects) -> Iterator[Session]:
    """One session per transcript file, read-only."""
    for path in paths:
        if path.suffix == ".txt":
            report(Finding("source-skipped", "warning", str(path), None, None, "a plain-text agent transcript (Cursor builds "
                           "before February 2026): not imported; levelsess reads the JSONL transcripts only"))
            continue
        try:
            session = _session(path, options, report, projects)
        except OSError as exc:
            report(Finding("unreadable", "error", str(path), None, None, f"cannot read this transcript: {exc}; the rest was imported"))
            continue
        if session is not None:
            yield session


def _session(path: Path, options: Options, report: Callable[[Finding], None], projects: Projects) -> Session | None:
    sid = path.stem
    created = _created(path)
    records: list[dict] = []
    skipped: dict[str, list[int]] = {}
    items = 0
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            complete = line.endswith(b"\n")
            data = line.rstrip(b"\n")
            if not data.strip():
                continue
            items += 1
            try:
                values = [(number, f"line:{number}", loads(data), data)]
            except ValueError as exc:
                values = _joined(path, number, data, report) if complete else []
                if values:
                    items += len(values) - 1  # each record on the line is an item (a cut piece beside them: one more)
                    if len(values) < len(split_line(data, _is_line)):
                        items += 1
                        skipped.setdefault("cut-record", []).append(number)
                elif complete:
                    skipped.setdefault("unreadable", []).append(number)
                    report(Finding("source-unreadable", "error", str(path), number, None, f"line {number} is not JSON ({str(exc)[:80]}); skipped"))
                else:
                    skipped.setdefault("torn", []).append(number)
                    report(Finding("source-torn", "warning", str(path), number, None,
                                   "the last line is incomplete (written mid-turn?); everything before it was imported"))
                if not values:
                    continue
            for number, key, value, data in values:
                message = value.get("message") if isinstance(value, dict) else None
                blocks = message.get("content") if isinstance(message, dict) else None
                role = value.get("role") if isinstance(value, dict) else None
                if role not in ("user", "assistant") or not isinstance(blocks, list):
                    skipped.setdefault("not-a-message", []).append(number)
                    continue
                if role == "user":
                    record = _user_record(blocks, created)
                else:
                    record = {"kind": "assistant", "t": created, "tInferred": True, "content": _assistant_blocks(blocks, number)}
                record["sourceKey"] = key
                record["raw"] = Raw(data, value)
                records.append(record)
    if "not-a-message" in skipped:
        lines = skipped["not-a-message"]
        report(Finding("source-skipped", "warning", str(path), lines[0], None,
                       f"{len(lines)} line(s) that are not a user or assistant message (lines {', '.join(map(str, lines))})"))
    if not records:
        if items:
            report(Finding("source-skipped", "warning", str(path), None, None, f"no session: none of its {items} line(s) became a record"))
        else:  # as for an empty Claude Code transcript: said, never silently passed over
            report(Finding("source-skipped", "warning", str(path), None, None,
                           "holds no whole record (yet): no journal made; an import after it has one picks it up"))
        return None
    slug = _slug_of(path)
    project = projects.project(slug)
    if project is not None:
        status, orphan = classify(Path(project).as_uri() if project.startswith("/") else project)[1:]
    else:
        status, orphan = "unknown", []
    session = Session(safe_id("cursor-agent", sid), options.project or apply_map(project, options.mapping), created, None,
                      {"app": APP, "path": str(path), "key": sid, "version": "agent-transcript:jsonl", "slug": slug},
                      None, records, status=status, orphan=orphan)
    session.source_items = items
    for reason, lines in sorted(skipped.items()):
        session.skip(reason, len(lines))
    return session
