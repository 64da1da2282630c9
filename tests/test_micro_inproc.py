"""Method inproc: both sides of a micro benchmark in one interpreter, samples alternating
(docs/micro.md, "In one process: inproc").

The known-work package of examples/micro gives the expected ratios (B does an exact
multiple of A's steps); what is asserted is the ratio and the verdict, never how fast
this machine is.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_duet
from tests.test_micro_command import TIMEOUT_S

from duetbench.micro.api import same_interpreter, worker_path


def micro(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_duet("micro", *args, cwd=cwd, timeout=TIMEOUT_S)


def rows_of(done: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert done.returncode in (0, 1), done.stderr
    return {r["benchmark"]: r for r in json.loads(done.stdout)["rows"]}


def test_known_ratios_and_a_a_in_one_process(known: Path) -> None:
    """2x (clearly slower) and A/A `same` against a 2 % practical threshold, with the inproc
    default statistic (the median of the pairs). The 2x is bench_known.py's
    `bench_100us`, a file target importing `knownver` at its top: loaded once per side,
    each with its own `knownver`. The A/A pair is two copies of one function, in two
    modules: their code lies at different addresses, and inproc's intervals (+-0.1 %)
    can see that -- a CI run read +0.087 % with an interval excluding 0 -- so without a
    threshold `slower` would be right about the copies and wrong about the code."""
    common = ("--a-path", "v_a", "--b-path", "v_b", "--method", "inproc", "--runs", "6",
              "--threshold", "2%")  # fmt: skip
    x2 = rows_of(
        micro("bench_known.py", "-k", "bench_100us", *common, "--samples", "200",
              "--format", "json", "--name", "x2", cwd=known)
    )  # fmt: skip
    aa = rows_of(
        micro("knownver:aa_100us", *common, "--samples", "200", "--format", "json",
              "--name", "aa", cwd=known)
    )  # fmt: skip
    rows = {**x2, **aa}
    assert set(rows) == {"bench_100us", "aa_100us"}, rows
    assert {r["method"] for r in rows.values()} == {"inproc"}
    assert {r["run_stat"] for r in rows.values()} == {"median"}
    ratio = 1 + rows["bench_100us"]["change"]
    print(f"inproc: 2x read {ratio:.4f}, A/A {rows['aa_100us']['change']:+.4%}")
    # What holds on a busy machine: the doubled work reads as clearly slower (a lost or
    # swapped side reads 1x or 0.5x). How close to 2.0 it comes is a figure of the
    # machine's load -- 2.01-2.02 quiet, 2.06 and once 2.84 beside other test suites --
    # measured by `python benchmarks/micro_study.py --tools inproc --sizes 100us`
    # (docs/measurements/micro-study.md), not asserted here.
    assert 1.5 < ratio < 4.0, ratio
    assert rows["bench_100us"]["verdict"] == "slower"
    # the copies read +0.07-0.09 % quiet and +0.65 % beside other suites: within the 2 %
    # practical threshold, never a verdict
    assert rows["aa_100us"]["verdict"] in ("equivalent", "inconclusive")
    assert abs(rows["aa_100us"]["change"]) < 0.02


def test_three_percent_detected_and_sized(known: Path) -> None:
    done = micro(
        "knownver:p3_100us", "--a-path", "v_a", "--b-path", "v_b", "--method", "inproc",
        "--runs", "5", "--samples", "150", "--format", "json",
        cwd=known,
    )  # fmt: skip
    row = rows_of(done)["p3_100us"]
    print(f"inproc +3 %: {row['change']:+.4%} [{row['ci_low']:+.4%}, {row['ci_high']:+.4%}]")
    assert row["verdict"] == "slower"
    # B does 1.03x the loop steps; the call's own cost, paid by both, pulls it a little
    assert 0.015 < row["change"] < 0.045


def test_two_trees_are_imported_apart(tmp_path: Path) -> None:
    """B's function imports `mylib` at call time and gets B's `mylib`, with twice the
    work, although A imported a module of the same name first."""
    for side, steps in (("a", 2000), ("b", 4000)):
        tree = tmp_path / f"tree {side}" / "mylib"
        tree.mkdir(parents=True)
        (tree / "__init__.py").write_text(f"STEPS = {steps}\n")
        (tree.parent / "bench_lazy.py").write_text(
            "def bench_lazy():\n"
            "    import mylib\n"
            "    x = 1\n"
            "    for _ in range(mylib.STEPS):\n"
            "        x = (x * 5 + 1) & 0xFFFF\n"
            "    return x\n"
        )
    out = tmp_path / "out"
    argv = [
        sys.executable, str(worker_path()), "bench_lazy:bench_lazy",
        "--path", str(tmp_path / "tree a"),
        "--pair-target", "bench_lazy:bench_lazy", "--pair-path", str(tmp_path / "tree b"),
        "--evaluations", "5", "--samples", "60", "--output", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    with open(out / "micro-samples.csv", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["phase"] == "sample"]
    a = [int(r["total_ns"]) for r in rows if r["side"] == "A"]
    b = [int(r["total_ns"]) for r in rows if r["side"] == "B"]
    assert len(a) == len(b) == 60
    # the order alternates: A first in one pair, B first in the next
    firsts = [r["side"] for r in rows[::2]]
    assert firsts[:4] == ["B", "A", "B", "A"] or firsts[:4] == ["A", "B", "A", "B"]
    ratio = math.exp(statistics.median(math.log(y / x) for x, y in zip(a, b, strict=True)))
    assert 1.7 < ratio < 2.3, ratio  # 1.0 would mean B ran A's mylib
    meta = json.loads((out / "micro-meta.json").read_text())
    assert meta["inproc"] is True and meta["pair"]["imported_apart"] is True


def test_two_interpreters_are_refused_before_any_run(known: Path) -> None:
    other = shutil.which("python3")
    assert other is not None
    if same_interpreter(sys.executable, other):
        other = "/usr/bin/python3"
    assert not same_interpreter(sys.executable, other)
    done = micro(
        "knownver:aa_100us", "--a-python", sys.executable, "--b-python", other,
        "--method", "inproc", "--runs", "2", "--samples", "10",
        cwd=known / "v_a",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "inproc times both sides in one interpreter" in done.stderr
    assert "sduet" in done.stderr
    assert not (known / "v_a" / "results" / "micro" / "runs").exists()


def test_same_interpreter_by_path() -> None:
    assert same_interpreter(sys.executable, sys.executable)
    assert same_interpreter("python3", shutil.which("python3") or "python3")
    # a virtual environment's python links to its base interpreter, yet is another one
    assert not same_interpreter("/opt/venv-a/bin/python", "/opt/venv-b/bin/python")


def test_config_inproc_only_for_python_benchmarks(tmp_path: Path) -> None:
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment: {name: x}\n"
        "benchmarks:\n"
        "  cmd:\n"
        "    command: 'true'\n"
        "    repetitions: {inproc: 2}\n"
    )
    done = run_duet("plan", str(cfg), timeout=TIMEOUT_S)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "inproc" in done.stderr and "harness: python" in done.stderr


def test_plan_shows_inproc_runs_before_the_calibration(known: Path) -> None:
    (known / "duet.yml").write_text(
        "experiment: {name: cfg, repetitions: {inproc: 2, sduet: 1}}\n"
        "benchmarks:\n"
        "  p10: {harness: python, target: 'knownver:p10_100us', A: {path: v_a}, B: {path: v_b}}\n"
    )
    done = run_duet("plan", "duet.yml", cwd=known, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert "p10.inproc.000" in done.stdout and "p10.inproc.001" in done.stdout
    assert "p10.sduet.000" in done.stdout


def test_config_python_benchmark_runs_inproc(known: Path) -> None:
    (known / "duet.yml").write_text(
        "experiment: {name: cfg, repetitions: {inproc: 3}}\n"
        "benchmarks:\n"
        "  p10:\n"
        "    harness: python\n"
        "    target: knownver:p10_100us\n"
        "    iterations: 100\n"
        "    A: {path: v_a}\n"
        "    B: {path: v_b}\n"
    )
    done = run_duet("run", "duet.yml", "-o", "out dir", cwd=known, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    root = known / "out dir" / "cfg"
    runs = sorted(p.name for p in (root / "runs").iterdir() if not p.name.startswith("."))
    assert runs == [f"p10.inproc.{i:03d}" for i in range(3)]
    assert [p.name for p in (root / "runs" / runs[0]).iterdir() if p.is_dir()] == ["A"]
    shown = run_duet("compare", str(root), "--format", "json", timeout=TIMEOUT_S)
    row = json.loads(shown.stdout)["rows"][0]
    assert row["method"] == "inproc" and row["runs"] == 3 and row["pairs"] == 300
    assert row["verdict"] == "slower" and 0.07 < row["change"] < 0.13
