"""The Bloom filters a resume keeps in the import cache (issue 27): which ids, keys or lines a
source held when its last import stopped, in about 12 bits each.  "Maybe held" for every one
added, and for about 1 in 400 others; a resume treats "maybe" as held and reads the file in full,
so a false "maybe" costs time, never a record.

Each key gives two numbers, ``first`` and an odd ``step``; its PROBES bits are
``(first + i * step) % size`` (Kirsch and Mitzenmacher: as good as PROBES independent hashes).
:class:`Hashed` takes them from a 128-bit BLAKE2b of any string (Claude Code's uuids, message ids,
keys); :class:`Digests` from the 64 bits of a 16-hex sha256 digest a caller made already (Codex's
call ids and lines): uniform already, so not hashed again.  A Gemini session's digests are kept
exactly while few (:class:`Exact`, :func:`kept_digests`): no false "maybe", and no filter to fill;
so are a Claude Code transcript's ids and keys (:class:`Prints`: a CRC-32 of each, made at C speed)."""

from __future__ import annotations

import binascii  # (base64's encodings, without base64 and struct: a grown import's start-up)
import hashlib
import sys
from array import array
from operator import methodcaller
from zlib import crc32

PROBES = 6
#: Up to this many digests a resume keeps them exactly (:class:`Exact`: 4 bytes each, made at C
#: speed); past it, in a :class:`Digests` filter (about 2.3 bytes each, a Python loop to fill).
EXACT_KEYS = 1 << 16
_INT32 = next(code for code in "ilh" if array(code).itemsize == 4)  # (array's 4-byte signed type: "i" wherever levelsess runs)
_UINT32 = _INT32.upper()


class Bloom:
    """The bits and their size; a subclass says how a key gives ``(first, step)`` (:meth:`pair`)."""

    PROBES = PROBES

    def __init__(self, bits: bytearray, size: int) -> None:
        self.bits, self.size = bits, size

    @classmethod
    def empty(cls, size: int) -> Bloom:
        return cls(bytearray((size + 7) // 8), size)

    @classmethod
    def of(cls, keys, count: int) -> Bloom:
        """``keys`` (about ``count`` of them, streamed), with room for half as many again (a resume adds what it reads)."""
        kept = cls.empty(max(512, (count + count // 2 + 32) * 12))
        kept.update(keys)
        return kept

    @staticmethod
    def pair(key) -> tuple[int, int]:
        raise NotImplementedError

    def _spots(self, key) -> list[int]:
        first, step = self.pair(key)
        size = self.size
        return [(first + i * step) % size for i in range(PROBES)]

    def add(self, key) -> None:
        bits = self.bits
        for spot in self._spots(key):
            bits[spot >> 3] |= 1 << (spot & 7)

    def __contains__(self, key) -> bool:
        bits = self.bits
        return all(bits[spot >> 3] & (1 << (spot & 7)) for spot in self._spots(key))

    def update(self, keys) -> None:
        """Add every key of ``keys`` (streamed): :meth:`add`, inline (a first import fills these
        with a transcript's every record)."""
        bits, size, pair = self.bits, self.size, self.pair
        for key in keys:
            first, step = pair(key)
            _set_spots(bits, size, first, step)

    def dump(self) -> list:
        return [self.size, binascii.b2a_base64(bytes(self.bits), newline=False).decode("ascii")]

    @classmethod
    def load(cls, value: object) -> Bloom:
        """A kept filter; ValueError for anything else (a cache of another build is read as none)."""
        if not (isinstance(value, list) and len(value) == 2 and type(value[0]) is int and value[0] > 0
                and isinstance(value[1], str)):
            raise ValueError("not a kept filter")
        bits = bytearray(binascii.a2b_base64(value[1], strict_mode=True))
        if len(bits) != (value[0] + 7) // 8:
            raise ValueError("not a kept filter")
        return cls(bits, value[0])


def digest_of(text: str) -> str:
    """A text's 16-hex sha256, as :class:`Digests` takes it (an id a resume keeps in a filter)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def keep_last(kept: dict, key, value=None, limit: int = 32) -> None:
    """Make ``key`` (with ``value``) the last of ``kept``, which keeps the ``limit`` last keys exactly:
    what a resume keeps beside a filter, for the keys it is most often asked of (the file's last)."""
    kept.pop(key, None)
    kept[key] = value
    if len(kept) > limit:
        del kept[next(iter(kept))]


def _set_spots(bits: bytearray, size: int, first: int, step: int) -> None:
    """Set the bits ``(first + i * step) % size`` of ``bits`` for i < 6 (:data:`PROBES`), unrolled: what
    :meth:`Bloom.update` does for each key (a first import fills these with a transcript's every record)."""
    spot, step = first % size, step % size
    bits[spot >> 3] |= 1 << (spot & 7)
    spot = (spot + step) % size
    bits[spot >> 3] |= 1 << (spot & 7)
    spot = (spot + step) % size
    bits[spot >> 3] |= 1 << (spot & 7)
    spot = (spot + step) % size
    bits[spot >> 3] |= 1 << (spot & 7)
    spot = (spot + step) % size
    bits[spot >> 3] |= 1 << (spot & 7)
    spot = (spot + step) % size
    bits[spot >> 3] |= 1 << (spot & 7)


class Hashed(Bloom):
    """Keys of any text (or bytes), hashed once with a 128-bit BLAKE2b: its two 64-bit halves."""

    @staticmethod
    def pair(key: str | bytes) -> tuple[int, int]:
        whole = hashlib.blake2b(key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        return int.from_bytes(whole[:8], "big"), int.from_bytes(whole[8:], "big") | 1

    def update(self, keys) -> None:
        """:meth:`Bloom.update` with :meth:`pair` inline: a call less per key."""
        bits, size, blake2b, number = self.bits, self.size, hashlib.blake2b, int.from_bytes
        for key in keys:
            whole = number(blake2b(key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass"),
                                   digest_size=16).digest(), "big")
            _set_spots(bits, size, whole >> 64, (whole & _LOW) | 1)


_LOW = (1 << 64) - 1


class Digests(Bloom):
    """Keys that are 16-hex digests already: their top and bottom 32 bits."""

    @staticmethod
    def pair(digest: str) -> tuple[int, int]:
        whole = int(digest, 16)
        return whole >> 32, (whole & 0xFFFFFFFF) | 1

    @classmethod
    def of_numbers(cls, numbers, count: int) -> Digests:
        """:meth:`of` the digests kept as int64 (``int(digest, 16) - 2**63``, an ``array("q")``), without
        making each a hex string again to parse it back (a fifth of what a Gemini import spent on its filters)."""
        kept = cls.empty(max(512, (count + count // 2 + 32) * 12))
        kept.update_numbers(numbers)
        return kept

    def update_numbers(self, numbers) -> None:
        """:meth:`update` with the digests kept as int64, as :meth:`of_numbers` takes them: the same bits."""
        bits, size, high = self.bits, self.size, 1 << 63
        for n in numbers:
            whole = n + high
            _set_spots(bits, size, whole >> 32, (whole & 0xFFFFFFFF) | 1)


class Exact:
    """Digests a resume keeps exactly while few (:data:`EXACT_KEYS`): the top 32 bits of each (of
    the int64 ``int(digest, 16) - 2**63`` that :meth:`Digests.of_numbers` takes, its ``>> 32``).
    A digest not added is "maybe held" only when its top 32 bits are one's added (1 in 65,000 at
    the limit, where a filter says it of 1 in 400).  Kept as their bytes: filling a filter with a
    Gemini session's every line took 6 % of its first import; 5.3 bytes a digest in the cache, a
    filter's 3 (:func:`kept_digests` keeps more in a filter; :func:`dump_kept` none).  What
    :class:`Digests` answers of a key added, with :meth:`update`, :meth:`update_numbers` and
    :meth:`dump` alike; its dump is ``["p4", base64 of the int32s, little-endian]``, which
    :meth:`Digests.load` refuses."""

    TAG = "p4"

    def __init__(self, tops: array) -> None:
        self.tops = tops  # array(_INT32): each digest's top 32 bits, signed
        self._held: set[int] | None = None  # made when first asked (a resume asks of its new lines only)

    @classmethod
    def of_numbers(cls, numbers) -> Exact:
        return cls(array(_INT32, [n >> 32 for n in numbers]))

    def __contains__(self, digest: str) -> bool:
        if self._held is None:
            self._held = set(self.tops)
        return int(digest[:8], 16) - (1 << 31) in self._held

    def update(self, digests) -> None:
        """Add 16-hex digests (as :meth:`Digests.update` takes them)."""
        self._add([int(digest[:8], 16) - (1 << 31) for digest in digests])

    def update_numbers(self, numbers) -> None:
        self._add([n >> 32 for n in numbers])

    def _add(self, tops: list[int]) -> None:
        self.tops.extend(tops)
        if self._held is not None:
            self._held.update(tops)

    def __len__(self) -> int:
        return len(self.tops)

    def dump(self) -> list:
        return _dump_words(self.TAG, self.tops)

    @classmethod
    def load(cls, value: object) -> Exact:
        """A kept :meth:`dump`; ValueError for anything else."""
        return cls(_load_words(value, cls.TAG, _INT32, "digests"))


def _dump_words(tag: str, words: array) -> list:
    """``[tag, base64 of the 4-byte words, little-endian]``: the kept form of :class:`Exact` and :class:`Prints`."""
    if sys.byteorder != "little":
        words = array(words.typecode, words)
        words.byteswap()
    return [tag, binascii.b2a_base64(words.tobytes(), newline=False).decode("ascii")]


def _load_words(value: object, tag: str, code: str, what: str) -> array:
    """The words of a kept :func:`_dump_words` form of ``tag``; ValueError for anything else."""
    if not (isinstance(value, list) and len(value) == 2 and value[0] == tag and isinstance(value[1], str)):
        raise ValueError(f"not kept {what}")
    data = binascii.a2b_base64(value[1], strict_mode=True)
    if len(data) % 4:
        raise ValueError(f"not kept {what}")
    words = array(code)
    words.frombytes(data)
    if sys.byteorder != "little":
        words.byteswap()
    return words


def kept_digests(numbers) -> list:
    """What a resume keeps of these digests (int64): :class:`Exact` while few, a :class:`Digests`
    filter past :data:`EXACT_KEYS`."""
    if len(numbers) <= EXACT_KEYS:
        return Exact.of_numbers(numbers).dump()
    return Digests.of_numbers(numbers, len(numbers)).dump()


def dump_kept(kept: Exact | Digests) -> list | None:
    """The kept form of digests a resume added to: None for exact ones grown past :data:`EXACT_KEYS`
    (their top bits alone cannot make a filter that holds each digest: the next growth is read in
    full, and its state kept as a filter of the whole digests)."""
    if type(kept) is Exact and len(kept) > EXACT_KEYS:
        return None
    return kept.dump()


def load_digests(value: object) -> Exact | Digests:
    """Kept digests, as :func:`kept_digests` or an earlier build (a :class:`Digests` filter) kept
    them; ValueError for anything else."""
    if isinstance(value, list) and value[:1] == [Exact.TAG]:
        return Exact.load(value)
    return Digests.load(value)


_ENCODE = methodcaller("encode", "utf-8", "surrogatepass")


class Prints:
    """Keys of any text (or bytes) kept exactly while few (:data:`EXACT_KEYS`): the CRC-32 of each
    one's UTF-8, what :class:`Hashed` answers of them with :meth:`add` and :meth:`dump` alike.  A key
    not added is "maybe held" only when its CRC is one added's: about 1 in 65,000 at the limit (a
    filter's 1 in 400), and a false "maybe" costs a full read, never a record.  Made with no Python
    step a key (the first import of a Claude Code transcript of small records spent a fifth of its
    time filling its three filters, a key's six bits set one by one); 5.3 bytes a key in the cache,
    a filter's 2.5.  Its dump is ``["c4", base64 of the uint32s, little-endian]``, which
    :meth:`Hashed.load` refuses."""

    TAG = "c4"

    def __init__(self, crcs: array) -> None:
        self.crcs = crcs  # array(_UINT32)
        self._held: set[int] | None = None  # made when first asked (a resume asks of its new lines only)

    @classmethod
    def of(cls, keys, text: bool = True) -> Prints:
        """``keys`` (streamed): text when ``text`` (each encoded with no Python step), else any mix
        of bytes and text."""
        return cls(array(_UINT32, map(crc32, map(_ENCODE, keys)) if text else map(cls._crc, keys)))

    @staticmethod
    def _crc(key: str | bytes) -> int:
        return crc32(key if isinstance(key, bytes) else key.encode("utf-8", "surrogatepass"))

    def __contains__(self, key: str | bytes) -> bool:
        if self._held is None:
            self._held = set(self.crcs)
        return self._crc(key) in self._held

    def add(self, key: str | bytes) -> None:
        crc = self._crc(key)
        self.crcs.append(crc)
        if self._held is not None:
            self._held.add(crc)

    def __len__(self) -> int:
        return len(self.crcs)

    def dump(self) -> list:
        return _dump_words(self.TAG, self.crcs)

    @classmethod
    def load(cls, value: object) -> Prints:
        """A kept :meth:`dump`; ValueError for anything else."""
        return cls(_load_words(value, cls.TAG, _UINT32, "prints"))
