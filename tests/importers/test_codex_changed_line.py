"""Codex: a rollout line whose bytes changed since it was imported (edited, or repaired in place)
supersedes its kept record (``replaces``) instead of being kept beside it as a new one; nothing kept
is removed, the accounting stays closed, the rollout is never written (issue 23 item 1)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli
from tests.importers.cursor_db import FIXTURES
from toolkit.layouts import get as get_layout
from toolkit.lines import loads
from toolkit.render import current, records_of, superseded

ROLLOUT = min((FIXTURES / "codex" / "sessions").rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_size)
_OFFSETS = [0]
for _line in ROLLOUT.read_bytes().split(b"\n"):
    _OFFSETS.append(_OFFSETS[-1] + len(_line) + 1)
_RECORDS: set[int] = set()  # the offsets of the lines one import makes records of (filled once)


def _import(home: Path, store: Path) -> dict:
    result = run_cli("import", "--from", "codex", "--source", home, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    for s in result.json["sessions"]:
        assert s["source_items"] == s["converted"] + s["merged"] + sum(s["skipped"].values())
    return result.json


def _messages(lines: list[bytes]) -> list[int]:
    """Lines holding a user or assistant message's text (what an edit changes)."""
    out = []
    for n, line in enumerate(lines):
        try:
            value = loads(line)
        except ValueError:
            continue
        payload = value.get("payload") if isinstance(value, dict) else None
        if isinstance(payload, dict) and (payload.get("type") == "message" and payload.get("role") in ("user", "assistant")
                                          or payload.get("type") == "function_call" and isinstance(payload.get("arguments"), str)):
            out.append(n)
    return out


def _edited(line: bytes) -> bytes:
    value = loads(line)
    if value["payload"]["type"] == "function_call":
        value["payload"]["arguments"] += " (edited)"
    for block in value["payload"].get("content") or ():
        if isinstance(block.get("text"), str):
            block["text"] += " (edited)"
            break
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_changed_line_supersedes_its_kept_record(tmp_path_factory, data):
    lines = ROLLOUT.read_bytes().split(b"\n")
    picks = data.draw(st.sets(st.integers(0, 63), min_size=1, max_size=3), label="edited messages")
    tmp = tmp_path_factory.mktemp("codex")
    home = tmp / ".codex"
    target = home / ROLLOUT.relative_to(FIXTURES / "codex")
    target.parent.mkdir(parents=True)
    shutil.copyfile(ROLLOUT, target)
    store = tmp / "store"
    first = _import(home, store)
    (session,) = first["sessions"]
    journal = Path(session["path"])
    layout = get_layout("levelcode")
    if not _RECORDS:
        _RECORDS.update(r["at"] for r in records_of(journal, layout) if r.get("kind") in ("user", "assistant"))
    candidates = [n for n in _messages(lines) if _OFFSETS[n] in _RECORDS]  # a line a record carries
    which = sorted({candidates[p % len(candidates)] for p in picks})
    before = journal.read_bytes()
    for n in which:
        lines[n] = _edited(lines[n])
    target.write_bytes(b"\n".join(lines))
    edited = target.read_bytes()
    again = _import(home, store)
    assert target.read_bytes() == edited, "an import never writes its source"
    assert journal.read_bytes().startswith(before), "nothing kept is removed"
    records = list(current(records_of(journal, layout), superseded(journal, layout)))
    texts = [str(r.get("content")) for r in records if r.get("kind") in ("user", "assistant")]
    assert sum("(edited)" in t for t in texts) == len(which)
    calls = [n for n in which if b'"function_call"' in lines[n]]
    replacing = [r for r in records_of(journal, layout) if isinstance(r.get("replaces"), int)]
    # a record keyed by its mirror (an event_msg line still there, unchanged) stays: it stands for that
    # line, which one import of the edited file makes a record of its own; the edited line is added
    assert all(r["raw"]["payload"]["type"] in ("message", "function_call") for r in replacing)
    assert len([r for r in replacing if r["raw"]["payload"]["type"] == "function_call"]) == len(calls), "a call is no mirror: replaced"
    # the session as it stands holds each line once: the same records as one import of the edited file
    once = tmp / "once-store"
    fresh = Path(_import(home, once)["sessions"][0]["path"])
    strip = lambda rs: [(r.get("kind"), str(r.get("content"))) for r in rs if r.get("kind") in ("user", "assistant")]  # noqa: E731
    assert Counter(strip(records)) == Counter(strip(list(records_of(fresh, layout))[1:]))
    assert again["sessions"][0]["status"] == "updated"
    third = _import(home, store)
    assert third["sessions"][0]["status"] == "unchanged"
