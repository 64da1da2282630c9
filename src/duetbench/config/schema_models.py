"""pydantic models of the two config formats: validation only, at the boundary."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
)

from ..units import duration, percentage
from .limits import (
    MAX_CORES,
    MAX_CPU,
    MAX_ITERATIONS,
    MAX_RETRIES,
    MAX_RUNS,
    MAX_SEED,
)


def _duration(v: Any) -> Any:
    """Accept 30, 2.5, "90s", "500ms", "5m", "1h" (seconds), from 1 ms to 30 days."""
    return duration(v)


def _fraction(v: Any) -> Any:
    """Accept 2%, "0.5 %", 0.02 (a fraction), from 0 % to below 100 %."""
    return percentage(v)


def _hang_timeout(v: Any) -> Any:
    """`hang_timeout`: a duration, or off (`off`, `false`, `none`, `0`: no hang detection)."""
    if v is False or v == 0 or (isinstance(v, str) and v.strip().lower() in _OFF):
        return 0.0
    if v is True:
        raise ValueError("write a duration such as '120s' or '5m', or off")
    return _duration(v)


_OFF = ("off", "no", "none", "false", "0")


def _str_map(v: Any) -> Any:
    if isinstance(v, dict):
        out = {}
        for k, val in v.items():
            if isinstance(val, dict | list) or val is None:
                raise ValueError(f"value of '{k}' must be a string or number")
            out[str(k)] = str(val).lower() if isinstance(val, bool) else str(val)
        return out
    return v


def _cpus(v: Any) -> Any:
    if isinstance(v, list):
        for x in v:
            _count(x)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("auto", "pinned", "shared", "none"):
            return s
        try:
            return [int(x) for x in re.split(r"[,\s]+", s) if x]
        except ValueError:
            raise ValueError(
                f"'{v}' is not a CPU list; write auto, pinned, shared, or a list of CPU numbers "
                "like [0, 1] (docs/config.md, `cpus`)"
            ) from None
    if v is None:
        return "none"
    return v


def _str_list(v: Any) -> Any:
    if isinstance(v, str | int | float) and not isinstance(v, bool):
        return [str(v)]
    if isinstance(v, list):
        return [_text(x) for x in v]
    return v


def _text(v: Any) -> Any:
    """A string; a YAML number such as ``run: 1`` or ``name: 2017`` is taken as its text."""
    if isinstance(v, bool):
        raise ValueError(
            f"{str(v).lower()} is a boolean here: YAML reads unquoted yes/no/on/off/true/false "
            "as booleans. Put the value in quotes"
        )
    if isinstance(v, int | float):
        return str(v)
    return v


def _command(v: Any) -> Any:
    """A shell command: a string, or a list of words (quoted for the shell and joined)."""
    if isinstance(v, list):
        if not v or any(isinstance(x, dict | list) or x is None for x in v):
            raise ValueError("a command given as a list must be a non-empty list of words")
        return shlex.join(str(_text(x)) for x in v)
    return _text(v)


def _count(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"expected a whole number such as 5, not {str(v).lower()}")
    return v


def _at_most(limit: int, what: str) -> Callable[[int], int]:
    """A bound on a whole number, said with the limit; pydantic adds the value."""

    def check(v: int) -> int:
        if v > limit:
            raise ValueError(f"{what} can be at most {limit:,} (docs/config.md, section Limits)")
        return v

    return check


def _cpu_list(v: Any) -> Any:
    if isinstance(v, list):
        if not v:
            raise ValueError("the CPU list is empty; list CPU numbers, or write auto or none")
        twice = sorted({c for c in v if v.count(c) > 1})
        if twice:
            raise ValueError(f"CPU {twice[0]} is listed twice; the sides of a duet would share it")
    return v


def _number(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"expected a number such as 16, not {str(v).lower()}")
    return v


def _thesis_timeout(v: Any) -> Any:
    """The thesis tool's timeout: seconds, where 0 or less means none (0.0 here)."""
    if isinstance(v, int | float) and not isinstance(v, bool) and v <= 0:
        return 0.0
    if isinstance(v, str) and v.strip().lstrip("-").replace(".", "", 1).isdigit():
        if float(v) <= 0:
            return 0.0
    return _duration(v)


Duration = Annotated[float, BeforeValidator(_duration)]
Fraction = Annotated[float, BeforeValidator(_fraction)]
HangTimeout = Annotated[float, BeforeValidator(_hang_timeout)]  # 0.0: off
StrMap = Annotated[dict[str, str], BeforeValidator(_str_map)]
Cpu = Annotated[
    NonNegativeInt, BeforeValidator(_count), AfterValidator(_at_most(MAX_CPU, "a CPU number"))
]
Cpus = Annotated[
    Literal["auto", "pinned", "shared", "none"] | Annotated[list[Cpu], AfterValidator(_cpu_list)],
    BeforeValidator(_cpus),
]
StrList = Annotated[list[str], BeforeValidator(_str_list)]
Text = Annotated[str, BeforeValidator(_text)]
Command = Annotated[str, BeforeValidator(_command)]
Count = Annotated[
    NonNegativeInt,
    BeforeValidator(_count),
    AfterValidator(_at_most(MAX_RUNS, "a repetition count")),
]
Iterations = Annotated[
    PositiveInt, BeforeValidator(_count), AfterValidator(_at_most(MAX_ITERATIONS, "iterations"))
]
Seed = Annotated[
    NonNegativeInt, BeforeValidator(_count), AfterValidator(_at_most(MAX_SEED, "the seed"))
]
Retries = Annotated[
    NonNegativeInt, BeforeValidator(_count), AfterValidator(_at_most(MAX_RETRIES, "retries"))
]
Cores = Annotated[
    PositiveInt, BeforeValidator(_count), AfterValidator(_at_most(MAX_CORES, "a number of cores"))
]
ThesisTimeout = Annotated[float, BeforeValidator(_thesis_timeout)]
WarmupCount = Annotated[
    NonNegativeInt, BeforeValidator(_count), AfterValidator(_at_most(MAX_ITERATIONS, "warmup"))
]
Warmup = Literal["half"] | WarmupCount
Schedule = Literal["sequential", "rmit", "randomized_interleaving_trials"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


# ----------------------------------------------------------------------------- native


class NativeRepetitions(_Strict):
    seqn: Count = 0
    aduet: Count = 0
    sduet: Count = 0
    inproc: Count = 0  # Python-function benchmarks only (docs/micro.md)


class NativeSide(_Strict):
    command: Command | None = None
    sync_command: Command | None = None
    image: Text | None = None
    results: StrList | None = None
    env: StrMap | None = None
    workdir: Text | None = None
    setup: Command | None = None
    teardown: Command | None = None
    mounts: StrList | None = None
    # harness: python (duet micro's worker; docs/micro.md, "In a duet.yml")
    python: Text | None = None
    path: StrList | None = None
    target: Text | None = None
    benchmark: Text | None = None


class NativeBenchmark(NativeSide):
    harness: Text | None = None
    keep_gc: bool | None = None
    cpu_swap: bool | None = None  # harness: python, pinned sides swap CPUs (docs/micro.md)
    suite: Text | None = None
    repetitions: NativeRepetitions | Count | None = None
    timeout: Duration | None = None
    hang_timeout: HangTimeout | None = None
    iterations: Iterations | None = None
    time_budget: Duration | None = None
    warmup: Warmup | None = None
    busy_shorter_side: bool | None = None
    self_sync: bool | None = None  # the command waits at the sduet handshake by itself
    cpus: Cpus | None = None
    stop: dict[str, Any] | None = None  # checked by config/stop.py
    methods: Literal["auto"] | None = None  # docs/adaptive.md, "Choosing the method"
    A: NativeSide | None = None
    B: NativeSide | None = None


def _regex_list(v: Any) -> Any:
    """A regular expression or a list of them (any may match); each must compile."""
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items or not all(isinstance(x, str) for x in items):
        raise ValueError("expected a regular expression or a list of them")
    for x in items:
        try:
            re.compile(x)
        except re.error as exc:
            raise ValueError(f"'{x}' is not a valid regular expression ({exc})") from None
    return items


RegexList = Annotated[list[str], BeforeValidator(_regex_list)]
PositiveNumber = Annotated[float, BeforeValidator(_number), Field(gt=0, allow_inf_nan=False)]


class NativeHosts(_Strict):
    """Host requirements for runs on a Dask cluster (docs/cluster.md); all keys must hold."""

    host: RegexList | None = None
    cpu_model: RegexList | None = None
    kernel: RegexList | None = None
    os: RegexList | None = None
    machine: RegexList | None = None
    virtualization: RegexList | None = None
    container_engine: RegexList | None = None
    min_cores: Cores | None = None
    max_cores: Cores | None = None
    min_memory_gb: PositiveNumber | None = None
    max_memory_gb: PositiveNumber | None = None


class NativeExperiment(_Strict):
    name: Text
    seed: Seed = 0  # numpy seeds are non-negative
    schedule: Schedule = "rmit"
    repetitions: NativeRepetitions | Count | None = None
    timeout: Duration | None = None
    hang_timeout: HangTimeout | None = None
    artifacts: StrMap | None = None
    default_artifacts: bool = True
    executor: Literal["local", "docker", "podman"] = "local"
    engine: str | None = None
    engine_options: StrList = Field(default_factory=list)
    run_options: StrList = Field(default_factory=list)
    remove_containers: bool = True
    kill_grace: Duration = 5.0
    background: Command | None = None
    setup: Command | None = None
    teardown: Command | None = None
    retries: Retries = 0
    design: Literal["default", "balanced"] = "default"
    hosts: NativeHosts | None = None
    stop: dict[str, Any] | None = None  # checked by config/stop.py
    methods: Literal["auto"] | None = None  # docs/adaptive.md, "Choosing the method"
    #: what an iteration's time is (docs/statistics.md, "Beside other work: CPU time")
    measure: Literal["auto", "wall", "cpu"] = "auto"
    #: the verdicts' practical threshold (docs/statistics.md, "Verdicts")
    threshold: Fraction = 0.0


class NativeConfig(_Strict):
    experiment: NativeExperiment
    defaults: NativeBenchmark | None = None
    benchmarks: dict[str, NativeBenchmark]


# ----------------------------------------------------------------------------- thesis


class ThesisSide(_Strict):
    """`A:` / `B:` of a thesis benchmark section (the thesis tool's BenchmarkConfig)."""

    run: Command | None = None  # inherited from the benchmark section when missing
    run_base: Command | None = None
    syncduet_run_base: Command | None = None
    image: Text | None = None
    results: StrList | None = None
    env: StrMap | None = None
    workdir: Text | None = None


class _ThesisInheritable(_Strict):
    """Keys a benchmark section inherits from the `duetbench:` section."""

    suite: Text | None = None
    image: Text | None = None
    results: StrList | None = None
    run: Command | None = None  # accepted by the thesis tool here; sides inherit it
    run_base: Command | None = None
    syncduet_run_base: Command | None = None
    timeout: ThesisTimeout | None = None
    duet_repetitions: Count | None = None
    syncduet_repetitions: Count | None = None
    sequential_repetitions: Count | None = None
    repetitions: Count | None = None  # older thesis configs: duet repetitions
    repetitions_type: Literal["in_order", "random", "swap"] | None = None  # older; not used
    sequential_repetitions_type: Literal["in_order", "random", "swap"] | None = None  # ditto
    sequential: Literal["after", "none"] | None = None  # ditto
    schedule: Schedule | None = None
    remove_containers: bool | None = None
    verbose: bool | None = None
    # duetbench extensions, usable in the thesis format as well
    harness: Text | None = None
    iterations: Iterations | None = None
    time_budget: Duration | None = None
    warmup: Warmup | None = None
    env: StrMap | None = None
    workdir: Text | None = None
    cpus: Cpus | None = None
    hang_timeout: HangTimeout | None = None
    busy_shorter_side: bool | None = None


class ThesisBenchmark(_ThesisInheritable):
    A: ThesisSide | None = None  # required; `A:` left empty means `A: {}` (run inherited)
    B: ThesisSide | None = None


def _artifacts(v: Any) -> Any:
    if v is not None and not isinstance(v, dict):
        raise ValueError(
            "`artifacts:` maps a name to a command, e.g. `lscpu: lscpu` and "
            "`meminfo: cat /proc/meminfo`, one per line"
        )
    return _str_map(v)


def _duets(v: Any) -> Any:
    if v is None:
        raise ValueError("`duets:` is empty; list the names of the benchmark sections to run")
    return _str_list(v)


class ThesisSection(_ThesisInheritable):
    name: Text | None = None
    seed: Seed | None = None
    docker_command: Text | None = None
    artifacts: Annotated[dict[str, str], BeforeValidator(_artifacts)] | None = None
    duets: Annotated[list[str], BeforeValidator(_duets)]
    executor: Literal["local", "docker", "podman"] | None = None
