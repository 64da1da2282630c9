"""``duet evaluate`` as a library: the thesis's evaluation (ch. 5, RQ1-RQ4) of an experiment.

:func:`evaluate` turns an iterations table into an :class:`Evaluation`, a dataclass
of DataFrames, one per table or figure (METHODS.md section 6):

=================  ==========================================================
``verdicts``       the verdict table of ``duet compare`` (same options)
``speedup``        RQ1: runtime speedup of aduet/sduet over seqn (eq. 5.1)
``overlap``        RQ2: relative overlap time of aduet runs per minimum overlap m (eq. 5.2)
``cv``             RQ3: coefficient of variation per side (4.3.1)
``tests``          RQ3: change, CI and relative CI width of every test (ratio, diff, U)
``aa``             RQ3: A/A experiments, share of benchmarks judged ``same`` (fig. 5.6, 5.7)
``aa_by_overlap``  RQ3: the same for aduet as a function of m (fig. 5.4)
``shuffle``        duet paper RQ2: CI width after re-pairing runs at random
``mds``            RQ4: minimal detectable slowdown of every benchmark (4.4)
``mds_curve``      RQ4: share of benchmarks detected slower per slowdown s (fig. 5.8, 5.9)
``mds_detail``     RQ4: every benchmark, test and s
``hosts``          the host configuration columns of the table
=================  ==========================================================

Everything is grouped per host (the thesis's environments), suite, benchmark and
method. The columns are listed in :data:`TABLE_COLUMNS`; ``docs/evaluate.md``
explains each table and the JSON document (:func:`to_json_doc`, :data:`JSON_SCHEMA`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .. import __version__
from ..analysis import (
    compare,
    compare_tests,
    cv,
    drop_warmup,
    relative_overlap_time,
    runtime_speedup,
    shuffle_check,
    slow_down,
)
from ..analysis.evaluation import DEFAULT_SLOWDOWNS
from ..errors import AnalysisError, DuetError
from .formatting import num

if TYPE_CHECKING:
    from .compare_cli import Loaded

SCHEMA_ID = "duetbench.evaluate/1"

#: Grouping of per-benchmark results: one row per host, suite, benchmark and method.
KEYS = ("host", "suite", "benchmark", "method")
BENCH_KEYS = ("host", "suite", "benchmark")
#: Tests with a confidence interval (METHODS 5.1, 5.2), and all tests reported: the U
#: test of run values (calibrated) and the thesis's pooled U test (not calibrated).
CI_TESTS = ("ratio", "diff")
U_TESTS = ("utest", "utest-pooled")
TESTS = (*CI_TESTS, *U_TESTS)
#: The minimum overlap ratios of fig. 5.2 / 5.4: 0, 0.1, ..., 0.9.
DEFAULT_MIN_OVERLAPS = tuple(float(x) for x in np.round(np.arange(10) / 10, 10))

S, N, INT, B = "string", "number", "integer", "boolean"
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
        "p_value": N,
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
        "host": S,
        "suite": S,
        "benchmark": S,
        "method": S,
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
        "host": S,
        "suite": S,
        "benchmark": S,
        "method": S,
        "pair": S,
        "iterations": INT,
        "mean_ns": N,
        "std_ns": N,
        "cv": N,
    },
    "tests": {
        "host": S,
        "suite": S,
        "benchmark": S,
        "method": S,
        "test": S,
        "aa": B,
        "change": N,
        "ci_low": N,
        "ci_high": N,
        "ci_width": N,
        "p_value": N,
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
        "benchmarks": INT,
        "same": INT,
        "slower": INT,
        "faster": INT,
        "share_same": N,
    },
    "aa_by_overlap": {
        "host": S,
        "suite": S,
        "method": S,
        "test": S,
        "min_overlap": N,
        "benchmarks": INT,
        "same": INT,
        "slower": INT,
        "faster": INT,
        "share_same": N,
    },
    "shuffle": {
        "host": S,
        "suite": S,
        "benchmark": S,
        "method": S,
        "test": S,
        "runs": INT,
        "width_paired": N,
        "width_shuffled": N,
        "width_ratio": N,
    },
    "mds": {
        "host": S,
        "suite": S,
        "benchmark": S,
        "method": S,
        "test": S,
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
        "slower": INT,
        "share_slower": N,
        "share_same": N,
    },
    "mds_detail": {
        "host": S,
        "suite": S,
        "benchmark": S,
        "method": S,
        "test": S,
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
    #: names of the benchmarks treated as A/A experiments
    aa_benchmarks: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
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


def parse_grid(text: str, *, percent: bool, what: str) -> tuple[float, ...]:
    """``'0:15:1'`` (start:stop:step, stop included) or ``'0,1,2,5'`` -> sorted values.

    With ``percent`` the numbers are percentages (``5`` = 0.05).
    """
    t = text.strip().replace("%", "")
    scale = 0.01 if percent else 1.0
    try:
        if ":" in t:
            parts = [float(p) for p in t.split(":")]
            if len(parts) == 2:
                parts.append(1.0 if percent else 0.1)
            if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
                raise ValueError
            n = int(np.floor((parts[1] - parts[0]) / parts[2] + 1e-9)) + 1
            vals = [parts[0] + i * parts[2] for i in range(n)]
        else:
            vals = [float(p) for p in t.split(",") if p.strip()]
    except ValueError:
        raise DuetError(
            f"{what} {text!r}: give start:stop:step (stop included) or a list a,b,c"
        ) from None
    if not vals:
        raise DuetError(f"{what} {text!r}: no values")
    return tuple(sorted({round(v * scale, 10) for v in vals}))


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
    "host",
    "suite",
    "benchmark",
    "method",
    "run",
    "pair",
    "order",
    "iteration",
    "start_ns",
    "end_ns",
    "duration_ns",
    "synthetic_ts",
    "warmup",
    "proc_start_ns",
    "proc_end_ns",
)
_KEY_TEXT = ("experiment", "host", "suite", "benchmark", "method", "pair", "order")


def _slim(df: pd.DataFrame) -> pd.DataFrame:
    """The used columns, text keys as categoricals (the analysis factorizes them fast)."""
    out = df[[c for c in _USED if c in df.columns]].copy()
    for c in _KEY_TEXT:
        if c in out.columns and not isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(str).astype("category")
    return out


def _prepared(df: pd.DataFrame, warmup: int | str | None) -> tuple[pd.DataFrame, int | str]:
    """Drop the config's warm-up rows (``warmup=None``) or keep all and return ``warmup``."""
    if warmup is None:
        if "warmup" in df.columns:
            df = df.loc[~df["warmup"].fillna(False).astype(bool).to_numpy()]
        return df, 0
    return df, warmup


def _tests_rows(
    df: pd.DataFrame,
    copts: dict[str, Any],
    aa: Sequence[str],
    by: Sequence[str] = KEYS,
) -> pd.DataFrame:
    """Rows of every CI test and of the U tests, per host, suite, benchmark, method.

    The U tests' rows have no interval (``compare`` gives them the ratio test's)."""
    out = compare_tests(df, TESTS, by=by, **copts)
    out.loc[out["test"].isin(U_TESTS), ["ci_low", "ci_high", "ci_width"]] = np.nan
    out["aa"] = out["benchmark"].astype(str).isin(set(aa))
    return out


def _verdict_counts(rows: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    """Benchmarks with a verdict, how many are same/slower/faster, share judged same."""
    r = rows.loc[rows["verdict"] != "no data"].copy()
    if r.empty:
        return pd.DataFrame(columns=[*group, "benchmarks", "same", "slower", "faster"])
    v = r["verdict"].astype(str)
    r["_same"] = v.str.startswith("same").astype(np.int64)
    r["_slower"] = (v == "slower").astype(np.int64)
    r["_faster"] = (v == "faster").astype(np.int64)
    g = r.groupby(group, sort=True, dropna=False, observed=True)
    out = g.agg(
        benchmarks=("verdict", "size"),
        same=("_same", "sum"),
        slower=("_slower", "sum"),
        faster=("_faster", "sum"),
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
        detail.assign(_d=(detail["verdict"] == "slower"))
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


def evaluate(
    df: pd.DataFrame,
    *,
    aa: bool | Iterable[str] | None = None,
    slowdowns: npt.ArrayLike = DEFAULT_SLOWDOWNS,
    min_overlaps: npt.ArrayLike = DEFAULT_MIN_OVERLAPS,
    test: str = "ratio",
    interval: str = "t",
    confidence: float = 0.95,
    resamples: int = 9999,
    threshold: float = 0.0,
    min_overlap: float = 0.4,
    overlap_rate: str = "shorter",
    min_run_pairs: float = 0.25,
    run_stat: str = "median",
    warmup: int | str | None = None,
    winsorize: bool = False,
    seed: int = 0,
    cluster_by: str | None = None,
    shuffles: int = 10,
    span: str = "process",
) -> Evaluation:
    """Evaluate an experiment (thesis ch. 5, duet paper sec. 4; METHODS.md section 6).

    ``df`` is an iterations table (``duetbench.load``). ``aa``: which benchmarks are
    A/A experiments -- ``None`` reads the table's boolean ``aa`` column (added by
    :func:`load_for_evaluation` from the plan), ``True`` all, ``False`` none, or an
    iterable of benchmark names. ``slowdowns`` (fractions, default 0, 0.01, ..., 0.15)
    are the s of the MDS; ``min_overlaps`` (default 0, 0.1, ..., 0.9) the m of the
    overlap and A/A-vs-m tables. ``warmup``: ``None`` drops the iterations the
    config marked (column ``warmup``), a number or ``"half"`` drops that many per
    run and side instead. ``span``: ``process`` or ``iterations`` for the speedup.
    ``test`` drives the ``verdicts`` table (``ratio``, ``diff``, ``utest`` or
    ``utest-pooled``, as ``duet compare --test``); the ``tests`` table has rows of
    every test. The other options are those of
    :func:`duetbench.analysis.compare`. Random draws come from ``seed``.
    """
    if not isinstance(df, pd.DataFrame):
        raise AnalysisError("evaluate expects an iterations table (a pandas DataFrame)")
    if df.empty:
        raise DuetError("the iterations table is empty: nothing to evaluate")
    if test not in TESTS:
        raise DuetError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    s_grid = tuple(sorted({float(x) for x in np.asarray(slowdowns, dtype=np.float64).ravel()}))
    m_grid = tuple(sorted({float(x) for x in np.asarray(min_overlaps, dtype=np.float64).ravel()}))
    if not s_grid or any(s < 0 for s in s_grid):
        raise DuetError("slowdowns must be non-negative fractions, e.g. 0, 0.01, ..., 0.15")
    if not m_grid or any(not 0 <= m < 1 for m in m_grid):
        raise DuetError("minimum overlap ratios must lie in [0, 1), e.g. 0.1, ..., 0.9")
    if isinstance(shuffles, bool) or int(shuffles) < 1:
        raise DuetError("shuffles must be a positive integer")
    aa_names = _aa_names(df, aa)
    base = _slim(df)
    prep, w = _prepared(base, warmup)
    if prep.empty:
        raise DuetError("every iteration is marked as warm-up: nothing to evaluate")
    copts: dict[str, Any] = dict(
        interval=interval,
        confidence=confidence,
        resamples=resamples,
        threshold=threshold,
        min_overlap=min_overlap,
        overlap_rate=overlap_rate,
        min_run_pairs=min_run_pairs,
        run_stat=run_stat,
        warmup=w,
        winsorize=winsorize,
        seed=seed,
    )
    problems: list[str] = []

    # the verdict table of `duet compare` (default grouping, host clustering when needed)
    verdicts = _shape("verdicts", compare(prep, test=test, cluster_by=cluster_by, **copts))

    tests = _shape("tests", _tests_rows(prep, copts, aa_names))
    is_aa = tests["aa"].to_numpy(dtype=bool)
    aa_tab = _shape("aa", _verdict_counts(tests.loc[is_aa], ["host", "suite", "method", "test"]))

    speedup = _guard(
        "speedup",
        problems,
        lambda: runtime_speedup(base, span=span, by=BENCH_KEYS),  # type: ignore[arg-type]
    )
    cv_tab = _guard("cv", problems, lambda: cv(prep, warmup=w, winsorize=winsorize, by=KEYS))

    aduet = prep.loc[(prep["method"].astype(str) == "aduet").to_numpy()]

    def overlap_rows() -> pd.DataFrame:
        if aduet.empty:
            return _empty("overlap")
        src = drop_warmup(aduet, w) if w else aduet
        frames = []
        for m in m_grid:
            r = relative_overlap_time(src, m, by=BENCH_KEYS, overlap_rate=overlap_rate)
            r.insert(len(BENCH_KEYS), "min_overlap", m)
            frames.append(r)
        return pd.concat(frames, ignore_index=True)

    overlap = _guard("overlap", problems, overlap_rows)

    def aa_overlap_rows() -> pd.DataFrame:
        sub = aduet.loc[aduet["benchmark"].astype(str).isin(set(aa_names)).to_numpy()]
        if sub.empty:
            return _empty("aa_by_overlap")
        frames = []
        for m in m_grid:
            r = compare_tests(sub, CI_TESTS, by=KEYS, **{**copts, "min_overlap": m})
            r["min_overlap"] = m
            frames.append(r)
        rows = pd.concat(frames, ignore_index=True)
        return _verdict_counts(rows, ["host", "suite", "method", "test", "min_overlap"])

    aa_by_overlap = _guard("aa_by_overlap", problems, aa_overlap_rows)

    def shuffle_rows() -> pd.DataFrame:
        frames = []
        for t in CI_TESTS:
            r = shuffle_check(
                prep,
                test=t,
                interval=interval,
                confidence=confidence,
                resamples=resamples,
                run_stat=run_stat,
                min_overlap=min_overlap,
                overlap_rate=overlap_rate,
                min_run_pairs=min_run_pairs,
                warmup=w,
                winsorize=winsorize,
                seed=seed,
                shuffles=int(shuffles),
                by=KEYS,
            ).copy()
            r["test"] = t
            frames.append(r)
        return pd.concat(frames, ignore_index=True)

    shuffle = _guard("shuffle", problems, shuffle_rows)

    def mds_detail_rows() -> pd.DataFrame:
        # every s slows down the raw table (warm-up included: a slower B is slower there
        # too, and its timeline shifts); the slowed tables are stacked and compared at once
        frames = []
        for s in s_grid:
            slowed, _ = _prepared(slow_down(base, s), warmup)
            frames.append(slowed.assign(slowdown=s))
        stacked = pd.concat(frames, ignore_index=True)
        return _tests_rows(stacked, copts, aa_names, by=(*KEYS, "slowdown"))

    mds_detail = _guard("mds_detail", problems, mds_detail_rows)
    mds = _shape("mds", _mds_from_detail(mds_detail, s_grid))
    curve = _verdict_counts(mds_detail, ["host", "suite", "aa", "method", "test", "slowdown"])
    if not curve.empty:
        curve["share_slower"] = curve["slower"] / curve["benchmarks"]
    mds_curve = _shape("mds_curve", curve)

    host_cols = [c for c in df.columns if c.startswith(("host_", "artifact_"))]
    hosts = _shape(
        "hosts",
        df[["host", *host_cols]].drop_duplicates("host").sort_values("host")
        if "host" in df.columns
        else pd.DataFrame(),
    )
    settings = {
        "test": test,
        "interval": interval,
        "confidence": float(confidence),
        "resamples": int(resamples),
        "threshold": float(threshold),
        "min_overlap": float(min_overlap),
        "overlap_rate": overlap_rate,
        "min_run_pairs": float(min_run_pairs),
        "run_stat": run_stat,
        "warmup": "config" if warmup is None else warmup,
        "winsorize": bool(winsorize),
        "seed": int(seed),
        "cluster_by": cluster_by,
        "shuffles": int(shuffles),
        "span": span,
        "slowdowns": list(s_grid),
        "min_overlaps": list(m_grid),
    }
    return Evaluation(
        verdicts=verdicts,
        speedup=speedup,
        overlap=overlap,
        cv=cv_tab,
        tests=tests,
        aa=aa_tab,
        aa_by_overlap=aa_by_overlap,
        shuffle=shuffle,
        mds=mds,
        mds_curve=mds_curve,
        mds_detail=mds_detail,
        hosts=hosts,
        aa_benchmarks=aa_names,
        settings=settings,
        problems=tuple(problems),
    )


# ---------------------------------------------------------------------- input


def aa_from_plan(root: str | Path) -> dict[str, bool]:
    """``run_id -> aa`` from a results directory's plan (experiment.json), else run.json."""
    from ..store import ResultsStore

    store = ResultsStore.open(Path(root))
    out = {str(spec["run_id"]): bool(spec.get("aa", False)) for spec in store.plan()}
    for rid, run in store.runs():
        if rid not in out and run is not None:
            out[rid] = bool(run.spec.get("aa", False))
    return out


def load_for_evaluation(path: str | Path) -> Loaded:
    """``compare_cli.load_input`` plus a boolean ``aa`` column from a results directory's plan."""
    from .compare_cli import load_input

    loaded = load_input(Path(path))
    df = loaded.table
    if Path(path).is_dir() and "run_id" in df.columns and len(df):
        flags = aa_from_plan(path)
        df = df.copy()
        df["aa"] = df["run_id"].astype(str).map(flags).fillna(False).astype(bool)
        loaded.table = df
    return loaded


# ---------------------------------------------------------------------- JSON


def _jsonable(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return num(v)
    if isinstance(v, str):
        return v
    if v is pd.NA or v is pd.NaT:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return str(v)


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN -> None, numpy scalars -> Python."""
    cols = list(df.columns)
    return [
        {c: _jsonable(v) for c, v in zip(cols, row, strict=True)}
        for row in df.itertuples(index=False, name=None)
    ]


def to_json_doc(
    ev: Evaluation,
    *,
    source: str = "",
    experiment: str | None = None,
    problems: Sequence[str] = (),
    excluded: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``duet evaluate --format json`` document (schema :data:`JSON_SCHEMA`)."""
    return {
        "schema": SCHEMA_ID,
        "tool": "duetbench",
        "version": __version__,
        "source": source,
        "experiment": experiment,
        "settings": ev.settings,
        "aa_benchmarks": list(ev.aa_benchmarks),
        "tables": {name: records(t) for name, t in ev.tables().items()},
        "problems": [*problems, *ev.problems],
        "excluded": excluded or {},
    }


def _row_schema(cols: dict[str, str], extra: bool) -> dict[str, Any]:
    props = {c: {"type": [t, "null"] if t in (N, S) else t} for c, t in cols.items()}
    return {
        "type": "object",
        "required": list(cols),
        "properties": props,
        "additionalProperties": extra,
    }


#: JSON Schema (draft 2020-12) of :func:`to_json_doc`'s document.
JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://duetbench.invalid/schemas/evaluate-1.json",
    "title": "duet evaluate --format json",
    "type": "object",
    "required": ["schema", "tool", "version", "source", "settings", "aa_benchmarks", "tables"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "tool": {"const": "duetbench"},
        "version": {"type": "string"},
        "source": {"type": "string"},
        "experiment": {"type": ["string", "null"]},
        "settings": {
            "type": "object",
            "required": ["test", "confidence", "min_overlap", "slowdowns", "min_overlaps"],
        },
        "aa_benchmarks": {"type": "array", "items": {"type": "string"}},
        "tables": {
            "type": "object",
            "required": list(TABLES),
            "properties": {
                name: {"type": "array", "items": _row_schema(cols, name == "hosts")}
                for name, cols in TABLE_COLUMNS.items()
            },
            "additionalProperties": False,
        },
        "problems": {"type": "array", "items": {"type": "string"}},
        "excluded": {"type": "object"},
    },
}
