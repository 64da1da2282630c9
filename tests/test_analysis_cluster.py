"""Runs on several hosts: the host-clustered weighted bootstrap (docs/statistics.md, "Several hosts").

Bakshy & Frachtenberg's random-effects setting: every benchmark runs on 8 hosts, 3
runs each. A host effect hits both sides (it cancels in the duet's ratio: the
fully balanced design), a smaller host effect hits B only (say CPU asymmetry) and
survives; runs add their own effect and iteration noise. Resampling runs treats the
24 runs as independent and is far too sure; resampling hosts is not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import compare
from duetbench.analysis.simulate import simulate
from duetbench.errors import AnalysisError

R = 1999  # resamples: the t reading needs only the replicates' SD (1.6 % MC error)


@pytest.fixture(scope="module")
def hosts_aa() -> pd.DataFrame:
    return simulate(
        benchmarks=400,
        hosts=8,
        methods=("sduet",),
        runs=3,
        iterations=20,
        run_sd=0.03,
        iter_sd=0.01,
        host_sd=0.05,
        host_b_sd=0.005,
        seed=1,
        categorical=True,
    )


def false_alarms(res: pd.DataFrame) -> float:
    return float((res["verdict"] != "no change detected").mean())


def test_host_clustered_false_alarm_rate_is_nominal_and_run_level_is_not(
    hosts_aa: pd.DataFrame,
) -> None:
    clustered = compare(hosts_aa, resamples=R)  # auto: runs span 8 hosts -> resample hosts
    assert set(clustered["clustered_by"]) == {"host"}
    assert (clustered["clusters"] == 8).all() and (clustered["runs"] == 24).all()
    fa = false_alarms(clustered)
    assert 0.02 <= fa <= 0.08, fa
    run_level = compare(hosts_aa, cluster_by="run", interval="percentile", resamples=R)
    assert set(run_level["clustered_by"]) == {"run"}
    assert false_alarms(run_level) > 0.08
    assert false_alarms(run_level) > 2 * fa
    # explicit clustering and Uniform(0, 2) weights agree with the default
    explicit = compare(hosts_aa, cluster_by="host", weights="uniform", resamples=R)
    assert 0.02 <= false_alarms(explicit) <= 0.08


def test_clustered_intervals_are_wider_where_hosts_differ(hosts_aa: pd.DataFrame) -> None:
    clustered = compare(hosts_aa, resamples=R)
    run_level = compare(hosts_aa, cluster_by="run")
    assert (clustered["ci_width"] > run_level["ci_width"]).mean() > 0.9
    assert np.allclose(clustered["change"], run_level["change"])  # same estimate


def test_per_host_groups_are_not_clustered() -> None:
    df = simulate(benchmarks=2, hosts=3, methods=("aduet", "seqn"), runs=5, iterations=10, seed=2)
    per_host = compare(df, by=("host", "suite", "benchmark", "method"))
    assert set(per_host["clustered_by"]) == {"run"}
    pooled = compare(df)
    assert set(pooled["clustered_by"]) == {"host"} and (pooled["clusters"] == 3).all()
    with pytest.raises(AnalysisError, match="studentized"):
        compare(df, interval="studentized")
    assert set(compare(df, interval="studentized", cluster_by="run")["clustered_by"]) == {"run"}


def test_clustered_bootstrap_is_reproducible(hosts_aa: pd.DataFrame) -> None:
    small = hosts_aa[hosts_aa["benchmark"].isin(["bench000", "bench001", "bench002"])]
    a = compare(small, seed=5, interval="bca")
    b = compare(small, seed=5, interval="bca")
    c = compare(small, seed=6, interval="bca")
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert (a["ci_low"] != c["ci_low"]).all()
