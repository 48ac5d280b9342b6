"""Commands as the user pastes them into a POSIX shell (bash, zsh): ``shlex``'s quoting, and for a
path whose name is not UTF-8 (its bytes held as surrogates, as Python reads a Linux file name) the
``$'…'`` form with ``\\xNN`` escapes: ``shlex.quote`` printed ``'/tmp/st\\udcffore'``, which the
shell reads as other bytes, and a "next:" line that names the wrong path is worse than none."""

from __future__ import annotations

import shlex
from collections.abc import Iterable


def quote(text: str) -> str:
    """``text`` as one shell word that reads back as its bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            data = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate no file name holds (one cut from JSON): as shlex has it
            return shlex.quote(text)
        return "$'" + "".join(_escaped(byte) for byte in data) + "'"
    return shlex.quote(text)


def join(argv: Iterable[str]) -> str:
    """A command line of ``argv``, each word :func:`quote`\\ d."""
    return " ".join(quote(word) for word in argv)


def _escaped(byte: int) -> str:
    if byte in (0x5C, 0x27):  # \ and '
        return "\\" + chr(byte)
    return chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}"
