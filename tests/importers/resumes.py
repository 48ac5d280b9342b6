"""What the resume tests of every importer compare (tests/importers/test_resumed_*.py): a store's
journals byte for byte, and what an import's --json report says of each session and finding."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.helpers import run_cli


def journals(store: Path) -> dict[str, bytes]:
    """Every journal's bytes, and every index.json's (but the time it was made): an import that
    resumes brings an index up to date from the journals that changed, a full read derives it."""
    found = {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*.jsonl"))
             if p.is_file() and ".levelsess" not in p.parts}
    for index in sorted(store.rglob("index.json")):
        if ".levelsess" not in index.parts:
            value = orjson.loads(index.read_bytes())
            if isinstance(value, dict):
                value.pop("generatedAt", None)
            found[str(index.relative_to(store))] = orjson.dumps(value)
    return found


def imported(app: str, source: Path, store: Path, *extra: str) -> dict:
    result = run_cli("import", "--from", app, "--source", source, "--store", store, "--json", *extra)
    assert "Traceback" not in result.stderr
    return result.json


def said(report: dict) -> tuple:
    sessions = sorted((s["id"], s["status"], s["records"], s["new_records"], s["source_items"], s["merged"], s.get("source_lines"),
                       tuple(sorted(s["skipped"].items())), s["orphaned"], tuple(s["orphan"]), s["source_status"])
                      for s in report["sessions"])
    return sessions, sorted((f["code"], f["path"], f["line"], f["message"]) for f in report["findings"])


def apart(a: dict, b: dict) -> str:
    """Where two reports' :func:`said` differ, in full (pytest cuts a long comparison short): each
    session and finding one of them says and the other does not, and how each read its sources."""
    (sessions_a, findings_a), (sessions_b, findings_b) = said(a), said(b)
    lines = [f"read/resumed/from_cache: {[a.get(k) for k in ('read', 'resumed', 'from_cache')]} "
             f"vs {[b.get(k) for k in ('read', 'resumed', 'from_cache')]}"]
    lines += [f"only in the first: {one}" for one in sessions_a if one not in sessions_b]
    lines += [f"only in the second: {one}" for one in sessions_b if one not in sessions_a]
    lines += [f"finding only in the first: {one}" for one in findings_a if one not in findings_b]
    lines += [f"finding only in the second: {one}" for one in findings_b if one not in findings_a]
    return "\n".join(lines)


def alike(tmp: Path, reports: dict[str, dict], what) -> None:
    """Each store's report and journals as the full read's (``reports``: by the store's folder under
    ``tmp``; ``full`` the one imported with ``--reread``, which neither resumed nor recalled)."""
    full = reports["full"]
    for store, report in reports.items():
        assert said(report) == said(full), f"{store} {what}\n{apart(report, full)}"
        assert journals(tmp / store) == journals(tmp / "full"), (store, what)
    assert full["resumed"] == full["from_cache"] == 0
