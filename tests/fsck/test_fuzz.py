"""Arbitrary JSON in every field: fsck and reindex give typed findings, never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import PROJECT_SLUG
from toolkit.errors import CODES
from toolkit.fsck import check_folders, plan_repair
from toolkit.reindex import reindex
from toolkit.stores import discover_all

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)
KEYS = ["kind", "v", "id", "seq", "t", "title", "content", "model", "type", "parentId", "timestamp", "project", "createdAt"]
records = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)
lines = st.lists(st.one_of(records, values), min_size=0, max_size=6)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _write(folder: Path, name: str, items: list, tail: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in items) + tail)


@SETTINGS
@given(items=lines, meta_first=st.booleans(), tail=st.sampled_from([b"", b'{"kind":"us', b"\0\0", b'{"id":"z"}']),
       index=st.one_of(st.none(), values))
def test_levelcode_never_crashes(items, meta_first, tail, index):
    if meta_first:
        items = [{"kind": "meta", "v": 2, "id": "x", "project": "/p", "createdAt": "t"}, *items]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root / PROJECT_SLUG, "a.jsonl", items, tail)
        if index is not None:
            (root / PROJECT_SLUG / "index.json").write_bytes(orjson.dumps(index))
        _exercise(root)


@SETTINGS
@given(items=lines, tail=st.sampled_from([b"", b'{"id":"e', b"\0", b'{"id":"z"}']), meta=st.one_of(st.none(), values))
def test_logician_never_crashes(items, tail, meta):
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        session = ws / ".logician" / "sessions" / "sessions" / "s1"
        _write(session, "messages.jsonl", items, tail)
        if meta is not None:
            (session / "meta.json").write_bytes(orjson.dumps(meta))
        _exercise(ws)


def _exercise(root: Path) -> None:
    report = check_folders(discover_all([root]), strict=True)
    assert all(f.code in CODES for f in report.findings)
    result = plan_repair(report).execute()
    assert not result.fatal
    reindex(discover_all([root]), full=True)
    second = plan_repair(check_folders(discover_all([root]))).execute()
    assert not any(f.repaired and f.code in ("torn-tail", "unterminated-tail") for f in second.findings)
