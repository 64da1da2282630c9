"""Stopping rules and decisions for one benchmark (docs/adaptive.md).

After every completed run of a benchmark (and method), the scheduler calls
:func:`decide` with the run-level values so far (log ratios, in run order) and the
machine seconds spent on them; the :class:`Decision` says whether to stop, why, the
verdict and the anytime-valid interval. :func:`first_stops` applies the same rule to
many simulated sequences at once (the study and the tests).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum

import numpy as np

from duetbench.analysis.stats import interval_verdicts
from duetbench.config.stop import DESIGNS as USER_DESIGNS  # the designs a rule may ask for
from duetbench.errors import AnalysisError
from duetbench.schema import Verdict
from duetbench.units import ValueTextError, percentage

from .guards import guard_notes
from .prior import Prior
from .prior_intervals import (
    PRIOR_FIRST_LOOK,
    PriorIntervals,
    order_text,
    prior_intervals,
    prior_text,
)
from .sequential import (
    Design,
    Intervals,
    look_multipliers,
    running_intervals,
    strong_skew,
)

__all__ = [
    "Decision",
    "Goal",
    "Outcome",
    "StopReason",
    "StopRule",
    "Stops",
    "decide",
    "first_stops",
    "goal_first_look",
    "forecast_bound",
    "outcomes",
    "strong_skew",
    "runs_to_reach",
]

#: How far predictions of the runs needed look ahead.
_HORIZON = 100_000
#: A forecast of the runs that would reach the goal is given as a number only up to this
#: many times the runs taken (or up to ``max_runs``, when that is more); beyond it the
#: explanation says "not reachable within reasonable time". The forecast extrapolates the
#: estimate and spread of the runs so far: on the project's 2-CPU VM, predictions from 5
#: and 20 runs were off by up to 6.8x and 4.2x
#: (docs/measurements/adaptive-machine-study.md), and an estimate near the threshold makes
#: them explode (runs grow with 1 / distance^2: a gate once forecast "77306 more runs").
#: docs/adaptive.md, "Forecasts".
FORECAST_FACTOR = 10


class Goal(StrEnum):
    PRECISE = "precise"  # the interval's relative half-width is at most `precision`
    DECIDED = "decided"  # slower, faster or equivalent against `threshold`


class StopReason(StrEnum):
    CONTINUE = "continue"  # not stopped: run again
    PRECISE = "precise"
    DECIDED = "decided"
    MAX_RUNS = "max_runs"
    BUDGET = "budget"


class Outcome(StrEnum):
    """The verdict words of :func:`duetbench.analysis.interval_verdicts` (schema.Verdict)."""

    SLOWER = Verdict.SLOWER.value  # the interval lies above 0 and above +threshold
    FASTER = Verdict.FASTER.value  # below 0 and below -threshold
    EQUIVALENT = Verdict.EQUIVALENT.value  # threshold > 0: inside (-threshold, +threshold)
    INCONCLUSIVE = (
        Verdict.INCONCLUSIVE.value
    )  # threshold > 0: none of these (yet); or no interval yet
    NO_CHANGE = Verdict.NO_CHANGE.value  # threshold 0: the interval holds 0


def _fraction(value: object, what: str, *, zero_ok: bool) -> float:
    """A percentage (:func:`duetbench.units.percentage`: from 0 % to below 100 %), more
    than 0 unless ``zero_ok``."""
    try:
        v = percentage(value, what)
    except ValueTextError as exc:
        raise AnalysisError(str(exc)) from None
    if not zero_ok and v == 0.0:
        raise AnalysisError(f"{what} must be more than 0 % (e.g. 0.01 for 1 %), got {value!r}")
    return v


@dataclass(frozen=True)
class StopRule:
    """When to stop measuring one benchmark (and method); build with :meth:`create`.

    ``until``: ``precise`` (relative half-width of the interval <= ``precision``) or
    ``decided`` (slower, faster or equivalent against ``threshold``). ``design``:
    ``auto`` (the default: ``width`` for ``precise``, ``sequence`` for ``decided``),
    ``sequence`` (confidence sequence), ``group`` (group-sequential over ``max_runs``)
    or ``width`` (precision goals only: a widened Student-t interval, valid at a stop
    that depends on the spread alone; docs/adaptive.md, "The designs"). The goal is checked from ``min_runs`` on; ``max_runs`` and
    ``budget_s`` (machine seconds for this benchmark, None: no limit) end it anyway.
    ``tuned_for``: the run count at which the confidence sequence is narrowest.
    ``groups``: analyses of the group-sequential design, equally spaced over
    ``max_runs`` (None: one after every run, whose t conversion lets false alarms
    creep above nominal; docs/adaptive.md).
    """

    until: Goal = Goal.PRECISE
    precision: float | None = 0.01
    threshold: float = 0.0
    confidence: float = 0.95
    design: Design | str = "auto"
    min_runs: int = 3
    max_runs: int = 50
    budget_s: float | None = None
    tuned_for: int = 10
    groups: int | None = 5
    #: the spread of earlier experiments on this host (None: learned from these runs
    #: alone); docs/adaptive.md, "Stopping with the repository's priors"
    prior: Prior | None = None

    @classmethod
    def create(cls, **kw: object) -> StopRule:
        r = cls(**kw)  # type: ignore[arg-type]
        try:
            until = Goal(str(r.until))
        except ValueError as exc:
            raise AnalysisError(f"until must be 'precise' or 'decided', got {r.until!r}") from exc
        if str(getattr(r.design, "value", r.design)) not in USER_DESIGNS:
            raise AnalysisError(
                f"design must be 'auto', 'sequence', 'group' or 'width', got {r.design!r}"
            )
        design = resolve_design(r.design, until)
        precision = r.precision
        if until is Goal.PRECISE:
            if precision is None:
                raise AnalysisError("until 'precise' needs a precision (e.g. 0.01 for +-1 %)")
            precision = _fraction(precision, "precision", zero_ok=False)
        elif precision is not None:
            precision = _fraction(precision, "precision", zero_ok=False)
        threshold = _fraction(r.threshold, "threshold", zero_ok=True)
        conf = float(r.confidence)  # type: ignore[arg-type]
        if not 0.5 <= conf < 1.0:
            raise AnalysisError(f"confidence must be in [0.5, 1), got {r.confidence!r}")
        min_runs, max_runs = int(r.min_runs), int(r.max_runs)
        if min_runs < 2:
            raise AnalysisError(
                f"min_runs must be at least 2 (a spread needs 2 runs), got {min_runs}"
            )
        if max_runs < min_runs:
            raise AnalysisError(f"max_runs ({max_runs}) must be at least min_runs ({min_runs})")
        budget = r.budget_s
        if budget is not None and not float(budget) > 0:
            raise AnalysisError(f"the budget must be > 0 seconds, got {budget!r}")
        if r.groups is not None and int(r.groups) < 1:
            raise AnalysisError(
                f"groups must be at least 1 (or None: a look every run), got {r.groups!r}"
            )
        if r.prior is not None and not (isinstance(r.prior, Prior) and r.prior.has_spread):
            raise AnalysisError(f"prior must be a Prior with a spread, got {r.prior!r}")
        if int(r.tuned_for) < 3:
            raise AnalysisError(f"tuned_for must be at least 3 runs, got {r.tuned_for!r}")
        return replace(
            r,
            until=until,
            precision=precision,
            threshold=threshold,
            confidence=conf,
            design=design,
            min_runs=min_runs,
            max_runs=max_runs,
            budget_s=None if budget is None else float(budget),
            tuned_for=int(r.tuned_for),
            groups=None if r.groups is None else int(r.groups),
        )

    @property
    def resolved_design(self) -> Design:
        return resolve_design(self.design, Goal(str(self.until)))

    def multipliers(self, runs: int, looks: Sequence[int] | None = None) -> np.ndarray:
        """Interval multipliers for n = 1..runs under this rule's design (inf: no look)."""
        return look_multipliers(
            self.resolved_design,
            runs,
            confidence=self.confidence,
            min_runs=self.min_runs,
            max_runs=self.max_runs,
            tuned_for=self.tuned_for,
            groups=self.groups,
            looks=looks,
        )


def resolve_design(design: object, until: Goal) -> Design:
    """The design a rule uses: ``auto`` is ``width`` for a precision goal and
    ``sequence`` for a verdict; ``width`` cannot serve a verdict goal, whose stop
    depends on the estimate itself."""
    text = str(getattr(design, "value", design))
    if text == "auto":
        return Design.WIDTH if until is Goal.PRECISE else Design.SEQUENCE
    try:
        d = Design(text)
    except ValueError:
        d = None
    if d is None:
        raise AnalysisError(f"unknown design {design!r}")
    if d is Design.WIDTH and until is not Goal.PRECISE:
        raise AnalysisError(
            "design 'width' is for `until: precise` only: a stop on the verdict depends on "
            "the estimate, which needs an anytime-valid design (sequence or group)"
        )
    return d


#: the designs the study compares with, shown as they are (no guards)
_STUDY_DESIGNS = (Design.NAIVE, Design.ASYMPTOTIC)


def goal_first_look(rule: StopRule) -> int:
    """The first run count at which the rule checks its goal: ``min_runs``; a precision
    goal with a prior at least :data:`~.prior_intervals.PRIOR_FIRST_LOOK` (at most ``max_runs``).
    Early looks need no wait for the serial check: the guards widen them by what they
    cannot yet rule out (docs/adaptive.md, "Assumptions, and how they are checked")."""
    if rule.until is Goal.PRECISE and rule.prior is not None:
        return min(max(rule.min_runs, PRIOR_FIRST_LOOK), rule.max_runs)
    return rule.min_runs


def outcomes(low: object, high: object, threshold: float) -> np.ndarray:
    """Outcome of every interval of relative change (arrays of the same shape): the
    verdicts of every command (:func:`duetbench.analysis.interval_verdicts`), ``inconclusive``
    where there is no interval yet."""
    out = interval_verdicts(low, high, threshold)
    out[out == Verdict.NO_DATA.value] = Outcome.INCONCLUSIVE.value
    return out


_DECIDED = (Outcome.SLOWER.value, Outcome.FASTER.value, Outcome.EQUIVALENT.value)


def _goal_reached(low: np.ndarray, high: np.ndarray, rule: StopRule) -> np.ndarray:
    if rule.until is Goal.PRECISE:
        return (high - low) / 2.0 <= rule.precision  # type: ignore[operator]
    return np.isin(outcomes(low, high, rule.threshold), _DECIDED)


def _needed_half_width(mean: float, rule: StopRule) -> float:
    """Log-scale half-width that would reach the goal at this estimate (0: never)."""
    if rule.until is Goal.PRECISE:
        return math.asinh(rule.precision * math.exp(-mean))  # type: ignore[operator]
    up, down = math.log1p(rule.threshold), math.log1p(-rule.threshold)
    if mean > up:
        return mean - up
    if mean < down:
        return down - mean
    if rule.threshold > 0:
        return min(up - mean, mean - down)
    return 0.0


@functools.lru_cache(maxsize=32)
def _horizon_multipliers(rule: StopRule) -> np.ndarray:
    """The rule's multipliers up to ``_HORIZON`` runs (the confidence sequence's beyond a
    group-sequential design's maximum); cached: a plan asks for the same rule often."""
    if rule.resolved_design is not Design.GROUP:
        mult = rule.multipliers(_HORIZON)
    else:
        mult = replace(rule, design=Design.SEQUENCE).multipliers(_HORIZON)
        head = rule.multipliers(rule.max_runs)
        mult[: rule.max_runs] = np.where(np.isfinite(head), head, mult[: rule.max_runs])
    mult.setflags(write=False)
    return mult


def runs_to_reach(half_width: float, sd: float, rule: StopRule, runs_done: int) -> int | None:
    """Smallest total number of runs whose interval half-width is predicted <= ``half_width``.

    Assumes the spread stays ``sd``; uses the rule's multipliers up to ``max_runs`` and
    the confidence sequence's beyond (a group-sequential design has no looks past its
    maximum). None when not within reach (zero half-width, no spread, > 100,000 runs).
    """
    if not (half_width > 0 and math.isfinite(sd) and sd >= 0):
        return None
    if sd == 0:
        return max(runs_done, rule.min_runs)
    n = np.arange(1, _HORIZON + 1)
    mult = _horizon_multipliers(rule)
    ok = (mult * sd / np.sqrt(n) <= half_width) & (n >= max(runs_done, rule.min_runs))
    hit = np.flatnonzero(ok)
    return int(n[hit[0]]) if len(hit) else None


@dataclass(frozen=True)
class Decision:
    """What to do after a run, and what the runs so far say.

    ``estimate``, ``low``, ``high``: relative change of B against A (positive: B
    slower) with its anytime-valid interval (NaN/inf before there is one).
    ``runs_to_goal`` / ``seconds_to_goal``: predicted further runs and machine seconds
    to reach the goal at the current estimate and spread (None: reached, fewer than 2
    runs, or ``unreachable``). ``serial_r``: the lag-1 autocorrelation of the run values in run order;
    ``effective_runs``: where the guard widened the interval for serial correlation
    (guards.guard), the number of independent runs it counted them as (None: not
    widened); ``serial_found``: the correlation is beyond chance (the explanation says
    so). ``skewness``: the run values' sample skewness where strong (:func:`strong_skew`).
    ``unreachable``: the goal is not reachable within
    reasonable time -- more than :data:`FORECAST_FACTOR` times the runs taken (and
    more than ``max_runs``) would be needed, or it is out of reach at this estimate.
    """

    stop: bool
    reason: StopReason
    verdict: Outcome
    estimate: float
    low: float
    high: float
    runs: int
    seconds: float
    confidence: float
    design: Design
    runs_to_goal: int | None
    seconds_to_goal: float | None
    explanation: str
    serial_r: float | None = None  # lag-1 autocorrelation of the run values (None: < 5 runs)
    effective_runs: float | None = None  # n_eff where the serial guard widened the interval
    serial_found: bool = False  # serial correlation beyond chance (noted)
    skewness: float | None = None  # sample skewness where strong (None: not, or < 8 runs)
    unreachable: bool = False
    #: with a prior: whether this decision used it (False: dropped by the check); None:
    #: the rule has none
    prior_used: bool | None = None

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        for key in ("estimate", "low", "high", "serial_r", "skewness"):
            v = d[key]
            d[key] = v if v is not None and math.isfinite(v) else None
        d["reason"] = self.reason.value
        d["verdict"] = self.verdict.value
        d["design"] = self.design.value
        return d


def _expm1(x: float) -> float:
    """Relative change of a log ratio; inf for a bound too large to exponentiate."""
    return math.expm1(x) if x < 700.0 else math.inf


def _pct(x: float) -> str:
    return f"{x * 100:+.2f} %" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


def _interval_text(est: float, lo: float, hi: float) -> str:
    if not math.isfinite(lo) or not math.isfinite(hi):
        return f"{_pct(est)} (no interval yet)" if math.isfinite(est) else "no interval yet"
    return f"{_pct(est)} [{_pct(lo)}, {_pct(hi)}]"


def decide(
    values: object,
    rule: StopRule,
    *,
    seconds: float = 0.0,
    looks: Sequence[int] | None = None,
) -> Decision:
    """Decision after the runs so far of one benchmark and method.

    ``values``: run-level values (log ratios) in the order the runs finished;
    ``seconds``: machine seconds spent on them (a seqn repetition counts both runs);
    ``looks``: the run counts at which earlier decisions were taken (default: after
    every run; give the batch ends when runs arrive in batches). Pure: the same values
    give the same decision (a resumed experiment reaches the one it would have).
    """
    v = np.asarray(values, dtype=np.float64).reshape(1, -1)
    n = v.shape[1]
    if looks is not None:
        looks = sorted({int(x) for x in looks} | {n})
    serial_r, n_eff, found = None, None, False
    prior_note = ""
    if n:
        history = None if rule.prior is None else rule.prior.shape
        iv = running_intervals(
            v,
            rule.multipliers(n, looks),
            intersect=rule.resolved_design.intersects,
            history=history,
        )
        if rule.prior is not None:
            seen = None if looks is None else np.isin(np.arange(1, n + 1), looks)
            pi = with_prior(v, rule, iv, seen)
            iv = pi.intervals
            prior_note = prior_text(rule.prior, pi)
        mean, sd = float(iv.mean[0, -1]), float(iv.sd[0, -1])
        lo_log, hi_log = float(iv.low[0, -1]), float(iv.high[0, -1])
        r, factor = float(iv.serial_r[0, -1]), float(iv.inflation[0, -1])  # type: ignore[index]
        serial_r = r if math.isfinite(r) else None
        if factor > 1.0 + 1e-9:
            n_eff, sd = n / factor, sd * math.sqrt(factor)
            found = bool(iv.guard.found[0, -1])  # type: ignore[union-attr]
        prior_note += order_text(history, iv.guard)  # type: ignore[arg-type]
    else:
        mean = sd = math.nan
        lo_log, hi_log = -math.inf, math.inf
    est, lo, hi = (_expm1(x) for x in (mean, lo_log, hi_log))
    verdict = Outcome(str(outcomes(lo, hi, rule.threshold)))
    per_run = seconds / n if n else math.nan
    reached = n >= goal_first_look(rule) and bool(_goal_reached(np.array(lo), np.array(hi), rule))
    if reached:
        reason = StopReason.PRECISE if rule.until is Goal.PRECISE else StopReason.DECIDED
    elif n >= rule.max_runs:
        reason = StopReason.MAX_RUNS
    elif rule.budget_s is not None and n and seconds + per_run > rule.budget_s:
        reason = StopReason.BUDGET
    else:
        reason = StopReason.CONTINUE
    more = None
    unreachable = False
    if not reached and n >= 2:
        total = runs_to_reach(_needed_half_width(mean, rule), sd, rule, n)
        total = None if total is None else max(total, goal_first_look(rule))
        unreachable = total is None or total > forecast_bound(n, rule)
        more = None if unreachable or total is None else total - n
    more_s = None if more is None or not math.isfinite(per_run) else more * per_run
    text = _explain(rule, reason, verdict, est, lo, hi, n, more, more_s, unreachable)
    text += prior_note
    skew = strong_skew(v[0])
    text += guard_notes(skew, serial_r if found else None, n_eff)
    return Decision(
        stop=reason is not StopReason.CONTINUE,
        reason=reason,
        verdict=verdict,
        estimate=est,
        low=lo,
        high=hi,
        runs=n,
        seconds=float(seconds),
        confidence=rule.confidence,
        design=rule.resolved_design,
        runs_to_goal=more,
        seconds_to_goal=more_s,
        explanation=text,
        serial_r=serial_r,
        effective_runs=n_eff,
        serial_found=found,
        skewness=skew,
        unreachable=unreachable,
        prior_used=None if rule.prior is None or not n else not bool(pi.dropped[0, -1]),
    )


def with_prior(
    v: np.ndarray, rule: StopRule, plain: Intervals, looks: np.ndarray | None = None
) -> PriorIntervals:
    """The intervals of ``rule`` (which has a prior) on the rows of ``v``; ``plain``: the
    no-prior rule's intervals of them; ``looks``: per run, whether a decision was taken
    there (None: every run)."""
    first = goal_first_look(rule)
    if looks is not None:
        looks = looks & (np.arange(1, v.shape[1] + 1) >= first)
    kw = {"confidence": rule.confidence, "tuned_for": rule.tuned_for, "looks": looks}
    return prior_intervals(v, rule.prior, rule.resolved_design, plain, first_look=first, **kw)  # type: ignore[arg-type]


def forecast_bound(runs: int, rule: StopRule) -> int:
    """The most runs in all a forecast gives as a number after ``runs`` runs: the larger
    of :data:`FORECAST_FACTOR` times the runs taken and ``max_runs`` (a goal the rule
    itself may reach is always a number)."""
    return max(FORECAST_FACTOR * runs, rule.max_runs)


#: what would help a goal the runs cannot reach within reasonable time
UNREACHABLE_HELP = (
    "not reachable within reasonable time at this estimate and spread (a larger "
    "threshold, a quieter runner, or a duet method would help; docs/adaptive.md, "
    '"Forecasts")'
)


def _explain(
    rule: StopRule,
    reason: StopReason,
    verdict: Outcome,
    est: float,
    lo: float,
    hi: float,
    n: int,
    more: int | None,
    more_s: float | None,
    unreachable: bool = False,
) -> str:
    iv = _interval_text(est, lo, hi)
    goal = (
        f"+-{rule.precision * 100:g} %"  # type: ignore[operator]
        if rule.until is Goal.PRECISE
        else f"a verdict at threshold {rule.threshold * 100:g} %"
    )
    if reason is StopReason.PRECISE:
        return f"{verdict.value}: {iv} after {n} runs; precise to {goal}"
    if reason is StopReason.DECIDED:
        return f"{verdict.value}: {iv} after {n} runs"
    if unreachable:
        need = UNREACHABLE_HELP
    elif more is None:
        need = "out of reach at this estimate" if n >= 2 else "needs at least 2 runs"
    else:
        time = f" (~{more_s:.0f} machine-s)" if more_s is not None else ""
        need = f"about {more} more runs{time} would reach it at this estimate and spread"
    if reason is StopReason.CONTINUE:
        return f"continue: {iv} after {n} runs; goal {goal}; {need}"
    limit = "max_runs" if reason is StopReason.MAX_RUNS else "budget"
    return f"{verdict.value} ({limit} reached before {goal}): {iv} after {n} runs; {need}"


@dataclass(frozen=True, eq=False)
class Stops:
    """Where each of many sequences stops under a rule (arrays, one entry per sequence).

    ``low``/``high``/``estimate``: relative change at the stop; ``intervals``: all looks.
    """

    runs: np.ndarray
    reason: np.ndarray
    verdict: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    intervals: Intervals


def with_first_look(rule: StopRule, first_look: int) -> StopRule:
    """``rule`` checking its goal from ``first_look`` runs on, if that is later than its
    own ``min_runs`` (method auto: a counted pilot, adaptive/method_choice.py), at most at
    ``max_runs``."""
    if first_look <= rule.min_runs:
        return rule
    return replace(rule, min_runs=min(first_look, rule.max_runs))


def first_stops(
    values: np.ndarray, rule: StopRule, *, intersect: bool | None = None, guards: bool = True
) -> Stops:
    """Stop of every row of ``values`` (sequences x runs) under ``rule`` (no budget).
    ``guards=False``: without the guards for serial correlation and skew (studies).

    A row stops at the first look from :func:`goal_first_look` on that reaches the
    goal, else at ``min(max_runs, columns)`` for the reason ``max_runs``.
    """
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n_max = min(rule.max_runs, v.shape[1])
    if intersect is None:
        intersect = rule.resolved_design.intersects
    serial = guards and rule.resolved_design not in _STUDY_DESIGNS
    history = None if rule.prior is None else rule.prior.shape
    iv = running_intervals(
        v[:, :n_max], rule.multipliers(n_max), intersect=intersect, serial=serial, history=history
    )
    if rule.prior is not None:
        iv = with_prior(v[:, :n_max], rule, iv).intervals
    lo, hi = np.expm1(iv.low), np.expm1(iv.high)
    ok = _goal_reached(lo, hi, rule) & (np.arange(1, n_max + 1) >= goal_first_look(rule))
    hit = ok.any(axis=1)
    idx = np.where(hit, ok.argmax(axis=1), n_max - 1)
    rows = np.arange(v.shape[0])
    goal = StopReason.PRECISE if rule.until is Goal.PRECISE else StopReason.DECIDED
    reason = np.where(hit, goal.value, StopReason.MAX_RUNS.value).astype(object)
    low, high = lo[rows, idx], hi[rows, idx]
    return Stops(
        runs=idx + 1,
        reason=reason,
        verdict=outcomes(low, high, rule.threshold),
        estimate=np.expm1(iv.mean[rows, idx]),
        low=low,
        high=high,
        intervals=iv,
    )
