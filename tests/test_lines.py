"""toolkit.lines.iter_batches, the one reader under every check: every byte accounted for, at any
chunk size, cap and start.

The reader joins a line that runs over several reads once, when it ends (it used to copy the
whole block again on each read, and a long line once per read).  The properties: the items it
yields put back together are the file's bytes exactly, offsets included; a line is cut short
(Overlong) only when longer than the cap, and always when longer than cap + chunk (memory);
and the items are the ones the previous reader (kept here as the reference) yielded.
"""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.lines import Batch, Overlong, Tail, iter_batches


def reference(handle, chunk, cap, start=0):
    """The reader as it was before it kept a running line in pieces (the commit before this test)."""
    offset = start
    pending = b""
    over: list = []
    while True:
        block = handle.read(chunk)
        if not block:
            break
        if over:
            cut = block.find(b"\n")
            part = block if cut < 0 else block[:cut]
            over[0] += len(part)
            over[1] = over[1] and not part.strip(b"\0")
            if cut < 0:
                continue
            yield Overlong(over[0], over[1], True)
            offset += over[0] + 1
            over = []
            block = block[cut + 1:]
        data = pending + block if pending else block
        lines = data.split(b"\n")
        pending = lines.pop()
        if lines:
            yield Batch(offset, lines)
            offset += len(data) - len(pending)
        if len(pending) > cap:
            over = [len(pending), not pending.strip(b"\0")]
            pending = b""
    if over:
        yield Tail(offset, None, Overlong(over[0], over[1], False))
    else:
        yield Tail(offset, pending)


PIECE = st.one_of(st.binary(max_size=30), st.just(b"\n"), st.just(b"\0" * 17), st.just(b"x" * 90),
                  st.just(b"\r\n"), st.just(b'{"kind":"user"}\n'))
FILES = st.lists(PIECE, max_size=30).map(b"".join)


def rebuild(items, data: bytes, start: int, cap: int, chunk: int) -> None:
    """Check that the items are ``data[start:]`` exactly, and that only long lines are cut short."""
    at = start
    for item in items[:-1]:
        if isinstance(item, Batch):
            assert item.offset == at
            for line in item.lines:
                assert b"\n" not in line and data[at:at + len(line)] == line and data[at + len(line):at + len(line) + 1] == b"\n"
                assert len(line) <= cap + chunk  # a longer one is never held whole
                at += len(line) + 1
        else:
            assert isinstance(item, Overlong) and item.terminated and item.length > cap
            line = data[at:at + item.length]
            assert b"\n" not in line and data[at + item.length:at + item.length + 1] == b"\n"
            assert item.all_nul == (not line.strip(b"\0"))
            at += item.length + 1
    tail = items[-1]
    assert isinstance(tail, Tail) and tail.offset == at
    if tail.data is None:
        assert tail.overlong.length == len(data) - at > cap and not tail.overlong.terminated
        assert tail.overlong.all_nul == (not data[at:].strip(b"\0"))
    else:
        assert tail.data == data[at:] and b"\n" not in tail.data


@settings(max_examples=400, deadline=None)
@given(FILES, st.integers(1, 70), st.integers(1, 120), st.integers(0, 40))
def test_every_byte_is_yielded_once_in_order_at_any_chunk_cap_and_start(data, chunk, cap, start):
    start = min(start, len(data))
    hashed = []  # what a hash is given (update=): each batch's lines and newlines, as read, before the batch
    seen = []
    for item in iter_batches(io.BytesIO(data[start:]), chunk=chunk, cap=cap, start=start, update=lambda b: hashed.append(bytes(b))):
        seen.append(item)
        if isinstance(item, Batch):
            assert b"".join(hashed) == b"".join(line + b"\n" for batch in seen if isinstance(batch, Batch) for line in batch.lines)
    items = list(iter_batches(io.BytesIO(data[start:]), chunk=chunk, cap=cap, start=start))
    assert seen == items
    rebuild(items, data, start, cap, chunk)
    assert items == list(reference(io.BytesIO(data[start:]), chunk, cap, start))


def test_a_line_over_many_reads_is_joined_once():
    """A 3 MB line read 4 KiB at a time: one line, equal to the bytes (the old reader copied it
    again on each of its 750 reads)."""
    line = b'{"kind":"user","content":"' + b"y" * 3_000_000 + b'"}'
    items = list(iter_batches(io.BytesIO(line + b"\n" + b"tail"), chunk=4096, cap=64 << 20))
    assert items[0] == Batch(0, [line]) and items[-1] == Tail(len(line) + 1, b"tail")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.sampled_from([0, 10, (1 << 14) - 60, (1 << 14) + 7, 40_000, (1 << 16) + 3, 200_000, (1 << 20) + 10]),
       blank=st.sampled_from([b"", b"\n", b"\n\n  \n", b"\0\0\n", b" " * 70_000 + b"\n"]), bom=st.booleans(),
       strip_bom=st.booleans(), rest=st.sampled_from([b"", b"\n", b'\n{"b":2}\n']))
def test_first_line_is_the_first_line_that_is_not_blank_whatever_its_length(tmp_path, size, blank, bom, strip_bom, rest):
    """first_line reads on until that line's newline, a newline among the blank lines before it
    never ending the read, up to FIRST_CAP; a BOM is passed over when asked."""
    from toolkit.lines import FIRST_CAP, first_line

    line = b'{"a":"' + b"x" * size + b'"}'
    head = (b"\xef\xbb\xbf" if bom else b"") + blank
    path = tmp_path / "f.jsonl"
    path.write_bytes(head + line + rest)
    data = head + line + rest
    body = data[:FIRST_CAP]  # the oracle: everything within the cap read at once
    body = (body[3:] if strip_bom and body.startswith(b"\xef\xbb\xbf") else body).lstrip(b"\0 \t\r\n")
    assert first_line(path, bom=strip_bom) == body.split(b"\n", 1)[0]
    if not (bom and not strip_bom) and len(head) + len(line) <= FIRST_CAP:
        assert first_line(path, bom=strip_bom) == line


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40), st.binary(min_size=500, max_size=3000).map(lambda b: b.replace(b"\n", b"x"))),
                max_size=40),
       st.sampled_from([b"", b"\n", b"\r", b"\n\n"]))
def test_split_lines_is_split_whatever_the_lines_length(pieces, tail):
    """:func:`split_lines` gives what ``split(b"\\n")`` gives, for short lines (split) and long ones
    (a find a newline), and for a block of both, whichever its first 64 KiB chose."""
    from toolkit.lines import split_lines

    block = b"\n".join(pieces) + tail
    assert split_lines(block) == block.split(b"\n")
    long_then_short = b"y" * 70_000 + b"\n" + block
    assert split_lines(long_then_short) == long_then_short.split(b"\n")
