"""Hashes without ``hashlib``: its first import loads OpenSSL, some 3 ms of every process that
imports it, which an import that finds nothing new (issue 27) cannot afford.  CPython's own
builtin modules give the same digests; an interpreter built without them falls back to hashlib."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b
try:
    from _sha256 import sha256  # CPython up to 3.11
except ImportError:  # pragma: no cover - 3.12 on
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

__all__ = ["blake2b", "sha256"]
