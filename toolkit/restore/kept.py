"""The bytes the store keeps of a line-based source file, put back in order, and the proof that
they are the file the source held at its last import.

``import --from claude`` / ``--from codex`` keep every whole source line under ``raw`` with its
byte offset in the source (``at``), the lines no conversation record carries as ``source-line``
events, and, at each import that saw the source change, a ``source-state`` event: the source's
path, and the size and sha256 of what it read as whole lines (:mod:`toolkit.importers.output`).
:func:`read_kept` finds where each line's bytes are in the journals (the bytes are never parsed
and re-serialised: they are sliced out of the journal line), and proves the file they make:
every byte from 0 to the size covered exactly once by whole lines, and the same sha256.  A
journal that cannot prove it is refused with the reason (:class:`Unproven`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..importers.output import AT, SOURCE_STATE
from ..journal import iter_records
from ..lines import loads, open_regular

_RAW = b',"raw":'
_DECODER = json.JSONDecoder()


class Unproven(Exception):
    """The kept journals cannot give the source back byte for byte; the message says why."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One source line: where it was in the source, and where its bytes are in a kept journal."""

    offset: int
    length: int
    journal: int  # index into Kept.journals
    start: int  # byte offset of the line's bytes in that journal


@dataclass(frozen=True)
class Kept:
    """A source file as the store can give it back: ``size`` bytes, ``sha256``, line by line."""

    journals: tuple[Path, ...]
    path: str  # the source's path at its last import
    size: int
    sha256: str
    pieces: tuple[Piece, ...]  # in source order, tiling [0, size)

    @property
    def lines(self) -> int:
        return len(self.pieces)

    def chunks(self, start: int = 0) -> Iterator[bytes]:
        """The source's bytes from byte ``start`` on, one line (with its newline) at a time."""
        handles: dict[int, object] = {}
        try:
            for piece in self.pieces:
                end = piece.offset + piece.length + (piece.offset + piece.length < self.size)
                if end <= start:
                    continue
                handle = handles.get(piece.journal)
                if handle is None:
                    handle = handles[piece.journal] = open_regular(self.journals[piece.journal])
                handle.seek(piece.start)
                data = handle.read(piece.length)
                if len(data) != piece.length:
                    raise Unproven(f"{self.journals[piece.journal]} changed while it was read")
                data += b"\n" if end > piece.offset + piece.length else b""
                yield data[max(0, start - piece.offset):]
        finally:
            for handle in handles.values():
                handle.close()

    def lines_from(self, start: int) -> int:
        """How many lines begin at or after byte ``start`` (a line cut at ``start`` counts as its rest)."""
        return sum(1 for p in self.pieces if p.offset + p.length >= start)


def read_kept(journals: Sequence[Path]) -> Kept:
    """Find each kept source line in ``journals`` (the session's first: its last ``source-state``
    says what the source was) and prove the file they make; raise :class:`Unproven` otherwise."""
    found: dict[int, tuple[int, int, int]] = {}  # source offset -> (journal, start, length); the later import wins
    state, carried, placed = None, 0, 0
    for index, journal in enumerate(journals):
        with open_regular(journal) as handle:
            for _line, offset, record in iter_records(journal):
                if index == 0 and record.get("kind") == "event" and record.get("type") == SOURCE_STATE:
                    state = record
                if record.get("raw") is None:
                    continue
                carried += 1
                at = record.get(AT)
                if at is None:
                    continue
                handle.seek(offset)
                line = handle.readline().rstrip(b"\n")
                for position, (start, end) in zip(at if isinstance(at, list) else [at], _raw_spans(line, isinstance(at, list))):
                    if type(position) is int:
                        found[position] = (index, offset + start, end - start)
                        placed += 1
    size, sha256 = _state(state, carried, journals[0])
    pieces = _tile(found, size)
    kept = Kept(tuple(journals), str(state.get("path") or ""), size, sha256, pieces)
    digest = hashlib.sha256()
    for chunk in kept.chunks():
        digest.update(chunk)
    if digest.hexdigest() != sha256:
        raise Unproven(f"the kept lines make {size:,} bytes whose sha256 is not the one the source had at its last import "
                       "(it was rewritten between two imports); nothing to give back byte for byte")
    return kept


def _state(state: dict | None, carried: int, journal: Path) -> tuple[int, str]:
    """The size and sha256 the source had at its last import, or why they are not known."""
    if state is None:
        if carried:
            raise Unproven(f"{journal} was imported by a levelsess older than restore: it keeps no source positions or "
                           "checksum. If the source file still exists, import it again (that adds them); else read it "
                           "with `levelsess show` or `levelsess export`")
        raise Unproven(f"{journal} was imported with --no-raw: the source's own lines were not kept, so it cannot be "
                       "written back byte for byte; read it with `levelsess show` or `levelsess export`")
    size, sha256 = state.get("size"), state.get("sha256")
    if type(size) is not int or size < 0:
        raise Unproven(f"{journal}: its source-state has no size")
    if not isinstance(sha256, str):
        raise Unproven(f"{journal}: the source held a line too large for levelsess to parse (record-too-large): its bytes "
                       "are kept beside the store, not in the journal, so the file cannot be rebuilt and proven here")
    return size, sha256


def _tile(found: dict[int, tuple[int, int, int]], size: int) -> tuple[Piece, ...]:
    """The lines that cover [0, size) exactly once, each followed by a newline (the last may end
    the file without one); raise :class:`Unproven` at the first gap or overlap."""
    pieces = []
    position = 0
    for offset in sorted(o for o in found if o < size):
        journal, start, length = found[offset]
        if offset > position:
            raise Unproven(f"bytes {position:,}-{offset - 1:,} of the source were never kept as a whole line (a damaged "
                           "line, a byte-order mark, CR line ends or trailing blanks at the source)")
        if offset < position:
            raise Unproven(f"the kept lines overlap at byte {offset:,}: the source was rewritten between two imports")
        pieces.append(Piece(offset, length, journal, start))
        position = offset + length + 1
    if position not in (size, size + 1) or (position == size + 1 and not pieces):
        raise Unproven(f"the kept lines end at byte {position:,}, the source had {size:,} bytes at its last import")
    return tuple(pieces)


def _raw_spans(line: bytes, parts: bool) -> list[tuple[int, int]]:
    """Where the source bytes under a journal line's ``raw`` are: the value itself (the line's last
    member, as the importer writes it), or each element of a list (a merged response's lines)."""
    start = _raw_start(line)
    if not parts:
        return [(start, len(line) - 1)]
    text = line[start:len(line) - 1].decode("utf-8")
    spans, i, done = [], 1, 0
    byte = start  # the byte offset of text[done]
    while True:
        i = _skip(text, i)
        if text[i] == "]":
            return spans
        _value, end = _DECODER.raw_decode(text, i)
        byte += len(text[done:i].encode("utf-8"))
        width = len(text[i:end].encode("utf-8"))
        spans.append((byte, byte + width))
        byte += width
        done = end
        i = _skip(text, end)
        if text[i] == ",":
            i += 1


def _raw_start(line: bytes) -> int:
    """The offset of the ``raw`` value: just after the top-level ``,"raw":`` (the one whose
    prefix closes into a whole object and whose rest is one whole value)."""
    at = line.find(_RAW)
    while at >= 0:
        try:
            loads(line[:at] + b"}")
            loads(line[at + len(_RAW):-1])
            return at + len(_RAW)
        except ValueError:
            at = line.find(_RAW, at + 1)
    raise Unproven("a kept record's raw value could not be found in its line")


def _skip(text: str, i: int) -> int:
    while text[i] in " \t\r\n":
        i += 1
    return i
