"""The resume's Bloom filters (toolkit/importers/bloom.py): a filter filled a list at a time
(``update``, unrolled and with the hash inline) sets exactly the bits that adding each key does,
so a kept filter is the same bytes whichever way it was filled, and every key added is held."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.importers.bloom import PROBES, Digests, Hashed

_TEXT = st.one_of(st.text(max_size=40), st.binary(max_size=40))
_DIGEST = st.binary(min_size=1, max_size=20).map(lambda b: hashlib.sha256(b).hexdigest()[:16])


def _one_by_one(cls, keys: list, size: int) -> bytearray:
    """The bits of ``keys`` set by the definition: each key's PROBES spots ``(first + i * step) % size``."""
    bits = bytearray((size + 7) // 8)
    for key in keys:
        first, step = cls.pair(key)
        for i in range(PROBES):
            spot = (first + i * step) % size
            bits[spot >> 3] |= 1 << (spot & 7)
    return bits


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_TEXT, max_size=30), size=st.integers(min_value=1, max_value=5000))
def test_hashed_update_sets_what_each_key_sets(keys: list, size: int) -> None:
    kept = Hashed.empty(size)
    kept.update(iter(keys))  # (streamed, as _seen gives them)
    assert kept.bits == _one_by_one(Hashed, keys, size)
    one = Hashed.empty(size)
    for key in keys:
        one.add(key)
    assert one.bits == kept.bits
    assert all(key in kept for key in keys)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_DIGEST, max_size=30), size=st.integers(min_value=1, max_value=5000))
def test_digests_update_sets_what_each_key_sets(keys: list, size: int) -> None:
    kept = Digests.of(keys, len(keys)) if size % 2 else Digests.empty(size)
    if not size % 2:
        kept.update(keys)
    assert kept.bits == _one_by_one(Digests, keys, kept.size)
    assert all(key in kept for key in keys)
    assert Digests.load(kept.dump()).bits == kept.bits


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_DIGEST, max_size=30), size=st.integers(min_value=1, max_value=5000))
def test_digests_kept_as_numbers_set_what_their_hex_sets(keys: list, size: int) -> None:
    """A Gemini import keeps its digests as int64 (``int(digest, 16) - 2**63``): filled from those, a
    filter is the same bytes as one filled from the hex digests, and holds each."""
    from array import array

    numbers = array("q", (int(key, 16) - (1 << 63) for key in keys))
    kept = Digests.empty(size)
    kept.update_numbers(numbers)
    assert kept.bits == _one_by_one(Digests, keys, size)
    assert all(key in kept for key in keys)
    assert Digests.of_numbers(numbers, len(keys)).bits == Digests.of(iter(keys), len(keys)).bits


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_DIGEST, max_size=40), others=st.lists(_DIGEST, max_size=20), later=st.lists(_DIGEST, max_size=10),
       limit=st.integers(min_value=0, max_value=60))
def test_exact_digests_hold_what_was_added_and_nothing_else_in_either_kept_form(keys, others, later, limit):
    """Kept exactly (``Exact``: each digest's top 32 bits), the digests hold each one added and no
    other (but one of the same top bits); their kept form reads back the same, added to in hex or as
    numbers alike; past EXACT_KEYS a first import keeps a Digests filter of them (which holds each),
    and a resume's exact digests grown past it are not kept (``dump_kept``: None); each loader
    refuses the other's form."""
    from array import array

    import pytest

    from toolkit.importers import bloom
    from toolkit.importers.bloom import Exact, dump_kept, kept_digests, load_digests

    numbers = array("q", (int(key, 16) - (1 << 63) for key in keys))
    before, bloom.EXACT_KEYS = bloom.EXACT_KEYS, limit
    try:
        kept = load_digests(kept_digests(numbers))
        if len(keys) <= limit:
            assert type(kept) is Exact and list(kept.tops) == [n >> 32 for n in numbers]
            assert all(key in kept for key in keys)
            assert not any(key in kept for key in others if key[:8] not in {k[:8] for k in keys})
            with pytest.raises(ValueError):
                Digests.load(kept.dump())
        else:
            assert type(kept) is Digests and kept.bits == Digests.of(iter(keys), len(keys)).bits
            with pytest.raises(ValueError):
                Exact.load(kept.dump())
        assert all(key in kept for key in keys)
        by_hex, by_number = load_digests(kept_digests(numbers)), load_digests(kept_digests(numbers))
        by_hex.update(later)
        by_number.update_numbers(array("q", (int(key, 16) - (1 << 63) for key in later)))
        assert by_hex.dump() == by_number.dump()
        grown = dump_kept(by_hex)
        if type(by_hex) is Exact and len(keys) + len(later) > limit:
            assert grown is None
        else:
            assert all(key in load_digests(grown) for key in keys + later)
    finally:
        bloom.EXACT_KEYS = before


def test_a_damaged_exact_form_is_refused():
    import pytest

    from toolkit.importers.bloom import Exact, load_digests

    for value in ([Exact.TAG, "%%"], [Exact.TAG, "AAA="], [Exact.TAG, 3], [Exact.TAG], Exact.TAG):
        with pytest.raises(ValueError):
            load_digests(value) if isinstance(value, list) and len(value) == 2 else Exact.load(value)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_TEXT, max_size=40), others=st.lists(_TEXT, max_size=20), later=st.lists(_TEXT, max_size=10))
def test_prints_hold_what_was_added_and_nothing_else_in_their_kept_form(keys, others, later):
    """Kept exactly (``Prints``: the CRC-32 of each key's UTF-8), keys of text or bytes are each
    held, made at once from text (no Python step a key) or added one by one alike, and no other key
    is (but one of the same CRC); the kept form reads back the same, and each loader refuses the
    other's form."""
    import zlib

    import pytest

    from toolkit.importers.bloom import Prints

    texts = [key for key in keys if isinstance(key, str)]
    crc = lambda key: zlib.crc32(key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass"))  # noqa: E731
    made, mixed, one = Prints.of(iter(texts)), Prints.of(iter(keys), text=False), Prints.of(())
    for key in keys:
        one.add(key)
    assert list(made.crcs) == [crc(key) for key in texts]
    assert list(mixed.crcs) == list(one.crcs) == [crc(key) for key in keys]
    assert all(key in mixed for key in keys) and all(key in made for key in texts)
    assert not any(key in mixed for key in others if crc(key) not in {crc(k) for k in keys})
    again = Prints.load(mixed.dump())
    assert list(again.crcs) == list(mixed.crcs) and all(key in again for key in keys)  # (asked before it grows)
    for key in later:
        again.add(key)
    assert all(key in again for key in later)
    assert all(key in Prints.load(again.dump()) for key in keys + later) and len(again) == len(keys) + len(later)
    with pytest.raises(ValueError):
        Hashed.load(mixed.dump())
    with pytest.raises(ValueError):
        Prints.load(Hashed.of(iter(keys), len(keys)).dump())


def test_a_damaged_prints_form_is_refused():
    import pytest

    from toolkit.importers.bloom import Prints

    for value in ([Prints.TAG, "%%"], [Prints.TAG, "AAA="], [Prints.TAG, 3], [Prints.TAG], Prints.TAG, ["p4", "AAAAAA=="]):
        with pytest.raises(ValueError):
            Prints.load(value)
