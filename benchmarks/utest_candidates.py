"""Which rank test should decide ``--test utest``? The candidates, measured.

On the noise models of ``calibration_study.py`` (A/A and B 2 % slower, 10 runs of 30
iterations; 5 runs with ``--runs 5``), per method:

* ``signed rank``: Wilcoxon signed-rank test of the run values (the run medians of
  the pairs' log ratios) -- what ``compare(test="utest")`` does;
* ``sign flip``: the exact permutation test of the run values' mean (all 2^n signs);
* ``U of run summaries``: Mann-Whitney U of the runs' A medians against their B
  medians (unpaired);
* ``blocked U``: a U test within every run (A's iterations against B's), its
  P(B > A) - 1/2 averaged over runs with a t test;
* ``pooled U``: the thesis's U test of all iterations.

Prints the share of A/A experiments with p < 0.05 (false alarms) and of slowed ones
judged different (power). Per-group scipy calls: slow, hence fewer experiments.

    python benchmarks/utest_candidates.py            # 300 experiments, ~16 min on 2 busy vCPUs
    python benchmarks/utest_candidates.py --quick    # 100, ~5 min
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from duetbench.analysis import compare, pair

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_study import MODELS  # noqa: E402

CANDIDATES = ("signed rank", "sign flip", "U of run summaries", "blocked U", "pooled U")


def _t_p(x: np.ndarray) -> float:
    if np.ptp(x) == 0:
        return 1.0 if x.mean() == 0 else 0.0
    return float(stats.ttest_1samp(x, 0.0).pvalue)


def pvalues(df: pd.DataFrame) -> pd.DataFrame:
    """p-values of every candidate, per benchmark and method."""
    p = pair(df).assign(q=lambda d: np.log(d["b_ns"] / d["a_ns"]))
    y = p.groupby(["benchmark", "method", "run"], observed=True)["q"].median()
    d = df.assign(ln=np.log(df["duration_ns"].to_numpy(dtype=float)))
    side = d.groupby(["benchmark", "method", "run", "pair"], observed=True)["ln"].median().unstack()
    pooled = compare(df).set_index(["benchmark", "method"])["p_value"]
    rows = []
    for (b, m), g in d.groupby(["benchmark", "method"], observed=True):
        v = y.loc[(b, m)].to_numpy()
        n = len(v)
        signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        flip = float(np.mean(np.abs(signs @ v) >= abs(v.sum()) - 1e-12))
        s = side.loc[(b, m)]
        theta = []
        for _, gr in g.groupby("run"):
            a, bb = gr.loc[gr["pair"] == "A", "ln"], gr.loc[gr["pair"] == "B", "ln"]
            theta.append(stats.mannwhitneyu(bb, a).statistic / (len(a) * len(bb)) - 0.5)
        rows.append(
            {
                "benchmark": b,
                "method": m,
                "signed rank": stats.wilcoxon(v).pvalue,
                "sign flip": flip,
                "U of run summaries": stats.mannwhitneyu(s["A"], s["B"]).pvalue,
                "blocked U": _t_p(np.asarray(theta)),
                "pooled U": pooled.loc[(b, m)],
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="100 experiments per cell")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    n = 100 if args.quick else 300
    t0 = time.perf_counter()
    out = []
    warnings.simplefilter("ignore")  # scipy warns on nearly constant samples
    for model, make in MODELS.items():
        for change in (0.0, 0.02):
            r = pvalues(make(n, args.runs, change, args.seed))
            rate = (r[list(CANDIDATES)] < 0.05).groupby(r["method"]).mean()
            for method, row in rate.iterrows():
                out.append({"model": model, "change": change, "method": method, **row.to_dict()})
    t = pd.DataFrame(out)
    print(f"## U-test candidates: {n} experiments, {args.runs} runs, seed {args.seed}\n")
    print(
        "| candidate | A/A false alarms: worst (median) % | power at +2 %, seqn / aduet / sduet (median over models) % |"
    )
    print("|---|---|---|")
    for c in CANDIDATES:
        aa = t.loc[t["change"] == 0.0, c]
        pw = t[t["change"] > 0].groupby("method")[c].median()
        print(
            f"| {c} | {100 * aa.max():.1f} ({100 * aa.median():.1f}) | "
            f"{100 * pw['seqn']:.0f} / {100 * pw['aduet']:.0f} / {100 * pw['sduet']:.0f} |"
        )
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
