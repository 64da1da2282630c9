"""Pairing study: bias of the aduet estimate by overlap rate, and runs with few pairs.

Seeded simulations of aduet runs on a timeline (``simulate_interference``): B does
``r`` times A's work (r = 1.0 ... 3.0), iterations of A take ~10 ms, and slow periods
(mean 50 ms, 30 % of the time, 2x slower) hit both sides at once (*shared*) or one
side at a time (*one-sided*). Part 1 prints the bias of the default ratio test with
the overlap rate relative to the shorter iteration (the default) and with the
thesis's rate, side by side. Part 2 simulates A/A experiments in which a side of
30 % of the runs stopped after 1-5 iterations, and compares leaving such runs out
(``min_run_pairs``: fewer pairs than 1/8, 1/4 -- the default -- or 1/2 of the
median run's) with counting every run once and with weighting runs by their pairs
or by inverse variance (a sandwich variance; computed here, not offered by compare).
Part 3 compares the run statistics ``median`` (the default's when no other work ran)
and ``means`` (the default's for duets beside other work) under interference whose
slow periods last 50 ms or 5 ms -- the latter as short as a time slice of a CPU
shared with another busy task -- for aduet, sduet and seqn, with the coverage of their
95 % intervals.

    python benchmarks/pairing_study.py            # ~2 min on 2 busy vCPUs
    python benchmarks/pairing_study.py --quick    # fewer experiments, ~30 s
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

from duetbench.analysis import compare, pair
from duetbench.analysis.simulate import simulate_interference

RATIOS = (1.0, 1.03, 1.1, 1.5, 2.0, 2.5, 3.0)
INTERFERENCE = {"shared": 1.0, "one-sided": 0.0}


def bias_table(n: int, seed: int) -> pd.DataFrame:
    """Bias (geometric mean of estimate / r - 1) per ratio, interference and rate."""
    rows = []
    for label, shared in INTERFERENCE.items():
        df = simulate_interference(
            ratio=RATIOS, benchmarks=n, runs=10, iterations=30, shared=shared,
            seed=seed, categorical=True,
        )  # fmt: skip
        truth = pd.Series(np.repeat(RATIOS, n), index=[f"bench{i:04d}" for i in range(len(df))][
            : len(RATIOS) * n
        ])  # fmt: skip
        for rate in ("shorter", "thesis"):
            res = compare(df, overlap_rate=rate).set_index("benchmark")
            r = truth.reindex(res.index)
            err = np.log1p(res["change"]) - np.log(r)
            g = pd.DataFrame({"r": r, "err": err, "pairs": res["pairs"] / res["runs"]})
            for ratio, d in g.groupby("r"):
                ok = d["err"].notna()
                rows.append(
                    dict(
                        interference=label,
                        ratio=ratio,
                        rate=rate,
                        bias=100 * np.expm1(d.loc[ok, "err"].mean()) if ok.any() else np.nan,
                        sd=100 * d.loc[ok, "err"].std(),
                        no_data=100 * (~ok).mean(),
                        pairs_per_run=d["pairs"].median(),
                    )
                )
    return pd.DataFrame(rows)


def truncated(df: pd.DataFrame, share: float, kmax: int, seed: int) -> pd.DataFrame:
    """A side of ``share`` of the runs stops after 1..kmax iterations."""
    rng = np.random.default_rng(seed)
    units = df[["benchmark", "run"]].drop_duplicates().reset_index(drop=True)
    units["k"] = np.where(
        rng.random(len(units)) < share, rng.integers(1, kmax + 1, len(units)), 10**9
    )
    units["side"] = np.where(rng.random(len(units)) < 0.5, "A", "B")
    m = df[["benchmark", "run"]].merge(units, on=["benchmark", "run"], how="left")
    drop = (df["pair"].astype(str).to_numpy() == m["side"].to_numpy()) & (
        df["iteration"].to_numpy() >= m["k"].to_numpy()
    )
    return df.loc[~drop]


def weighted(p: pd.DataFrame, scheme: str) -> pd.DataFrame:
    """Weighted mean of the run medians with a sandwich variance (for comparison)."""
    p = p.assign(q=np.log(p["b_ns"] / p["a_ns"]))
    g = p.groupby(["benchmark", "run"], observed=True)["q"]
    rv = pd.DataFrame({"y": g.median(), "n": g.size(), "v": g.var()}).reset_index()
    out = []
    for _, d in rv.groupby("benchmark", observed=True):
        y, n = d["y"].to_numpy(), d["n"].to_numpy(float)
        if scheme == "pairs":
            w = n
        else:  # inverse variance: between-run + within-run / pairs (median: pi/2)
            s2 = np.nansum(d["v"].fillna(0.0) * (n - 1)) / max(np.sum(n - 1), 1) * np.pi / 2
            tau2 = max(0.0, np.var(y, ddof=1) - np.mean(s2 / n))
            w = 1.0 / (tau2 + s2 / n)
        est = np.sum(w * y) / np.sum(w)
        m = len(y)
        se = np.sqrt(m / (m - 1) * np.sum(w**2 * (y - est) ** 2)) / np.sum(w)
        dof = (np.sum(w) ** 2 / np.sum(w**2) - 1) if scheme == "inverse variance" else m - 1
        q = stats.t.ppf(0.975, max(dof, 1.0))
        out.append((est, est - q * se, est + q * se))
    return pd.DataFrame(out, columns=["est", "lo", "hi"])


def few_pairs_table(n: int, seed: int) -> pd.DataFrame:
    rows = []
    regimes = {
        "iteration noise dominates": dict(iter_sd=0.05, side_run_sd=0.002),
        "mixed": dict(iter_sd=0.03, side_run_sd=0.007),
        "run shifts dominate": dict(iter_sd=0.02, side_run_sd=0.02),
    }
    shares = {"every run once": 0.0, "< 1/8 median": 0.125, "< 1/4 median (default)": 0.25}
    shares["< 1/2 median"] = 0.5
    for label, kw in regimes.items():
        for runs in (5, 10, 20):
            df = simulate_interference(
                benchmarks=n, runs=runs, iterations=30, seed=seed, categorical=True, **kw
            )
            df = truncated(df, 0.3, 5, seed + 1)
            results = {}
            for name, share in shares.items():
                r = compare(df, min_run_pairs=share)
                results[f"leave out {name}" if share else name] = pd.DataFrame(
                    {
                        "est": np.log1p(r["change"]),
                        "lo": np.log1p(r["ci_low"]),
                        "hi": np.log1p(r["ci_high"]),
                    }
                )
            p = pair(df)
            for scheme in ("pairs", "inverse variance"):
                results[f"weights: {scheme}"] = weighted(p, scheme)
            for name, e in results.items():
                rows.append(
                    dict(
                        noise=label,
                        runs=runs,
                        scheme=name,
                        false_alarms=100 * np.mean((e["lo"] > 0) | (e["hi"] < 0)),
                        rmse=100 * np.sqrt(np.mean(e["est"] ** 2)),
                        width=100 * np.median(e["hi"] - e["lo"]),
                    )
                )
    return pd.DataFrame(rows)


def run_stat_table(n: int, seed: int) -> pd.DataFrame:
    """Bias, spread and coverage of ``median`` and ``means`` per period, interference,
    method and ratio."""
    rows = []
    for period in (50e6, 5e6):
        for label, shared in INTERFERENCE.items():
            df = simulate_interference(
                ratio=(1.0, 1.5, 2.0, 3.0), benchmarks=n, methods=("aduet", "sduet", "seqn"),
                runs=10, iterations=30, shared=shared, period_ns=period, seed=seed,
                categorical=True,
            )  # fmt: skip
            truth = {f"bench{i:04d}": r for i, r in enumerate(np.repeat((1.0, 1.5, 2.0, 3.0), n))}
            for stat in ("median", "means"):
                res = compare(df, run_stat=stat)
                r = res["benchmark"].astype(str).map(truth).to_numpy(dtype=float)
                err = np.log1p(res["change"].to_numpy(dtype=float)) - np.log(r)
                cover = (res["ci_low"] <= r - 1) & (r - 1 <= res["ci_high"])
                g = pd.DataFrame(
                    {"method": res["method"].astype(str), "r": r, "err": err, "cover": cover}
                )
                for (method, ratio), d in g.groupby(["method", "r"]):
                    rows.append(
                        dict(
                            period_ms=period / 1e6,
                            interference=label,
                            method=method,
                            ratio=ratio,
                            stat=stat,
                            bias=100 * np.expm1(d["err"].mean()),
                            sd=100 * d["err"].std(),
                            coverage=100 * d["cover"].mean(),
                        )
                    )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer experiments")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    n_bias, n_aa = (30, 200) if args.quick else (100, 800)
    t0 = time.perf_counter()
    b = bias_table(n_bias, args.seed)
    print(
        f"## Bias of the aduet ratio estimate ({n_bias} experiments per cell, seed {args.seed})\n"
    )
    wide = b.pivot_table(index=["interference", "ratio"], columns="rate", values=["bias", "sd"])
    print(
        "| interference | true B/A | bias, shorter (default) | bias, thesis | SD, shorter | SD, thesis | pairs/run, shorter | pairs/run, thesis | no data, thesis |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (inter, ratio), row in wide.iterrows():
        sel = b[(b["interference"] == inter) & (b["ratio"] == ratio)].set_index("rate")
        print(
            f"| {inter} | {ratio:g} | {row[('bias', 'shorter')]:+.2f} % | {row[('bias', 'thesis')]:+.2f} % | "
            f"{row[('sd', 'shorter')]:.2f} % | {row[('sd', 'thesis')]:.2f} % | "
            f"{sel.loc['shorter', 'pairs_per_run']:.0f} | {sel.loc['thesis', 'pairs_per_run']:.0f} | "
            f"{sel.loc['thesis', 'no_data']:.0f} % |"
        )
    f = few_pairs_table(n_aa, args.seed)
    print(
        f"\n## Runs with few pairs: A/A, a side of 30 % of the runs stopped after 1-5 iterations ({n_aa} experiments)\n"
    )
    print(
        "| noise | runs | runs counted | false alarms (nominal 5 %) | RMSE of estimate | median CI width |"
    )
    print("|---|---|---|---|---|---|")
    for _, r in f.iterrows():
        print(
            f"| {r['noise']} | {r['runs']} | {r['scheme']} | {r['false_alarms']:.1f} % | "
            f"{r['rmse']:.2f} % | {r['width']:.2f} % |"
        )
    s = run_stat_table(max(10, n_bias // 2), args.seed)
    print(
        "\n## Run statistics: bias / SD / coverage of 95 % intervals, median against means "
        f"({max(10, n_bias // 2)} experiments per cell)\n"
    )
    print("| slow periods | interference | method | true B/A | median | means |")
    print("|---|---|---|---|---|---|")
    for (period, inter, method, ratio), d in s.groupby(
        ["period_ms", "interference", "method", "ratio"], sort=False
    ):
        cells = {
            r["stat"]: f"{r['bias']:+.2f} % / {r['sd']:.2f} % / {r['coverage']:.0f} %"
            for _, r in d.iterrows()
        }
        print(
            f"| {period:g} ms | {inter} | {method} | {ratio:g} | {cells['median']} | "
            f"{cells['means']} |"
        )
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
