"""The ``benchmark`` fixture, with pytest-benchmark's API (docs/pytest.md, "The fixture").

``benchmark(fn, *args, **kwargs)`` and ``benchmark.pedantic(target, args, kwargs, setup,
rounds, warmup_rounds, iterations)`` time ``fn``; ``benchmark.extra_info`` is a dict kept
with the results. What a call does depends on the session's mode (``STATE.mode``):

- ``single`` (plain ``pytest``, pytest-benchmark not installed): times this side alone,
  as pytest-benchmark does -- calibrated rounds for ``max_time`` (1 s, or the
  ``benchmark`` mark's), at least ``min_rounds`` (5) -- and the session ends with a table
  of min, max, mean, stddev, median and rounds;
- ``calibrate`` (a side's first process under ``--duet-*``): calibrates the call as
  duet micro's worker does (docs/micro.md, "Calibration") and records it;
- ``run`` (a side's process in one run of the duet): takes the run's samples through
  the micro worker's own sampling (:func:`duetbench.micro.sampling.sample_callable`: the
  handshake of a synchronous duet, the CPU swap, each sample's CPU time and run delay)
  into ``$DUET_OUTPUT_DIR``.

Standard library and pytest only (no numpy): this runs in every side process.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

from .design import paced_samples


def _load_worker() -> ModuleType:
    """duet micro's worker (``micro/worker.py``), loaded by path as it loads its helpers:
    importing the package ``duetbench.micro`` would import pandas, and every side's
    pytest process would wait for it."""
    name = "_duetbench_micro_worker"
    module = sys.modules.get(name)
    if module is None:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "micro", "worker.py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


worker = _load_worker()
#: the worker's helpers: its calibration (the protocol of docs/micro.md, "Calibration")
#: and its sampling loop
helpers = worker._load_helpers()
cal = helpers["calibration"]
sampling = helpers["sampling"]

#: pytest-benchmark's defaults for a single side
DEFAULT_MAX_TIME = 1.0
DEFAULT_MIN_ROUNDS = 5


@dataclass
class State:
    """The session's mode and what the fixture found (one per pytest process)."""

    mode: str = "single"  # single | calibrate | run
    instruction: dict[str, Any] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # nodeid -> what was timed
    stats: dict[str, Stats] = field(default_factory=dict)  # single: nodeid -> stats
    swap: Any = None  # run: the CPU swap of this side, one for all its tests
    #: single: what pytest-benchmark's options say where it is not installed (compat.py)
    single: dict[str, Any] = field(default_factory=dict)
    #: run: the share of the planned samples this run takes (duet.Pacer), read once
    share: float | None = None

    def pace(self) -> float:
        """Run mode: the share of its planned samples every test takes in this run, as
        the controller wrote it before the run (1 when it keeps no pace)."""
        if self.share is None:
            self.share = 1.0
            path = self.instruction.get("pace")
            if path:
                try:
                    with open(path, encoding="utf-8") as f:
                        self.share = min(1.0, max(0.0, float(json.load(f)["share"])))
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    raise DuetFixtureError(f"cannot read the run's pace {path}: {exc}") from exc
        return self.share

    def planned(self, nodeid: str) -> dict[str, Any]:
        """Run mode: the plan's entry of test ``nodeid`` (samples, evaluations, folder)."""
        for entry in self.instruction.get("tests") or []:
            if entry["nodeid"] == nodeid:
                return dict(entry)
        raise DuetFixtureError(f"{nodeid} is not in this run's plan")


STATE = State()


class DuetFixtureError(Exception):
    """The fixture used as pytest-benchmark does not allow (called twice, setup with
    iterations, ...)."""


@dataclass(frozen=True)
class Stats:
    """One side's rounds (single mode): seconds per call."""

    data: tuple[float, ...]
    iterations: int

    @property
    def rounds(self) -> int:
        return len(self.data)

    @property
    def min(self) -> float:
        return min(self.data)

    @property
    def max(self) -> float:
        return max(self.data)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.data)

    @property
    def median(self) -> float:
        return statistics.median(self.data)

    @property
    def stddev(self) -> float:
        return statistics.stdev(self.data) if len(self.data) > 1 else 0.0

    @property
    def iqr(self) -> float:
        if len(self.data) < 2:
            return 0.0
        q = statistics.quantiles(self.data, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def ops(self) -> float:
        return 1.0 / self.mean if self.mean > 0 else math.inf

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def as_dict(self) -> dict[str, Any]:
        keys = ("min", "max", "mean", "stddev", "median", "iqr", "ops", "rounds", "iterations")
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class Timed:
    """What a test asked to time: ``fn``, or with pedantic's ``setup`` ``prepare``, which
    sets a call up and returns its callable; ``plan``: pedantic's ``rounds``,
    ``warmup_rounds`` and ``iterations`` (None: calibrated)."""

    fn: Callable[[], Any] | None
    prepare: Callable[[], Callable[[], Any]] | None = None
    plan: dict[str, int] | None = None

    def call(self) -> Callable[[], Any]:
        """The callable of one call, set up when it has a setup."""
        f = self.prepare() if self.prepare is not None else self.fn
        assert f is not None
        return f


def _marker_options(node: Any) -> dict[str, Any]:
    mark = node.get_closest_marker("benchmark") if node is not None else None
    return dict(mark.kwargs) if mark is not None else {}


class BenchmarkFixture:
    """What a test gets as ``benchmark`` (see the module doc)."""

    def __init__(self, node: Any, state: State) -> None:
        self.node = node
        self.state = state
        self.name = getattr(node, "name", "")
        self.fullname = getattr(node, "nodeid", "")
        options = _marker_options(node)
        self.group = options.get("group")
        self.options = options
        self.extra_info: dict[str, Any] = {}
        self.stats: Stats | None = None
        self.disabled = False
        self._used = False

    # -------------------------------------------------------------- the API
    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._claim()
        fn = functools.partial(function_to_benchmark, *args, **kwargs) if args or kwargs else None
        return self._time(Timed(fn or function_to_benchmark))

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        """pytest-benchmark's ``pedantic``: in a single side exactly ``rounds`` rounds of
        ``iterations`` calls after ``warmup_rounds``; ``setup`` (returning nothing or
        ``(args, kwargs)``) before each round, untimed. Under ``--duet-*`` rounds and
        iterations are hints (the evaluation count is calibrated, the plan decides the
        samples); with ``setup`` every sample is one call after its own setup."""
        self._claim()
        if iterations < 1 or rounds < 1 or warmup_rounds < 0:
            raise DuetFixtureError(
                "pedantic: rounds and iterations must be >= 1, warmup_rounds >= 0"
            )
        if setup is not None and iterations > 1:
            raise DuetFixtureError("pedantic: a setup function needs iterations=1")
        kw = dict(kwargs or {})

        def prepared() -> Callable[[], Any]:
            a, k = tuple(args), kw
            if setup is not None:
                made = setup()
                if made is not None:
                    a, k = made
            return functools.partial(target, *a, **k)

        plan = {"rounds": rounds, "warmup_rounds": warmup_rounds, "iterations": iterations}
        if setup is None:
            return self._time(Timed(functools.partial(target, *args, **kw), plan=plan))
        return self._time(Timed(None, prepared, plan))

    def weave(self, *args: Any, **kwargs: Any) -> Any:
        raise DuetFixtureError("benchmark.weave (aspect weaving) is not supported by duetbench")

    # -------------------------------------------------------------- modes
    def _claim(self) -> None:
        if self._used:
            raise DuetFixtureError(
                f"{self.fullname}: the benchmark fixture can be called once per test"
            )
        self._used = True

    def _time(self, timed: Timed) -> Any:
        mode = self.state.mode
        if mode == "single":
            return self._single(timed)
        if mode == "calibrate":
            return self._calibrate(timed)
        return self._run(timed)

    def _single(self, timed: Timed) -> Any:
        data: list[float] = []
        result: Any = None
        fn, plan = timed.fn, timed.plan
        if self.state.single.get("disabled"):  # --benchmark-disable: one call, no timing
            return timed.call()()
        if plan is not None:  # pedantic: exactly what was asked
            n = plan["iterations"]
            for r in range(plan["warmup_rounds"] + plan["rounds"]):
                f = timed.call()
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    result = f()
                elapsed = time.perf_counter_ns() - t0
                if r >= plan["warmup_rounds"]:
                    data.append(elapsed / n / 1e9)
            self.stats = Stats(tuple(data), n)
        else:
            assert fn is not None
            result = fn()  # the value the test gets, and a first (untimed) call
            found = cal.calibrate_callable(fn)
            n = found.evaluations
            given = self.state.single
            max_time = float(
                self.options.get("max_time", given.get("max_time") or DEFAULT_MAX_TIME)
            )
            min_rounds = int(
                self.options.get("min_rounds", given.get("min_rounds") or DEFAULT_MIN_ROUNDS)
            )
            start = time.monotonic()
            while len(data) < min_rounds or time.monotonic() - start < max_time:
                data.append(cal.time_sample(fn, n) / n / 1e9)
            self.stats = Stats(tuple(data), n)
        self.state.stats[self.fullname] = self.stats
        return result

    def _calibrate(self, timed: Timed) -> Any:
        fn, prepare = timed.fn, timed.prepare
        ins = self.state.instruction
        settings = cal.Settings(min_sample_ns=round(float(ins.get("min_sample_s", 0.001)) * 1e9))
        keep_gc = bool(ins.get("keep_gc", False))
        began = time.perf_counter()
        prepare_s = 0.0
        if prepare is not None:  # one call per sample, each after its setup
            per, setups = [], []
            for _ in range(3):
                t0 = time.perf_counter()
                f = prepare()
                setups.append(time.perf_counter() - t0)
                per.append(cal.time_sample(f, 1, disable_gc=not keep_gc))
            found = cal.calibrate_callable(prepare(), settings=settings, evaluations=1)
            doc = found.to_json()
            doc["per_evaluation_ns"] = float(min(per))
            prepare_s = min(setups)
            result = prepare()()
        else:
            assert fn is not None
            result = fn()
            found = cal.calibrate_callable(fn, settings=settings, disable_gc=not keep_gc)
            doc = found.to_json()
        self.state.records[self.fullname] = {
            "calibration": doc,
            "setup": prepare is not None,
            "prepare_s": prepare_s,
            "pedantic": timed.plan,
            "extra_info": _plain(self.extra_info),
            "call_s": time.perf_counter() - began,
        }
        return result

    def _run(self, timed: Timed) -> Any:
        prepare = timed.prepare
        ins = self.state.instruction
        root = os.environ.get("DUET_OUTPUT_DIR") or ins.get("output")
        if not root:
            raise DuetFixtureError("no output directory: $DUET_OUTPUT_DIR is not set")
        test = self.state.planned(self.fullname)
        output = os.path.join(root, test["dir"])
        side = os.environ.get("DUET_PAIR") or ins.get("side") or "?"
        evaluations = 1 if prepare is not None else int(test["evaluations"])
        meta = {
            "side": side,
            "target": self.fullname,
            "benchmark": {"name": test["name"], "kind": "pytest", "params": []},
            "calibration": {"evaluations": evaluations, "told": True},
            "paths": list(ins.get("paths") or []),
            "extra_info": _plain(self.extra_info),
        }
        if self.state.swap is None:
            self.state.swap = sampling.cpu_swap(
                helpers, os.environ, float(ins.get("swap_every") or 0.0)
            )
        failure = helpers["discovery"].UserCodeFailure
        ctx = worker.Context(side, self.fullname, test["name"])
        ctx.output = output
        try:
            sampling.sample_callable(
                helpers,
                timed.fn,
                evaluations,
                output,
                meta,
                samples=paced_samples(int(test["samples"]), self.state.pace()),
                warmup=int(ins.get("warmup", sampling.DEFAULT_WARMUP)),
                keep_gc=bool(ins.get("keep_gc", False)),
                timeout=ins.get("timeout"),
                prepare=prepare,
                swap=self.state.swap,
                last=False,  # the side says done after its last test (side.py)
            )
        except failure as exc:  # the function raised: micro-error.json says so, the test fails
            worker.report_failure(ctx, exc.phase, exc.error, worker.EXIT_FAILED)
            raise exc.error from None
        self.state.records[self.fullname] = {"extra_info": _plain(self.extra_info)}
        return timed.call()()  # the value the test gets, after the samples


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it (extra_info may hold anything)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


@pytest.fixture
def benchmark(request: pytest.FixtureRequest) -> Any:
    """pytest-benchmark's ``benchmark`` fixture, timed by duetbench (docs/pytest.md)."""
    return BenchmarkFixture(request.node, STATE)


def format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds / 1e-9:.1f} ns"


def stats_lines(stats: dict[str, Stats]) -> list[str]:
    """The single-side table (pytest-benchmark's columns), one line per test."""
    if not stats:
        return []
    stats = {n.partition("::")[2] or n: s for n, s in stats.items()}  # as pytest-benchmark
    width = max(len(n) for n in stats)
    head = ["min", "max", "mean", "stddev", "median", "rounds"]
    lines = [f"{'name':<{width}}  " + "  ".join(f"{h:>12}" for h in head)]
    for name, s in sorted(stats.items(), key=lambda kv: kv[1].mean):
        cells = [format_time(getattr(s, h)) for h in head[:-1]] + [str(s.rounds)]
        lines.append(f"{name:<{width}}  " + "  ".join(f"{c:>12}" for c in cells))
    return lines
