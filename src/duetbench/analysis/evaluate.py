"""``duet evaluate`` as a library: the thesis's evaluation (ch. 5, RQ1-RQ4) of an experiment.

:func:`evaluate` turns an iterations table into an :class:`Evaluation`, a dataclass
of DataFrames, one per table or figure (docs/statistics.md, "Evaluation helpers"):

=================  ==========================================================
``verdicts``       the verdict table of every command (duetbench.verdicts; given, or
                   computed here from the table with the same options)
``speedup``        RQ1: runtime speedup of aduet/sduet over seqn (eq. 5.1)
``overlap``        RQ2: relative overlap time of aduet runs per minimum overlap m (eq. 5.2)
``cv``             RQ3: coefficient of variation per side (4.3.1)
``tests``          RQ3: change, CI and relative CI width of every test (ratio, diff, U)
``aa``             RQ3: A/A experiments, share judged neither slower nor faster (fig. 5.6, 5.7)
``aa_by_overlap``  RQ3: the same for aduet as a function of m (fig. 5.4)
``shuffle``        duet paper RQ2: CI width after re-pairing runs at random
``mds``            RQ4: minimal detectable slowdown of every benchmark (4.4)
``mds_curve``      RQ4: share of benchmarks detected slower per slowdown s (fig. 5.8, 5.9)
``mds_detail``     RQ4: every benchmark, test and s
``hosts``          the host configuration columns of the table
=================  ==========================================================

Everything is grouped per host (the thesis's environments), suite, benchmark and
method. The columns are listed in :data:`TABLE_COLUMNS`; ``docs/evaluate.md``
explains each table. The JSON document is built by ``duetbench.report.json_docs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from duetbench.errors import AnalysisError, DuetError
from duetbench.options import CI_TESTS, TESTS, U_TESTS, CompareOptions, EvaluateOptions, Warmup

from ._table import AUX_COLUMNS, REQUIRED_COLUMNS
from .compare import compare, compare_tests, labelled
from .evaluation_helpers import cv, runtime_speedup, shuffle_check, slow_down
from .filters import drop_marked_warmup, drop_warmup
from .overlaps import relative_overlap_time
from .stats import FASTER, NO_DATA, SAME, SLOWER

__all__ = ["TABLE_COLUMNS", "TABLES", "Evaluation", "evaluate"]

#: Grouping of per-benchmark results: one row per host, suite, benchmark and method.
KEYS = ("host", "suite", "benchmark", "method")
BENCH_KEYS = ("host", "suite", "benchmark")
S, N, INT, B = "string", "number", "integer", "boolean"
#: the first columns of a table with a row per benchmark x method (``KEYS``) ...
_BY_BENCHMARK = dict.fromkeys(KEYS, S)
#: ... and per test
_BY_TEST = {**_BY_BENCHMARK, "test": S}
#: how many benchmarks a group has with a verdict, slower, faster or neither (``same``)
_COUNTS = {"benchmarks": INT, SAME: INT, SLOWER: INT, FASTER: INT, "share_same": N}
#: Columns (and JSON types) of every table. ``hosts`` has ``host`` plus the table's
#: ``host_*`` / ``artifact_*`` columns.
TABLE_COLUMNS: dict[str, dict[str, str]] = {
    "verdicts": {
        "suite": S,
        "benchmark": S,
        "method": S,
        "verdict": S,
        "change": N,
        "ci_low": N,
        "ci_high": N,
        "ci_width": N,
        "within": N,
        "p_value": N,
        "p_value_test": S,
        "u_p_value": N,
        "rank_p_value": N,
        "mean_a_ns": N,
        "mean_b_ns": N,
        "runs": INT,
        "runs_few_pairs": INT,
        "pairs": INT,
        "clustered_by": S,
        "calibrated": B,
    },
    "speedup": {
        **_BY_BENCHMARK,
        "speedup": N,
        "seqn_cost_ns": N,
        "duet_cost_ns": N,
        "seqn_runs": INT,
        "duet_runs": INT,
    },
    "overlap": {
        "host": S,
        "suite": S,
        "benchmark": S,
        "min_overlap": N,
        "relative_overlap_time": N,
        "pairs": INT,
        "runs": INT,
    },
    "cv": {
        **_BY_BENCHMARK,
        "pair": S,
        "iterations": INT,
        "mean_ns": N,
        "std_ns": N,
        "cv": N,
    },
    # observed precision per machine-second of each method (docs/adaptive.md)
    "precision": {
        "suite": S,
        "benchmark": S,
        "method": S,
        "runs": INT,
        "seconds_per_run": N,
        "run_sd": N,
        "half_width_per_hour": N,
    },
    "tests": {
        **_BY_TEST,
        "aa": B,
        "change": N,
        "ci_low": N,
        "ci_high": N,
        "ci_width": N,
        "p_value": N,
        "p_value_test": S,
        "u_p_value": N,
        "rank_p_value": N,
        "verdict": S,
        "calibrated": B,
        "runs": INT,
        "pairs": INT,
        "mean_a_ns": N,
        "mean_b_ns": N,
    },
    "aa": {
        "host": S,
        "suite": S,
        "method": S,
        "test": S,
        **_COUNTS,
    },
    "aa_by_overlap": {
        "host": S,
        "suite": S,
        "method": S,
        "test": S,
        "min_overlap": N,
        **_COUNTS,
    },
    "shuffle": {
        **_BY_TEST,
        "runs": INT,
        "width_paired": N,
        "width_shuffled": N,
        "width_ratio": N,
    },
    "mds": {
        **_BY_TEST,
        "aa": B,
        "mds": N,
        "detected": INT,
        "slowdowns": INT,
    },
    "mds_curve": {
        "host": S,
        "suite": S,
        "aa": B,
        "method": S,
        "test": S,
        "slowdown": N,
        "benchmarks": INT,
        SLOWER: INT,
        "share_slower": N,
        "share_same": N,
    },
    "mds_detail": {
        **_BY_TEST,
        "aa": B,
        "slowdown": N,
        "change": N,
        "ci_low": N,
        "ci_high": N,
        "p_value": N,
        "verdict": S,
        "runs": INT,
        "pairs": INT,
    },
    "hosts": {"host": S},
}
TABLES = tuple(TABLE_COLUMNS)


@dataclass(frozen=True, eq=False)
class Evaluation:
    """The evaluation of one experiment: one DataFrame per table (see the module doc)."""

    verdicts: pd.DataFrame
    speedup: pd.DataFrame
    overlap: pd.DataFrame
    cv: pd.DataFrame
    tests: pd.DataFrame
    aa: pd.DataFrame
    aa_by_overlap: pd.DataFrame
    shuffle: pd.DataFrame
    mds: pd.DataFrame
    mds_curve: pd.DataFrame
    mds_detail: pd.DataFrame
    hosts: pd.DataFrame
    #: observed precision per machine-second of each method (docs/adaptive.md)
    precision: pd.DataFrame = field(default_factory=lambda: _empty("precision"))
    #: names of the benchmarks treated as A/A experiments
    aa_benchmarks: tuple[str, ...] = ()
    #: the options that produced it (``settings.settings()``: the JSON ``settings`` block)
    settings: EvaluateOptions = field(default_factory=EvaluateOptions)
    #: sections that could not be computed, one line each
    problems: tuple[str, ...] = ()

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}


def _empty(name: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=_DTYPE[t]) for c, t in TABLE_COLUMNS[name].items()})


_DTYPE = {S: "object", N: "float64", INT: "int64", B: "bool"}


def _shape(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """The table's columns in their documented order (extra columns for ``hosts``)."""
    cols = list(TABLE_COLUMNS[name])
    if name == "hosts":
        cols += [c for c in df.columns if c not in cols]
    for c in cols:
        if c not in df.columns:
            df[c] = pd.Series(dtype=_DTYPE[TABLE_COLUMNS[name].get(c, S)])
    out = df[cols].reset_index(drop=True)
    for c, t in TABLE_COLUMNS[name].items():
        if t == S:
            out[c] = out[c].astype(object)
    return out


def _aa_names(df: pd.DataFrame, aa: bool | Iterable[str] | None) -> tuple[str, ...]:
    names = sorted(map(str, df["benchmark"].unique())) if len(df) else []
    if aa is None:
        if "aa" not in df.columns:
            return ()
        flag = df["aa"].fillna(False).astype(bool)
        per = flag.groupby(df["benchmark"].astype(str)).all()
        return tuple(sorted(per.index[per.to_numpy()]))
    if aa is True:
        return tuple(names)
    if aa is False:
        return ()
    if isinstance(aa, str):
        aa = [aa]
    want = {str(x) for x in aa}
    unknown = sorted(want - set(names))
    if unknown:
        raise DuetError(
            f"--aa names benchmark(s) {', '.join(unknown)} that the table does not have "
            f"(it has: {', '.join(names)})"
        )
    return tuple(sorted(want))


#: Columns the evaluation reads; the rest (host facts, artifacts...) is not copied around.
_USED = (
    "experiment",
    *REQUIRED_COLUMNS,
    "order",
    "synthetic_ts",
    "warmup",
    "proc_start_ns",
    "proc_end_ns",
    # what the verdicts' choices read (the measure, the run statistic, unbalanced runs)
    "other_work",
    *AUX_COLUMNS,
)
_KEY_TEXT = ("experiment", "host", "suite", "benchmark", "method", "pair", "order")


def _slim(df: pd.DataFrame) -> pd.DataFrame:
    """The used columns, text keys as categoricals (the analysis factorizes them fast)."""
    out = df[[c for c in dict.fromkeys(_USED) if c in df.columns]].copy()
    for c in _KEY_TEXT:
        if c in out.columns and not isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(str).astype("category")
    return out


def _prepared(df: pd.DataFrame, warmup: Warmup) -> tuple[pd.DataFrame, int | str]:
    """Drop the config's warm-up rows (``warmup=None``) or keep all and return ``warmup``."""
    if warmup is None:
        return drop_marked_warmup(df), 0
    return df, warmup


def _tests_rows(
    df: pd.DataFrame,
    copts: CompareOptions,
    aa: Sequence[str],
    by: Sequence[str] = KEYS,
) -> pd.DataFrame:
    """Rows of every CI test and of the U tests, per host, suite, benchmark, method.

    The U tests' rows have no interval (``compare`` gives them the ratio test's)."""
    out = labelled(compare_tests(df, TESTS, copts, by=by))
    out.loc[out["test"].isin(U_TESTS), ["ci_low", "ci_high", "ci_width"]] = np.nan
    out["aa"] = out["benchmark"].astype(str).isin(set(aa))
    return out


def _verdict_counts(rows: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    """Benchmarks with a verdict, how many are slower, faster or neither (``same``: no
    change detected, equivalent or inconclusive: no alarm), share judged neither."""
    r = rows.loc[rows["verdict"] != NO_DATA].copy()
    if r.empty:
        return pd.DataFrame(columns=[*group, "benchmarks", SAME, SLOWER, FASTER])
    v = r["verdict"].astype(str)
    r["_same"] = (~v.isin((SLOWER, FASTER))).astype(np.int64)
    r["_slower"] = (v == SLOWER).astype(np.int64)
    r["_faster"] = (v == FASTER).astype(np.int64)
    g = r.groupby(group, sort=True, dropna=False, observed=True)
    out = g.agg(
        benchmarks=("verdict", "size"),
        **{SAME: ("_same", "sum"), SLOWER: ("_slower", "sum"), FASTER: ("_faster", "sum")},
    ).reset_index()
    out["share_same"] = out["same"] / out["benchmarks"]
    return out


def _mds_from_detail(detail: pd.DataFrame, slowdowns: Sequence[float]) -> pd.DataFrame:
    """A benchmark's MDS: the smallest s from which every larger s is detected ``slower``."""
    keys = [*KEYS, "test", "aa"]
    if detail.empty:
        return pd.DataFrame(columns=[*keys, "mds", "detected", "slowdowns"])
    s_arr = np.asarray(sorted(slowdowns), dtype=np.float64)
    det = (
        detail.assign(_d=(detail["verdict"] == SLOWER))
        .pivot_table(index=keys, columns="slowdown", values="_d", aggfunc="max", fill_value=False)
        .reindex(columns=s_arr, fill_value=False)
    )
    m = det.to_numpy(dtype=bool)
    suffix = np.flip(np.logical_and.accumulate(np.flip(m, axis=1), axis=1), axis=1)
    first = np.argmax(suffix, axis=1)
    out = det.index.to_frame(index=False)
    out["mds"] = np.where(suffix.any(axis=1), s_arr[first], np.nan)
    out["detected"] = m.sum(axis=1)
    out["slowdowns"] = len(s_arr)
    return out


def _guard(name: str, problems: list[str], fn: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """Compute one section; a data problem there leaves it empty and is reported."""
    try:
        return _shape(name, fn())
    except AnalysisError as exc:
        problems.append(f"{name}: {exc}")
        return _empty(name)


def _options(opts: EvaluateOptions | None, kw: dict[str, Any]) -> EvaluateOptions:
    """``opts`` with the keywords ``kw`` (its own fields or those of its ``compare``)
    replacing its fields, validated."""
    base = opts if opts is not None else EvaluateOptions()
    if not kw:
        return base.checked()
    own = {f.name for f in fields(EvaluateOptions)} - {"compare"}
    compare_kw = {k: v for k, v in kw.items() if k not in own}
    copts = CompareOptions.create(**{**vars(base.compare), **compare_kw})
    return replace(base, compare=copts, **{k: v for k, v in kw.items() if k in own}).checked()


@dataclass(frozen=True, eq=False)
class _Input:
    """The table as every section of the evaluation reads it."""

    opts: EvaluateOptions
    base: pd.DataFrame  # the used columns, warm-up included (speedup, slowed-down copies)
    prep: pd.DataFrame  # warm-up rows of the config dropped
    warmup: int | str  # what the sections still drop per series (0 after the config's)
    aa_names: tuple[str, ...]

    @property
    def copts(self) -> CompareOptions:
        """The per-host tables' options: warm-up as above, clustering automatic (one host
        per group)."""
        return replace(self.opts.compare, warmup=self.warmup, cluster_by=None, by=KEYS)

    @cached_property
    def aduet(self) -> pd.DataFrame:
        return self.prep.loc[(self.prep["method"].astype(str) == "aduet").to_numpy()]


def _overlap_rows(x: _Input) -> pd.DataFrame:
    aduet = x.aduet
    if aduet.empty:
        return _empty("overlap")
    src = drop_warmup(aduet, x.warmup) if x.warmup else aduet
    frames = []
    for m in x.opts.min_overlaps:
        r = relative_overlap_time(src, m, by=BENCH_KEYS, overlap_rate=x.opts.compare.overlap_rate)
        r.insert(len(BENCH_KEYS), "min_overlap", m)
        frames.append(r)
    return pd.concat(frames, ignore_index=True)


def _aa_overlap_rows(x: _Input) -> pd.DataFrame:
    aduet = x.aduet
    sub = aduet.loc[aduet["benchmark"].astype(str).isin(set(x.aa_names)).to_numpy()]
    if sub.empty:
        return _empty("aa_by_overlap")
    frames = []
    for m in x.opts.min_overlaps:
        r = compare_tests(sub, CI_TESTS, x.copts, min_overlap=m)
        r["min_overlap"] = m
        frames.append(r)
    rows = pd.concat(frames, ignore_index=True)
    return _verdict_counts(rows, ["host", "suite", "method", "test", "min_overlap"])


def _shuffle_rows(x: _Input) -> pd.DataFrame:
    c = x.opts.compare
    frames = []
    for t in CI_TESTS:
        r = shuffle_check(
            x.prep,
            test=t,
            interval=c.interval,
            confidence=c.confidence,
            resamples=c.resamples,
            run_stat=c.run_stat,
            min_overlap=c.min_overlap,
            overlap_rate=c.overlap_rate,
            min_run_pairs=c.min_run_pairs,
            warmup=x.warmup,
            winsorize=c.winsorize,
            seed=c.seed,
            shuffles=x.opts.shuffles,
            by=KEYS,
        ).copy()
        r["test"] = t
        frames.append(r)
    return pd.concat(frames, ignore_index=True)


def _mds_detail_rows(x: _Input) -> pd.DataFrame:
    # every s slows down the raw table (warm-up included: a slower B is slower there
    # too, and its timeline shifts); the slowed tables are stacked and compared at once
    frames = []
    for s in x.opts.slowdowns:
        slowed, _ = _prepared(slow_down(x.base, s), x.opts.compare.warmup)
        frames.append(slowed.assign(slowdown=s))
    stacked = pd.concat(frames, ignore_index=True)
    return _tests_rows(stacked, x.copts, x.aa_names, by=(*KEYS, "slowdown"))


def _hosts_rows(df: pd.DataFrame) -> pd.DataFrame:
    host_cols = [col for col in df.columns if col.startswith(("host_", "artifact_"))]
    if "host" not in df.columns:
        return pd.DataFrame()
    return df[["host", *host_cols]].drop_duplicates("host").sort_values("host")


def _precision_rows(prep: pd.DataFrame) -> pd.DataFrame:
    from .costs import precision_per_second

    return precision_per_second(prep)


def evaluate(
    df: pd.DataFrame,
    opts: EvaluateOptions | None = None,
    *,
    verdicts: pd.DataFrame | None = None,
    **kw: Any,
) -> Evaluation:
    """Evaluate an experiment (thesis ch. 5, duet paper sec. 4; docs/evaluate.md).

    ``df`` is an iterations table (``duetbench.load``). The options are an
    :class:`~duetbench.options.EvaluateOptions` (``opts``) and/or keywords replacing its
    fields or those of its ``compare`` options. ``aa``: which benchmarks are A/A
    experiments -- ``None`` reads the table's boolean ``aa`` column (added by
    ``duetbench.dataset.open_dataset`` from the plan), ``True`` all, ``False`` none, or
    benchmark names. ``slowdowns`` (fractions, default 0, 0.01, ..., 0.15) are the s of
    the MDS; ``min_overlaps`` (default 0, 0.1, ..., 0.9) the m of the overlap and
    A/A-vs-m tables. ``warmup``: ``None`` drops the iterations the config marked
    (column ``warmup``), a number or ``"half"`` drops that many per run and side
    instead. ``span``: ``process`` or ``iterations`` for the speedup. ``test`` drives
    the ``verdicts`` table (``ratio``, ``diff``, ``utest`` or ``utest-pooled``, as
    ``duet compare --test``); the ``tests`` table has rows of every test. The other
    options are those of :func:`duetbench.analysis.compare`. Random draws come from
    ``seed``. ``verdicts``: the rows of :func:`duetbench.verdicts.verdicts` (what the
    commands pass: an adaptive experiment's carry its stopping rule's intervals); without
    them the verdict table is computed from ``df`` as that function does for a table.
    """
    if not isinstance(df, pd.DataFrame):
        raise AnalysisError("evaluate expects an iterations table (a pandas DataFrame)")
    opts = _options(opts, kw)
    if df.empty:
        raise DuetError("the iterations table is empty: nothing to evaluate")
    base = _slim(df)
    prep, w = _prepared(base, opts.compare.warmup)
    if prep.empty:
        raise DuetError("every iteration is marked as warm-up: nothing to evaluate")
    x = _Input(opts, base, prep, w, _aa_names(df, opts.aa))
    problems: list[str] = []

    # the verdict table of every command (its grouping, host clustering when needed)
    if verdicts is None:
        verdicts = labelled(compare(prep, opts.compare, warmup=w))
    verdicts = _shape("verdicts", verdicts.copy())
    tests = _shape("tests", _tests_rows(prep, x.copts, x.aa_names))
    is_aa = tests["aa"].to_numpy(dtype=bool)
    aa_tab = _shape("aa", _verdict_counts(tests.loc[is_aa], ["host", "suite", "method", "test"]))
    speedup = _guard(
        "speedup",
        problems,
        lambda: runtime_speedup(base, span=opts.span, by=BENCH_KEYS),  # type: ignore[arg-type]
    )
    cv_tab = _guard(
        "cv", problems, lambda: cv(prep, warmup=w, winsorize=opts.compare.winsorize, by=KEYS)
    )
    precision = _guard("precision", problems, lambda: _precision_rows(prep))
    # computed in this order: the problems are listed in it
    overlap = _guard("overlap", problems, lambda: _overlap_rows(x))
    aa_by_overlap = _guard("aa_by_overlap", problems, lambda: _aa_overlap_rows(x))
    shuffle = _guard("shuffle", problems, lambda: _shuffle_rows(x))
    mds_detail = _guard("mds_detail", problems, lambda: _mds_detail_rows(x))
    curve = _verdict_counts(mds_detail, ["host", "suite", "aa", "method", "test", "slowdown"])
    if not curve.empty:
        curve["share_slower"] = curve["slower"] / curve["benchmarks"]
    return Evaluation(
        verdicts=verdicts,
        speedup=speedup,
        overlap=overlap,
        cv=cv_tab,
        tests=tests,
        aa=aa_tab,
        aa_by_overlap=aa_by_overlap,
        shuffle=shuffle,
        mds=_shape("mds", _mds_from_detail(mds_detail, opts.slowdowns)),
        mds_curve=_shape("mds_curve", curve),
        mds_detail=mds_detail,
        hosts=_shape("hosts", _hosts_rows(df)),
        precision=precision,
        aa_benchmarks=x.aa_names,
        settings=opts,
        problems=tuple(problems),
    )
