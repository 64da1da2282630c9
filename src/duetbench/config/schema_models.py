"""pydantic models of the two config formats: validation only, at the boundary."""

from __future__ import annotations

import re
import shlex
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
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if seconds <= 0:
            raise ValueError("a duration must be positive")
        return seconds
    raise ValueError("expected a duration such as 30, '90s' or '5m'")


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


def _thesis_timeout(v: Any) -> Any:
    """The thesis tool's timeout: seconds, where 0 or less means none (0.0 here)."""
    if isinstance(v, int | float) and not isinstance(v, bool) and v <= 0:
        return 0.0
    if isinstance(v, str) and v.strip().lstrip("-").replace(".", "", 1).isdigit():
        if float(v) <= 0:
            return 0.0
    return _duration(v)


Duration = Annotated[float, BeforeValidator(_duration)]
HangTimeout = Annotated[float, BeforeValidator(_hang_timeout)]  # 0.0: off
StrMap = Annotated[dict[str, str], BeforeValidator(_str_map)]
Cpus = Annotated[Literal["auto", "none"] | list[NonNegativeInt], BeforeValidator(_cpus)]
StrList = Annotated[list[str], BeforeValidator(_str_list)]
Text = Annotated[str, BeforeValidator(_text)]
Command = Annotated[str, BeforeValidator(_command)]
Count = Annotated[NonNegativeInt, BeforeValidator(_count)]
ThesisTimeout = Annotated[float, BeforeValidator(_thesis_timeout)]
Warmup = Literal["half"] | NonNegativeInt
Schedule = Literal["sequential", "rmit", "randomized_interleaving_trials"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


# ----------------------------------------------------------------------------- native


class NativeRepetitions(_Strict):
    seqn: Count = 0
    aduet: Count = 0
    sduet: Count = 0


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


class NativeBenchmark(NativeSide):
    harness: Text | None = None
    suite: Text | None = None
    repetitions: NativeRepetitions | Count | None = None
    timeout: Duration | None = None
    hang_timeout: HangTimeout | None = None
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
    name: Text
    seed: Count = 0  # numpy seeds are non-negative
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
    retries: NonNegativeInt = 0
    design: Literal["default", "balanced"] = "default"
    hosts: NativeHosts | None = None


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
    iterations: PositiveInt | None = None
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
    seed: Annotated[NonNegativeInt, BeforeValidator(_count)] | None = None
    docker_command: Text | None = None
    artifacts: Annotated[dict[str, str], BeforeValidator(_artifacts)] | None = None
    duets: Annotated[list[str], BeforeValidator(_duets)]
    executor: Literal["local", "docker", "podman"] | None = None
