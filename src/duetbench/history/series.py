"""Per-version series: the paired series first, the absolute series second.

For every (suite, benchmark, host fingerprint, method):

- **paired**: one :class:`Step` per pair of adjacent versions that some experiment
  compared directly (A = the older, B = the newer): the log ratio of B to A from the
  experiment's run-level values, with its standard error. The duet puts both versions
  on the machine at the same moment, so the machine's drift between experiments
  cancels; chaining the steps gives each version's level relative to the first one.
- **absolute**: one :class:`Level` per version, the log of its median iteration time
  averaged over every experiment that measured it. Experiments run at different
  times, so this series carries the machine's drift; it fills gaps where no direct
  comparison exists, and is what a plot of times shows.

Versions are ordered by commit date when every version of the series has one,
else in the order the repository first saw them (docs/history.md, "Series").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Unpack

import numpy as np
import pandas as pd

from ..schema import Verdict
from .repository import Filters, Mark, Repository, StoredVersion


@dataclass(frozen=True, order=True)
class SeriesKey:
    suite: str
    benchmark: str
    host: str  # fingerprint
    method: str

    def __str__(self) -> str:
        return f"{self.suite}/{self.benchmark} [{self.method}, host {self.host[:8]}]"

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Evidence:
    """What one experiment itself concluded about a step (schema 3): its verdict and the
    interval it rests on, as log ratios of B to A. ``basis``: ``rule`` (an adaptive
    experiment's stopping rule, ``stop`` why it stopped) or ``fixed`` (a fixed-n verdict)."""

    basis: str
    verdict: str
    log_low: float
    log_high: float
    confidence: float
    threshold: float
    experiment: int
    stop: str | None = None
    log_estimate: float | None = None  # the verdict's own estimate (None: the centre)

    def negated(self) -> Evidence:
        """The same evidence for the sides the other way round."""
        flip = {Verdict.SLOWER: Verdict.FASTER, Verdict.FASTER: Verdict.SLOWER}
        return replace(
            self,
            verdict=flip.get(self.verdict, self.verdict),
            log_low=-self.log_high,
            log_high=-self.log_low,
            log_estimate=None if self.log_estimate is None else -self.log_estimate,
        )

    @property
    def estimate(self) -> float:
        """The log ratio the verdict states (the interval's centre when none is stored)."""
        if self.log_estimate is not None and np.isfinite(self.log_estimate):
            return self.log_estimate
        return (self.log_low + self.log_high) / 2

    def to_json(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "verdict": self.verdict,
            "low": float(np.expm1(self.log_low)),
            "high": float(np.expm1(self.log_high)),
            "confidence": self.confidence,
            "threshold": self.threshold,
            "experiment": self.experiment,
            "stop": self.stop,
        }


def evidence_of(row: Any) -> Evidence | None:
    """A results row's own evidence (a row of :meth:`Repository.results`), or None: added
    before schema 3, imported, or without a finite interval."""
    basis = getattr(row, "basis", None)
    if basis not in ("rule", "fixed"):
        return None
    try:
        low, high = float(row.ci_low), float(row.ci_high)
        conf, thr = float(row.confidence), float(row.threshold or 0.0)
    except (TypeError, ValueError):
        return None
    if not (np.isfinite(low) and np.isfinite(high) and low > -1 and 0 < conf < 1):
        return None
    stop = getattr(row, "stop_reason", None)
    try:
        change = float(row.change)
    except (TypeError, ValueError):
        change = float("nan")
    return Evidence(
        str(basis),
        str(row.verdict),
        float(np.log1p(low)),
        float(np.log1p(high)),
        conf,
        thr if np.isfinite(thr) else 0.0,
        int(row.experiment_id),
        stop if isinstance(stop, str) and stop else None,
        float(np.log1p(change)) if np.isfinite(change) and change > -1 else None,
    )


@dataclass(frozen=True)
class Step:
    """The direct comparison of ``before`` (A) with ``after`` (B): log(B / A) and its
    standard error; ``experiments`` combined by inverse-variance weights."""

    before: str
    after: str
    log_ratio: float
    se: float
    runs: int
    experiments: tuple[int, ...]
    verdicts: tuple[str, ...] = ()
    #: the experiment's own verdict and interval when the step is one experiment's that
    #: carries them (schema 3); change detection accepts a step on it
    evidence: Evidence | None = None

    @property
    def change(self) -> float:
        return float(np.expm1(self.log_ratio))


@dataclass(frozen=True)
class Level:
    """A version's absolute level: mean log(median ns) over the experiments that measured
    it, and its standard error (between experiments when there are several)."""

    version: str
    log_ns: float
    se: float
    experiments: tuple[int, ...]

    @property
    def ns(self) -> float:
        return float(np.exp(self.log_ns))


@dataclass(frozen=True)
class ChainPoint:
    """A version on the paired chain: its level relative to the first version of the chain."""

    version: str
    chain: int  # chains break where adjacent versions were never compared directly
    log_level: float
    se: float

    @property
    def relative(self) -> float:
        return float(np.expm1(self.log_level))


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    versions: tuple[str, ...]  # in series order (excluded versions left out)
    steps: tuple[Step, ...]  # the paired series
    levels: tuple[Level, ...]  # the absolute series
    excluded: tuple[str, ...] = ()
    commits: Mapping[str, tuple[str | None, int | None]] = field(default_factory=dict)

    def chain(self) -> list[ChainPoint]:
        """The paired series as levels: steps summed along chains of direct comparisons."""
        by_after = {s.after: s for s in self.steps}
        starts = {s.before for s in self.steps}
        out: list[ChainPoint] = []
        chain, level, var = -1, 0.0, 0.0
        for v in self.versions:
            step = by_after.get(v)
            if step is not None and out and out[-1].version == step.before:
                level += step.log_ratio
                var += step.se**2
            elif v in starts:
                chain, level, var = chain + 1, 0.0, 0.0
            else:
                continue
            out.append(ChainPoint(v, chain, level, float(np.sqrt(var))))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key.to_json(),
            "versions": list(self.versions),
            "excluded": list(self.excluded),
            "paired": [
                {
                    "before": s.before,
                    "after": s.after,
                    "change": s.change,
                    "log_ratio": s.log_ratio,
                    "se": s.se,
                    "runs": s.runs,
                    "experiments": list(s.experiments),
                    "verdicts": list(s.verdicts),
                    "evidence": None if s.evidence is None else s.evidence.to_json(),
                }
                for s in self.steps
            ],
            "absolute": [
                {
                    "version": lv.version,
                    "ns": lv.ns,
                    "log_ns": lv.log_ns,
                    "se": lv.se,
                    "experiments": list(lv.experiments),
                }
                for lv in self.levels
            ],
        }


def order_versions(labels: Iterable[str], known: Mapping[str, StoredVersion]) -> list[str]:
    """Commit-date order when every version has a date, else first-seen order."""
    labels = list(dict.fromkeys(labels))
    if labels and all(known[v].commit_ns is not None for v in labels):
        return sorted(labels, key=lambda v: (known[v].commit_ns, known[v].id))
    return sorted(labels, key=lambda v: known[v].id)


def _mean_se(values: np.ndarray) -> tuple[float, float, int]:
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return float("nan"), float("nan"), 0
    se = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
    return float(v.mean()), se, len(v)


def build_series(
    results: pd.DataFrame,
    run_values: pd.DataFrame,
    known: Mapping[str, StoredVersion],
    marks: Sequence[Mark] = (),
) -> list[Series]:
    """Series of every key in ``results`` (rows of :meth:`Repository.results`)."""
    out = []
    if results.empty:
        return out
    rv = run_values.groupby(["experiment_id", "suite", "benchmark", "method", "host"], sort=False)[
        "value"
    ]
    rv_stats = {k: _mean_se(g.to_numpy(dtype=float)) for k, g in rv}
    for keys, rows in results.groupby(["suite", "benchmark", "host", "method"], sort=True):
        key = SeriesKey(*map(str, keys))
        excluded = {
            m.version
            for m in marks
            if m.kind == "exclude" and m.applies_to(key.suite, key.benchmark, key.method, key.host)
        }
        labels = [*rows["version_a"], *rows["version_b"]]
        ordered = [v for v in order_versions(labels, known) if v not in excluded]
        out.append(
            Series(
                key=key,
                versions=tuple(ordered),
                steps=tuple(_steps(key, rows, ordered, rv_stats)),
                levels=tuple(_levels(rows, ordered)),
                excluded=tuple(v for v in order_versions(labels, known) if v in excluded),
                commits={v: (known[v].commit, known[v].commit_ns) for v in ordered},
            )
        )
    return out


#: one experiment's comparison of a pair: (log ratio, its standard error, runs, experiment,
#: verdict, its own evidence)
_Found = tuple[float, float, int, int, str, Evidence | None]


def _steps(
    key: SeriesKey,
    rows: pd.DataFrame,
    ordered: list[str],
    rv_stats: Mapping[tuple[Any, ...], tuple[float, float, int]],
) -> list[Step]:
    """Direct comparisons of adjacent versions; an excluded version is bridged by adding
    the two steps around it (log ratios add along a chain)."""
    pos = {v: i for i, v in enumerate(ordered)}
    found: dict[tuple[str, str], list[_Found]] = {}
    for r in rows.itertuples(index=False):
        a, b = r.version_a, r.version_b
        if a == b:
            continue
        est, se, n = rv_stats.get(
            (r.experiment_id, key.suite, key.benchmark, key.method, key.host), (np.nan, np.nan, 0)
        )
        if not (np.isfinite(est) and np.isfinite(se)) or n < 2:
            continue
        found.setdefault((a, b), []).append(
            (est, se, n, int(r.experiment_id), str(r.verdict), evidence_of(r))
        )
    # single steps between direct neighbours, or bridging excluded versions
    steps = []
    for i in range(1, len(ordered)):
        a, b = ordered[i - 1], ordered[i]
        step = _combine(a, b, found.get((a, b), []), found.get((b, a), []))
        if step is None:
            step = _bridge(a, b, found, pos)
        if step is not None:
            steps.append(step)
    return steps


def _combine(a: str, b: str, forward: list[_Found], backward: list[_Found]) -> Step | None:
    """The step a -> b from the experiments that compared them (inverse-variance weights);
    one experiment's own evidence is kept (several are re-tested from their runs)."""
    flipped = {Verdict.SLOWER: Verdict.FASTER, Verdict.FASTER: Verdict.SLOWER}
    items = forward + [
        (-e, s, n, x, flipped.get(v, v), None if ev is None else ev.negated())
        for e, s, n, x, v, ev in backward
    ]
    if not items:
        return None
    est = np.array([i[0] for i in items])
    se = np.maximum(np.array([i[1] for i in items]), 1e-12)
    w = 1.0 / se**2
    return Step(
        before=a,
        after=b,
        log_ratio=float((w * est).sum() / w.sum()),
        se=float(np.sqrt(1.0 / w.sum())),
        runs=int(sum(i[2] for i in items)),
        experiments=tuple(sorted(i[3] for i in items)),
        verdicts=tuple(i[4] for i in items),
        evidence=items[0][5] if len(items) == 1 else None,
    )


def _bridge(
    a: str,
    b: str,
    found: Mapping[tuple[str, str], list[_Found]],
    pos: Mapping[str, int],
) -> Step | None:
    """a -> x -> b through one version x that is not in the series (excluded)."""
    for (x1, x), first in found.items():
        if x1 != a or x in pos:
            continue
        second = found.get((x, b))
        if not second:
            continue
        s1, s2 = _combine(a, x, first, []), _combine(x, b, second, [])
        assert s1 is not None and s2 is not None
        return Step(
            before=a,
            after=b,
            log_ratio=s1.log_ratio + s2.log_ratio,
            se=float(np.hypot(s1.se, s2.se)),
            runs=s1.runs + s2.runs,
            experiments=tuple(sorted(s1.experiments + s2.experiments)),
            verdicts=s1.verdicts + s2.verdicts,
        )
    return None


def _levels(rows: pd.DataFrame, ordered: list[str]) -> list[Level]:
    per_version: dict[str, dict[int, list[float]]] = {}
    within: dict[str, list[float]] = {}
    for r in rows.itertuples(index=False):
        for v, lv, se in (
            (r.version_a, r.level_a, r.level_a_se),
            (r.version_b, r.level_b, r.level_b_se),
        ):
            if lv is None or not np.isfinite(lv):
                continue
            per_version.setdefault(v, {}).setdefault(int(r.experiment_id), []).append(float(lv))
            if se is not None and np.isfinite(se):
                within.setdefault(v, []).append(float(se))
    out = []
    for v in ordered:
        exps = per_version.get(v)
        if not exps:
            continue
        means = np.array([np.mean(x) for x in exps.values()])
        if len(means) > 1:
            se = float(means.std(ddof=1) / np.sqrt(len(means)))
        else:
            se = float(np.mean(within[v])) if within.get(v) else float("nan")
        out.append(Level(v, float(means.mean()), se, tuple(sorted(exps))))
    return out


def series(repo: Repository, **filters: Unpack[Filters]) -> list[Series]:
    """``duet history show``: the series of the repository (:class:`Filters`), marks
    applied (excluded versions left out)."""
    results = repo.results(**filters)
    known = {v.label: v for v in repo.versions()}
    return build_series(results, repo.run_values(), known, repo.marks(filters.get("benchmark")))
