"""What earlier experiments say about the next one: the priors of a benchmark x method
on one host (docs/history.md, "Priors").

:func:`priors` reads the last ``last`` experiments of a (suite, benchmark, method, host
fingerprint) in a results repository and returns a :class:`Prior`:

- the **spread** of the run values (log B/A per run), pooled over the experiments with
  each experiment's own mean removed: ``s^2 = sum_e sum_r (y_er - mean_e)^2 / df`` with
  ``df = sum_e (n_e - 1)`` (an experiment of one run adds nothing). Removing each mean
  keeps a real change between versions out of the spread. Runs the verdict left out
  (unbalanced, too few pairs) have no value and do not count;
- **machine seconds** per run (repetition) and per measured iteration, and the fixed
  part of a run, from the cost model of each experiment's iterations table
  (:func:`duetbench.analysis.costs.estimate_costs`), averaged with each experiment
  weighted by its runs; the pairs per run likewise; the **warm-up**: the largest
  warm-up detected in any of them (too little warm-up biases, too much only costs);
- the share of runs **left out**: runs measured without a run value, and of them the
  runs marked unbalanced (the iterations table's ``unbalanced`` column);
- the **shape** of the run values, for the stopping rules' guards: their lag-1
  autocorrelation in run order, ``sum (y_r - mean_e)(y_{r-1} - mean_e) / sum (y_r -
  mean_e)^2`` over the successive runs of each experiment with a value (experiments of
  3 or more run values), and their skewness ``m3 / m2^1.5`` of the same deviations
  (docs/adaptive.md, "Assumptions, and how they are checked").

Marks (``duet history mark``) are applied first: an experiment measuring a version
marked ``exclude`` for this benchmark is left out (the user said its numbers do not
count); a version marked ``change`` starts the window afresh -- an experiment all of
whose versions come before the latest such version (in the series' version order) is
left out, since the program's spread and cost may have changed with it. The window is
then the last ``last`` of the remaining experiments, in the order they were added.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis.costs import STAT_FACTOR, CostModel, estimate_costs
from ..errors import AnalysisError
from .model import Mark
from .series import order_versions

if TYPE_CHECKING:
    from .repository import Repository

__all__ = [
    "DEFAULT_LAST",
    "ExperimentPart",
    "Prior",
    "host_priors",
    "method_priors",
    "pool",
    "priors",
    "spread_priors",
]

#: experiments in the window unless the caller says
DEFAULT_LAST = 10


@dataclass(frozen=True)
class ExperimentPart:
    """One experiment's share of a prior: its run values (NaN: left out), the runs it
    measured and of them the unbalanced ones, and its cost model (None: fewer than 2 runs)."""

    experiment_id: int
    values: tuple[float, ...]
    measured: int
    unbalanced: int
    costs: CostModel | None = None


@dataclass(frozen=True)
class Prior:
    """The priors of one benchmark x method on one host (see the module doc). ``sd`` is on
    the log scale of the run values; None where the experiments give no estimate."""

    suite: str
    benchmark: str
    method: str
    host: str  # fingerprint
    experiments: tuple[int, ...]  # the window, oldest first
    runs: int  # run values pooled
    sd: float | None
    df: int
    iterations: float | None  # mean pairs per run
    seconds_per_run: float | None
    seconds_per_iteration: float | None
    seconds_fixed: float | None
    warmup: int | None
    left_out_share: float | None
    unbalanced_share: float | None
    within_runs: float | None = None
    stat_factor: float = STAT_FACTOR["median"]
    skipped: tuple[tuple[int, str], ...] = field(default=())  # (experiment, why left out)
    #: the run values' shape (module doc): lag-1 autocorrelation and skewness over
    #: ``shape_runs`` run values of ``shape_experiments`` experiments (None: too few)
    serial_r: float | None = None
    skew: float | None = None
    shape_runs: int = 0
    shape_experiments: int = 0

    @property
    def usable(self) -> bool:
        """Whether it can plan: a spread with at least 1 degree of freedom and a cost."""
        return self.sd is not None and self.df >= 1 and self.seconds_per_run is not None

    def cost_model(self) -> CostModel:
        """The prior as the cost model planning uses: the run-value variance ``sd^2`` at
        the pairs per run seen, split into between- and within-run parts as
        :func:`~duetbench.analysis.costs.estimate_costs` does."""
        if not self.usable:
            raise AnalysisError(
                f"{self.benchmark} [{self.method}]: the repository has no spread and cost "
                "for it on this host (needs an experiment with at least 2 runs)"
            )
        var = float(self.sd) ** 2  # type: ignore[arg-type]
        i0 = float(self.iterations or 1.0)
        within = float(self.within_runs or 0.0)
        between = max(0.0, var - self.stat_factor * within / i0)
        return CostModel(
            suite=self.suite,
            benchmark=self.benchmark,
            method=self.method,
            runs=self.df + 1,
            iterations=i0,
            run_var=var,
            between_runs=between,
            within_runs=within if between > 0 else var * i0 / self.stat_factor,
            stat_factor=self.stat_factor,
            warmup=int(self.warmup or 0),
            seconds_per_run=float(self.seconds_per_run),  # type: ignore[arg-type]
            seconds_per_iteration=float(self.seconds_per_iteration or 0.0),
            seconds_fixed=float(self.seconds_fixed or 0.0),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "benchmark": self.benchmark,
            "method": self.method,
            "host": self.host,
            "experiments": list(self.experiments),
            "runs": self.runs,
            "sd": self.sd,
            "df": self.df,
            "iterations": self.iterations,
            "seconds_per_run": self.seconds_per_run,
            "seconds_per_iteration": self.seconds_per_iteration,
            "seconds_fixed": self.seconds_fixed,
            "warmup": self.warmup,
            "left_out_share": self.left_out_share,
            "unbalanced_share": self.unbalanced_share,
            "serial_r": self.serial_r,
            "skew": self.skew,
            "shape_runs": self.shape_runs,
            "skipped": [{"experiment": e, "why": w} for e, w in self.skipped],
        }

    def shape(self) -> Any:
        """The stopping rules' :class:`~duetbench.adaptive.guards.ShapePrior` (None:
        fewer than 3 run values in experiments of 3 or more)."""
        from ..adaptive.guards import ShapePrior

        if self.serial_r is None or self.skew is None:
            return None
        return ShapePrior(self.serial_r, self.shape_runs, self.shape_experiments, self.skew)


def pool(
    key: tuple[str, str, str, str],
    parts: Sequence[ExperimentPart],
    skipped: Sequence[tuple[int, str]] = (),
) -> Prior:
    """The prior of ``key`` (suite, benchmark, method, host) from the experiments'
    ``parts`` (the window, oldest first): see the module doc for each number."""
    ss, df, runs = 0.0, 0, 0
    for p in parts:
        y = np.asarray(p.values, dtype=np.float64)
        y = y[np.isfinite(y)]
        runs += len(y)
        if len(y) >= 2:
            ss += float(np.sum((y - y.mean()) ** 2))
            df += len(y) - 1
    costed = [p.costs for p in parts if p.costs is not None]
    weights = np.array([c.runs for c in costed], dtype=np.float64)

    def mean_of(attr: str) -> float | None:
        if not costed:
            return None
        v = np.array([getattr(c, attr) for c in costed], dtype=np.float64)
        return float(np.sum(v * weights) / np.sum(weights))

    measured = sum(p.measured for p in parts)
    shape = _shape(parts)
    return Prior(
        *key,
        experiments=tuple(p.experiment_id for p in parts),
        runs=runs,
        sd=math.sqrt(ss / df) if df else None,
        df=df,
        iterations=mean_of("iterations"),
        seconds_per_run=mean_of("seconds_per_run"),
        seconds_per_iteration=mean_of("seconds_per_iteration"),
        seconds_fixed=mean_of("seconds_fixed"),
        warmup=max(c.warmup for c in costed) if costed else None,
        left_out_share=(measured - runs) / measured if measured else None,
        unbalanced_share=sum(p.unbalanced for p in parts) / measured if measured else None,
        within_runs=mean_of("within_runs"),
        stat_factor=costed[-1].stat_factor if costed else STAT_FACTOR["median"],
        skipped=tuple(skipped),
        **shape,
    )


def _shape(parts: Sequence[ExperimentPart]) -> dict[str, Any]:
    """The run values' lag-1 autocorrelation and skewness (module doc) as Prior fields."""
    lag = sq = cube = 0.0
    runs = experiments = 0
    for p in parts:
        y = np.asarray(p.values, dtype=np.float64)
        ok = np.isfinite(y)
        if ok.sum() < 3:
            continue
        c = np.where(ok, y - y[ok].mean(), np.nan)
        both = ok[1:] & ok[:-1]  # successive runs that both have a value
        lag += float(np.sum((c[1:] * c[:-1])[both]))
        sq += float(np.sum(c[ok] ** 2))
        cube += float(np.sum(c[ok] ** 3))
        runs += int(ok.sum())
        experiments += 1
    if not experiments or not sq > 0:
        return {}
    m2 = sq / runs
    r = min(max(lag / sq, -1.0), 1.0)
    return {
        "serial_r": r,
        "skew": cube / runs / m2**1.5,
        "shape_runs": runs,
        "shape_experiments": experiments,
    }


def priors(
    repo: Repository,
    *,
    benchmark: str | None = None,
    suite: str | None = None,
    method: str | None = None,
    host: str | None = None,
    last: int = DEFAULT_LAST,
) -> list[Prior]:
    """The priors of every (suite, benchmark, method, host fingerprint) the filters
    select (``host``: a fingerprint prefix), each from its last ``last`` experiments
    after the marks (module doc). Sorted by suite, benchmark, method, host."""
    if last < 1:
        raise AnalysisError(f"the window needs at least 1 experiment, got {last}")
    results = repo.results(benchmark=benchmark, suite=suite, method=method, host=host)
    if results.empty:
        return []
    known = {v.label: v for v in repo.versions()}
    marks = repo.marks(benchmark)
    values = repo.run_values()
    tables: dict[int, pd.DataFrame] = {}
    out = []
    for keys, rows in results.groupby(["suite", "benchmark", "method", "host"], sort=True):
        key = tuple(map(str, keys))
        window, skipped = _window(rows, key, known, marks, last)  # type: ignore[arg-type]
        parts = []
        for eid in window:
            if eid not in tables:
                tables[eid] = repo.iterations(eid)
            hosts = {n for n, fp in repo.experiment(eid).hosts if fp == key[3]}
            parts.append(_part(eid, key, values, tables[eid], hosts))  # type: ignore[arg-type]
        out.append(pool(key, parts, skipped))  # type: ignore[arg-type]
    return out


def _window(
    rows: pd.DataFrame,
    key: tuple[str, str, str, str],
    known: dict[str, Any],
    marks: Sequence[Mark],
    last: int,
) -> tuple[list[int], list[tuple[int, str]]]:
    """The experiment ids in the window (oldest first) and those left out, with why."""
    mine = [m for m in marks if m.applies_to(key[0], key[1], key[2], key[3])]
    excluded = {m.version for m in mine if m.kind == "exclude"}
    labels = [*rows["version_a"], *rows["version_b"]]
    order = {v: i for i, v in enumerate(order_versions(labels, known))}
    changes = [m.version for m in mine if m.kind == "change" and m.version in order]
    start = max((order[v] for v in changes), default=None)
    keep: list[int] = []
    skipped: list[tuple[int, str]] = []
    for r in rows.drop_duplicates("experiment_id").itertuples(index=False):
        eid = int(r.experiment_id)
        versions = (str(r.version_a), str(r.version_b))
        bad = [v for v in versions if v in excluded]
        if bad:
            skipped.append((eid, f"measures {bad[0]}, excluded by a mark"))
        elif start is not None and max(order[v] for v in versions) < start:
            at = order_versions(changes, known)[-1]
            skipped.append((eid, f"before {at}, marked as a change"))
        else:
            keep.append(eid)
    keep.sort()
    for eid in keep[:-last]:
        skipped.append((eid, f"older than the last {last}"))
    return keep[-last:], sorted(skipped)


def _part(
    eid: int,
    key: tuple[str, str, str, str],
    values: pd.DataFrame,
    table: pd.DataFrame,
    hosts: set[str],
) -> ExperimentPart:
    suite, bench, method, fp = key
    v = values.loc[
        (values["experiment_id"] == eid)
        & (values["suite"] == suite)
        & (values["benchmark"] == bench)
        & (values["method"] == method)
        & (values["host"] == fp)
    ]
    t = table.loc[
        (table["suite"].astype(str) == suite)
        & (table["benchmark"].astype(str) == bench)
        & (table["method"].astype(str) == method)
        & (table["host"].astype(str).isin(hosts))
    ]
    run_keys = t[["host", "run"]].drop_duplicates()
    measured = len(run_keys)
    unbalanced = 0
    if "unbalanced" in t.columns and measured:
        flags = t.assign(u=t["unbalanced"].fillna(False).astype(bool))
        unbalanced = int(flags.groupby(["host", "run"], observed=True)["u"].any().sum())
    costs = None
    if measured >= 2:
        try:
            costs = estimate_costs(t).get((suite, bench, method))
        except AnalysisError:
            costs = None
    return ExperimentPart(
        eid,
        tuple(float(x) for x in v["value"].to_numpy(dtype=np.float64)),
        measured,
        unbalanced,
        costs,
    )


def host_priors(
    repo: Repository, host: str, last: int = DEFAULT_LAST
) -> dict[tuple[str, str], Prior]:
    """(benchmark, method) -> its :class:`Prior` on the host with fingerprint ``host``
    (exactly), for ``duet run --history``. Only priors with a spread; where several
    suites hold a benchmark of that name, the one with the most runs pooled."""
    out: dict[tuple[str, str], Prior] = {}
    for p in priors(repo, host=host, last=last):
        if p.host != host or p.sd is None or p.df < 1 or not math.isfinite(p.sd):
            continue
        key = (p.benchmark, p.method)
        if key in out and out[key].runs >= p.runs:
            continue
        out[key] = p
    return out


def spread_priors(found: Mapping[tuple[str, str], Prior]) -> dict[tuple[str, str], Any]:
    """The stopping rules' :class:`~duetbench.adaptive.prior_intervals.SpreadPrior` of each prior,
    with the run values' shape for the guards."""
    from ..adaptive.prior_intervals import SpreadPrior

    return {
        k: SpreadPrior(float(p.sd), int(p.df), len(p.experiments), int(p.runs), p.shape())  # type: ignore[arg-type]
        for k, p in found.items()
    }


def method_priors(found: Mapping[tuple[str, str], Prior]) -> dict[tuple[str, str], Any]:
    """``method: auto``'s :class:`~duetbench.adaptive.method_choice.MethodPrior` (spread and machine
    seconds per repetition) of each prior that has both (docs/adaptive.md, "Choosing from
    the repository")."""
    from ..adaptive.method_choice import MethodPrior

    out: dict[tuple[str, str], Any] = {}
    for k, p in found.items():
        sec = p.seconds_per_run
        if p.sd is None or p.df < 1 or sec is None or not (math.isfinite(sec) and sec > 0):
            continue
        out[k] = MethodPrior(float(p.sd), int(p.df), float(sec), int(p.runs))
    return out
