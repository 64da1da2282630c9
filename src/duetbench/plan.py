"""Experiment -> ordered list of RunSpecs. Pure: no I/O, every draw from the seed.

Draws (per benchmark x method, from a generator keyed by the experiment seed,
the benchmark name and the method, so ``--only`` does not change them):
- the AB/BA launch order of every duet run, balanced (as many AB as BA, +-1);
- which CPU slot side A gets, balanced the same way (docs/statistics.md, "Executing runs"); a seqn run's one
  side gets a slot drawn and balanced the same way, so its placement is comparable.
  `cpus: shared` (or `none`) plans no slots; `auto` plans them and the executor ignores
  them where it resolves to shared (execute/placement.py).
The RMIT schedule shuffles the whole plan with the experiment seed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from .config.limits import MAX_RUNS, runs_of_counts
from .config.model import Benchmark, Experiment
from .errors import ConfigError
from .schema import DUET_METHODS, METHODS, SIDES, Method


@dataclass(frozen=True)
class SideSpec:
    """One side of a run. ``name`` is written as ``pair`` in experiment.json's plan."""

    name: str  # "A" | "B" (schema.SideName)
    command: str
    env: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None
    results: tuple[str, ...] = ()
    cpu_slot: int | None = None  # index into the host's benchmark CPUs; None = not pinned
    image: str | None = None
    setup: str | None = None
    teardown: str | None = None
    mounts: tuple[str, ...] = ()

    @property
    def pair(self) -> str:
        """Old name of :attr:`name`, kept while other modules move to it."""
        return self.name

    def to_dict(self) -> dict[str, Any]:
        d = _fields(self)
        return {"pair": d.pop("name"), **d}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> SideSpec:
        d = dict(d)
        name = d.pop("pair", None)
        return SideSpec(
            **{
                "name": d.pop("name", name),
                **d,
                "env": tuple(tuple(x) for x in d.get("env", ())),
                "results": tuple(d.get("results", ())),
                "mounts": tuple(d.get("mounts", ())),
            }
        )


@dataclass(frozen=True)
class RunSpec:
    """One run: everything an executor needs, self-contained and JSON-serializable."""

    index: int  # position in the full (unfiltered) plan
    run_id: str
    experiment: str
    benchmark: str
    suite: str
    method: str  # schema.Method
    rep: int
    order: str | None  # "AB" | "BA" for duet runs; None for seqn
    sides: tuple[SideSpec, ...]  # in launch order
    harness: str = "command"
    iterations: int | None = 10
    time_budget: float | None = None
    timeout: float | None = None
    busy_shorter_side: bool = False
    kill_grace: float = 5.0
    hang_timeout: float | None = None  # seconds every running side may idle; None: no check
    cpus: str | tuple[int, ...] = "auto"
    executor: str = "local"
    container: dict[str, Any] = field(default_factory=dict)
    warmup: int | str = 0
    aa: bool = False
    workload_benchmarks: bool = False  # each workload of the results is its own benchmark
    base_dir: str = ""  # directory of the config file: relative workdirs are relative to it

    @property
    def is_duet(self) -> bool:
        return self.method in DUET_METHODS

    @property
    def side_names(self) -> tuple[str, ...]:
        """The sides' names in launch order."""
        return tuple(s.name for s in self.sides)

    @property
    def pairs(self) -> tuple[str, ...]:
        """Old name of :attr:`side_names`, kept while other modules move to it."""
        return self.side_names

    def side(self, name: str) -> SideSpec:
        for s in self.sides:
            if s.name == name:
                return s
        raise KeyError(name)

    def record_fields(self) -> dict[str, Any]:
        """What the run's record (records.RunRecord) takes from its spec."""
        identity = ("run_id", "benchmark", "suite", "method", "rep", "order")
        return {k: getattr(self, k) for k in identity} | {"spec": self.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        """JSON data (experiment.json's plan, the payload of a cluster task)."""
        d = _fields(self)
        d["sides"] = [s.to_dict() for s in self.sides]
        d["container"] = {
            k: list(v) if isinstance(v, list) else v for k, v in self.container.items()
        }
        if not self.workload_benchmarks:
            # written only when set (the pytest plugin's runs): every other run's record
            # keeps the keys it had before the field existed
            del d["workload_benchmarks"]
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> RunSpec:
        d = dict(d)
        d["sides"] = tuple(SideSpec.from_dict(s) for s in d["sides"])
        if isinstance(d.get("cpus"), list):
            d["cpus"] = tuple(d["cpus"])
        return RunSpec(**d)


def _fields(obj: Any) -> dict[str, Any]:
    """A flat dataclass's fields as a dict: what ``asdict`` gives for the plan's values
    (immutable strings, numbers and tuples), without its deep copy -- 100 000 runs took
    half a minute that way."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def seed_key(*parts: object) -> int:
    """A 64-bit integer from strings, identical across processes and platforms."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little")


def _balanced(rng: np.random.Generator, n: int, values: tuple[Any, Any]) -> list[Any]:
    seq = [values[i % 2] for i in range(n)]
    if n % 2:  # the odd one out is a fair coin, not always values[0]
        seq[-1] = values[int(rng.integers(2))]
    return [seq[i] for i in rng.permutation(n)]


def _side(bench: Benchmark, name: str, method: str, slot: int | None) -> SideSpec:
    s = bench.side(name)
    command = s.command
    if method == Method.SDUET and bench.external and s.sync_command:
        command = s.sync_command
    return SideSpec(
        name=name,
        command=command,
        env=s.env,
        workdir=s.workdir,
        results=s.results,
        cpu_slot=slot,
        image=s.image,
        setup=s.setup,
        teardown=s.teardown,
        mounts=s.mounts,
    )


def _inproc_side(bench: Benchmark, slot: int | None) -> SideSpec:
    """The one process of an inproc run: side A's settings, the worker command that
    times both sides (built with the calibration, micro/experiment.py)."""
    if bench.micro is None:
        raise ConfigError(
            f"benchmark '{bench.name}': method inproc needs a calibrated Python-function "
            'benchmark (harness micro); docs/micro.md, "In one process: inproc"'
        )
    side = _side(bench, "A", Method.INPROC, slot)
    # before the calibration (duet plan) side A's placeholder stands for it
    return replace(side, command=bench.micro.inproc_command or side.command)


def _runs_of(exp: Experiment, bench: Benchmark) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    pinned = bench.cpus not in ("none", "shared")
    for method in METHODS:
        n = bench.reps(method)
        if n == 0:
            continue
        rng = np.random.default_rng([exp.seed, seed_key(bench.name, method)])
        if method == Method.INPROC:  # one process times both sides (docs/micro.md)
            slots = _balanced(rng, n, (0, 1))
            for rep in range(n):
                runs.append(
                    dict(
                        run_id=f"{bench.name}.inproc.{rep:03d}",
                        method=method,
                        rep=rep,
                        order=None,
                        sides=(_inproc_side(bench, slots[rep] if pinned else None),),
                    )
                )
            continue
        if method == Method.SEQN:
            seqn_slots = {name: _balanced(rng, n, (0, 1)) for name in SIDES}
            for rep in range(n):
                for name in SIDES:
                    slot = seqn_slots[name][rep] if pinned else None
                    runs.append(
                        dict(
                            run_id=f"{bench.name}.seqn.{rep:03d}.{name}",
                            method=method,
                            rep=rep,
                            order=None,
                            sides=(_side(bench, name, method, slot),),
                        )
                    )
            continue
        orders = _balanced(rng, n, ("AB", "BA"))
        a_slots = _balanced(rng, n, (0, 1))
        for rep in range(n):
            slot = {"A": a_slots[rep], "B": 1 - a_slots[rep]}
            sides = tuple(_side(bench, s, method, slot[s] if pinned else None) for s in orders[rep])
            runs.append(
                dict(
                    run_id=f"{bench.name}.{method}.{rep:03d}",
                    method=method,
                    rep=rep,
                    order=orders[rep],
                    sides=sides,
                )
            )
    return runs


def _rounds(seed: int, raw: list[tuple[Benchmark, dict[str, Any]]]) -> list[Any]:
    """RMIT in rounds for adaptive experiments (docs/adaptive.md): round r holds
    repetition r of every benchmark x method (a seqn repetition's two runs together),
    shuffled with the seed. A benchmark stopped by its rule leaves the later rounds,
    so the interleaving continues among the benchmarks still running, and a
    repetition's runs finish in repetition order."""
    by_round: dict[int, list[tuple[Benchmark, dict[str, Any]]]] = {}
    for item in raw:
        by_round.setdefault(int(item[1]["rep"]), []).append(item)
    out = []
    for r in sorted(by_round):
        items = by_round[r]
        perm = np.random.default_rng([seed, seed_key("rmit", r)]).permutation(len(items))
        out.extend(items[i] for i in perm)
    return out


def make_plan(exp: Experiment, only: list[str] | tuple[str, ...] | None = None) -> list[RunSpec]:
    """The ordered runs of ``exp``; ``only`` keeps the named benchmarks (same draws as unfiltered)."""
    names = [b.name for b in exp.benchmarks]
    if only:
        unknown = [o for o in only if o not in names]
        if unknown:
            raise ConfigError(
                f"--only names unknown benchmark(s) {', '.join(unknown)}; "
                f"the config has: {', '.join(names)}"
            )
    total = sum(runs_of_counts(*(b.reps(m) for m in Method)) for b in exp.benchmarks)
    if total > MAX_RUNS:  # load_config says where; this guards experiments built in code
        raise ConfigError(
            f"the experiment plans {total:,} runs, more than the {MAX_RUNS:,} an experiment may "
            "have (docs/config.md, section Limits); lower the repetitions",
            file=exp.source or None,
        )
    raw: list[tuple[Benchmark, dict[str, Any]]] = []
    for bench in exp.benchmarks:
        raw.extend((bench, r) for r in _runs_of(exp, bench))
    if exp.schedule == "rmit" and any(b.stop is not None for b in exp.benchmarks):
        raw = _rounds(exp.seed, raw)
    elif exp.schedule == "rmit":
        perm = np.random.default_rng([exp.seed, seed_key("rmit")]).permutation(len(raw))
        raw = [raw[i] for i in perm]
    container = {
        "engine": exp.container.engine,
        "global_options": list(exp.container.global_options),
        "run_options": list(exp.container.run_options),
        "remove_containers": exp.container.remove_containers,
    }
    base_dir = str(Path(exp.source).resolve().parent) if exp.source else ""  # once, not per run
    plan = []
    for index, (bench, r) in enumerate(raw):
        plan.append(
            RunSpec(
                index=index,
                experiment=exp.name,
                benchmark=bench.name,
                suite=bench.suite,
                harness=bench.harness,
                iterations=bench.iterations,
                time_budget=bench.time_budget,
                timeout=bench.timeout,
                busy_shorter_side=bench.busy_shorter_side,
                kill_grace=exp.kill_grace,
                hang_timeout=bench.hang_timeout,
                cpus=bench.cpus,
                executor=exp.executor,
                container=container,
                warmup=bench.warmup,
                workload_benchmarks=bench.workload_benchmarks,
                aa=bench.aa,
                base_dir=base_dir,
                **r,
            )
        )
    if only:
        plan = [r for r in plan if r.benchmark in only]
    return plan
