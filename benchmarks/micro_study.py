"""Micro study: `duet micro` (sduet, aduet, seqn, inproc) against pyperf timeit and
pytest-benchmark on the known-answer functions of ``examples/micro``, at equal machine time.

Cases: ``knownver.<variant>_<size>`` of ``v_a`` (A) against ``v_b`` (B): ``aa`` (A/A,
same work), ``p1`` (+1 %), ``p3`` (+3 %), ``x2`` (2x, for the bias); sizes ``5us``,
``100us``, ``5ms``. Conditions: ``quiet`` (the machine as it is) and ``noisy`` (a seeded
:class:`duetbench.noise.NoisyNeighbour` ``cpu`` pattern for the whole condition).

Every tool gets the same wall-clock budget ``S`` per case and try:

* ``duet micro --method M --budget S --runs R`` (one method per call; verdict, change and
  interval from its JSON; the default run statistic: the minimum, for inproc the
  median of the pairs);
* ``pyperf timeit``: A then B, each in ``S/2`` -- loops per value fixed to about 1 ms of
  calls (as duet micro calibrates), 3 values per process, and as many processes as a
  pilot run says fit in ``S/2``; verdict from ``pyperf compare_to``, the 95 % interval
  of the ratio of means from Welch's t on the values (pyperf prints none);
* pytest-benchmark: A then B, each ``--benchmark-max-time S/2`` (GC off, as the
  others); verdict and interval from Welch's t on the rounds' times.

asv is not run: it is not installed here and its ``asv continuous`` builds
environments from a repository (docs/performance.md says so).

Per tool, case and condition: verdicts over the tries (A/A false alarms, detections),
bias (mean measured change - true change), median interval width.

    python benchmarks/micro_study.py --quick --json quick.json     # ~3 minutes, a check
    python benchmarks/micro_study.py --json study.json             # the full study (see --plan)
    python benchmarks/micro_study.py --plan                        # tries and expected duration
    python benchmarks/micro_study.py --tools inproc,pyperf --sizes 100us   # the goals' cases
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from scipy import stats

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "micro"
SRC = REPO / "src"
DUET_TOOLS = ("sduet", "aduet", "seqn", "inproc")
TOOLS = (*DUET_TOOLS, "pyperf", "pytest-benchmark")
TRUE_CHANGE = {"aa": 0.0, "p1": 0.01, "p3": 0.03, "x2": 1.0}
#: Seconds a tool run may take beyond its budget before it is given up (a hang).
HANG_SLACK_S = 600


@dataclass(frozen=True)
class Plan:
    budget_s: float
    runs: int
    tries: dict[str, dict[str, int]]  # size -> variant -> tries
    conditions: tuple[str, ...]
    tools: tuple[str, ...]

    def cells(self) -> int:
        per = sum(sum(v.values()) for v in self.tries.values())
        return per * len(self.conditions) * len(self.tools)

    def expected_s(self) -> float:
        """Tool runs x (budget + ~3 s: start-up, discovery, calibration, pilots; measured
        4-6 s on the busy project VM, where the quick study took about twice as long)."""
        return self.cells() * (self.budget_s + 3.0)


FULL = Plan(
    budget_s=10.0,
    runs=10,
    tries={
        "100us": {"aa": 20, "p1": 10, "p3": 2},
        "5us": {"p3": 1, "x2": 1},
        "5ms": {"p3": 1, "x2": 1},
    },
    conditions=("quiet", "noisy"),
    tools=TOOLS,
)
QUICK = Plan(
    budget_s=4.0,
    runs=4,
    tries={"100us": {"aa": 1, "p3": 1}},
    conditions=("quiet", "noisy"),
    tools=TOOLS,
)


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    return env


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def welch_ratio(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """(change, low, high): mean(B)/mean(A) - 1 with a 95 % Welch interval (delta method)."""
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va / ma**2 + vb / mb**2)  # of log(mb/ma)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb else 1e9
    q = float(stats.t.ppf(0.975, df))
    r = math.log(mb / ma)
    return math.exp(r) - 1, math.exp(r - q * se) - 1, math.exp(r + q * se) - 1


def verdict_of(low: float, high: float) -> str:
    return "slower" if low > 0 else "faster" if high < 0 else "same"


def run_duet(method: str, case: str, plan: Plan, tmp: Path, seed: int = 0) -> dict[str, Any]:
    out = tmp / f"duet-{method}"
    argv = [
        sys.executable, "-m", "duetbench", "micro", f"knownver:{case}",
        "--a-path", str(EXAMPLE / "v_a"), "--b-path", str(EXAMPLE / "v_b"),
        "--method", method, "--budget", f"{plan.budget_s}s", "--runs", str(plan.runs),
        "--seed", str(seed), "--format", "json", "-o", str(out),
    ]  # fmt: skip
    done = _run(argv, tmp, plan.budget_s * 3 + HANG_SLACK_S)
    if done.returncode != 0:
        raise RuntimeError(f"duet micro failed: {done.stderr[-500:]}")
    (row,) = json.loads(done.stdout)["rows"]
    return {
        "verdict": row["verdict"],
        "change": row["change"],
        "low": row["ci_low"],
        "high": row["ci_high"],
    }


def _per_call_s(case: str) -> float:
    """One call of ``case`` in version A, timed here (the loops of pyperf's values)."""
    sys.path.insert(0, str(EXAMPLE / "v_a"))
    try:
        import knownver

        fn = getattr(knownver, case)
        fn()
        n, t = 1, 0.0
        while t < 0.05:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            t = time.perf_counter() - t0
            n *= 2
        return t / (n // 2)
    finally:
        sys.path.pop(0)


def _pyperf_side(
    version: str, case: str, loops: int, processes: int, out: Path, cwd: Path
) -> float:
    setup = f"import sys; sys.path.insert(0, {str(EXAMPLE / version)!r}); import knownver"
    argv = [
        sys.executable, "-m", "pyperf", "timeit", "-q", "-s", setup, f"knownver.{case}()",
        "--loops", str(loops), "--values", "3", "--processes", str(processes), "-o", str(out),
    ]  # fmt: skip
    out.unlink(missing_ok=True)
    t0 = time.monotonic()
    done = _run(argv, cwd, HANG_SLACK_S + 10 * processes)
    if done.returncode != 0:
        raise RuntimeError(f"pyperf timeit failed: {done.stderr[-500:]}")
    return time.monotonic() - t0


_PYPERF_PILOT: dict[tuple[str, str], tuple[int, float]] = {}


def run_pyperf(case: str, plan: Plan, tmp: Path) -> dict[str, Any]:
    import pyperf

    key = (case, os.environ.get("MICRO_STUDY_CONDITION", ""))
    if key not in _PYPERF_PILOT:  # loops and seconds per process, once per case and condition
        loops = max(1, round(0.001 / _per_call_s(case)))
        _PYPERF_PILOT[key] = (loops, _pyperf_side("v_a", case, loops, 2, tmp / "p.json", tmp) / 2)
    loops, per_process = _PYPERF_PILOT[key]
    processes = max(2, math.floor(plan.budget_s / 2 / per_process))
    values = {}
    for side, version in (("A", "v_a"), ("B", "v_b")):
        path = tmp / f"pyperf-{side}.json"
        _pyperf_side(version, case, loops, processes, path, tmp)
        values[side] = list(pyperf.Benchmark.load(str(path)).get_values())
    compare = _run(
        [sys.executable, "-m", "pyperf", "compare_to", "-v", str(tmp / "pyperf-A.json"),
         str(tmp / "pyperf-B.json")], tmp, HANG_SLACK_S,
    )  # fmt: skip
    text = compare.stdout + compare.stderr
    change, low, high = welch_ratio(values["A"], values["B"])
    significant = "Not significant" not in text and "Significant" in text
    verdict = verdict_of(low, high) if significant else "same"
    return {"verdict": verdict, "change": change, "low": low, "high": high,
            "processes": processes, "loops": loops}  # fmt: skip


PYTEST_BENCH = """
import sys
sys.path.insert(0, {path!r})
import knownver

def test_case(benchmark):
    benchmark(knownver.{case})
"""


def _pytest_benchmark_side(
    version: str, case: str, side: str, max_time_s: float, tmp: Path
) -> tuple[list[float], float]:
    test = tmp / f"test_pb_{side}.py"
    test.write_text(PYTEST_BENCH.format(path=str(EXAMPLE / version), case=case))
    out = tmp / f"pb-{side}.json"
    argv = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test),
        f"--benchmark-max-time={max_time_s}", "--benchmark-disable-gc",
        "--benchmark-save-data", f"--benchmark-json={out}",
    ]  # fmt: skip
    t0 = time.monotonic()
    done = _run(argv, tmp, max_time_s * 3 + HANG_SLACK_S)
    if done.returncode != 0:
        raise RuntimeError(f"pytest-benchmark failed: {done.stdout[-500:]}")
    (bench,) = json.loads(out.read_text())["benchmarks"]
    return bench["stats"]["data"], time.monotonic() - t0


_PYTEST_OVERHEAD_S: dict[tuple[str, str], float] = {}


def run_pytest_benchmark(case: str, plan: Plan, tmp: Path) -> dict[str, Any]:
    # pytest's start-up and pytest-benchmark's calibration come on top of --benchmark-max-time:
    # a pilot (once per case and condition, not counted) measures them, and each side gets
    # the rest of its half of the budget
    key = (case, os.environ.get("MICRO_STUDY_CONDITION", ""))
    if key not in _PYTEST_OVERHEAD_S:
        _PYTEST_OVERHEAD_S[key] = _pytest_benchmark_side("v_a", case, "pilot", 0.05, tmp)[1]
    pilot_s = _PYTEST_OVERHEAD_S[key]
    max_time = max(0.05, plan.budget_s / 2 - pilot_s)
    data = {
        side: _pytest_benchmark_side(version, case, side, max_time, tmp)[0]
        for side, version in (("A", "v_a"), ("B", "v_b"))
    }
    change, low, high = welch_ratio(data["A"], data["B"])
    return {"verdict": verdict_of(low, high), "change": change, "low": low, "high": high,
            "max_time_s": max_time}  # fmt: skip


def run_tool(tool: str, case: str, plan: Plan, tmp: Path, seed: int = 0) -> dict[str, Any]:
    if tool in DUET_TOOLS:
        return run_duet(tool, case, plan, tmp, seed)
    if tool == "pyperf":
        return run_pyperf(case, plan, tmp)
    return run_pytest_benchmark(case, plan, tmp)


def _condition(cond: str, seed: int) -> AbstractContextManager[Any]:
    if cond == "noisy":
        sys.path.insert(0, str(SRC))
        from duetbench.noise import NoisyNeighbour

        return NoisyNeighbour("cpu", seed=seed)
    return nullcontext()


def _try_seed(seed: int, cond: str, case: str, k: int) -> int:
    """The plan seed of one try: every try draws its own order and CPU placement (with
    one seed for all, every try repeated one plan, and an effect of that plan -- e.g. a
    side placed more often on a slower CPU -- would be in every try alike)."""
    return random.Random(f"{seed}-{cond}-{case}-{k}").randrange(2**31)


def run_study(plan: Plan, seed: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    t_start = time.monotonic()
    for ci, cond in enumerate(plan.conditions):
        os.environ["MICRO_STUDY_CONDITION"] = cond
        with _condition(cond, seed + ci), tempfile.TemporaryDirectory(prefix="micro-study-") as t:
            for size, variants in plan.tries.items():
                for variant, tries in variants.items():
                    case = f"{variant}_{size}"
                    for k in range(tries):
                        # the tools in a rotating order, so drift does not favour one
                        order = (
                            plan.tools[k % len(plan.tools) :] + plan.tools[: k % len(plan.tools)]
                        )
                        for tool in order:
                            tmp = Path(t) / f"{case}-{k}-{tool}"
                            tmp.mkdir()
                            t0 = time.monotonic()
                            try:
                                r = run_tool(tool, case, plan, tmp, _try_seed(seed, cond, case, k))
                            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                                r = {"verdict": "error", "error": str(exc)[-300:]}
                            r.update(tool=tool, case=case, size=size, variant=variant,
                                     condition=cond, try_=k, wall_s=time.monotonic() - t0)  # fmt: skip
                            results.append(r)
                            _log(f"{cond} {case} #{k} {tool}: {r['verdict']} "
                                 f"{r.get('change', float('nan')):+.4f} ({r['wall_s']:.1f} s)")  # fmt: skip
    return {
        "plan": {
            "budget_s": plan.budget_s,
            "runs": plan.runs,
            "tries": plan.tries,
            "conditions": list(plan.conditions),
            "tools": list(plan.tools),
        },  # fmt: skip
        "seed": seed,
        "elapsed_s": time.monotonic() - t_start,
        "results": results,
    }


def summarize(study: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per condition, case and tool."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in study["results"]:
        groups.setdefault((r["condition"], r["case"], r["tool"]), []).append(r)
    rows = []
    for (cond, case, tool), rs in sorted(groups.items()):
        ok = [r for r in rs if r["verdict"] != "error"]
        true = TRUE_CHANGE[case.split("_")[0]]
        changes = [r["change"] for r in ok]
        widths = [r["high"] - r["low"] for r in ok]
        flagged = sum(r["verdict"] in ("slower", "faster") for r in ok)
        rows.append({
            "condition": cond, "case": case, "tool": tool, "tries": len(rs),
            "errors": len(rs) - len(ok),
            "called": f"{flagged}/{len(ok)}" + (" false alarms" if true == 0 else " detected"),
            "bias": statistics.fmean(changes) - true if changes else float("nan"),
            "ci_width": statistics.median(widths) if widths else float("nan"),
            "wall_s": statistics.fmean(r["wall_s"] for r in rs),
        })  # fmt: skip
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| condition | case | tool | tries | A/A false alarms / detections | bias | CI width | s per try |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['condition']} | `{r['case']}` | {r['tool']} | {r['tries']}"
            + (f" ({r['errors']} errors)" if r["errors"] else "")
            + f" | {r['called']} | {r['bias'] * 100:+.2f} % | {r['ci_width'] * 100:.2f} % "
            f"| {r['wall_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one try of two cases (a check)")
    p.add_argument("--plan", action="store_true", help="print the tries and expected duration")
    p.add_argument("--json", type=Path, help="write every try and the summary here")
    p.add_argument("--seed", type=int, default=16)
    p.add_argument(
        "--tools",
        help=f"comma-separated subset of {','.join(TOOLS)} (default: all)",
    )
    p.add_argument("--sizes", help="comma-separated subset of the plan's sizes (5us, 100us, 5ms)")
    args = p.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.tools:
        tools = tuple(t for t in args.tools.split(",") if t)
        unknown = sorted(set(tools) - set(TOOLS))
        if unknown:
            p.error(f"--tools: unknown {', '.join(unknown)}; choose from {', '.join(TOOLS)}")
        plan = replace(plan, tools=tools)
    if args.sizes:
        sizes = [s for s in args.sizes.split(",") if s]
        unknown = sorted(set(sizes) - set(plan.tries))
        if unknown:
            p.error(f"--sizes: unknown {', '.join(unknown)}; the plan has {', '.join(plan.tries)}")
        plan = replace(plan, tries={k: v for k, v in plan.tries.items() if k in sizes})
    if args.plan:
        print(f"{plan.cells()} tool runs of {plan.budget_s:g} s: about "
              f"{plan.expected_s() / 60:.0f} min")  # fmt: skip
        return 0
    _log(f"{plan.cells()} tool runs, about {plan.expected_s() / 60:.0f} min")
    study = run_study(plan, args.seed)
    rows = summarize(study)
    study["summary"] = rows
    if args.json:
        args.json.write_text(json.dumps(study, indent=1))
    print(markdown(rows))
    print(f"\nelapsed: {study['elapsed_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
