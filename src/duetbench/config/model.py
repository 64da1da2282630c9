"""The resolved experiment: frozen values that the planner and executors use.

Both config formats (the thesis's `duetbench:` format and the native one) load
into these. Everything here is plain data and JSON-serializable via ``to_dict``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .stop import StopSettings

#: Seconds every running side of a run may stay below 1 % of a CPU before the run is
#: stopped as ``hung`` (docs/config.md, "Hang detection"); ``hang_timeout: off`` disables it.
DEFAULT_HANG_TIMEOUT = 120.0

#: The thesis tool's artifact commands, collected per host by default.
DEFAULT_ARTIFACTS: dict[str, str] = {
    "lscpu": "lscpu",
    "meminfo": "cat /proc/meminfo",
    "uname": "uname -a",
    "hostname": "hostname",
    "date": "date",
}


@dataclass(frozen=True)
class Side:
    """How to run one side (A or B) of a benchmark."""

    command: str
    sync_command: str | None = None  # external harness under sduet; `$$` -> the sync directory
    image: str | None = None
    results: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None  # None: the side's private directory
    setup: str | None = None
    teardown: str | None = None
    mounts: tuple[str, ...] = ()  # container mounts "host:container[:opts]"


@dataclass(frozen=True)
class MicroSide:
    """One side of a micro benchmark: the interpreter, its source tree, what it times."""

    python: str
    target: str  # module:function, file.py[:name], or an asv suite directory
    benchmark: str | None = None  # the worker's --benchmark (a suite's or file's member)
    paths: tuple[str, ...] = ()  # first on the side's sys.path (its source tree)


@dataclass(frozen=True)
class MicroSpec:
    """A Python-function benchmark timed by duet micro's worker (docs/micro.md).

    Side A calibrates the evaluations per sample, side B is told the count; the side
    commands are built from this once the calibration is known (``micro/experiment.py``),
    and the calibrations are kept here, so experiment.json holds them for ``--resume``.
    """

    sides: tuple[tuple[str, MicroSide], ...]  # (("A", side), ("B", side))
    samples: int | None = None  # samples per run; None: from run_time_s and the calibration
    run_time_s: float | None = None  # seconds of sampling per run (when samples is None)
    warmup: int = 1  # warm-up samples per run (filler rows)
    keep_gc: bool = False
    min_sample_s: float = 0.001
    step_timeout_s: float | None = None  # bounds each setup, trial and sample
    evaluations: int | None = None  # set from A's calibration
    calibrations: tuple[tuple[str, str], ...] = ()  # (side, Calibration JSON text)
    inproc_command: str | None = None  # method inproc: one worker timing both sides
    cpu_swap: bool = True  # pinned sides take turns on both CPUs (docs/micro.md, "Placement")

    def side(self, pair: str) -> MicroSide:
        return dict(self.sides)[pair]


@dataclass(frozen=True)
class Benchmark:
    name: str
    sides: tuple[tuple[str, Side], ...]  # (("A", side), ("B", side))
    aa: bool  # B absent in the config: an A/A experiment
    harness: str = "command"  # built-in harness, or the name of a result parser
    suite: str = ""
    repetitions: tuple[tuple[str, int], ...] = (("seqn", 0), ("aduet", 1), ("sduet", 0))
    timeout: float | None = None  # seconds per run
    hang_timeout: float | None = DEFAULT_HANG_TIMEOUT  # idle seconds before "hung"; None: off
    iterations: int | None = 10  # built-in harness: iterations per run
    time_budget: float | None = None  # built-in harness: seconds per run (instead of iterations)
    warmup: int | str = 0  # iterations dropped by the analysis (int or "half")
    busy_shorter_side: bool = False  # keep the side that finishes first iterating (filler)
    cpus: str | tuple[int, ...] = (
        "auto"  # "auto" | "pinned" | "shared" | "none" | CPUs to draw from
    )
    micro: MicroSpec | None = None  # harness "micro": the worker's targets, calibrated at run
    # measure until sure (docs/adaptive.md): planned up to stop.max_runs, stopped by the rule
    stop: StopSettings | None = None
    # methods: auto -- a pilot of every method, then the best per machine-second
    auto: bool = False
    # each workload of a run's result files is a benchmark of that name, not
    # `<name>:<workload>` (the pytest plugin: one run samples every test; docs/results.md)
    workload_benchmarks: bool = False

    def side(self, pair: str) -> Side:
        return dict(self.sides)[pair]

    def reps(self, method: str) -> int:
        """Planned repetitions of ``method``: ``stop.max_runs`` for an adaptive benchmark."""
        n = dict(self.repetitions).get(method, 0)
        return self.stop.max_runs if self.stop is not None and n > 0 else n

    @property
    def external(self) -> bool:
        return self.harness != "command"


@dataclass(frozen=True)
class ContainerSettings:
    engine: str | None = None  # docker | podman | an explicit command
    global_options: tuple[str, ...] = ()
    run_options: tuple[str, ...] = ()
    remove_containers: bool = True


@dataclass(frozen=True)
class Experiment:
    name: str
    seed: int
    schedule: str  # sequential | rmit
    benchmarks: tuple[Benchmark, ...]
    artifacts: tuple[tuple[str, str], ...] = tuple(DEFAULT_ARTIFACTS.items())
    executor: str = "local"  # local | docker | podman
    container: ContainerSettings = field(default_factory=ContainerSettings)
    kill_grace: float = 5.0  # seconds between SIGTERM and SIGKILL on timeout
    background: str | None = None  # a command that lives as long as the experiment
    setup: str | None = None  # once before the first run
    teardown: str | None = None  # once after the last run
    retries: int = 0  # re-runs on another host when a worker dies (cluster)
    design: str = "default"  # default | balanced (cluster)
    hosts: tuple[tuple[str, Any], ...] = ()  # host requirements (cluster)
    source: str = ""  # the config file
    format: str = "native"  # native | thesis
    #: the analysis's default measure: auto | wall | cpu; `duet compare --measure`
    #: overrides it (docs/statistics.md, "Beside other work: CPU time")
    measure: str = "auto"
    #: the verdicts' practical threshold (a fraction); `duet compare --threshold` overrides it
    threshold: float = 0.0

    def benchmark(self, name: str) -> Benchmark:
        for b in self.benchmarks:
            if b.name == name:
                return b
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
