"""The one set of number formats of every table duet prints (terminal, Markdown, HTML, and
the checks of the JSON documents), and the escaping of user text (names, paths,
messages) for rich markup and Markdown.

:func:`cell` formats a value by the *kind* of its column (``report/tables.py``): every
renderer of a table calls it, so `duet compare`, `duet evaluate` and `duet report` show
the same number the same way. Durations have four significant digits in the largest
unit that keeps the number >= 1 (``2.491 ms``, ``122.0 ms``, ``1.292 s``): a 0.1 %
difference between the two sides' means shows at every magnitude.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..schema import Verdict
from ..text import visible

#: Markdown punctuation that can start emphasis, code, links, images, headings' closing
#: sequences, strikethrough or a table cell; escaped with a backslash (CommonMark allows a
#: backslash before any ASCII punctuation)
_MD_PUNCT = re.compile(r"([\\`*_\[\]()#~!|])")
_MD_LINE_START = re.compile(r"^([-+=>]|\d+[.)])")
_MD_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _printable(text: str) -> str:
    """One line of text: line ends and tabs as spaces, other control characters shown as
    escapes (``\\x1b``; ``text.visible``)."""
    return visible(text)


def rich_text(value: Any) -> str:
    """``value`` as text for rich markup: ``[`` shown as it is, never read as a style tag;
    control characters (escape sequences, carriage returns, bidirectional overrides)
    shown as escapes, never sent to the terminal (``text.visible``)."""
    from rich.markup import escape

    return escape(visible(str(value), lines=True))


def md_text(value: Any) -> str:
    """``value`` as Markdown that renders as the same text: no HTML, emphasis, links,
    code or table cells; one line."""
    text = _MD_PUNCT.sub(r"\\\1", _printable(str(value)))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    m = _MD_LINE_START.match(text)
    if m:  # a list item, block quote or setext underline where the text starts a line
        text = m.group(1)[:-1] + "\\" + m.group(1)[-1] + text[m.end() :]
    return text


def md_heading(value: Any) -> str:
    """:func:`md_text` that keeps parentheses: without brackets they start no link, and a
    title reads better with them plain."""
    return md_text(value).replace("\\(", "(").replace("\\)", ")")


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


#: duration units from the largest: the first the value reaches is used
_UNITS = (("s", 1e9), ("ms", 1e6), ("us", 1e3))
#: significant digits of a duration
DURATION_DIGITS = 4


def duration(ns: Any) -> str:
    """Nanoseconds with four significant digits in the largest unit that keeps the number
    >= 1: ``'2.491 ms'``, ``'122.0 ms'``, ``'1.292 s'``, ``'850 ns'``; '-' when missing."""
    v = num(ns)
    if v is None:
        return "-"
    r = float(f"{v:.{DURATION_DIGITS}g}")  # rounded first: 999.96 ms is 1.000 s
    if abs(r) < 1000:
        r = float(round(r))  # whole nanoseconds: 999.5 ns is 1.000 us
    for unit, div in _UNITS:
        x = r / div
        if abs(x) >= 1:
            decimals = max(0, DURATION_DIGITS - 1 - math.floor(math.log10(abs(x))))
            return f"{x:.{decimals}f} {unit}"
    return f"{r:.0f} ns"


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


def count(x: Any) -> str:
    """An integer count; '-' when missing."""
    v = num(x)
    return "-" if v is None else str(int(v))


def percent(x: Any, digits: int = 0) -> str:
    """A share as a number of percent without the unit: 0.123 -> '12' (narrow grid tables
    whose title says "%")."""
    v = num(x)
    return "-" if v is None else f"{v * 100:.{digits}f}"


def pct_g(x: Any, missing: str = "-") -> str:
    """A fraction in percent, shortest form: 0.05 -> '5 %'."""
    v = num(x)
    return missing if v is None else f"{v * 100:g} %"


def verdict_word(text: str) -> str:
    """The verdict of a verdict cell without what follows it ("no change detected
    (+-0.4 %)" -> "no change detected"): what styles it."""
    return text.split(" (", 1)[0] if not text.startswith("same (") else text


def verdict_text(verdict: Any, within: Any = None, threshold: Any = None) -> str:
    """A verdict as the tables show it: ``no change detected (+-X %)`` with the interval's
    largest distance from 0 (equal within X %, or cannot tell when X is large),
    ``equivalent (+-T %)`` with the threshold it is equivalent within; others as they are."""
    v, w, t = str(verdict), num(within), num(threshold)
    if v == Verdict.NO_CHANGE and w is not None:
        return f"{v} (±{w * 100:.1f} %)"
    if v == Verdict.EQUIVALENT and t:
        return f"{v} (±{t * 100:g} %)"
    return v


#: Column kinds (``report/tables.py``) and their default digits
KINDS = (
    "text",
    "verdict",
    "health",
    "count",
    "duration",
    "pct",
    "signed_pct",
    "percent",
    "ci",
    "pvalue",
    "times",
    "ratio",
    "share",
)


def cell(kind: str, value: Any, *, digits: int | None = None, missing: str = "-") -> str:
    """``value`` as the text of a table cell of ``kind``.

    ``text``, ``verdict`` and ``health`` (a host's, "flagged: why"): the value as text; ``count``: an integer; ``duration``:
    nanoseconds (:func:`duration`); ``pct`` / ``signed_pct``: a fraction in percent
    (``digits`` decimals, default 1 / 2; ``digits=None`` for ``pct`` of a grid: '5 %');
    ``percent``: percent without the unit; ``ci``: a ``(low, high)`` pair of fractions;
    ``pvalue``; ``times``: a speedup ('1.73x'); ``ratio``; ``share``: a ``(count,
    total)`` pair. ``missing`` replaces '-' for a missing value.
    """
    if kind in ("text", "verdict", "health"):
        return missing if value is None else str(value)
    if kind == "ci":
        low, high = value if value is not None else (None, None)
        text = ci(low, high, digits if digits is not None else 2)
    elif kind == "share":
        c, t = value if value is not None else (None, None)
        text = share(c, t)
    elif kind == "pct" and digits is None:
        return pct_g(value, missing)
    elif kind == "pct":
        text = pct(value, digits=digits)
    elif kind == "signed_pct":
        text = pct(value, signed=True, digits=2 if digits is None else digits)
    elif kind == "percent":
        text = percent(value, 0 if digits is None else digits)
    else:
        fn = {
            "count": count,
            "duration": duration,
            "pvalue": pvalue,
            "times": times,
            "ratio": ratio,
        }.get(kind)
        if fn is None:
            raise ValueError(f"unknown column kind {kind!r} (one of {', '.join(KINDS)})")
        text = fn(value)
    return missing if text == "-" else text
