"""`duet plan --repo REPO`: plans from a repository's priors; a fixed run count states
the precision it reaches with 95 % probability (adaptive/forecast.py, fixed_reach)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from duetbench.adaptive.forecast import fixed_reach, forecast
from duetbench.adaptive.prior import Prior
from duetbench.analysis.costs import CostModel
from duetbench.config import load_config
from duetbench.history import Repository, fingerprint, priors
from history_helpers import HOST
from test_history_priors import MS, add

MODEL = CostModel(
    suite="s",
    benchmark="b",
    method="aduet",
    runs=10,  # the spread's df: 9
    iterations=8.0,
    run_var=0.01**2,
    between_runs=0.01**2,
    within_runs=0.0,
    stat_factor=1.0,
    warmup=0,
    seconds_per_run=0.5,
    seconds_per_iteration=0.05,
    seconds_fixed=0.1,
)


def test_fixed_reach_against_a_hand_calculation() -> None:
    r = fixed_reach(MODEL, 10, goal=0.01)
    # by hand: the half-width t(9) s / sqrt(10) <= asinh(1 %) needs s^2 <= x s0^2 with
    t9 = 2.2621571627409915  # t(0.975, 9), from a table
    x = math.asinh(0.01) ** 2 * 10 / (t9 * 0.01) ** 2
    assert x == pytest.approx(1.95407, rel=1e-4)
    # s^2 / s0^2 = (U/9) / (W/9) with U, W chi-square(9): integrate over W
    p, _ = integrate.quad(lambda w: stats.chi2.cdf(x * w, 9) * stats.chi2.pdf(w, 9), 0, np.inf)
    assert r.probability == pytest.approx(p, rel=1e-6)
    assert 0.83 < p < 0.84  # 10 runs at a spread of 1 % reach +-1 % in 5 of 6 experiments
    # reached with 95 %: the 95th percentile of the same distribution
    q = stats.f.ppf(0.95, 9, 9)
    assert r.reach == pytest.approx(math.sinh(t9 * 0.01 * math.sqrt(q / 10)), rel=1e-9)
    # a better-known spread (many df) narrows what is left open: nearer the chi-square's
    sure = fixed_reach(replace(MODEL, runs=100_000), 10, goal=0.01)
    assert sure.reach < r.reach
    assert sure.probability == pytest.approx(stats.chi2.cdf(9 * x, 9), abs=1e-3)
    assert fixed_reach(MODEL, 1, goal=0.01).reach is None


def test_fixed_reach_holds_as_often_as_it_says_in_simulation() -> None:
    """Seeded: a prior from 10 runs, then an experiment of 8 runs, many times over; the
    precision stated as reached with probability L is reached in L of them (L = 50, 80,
    95 %), although each prior's spread is off by its own chi-square error."""
    rng = np.random.default_rng(26)
    sigma, k, n, tries = 0.01, 9, 8, 4000
    s0 = sigma * np.sqrt(rng.chisquare(k, tries) / k)
    s = sigma * np.sqrt(rng.chisquare(n - 1, tries) / (n - 1))
    half = np.sinh(stats.t.ppf(0.975, n - 1) * s / np.sqrt(n))
    for level in (0.5, 0.8, 0.95):
        reach = np.array(
            [
                fixed_reach(
                    replace(MODEL, runs=k + 1, run_var=v**2, between_runs=v**2), n, level=level
                ).reach
                for v in s0
            ]
        )
        assert np.mean(half <= reach) == pytest.approx(level, abs=0.025)


CONFIG = """\
experiment:
  name: planned
  seed: 1
  repetitions: {aduet: 12}
defaults:
  iterations: 8
benchmarks:
  parse:
    command: "%(py)s -c 'pass'"
  other:
    command: "%(py)s -c 'pass'"
"""


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
    )


def test_plan_with_history(tmp_path: Path) -> None:
    repo_path = tmp_path / "perf repo.sqlite"
    with Repository.open(repo_path) as repo:
        add(repo, "v1", "v2", [0.01, 0.03, 0.02, 0.025], run_ns=300 * MS)
        add(repo, "v2", "v3", [0.0, 0.01, -0.01, 0.004, 0.002], run_ns=400 * MS)
        (prior,) = priors(repo)
    cfg = tmp_path / "duet.yml"
    cfg.write_text(textwrap.dedent(CONFIG) % {"py": sys.executable})
    fp = fingerprint(HOST).fingerprint
    plan = ["plan", cfg, "--no-cpu-check", "--repo", repo_path, "--host", fp[:10]]
    out = _cli(*plan, "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["benchmark"]: r for r in json.loads(out.stdout)["rows"]}
    expected = fixed_reach(prior.cost_model(), 12)
    assert rows["parse"]["fixed_runs"] == 12
    assert rows["parse"]["fixed_reach"] == pytest.approx(expected.reach)
    assert rows["parse"]["fixed_time_ns"] == pytest.approx(
        12 * prior.seconds_per_run * 1e9, rel=1e-6
    )
    assert "2 experiments, 9 runs (df 7)" in rows["parse"]["evidence"]
    assert "no earlier experiments" in rows["other"]["evidence"]
    # with a goal: runs and machine time, and how surely the fixed 12 runs reach it
    goal = _cli(*plan, "--precision", "1%", "--format", "json")
    assert goal.returncode == 0, goal.stderr
    row = {r["benchmark"]: r for r in json.loads(goal.stdout)["rows"]}["parse"]
    assert row["runs"] >= 2 and row["time_ns"] > 0 and row["runs_low"] <= row["runs_high"]
    assert row["fixed_probability"] == pytest.approx(
        fixed_reach(prior.cost_model(), 12, goal=0.01).probability
    )
    # the stop predicted is that of the rule `duet run --repo` stops with: the prior with
    # its shape (these runs' serial correlation and skew), not its spread alone
    assert prior.shape is not None
    exp, key = load_config(cfg, host_cpus=None), ("parse", "aduet")

    def predicted(p: Prior) -> int:
        rows = forecast(exp, precision=0.01, models={key: p.cost_model()}, priors={key: p})
        return next(r for r in rows if r["benchmark"] == "parse")["runs"]

    assert row["runs"] == predicted(prior) != predicted(replace(prior, shape=None))
    text = _cli(*plan, "--precision", "1%")
    assert text.returncode == 0 and "P(goal reached)" in text.stdout
    for bad, why in (
        (["--from", tmp_path], "not both"),
        (["--last", "0"], "--last must be at least 1"),
    ):
        b = _cli(*plan, "--precision", "1%", *bad)
        assert b.returncode == 2 and why in b.stderr and "Traceback" not in b.stderr
    missing = _cli("plan", cfg, "--no-cpu-check", "--repo", tmp_path / "none.sqlite")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
