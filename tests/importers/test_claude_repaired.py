"""A Claude Code transcript imported while broken and repaired later (``fsck --relink --yes``,
``fsck --salvage --yes``) does not stay broken in the store: a re-import supersedes each kept
record whose source line changed (or that the repaired chain now puts on the conversation), so
the kept session, as it stands, is one import of the repaired file; nothing kept is removed
(issue 23 item 1)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import run_cli
from tests.importers.cursor_db import FIXTURES
from toolkit.layouts import get as get_layout
from toolkit.lines import loads
from toolkit.render import current, records_of, superseded

PROJECTS = FIXTURES / "claude-code" / "projects"
#: A main transcript with one chain (no inline sidechains, no subagents): 33593808, 104 lines.
TRANSCRIPT = next(PROJECTS.rglob("33593808-*.jsonl"))
_PARENT = re.compile(rb'"parentUuid":"([0-9a-f-]{36})"')


def _tree(tmp: Path, data: bytes) -> tuple[Path, Path]:
    root = tmp / ".claude"
    target = root / TRANSCRIPT.relative_to(FIXTURES / "claude-code")
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return root, target


def _chain_lines(lines: list[bytes]) -> list[int]:
    """The lines (0-based) of main-chain records whose parent is a uuid: the ones a break can cut."""
    out = []
    for n, line in enumerate(lines):
        try:
            value = loads(line)
        except ValueError:
            continue
        if n and isinstance(value, dict) and isinstance(value.get("parentUuid"), str) and value.get("type") in ("user", "assistant"):
            out.append(n)
    return out


def _dangling(lines: list[bytes], which: list[int]) -> bytes:
    """The transcript with the parentUuid of each line in ``which`` naming a uuid no record has."""
    out = list(lines)
    for k, n in enumerate(which):
        out[n] = _PARENT.sub(lambda _m: b'"parentUuid":"%s"' % f"deadbeef-0000-4000-8000-{k:012d}".encode(), out[n], count=1)
    return b"\n".join(out)


def _import(root: Path, store: Path) -> dict:
    result = run_cli("import", "--from", "claude", "--source", root, "--store", store, "--json")
    assert "Traceback" not in result.stdout + result.stderr
    report = result.json
    for s in report["sessions"]:  # the accounting keys stay closed
        assert s["source_items"] == s["converted"] + s["merged"] + sum(s["skipped"].values())
    return report


def _journal(report: dict) -> Path:
    return next(Path(s["path"]) for s in report["sessions"] if s["id"] == f"claude-{TRANSCRIPT.stem}")


def _now(journal: Path) -> list[dict]:
    layout = get_layout("levelcode")
    return list(current(records_of(journal, layout), superseded(journal, layout)))


def _parents_kept(journal: Path) -> dict[str, object]:
    """uuid -> parentUuid of each source line the session, as it stands, carries under ``raw``."""
    out = {}
    for record in _now(journal)[1:]:
        raw = record.get("raw")
        for value in raw if isinstance(raw, list) and isinstance(record.get("at"), list) else [raw]:
            if isinstance(value, dict) and isinstance(value.get("uuid"), str):
                out[value["uuid"]] = value.get("parentUuid")
    return out


def _parents_of(path: Path) -> dict[str, object]:
    out = {}
    for line in path.read_bytes().splitlines():
        try:
            value = loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("uuid"), str):
            out[value["uuid"]] = value.get("parentUuid")
    return out


def _shown(journal: Path) -> str:
    """What ``show`` prints, less the line a title change adds (the broken file's first prompt was
    another: the kept session keeps that it was renamed)."""
    return re.sub(r"(?m)^_renamed: .*\n\n", "", run_cli("show", journal).stdout)


def _repaired_and_kept(tmp: Path, broken: bytes, repair: tuple[str, ...]) -> tuple[Path, Path, Path]:
    root, source = _tree(tmp / "home", broken)
    store = tmp / "store"
    journal = _journal(_import(root, store))
    before = journal.read_bytes()
    assert source.read_bytes() == broken, "an import never writes its source"
    result = run_cli("fsck", source.parent, *repair, "--yes")
    assert "Traceback" not in result.stdout + result.stderr
    repaired = source.read_bytes()
    assert repaired != broken, result.stdout + result.stderr
    report = _import(root, store)
    assert source.read_bytes() == repaired
    assert journal.read_bytes().startswith(before), "nothing kept is removed (append-only)"
    # the repaired file imported once, into a store of its own
    once_root, _ = _tree(tmp / "once", repaired)
    once = _journal(_import(once_root, tmp / "once-store"))
    assert report["sessions"]
    return journal, once, source


def test_a_relinked_transcript_is_followed_by_the_kept_session(tmp_path):
    lines = TRANSCRIPT.read_bytes().split(b"\n")
    chain = _chain_lines(lines)
    broken = _dangling(lines, [chain[len(chain) // 2]])
    journal, once, source = _repaired_and_kept(tmp_path, broken, ("--relink",))
    assert _shown(journal) == _shown(once), "show of the kept copy follows the relinked chain"
    kept = _parents_kept(journal)
    repaired = _parents_of(source)
    assert kept == {u: repaired[u] for u in kept} and set(kept) == set(_parents_kept(once))
    assert not any(str(p).startswith("deadbeef") for p in kept.values())
    assert run_cli("fsck", "--strict", journal).exit_code == 0
    # a third import: nothing new
    again = _import(source.parents[2], tmp_path / "store")
    assert _journal(again) == journal and {s["status"] for s in again["sessions"]} == {"unchanged"}


def test_a_salvaged_transcript_is_followed_by_the_kept_session(tmp_path):
    """Two records run together on one line (a write interrupted, then another): the import keeps
    what it can parse; ``fsck --salvage --yes`` splits them; the re-import holds the repaired file."""
    lines = TRANSCRIPT.read_bytes().split(b"\n")
    chain = _chain_lines(lines)
    n = chain[len(chain) // 3]
    broken = b"\n".join(lines[:n] + [lines[n] + lines[n + 1]] + lines[n + 2:])
    journal, once, source = _repaired_and_kept(tmp_path, broken, ("--salvage",))
    assert _shown(journal) == _shown(once)
    kept = _parents_kept(journal)
    assert kept == {u: _parents_of(source)[u] for u in kept} and set(kept) == set(_parents_kept(once))


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_whichever_parents_break_the_relinked_session_is_kept_whole(tmp_path_factory, data):
    lines = TRANSCRIPT.read_bytes().split(b"\n")
    chain = _chain_lines(lines)
    which = sorted(data.draw(st.sets(st.sampled_from(chain), min_size=1, max_size=4), label="broken lines"))
    tmp = tmp_path_factory.mktemp("relink")
    journal, once, source = _repaired_and_kept(tmp, _dangling(lines, which), ("--relink",))
    assert _shown(journal) == _shown(once)
    kept = _parents_kept(journal)
    repaired = _parents_of(source)
    assert kept == {u: repaired[u] for u in kept} and set(kept) == set(_parents_kept(once))


def test_show_json_and_ls_count_the_session_as_it_stands(tmp_path):
    """``show --json`` (and ``export --format json``) give each record as it stands, a replacement in
    its copy's place; ``export --format jsonl`` keeps every line; ls counts each prompt once."""
    lines = TRANSCRIPT.read_bytes().split(b"\n")
    chain = _chain_lines(lines)
    journal, once, _source = _repaired_and_kept(tmp_path, _dangling(lines, [chain[len(chain) // 2]]), ("--relink",))
    shown = run_cli("show", journal, "--json").json
    assert [r.get("sourceKey") for r in shown["records"]] == [r.get("sourceKey") for r in _now(journal)[1:]]
    assert len(shown["records"]) < len(journal.read_bytes().splitlines()) - 1
    exported = run_cli("export", journal, "--format", "json").json
    assert exported == shown
    result = run_cli("export", journal, "--format", "jsonl", "-o", tmp_path / "copy.jsonl")
    assert result.exit_code == 0 and (tmp_path / "copy.jsonl").read_bytes() == journal.read_bytes()
    keys = [r.get("sourceKey") for r in shown["records"] if r.get("kind") in ("user", "assistant")]
    assert len(keys) == len(set(keys)), "no record twice"
    turns = {}
    for path in (journal, once):
        listing = run_cli("ls", "--store", path.parents[1], "--json").json
        rows = listing["sessions"] if isinstance(listing, dict) else listing
        turns[path] = next(r["turns"] for r in rows if r["id"] == journal.stem)
    assert turns[journal] == turns[once]
