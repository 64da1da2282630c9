"""Evaluation helpers (docs/statistics.md, "Evaluation helpers"): CV, runtime speedup, shuffle check, MDS."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from duetbench.errors import AnalysisError
from duetbench.options import check_seed
from duetbench.schema import Method

from ._table import SIDE_A, SIDE_B, Iterations, group_codes, group_generator
from .compare import (
    DEFAULT_BY,
    DEFAULT_MIN_RUN_PAIRS,
    NO_CLUSTERING,
    CompareOptions,
    changes,
    compare_iterations,
    filtered,
    group_key_texts,
    unit_extras,
)
from .filters import Warmup
from .overlaps import DEFAULT_OVERLAP_RATE
from .pairing import DEFAULT_MIN_OVERLAP, Pairs, pair_rows
from .stats import SLOWER

DEFAULT_SLOWDOWNS = np.round(np.arange(0.0, 0.16, 0.01), 10)


def cv(
    df: pd.DataFrame,
    *,
    warmup: Warmup = 0,
    winsorize: bool = False,
    by: Sequence[str] = ("host", "suite", "benchmark", "method"),
) -> pd.DataFrame:
    """Coefficient of variation of the filtered durations (thesis 4.3.1).

    One row per ``by`` group and side: ``pair, iterations, mean_ns, std_ns, cv``
    (``std`` with ``ddof=1``).
    """
    by = tuple(by)
    opts = CompareOptions.create(warmup=warmup, winsorize=winsorize, by=by, cluster_by="run")
    it = filtered(Iterations.from_frame(df, extra_unit_columns=by), opts)
    gcode_u, gkeys = group_codes(it.units, by)
    code = gcode_u[it.unit] * 2 + it.side
    n_codes = 2 * len(gkeys)
    d = it.duration.astype(np.float64)
    cnt = np.bincount(code, minlength=n_codes)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(code, weights=d, minlength=n_codes) / cnt
        dev = d - mean[code]
        std = np.sqrt(np.bincount(code, weights=dev * dev, minlength=n_codes) / (cnt - 1))
    out = gkeys.loc[np.repeat(np.arange(len(gkeys)), 2)].reset_index(drop=True)
    out["pair"] = np.tile(["A", "B"], len(gkeys))
    out["iterations"] = cnt
    out["mean_ns"] = mean
    out["std_ns"] = std
    with np.errstate(invalid="ignore", divide="ignore"):
        out["cv"] = std / mean
    return out[out["iterations"] > 0].reset_index(drop=True)


def _int_or_missing(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer values of a column (ns) and where they are present."""
    if s.dtype.kind in "iu":
        return s.to_numpy(dtype=np.int64), np.ones(len(s), dtype=bool)
    present = s.notna().to_numpy()
    return s.where(present, 0).to_numpy(dtype=np.float64).astype(np.int64), present


def _side_spans(
    df: pd.DataFrame, it: Iterations, span: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start and end of every (unit, side): arrays (n_units, 2) and a presence mask."""
    n_u = it.n_units
    code = it.unit * 2 + it.side
    start = np.full(2 * n_u, np.iinfo(np.int64).max, dtype=np.int64)
    end = np.full(2 * n_u, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(start, code, it.start)
    np.maximum.at(end, code, it.end)
    present = np.bincount(code, minlength=2 * n_u) > 0
    if span == "process" and {"proc_start_ns", "proc_end_ns"} <= set(df.columns):
        ps, ok_s = _int_or_missing(df["proc_start_ns"])
        pe, ok_e = _int_or_missing(df["proc_end_ns"])
        okp = (ok_s & ok_e)[it.row]
        ps, pe = ps[it.row], pe[it.row]
        pstart = np.full(2 * n_u, np.iinfo(np.int64).max, dtype=np.int64)
        pend = np.full(2 * n_u, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(pstart, code[okp], ps[okp])
        np.maximum.at(pend, code[okp], pe[okp])
        has = np.bincount(code[okp], minlength=2 * n_u) > 0
        start = np.where(has, pstart, start)
        end = np.where(has, pend, end)
    return start.reshape(n_u, 2), end.reshape(n_u, 2), present.reshape(n_u, 2)


def runtime_speedup(
    df: pd.DataFrame,
    *,
    span: Literal["process", "iterations"] = "process",
    by: Sequence[str] = ("host", "suite", "benchmark"),
) -> pd.DataFrame:
    """Runtime speedup of the duet methods over seqn (thesis eq. 5.1).

    Per repetition, seqn cost = duration of the A run + duration of the B run;
    duet cost = latest end - earliest start of the two sides. Speedup = mean seqn
    cost / mean duet cost (limit 2.0). Durations are the sides' process lifetimes
    (``proc_start_ns``/``proc_end_ns``) when present (``span="process"``), else --
    or with ``span="iterations"`` -- the span of their iterations. One row per
    ``by`` group and duet method: ``speedup, seqn_cost_ns, duet_cost_ns,
    seqn_runs, duet_runs``.
    """
    if span not in ("process", "iterations"):
        raise AnalysisError(f"span must be 'process' or 'iterations', got {span!r}")
    by = tuple(by)
    it = Iterations.from_frame(df, extra_unit_columns=by)
    start, end, present = _side_spans(df, it, span)
    complete = present.all(axis=1)
    method = it.unit_method()
    seqn_cost = (end[:, 0] - start[:, 0] + end[:, 1] - start[:, 1]).astype(np.float64)
    duet_cost = (end.max(axis=1) - start.min(axis=1)).astype(np.float64)
    gcode_u, gkeys = group_codes(it.units, by)
    ng = len(gkeys)
    sel_s = complete & (method == Method.SEQN.value)
    n_s = np.bincount(gcode_u[sel_s], minlength=ng)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = np.bincount(gcode_u[sel_s], weights=seqn_cost[sel_s], minlength=ng) / n_s
    frames = []
    for m in (Method.ADUET.value, Method.SDUET.value):
        sel = complete & (method == m)
        if not sel.any():
            continue
        n_d = np.bincount(gcode_u[sel], minlength=ng)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_d = np.bincount(gcode_u[sel], weights=duet_cost[sel], minlength=ng) / n_d
        f = gkeys.copy()
        f["method"] = m
        f["speedup"] = mean_s / mean_d
        f["seqn_cost_ns"] = mean_s
        f["duet_cost_ns"] = mean_d
        f["seqn_runs"] = n_s
        f["duet_runs"] = n_d
        frames.append(f[n_d > 0])
    if not frames:
        cols = [*by, "method", "speedup", "seqn_cost_ns", "duet_cost_ns", "seqn_runs", "duet_runs"]
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)


def _derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of 0..n-1 without fixed points (n >= 2)."""
    while True:
        p = rng.permutation(n)
        if not np.any(p == np.arange(n)):
            return p


def _shuffled_pairs(
    it: Iterations, p: Pairs, gcode_u: np.ndarray, keys: list[str], seed: int, s: int
) -> Pairs:
    """Pairs whose A iterations come from the A run of another repetition.

    In every group the runs with pairs are re-paired by a random derangement; each
    pair keeps its A and B iteration indices, its A duration is taken from the
    same A iteration of the other run (pairs whose iteration is missing there are
    dropped).
    """
    runs = np.unique(p.unit)
    runs = runs[np.argsort(it.unit_rank[runs], kind="stable")]  # canonical order
    g_of_run = gcode_u[runs]
    donor = runs.copy()
    order = np.argsort(g_of_run, kind="stable")
    rs, gs = runs[order], g_of_run[order]
    bounds = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1], True])
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        if hi - lo < 2:
            continue
        rng = group_generator(seed, keys[int(gs[lo])], f"shuffle:{s}")
        donor[order[lo:hi]] = rs[lo:hi][_derangement(rng, hi - lo)]
    donor_of = np.full(it.n_units, -1, dtype=np.int64)
    donor_of[runs] = donor
    a_rows = np.flatnonzero(it.side == SIDE_A)
    width = int(it.iteration.max()) + 1 if len(it.iteration) else 1
    a_key = it.unit[a_rows] * width + it.iteration[a_rows]
    want = donor_of[p.unit] * width + it.iteration[p.a]
    pos = np.minimum(np.searchsorted(a_key, want), max(len(a_key) - 1, 0))
    hit = (len(a_key) > 0) & (a_key[pos] == want) if len(a_key) else np.zeros(len(want), bool)
    new_a = a_rows[pos[hit]]
    return Pairs(p.unit[hit], new_a, p.b[hit], p.overlap[hit], p.rate[hit])


def shuffle_check(
    df: pd.DataFrame,
    *,
    test: str = "ratio",
    interval: str = "t",
    confidence: float = 0.95,
    resamples: int = 9999,
    run_stat: str = "median",
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    warmup: Warmup = 0,
    winsorize: bool = False,
    seed: int = 0,
    shuffles: int = 10,
    by: Sequence[str] = DEFAULT_BY,
    overlap_rate: str = DEFAULT_OVERLAP_RATE,
    min_run_pairs: float = DEFAULT_MIN_RUN_PAIRS,
) -> pd.DataFrame:
    """The duet paper's shuffle check (RQ2): does the duet cancel shared interference?

    The CI of each group is computed with the runs paired as measured and again
    after re-pairing every B run with the A run of another repetition (a random
    derangement per group and shuffle, ``shuffles`` times). Columns: the ``by``
    keys, ``runs``, ``width_paired``, ``width_shuffled`` (mean over shuffles) and
    ``width_ratio`` = shuffled / paired; > 1 means the pairing removes
    synchronized interference. Intervals are over runs (no host clustering).
    """
    if isinstance(shuffles, bool) or not isinstance(shuffles, int) or shuffles < 1:
        raise AnalysisError(f"shuffles must be a positive integer, got {shuffles!r}")
    opts = CompareOptions.create(
        test=test,
        interval=interval,
        confidence=confidence,
        resamples=resamples,
        run_stat=run_stat,
        min_overlap=min_overlap,
        warmup=warmup,
        winsorize=winsorize,
        seed=seed,
        cluster_by=NO_CLUSTERING,
        by=by,
        overlap_rate=overlap_rate,
        min_run_pairs=min_run_pairs,
    )
    seed = check_seed(seed)
    it = filtered(Iterations.from_frame(df, extra_unit_columns=unit_extras(opts)), opts)
    pairs = pair_rows(it, opts.min_overlap, opts.overlap_rate)
    gcode_u, gkeys = group_codes(it.units, opts.by)
    keys = group_key_texts(gkeys, opts.by)
    paired = changes(it, pairs, gcode_u, gkeys, opts)
    widths = np.zeros(len(gkeys))
    counted = np.zeros(len(gkeys))
    for s in range(shuffles):
        sp = _shuffled_pairs(it, pairs, gcode_u, keys, seed, s)
        ch = changes(it, sp, gcode_u, gkeys, opts)
        w = ch.width
        ok = ~np.isnan(w)
        widths[ok] += w[ok]
        counted[ok] += 1
    out = gkeys.copy()
    out["runs"] = paired.runs
    out["width_paired"] = paired.width
    with np.errstate(invalid="ignore", divide="ignore"):
        out["width_shuffled"] = np.where(counted > 0, widths / counted, np.nan)
        out["width_ratio"] = out["width_shuffled"] / out["width_paired"]
    return out


def _check_slowdown(s: object) -> float:
    try:
        v = float(s)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise AnalysisError(f"slowdown must be a number >= 0 (0.05 = 5 %), got {s!r}") from exc
    if not v > -1.0:
        raise AnalysisError(f"slowdown must be > -1 (0.05 = 5 %), got {s!r}")
    return v


def slow_down_iterations(it: Iterations, s: float) -> Iterations:
    """B's durations times ``1 + s`` with timestamps rebuilt keeping the gaps (MDS)."""
    s = _check_slowdown(s)
    b = np.flatnonzero(it.side == SIDE_B)
    if len(b) == 0 or s == 0.0:
        return it
    d = it.duration[b].astype(np.float64)
    d_new = np.rint(d * (1.0 + s)).astype(np.int64)
    st, en = it.start[b], it.end[b]
    unit = it.unit[b]
    first = np.r_[True, unit[1:] != unit[:-1]]
    last = np.r_[unit[1:] != unit[:-1], True]
    gap = np.zeros(len(b), dtype=np.int64)
    gap[~last] = st[1:][~last[:-1]] - en[:-1][~last[:-1]]
    inc = d_new + gap
    csum = np.cumsum(inc)
    excl = csum - inc  # sum of inc before this row (global)
    seg_start = np.flatnonzero(first)
    seg_len = np.diff(np.r_[seg_start, len(b)])
    base = np.repeat(excl[seg_start], seg_len)
    s1 = np.repeat(st[seg_start], seg_len)
    new_start = s1 + (excl - base)
    start = it.start.copy()
    end = it.end.copy()
    dur = it.duration.copy()
    start[b] = new_start
    end[b] = new_start + d_new
    dur[b] = d_new
    return replace(it, start=start, end=end, duration=dur)


def slow_down(df: pd.DataFrame, s: float) -> pd.DataFrame:
    """Emulate B being ``s`` slower (0.05 = 5 %), thesis 4.4 (docs/statistics.md, "Evaluation helpers").

    Every B duration becomes ``round((1 + s) * d_k)``; B's timestamps are rebuilt
    keeping the gaps between iterations: ``s'_1 = s_1``, ``e'_k = s'_k + (1+s) d_k``,
    ``s'_(k+1) = e'_k + (s_(k+1) - e_k)``. A rows are unchanged. Returns a copy.
    """
    it = Iterations.from_frame(df)
    slowed = slow_down_iterations(it, s)
    out = df.copy()
    for col, arr in (
        ("start_ns", slowed.start),
        ("end_ns", slowed.end),
        ("duration_ns", slowed.duration),
    ):
        v = out[col].to_numpy(dtype=np.int64).copy()
        v[it.row] = arr
        out[col] = v
    return out


def minimal_detectable_slowdown(
    df: pd.DataFrame,
    slowdowns: npt.ArrayLike = DEFAULT_SLOWDOWNS,
    *,
    details: bool = False,
    **compare_kwargs: object,
) -> pd.DataFrame:
    """Minimal detectable slowdown of every group (thesis 4.4; docs/statistics.md, "Evaluation helpers").

    For each ``s`` in ``slowdowns`` (default 0, 0.01, ..., 0.15) B is slowed down by
    ``s`` (:func:`slow_down`), overlaps and pairs are recomputed and :func:`compare`
    is run with ``compare_kwargs``. A group's MDS is the smallest ``s`` from which
    every larger ``s`` is detected ``slower`` (NaN if the largest is not).
    Columns: the ``by`` keys, ``mds``, ``detected`` (how many ``s`` were detected).
    With ``details=True`` returns instead the long table of every ``s``: the
    ``by`` keys, ``slowdown``, ``change``, ``ci_low``, ``ci_high``, ``verdict``.
    """
    s_arr = np.sort(np.asarray(slowdowns, dtype=np.float64).ravel())
    if len(s_arr) == 0:
        raise AnalysisError("give at least one slowdown")
    for s in s_arr:
        _check_slowdown(s)
    if "test" not in compare_kwargs:
        compare_kwargs["test"] = "ratio"
    opts = CompareOptions.create(**compare_kwargs)
    it = Iterations.from_frame(df, extra_unit_columns=unit_extras(opts))
    frames = []
    for s in s_arr:
        res = compare_iterations(slow_down_iterations(it, float(s)), opts)
        res.insert(len(opts.by), "slowdown", float(s))
        frames.append(res)
    if details:
        cols = [*opts.by, "slowdown", "change", "ci_low", "ci_high", "verdict"]
        return pd.concat(frames, ignore_index=True)[cols]
    det = np.stack([(f["verdict"] == SLOWER).to_numpy() for f in frames], axis=1)
    # suffix-all: detected at s_i and at every larger s
    suffix = np.flip(np.logical_and.accumulate(np.flip(det, axis=1), axis=1), axis=1)
    any_ok = suffix.any(axis=1)
    first = np.argmax(suffix, axis=1)
    out = frames[0][list(opts.by)].copy()
    out["mds"] = np.where(any_ok, s_arr[first], np.nan)
    out["detected"] = det.sum(axis=1)
    return out
