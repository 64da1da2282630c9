"""`duet process`: raw runs -> the iterations table; bad files are reported, not fatal."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from tests.helpers import duet_in_process, recorded_as_is, run_duet

import duetbench
from duetbench.errors import ResultFileError
from duetbench.process import process, validate_table
from duetbench.schema import CORE_COLUMNS


def test_quickstart_processes_into_the_documented_table(quickstart_results, tmp_path):
    rep = process(quickstart_results)
    df = rep.table
    assert rep.problems == []
    assert list(df.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    for col in ("run", "iteration", "start_ns", "end_ns", "duration_ns"):
        assert df[col].dtype == np.int64
    assert set(df["method"]) == {"seqn", "aduet", "sduet"}
    assert set(df["pair"]) == {"A", "B"}
    assert (df["end_ns"] - df["start_ns"] >= df["duration_ns"] - 1_000_000).all()
    plan = json.loads((quickstart_results / "experiment.json").read_text())["plan"]
    assert rep.runs_used == len(plan)
    per_side = df.groupby(["benchmark", "method", "run", "pair"]).size()
    assert (per_side == 10).all()
    duet = df[df["method"] != "seqn"]
    assert set(duet["order"]) <= {"AB", "BA"}
    assert "host_cpu_model" in df.columns and "artifact_uname" in df.columns
    # the CLI writes Parquet and CSV that load back identically
    for name in ("it.parquet", "it.csv"):
        r = duet_in_process("process", str(quickstart_results), "-o", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        back = duetbench.load(tmp_path / name)
        assert len(back) == len(df)
        assert back["duration_ns"].sum() == df["duration_ns"].sum()
    assert len(duetbench.load(quickstart_results)) == len(df)


def test_malformed_result_is_reported_and_skipped(quickstart_results, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(quickstart_results, root)
    victim = sorted((root / "runs").glob("arith-ab.aduet.*"))[0]
    csv = victim / "A" / "iterations.csv"
    text = csv.read_text().splitlines()
    csv.write_text("\n".join(text[:4]) + "\n" + text[4][:12] + "\n")  # truncated mid-row
    failed = sorted((root / "runs").glob("arith-aa.seqn.*"))[0]
    run = json.loads((failed / "run.json").read_text())
    run["status"] = "failed"
    (failed / "run.json").write_text(json.dumps(run))
    for run_dir in (victim, failed):  # as if the runs had left them so (not damage afterwards)
        recorded_as_is(root, run_dir.name)
    rep = process(root)
    assert len(rep.problems) == 1
    assert (
        str(csv) in rep.problems[0]
        and "line 5" in rep.problems[0]
        and "truncated" in rep.problems[0]
    )
    assert rep.runs_excluded == {"failed": 1}
    full = process(quickstart_results).table
    assert len(rep.table) == len(full) - 10 - 10  # the skipped side and the failed run
    r = duet_in_process("compare", str(root))
    assert r.returncode == 0, r.stderr
    assert "truncated" in r.stdout and "1 failed run" in r.stdout


# B's command: wait until A has ended two more iterations than when it began (A then
# has to go on past its own 3 as filler), see tests/test_runner.py
WAIT_FOR_TWO_OF_A = (
    "sh -c 'f=../A/iterations.csv; until [ -f $f ]; do sleep 0.01; done; n=$(wc -l < $f); "
    "while [ $(wc -l < $f) -lt $((n + 2)) ]; do sleep 0.01; done'"
)
# A harness writing 4 iterations per side; the 3rd (iteration 2) of side B failed
FAILING_ITERATION = (
    "sh -c 'echo iteration,start_ns,end_ns,exit_code > out.csv; for i in 0 1 2 3; do "
    "c=0; [ $DUET_PAIR = B ] && [ $i = 2 ] && c=1; "
    "echo $i,$((1000 * i + 1)),$((1000 * i + 500)),$c >> out.csv; done'"
)


def test_filler_and_failed_iterations_are_excluded_with_counts(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(f"""
experiment: {{name: f, repetitions: {{aduet: 1}}}}
benchmarks:
  uneven:
    iterations: 3
    busy_shorter_side: true
    A: {{command: "sleep 0.01"}}
    B: {{command: "{WAIT_FOR_TWO_OF_A}"}}
  failing:
    harness: generic
    results: [out.csv]
    command: "{FAILING_ITERATION}"
""")
    assert run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare").returncode == 0
    raw = pd.read_csv(tmp_path / "res" / "f" / "runs" / "uneven.aduet.000" / "A" / "iterations.csv")
    fillers = int(raw["filler"].sum())
    assert fillers >= 3  # B's 3 iterations needed 6 of A's
    rep = process(tmp_path / "res" / "f")
    assert rep.runs_excluded == {}
    assert rep.iterations_excluded == {"filler": fillers, "failed": 1}
    t = rep.table
    assert (t[t.benchmark == "uneven"].groupby("pair").size() == 3).all()
    failing = t[t.benchmark == "failing"].sort_values(["pair", "start_ns"])
    # B's failed iteration 2 is gone (its start 2001); the rest are numbered 0.. again
    assert failing.groupby("pair")["start_ns"].apply(list).to_dict() == {
        "A": [1, 1001, 2001, 3001],
        "B": [1, 1001, 3001],
    }
    assert failing.groupby("pair")["iteration"].apply(list).to_dict() == {
        "A": [0, 1, 2, 3],
        "B": [0, 1, 2],
    }


def test_table_from_another_tool():
    df = pd.DataFrame(
        {
            "benchmark": ["x"] * 4,
            "method": ["sduet"] * 4,
            "run": [0, 0, 0, 0],
            "pair": ["A", "A", "B", "B"],
            "iteration": [0, 1, 0, 1],
            "duration_ns": [100, 110, 120, 130],
        }
    )
    out = validate_table(df)
    assert out["synthetic_ts"].all()
    assert out.loc[out.pair == "A", "end_ns"].tolist() == [100, 210]
    with pytest.raises(ResultFileError, match="method"):
        validate_table(df.assign(method="parallel"))
    with pytest.raises(ResultFileError, match="missing column"):
        validate_table(df.drop(columns=["pair"]))


# Iterations 0-2 of each side end at once; the 4th (and every later) call hangs, so
# exactly 3 iterations are finished when the timeout stops the run (the count of calls
# is per side: each side runs in its own directory)
THREE_THEN_HANG = (
    "sh -c 'n=$(cat calls 2>/dev/null || echo 0); echo $((n + 1)) > calls; "
    "[ $n -lt 3 ] || exec sleep 3600'"
)


def test_timed_out_run_keeps_its_finished_iterations(tmp_path):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(f"""
experiment: {{name: to, repetitions: {{aduet: 1}}, kill_grace: 1s}}
benchmarks:
  long:
    iterations: 50
    timeout: 10s
    command: "{THREE_THEN_HANG}"
""")
    assert (
        run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare").returncode == 4
    )  # a timed-out run: exit 4 (README, "Exit status")
    rep = process(tmp_path / "res" / "to")
    assert rep.runs_partial == 1 and rep.runs_excluded == {}
    # the finished iterations are kept, the one killed by the timeout is not in the table
    assert rep.table.groupby("pair")["iteration"].apply(list).to_dict() == {
        "A": [0, 1, 2],
        "B": [0, 1, 2],
    }


def test_half_warmup_is_per_workload_and_reserved_columns_survive():
    from duetbench.process import _warmup_mask

    df = pd.DataFrame({"workload": ["x"] * 4 + ["y"] * 3, "iteration": [0, 1, 2, 3, 0, 1, 2]})
    assert _warmup_mask(df, "half").tolist() == [True, True, False, False, True, False, False]
    assert _warmup_mask(df.drop(columns="workload").assign(iteration=range(7)), 2).sum() == 2


def test_table_from_another_tool_reports_the_bad_cell(tmp_path):
    """Bad cells are named by CSV line (or Parquet row), with what to change."""
    df = pd.DataFrame(
        {
            "benchmark": "b",
            "method": "seqn",
            "run": [0, 0, 0, 0],
            "pair": ["A", "A", "B", "B"],
            "iteration": [0, 1, 0, 1],
            "start_ns": [0, 200, 400, 600],
            "end_ns": [100, 310, 520, 730],
        }
    )
    csv = tmp_path / "t.csv"
    df.assign(run=["0", "0", "x", "0"]).to_csv(csv, index=False)
    with pytest.raises(
        ResultFileError, match=r"column 'run' must hold integers, but line 4 has 'x'"
    ):
        duetbench.load(csv)
    df.assign(end_ns=[100, None, 520, 730]).to_csv(csv, index=False)
    with pytest.raises(ResultFileError, match=r"line 3 has an empty cell .*nanoseconds"):
        duetbench.load(csv)
    df.assign(end_ns=[100, 310, 350, 730]).to_csv(csv, index=False)
    with pytest.raises(ResultFileError, match=r"line 4 has a negative duration \(-50 ns\)"):
        duetbench.load(csv)
    secs = df.drop(columns=["start_ns", "end_ns"]).assign(duration_ns=[0.1, 0.11, 0.12, 0.13])
    pq = tmp_path / "t.parquet"
    secs.to_parquet(pq)
    with pytest.raises(ResultFileError, match=r"row 0 has '0.1' \(4 row\(s\).*seconds x 1e9"):
        duetbench.load(pq)
    # whole numbers stored as floats (a column with gaps elsewhere) are accepted
    df.assign(iteration=[0.0, 1.0, 0.0, 1.0]).to_parquet(pq)
    assert duetbench.load(pq)["iteration"].tolist() == [0, 1, 0, 1]
