"""Real releases: packaging 25.0 against 26.0 from PyPI, with `duet micro`, pyperf,
pytest-benchmark and a plain timeit, quiet and beside busy processes or `duet noise`
(docs/case-studies/packaging.md).

packaging 26.0's changelog claims a faster `Requirement()` and `Version` parsing. Four
functions are timed: `Requirement(...)`, `Version(...)` parsing, `str(Version)` and
`SpecifierSet(...)`. Each version is installed into a virtual environment of its own
(plus a second 26.0 environment for an A/A pair), as a user would compare two releases.

For every condition (``quiet``; ``two``: two busy loops in the benchmark's session;
``noise``: ``duet noise --pattern mixed``) it runs, one after the other under the same
condition:

* ``duet micro bench_packaging.py --a-python A/bin/python --b-python B/bin/python``
  (sduet, the default; ``--budget``), for 25.0 -> 26.0 and for the A/A pair;
* ``pyperf timeit --compare-to`` for each function (B's interpreter running,
  compared to A's), for the same two pairs, with as many processes as fit the budget;
* pytest-benchmark on the same four functions as ``test_*(benchmark)`` tests: A's run
  saved, B's run compared to it (``--benchmark-compare-fail=median:5%``, which fails the
  session when B's median is more than 5 % above A's), each side given
  ``--benchmark-max-time`` of its share;

pyperf and pytest-benchmark get the wall-clock time duet micro took for the same pair
(its ``--budget`` is sampling time; discovery, calibration and start-up come on top), so
the three tools spend equal machine time.

and once, on the quiet machine first, a plain ``timeit`` of each function in each
environment (best of 7 repeats) as the reference ratio.

    python benchmarks/packaging_study.py --work /tmp/pkg            # quiet and two loops
    python benchmarks/packaging_study.py --work /tmp/pkg --conditions two --budget 40s
    python benchmarks/packaging_study.py --work /tmp/pkg --conditions quiet,noise --tools duet,pytest-benchmark

Every tool's machine time (wall clock) is recorded beside its figures.

Needs the package index (pip installs packaging 25.0, 26.0, pyperf, pytest and
pytest-benchmark into the environments; the work directory keeps them for the next run). Figures go to
docs/case-studies/packaging.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from busy_loops import busy_loops

BENCH = '''"""packaging's hot paths, as duet micro bench_* functions."""
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REQUIREMENT = 'requests[security,socks]>=2.8.1,==2.8.*; python_version < "3.12"'
VERSION = "1.2.3rc1.post4.dev5+local.7"
SPECIFIERS = ">=1.0,<2.0,!=1.5.*,~=1.4"
PARSED = Version(VERSION)


def bench_requirement():
    Requirement(REQUIREMENT)


def bench_version_parse():
    Version(VERSION)


def bench_version_str():
    str(PARSED)


def bench_specifierset():
    SpecifierSet(SPECIFIERS)
'''
PYTEST_BENCH = '''"""packaging's hot paths as pytest-benchmark tests."""
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REQUIREMENT = 'requests[security,socks]>=2.8.1,==2.8.*; python_version < "3.12"'
VERSION = "1.2.3rc1.post4.dev5+local.7"
SPECIFIERS = ">=1.0,<2.0,!=1.5.*,~=1.4"


def test_requirement(benchmark):
    benchmark(Requirement, REQUIREMENT)


def test_version_parse(benchmark):
    benchmark(Version, VERSION)


def test_version_str(benchmark):
    benchmark(str, Version(VERSION))


def test_specifierset(benchmark):
    benchmark(SpecifierSet, SPECIFIERS)
'''
#: function -> (setup, statement) for timeit and pyperf
STATEMENTS = {
    "requirement": (
        "from packaging.requirements import Requirement",
        "Requirement('requests[security,socks]>=2.8.1,==2.8.*; python_version < \"3.12\"')",
    ),
    "version_parse": (
        "from packaging.version import Version",
        "Version('1.2.3rc1.post4.dev5+local.7')",
    ),
    "version_str": (
        "from packaging.version import Version; v = Version('1.2.3rc1.post4.dev5+local.7')",
        "str(v)",
    ),
    "specifierset": (
        "from packaging.specifiers import SpecifierSet",
        "SpecifierSet('>=1.0,<2.0,!=1.5.*,~=1.4')",
    ),
}
ENVS = {"a25": "25.0", "b26": "26.0", "c26": "26.0"}
PAIRS = {"25.0 -> 26.0": ("a25", "b26"), "A/A 26.0": ("b26", "c26")}
TOOL_NAMES = ("duet", "pyperf", "pytest-benchmark")
#: seconds one pyperf worker process takes with 1 warm-up and 3 values of 0.1 s (measured)
PYPERF_PROCESS_S = 0.7
#: what every environment has besides packaging
TOOLS = ("pyperf", "pytest", "pytest-benchmark")


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


CONDITIONS = ("quiet", "one", "two", "noise")


@contextmanager
def condition(name: str) -> Iterator[None]:
    """Busy loops (``one``, ``two``: benchmarks/busy_loops.py) or ``duet noise --pattern
    mixed`` (``noise``, in a process group of its own, killed after it) around the block."""
    if name != "noise":
        with busy_loops(name):
            yield
        return
    noise = [sys.executable, "-m", "duetbench", "noise", "--pattern", "mixed"]
    proc = subprocess.Popen([*noise, "--seed", "1"], process_group=0)
    try:
        yield
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)


def environments(work: Path) -> dict[str, Path]:
    """A virtual environment per name of ENVS with its packaging and pyperf (kept)."""
    out = {}
    for name, version in ENVS.items():
        env = work / name
        python = env / "bin" / "python"
        if not python.exists():
            _log(f"creating {env} (packaging {version})")
            subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", f"packaging=={version}", *TOOLS],
                check=True,
            )
        else:  # an environment of an earlier version of this script: add what is new
            subprocess.run([str(python), "-m", "pip", "install", "-q", *TOOLS], check=True)
        out[name] = python
    return out


def timeit_ratio(pythons: dict[str, Path], a: str, b: str) -> dict[str, float]:
    """Plain timeit, best of 7 repeats, A and B alternating: B's time over A's."""
    out = {}
    for fn, (setup, stmt) in STATEMENTS.items():
        best: dict[str, float] = {}
        for _ in range(7):
            for side in (a, b):
                code = (
                    "import timeit\n"
                    f"t = timeit.Timer({stmt!r}, setup={setup!r})\n"
                    "n, _ = t.autorange()\n"
                    "print(min(t.repeat(3, n)) / n)\n"
                )
                done = subprocess.run(
                    [str(pythons[side]), "-c", code], capture_output=True, text=True, check=True
                )
                best[side] = min(best.get(side, float("inf")), float(done.stdout))
        out[fn] = best[b] / best[a]
    return out


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    """``fn(*args)`` and the wall-clock seconds it took (the machine time a tool spent)."""
    start = time.monotonic()
    out = fn(*args)
    return out, time.monotonic() - start


def pytest_benchmark_ratio(
    pythons: dict[str, Path], a: str, b: str, work: Path, budget_s: float
) -> dict[str, dict[str, Any]]:
    """pytest-benchmark as a user runs it: A's run saved, B's compared to it with
    ``--benchmark-compare-fail=median:5%``. Each side gets ``budget_s / 2`` seconds, split
    over the tests by ``--benchmark-max-time``. B/A of the medians and of the minima."""
    per_test = budget_s / 2 / len(STATEMENTS)
    tests = work / "test_packaging_bench.py"
    tests.write_text(PYTEST_BENCH)
    with tempfile.TemporaryDirectory(prefix="pkg-pytest-") as tmp:
        storage = Path(tmp) / "storage"
        common = ["-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider"]
        common += [f"--benchmark-storage=file://{storage}", f"--benchmark-max-time={per_test}"]
        common += ["--benchmark-min-rounds=5"]
        docs = {}
        for side, extra in (
            (a, ["--benchmark-save=a"]),
            (b, ["--benchmark-compare", "--benchmark-compare-fail=median:5%"]),
        ):
            out = Path(tmp) / f"{side}.json"
            done = subprocess.run(
                [str(pythons[side]), *common, f"--benchmark-json={out}", *extra],
                capture_output=True, text=True, cwd=tmp,
            )  # fmt: skip
            if not out.is_file():
                raise SystemExit(f"pytest-benchmark failed in {side}:\n{done.stdout[-2000:]}")
            docs[side] = (json.loads(out.read_text()), done)
    stats = {
        side: {x["name"].removeprefix("test_"): x["stats"] for x in doc["benchmarks"]}
        for side, (doc, _) in docs.items()
    }
    failed = docs[b][1].returncode != 0
    text = docs[b][1].stdout + docs[b][1].stderr
    out = {}
    for fn in STATEMENTS:
        sa, sb = stats[a][fn], stats[b][fn]
        median = sb["median"] / sa["median"]
        tripped = failed and re.search(rf"test_{fn}\b.*median", text) is not None
        out[fn] = {
            "ratio": median,
            "min_ratio": sb["min"] / sa["min"],
            "rounds": [sa["rounds"], sb["rounds"]],
            "said": "compare-fail: median +5 % exceeded" if tripped else "passes (median:5%)",
        }
    return out


def duet_ratio(pythons: dict[str, Path], a: str, b: str, bench: Path, budget: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="pkg-duet-") as tmp:
        args = [sys.executable, "-m", "duetbench", "micro", str(bench)]
        args += ["--a-python", str(pythons[a]), "--b-python", str(pythons[b])]
        args += ["--budget", budget, "-o", tmp, "--format", "json"]
        done = subprocess.run(args, capture_output=True, text=True, cwd=bench.parent)
        if done.returncode not in (0, 4):
            raise SystemExit(f"duet micro failed ({done.returncode}):\n{done.stderr[-2000:]}")
        doc = json.loads(done.stdout)
    out = {}
    for r in doc["rows"]:
        fn = r["benchmark"].split("bench_")[-1]
        out[fn] = {
            "ratio": None if r["change"] is None else 1 + r["change"],
            "ci": [
                None if r["ci_low"] is None else 1 + r["ci_low"],
                None if r["ci_high"] is None else 1 + r["ci_high"],
            ],
            "verdict": r["verdict"],
            "measure": r.get("measure"),
            "runs": r["runs"],
        }
    return out


def pyperf_ratio(
    pythons: dict[str, Path], a: str, b: str, budget_s: float | None = None
) -> dict[str, dict[str, Any]]:
    """``pyperf timeit --compare-to A``, run by B's interpreter: B/A and the words.

    ``budget_s``: the machine time of all four functions and both sides, spent as pyperf
    spends it -- processes of 1 warm-up and 3 values of at least 0.1 s. The seconds a
    process takes are measured as it goes (a start-up on a busy machine is slow): each
    function gets as many processes as the time left for it holds, by the processes so
    far. None: ``--fast``."""
    out = {}
    per_process = PYPERF_PROCESS_S
    spent = 0.0
    for i, (fn, (setup, stmt)) in enumerate(STATEMENTS.items()):
        if budget_s is None:
            options = ["--fast"]
        else:
            share = (budget_s - spent) / (len(STATEMENTS) - i)
            processes = max(2, round(share / 2 / per_process))
            options = ["--processes", str(processes), "--values", "3", "--warmups", "1"]
        start = time.monotonic()
        done = subprocess.run(
            [str(pythons[b]), "-m", "pyperf", "timeit", *options, "--compare-to",
             str(pythons[a]), "-s", setup, stmt],
            capture_output=True, text=True,
        )  # fmt: skip
        took = time.monotonic() - start
        spent += took
        if budget_s is not None:
            per_process = took / (2 * processes)
        text = done.stdout + done.stderr
        m = re.search(r"Mean \+- std dev: \[[^\]]+\] (.+?) -> \[[^\]]+\] (.+?): (.+)", text)
        if m is None:
            out[fn] = {"ratio": None, "said": text.strip().splitlines()[-1:] or ["?"]}
            continue
        said = m.group(3).strip()
        faster = re.match(r"([\d.]+)x (faster|slower)", said)
        ratio = None
        if faster:
            x = float(faster.group(1))
            ratio = 1 / x if faster.group(2) == "faster" else x
        out[fn] = {"ratio": ratio, "said": said}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--work", type=Path, required=True, help="keeps the environments")
    p.add_argument("--conditions", default="quiet,two", help=f"of {', '.join(CONDITIONS)}")
    p.add_argument("--budget", default="40s", help="machine time per pair and tool (e.g. 40s)")
    p.add_argument("--tools", default=",".join(TOOL_NAMES), help=f"of {', '.join(TOOL_NAMES)}")
    p.add_argument("--pairs", default=",".join(PAIRS), help=f"of {', '.join(PAIRS)}")
    p.add_argument("--no-timeit", action="store_true", help="leave the timeit reference out")
    p.add_argument("--json", type=Path, help="write every figure here")
    args = p.parse_args()
    conditions = [c for c in args.conditions.split(",") if c]
    tools = [t for t in args.tools.split(",") if t]
    pairs = [x for x in args.pairs.split(",") if x]
    for name, given, known in (
        ("--conditions", conditions, CONDITIONS),
        ("--tools", tools, TOOL_NAMES),
        ("--pairs", pairs, tuple(PAIRS)),
    ):
        bad = [x for x in given if x not in known]
        if bad:
            p.error(f"{name}: unknown {', '.join(bad)}; use {', '.join(known)}")
    budget_s = float(args.budget.rstrip("s"))
    args.work.mkdir(parents=True, exist_ok=True)
    pythons = environments(args.work)
    bench = args.work / "bench_packaging.py"
    bench.write_text(BENCH)
    load = os.getloadavg()
    result: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="minutes"),
        "budget": args.budget,
        "command": " ".join(["python", "benchmarks/packaging_study.py", *sys.argv[1:]]),
        "load_before": [round(x, 2) for x in load],
        "cpus": os.cpu_count(),
    }
    if not args.no_timeit:
        _log("timeit reference (run it on a quiet machine)")
        result["timeit"] = {pair: timeit_ratio(pythons, *PAIRS[pair]) for pair in pairs}
    for cond in conditions:
        for pair in pairs:
            a, b = PAIRS[pair]
            got: dict[str, Any] = {}
            with condition(cond):
                if "duet" in tools:
                    _log(f"{cond}: duet micro {pair}")
                    got["duet"], got["duet_s"] = timed(
                        duet_ratio, pythons, a, b, bench, args.budget
                    )
                # equal machine time: the others get the wall time duet micro took (its
                # budget is sampling time; discovery, calibration and start-up come on top)
                spend = got.get("duet_s", budget_s)
                if "pyperf" in tools:
                    _log(f"{cond}: pyperf {pair}")
                    got["pyperf"], got["pyperf_s"] = timed(pyperf_ratio, pythons, a, b, spend)
                if "pytest-benchmark" in tools:
                    _log(f"{cond}: pytest-benchmark {pair}")
                    got["pytest"], got["pytest_s"] = timed(
                        pytest_benchmark_ratio, pythons, a, b, args.work, spend
                    )
            got["load_after"] = [round(x, 2) for x in os.getloadavg()]
            result.setdefault(cond, {})[pair] = got
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def markdown(result: dict[str, Any]) -> str:
    lines = []
    timeit = result.get("timeit", {})
    for cond in CONDITIONS:
        if cond not in result:
            continue
        lines += [
            f"\n**{cond}**\n",
            "| pair | function | timeit B/A (quiet) | duet micro B/A [95 % CI] | duet verdict "
            "| time | pyperf B/A | pyperf said | pytest-benchmark B/A (median; min) "
            "| pytest-benchmark said |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for pair, got in result[cond].items():
            for fn in STATEMENTS:
                d = got.get("duet", {}).get(fn, {})
                ci = d.get("ci") or [None, None]
                pp = got.get("pyperf", {}).get(fn, {})
                pt = got.get("pytest", {}).get(fn, {})
                lines.append(
                    f"| {pair} | {fn} | {_x(timeit.get(pair, {}).get(fn))} "
                    f"| {_x(d.get('ratio'))} [{_x(ci[0])}, {_x(ci[1])}] "
                    f"| {d.get('verdict', '-')} | {d.get('measure', '-')} "
                    f"| {_x(pp.get('ratio'))} | {pp.get('said', '-')} "
                    f"| {_x(pt.get('ratio'))}; {_x(pt.get('min_ratio'))} | {pt.get('said', '-')} |"
                )
        lines += ["", "| pair | machine time: duet micro | pyperf | pytest-benchmark | load after |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for pair, got in result[cond].items():
            secs = [got.get(k) for k in ("duet_s", "pyperf_s", "pytest_s")]
            cells = " | ".join("-" if s is None else f"{s:.0f} s" for s in secs)
            lines.append(f"| {pair} | {cells} | {got.get('load_after')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
