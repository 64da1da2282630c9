"""``method: auto`` in the scheduler: the pilot, the choice and its re-checks, with or
without a results repository (docs/adaptive.md, "Choosing the method" and "Choosing from
the repository"). :class:`MethodPilot` chooses for the benchmarks of one experiment, on
the :class:`~.stop_state.MethodState` of each of their methods, which it shares with
:class:`~duetbench.schedule.adaptive.StopTracker`; what it asks of the tracker (run
values, the plan, a decision) is :class:`Tracker`. The choice itself is
:func:`duetbench.adaptive.choose_method`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import DuetError
from .stop_state import MethodState, seconds_of, stop_key

if TYPE_CHECKING:
    from ..adaptive.method_choice import MethodChoice
    from ..adaptive.prior import Prior

__all__ = ["WAITING", "AutoState", "MethodPilot", "Tracker"]

#: the stop reason of a method the repository knows while the others are piloted
WAITING = "waiting for the pilot"


@dataclass
class AutoState:
    """`methods: auto` of one benchmark: its methods, the choice and its evidence;
    ``known``: the methods a results repository knows on this host (their priors, with
    machine seconds per repetition), scored without a pilot; ``repilot``: the chosen
    method's runs contradicted its prior, and the other methods it knew are being piloted
    (docs/adaptive.md, "Choosing from the repository")."""

    methods: tuple[str, ...]
    chosen: str | None = None
    choice: MethodChoice | None = None
    known: dict[str, Prior] = field(default_factory=dict)
    repilot: bool = False
    stale: bool = False  # the repository's scores no longer describe this machine
    final: bool = False  # re-checked once after the second pilot: the choice stands

    def to_json(self) -> dict[str, Any]:
        """stops.json ``auto`` of each of the benchmark's methods."""
        return {
            "chosen": self.chosen,
            **({"from_repository": sorted(self.known)} if self.known else {}),
            **({"piloted_again": True} if self.stale else {}),
            **({"choice": self.choice.to_json()} if self.choice is not None else {}),
        }


class Tracker(Protocol):
    """What the pilot asks of the stop tracker that feeds it the runs."""

    def method_values(self, bench: str, method: str) -> list[float]:
        """The run values of ``bench`` x ``method`` so far, in run order."""
        ...

    def ran_out(self, st: MethodState) -> bool:
        """Whether no planned run of ``st`` is left to come."""
        ...

    def decide(self, st: MethodState) -> bool:
        """Ask ``st``'s stopping rule; True when it stops."""
        ...


class MethodPilot:
    """Method auto of an experiment's benchmarks: ``autos`` per benchmark, chosen from
    pilots and from the repository's priors, over the tracker's ``states`` (stop key ->
    its :class:`MethodState`)."""

    def __init__(self, states: dict[str, MethodState], tracker: Tracker) -> None:
        self.states = states
        self.tracker = tracker
        self.autos: dict[str, AutoState] = {}

    def add(self, bench: str, methods: tuple[str, ...]) -> None:
        """Choose among ``methods`` for ``bench`` (``methods: auto``)."""
        self.autos[bench] = AutoState(tuple(methods))

    def spent_elsewhere(self, st: MethodState) -> float:
        """Machine seconds of the benchmark's other methods (their pilots, a method
        switched away from); 0 without method auto. An auto benchmark's budget is the
        benchmark's: the chosen method gets what the pilots left (docs/adaptive.md,
        "Choosing the method")."""
        auto = self.autos.get(st.benchmark)
        if auto is None:
            return 0.0
        return seconds_of(self.states[stop_key(st.benchmark, m)] for m in auto.methods) - st.seconds

    def after_decision(self, st: MethodState, stopped: bool) -> None:
        """After a decision of ``st``: when it is the method chosen, whether its runs
        contradict the repository (:meth:`check_repository`)."""
        auto = self.autos.get(st.benchmark)
        if auto is not None and auto.chosen == st.method:
            self.check_repository(st.benchmark, stopped)

    def start(self, priors: Mapping[tuple[str, str], Prior]) -> None:
        """Method auto with a repository: the methods it knows on this host wait (no pilot
        of them); when it knows every method, or a pilot of the others would not fit in
        PILOT_SHARE of the budget, the choice is made now, before any run."""
        for bench, auto in self.autos.items():
            if auto.chosen is not None:
                continue
            auto.known = {
                m: priors[(bench, m)]
                for m in auto.methods
                if (bench, m) in priors and priors[(bench, m)].usable
            }
            for m in auto.known:
                self.states[stop_key(bench, m)].stopped = WAITING
            if auto.known:
                self.choose(bench)

    def choose(self, bench: str, method: str | None = None) -> bool:
        """Method auto: choose (or re-check) once the pilot is over; the others stop as
        ``not chosen`` (docs/adaptive.md, "Choosing the method"). False: still piloting
        (``method``'s run is a pilot run, no decision on it).

        The pilot is over when every piloted method has ``PILOT_RUNS`` run values -- or
        when the benchmark's budget would be overrun by another repetition, or a method has
        run twice the pilot without giving that many values (its runs left out, e.g. as
        unbalanced), or has no planned run left: the choice is then among the methods that
        have them (at least 2 values each if none has the pilot's), and a budget spent by
        the pilot stops the benchmark there. Without a repository every method is piloted;
        with one, only those it does not know, within PILOT_SHARE of the budget, and the
        others are scored from the repository ("Choosing from the repository"). Re-checks
        compare the methods with run values of this experiment only."""
        from ..adaptive import PILOT_RUNS, choose_method

        auto = self.autos[bench]
        values = {m: self.tracker.method_values(bench, m) for m in auto.methods}
        states = {m: self.states[stop_key(bench, m)] for m in auto.methods}
        spent = self._auto_budget_spent(bench, auto)
        if auto.final:
            return True
        if auto.repilot:  # the other known methods piloted, the chosen one measuring on
            pilot = [m for m in auto.known if m != auto.chosen]
            if not spent and not self._pilot_over(auto, pilot, values, states, share=False):
                return method == auto.chosen
            # one re-check on it: a small pilot compared again after every run of the
            # chosen method would switch by chance, and back (seen in the simulation)
            auto.repilot, auto.final = False, True
        elif auto.chosen is None and not spent:
            pilot = [m for m in auto.methods if m not in auto.known]
            if not self._pilot_over(auto, pilot, values, states):
                return False
        # with a repository, a re-check's pilot size is the others' (the chosen method may
        # have many runs where a pilot within PILOT_SHARE of the budget has fewer)
        counted = [
            v
            for m, v in values.items()
            if not auto.known or auto.chosen is None or m != auto.chosen
        ]
        need = PILOT_RUNS if any(len(v) >= PILOT_RUNS for v in counted) else 2
        if auto.chosen is not None and len(values[auto.chosen]) < need:
            return True  # chosen from the repository: a re-check waits for its runs
        eligible = {m: v for m, v in values.items() if len(v) >= need or m == auto.chosen}
        if auto.final:
            eligible = self._agreeing(auto, eligible, states)
        if auto.chosen is not None and list(eligible) == [auto.chosen]:
            return True  # nothing measured here to compare it with
        priors = {}
        if auto.chosen is None:  # the first choice: the repository's scores count
            priors = {m: p for m, p in auto.known.items() if m not in eligible}
        if not eligible and not priors:  # no method gave 2 values yet
            if not spent:
                return False
            for st in states.values():
                st.stopped = st.stopped if st.stopped not in (None, WAITING) else "budget"
            return True
        seconds = {
            m: self._choice_seconds(states[m], len(v), bool(priors)) for m, v in eligible.items()
        }
        choice = choose_method(
            eligible, seconds, pilot_runs=need, current=auto.chosen, priors=priors
        )
        if auto.chosen is not None and choice.method != auto.chosen:
            if not self._switch_pays(states, auto.chosen, choice):
                choice = choose_method(
                    eligible, seconds, pilot_runs=need, current=auto.chosen, margin=math.inf
                )
        if auto.stale:
            choice = replace(
                choice,
                explanation=f"{choice.explanation} (piloted again: the runs of the method "
                "first chosen from the repository were noisier than its earlier experiments)",
            )
        changed = choice.method != auto.chosen
        if not changed and auto.known and not auto.stale:
            return True  # kept: the evidence stays the first choice's, with its sources
        for m, st in states.items():
            if m == choice.method and changed:
                st.stopped, st.analyse_from = None, choice.analyse_from
                st.first_look = choice.first_look
            elif m != choice.method and st.stopped in (None, WAITING):
                st.stopped = "not chosen"
        auto.chosen = choice.method
        auto.choice = choice
        if changed:
            # the method chosen again may have no planned runs left (it ran them all while
            # it was the choice before): decide now, or it would never get a stop reason
            self.tracker.decide(states[choice.method])
        return True

    def _pilot_over(
        self,
        auto: AutoState,
        pilot: list[str],
        values: dict[str, list[float]],
        states: dict[str, MethodState],
        share: bool = True,
    ) -> bool:
        """Whether the pilot of the methods ``pilot`` is over: each has ``PILOT_RUNS``
        values, or ran twice that without them, or has no planned run left; with a
        repository (``auto.known``) and ``share``, also when another round of those still
        short would take the pilot beyond ``PILOT_SHARE`` of the benchmark's budget (a
        method not run yet is guessed at the dearest known method's seconds per
        repetition). The second pilot (the repository contradicted) is a full one."""
        from ..adaptive import PILOT_RUNS, PILOT_SHARE

        short = [
            m
            for m in pilot
            if len(values[m]) < PILOT_RUNS
            and states[m].reps < 2 * PILOT_RUNS
            and not self.tracker.ran_out(states[m])
        ]
        if not short:
            return True
        budget = states[short[0]].rule.budget_s
        if not share or not auto.known or budget is None:
            return False
        guess = max(float(p.seconds_per_run or 0.0) for p in auto.known.values())
        more = sum(states[m].per_rep or guess for m in short)
        return seconds_of(states[m] for m in pilot) + more > PILOT_SHARE * budget

    def _agreeing(
        self, auto: AutoState, eligible: dict[str, list[float]], states: dict[str, MethodState]
    ) -> dict[str, list[float]]:
        """After a second pilot, the methods that may replace the chosen one: those whose
        repository score beats the chosen method's score here, too (its run values times
        its seconds per repetition as the repository times them). A pilot in a quiet
        stretch of a bursty neighbour can make any method look best; a method the
        repository saw suffer from the bursts is not taken on that alone."""
        import numpy as np

        chosen = str(auto.chosen)
        v = np.asarray(eligible[chosen], dtype=np.float64)
        if len(v) < 2:
            return eligible
        here = float(np.var(v, ddof=1)) * self._choice_seconds(states[chosen], len(v), True)
        here /= len(v)
        return {
            m: x
            for m, x in eligible.items()
            if m == chosen or m not in auto.known or auto.known[m].score < here
        }

    def _choice_seconds(self, st: MethodState, n: int, with_priors: bool) -> float:
        """Machine seconds of ``st``'s ``n`` values for the choice. Beside a repository's
        scores they are measured as the repository measures them -- each side's driver
        from its start to its last iteration (analysis.costs.repetition_seconds), the
        median repetition times ``n`` -- so the two sources' scores compare; else the
        runs' seconds, as always."""
        if not with_priors or not st.tables:
            return st.seconds
        import pandas as pd

        from ..analysis.costs import repetition_seconds

        try:
            reps = repetition_seconds(pd.concat(list(st.tables.values()), ignore_index=True))
        except DuetError:
            return st.seconds
        per = float(reps["seconds"].median()) if len(reps) else math.nan
        return per * n if math.isfinite(per) and per > 0 else st.seconds

    def check_repository(self, bench: str, stopped: bool) -> None:
        """After a decision of a method chosen from the repository: when its runs here are
        noisier than its prior by the re-check's margin and beyond chance
        (adaptive.method_choice.contradicts), the repository's scores of the other methods are no
        longer trusted either -- the other methods it knew are piloted now (PILOT_RUNS
        each) and the choice re-checked once on this experiment's runs. A stop ends such
        a pilot."""
        from ..adaptive.method_choice import SWITCH_MARGIN, contradicts

        auto = self.autos[bench]
        states = {m: self.states[stop_key(bench, m)] for m in auto.methods}
        if stopped:
            if auto.repilot:
                auto.repilot = False
                for m, st in states.items():
                    if m != auto.chosen and st.stopped is None:
                        st.stopped = "not chosen"
            return
        chosen = auto.chosen
        if auto.stale or chosen not in auto.known or auto.choice is None:
            return
        if auto.choice.source.get(chosen) != "repository":
            return
        runs = self.tracker.method_values(bench, chosen)[states[chosen].analyse_from :]
        # the ranking can only have turned when the chosen method is noisier than its
        # prior by more than its lead over the next method (and the re-check's margin)
        scores = auto.choice.scores
        lead = min((scores[m] for m in auto.known if m != chosen), default=scores[chosen])
        margin = SWITCH_MARGIN * max(lead / scores[chosen] if scores[chosen] > 0 else 1.0, 1.0)
        if not contradicts(runs, auto.known[chosen], margin=margin):
            return
        auto.stale = True
        others = [m for m in auto.known if m != chosen]
        for m in others:
            if states[m].stopped == "not chosen":
                states[m].stopped = None
        auto.repilot = bool(others)

    @staticmethod
    def _switch_pays(states: dict[str, MethodState], current: str, choice: MethodChoice) -> bool:
        """Whether a switch from ``current`` to ``choice.method`` leaves, at the budget,
        a smaller variance of the mean than staying: the new method's analysis starts
        with its next run, so it has only the budget's rest, while the current method
        keeps its runs. ``score / seconds`` is that variance (the score is the variance
        per machine-second). Without a budget a switch always pays in the long run."""
        from ..adaptive.sequential import WIDTH_FIRST_LOOK

        budget = states[current].rule.budget_s
        if budget is None:
            return True
        rest = budget - seconds_of(states.values())
        new, cur = states[choice.method], states[current]
        if not new.reps or not rest > WIDTH_FIRST_LOOK * new.per_rep:  # not its first look
            return False
        kept = cur.seconds * (1.0 - cur.analyse_from / max(cur.reps, 1))
        return choice.scores[choice.method] / rest < choice.scores[current] / (kept + rest)

    def _auto_budget_spent(self, bench: str, auto: AutoState) -> bool:
        """Whether another repetition of any of the methods would overrun the budget of
        a method-auto benchmark (its methods' seconds together; False without a budget)."""
        states = [self.states[stop_key(bench, m)] for m in auto.methods]
        budget = states[0].rule.budget_s
        if budget is None:
            return False
        return seconds_of(states) + max(st.per_rep for st in states) > budget
