"""The source reader's inline path for the common line (one whole record, no stray white space)
reads every file as its general path does: the same records, offsets, bytes and values, the same
counts, findings, hash and resume point, whatever the damage (hypothesis over line shapes)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.importers import sourcelines
from toolkit.importers.sourcelines import SourceLine, SourceReader
from toolkit.layouts.claude_code import CLAUDE_CODE


class _Everything:
    def __contains__(self, _item: object) -> bool:
        return True  # every line "ends oddly": the inline path is never taken


LINES = st.sampled_from([
    b'{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}',
    b'{"type":"assistant","uuid":"a1","message":{"id":"m","content":[]}}',
    b'{"type":"summary","summary":"s","leafUuid":"u1"}',
    b'  {"type":"user","uuid":"u2"}  ', b'{"type":"user","uuid":"u3"}\r', b'{"type":"user","uuid":"u4"}\t',
    b'{"type":"user","uuid":"x"}{"type":"assistant","uuid":"y"}', b'{"type":"user","uuid":"cut', b"\0\0\0", b"",
    b"   ", b'["not", "a", "record"]', b'{"not":"a record"}', b'{"type":"user","text":"\\ud83d"}', b"\xef\xbb\xbf{}",
    b'{"type":"user","uuid":"\xc3\xa9"}', b"garbage", b'{"type":"user"', b"{}",
])


@given(st.lists(LINES, max_size=12), st.booleans(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_the_inline_path_reads_as_the_general_one(tmp_path_factory, lines, bom, unterminated):
    data = b"\n".join(lines) + (b"" if unterminated else b"\n")
    path = tmp_path_factory.mktemp("src") / "t.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)

    def read() -> tuple:
        said = []
        reader = SourceReader(path, CLAUDE_CODE.is_record, said.append, what="Claude Code record")
        got = [(type(s), s.line, s.offset, s.data, s.value, s.lifted) for s in reader]
        return (got, said, reader.lines, reader.records, reader.size, reader.end, reader.covered, reader.sha256,
                reader.skipped, reader.number)

    inline = read()
    original = sourcelines._ODD_END
    sourcelines._ODD_END = _Everything()
    try:
        general = read()
    finally:
        sourcelines._ODD_END = original
    assert inline == general
    assert all(item[0] is SourceLine for item in inline[0])
