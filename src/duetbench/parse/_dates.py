"""Dates as parsers find them: ISO 8601 text (pyperf's run dates) and the output of
`date` (a harness's date artifact), to nanoseconds since the epoch."""

from __future__ import annotations

import re
from decimal import Decimal

from ._util import NS_PER_S, round_ns

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
#: Common zone abbreviations printed by `date` (hours east of UTC).
_FULL_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
_TZ_ABBREV_H = {
    "UTC": 0, "GMT": 0, "UT": 0, "Z": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2,
    "MET": 1, "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3, "EST": -5, "EDT": -4, "CST": -6,
    "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10,
    "JST": 9, "KST": 9, "AEST": 10, "AEDT": 11,
}  # fmt: skip
_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*(Z|[+-]\d{2}:?\d{2})?"
)
_OFFSET_RE = re.compile(r"([+-])(\d{2}):?(\d{2})")


def civil_to_epoch_ns(
    year: int, month: int, day: int, hour: int, minute: int, second: int, frac_ns: int = 0
) -> int:
    """Nanoseconds since the epoch of a civil date-time read as UTC (exact integer math)."""
    # days from civil (proleptic Gregorian), H. Hinnant's algorithm
    y = year - (month <= 2)
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    return ((days * 86400 + hour * 3600 + minute * 60 + second) * NS_PER_S) + frac_ns


def _offset_ns(text: str) -> int:
    if text == "Z":
        return 0
    m = _OFFSET_RE.fullmatch(text)
    assert m is not None
    sign = -1 if m.group(1) == "-" else 1
    return sign * (int(m.group(2)) * 3600 + int(m.group(3)) * 60) * NS_PER_S


def parse_iso_datetime(text: str) -> tuple[int, int | None]:
    """An ISO 8601 date-time as (ns since the epoch if it were UTC, its UTC offset in ns).

    The offset is None when the text has none (a naive local time). Raises ValueError.
    """
    m = _ISO_RE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not an ISO 8601 date-time")
    frac = int((m.group(7) or "0").ljust(9, "0"))
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    naive = civil_to_epoch_ns(year, month, day, hour, minute, second, frac)
    return naive, (None if m.group(8) is None else _offset_ns(m.group(8)))


def parse_date_output(text: str) -> int:
    """Epoch ns of what `date` printed. Raises ValueError with a reason.

    Understands the default `date` output (``Sun Nov 22 02:52:58 UTC 2026``,
    with an optional AM/PM and in day-month order), ``date -R``, ISO 8601 /
    RFC 3339 with an offset (``date -Ins``, ``date --rfc-3339=ns``) and epoch
    numbers (``date +%s``, ``+%s.%N``, ``+%s%N``).
    """
    s = text.strip()
    if not s:
        raise ValueError("the artifact is empty")
    if re.fullmatch(r"\d+(\.\d+)?", s):
        d = Decimal(s)
        return round_ns(d * NS_PER_S) if d < Decimal("1e11") else round_ns(d)
    if _ISO_RE.fullmatch(s):
        naive, offset = parse_iso_datetime(s)
        if offset is None:
            raise ValueError(f"{s!r} has no UTC offset")
        return naive - offset

    tokens = [t for t in re.split(r"[\s,]+", s) if t]
    month = day = year = None
    hms: tuple[int, int, int, int] | None = None
    ampm: str | None = None
    offset: int | None = None
    for tok in tokens:
        low = tok.lower()
        if month is None and (low in _MONTHS or low in _FULL_MONTHS or low == "sept"):
            month = _MONTHS[low[:3]]
        elif re.fullmatch(r"\d{1,2}:\d{2}:\d{2}([.,]\d{1,9})?", tok):
            hh, mm, rest = tok.split(":", 2)
            sec, _, frac = rest.replace(",", ".").partition(".")
            hms = (int(hh), int(mm), int(sec), int(frac.ljust(9, "0")) if frac else 0)
        elif re.fullmatch(r"\d{4}", tok):
            year = int(tok)
        elif re.fullmatch(r"\d{1,2}", tok):
            day = int(tok)
        elif low in ("am", "pm"):
            ampm = low
        elif _OFFSET_RE.fullmatch(tok):
            offset = _offset_ns(tok)
        elif tok.upper() in _TZ_ABBREV_H and offset is None:
            offset = _TZ_ABBREV_H[tok.upper()] * 3600 * NS_PER_S
        elif low[:3] in ("mon", "tue", "wed", "thu", "fri", "sat", "sun"):
            continue
        elif tok.isalpha():
            raise ValueError(f"unknown time zone or word {tok!r} in {s!r}")
        else:
            raise ValueError(f"cannot read {tok!r} in {s!r}")
    if None in (month, day, year) or hms is None:
        raise ValueError(f"{s!r} is not a date")
    if offset is None:
        raise ValueError(f"{s!r} has no time zone")
    hour, minute, second, frac = hms
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    assert month is not None and day is not None and year is not None
    return civil_to_epoch_ns(year, month, day, hour, minute, second, frac) - offset
