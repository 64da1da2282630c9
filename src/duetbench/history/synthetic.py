"""Seeded synthetic histories with known change points (tests, the error-rate study).

A history of ``versions`` versions has a true log level per version: the sum of
the ``steps`` (version index, relative size) up to it, plus ``spikes`` (one version
off by a relative size, the next back). It is observed twice, like a repository:

- paired: for every adjacent pair, a direct comparison with log ratio = true
  difference + noise of sd ``paired_sd`` (the interval's own) and ``paired_extra_sd``
  (between-experiment spread the interval does not show); the reported standard
  error is ``paired_sd`` times a chi-square factor with ``runs - 1`` degrees of freedom.
- absolute: every version measured once more, level = truth + ``drift`` per version
  (the machine getting slower or faster) + noise of sd ``absolute_sd``.

:func:`stopped_series` observes the paired series as `duet gate` would: every direct
comparison is measured run by run (run values of sd ``run_sd``) until a stopping rule
stops it, and its step carries the rule's verdict and interval
(:class:`~duetbench.history.series.Evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..schema import Method
from .series import Evidence, Level, Series, SeriesKey, Step


@dataclass(frozen=True)
class History:
    versions: int = 60
    steps: tuple[tuple[int, float], ...] = ()
    spikes: tuple[tuple[int, float], ...] = ()
    paired_sd: float = 0.004
    paired_extra_sd: float = 0.0
    absolute_sd: float = 0.015
    drift: float = 0.0
    runs: int = 10

    def truth(self) -> np.ndarray:
        level = np.zeros(self.versions)
        for at, size in self.steps:
            level[at:] += np.log1p(size)
        for at, size in self.spikes:
            level[at] += np.log1p(size)
        return level


def label(i: int) -> str:
    return f"v{i:04d}"


def synthetic_series(h: History, seed: int, *, base_ns: float = 50e6) -> Series:
    """One observed :class:`Series` of the history ``h`` (seeded)."""
    rng = np.random.default_rng(seed)
    truth = h.truth()
    n = h.versions
    names = [label(i) for i in range(n)]
    true_d = np.diff(truth)
    noise = rng.normal(0, h.paired_sd, n - 1) + rng.normal(0, h.paired_extra_sd, n - 1)
    df = max(h.runs - 1, 1)
    se = h.paired_sd * np.sqrt(rng.chisquare(df, n - 1) / df)
    steps = tuple(
        Step(names[i], names[i + 1], float(true_d[i] + noise[i]), float(se[i]), h.runs, (i + 1,))
        for i in range(n - 1)
    )
    y = np.log(base_ns) + truth + h.drift * np.arange(n) + rng.normal(0, h.absolute_sd, n)
    levels = tuple(Level(names[i], float(y[i]), h.absolute_sd, (n + i,)) for i in range(n))
    key = SeriesKey("synthetic", "bench", "0" * 16, Method.ADUET.value)
    return Series(key, tuple(names), steps, levels, commits={v: (None, None) for v in names})


def stopped_series(
    h: History, rule: Any, run_sd: float | tuple[float, float], seed: int, basis: str = "rule"
) -> Series:
    """One observed :class:`Series` of ``h`` whose direct comparisons were stopped by
    ``rule`` (an :class:`~duetbench.adaptive.StopRule`; seeded): each comparison draws
    ``rule.max_runs`` run values (true difference + the comparison's hidden offset of sd
    ``paired_extra_sd`` + run noise) and keeps those up to its stop. ``run_sd``: the run
    noise's sd, or (low, high): each comparison's drawn log-uniformly between them (a
    shared machine whose load differs from one comparison to the next). ``basis``: what
    the steps' evidence says they are (``rule``, or ``fixed`` for a rule of one look)."""
    from ..adaptive.rules import first_stops

    rng = np.random.default_rng(seed)
    truth = h.truth()
    n = h.versions
    names = [label(i) for i in range(n)]
    offset = np.diff(truth) + rng.normal(0, h.paired_extra_sd, n - 1)
    if isinstance(run_sd, tuple):
        sd = np.exp(rng.uniform(np.log(run_sd[0]), np.log(run_sd[1]), n - 1))
    else:
        sd = np.full(n - 1, float(run_sd))
    values = offset[:, None] + rng.normal(0, 1, (n - 1, rule.max_runs)) * sd[:, None]
    stops = first_stops(values, rule)
    steps = []
    for i in range(n - 1):
        taken = values[i, : int(stops.runs[i])]
        evidence = Evidence(
            basis,
            str(stops.verdict[i]),
            float(np.log1p(stops.low[i])),
            float(np.log1p(stops.high[i])),
            float(rule.confidence),
            float(rule.threshold),
            i + 1,
            str(stops.reason[i]),
            float(np.log1p(stops.estimate[i])),
        )
        se = float(taken.std(ddof=1) / np.sqrt(len(taken)))
        steps.append(
            Step(
                names[i], names[i + 1], float(taken.mean()), se, len(taken), (i + 1,), (), evidence
            )
        )
    y = np.log(50e6) + truth + h.drift * np.arange(n) + rng.normal(0, h.absolute_sd, n)
    levels = tuple(Level(names[i], float(y[i]), h.absolute_sd, (n + i,)) for i in range(n))
    key = SeriesKey("synthetic", "bench", "0" * 16, Method.ADUET.value)
    return Series(key, tuple(names), tuple(steps), levels, commits={v: (None, None) for v in names})


def absolute_only(s: Series) -> Series:
    """The same series without direct comparisons (separate experiments only)."""
    return Series(s.key, s.versions, (), s.levels, s.excluded, s.commits)


def paired_only(s: Series) -> Series:
    return Series(s.key, s.versions, s.steps, (), s.excluded, s.commits)


def random_steps(
    rng: np.random.Generator, versions: int, count: int, size: float, gap: int = 6
) -> tuple[tuple[int, float], ...]:
    """``count`` steps of +-``size`` at random versions at least ``gap`` apart (not at the
    first or last ``gap`` versions)."""
    for _ in range(1000):
        at = np.sort(rng.choice(np.arange(gap, versions - gap), size=count, replace=False))
        if count < 2 or np.all(np.diff(at) >= gap):
            signs = rng.choice([-1.0, 1.0], size=count)
            return tuple((int(a), float(s * size)) for a, s in zip(at, signs, strict=True))
    raise ValueError("cannot place the steps that far apart")
