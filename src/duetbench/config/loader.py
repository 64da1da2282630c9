"""Load a duet.yml into an :class:`Experiment`: tell the format, hand the document to
``thesis.py`` or ``native.py``, then check what the whole experiment asks for (plan size,
CPUs of this host). Errors name file, line and key (``errors.py``)."""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..schema import Method
from .errors import located_error
from .limits import MAX_RUNS, HostCpus, cpus_message, runs_of_counts, unusable_cpus
from .model import Experiment
from .native import load_native
from .thesis import implied_thesis, load_thesis
from .yamlload import LocatedYaml, load_located, loads_located


def load_config(
    path: str | Path, *, executor: str | None = None, host_cpus: HostCpus | None = None
) -> Experiment:
    """Read and validate ``path``; raise :class:`ConfigError` naming file, line and key.

    With ``host_cpus`` every CPU a `cpus:` list names must be usable on that host.
    """
    return _from_located(load_located(path), executor, host_cpus)


def loads_config(
    text: str,
    file: str | Path = "duet.yml",
    *,
    executor: str | None = None,
    host_cpus: HostCpus | None = None,
) -> Experiment:
    return _from_located(loads_located(text, file), executor, host_cpus)


def _from_located(
    doc: LocatedYaml, executor: str | None, host_cpus: HostCpus | None = None
) -> Experiment:
    exp = _experiment(doc, executor)
    _check_plan_size(exp, doc)
    _check_one_cpu_duets(exp, doc)
    if host_cpus is not None:
        _check_cpus(exp, doc, host_cpus)
    return exp


def _experiment(doc: LocatedYaml, executor: str | None) -> Experiment:
    data = doc.data
    if not isinstance(data, dict) or not data:
        raise ConfigError(
            "the config is empty or not a mapping. Start it with a `duetbench:` section "
            "(thesis format) or with `experiment:` and `benchmarks:` (see docs/config.md).",
            file=doc.file,
            line=1,
        )
    native_keys = [k for k in ("experiment", "benchmarks") if k in data]
    if "duetbench" in data and native_keys:
        raise located_error(
            doc,
            f"the config has both `duetbench:` (thesis format) and `{native_keys[0]}:` (native "
            "format); a file uses one format: keep one of them (docs/config.md)",
            (native_keys[0],),
        )
    if "duetbench" in data:
        exp = load_thesis(doc)
    elif "experiment" in data or "benchmarks" in data:
        exp = load_native(doc)
    elif (implied := implied_thesis(doc)) is not None:
        exp = load_thesis(implied)
    else:
        first, hint = next(iter(data)), ""
        for k in data:
            close = difflib.get_close_matches(
                str(k), ["duetbench", "experiment", "benchmarks"], n=1, cutoff=0.75
            )
            if close:
                first, hint = k, f" Did you mean `{close[0]}:` instead of `{k}:`?"
                break
        raise located_error(
            doc,
            "cannot tell the config format: expected a top-level `duetbench:` section (thesis "
            "format) or `experiment:` + `benchmarks:` (native format, docs/config.md)." + hint,
            (first,),
            key=first,
        )
    if executor is not None:
        exp = replace(exp, executor=executor)
    return exp


def _where(doc: LocatedYaml, exp: Experiment, name: str, keys: tuple[str, ...]) -> tuple[Any, ...]:
    """The key path that sets one of ``keys`` for benchmark ``name`` (its own, else the
    inherited one), else the benchmark's section."""
    if exp.format == "native":
        levels: list[tuple[str, ...]] = [("benchmarks", name), ("defaults",), ("experiment",)]
    else:
        levels = [(name,), ("duetbench",)]
    for level in levels:
        for key in keys:
            if level + (key,) in doc.lines:
                return level + (key,)
    return levels[0]


_REPETITION_KEYS = (
    "repetitions",
    "duet_repetitions",
    "syncduet_repetitions",
    "sequential_repetitions",
)


def _check_plan_size(exp: Experiment, doc: LocatedYaml) -> None:
    sizes = {
        b.name: runs_of_counts(b.reps("seqn"), b.reps("aduet"), b.reps("sduet"), b.reps("inproc"))
        for b in exp.benchmarks
    }
    total = sum(sizes.values())
    if total <= MAX_RUNS:
        return
    name = max(sizes, key=lambda n: sizes[n])
    bench = exp.benchmark(name)
    path = _where(doc, exp, name, _REPETITION_KEYS)
    raise located_error(
        doc,
        f"the experiment plans {total:,} runs, more than the {MAX_RUNS:,} an experiment may "
        f"have (docs/config.md, section Limits); benchmark '{name}' plans {sizes[name]:,} "
        f"(seqn {bench.reps('seqn'):,} x 2, aduet {bench.reps('aduet'):,}, sduet "
        f"{bench.reps('sduet'):,}). Lower the repetitions or split the experiment.",
        path,
    )


#: the one harness that may report CPU time, which two sides taking turns on one CPU
#: leaves intact; every other harness times wall-clock (docs/config.md, `cpus`)
ONE_CPU_HARNESSES = frozenset({"generic"})


def _check_one_cpu_duets(exp: Experiment, doc: LocatedYaml) -> None:
    """A duet on a one-CPU list: both sides take turns on that CPU, and a wall-clock
    measure counts the other side's turns too -- a silently wrong ratio."""
    for bench in exp.benchmarks:
        cpus = bench.cpus
        duets = [str(m) for m in Method if m.is_duet and bench.reps(m)]
        if isinstance(cpus, str) or len(set(cpus)) != 1 or not duets:
            continue
        if bench.harness in ONE_CPU_HARNESSES:
            continue
        harness = "built-in" if bench.harness == "command" else bench.harness
        raise located_error(
            doc,
            f"benchmark '{bench.name}' runs {' and '.join(duets)} on CPU {cpus[0]} alone: "
            f"both sides would take turns on it, and the {harness} harness times "
            "wall-clock, which then counts the other side's turns too. List two CPUs (one "
            "per side), or drop the duet repetitions; only a harness that reports CPU time "
            "(harness: generic) may share one CPU (docs/config.md, `cpus`).",
            _where(doc, exp, bench.name, ("cpus",)),
        )


def _check_cpus(exp: Experiment, doc: LocatedYaml, here: HostCpus) -> None:
    for bench in exp.benchmarks:
        missing = unusable_cpus(bench.cpus, here.cpus)
        if missing:
            raise located_error(
                doc,
                cpus_message(bench.name, missing, here),
                _where(doc, exp, bench.name, ("cpus",)),
            )
