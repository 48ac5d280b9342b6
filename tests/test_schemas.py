"""The JSON Schemas in schemas/ are valid 2020-12 and accept/reject the right shapes."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from toolkit.schema import DOCUMENT_SCHEMAS, SCHEMA_DIR, _RECORD_SCHEMAS, validator

SCHEMA_FILES = sorted(p.name for p in SCHEMA_DIR.glob("*.json"))

T = "2026-07-28T09:12:33.000Z"
META1 = {"kind": "meta", "v": 1, "id": "2026-07-28T09-12-33-8f3k", "project": "/Users/ada/code/thin.ly", "createdAt": T, "title": None}
META2 = {**META1, "v": 2, "seq": 0, "source": {"app": "vscode", "path": "/x/chat.json", "key": "abc", "version": "3"}, "writer": {"tool": "levelsess"}}
V1_RECORDS = [
    {"kind": "user", "t": T, "content": "Add idempotency", "contextFiles": ["app/services/refund.rb"]},
    {"kind": "user", "t": T, "content": [{"type": "text", "text": "hi"}]},
    {"kind": "assistant", "t": T, "content": [{"type": "text", "text": "ok"}], "model": "m-1"},
    {"kind": "assistant", "t": T, "content": [], "model": None},
    {"kind": "agent", "t": T, "messages": [{"role": "assistant"}]},
    {"kind": "event", "t": T, "type": "checkpoint", "n": 3},
    {"kind": "title", "t": T, "title": "Idempotent refunds"},
    {"kind": "title", "t": T, "title": None},
    {"kind": "compact", "t": T, "briefing": "so far…", "coversThrough": 41},
    {"kind": "future-kind", "anything": [1, 2]},
]
BAD_RECORDS = [
    {"t": T, "content": "no kind"},
    {"kind": "meta", "v": 1},
    {"kind": 5},
    {"kind": "user", "t": T},
    {"kind": "user", "t": T, "content": 3},
    {"kind": "user", "t": T, "content": "x", "contextFiles": [1]},
    {"kind": "assistant", "t": T, "content": [], "model": 7},
    {"kind": "agent", "t": T, "messages": "nope"},
    {"kind": "event", "t": T},
    {"kind": "title", "t": T, "title": 1},
    {"kind": "compact", "t": T, "briefing": "x", "coversThrough": -1},
    {"kind": "compact", "t": T, "briefing": "x", "coversThrough": "41"},
    {"kind": "event", "t": 123, "type": "reap"},
    "not an object",
]
ENTRY1 = {"id": "2026-07-28T09-12-33-8f3k", "title": None, "createdAt": T, "updatedAt": T, "turns": 2, "model": None, "preview": "Add idempotency"}
ENTRY2 = {**ENTRY1, "bytes": 1234, "pinned": False, "archived": True}
LMETA = {"formatVersion": 1, "name": None, "workspace": "/w", "createdAt": T, "updatedAt": T, "entryCount": 3, "parentSession": None, "activeLeaf": "e3"}


def ok(name, value):
    errors = list(validator(name).iter_errors(value))
    assert not errors, [e.message for e in errors]


def bad(name, value):
    assert not validator(name).is_valid(value), value


def test_all_expected_files_present():
    expected = set(_RECORD_SCHEMAS.values()) | set(DOCUMENT_SCHEMAS.values())
    assert expected <= set(SCHEMA_FILES)


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_schema_is_valid_2020_12(name):
    schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://levelsess.dev/schemas/{name}"
    assert schema["title"] and schema["description"]
    validator(name)  # the loader compiles it too


def test_v1_meta():
    n = "levelcode-v1-meta.schema.json"
    ok(n, META1)
    ok(n, {**META1, "model": "m-1", "unknownField": {"kept": True}})
    bad(n, {**META1, "v": 2})
    bad(n, {**META1, "kind": "user"})
    bad(n, {k: v for k, v in META1.items() if k != "project"})
    bad(n, {**META1, "title": 3})
    bad(n, {**META1, "model": 3})


def test_v2_meta():
    n = "levelcode-v2-meta.schema.json"
    ok(n, META2)
    ok(n, {**META1, "v": 2})  # source, writer, seq all optional
    ok(n, {**META2, "source": {"extra": 1}})
    bad(n, META1)
    bad(n, {**META2, "seq": 1})
    bad(n, {**META2, "source": "vscode"})
    bad(n, {**META2, "writer": []})
    bad(n, {k: v for k, v in META2.items() if k != "createdAt"})


@pytest.mark.parametrize("record", V1_RECORDS)
def test_records_good(record):
    ok("levelcode-v1-record.schema.json", record)
    ok("levelcode-v1-record.schema.json", {**record, "seq": 9, "extra": "kept"})
    ok("levelcode-v2-record.schema.json", {**record, "seq": 1})


@pytest.mark.parametrize("record", BAD_RECORDS)
def test_records_bad(record):
    bad("levelcode-v1-record.schema.json", record)
    bad("levelcode-v2-record.schema.json", {**record, "seq": 1} if isinstance(record, dict) else record)


@pytest.mark.parametrize("seq", [None, 0, -1, "1", 1.5])
def test_v2_record_seq(seq):
    record = {"kind": "title", "t": T, "title": "x"}
    if seq is not None:
        record["seq"] = seq
    bad("levelcode-v2-record.schema.json", record)


def test_index_v1():
    n = "index-v1.schema.json"
    ok(n, [])
    ok(n, [ENTRY1, {**ENTRY1, "id": "b", "model": "m", "createdAt": None, "updatedAt": None, "preview": None}])
    bad(n, {"v": 1, "sessions": [ENTRY1]})
    bad(n, [ENTRY2])  # v2-only fields are not allowed in the seed format
    bad(n, [{k: v for k, v in ENTRY1.items() if k != "preview"}])
    bad(n, [{**ENTRY1, "turns": -1}])
    bad(n, [{**ENTRY1, "turns": True}])


def test_index_v2():
    n = "index-v2.schema.json"
    doc = {"v": 2, "generatedAt": T, "sessions": [ENTRY2]}
    ok(n, doc)
    ok(n, {**doc, "sessions": []})
    bad(n, [ENTRY2])
    bad(n, {**doc, "v": 1})
    bad(n, {**doc, "extra": 1})
    bad(n, {k: v for k, v in doc.items() if k != "generatedAt"})
    bad(n, {**doc, "sessions": [{k: v for k, v in ENTRY2.items() if k != "bytes"}]})
    bad(n, {**doc, "sessions": [{**ENTRY2, "pinned": "no"}]})
    bad(n, {**doc, "sessions": [{**ENTRY2, "surprise": 1}]})


def test_logician_entry():
    n = "logician-entry.schema.json"
    ok(n, {"id": "e1"})
    ok(n, {"id": "e2", "parentId": "e1", "timestamp": T, "role": "user", "content": [1]})
    ok(n, {"id": "e3", "parentId": None})
    bad(n, {"id": 123})
    bad(n, {"id": ""})
    bad(n, {"parentId": "e1"})
    bad(n, {"id": "e4", "parentId": 5})
    bad(n, {"id": "e4", "timestamp": 5})


def test_logician_meta():
    n = "logician-meta.schema.json"
    ok(n, LMETA)
    ok(n, {**LMETA, "name": "n", "parentSession": "s0", "extra": True})
    bad(n, {**LMETA, "formatVersion": 2})
    bad(n, {**LMETA, "entryCount": -1})
    bad(n, {k: v for k, v in LMETA.items() if k != "activeLeaf"})
    bad(n, {**LMETA, "workspace": 1})
