"""Stopping with the repository's priors (docs/adaptive.md, "Stopping with the
repository's priors"): the pooled interval against a hand computation, the check that
drops a prior the current runs contradict, seeded simulations with known truth (coverage
at the same noise and on a 1.3x noisier machine, runs saved), and a real repository of
earlier `duet run` experiments making a later run stop earlier.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from duetbench.adaptive import StopRule, decide, first_stops
from duetbench.adaptive.guards import guard, skewed_bounds
from duetbench.adaptive.prior import Prior
from duetbench.adaptive.prior_intervals import PRIOR_ALPHA, PRIOR_WEIGHT, prior_intervals
from duetbench.adaptive.results import stop_rule
from duetbench.adaptive.rules import goal_first_look
from duetbench.adaptive.sequential import WIDTH_INFLATION, Design, running_intervals
from helpers import run_duet


def test_the_pooled_interval_is_the_hand_computed_one() -> None:
    values = np.array([0.010, 0.030, 0.020, 0.025, 0.015])
    prior = Prior(sd=0.008, df=30)
    rule = StopRule.create(until="precise", precision=0.01, max_runs=50, prior=prior)
    d = decide(values, rule)
    n, s = len(values), float(np.std(values, ddof=1))
    w = min(30, PRIOR_WEIGHT * (n - 1))  # 16: the prior's weight is bounded
    df = w + n - 1
    pooled = math.sqrt((w * 0.008**2 + (n - 1) * s * s) / df)
    mult = stats.t.ppf(0.975, df) * (1 + (WIDTH_INFLATION - 1) * ((n - 1) / df) ** 2)
    # the guards widen it as they widen the no-prior interval (tests/test_adaptive_guards.py)
    g = guard(values.reshape(1, -1))
    se = pooled * math.sqrt(g.factor[0, -1]) / math.sqrt(n)
    low, high = skewed_bounds(
        np.full((1, n), values.mean()), np.full((1, n), se), np.full(n, mult), g.skew
    )
    assert d.low == pytest.approx(math.expm1(low[0, -1]), rel=1e-9)
    assert d.high == pytest.approx(math.expm1(high[0, -1]), rel=1e-9)
    assert high[0, -1] - low[0, -1] >= 2 * mult * pooled / math.sqrt(n)  # never narrower
    assert d.prior_used is True and "earlier runs on this host" in d.explanation
    # the check's p-value is scipy's F survival function of s^2 / s0^2
    plain = running_intervals(values.reshape(1, -1), rule.multipliers(n))
    pi = prior_intervals(
        values.reshape(1, -1), prior, Design.WIDTH, plain, confidence=0.95, first_look=3
    )
    assert pi.check_p[0, -1] == pytest.approx(stats.f.sf(s * s / 0.008**2, n - 1, 30))
    # without a prior nothing changes
    plain_rule = StopRule.create(until="precise", precision=0.01, max_runs=50)
    assert decide(values, plain_rule).prior_used is None


def test_runs_noisier_than_the_prior_drop_it_and_say_so() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0.0, 0.03, size=20)  # 3x the prior's spread
    rule = StopRule.create(
        until="precise", precision=0.01, max_runs=50, prior=Prior(sd=0.01, df=40)
    )
    d = decide(values, rule)
    plain = decide(values, StopRule.create(until="precise", precision=0.01, max_runs=50))
    assert d.prior_used is False
    assert "prior spread was dropped" in d.explanation and "noisier" in d.explanation
    # from then on the interval is the no-prior rule's
    assert (d.low, d.high) == pytest.approx((plain.low, plain.high))
    # a quieter machine keeps the prior (the interval is then only conservative)
    quiet = decide(rng.normal(0.0, 0.003, size=20), rule)
    assert quiet.prior_used is True


def _stops_with_prior_per_row(
    v: np.ndarray, rule: StopRule, sd0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each simulated experiment with its own prior (estimated from df0 earlier runs)."""
    n_max = v.shape[1]
    plain_rule = StopRule.create(until="precise", precision=rule.precision, max_runs=n_max)
    plain = running_intervals(v, plain_rule.multipliers(n_max))
    first = goal_first_look(rule)
    pi = prior_intervals(
        v, rule.prior, Design.WIDTH, plain, confidence=0.95, first_look=first, sd0=sd0
    )  # type: ignore[arg-type]
    lo, hi = np.expm1(pi.intervals.low), np.expm1(pi.intervals.high)
    ok = ((hi - lo) / 2 <= rule.precision) & (np.arange(1, n_max + 1) >= first)
    idx = np.where(ok.any(axis=1), ok.argmax(axis=1), n_max - 1)
    rows = np.arange(len(v))
    return idx + 1, lo[rows, idx], hi[rows, idx], pi.dropped[rows, idx]


@pytest.mark.parametrize("sd", [0.005, 0.01, 0.02])
def test_seeded_simulation_keeps_coverage_and_saves_runs(sd: float) -> None:
    """Truth 0; the prior estimated from 45 df of earlier runs (each experiment its own);
    precision 1 %. Same noise: coverage >= 94 % and fewer runs than without the prior.
    A 1.3x noisier machine: coverage >= 90 %, and the check dropped the prior in part."""
    rng = np.random.default_rng(int(sd * 1e4))
    experiments, n_max, df0 = 2000, 200, 45
    rule = StopRule.create(until="precise", precision=0.01, max_runs=n_max, prior=Prior(sd, df0))
    sd0 = sd * np.sqrt(rng.chisquare(df0, size=experiments) / df0)
    for k in (1.0, 1.3):
        v = rng.normal(0.0, sd * k, size=(experiments, n_max))
        runs, lo, hi, dropped = _stops_with_prior_per_row(v, rule, sd0)
        covered = float(np.mean((lo <= 0) & (hi >= 0)))
        without = first_stops(v, StopRule.create(until="precise", precision=0.01, max_runs=n_max))
        if k == 1.0:
            assert covered >= 0.94, covered
            assert runs.mean() < 0.9 * without.runs.mean(), (runs.mean(), without.runs.mean())
            assert dropped.mean() < 0.25  # the check's false drops over all looks
        else:
            assert covered >= 0.90, covered
            assert dropped.mean() > 0.1


def test_decided_with_a_prior_keeps_its_error_rates() -> None:
    """A/A and a change on the threshold, the prior right: wrong verdicts at most nominal."""
    rng = np.random.default_rng(11)
    for truth, wrong_verdicts in ((0.0, ("slower", "faster")), (0.02, ("faster", "equivalent"))):
        v = rng.normal(math.log1p(truth), 0.02, size=(2000, 120))
        rule = StopRule.create(until="decided", threshold=0.02, max_runs=120, prior=Prior(0.02, 45))
        st = first_stops(v, rule)
        assert np.isin(st.verdict, wrong_verdicts).mean() <= 0.025
        assert np.mean((st.low <= truth) & (truth <= st.high)) >= 0.95


def test_stops_json_priors_are_read_back_per_benchmark() -> None:
    entry = {
        "stop": {"until": "precise", "precision": 0.01, "max_runs": 30, "design": "auto"},
        "priors": {"ab": {"sd": 0.01, "df": 21, "experiments": 3, "runs": 24}},
    }
    assert stop_rule(entry, "ab").prior == Prior(0.01, 21, runs=24, experiments=3)
    assert stop_rule(entry, "other").prior is None and stop_rule(entry).prior is None
    assert PRIOR_ALPHA < 0.5


WORKLOAD = r"""
import os, random, sys
rep, side = int(os.environ["DUET_REP"]), os.environ["DUET_PAIR"]
factor = 1.10 if side == "B" else 1.0
rng = random.Random(f"{sys.argv[1]}-{rep}-{side}")
shift = 1 + rng.gauss(0, 0.01)  # run-level noise
with open(os.path.join(os.environ["DUET_OUTPUT_DIR"], "it.csv"), "w") as f:
    f.write("duration_ns\n")
    for i in range(9):
        f.write(f"{int(1e7 * factor * shift * (1 + rng.gauss(0, 0.002)))}\n")
"""


def _duet(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_duet(*map(str, args), cwd=cwd)


def test_a_real_repository_makes_a_later_run_stop_earlier_and_cover(tmp_path: Path) -> None:
    """Three earlier `duet run` experiments (8 runs each) added to a repository; a new
    experiment with `--until precise:1%` stops earlier with `--history` than without, its
    interval covers the true +10 %, and `duet compare` shows the same interval."""
    work = tmp_path / "dir with space"
    work.mkdir()
    (work / "work.py").write_text(WORKLOAD)

    def config(tag: str, stop: str = "") -> str:
        cmd = f"{sys.executable} '{work / 'work.py'}' {tag}"
        return (
            f"experiment: {{name: e{tag}, seed: 7, measure: wall{stop}}}\n"
            "benchmarks:\n  ab:\n    harness: generic\n    repetitions: {seqn: 8}\n"
            f'    A: {{command: "{cmd}", results: [it.csv]}}\n'
            f'    B: {{command: "{cmd}", results: [it.csv]}}\n'
        )

    for i in range(3):
        (work / f"e{i}.yml").write_text(config(str(i)))
        p = _duet(
            "run", f"e{i}.yml", "-o", "res", "--no-compare",
            "--history", "perf.sqlite", "--versions", "A=v1,B=v2", cwd=work,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
    stop = ", stop: {until: precise, precision: 1%, max_runs: 60}"
    (work / "new.yml").write_text(config("new", stop))
    runs = {}
    for out, extra in (("without", []), ("with", ["--history", str(work / "perf.sqlite")])):
        p = _duet("run", str(work / "new.yml"), "-o", tmp_path / out, "--no-compare", *extra,
                  cwd=tmp_path)  # fmt: skip
        assert p.returncode == 0, p.stderr
        doc = json.loads((tmp_path / out / "enew" / "stops.json").read_text())
        entry = doc["stops"]["ab/seqn"]
        d = entry["decisions"]["ab"]
        assert entry["stopped"] == "precise"
        assert d["low"] <= 0.10 <= d["high"], d
        runs[out] = entry["runs"]
        if extra:
            assert doc["history"]["last"] == 10 and len(doc["history"]["host"]) >= 8
            assert entry["priors"]["ab"]["experiments"] == 3
            assert entry["priors"]["ab"]["df"] == 21  # 3 x (8 - 1)
            assert d["prior_used"] is True
            c = _duet("compare", tmp_path / out / "enew", "--format", "json", cwd=tmp_path)
            assert c.returncode == 0, c.stderr
            (row,) = json.loads(c.stdout)["rows"]
            assert row["ci_low"] == pytest.approx(d["low"]) and row["runs"] == entry["runs"]
            assert "earlier runs on this host" in row["explanation"]
        else:
            assert "priors" not in entry and "history" not in doc
    assert runs["with"] < runs["without"], runs


def test_duet_plan_predicts_the_stop_of_the_rule_with_the_prior() -> None:
    """`duet plan --history --precision` predicts where the rule with the prior stops:
    fewer runs than the no-prior rule, and its 90 % range holds the stops of experiments
    run afterwards on a machine as noisy as before (seeded)."""
    from duetbench.adaptive.planning import precision_stop_runs

    rng = np.random.default_rng(4)
    sigma, df0, inside, tries = 0.02, 45, 0, 40
    for t in range(tries):
        s0 = sigma * math.sqrt(rng.chisquare(df0) / df0)
        rule = StopRule.create(until="precise", precision=0.01, max_runs=2000, prior=Prior(s0, df0))
        pred = precision_stop_runs(rule, s0, df=df0, seed=t, draws=500)
        plain = precision_stop_runs(
            StopRule.create(until="precise", precision=0.01, max_runs=2000), s0, df=df0, seed=t,
            draws=500,
        )  # fmt: skip
        assert pred.median < plain.median
        stop = int(first_stops(rng.normal(0, sigma, size=(1, 2000)), rule).runs[0])
        inside += pred.low <= stop <= pred.high
    assert inside / tries >= 0.85, inside
