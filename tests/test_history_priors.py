"""history/priors.py: the priors of a benchmark x method on a host, against values
computed by hand from a small repository whose run values and timings are set exactly."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from duetbench.history import Repository, Version
from duetbench.history.priors import ExperimentPart, pool, priors
from history_helpers import HOST

MS = 1_000_000
#: every iteration: A 20 ms, B 20 ms x exp(value); the first iteration 2x slower (warm-up)
BASE_NS = 20 * MS
STEP_NS = 25 * MS  # iteration k starts at 10 ms + k x 25 ms into the run
ITERATIONS = 8


def exact_table(
    values: list[float], *, run_ns: int, unbalanced: tuple[int, ...] = ()
) -> pd.DataFrame:
    """An aduet experiment of one benchmark whose run r has run value ``values[r]``
    (every pair's log ratio is exactly it) and lasts ``run_ns`` (process start to end)."""
    rows = []
    for run, value in enumerate(values):
        t0 = 1_700_000_000 * 10**9 + run * 10 * run_ns
        for side, factor in (("A", 1.0), ("B", math.exp(value))):
            for k in range(ITERATIONS):
                d = int(round(BASE_NS * factor * (2.0 if k == 0 else 1.0)))
                start = t0 + 10 * MS + k * STEP_NS
                rows.append(
                    {
                        "experiment": "exact",
                        "host": "ci-1",
                        "suite": "s",
                        "benchmark": "parse",
                        "method": "aduet",
                        "run": run,
                        "pair": side,
                        "order": "AB",
                        "iteration": k,
                        "start_ns": start,
                        "end_ns": start + d,
                        "duration_ns": d,
                        "proc_start_ns": t0,
                        "proc_end_ns": t0 + run_ns,
                        "unbalanced": run in unbalanced,
                    }
                )
    return pd.DataFrame(rows)


def add(repo: Repository, a: str, b: str, values: list[float], **kw: object) -> int:
    df = exact_table(values, **kw)  # type: ignore[arg-type]
    df["experiment"] = f"{a}-{b}-{len(repo.experiments())}"
    info = repo.add(df, {"A": Version(a), "B": Version(b)}, host_records={"ci-1": HOST})
    return info.id


def hand_pooled(*groups: list[float]) -> tuple[float, int]:
    ss = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in groups if len(g) > 1)
    df = sum(len(g) - 1 for g in groups if len(g) > 1)
    return math.sqrt(ss / df), df


@pytest.fixture()
def repo(tmp_path: Path) -> Repository:
    r = Repository.open(tmp_path / "perf.sqlite")
    yield r
    r.close()


def test_priors_against_hand_computed_values(repo: Repository) -> None:
    e1 = [0.010, 0.030, 0.020]  # a version step of ~2 %: its mean must not count
    e2 = [-0.005, 0.005, 0.000, 0.012]
    e3 = [0.001, 0.003, 0.050, 0.002]  # run 2 unbalanced: left out
    add(repo, "v1", "v2", e1, run_ns=300 * MS)
    add(repo, "v2", "v3", e2, run_ns=400 * MS)
    add(repo, "v3", "v4", e3, run_ns=500 * MS, unbalanced=(2,))
    (p,) = priors(repo, benchmark="parse")
    sd, df = hand_pooled(e1, e2, [0.001, 0.003, 0.002])
    assert p.df == df == 2 + 3 + 2
    assert p.sd == pytest.approx(sd, rel=1e-6)
    assert p.runs == 10
    assert p.left_out_share == pytest.approx(1 / 11)
    assert p.unbalanced_share == pytest.approx(1 / 11)
    # machine time per repetition: each experiment's run length (its median), weighted
    # by the runs with a value (3, 4, 3)
    assert p.seconds_per_run == pytest.approx((3 * 0.3 + 4 * 0.4 + 3 * 0.5) / 10, rel=1e-6)

    # per iteration: the last iteration of the slower side ends at 7 x 25 ms + its duration
    # after the first starts; the median over the runs measured of span / 8
    def span(values: list[float]) -> float:
        per = sorted((7 * STEP_NS + BASE_NS * max(1.0, math.exp(v))) / 1e9 / 8 for v in values)
        return float(np.median(per))

    expect = (3 * span(e1) + 4 * span(e2) + 3 * span(e3)) / 10
    assert p.seconds_per_iteration == pytest.approx(expect, rel=1e-3)
    assert p.warmup == 1
    assert p.window == (1, 2, 3)


def test_window_and_marks(repo: Repository) -> None:
    groups = [[0.0, 0.01, 0.02], [0.0, 0.03], [0.01, 0.0, -0.01], [0.02, 0.04, 0.0, 0.01]]
    for i, g in enumerate(groups):
        add(repo, f"v{i}", f"v{i + 1}", g, run_ns=300 * MS)
    (p,) = priors(repo, benchmark="parse", last=2)
    assert p.window == (3, 4)
    assert (p.sd, p.df) == pytest.approx(hand_pooled(groups[2], groups[3]))
    assert (1, "older than the last 2") in p.skipped
    repo.mark("parse", "v2", "exclude", "a broken build")
    (p,) = priors(repo, benchmark="parse")
    assert p.window == (1, 4)  # #2 and #3 measure v2
    assert p.sd == pytest.approx(hand_pooled(groups[0], groups[3])[0])
    repo.mark("parse", "v3", "change", "new allocator")
    (p,) = priors(repo, benchmark="parse")
    assert p.window == (4,)  # #1 (v0, v1) comes before the change at v3
    assert any("marked as a change" in why for _, why in p.skipped)


def test_pool_ignores_one_run_experiments_and_says_when_it_has_nothing() -> None:
    key = ("s", "b", "aduet", "f" * 16)
    p = pool(key, [ExperimentPart(1, (0.01,), 1, 0), ExperimentPart(2, (0.0, 0.02), 3, 0)])
    assert (p.sd, p.df, p.runs) == (pytest.approx(math.sqrt(2e-4)), 1, 3)
    assert p.left_out_share == pytest.approx(1 / 4)
    assert not p.usable  # no cost model
    empty = pool(key, [ExperimentPart(1, (float("nan"),), 1, 1)])
    assert empty.sd is None and empty.df == 0 and empty.unbalanced_share == 1.0


def test_history_show_prints_the_priors(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    where = tmp_path / "a repo with spaces.sqlite"
    with Repository.open(where) as r:
        add(r, "v1", "v2", [0.01, 0.03, 0.02], run_ns=300 * MS)
        add(r, "v2", "v3", [0.0, 0.01, -0.01], run_ns=300 * MS)
        expected = priors(r, benchmark="parse")[0]
    base = [sys.executable, "-m", "duetbench", "history", "show", "--repo", str(where)]
    out = subprocess.run(
        [*base, "--benchmark", "parse", "--format", "json"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    (doc,) = json.loads(out.stdout)["priors"]
    assert doc["df"] == 4 and doc["sd"] == pytest.approx(expected.sd)
    text = subprocess.run([*base, "--benchmark", "parse"], capture_output=True, text=True)
    assert "priors" in text.stdout and f"{math.expm1(expected.sd) * 100:.2f} %" in text.stdout
    bad = subprocess.run(
        [*base, "--benchmark", "parse", "--last", "0"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--last must be at least 1" in bad.stderr


def test_the_shape_of_the_run_values_against_hand_computed_values() -> None:
    """Lag-1 autocorrelation over successive runs with a value within each experiment
    (each experiment's own mean removed) and skewness of the same deviations; a run
    left out breaks the succession; an experiment of fewer than 3 values adds nothing."""
    key = ("s", "b", "aduet", "f" * 16)
    e1 = (0.010, 0.030, 0.020, 0.040)
    e2 = (0.001, 0.004, float("nan"), 0.002, 0.009)  # run 2 left out
    e3 = (0.5, 0.7)  # too short for the shape
    p = pool(key, [ExperimentPart(i, e, len(e), 0) for i, e in enumerate((e1, e2, e3), 1)])
    c1 = np.array(e1) - np.mean(e1)
    f2 = np.array([0.001, 0.004, 0.002, 0.009])
    c2 = f2 - f2.mean()
    lag = np.sum(c1[1:] * c1[:-1]) + c2[0] * c2[1] + c2[2] * c2[3]  # not across the gap
    sq = np.sum(c1**2) + np.sum(c2**2)
    shape = p.shape
    assert shape is not None and shape.r == pytest.approx(lag / sq, rel=1e-12)
    m2, m3 = sq / 8, (np.sum(c1**3) + np.sum(c2**3)) / 8
    assert shape.skew == pytest.approx(m3 / m2**1.5, rel=1e-12)
    assert (shape.runs, shape.experiments) == (8, 2)
    assert pool(key, [ExperimentPart(1, e3, 2, 0)]).shape is None
