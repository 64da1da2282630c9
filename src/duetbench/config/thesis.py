"""The thesis format: a `duetbench:` settings section plus one section per benchmark.

Settings in `duetbench:` are inherited by every benchmark section (the benchmark's own
win), as in the thesis tool; docs/config.md, "Thesis format", says which keys exist and
where the defaults differ.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .errors import located_error, validate
from .fields import (
    check_benchmark_name,
    check_busy_shorter_side,
    cpus_value,
    experiment_name,
    hang_value,
    safe_experiment_name,
)
from .harness import canonical, known_harnesses, near_miss
from .harness import checked as checked_harness
from .model import DEFAULT_ARTIFACTS, Benchmark, ContainerSettings, Experiment, Side
from .schema_models import ThesisBenchmark, ThesisSection, ThesisSide
from .yamlload import LocatedYaml

_THESIS_UNIQUE = ("name", "seed", "docker_command", "artifacts", "duets", "executor")


def _is_thesis_benchmark(v: Any) -> bool:
    return isinstance(v, dict) and "A" in v


def implied_thesis(doc: LocatedYaml) -> LocatedYaml | None:
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


def load_thesis(doc: LocatedYaml) -> Experiment:
    """The experiment of a thesis-format document (one with a `duetbench:` section)."""
    section = _section(doc)
    names = section.duets
    _check_duets(doc, names)
    inherited = section.model_dump(exclude_unset=True)
    for k in _THESIS_UNIQUE:
        inherited.pop(k, None)
    parsers = known_harnesses()
    benchmarks = []
    owns: dict[str, dict[str, Any]] = {}
    for name in names:
        bench, owns[name] = _benchmark(doc, name, section, inherited, parsers)
        benchmarks.append(bench)
    needs_container = any(s.image for b in benchmarks for _, s in b.sides)
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
            experiment_name(section.name, doc, ("duetbench", "name"))
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


def _section(doc: LocatedYaml) -> ThesisSection:
    """The validated `duetbench:` section."""
    top = doc.data["duetbench"]
    where = ("duetbench",)
    if top is None:
        raise located_error(
            doc,
            "the `duetbench:` section is empty; it needs at least `duets: [<benchmark>, ...]` "
            "naming the benchmark sections to run",
            where,
        )
    if not isinstance(top, dict):
        raise located_error(doc, "the `duetbench:` section must be a mapping of settings", where)
    section: ThesisSection = validate(ThesisSection, top, doc, where, "the duetbench section")
    return section


def _check_duets(doc: LocatedYaml, names: list[str]) -> None:
    """`duets:` names each benchmark section to run once, and each exists."""
    data = doc.data
    key = "duetbench.duets"
    if not names:
        raise located_error(
            doc,
            "`duets:` lists no benchmark; add the names of the benchmark sections to run",
            ("duetbench", "duets"),
        )
    seen: set[str] = set()
    for i, name in enumerate(names):
        where = ("duetbench", "duets", i)
        if name in seen:
            raise located_error(
                doc, f"benchmark '{name}' is listed twice in `duets:`", where, key=key
            )
        seen.add(name)
        if name == "duetbench":
            raise located_error(
                doc,
                "`duets:` names 'duetbench', which is the settings section, not a benchmark; "
                "give the benchmark section another name",
                where,
                key=key,
            )
        if name not in data:
            sections = [k for k in data if k != "duetbench"]
            close = difflib.get_close_matches(name, sections, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise located_error(
                doc,
                f"`duets:` names '{name}' but there is no top-level section `{name}:`.{hint}",
                where,
                key=key,
            )
        check_benchmark_name(name, doc, where)


class _Settings:
    """A benchmark's settings: its own over the `duetbench:` section's (sides excluded)."""

    def __init__(self, inherited: dict[str, Any], own: dict[str, Any]) -> None:
        self.own = own
        self.merged = {**inherited, **{k: v for k, v in own.items() if k not in ("A", "B")}}

    def get(self, key: str, default: Any = None) -> Any:
        v = self.merged.get(key)
        return default if v is None else v


def _benchmark(
    doc: LocatedYaml,
    name: str,
    section: ThesisSection,
    inherited: dict[str, Any],
    parsers: frozenset[str],
) -> tuple[Benchmark, dict[str, Any]]:
    """Benchmark section ``name`` and the settings it sets itself."""
    raw = doc.data[name]
    if raw is None:
        raise located_error(
            doc,
            f"benchmark section `{name}:` is empty; it needs at least `A: {{run: <command>}}`",
            (name,),
        )
    if not isinstance(raw, dict):
        raise located_error(
            doc,
            f"benchmark section `{name}:` must be a mapping with at least `A: {{run: ...}}`",
            (name,),
        )
    bench: ThesisBenchmark = validate(ThesisBenchmark, raw, doc, (name,), f"benchmark '{name}'")
    if "A" not in raw:
        raise located_error(
            doc,
            f"benchmark '{name}' has no A side. Add `A: {{run: <command>}}`; B is optional "
            "(without it the benchmark is an A/A experiment).",
            (name,),
        )
    own = bench.model_dump(exclude_unset=True)
    g = _Settings(inherited, own)
    a = _side(doc, name, "A", bench.A, g, section)
    b = _side(doc, name, "B", bench.B, g, section) if "B" in raw else a
    suite = g.get("suite", "")
    results = a.results or b.results
    where = (name, "harness") if "harness" in own else ("duetbench", "harness")
    harness = (
        checked_harness(doc, g.get("harness"), where)
        if g.get("harness")
        else _harness_of_suite(suite, bool(results), parsers, doc, name, "suite" in own)
    )
    reps = (
        ("seqn", g.get("sequential_repetitions", 0)),
        ("aduet", _duet_reps(own, inherited)),
        ("sduet", g.get("syncduet_repetitions", 0)),
    )
    check_busy_shorter_side(
        doc, name, harness, bool(g.get("busy_shorter_side", False)),
        (name, "busy_shorter_side"), ("duetbench", "busy_shorter_side"), (name,),
    )  # fmt: skip
    if dict(reps)["sduet"] and harness != "command" and not (a.sync_command and b.sync_command):
        raise _no_sync_command(doc, name, dict(reps)["sduet"], a, b, own)
    timeout = g.get("timeout")
    benchmark = Benchmark(
        name=name,
        sides=(("A", a), ("B", b)),
        aa="B" not in raw,
        harness=harness,
        suite=suite or (harness if harness != "command" else name),
        repetitions=reps,
        timeout=timeout if timeout else None,  # the thesis: 0 or less is no timeout
        hang_timeout=hang_value(g.get("hang_timeout")),
        iterations=g.get("iterations", 10),
        time_budget=g.get("time_budget"),
        warmup=g.get("warmup", 0),
        busy_shorter_side=bool(g.get("busy_shorter_side", False)),
        cpus=cpus_value(g.get("cpus", "auto")),
    )
    return benchmark, own


def _side(
    doc: LocatedYaml,
    name: str,
    pair: str,
    s: ThesisSide | None,
    g: _Settings,
    section: ThesisSection,
) -> Side:
    """Side ``pair`` of benchmark ``name``: its command is `run_base` + `run`."""
    s = s or ThesisSide()
    run = s.run if s.run is not None else g.get("run")
    where = (name, pair)
    if run is None:
        raise located_error(
            doc,
            f"benchmark '{name}' side {pair} has no `run:` command. Write "
            f"`{pair}: {{run: <command>}}`"
            + (" (B does not take A's `run`; an A/A benchmark leaves B out)" if pair == "B" else "")
            + ", or put `run:` in the benchmark section for both sides.",
            where,
        )
    run_base = s.run_base if s.run_base is not None else g.get("run_base", "")
    sync_base = (
        s.syncduet_run_base if s.syncduet_run_base is not None else g.get("syncduet_run_base")
    )
    command = " ".join(p for p in (run_base.strip(), run.strip()) if p)
    if not command:
        raise located_error(
            doc,
            f"benchmark '{name}' side {pair} has an empty command: `run_base` and "
            "`run` are both empty",
            where + ("run",),
            where,
        )
    env = {**(section.env or {}), **(g.own.get("env") or {}), **(s.env or {})}
    return Side(
        command=command,
        sync_command=" ".join(p for p in (sync_base.strip(), run.strip()) if p)
        if sync_base and sync_base.strip()
        else None,
        image=s.image or g.get("image"),
        results=tuple(s.results if s.results is not None else g.get("results", [])),
        env=tuple(sorted(env.items())),
        workdir=s.workdir or g.get("workdir"),
    )


def _no_sync_command(
    doc: LocatedYaml, name: str, runs: int, a: Side, b: Side, own: dict[str, Any]
) -> ConfigError:
    """Synchronized duets need a command that waits at the barrier on both sides."""
    key = "syncduet_repetitions"
    path = (name, key) if key in own else ("duetbench", key)
    return located_error(
        doc,
        f"benchmark '{name}' asks for {runs} synchronized duet "
        "(syncduet) runs but has no `syncduet_run_base` for "
        + ("side B" if a.sync_command else "side A" if b.sync_command else "its sides")
        + ": its harness must wait at the iteration barrier, whose place `$$` marks in "
        "that command. Add `syncduet_run_base:` (it may equal `run_base` when the harness "
        "synchronizes through $DUET_SYNC_DIR, docs/sync.md) or set "
        "`syncduet_repetitions: 0`.",
        path,
        (name,),
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
        return canonical(suite)
    if suite:
        close = near_miss(suite, parsers)
        if close:
            raise located_error(
                doc,
                f"suite '{suite}' names no result parser. Did you mean '{close}'? "
                f"(If '{suite}' is only a label, also set `harness:` to the parser, "
                "e.g. `harness: generic`.)",
                (name, "suite") if own else ("duetbench", "suite"),
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
            raise located_error(
                doc,
                f"benchmark '{name}' sets `schedule: {v}` but {source} sets "
                f"{'randomized_interleaving_trials' if chosen == 'rmit' else chosen}: the "
                "schedule orders all runs of the experiment, so there is only one. Set "
                "`schedule:` once, in the `duetbench:` section.",
                (name, "schedule"),
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
