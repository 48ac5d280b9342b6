"""Golden damage cases for Claude Code transcripts, each built from a real fixture by damaging it
in one of the shapes SOURCES-AGENTS.md §1.12 and §1.8 report.

For every case:
1. ``fsck --json`` finds exactly the expected (code, line, offset) multiset, exits 4 when an error
   is among them (else 0), and writes nothing anywhere;
2. the right fix: ``--repair`` for a torn or unterminated tail (saved bytes in levelsess's data
   folder, equal to what was cut), ``--salvage --yes`` for line damage (original and rejected
   bytes quarantined in the data folder), nothing at all for graph damage that needs a person;
3. every whole record survives byte-identical; no file appears inside Claude Code's tree;
4. a second repair (and salvage) changes nothing and exits 0 when nothing is left.

Line-level expectations are written by hand; graph expectations come from the independent model
in :mod:`tests.layouts.claude`, fed the records each damaged line still holds whole.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import run_cli, snapshot
from tests.layouts.claude import (data_dir, entries_of, expected_graph, fixture_bytes, fixture_files,
                                  fresh_uuid, graph_findings, is_chain, is_record, join, lines_of, nested_typed_end, offsets,
                                  one_session, parse, resume_figures, saved_tails, set_parent)

SMALL = Path("-loru-rnwdo-kwobudct-tkoccuw/d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl")       # 2.1.38, hooks
MINIMAX = Path("-loru-nmrqa--okuadsny-yowjtkndu-kwobudct-2026-03-10-wudwfqcruac-nvvwuvncow/"
               "33593808-f7f6-42ee-b07f-eea707cd2f5b.jsonl")                                   # ends mid-tool
SUBAGENT = Path("Z--03-NDV-Dftcor-Nmmoat/a572bd87-2e28-4d70-9b73-cd08231cacb6/subagents/agent-a5aeeeb76a8225a77.jsonl")
BIG = Path("Z--03-NDV-Dftcor-Nmmoat/a572bd87-2e28-4d70-9b73-cd08231cacb6.jsonl")              # 2.1.128, compactions
OLD = Path("-Ftuwt-cruqtcuw-Domu-Kuwtoans-byc-kwo/2728bf45-2222-4b9c-818e-dde0cdded47a.jsonl")  # 1.0.17, inline sidechains
HAVE = set(fixture_files())


@dataclass
class Case:
    data: bytes                 # the damaged transcript
    line_findings: Counter      # (code, line, offset) the line rules call for
    extra: list = field(default_factory=list)  # whole records inside damaged lines: (line, offset, record)
    fix: str = "none"           # repair | salvage | none (needs a person) | clean (warnings at most)
    result: bytes | None = None  # the transcript after the fix
    cut: bytes = b""            # the bytes the fix removes (a saved tail, or salvage's rejected bytes)

    def expected(self) -> Counter:
        graph = expected_graph(records=sorted(entries_of(self.data) + self.extra, key=lambda e: (e[0], e[1])))
        return self.line_findings + graph.findings

    def graph(self):
        return expected_graph(records=sorted(entries_of(self.data) + self.extra, key=lambda e: (e[0], e[1])))


def _c(*items) -> Counter:
    return Counter(items)


def _envelope(line: bytes) -> int:
    """Bytes of a record before its first nested object: a cut there leaves no whole piece."""
    brace = line.find(b"{", 1)
    return len(line) if brace < 0 else brace


def _pick(line: bytes, low: int, high: int) -> int:
    """An arbitrary but reproducible offset in [low, high)."""
    assert high > low, (low, high)
    return low + sum(line) % (high - low)


def _mid(lines: list[bytes], ok) -> int:
    """The index of the line nearest the middle for which ``ok(index)`` holds."""
    order = sorted(range(len(lines)), key=lambda i: abs(i - len(lines) // 2))
    return next(i for i in order if ok(i))


def _chain_index(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if is_chain(parse(line))]


def _on_resume_path(lines: list[bytes]) -> set[int]:
    """Line indexes the resume walk visits in the undamaged file (the model, from the last main record)."""
    records = {parse(lines[i])["uuid"]: i for i in _chain_index(lines)}
    main = [i for i in _chain_index(lines) if parse(lines[i]).get("isSidechain") is not True]
    if not main:
        return set(_chain_index(lines))
    seen, current = set(), main[-1]
    while current not in seen:
        seen.add(current)
        record = parse(lines[current])
        parent = record.get("parentUuid") or (record.get("logicalParentUuid") if record.get("subtype") == "compact_boundary" else None)
        if parent not in records:
            break
        current = records[parent]
    return seen


def _children(lines: list[bytes], i: int) -> list[int]:
    uuid = parse(lines[i]).get("uuid")
    if not isinstance(uuid, str):
        return []
    return [j for j in _chain_index(lines) if parse(lines[j]).get("parentUuid") == uuid]


# --- the shapes ------------------------------------------------------------------------------------


def torn_in_envelope(lines):
    last, body = lines[-1], join(lines[:-1])
    k = _pick(last, 1, _envelope(last))
    return Case(body + last[:k], _c(("torn-tail", len(lines), len(body))), fix="repair", result=body, cut=last[:k])


def torn_after_a_content_block(lines):
    last, body = lines[-1], join(lines[:-1])
    end = nested_typed_end(last)
    k = _pick(last, end, len(last) - 1)
    return Case(body + last[:k], _c(("torn-tail", len(lines), len(body))), fix="repair", result=body, cut=last[:k])


def unterminated(lines):
    data = join(lines)
    return Case(data[:-1], _c(("unterminated-tail", len(lines), len(data) - len(lines[-1]) - 1)), fix="repair",
                result=data)


def nul_tail(lines):
    data = join(lines)
    return Case(data + b"\0" * 517, _c(("torn-tail", len(lines) + 1, len(data))), fix="repair", result=data,
                cut=b"\0" * 517)


def nul_line_mid_file(lines):
    m = len(lines) // 2
    run = b"\0" * (200 + sum(lines[m]) % 501)  # 200-700 NULs (#49876), then the appends that followed
    damaged = lines[:m] + [run] + lines[m:]
    return Case(join(damaged), _c(("nul-padding", m + 1, offsets(damaged)[m])), fix="salvage", result=join(lines), cut=run)


def nul_run_before_a_record(lines):
    m = len(lines) // 2
    run = b"\0" * (200 + sum(lines[m]) % 501)
    damaged = lines[:m] + [run + lines[m]] + lines[m + 1:]
    at = offsets(damaged)[m]
    return Case(join(damaged), _c(("nul-padding", m + 1, at)), [(m + 1, at + len(run), parse(lines[m]))],
                fix="salvage", result=join(lines), cut=run)


def joined(lines):
    m = len(lines) // 2
    damaged = lines[:m] + [lines[m] + lines[m + 1]] + lines[m + 2:]
    at = offsets(damaged)[m]
    return Case(join(damaged), _c(("spliced-records", m + 1, at)),
                [(m + 1, at, parse(lines[m])), (m + 1, at + len(lines[m]), parse(lines[m + 1]))],
                fix="salvage", result=join(lines))


def joined_and_torn(lines):
    """Racing writers spliced two records mid-file, then a crash tore the last append."""
    case = joined(lines[:-1])
    last = lines[-1]
    k = _pick(last, 1, _envelope(last))
    return Case(case.data + last[:k], case.line_findings + _c(("torn-tail", len(lines) - 1, len(case.data))), case.extra,
                fix="salvage", result=join(lines[:-1]), cut=last[:k])


def _cut_then_whole(lines, where):
    """A record torn at an offset chosen by ``where``, the next append on the same line (#81843)."""
    def ok(i):  # a record nobody points at (not the last): its loss leaves no graph error
        return (i + 1 < len(lines) - 1 and is_record(parse(lines[i])) and not _children(lines, i)
                and where(lines[i]) is not None and not expected_graph(join(lines[:i] + lines[i + 1:])).errors)

    if not any(ok(i) for i in range(len(lines))):
        pytest.skip("no record in this fixture whose loss leaves the graph whole")
    m = _mid(lines, ok)
    cut = lines[m][: where(lines[m])]
    damaged = lines[:m] + [cut + lines[m + 1]] + lines[m + 2:]
    at = offsets(damaged)[m]
    return Case(join(damaged), _c(("spliced-records", m + 1, at)), [(m + 1, at + len(cut), parse(lines[m + 1]))],
                fix="salvage", result=join(lines[:m] + lines[m + 1:]), cut=cut)


def cut_in_envelope_then_whole(lines):
    return _cut_then_whole(lines, lambda line: _pick(line, 2, _envelope(line)))


def cut_after_a_block_then_whole(lines):
    def where(line):
        end = nested_typed_end(line)
        return None if end is None or end >= len(line) - 2 else _pick(line, end, len(line) - 1)
    return _cut_then_whole(lines, where)


def text_line(lines):
    m = len(lines) // 2
    junk = b"I/O error: sector 81243 unreadable"
    damaged = lines[:m] + [junk] + lines[m:]
    return Case(join(damaged), _c(("invalid-json", m + 1, offsets(damaged)[m])), fix="salvage", result=join(lines), cut=junk)


def _bad_byte(lines, ok):
    """One byte of a record replaced by 0xFF (not UTF-8): the record is lost, salvage rejects its line whole."""
    candidates = [i for i in range(1, len(lines) - 1) if ok(i) and not _children(lines, i)
                  and not expected_graph(join(lines[:i] + lines[i + 1:])).errors]
    if not candidates:
        pytest.skip("no record in this fixture whose loss leaves the graph whole")
    m = min(candidates, key=lambda i: abs(i - len(lines) // 2))
    bad = lines[m][:1] + b"\xff" + lines[m][2:]  # the quote that opens the first key
    damaged = lines[:m] + [bad] + lines[m + 1:]
    return Case(join(damaged), _c(("invalid-json", m + 1, offsets(damaged)[m])), fix="salvage",
                result=join(lines[:m] + lines[m + 1:]), cut=bad)


def bad_byte_in_a_flat_record(lines):
    return _bad_byte(lines, lambda i: is_record(parse(lines[i])) and nested_typed_end(lines[i]) is None)


def bad_byte_in_a_record_with_blocks(lines):
    return _bad_byte(lines, lambda i: is_record(parse(lines[i])) and nested_typed_end(lines[i]) is not None)


def dangling_parent(lines):
    path = _on_resume_path(lines)
    chain = _chain_index(lines)
    m = _mid(lines, lambda i: i in path and i != chain[0] and parse(lines[i]).get("parentUuid") is not None)
    damaged = lines[:m] + [set_parent(lines[m], fresh_uuid(("dangling", m)))] + lines[m + 1:]
    return Case(join(damaged), Counter(), fix="none")


def dangling_parent_and_a_torn_tail(lines):
    case = dangling_parent(lines)
    damaged = lines_of(case.data)
    last, body = damaged[-1], join(damaged[:-1])
    k = _pick(last, 1, _envelope(last))
    needs_person = expected_graph(body).errors  # in a subagent a missing parent is only a warning
    return Case(body + last[:k], _c(("torn-tail", len(damaged), len(body))), fix="none" if needs_person else "repair",
                result=body, cut=last[:k])


def removed_record(lines):
    """One record of the resumed chain never persisted (#58554): its child dangles."""
    path = _on_resume_path(lines)
    chain = _chain_index(lines)
    m = _mid(lines, lambda i: i in path and i != chain[0] and i != chain[-1] and _children(lines, i))
    return Case(join(lines[:m] + lines[m + 1:]), Counter(), fix="none")


def cycle(lines):
    path = _on_resume_path(lines)
    chain = _chain_index(lines)
    main = [i for i in chain if parse(lines[i]).get("isSidechain") is not True] or chain  # a subagent: no main chain
    leaf = parse(lines[main[-1]])["uuid"]
    m = _mid(lines, lambda i: i in path and i != chain[0] and parse(lines[i])["uuid"] != leaf)
    damaged = lines[:m] + [set_parent(lines[m], leaf)] + lines[m + 1:]
    return Case(join(damaged), Counter(), fix="none")


def duplicate_uuid(lines):
    chain = _chain_index(lines)
    m = _mid(lines, lambda i: i in chain and i != chain[-1])
    damaged = lines[: m + 1] + [lines[m]] + lines[m + 1:]  # one append written twice
    return Case(join(damaged), Counter(), fix="none")


def unanswered_tool_use(lines):
    chain = [parse(lines[i]) for i in _chain_index(lines)]
    last = [r for r in chain if r.get("isSidechain") is not True][-1] if any(
        r.get("isSidechain") is not True for r in chain) else chain[-1]
    record = {"parentUuid": last["uuid"], "isSidechain": last.get("isSidechain", False), "type": "assistant",
              "message": {"model": "claude-opus-4-6", "id": "msg_01TestUnansweredToolUse", "type": "message",
                          "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01TestNeverAnswered",
                                                            "name": "Bash", "input": {"command": "sleep 600"}}],
                          "stop_reason": "tool_use"},
              "uuid": fresh_uuid("tool_use"), "timestamp": "2026-05-06T04:00:00.000Z", "sessionId": last.get("sessionId")}
    line = json.dumps(record, separators=(",", ":")).encode()
    return Case(join(lines + [line]), Counter(), fix="clean")


def blank_line(lines):
    m = len(lines) // 2
    damaged = lines[:m] + [b""] + lines[m:]
    return Case(join(damaged), _c(("blank-line", m + 1, offsets(damaged)[m])), fix="clean")


def nul_escape_in_content(lines):
    m = _mid(lines, lambda i: b'"text":"' in lines[i] or b'"content":"' in lines[i])
    key = b'"text":"' if b'"text":"' in lines[m] else b'"content":"'
    at = lines[m].index(key) + len(key)
    damaged = lines[:m] + [lines[m][:at] + b"\\u0000" + lines[m][at:]] + lines[m + 1:]
    return Case(join(damaged), _c(("nul-in-content", m + 1, offsets(damaged)[m])), fix="clean")


def killed_at_birth(lines):
    first = lines[0]
    k = _pick(first, 1, _envelope(first))
    return Case(first[:k], _c(("torn-tail", 1, 0)), fix="repair", result=b"", cut=first[:k])


def killed_at_birth_after_a_content_block(lines):
    first = next(line for line in lines if nested_typed_end(line) is not None and is_chain(parse(line)))
    k = _pick(first, nested_typed_end(first), len(first) - 1)
    return Case(first[:k], _c(("torn-tail", 1, 0)), fix="repair", result=b"", cut=first[:k])


def logical_parent_nowhere(lines):
    m = next(i for i, line in enumerate(lines) if b'"subtype":"compact_boundary"' in line)
    record = parse(lines[m])
    old = json.dumps(record["logicalParentUuid"]).encode()
    damaged = lines[:m] + [lines[m].replace(old, json.dumps(fresh_uuid("logical")).encode(), 1)] + lines[m + 1:]
    return Case(join(damaged), Counter(), fix="clean")


BUG_NESTED_TAIL = ("BUG: a torn tail that holds a whole nested object with a string \"type\" (a content block, the "
                   "message, a tool_result) is called spliced-records and never cut: ClaudeCode inherits "
                   "BaseLayout.is_record (any dict with a string 'type'), which journal._unparsed_tail/split_line "
                   "and holds_record use as 'a record of the layout'")
BUG_NESTED_SALVAGE = ("BUG: salvage keeps a content block / tool_result nested in a cut-off record as a top-level "
                      "line of the transcript (split_line + ClaudeCode.is_record accept any object with a string "
                      "'type'); fsck then calls the fabricated line clean")
BUG_BIRTH = ("BUG: a transcript killed inside its first record, after a content block, is 'unknown-format' "
             "(exit 8): the nested block is taken as the first record and fails identification "
             "(journal._unparsed_tail -> pieces -> _first)")

SHAPES = {
    "torn-tail in the envelope": (torn_in_envelope, None),
    "torn-tail after a content block": (torn_after_a_content_block, BUG_NESTED_TAIL),
    "unterminated-tail": (unterminated, None),
    "torn-tail of NULs": (nul_tail, None),
    "nul line mid-file": (nul_line_mid_file, None),
    "nul run before a record": (nul_run_before_a_record, None),
    "}{ join": (joined, None),
    "}{ join + torn tail": (joined_and_torn, None),
    "cut in the envelope + whole record": (cut_in_envelope_then_whole, None),
    "cut after a block + whole record": (cut_after_a_block_then_whole, BUG_NESTED_SALVAGE),
    "text line mid-file": (text_line, None),
    "non-UTF-8 byte in a flat record": (bad_byte_in_a_flat_record, None),
    "non-UTF-8 byte in a record with blocks": (bad_byte_in_a_record_with_blocks, BUG_NESTED_SALVAGE),
    "dangling parent": (dangling_parent, None),
    "dangling parent + torn tail": (dangling_parent_and_a_torn_tail, None),
    "record never persisted": (removed_record, None),
    "parentUuid cycle": (cycle, None),
    "duplicate uuid": (duplicate_uuid, None),
    "unanswered final tool_use": (unanswered_tool_use, None),
    "blank line": (blank_line, None),
    "\\u0000 in content": (nul_escape_in_content, None),
    "killed at birth": (killed_at_birth, None),
    "killed at birth after a block": (killed_at_birth_after_a_content_block, BUG_BIRTH),
}
SOURCES = {"small": SMALL, "minimax": MINIMAX, "subagent": SUBAGENT}


def _params():
    out = []
    for source, rel in SOURCES.items():
        for name, (build, bug) in SHAPES.items():
            out.append(pytest.param(rel, build, id=f"{source}: {name}"))
    for name in ("dangling parent", "record never persisted", "parentUuid cycle", "duplicate uuid", "}{ join"):
        out.append(pytest.param(BIG, SHAPES[name][0], id=f"big: {name}"))
    out.append(pytest.param(BIG, logical_parent_nowhere, id="big: logicalParentUuid pointing nowhere"))
    out.append(pytest.param(OLD, removed_record, id="1.0.x: record never persisted"))
    out.append(pytest.param(OLD, SHAPES["duplicate uuid"][0], id="1.0.x: duplicate uuid"))
    return out


def _run(*args):
    result = run_cli(*args)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _quarantine() -> list[Path]:
    return sorted(p for p in data_dir().rglob("*") if p.is_file() and "quarantine" in p.parts) if data_dir().exists() else []


@pytest.mark.parametrize("rel, build", _params())
def test_damage_is_found_and_fixed_exactly(tmp_path, rel, build):
    if rel not in HAVE:
        pytest.skip(f"{rel} is not in the fixtures")
    original = fixture_bytes(rel)
    case = build(lines_of(original))
    root, journal = one_session(tmp_path, rel, case.data)
    paths = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")}
    before = snapshot(tmp_path)

    # 1. the check finds exactly what the rules say, and writes nothing
    check = _run("fsck", "--json", root)
    assert "findings" in check.json, check.stdout  # not one error for the whole tree
    found = Counter((f["code"], f["line"], f["offset"]) for f in check.json["findings"])
    assert found == case.expected(), check.stdout
    errors = any(f["severity"] == "error" for f in check.json["findings"])
    assert check.exit_code == (4 if errors else 0)
    assert all(Path(f["path"]) == journal for f in check.json["findings"])
    graph = case.graph()
    for f in check.json["findings"]:
        if f["code"] == "broken-chain":
            assert resume_figures(f["message"]) == (graph.reachable, graph.main, graph.break_line), f["message"]
    assert snapshot(tmp_path) == before and not data_dir().exists()

    # 2. the right fix
    repair = _run("fsck", "--repair", "--json", root)
    if case.fix == "repair":
        assert repair.exit_code == 1, repair.stdout
        assert journal.read_bytes() == case.result
        assert saved_tails() == ([case.cut] if case.cut else [])
        saved = [f["saved_to"] for f in repair.json["findings"] if f["repaired"] and f["saved_to"]]
        assert saved and all(Path(s).is_relative_to(data_dir() / "claude-code") for s in saved) or not case.cut
    else:
        assert repair.exit_code == (4 if errors else 0), repair.stdout
        assert snapshot(tmp_path) == before, "a file that needs a person (or nothing) is not touched by --repair"
        salvage = _run("fsck", "--salvage", "--yes", "--json", root)
        if case.fix == "salvage":
            assert salvage.exit_code == 1, salvage.stdout
            assert journal.read_bytes() == case.result
            quarantined = _quarantine()
            assert [p.read_bytes() for p in quarantined if p.name == journal.name] == [case.data], "the original, kept"
            assert [p.read_bytes() for p in quarantined if p.name == journal.name + ".rejected"] == [case.cut]
            assert all(p.is_relative_to(data_dir() / "claude-code") for p in quarantined)
        else:
            assert salvage.exit_code & 4 or not errors, salvage.stdout
            assert snapshot(tmp_path) == before, "salvage cuts line damage only: graph damage is left for a person"
            assert _quarantine() == []

    # 3. whole records byte-identical, nothing new inside Claude Code's tree
    after = journal.read_bytes()
    kept = lines_of(after)
    whole = [line for line in lines_of(original) if line]
    assert all(line in whole or line in lines_of(case.data) for line in kept if line), "every line a line it was given"
    if case.fix == "repair":
        assert case.data.startswith(after) or after == case.data + b"\n"
    assert {p.relative_to(tmp_path) for p in tmp_path.rglob("*")} == paths, "no temp, lock, cache or .levelsess folder"

    # 4. a second run changes nothing
    settled = snapshot(tmp_path)
    tails = saved_tails()
    for command in (["fsck", "--repair"], ["fsck", "--salvage", "--yes"]):
        again = _run(*command, "--json", root)
        assert not any(f["repaired"] for f in again.json["findings"]), again.stdout
        if case.fix in ("repair", "salvage", "clean"):
            assert again.exit_code == 0, again.stdout
    assert snapshot(tmp_path) == settled and saved_tails() == tails
    final = _run("fsck", "--json", root)
    remaining = Counter((f["code"], f["line"], f["offset"]) for f in final.json["findings"])
    if case.fix in ("repair", "salvage"):
        assert remaining == expected_graph(after).findings + (Counter({("empty-journal", None, 0): 1}) if not after else Counter())
    else:
        assert remaining == found


# --- the resume figures, case by case ------------------------------------------------------------


@pytest.mark.parametrize("rel", [SMALL, BIG, OLD], ids=["small", "big", "1.0.x"])
def test_broken_chain_names_the_break_and_counts_what_resume_shows(tmp_path, rel):
    if rel not in HAVE:
        pytest.skip(f"{rel} is not in the fixtures")
    lines = lines_of(fixture_bytes(rel))
    case = removed_record(lines)
    root, journal = one_session(tmp_path, rel, case.data)
    model = expected_graph(case.data)
    result = run_cli("fsck", "--json", journal)
    [broken] = [f for f in result.json["findings"] if f["code"] == "broken-chain"]
    reachable, main, line = resume_figures(broken["message"])
    assert (reachable, main, line) == (model.reachable, model.main, model.break_line)
    assert main == sum(1 for i in _chain_index(lines_of(case.data)) if parse(lines_of(case.data)[i]).get("isSidechain") is not True)
    assert reachable < main and broken["line"] == line and broken["severity"] == "error"
    dangling = [f for f in result.json["findings"] if f["code"] == "dangling-parent"]
    assert (line, broken["offset"]) in {(f["line"], f["offset"]) for f in dangling}


def test_a_logical_parent_pointing_nowhere_is_never_a_finding(tmp_path):
    if BIG not in HAVE:
        pytest.skip("no compaction fixture")
    case = logical_parent_nowhere(lines_of(fixture_bytes(BIG)))
    root, journal = one_session(tmp_path, BIG, case.data)
    result = run_cli("fsck", "--json", journal)
    assert result.exit_code == 0 and result.json["findings"] == [], result.stdout


def test_a_file_that_starts_mid_chain_is_a_warning(tmp_path):
    lines = lines_of(fixture_bytes(MINIMAX))
    first = _chain_index(lines)[0]
    data = join(lines[first + 1:])  # the head of the conversation lives in another file (1.0.x resume, #61188)
    root, journal = one_session(tmp_path, MINIMAX, data)
    result = run_cli("fsck", "--json", journal)
    model = expected_graph(data)
    assert ("parent-elsewhere", 1, 0) in model.findings and not model.errors
    assert graph_findings(result.json["findings"]) == model.findings
    assert result.exit_code == 0


def test_text_that_mentions_the_nul_escape_is_not_nul_in_content(tmp_path):
    lines = lines_of(fixture_bytes(SMALL))
    m = next(i for i, line in enumerate(lines) if b'"text":"' in line)
    at = lines[m].index(b'"text":"') + len(b'"text":"')
    damaged = lines[:m] + [lines[m][:at] + b"use \\\\u0000 to write a NUL " + lines[m][at:]] + lines[m + 1:]
    assert "\0" not in json.dumps(json.loads(damaged[m]))  # the value holds a backslash, not a NUL
    root, journal = one_session(tmp_path, SMALL, join(damaged))
    result = run_cli("fsck", "--json", journal)
    assert result.json["findings"] == [], result.stdout


def test_repair_never_touches_a_torn_tail_in_a_file_with_graph_damage_but_salvage_refusal_says_why(tmp_path):
    case = dangling_parent_and_a_torn_tail(lines_of(fixture_bytes(SMALL)))
    root, journal = one_session(tmp_path, SMALL, case.data)
    result = run_cli("fsck", "--salvage", "--yes", "--json", journal)
    assert journal.read_bytes() == case.data
    refused = [f for f in result.json["findings"] if f["code"] == "salvage-refused"]
    assert refused and ("broken-chain" in refused[0]["message"] or "dangling-parent" in refused[0]["message"])
