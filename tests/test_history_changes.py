"""Series and change detection: known changes found with intervals covering their sizes,
spikes and drift not called changes, incremental stability, marks, environment drift,
and the seeded error rates (a fast version of benchmarks/change_detection_study.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tests.history_helpers import HOST, build_history, levels_with_steps

from duetbench.history import HistoryError, Repository
from duetbench.history.changes import DetectionSettings, detect_changes, detect_series
from duetbench.history.series import Evidence, Series, SeriesKey, Step, series
from duetbench.history.synthetic import (
    History,
    absolute_only,
    label,
    random_steps,
    synthetic_series,
)


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory) -> Path:
    """24 versions from simulated duet experiments; +6 % at v008, -4 % at v016."""
    path = tmp_path_factory.mktemp("hist") / "perf.sqlite"
    with Repository.open(path) as repo:
        build_history(repo, levels_with_steps(24, {8: 0.06, 16: -0.04}))
    return path


def test_known_changes_are_found_with_intervals_covering_them(history_repo: Path) -> None:
    with Repository.open(history_repo) as repo:
        report = detect_changes(repo)
        (s,) = series(repo)
    assert [(c.first_bad, c.last_good, c.direction) for c in report.changes] == [
        ("v008", "v007", "slower"),
        ("v016", "v015", "faster"),
    ]
    for c, size in zip(report.changes, (0.06, -0.04), strict=True):
        assert c.source == "paired" and c.ci_low < size < c.ci_high
        assert c.key.benchmark == "parse" and c.experiments == (int(c.first_bad[1:]),)
        assert "direct comparison" in c.evidence
    assert [c.first_bad for c in report.regressions] == ["v008"]
    assert len(s.steps) == 23 and len(s.levels) == 24
    chain = s.chain()
    assert chain[-1].relative == pytest.approx(1.06 * 0.96 - 1, abs=0.02)
    doc = report.to_json()
    assert doc["changes"][0]["first_bad"] == "v008" and doc["changes"][0]["direction"] == "slower"
    with Repository.open(history_repo) as repo:
        assert [c.first_bad for c in detect_changes(repo, since="v010").changes] == ["v016"]
        with pytest.raises(HistoryError, match="not in"):
            detect_changes(repo, since="v999")


def test_marks_exclude_a_version_and_force_a_change(tmp_path: Path, history_repo: Path) -> None:
    path = tmp_path / "perf.sqlite"
    with Repository.open(path) as repo:
        build_history(repo, levels_with_steps(14, {8: 0.06}))
        repo.mark("parse", "v008", "exclude", "broken build")
        repo.mark("parse", "v004", "change", "new compiler")
        with pytest.raises(HistoryError, match="kind"):
            repo.mark("parse", "v004", "ignore", "x")
        with pytest.raises(HistoryError, match="not in"):
            repo.mark("nope", "v004", "change", "x")
        (s,) = series(repo)
        report = detect_changes(repo)
    assert "v008" not in s.versions and s.excluded == ("v008",)
    bridged = next(st for st in s.steps if st.before == "v007")
    assert bridged.after == "v009" and len(bridged.experiments) == 2  # v007 -> v008 -> v009
    got = {c.first_bad: c for c in report.changes}
    assert set(got) == {"v004", "v009"}
    assert got["v004"].source == "marked" and got["v004"].marked == "new compiler"
    assert got["v009"].source == "paired" and got["v009"].change == pytest.approx(0.06, abs=0.015)


def test_a_new_machine_is_environment_drift_not_a_regression(tmp_path: Path) -> None:
    with Repository.open(tmp_path / "perf.sqlite") as repo:
        build_history(repo, [1.0] * 8)
        faster_box = {**HOST, "cpu_model": "Test CPU 9900", "kernel": "6.8.0"}
        build_history(repo, [1.0] * 8, host_records={"ci-1": faster_box}, start=7)
        report = detect_changes(repo)
    assert report.changes == ()
    (env,) = report.environment
    assert env.version == "v008" and env.before != env.after
    assert dict((k, (a, b)) for k, a, b in env.differences) == {
        "cpu_model": ("Test CPU 9000", "Test CPU 9900"),
        "kernel": ("6.1.0-test", "6.8.0"),
    }


def test_isolated_spikes_are_not_changes() -> None:
    for seed in range(12):
        rng = np.random.default_rng(seed)
        at = [a for a, _ in random_steps(rng, 50, 3, 1.0)]
        spikes = tuple(
            (a, float(s)) for a, s in zip(at, rng.choice([0.05, -0.08, 0.2], 3), strict=True)
        )
        s = synthetic_series(History(versions=50, spikes=spikes), seed)
        changes, found, _ = detect_series(s)
        assert changes == [], (seed, spikes)
        assert {x.version for x in found} == {label(a) for a, _ in spikes}


def test_machine_drift_moves_the_absolute_series_but_is_dismissed() -> None:
    dismissed = 0
    for seed in range(8):
        s = synthetic_series(History(versions=50, drift=0.004, absolute_sd=0.01), seed)
        changes, _, gone = detect_series(s)
        assert changes == []
        dismissed += len(gone)
        assert all("machine drift" in d.reason for d in gone)
    assert dismissed > 0  # the absolute series alone would have raised alarms


def test_adding_versions_never_moves_final_changes() -> None:
    st = DetectionSettings()
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        h = History(versions=70, steps=random_steps(rng, 70, 4, 0.04), absolute_sd=0.01)
        full = synthetic_series(h, seed)
        for variant in (full, absolute_only(full)):
            seen: dict[str, tuple[float, str]] = {}
            for n in range(20, 71, 5):
                prefix = replace(
                    variant,
                    versions=variant.versions[:n],
                    steps=tuple(x for x in variant.steps if x.after in variant.versions[:n]),
                    levels=variant.levels[:n],
                )
                changes, _, _ = detect_series(prefix, settings=st)
                now = {c.first_bad: (round(c.change, 12), c.source) for c in changes}
                for v, found in seen.items():
                    assert now.get(v) == found, (seed, n, v)
                seen.update({c.first_bad: now[c.first_bad] for c in changes if c.final})


@pytest.mark.parametrize("size", [0.03, 0.05, 0.10])
def test_seeded_error_rates_meet_the_goal(size: float) -> None:
    """Precision and recall >= 0.9 for steps of 3 % and more (quiet host, paired series)."""
    tp = fp = fn = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        steps = random_steps(rng, 60, 3, size)
        s = synthetic_series(History(versions=60, steps=steps), seed)
        found = {c.first_bad for c in detect_series(s)[0]}
        true = {label(a) for a, _ in steps}
        tp, fp, fn = tp + len(found & true), fp + len(found - true), fn + len(true - found)
    assert tp / (tp + fp) >= 0.9 and tp / (tp + fn) >= 0.9, (tp, fp, fn)


def test_detection_settings_are_checked() -> None:
    with pytest.raises(HistoryError):
        DetectionSettings(alpha=0)
    with pytest.raises(HistoryError):
        DetectionSettings(window=2, min_segment=3)


# ------------------------------------------------- steps that carry their own verdict
def _steps_with(decided: Step, neighbour_sd: float = 0.002, n: int = 13) -> Series:
    """``n`` steps of a quiet A/A history (3 runs each, no verdict of their own) with
    ``decided`` in the middle."""
    rng = np.random.default_rng(28)
    names = [label(i) for i in range(n + 1)]
    steps = [
        Step(names[i], names[i + 1], float(rng.normal(0, neighbour_sd)), 0.002, 3, (i + 1,))
        for i in range(n)
    ]
    mid = n // 2
    steps[mid] = replace(decided, before=names[mid], after=names[mid + 1])
    key = SeriesKey("s", "bench", "0" * 16, "aduet")
    return Series(key, tuple(names), tuple(steps), (), commits={v: (None, None) for v in names})


def _gate_step(verdict: str, low: float, high: float) -> Step:
    """A gate's step as the issue saw it: 3 runs, +3.74 % and its rule's interval."""
    ev = Evidence("rule", verdict, np.log1p(low), np.log1p(high), 0.95, 0.02, 7, "decided")
    return Step("", "", float(np.log1p(0.0374)), 0.004, 3, (7,), (verdict,), ev)


def test_a_step_its_stopping_rule_decided_is_a_change_on_its_own_interval() -> None:
    s = _steps_with(_gate_step("slower", 0.0248, 0.0503))
    (c,) = detect_series(s)[0]
    assert (c.first_bad, c.direction, c.source) == (label(7), "slower", "paired")
    assert c.ci_low == pytest.approx(0.0248, abs=1e-4) and c.ci_high == pytest.approx(
        0.0503, abs=1e-4
    )
    assert "slower by its stopping rule, 95 % interval [+2.5 %, +5.0 %]" in c.evidence
    # re-tested from its 3 runs (Student's t at alpha 0.002: |z| >= 22.3) it is not one
    assert detect_series(s, settings=DetectionSettings(use_evidence=False))[0] == []


def test_a_step_without_a_verdict_of_change_or_with_noisy_neighbours_is_not_one() -> None:
    # the rule did not decide (its interval holds the threshold): its runs are re-tested
    assert detect_series(_steps_with(_gate_step("inconclusive", 0.005, 0.07)))[0] == []
    # a fixed-n verdict without a threshold: the t test of the same runs at 95 %, laxer
    # than the history's alpha for the same (fixed) runs, which is what it gets
    fixed = _gate_step("slower", 0.0248, 0.0503)
    fixed = replace(fixed, evidence=replace(fixed.evidence, basis="fixed", threshold=0.0))
    assert detect_series(_steps_with(fixed))[0] == []
    at_threshold = replace(fixed, evidence=replace(fixed.evidence, threshold=0.02))
    assert [c.first_bad for c in detect_series(_steps_with(at_threshold))[0]] == [label(7)]
    # neighbours that vary by 3 % between experiments, more than their intervals say:
    # the interval widened by that spread holds 0, so the verdict alone is not enough
    noisy = _steps_with(_gate_step("slower", 0.0248, 0.0503), neighbour_sd=0.03)
    assert detect_series(noisy)[0] == []


FIXED_3 = {"until": "decided", "design": "group", "groups": 1, "min_runs": 3, "max_runs": 3}


@pytest.mark.parametrize(
    ("kw", "spread", "basis", "size"),
    [
        ({"until": "decided", "threshold": 0.02, "max_runs": 20}, (0.003, 0.02), "rule", 0.04),
        ({**FIXED_3, "threshold": 0.02}, (0.002, 0.01), "fixed", 0.08),
    ],
    ids=["gate-rule", "fixed-3-runs-at-2-percent"],
)
def test_seeded_steps_stopped_by_a_rule_are_found_and_aa_steps_stay_at_its_rate(
    kw: dict, spread: tuple[float, float], basis: str, size: float
) -> None:
    """Seeded histories whose every comparison a rule stopped (a fast version of
    `benchmarks/change_detection_study.py --stopped`): the steps are found (3 fixed runs
    re-tested at alpha find 0.63 of the +8 % ones), and steps without a change become
    changes no more often than the rule's nominal 5 %."""
    from duetbench.adaptive.rules import StopRule
    from duetbench.history.synthetic import stopped_series

    rule = StopRule.create(**kw)
    tp = fn = fp = 0
    for k in range(15):
        rng = np.random.default_rng([k, 28])
        h = History(versions=40, steps=random_steps(rng, 40, 3, size))
        s = stopped_series(h, rule, spread, k, basis)
        found = {c.first_bad for c in detect_series(s)[0]}
        true = {label(a) for a, _ in h.steps}
        tp, fn, fp = tp + len(found & true), fn + len(true - found), fp + len(found - true)
    assert tp / (tp + fn) >= 0.9 and tp / (tp + fp) >= 0.9
    false = steps = 0
    for k in range(15):
        s = stopped_series(History(versions=40), rule, spread, 1000 + k, basis)
        false += len(detect_series(s)[0])
        steps += len(s.steps)
    assert false / steps <= 1 - rule.confidence
