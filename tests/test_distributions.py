"""The analysis's quantiles and tails (duetbench.analysis.distributions) equal scipy.stats's,
which the analysis no longer imports (half a second of every command's start-up)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from scipy import stats

from duetbench.analysis import distributions as d

Q = np.array([1e-9, 1e-4, 0.0125, 0.025, 0.05, 0.1, 0.5, 0.9, 0.95, 0.975, 0.995, 1 - 1e-6])
DF = np.array([1.0, 2.0, 4.0, 9.0, 29.0, 199.0, 5000.0])


def test_each_function_equals_scipy_stats_over_a_grid() -> None:
    q, df = np.meshgrid(Q, DF)
    np.testing.assert_allclose(d.t_ppf(q, df), stats.t.ppf(q, df), rtol=1e-10)
    np.testing.assert_allclose(d.t_isf(q, df), stats.t.isf(q, df), rtol=1e-10)
    np.testing.assert_allclose(d.chi2_ppf(q, df), stats.chi2.ppf(q, df), rtol=1e-10)
    np.testing.assert_allclose(d.norm_ppf(Q), stats.norm.ppf(Q), rtol=1e-12)
    np.testing.assert_allclose(d.norm_isf(Q), stats.norm.isf(Q), rtol=1e-12)
    for dfd in (1.0, 5.0, 40.0):
        np.testing.assert_allclose(d.f_ppf(q, df, dfd), stats.f.ppf(q, df, dfd), rtol=1e-9)
        x = stats.f.ppf(q, df, dfd)
        np.testing.assert_allclose(d.f_cdf(x, df, dfd), stats.f.cdf(x, df, dfd), rtol=1e-9)
        np.testing.assert_allclose(d.f_sf(x, df, dfd), stats.f.sf(x, df, dfd), rtol=1e-9)
    # by hand: the two-sided 95 % t of 1 and 29 degrees of freedom, the normal's 1.96
    assert abs(d.t_ppf(0.975, 1) - 12.7062) < 1e-4 and abs(d.t_ppf(0.975, 29) - 2.0452) < 1e-4
    assert abs(d.norm_isf(0.025) - 1.959964) < 1e-6
    assert np.isnan(d.t_ppf(0.975, np.nan))  # a group of one value has no interval


def test_the_analysis_and_the_history_import_no_scipy_stats() -> None:
    """Not even to compare small samples (a side of at most 8 values: the exact U test)."""
    code = (
        "import sys\n"
        "import duetbench.analysis, duetbench.adaptive.results, duetbench.history.changes\n"
        "from duetbench.analysis import compare\n"
        "from duetbench.analysis.simulate import simulate\n"
        "compare(simulate(benchmarks=2, runs=3, iterations=2, slowdown=0.05, seed=1))\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
