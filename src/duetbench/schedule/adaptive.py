"""Measuring until sure in the scheduler (docs/adaptive.md, "Using it").

An adaptive benchmark x method is planned up to ``stop.max_runs`` repetitions in RMIT
rounds (plan.py). After every finished run the :class:`StopTracker` parses only that
run's sides (``process.run_table``), keeps its iterations and machine seconds, and asks
:func:`duetbench.adaptive.decide` with the run values of the runs it took -- computed
from those runs by the function every command's verdict rests on
(:func:`duetbench.adaptive.results.analysed_values`, with the analysis options written
to ``stops.json``), so the interval it stops on is the one `duet compare`, the gate and
the history show; once a benchmark x method stops, its remaining planned runs are
skipped (recorded in ``stops.json``, never as failures).
``--resume`` replays the finished runs in plan order through the same tracker, so it
reaches the decisions an uninterrupted run would have, and continues the same rule.

Every benchmark x method, measured until sure or not, is stopped once its first
:data:`FAILED_RUNS_STOP` finished runs all failed with none usable: no number of runs
decides a benchmark that does not run, in any command (docs/results.md, "Runs that
fail"); its remaining planned runs are not run, and the experiment's notes say why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..config.stop import StopSettings
from ..errors import DuetError
from ..options import CompareOptions
from ..plan import RunSpec
from ..records import RunRecord
from ..schema import Method
from ..store import ResultsStore
from .method_pilot import AutoState, MethodPilot
from .stop_state import KEY_SEP, MethodState, stop_key

if TYPE_CHECKING:  # the analysis is imported when a rule first decides: not for a fixed plan
    from ..adaptive.prior import HostPriors, Prior

__all__ = ["FAILED_RUNS_STOP", "KEY_SEP", "StopTracker", "stop_key"]

#: a benchmark x method whose first this many finished runs all failed (none usable:
#: ok, or timed out with iterations) is stopped -- in `duet run`, `duet gate` and `duet
#: bisect` alike (docs/results.md, "Runs that fail")
FAILED_RUNS_STOP = 3

#: the analysis options that make the run values a stopping rule decides on (stops.json
#: ``analysis``): every command analyses an adaptive experiment's runs with them
RULE_OPTIONS = (
    "measure",
    "run_stat",
    "min_overlap",
    "overlap_rate",
    "min_run_pairs",
    "warmup",
    "keep_unbalanced",
)


@dataclass
class _Failures:
    """The finished runs of one benchmark x method so far: usable ones (ok, timeout), the failed ones
    (while none was usable), and the planned runs not run once it stopped."""

    usable: int = 0
    failed: list[RunRecord] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)

    @property
    def stopped(self) -> bool:
        return not self.usable and len(self.failed) >= FAILED_RUNS_STOP


def _cause(record: RunRecord) -> str:
    """A failed run's cause in a line: its message and each failed side's exit status."""
    from ..schema import SideStatus

    parts = [
        f"{record.run_id}: {record.status}" + (f", {record.message}" if record.message else "")
    ]
    for name, side in sorted(record.sides.items()):
        if side.status == SideStatus.FAILED:
            tail = side.stderr_tail.strip().splitlines()[-1:] if side.stderr_tail else []
            said = f" ({tail[0].strip()})" if tail else ""
            parts.append(f"side {name} exited with {side.exit_code}{said}")
    return "; ".join(parts)


def _run_seconds(record: RunRecord) -> float:
    if record.start_ns is not None and record.end_ns is not None:
        return max(0.0, (record.end_ns - record.start_ns) / 1e9)
    return 0.0


class StopTracker:
    """The stopping decisions of an experiment's adaptive benchmarks (none: inert); the
    choice of ``method: auto`` is its :class:`~.method_pilot.MethodPilot` (``pilot``)."""

    def __init__(
        self,
        store: ResultsStore,
        plan: list[RunSpec],
        stops: dict[str, StopSettings],
        options: CompareOptions | None = None,
    ):
        self.store = store
        self.plan = plan
        #: how run values are made (the verdicts' defaults): written to stops.json, so every
        #: command analyses the runs the rule took as the rule did
        self.options = (options or CompareOptions()).checked()
        self.states: dict[str, MethodState] = {}
        if stops:  # the rules import the analysis (half a second): only when there are some
            from ..adaptive import StopRule

            self.states = {
                k: MethodState(s, StopRule.create(**s.rule_kwargs()), k) for k, s in stops.items()
            }
        self.pilot = MethodPilot(self.states, self)
        #: this host's priors in a results repository (``duet run --repo``;
        #: docs/adaptive.md, "Stopping with the repository's priors"): per (table
        #: benchmark, method) the prior its rule decides with, and method auto chooses by
        self.history: HostPriors | None = None
        self._taken: Any = None  # the iterations of the repetition being taken
        #: run ids the plan has passed: observed, or skipped as their method had stopped
        self._done: set[str] = set()
        self._runs_of: dict[str, set[str]] = {}  # stop key -> its planned run ids
        for spec in plan:
            self._runs_of.setdefault(stop_key(spec.benchmark, spec.method), set()).add(spec.run_id)
        #: stop key -> its failures (every benchmark x method, adaptive or not)
        self.failures: dict[str, _Failures] = {}

    @classmethod
    def for_experiment(cls, store: ResultsStore, exp: Any, plan: list[RunSpec]) -> StopTracker:
        stops: dict[str, StopSettings] = {}
        for b in exp.benchmarks:
            if b.stop is None:
                continue
            for m in Method:
                if b.reps(m) > 0:
                    stops[stop_key(b.name, str(m))] = b.stop
        # the analysis of every command, with the config's measure (wall or CPU time)
        measure = getattr(exp, "measure", None) or CompareOptions.measure
        tracker = cls(store, plan, stops, CompareOptions(measure=measure))
        for b in exp.benchmarks:
            if b.auto:
                tracker.pilot.add(b.name, tuple(str(m) for m in Method if b.reps(m) > 0))
        return tracker

    @property
    def active(self) -> bool:
        return bool(self.states)

    @property
    def autos(self) -> Mapping[str, AutoState]:
        """Method auto's state per benchmark (its pilot's)."""
        return self.pilot.autos

    @property
    def priors(self) -> Mapping[tuple[str, str], Prior]:
        """(table benchmark, method) -> the repository's prior (empty without one)."""
        return {} if self.history is None else self.history.priors

    def failed_out(self, spec: RunSpec) -> bool:
        """Whether ``spec``'s benchmark x method stopped because its runs failed."""
        f = self.failures.get(stop_key(spec.benchmark, spec.method))
        return f is not None and f.stopped

    def failure_notes(self) -> list[str]:
        """One note per benchmark x method stopped because its runs failed."""
        notes = []
        for key, f in sorted(self.failures.items()):
            if f.stopped:
                bench, _, method = key.rpartition(KEY_SEP)
                notes.append(
                    f"benchmark '{bench}' ({method}): its first {len(f.failed)} runs failed "
                    f"and none was usable, so its other {len(f.not_run)} planned runs were "
                    f"not run (docs/results.md, 'Runs that fail'); the first, "
                    f"{_cause(f.failed[0])}"
                )
        return notes

    def _count(self, spec: RunSpec, record: RunRecord) -> bool:
        """Count a finished run of ``spec``; True when its benchmark x method stops now
        because its runs failed."""
        from ..schema import USABLE_STATUSES

        if not record.finished:
            return False
        f = self.failures.setdefault(stop_key(spec.benchmark, spec.method), _Failures())
        if f.stopped:
            return False
        if record.status in USABLE_STATUSES:
            f.usable += 1
        elif not f.usable:
            f.failed.append(record)
        return f.stopped

    def skips(self, spec: RunSpec) -> bool:
        """Whether ``spec`` belongs to a stopped benchmark x method (skip it)."""
        key = stop_key(spec.benchmark, spec.method)
        f = self.failures.get(key)
        if f is not None and f.stopped and key not in self.states:
            self._done.add(spec.run_id)
            if spec.run_id not in f.not_run:
                f.not_run.append(spec.run_id)
            return True
        if f is not None and f.stopped and spec.run_id not in f.not_run:
            f.not_run.append(spec.run_id)
        st = self.states.get(key)
        if st is None or st.stopped is None:
            return False
        self._done.add(spec.run_id)
        st.passed.add(spec.rep)
        if spec.run_id not in st.skipped:
            st.skipped.append(spec.run_id)
        return True

    def observe(self, spec: RunSpec, record: RunRecord) -> bool:
        """Take a finished run; True when its benchmark x method stops with it.

        Runs are taken in repetition order: one that finishes before an earlier
        repetition of its benchmark x method (on a cluster) waits for it, so the
        decisions are those of the plan's order, as ``--resume`` replays them."""
        self._done.add(spec.run_id)
        failed_now = self._count(spec, record)
        st = self.states.get(stop_key(spec.benchmark, spec.method))
        if st is None:
            return failed_now
        if failed_now and st.stopped is None:  # no run decides a benchmark that does not run
            st.stopped = "failed"
            return True
        if st.stopped is not None:  # finished after its rule stopped (a cluster)
            st.passed.add(spec.rep)
            return False
        st.waiting.setdefault(spec.rep, []).append((spec, record))
        stopped = False
        need = 2 if spec.method == Method.SEQN else 1
        while st.stopped is None:
            if st.next_rep in st.passed:  # skipped while another method was chosen
                st.waiting.pop(st.next_rep, None)
                st.next_rep += 1
            elif len(st.waiting.get(st.next_rep, ())) >= need:
                for s2, r2 in st.waiting.pop(st.next_rep):
                    stopped |= self._take(st, s2, r2)
                st.next_rep += 1
            else:
                break
        return stopped

    def _take(self, st: MethodState, spec: RunSpec, record: RunRecord) -> bool:
        if st.stopped is not None:
            return False
        st.seconds += _run_seconds(record)
        if spec.method == Method.SEQN:
            halves = st.pending.setdefault(spec.rep, [])
            halves.append(record)
            if len(halves) < 2:
                return False
            del st.pending[spec.rep]
            records = halves
        else:
            records = [record]
        st.reps += 1
        self._taken = None
        for bench, value in self._values(records).items():
            st.values.setdefault(bench, []).append(value)
            st.value_runs.setdefault(bench, []).append(spec.rep)
        if self._taken is not None and any(spec.rep in r for r in st.value_runs.values()):
            st.tables[spec.rep] = self._taken  # what the decisions compute the values from
        if spec.benchmark in self.pilot.autos and not self.pilot.choose(
            spec.benchmark, spec.method
        ):
            return False  # the pilot goes on
        if st.stopped is not None:  # not the method chosen
            return True
        stopped = self.decide(st)
        self.pilot.after_decision(st, stopped)
        return stopped

    def method_values(self, bench: str, method: str) -> list[float]:
        """The run values of ``bench`` x ``method`` taken so far (the benchmark's own, or
        its suite's first workload's), in run order."""
        st = self.states[stop_key(bench, method)]
        if bench in st.values:
            return st.values[bench]
        return st.values[min(st.values)] if st.values else []

    def _table(self, records: list[RunRecord]) -> Any:
        """The iterations of one repetition (a seqn one: both runs), None: nothing usable."""
        import pandas as pd

        from ..process import run_table

        tables = [t for r in records if (t := run_table(self.store, r)) is not None]
        return pd.concat(tables, ignore_index=True) if tables else None

    def _values(self, records: list[RunRecord]) -> dict[str, float]:
        """The run value of one repetition per table benchmark (what method auto compares);
        its iterations are kept in ``_taken``."""
        from ..adaptive import run_level_values

        table = self._taken = self._table(records)
        if table is None:
            return {}
        try:
            values = run_level_values(table, self.options, by=("benchmark", "method"))
        except DuetError:  # e.g. a run without pairs: no value (the rule waits for more)
            return {}
        return {
            str(key[0]): float(v[-1])
            for key, v in values.items()
            if len(v) and math.isfinite(v[-1])
        }

    def _analysed(self, st: MethodState, bench: str) -> tuple[list[int], Any]:
        """The repetitions the rule takes for ``bench`` (after a method auto switch) and
        their run values, computed from those runs together as every command does."""
        import numpy as np
        import pandas as pd

        from ..adaptive.results import analysed_values

        reps = st.value_runs.get(bench, [])[st.analyse_from :]
        tables = [st.tables[r] for r in reps if r in st.tables]
        if not tables:  # values given without their iterations
            return reps, np.asarray(st.values.get(bench, [])[st.analyse_from :])
        method = st.method
        table = pd.concat(tables, ignore_index=True)
        try:
            return reps, analysed_values(table, bench, method, reps, self.options)
        except DuetError:
            return reps, np.asarray(st.values.get(bench, [])[st.analyse_from :])

    def decide(self, st: MethodState) -> bool:
        """Ask ``st``'s rule with its run values (each table benchmark's, with its prior);
        True when it stops -- decided, or at its planned runs or budget."""
        from ..adaptive import StopReason, decide, with_first_look

        rule = with_first_look(st.rule, st.first_look)
        others = self.pilot.spent_elsewhere(st)
        if others and rule.budget_s is not None:  # method auto: the rest of the budget
            rule = replace(rule, budget_s=max(rule.budget_s - others, 1e-9))
        method = st.method
        for bench in st.values:
            _reps, vals = self._analysed(st, bench)
            prior = self.priors.get((bench, method))
            bench_rule = rule if prior is None else replace(rule, prior=prior)
            st.decisions[bench] = decide(vals, bench_rule, seconds=st.seconds)
        # the rule first: a run that decides and is also the last one allowed stopped
        # because it decided (its verdict stands), not because a limit ended it
        if st.decisions and all(d.stop for d in st.decisions.values()):
            reasons = {d.reason for d in st.decisions.values()}
            reason = reasons.pop() if len(reasons) == 1 else StopReason.DECIDED
        elif st.reps >= rule.max_runs or self.ran_out(st):  # the planned repetitions
            reason = StopReason.MAX_RUNS
        elif rule.budget_s is not None and st.reps and st.seconds + st.per_rep > rule.budget_s:
            reason = StopReason.BUDGET
        else:
            return False
        st.stopped = str(reason)
        return True

    def ran_out(self, st: MethodState) -> bool:
        """No planned run of ``st`` is left to come: method auto switched to it after the
        plan had passed some of its runs (skipped while another method was the choice)."""
        return not st.waiting and self._runs_of.get(st.key, set()) <= self._done

    def document(self) -> dict[str, Any]:
        """stops.json: per benchmark x method its rule, runs, seconds, decision(s), skips."""
        from ..adaptive.results import explain

        out: dict[str, Any] = {}
        for key, st in self.states.items():
            bench, _, method = key.rpartition(KEY_SEP)
            out[key] = {
                "benchmark": bench,
                "method": method,
                "stop": {
                    "until": st.settings.until,
                    "precision": st.settings.precision,
                    "threshold": st.settings.threshold,
                    "budget_s": st.settings.budget_s,
                    "max_runs": st.settings.max_runs,
                    "min_runs": st.settings.min_runs,
                    "design": st.settings.design,
                },
                "stopped": st.stopped,
                "runs": st.reps,
                "seconds": round(st.seconds, 3),
                "decisions": {
                    b: {**d.to_json(), "explanation": explain(d, st.stopped)}
                    for b, d in sorted(st.decisions.items())
                },
                "skipped": sorted(st.skipped),
                "analyse_from": st.analyse_from,
                "first_look": st.first_look,
                # the runs each decision analysed: `duet compare` takes exactly these (a
                # run that finished after the stop, on a cluster, is measured but not in)
                "analysed_runs": {
                    b: reps[st.analyse_from :] for b, reps in sorted(st.value_runs.items())
                },
            }
            priors = {
                b: p.stops_json()
                for (b, m), p in sorted(self.priors.items())
                # this benchmark's own (a suite's workloads: bench:workload, or as measured)
                if m == method and (b == bench or b.startswith(f"{bench}:") or b in st.values)
            }
            if priors:
                out[key]["priors"] = priors
            auto = self.pilot.autos.get(bench)
            if auto is not None:
                out[key]["auto"] = auto.to_json()
        return {
            "kind": "duetbench-stops",
            **({"history": self.history.source()} if self.history is not None else {}),
            # the analysis options the run values were made with (duet compare takes them)
            "analysis": {k: v for k, v in self.options.settings().items() if k in RULE_OPTIONS},
            "stops": out,
        }

    def use_priors(self, priors: HostPriors) -> None:
        """Decide with this host's priors in a results repository (``duet run --repo``):
        each rule with its benchmark x method's spread and shape, method auto choosing
        the methods they cost without a pilot; stops.json ``history`` says where they
        came from. A resumed experiment keeps the priors it started with (stops.json),
        so its decisions are the ones it would have reached."""
        from ..adaptive.prior import HostPriors

        stored = HostPriors.from_stops(self.store.stops() if hasattr(self.store, "stops") else None)
        self.history = stored if stored is not None else priors
        self.pilot.start(self.history.priors)

    def write(self) -> None:
        if self.active:
            self.store.write_stops(self.document())

    def replay(self, finished: set[str]) -> None:
        """Feed the runs already finished, in plan order (``--resume``)."""
        for spec in self.plan:
            st = self.states.get(stop_key(spec.benchmark, spec.method))
            if st is None:  # not measured until sure: only its failures count
                if self.failed_out(spec):
                    self.skips(spec)
                elif spec.run_id in finished:
                    record = self.store.read_run(spec.run_id)
                    if record is not None:
                        self.observe(spec, record)
            elif st.stopped is not None:
                if spec.run_id in finished:  # ran after its rule stopped it (a cluster)
                    self._done.add(spec.run_id)
                    st.passed.add(spec.rep)
                else:
                    self.skips(spec)  # as the run skipped it
            elif spec.run_id in finished:
                record = self.store.read_run(spec.run_id)
                if record is not None:
                    self.observe(spec, record)
