"""``method: auto``: pick the method with the best precision per machine-second.

After interleaved pilot runs of every candidate method (seqn and the duets) on a
benchmark, the score of a method is the variance of its run values times the machine
seconds of one of its repetitions -- the variance of the mean after one machine-second,
lower is better. The choice depends on spreads and costs only, never on the estimated
change. The chosen method's pilot runs count in its analysis, but its stopping rule
first looks once it has as many runs after the pilot as in it (``first_look``):
selecting on a pilot's low spread and stopping on it at once would make the interval
too narrow; with the pilot diluted by as many fresh runs it is not (measured in
benchmarks/adaptive_study.py, docs/adaptive.md, "Choosing the method"). A later switch
to another method leaves that method's earlier runs out (``analyse_from``).

With a results repository (``duet run --history``) a method it knows on this host
(its :class:`~.prior.Prior`: the spread of its run values and the machine seconds of
one repetition in earlier experiments) is scored from that, without a pilot; a method chosen
so has no runs the choice was made on, so its rule looks as it would without auto
(``first_look`` 0; docs/adaptive.md, "Choosing from the repository").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from duetbench.errors import AnalysisError

from ..analysis.distributions import f_ppf
from .prior import Prior

__all__ = ["PILOT_SHARE", "MethodChoice", "choose_method", "contradicts"]

#: Pilot runs per method before a choice (the default of ``method: auto``).
PILOT_RUNS = 5
#: A re-check switches away from the current method only when another is this much
#: better, and better beyond what the methods' spreads can show by chance: the score
#: ratio must also exceed the F distribution's SWITCH_CONFIDENCE quantile.
SWITCH_MARGIN = 2.0
SWITCH_CONFIDENCE = 0.95
#: With a repository, the pilot of the methods it does not know spends at most this share
#: of the benchmark's budget (without a budget: PILOT_RUNS runs of each)
PILOT_SHARE = 0.10
#: where a score came from (``MethodChoice.source``)
FROM_REPOSITORY, FROM_RUNS = "repository", "pilot"


@dataclass(frozen=True)
class MethodChoice:
    """The chosen method and its evidence.

    ``scores``: variance of the mean per machine-second of each method (log scale^2 x s);
    ``half_width_per_hour``: relative half-width of a 95 % interval after one machine-hour;
    ``analyse_from``: run values of the chosen method before this position stay out of
    its analysis (the runs before a switch); ``first_look``: the fewest analysed runs at
    which its stopping rule may stop (twice the pilot when the pilot counts; 0: the
    rule's own ``min_runs``); ``source``: where each score came from, ``"pilot"`` (run
    values of this experiment) or ``"repository"`` (a :class:`~.prior.Prior`).
    """

    method: str
    scores: dict[str, float]
    half_width_per_hour: dict[str, float]
    runs: dict[str, int]
    analyse_from: int
    explanation: str
    first_look: int = 0
    source: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "method": self.method,
            "scores": dict(self.scores),
            "half_width_per_hour": dict(self.half_width_per_hour),
            "runs": dict(self.runs),
            "source": dict(self.source),
            "analyse_from": self.analyse_from,
            "first_look": self.first_look,
            "explanation": self.explanation,
        }


def choose_method(
    values: Mapping[str, object],
    seconds: Mapping[str, float],
    *,
    pilot_runs: int = PILOT_RUNS,
    current: str | None = None,
    margin: float = SWITCH_MARGIN,
    priors: Mapping[str, Prior] | None = None,
) -> MethodChoice:
    """Choose among the methods in ``values`` (run values per method, in run order) and
    ``priors`` (methods known from a results repository, scored without runs).

    ``seconds``: machine seconds spent on each method's runs. Every method of ``values``
    needs ``pilot_runs`` values (at least 2). ``current``: the method chosen earlier; a
    re-check keeps it unless another method's score is ``margin`` times lower and lower
    beyond chance (an F test at ``SWITCH_CONFIDENCE`` on the two variances, with a
    prior's degrees of freedom for a method scored from the repository), so the choice
    does not flap on noise: every switch costs the runs it leaves out.
    """
    priors = {m: p for m, p in (priors or {}).items() if m not in values}
    if pilot_runs < 2:
        raise AnalysisError(f"the pilot needs at least 2 runs per method, got {pilot_runs}")
    if not values and not priors:
        raise AnalysisError("method auto needs pilot runs of at least one method")
    scores: dict[str, float] = {}
    runs: dict[str, int] = {}
    df: dict[str, int] = {}
    source: dict[str, str] = {}
    for method, vals in values.items():
        v = np.asarray(vals, dtype=np.float64)
        runs[method] = len(v)
        if len(v) < pilot_runs:
            raise AnalysisError(
                f"method {method} has {len(v)} pilot run(s); the choice needs {pilot_runs}"
            )
        spent = float(seconds.get(method, math.nan))
        if not spent > 0:
            raise AnalysisError(f"method {method} has no machine time recorded ({spent!r} s)")
        scores[method] = float(np.var(v, ddof=1)) * spent / len(v)
        df[method], source[method] = len(v) - 1, FROM_RUNS
    for method, prior in priors.items():
        scores[method], runs[method] = prior.score, int(prior.runs or prior.df + 1)
        df[method], source[method] = int(prior.df), FROM_REPOSITORY
    best = min(scores, key=lambda m: (scores[m], m))
    if current is not None and current in scores and current != best:
        # the variance ratio of two alike methods is F-distributed: a 5-run pilot may
        # look 6x tighter than the current method's 30 runs by chance alone
        chance = float(f_ppf(SWITCH_CONFIDENCE, df[current], df[best]))
        if scores[best] * max(margin, chance) > scores[current]:
            best = current
    # the first choice (and keeping it) counts the pilot, looking first at twice its
    # runs; a switch starts the new method's analysis at its next run: the runs that
    # showed it better stay out. A method chosen from the repository has no runs the
    # choice rests on: its rule looks as without auto.
    start = 0 if current is None or best == current else runs[best]
    if source[best] == FROM_REPOSITORY:
        start, first_look = 0, 0
    else:
        first_look = 2 * pilot_runs if start == 0 else 0
    per_hour = {m: math.expm1(1.959964 * math.sqrt(s / 3600.0)) for m, s in scores.items()}
    return MethodChoice(
        best,
        scores,
        per_hour,
        runs,
        start,
        _explain(best, scores, per_hour, runs, source),
        first_look,
        source,
    )


def contradicts(values: object, prior: Prior, *, margin: float = SWITCH_MARGIN) -> bool:
    """Whether the run values of a method chosen from the repository say that its
    ``prior`` no longer describes this machine: their variance is ``margin`` times the
    prior's or more, and more beyond chance (the F distribution's SWITCH_CONFIDENCE
    quantile with ``(n - 1, prior.df)`` degrees of freedom) -- the re-check's rule for a
    switch, turned on the chosen method's own prior. Needs 3 values."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 3:
        return False
    ratio = float(np.var(v, ddof=1)) / max(float(prior.sd or 0.0) ** 2, 1e-300)
    chance = float(f_ppf(SWITCH_CONFIDENCE, len(v) - 1, int(prior.df)))
    return ratio > max(margin, chance)


def _explain(
    best: str,
    scores: Mapping[str, float],
    per_hour: Mapping[str, float],
    runs: Mapping[str, int],
    source: Mapping[str, str],
) -> str:
    """`aduet: +-0.9 % after one machine-hour (against ...), from 5 runs`; a method scored
    from the repository says so, and with both sources each score says its own."""
    mixed = len(set(source.values())) > 1

    def where(m: str) -> str:
        if not mixed:
            return ""
        return " [repository]" if source[m] == FROM_REPOSITORY else f" [pilot, {runs[m]} runs]"

    ranked = sorted(scores, key=lambda m: (scores[m], m))
    others = ", ".join(f"{m} +-{per_hour[m] * 100:.2g} %{where(m)}" for m in ranked if m != best)
    against = f" (against {others})" if others else ""
    hour = f"+-{per_hour[best] * 100:.2g} % after one machine-hour{against}"
    if source[best] == FROM_REPOSITORY:
        return (
            f"{best} from the repository's earlier experiments on this host "
            f"({runs[best]} runs): {hour}"
        )
    return f"{best}: {hour}, from {runs[best]} runs"
