"""The guards' study (benchmarks/guard_cost_study.py): its reference rules are the
releases' rules, and its quick run prints every table."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from duetbench.adaptive import StopRule, first_stops

STUDY = Path(__file__).resolve().parents[1] / "benchmarks" / "guard_cost_study.py"


def _study():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("guard_cost_study", STUDY)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["guard_cost_study"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_noise_models_have_the_spread_and_shape_they_claim() -> None:
    g = _study()
    for model in g.MODELS:
        v = g.noise(model, 4000, 0.02, seed=1)
        assert v.std() == pytest.approx(0.02, rel=0.05) and abs(v.mean()) < 0.001
    from scipy import stats

    assert stats.skew(g.noise("lognormal", 4000, 0.02, seed=2).ravel()) > 2.5
    ar = g.noise("ar1", 4000, 1.0, seed=3)
    assert np.mean(ar[:, 1:] * ar[:, :-1]) == pytest.approx(0.5, abs=0.02)


def test_the_last_turns_rule_waits_for_10_runs_and_widens_once_found() -> None:
    g = _study()
    rule = StopRule.create(until="decided", threshold=0.02, max_runs=50)
    v = math.log(1.05) + 0.005 * np.random.default_rng(4).standard_normal((300, 50))
    assert (g.last_turn(v, rule).runs == 10).all()  # 5 runs settle it; it waited
    assert (g.then(v, rule).runs == first_stops(v, rule, guards=False).runs).all()
    assert np.mean(g.then(v, rule).runs == 5) > 0.99


@pytest.mark.slow
def test_a_quick_run_prints_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    """A study: about 10 s."""
    g = _study()
    sys_argv = sys.argv
    sys.argv = ["guard_cost_study.py", "--experiments", "150"]
    try:
        g.main()
    finally:
        sys.argv = sys_argv
    out = capsys.readouterr().out
    for head in ("## Runs to a decision", "## A/A false alarms", "## With a repository",
                 "## The alternatives measured", "## Why"):  # fmt: skip
        assert head in out
    assert out.count("| normal |") >= 8
