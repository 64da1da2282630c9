"""pydantic models of the two config formats: validation only, at the boundary."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, NonNegativeInt, PositiveInt

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}


def _duration(v: Any) -> Any:
    """Accept 30, 2.5, "90s", "500ms", "5m", "1h" (seconds)."""
    if isinstance(v, bool):
        raise ValueError("expected a duration such as 30, '90s' or '5m', not a boolean")
    if isinstance(v, int | float):
        if v <= 0:
            raise ValueError("a duration must be positive")
        return float(v)
    if isinstance(v, str):
        m = _DURATION.match(v)
        if not m:
            raise ValueError(f"'{v}' is not a duration; write e.g. 30, '90s', '500ms' or '5m'")
        return float(m.group(1)) * _UNITS[m.group(2)]
    raise ValueError("expected a duration such as 30, '90s' or '5m'")


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
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("auto", "none"):
            return s
        try:
            return [int(x) for x in re.split(r"[,\s]+", s) if x]
        except ValueError:
            raise ValueError(
                f"'{v}' is not a CPU list; write auto, none, or a list of CPU numbers like [0, 1]"
            ) from None
    if v is None:
        return "none"
    return v


def _str_list(v: Any) -> Any:
    if isinstance(v, str):
        return [v]
    return v


Duration = Annotated[float, BeforeValidator(_duration)]
StrMap = Annotated[dict[str, str], BeforeValidator(_str_map)]
Cpus = Annotated[Literal["auto", "none"] | list[NonNegativeInt], BeforeValidator(_cpus)]
StrList = Annotated[list[str], BeforeValidator(_str_list)]
Warmup = Literal["half"] | NonNegativeInt
Schedule = Literal["sequential", "rmit", "randomized_interleaving_trials"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


# ----------------------------------------------------------------------------- native


class NativeRepetitions(_Strict):
    seqn: NonNegativeInt = 0
    aduet: NonNegativeInt = 0
    sduet: NonNegativeInt = 0


class NativeSide(_Strict):
    command: str | None = None
    sync_command: str | None = None
    image: str | None = None
    results: StrList | None = None
    env: StrMap | None = None
    workdir: str | None = None
    setup: str | None = None
    teardown: str | None = None
    mounts: StrList | None = None


class NativeBenchmark(NativeSide):
    harness: str | None = None
    suite: str | None = None
    repetitions: NativeRepetitions | NonNegativeInt | None = None
    timeout: Duration | None = None
    iterations: PositiveInt | None = None
    time_budget: Duration | None = None
    warmup: Warmup | None = None
    busy_shorter_side: bool | None = None
    cpus: Cpus | None = None
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
PositiveNumber = Annotated[float, Field(gt=0)]


class NativeHosts(_Strict):
    """Host requirements for runs on a Dask cluster (docs/cluster.md); all keys must hold."""

    host: RegexList | None = None
    cpu_model: RegexList | None = None
    kernel: RegexList | None = None
    os: RegexList | None = None
    machine: RegexList | None = None
    virtualization: RegexList | None = None
    container_engine: RegexList | None = None
    min_cores: PositiveInt | None = None
    max_cores: PositiveInt | None = None
    min_memory_gb: PositiveNumber | None = None
    max_memory_gb: PositiveNumber | None = None


class NativeExperiment(_Strict):
    name: str
    seed: int = 0
    schedule: Schedule = "rmit"
    repetitions: NativeRepetitions | NonNegativeInt | None = None
    timeout: Duration | None = None
    artifacts: StrMap | None = None
    default_artifacts: bool = True
    executor: Literal["local", "docker", "podman"] = "local"
    engine: str | None = None
    engine_options: StrList = Field(default_factory=list)
    run_options: StrList = Field(default_factory=list)
    remove_containers: bool = True
    kill_grace: Duration = 5.0
    background: str | None = None
    setup: str | None = None
    teardown: str | None = None
    retries: NonNegativeInt = 0
    design: Literal["default", "balanced"] = "default"
    hosts: NativeHosts | None = None


class NativeConfig(_Strict):
    experiment: NativeExperiment
    defaults: NativeBenchmark | None = None
    benchmarks: dict[str, NativeBenchmark]


# ----------------------------------------------------------------------------- thesis


class ThesisSide(_Strict):
    run: str
    run_base: str | None = None
    syncduet_run_base: str | None = None
    image: str | None = None
    results: StrList | None = None
    env: StrMap | None = None
    workdir: str | None = None


class _ThesisInheritable(_Strict):
    """Keys a benchmark section inherits from the `duetbench:` section."""

    suite: str | None = None
    image: str | None = None
    results: StrList | None = None
    run_base: str | None = None
    syncduet_run_base: str | None = None
    timeout: Duration | None = None
    duet_repetitions: NonNegativeInt | None = None
    syncduet_repetitions: NonNegativeInt | None = None
    sequential_repetitions: NonNegativeInt | None = None
    repetitions: NonNegativeInt | None = None  # older thesis configs: duet repetitions
    repetitions_type: str | None = None  # older thesis configs; accepted, not used
    sequential_repetitions_type: str | None = None  # ditto
    sequential: str | None = None  # ditto
    schedule: Schedule | None = None
    remove_containers: bool | None = None
    verbose: bool | None = None
    # duetbench extensions, usable in the thesis format as well
    harness: str | None = None
    iterations: PositiveInt | None = None
    time_budget: Duration | None = None
    warmup: Warmup | None = None
    env: StrMap | None = None
    workdir: str | None = None
    cpus: Cpus | None = None
    busy_shorter_side: bool | None = None


class ThesisBenchmark(_ThesisInheritable):
    A: ThesisSide
    B: ThesisSide | None = None


class ThesisSection(_ThesisInheritable):
    name: str | None = None
    seed: int | None = None
    docker_command: str | None = None
    artifacts: StrMap | None = None
    duets: list[str]
    executor: Literal["local", "docker", "podman"] | None = None
