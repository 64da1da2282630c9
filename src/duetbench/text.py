"""User text (names, labels, paths, messages) made safe to print: control characters shown.

A benchmark name comes from a config, an iterations table another tool wrote, or a git
repository; a terminal or CI log interprets what it contains. An escape sequence
(``\\x1b[2K``) can recolour, hide or overwrite a verdict line, a carriage return can
overwrite the start of a line, and a right-to-left override (``\\u202e``) can reorder
what follows. :func:`visible` shows every such character as its escape (``\\x1b``,
``\\u202e``), so the text reads as what it is; every renderer of user text (terminal,
Markdown, HTML, error messages) calls it. :func:`control_characters` is the check for
labels that are refused instead (version labels, mark notes).
"""

from __future__ import annotations

import unicodedata

#: categories never printed as they are: controls (C0, DEL, C1), format characters
#: (bidirectional overrides and isolates, invisible marks), lone surrogates (undecodable
#: bytes of a file name), line and paragraph separators
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: format characters that join letters or emoji and move nothing: kept
_JOINERS = frozenset({"\u200c", "\u200d"})
_LINE_BREAKS = frozenset({"\n", "\t"})


def _unsafe(c: str) -> bool:
    return c not in _JOINERS and unicodedata.category(c) in _UNSAFE_CATEGORIES


def _escape(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` with every control or format character as its escape (``\\x1b``).

    ``lines``: keep line ends and tabs (a message); otherwise they become spaces (one
    line: a table cell, a title)."""
    if text.isascii() and text.isprintable():
        return text
    out = []
    for c in text:
        if c in _LINE_BREAKS:
            out.append(c if lines else " ")
        elif c.isprintable() or not _unsafe(c):
            out.append(c)
        else:
            out.append(_escape(c))
    return "".join(out)


def control_characters(text: str) -> list[str]:
    """The control and format characters of ``text``, as their escapes (none: [])."""
    return sorted({_escape(c) for c in text if _unsafe(c)})
