"""JSON out that never fails: orjson, else an encoder without recursion.

Whatever fsck accepts, every command can print: orjson refuses a lone surrogate, an int past
64 bits and nesting past its limits; :func:`encode_json` handles all of them with an explicit
stack.  Nothing here re-serialises a journal: it serialises caches and documents.
"""

from __future__ import annotations

import json
import math

import orjson



def dumps(value: object, indent: bool = False) -> bytes:
    """Serialise ``value`` (parsed JSON) to JSON bytes, whatever its depth or contents.

    orjson is the fast path; it refuses a lone surrogate, an int past 64 bits and nesting
    past 1024 levels, which :func:`encode_json` handles without recursion."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return encode_json(value, indent)


def _string(text: str) -> str:
    try:
        return orjson.dumps(text).decode()
    except TypeError:  # a lone surrogate: ASCII escapes spell it
        return json.dumps(text)


def _scalar(value: object) -> str:
    """A JSON scalar (or an empty container)."""
    if isinstance(value, (dict, list)):
        return "{}" if isinstance(value, dict) else "[]"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "null"
        return repr(value) if math.isfinite(value) else ("1e999" if value > 0 else "-1e999")  # parses back to inf
    if isinstance(value, int):
        return str(value)
    return _string(str(value))


#: Deeper than this, indented output goes compact: indenting N levels costs N² bytes.
INDENT_DEPTH = 64


def encode_json(value: object, indent: bool = False) -> bytes:
    """Serialise parsed JSON with an explicit stack (any depth), laid out as orjson would
    (``indent``: two spaces a level, compact below :data:`INDENT_DEPTH` levels)."""
    out: list[str] = []
    work: list = [(value, 0)]  # (value, depth) to encode, or a str to copy out
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        value, depth = item
        if isinstance(value, (dict, list)) and value:
            opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
            pad = indent and depth < INDENT_DEPTH
            inner = "\n" + "  " * (depth + 1) if pad else ""
            work.append(("\n" + "  " * depth if pad else "") + closer)
            members = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            for n in range(len(members) - 1, -1, -1):
                key, member = members[n]
                work.append((member, depth + 1))
                label = _string(key) + (": " if pad else ":") if opener == "{" else ""
                work.append(("," if n else "") + inner + label)
            work.append(opener)
        else:
            out.append(_scalar(value))
    return "".join(out).encode("utf-8")
