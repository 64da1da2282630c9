"""``compare``: verdicts for every benchmark and method (docs/statistics.md, "Pipeline and
defaults"). The options are :class:`duetbench.options.CompareOptions`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from duetbench.errors import AnalysisError
from duetbench.options import (
    DEFAULT_BY,
    DEFAULT_MIN_RUN_PAIRS,
    NO_CLUSTERING,
    RUN_STATS,
    TESTS,
    CompareOptions,
    check_min_run_pairs,
)
from duetbench.schema import Verdict

from ._table import (
    SIDE_A,
    SIDE_B,
    THREADED_ROWS,
    Iterations,
    group_codes,
    stable_key,
)
from ._threads import side_by_side
from .calibration import calibrated
from .filters import warmup_mask, winsorized_durations
from .intervals import (
    GroupIntervals,
    bootstrap_interval,
    t_interval,
    weighted_bootstrap_interval,
)
from .measure_choice import measured
from .pairing import Pairs, pair_rows
from .ranks import GroupedSignedRank, signed_rank
from .run_statistics import RunValues, run_values, sparse_runs
from .stats import (
    NO_DATA,
    ChangeResult,
    ConfidenceInterval,
    GroupedU,
    interval_verdicts,
    mann_whitney_grouped,
    pooled_u_verdicts,
    rank_verdicts,
)

__all__ = [
    "DEFAULT_BY",
    "DEFAULT_MIN_RUN_PAIRS",
    "NO_CLUSTERING",
    "RUN_STATS",
    "TESTS",
    "CompareOptions",
    "check_min_run_pairs",
    "compare",
    "compare_iterations",
    "compare_tests",
    "difference_test",
    "ratio_test",
]


def options(opts: CompareOptions | None, kw: dict[str, object]) -> CompareOptions:
    """``opts`` (default: :class:`CompareOptions`) with the keywords ``kw`` replacing its
    fields, validated."""
    base = opts if opts is not None else CompareOptions()
    return CompareOptions.create(**{**vars(base), **kw}) if kw else base.checked()


def compare(df: pd.DataFrame, opts: CompareOptions | None = None, **kw: object) -> pd.DataFrame:
    """Compare A with B in every group of ``by`` (default: suite, benchmark, method).

    The options are a :class:`~duetbench.options.CompareOptions` (``opts``) and/or its
    fields as keywords (which replace those of ``opts``): ``test``, ``interval``,
    ``confidence``, ``resamples``, ``threshold``, ``min_overlap``, ``run_stat``,
    ``warmup``, ``winsorize``, ``seed``, ``cluster_by``, ``by``, ``weights``,
    ``overlap_rate``, ``min_run_pairs``. Their defaults are those of `duet compare`.

    Steps: drop warm-up iterations per series (``warmup``: a count, ``"half"``, or
    ``None`` -- the default -- for the rows the table marks in its ``warmup`` column,
    i.e. the config's ``warmup:``), optionally winsorize, pair
    (aduet: ``O_m`` with ``m = min_overlap`` and the rate ``overlap_rate``:
    ``"shorter"`` -- overlap / shorter iteration, default -- or ``"thesis"``),
    summarize every run by ``run_stat`` of its pairs' log ratios (``test="ratio"``)
    or differences (``test="diff"``), leave out runs with fewer pairs than
    ``min_run_pairs`` times the median run of their group (0 keeps all), build an
    interval for the mean over runs (``interval``: ``t`` | ``percentile`` | ``bca``
    | ``studentized``; bootstrap ones use ``resamples`` and ``seed``) and give a
    verdict (``threshold``: practical threshold, relative; docs/statistics.md).

    ``test="utest"``: the verdict is the Wilcoxon signed-rank test of the run
    values (log ratios; of the hosts' mean values when clustered) at level
    ``1 - confidence`` -- calibrated, see docs/statistics.md; ``"utest-pooled"``:
    the thesis's Mann-Whitney U of all iterations (``p_value``), which treats
    iterations as independent and is not calibrated. Both report the ratio test's
    change and interval.

    ``cluster_by``: ``None`` (auto) resamples hosts with the weighted bootstrap
    (``weights`` Poisson(1) or Uniform(0, 2)) in groups whose runs span more than
    one host, runs elsewhere; ``"host"`` (or another run-level column) does so
    explicitly; ``"run"`` never clusters. The column ``clustered_by`` says which.

    Returns one row per group: the ``by`` keys, ``mean_a_ns, mean_b_ns, change,
    ci_low, ci_high, ci_width, p_value, u_statistic, rank_p_value, runs,
    runs_few_pairs, pairs, clusters, verdict, test, interval, confidence, threshold,
    run_stat, clustered_by, overlap_rate, calibrated``. Positive change means B is
    slower. ``p_value``/``u_statistic``: the pooled U test (not calibrated);
    ``rank_p_value``: the signed-rank test of the run values; ``calibrated``: whether
    the verdict's settings kept their false-alarm rate on the simulations at this
    many runs. A group without pairs has verdict ``no data`` and NaNs, as has one
    whose interval is undefined (a single run).
    """
    opts = options(opts, kw)
    it = Iterations.from_frame(df, extra_unit_columns=unit_extras(opts))
    return compare_iterations(it, opts)


def unit_extras(opts: CompareOptions) -> list[str]:
    extra = list(opts.by)
    col = opts.cluster_column
    if col is not None and col not in extra:
        extra.append(col)
    return extra


def filtered(it: Iterations, opts: CompareOptions) -> Iterations:
    """Warm-up removal, the measure (wall or CPU time, per group: measure_choice.py, which
    also leaves out unbalanced runs where wall time is compared) and optional
    winsorization (docs/statistics.md, "Overlaps, pairing, filters: details")."""
    itf = measured(it, opts)  # before the warm-up: a run's CPU time covers every iteration
    keep = warmup_mask(itf, opts.warmup)
    itf = itf if keep.all() else itf.take(keep)
    if opts.winsorize:
        dur, _ = winsorized_durations(itf)
        itf = replace(itf, duration=dur)
    return itf


def compare_tests(
    df: pd.DataFrame,
    tests: Sequence[str] = TESTS,
    opts: CompareOptions | None = None,
    **kw: object,
) -> pd.DataFrame:
    """:func:`compare` of every test in ``tests`` (default: all four) at once.

    The rows of each test, stacked in the order of ``tests`` (column ``test``), equal
    those of ``compare(df, test=t, **kw)``; the table is filtered and paired once,
    and the run values and intervals are built once for the ratio-based tests
    (``ratio``, ``utest``, ``utest-pooled``) and once for ``diff``.
    """
    if isinstance(tests, str) or not tests:
        raise AnalysisError("tests must be a non-empty list, e.g. ('ratio', 'utest')")
    opts = options(opts, kw)
    it = Iterations.from_frame(df, extra_unit_columns=unit_extras(opts))
    return compare_iterations(it, opts, tests)


def compare_iterations(
    it: Iterations, opts: CompareOptions, tests: Sequence[str] | None = None
) -> pd.DataFrame:
    """:func:`compare` (or :func:`compare_tests` of ``tests``) on a converted table.

    The U test and the side means need no pairs: with more than one analysis
    thread they are computed on a second thread while this one pairs the
    iterations and builds the intervals (numpy releases the GIL in the sorts).
    """
    each = (
        [opts]
        if tests is None
        else [CompareOptions.create(**{**vars(opts), "test": t}) for t in tests]
    )
    itf = filtered(it, opts)
    gcode_u, gkeys = group_codes(itf.units, opts.by)
    ng = len(gkeys)

    def paired() -> tuple[dict[str, Changes], np.ndarray]:
        pairs = pair_rows(itf, opts.min_overlap, opts.overlap_rate)
        kinds = {o.value_test: o for o in each}
        chs = {k: changes(itf, pairs, gcode_u, gkeys, o) for k, o in kinds.items()}
        return chs, unkept_overlap_share(pairs, gcode_u, ng)

    (chs, unkept), sides = side_by_side(
        paired,
        lambda: _side_statistics(itf, gcode_u, ng),
        parallel=len(itf.duration) >= THREADED_ROWS,
    )
    frames = [
        _with_measure(_result_table(gkeys, chs[o.value_test], sides, o, unkept), itf.measure)
        for o in each
    ]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _with_measure(out: pd.DataFrame, choice: object) -> pd.DataFrame:
    """The result table with each group's measure (measure.MeasureChoice): ``measure``
    (wall or cpu), ``measure_reason`` (a code of measure.REASONS), ``measure_source``
    (where the CPU time came from), ``runs_unbalanced`` (left out: wall groups) and
    ``runs_corrected`` (unbalanced runs measured by CPU time)."""
    if choice is None:
        return out
    out["measure"] = choice.measure  # type: ignore[attr-defined]
    out["measure_reason"] = choice.reason  # type: ignore[attr-defined]
    out["measure_source"] = choice.source  # type: ignore[attr-defined]
    out["runs_unbalanced"] = choice.unbalanced_left_out  # type: ignore[attr-defined]
    out["runs_corrected"] = choice.unbalanced_corrected  # type: ignore[attr-defined]
    return out


def unkept_overlap_share(pairs: Pairs, gcode_u: np.ndarray, ng: int) -> np.ndarray:
    """Per group: the share of aduet overlap time in pairs the filter did not keep (overlap
    rate <= m); NaN for groups without aduet overlap (docs/statistics.md, "Notes")."""
    out = np.full(ng, np.nan)
    if pairs.overlap_all is None or pairs.overlap_unkept is None:
        return out
    total = np.bincount(gcode_u, weights=pairs.overlap_all, minlength=ng)
    unkept = np.bincount(gcode_u, weights=pairs.overlap_unkept, minlength=ng)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, unkept / total, np.nan)


def unpaired_disagrees(
    change: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    u: GroupedU,
    mean_a: np.ndarray,
    mean_b: np.ndarray,
    alpha: float,
) -> np.ndarray:
    """Per group: the paired estimate points one way while a significant unpaired test (the
    pooled U test, with the side means agreeing) points the other: either the paired
    interval lies wholly on the other side, or the estimate does and the means differ by
    more than the paired interval is wide (docs/statistics.md, "Notes")."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = mean_b / mean_a - 1.0
        u_up = (u.pvalue < alpha) & (u.estimate > 0.5) & (means > 0)
        u_down = (u.pvalue < alpha) & (u.estimate < 0.5) & (means < 0)
        wide = np.abs(means) > (high - low)
        down = (high < 0) | ((change < 0) & wide)
        up = (low > 0) | ((change > 0) & wide)
    return (u_up & down) | (u_down & up)


def run_level(
    itf: Iterations, pairs: Pairs, gcode_u: np.ndarray, ng: int, opts: CompareOptions
) -> tuple[RunValues, np.ndarray]:
    """Every run's value (``opts.value_test``, ``opts.run_stat``; ``auto`` chooses per
    benchmark x method) and which runs carry too few pairs to count (``min_run_pairs``):
    what every interval, test and stopping rule of the group rests on."""
    rv = run_values(itf, pairs, opts.value_test, opts.run_stat)
    sparse = sparse_runs(rv.pairs, gcode_u[rv.unit], ng, opts.min_run_pairs)
    return rv, sparse


@dataclass(frozen=True, eq=False)
class Changes:
    """Relative changes of every group (arrays by group code)."""

    change: np.ndarray
    low: np.ndarray
    high: np.ndarray
    runs: np.ndarray
    pairs: np.ndarray
    clusters: np.ndarray
    clustered_by: np.ndarray
    few_pairs: np.ndarray  # runs left out for carrying too few pairs
    rank: GroupedSignedRank  # signed-rank test of the run values (cluster means)
    rank_above: GroupedSignedRank | None  # ... of the values minus log(1 + threshold)
    rank_below: GroupedSignedRank | None  # ... of the values minus log(1 - threshold)
    #: run_stat ``auto``: the statistic each group's runs were summarized by (object)
    stat: np.ndarray | None = None

    @property
    def width(self) -> np.ndarray:
        return self.high - self.low


def changes(
    itf: Iterations,
    pairs: Pairs,
    gcode_u: np.ndarray,
    gkeys: pd.DataFrame,
    opts: CompareOptions,
) -> Changes:
    """Run-level values, intervals and their scaling to relative change, rank tests."""
    ng = len(gkeys)
    rv, sparse = run_level(itf, pairs, gcode_u, ng, opts)
    few = np.bincount(gcode_u[rv.unit[sparse]], minlength=ng)
    rv = rv.subset(~sparse)
    ivals, clustered_by, n_clusters, tested = _intervals(itf, rv, gcode_u, gkeys, opts)
    rank = signed_rank(tested[0], tested[1], ng)
    above = below = None
    if opts.value_test == "ratio" and opts.threshold > 0:
        t = opts.threshold
        above = signed_rank(tested[0] - np.log1p(t), tested[1], ng)
        below = signed_rank(tested[0] - (np.log1p(-t) if t < 1 else -np.inf), tested[1], ng)
    g_run = gcode_u[rv.unit]
    runs = np.bincount(g_run, minlength=ng)
    npairs = np.bincount(g_run, weights=rv.pairs, minlength=ng).astype(np.int64)
    est, lo, hi = ivals.estimate, ivals.low, ivals.high
    if opts.value_test == "ratio":
        with np.errstate(over="ignore"):  # an unbounded interval (2 runs) maps to inf
            change, c_lo, c_hi = np.expm1(est), np.expm1(lo), np.expm1(hi)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.bincount(g_run, weights=rv.a_level, minlength=ng) / runs
            change, c_lo, c_hi = est / scale, lo / scale, hi / scale
    change = np.where(runs > 0, change, np.nan)
    stat = None
    if rv.stat is not None:  # one statistic per group (auto chooses per benchmark x method)
        stat = np.full(ng, "median", dtype=object)
        stat[g_run] = rv.stat
    return Changes(
        change,
        c_lo,
        c_hi,
        runs,
        npairs,
        n_clusters,
        clustered_by,
        few,
        rank,
        above,
        below,
        stat,
    )


@dataclass(frozen=True, eq=False)
class _SideStatistics:
    """Per group: the U test of A against B and the mean duration of each side."""

    u: GroupedU
    mean_a: np.ndarray
    mean_b: np.ndarray


def _side_statistics(itf: Iterations, gcode_u: np.ndarray, ng: int) -> _SideStatistics:
    """U test and side means on all filtered durations (no pairing needed)."""
    # counts and sums per (group, side) from the (run, side) series: one pass over rows
    starts, lengths = itf.series_bounds()
    bins = np.zeros(0, dtype=np.int64)
    sums = np.zeros(0)
    if len(starts):
        bins = gcode_u[itf.unit[starts]] * 2 + itf.side[starts]
        sums = np.add.reduceat(itf.duration, starts).astype(np.float64)  # exact for ints
    per_side = np.bincount(bins, weights=lengths, minlength=2 * ng).astype(np.int64)
    totals = np.bincount(bins, weights=sums, minlength=2 * ng)
    u = mann_whitney_grouped(itf.duration, itf.side, gcode_u[itf.unit], ng, per_side=per_side)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = totals[SIDE_A::2] / u.n_a
        mean_b = totals[SIDE_B::2] / u.n_b
    return _SideStatistics(u, mean_a, mean_b)


def _result_table(
    gkeys: pd.DataFrame,
    ch: Changes,
    sides: _SideStatistics,
    opts: CompareOptions,
    unkept: np.ndarray,
) -> pd.DataFrame:
    u, mean_a, mean_b = sides.u, sides.mean_a, sides.mean_b
    out = gkeys.copy()
    out["mean_a_ns"] = mean_a
    out["mean_b_ns"] = mean_b
    out["change"] = ch.change
    out["ci_low"] = ch.low
    out["ci_high"] = ch.high
    out["ci_width"] = ch.width
    out["p_value"] = u.pvalue
    out["u_statistic"] = u.u_a
    out["rank_p_value"] = np.where(ch.runs > 0, ch.rank.pvalue, np.nan)
    out["runs"] = ch.runs
    out["runs_few_pairs"] = ch.few_pairs
    out["pairs"] = ch.pairs
    out["clusters"] = ch.clusters
    out["verdict"] = _group_verdicts(ch, u, opts)
    out["test"] = opts.test
    out["interval"] = opts.interval
    out["confidence"] = opts.confidence
    out["threshold"] = opts.threshold
    out["run_stat"] = ch.stat if opts.run_stat == "auto" and ch.stat is not None else opts.run_stat
    out["clustered_by"] = ch.clustered_by
    out["overlap_rate"] = opts.overlap_rate
    out["calibrated"] = calibrated(opts, ch.clusters, ch.clustered_by != NO_CLUSTERING)
    out["unkept_overlap"] = unkept
    out["unpaired_disagrees"] = unpaired_disagrees(
        ch.change, ch.low, ch.high, u, mean_a, mean_b, 1.0 - opts.confidence
    )
    return out


def _group_verdicts(ch: Changes, u: GroupedU, opts: CompareOptions) -> np.ndarray:
    """The verdict of every group, in one place for every test."""
    if opts.test in ("ratio", "diff"):
        return interval_verdicts(ch.low, ch.high, opts.threshold)
    defined = ~(np.isnan(ch.low) | np.isnan(ch.high))  # at least 2 runs (clusters)
    alpha = 1.0 - opts.confidence
    if opts.test == "utest":
        return rank_verdicts(
            ch.rank,
            alpha,
            defined,
            threshold=opts.threshold,
            above=ch.rank_above,
            below=ch.rank_below,
        )
    out = pooled_u_verdicts(u.pvalue, u.estimate, alpha)
    out[~defined] = NO_DATA
    return out


#: verdicts whose interval holds (or lies near) 0: ``within`` says how equal
_WITHIN = (Verdict.NO_CHANGE.value, Verdict.EQUIVALENT.value, Verdict.INCONCLUSIVE.value)


def labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` of :func:`compare` with every number named by what it is (the verdict
    tables of every command; docs/results.md): ``p_value`` becomes the p-value of each
    row's own test (column ``test``) -- the signed-rank test of the run values, for
    ``utest-pooled`` the pooled U test --, named in ``p_value_test``; ``u_p_value`` is the
    pooled U test's. A row whose interval is a stopping rule's (a ``stop`` value) has no
    p-value. ``within``: where the verdict says B equals A within the interval (``no
    change detected``, ``equivalent``) or cannot tell (``inconclusive``), the interval's
    largest distance from 0."""
    out = rows.copy()

    def numbers(col: str) -> pd.Series:
        if col not in out.columns:
            return pd.Series(np.nan, index=out.index, dtype=float)
        return pd.to_numeric(out[col], errors="coerce").astype(float)

    pooled, rank = numbers("p_value"), numbers("rank_p_value")
    is_pooled = (
        (out["test"].astype(str) == "utest-pooled").to_numpy()
        if "test" in out.columns
        else np.zeros(len(out), dtype=bool)
    )
    out["u_p_value"] = pooled
    out["p_value"] = np.where(is_pooled, pooled, rank)
    out["p_value_test"] = np.where(is_pooled, "pooled-u", "signed-rank").astype(object)
    if "stop" in out.columns:  # the stopping rule's interval: no p-value goes with it
        ruled = (out["stop"].fillna("").astype(str) != "").to_numpy()
        out.loc[ruled, ["p_value", "rank_p_value"]] = np.nan
        out.loc[ruled, "p_value_test"] = None
    low, high = numbers("ci_low").to_numpy(), numbers("ci_high").to_numpy()
    with np.errstate(invalid="ignore"):
        within = np.maximum(np.abs(low), np.abs(high))
    verdict = out["verdict"] if "verdict" in out.columns else pd.Series("", index=out.index)
    show = verdict.isin(_WITHIN).to_numpy() & np.isfinite(within)
    out["within"] = np.where(show, within, np.nan)
    return out


def group_key_texts(gkeys: pd.DataFrame, by: Sequence[str]) -> list[str]:
    cols = list(by)
    if not cols:
        return [""] * len(gkeys)
    vals = gkeys[cols].to_numpy(dtype=object)
    return [stable_key(cols, row) for row in vals]


def _intervals(
    itf: Iterations,
    rv: RunValues,
    gcode_u: np.ndarray,
    gkeys: pd.DataFrame,
    opts: CompareOptions,
) -> tuple[GroupIntervals, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Intervals of every group over runs or clusters; the clustering; and the values
    the rank test ranks with their group codes (run values, or the clusters' means)."""
    ng = len(gkeys)
    g_run = gcode_u[rv.unit]
    keys = group_key_texts(gkeys, opts.by)
    col = opts.cluster_column
    clustered = np.zeros(ng, dtype=bool)
    label = np.zeros(len(rv.unit), dtype=np.int64)
    if col is not None:
        _, label = np.unique(itf.units[col].to_numpy(dtype=object)[rv.unit], return_inverse=True)
        label = label.astype(np.int64)
        pair_code = g_run * (int(label.max()) + 1 if len(label) else 1) + label
        distinct = np.unique(pair_code)
        per_group = np.bincount(
            distinct // (int(label.max()) + 1 if len(label) else 1), minlength=ng
        )
        clustered = per_group > 1
        if clustered.any() and opts.interval == "studentized":
            raise AnalysisError(
                "the studentized interval is not available with clustered data; "
                "use --interval t|percentile|bca, or --cluster-by run"
            )
    runs = np.bincount(g_run, minlength=ng)
    sel_run = ~clustered[g_run]
    if opts.interval == "t":
        res = t_interval(rv.value[sel_run], g_run[sel_run], n_groups=ng, confidence=opts.confidence)
    else:
        res = bootstrap_interval(
            rv.value[sel_run],
            g_run[sel_run],
            keys,
            method=opts.interval,  # type: ignore[arg-type]
            confidence=opts.confidence,
            resamples=opts.resamples,
            seed=opts.seed,
        )
    n_clusters = runs.copy()
    clustered_by = np.full(ng, NO_CLUSTERING, dtype=object)
    if clustered.any():
        sel = clustered[g_run]
        cres = weighted_bootstrap_interval(
            rv.value[sel],
            g_run[sel],
            label[sel],
            keys,
            method=opts.interval,  # type: ignore[arg-type]
            weights=opts.weights,  # type: ignore[arg-type]
            confidence=opts.confidence,
            resamples=opts.resamples,
            seed=opts.seed,
        )
        res = GroupIntervals(
            estimate=np.where(clustered, cres.estimate, res.estimate),
            low=np.where(clustered, cres.low, res.low),
            high=np.where(clustered, cres.high, res.high),
            n=np.where(clustered, cres.n, res.n),
            method=res.method,
            confidence=res.confidence,
        )
        n_clusters = np.where(clustered, cres.n, runs)
        clustered_by[clustered] = col
    return res, clustered_by, n_clusters, _tested_values(rv.value, g_run, label, clustered)


def _tested_values(
    value: np.ndarray, g_run: np.ndarray, label: np.ndarray, clustered: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Run values of unclustered groups, and each cluster's mean in clustered ones."""
    sel = clustered[g_run]
    if not sel.any():
        return value, g_run
    width = int(label.max()) + 1
    code, inv = np.unique(g_run[sel] * width + label[sel], return_inverse=True)
    means = np.bincount(inv, weights=value[sel]) / np.bincount(inv)
    return np.concatenate([value[~sel], means]), np.concatenate([g_run[~sel], code // width])


def _single(df: pd.DataFrame, test: str, **kw: object) -> ChangeResult:
    res = compare(df, test=test, by=(), **kw)  # type: ignore[arg-type]
    r = res.iloc[0]
    return ChangeResult(
        test=str(r["test"]),
        estimate=float(r["change"]),
        confidence_interval=ConfidenceInterval(float(r["ci_low"]), float(r["ci_high"])),
        pvalue=float(r["p_value"]),
        verdict=str(r["verdict"]),
        runs=int(r["runs"]),
        pairs=int(r["pairs"]),
        confidence=float(r["confidence"]),
        interval=str(r["interval"]),
        run_stat=str(r["run_stat"]),
        threshold=float(r["threshold"]),
        clustered_by=str(r["clustered_by"]),
        ci_width=float(r["ci_width"]),
        mean_a_ns=float(r["mean_a_ns"]),
        mean_b_ns=float(r["mean_b_ns"]),
        rank_pvalue=float(r["rank_p_value"]),
        runs_few_pairs=int(r["runs_few_pairs"]),
        overlap_rate=str(r["overlap_rate"]),
        calibrated=bool(r["calibrated"]),
    )


def ratio_test(df: pd.DataFrame, **kw: object) -> ChangeResult:
    """Ratio CI test (5.2) of all iterations in ``df`` as one group.

    Keyword arguments are those of :func:`compare` (except ``test`` and ``by``).
    """
    return _single(df, "ratio", **kw)


def difference_test(df: pd.DataFrame, **kw: object) -> ChangeResult:
    """Difference CI test (5.1) of all iterations in ``df`` as one group.

    Keyword arguments are those of :func:`compare` (except ``test`` and ``by``).
    """
    return _single(df, "diff", **kw)
