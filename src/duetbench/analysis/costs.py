"""Cost model: variance components, warm-up and machine time per run and iteration.

Per (suite, benchmark, method), from completed runs (a pilot or an earlier results
directory), docs/adaptive.md "Cost model":

* **Variance components** of the log ratio ``l_{r,k} = mu + u_r + e_{r,k}``: between
  runs ``s_r^2 = Var(u)`` and between iterations within a run ``s_i^2 = Var(e)``. A
  run value (run statistic of ``I`` pairs) then has variance ``s_r^2 + kappa s_i^2 / I``
  with ``kappa`` = 1 for the mean and pi/2 for the median (its asymptotic variance
  under normal noise); for the median and trimmed mean ``s_i`` is the pooled
  MAD-based scale (1.4826 MAD), so a few outlying iterations do not inflate it. The
  observed variance of the run values fixes ``s_r^2 = max(0, Var(y) - kappa s_i^2 / I)``.
* **Warm-up**: leading iterations whose mean log duration (over runs and sides) lies
  above the run's steady state (median of its second half) by more than 1 % and
  3 standard errors.
* **Machine time**: per repetition (a duet run holds both sides at once; a seqn
  repetition is two runs, A and B, whose times add up), per measured iteration
  ``c_i`` (the iterations' span divided by their count; the span of a duet counts
  once), and per run ``c_r`` = repetition time - I c_i (start-up, warm-up, teardown).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from duetbench.errors import AnalysisError
from duetbench.schema import Method

from ._table import require_columns
from .paired_runs import KEY, paired_runs

__all__ = ["STAT_FACTOR", "CostModel", "detect_warmup", "estimate_costs", "repetition_seconds"]

#: Variance of the run statistic of I iid pairs, in units of (scale^2 / I).
STAT_FACTOR = {
    "mean": 1.0,
    "median": math.pi / 2.0,
    "trimmed": 1.06,
    "min": 1.0,
    "means": 1.0,
    "auto": math.pi / 2.0,  # the median, unless other work ran beside the duet
}
_MAD = 1.4826
_NS = 1e-9


@dataclass(frozen=True)
class CostModel:
    """What one run of a benchmark and method buys, and what it costs (seconds, log scale)."""

    suite: str
    benchmark: str
    method: str
    runs: int  # repetitions seen
    iterations: float  # mean pairs per run seen (after warm-up)
    run_var: float  # variance of the run values at `iterations`
    between_runs: float  # s_r^2
    within_runs: float  # s_i^2 (scale of a pair's log ratio within a run)
    stat_factor: float  # kappa of the run statistic
    warmup: int  # detected warm-up iterations per run
    seconds_per_run: float  # machine seconds per repetition (seqn: A + B)
    seconds_per_iteration: float  # c_i
    seconds_fixed: float  # c_r

    def value_var(self, iterations: float | None = None) -> float:
        """Predicted variance of one run value with ``iterations`` measured pairs."""
        i = self.iterations if iterations is None else float(iterations)
        return self.between_runs + self.stat_factor * self.within_runs / i

    def run_seconds(self, iterations: float | None = None) -> float:
        """Predicted machine seconds of one repetition with ``iterations`` measured pairs."""
        i = self.iterations if iterations is None else float(iterations)
        return self.seconds_fixed + i * self.seconds_per_iteration

    @property
    def variance_per_second(self) -> float:
        """Variance of the mean after one machine-second (lower is better)."""
        return self.run_var * self.seconds_per_run

    @property
    def half_width_per_hour(self) -> float:
        """Relative half-width of a 95 % normal interval after one machine-hour."""
        return math.expm1(1.959964 * math.sqrt(self.variance_per_second / 3600.0))


def detect_warmup(df: pd.DataFrame, by: Sequence[str] = KEY) -> dict[tuple[object, ...], int]:
    """Warm-up iterations per group: leading indices slower than the steady state."""
    require_columns(df, [*by, "run", "pair", "iteration", "duration_ns"], "warm-up detection")
    d = df[[*by, "run", "pair", "iteration", "duration_ns"]].copy()
    d = d.loc[d["duration_ns"].to_numpy() > 0]
    d["logd"] = np.log(d["duration_ns"].to_numpy(dtype=np.float64))
    series = [*by, "run", "pair"]
    n_it = d.groupby(series, observed=True)["iteration"].transform("max") + 1
    steady = d.loc[d["iteration"] >= n_it // 2].groupby(series, observed=True)["logd"].median()
    d = d.join(steady.rename("steady"), on=series)
    d["excess"] = d["logd"] - d["steady"]
    first_half = d.loc[d["iteration"] < n_it // 2]
    st = first_half.groupby([*by, "iteration"], observed=True)["excess"].agg(
        ["mean", "std", "count"]
    )
    se = st["std"].fillna(np.inf) / np.sqrt(st["count"])
    slow = st.loc[((st["mean"] > 0.01) & (st["mean"] > 3.0 * se)).to_numpy()].reset_index()
    last_slow = slow.groupby(list(by), observed=True)["iteration"].max()
    out: dict[tuple[object, ...], int] = {}
    for key in d.groupby(list(by), observed=True).size().index:
        k = key if isinstance(key, tuple) else (key,)
        out[k] = int(last_slow.get(key, -1)) + 1
    return out


def repetition_seconds(
    df: pd.DataFrame, runs: pd.DataFrame | None = None, by: Sequence[str] = KEY
) -> pd.DataFrame:
    """Machine seconds per repetition and its measured span per iteration.

    ``runs``: run records with ``benchmark, method, run, start_ns, end_ns`` (and
    ``suite``) -- one row per run.json (a seqn repetition has two); without it the
    table's ``proc_start_ns``/``proc_end_ns`` are used, else the iterations' span.
    Returns ``by + run, seconds, span_seconds, iterations``.
    """
    require_columns(df, [*by, "run", "pair", "start_ns", "end_ns"], "the cost model")
    side = df.groupby([*by, "run", "pair"], observed=True).agg(
        first=("start_ns", "min"),
        last=("end_ns", "max"),
        iterations=("start_ns", "size"),
        **(
            {"p0": ("proc_start_ns", "min"), "p1": ("proc_end_ns", "max")}
            if {"proc_start_ns", "proc_end_ns"} <= set(df.columns)
            else {}
        ),
    )
    side = side.reset_index()
    seqn = side["method"].astype(str).to_numpy() == Method.SEQN.value
    keys = [*by, "run"]

    def per_rep(start: str, end: str) -> pd.Series:
        spans = (side[end] - side[start]).astype(np.float64) * _NS
        add = pd.DataFrame({k: side[k] for k in keys}).assign(v=np.where(seqn, spans, 0.0))
        total = add.groupby(keys, observed=True)["v"].sum()
        duet = side.loc[~seqn].groupby(keys, observed=True).agg(s=(start, "min"), e=(end, "max"))
        span = (duet["e"] - duet["s"]).astype(np.float64) * _NS
        return total.add(span, fill_value=0.0)

    out = pd.DataFrame({"span_seconds": per_rep("first", "last")})
    out["iterations"] = side.groupby(keys, observed=True)["iterations"].max()
    if runs is not None:
        require_columns(runs, ["benchmark", "method", "run", "start_ns", "end_ns"], "run records")
        r = runs.copy()
        rk = [k for k in keys if k in r.columns]
        r["v"] = (r["end_ns"] - r["start_ns"]).astype(np.float64) * _NS
        secs = r.groupby(rk, observed=True)["v"].sum()
        out = out.join(secs.rename("seconds"), on=rk)
    elif "p0" in side.columns and side["p0"].notna().all():
        out["seconds"] = per_rep("p0", "p1")
    else:
        out["seconds"] = out["span_seconds"]
    out["seconds"] = out["seconds"].fillna(out["span_seconds"])
    return out.reset_index()


def _within_scale(log_ratio: np.ndarray, pair_run: np.ndarray, robust: bool) -> float:
    """Pooled within-run variance of the pair log ratios (robust: MAD-based)."""
    frame = pd.DataFrame({"r": pair_run, "x": log_ratio})
    if robust:
        med = frame.groupby("r")["x"].transform("median")
        mad = (frame["x"] - med).abs().groupby(frame["r"]).median() * _MAD
        return float(np.mean(mad.to_numpy() ** 2))
    g = frame.groupby("r")["x"]
    var, cnt = g.var(ddof=1), g.size()
    ok = cnt > 1
    return float((var[ok] * (cnt[ok] - 1)).sum() / max((cnt[ok] - 1).sum(), 1))


def estimate_costs(
    df: pd.DataFrame,
    runs: pd.DataFrame | None = None,
    *,
    run_stat: str = "median",
    warmup: int | str | None = None,
    min_overlap: float = 0.4,
) -> dict[tuple[str, str, str], CostModel]:
    """A :class:`CostModel` per (suite, benchmark, method) with at least 2 runs.

    ``warmup``: iterations to drop per run before the variance components (None: the
    rows the table marks ``warmup``, else the detected warm-up of each group).
    """
    if len(df) == 0:
        raise AnalysisError("the cost model needs completed runs; the table is empty")
    detected = detect_warmup(df)
    secs = repetition_seconds(df, runs).set_index([*KEY, "run"])
    models: dict[tuple[str, str, str], CostModel] = {}
    for key, w in detected.items():
        sel = (df[list(KEY)] == pd.Series(key, index=list(KEY))).all(axis=1).to_numpy()
        part = df.loc[sel]
        # None: the rows the table marks as warm-up (the config's), as `duet compare` drops
        drop: int | str | None = (
            warmup if warmup is not None else (None if "warmup" in df.columns else w)
        )
        pr = paired_runs(
            part, run_stat=run_stat, warmup=drop, min_overlap=min_overlap, min_run_pairs=0
        )
        if len(pr.runs) < 2:
            continue
        y = pr.runs["value"].to_numpy()
        i0 = float(np.mean(pr.runs["pairs"].to_numpy()))
        kappa = STAT_FACTOR[run_stat]
        s_i2 = _within_scale(pr.log_ratio, pr.pair_run, robust=run_stat != "mean")
        v0 = float(np.var(y, ddof=1))
        s_r2 = max(0.0, v0 - kappa * s_i2 / i0)
        rep = secs.loc[key]
        per_it = float(np.median(rep["span_seconds"] / rep["iterations"]))
        per_run = float(np.median(rep["seconds"]))
        models[key] = CostModel(  # type: ignore[index]
            suite=str(key[0]),
            benchmark=str(key[1]),
            method=str(key[2]),
            runs=len(y),
            iterations=i0,
            run_var=v0,
            between_runs=s_r2,
            within_runs=s_i2,
            stat_factor=kappa,
            warmup=w,
            seconds_per_run=per_run,
            seconds_per_iteration=per_it,
            seconds_fixed=max(0.0, per_run - i0 * per_it),
        )
    return models


def precision_per_second(df: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Observed precision per machine-second of every (suite, benchmark, method) with at
    least 2 runs: runs, machine seconds per repetition, spread of the run values and the
    relative half-width of a 95 % interval after one machine-hour at that rate (`duet
    evaluate`'s ``precision`` table; lower is better)."""
    rows = []
    for (suite, bench, method), m in sorted(estimate_costs(df, runs).items()):
        per_hour = math.expm1(1.959964 * math.sqrt(m.variance_per_second / 3600.0))
        rows.append(
            {
                "suite": suite,
                "benchmark": bench,
                "method": method,
                "runs": int(m.runs),
                "seconds_per_run": float(m.seconds_per_run),
                "run_sd": math.sqrt(m.run_var),
                "half_width_per_hour": per_hour,
            }
        )
    return pd.DataFrame(rows)
