"""The state of one adaptive benchmark x method while an experiment runs: its rule, the
run values it took, the machine seconds they cost and its decisions (docs/adaptive.md,
"Using it"). :class:`~.adaptive.StopTracker` keeps one per benchmark x method;
:class:`~.method_pilot.MethodPilot` reads and sets them for ``method: auto``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config.stop import StopSettings
from ..plan import RunSpec
from ..records import RunRecord

if TYPE_CHECKING:
    import pandas as pd

    from ..adaptive.rules import Decision, StopRule

__all__ = ["KEY_SEP", "MethodState", "seconds_of", "stop_key"]

#: separates benchmark and method in the keys of stops.json
KEY_SEP = "/"


def stop_key(benchmark: str, method: str) -> str:
    """The key of a benchmark x method in the tracker and in stops.json."""
    return f"{benchmark}{KEY_SEP}{method}"


@dataclass
class MethodState:
    """One adaptive benchmark x method: values per table benchmark (a multi-workload
    suite has several), machine seconds, repetitions done, and the decision."""

    settings: StopSettings
    rule: StopRule
    key: str = ""  # stop_key(benchmark, method)
    values: dict[str, list[float]] = field(default_factory=dict)
    value_runs: dict[str, list[int]] = field(default_factory=dict)  # the rep of every value
    tables: dict[int, pd.DataFrame] = field(default_factory=dict)  # rep -> its iterations
    seconds: float = 0.0
    reps: int = 0
    pending: dict[int, list[RunRecord]] = field(default_factory=dict)  # seqn halves
    decisions: dict[str, Decision] = field(default_factory=dict)  # table benchmark -> its
    stopped: str | None = None  # the stop reason once stopped
    skipped: list[str] = field(default_factory=list)
    analyse_from: int = 0  # method auto: values before this are left out (a switch)
    first_look: int = 0  # method auto: the fewest analysed runs its rule may stop at
    next_rep: int = 0  # runs are taken in repetition order (a cluster finishes them out of order)
    waiting: dict[int, list[tuple[RunSpec, RunRecord]]] = field(default_factory=dict)
    # repetitions never to be taken: skipped, or finished while stopped (method auto may
    # choose this method again later; its next repetition must not wait for them)
    passed: set[int] = field(default_factory=set)

    @property
    def benchmark(self) -> str:
        return self.key.rpartition(KEY_SEP)[0]

    @property
    def method(self) -> str:
        return self.key.rpartition(KEY_SEP)[2]

    @property
    def per_rep(self) -> float:
        """Machine seconds of one repetition so far (0 before the first)."""
        return self.seconds / self.reps if self.reps else 0.0


def seconds_of(states: Iterable[MethodState]) -> float:
    """Machine seconds of these benchmark x methods together."""
    return sum(st.seconds for st in states)
