"""toolkit.digest gives hashlib's digests without loading OpenSSL."""

from __future__ import annotations

import hashlib

from hypothesis import given, strategies as st

from toolkit import digest


@given(st.binary(max_size=9000), st.integers(min_value=1, max_value=64))
def test_the_builtin_hashes_are_hashlibs(data, size):
    assert digest.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert digest.blake2b(data, digest_size=size).digest() == hashlib.blake2b(data, digest_size=size).digest()
