"""Helpers for the Claude Code layout tests: real fixture trees, damage builders, and an
independent model of the graph rules (SOURCES-AGENTS.md §1.8 "Decision (checker)").

Nothing here imports levelsess's layout code: the expectations are computed from the rules
with the standard library's ``json``, so a test compares two implementations, not one with
itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import CliResult

ROOT = Path(__file__).resolve().parents[2]  # the checkout (the worktree)
FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "claude-code"  # shared/ lies beside it
PROJECTS = FIXTURES / "projects"

CHAIN = frozenset({"user", "assistant", "system", "progress", "attachment"})
GRAPH_CODES = frozenset({"duplicate-uuid", "dangling-parent", "parent-elsewhere", "broken-chain", "dangling-tool-use"})


def need_fixtures() -> None:
    if not PROJECTS.is_dir():
        pytest.skip(f"{PROJECTS} is not here")


def fixture_files() -> list[Path]:
    """Every transcript of the fixture tree (main sessions and subagents), relative to projects/."""
    if not PROJECTS.is_dir():
        return []
    return sorted(p.relative_to(PROJECTS) for p in PROJECTS.rglob("*.jsonl"))


def main_files() -> list[Path]:
    return [p for p in fixture_files() if "subagents" not in p.parts]


def subagent_files() -> list[Path]:
    return [p for p in fixture_files() if "subagents" in p.parts]


def copy_tree(tmp_path: Path) -> Path:
    """Copy the fixture tree to ``tmp_path/.claude`` (writable); return the .claude root."""
    need_fixtures()
    root = tmp_path / ".claude"
    shutil.copytree(FIXTURES, root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chmod(os.path.join(dirpath, name), 0o755 if name in dirnames else 0o644)
    return root


def fixture_bytes(rel: Path | str) -> bytes:
    need_fixtures()
    return (PROJECTS / rel).read_bytes()


def one_session(tmp_path: Path, rel: Path | str, data: bytes | None = None) -> tuple[Path, Path]:
    """A .claude root holding one transcript at its real relative path (optionally other bytes);
    returns (root, journal)."""
    rel = Path(rel)
    root = tmp_path / ".claude"
    journal = root / "projects" / rel
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_bytes(fixture_bytes(rel) if data is None else data)
    return root, journal


# --- lines -----------------------------------------------------------------------------------


def lines_of(data: bytes) -> list[bytes]:
    """The terminated lines of ``data`` (without their LF); a torn tail is not a line."""
    return data.split(b"\n")[:-1]


def join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def offsets(lines: list[bytes]) -> list[int]:
    """Byte offset of each line of ``join(lines)``."""
    out, at = [], 0
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


def parse(line: bytes) -> object:
    """The stdlib's verdict on one line: the value, or None when it is not JSON (or not UTF-8)."""
    try:
        return json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def is_record(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def is_chain(value: object) -> bool:
    return is_record(value) and value["type"] in CHAIN and isinstance(value.get("uuid"), str)


def fresh_uuid(seed: object) -> str:
    """A uuid-shaped string that names nothing in any fixture."""
    h = hashlib.sha256(repr(seed).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def set_parent(line: bytes, parent: str | None) -> bytes:
    """Rewrite a chain record's ``parentUuid`` (its first key, §1.4) in place, bytes elsewhere kept."""
    head = b'{"parentUuid":'
    assert line.startswith(head), line[:40]
    rest = line[len(head):]
    if rest.startswith(b"null"):
        old = 4
    else:
        assert rest.startswith(b'"')
        old = rest.index(b'"', 1) + 1
    value = b"null" if parent is None else json.dumps(parent).encode()
    return head + value + rest[old:]


def nested_typed_end(data: bytes) -> int | None:
    """Where the earliest-ending whole JSON object with a string ``type`` inside ``data`` ends
    (other than one starting at byte 0), or None: the first cut point after which a prefix of a
    Claude Code record holds a content block, a message or a tool result that parses by itself."""
    text = data.decode("utf-8", "surrogateescape")
    decoder = json.JSONDecoder()
    best = None
    start = text.find("{", 1)
    while start >= 0:
        try:
            obj, stop = decoder.raw_decode(text, start)
        except ValueError:
            obj = None
        if is_record(obj):
            stop_b = len(text[:stop].encode("utf-8", "surrogateescape"))
            best = stop_b if best is None else min(best, stop_b)
        start = text.find("{", start + 1)
    return best


def holds_nested_typed_object(data: bytes) -> bool:
    return nested_typed_end(data) is not None


# --- the graph, modelled from the rules -----------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """Graph findings the rules call for: a Counter of (code, line, offset), and the walk."""

    findings: Counter
    reachable: int | None = None  # R: main-chain records the resume walk visits
    main: int | None = None       # M: main-chain records in the file
    break_line: int | None = None

    @property
    def errors(self) -> bool:
        return any(code in ("duplicate-uuid", "dangling-parent", "broken-chain") for code, _, _ in self.findings)


def entries_of(data: bytes) -> list[tuple[int, int, dict]]:
    """(line number, offset, record) for every line of ``data`` that is one record: the terminated
    ones, and a final line that lacks only its newline (a whole record: DESIGN §2.4 keeps it)."""
    lines = data.split(b"\n")
    out = []
    for number, (line, start) in enumerate(zip(lines, offsets(lines)), start=1):
        value = parse(line)
        if is_record(value):
            out.append((number, start, value))
    return out


def expected_graph(data: bytes | None = None, records: list[tuple[int, int, dict]] | None = None) -> Expected:
    """The graph findings for the terminated lines of ``data`` (a torn tail is not read), or for
    ``records`` given as (line, offset, record) when a damaged line still holds whole records."""
    if records is None:
        records = entries_of(data)
    found: Counter = Counter()
    chain = [(n, o, r) for n, o, r in records if is_chain(r)]
    by_uuid: dict[str, int] = {}  # uuid -> index into chain (the last one wins)
    for i, (n, o, r) in enumerate(chain):
        if r["uuid"] in by_uuid:
            found["duplicate-uuid", n, o] += 1
        by_uuid[r["uuid"]] = i
    if not chain:
        return Expected(found)
    subagent = all(r.get("isSidechain") is True for _, _, r in chain)
    for i, (n, o, r) in enumerate(chain):
        parent = r.get("parentUuid")
        if parent is None or (isinstance(parent, str) and parent in by_uuid):
            continue
        found["parent-elsewhere" if i == 0 or subagent else "dangling-parent", n, o] += 1
    reachable = main = break_line = None
    if not subagent:
        main_idx = [i for i, (_, _, r) in enumerate(chain) if r.get("isSidechain") is not True]
        main = len(main_idx)
        seen: set[int] = set()
        current, broken = main_idx[-1], None
        while True:
            if current in seen:
                broken = current  # a cycle
                break
            seen.add(current)
            record = chain[current][2]
            parent = record.get("parentUuid")
            if parent is None:
                logical = record.get("logicalParentUuid")
                if record.get("subtype") == "compact_boundary" and isinstance(logical, str) and logical in by_uuid:
                    current = by_uuid[logical]
                    continue
                break
            if isinstance(parent, str) and parent in by_uuid:
                current = by_uuid[parent]
                continue
            if current != 0:
                broken = current
            break
        reachable = sum(1 for i in seen if chain[i][2].get("isSidechain") is not True)
        if broken is not None:
            n, o, _ = chain[broken]
            found["broken-chain", n, o] += 1
            break_line = n
        found.update(_unanswered_tool_use(records))
    return Expected(found, reachable, main, break_line)


def _unanswered_tool_use(records: list) -> Counter:
    """dangling-tool-use: a tool_use in the last assistant message with no tool_result anywhere."""
    assistants = [(n, o, r) for n, o, r in records
                  if is_chain(r) and r["type"] == "assistant" and r.get("isSidechain") is not True]
    if not assistants:
        return Counter()

    def key(record):
        message = record.get("message")
        return (message.get("id") if isinstance(message, dict) else None) or record["uuid"]

    last = key(assistants[-1][2])
    # the parts of the last message: the run of assistant lines sharing its id, back from the end
    parts = []
    for n, o, r in reversed(assistants):
        if key(r) != last:
            break
        parts.append((n, o, r))
    answered = set()
    for _, _, r in records:
        message = r.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if r.get("type") == "user" and isinstance(content, list):
            answered |= {b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"}
    open_uses = {}  # tool_use id -> where; a call written twice (a replayed line) is placed at its later copy
    for n, o, r in reversed(parts):
        content = r["message"].get("content") if isinstance(r.get("message"), dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") not in answered:
                open_uses[block.get("id")] = (n, o)
    return Counter({("dangling-tool-use", *min(open_uses.values())): 1}) if open_uses else Counter()


def graph_findings(findings: list[dict]) -> Counter:
    return Counter((f["code"], f["line"], f["offset"]) for f in findings if f["code"] in GRAPH_CODES)


def resume_figures(message: str) -> tuple[int, int, int]:
    """(R, M, L) from "resume shows R of M messages: the chain breaks at line L …"."""
    import re

    found = re.match(r"resume shows ([\d,]+) of ([\d,]+) messages: the chain breaks at line (\d+)", message)
    assert found, message
    return tuple(int(g.replace(",", "")) for g in found.groups())


def typed_text(text: str) -> str | None:
    """The typed part of one text, per the title rule: whole tag-wrapped elements at its start
    (``<system-reminder>…</system-reminder>``) are the tool's; what follows them is typed, unless
    it is empty or opens with a tag, a caveat or a continuation preamble."""
    import re

    injected = re.compile(r"^\s*(<[a-z][a-z_-]*>|Caveat:|This session is being continued from a previous conversation)")
    stripped = False
    while injected.match(text) and (element := re.match(r"\s*<([a-z][a-z_-]*)>.*?</\1>", text, re.S)):
        text, stripped = text[element.end():], True
    if not text.strip() or injected.match(text):
        return None
    return text.strip() if stripped else text


def first_prompt(data: bytes) -> str | None:
    """The first typed prompt of a main transcript, per the title rule: a main-chain user record,
    not isMeta / compact summary, with typed text (a list's typed text blocks joined; the blocks an
    IDE added, a tool result's record: none)."""
    for line in lines_of(data):
        r = parse(line)
        if not (is_chain(r) and r["type"] == "user") or r.get("isSidechain") or r.get("isMeta") or r.get("isCompactSummary"):
            continue
        content = (r.get("message") or {}).get("content")
        if isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                continue
            typed = [typed_text(b["text"]) for b in content if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str)]
            text = "\n".join(t for t in typed if t is not None) or None
        elif isinstance(content, str):
            text = typed_text(content)
        else:
            continue
        if text:
            return " ".join(text.split())[:120]
    return None


def expected_title(data: bytes) -> str | None:
    """last custom-title > last ai-title > a summary whose leafUuid is in the file > first typed prompt."""
    records = [parse(line) for line in lines_of(data)]
    records = [r for r in records if is_record(r)]
    custom = [r["customTitle"] for r in records if r["type"] == "custom-title" and isinstance(r.get("customTitle"), str)]
    ai = [r["aiTitle"] for r in records if r["type"] == "ai-title" and isinstance(r.get("aiTitle"), str)]
    uuids = {r["uuid"] for r in records if is_chain(r)}
    summaries = [r["summary"] for r in records if r["type"] == "summary" and r.get("leafUuid") in uuids]
    if custom:
        return custom[-1]
    if ai:
        return ai[-1]
    if summaries:
        return summaries[0]
    return first_prompt(data)


# --- levelsess's own data folder, and processes --------------------------------------------


def data_dir() -> Path:
    """platformdirs' user_data_dir("levelsess") (the autouse fixture points it into a temp home)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("levelsess", appauthor=False))


def saved_tails() -> list[bytes]:
    return [p.read_bytes() for p in sorted(data_dir().rglob("*.tail"))] if data_dir().exists() else []


@contextlib.contextmanager
def own_data_home():
    """A fresh XDG_DATA_HOME for one hypothesis example (the autouse fixture is per test)."""
    old = os.environ.get("XDG_DATA_HOME")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_DATA_HOME"] = tmp
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("XDG_DATA_HOME", None)
            else:
                os.environ["XDG_DATA_HOME"] = old


def run_sub(*args, timeout: float = 60) -> CliResult:
    """Run ``levelsess ARGS`` as a separate process (fresh state, a real pid of its own)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "toolkit.cli", *map(str, args)], capture_output=True, env=env,
                          timeout=timeout)
    stderr = proc.stderr.decode("utf-8", "replace")
    return CliResult(proc.returncode, proc.stdout.decode("utf-8", "replace"), stderr)


@contextlib.contextmanager
def holder(path: Path, mode: str = "ab"):
    """A real process that holds ``path`` open (for append by default) until the block ends."""
    code = f"import time; f=open({str(path)!r}, {mode!r}); print('ok', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ok"
        yield proc
    finally:
        proc.kill()
        proc.wait()
