"""Number formats shared by the terminal, Markdown and HTML renderings of the evaluation,
and the escaping of user text (names, paths, messages) for rich markup and Markdown."""

from __future__ import annotations

import math
import re
from typing import Any

#: Markdown punctuation that can start emphasis, code, links, images, headings' closing
#: sequences, strikethrough or a table cell; escaped with a backslash (CommonMark allows a
#: backslash before any ASCII punctuation)
_MD_PUNCT = re.compile(r"([\\`*_\[\]()#~!|])")
_MD_LINE_START = re.compile(r"^([-+=>]|\d+[.)])")
_MD_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _printable(text: str) -> str:
    """Line ends, tabs, NUL and other control characters as spaces (one line of text)."""
    return "".join(c if c.isprintable() else " " for c in text)


def rich_text(value: Any) -> str:
    """``value`` as text for rich markup: ``[`` shown as it is, never read as a style tag."""
    from rich.markup import escape

    return escape(str(value))


def md_text(value: Any) -> str:
    """``value`` as Markdown that renders as the same text: no HTML, emphasis, links,
    code or table cells; one line."""
    text = _MD_PUNCT.sub(r"\\\1", _printable(str(value)))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    m = _MD_LINE_START.match(text)
    if m:  # a list item, block quote or setext underline where the text starts a line
        text = m.group(1)[:-1] + "\\" + m.group(1)[-1] + text[m.end() :]
    return text


def md_cell(value: Any) -> str:
    """A Markdown table cell: ``|`` not yet escaped (by :func:`md_text`) is escaped."""
    return _MD_UNESCAPED_PIPE.sub(r"\\|", _printable(str(value)))


def md_code(value: Any) -> str:
    """``value`` as an inline code span, fenced by more backticks than it contains."""
    text = _printable(str(value))
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def num(x: Any) -> float | None:
    """A finite float, or None for missing / NaN / infinite / non-numeric values."""
    if x is None or isinstance(x, str):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def pct(x: Any, *, signed: bool = False, digits: int = 1) -> str:
    """0.0123 -> '1.2 %' ('+1.2 %' when signed); '-' when missing."""
    v = num(x)
    if v is None:
        return "-"
    return f"{v * 100:+.{digits}f} %" if signed else f"{v * 100:.{digits}f} %"


def times(x: Any) -> str:
    """A speedup factor: 1.734 -> '1.73x'."""
    v = num(x)
    return "-" if v is None else f"{v:.2f}x"


def ratio(x: Any) -> str:
    """A width ratio: 2.345 -> '2.35'."""
    v = num(x)
    return "-" if v is None else f"{v:.2f}"


def duration(ns: Any) -> str:
    """Nanoseconds in the largest unit that keeps the number >= 1: '12.3 ms'."""
    v = num(ns)
    if v is None:
        return "-"
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.3g} {unit}" if abs(v) / div < 100 else f"{v / div:.0f} {unit}"
    return f"{v:.0f} ns"


def share(count: Any, total: Any) -> str:
    """'80 % (4/5)'; '-' when there is nothing to count."""
    c, t = num(count), num(total)
    if c is None or not t:
        return "-"
    return f"{c / t * 100:.0f} % ({int(c)}/{int(t)})"


def pvalue(x: Any) -> str:
    v = num(x)
    if v is None:
        return "-"
    return f"{v:.3g}" if v >= 0.001 else "<0.001"


def ci(low: Any, high: Any, digits: int = 2) -> str:
    lo, hi = num(low), num(high)
    if lo is None or hi is None:
        return "-"
    return f"[{pct(lo, signed=True, digits=digits)}, {pct(hi, signed=True, digits=digits)}]"
