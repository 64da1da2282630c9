"""Overlapping iterations of asynchronous duet runs (docs/statistics.md, "Overlaps, pairing, filters: details").

For iterations ``a`` of A and ``b`` of B of the same aduet run::

    overlap_time = min(e_a, e_b) - max(s_a, s_b)          (when positive)
    overlap_rate = overlap_time / min(d_a, d_b)           ("shorter", the default)
    overlap_rate = min(overlap_time / d_a, overlap_time / d_b)      ("thesis", eq. 3.1)

``O_m`` is the set of pairs with ``overlap_rate > m``. The thesis's rate never
exceeds shorter/longer, so it keeps only pairs whose length ratio lies in
``(m, 1/m)``; the default judges how well the shorter iteration is covered
(docs/statistics.md, "Pairing asynchronous runs"). The iterations of one side
follow each other, so the pairs are found by a sweep -- two ``searchsorted`` calls
over all runs at once -- in O((n + m) log n), never through an n x m matrix.
The geometry uses the timestamps: ``d = end_ns - start_ns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from duetbench.errors import AnalysisError
from duetbench.options import DEFAULT_OVERLAP_RATE, check_overlap_rate
from duetbench.schema import Method

from ._table import Iterations, group_codes, require_columns

_KEY_LIMIT = 2**62


def _rate(ov: np.ndarray, da: np.ndarray, db: np.ndarray, definition: str) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if definition == "thesis":
            return np.minimum(ov / da, ov / db)
        return ov / np.minimum(da, db)


def overlap_time(
    a_start: npt.ArrayLike, a_end: npt.ArrayLike, b_start: npt.ArrayLike, b_end: npt.ArrayLike
) -> np.ndarray:
    """Overlap of intervals [a_start, a_end) and [b_start, b_end) in ns (0 if disjoint)."""
    ov = np.minimum(np.asarray(a_end), np.asarray(b_end)) - np.maximum(
        np.asarray(a_start), np.asarray(b_start)
    )
    return np.maximum(ov, 0)


def overlap_rate(
    a_start: npt.ArrayLike,
    a_end: npt.ArrayLike,
    b_start: npt.ArrayLike,
    b_end: npt.ArrayLike,
    *,
    definition: str = DEFAULT_OVERLAP_RATE,
) -> np.ndarray:
    """Overlap rate with ``d = end - start``: ``overlap / min(d_a, d_b)`` (``"shorter"``,
    default) or ``min(overlap / d_a, overlap / d_b)`` (``"thesis"``, eq. 3.1)."""
    definition = check_overlap_rate(definition)
    ov = overlap_time(a_start, a_end, b_start, b_end).astype(np.float64)
    da = np.asarray(a_end) - np.asarray(a_start)
    db = np.asarray(b_end) - np.asarray(b_start)
    return np.where(ov > 0, _rate(ov, da, db, definition), 0.0)


@dataclass(frozen=True, eq=False)
class OverlapPairs:
    """All overlapping (A, B) iteration pairs; indices are rows of an :class:`Iterations`."""

    unit: np.ndarray
    a: np.ndarray
    b: np.ndarray
    overlap: np.ndarray  # int64 ns
    rate: np.ndarray  # float64

    def subset(self, mask: np.ndarray) -> OverlapPairs:
        return OverlapPairs(
            self.unit[mask], self.a[mask], self.b[mask], self.overlap[mask], self.rate[mask]
        )


def refuse_synthetic(it: Iterations, rows: np.ndarray) -> None:
    """Aduet overlaps need real timestamps: refuse reconstructed ones."""
    if it.synthetic is not None and np.any(it.synthetic[rows]):
        u = int(it.unit[rows][np.flatnonzero(it.synthetic[rows])[0]])
        info = it.units.iloc[u]
        raise AnalysisError(
            "asynchronous-duet pairing needs real iteration timestamps, but "
            f"{info['suite']}/{info['benchmark']} (run {info['run']}) has reconstructed ones "
            "(synthetic_ts); use a harness that records start and end times, or analyse "
            "its seqn/sduet runs only"
        )


def _backwards(it: Iterations, unit: int) -> AnalysisError:
    info = it.units.iloc[unit]
    return AnalysisError(
        f"timestamps of {info['suite']}/{info['benchmark']} {info['method']} run {info['run']} "
        "go backwards (an iteration ends before it starts, or starts/ends before the "
        "previous one of the same side); overlaps cannot be computed"
    )


def _check_monotone(
    it: Iterations, st: np.ndarray, en: np.ndarray, lens: np.ndarray, rows: np.ndarray
) -> None:
    """Starts and ends must not decrease along a side of a run (needed by the sweep)."""
    if len(st) == 0:
        return
    first = np.zeros(len(st), dtype=bool)
    first[np.cumsum(lens) - lens] = True
    bad = en < st
    bad[1:] |= ~first[1:] & ((st[1:] < st[:-1]) | (en[1:] < en[:-1]))
    if bad.any():
        raise _backwards(it, int(it.unit[rows[int(np.flatnonzero(bad)[0])]]))


def _blocks(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Row indices of contiguous blocks ``[start, start + len)``, concatenated."""
    off = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    return np.repeat(starts, lens) + off


def overlap_pairs(
    it: Iterations, unit_mask: np.ndarray, definition: str = DEFAULT_OVERLAP_RATE
) -> OverlapPairs:
    """All overlapping pairs of the units where ``unit_mask`` is True (vectorized),
    with their overlap rate of ``definition``."""
    a0, la, b0, lb = it.paired_series(unit_mask)
    empty = np.zeros(0, dtype=np.int64)
    if len(a0) == 0:
        return OverlapPairs(empty, empty, empty, empty, np.zeros(0))
    ra, rb = _blocks(a0, la), _blocks(b0, lb)
    if it.synthetic is not None:
        refuse_synthetic(it, np.concatenate([ra, rb]))
    sa_all, ea_all, sb_all, eb_all = it.start[ra], it.end[ra], it.start[rb], it.end[rb]
    _check_monotone(it, sa_all, ea_all, la, ra)
    _check_monotone(it, sb_all, eb_all, lb, rb)
    # per-run origin and span, to build collision-free composite keys (run, time)
    t0 = np.minimum(it.start[a0], it.start[b0])
    span = int((np.maximum(it.end[a0 + la - 1], it.end[b0 + lb - 1]) - t0).max()) + 1
    chunk = max(1, _KEY_LIMIT // span)  # runs per chunk whose keys fit in int64
    ca, cb = np.cumsum(la) - la, np.cumsum(lb) - lb
    a_out: list[np.ndarray] = []
    b_out: list[np.ndarray] = []
    for c0 in range(0, len(a0), chunk):
        c1 = min(len(a0), c0 + chunk)
        base = np.arange(c1 - c0, dtype=np.int64) * span - t0[c0:c1]
        ia = slice(ca[c0], ca[c1] if c1 < len(a0) else len(ra))
        ib = slice(cb[c0], cb[c1] if c1 < len(a0) else len(rb))
        base_a = np.repeat(base, la[c0:c1])
        base_b = np.repeat(base, lb[c0:c1])
        lo = np.searchsorted(base_b + eb_all[ib], base_a + sa_all[ia], side="right")
        hi = np.searchsorted(base_b + sb_all[ib], base_a + ea_all[ia], side="left")
        cnt = np.maximum(hi - lo, 0)
        total = int(cnt.sum())
        a_idx = np.repeat(np.arange(len(lo)), cnt)
        b_idx = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
        a_out.append(ra[ia][a_idx])
        b_out.append(rb[ib][b_idx])
    a = np.concatenate(a_out)
    b = np.concatenate(b_out)
    sa, ea, sb, eb = it.start[a], it.end[a], it.start[b], it.end[b]
    ov = np.minimum(ea, eb) - np.maximum(sa, sb)
    return OverlapPairs(it.unit[a], a, b, ov, _rate(ov, ea - sa, eb - sb, definition))


def _aduet_units(it: Iterations) -> np.ndarray:
    return it.unit_method() == Method.ADUET.value


def overlaps(
    df: pd.DataFrame,
    *,
    min_rate: float | None = None,
    overlap_rate: str = DEFAULT_OVERLAP_RATE,
) -> pd.DataFrame:
    """All overlapping (A, B) iteration pairs of every aduet run.

    One row per pair: the run's key columns, ``a_iteration``, ``b_iteration``,
    ``a_ns``/``b_ns`` (durations), ``overlap_ns`` and ``overlap_rate`` (of the
    definition ``overlap_rate``: ``"shorter"`` or ``"thesis"``). With ``min_rate=m``
    only the pairs of ``O_m`` (rate > m) are kept.
    """
    it = Iterations.from_frame(df)
    op = overlap_pairs(it, _aduet_units(it), check_overlap_rate(overlap_rate))
    if min_rate is not None:
        op = op.subset(op.rate > float(min_rate))
    return pair_table(it, op.unit, op.a, op.b, op.overlap, op.rate)


def pair_table(
    it: Iterations,
    unit: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    overlap: np.ndarray,
    rate: np.ndarray,
) -> pd.DataFrame:
    """Pairs as a table: each pair's run keys, iterations, durations, overlap and rate."""
    out = it.units.iloc[unit].reset_index(drop=True)
    out["a_iteration"] = it.iteration[a]
    out["b_iteration"] = it.iteration[b]
    out["a_ns"] = it.duration[a]
    out["b_ns"] = it.duration[b]
    out["overlap_ns"] = overlap
    out["overlap_rate"] = rate
    return out


def relative_overlap_time(
    df: pd.DataFrame,
    m: float = 0.4,
    *,
    by: Sequence[str] = ("host", "suite", "benchmark"),
    overlap_rate: str = DEFAULT_OVERLAP_RATE,
) -> pd.DataFrame:
    """Relative overlap time of every benchmark (thesis eq. 5.2).

    ``sum over O_m of 2 * overlap_time / sum over aduet runs (sum d_A + sum d_B)``,
    in [0, 1], per ``by`` group (default host, suite, benchmark); ``O_m`` by the
    rate ``overlap_rate`` (``"shorter"`` or ``"thesis"``). Durations are
    ``duration_ns``; the table is used as given (filter it first if wanted).
    Columns: the ``by`` keys, ``relative_overlap_time``, ``pairs`` (size of O_m),
    ``runs``.
    """
    if not 0.0 <= float(m) < 1.0:
        raise AnalysisError(f"minimum overlap rate m must be in [0, 1), got {m!r}")
    definition = check_overlap_rate(overlap_rate)
    by = list(by)
    require_columns(df, by, "relative overlap time")
    it = Iterations.from_frame(df, extra_unit_columns=by)
    is_aduet = _aduet_units(it)
    op = overlap_pairs(it, is_aduet, definition)
    op = op.subset(op.rate > float(m))
    gcode, keys = group_codes(it.units, by)
    n_groups = len(keys)
    rows = is_aduet[it.unit]
    denom = np.bincount(
        gcode[it.unit[rows]], weights=it.duration[rows].astype(np.float64), minlength=n_groups
    )
    num = np.bincount(
        gcode[op.unit], weights=2.0 * op.overlap.astype(np.float64), minlength=n_groups
    )
    npairs = np.bincount(gcode[op.unit], minlength=n_groups)
    runs = np.bincount(gcode[np.flatnonzero(is_aduet)], minlength=n_groups)
    out = keys.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["relative_overlap_time"] = num / denom
    out["pairs"] = npairs
    out["runs"] = runs
    return out[out["runs"] > 0].reset_index(drop=True)
