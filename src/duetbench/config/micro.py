"""``harness: python`` (alias ``micro``) in the native format: a benchmark timed by duet
micro's worker (docs/micro.md, "In a duet.yml").

The benchmark names the function or suite (``target``, ``benchmark``) and each side's
interpreter and source tree (``python``, ``path``), on the benchmark or per side. Its side
commands are built when the experiment starts, from side A's calibration
(``duetbench.micro.experiment``).
"""

from __future__ import annotations

from typing import Any

from .errors import located_error
from .model import MicroSide, MicroSpec, Side
from .schema_models import NativeBenchmark, NativeSide
from .yamlload import LocatedYaml

#: The harness names of a micro benchmark in duet.yml; the first is what the data says.
MICRO_HARNESS = "micro"
#: The interpreter of a side that names none.
DEFAULT_PYTHON = "python3"
#: Seconds of sampling per run when neither `iterations` nor `time_budget` is given.
DEFAULT_RUN_TIME_S = 1.0
#: Keys only a python benchmark takes.
MICRO_KEYS = ("python", "path", "target", "benchmark")
#: ... and those a python benchmark takes on the benchmark only
MICRO_BENCHMARK_KEYS = ("keep_gc", "cpu_swap")
#: Shown as the side command until the experiment starts and calibrates.
PLACEHOLDER = "duet-micro-worker (its command is built after calibration, when the run starts)"


def is_micro(m: NativeBenchmark) -> bool:
    """``harness: python``; or ``harness: micro`` without commands (with commands, ``micro``
    is the worker's result parser for a worker command written by hand, docs/parsers.md)."""
    if m.harness == "python":
        return True
    commands = [s.command or s.sync_command for s in (m, m.A, m.B) if s is not None]
    return m.harness == MICRO_HARNESS and not any(commands)


def check_not_micro(doc: LocatedYaml, name: str, m: NativeBenchmark, own: dict[str, Any]) -> None:
    """A command benchmark with a python-only key: say which harness takes it."""
    for where, side in (("", m), ("A.", m.A), ("B.", m.B)):
        for key in MICRO_KEYS + (MICRO_BENCHMARK_KEYS if not where else ()):
            if side is not None and getattr(side, key) is not None:
                raise located_error(
                    doc,
                    f"benchmark '{name}': `{where}{key}` is for `harness: python` (a Python "
                    "function timed by duet micro's worker); set that harness or remove it",
                    ("benchmarks", name, *((where[0],) if where else ()), key),
                    ("benchmarks", name),
                )


def micro_benchmark_parts(
    doc: LocatedYaml, name: str, m: NativeBenchmark
) -> tuple[Side, Side, MicroSpec, bool]:
    """(placeholder side A, side B, the MicroSpec, aa) of python benchmark ``name``."""
    where = ("benchmarks", name)
    for side, label in ((m, ""), (m.A, "A."), (m.B, "B.")):
        if side is not None and (side.command or side.sync_command):
            raise located_error(
                doc,
                f"benchmark '{name}' has `harness: python`: duet micro's worker times it, "
                f"so `{label}command` has no place; give `target:` (module:function, a "
                "file or a suite directory) and each side's `python:` and `path:`",
                (*where, *((label[0],) if label else ()), "command"),
                where,
            )
    aa = m.B is None
    sides = []
    for pair, own in (("A", m.A), ("B", m.A if aa else m.B)):
        s = own or NativeSide()
        target = s.target or m.target
        if not target:
            raise located_error(
                doc,
                f"benchmark '{name}' (harness: python) has no `target` for side {pair}: give "
                "`target: module:function` (or a file, or an asv suite directory) on the "
                f"benchmark, or `{pair}: {{target: ...}}`",
                (*where, pair),
                where,
            )
        sides.append(
            (
                pair,
                MicroSide(
                    python=s.python or m.python or DEFAULT_PYTHON,
                    target=target,
                    benchmark=s.benchmark or m.benchmark,
                    paths=tuple(s.path if s.path is not None else (m.path or [])),
                ),
            )
        )
    spec = MicroSpec(
        sides=tuple(sides),
        samples=m.iterations,
        run_time_s=None if m.iterations else (m.time_budget or DEFAULT_RUN_TIME_S),
        keep_gc=bool(m.keep_gc),
        cpu_swap=m.cpu_swap is not False,
    )
    a, b = (_placeholder(m, own) for own in (m.A, m.A if aa else m.B))
    return a, b, spec, aa


def _placeholder(m: NativeBenchmark, own: NativeSide | None) -> Side:
    env = {**(m.env or {}), **((own.env if own else None) or {})}
    return Side(command=PLACEHOLDER, env=tuple(sorted(env.items())))
