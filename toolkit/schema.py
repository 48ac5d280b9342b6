"""JSON Schemas (``schemas/``, 2020-12) and the record validator behind ``fsck --strict``."""

from __future__ import annotations

import functools
from pathlib import Path

import orjson
from jsonschema import Draft202012Validator

from .findings import FindingSink

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"

#: (record kind, version) -> schema file; version None means any.
_RECORD_SCHEMAS = {
    ("meta", 1): "levelcode-v1-meta.schema.json",
    ("meta", 2): "levelcode-v2-meta.schema.json",
    ("event-record", 1): "levelcode-v1-record.schema.json",
    ("event-record", 2): "levelcode-v2-record.schema.json",
    ("entry", None): "logician-entry.schema.json",
}
DOCUMENT_SCHEMAS = {
    "index-v1": "index-v1.schema.json",
    "index-v2": "index-v2.schema.json",
    "logician-meta": "logician-meta.schema.json",
}


@functools.lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """Return a compiled validator for ``schemas/<name>``."""
    schema = orjson.loads((SCHEMA_DIR / name).read_bytes())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@functools.lru_cache(maxsize=None)
def kind_validator(name: str, kind: str) -> Draft202012Validator:
    """Return ``schemas/<name>`` specialised to one record kind.

    The record schemas say "if kind is X then …" once per kind; evaluating every branch for
    every record costs most of --strict's time.  Keeping only the matching branch is the same
    rule for that kind, compiled once.
    """
    schema = orjson.loads((SCHEMA_DIR / name).read_bytes())
    branches = schema.pop("allOf", [])
    chosen = [b["then"] for b in branches if b.get("if", {}).get("properties", {}).get("kind", {}).get("const") == kind]
    others = [b for b in branches if "if" not in b]
    if chosen or others:
        schema["allOf"] = chosen + others
    return Draft202012Validator(schema)


def document_errors(kind: str, value: object) -> list[str]:
    """Return readable schema errors for a whole document (index or meta.json)."""
    return [_describe(e) for e in validator(DOCUMENT_SCHEMAS[kind]).iter_errors(value)]


def _describe(error) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(record)"
    return f"{where}: {error.message[:200]}"


def validate_record(obj: dict, kind: str, version: int | None, sink: FindingSink, line: int, offset: int, raw: bytes) -> None:
    """Report the first schema error of one record as ``schema-violation``."""
    if kind == "meta":
        key = ("meta", version)
    elif kind == "entry":
        key = ("entry", None)
    else:
        key = ("event-record", version or 1)
    name = _RECORD_SCHEMAS.get(key)
    if name is None:
        return
    check = validator(name) if key[0] != "event-record" else kind_validator(name, kind)
    error = next(check.iter_errors(obj), None)
    if error is not None:
        sink.add("schema-violation", _describe(error), line, offset, raw)
