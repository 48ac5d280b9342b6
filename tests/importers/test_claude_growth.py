"""A Claude Code transcript imported while it was being written and again after it grew holds
every content block once: the same blocks as one import of the whole file (issue 23: thinking and
tool_use blocks were doubled when one response's parts, same message.id over several lines,
spanned the old end of the file).  Superseded records (``replaces``) count as gone."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli
from tests.importers.cursor_db import FIXTURES
from toolkit.lines import loads

PROJECTS = FIXTURES / "claude-code" / "projects"


def _split_responses(path: Path) -> bool:
    """Whether a transcript has a response written over several lines (the case that doubled)."""
    seen: Counter = Counter()
    for line in path.read_bytes().splitlines():
        try:
            value = loads(line)
        except ValueError:
            continue
        message = value.get("message") if isinstance(value, dict) else None
        if value.get("type") == "assistant" and isinstance(message, dict) and isinstance(message.get("id"), str):
            seen[message["id"]] += 1
    return any(n > 1 for n in seen.values())


def _inline_sidechains(path: Path) -> bool:
    return b'"isSidechain":true' in path.read_bytes()


#: Small to large (the last: 988 lines, compactions), each with responses written over several lines.
#: A 1.0.x transcript with inline sidechains is left out: its prefix can hold sidechain records
#: that the whole file moves to sessions of their own (a class of its own, not a doubled block).
TRANSCRIPTS = [p for p in sorted(PROJECTS.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
               if "subagents" not in p.parts and _split_responses(p) and not _inline_sidechains(p)]
_ONCE: dict[Path, tuple[Counter, int]] = {}


def effective(journal: Path) -> list[dict]:
    """The journal's records, a superseded one (named by a later ``replaces``) left out."""
    records = [loads(line) for line in journal.read_bytes().splitlines()]
    gone = {r["replaces"] for r in records if isinstance(r.get("replaces"), int)}
    gone |= {seq for r in records for seq in r.get("alsoReplaces", ())}
    return [r for r in records[1:] if r.get("seq") not in gone]


def blocks(journal: Path) -> Counter:
    out: Counter = Counter()
    for record in effective(journal):
        # a record first kept off the resumed chain (its message on an off-chain event) is never
        # written again when the grown file puts it on the chain: its blocks count where they are
        message = record.get("message") if record.get("type") == "off-chain" and isinstance(record.get("message"), dict) else None
        if record.get("kind") in ("user", "assistant") or message is not None:
            content = record.get("content") if message is None else message.get("content")
            if message is not None and isinstance(content, str) and record.get("claudeType") == "assistant":
                content = [{"type": "text", "text": content}]
            for block in content if isinstance(content, list) else [content]:
                out[json.dumps(block, sort_keys=True)] += 1
    return out


def _import(root: Path, store: Path) -> dict:
    result = run_cli("import", "--from", "claude", "--source", root, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    return result.json


def _main(report: dict, transcript: Path) -> Path:
    return next(Path(s["path"]) for s in report["sessions"] if s["id"] == f"claude-{transcript.stem}")


def _tree(tmp: Path, transcript: Path, data: bytes) -> Path:
    root = tmp / ".claude"
    target = root / transcript.relative_to(FIXTURES / "claude-code")
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return root


def _replies(journal: Path) -> int:
    """How many replies ``show`` prints (a superseded partial one is not shown beside its whole one)."""
    return run_cli("show", journal).stdout.count("### Assistant")


def _once(tmp: Path, transcript: Path) -> tuple[Counter, int]:
    if transcript not in _ONCE:
        journal = _main(_import(_tree(tmp / "once", transcript, transcript.read_bytes()), tmp / "once-store"), transcript)
        _ONCE[transcript] = blocks(journal), _replies(journal)
    return _ONCE[transcript]


def test_a_response_first_kept_off_the_chain_keeps_its_later_parts(tmp_path):
    transcript = TRANSCRIPTS[-1]
    lines = transcript.read_bytes().split(b"\n")
    cut = 1 + int(0.349609375 * (len(lines) - 2))
    once, _replies_once = _once(tmp_path, transcript)
    root = _tree(tmp_path / "grown", transcript, b"\n".join(lines[:cut]) + b"\n")
    _import(root, tmp_path / "store")
    (root / transcript.relative_to(FIXTURES / "claude-code")).write_bytes(transcript.read_bytes())
    assert blocks(_main(_import(root, tmp_path / "store"), transcript)) == once


def test_a_partial_reply_that_grew_supersedes_its_partial_copy(tmp_path):
    """A response still being written at both imports (more parts at the second) supersedes its
    partial copy (``replaces``), and ``show`` prints it once, with every part."""
    transcript = next(p for p in TRANSCRIPTS if p.name.startswith("33593808"))
    lines = transcript.read_bytes().split(b"\n")
    once, replies = _once(tmp_path, transcript)
    root = _tree(tmp_path / "grown", transcript, b"\n".join(lines[:18]) + b"\n")  # line 18: the response's first part
    _import(root, tmp_path / "store")
    (root / transcript.relative_to(FIXTURES / "claude-code")).write_bytes(transcript.read_bytes())
    grown = _main(_import(root, tmp_path / "store"), transcript)
    assert blocks(grown) == once and _replies(grown) == replies
    assert sum(1 for r in effective(grown) if r.get("replaces")) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, len(TRANSCRIPTS) - 2), where=st.floats(0, 1, exclude_max=True), torn=st.booleans())
def test_a_grown_transcript_holds_each_block_once(tmp_path_factory, which, where, torn):
    transcript = TRANSCRIPTS[which]
    lines = transcript.read_bytes().split(b"\n")
    cut = 1 + int(where * (len(lines) - 2))
    tmp = tmp_path_factory.mktemp("grow")
    once, replies = _once(tmp, transcript)
    prefix = b"\n".join(lines[:cut]) + b"\n"
    if torn:  # cut mid-line: the next line half written
        prefix += lines[cut][: len(lines[cut]) // 2]
    root = _tree(tmp / "grown", transcript, prefix)
    _import(root, tmp / "store")
    (root / transcript.relative_to(FIXTURES / "claude-code")).write_bytes(transcript.read_bytes())
    grown = _main(_import(root, tmp / "store"), transcript)
    assert blocks(grown) == once
    assert _replies(grown) == replies, "show holds each reply once"
    assert run_cli("fsck", "--strict", grown).exit_code == 0
