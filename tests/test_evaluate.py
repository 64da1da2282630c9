"""`duet evaluate`: RQ1-RQ4 on data whose answers are known, the CLI and its JSON schema."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tests.helpers import duet_in_process

from duetbench.analysis import slow_down
from duetbench.analysis.evaluate import TABLES, evaluate
from duetbench.analysis.simulate import simulate
from duetbench.commands._options import parse_grid
from duetbench.dataset import Dataset
from duetbench.errors import DuetError
from duetbench.options import DEFAULT_MIN_OVERLAPS
from duetbench.report.json_docs import JSON_SCHEMA, evaluate_doc

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
N_IT = 10  # iterations per side and run
STARTUP = 50 * MS  # process start-up before the first and after the last iteration
PERIOD = 150 * MS  # an iteration starts every PERIOD on each side
D_A = 100 * MS  # every iteration of A
OFFSET = 25 * MS  # aduet: B's iterations start this much after A's
#: per benchmark, B / A of every run (all iterations of a run have the same ratio)
Q = {
    "aa1": [1.00, 1.02, 0.98, 1.01, 0.99, 1.00],  # no change: judged same
    "aa2": [1.05, 1.06, 1.04, 1.05, 1.05, 1.06],  # a false alarm: judged slower
}
METHODS = ("seqn", "aduet", "sduet")


def d_b(q: float) -> int:
    return round(q * D_A)


def _side(
    bench: str, method: str, run: int, pair: str, starts: list[int], dur: int, proc: tuple[int, int]
) -> list[dict]:
    return [
        dict(
            experiment="known", host="h1", suite="s", benchmark=bench, method=method, run=run,
            pair=pair, order="AB" if method != "seqn" else pair, iteration=k, start_ns=s,
            end_ns=s + dur, duration_ns=dur, proc_start_ns=proc[0], proc_end_ns=proc[1],
        )
        for k, s in enumerate(starts)
    ]  # fmt: skip


def known_table() -> pd.DataFrame:
    """A/A experiment with exactly known process lifetimes, overlaps and run-level ratios.

    seqn: A's process, then B's. aduet: both processes start together; A's iterations
    start every PERIOD after STARTUP, B's OFFSET later, so A_k overlaps B_k only, by
    D_A - OFFSET = 75 ms. sduet: A_k and B_k start together.
    """
    rows: list[dict] = []
    t = T0
    for bench, qs in Q.items():
        for method in METHODS:
            for r, q in enumerate(qs):
                db = d_b(q)
                first = t + STARTUP
                grid = [first + k * PERIOD for k in range(N_IT)]
                a_end = grid[-1] + D_A + STARTUP
                if method == "seqn":
                    rows += _side(bench, method, r, "A", grid, D_A, (t, a_end))
                    tb = a_end + 1_000 * MS
                    b_grid = [g - t + tb for g in grid]
                    rows += _side(
                        bench, method, r, "B", b_grid, db, (tb, b_grid[-1] + db + STARTUP)
                    )
                elif method == "aduet":
                    rows += _side(bench, method, r, "A", grid, D_A, (t, a_end))
                    b_grid = [g + OFFSET for g in grid]
                    rows += _side(bench, method, r, "B", b_grid, db, (t, b_grid[-1] + db + STARTUP))
                else:
                    rows += _side(bench, method, r, "A", grid, D_A, (t, a_end))
                    rows += _side(bench, method, r, "B", grid, db, (t, grid[-1] + db + STARTUP))
                t += 10_000 * MS
    return pd.DataFrame(rows)


def pick(df: pd.DataFrame, **eq: object) -> pd.DataFrame:
    """Rows whose columns equal the given values."""
    mask = np.ones(len(df), dtype=bool)
    for col, val in eq.items():
        mask &= (df[col] == val).to_numpy()
    return df.loc[mask]


def t_ci(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    m = float(np.mean(x))
    h = float(stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x)))
    return m, m - h, m + h


@pytest.fixture(scope="module")
def known() -> tuple[pd.DataFrame, object]:
    df = known_table()
    return df, evaluate(df, aa=True, seed=3)


def test_speedup_is_exactly_the_process_lifetimes(known) -> None:
    _, ev = known
    assert set(ev.speedup["method"]) == {"aduet", "sduet"}
    span = (N_IT - 1) * PERIOD + 2 * STARTUP
    for bench, qs in Q.items():
        dbs = np.array([d_b(q) for q in qs], dtype=float)
        seqn = np.mean((span + D_A) + (span + dbs))
        duet = {
            "aduet": np.mean(span + OFFSET + dbs),
            "sduet": np.mean(span + np.maximum(D_A, dbs)),
        }
        for method, cost in duet.items():
            row = pick(ev.speedup, benchmark=bench, method=method).iloc[0]
            assert row["seqn_cost_ns"] == pytest.approx(seqn, rel=1e-12)
            assert row["duet_cost_ns"] == pytest.approx(cost, rel=1e-12)
            assert row["speedup"] == pytest.approx(seqn / cost, rel=1e-12)
            assert (row["seqn_runs"], row["duet_runs"]) == (6, 6)


def test_relative_overlap_time_is_exact_for_every_m(known) -> None:
    _, ev = known
    assert sorted(ev.overlap["min_overlap"].unique()) == list(DEFAULT_MIN_OVERLAPS)
    for bench, qs in Q.items():
        dbs = np.array([d_b(q) for q in qs], dtype=float)
        # A_k overlaps B_k by 75 ms (rate 75 / max(100, d_B) in (0.70, 0.75]); nothing else
        full = 2 * (D_A - OFFSET) * N_IT * len(qs) / (N_IT * (len(qs) * D_A + dbs.sum()))
        g = ev.overlap.loc[ev.overlap["benchmark"] == bench].set_index("min_overlap")
        for m in DEFAULT_MIN_OVERLAPS:
            want = full if m < 0.7 + 1e-9 else 0.0
            assert g.loc[m, "relative_overlap_time"] == pytest.approx(want, rel=1e-12, abs=1e-15)
            assert g.loc[m, "pairs"] == (N_IT * len(qs) if want else 0)


def test_tests_and_relative_ci_widths_match_the_t_interval(known) -> None:
    _, ev = known
    for bench, qs in Q.items():
        dbs = np.array([d_b(q) for q in qs], dtype=float)
        m, lo, hi = t_ci(np.log(dbs / D_A))
        md, lod, hid = t_ci(dbs - D_A)
        for method in METHODS:
            rows = pick(ev.tests, benchmark=bench, method=method).set_index("test")
            r = rows.loc["ratio"]
            assert r["change"] == pytest.approx(np.expm1(m), abs=1e-12)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx(
                (np.expm1(lo), np.expm1(hi)), abs=1e-12
            )
            assert r["ci_width"] == pytest.approx(np.expm1(hi) - np.expm1(lo), abs=1e-12)
            d = rows.loc["diff"]
            assert d["change"] == pytest.approx(md / D_A, abs=1e-12)
            assert d["ci_width"] == pytest.approx((hid - lod) / D_A, abs=1e-12)
            want = "no change detected" if bench == "aa1" else "slower"
            assert list(rows.loc[["ratio", "diff", "utest"], "verdict"]) == [want] * 3
            assert r["runs"] == 6 and r["pairs"] == 6 * N_IT


def test_aa_share_per_method_test_and_m(known) -> None:
    _, ev = known
    assert ev.aa_benchmarks == ("aa1", "aa2")
    assert len(ev.aa) == 12  # 3 methods x 4 tests (ratio, diff, utest, utest-pooled)
    assert (ev.aa["benchmarks"] == 2).all() and (ev.aa["same"] == 1).all()
    assert (ev.aa["slower"] == 1).all() and (ev.aa["share_same"] == 0.5).all()
    ab = ev.aa_by_overlap
    assert set(ab["method"]) == {"aduet"} and set(ab["test"]) == {"ratio", "diff"}
    # m up to 0.7 keeps every pair; above, no pair is left, so no benchmark is judged
    assert sorted(ab["min_overlap"].unique()) == [
        m for m in DEFAULT_MIN_OVERLAPS if m <= 0.7 + 1e-9
    ]
    assert (ab["share_same"] == 0.5).all()
    # only the benchmarks named A/A count
    ev1 = evaluate(known_table(), aa=["aa1"], slowdowns=[0.0], min_overlaps=[0.4])
    assert ev1.aa_benchmarks == ("aa1",)
    assert (ev1.aa["share_same"] == 1.0).all() and (ev1.aa["benchmarks"] == 1).all()
    assert ev1.tests.set_index("benchmark")["aa"].to_dict() == {"aa1": True, "aa2": False}


def test_mds_of_the_known_data(known) -> None:
    _, ev = known
    grid = np.round(np.arange(16) / 100, 10)
    for bench, qs in Q.items():
        x = np.log(np.array([d_b(q) for q in qs], dtype=float) / D_A)
        m, lo, _ = t_ci(x)
        half = m - lo
        # slowing B by s adds log(1 + s) to every run's log ratio; detected when lo > 0
        detected = [m + np.log1p(s) - half > 0 for s in grid]
        assert all(abs(m + np.log1p(s) - half) > 1e-4 for s in grid)  # no borderline s
        want = next(s for i, s in enumerate(grid) if all(detected[i:]))
        for method in METHODS:
            row = pick(ev.mds, benchmark=bench, method=method, test="ratio")
            assert row["mds"].item() == pytest.approx(want)
            assert row["detected"].item() == sum(detected)
    assert ev.mds.query("benchmark == 'aa1' and test == 'ratio'")["mds"].tolist() == [0.02] * 3
    assert ev.mds.query("benchmark == 'aa2'")["mds"].tolist() == [0.0] * 12
    # the curve: share of A/A benchmarks detected slower per s
    c = ev.mds_curve.query("method == 'sduet' and test == 'ratio'").set_index("slowdown")
    assert c.loc[0.0, "share_slower"] == 0.5 and c.loc[0.01, "share_slower"] == 0.5
    assert c.loc[0.02, "share_slower"] == 1.0 and c.loc[0.15, "share_slower"] == 1.0
    # the change at s follows the slowdown
    d = ev.mds_detail.query("benchmark == 'aa1' and method == 'aduet' and test == 'ratio'")
    ch = d.set_index("slowdown")["change"]
    x = np.log(np.array([d_b(q) for q in Q["aa1"]], dtype=float) / D_A)
    assert ch.loc[0.05] == pytest.approx(np.expm1(x.mean() + np.log(1.05)), abs=1e-6)


def aduet_example(runs: int = 2) -> pd.DataFrame:
    """Hand-worked: A [0,100] [100,200] [200,300]; B [0,100] [110,210] [220,320] (ms)."""
    rows = []
    for r in range(runs):
        base = T0 + r * 10_000 * MS
        for pair, spans in (
            ("A", [(0, 100), (100, 200), (200, 300)]),
            ("B", [(0, 100), (110, 210), (220, 320)]),
        ):
            for k, (s, e) in enumerate(spans):
                rows.append(
                    dict(experiment="x", host="h", suite="s", benchmark="b", method="aduet",
                         run=r, pair=pair, order="AB", iteration=k, start_ns=base + s * MS,
                         end_ns=base + e * MS, duration_ns=(e - s) * MS)
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_mds_rebuilds_b_timestamps_keeping_the_gaps() -> None:
    df = aduet_example()
    out = slow_down(df, 0.5)
    b = out.loc[(out["pair"] == "B") & (out["run"] == 0)]
    # s'_1 = s_1; e'_k = s'_k + 1.5 d_k; s'_(k+1) = e'_k + (s_(k+1) - e_k): gaps of 10 ms kept
    assert ((b["start_ns"] - T0) // MS).tolist() == [0, 160, 320]
    assert ((b["end_ns"] - T0) // MS).tolist() == [150, 310, 470]
    assert b["duration_ns"].tolist() == [150 * MS] * 3
    a = out.loc[out["pair"] == "A"]
    pd.testing.assert_frame_equal(a, df.loc[df["pair"] == "A"])
    # the evaluation pairs on the rebuilt timeline: at m = 0.4, s = 0 pairs A_k with B_k
    # (rates 1, 0.9, 0.8); at s = 0.5 (A0, B0), (A1, B0) and (A2, B1) cover more than 40 %
    # of the shorter iteration (merely stretching B's iterations in place would keep 5)
    ev = evaluate(df, aa=True, slowdowns=[0.0, 0.5], min_overlaps=[0.4], shuffles=1)
    d = ev.mds_detail.query("method == 'aduet' and test == 'ratio'").set_index("slowdown")
    assert d.loc[0.0, "pairs"] == 6 and d.loc[0.5, "pairs"] == 6
    assert d.loc[0.5, "change"] == pytest.approx(0.5, abs=1e-6)
    # the thesis's rate: only (A0, B0) and (A2, B1) overlap both by more than 40 %
    ev = evaluate(
        df, aa=True, slowdowns=[0.0, 0.5], min_overlaps=[0.4], shuffles=1, overlap_rate="thesis"
    )
    d = ev.mds_detail.query("method == 'aduet' and test == 'ratio'").set_index("slowdown")
    assert d.loc[0.0, "pairs"] == 6 and d.loc[0.5, "pairs"] == 4


def test_mds_finds_a_known_five_percent_slowdown() -> None:
    common = dict(benchmarks=3, runs=10, iterations=20, run_sd=0.01, iter_sd=0.01, seed=11)
    slowed = simulate(slowdown=0.05, **common)
    ev = evaluate(slowed, aa=False, min_overlaps=[0.4], shuffles=2)
    ratio = ev.tests.loc[ev.tests["test"] == "ratio"]
    assert (ratio["verdict"] == "slower").all()
    assert ratio["change"].between(0.03, 0.07).all()
    assert (ev.mds.loc[ev.mds["test"] == "ratio", "mds"] <= 0.05).all()
    # the same experiment without the slowdown: adding 5 % is detected by the duets
    ev0 = evaluate(simulate(**common), aa=True, min_overlaps=[0.4], shuffles=2)
    duet = ev0.mds.query("test == 'ratio' and method != 'seqn'")
    assert len(duet) == 6 and (duet["mds"] <= 0.05).all()
    c = ev0.mds_curve.query("test == 'ratio' and slowdown == 0.05")
    assert (c.loc[c["method"] != "seqn", "share_slower"] == 1.0).all()


def test_shuffle_check_and_cv_are_reported() -> None:
    df = simulate(benchmarks=2, runs=8, iterations=15, run_sd=0.05, shared_sd=0.03, seed=5)
    ev = evaluate(df, min_overlaps=[0.4], slowdowns=[0.0, 0.05], shuffles=5)
    sh = ev.shuffle.query("test == 'ratio'")
    assert len(sh) == 6 and (sh["runs"] == 8).all()
    # duets share the run effect and the interference: shuffling widens their interval
    assert (sh.loc[sh["method"] != "seqn", "width_ratio"] > 1.5).all()
    assert set(ev.cv["pair"]) == {"A", "B"} and (ev.cv["cv"] > 0).all()


def test_json_document_follows_its_schema(known) -> None:
    df, ev = known
    doc = json.loads(json.dumps(evaluate_doc(ev, Dataset(df, "mem", "known"))))
    jsonschema.validate(doc, JSON_SCHEMA)
    assert set(doc["tables"]) == set(TABLES)
    assert doc["aa_benchmarks"] == ["aa1", "aa2"]
    assert len(doc["settings"]["slowdowns"]) == 16
    # NaN becomes null
    assert any(r["ci_low"] is None for r in doc["tables"]["tests"] if r["test"] == "utest")


def test_warmup_from_the_config_column_is_dropped() -> None:
    df = known_table()
    df["warmup"] = df["iteration"] < 2
    ev = evaluate(df, aa=True, slowdowns=[0.0], min_overlaps=[0.4])
    assert (ev.cv["iterations"] == 6 * (N_IT - 2)).all()
    ev2 = evaluate(df, aa=True, slowdowns=[0.0], min_overlaps=[0.4], warmup=0)
    assert (ev2.cv["iterations"] == 6 * N_IT).all()
    # the speedup uses the raw process lifetimes either way
    assert ev.speedup["speedup"].tolist() == ev2.speedup["speedup"].tolist()


def test_parse_grid() -> None:
    assert parse_grid("0:15:1", percent=True, what="x") == tuple(np.round(np.arange(16) / 100, 10))
    assert parse_grid("0.1:0.9:0.1", percent=False, what="x") == tuple(
        np.round(np.arange(1, 10) / 10, 10)
    )
    assert parse_grid("0,2,5%", percent=True, what="x") == (0.0, 0.02, 0.05)
    for bad in ("a:b", "5:1:1", "0:1:0", ""):
        with pytest.raises(DuetError):
            parse_grid(bad, percent=True, what="--slowdowns")


def test_duet_evaluate_cli_on_the_quickstart(quickstart_results, tmp_path) -> None:
    r = duet_in_process("evaluate", str(quickstart_results))
    assert r.returncode == 0, r.stderr
    for word in ("RQ1", "RQ2", "RQ3", "RQ4", "Shuffle check", "arith-aa", "arith-ab", "A/A"):
        assert word in r.stdout
    # every run, unbalanced ones too (what this test checks is the tables, not the load)
    r = duet_in_process(
        "evaluate", str(quickstart_results), "--format", "json", "--keep-unbalanced",
        "--slowdowns", "0:15:1", "--min-overlap", "0.1:0.9:0.1",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, JSON_SCHEMA)
    assert doc["experiment"] == "quickstart"
    assert doc["aa_benchmarks"] == ["arith-aa"]  # no B side in duet.yml
    assert doc["settings"]["slowdowns"] == pytest.approx([s / 100 for s in range(16)])
    assert doc["settings"]["min_overlaps"] == pytest.approx([m / 10 for m in range(1, 10)])
    t = doc["tables"]
    assert {(r["benchmark"], r["method"]) for r in t["speedup"]} == {
        (b, m) for b in ("arith-aa", "arith-ab") for m in ("aduet", "sduet")
    }
    # measured data: how large the speedup comes out depends on the machine's load (2.0
    # is the limit only in expectation), so it is recomputed from the process lifetimes
    # of the table instead (thesis eq. 5.1): seqn cost = A's + B's, duet cost = latest
    # end - earliest start, each averaged over the repetitions
    from duetbench.process import process

    life = (
        process(quickstart_results)
        .table.groupby(["benchmark", "method", "run", "pair"])[["proc_start_ns", "proc_end_ns"]]
        .first()
        .reset_index()
    )
    life["span"] = life["proc_end_ns"] - life["proc_start_ns"]
    for r in t["speedup"]:
        runs = life[life.benchmark == r["benchmark"]]
        seqn = runs[runs.method == "seqn"].groupby("run")["span"].sum().mean()
        duet = runs[runs.method == r["method"]].groupby("run")
        cost = (duet["proc_end_ns"].max() - duet["proc_start_ns"].min()).mean()
        assert r["seqn_cost_ns"] == pytest.approx(seqn, rel=1e-9)
        assert r["duet_cost_ns"] == pytest.approx(cost, rel=1e-9)
        assert r["speedup"] == pytest.approx(seqn / cost, rel=1e-9) and r["speedup"] > 0
        assert (r["seqn_runs"], r["duet_runs"]) == (5, 5)
    assert sorted({r["min_overlap"] for r in t["overlap"]}) == pytest.approx(
        [m / 10 for m in range(1, 10)]
    )
    assert all(0 <= r["relative_overlap_time"] <= 1 for r in t["overlap"])
    assert {(r["method"], r["test"]) for r in t["aa"]} == {
        (m, x)
        for m in ("seqn", "aduet", "sduet")
        for x in ("ratio", "diff", "utest", "utest-pooled")
    }
    assert len(t["mds"]) == 2 * 3 * 4  # benchmarks x methods x tests
    # an iterations table: A/A only when the user says so
    table = tmp_path / "it.parquet"
    assert duet_in_process("process", str(quickstart_results), "-o", str(table)).returncode == 0
    r = duet_in_process(
        "evaluate", str(table), "--format", "json", "--aa", "arith-aa", "--slowdowns", "0,5,10"
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["aa_benchmarks"] == ["arith-aa"]
    assert sorted({r["slowdown"] for r in doc["tables"]["mds_detail"]}) == pytest.approx(
        [0, 0.05, 0.1]
    )
    r = duet_in_process("evaluate", str(table), "--aa", "nope")
    assert r.returncode == 2 and "nope" in r.stderr
