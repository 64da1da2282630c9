"""What a `pytest --duet-a A --duet-b B` session costs, against pytest-benchmark, and
whether `--duet-budget` holds (docs/measurements/pytest-cost.md).

Suites of N ``benchmark(fn)`` tests (N = 10, 20, 50) over the known-work package of
``examples/micro`` (functions of about 5 us, 100 us and 5 ms; v_b does 1.00x-2x the
work of v_a): pytest-benchmark at its defaults runs the suite on tree A, then on tree
B (two pytest sessions, one after the other); duetbench runs one session at its
defaults (``--duet-budget 60s``). The ratio is the duet session's wall time over the
two pytest-benchmark sessions' (the goal: at most 4x).

The budget: sessions at ``--duet-budget`` 30 s, 60 s and 120 s of a suite of 15 tests
that also carries a slow fixture (0.3 s, module scope), ``pedantic`` with its single
round and ``pedantic`` with a setup; the ratio is the session's wall time (from before
the interpreter starts to its exit) over the budget (the goal: at most 1.25).

A/A: a suite of N tests on v_b against a copy of v_b (threshold 0): how many say
`slower` or `faster` (the goal: at most 5 %).

    python benchmarks/pytest_cost.py                     # all three parts, ~15 minutes
    python benchmarks/pytest_cost.py --parts aa --aa-tests 50 --aa-sessions 2
    python benchmarks/pytest_cost.py --quick             # N = 10 only, one budget
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "micro"
FUNCTIONS = [f"{v}_{s}" for s in ("100us", "5us", "5ms") for v in ("aa", "p1", "p3", "p10", "x2")]

PLAIN = """
import knownver
import pytest

NAMES = {names!r}


@pytest.mark.parametrize("name", NAMES, ids=[f"{{n}}-{{i}}" for i, n in enumerate(NAMES)])
def test_call(benchmark, name):
    benchmark(getattr(knownver, name))
"""

MIXED = """
import time
import knownver
import pytest


@pytest.fixture(scope="module")
def slow_table():
    time.sleep(0.3)
    return dict(knownver.WORK)


@pytest.mark.parametrize("name", {names!r})
def test_call(benchmark, slow_table, name):
    benchmark(getattr(knownver, name))


@pytest.mark.parametrize("name", ["p10_100us", "aa_5ms"])
def test_pedantic_once(benchmark, name):
    benchmark.pedantic(getattr(knownver, name))


@pytest.mark.parametrize("name", ["x2_100us", "p3_5ms"])
def test_pedantic_setup(benchmark, name):
    fn = getattr(knownver, name)
    benchmark.pedantic(lambda x: fn(), setup=lambda: ((1,), {{}}), rounds=30)
"""


def write_suite(root: Path, text: str) -> Path:
    (root / "suite").mkdir(parents=True, exist_ok=True)
    (root / "suite" / "test_bench.py").write_text(text)
    for version in ("v_a", "v_b"):
        shutil.copytree(EXAMPLE / version, root / version, dirs_exist_ok=True)
    return root


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    wall = time.monotonic() - start
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return wall, done.stdout


def pytest_benchmark(root: Path) -> float:
    """Both trees, one after the other, at pytest-benchmark's defaults."""
    total = 0.0
    for version in ("v_a", "v_b"):
        wall, out = timed(
            [sys.executable, "-m", "pytest", "suite", "-q", "-p", "no:cacheprovider"],
            root, {"PYTHONPATH": str(root / version)},
        )  # fmt: skip
        assert "benchmark" in out, out[-2000:]
        total += wall
    return total


def duet(
    root: Path, budget: str, a: str = "v_a", b: str = "v_b", threshold: str = "0"
) -> tuple[float, dict[str, Any], str]:
    report = root / "v.json"
    wall, out = timed(
        [sys.executable, "-m", "pytest", "suite", "-p", "no:cacheprovider", "--duet-a", a,
         "--duet-b", b, "--duet-budget", budget, "--duet-threshold", threshold,
         "--duet-format", "json", "--duet-report", str(report)],
        root,
    )  # fmt: skip
    design = next((ln for ln in out.splitlines() if "runs of about" in ln), "")
    return wall, json.loads(report.read_text()), design


def part_cost(sizes: list[int]) -> list[dict[str, Any]]:
    out = []
    for n in sizes:
        names = [FUNCTIONS[i % len(FUNCTIONS)] for i in range(n)]
        with tempfile.TemporaryDirectory(prefix="pytest-cost-") as tmp:
            root = write_suite(Path(tmp), PLAIN.format(names=names))
            pb = pytest_benchmark(root)
            wall, doc, design = duet(root, "60s")
        row = {"tests": n, "pytest_benchmark_s": pb, "duet_s": wall, "ratio": wall / pb,
               "runs": sorted({r["runs"] for r in doc["rows"]}), "design": design}  # fmt: skip
        print(f"cost: {n} tests: pytest-benchmark A then B {pb:.1f} s, duet {wall:.1f} s, "
              f"ratio {wall / pb:.2f}; {design}", flush=True)  # fmt: skip
        out.append(row)
    return out


def part_budget(budgets: list[int]) -> list[dict[str, Any]]:
    out = []
    names = [FUNCTIONS[i % len(FUNCTIONS)] for i in range(11)]
    for budget in budgets:
        with tempfile.TemporaryDirectory(prefix="pytest-budget-") as tmp:
            root = write_suite(Path(tmp), MIXED.format(names=names))
            wall, doc, design = duet(root, f"{budget}s")
        row = {"budget_s": budget, "wall_s": wall, "ratio": wall / budget,
               "runs": sorted({r["runs"] for r in doc["rows"]}), "design": design}  # fmt: skip
        print(
            f"budget {budget} s: session {wall:.1f} s, ratio {wall / budget:.2f}; {design}",
            flush=True,
        )
        out.append(row)
    return out


def part_aa(tests: int, sessions: int) -> dict[str, Any]:
    names = [FUNCTIONS[i % len(FUNCTIONS)] for i in range(tests)]
    verdicts: list[str] = []
    for s in range(sessions):
        with tempfile.TemporaryDirectory(prefix="pytest-aa-") as tmp:
            root = write_suite(Path(tmp), PLAIN.format(names=names))
            shutil.copytree(root / "v_b", root / "v_b copy")
            wall, doc, design = duet(root, "60s", a="v_b", b="v_b copy")
        said = [str(r["verdict"]) for r in doc["rows"]]
        alarms = sum(v in ("slower", "faster") for v in said)
        print(
            f"A/A session {s}: {alarms} of {len(said)} tests said slower or faster; {design}",
            flush=True,
        )
        verdicts += said
    alarms = sum(v in ("slower", "faster") for v in verdicts)
    print(f"A/A: {alarms} of {len(verdicts)} ({alarms / len(verdicts):.1%})")
    return {"tests": len(verdicts), "alarms": alarms, "verdicts": verdicts}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--parts", default="cost,budget,aa")
    ap.add_argument("--sizes", default="10,20,50")
    ap.add_argument("--budgets", default="30,60,120")
    ap.add_argument("--aa-tests", type=int, default=25)
    ap.add_argument("--aa-sessions", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.budgets, args.aa_sessions = "10", "30", 1
    parts = args.parts.split(",")
    doc: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                           "load_before": os.getloadavg()}  # fmt: skip
    if "cost" in parts:
        doc["cost"] = part_cost([int(x) for x in args.sizes.split(",")])
    if "budget" in parts:
        doc["budget"] = part_budget([int(x) for x in args.budgets.split(",")])
    if "aa" in parts:
        doc["aa"] = part_aa(args.aa_tests, args.aa_sessions)
    doc["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
