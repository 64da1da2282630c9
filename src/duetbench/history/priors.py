"""What earlier experiments say about the next one: the priors of a benchmark x method
on one host (docs/history.md, "Priors").

:func:`priors` reads the last ``last`` experiments of a (suite, benchmark, method, host
fingerprint) in a results repository and returns its :class:`~duetbench.adaptive.prior.Prior`
(the one prior every use takes: the stopping rule, ``method: auto``, `duet plan`):

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pandas as pd

from ..adaptive.guards import ShapePrior
from ..adaptive.prior import Prior
from ..analysis.costs import STAT_FACTOR, CostModel, estimate_costs
from ..errors import AnalysisError
from .model import Mark
from .series import order_versions

if TYPE_CHECKING:
    from .repository import Filters, Repository

__all__ = ["DEFAULT_LAST", "ExperimentPart", "Prior", "host_priors", "pool", "priors"]

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
    per_run = mean_of("seconds_per_run")
    suite, benchmark, method, host = key
    return Prior(
        sd=math.sqrt(ss / df) if df else None,
        df=df,
        runs=runs,
        experiments=len(parts),
        shape=_shape(parts),
        seconds_per_run=per_run if per_run is not None and per_run > 0 else None,
        suite=suite,
        benchmark=benchmark,
        method=method,
        host=host,
        window=tuple(p.experiment_id for p in parts),
        iterations=mean_of("iterations"),
        seconds_per_iteration=mean_of("seconds_per_iteration"),
        seconds_fixed=mean_of("seconds_fixed"),
        warmup=max(c.warmup for c in costed) if costed else None,
        left_out_share=(measured - runs) / measured if measured else None,
        unbalanced_share=sum(p.unbalanced for p in parts) / measured if measured else None,
        within_runs=mean_of("within_runs"),
        stat_factor=costed[-1].stat_factor if costed else STAT_FACTOR["median"],
        skipped=tuple(skipped),
    )


def _shape(parts: Sequence[ExperimentPart]) -> ShapePrior | None:
    """The run values' lag-1 autocorrelation and skewness (module doc); None: no
    experiment with 3 run values."""
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
        return None
    m2 = sq / runs
    r = min(max(lag / sq, -1.0), 1.0)
    return ShapePrior(r, runs, experiments, cube / runs / m2**1.5)


def priors(
    repo: Repository, *, last: int = DEFAULT_LAST, **filters: Unpack[Filters]
) -> list[Prior]:
    """The priors of every (suite, benchmark, method, host fingerprint) the filters
    select (:class:`Filters`), each from its last ``last`` experiments after the marks
    (module doc). Sorted by suite, benchmark, method, host."""
    if last < 1:
        raise AnalysisError(f"the window needs at least 1 experiment, got {last}")
    results = repo.results(**filters)
    if results.empty:
        return []
    known = {v.label: v for v in repo.versions()}
    marks = repo.marks(filters.get("benchmark"))
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
    (exactly), for the stopping rules and method auto of ``duet run --repo``, ``duet
    gate`` and ``duet bisect``. Only priors with a spread; where several suites hold a
    benchmark of that name, the one with the most runs pooled."""
    out: dict[tuple[str, str], Prior] = {}
    for p in priors(repo, host=host, last=last):
        if p.host != host or not p.has_spread:
            continue
        key = (p.benchmark, p.method)
        if key in out and out[key].runs >= p.runs:
            continue
        out[key] = p
    return out
