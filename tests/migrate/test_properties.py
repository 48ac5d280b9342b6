"""Property tests of the byte-splicing migration helpers (hypothesis).

members() / set_member() must find and edit top-level members of any JSON object however
it was written (orjson, json.dumps in several styles, hand-placed whitespace, gratuitous
escapes), and journal_v1_v2.upgrade must turn any v1 journal into a v2 journal that adds
exactly ``,"seq":n`` to each record and changes nothing else.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from toolkit.journal import scan_journal
from toolkit.migrate.journal_v1_v2 import BOM, upgrade
from toolkit.migrate.members import members, set_member

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- JSON values ------------------------------------------------------------------------------

_TRICKY = list('"\\{}[]:,/ \t\n\r') + ["\x00", "\x1f", "\x7f", "\u2028", "é", "日", "😀", "🚀"]
_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))  # no lone surrogates: orjson refuses them
# any text, text of only the characters a JSON scanner could trip on, and a mix of the two
# (a one_of alphabet is several times slower to draw, and drawing dominates these tests)
text = st.one_of(
    st.text(_CHARS, max_size=12),
    st.text(st.sampled_from(_TRICKY), max_size=12),
    st.lists(st.text(_CHARS, max_size=4) | st.sampled_from(_TRICKY), max_size=6).map("".join),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),  # what orjson reads and writes
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)


def _values(leaves: int):
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=leaves)


values = _values(10)
objects = st.dictionaries(text, values, max_size=6)
small_objects = st.dictionaries(text, _values(4), max_size=4)  # journal records: many per example


def same(a: object, b: object) -> bool:
    """Equality that also tells True from 1 and 1 from 1.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b


# --- serialisation styles ------------------------------------------------------------------------

STYLES = ("orjson", "ascii", "utf8", "spaced", "whitespace")
JOURNAL_WS = " \t\r"  # whitespace a journal line may hold (never "\n")
ANY_WS = " \t\r\n"


def _string(value: str, rng: random.Random) -> str:
    """A JSON string literal with random (valid) escapes: \\uXXXX, \\/, short escapes."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        roll = rng.random()
        if ch in '"\\':
            out.append("\\" + ch if roll < 0.8 else f"\\u{code:04x}")
        elif ch in "\b\f\n\r\t" and roll < 0.7:
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif code < 0x20 or roll < 0.1:
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
            else:
                out.append(f"\\u{code:04x}" if roll < 0.05 else f"\\u{code:04X}")
        elif ch == "/" and roll < 0.5:
            out.append("\\/")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _loose(value: object, rng: random.Random, ws: str) -> str:
    """Serialise with random whitespace around every token, where JSON allows it."""

    def pad() -> str:
        return "".join(rng.choice(ws) for _ in range(rng.choice((0, 0, 0, 1, 1, 2, 4))))

    if isinstance(value, dict):
        if not value:
            return "{" + pad() + "}"
        parts = [pad() + _string(k, rng) + pad() + ":" + pad() + _loose(v, rng, ws) + pad() for k, v in value.items()]
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        if not value:
            return "[" + pad() + "]"
        return "[" + ",".join(pad() + _loose(v, rng, ws) + pad() for v in value) + "]"
    if isinstance(value, str):
        return _string(value, rng)
    return json.dumps(value)


def serialise(value: dict, style: str, rng: random.Random, ws: str = ANY_WS) -> bytes:
    if style == "orjson":
        return orjson.dumps(value)
    if style == "ascii":
        return json.dumps(value, ensure_ascii=True).encode()
    if style == "utf8":
        return json.dumps(value, ensure_ascii=False).encode()
    if style == "spaced":
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=rng.random() < 0.5).encode()
    lead = "".join(rng.choice(ws) for _ in range(rng.choice((0, 0, 1, 3))))
    trail = "".join(rng.choice(ws) for _ in range(rng.choice((0, 0, 1, 3))))
    return (lead + _loose(value, rng, ws) + trail).encode()


styles = st.sampled_from(STYLES)
seeds = st.integers(0, 2**32 - 1)


# --- a. members() -------------------------------------------------------------------------------


@SETTINGS
@given(obj=objects, style=styles, seed=seeds)
def test_members_finds_every_top_level_member(obj, style, seed):
    line = serialise(obj, style, random.Random(seed))
    assert same(orjson.loads(line), obj)  # the generator itself is sound
    found = members(line)
    assert [key for key, *_ in found] == list(obj)
    previous_end = 0
    for key, member_start, value_start, value_end in found:
        assert previous_end <= member_start < value_start < value_end <= len(line)
        assert line[member_start : member_start + 1] == b'"'
        assert orjson.loads(line[member_start:value_start].rstrip(ANY_WS.encode()).removesuffix(b":")) == key
        assert same(orjson.loads(line[value_start:value_end]), obj[key])
        previous_end = value_end


# --- b. set_member() ----------------------------------------------------------------------------

kinds = st.one_of(st.sampled_from(["meta", "user", "assistant"]), text)


@st.composite
def meta_like(draw) -> dict:
    """A dict with "kind" somewhere (or, now and then, nowhere) and maybe a "v"."""
    rest = draw(objects)
    rest.pop("kind", None)
    rest.pop("v", None)
    items = list(rest.items())
    if draw(st.integers(0, 9)) > 0:
        items.insert(draw(st.integers(0, len(items))), ("kind", draw(kinds)))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), ("v", draw(values)))
    return dict(items)


@SETTINGS
@given(obj=meta_like(), style=styles, seed=seeds)
def test_set_member_sets_v_and_touches_nothing_else(obj, style, seed):
    line = serialise(obj, style, random.Random(seed))
    found = {key: (start, vs, ve) for key, start, vs, ve in members(line)}
    out = set_member(line, "v", b"2", after="kind")
    parsed = orjson.loads(out)
    if "v" in obj:
        _, value_start, value_end = found["v"]
        assert out == line[:value_start] + b"2" + line[value_end:]
        expected = dict(obj, v=2)  # same place
    else:
        keys = list(obj)
        if "kind" in obj:
            kind_end = found["kind"][2]
            assert out == line[:kind_end] + b',"v":2' + line[kind_end:]
            keys.insert(keys.index("kind") + 1, "v")
        else:  # no anchor: appended just before the closing brace, trailing bytes kept
            body = line.rstrip(ANY_WS.encode())
            assert out == body[:-1] + (b',"v":2' if obj else b'"v":2') + b"}" + line[len(body) :]
            keys.append("v")
        expected = {key: (2 if key == "v" else obj[key]) for key in keys}
    assert same(parsed, expected)


# --- c. journal_v1_v2.upgrade ---------------------------------------------------------------

record_kinds = st.one_of(st.sampled_from(["user", "assistant", "agent", "event", "title", "compact"]), text)


def _record(kind: str, rest: dict, position: int) -> dict:
    items = [(k, v) for k, v in rest.items() if k not in ("kind", "seq")]
    items.insert(min(position, len(items)), ("kind", kind))
    return dict(items)


records = st.builds(_record, record_kinds.filter(lambda k: k != "meta"), small_objects, st.integers(0, 5))
def _with_v(meta: dict, where: str | None) -> dict:
    """Put ``"v": 1`` first, right after "kind", at the end, or nowhere (absent means v1)."""
    if where is None:
        return meta
    items = list(meta.items())
    index = {"first": 0, "after-kind": list(meta).index("kind") + 1, "end": len(items)}[where]
    items.insert(index, ("v", 1))
    return dict(items)


# a meta record carrying payload, uuid or parentUuid is not identified as LevelCode (toolkit/identify.py:
# it could be another tool's), so the generator of v1 LevelCode journals leaves those keys out
NOT_LEVELCODE = ("v", "payload", "uuid", "parentUuid")
metas = st.builds(
    lambda rest, position, where: _with_v(_record("meta", {k: v for k, v in rest.items() if k not in NOT_LEVELCODE}, position), where),
    small_objects,
    st.integers(0, 8),
    st.sampled_from([None, "first", "after-kind", "end"]),
)


@st.composite
def journals(draw):
    meta = draw(metas)
    # 0..30 records drawn from a pool of up to 8 (drawing 30 fresh objects per example is what
    # made this slow); each line is serialised afresh, in its own style, so lines still differ
    pool = draw(st.lists(records, min_size=1, max_size=8))
    body = [pool[i] for i in draw(st.lists(st.integers(0, len(pool) - 1), max_size=30))]
    crlf = draw(st.booleans())
    bom = draw(st.booleans())
    blanks = draw(st.booleans())
    rng = random.Random(draw(seeds))
    lines: list[bytes] = []
    expected: list[dict | None] = []  # None marks a blank line
    for index, obj in enumerate([meta, *body]):
        if blanks and index > 0 and rng.random() < 0.2:
            lines.append(rng.choice([b"", b" ", b"\t ", b"\r"]) if not crlf else b"\r")
            expected.append(None)
        line = serialise(obj, rng.choice(STYLES), rng, JOURNAL_WS)
        lines.append(line + (b"\r" if crlf else b""))
        expected.append(obj)
    if bom:
        lines[0] = BOM + lines[0]
    return lines, expected, meta


def _write(folder: str, name: str, lines: list[bytes]) -> Path:
    path = Path(folder) / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(journal=journals())
def test_upgrade_adds_seq_and_changes_nothing_else(journal):
    lines, expected, meta = journal
    out = list(upgrade(iter(lines)))
    assert len(out) == len(lines)

    # meta: "v" becomes 2, in place or right after "kind"; a BOM stays in front
    has_bom = lines[0].startswith(BOM)
    assert out[0].startswith(BOM) == has_bom
    new_meta = orjson.loads(out[0][3:] if has_bom else out[0])
    keys = list(meta)
    if "v" not in meta:
        keys.insert(keys.index("kind") + 1, "v")
    assert same(new_meta, {key: (2 if key == "v" else meta[key]) for key in keys})

    seq = 0
    for old, new, obj in zip(lines[1:], out[1:], expected[1:]):
        if obj is None:
            assert new == old
            continue
        seq += 1
        body = old.rstrip(JOURNAL_WS.encode())
        assert new == body[:-1] + b',"seq":%d}' % seq + old[len(body) :]
        assert same(orjson.loads(new), {**obj, "seq": seq})

    with tempfile.TemporaryDirectory() as folder:
        before = scan_journal(_write(folder, "v1.jsonl", lines))
        after = scan_journal(_write(folder, "v2.jsonl", out))
    assert before.version == 1 and not [f for f in before.findings if f.severity == "error"]  # the generator is sound
    assert after.version == 2
    assert after.records == before.records == 1 + seq
    assert [f.code for f in after.findings if f.severity == "error"] == []


# --- d. the scanner refuses a v1 record that already has "seq" -----------------------------------


def _offsets(lines: list[bytes]) -> list[int]:
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    return offsets


def test_scan_reports_the_first_top_level_seq_of_a_v1_journal(tmp_path):
    lines = [
        b'{"kind":"meta","v":1,"id":"2026-11-30T09-00-00-a1b2","project":"/p","createdAt":"2026-11-30T09:00:00Z","title":null}',
        b'{"kind":"user","t":"2026-11-30T09:01:00Z","content":{"seq":5,"note":"nested"}}',  # nested: not it
        b'{"kind":"assistant","content":[{"type":"text","text":"seq"}],"model":"seq","meta":{"inner":{"seq":1}}}',  # string values
        b'{"kind":"event","type":"checkpoint","note":"\\"seq\\":5"}',  # "seq": inside a string
        b'{"kind":"user", "seq" : 5 ,"content":"first real one"}',
        b'{"kind":"user","seq":6}',
    ]
    journal = tmp_path / "s.jsonl"
    journal.write_bytes(b"\n".join(lines) + b"\n")
    scan = scan_journal(journal)
    assert scan.version == 1
    assert scan.facts.seq_field == (5, _offsets(lines)[4])

    clean = lines[:4]
    journal.write_bytes(b"\n".join(clean) + b"\n")
    assert scan_journal(journal).facts.seq_field is None


def test_scan_seq_field_sees_an_escaped_key_and_ignores_meta_and_v2(tmp_path):
    journal = tmp_path / "s.jsonl"
    escaped = [b'{"kind":"meta"}', b'{"kind":"user","content":"x"}', b'{"kind":"user","s\\u0065q":1}']
    journal.write_bytes(b"\n".join(escaped) + b"\n")
    assert scan_journal(journal).facts.seq_field == (3, _offsets(escaped)[2])  # "s\u0065q" is "seq"

    meta_only = [b'{"kind":"meta","v":1,"seq":0}', b'{"kind":"user","content":"x"}']
    journal.write_bytes(b"\n".join(meta_only) + b"\n")
    assert scan_journal(journal).facts.seq_field is None  # meta is not a record that v2 numbers

    v2 = [b'{"kind":"meta","v":2}', b'{"kind":"user","seq":1}']
    journal.write_bytes(b"\n".join(v2) + b"\n")
    scan = scan_journal(journal)
    assert scan.version == 2 and scan.facts.seq_field is None


# --- regression: a lone-surrogate escape is valid JSON (fsck accepts it), so migrate must too ------


def test_lone_surrogate_escapes_in_meta_keys_and_values(tmp_path):
    # JSON.stringify writes "\ud83d" when it cuts a string mid-emoji; orjson refuses to parse it
    meta = b'{"kind":"meta", "x\\ud83d" : "\\ud83d","v":1}'
    assert [key for key, *_ in members(meta)] == ["kind", "x\ud83d", "v"]
    assert set_member(meta, "v", b"2", after="kind") == b'{"kind":"meta", "x\\ud83d" : "\\ud83d","v":2}'
    lines = [b'{"kind":"meta","\\udc00":1}', b'{"kind":"user","content":"cut \\ud83d"}']
    out = list(upgrade(iter(lines)))
    assert out == [b'{"kind":"meta","v":2,"\\udc00":1}', b'{"kind":"user","content":"cut \\ud83d","seq":1}']
    scan = scan_journal(_write(str(tmp_path), "s.jsonl", out))
    assert scan.version == 2 and scan.records == 2
    assert [f.code for f in scan.findings if f.severity == "error"] == []
