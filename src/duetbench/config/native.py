"""The native format: `experiment:`, optional `defaults:`, and `benchmarks:` by name.

A benchmark's own settings win over `defaults:`; `env` maps are merged key by key;
docs/config.md, "Native format", lists the keys.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import ConfigError
from .errors import dotted, located_error, validate
from .fields import (
    SELF_SYNCING_HARNESSES,
    check_benchmark_name,
    check_busy_shorter_side,
    cpus_value,
    experiment_name,
    hang_value,
)
from .harness import checked as checked_harness
from .micro import MICRO_HARNESS, check_not_micro, is_micro, micro_benchmark_parts
from .model import DEFAULT_ARTIFACTS, Benchmark, ContainerSettings, Experiment, Side
from .schema_models import NativeBenchmark, NativeConfig, NativeRepetitions, NativeSide
from .stop import StopSettings, auto_benchmark, parse_stop
from .yamlload import LocatedYaml

#: repetitions of a benchmark when neither it nor `experiment:` sets them
DEFAULT_REPETITIONS = {"seqn": 5, "aduet": 5, "sduet": 0}


def load_native(doc: LocatedYaml) -> Experiment:
    """The experiment of a native-format document."""
    cfg: NativeConfig = validate(NativeConfig, doc.data, doc, (), "the config")
    exp = cfg.experiment
    if not cfg.benchmarks:
        raise located_error(
            doc, "`benchmarks:` is empty; add at least one benchmark", ("benchmarks",)
        )
    defaults = cfg.defaults.model_dump(exclude_unset=True) if cfg.defaults else {}
    benchmarks = tuple(
        _benchmark(doc, name, bench, defaults, cfg) for name, bench in cfg.benchmarks.items()
    )
    artifacts = dict(DEFAULT_ARTIFACTS) if exp.default_artifacts else {}
    artifacts.update(exp.artifacts or {})
    return Experiment(
        name=experiment_name(exp.name, doc, ("experiment", "name")),
        seed=exp.seed,
        schedule="rmit" if exp.schedule == "randomized_interleaving_trials" else exp.schedule,
        benchmarks=benchmarks,
        artifacts=tuple(artifacts.items()),
        executor=exp.executor,
        container=ContainerSettings(
            engine=exp.engine,
            global_options=tuple(exp.engine_options),
            run_options=tuple(exp.run_options),
            remove_containers=exp.remove_containers,
        ),
        kill_grace=exp.kill_grace,
        background=exp.background,
        setup=exp.setup,
        teardown=exp.teardown,
        retries=exp.retries,
        design=exp.design,
        hosts=_host_requirements(exp),
        source=str(doc.file),
        format="native",
        measure=exp.measure,
        threshold=exp.threshold,
    )


def _merged(defaults: dict[str, Any], own: dict[str, Any]) -> NativeBenchmark:
    """A benchmark's own settings over `defaults:`."""
    merged: dict[str, Any] = {**defaults}
    if "time_budget" in own and "iterations" not in own:
        merged.pop("iterations", None)  # the benchmark's own budget replaces inherited iterations
    if "iterations" in own and "time_budget" not in own:
        merged.pop("time_budget", None)
    for k, v in own.items():
        if k == "env":
            merged["env"] = {**defaults.get("env", {}), **v}
        else:
            merged[k] = v
    return NativeBenchmark.model_validate(merged)


def _benchmark(
    doc: LocatedYaml,
    name: str,
    bench: NativeBenchmark,
    defaults: dict[str, Any],
    cfg: NativeConfig,
) -> Benchmark:
    exp = cfg.experiment
    check_benchmark_name(name, doc, ("benchmarks", name))
    own = bench.model_dump(exclude_unset=True)
    m = _merged(defaults, own)
    micro = None
    if is_micro(m):
        a, b, micro, aa = micro_benchmark_parts(doc, name, m)
    else:
        check_not_micro(doc, name, m, own)
        aa = m.B is None
        a = _side(doc, name, "A", m.A, m, own)
        b = _side(doc, name, "B", m.B, m, own) if not aa else a
    if m.self_sync:  # the harness waits at the handshake itself: its sduet command is its own
        a = replace(a, sync_command=a.sync_command or a.command)
        b = replace(b, sync_command=b.sync_command or b.command)
    if m.repetitions is not None:
        reps = _reps(m.repetitions)
    elif exp.repetitions is not None:
        reps = _reps(exp.repetitions)
    else:
        reps = dict(DEFAULT_REPETITIONS)
    where = ("benchmarks", name)
    if micro is not None:
        harness = MICRO_HARNESS
    elif m.harness:
        harness = checked_harness(
            doc, m.harness, where + ("harness",) if "harness" in own else ("defaults", "harness")
        )
    else:
        harness = "generic" if (a.results or b.results) else "command"
    check_busy_shorter_side(
        doc,
        name,
        harness,
        bool(m.busy_shorter_side),
        *(
            (where + ("busy_shorter_side",), where)
            if "busy_shorter_side" in own
            else (("defaults", "busy_shorter_side"), where)
        ),
    )
    if reps.get("sduet") and harness != "command" and harness not in SELF_SYNCING_HARNESSES:
        lacking = [p for p, s in (("A", a), ("B", b)) if not s.sync_command]
        if lacking:
            raise located_error(
                doc,
                f"benchmark '{name}' asks for {reps['sduet']} sduet (synchronized duet) runs, "
                f"but its harness '{harness}' runs its own loop and side(s) "
                f"{' and '.join(dict.fromkeys(lacking))} have no `sync_command`: those runs "
                "would never wait at the iteration handshake, unsynchronized runs labelled "
                "sduet. Add `sync_command:` (the harness command that waits at the handshake "
                "through $DUET_SYNC_DIR, docs/sync.md), or `self_sync: true` if the command "
                "itself waits there whenever $DUET_SYNC_DIR is set, or set "
                "`repetitions: {sduet: 0}`",
                where + ("repetitions", "sduet"),
                ("experiment", "repetitions", "sduet"),
                where,
            )
    if reps.get("inproc") and micro is None:
        raise located_error(
            doc,
            f"benchmark '{name}' asks for {reps['inproc']} inproc runs, which time both "
            "sides in one Python process: only Python-function benchmarks (`harness: "
            'python`) can; docs/micro.md, "In one process: inproc". Use seqn, aduet or '
            "sduet, or set `repetitions: {inproc: 0}`",
            where + ("repetitions", "inproc"),
            ("experiment", "repetitions", "inproc"),
            where,
        )
    if m.iterations is not None and m.time_budget is not None:
        raise located_error(
            doc,
            f"benchmark '{name}' sets both `iterations` and `time_budget`; keep one",
            ("benchmarks", name, "time_budget"),
        )
    bench = Benchmark(
        name=name,
        sides=(("A", a), ("B", b)),
        aa=aa,
        harness=harness,
        suite=m.suite or (harness if harness != "command" else "command"),
        repetitions=tuple(reps.items()),
        timeout=m.timeout if m.timeout is not None else exp.timeout,
        hang_timeout=hang_value(m.hang_timeout, exp.hang_timeout),
        iterations=None if m.time_budget is not None or micro else (m.iterations or 10),
        time_budget=None if micro else m.time_budget,
        warmup=m.warmup if m.warmup is not None else 0,
        busy_shorter_side=bool(m.busy_shorter_side),
        # micro samples are short and suffer from migrations: pinned unless the config says
        # otherwise (docs/micro.md, "Placement")
        cpus=cpus_value(
            m.cpus if m.cpus is not None else ("pinned" if micro is not None else "auto")
        ),
        micro=micro,
        stop=_stop(doc, name, exp.stop, m.stop),
    )
    if (m.methods or exp.methods) == "auto":
        return auto_benchmark(bench)
    return bench


def _stop(
    doc: LocatedYaml, name: str, exp_stop: dict[str, Any] | None, own: dict[str, Any] | None
) -> StopSettings | None:
    """The benchmark's `stop:` over the experiment's (docs/adaptive.md); None: a fixed plan."""
    if exp_stop is None and own is None:
        return None
    path = ("benchmarks", name, "stop") if own is not None else ("experiment", "stop")
    try:
        return parse_stop({**(exp_stop or {}), **(own or {})}, dotted(path))
    except ConfigError as exc:
        raise located_error(doc, exc.detail, path) from None


def _side(
    doc: LocatedYaml,
    name: str,
    pair: str,
    s: NativeSide | None,
    m: NativeBenchmark,
    own: dict[str, Any],
) -> Side:
    """Side ``pair`` of benchmark ``name``: its own keys over the benchmark's."""
    s = s or NativeSide()
    command = s.command or m.command
    if not command:
        raise located_error(
            doc,
            f"benchmark '{name}' has no command for side {pair}. Give `command:` for both sides "
            f"or `A: {{command: ...}}`" + (" and `B: {command: ...}`" if pair == "B" else "") + ".",
            ("benchmarks", name, pair),
            ("benchmarks", name),
            key=f"benchmarks.{name}" + (f".{pair}" if pair in own else ""),
        )
    env = {**(m.env or {}), **(s.env or {})}
    return Side(
        command=command,
        sync_command=s.sync_command or m.sync_command,
        image=s.image or m.image,
        results=tuple(s.results if s.results is not None else (m.results or [])),
        env=tuple(sorted(env.items())),
        workdir=s.workdir or m.workdir,
        setup=s.setup or m.setup,
        teardown=s.teardown or m.teardown,
        mounts=tuple(s.mounts if s.mounts is not None else (m.mounts or [])),
    )


def _host_requirements(exp: Any) -> tuple[tuple[str, Any], ...]:
    """``experiment.hosts`` as sorted (key, value) pairs; lists become tuples."""
    if exp.hosts is None:
        return ()
    d = exp.hosts.model_dump(exclude_none=True)
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(d.items()))


def _reps(r: NativeRepetitions | int) -> dict[str, int]:
    if isinstance(r, int):
        return {"seqn": r, "aduet": r, "sduet": r}
    reps = {"seqn": r.seqn, "aduet": r.aduet, "sduet": r.sduet}
    if r.inproc:
        reps["inproc"] = r.inproc
    return reps
