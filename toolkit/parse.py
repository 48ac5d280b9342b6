"""Parse one JSON document from bytes, as every reader in levelsess does (:func:`loads`).

A module of its own, below :mod:`toolkit.lines` (which gives these names too): an import that
finds nothing new parses its cache with it and loads nothing of the line splitter (issue 27:
0.7 ms of its start-up).
"""

from __future__ import annotations

import json

import orjson


class BeyondLimits(ValueError):
    """The bytes may be valid JSON, but nested deeper or holding a longer number than levelsess
    can parse (orjson stops at 1,024 levels, Python at 4,300-digit integers): never proof of garbage."""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes) -> object:
    """Parse one JSON document from UTF-8 bytes; raise ValueError if it is not valid JSON.

    orjson is the fast path.  It refuses lone-surrogate escapes such as ``"\\ud83d"``, which
    are valid JSON (RFC 8259) and which JavaScript's JSON.stringify writes when a string is
    cut mid-emoji, so those lines fall back to the standard library (strict UTF-8, no NaN).
    Past either parser's limits it raises :class:`BeyondLimits`.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(str(data, "utf-8"), parse_constant=_reject_constant)  # (bytes or a view of them)
        except RecursionError:  # nested deeper than Python's stack (orjson stops at 1024)
            raise BeyondLimits("is nested too deeply to parse") from None
        except ValueError as exc:
            if _LIMIT in str(exc):
                raise BeyondLimits("holds a number too long to parse") from None
            raise


_LIMIT = "Exceeds the limit"  # Python's message for an integer past sys.get_int_max_str_digits()
