"""A real pytest-benchmark suite, two real releases: cattrs 26.1.0 against 26.2.0 from
PyPI, by the duetbench pytest plugin, by pytest-benchmark and by timeit
(docs/case-studies/cattrs.md).

cattrs keeps a pytest-benchmark suite in its sdist (``bench/``: 64 tests using the
``benchmark`` fixture). 26.2.0's changelog says ``Converter`` now generates specialized
hooks for tuples, "increasing speed". The script

1. downloads both sdists (``pip download --no-deps --no-binary :all: cattrs==V``) and
   unpacks them into ``--work``; nothing of cattrs is kept in this repository;
2. installs cattrs's dependencies (attrs, typing-extensions) into ``--work``/deps
   (``pip install --target``), which goes on ``PYTHONPATH`` of every tool's processes --
   not cattrs itself: each release's ``src`` goes first on ``sys.path``. Every tool runs
   on ``--python`` (default: this interpreter), which needs duetbench, pytest and
   pytest-benchmark (``pip install -e ".[test]"`` has them);
3. runs, from 26.2.0's tree (its ``bench/`` folder, which has the tuple benchmarks that
   came with the change, and its pyproject's pytest settings), ``--repeats`` times:

   * **duet**: ``pytest bench --ignore=bench/test_enums.py --duet-a <26.1.0>/src
     --duet-b src`` at the plugin's defaults (``--duet-budget 60s`` or ``--budget``),
     the verdict table as markdown (``--duet-report``), and again with ``--long-budget``
     when given;
   * **pytest-benchmark**: the same command without ``--duet-*``, once per release
     (``PYTHONPATH=<release>/src``), one after the other, at its defaults and the
     project's addopts, ``--benchmark-json``;
   * **timeit**: the same tests once per release, each test's ``benchmark(fn, *args)``
     call timed by the timeit module as ``python -m timeit`` times a statement (autorange
     to at least 0.2 s, 5 repeats, the best), in a pytest process whose ``benchmark``
     fixture is a small timeit plugin this script writes (the tests build their classes
     and converters inside their bodies, so only pytest can set them up);

   and prints the tables of the case study: duet's verdict table verbatim, the
   pytest-benchmark figures, B/A of every tool side by side, and the wall time each tool
   took. ``bench/test_enums.py`` is left out: it needs msgspec and orjson (compiled
   serialization libraries) and enum handling did not change between these releases.

    python benchmarks/case_study_cattrs.py --work /tmp/cattrs-case --repeats 2 --long-budget 180s
    python benchmarks/case_study_cattrs.py --work /tmp/cattrs-case --tests bench/test_tuples.py --budget 20s

Needs the package index (pip). The work directory keeps the sdists and the dependencies.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RELEASES = ("26.1.0", "26.2.0")
#: the selection of the suite run by every tool (from release B's tree)
DEFAULT_TESTS = ("bench", "--ignore=bench/test_enums.py")
#: what cattrs needs (installed into the work directory, not into the interpreter)
DEPENDENCIES = ("attrs", "typing-extensions")
#: the plugin of the timeit tool (written into the work directory, loaded with ``-p``)
TIMEIT_MODULE = "case_timeit"
TIMEIT_PLUGIN = '''"""timeit of every benchmark test's call (benchmarks/case_study_cattrs.py)."""
import json
import os
import timeit

import pytest

FOUND = {}


class Timeit:
    def __init__(self, nodeid):
        self.nodeid = nodeid

    def __call__(self, fn, *args, **kwargs):
        # as `python -m timeit` times a statement: autorange, then 5 repeats, the best
        names = {"fn": fn, "args": args, "kwargs": kwargs}
        timer = timeit.Timer("fn(*args, **kwargs)", globals=names)
        number, _ = timer.autorange()
        times = timer.repeat(repeat=5, number=number)
        FOUND[self.nodeid] = {"number": number, "best_s": min(times) / number, "times": times}
        return fn(*args, **kwargs)


@pytest.fixture
def benchmark(request):
    return Timeit(request.node.nodeid)


def pytest_sessionfinish(session):
    with open(os.environ["CASE_TIMEIT_JSON"], "w") as f:
        json.dump(FOUND, f, indent=1)
'''


def _log(msg: str) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"[{dt.datetime.now().strftime('%H:%M:%S')} load {load}] {msg}", file=sys.stderr, flush=True
    )


def fetch(work: Path) -> dict[str, Path]:
    """Each release's unpacked sdist (downloaded once)."""
    sdists = work / "sdists"
    trees = {}
    for version in RELEASES:
        tree = work / f"cattrs-{version}"
        if not (tree / "src" / "cattrs").is_dir():
            _log(f"downloading the sdist of cattrs {version}")
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                 ":all:", f"cattrs=={version}", "-d", str(sdists)],
                check=True,
            )  # fmt: skip
            with tarfile.open(sdists / f"cattrs-{version}.tar.gz") as tar:
                tar.extractall(work, filter="data")
        trees[version] = tree
    return trees


def dependencies(work: Path, python: Path) -> Path:
    """cattrs's dependencies in a folder of their own (installed once), and the timeit
    plugin beside them; the interpreter must have pytest-benchmark and duetbench."""
    deps = work / "deps"
    if not (deps / ".complete").exists():
        _log(f"installing {' '.join(DEPENDENCIES)} into {deps}")
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--target", str(deps), *DEPENDENCIES],
            check=True,
        )
        (deps / ".complete").touch()
    (deps / f"{TIMEIT_MODULE}.py").write_text(TIMEIT_PLUGIN)
    return deps


def versions(python: Path, work: Path) -> dict[str, str]:
    """The versions every tool ran with (attrs: the one in the dependencies' folder)."""
    code = (
        "import importlib.metadata as m, json, platform\n"
        "names = ['pytest', 'pytest-benchmark', 'attrs', 'duetbench']\n"
        "d = {n: m.version(n) for n in names}\n"
        "d['python'] = platform.python_version()\n"
        "print(json.dumps(d))\n"
    )
    env = side_env(None, work)
    done = subprocess.run(
        [str(python), "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def side_env(tree: Path | None, work: Path) -> dict[str, str]:
    """The environment of a run: the release's src first on sys.path (none for the duet:
    the plugin puts each side's tree first), then the dependencies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUET_")}
    first = [] if tree is None else [str(tree / "src")]
    env["PYTHONPATH"] = os.pathsep.join([*first, str(work / "deps")])
    return env


def check_imports(python: Path, trees: dict[str, Path], work: Path) -> None:
    """Each release's run imports that release's cattrs (no installed copy in the way)."""
    for version, tree in trees.items():
        code = "import cattrs; print(cattrs.__file__)"
        done = subprocess.run(
            [str(python), "-c", code], env=side_env(tree, work), capture_output=True, text=True
        )
        where = Path(done.stdout.strip() or "?").resolve()
        if not where.is_relative_to(tree.resolve()):
            raise SystemExit(f"cattrs {version}: imported {where}, not from {tree}")


def timed_run(cmd: list[str], **kw: Any) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return done, time.monotonic() - start


def run_duet(
    python: Path,
    trees: dict[str, Path],
    tests: list[str],
    budget: str | None,
    work: Path,
    out: Path,
) -> dict[str, Any]:
    """The plugin's session: its wall time, verdict table (markdown) and rows (JSON of
    ``duet compare`` on the results directory it wrote)."""
    a, b = (trees[v] for v in RELEASES)
    out.mkdir(parents=True, exist_ok=True)
    report = out / "verdicts.md"
    cmd = [str(python), "-m", "pytest", *tests, "--duet-a", str(a / "src"), "--duet-b", "src"]
    cmd += [] if budget is None else ["--duet-budget", budget]
    cmd += ["--duet-output", str(out), "--duet-format", "markdown", "--duet-report", str(report)]
    _log(f"duet, budget {budget or 'default'}")
    done, wall = timed_run(cmd, cwd=b, env=side_env(None, work))
    (out / "session.txt").write_text(done.stdout + done.stderr)
    said = ("duet: ", "done in", "note: ")
    summary = [line for line in done.stdout.splitlines() if line.startswith(said)]
    got = {"wall_s": wall, "returncode": done.returncode, "said": summary, "table": "", "rows": {}}
    got["load_after"] = os.getloadavg()[0]
    dirs = sorted(out.glob("pytest-*"))
    if done.returncode == 2 and any(line.startswith("duet: error") for line in summary):
        _log(f"duet refused to run: {summary[-1]}")
        return got  # refused before any run (what it said is kept): a finding, not a crash
    if done.returncode not in (0, 1) or not dirs or not report.is_file():
        raise SystemExit(
            f"duet failed ({done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
        )
    compared = subprocess.run(
        [str(python), "-m", "duetbench", "compare", str(dirs[-1]), "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    got["rows"] = {r["benchmark"]: r for r in json.loads(compared.stdout)["rows"]}
    got["table"] = report.read_text()
    return got


def run_pytest_benchmark(
    python: Path, tree: Path, cwd: Path, tests: list[str], work: Path, out: Path
) -> dict[str, Any]:
    """pytest-benchmark on one release at its defaults (and the project's addopts)."""
    cmd = [str(python), "-m", "pytest", *tests, "-p", "no:cacheprovider", f"--benchmark-json={out}"]
    done, wall = timed_run(cmd, cwd=cwd, env=side_env(tree, work))
    if done.returncode != 0 or not out.is_file():
        raise SystemExit(f"pytest-benchmark failed on {tree}:\n{done.stdout[-4000:]}")
    doc = json.loads(out.read_text())
    return {"wall_s": wall, "stats": {x["fullname"]: x["stats"] for x in doc["benchmarks"]}}


def run_timeit(
    python: Path, tree: Path, cwd: Path, tests: list[str], work: Path, out: Path
) -> dict[str, Any]:
    """timeit of every test's call on one release (the project's addopts are dropped: they
    only hold pytest-benchmark's options, and pytest-benchmark is not loaded)."""
    cmd = [str(python), "-m", "pytest", *tests, "-p", "no:cacheprovider", "-p", "no:benchmark"]
    cmd += ["-p", "no:duetbench.pytest_plugin", "-p", TIMEIT_MODULE, "-o", "addopts=", "-q"]
    env = {**side_env(tree, work), "CASE_TIMEIT_JSON": str(out)}
    done, wall = timed_run(cmd, cwd=cwd, env=env)
    if done.returncode != 0 or not out.is_file():
        raise SystemExit(f"timeit failed on {tree}:\n{done.stdout[-4000:]}")
    return {
        "wall_s": wall,
        "best": {k: v["best_s"] for k, v in json.loads(out.read_text()).items()},
    }


def one_round(
    index: int, python: Path, trees: dict[str, Path], args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    """duet (and its long budget), then pytest-benchmark and timeit on each release; the
    releases' order alternates from round to round."""
    tests = list(args.tests or DEFAULT_TESTS)
    out = work / "out" / f"round{index}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    b_tree = trees[RELEASES[1]]
    got: dict[str, Any] = {"load_before": os.getloadavg()[0], "started": _now()}
    if "duet" in args.tools:
        got["duet"] = run_duet(python, trees, tests, args.budget, work, out / "duet")
        if args.long_budget:
            got["duet_long"] = run_duet(
                python, trees, tests, args.long_budget, work, out / "duet-long"
            )
    order = RELEASES if index % 2 == 0 else RELEASES[::-1]
    for tool, fn in (("pytest-benchmark", run_pytest_benchmark), ("timeit", run_timeit)):
        if tool not in args.tools:
            continue
        got[tool] = {}
        for version in order:
            _log(f"{tool}, cattrs {version}")
            got[tool][version] = fn(
                python, trees[version], b_tree, tests, work, out / f"{tool}-{version}.json"
            )
    got["load_after"] = os.getloadavg()[0]
    return got


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def duet_name(nodeid: str) -> str:
    """The verdict table's name of a test (the plugin's own naming)."""
    from duetbench.micro.request import bench_name
    from duetbench.pytest_plugin.duet import short_name

    return bench_name(short_name(nodeid), set())


def comparison(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per test: every tool's B/A in every round."""
    a, b = RELEASES
    first = rounds[0]
    nodeids = list(first["pytest-benchmark"][a]["stats"]) if "pytest-benchmark" in first else []
    if not nodeids and "timeit" in first:
        nodeids = list(first["timeit"][a]["best"])
    rows = []
    for nodeid in nodeids:
        name = duet_name(nodeid)
        row: dict[str, Any] = {"nodeid": nodeid, "name": name, "duet": [], "duet_long": []}
        row.update(pb_median=[], pb_mean=[], pb_min=[], timeit=[])
        for got in rounds:
            for key in ("duet", "duet_long"):
                if key in got and name in got[key]["rows"]:
                    r = got[key]["rows"][name]
                    ratio, low, high = (_ratio(r[k]) for k in ("change", "ci_low", "ci_high"))
                    row[key].append((ratio, low, high, r["verdict"], r["measure"], r["runs"]))
            if "pytest-benchmark" in got:
                sa = got["pytest-benchmark"][a]["stats"][nodeid]
                sb = got["pytest-benchmark"][b]["stats"][nodeid]
                for stat in ("median", "mean", "min"):
                    row[f"pb_{stat}"].append(sb[stat] / sa[stat])
            if "timeit" in got:
                row["timeit"].append(
                    got["timeit"][b]["best"][nodeid] / got["timeit"][a]["best"][nodeid]
                )
        rows.append(row)
    return rows


def _ratio(change: float | None) -> float | None:
    """B/A of a change (``+0.05`` -> 1.05); None where duet formed no interval."""
    return None if change is None else 1 + change


def _duet_cell(values: list[tuple]) -> str:
    cells = []
    for ratio, low, high, verdict, measure, runs in values:
        word = {"no change detected": "--"}.get(verdict, f"**{verdict}**")
        wall = ", wall" if measure == "wall" else ""
        told = "" if ratio is None else f"{ratio:.3f} "
        told += "" if low is None or high is None else f"[{low:.2f}, {high:.2f}] "
        cells.append(f"{told}{word} ({runs} runs{wall})")
    return "<br>".join(cells)


def _ratios(xs: list[float]) -> str:
    return "<br>".join(f"{x:.3f}" for x in xs)


def _sessions(rounds: list[dict[str, Any]]) -> list[str]:
    """Each round's duet sessions: what the plugin said, and its verdict table verbatim."""
    out = []
    for i, got in enumerate(rounds, 1):
        load = f"load {got['load_before']:.2f} -> {got['load_after']:.2f}"
        out.append(f"## Round {i} (started {got['started']}, {load})")
        for key in ("duet", "duet_long"):
            if key in got:
                said = "\n".join(got[key]["said"])
                wall = f"{got[key]['wall_s']:.0f} s"
                out += ["", f"### {key} ({wall})", "", "```", said, "```", "", got[key]["table"]]
    return out


def _pytest_benchmark(rounds: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """pytest-benchmark's own figures of round 1, in microseconds."""
    a, b = RELEASES
    if not rounds or "pytest-benchmark" not in rounds[0]:
        return []
    out = ["", "## pytest-benchmark, round 1 (us)", ""]
    out.append(f"| test | mean {a} | mean {b} | median {a} | median {b} | B/A median | B/A mean |")
    out.append("|---|---|---|---|---|---|---|")
    pb = rounds[0]["pytest-benchmark"]
    for row in rows:
        sa, sb = pb[a]["stats"][row["nodeid"]], pb[b]["stats"][row["nodeid"]]
        cells = [sa["mean"] * 1e6, sb["mean"] * 1e6, sa["median"] * 1e6, sb["median"] * 1e6]
        text = " | ".join(f"{x:.3f}" for x in cells)
        ratios = f"{sb['median'] / sa['median']:.3f} | {sb['mean'] / sa['mean']:.3f}"
        out.append(f"| {row['name']} | {text} | {ratios} |")
    return out


def _both(got: dict[str, Any], tool: str) -> str:
    """One tool's wall time on each release, and their sum."""
    if tool not in got:
        return ""
    walls = [got[tool][v]["wall_s"] for v in RELEASES]
    return " + ".join(f"{w:.0f}" for w in walls) + f" = {sum(walls):.0f}"


def markdown(rounds: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    a, b = RELEASES
    out = [f"cattrs {a} (A) -> {b} (B); {meta['versions']}", "", *_sessions(rounds)]
    rows = comparison(rounds)
    out += _pytest_benchmark(rounds, rows)
    out += ["", "## B/A by every tool (one line per round)", ""]
    out.append(
        "| test | duet (default budget) | duet (long budget) | pytest-benchmark median "
        "| pytest-benchmark mean | timeit best |"
    )
    out.append("|---|---|---|---|---|---|")
    for row in rows:
        duet = f"{_duet_cell(row['duet'])} | {_duet_cell(row['duet_long'])}"
        pb = f"{_ratios(row['pb_median'])} | {_ratios(row['pb_mean'])}"
        out.append(f"| {row['name']} | {duet} | {pb} | {_ratios(row['timeit'])} |")
    out += ["", "## Wall time of each tool (s)", ""]
    out.append("| round | duet (default) | duet (long) | pytest-benchmark A + B | timeit A + B |")
    out.append("|---|---|---|---|---|")
    for i, got in enumerate(rounds, 1):
        duet = f"{got['duet']['wall_s']:.0f}" if "duet" in got else ""
        long = f"{got['duet_long']['wall_s']:.0f}" if "duet_long" in got else ""
        out.append(
            f"| {i} | {duet} | {long} | {_both(got, 'pytest-benchmark')} | {_both(got, 'timeit')} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, required=True, help="sdists, dependencies and outputs")
    p.add_argument("--python", type=Path, default=Path(sys.executable),
                   help="the interpreter of every tool (with duetbench and pytest-benchmark)")  # fmt: skip
    p.add_argument("--repeats", type=int, default=2, help="rounds of every tool")
    p.add_argument("--budget", help="--duet-budget of the duet session (default: the plugin's)")
    p.add_argument("--long-budget", help="a second duet session per round with this budget")
    p.add_argument("--tools", default="duet,pytest-benchmark,timeit")
    p.add_argument("--tests", action="append", help="test paths and pytest options (repeatable; "
                   f"default: {' '.join(DEFAULT_TESTS)})")  # fmt: skip
    p.add_argument("--json", type=Path, help="every figure as JSON")
    args = p.parse_args()
    args.tools = args.tools.split(",")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    trees = fetch(work)
    python = args.python
    dependencies(work, python)
    check_imports(python, trees, work)
    meta = {
        "versions": versions(python, work),
        "command": " ".join(sys.argv[1:]),
        "cpus": os.cpu_count(),
    }
    rounds = [one_round(i, python, trees, args, work) for i in range(args.repeats)]
    if args.json:
        doc = {"meta": meta, "rounds": rounds, "comparison": comparison(rounds)}
        args.json.write_text(json.dumps(doc, indent=1, default=str))
    print(markdown(rounds, meta))


if __name__ == "__main__":
    main()
