"""Standard streams that never raise on a character their encoding cannot hold (no rich, no
library import: the CLI calls this before anything else)."""

from __future__ import annotations

import codecs
import sys

#: ASCII for the glyphs levelsess itself prints (captions, bullets, arrows, dashes, rich's borders
#: and the markers of a rendered transcript), so a latin-1 or ASCII stream (``LANG=C``, a Windows
#: code page, ``PYTHONIOENCODING=ascii``) shows ``... and 3 more``, never ``\u2026 and 3 more``.
ASCII_GLYPHS = {
    "\u2026": "...", "\u2022": "*", "\u00b7": "-", "\u2192": "->", "\u2190": "<-", "\u21b3": "->", "\u2014": "-",
    "\u2013": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00d7": "x", "\u2713": "ok",
    "\u2714": "ok", "\u2717": "x", "\u26a0": "!", "\u00a7": "S", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    "\ufe0f": "", "\u200b": "", "\U0001f527": "*", "\U0001f50e": "?", "\u270f": "*",
    **dict.fromkeys("\u2500\u2501\u2504\u2505\u2550", "-"), **dict.fromkeys("\u2502\u2503\u2506\u2507\u2551", "|"),
    **dict.fromkeys("\u256d\u256e\u256f\u2570\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u253c"
                    "\u250f\u2513\u2517\u251b\u2521\u2529\u2547\u2548\u2533\u253b\u254b\u2523\u252b", "+"),
}
ERRORS = "levelsess-ascii"


def _ascii_or_escape(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: levelsess's own glyphs as ASCII, anything else (a user's title, a
    lone surrogate) as its backslash escape, as ``backslashreplace`` would."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    out = []
    for char in text:
        if char in ASCII_GLYPHS:
            out.append(ASCII_GLYPHS[char])
        else:
            out.append(escape(char))
    return "".join(out), exc.end


def escape(char: str) -> str:
    """A character a stream cannot hold, as a backslash escape: a byte of a file name that is not
    UTF-8 (Python holds it as a surrogate, U+DC80 to U+DCFF) as that byte, ``\\xff`` as the shell's
    ``$'\\xff'`` names it (not ``\\udcff``, which names no byte); any other as ``backslashreplace``."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        code -= 0xDC00
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escaped(exc: UnicodeError) -> tuple[str, int]:
    """Codec error handler: each character UTF-8 cannot hold (a lone surrogate) as :func:`escape`."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(map(escape, exc.object[exc.start:exc.end])), exc.end


codecs.register_error(ERRORS, _ascii_or_escape)
ESCAPED = "levelsess-escape"
codecs.register_error(ESCAPED, _escaped)


def tolerant_streams() -> None:
    """Make stdout and stderr print what their encoding cannot hold instead of raising
    UnicodeEncodeError (a Windows redirect, ``PYTHONIOENCODING=cp1252``, ``LANG=C``): levelsess's
    own glyphs as ASCII (:data:`ASCII_GLYPHS`), anything else as an escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=ERRORS)
            except (ValueError, OSError):  # a closed or detached stream: nothing to print there anyway
                pass
