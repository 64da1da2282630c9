"""Load a duet.yml (thesis or native format) into an :class:`Experiment`."""

from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .limits import (
    MAX_NAME_LENGTH,
    MAX_RUNS,
    HostCpus,
    cpus_message,
    runs_of_counts,
    unusable_cpus,
)
from .model import (
    DEFAULT_ARTIFACTS,
    DEFAULT_HANG_TIMEOUT,
    Benchmark,
    ContainerSettings,
    Experiment,
    Side,
)
from .schema_models import (
    NativeBenchmark,
    NativeConfig,
    NativeRepetitions,
    NativeSide,
    ThesisBenchmark,
    ThesisSection,
    ThesisSide,
)
from .yamlload import LocatedYaml, load_located, loads_located

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


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
        raise ConfigError(
            f"the config has both `duetbench:` (thesis format) and `{native_keys[0]}:` (native "
            "format); a file uses one format: keep one of them (docs/config.md)",
            file=doc.file,
            line=doc.line_of((native_keys[0],)),
            key=native_keys[0],
        )
    if "duetbench" in data:
        exp = _load_thesis(doc)
    elif "experiment" in data or "benchmarks" in data:
        exp = _load_native(doc)
    elif (implied := _implied_thesis(doc)) is not None:
        exp = _load_thesis(implied)
    else:
        first, hint = next(iter(data)), ""
        for k in data:
            close = difflib.get_close_matches(
                str(k), ["duetbench", "experiment", "benchmarks"], n=1, cutoff=0.75
            )
            if close:
                first, hint = k, f" Did you mean `{close[0]}:` instead of `{k}:`?"
                break
        raise ConfigError(
            "cannot tell the config format: expected a top-level `duetbench:` section (thesis "
            "format) or `experiment:` + `benchmarks:` (native format, docs/config.md)." + hint,
            file=doc.file,
            line=doc.line_of((first,)),
            key=first,
        )
    if executor is not None:
        exp = _replace(exp, executor=executor)
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
        b.name: runs_of_counts(b.reps("seqn"), b.reps("aduet"), b.reps("sduet"))
        for b in exp.benchmarks
    }
    total = sum(sizes.values())
    if total <= MAX_RUNS:
        return
    name = max(sizes, key=lambda n: sizes[n])
    bench = exp.benchmark(name)
    path = _where(doc, exp, name, _REPETITION_KEYS)
    raise ConfigError(
        f"the experiment plans {total:,} runs, more than the {MAX_RUNS:,} an experiment may "
        f"have (docs/config.md, section Limits); benchmark '{name}' plans {sizes[name]:,} "
        f"(seqn {bench.reps('seqn'):,} x 2, aduet {bench.reps('aduet'):,}, sduet "
        f"{bench.reps('sduet'):,}). Lower the repetitions or split the experiment.",
        file=doc.file,
        line=doc.line_of(path),
        key=".".join(map(str, path)),
    )


def _check_cpus(exp: Experiment, doc: LocatedYaml, here: HostCpus) -> None:
    for bench in exp.benchmarks:
        missing = unusable_cpus(bench.cpus, here.cpus)
        if missing:
            path = _where(doc, exp, bench.name, ("cpus",))
            raise ConfigError(
                cpus_message(bench.name, missing, here),
                file=doc.file,
                line=doc.line_of(path),
                key=".".join(map(str, path)),
            )


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
        raise _config_error(exc, model, data, doc, prefix, what) from None


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


def _clean_loc(loc: tuple[Any, ...], data: Any, keep_last: bool = False) -> tuple[Any, ...]:
    """A pydantic error location as config keys: the parts that are keys (or list
    indices) of ``data``, without the union member tags pydantic adds
    ("function-before[...]", "int", "NativeRepetitions", ...). ``keep_last``: the last
    part is a key even though ``data`` lacks it (a missing key)."""
    out: list[Any] = []
    cur = data
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            cur = cur[part]
        elif not (keep_last and i == len(loc) - 1):
            continue
        out.append(part)
    return tuple(out)


def _config_error(
    exc: ValidationError,
    model: type[BaseModel],
    data: Any,
    doc: LocatedYaml,
    prefix: tuple[str, ...],
    what: str,
) -> ConfigError:
    errors = exc.errors()
    # the most useful error first: unknown keys and missing keys before type noise
    # (a union's own value error says more than "should be a dictionary" of its other member)
    rank = {"extra_forbidden": 0, "missing": 1, "value_error": 2}
    # (among a union's members at one line, the deepest location: `[-1]` in a CPU list says
    # more than "should be 'auto' or 'none'")
    errors.sort(
        key=lambda e: (
            rank.get(e["type"], 3),
            doc.line_of(prefix + tuple(e["loc"])) or 0,
            -len(_clean_loc(e["loc"], data)),
        )
    )
    first = errors[0]
    etype = first["type"]
    loc = _clean_loc(first["loc"], data, keep_last=etype in ("extra_forbidden", "missing"))
    path = prefix + tuple(loc)
    line = doc.line_of(path)
    dotted = ".".join(str(p) for p in path)
    if etype == "extra_forbidden":
        key = _key_text(loc[-1])
        known = _known_keys(model, loc[:-1])
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        where = f" in {_describe(prefix + tuple(loc[:-1]), what)}"
        if key in ("True", "False", "None"):
            hint += (
                " (YAML reads an unquoted yes/no/on/off/true/false as a boolean and an empty "
                "or ~ key as null; put the key in quotes.)"
            )
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
        shown = _shown(got)
        text = re.sub(r" or instance of \w+", "", str(first["msg"]).removeprefix("Value error, "))
        if got is None and first["type"] in ("model_type", "dict_type", "model_attributes_type"):
            msg = f"`{loc[-1] if loc else dotted}:` is empty; it needs a mapping of settings here."
        else:
            msg = f"{text} (got {shown})."
    more = len({_clean_loc(e["loc"], data) for e in errors}) - 1  # a union's members: one problem
    if more:
        msg += f" ({more} more problem{'s' if more > 1 else ''} after this one.)"
    return ConfigError(msg, file=doc.file, line=line, key=dotted)


def _key_text(key: Any) -> str:
    """A key of the config as an error message shows it: short and printable."""
    text = str(key)
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= 60 else text[:57] + "..."


def _shown(value: Any) -> str:
    """A value for an error message: short, whatever the config holds."""
    if isinstance(value, dict | list):
        return type(value).__name__
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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


_THESIS_UNIQUE = ("name", "seed", "docker_command", "artifacts", "duets", "executor")

#: Result parsers shipped with duetbench (entry points of ``duetbench.parsers``) and the
#: registry's aliases; a thesis ``suite:`` naming one of them selects that parser.
_BUILTIN_PARSERS = frozenset(
    {"command", "generic", "renaissance", "dacapo", "scalabench", "speccpu", "pyperf"}
    | {"pyperformance", "jmh", "hyperfine", "duet", "builtin", "csv", "jsonl"}
)


def _parser_names() -> frozenset[str]:
    from importlib.metadata import entry_points

    try:
        names = {ep.name for ep in entry_points(group="duetbench.parsers")}
    except Exception:  # a broken installation must not stop the config from loading
        names = set()
    return _BUILTIN_PARSERS | names


def _is_thesis_benchmark(v: Any) -> bool:
    return isinstance(v, dict) and "A" in v


def _implied_thesis(doc: LocatedYaml) -> LocatedYaml | None:
    """A file of thesis benchmark sections without `duetbench:` (the thesis's listing 1 on
    its own): every top-level section is a benchmark, run in file order, defaults elsewhere."""
    data = doc.data
    if not all(_is_thesis_benchmark(v) for v in data.values()):
        return None
    names = list(data)
    lines = dict(doc.lines)
    lines[("duetbench",)] = 1
    lines[("duetbench", "duets")] = 1
    for i, n in enumerate(names):
        lines[("duetbench", "duets", i)] = doc.line_of((n,)) or 1
    return LocatedYaml(data={"duetbench": {"duets": names}, **data}, file=doc.file, lines=lines)


def _load_thesis(doc: LocatedYaml) -> Experiment:
    data: dict[str, Any] = doc.data
    top = data["duetbench"]
    if top is None:
        raise ConfigError(
            "the `duetbench:` section is empty; it needs at least `duets: [<benchmark>, ...]` "
            "naming the benchmark sections to run",
            file=doc.file,
            line=doc.line_of(("duetbench",)),
            key="duetbench",
        )
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
        if name == "duetbench":
            raise ConfigError(
                "`duets:` names 'duetbench', which is the settings section, not a benchmark; "
                "give the benchmark section another name",
                file=doc.file,
                line=line,
                key="duetbench.duets",
            )
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
    for k in _THESIS_UNIQUE:
        inherited.pop(k, None)
    parsers = _parser_names()

    benchmarks = []
    owns: dict[str, dict[str, Any]] = {}
    needs_container = False
    for name in names:
        raw = data[name]
        if raw is None:
            raise ConfigError(
                f"benchmark section `{name}:` is empty; it needs at least `A: {{run: <command>}}`",
                file=doc.file,
                line=doc.line_of((name,)),
                key=name,
            )
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
        if "A" not in raw:
            raise ConfigError(
                f"benchmark '{name}' has no A side. Add `A: {{run: <command>}}`; B is optional "
                "(without it the benchmark is an A/A experiment).",
                file=doc.file,
                line=doc.line_of((name,)),
                key=name,
            )
        own = bench.model_dump(exclude_unset=True)
        owns[name] = own
        merged = {**inherited, **{k: v for k, v in own.items() if k not in ("A", "B")}}

        def g(key: str, default: Any = None, _m: dict[str, Any] = merged) -> Any:
            v = _m.get(key)
            return default if v is None else v

        def side(
            pair: str, s: ThesisSide | None, _g: Any = g, _name: str = name, _own: Any = own
        ) -> Side:
            s = s or ThesisSide()
            run = s.run if s.run is not None else _g("run")
            where = (_name, pair)
            if run is None:
                raise ConfigError(
                    f"benchmark '{_name}' side {pair} has no `run:` command. Write "
                    f"`{pair}: {{run: <command>}}`"
                    + (
                        " (B does not take A's `run`; an A/A benchmark leaves B out)"
                        if pair == "B"
                        else ""
                    )
                    + ", or put `run:` in the benchmark section for both sides.",
                    file=doc.file,
                    line=doc.line_of(where),
                    key=f"{_name}.{pair}",
                )
            run_base = s.run_base if s.run_base is not None else _g("run_base", "")
            sync_base = (
                s.syncduet_run_base if s.syncduet_run_base is not None else _g("syncduet_run_base")
            )
            command = " ".join(p for p in (run_base.strip(), run.strip()) if p)
            if not command:
                raise ConfigError(
                    f"benchmark '{_name}' side {pair} has an empty command: `run_base` and "
                    "`run` are both empty",
                    file=doc.file,
                    line=doc.line_of(where + ("run",)) or doc.line_of(where),
                    key=f"{_name}.{pair}.run",
                )
            env = {
                **(section.env or {}),
                **(_own.get("env") or {}),
                **(s.env or {}),
            }
            return Side(
                command=command,
                sync_command=" ".join(p for p in (sync_base.strip(), run.strip()) if p)
                if sync_base and sync_base.strip()
                else None,
                image=s.image or _g("image"),
                results=tuple(s.results if s.results is not None else _g("results", [])),
                env=tuple(sorted(env.items())),
                workdir=s.workdir or _g("workdir"),
            )

        a = side("A", bench.A)
        b = side("B", bench.B) if "B" in raw else a
        if a.image or b.image:
            needs_container = True
        suite = g("suite", "")
        results = a.results or b.results
        harness = g("harness") or _harness_of_suite(
            suite, bool(results), parsers, doc, name, "suite" in own
        )
        reps = (
            ("seqn", g("sequential_repetitions", 0)),
            ("aduet", _duet_reps(own, inherited)),
            ("sduet", g("syncduet_repetitions", 0)),
        )
        if dict(reps)["sduet"] and harness != "command" and not (a.sync_command and b.sync_command):
            key = "syncduet_repetitions"
            path = (name, key) if key in own else ("duetbench", key)
            raise ConfigError(
                f"benchmark '{name}' asks for {dict(reps)['sduet']} synchronized duet "
                "(syncduet) runs but has no `syncduet_run_base` for "
                + ("side B" if a.sync_command else "side A" if b.sync_command else "its sides")
                + ": its harness must wait at the iteration barrier, whose place `$$` marks in "
                "that command. Add `syncduet_run_base:` (it may equal `run_base` when the harness "
                "synchronizes through $DUET_SYNC_DIR, docs/sync.md) or set "
                "`syncduet_repetitions: 0`.",
                file=doc.file,
                line=doc.line_of(path) or doc.line_of((name,)),
                key=".".join(path),
            )
        timeout = g("timeout")
        benchmarks.append(
            Benchmark(
                name=name,
                sides=(("A", a), ("B", b)),
                aa="B" not in raw,
                harness=harness,
                suite=suite or (harness if harness != "command" else name),
                repetitions=reps,
                timeout=timeout if timeout else None,  # the thesis: 0 or less is no timeout
                hang_timeout=_hang_value(g("hang_timeout")),
                iterations=g("iterations", 10),
                time_budget=g("time_budget"),
                warmup=g("warmup", 0),
                busy_shorter_side=bool(g("busy_shorter_side", False)),
                cpus=_cpus_value(g("cpus", "auto")),
            )
        )
    engine = section.docker_command
    executor = section.executor or ("container" if needs_container else "local")
    if executor == "container":
        executor = _engine_kind(engine) or _installed_engine()
    artifacts = (
        dict(section.artifacts or {})
        if "artifacts" in section.model_fields_set
        else dict(DEFAULT_ARTIFACTS)
    )
    # remove_containers was per benchmark in the thesis tool; containers are removed (or
    # kept) for the whole experiment here, so `false` anywhere keeps them all.
    keep = section.remove_containers is False or any(
        o.get("remove_containers") is False for o in owns.values()
    )
    return Experiment(
        name=(
            _experiment_name(section.name, doc, ("duetbench", "name"))
            if section.name is not None
            else safe_experiment_name(section.suite or doc.file.stem.replace(".duet", ""))
        ),
        seed=section.seed if section.seed is not None else 0,
        schedule=_thesis_schedule(section, owns, doc),
        benchmarks=tuple(benchmarks),
        artifacts=tuple(artifacts.items()),
        executor=executor,
        container=ContainerSettings(engine=engine, remove_containers=not keep),
        source=str(doc.file),
        format="thesis",
    )


def _duet_reps(own: dict[str, Any], inherited: dict[str, Any]) -> int:
    """`duet_repetitions` (or the older `repetitions`) of the most specific level setting one."""
    for level in (own, inherited):
        for key in ("duet_repetitions", "repetitions"):
            if level.get(key) is not None:
                return int(level[key])
    return 1


def _harness_of_suite(
    suite: str, has_results: bool, parsers: frozenset[str], doc: LocatedYaml, name: str, own: bool
) -> str:
    """The thesis's `suite:` picks the result parser (duetprocess did the same); a suite
    no parser knows is a label, and a near miss of a parser name is a typo."""
    if suite in parsers:
        return suite
    if suite:
        close = difflib.get_close_matches(suite, sorted(parsers), n=1, cutoff=0.8)
        if close:
            path = (name, "suite") if own else ("duetbench", "suite")
            raise ConfigError(
                f"suite '{suite}' names no result parser. Did you mean '{close[0]}'? "
                f"(If '{suite}' is only a label, also set `harness:` to the parser, "
                "e.g. `harness: generic`.)",
                file=doc.file,
                line=doc.line_of(path),
                key=".".join(path),
            )
    return "generic" if has_results else "command"


def _thesis_schedule(
    section: ThesisSection, owns: dict[str, dict[str, Any]], doc: LocatedYaml
) -> str:
    """One schedule for the experiment. The thesis's listing 1 sets it in a benchmark
    section; that counts as long as no other section says otherwise."""

    def norm(v: str) -> str:
        return "rmit" if v == "randomized_interleaving_trials" else v

    chosen = norm(section.schedule) if section.schedule else None
    source = "the `duetbench:` section"
    for name, own in owns.items():
        v = own.get("schedule")
        if v is None:
            continue
        if chosen is None:
            chosen, source = norm(v), f"benchmark '{name}'"
        elif norm(v) != chosen:
            raise ConfigError(
                f"benchmark '{name}' sets `schedule: {v}` but {source} sets "
                f"{'randomized_interleaving_trials' if chosen == 'rmit' else chosen}: the "
                "schedule orders all runs of the experiment, so there is only one. Set "
                "`schedule:` once, in the `duetbench:` section.",
                file=doc.file,
                line=doc.line_of((name, "schedule")),
                key=f"{name}.schedule",
            )
    return chosen or "sequential"


def _installed_engine() -> str:
    """Without `docker_command`: podman, or docker when only docker is installed here."""
    if shutil.which("podman") is None and shutil.which("docker") is not None:
        return "docker"
    return "podman"


def _engine_kind(engine: str | None) -> str | None:
    """docker or podman from `docker_command` (`sudo podman`, `/usr/bin/docker`, ...)."""
    if not engine:
        return None
    words = [Path(w).name for w in engine.split()]
    for w in words:
        if w in ("docker", "podman"):
            return w
    return "docker"


def _hang_value(*choices: float | None) -> float | None:
    """The first `hang_timeout` set (most specific first), else the default; 0 (off): None."""
    for v in choices:
        if v is not None:
            return v or None
    return DEFAULT_HANG_TIMEOUT


def _cpus_value(v: Any) -> str | tuple[int, ...]:
    return v if isinstance(v, str) else tuple(v)


def _check_name(name: str, doc: LocatedYaml, path: tuple[Any, ...]) -> None:
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(
            f"benchmark name '{name[:30]}...' has {len(name)} characters; it may have at most "
            f"{MAX_NAME_LENGTH}: it names the directories of the benchmark's runs "
            "(docs/config.md, section Limits). Shorten it",
            file=doc.file,
            line=doc.line_of(path),
            key=".".join(map(str, path)),
        )
    if not _NAME_OK.match(name):
        raise ConfigError(
            f"benchmark name '{_key_text(name)}' can only use letters, digits and _ . + - "
            "(it names directories)",
            file=doc.file,
            line=doc.line_of(path),
            key=".".join(map(str, path)),
        )


#: an experiment name is one directory name under -o (docs/config.md, `name`)
EXPERIMENT_NAME_MAX = 100
_EXPERIMENT_NAME_OK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def safe_experiment_name(text: str) -> str:
    """A valid experiment name made from ``text`` (a file name or a suite label the user
    did not write as a name): other characters become ``-``."""
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text)
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:EXPERIMENT_NAME_MAX].rstrip("-_.+")
    return name or "experiment"


def _experiment_name(name: str, doc: LocatedYaml, path: tuple[str, ...]) -> str:
    """``name`` if it is a valid experiment name, else a ConfigError saying why and what to write."""
    if _EXPERIMENT_NAME_OK.fullmatch(name) and len(name) <= EXPERIMENT_NAME_MAX:
        return name
    if not name:
        why = "is empty"
    elif name in (".", ".."):
        why = f"is {name!r}, which names a directory that is not the experiment's own"
    elif len(name) > EXPERIMENT_NAME_MAX:
        why = f"has {len(name)} characters"
    elif bad := [c for c in name if not c.isprintable()]:
        why = f"contains the control character {bad[0]!r}"
    elif "/" in name or "\\" in name:
        why = "contains a path separator, so results would go outside the -o directory"
    elif bad := sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9_.+-]", c)}):
        why = "contains " + ", ".join(f"{c!r}" for c in bad)
    else:
        why = "starts with " + repr(name[0])
    raise ConfigError(
        f"the experiment name {name[:120]!r} {why}. It names the results directory "
        f"(<-o>/<name>/), so it must be 1 to {EXPERIMENT_NAME_MAX} letters, digits and _ . + -, "
        f"starting with a letter or digit; e.g. `name: {safe_experiment_name(name)}`",
        file=doc.file,
        line=doc.line_of(path),
        key=".".join(path),
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
                hang_timeout=_hang_value(m.hang_timeout, exp.hang_timeout),
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
        name=_experiment_name(exp.name, doc, ("experiment", "name")),
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
