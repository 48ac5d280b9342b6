"""Commands as the user pastes them into a POSIX shell (bash, zsh): ``shlex``'s quoting, and for a
word with a control character (a newline in a folder's name) or a name that is not UTF-8 (its bytes
held as surrogates, as Python reads a Linux file name) the ``$'…'`` form with ``\\n`` and ``\\xNN``
escapes: ``shlex.quote`` printed ``'/tmp/st\\udcffore'``, which the shell reads as other bytes, and a
newline cut the "next:" line in two; a "next:" line that names the wrong path is worse than none."""

from __future__ import annotations

from collections.abc import Iterable

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def quote(text: str) -> str:
    """``text`` as one shell word that reads back as its bytes, on one line."""
    if text.isprintable() or any("\ud800" <= ch <= "\udfff" and not "\udc80" <= ch <= "\udcff" for ch in text):
        import shlex  # (when a command is printed: not loaded by a run that prints none)

        return shlex.quote(text)  # (printable; or holding a surrogate no file name holds, one cut from JSON)
    return "$'" + "".join(_escaped(ch) for ch in text) + "'"


def join(argv: Iterable[str]) -> str:
    """A command line of ``argv``, each word :func:`quote`\\ d."""
    return " ".join(quote(word) for word in argv)


def _escaped(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if "\udc80" <= ch <= "\udcff":  # a byte of a name that is not UTF-8
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return ch if ch.isprintable() else "".join(f"\\x{byte:02x}" for byte in ch.encode("utf-8"))
