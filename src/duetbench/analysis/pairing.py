"""Pairing iterations of A with iterations of B (docs/statistics.md, "Pipeline and defaults", step 3).

``seqn`` and ``sduet``: iteration ``i`` of A with iteration ``i`` of B of the same run.
``aduet``: the pairs in ``O_m`` (overlap rate > m) of the same run, the rate relative
to the shorter iteration by default (``overlap_rate="thesis"``: the thesis's eq. 3.1). A run is a unit
(experiment, host, suite, benchmark, method, run): the A and B runs of one seqn
repetition are paired by their shared run index on the same host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from duetbench.options import (
    DEFAULT_MIN_OVERLAP,
    DEFAULT_OVERLAP_RATE,
    check_min_overlap,
    check_overlap_rate,
)
from duetbench.schema import Method

from ._table import SIDE_A, SIDE_B, THREADED_ROWS, Iterations
from ._threads import side_by_side
from .overlaps import overlap_pairs, pair_table


@dataclass(frozen=True, eq=False)
class Pairs:
    """Paired rows of an :class:`Iterations`: each run's pairs contiguous, ordered by
    A row (then B row) within the run."""

    unit: np.ndarray
    a: np.ndarray
    b: np.ndarray
    overlap: np.ndarray  # float64 ns; NaN for index-paired methods
    rate: np.ndarray  # float64; NaN for index-paired methods
    #: per unit (aduet runs): overlap time of all overlapping pairs, and of those the
    #: filter did not keep (rate <= m); None where not computed
    overlap_all: np.ndarray | None = None
    overlap_unkept: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.unit)


def _index_pairs(it: Iterations, unit_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A and B rows with equal iteration index in the runs where ``unit_mask`` is True."""
    fa, la, fb, lb = it.paired_series(unit_mask)
    # fast path: both sides hold the same iteration indices, row for row
    eq_len = la == lb
    fa_e, fb_e, fl = fa[eq_len], fb[eq_len], la[eq_len]
    off = np.arange(int(fl.sum())) - np.repeat(np.cumsum(fl) - fl, fl)
    ra, rb = np.repeat(fa_e, fl) + off, np.repeat(fb_e, fl) + off
    same = it.iteration[ra] == it.iteration[rb]
    if same.all() and eq_len.all():
        return ra, rb
    # the other runs: match iteration indices with a search
    slow = np.zeros(it.n_units, dtype=bool)
    slow[it.unit[fa[~eq_len]]] = True
    slow[it.unit[ra[~same]]] = True
    keep = ~slow[it.unit[ra]]
    a2, b2 = _searched_pairs(it, slow)
    return np.concatenate([ra[keep], a2]), np.concatenate([rb[keep], b2])


def _searched_pairs(it: Iterations, unit_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = unit_mask[it.unit]
    ra = np.flatnonzero(rows & (it.side == SIDE_A))
    rb = np.flatnonzero(rows & (it.side == SIDE_B))
    if len(ra) == 0 or len(rb) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    width = int(max(it.iteration[ra].max(), it.iteration[rb].max())) + 1
    if (int(it.unit.max()) + 1) * width >= 2**62:
        left = pd.DataFrame({"u": it.unit[ra], "i": it.iteration[ra], "a": ra})
        right = pd.DataFrame({"u": it.unit[rb], "i": it.iteration[rb], "b": rb})
        m = left.merge(right, on=["u", "i"], how="inner").sort_values("a")
        return m["a"].to_numpy(np.int64), m["b"].to_numpy(np.int64)
    ka = it.unit[ra] * width + it.iteration[ra]
    kb = it.unit[rb] * width + it.iteration[rb]
    pos = np.searchsorted(kb, ka)
    pos_c = np.minimum(pos, len(kb) - 1)
    hit = (pos < len(kb)) & (kb[pos_c] == ka)
    return ra[hit], rb[pos_c[hit]]


def pair_rows(
    it: Iterations,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    overlap_rate: str = DEFAULT_OVERLAP_RATE,
) -> Pairs:
    """Pairs of every run of every method (vectorized over runs)."""
    m = check_min_overlap(min_overlap)
    definition = check_overlap_rate(overlap_rate)
    method = it.unit_method()
    by_index = np.isin(method, [m.value for m in (Method.SEQN, Method.SDUET, Method.INPROC)])
    # the two pairings are independent: on a large table, side by side on threads
    big = len(it.unit) >= THREADED_ROWS
    (a1, b1), op = side_by_side(
        lambda: _index_pairs(it, by_index),
        lambda: overlap_pairs(it, method == Method.ADUET.value, definition),
        big,
    )
    keep = op.rate > m
    a = np.concatenate([a1, op.a[keep]])
    b = np.concatenate([b1, op.b[keep]])
    ov = np.concatenate([np.full(len(a1), np.nan), op.overlap[keep].astype(np.float64)])
    rate = np.concatenate([np.full(len(a1), np.nan), op.rate[keep]])
    ov_op = op.overlap.astype(np.float64)
    ov_all = np.bincount(op.unit, weights=ov_op, minlength=it.n_units)
    ov_unkept = np.bincount(op.unit[~keep], weights=ov_op[~keep], minlength=it.n_units)
    # each run's pairs are contiguous (a run is either index-paired or aduet)
    return Pairs(it.unit[a], a, b, ov, rate, ov_all, ov_unkept)


def pair(
    df: pd.DataFrame,
    *,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    overlap_rate: str = DEFAULT_OVERLAP_RATE,
) -> pd.DataFrame:
    """The paired table: one row per (A, B) iteration pair.

    Columns: the run key (``experiment`` when present, ``host, suite, benchmark,
    method, run``), ``a_iteration, b_iteration, a_ns, b_ns`` and, for aduet pairs,
    ``overlap_ns, overlap_rate`` (NaN for seqn/sduet). ``min_overlap`` is the ``m``
    of ``O_m`` for aduet runs (default 0.4, thesis 5.2.3); ``overlap_rate`` the
    definition of the rate: ``"shorter"`` (overlap / shorter iteration, default) or
    ``"thesis"`` (eq. 3.1).
    """
    it = Iterations.from_frame(df)
    p = pair_rows(it, min_overlap, overlap_rate)
    return pairs_frame(it, p)


def pairs_frame(it: Iterations, p: Pairs) -> pd.DataFrame:
    order = np.argsort(p.a, kind="stable")  # table order of the runs
    return pair_table(it, p.unit[order], p.a[order], p.b[order], p.overlap[order], p.rate[order])
