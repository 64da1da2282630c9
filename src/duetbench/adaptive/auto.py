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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from duetbench.errors import AnalysisError

__all__ = ["MethodChoice", "choose_method"]

#: Pilot runs per method before a choice (the default of ``method: auto``).
PILOT_RUNS = 5
#: A re-check switches away from the current method only when another is this much
#: better, and better beyond what the methods' spreads can show by chance: the score
#: ratio must also exceed the F distribution's SWITCH_CONFIDENCE quantile.
SWITCH_MARGIN = 2.0
SWITCH_CONFIDENCE = 0.95


@dataclass(frozen=True)
class MethodChoice:
    """The chosen method and its evidence.

    ``scores``: variance of the mean per machine-second of each method (log scale^2 x s);
    ``half_width_per_hour``: relative half-width of a 95 % interval after one machine-hour;
    ``analyse_from``: run values of the chosen method before this position stay out of
    its analysis (the runs before a switch); ``first_look``: the fewest analysed runs at
    which its stopping rule may stop (twice the pilot when the pilot counts; 0: the
    rule's own ``min_runs``).
    """

    method: str
    scores: dict[str, float]
    half_width_per_hour: dict[str, float]
    runs: dict[str, int]
    analyse_from: int
    explanation: str
    first_look: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "method": self.method,
            "scores": dict(self.scores),
            "half_width_per_hour": dict(self.half_width_per_hour),
            "runs": dict(self.runs),
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
) -> MethodChoice:
    """Choose among the methods in ``values`` (run values per method, in run order).

    ``seconds``: machine seconds spent on each method's runs. Every method needs
    ``pilot_runs`` values (at least 2). ``current``: the method chosen earlier; a
    re-check keeps it unless another method's score is ``margin`` times lower and lower
    beyond chance (an F test at ``SWITCH_CONFIDENCE`` on the two variances), so the
    choice does not flap on noise: every switch costs the runs it leaves out.
    """
    if pilot_runs < 2:
        raise AnalysisError(f"the pilot needs at least 2 runs per method, got {pilot_runs}")
    if not values:
        raise AnalysisError("method auto needs pilot runs of at least one method")
    scores: dict[str, float] = {}
    runs: dict[str, int] = {}
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
    best = min(scores, key=lambda m: (scores[m], m))
    if current is not None and current in scores and current != best:
        # the variance ratio of two alike methods is F-distributed: a 5-run pilot may
        # look 6x tighter than the current method's 30 runs by chance alone
        chance = float(stats.f.ppf(SWITCH_CONFIDENCE, runs[current] - 1, runs[best] - 1))
        if scores[best] * max(margin, chance) > scores[current]:
            best = current
    # the first choice (and keeping it) counts the pilot, looking first at twice its
    # runs; a switch starts the new method's analysis at its next run: the runs that
    # showed it better stay out
    start = 0 if current is None or best == current else runs[best]
    first_look = 2 * pilot_runs if start == 0 else 0
    per_hour = {m: math.expm1(1.959964 * math.sqrt(s / 3600.0)) for m, s in scores.items()}
    ranked = sorted(scores, key=lambda m: (scores[m], m))
    others = ", ".join(f"{m} +-{per_hour[m] * 100:.2g} %" for m in ranked if m != best)
    text = (
        f"{best}: +-{per_hour[best] * 100:.2g} % after one machine-hour"
        + (f" (against {others})" if others else "")
        + f", from {runs[best]} runs"
    )
    return MethodChoice(best, scores, per_hour, runs, start, text, first_look)
