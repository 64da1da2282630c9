"""Measuring until sure: boundaries against independent references, stopping rules,
a small seeded A/A study, the cost model, planning and the method choice."""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from duetbench.adaptive import (
    Design,
    Goal,
    Outcome,
    StopReason,
    StopRule,
    decide,
    first_stops,
    with_first_look,
)
from duetbench.adaptive.boundaries import (
    group_sequential_multiplier,
    group_sequential_z,
    mixture_precision,
    normal_mixture_multiplier,
    obf_spending,
    t_mixture_multiplier,
)
from duetbench.adaptive.method_choice import choose_method
from duetbench.adaptive.planning import (
    best_iterations,
    plan_for_power,
    plan_for_precision,
    precision_stop_runs,
)
from duetbench.adaptive.rules import runs_to_reach
from duetbench.adaptive.sequential import WIDTH_FIRST_LOOK
from duetbench.adaptive.simulate import NOISE_MODELS, run_values
from duetbench.analysis import compare
from duetbench.analysis.costs import CostModel, detect_warmup, estimate_costs, repetition_seconds
from duetbench.analysis.paired_runs import run_level_values
from duetbench.analysis.simulate import simulate
from duetbench.errors import AnalysisError

CHANGED = ("slower", "faster")


@pytest.fixture(autouse=True)
def _quiet_overflow() -> None:
    warnings.simplefilter("ignore", RuntimeWarning)  # expm1 of an infinite bound


# --- boundaries -------------------------------------------------------------------


def test_obf_one_sided_bounds_match_published_values() -> None:
    # SeqBounds.jl README, bounds([0.25, 0.5, 0.75, 1.0], 0.05) (one-sided, OBF-type):
    # Z = 3.74955, 2.53993, 2.01604, 1.72014 (their grid is coarser: 1e-4 apart)
    z = group_sequential_z([0.25, 0.5, 0.75, 1.0], 1.0, 0.95, sides=1)
    assert z == pytest.approx([3.74955, 2.53993, 2.01604, 1.72014], abs=1e-4)
    # first look by hand: the spending at t = 1/4 is 2 (1 - Phi(1.959964 / 0.5))
    first = 2 * stats.norm.sf(stats.norm.isf(0.025) / 0.5)
    assert obf_spending(0.25, 0.05) == pytest.approx(first, rel=1e-12)
    assert z[0] == pytest.approx(stats.norm.isf(first), rel=1e-12)


def test_obf_two_sided_bounds_match_published_values() -> None:
    # Lan-DeMets OBF-type, 5 equally spaced looks, two-sided alpha 0.05 (ldbounds,
    # Reboussin et al. 2000; gsDesign): 4.8769 3.3569 2.6803 2.2898 2.0310
    z = group_sequential_z([1, 2, 3, 4, 5], 5, 0.95)
    assert z == pytest.approx([4.8769, 3.3569, 2.6803, 2.2898, 2.0310], abs=3e-4)


def test_two_look_design_spends_alpha_exactly() -> None:
    """Crossing probability of a 2-look design from scipy's bivariate normal CDF."""
    t1 = 0.4
    c1, c2 = group_sequential_z([0.4, 1.0], 1.0, 0.95)
    rho = math.sqrt(t1)
    mvn = stats.multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]])
    inside = mvn.cdf([c1, c2], lower_limit=[-c1, -c2])
    assert 1 - inside == pytest.approx(0.05, abs=2e-6)
    assert 2 * stats.norm.sf(c1) == pytest.approx(2 * obf_spending(t1, 0.025), rel=1e-6)


def test_single_look_is_the_fixed_sample_interval() -> None:
    assert group_sequential_z([20], 20)[0] == pytest.approx(stats.norm.isf(0.025), abs=1e-9)
    assert group_sequential_multiplier([20], 20)[0] == pytest.approx(
        stats.t.isf(0.025, 19), abs=1e-7
    )
    # a look past the planned maximum spends nothing
    assert np.isinf(group_sequential_z([10, 20, 30], 20)[2])


def test_known_variance_design_holds_alpha_by_simulation() -> None:
    looks = list(range(3, 31))
    z = group_sequential_z(looks, 30)
    rng = np.random.default_rng(3)
    s = np.cumsum(rng.standard_normal((40_000, 30)), axis=1)[:, 2:] / np.sqrt(looks)
    rate = (np.abs(s) >= z).any(axis=1).mean()
    assert 0.045 <= rate <= 0.055  # 0.05 +- 4.5 standard errors


def _bayes_factor(y: np.ndarray, mu0: float, phi: float) -> float:
    """Scale-invariant Bayes factor by numerical integration (right-Haar prior on sigma,
    standardized effect ~ N(0, 1/phi)); independent of the closed form."""
    x = y - mu0

    def lik(sigma: float, theta: float) -> float:
        return float(np.prod(stats.norm.pdf(x, loc=theta, scale=sigma))) / sigma

    h0 = integrate.quad(lambda s: lik(s, 0.0), 0, np.inf, limit=200)[0]
    sd_prior = lambda s: s / math.sqrt(phi)  # noqa: E731
    h1 = integrate.dblquad(
        lambda d, s: lik(s, d * s) * stats.norm.pdf(d, scale=1 / math.sqrt(phi)),
        0,
        np.inf,
        -12 * sd_prior(1.0) * 0 - 12 / math.sqrt(phi),
        12 / math.sqrt(phi),
    )[0]
    return h1 / h0


def test_t_mixture_radius_is_where_the_bayes_factor_reaches_one_over_alpha() -> None:
    y = np.array([0.3, -0.1, 0.8, 0.2, 0.5, 0.1])
    n, phi = len(y), 0.7
    m = float(t_mixture_multiplier(n, 0.95, phi))
    edge = y.mean() - m * y.std(ddof=1) / math.sqrt(n)
    assert _bayes_factor(y, edge, phi) == pytest.approx(20.0, rel=1e-4)
    assert _bayes_factor(y, y.mean() - 0.5 * m * y.std(ddof=1) / math.sqrt(n), phi) < 20.0


def test_normal_mixture_is_howards_two_sided_boundary() -> None:
    # Howard et al. 2021: |S_n| <= sqrt((n + rho) log((n + rho) / (rho alpha^2))), sigma = 1
    n = np.arange(1, 60)
    rho, alpha = 2.5, 0.05
    howard = np.sqrt((n + rho) * np.log((n + rho) / (rho * alpha**2)))
    assert normal_mixture_multiplier(n, 0.95, rho) * np.sqrt(n) == pytest.approx(howard, rel=1e-12)


def test_confidence_sequence_needs_two_runs_and_is_tuned() -> None:
    assert np.isinf(t_mixture_multiplier([0, 1], 0.95, 1.0)).all()
    phi = mixture_precision(10)
    at10 = float(t_mixture_multiplier(10, 0.95, phi))
    for other in (phi / 2, phi * 2):
        assert at10 < float(t_mixture_multiplier(10, 0.95, other))
    # always wider than the fixed-n t interval: the price of looking after every run
    n = np.arange(3, 51)
    assert (t_mixture_multiplier(n, 0.95, phi) > stats.t.ppf(0.975, n - 1)).all()


def test_t_mixture_covers_uniformly_in_time_with_unknown_variance() -> None:
    rng = np.random.default_rng(7)
    v = 5.0 + rng.standard_normal((20_000, 40)) * 3.0
    rule = StopRule.create(until="decided", min_runs=2, max_runs=40)
    iv = first_stops(v, rule).intervals
    miss = ((iv.low > 5.0) | (iv.high < 5.0))[:, 1:].any(axis=1).mean()
    assert miss <= 0.05 + 4.5 * math.sqrt(0.05 * 0.95 / 20_000)


# --- the rules --------------------------------------------------------------------


def test_rule_validation_says_what_to_change() -> None:
    with pytest.raises(AnalysisError, match="needs a precision"):
        StopRule.create(until="precise", precision=None)
    with pytest.raises(AnalysisError, match="precision must be more than 0 %"):
        StopRule.create(precision=0)
    with pytest.raises(AnalysisError, match="'precise' or 'decided'"):
        StopRule.create(until="sure")
    with pytest.raises(AnalysisError, match="max_runs"):
        StopRule.create(min_runs=10, max_runs=5)
    with pytest.raises(AnalysisError, match="min_runs must be at least 2"):
        StopRule.create(min_runs=1)
    with pytest.raises(AnalysisError, match="'auto', 'sequence', 'group' or 'width'"):
        StopRule.create(design="naive")
    with pytest.raises(AnalysisError, match="width' is for `until: precise` only"):
        StopRule.create(until="decided", threshold=0.02, design="width")
    with pytest.raises(AnalysisError, match="budget"):
        StopRule.create(budget_s=0)
    with pytest.raises(AnalysisError, match="finite"):
        decide([0.1, float("nan")], StopRule.create())


def _values(mean: float, sd: float, n: int, seed: int = 1) -> np.ndarray:
    z = np.random.default_rng(seed).standard_normal(n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)  # exactly this mean and SD


def test_a_clear_slowdown_is_decided_slower() -> None:
    rule = StopRule.create(until="decided", threshold=0.01)
    d = decide(_values(math.log(1.05), 0.01, 10), rule, seconds=100.0)
    assert d.stop and d.reason is StopReason.DECIDED and d.verdict is Outcome.SLOWER
    assert d.low > 0.01 and d.estimate == pytest.approx(0.05, rel=1e-9)
    assert d.runs == 10 and d.runs_to_goal is None
    assert d.explanation.startswith("slower: +5.00 %")
    faster = decide(-_values(math.log(1.05), 0.01, 10), rule)
    assert faster.verdict is Outcome.FASTER and faster.high < -0.01
    # a verdict does not wait for the serial check: at 7 runs the interval, widened for
    # the serial correlation 7 runs cannot rule out, already lies above the threshold
    early = decide(_values(math.log(1.05), 0.01, 7), rule, seconds=70.0)
    assert early.verdict is Outcome.SLOWER and early.stop
    assert early.effective_runs is not None and early.effective_runs < 7  # widened
    assert "serially correlated" not in early.explanation  # nothing found: no note


def test_equivalent_needs_the_interval_inside_the_threshold() -> None:
    rule = StopRule.create(until="decided", threshold=0.02)
    d = decide(_values(0.001, 0.004, 12), rule)
    assert d.verdict is Outcome.EQUIVALENT and d.stop
    assert -0.02 < d.low and d.high < 0.02
    # without a threshold nothing is ever equivalent: no change detected is not a decision
    no_t = decide(_values(0.001, 0.004, 12), StopRule.create(until="decided"))
    assert no_t.verdict is Outcome.NO_CHANGE and not no_t.stop


def test_min_runs_max_runs_and_budget() -> None:
    rule = StopRule.create(until="decided", min_runs=5, max_runs=12, budget_s=100.0)
    big = _values(math.log(1.5), 0.001, 4)
    d = decide(big, rule, seconds=10.0)
    assert not d.stop and d.reason is StopReason.CONTINUE  # decided, but below min_runs
    # a verdict goal is checked from min_runs on
    assert decide(_values(math.log(1.5), 0.001, 5), rule, seconds=10.0).reason is (
        StopReason.DECIDED
    )
    short = StopRule.create(until="decided", min_runs=3, max_runs=6)  # at most max_runs
    assert decide(_values(math.log(1.5), 0.001, 6), short).reason is StopReason.DECIDED
    noisy = _values(0.0, 0.05, 12, seed=4)
    assert decide(noisy, rule, seconds=50.0).reason is StopReason.MAX_RUNS
    # 9 runs took 91 s: a tenth would overrun the 100 s budget
    d = decide(noisy[:9], rule, seconds=91.0)
    assert d.stop and d.reason is StopReason.BUDGET and d.verdict is Outcome.NO_CHANGE
    assert "budget reached" in d.explanation
    # about -1 % with no threshold: ~245 runs in all, beyond 10x the 9 taken
    assert d.unreachable and d.runs_to_goal is None and d.seconds_to_goal is None
    d = decide(_values(math.log(1.03), 0.05, 9), rule, seconds=91.0)
    assert d.reason is StopReason.BUDGET and d.runs_to_goal is not None
    assert d.seconds_to_goal == pytest.approx(91.0 / 9 * d.runs_to_goal)
    assert not decide(noisy[:9], rule, seconds=90.0).stop  # exactly fits


def test_inconclusive_says_what_it_would_take() -> None:
    rule = StopRule.create(until="decided", threshold=0.01, max_runs=10)
    vals = _values(math.log(1.02), 0.02, 10)
    d = decide(vals, rule, seconds=100.0)
    assert d.reason is StopReason.MAX_RUNS and d.verdict is Outcome.INCONCLUSIVE
    assert d.runs_to_goal is not None and d.runs_to_goal > 0
    # the prediction is what the same spread (widened as the guard widened it) would
    # need: check it with the multipliers
    sd = 0.02 * math.sqrt(10 / d.effective_runs) if d.effective_runs else 0.02
    total = 10 + d.runs_to_goal
    mult = StopRule.create(until="decided").multipliers(total)
    half = mult[total - 1] * sd / math.sqrt(total)
    assert half <= math.log(1.02) - math.log(1.01) < mult[total - 2] * sd / math.sqrt(total - 1)
    assert f"about {d.runs_to_goal} more runs" in d.explanation
    assert d.to_json()["verdict"] == "inconclusive"
    assert d.to_json()["unreachable"] is False


def test_a_forecast_beyond_ten_times_the_runs_says_not_reachable_instead_of_a_number() -> None:
    """An estimate near the threshold makes the forecast explode (the issue's "77306 more
    runs" after 20): beyond FORECAST_FACTOR x the runs taken (and max_runs) it is no number
    one can plan with; the explanation says so and what would help, the JSON says
    ``unreachable`` with no count (docs/adaptive.md, "Forecasts")."""
    from duetbench.adaptive.rules import FORECAST_FACTOR, forecast_bound

    rule = StopRule.create(until="decided", threshold=0.02, max_runs=20)
    near = _values(math.log(1.021), 0.03, 20)  # +2.1 % against a 2 % threshold
    d = decide(near, rule, seconds=40.0)
    assert d.reason is StopReason.MAX_RUNS and d.verdict is Outcome.INCONCLUSIVE
    assert d.unreachable and d.runs_to_goal is None and d.seconds_to_goal is None
    assert "not reachable within reasonable time" in d.explanation
    assert "larger threshold" in d.explanation and "quieter runner" in d.explanation
    assert "more runs" not in d.explanation
    doc = d.to_json()
    assert doc["unreachable"] is True and doc["runs_to_goal"] is None
    # the bound: 10x the runs taken, or max_runs when that is more; a forecast within it
    # stays a number (this one needs about 3.6x the 20 runs taken)
    assert FORECAST_FACTOR == 10 and forecast_bound(20, rule) == 200
    assert forecast_bound(3, StopRule.create(max_runs=200)) == 200
    within = decide(_values(math.log(1.04), 0.03, 20), rule, seconds=40.0)
    assert not within.unreachable and within.runs_to_goal is not None
    assert 20 + within.runs_to_goal <= 200
    assert f"about {within.runs_to_goal} more runs" in within.explanation
    # the same values judged with a larger max_runs: the bound follows it
    wide = decide(near, StopRule.create(until="decided", threshold=0.02, max_runs=100_000))
    assert wide.runs_to_goal is not None and 20 + wide.runs_to_goal > 200


def test_precise_stops_when_the_half_width_is_reached() -> None:
    rule = StopRule.create(until="precise", precision=0.01)
    vals = _values(0.0, 0.01, 40, seed=2)
    stops = [decide(vals[:k], rule) for k in range(1, 41)]
    first = next(i for i, d in enumerate(stops) if d.stop) + 1
    d = stops[first - 1]
    assert d.reason is StopReason.PRECISE and (d.high - d.low) / 2 <= 0.01
    assert (stops[first - 2].high - stops[first - 2].low) / 2 > 0.01
    # the vectorized form finds the same stop, so the study measures the product's rule
    assert first_stops(vals[None, :], rule).runs[0] == first


def test_decisions_are_pure_so_a_resumed_run_decides_the_same() -> None:
    rule = StopRule.create(until="decided", threshold=0.01, design="group", max_runs=30)
    vals = _values(0.015, 0.01, 30, seed=9)
    a = [decide(vals[:k], rule, seconds=3.0 * k) for k in range(1, 31)]
    b = [decide(vals[:k].copy(), rule, seconds=3.0 * k) for k in range(1, 31)]
    assert a == b
    # batches: looks at the batch ends only are a different (still valid) history
    batched = decide(vals[:20], rule, looks=[5, 10, 15, 20])
    assert batched.runs == 20 and batched.low <= batched.estimate <= batched.high


def test_group_design_analyses_at_planned_points() -> None:
    rule = StopRule.create(until="decided", design="group", max_runs=50)
    m = rule.multipliers(50)
    assert (np.flatnonzero(np.isfinite(m)) + 1).tolist() == [10, 20, 30, 40, 50]
    # the same boundaries as the design computed directly
    assert m[[9, 19, 29, 39, 49]] == pytest.approx(
        group_sequential_multiplier([10, 20, 30, 40, 50], 50), rel=1e-12
    )
    # batches ending at 12, 24, ...: each analysis at the first batch end past its point
    batched = rule.multipliers(50, looks=[12, 24, 36, 48, 50])
    assert (np.flatnonzero(np.isfinite(batched)) + 1).tolist() == [12, 24, 36, 48, 50]
    every = StopRule.create(until="decided", design="group", groups=None).multipliers(50)
    assert np.isfinite(every[3:]).all()  # at 3 runs nothing is spent yet
    with pytest.raises(AnalysisError, match="groups"):
        StopRule.create(design="group", groups=0)


def test_group_design_is_tighter_at_its_maximum_and_wider_early() -> None:
    seq = StopRule.create(until="decided", max_runs=50).multipliers(50)
    grp = StopRule.create(until="decided", design="group", max_runs=50).multipliers(50)
    assert grp[49] < seq[49] and grp[9] > seq[9]


# --- a small seeded A/A study (benchmarks/adaptive_study.py at full size) ----------


def test_no_more_false_alarms_than_nominal_under_every_noise_model() -> None:
    rule = StopRule.create(until="decided", min_runs=3, max_runs=50)
    naive = StopRule(until=Goal.DECIDED, design=Design.NAIVE, min_runs=3, max_runs=50)
    for i, model in enumerate(NOISE_MODELS):
        v = run_values(model, 600, 50, seed=100 + i, iterations=10)
        alarms = np.isin(first_stops(v, rule).verdict, CHANGED).mean()
        assert alarms <= 0.055, (model, alarms)
        peeking = np.isin(first_stops(v, naive, intersect=False).verdict, CHANGED).mean()
        assert peeking > 0.15, (model, peeking)  # why the rule is needed


def test_coverage_at_the_stop_and_no_wrong_equivalence() -> None:
    precise = StopRule.create(until="precise", precision=0.01)
    decided = StopRule.create(until="decided", threshold=0.01)
    for i, model in enumerate(NOISE_MODELS):
        v = run_values(model, 500, 50, seed=200 + i, iterations=10, method="duet", change=0.02)
        st = first_stops(v, precise)
        assert ((st.low <= 0.02) & (0.02 <= st.high)).mean() >= 0.94, model
        far = run_values(model, 500, 50, seed=300 + i, iterations=10, method="duet", change=0.015)
        wrong = (first_stops(far, decided).verdict == Outcome.EQUIVALENT.value).mean()
        assert wrong <= 0.05, model


def test_precision_goals_keep_coverage_with_the_width_design() -> None:
    """`precise` stops on the interval's width alone, so its default design is the
    widened t interval (no intersection over looks): at the stop it covers the truth in
    at least 94 % of experiments and an A/A reads as a change in at most 5.5 %, under
    every noise model and for precisions reached after a few or after many runs. The
    plain t interval looked at the same way covers less: why the widening is needed."""
    for i, model in enumerate(NOISE_MODELS):
        v = run_values(model, 1500, 50, seed=400 + i, iterations=10, method="duet")
        sd = float(np.std(v))
        for k in (1.0, 0.5):  # half-widths of 1 and 0.5 run SDs: ~6 and ~25 runs
            rule = StopRule.create(until="precise", precision=math.expm1(k * sd))
            assert rule.design is Design.WIDTH
            st = first_stops(v, rule)
            covered = ((st.low <= 0) & (0 <= st.high)).mean()
            alarms = np.isin(st.verdict, CHANGED).mean()
            assert covered >= 0.94 and alarms <= 0.055, (model, k, covered, alarms)
            assert st.runs.min() >= WIDTH_FIRST_LOOK
            plain = StopRule(until=Goal.PRECISE, precision=rule.precision, design=Design.NAIVE)
            naive = first_stops(v, replace(plain, min_runs=WIDTH_FIRST_LOOK), intersect=False)
            assert ((naive.low <= 0) & (0 <= naive.high)).mean() < covered, (model, k)
    # the verdict goal keeps the anytime-valid sequence
    assert StopRule.create(until="decided", threshold=0.01).design is Design.SEQUENCE


def test_the_width_design_needs_fewer_runs_than_the_sequence_for_a_precision() -> None:
    rng = np.random.default_rng(8)
    v = rng.standard_normal((1000, 50)) * 0.01
    width = first_stops(v, StopRule.create(until="precise", precision=0.005))
    seq = first_stops(v, StopRule.create(until="precise", precision=0.005, design="sequence"))
    # about 1.25^2 x the fixed-n t interval's runs, against 1.7^2 x for the sequence
    assert width.runs.mean() < 0.75 * seq.runs.mean(), (width.runs.mean(), seq.runs.mean())


def test_stopping_early_saves_runs_on_easy_benchmarks() -> None:
    rng = np.random.default_rng(5)
    easy = rng.standard_normal((500, 50)) * 0.002
    st = first_stops(easy, StopRule.create(until="precise", precision=0.005))
    assert (st.reason == "precise").all() and st.runs.mean() < 7
    # a few experiments whose independent run values look serially correlated by chance
    # (the check's level: SERIAL_ALPHA) get a wider interval and run longer
    assert np.mean(st.runs <= 10) >= 0.97 and st.runs.max() <= 15


# --- run values, cost model, planning ----------------------------------------------


def test_run_level_values_are_what_compare_averages() -> None:
    df = simulate(benchmarks=2, runs=6, iterations=12, slowdown=0.03, seed=4)
    values = run_level_values(df)
    res = compare(df).set_index(["suite", "benchmark", "method"])
    assert len(values) == len(res)
    for key, v in values.items():
        assert len(v) == 6
        assert math.expm1(v.mean()) == pytest.approx(res.loc[key, "change"], rel=1e-12)


def test_cost_model_recovers_the_simulated_components() -> None:
    df = simulate(
        benchmarks=1, methods=("seqn", "sduet"), runs=200, iterations=20, run_sd=0.02,
        iter_sd=0.01, mean_ns=5e6, gap_ns=0, startup_ns=100e6, seed=8,
    )  # fmt: skip
    models = estimate_costs(df, run_stat="mean")
    seqn, sduet = models[("suite0", "bench000", "seqn")], models[("suite0", "bench000", "sduet")]
    # seqn: independent run effects per side -> 2 run_sd^2; iteration noise 2 iter_sd^2
    assert seqn.between_runs == pytest.approx(2 * 0.02**2, rel=0.25)  # SE ~10 %
    assert seqn.within_runs == pytest.approx(2 * 0.01**2, rel=0.1)
    assert sduet.between_runs < 0.2 * seqn.between_runs  # the duet shares the run effect
    # time: a seqn repetition is two processes of 20 x 5 ms + 2 x 100 ms start-up
    assert seqn.seconds_per_run == pytest.approx(2 * (0.1 + 0.2), rel=0.05)
    assert seqn.seconds_per_iteration == pytest.approx(2 * 0.005, rel=0.05)
    assert seqn.seconds_fixed == pytest.approx(0.4, rel=0.1)
    assert sduet.seconds_per_run == pytest.approx(0.1 + 0.2, rel=0.05)


def test_run_records_give_the_machine_time() -> None:
    df = simulate(benchmarks=1, methods=("seqn",), runs=3, iterations=5, seed=1)
    records = pd.DataFrame(
        {
            "benchmark": ["bench000"] * 6,
            "method": ["seqn"] * 6,
            "run": [0, 0, 1, 1, 2, 2],
            "start_ns": [0] * 6,
            "end_ns": [int(1e9), int(2e9)] * 3,  # A 1 s, B 2 s
        }
    )
    secs = repetition_seconds(df, records)
    assert secs["seconds"].tolist() == pytest.approx([3.0, 3.0, 3.0])


def test_warmup_is_detected() -> None:
    df = simulate(benchmarks=2, runs=8, iterations=30, seed=2)
    slow = (df["iteration"] < 4) & (df["benchmark"] == "bench001")
    df.loc[slow, "duration_ns"] = (df.loc[slow, "duration_ns"] * 1.15).astype("int64")
    found = detect_warmup(df)
    assert found[("suite0", "bench001", "seqn")] == 4
    assert found[("suite0", "bench000", "aduet")] == 0


def _model(**kw: float) -> CostModel:
    base = dict(
        suite="s", benchmark="b", method="sduet", runs=10, iterations=20.0, run_var=0.0,
        between_runs=1e-4, within_runs=4e-4, stat_factor=1.0, warmup=0,
        seconds_per_run=0.0, seconds_per_iteration=0.01, seconds_fixed=1.0,
    )  # fmt: skip
    base.update(kw)
    m = CostModel(**base)  # type: ignore[arg-type]
    return m


def test_forecast_predicts_for_the_runs_as_run_with_a_range_that_covers_the_truth() -> None:
    """`duet plan --precision` from a 5-run pilot: the runs needed at the pilot's own
    iterations per run, and a 90 % range from the uncertainty of 5 runs' spread, which
    holds the runs the true spread needs in about 90 % of pilots (seeded)."""
    from types import SimpleNamespace

    from duetbench.adaptive.forecast import forecast

    bench = SimpleNamespace(name="bench000", repetitions={"seqn": 5}, stop=None)
    exp = SimpleNamespace(benchmarks=[bench])
    noise = dict(benchmarks=1, methods=("seqn",), iterations=10, run_sd=0.03, iter_sd=0.005)
    (truth,) = forecast(exp, simulate(runs=400, seed=1000, **noise), precision=0.01)  # type: ignore[arg-type]
    inside = 0
    for seed in range(60):
        (row,) = forecast(exp, simulate(runs=5, seed=seed, **noise), precision=0.01)  # type: ignore[arg-type]
        assert row["iterations"] == 10  # as the pilot ran, not the cost model's optimum
        assert row["best_iterations"] == 1  # run-level noise dominates: many short runs
        assert row["runs_low"] <= row["runs"] <= row["runs_high"]
        # 5 runs cannot pin the runs down to 1.5x: the range says so
        assert row["runs_high"] > 1.5 * row["runs"] and row["runs_low"] < row["runs"] / 1.5
        inside += row["runs_low"] <= truth["runs"] <= row["runs_high"]
    assert 0.8 <= inside / 60 <= 0.98, inside


def test_predicted_stop_is_where_the_rule_stops_and_its_range_holds_the_actual_stop() -> None:
    """A precision rule stops at the first look whose interval is narrow enough, earlier
    than where the interval at the true spread reaches the goal, and at a different run
    count in every experiment: the prediction is the simulated median, and its 90 % range
    (with the spread of the earlier runs uncertain) holds the stop of an experiment run
    afterwards in about 90 % of cases (seeded)."""
    rule = StopRule.create(until="precise", precision=0.03, max_runs=400)
    sd = 0.06
    pred = precision_stop_runs(rule, sd)
    reach = runs_to_reach(math.asinh(0.03), sd, rule, 0)
    stops = first_stops(np.random.default_rng(99).standard_normal((4000, 400)) * sd, rule)
    assert abs(pred.median - np.median(stops.runs)) <= 1  # an independent simulation
    # 31 against 27 runs here: a first passage stops early (25 runs without the guards),
    # and the guards widen the interval by the serial correlation that 5-30 runs cannot
    # yet rule out (docs/adaptive.md, "Assumptions, and how they are checked")
    assert reach - 3 <= pred.median <= 1.2 * reach
    assert pred == precision_stop_runs(rule, sd)  # seeded: a plan is reproducible
    rng = np.random.default_rng(5)
    for pilot in (5, 20):
        inside = 0
        for i in range(100):
            s = float(np.std(rng.standard_normal(pilot) * sd, ddof=1))
            p = precision_stop_runs(rule, s, df=pilot - 1, seed=i, draws=400)
            actual = int(first_stops(rng.standard_normal((1, 400)) * sd, rule).runs[0])
            inside += p.low <= actual <= (p.high or 10**9)
        assert 82 <= inside <= 97, (pilot, inside)


def test_best_iterations_minimizes_variance_times_cost() -> None:
    m = _model()
    best = best_iterations(m)
    # Kalibera & Jones: I* = sqrt(c_r s_i^2 / (c_i s_r^2)) = sqrt(1 * 4e-4 / (0.01 * 1e-4)) = 20
    assert best == 20
    cost = [m.value_var(i) * m.run_seconds(i) for i in range(1, 200)]
    assert int(np.argmin(cost)) + 1 == best
    assert best_iterations(_model(between_runs=0.0), highest=500) == 500
    assert best_iterations(_model(seconds_fixed=0.0)) == 1


def test_precision_plan_matches_the_rule() -> None:
    m = _model()
    plan = plan_for_precision(m, 0.005)
    sd = math.sqrt(m.value_var(plan.iterations))
    mult = StopRule.create(precision=0.005).multipliers(plan.runs)
    assert mult[-1] * sd / math.sqrt(plan.runs) <= math.asinh(0.005)
    assert mult[-2] * sd / math.sqrt(plan.runs - 1) > math.asinh(0.005)
    assert plan.seconds == pytest.approx(plan.runs * (1.0 + 0.01 * plan.iterations))
    assert plan.half_width <= 0.005


def test_power_plan_detects_the_change_by_simulation() -> None:
    m = _model()
    rule = StopRule.create(until="decided", max_runs=400)
    plan = plan_for_power(m, 0.01, rule=rule)
    assert plan.runs is not None
    sd = math.sqrt(m.value_var(plan.iterations))
    rng = np.random.default_rng(12)
    v = math.log1p(0.01) + sd * rng.standard_normal((2000, plan.runs))
    st = first_stops(v, StopRule.create(until="decided", max_runs=plan.runs))
    assert (st.verdict == "slower").mean() >= 0.8
    with pytest.raises(AnalysisError, match="non-zero"):
        plan_for_power(m, 0.0)


# --- method auto --------------------------------------------------------------------


def test_auto_picks_the_best_precision_per_machine_second() -> None:
    vals = {"seqn": _values(0.0, 0.02, 5), "sduet": _values(0.0, 0.005, 5)}
    c = choose_method(vals, {"seqn": 100.0, "sduet": 50.0})
    # the pilot counts; the rule first looks once as many runs follow it
    assert c.method == "sduet" and c.analyse_from == 0 and c.first_look == 10
    assert c.scores["sduet"] == pytest.approx(0.005**2 * 10.0)
    # a duet twice as noisy per run but at half the cost still loses to seqn
    vals = {"seqn": _values(0.0, 0.01, 5), "sduet": _values(0.0, 0.03, 5)}
    assert choose_method(vals, {"seqn": 100.0, "sduet": 50.0}).method == "seqn"
    assert "after one machine-hour" in choose_method(vals, {"seqn": 1.0, "sduet": 1.0}).explanation


def test_auto_recheck_keeps_the_method_unless_clearly_better() -> None:
    vals = {"seqn": _values(0.0, 0.010, 9), "aduet": _values(0.0, 0.009, 5)}
    secs = {"seqn": 90.0, "aduet": 50.0}
    c = choose_method(vals, secs, current="seqn")
    assert c.method == "seqn" and c.analyse_from == 0  # aduet better, but not 2x
    assert c.first_look == 10
    # 3.3x better, but a 5-run spread against 30 runs is that much tighter by chance
    # in more than 5 % of pilots (F(29, 4) at 95 %: 5.7): no switch, whose cost is the
    # runs it leaves out
    vals30 = {"seqn": _values(0.0, 0.010, 30), "aduet": _values(0.0, 0.0055, 5)}
    kept = choose_method(vals30, {"seqn": 300.0, "aduet": 50.0}, current="seqn")
    assert kept.scores["seqn"] / kept.scores["aduet"] == pytest.approx(3.3, rel=0.02)
    assert kept.method == "seqn"
    vals["aduet"] = _values(0.0, 0.003, 5)
    switched = choose_method(vals, secs, current="seqn")
    # a switch leaves the runs that showed the new method better out
    assert switched.method == "aduet" and switched.analyse_from == 5
    assert switched.first_look == 0
    with pytest.raises(AnalysisError, match="pilot run"):
        choose_method({"seqn": [0.1, 0.2]}, {"seqn": 1.0})


def test_auto_chooses_from_the_repository_without_a_pilot() -> None:
    """Every method known from the repository: score = sd^2 x seconds per repetition, by
    hand; the chosen method has no runs the choice rests on, so its rule looks as
    without auto (first_look 0) and nothing is left out."""
    from duetbench.adaptive import Prior

    priors = {
        "seqn": Prior(0.010, 40, runs=45, seconds_per_run=0.60),  # 1e-4 x 0.6 = 6.0e-5
        "aduet": Prior(0.012, 40, runs=45, seconds_per_run=0.30),  # 1.44e-4 x 0.3 = 4.32e-5
        "sduet": Prior(0.015, 40, runs=45, seconds_per_run=0.32),  # 2.25e-4 x 0.32 = 7.2e-5
    }
    c = choose_method({}, {}, priors=priors)
    assert c.scores == pytest.approx({"seqn": 6.0e-5, "aduet": 4.32e-5, "sduet": 7.2e-5})
    assert c.method == "aduet" and (c.analyse_from, c.first_look) == (0, 0)
    assert c.source == dict.fromkeys(priors, "repository")
    assert c.runs == dict.fromkeys(priors, 45)
    # +-1.96 sqrt(score / 3600 s), relative: aduet 0.0216 % after an hour
    assert c.half_width_per_hour["aduet"] == pytest.approx(
        math.expm1(1.959964 * math.sqrt(4.32e-5 / 3600)), rel=1e-9
    )
    assert c.explanation.startswith(
        "aduet from the repository's earlier experiments on this host (45 runs): +-"
    )
    assert c.to_json()["source"] == dict.fromkeys(priors, "repository")
    with pytest.raises(ValueError, match="machine seconds"):
        Prior(0.01, 5, seconds_per_run=0.0)


def test_auto_compares_the_repositorys_scores_with_a_pilots() -> None:
    """seqn and aduet known, sduet piloted: its score from its runs as always; a pilot
    method chosen counts its pilot (first look at twice it), a known one does not."""
    from duetbench.adaptive import Prior

    priors = {
        "seqn": Prior(0.010, 40, seconds_per_run=0.60),
        "aduet": Prior(0.012, 40, seconds_per_run=0.30),
    }
    pilot = [0.004, -0.004, 0.002, -0.002]  # var (ddof 1) = 4e-5 / 3
    c = choose_method({"sduet": pilot}, {"sduet": 4 * 0.3}, pilot_runs=2, priors=priors)
    assert c.scores["sduet"] == pytest.approx(4e-5 / 3 * 0.3)  # 4.0e-6: best
    assert c.method == "sduet" and c.first_look == 4 and c.analyse_from == 0
    assert c.source == {"sduet": "pilot", "seqn": "repository", "aduet": "repository"}
    assert "seqn +-" in c.explanation and "[repository]" in c.explanation
    noisy = [0.04, -0.04, 0.02, -0.02]  # 100x the variance: aduet from the repository
    c = choose_method({"sduet": noisy}, {"sduet": 1.2}, pilot_runs=2, priors=priors)
    assert c.method == "aduet" and (c.first_look, c.analyse_from) == (0, 0)
    assert "[pilot, 4 runs]" in c.explanation
    # a method with values of this experiment is scored from them, not its prior
    both = choose_method({"aduet": noisy}, {"aduet": 1.2}, pilot_runs=2, priors=priors)
    assert both.source["aduet"] == "pilot" and both.method == "seqn"


def test_a_chosen_methods_runs_contradict_its_prior_only_2x_noisier_and_beyond_chance() -> None:
    """The trigger of a second pilot: the runs' variance over the prior's at least 2x
    (the re-check's margin) and above F(0.95; n - 1, df0)."""
    from scipy import stats

    from duetbench.adaptive import Prior
    from duetbench.adaptive.method_choice import contradicts

    prior = Prior(0.01, 20, seconds_per_run=0.3)
    runs = [0.02, -0.02, 0.02, -0.02, 0.02, -0.02]  # var 0.00048 = 4.8x the prior's
    assert stats.f.ppf(0.95, 5, 20) == pytest.approx(2.71, abs=0.01)
    assert contradicts(runs, prior)
    assert not contradicts(runs[:2], prior)  # needs 3 runs
    # 3 runs of variance 4x: F(0.95; 2, 20) = 3.49 < 4 -> contradicted; 3x is not
    assert contradicts([0.02, 0.0, -0.02], prior)  # var 4e-4 = 4x
    assert not contradicts([0.0173, 0.0, -0.0173], prior)  # 3x < 3.49
    # many runs 1.8x noisier than a prior of 200 df: significant, but under the margin
    many, known = np.tile([0.0134, -0.0134], 100), Prior(0.01, 200, seconds_per_run=0.3)
    assert stats.f.sf(np.var(many, ddof=1) / 1e-4, 199, 200) < 0.001
    assert not contradicts(many, known)
    assert contradicts(many * 1.1, known)  # 2.2x


def test_a_counted_pilot_is_looked_at_first_with_as_many_runs_after_it() -> None:
    """A tight pilot alone never stops the rule: the first look waits for 10 runs."""
    rule = StopRule.create(until=Goal.PRECISE, precision=0.05, max_runs=30)
    tight = _values(0.0, 0.001, 9)
    assert decide(tight, rule).stop  # the rule alone would stop at 9 runs
    late = with_first_look(rule, 10)
    assert late.min_runs == 10 and not decide(tight, late).stop
    assert decide(_values(0.0, 0.001, 10), late).stop
    assert with_first_look(rule, 2) is rule  # never earlier than the rule's own min_runs
    assert with_first_look(StopRule.create(max_runs=8), 10).min_runs == 8
