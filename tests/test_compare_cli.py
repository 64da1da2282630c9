"""`duet compare`: the verdict table, its JSON schema, Markdown, exit codes."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import numpy as np
import pandas as pd
import pytest
from tests.conftest import run_duet

from duetbench.analysis.compare import RUN_STATS


def synthetic_table(
    slowdown: float, seed: int = 1, runs: int = 10, iters: int = 20
) -> pd.DataFrame:
    """sduet-shaped data: shared run effects, 1 % iteration noise, B slower by ``slowdown``."""
    rng = np.random.default_rng(seed)
    rows = []
    for method in ("seqn", "sduet"):
        for r in range(runs):
            shared = 1 + rng.normal(0, 0.02)
            for pair, factor in (("A", 1.0), ("B", 1.0 + slowdown)):
                run_eff = shared if method == "sduet" else 1 + rng.normal(0, 0.02)
                t = 1_700_000_000_000_000_000 + r * 10_000_000_000
                for i in range(iters):
                    d = int(100e6 * factor * run_eff * (1 + rng.normal(0, 0.01)))
                    rows.append(
                        dict(
                            benchmark="b",
                            method=method,
                            run=r,
                            pair=pair,
                            iteration=i,
                            start_ns=t,
                            end_ns=t + d,
                            duration_ns=d,
                        )
                    )
                    t += d + 1000
    return pd.DataFrame(rows)


def test_quickstart_compare_table_json_markdown(quickstart_results, tmp_path):
    r = run_duet("compare", str(quickstart_results))
    assert r.returncode == 0, r.stderr
    for word in ("arith-aa", "arith-ab", "seqn", "aduet", "sduet", "verdict"):
        assert word in r.stdout
    r = run_duet("compare", str(quickstart_results), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    schema = json.loads(files("duetbench").joinpath("data/compare.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert {(row["benchmark"], row["method"]) for row in doc["rows"]} == {
        (b, m) for b in ("arith-aa", "arith-ab") for m in ("seqn", "aduet", "sduet")
    }
    for row in doc["rows"]:
        # 5 runs each; an aduet run may lose every pair above m = 0.4 on a loaded machine
        assert (row["runs"] == 5 or row["method"] == "aduet" and row["runs"] >= 3) and row[
            "pairs"
        ] > 0, row
        assert row["ci_low"] <= row["change"] <= row["ci_high"]
    md = run_duet(
        "compare", str(quickstart_results), "--format", "markdown", "-o", str(tmp_path / "s.md")
    )
    assert md.returncode == 0
    text = (tmp_path / "s.md").read_text()
    assert text.count("\n| arith-") == 6 and "| benchmark |" in text


def test_fail_on_regression_and_threshold(tmp_path):
    slow = tmp_path / "slow.csv"
    synthetic_table(0.05).to_csv(slow, index=False)
    r = run_duet("compare", str(slow), "--fail-on-regression", "--format", "json")
    assert r.returncode == 1
    rows = {row["method"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["sduet"]["verdict"] == "slower"
    assert 0.04 < rows["sduet"]["change"] < 0.06
    # a 5 % change is below a 10 % practical threshold
    r = run_duet(
        "compare", str(slow), "--threshold", "10%", "--format", "json", "--fail-on-regression"
    )
    assert r.returncode == 0
    assert json.loads(r.stdout)["rows"][1]["verdict"] == "same (below threshold)"
    same = tmp_path / "same.parquet"
    synthetic_table(0.0, seed=5).to_parquet(same)
    r = run_duet("compare", str(same), "--fail-on-regression", "--format", "json")
    assert r.returncode == 0, r.stdout
    assert {row["verdict"] for row in json.loads(r.stdout)["rows"]} == {"same"}


def test_test_and_interval_options_and_reproducibility(tmp_path):
    t = tmp_path / "t.csv"
    synthetic_table(0.03, seed=2).to_csv(t, index=False)
    out = {}
    for test in ("ratio", "diff", "utest"):
        for interval in ("t", "bca", "percentile", "studentized"):
            r = run_duet(
                "compare",
                str(t),
                "--test",
                test,
                "--interval",
                interval,
                "--format",
                "json",
                "--resamples",
                "999",
                "--seed",
                "7",
            )
            assert r.returncode == 0, r.stderr
            out[test, interval] = json.loads(r.stdout)["rows"]
    assert out["utest", "t"][1]["verdict"] == "slower"
    again = run_duet(
        "compare",
        str(t),
        "--test",
        "diff",
        "--interval",
        "bca",
        "--format",
        "json",
        "--resamples",
        "999",
        "--seed",
        "7",
    )
    assert json.loads(again.stdout)["rows"] == out["diff", "bca"]


def test_u_tests_and_pairing_options_on_the_command_line(tmp_path):
    t = tmp_path / "t.csv"
    synthetic_table(0.0, seed=4).to_csv(t, index=False)
    schema = json.loads(files("duetbench").joinpath("data/compare.schema.json").read_text())
    r = run_duet("compare", str(t), "--test", "utest-pooled", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema)
    assert doc["settings"]["test"] == "utest-pooled"
    assert all(row["calibrated"] is False for row in doc["rows"])  # labelled
    assert all(row["rank_p_value"] is not None for row in doc["rows"])
    r = run_duet("compare", str(t), "--test", "utest-pooled", "--format", "markdown")
    assert "utest-pooled test (not calibrated" in r.stdout
    r = run_duet(
        "compare", str(t), "--test", "utest", "--overlap-rate", "thesis", "--min-run-pairs", "0",
        "--format", "json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema)
    assert doc["settings"]["overlap_rate"] == "thesis" and doc["settings"]["min_run_pairs"] == 0
    assert all(row["calibrated"] and row["verdict"] == "same" for row in doc["rows"])
    r = run_duet("compare", str(t), "--min-run-pairs", "2")
    assert r.returncode == 2 and "--min-run-pairs" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("run_stat", RUN_STATS)
def test_every_run_statistic_is_offered_and_valid_json(tmp_path, run_stat):
    t = tmp_path / "t.csv"
    synthetic_table(0.03, seed=3).to_csv(t, index=False)
    r = run_duet("compare", str(t), "--run-stat", run_stat, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    schema = json.loads(files("duetbench").joinpath("data/compare.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["settings"]["run_stat"] == run_stat
    sduet = next(row for row in doc["rows"] if row["method"] == "sduet")
    assert sduet["verdict"] == "slower" and sduet["change"] == pytest.approx(0.03, abs=0.006)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--confidence", "95"], "between 0 and 1"),
        (["--threshold", "lots"], "--threshold"),
        (["--warmup", "some"], "--warmup"),
    ],
)
def test_bad_options_exit_2(tmp_path, args, words):
    t = tmp_path / "t.csv"
    synthetic_table(0.0).to_csv(t, index=False)
    r = run_duet("compare", str(t), *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_bad_table_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("benchmark,method\nx,seqn\n")
    r = run_duet("compare", str(bad))
    assert r.returncode == 2 and "missing column" in r.stderr and "bad.csv" in r.stderr
    r = run_duet("compare", str(tmp_path / "nothere"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_runs_without_pairs_are_reported():
    from duetbench.report.tables import lost_run_notes

    table = pd.DataFrame(
        {"suite": ["s"] * 4, "benchmark": ["b"] * 4, "method": ["aduet"] * 4, "run": [0, 1, 2, 3]}
    )
    rows = pd.DataFrame([{"suite": "s", "benchmark": "b", "method": "aduet", "runs": 3}])
    (note,) = lost_run_notes(rows, table, 0.4)
    assert "1 of 4 runs" in note and "m = 0.4" in note
    assert lost_run_notes(rows.assign(runs=4), table, 0.4) == []


def test_runs_left_out_for_few_pairs_are_named_in_the_note():
    from duetbench.report.tables import lost_run_notes

    table = pd.DataFrame(
        {"suite": ["s"] * 8, "benchmark": ["b"] * 8, "method": ["sduet"] * 8, "run": range(8)}
    )
    rows = pd.DataFrame(
        [{"suite": "s", "benchmark": "b", "method": "sduet", "runs": 6, "runs_few_pairs": 2}]
    )
    (note,) = lost_run_notes(rows, table, 0.4)
    assert "2 of 8 runs" in note and "--min-run-pairs" in note


def test_the_p_column_goes_with_the_verdicts_test():
    from duetbench.report.tables import VERDICT_COLUMNS, verdict_rows

    row = dict(benchmark="b", method="seqn", p_value=0.0001, rank_p_value=0.25, verdict="same")
    col = next(c for c in VERDICT_COLUMNS if c.title == "p (rank)")

    def p_cell(test: str) -> str:
        (r,) = verdict_rows(pd.DataFrame([row]), test)
        return col.format(r[col.key])

    assert p_cell("ratio") == "0.25"
    assert p_cell("utest") == "0.25"
    assert p_cell("utest-pooled") == "<0.001"  # title: not calibrated
