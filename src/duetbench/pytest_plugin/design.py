"""How many runs, and how many samples of each test per run, fit the budget
(docs/pytest.md, "Cost").

A run is one pytest process per side that runs every selected benchmark test, each
test's ``benchmark`` call taking its samples; so a run costs

    overhead + sum over tests of (warm-up + samples) x (sample + setup per sample)

where ``overhead`` is what the calibration pass measured besides its benchmark calls:
interpreter, pytest, collection, fixtures, the tests' own code, and the executor's
start of each side. The design spends what the budget leaves after the calibration on

- **runs**: the unit of the interval (each a fresh pair of processes, so a process's
  own layout and hash seed is noise between runs, not a bias); enough of them that
  a run's sampling is no longer than about twice its overhead -- more runs are
  worth more than longer ones once a run holds a few dozen samples of every test --
  from :data:`MIN_RUNS` to :data:`MAX_RUNS`, or the ``--duet-runs`` asked for;
- **samples**: every test the same sampling time in a run, at least
  :data:`MIN_SAMPLES` each (a test whose samples are long gets that many, and the
  others share the rest).

Pure: numbers in, a :class:`Design` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

#: fewer runs give an interval too wide to say much (t with 2 df is 4.3)
MIN_RUNS = 3
#: runs when the budget allows them all (and the --duet-runs default)
DEFAULT_RUNS = 10
#: more runs than this add little to the interval for their overheads
MAX_RUNS = 60
#: samples of a test per run, at least: its run value is their minimum
MIN_SAMPLES = 5
#: samples of a test per run, at most (a few thousand 1 ms samples settle a minimum)
MAX_SAMPLES = 5000
#: a run's sampling may take this many times its overhead before more runs are planned
SAMPLING_PER_OVERHEAD = 2.0
#: the least share of its planned samples a paced run takes (see :func:`paced_share`)
MIN_SHARE = 0.25


class BudgetTooSmall(Exception):
    """Not even :data:`MIN_RUNS` runs of :data:`MIN_SAMPLES` samples fit; ``needed_s`` is
    the budget that would have fitted them."""

    def __init__(self, message: str, needed_s: float) -> None:
        super().__init__(message)
        self.needed_s = needed_s


@dataclass(frozen=True)
class TestCost:
    """What one sample of a test costs (seconds): the sample itself, on the slower side
    (``sample_s``), and the untimed work before it (``prepare_s``: pedantic's setup)."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    name: str
    sample_s: float
    prepare_s: float = 0.0

    @property
    def per_sample_s(self) -> float:
        return self.sample_s + self.prepare_s


@dataclass(frozen=True)
class Design:
    """``runs`` runs, each taking ``samples[test]`` samples (after ``warmup``) of every
    test; ``run_s`` is what a run is predicted to take."""

    runs: int
    samples: dict[str, int]
    warmup: int
    run_s: float
    overhead_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def total_s(self) -> float:
        return self.runs * self.run_s


def run_seconds(
    tests: Sequence[TestCost], samples: dict[str, int], overhead_s: float, warmup: int
) -> float:
    """Predicted seconds of one run."""
    return overhead_s + sum((warmup + samples[t.name]) * t.per_sample_s for t in tests)


def share_samples(
    tests: Sequence[TestCost], sampling_s: float, *, minimum: int = MIN_SAMPLES
) -> dict[str, int]:
    """Samples per test so that every test gets the same sampling time of ``sampling_s``
    in all, none fewer than ``minimum`` (those take their minimum and the others share
    what is left), none more than :data:`MAX_SAMPLES`."""
    fixed: dict[str, int] = {}
    left = list(tests)
    budget = sampling_s
    while left:
        share = budget / len(left)
        short = [t for t in left if minimum * t.per_sample_s > share]
        if not short:
            break
        for t in short:
            fixed[t.name] = minimum
            budget -= minimum * t.per_sample_s
        left = [t for t in left if t.name not in fixed]
    out = dict(fixed)
    if left:
        share = max(0.0, budget) / len(left)
        for t in left:
            per = max(t.per_sample_s, 1e-9)
            out[t.name] = int(min(MAX_SAMPLES, max(minimum, math.floor(share / per + 1e-9))))
    return {t.name: out[t.name] for t in tests}


def plan_runs(
    tests: Sequence[TestCost],
    overhead_s: float,
    available_s: float,
    *,
    runs: int | None = None,
    samples: int | None = None,
    warmup: int = 1,
) -> Design:
    """The design for ``available_s`` seconds of runs (see the module doc); ``runs``,
    ``samples``: what the user asked for (``--duet-runs``, ``--duet-samples``), kept
    where the budget allows, else fewer runs with a note.

    Raises :class:`BudgetTooSmall` when not even :data:`MIN_RUNS` runs of
    :data:`MIN_SAMPLES` (or ``samples``) samples of every test fit."""
    if not tests:
        raise ValueError("no tests to plan")
    least = samples if samples is not None else MIN_SAMPLES
    floor = {t.name: least for t in tests}
    floor_run = run_seconds(tests, floor, overhead_s, warmup)
    if runs is None:
        wanted = max(floor_run, (1.0 + SAMPLING_PER_OVERHEAD) * overhead_s)
        runs_wanted = min(MAX_RUNS, max(DEFAULT_RUNS, math.floor(available_s / wanted)))
    else:
        runs_wanted = runs
    affordable = math.floor(available_s / floor_run) if floor_run > 0 else runs_wanted
    n = min(runs_wanted, affordable)
    if n < min(MIN_RUNS, runs_wanted):
        needed = min(MIN_RUNS, runs_wanted) * floor_run
        raise BudgetTooSmall(
            f"a run of these tests takes about {floor_run:.1f} s (pytest, collection and "
            f"fixtures {overhead_s:.1f} s, and {least} samples of each test), and "
            f"{max(0.0, available_s):.1f} s are left of the budget after the calibration: "
            f"fewer than {min(MIN_RUNS, runs_wanted)} runs",
            needed,
        )
    notes: list[str] = []
    if n < runs_wanted:
        notes.append(
            f"the budget affords {n} runs of {runs_wanted} "
            f"({floor_run:.1f} s each at the least); a longer --duet-budget gives narrower "
            "intervals"
        )
    if samples is not None:
        per_test = dict(floor)
    else:
        sampling = available_s / n - overhead_s - warmup * sum(t.per_sample_s for t in tests)
        per_test = share_samples(tests, sampling)
    run_s = run_seconds(tests, per_test, overhead_s, warmup)
    return Design(n, per_test, warmup, run_s, overhead_s, tuple(notes))


def paced_share(took_s: float, share: float, design: Design) -> float:
    """The share of the planned samples the next run takes, after a run that took
    ``took_s`` seconds with ``share`` of them (docs/pytest.md, "Cost").

    Beside other work the sampling slows most -- every sample is a handshake of the two
    sides, and each waits for a time slice -- so the time a run took beyond its overhead
    is put on its samples: at ``(took - overhead) / share`` seconds for all the planned
    samples, the share that fits the planned ``run_s`` is ``share x (run_s - overhead)
    / (took - overhead)``. The runs, the unit of the interval, go on at the planned pace
    with fewer samples each instead of fewer runs. Never above 1 (the budget was
    planned for 1), never below :data:`MIN_SHARE` (where the overhead itself slowed,
    fewer samples would save little)."""
    spent = took_s - design.overhead_s
    room = design.run_s - design.overhead_s
    if spent <= 0.0 or room <= 0.0:
        return share
    return min(1.0, max(MIN_SHARE, share * room / spent))


def paced_samples(planned: int, share: float) -> int:
    """A test's samples in a run that takes ``share`` of the planned ones: at least
    :data:`MIN_SAMPLES` (or all of them, when fewer were planned)."""
    return max(min(planned, MIN_SAMPLES), min(planned, round(planned * share)))
