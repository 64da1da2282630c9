"""Load a duet.yml (thesis or native format) into an :class:`Experiment`."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .model import DEFAULT_ARTIFACTS, Benchmark, ContainerSettings, Experiment, Side
from .schema_models import (
    NativeBenchmark,
    NativeConfig,
    NativeRepetitions,
    NativeSide,
    ThesisBenchmark,
    ThesisSection,
)
from .yamlload import LocatedYaml, load_located, loads_located

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def load_config(path: str | Path, *, executor: str | None = None) -> Experiment:
    """Read and validate ``path``; raise :class:`ConfigError` naming file, line and key."""
    return _from_located(load_located(path), executor)


def loads_config(
    text: str, file: str | Path = "duet.yml", *, executor: str | None = None
) -> Experiment:
    return _from_located(loads_located(text, file), executor)


def _from_located(doc: LocatedYaml, executor: str | None) -> Experiment:
    data = doc.data
    if not isinstance(data, dict) or not data:
        raise ConfigError(
            "the config is empty or not a mapping. Start it with a `duetbench:` section "
            "(thesis format) or with `experiment:` and `benchmarks:` (see docs/config.md).",
            file=doc.file,
            line=1,
        )
    if "duetbench" in data:
        exp = _load_thesis(doc)
    elif "experiment" in data or "benchmarks" in data:
        exp = _load_native(doc)
    else:
        first = next(iter(data))
        raise ConfigError(
            "cannot tell the config format: expected a top-level `duetbench:` section (thesis "
            "format) or `experiment:` + `benchmarks:` (native format, docs/config.md).",
            file=doc.file,
            line=doc.line_of((first,)),
            key=first,
        )
    if executor is not None:
        exp = _replace(exp, executor=executor)
    return exp


def _replace(exp: Experiment, **kw: Any) -> Experiment:
    from dataclasses import replace

    return replace(exp, **kw)


# ----------------------------------------------------------------------------- errors


def _validate(
    model: type[BaseModel], data: Any, doc: LocatedYaml, prefix: tuple[str, ...], what: str
) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, model, doc, prefix, what) from None


def _submodel(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The BaseModel inside a field annotation, and whether it sits in a dict (keyed by name)."""
    if getattr(annotation, "__origin__", None) is dict:
        annotation = annotation | None  # look at it as a union member below
    for cand in getattr(annotation, "__args__", ()) or (annotation,):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand, False
        if getattr(cand, "__origin__", None) is dict:
            val = cand.__args__[1]
            if isinstance(val, type) and issubclass(val, BaseModel):
                return val, True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def _known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    cur: type[BaseModel] | None = model
    parts = list(loc)
    while parts and cur is not None:
        field = cur.model_fields.get(str(parts.pop(0)))
        if field is None:
            return []
        cur, keyed = _submodel(field.annotation)
        if keyed and parts:
            parts.pop(0)
    return list(cur.model_fields) if cur is not None else []


def _config_error(
    exc: ValidationError,
    model: type[BaseModel],
    doc: LocatedYaml,
    prefix: tuple[str, ...],
    what: str,
) -> ConfigError:
    errors = exc.errors()
    # the most useful error first: unknown keys and missing keys before type noise
    rank = {"extra_forbidden": 0, "missing": 1}
    errors.sort(key=lambda e: (rank.get(e["type"], 2), doc.line_of(prefix + tuple(e["loc"])) or 0))
    first = errors[0]
    loc = tuple(
        p for p in first["loc"] if not (isinstance(p, str) and ("[" in p or p in ("int", "str")))
    )
    # pydantic adds union member tags to locations ("function-before[...]" etc.); drop them
    loc = tuple(
        p
        for p in loc
        if not (isinstance(p, str) and p.startswith(("function-", "literal", "list[", "dict[")))
    )
    path = prefix + tuple(loc)
    line = doc.line_of(path)
    dotted = ".".join(str(p) for p in path)
    etype = first["type"]
    if etype == "extra_forbidden":
        key = str(loc[-1])
        known = _known_keys(model, loc[:-1])
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        where = f" in {_describe(prefix + tuple(loc[:-1]), what)}"
        msg = f"unknown key '{key}'{where}.{hint} Known keys here: {', '.join(sorted(known))}."
    elif etype == "missing":
        key = str(loc[-1])
        if key == "A":
            msg = (
                f"{what} has no A side. Add `A: {{run: <command>}}` (thesis format) or "
                "`command:` / `A: {command: ...}` (native format); B is optional (A/A experiment)."
            )
        else:
            msg = f"required key '{key}' is missing in {what}."
    else:
        got = first.get("input")
        shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
        msg = f"{first['msg']} (got {shown})."
    more = len(errors) - 1
    if more:
        msg += f" ({more} more problem{'s' if more > 1 else ''} after this one.)"
    return ConfigError(msg, file=doc.file, line=line, key=dotted)


def _describe(path: tuple[Any, ...], what: str) -> str:
    """'benchmark 'x' side A' style names for a key path."""
    p = [str(x) for x in path]
    if p[:1] == ["benchmarks"] and len(p) >= 2:
        p = p[1:]
    elif p[:1] in (["experiment"], ["defaults"]):
        return f"the `{p[0]}:` section"
    elif p[:1] == ["duetbench"]:
        return "the `duetbench:` section"
    if not p:
        return what
    s = f"benchmark '{p[0]}'"
    if len(p) >= 2:
        s += f" side {p[1]}" if p[1] in ("A", "B") else f" ({'.'.join(p[1:])})"
    return s


# ----------------------------------------------------------------------------- thesis format


_THESIS_BENCH_KEYS = set(ThesisBenchmark.model_fields)


def _load_thesis(doc: LocatedYaml) -> Experiment:
    data: dict[str, Any] = doc.data
    top = data["duetbench"]
    if not isinstance(top, dict):
        raise ConfigError(
            "the `duetbench:` section must be a mapping of settings",
            file=doc.file,
            line=doc.line_of(("duetbench",)),
            key="duetbench",
        )
    section: ThesisSection = _validate(
        ThesisSection, top, doc, ("duetbench",), "the duetbench section"
    )
    names = section.duets
    if not names:
        raise ConfigError(
            "`duets:` lists no benchmark; add the names of the benchmark sections to run",
            file=doc.file,
            line=doc.line_of(("duetbench", "duets")),
            key="duetbench.duets",
        )
    seen: set[str] = set()
    for i, name in enumerate(names):
        line = doc.line_of(("duetbench", "duets", i))
        if name in seen:
            raise ConfigError(
                f"benchmark '{name}' is listed twice in `duets:`",
                file=doc.file,
                line=line,
                key="duetbench.duets",
            )
        seen.add(name)
        if name not in data:
            sections = [k for k in data if k != "duetbench"]
            close = difflib.get_close_matches(name, sections, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                f"`duets:` names '{name}' but there is no top-level section `{name}:`.{hint}",
                file=doc.file,
                line=line,
                key="duetbench.duets",
            )
        _check_name(name, doc, ("duetbench", "duets", i))
    inherited = section.model_dump(exclude_unset=True)
    for k in ("name", "seed", "docker_command", "artifacts", "duets", "executor"):
        inherited.pop(k, None)

    benchmarks = []
    needs_container = False
    for name in names:
        raw = data[name]
        if not isinstance(raw, dict):
            raise ConfigError(
                f"benchmark section `{name}:` must be a mapping with at least `A: {{run: ...}}`",
                file=doc.file,
                line=doc.line_of((name,)),
                key=name,
            )
        bench: ThesisBenchmark = _validate(
            ThesisBenchmark, raw, doc, (name,), f"benchmark '{name}'"
        )
        own = bench.model_dump(exclude_unset=True)
        merged = {**inherited, **{k: v for k, v in own.items() if k not in ("A", "B")}}

        def g(key: str, default: Any = None, _m: dict[str, Any] = merged) -> Any:
            v = _m.get(key)
            return default if v is None else v

        def side(s: Any, _g: Any = g) -> Side:
            run_base = s.run_base if s.run_base is not None else _g("run_base", "")
            sync_base = (
                s.syncduet_run_base if s.syncduet_run_base is not None else _g("syncduet_run_base")
            )
            env = {**_g("env", {}), **(s.env or {})}
            return Side(
                command=" ".join(p for p in (run_base.strip(), s.run.strip()) if p),
                sync_command=" ".join(p for p in (sync_base.strip(), s.run.strip()) if p)
                if sync_base
                else None,
                image=s.image or _g("image"),
                results=tuple(s.results if s.results is not None else _g("results", [])),
                env=tuple(sorted(env.items())),
                workdir=s.workdir or _g("workdir"),
            )

        a = side(bench.A)
        b = side(bench.B) if bench.B is not None else a
        if a.image or b.image:
            needs_container = True
        suite = g("suite", "")
        results = a.results or b.results
        harness = g("harness") or (suite if suite else ("generic" if results else "command"))
        duet_reps = g("duet_repetitions", g("repetitions", 1))
        benchmarks.append(
            Benchmark(
                name=name,
                sides=(("A", a), ("B", b)),
                aa=bench.B is None,
                harness=harness,
                suite=suite or (harness if harness != "command" else name),
                repetitions=(
                    ("seqn", g("sequential_repetitions", 0)),
                    ("aduet", duet_reps),
                    ("sduet", g("syncduet_repetitions", 0)),
                ),
                timeout=g("timeout"),
                iterations=g("iterations", 10),
                time_budget=g("time_budget"),
                warmup=g("warmup", 0),
                busy_shorter_side=bool(g("busy_shorter_side", False)),
                cpus=_cpus_value(g("cpus", "auto")),
            )
        )
    schedule = section.schedule or "sequential"
    engine = section.docker_command
    executor = section.executor or ("container" if needs_container else "local")
    if executor == "container":
        executor = _engine_kind(engine) or "podman"
    artifacts = (
        dict(section.artifacts) if section.artifacts is not None else dict(DEFAULT_ARTIFACTS)
    )
    return Experiment(
        name=section.name or section.suite or doc.file.stem.replace(".duet", "") or "experiment",
        seed=section.seed if section.seed is not None else 0,
        schedule="rmit" if schedule == "randomized_interleaving_trials" else schedule,
        benchmarks=tuple(benchmarks),
        artifacts=tuple(artifacts.items()),
        executor=executor,
        container=ContainerSettings(
            engine=engine,
            remove_containers=section.remove_containers
            if section.remove_containers is not None
            else True,
        ),
        source=str(doc.file),
        format="thesis",
    )


def _engine_kind(engine: str | None) -> str | None:
    if not engine:
        return None
    base = Path(engine.split()[0]).name
    return base if base in ("docker", "podman") else "docker"


def _cpus_value(v: Any) -> str | tuple[int, ...]:
    return v if isinstance(v, str) else tuple(v)


def _check_name(name: str, doc: LocatedYaml, path: tuple[Any, ...]) -> None:
    if not _NAME_OK.match(name):
        raise ConfigError(
            f"benchmark name '{name}' can only use letters, digits and _ . + - (it names directories)",
            file=doc.file,
            line=doc.line_of(path),
            key=".".join(map(str, path)),
        )


# ----------------------------------------------------------------------------- native format


def _load_native(doc: LocatedYaml) -> Experiment:
    data: dict[str, Any] = doc.data
    cfg: NativeConfig = _validate(NativeConfig, data, doc, (), "the config")
    exp = cfg.experiment
    if not cfg.benchmarks:
        raise ConfigError(
            "`benchmarks:` is empty; add at least one benchmark",
            file=doc.file,
            line=doc.line_of(("benchmarks",)),
            key="benchmarks",
        )
    defaults = cfg.defaults.model_dump(exclude_unset=True) if cfg.defaults else {}
    exp_reps = _reps(exp.repetitions) if exp.repetitions is not None else None
    benchmarks = []
    for name, bench in cfg.benchmarks.items():
        _check_name(name, doc, ("benchmarks", name))
        own = bench.model_dump(exclude_unset=True)
        merged: dict[str, Any] = {**defaults}
        if "time_budget" in own and "iterations" not in own:
            merged.pop(
                "iterations", None
            )  # the benchmark's own budget replaces inherited iterations
        if "iterations" in own and "time_budget" not in own:
            merged.pop("time_budget", None)
        for k, v in own.items():
            if k == "env":
                merged["env"] = {**defaults.get("env", {}), **v}
            else:
                merged[k] = v
        m = NativeBenchmark.model_validate(merged)

        def side(
            s: NativeSide | None,
            pair: str,
            _m: NativeBenchmark = m,
            _name: str = name,
            _own: dict[str, Any] = own,
        ) -> Side:
            s = s or NativeSide()
            command = s.command or _m.command
            if not command:
                raise ConfigError(
                    f"benchmark '{_name}' has no command for side {pair}. Give `command:` for both sides "
                    f"or `A: {{command: ...}}`"
                    + (" and `B: {command: ...}`" if pair == "B" else "")
                    + ".",
                    file=doc.file,
                    line=doc.line_of(("benchmarks", _name, pair))
                    or doc.line_of(("benchmarks", _name)),
                    key=f"benchmarks.{_name}" + (f".{pair}" if pair in _own else ""),
                )
            env = {**(_m.env or {}), **(s.env or {})}
            return Side(
                command=command,
                sync_command=s.sync_command or _m.sync_command,
                image=s.image or _m.image,
                results=tuple(s.results if s.results is not None else (_m.results or [])),
                env=tuple(sorted(env.items())),
                workdir=s.workdir or _m.workdir,
                setup=s.setup or _m.setup,
                teardown=s.teardown or _m.teardown,
                mounts=tuple(s.mounts if s.mounts is not None else (_m.mounts or [])),
            )

        aa = m.B is None
        a = side(m.A, "A")
        b = side(m.B, "B") if not aa else a
        if m.repetitions is not None:
            reps = _reps(m.repetitions)
        elif exp_reps is not None:
            reps = exp_reps
        else:
            reps = {"seqn": 5, "aduet": 5, "sduet": 0}
        harness = m.harness or ("generic" if (a.results or b.results) else "command")
        if m.iterations is not None and m.time_budget is not None:
            raise ConfigError(
                f"benchmark '{name}' sets both `iterations` and `time_budget`; keep one",
                file=doc.file,
                line=doc.line_of(("benchmarks", name, "time_budget")),
                key=f"benchmarks.{name}.time_budget",
            )
        benchmarks.append(
            Benchmark(
                name=name,
                sides=(("A", a), ("B", b)),
                aa=aa,
                harness=harness,
                suite=m.suite or (harness if harness != "command" else "command"),
                repetitions=tuple(reps.items()),
                timeout=m.timeout if m.timeout is not None else exp.timeout,
                iterations=None if m.time_budget is not None else (m.iterations or 10),
                time_budget=m.time_budget,
                warmup=m.warmup if m.warmup is not None else 0,
                busy_shorter_side=bool(m.busy_shorter_side),
                cpus=_cpus_value(m.cpus if m.cpus is not None else "auto"),
            )
        )
    artifacts = dict(DEFAULT_ARTIFACTS) if exp.default_artifacts else {}
    artifacts.update(exp.artifacts or {})
    return Experiment(
        name=exp.name,
        seed=exp.seed,
        schedule="rmit" if exp.schedule == "randomized_interleaving_trials" else exp.schedule,
        benchmarks=tuple(benchmarks),
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
    return {"seqn": r.seqn, "aduet": r.aduet, "sduet": r.sduet}
