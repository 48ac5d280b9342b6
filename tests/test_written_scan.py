"""A new journal's scan made from the lines its writer writes (journal.WrittenScan) is the scan of
the file: here for the lines an importer gives as plain events without their record
(``plain_events``: source-line events), in any order and numbering among the others, the seq
gaps and repeats a scan reports included (plain_events declines those and the record is read)."""

from __future__ import annotations

import os
from unittest import mock

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit import journal, lines as lines_module
from toolkit.journal import WrittenScan, scan_journal

META = {"kind": "meta", "v": 2, "id": "s1", "createdAt": "2026-01-01T00:00:00Z", "source": {"app": "test"}}
KINDS = st.sampled_from(["user", "assistant", "source-line", "source-line", "pin", "title"])


def _record(kind: str, seq: int, t: str) -> dict:
    if kind == "source-line":
        return {"kind": "event", "t": t, "type": "source-line", "at": seq * 10, "seq": seq, "raw": {"type": "x"}}
    if kind == "pin":
        return {"kind": "event", "t": t, "type": "pin", "seq": seq}
    if kind == "title":
        return {"kind": "title", "t": t, "title": f"title {seq}", "seq": seq}
    return {"kind": kind, "t": t, "content": f"{kind} {seq}", "seq": seq}


@given(st.lists(st.tuples(KINDS, st.sampled_from([0, 0, 0, 1, -1, 2]), st.sampled_from(["", "2026-01-02T00:00:00Z"])),
                max_size=30))
@settings(max_examples=150, deadline=None)
def test_plain_events_give_the_scan_of_the_file(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("written") / "s1.jsonl"
    fed = WrittenScan(path)
    lines, seq = [orjson.dumps(META)], 0
    fed.line(lines[0], META)
    for kind, jump, t in steps:
        seq = max(1, seq + 1 + jump)  # (mostly the next seq; sometimes a gap or a repeat)
        record = _record(kind, seq, t)
        line = orjson.dumps(record)
        lines.append(line)
        if kind != "source-line" or not fed.plain_events([line], 0, seq, t):
            fed.line(line, record)
    path.write_bytes(b"\n".join(lines) + b"\n")
    info = os.stat(path)
    assert fed.scan(info) == scan_journal(path, "levelcode", checkpoint=True)


@given(st.lists(st.tuples(KINDS, st.sampled_from([0, 0, 0, 1, -1, 2]), st.sampled_from(["", "2026-01-02T00:00:00Z"])),
                max_size=30), st.integers(1, 5))
@settings(max_examples=150, deadline=None)
def test_plain_events_given_a_list_at_a_time_give_the_scan_of_the_file(tmp_path_factory, steps, size):
    """A new journal's writer gives a run of source-line events as a list (plain_events), each one
    it declines to line() with its record, as output._create does: the scan of the file still."""
    path = tmp_path_factory.mktemp("written") / "s1.jsonl"
    fed = WrittenScan(path)
    lines, seq, run = [orjson.dumps(META)], 0, []
    fed.line(lines[0], META)

    def flush() -> None:
        k = 0
        while k < len(run):
            first_seq = run[k][2]
            taken = fed.plain_events([line for line, _r, _s in run], k, first_seq, run[k][1]["t"])
            k += taken
            if k < len(run):
                fed.line(run[k][0], run[k][1])
                k += 1
        run.clear()

    for kind, jump, t in steps:
        seq = max(1, seq + 1 + jump)
        record = _record(kind, seq, t)
        line = orjson.dumps(record)
        lines.append(line)
        # a run holds consecutive seqs of one time, as a writer's template makes them
        if kind == "source-line" and (not run or (run[-1][2] + 1 == seq and run[-1][1]["t"] == t)) and len(run) < size:
            run.append((line, record, seq))
            continue
        flush()
        if kind == "source-line":
            run.append((line, record, seq))
        else:
            fed.line(line, record)
    flush()
    path.write_bytes(b"\n".join(lines) + b"\n")
    info = os.stat(path)
    assert fed.scan(info) == scan_journal(path, "levelcode", checkpoint=True)


@given(st.lists(st.tuples(KINDS, st.sampled_from([0, 0, 0, 1, -1, 2]), st.sampled_from(["", "2026-01-02T00:00:00Z"]),
                          st.booleans()), max_size=30))
@settings(max_examples=150, deadline=None)
def test_lines_given_with_their_newline_give_the_scan_of_the_file(tmp_path_factory, steps):
    """The writer gives each record's line with its newline (``terminated``: not copied again to
    cut it off): the scan of the file still, the findings' excerpts of short lines (a seq gap on a
    pin event) and long ones alike."""
    written, read = _terminated_lines(tmp_path_factory.mktemp("written") / "s1.jsonl", steps)
    assert written == read


def _terminated_lines(path, steps):
    """The scan made of ``steps``' lines as a writer gives them (with their newline or not), and the file's."""
    fed = WrittenScan(path)
    lines, seq = [orjson.dumps(META) + b"\n"], 0
    fed.line(lines[0][:-1], META)
    for kind, jump, t, terminated in steps:
        seq = max(1, seq + 1 + jump)
        record = _record(kind, seq, t)
        line = orjson.dumps(record) + b"\n"
        lines.append(line)
        if terminated:
            fed.terminated(line, record)
        else:
            fed.line(line[:-1], record)
    path.write_bytes(b"".join(lines))
    return fed.scan(os.stat(path)), scan_journal(path, "levelcode", checkpoint=True)


@given(st.lists(st.tuples(KINDS, st.sampled_from([0, 0, 0, 1, -1, 2]), st.sampled_from(["", "2026-01-02T00:00:00Z"]),
                          st.booleans()), max_size=30), st.sampled_from([1, 64, 300, 1500, 20 << 20]))
@settings(max_examples=150, deadline=None)
def test_a_journal_past_the_soft_cap_is_the_scan_of_the_file_its_oversize_finding_first(tmp_path_factory, steps, cap):
    """A journal past the soft cap (a Cursor chat of thousands of bubbles) is not read back for its
    scan: the one made as it was written has the ``oversize`` finding a read gives, where it gives it
    (first), before or among any other finding."""
    path = tmp_path_factory.mktemp("written") / "s1.jsonl"
    with mock.patch.object(journal, "SOFT_CAP", cap):
        written, read = _terminated_lines(path, steps)
    assert written is not None and written == read
    assert ("oversize" in [f.code for f in written.findings]) == (path.stat().st_size > cap)


@given(st.lists(st.tuples(st.sampled_from(["user", "source-line"]), st.one_of(st.integers(0, 260), st.sampled_from([199, 200, 201]))),
                min_size=1, max_size=12),
       st.sampled_from([64, 97, 256, 4096]))
@settings(max_examples=200, deadline=None)
def test_a_journal_past_line_cap_is_the_scan_of_the_file_unless_a_line_is(tmp_path_factory, steps, chunk):
    """A journal longer than LINE_CAP whose every line is shorter (a 300 MB Codex rollout's) is the
    scan the reader makes, whatever the blocks it reads in: only a line past LINE_CAP may be one a
    read takes as overlong, and then the reader reads the file (it was read back whole for its
    index, in the import's parent, however short its lines)."""
    cap = 200
    path = tmp_path_factory.mktemp("written") / "s1.jsonl"
    with mock.patch.object(lines_module, "LINE_CAP", cap), mock.patch.object(lines_module, "CHUNK", chunk):
        fed = WrittenScan(path)
        data = [orjson.dumps(META)]
        fed.line(data[0], META)
        for seq, (kind, length) in enumerate(steps, start=1):  # (a line of about that length: at the cap, one past it)
            record = {**_record(kind, seq, ""), "pad": ""}
            record["pad"] = "x" * max(0, length - len(orjson.dumps(record)))
            line = orjson.dumps(record)
            data.append(line)
            if kind != "source-line" or not fed.plain_events([line], 0, seq, ""):
                fed.terminated(line + b"\n", record)
        path.write_bytes(b"\n".join(data) + b"\n")
        written = fed.scan(os.stat(path))
        read = scan_journal(path, "levelcode", checkpoint=True)
    assert path.stat().st_size > cap or len(steps) < 3
    if max(map(len, data)) > cap:
        assert written is None
    else:
        assert written is not None and written == read


def test_a_line_given_with_a_newline_inside_it_leaves_the_scan_to_the_reader(tmp_path):
    fed = WrittenScan(tmp_path / "s1.jsonl")
    fed.line(orjson.dumps(META), META)
    fed.terminated(b'{"kind":"user","t":"","content":"a\nb","seq":1}\n', {"kind": "user", "t": "", "content": "a", "seq": 1})
    assert not fed.usable
    fed = WrittenScan(tmp_path / "s1.jsonl")
    fed.line(orjson.dumps(META), META)
    fed.terminated(b'{"kind":"user","t":"","content":"a","seq":1}\r\n', {"kind": "user", "t": "", "content": "a", "seq": 1})
    assert not fed.usable
