"""`stop:` (config) and `--until` / `--threshold` / `--budget` / `--max-runs` (CLI).

Measuring until sure (docs/adaptive.md): a benchmark x method is planned up to
``max_runs`` repetitions and stopped by its rule. Pure Python: the command line reads
these without numpy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..errors import ConfigError
from ..units import ValueTextError, duration, percentage

__all__ = [
    "STOP_KEYS",
    "StopSettings",
    "parse_fraction",
    "parse_stop",
    "parse_until",
    "with_stop_overrides",
]

#: `stop.design` values (docs/adaptive.md, "The designs")
DESIGNS = ("auto", "sequence", "group", "width")  # the others are the study's comparisons
STOP_KEYS = ("until", "precision", "threshold", "budget", "max_runs", "min_runs", "design")
#: most repetitions an adaptive benchmark x method may plan (each is a planned run)
MAX_RUNS_LIMIT = 1000


@dataclass(frozen=True)
class StopSettings:
    """When to stop each benchmark x method (docs/adaptive.md, "Using it").

    ``budget_s``: machine seconds for the benchmark x method (None: no limit).
    """

    until: str = "precise"  # precise | decided
    precision: float | None = 0.01
    threshold: float = 0.0
    budget_s: float | None = None
    max_runs: int = 50
    min_runs: int = 3
    design: str = (
        "auto"  # auto (width for precise, sequence for decided) | sequence | group | width
    )

    def rule_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``adaptive.StopRule.create`` (the fields, by name)."""
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> StopSettings:
        names = {f.name for f in fields(StopSettings)}
        return StopSettings(**{k: v for k, v in d.items() if k in names})


def parse_fraction(value: Any, what: str) -> float:
    """``1%`` -> 0.01, ``0.5 %`` -> 0.005; a bare number is a fraction (``0.01``); the
    range of :func:`duetbench.units.percentage`."""
    try:
        return percentage(value, what)
    except ValueTextError as exc:
        raise ConfigError(str(exc)) from None


def parse_duration(value: Any, what: str) -> float:
    """``20m`` -> 1200.0, ``90s``, ``1h``, ``30`` (seconds); the range of
    :func:`duetbench.units.duration`."""
    try:
        return duration(value, what)
    except ValueTextError as exc:
        raise ConfigError(str(exc)) from None


def _count(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{what}: expected a whole number >= {low}, got {value!r}")
    try:
        v = int(value)
    except ValueError:
        raise ConfigError(f"{what}: expected a whole number >= {low}, got {value!r}") from None
    if not low <= v <= MAX_RUNS_LIMIT:
        raise ConfigError(f"{what}: must be between {low} and {MAX_RUNS_LIMIT}, got {v}")
    return v


def parse_until(text: str, base: StopSettings | None = None) -> StopSettings:
    """``precise:1%``, ``precise`` (keeps the precision), ``decided``."""
    s = base or StopSettings()
    goal, colon, arg = str(text).partition(":")
    goal = goal.strip()
    if goal == "precise":
        if colon and not arg.strip():  # `precise:` is a precision left out, not the default
            raise ConfigError(
                f"--until {text!r}: the precision after ':' is missing; write e.g. precise:1% "
                "(or precise alone to keep the config's)"
            )
        precision = parse_fraction(arg, "--until precise:P") if arg else s.precision
        if precision is not None and precision <= 0:
            raise ConfigError("--until precise:P: the precision must be more than 0 %")
        return replace(s, until="precise", precision=precision)
    if goal == "decided":
        if arg:
            raise ConfigError("--until decided takes no value; give the threshold with --threshold")
        return replace(s, until="decided")
    raise ConfigError(
        f"--until {text!r}: write precise:P (e.g. precise:1%) or decided (with --threshold T)"
    )


def parse_stop(d: Any, where: str = "stop") -> StopSettings:
    """The `stop:` mapping of a config (every key optional), checked."""
    if not isinstance(d, dict):
        raise ConfigError(
            f"`{where}` must be a mapping such as {{until: precise, precision: 1%, budget: 20m}}"
        )
    unknown = sorted(set(d) - set(STOP_KEYS))
    if unknown:
        raise ConfigError(
            f"`{where}` has unknown key(s) {', '.join(map(str, unknown))}; "
            f"known: {', '.join(STOP_KEYS)}"
        )
    s = StopSettings()
    if "until" in d:
        s = parse_until(str(d["until"]), s)
    if "precision" in d:
        p = parse_fraction(d["precision"], f"{where}.precision")
        if p <= 0:
            raise ConfigError(f"`{where}.precision` must be more than 0 %")
        s = replace(s, precision=p)
    if "threshold" in d:
        s = replace(s, threshold=parse_fraction(d["threshold"], f"{where}.threshold"))
    if "budget" in d and d["budget"] is not None:
        s = replace(s, budget_s=parse_duration(d["budget"], f"{where}.budget"))
    if "max_runs" in d:
        s = replace(s, max_runs=_count(d["max_runs"], f"{where}.max_runs", 2))
    if "min_runs" in d:
        s = replace(s, min_runs=_count(d["min_runs"], f"{where}.min_runs", 2))
    if "design" in d:
        if d["design"] not in DESIGNS:
            raise ConfigError(
                f"`{where}.design` must be one of {', '.join(DESIGNS)}, got {d['design']!r}"
            )
        s = replace(s, design=str(d["design"]))
    return checked(s, where)


def checked(s: StopSettings, where: str = "stop") -> StopSettings:
    if s.max_runs < s.min_runs:
        raise ConfigError(
            f"`{where}`: max_runs ({s.max_runs}) must be at least min_runs ({s.min_runs})"
        )
    if s.until == "decided" and s.design == "width":
        raise ConfigError(
            f"`{where}`: design width is for until precise only: a stop on the verdict "
            "depends on the estimate, which needs design sequence or group (or auto)"
        )
    if s.until == "decided" and s.threshold <= 0:
        # without a threshold `decided` can never say equivalent: say it here, not after hours
        raise ConfigError(
            f"`{where}`: until decided needs a practical threshold > 0 (e.g. threshold: 2% or "
            "--threshold 2%): the change that matters; below it the benchmark is equivalent"
        )
    return s


def with_stop_overrides(
    exp: Any,
    *,
    until: str | None = None,
    threshold: str | None = None,
    budget: str | None = None,
    max_runs: str | int | None = None,
) -> Any:
    """``exp`` with `duet run`'s --until / --threshold / --budget / --max-runs applied to
    every benchmark (over its `stop:`). Without --until the config must have `stop:`."""
    given = {
        k: v
        for k, v in (("--threshold", threshold), ("--budget", budget), ("--max-runs", max_runs))
        if v is not None
    }
    if until is None and not given:
        return exp
    if until is None and not any(b.stop is not None for b in exp.benchmarks):
        raise ConfigError(
            f"{', '.join(given)} apply to measuring until sure: add --until precise:1% (or "
            "--until decided --threshold 2%), or `stop:` in the config (docs/adaptive.md)"
        )
    benches = []
    for b in exp.benchmarks:
        s = b.stop or StopSettings()
        if until is not None:
            s = parse_until(until, s)
        if threshold is not None:
            s = replace(s, threshold=parse_fraction(threshold, "--threshold"))
        if budget is not None:
            s = replace(s, budget_s=parse_duration(budget, "--budget"))
        if max_runs is not None:
            s = replace(s, max_runs=_count(max_runs, "--max-runs", 2))
        benches.append(replace(b, stop=checked(s, "--until")))
    return replace(exp, benchmarks=tuple(benches))


def auto_benchmark(bench: Any) -> Any:
    """``bench`` under `methods: auto` (docs/adaptive.md): every method it can run is
    planned (seqn, aduet, and sduet unless an external harness lacks a sync_command)
    and measured until sure (its `stop:`, else the default rule)."""
    external = bench.harness != "command"
    sync_ok = not external or all(s.sync_command for _, s in bench.sides)
    reps = (("seqn", 1), ("aduet", 1), ("sduet", 1 if sync_ok else 0))
    return replace(bench, auto=True, repetitions=reps, stop=bench.stop or StopSettings())


def with_auto(exp: Any) -> Any:
    """`duet run --method auto`: every benchmark under `methods: auto`."""
    return replace(exp, benchmarks=tuple(auto_benchmark(b) for b in exp.benchmarks))
