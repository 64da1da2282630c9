"""Wall time or CPU time: the measure the analysis compares beside other work, so that a
busy machine still gets the right answer (docs/statistics.md, "Beside other work: CPU
time").

Hand-built tables with known truth: each side's work is a known CPU time; other work
stretches the wall time by the side's share of a CPU, different for A and B in each run
(what a busy process on a 2-CPU host does), and the run delay fills the rest of the wall
time of a side that computes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import compare
from duetbench.analysis.measure_choice import LOADED_CPUS

TRUE_RATIO = 2.0


def table(
    *,
    other: float = 0.8,
    shares: tuple[float, float] | None = None,
    runs: int = 6,
    iterations: int = 8,
    method: str = "aduet",
    waits: float = 0.0,
    per_run_only: bool = False,
    runq: bool = True,
    parallel: float = 1.0,
    seed: int = 1,
) -> pd.DataFrame:
    """A duet of A (10 ms of CPU per iteration) and B (TRUE_RATIO x). Per run each side gets
    a share of a CPU (drawn, unequal unless ``shares``); its wall time is CPU / share, plus
    ``waits`` x CPU of sleeping (not CPU-bound when large). ``parallel``: CPU time / the
    time it would take on one CPU (a side using threads)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(runs):
        share = shares or tuple(rng.uniform(0.35, 0.95, size=2))
        t0 = 1_000_000_000 * (r + 1)
        for side, base, s in (("A", 10e6, share[0]), ("B", 10e6 * TRUE_RATIO, share[1])):
            t = t0
            cpu_s = wall_s = 0.0
            for i in range(iterations):
                work = base * (1 + rng.normal(0, 0.002))
                sleep = waits * work
                wall = work / s + sleep
                cpu = work * parallel
                rows.append(
                    dict(
                        host="h", suite="s", benchmark="b", method=method, run=r, pair=side,
                        iteration=i, start_ns=int(t), end_ns=int(t + wall), duration_ns=int(wall),
                        cpu_ns=None if per_run_only else int(cpu),
                        runq_ns=int(wall - work - sleep) if runq and not per_run_only else None,
                        other_cpus=other, other_work=other >= 0.25,
                        unbalanced=other >= LOADED_CPUS and abs(np.log(share[0] / share[1])) > 0.05,
                    )
                )  # fmt: skip
                t += wall + 1000
                cpu_s, wall_s = cpu_s + cpu, wall_s + wall
            for row in rows[-iterations:]:
                row["proc_start_ns"], row["proc_end_ns"] = int(t0), int(t)
                row["cpu_share"] = cpu_s / (int(t) - int(t0))
                row["busy_share"] = (cpu_s + (wall_s - cpu_s / parallel - waits * cpu_s)) / wall_s
    df = pd.DataFrame(rows)
    for c in ("cpu_ns", "runq_ns"):
        df[c] = pd.array(df[c], dtype="Int64")
    return df


def one(df: pd.DataFrame, **kw: object) -> dict[str, object]:
    (row,) = compare(df, **kw).to_dict("records")
    return row


def test_beside_other_work_cpu_time_gives_the_true_ratio_where_wall_time_cannot() -> None:
    df = table()
    auto = one(df)
    assert auto["measure"] == "cpu" and auto["measure_reason"] == "other-work"
    assert auto["measure_source"] == "iteration"
    assert abs(auto["change"] - (TRUE_RATIO - 1)) < 0.005
    assert auto["ci_low"] <= TRUE_RATIO - 1 <= auto["ci_high"] and auto["verdict"] == "slower"
    assert auto["runs"] == 6 and auto["runs_unbalanced"] == 0
    assert auto["runs_corrected"] == int(df.groupby("run")["unbalanced"].first().sum()) > 0
    assert auto["run_stat"] == "median"  # CPU time is not time-sliced: no `means`
    # wall time: the unbalanced runs are left out, and what is left is off
    wall = one(df, measure="wall")
    assert wall["measure"] == "wall" and wall["measure_reason"] == "asked"
    assert wall["runs_unbalanced"] == auto["runs_corrected"]
    assert wall["runs"] == 6 - wall["runs_unbalanced"]
    kept = one(df, measure="wall", keep_unbalanced=True)
    assert kept["runs"] == 6 and abs(kept["change"] - (TRUE_RATIO - 1)) > 0.05
    assert one(df, measure="cpu")["change"] == auto["change"]


def test_a_quiet_host_is_measured_as_before() -> None:
    """No other work: auto is wall time, bit for bit what --measure wall gives."""
    df = table(other=0.02, shares=(1.0, 1.0))
    auto, wall = one(df), one(df, measure="wall")
    assert auto["measure"] == "wall" and auto["measure_reason"] == "quiet"
    drop = {"measure_reason"}
    assert {k: v for k, v in auto.items() if k not in drop} == {
        k: v for k, v in wall.items() if k not in drop
    }
    # ... and without the new columns at all (older results): the same numbers
    old = df.drop(columns=["cpu_ns", "runq_ns", "cpu_share", "busy_share", "other_cpus"])
    before = one(old.drop(columns=["unbalanced"]))
    assert before["change"] == auto["change"] and before["ci_low"] == auto["ci_low"]


def test_sides_that_wait_keep_wall_time_and_unbalanced_runs_are_left_out() -> None:
    """A side that mostly sleeps is not CPU-bound: its CPU time would hide the sleeping."""
    df = table(waits=3.0)
    row = one(df)
    assert row["measure"] == "wall" and row["measure_reason"] == "not-cpu-bound"
    assert row["runs_unbalanced"] > 0 and row["runs"] == 6 - row["runs_unbalanced"]
    asked = one(df, measure="cpu")  # the user may insist
    assert asked["measure"] == "cpu" and asked["measure_reason"] == "asked"


def test_cpu_time_without_run_delay_is_not_enough_for_auto() -> None:
    df = table(runq=False)
    df["busy_share"] = np.nan
    row = one(df)
    assert row["measure"] == "wall" and row["measure_reason"] == "cpu-bound-unknown"
    assert one(df, measure="cpu")["measure"] == "cpu"


def test_a_harness_without_cpu_per_iteration_is_corrected_per_run() -> None:
    """Only the side's CPU share over each run (run.json cpu_s, runq_s): every iteration's
    wall time times that share."""
    df = table(per_run_only=True, shares=None)
    row = one(df)
    assert row["measure"] == "cpu" and row["measure_source"] == "run"
    assert abs(row["change"] - (TRUE_RATIO - 1)) < 0.01
    assert row["ci_low"] <= TRUE_RATIO - 1 <= row["ci_high"]


@pytest.mark.parametrize("fill", [0.01, 0.3, 1.5])
def test_run_cpu_time_is_not_credited_to_iterations_that_do_not_fill_the_run(
    fill: float,
) -> None:
    """Values per inner loop (pyperf's), a start-up longer than the iterations, or times the
    process did not measure (a computed value longer than it ran): its run's CPU time is
    not its iterations', so the group keeps its wall time and says why."""
    df = table(per_run_only=True)
    df["duration_ns"] = (df["duration_ns"] * fill).astype("int64")
    row = one(df)
    assert row["measure"] == "wall" and row["measure_reason"] == "not-filled"
    # iterations filling most of the run (a short start-up) are still corrected
    df = table(per_run_only=True)
    df["proc_start_ns"] -= ((df["proc_end_ns"] - df["proc_start_ns"]) * 0.2).astype("int64")
    row = one(df)
    assert row["measure"] == "cpu" and row["measure_source"] == "run"


def test_a_sduet_run_is_not_corrected_per_run() -> None:
    """A sduet side waits for the other at every handshake (a harness may spin there):
    its CPU time over the run is not its iterations', so only per-iteration CPU counts."""
    row = one(table(per_run_only=True, method="sduet"))
    assert row["measure"] == "wall" and row["measure_reason"] == "no-cpu-time"


def test_no_cpu_time_at_all_keeps_wall_time_and_says_why() -> None:
    df = table().drop(columns=["cpu_ns", "runq_ns", "cpu_share", "busy_share"])
    row = one(df)
    assert row["measure"] == "wall" and row["measure_reason"] == "no-cpu-time"
    assert row["runs_unbalanced"] > 0


def test_a_side_that_runs_in_parallel_keeps_wall_time() -> None:
    row = one(table(parallel=1.8))
    assert row["measure"] == "wall" and row["measure_reason"] == "parallel"


@pytest.mark.parametrize("method", ["seqn", "sduet"])
def test_every_method_is_corrected_alike(method: str) -> None:
    row = one(table(method=method))
    assert row["measure"] == "cpu" and abs(row["change"] - (TRUE_RATIO - 1)) < 0.005


def test_a_a_beside_other_work_says_no_change() -> None:
    """A/A with unequal shares: CPU time finds no difference where wall time would."""
    df = table(seed=5)
    b = df["pair"] == "B"
    df.loc[b, "cpu_ns"] = (df.loc[b, "cpu_ns"] / TRUE_RATIO).round().astype("Int64")
    share = df.loc[b, "cpu_share"]
    df.loc[b, "duration_ns"] = (df.loc[b, "cpu_ns"].astype(float) / share).round().astype("int64")
    df.loc[b, "end_ns"] = df.loc[b, "start_ns"] + df.loc[b, "duration_ns"]
    df.loc[b, "runq_ns"] = (df.loc[b, "duration_ns"] - df.loc[b, "cpu_ns"]).astype("Int64")
    row = one(df)
    assert row["measure"] == "cpu" and row["verdict"] == "no change detected", row
    assert abs(row["change"]) < 0.005


def test_a_duet_in_containers_is_compared_by_its_cpu_time_on_a_quiet_host_too() -> None:
    """A container's CPU share measured over its iterations' window (``cpu_window_ns``):
    on a quiet host too, its wall time moves with the engine's processes and the host's
    other tenants where its CPU time does not (docs/containers.md, "CPU time"). Here the
    wall time carries unequal shares that no other work explains -- the engine, say."""
    df = table(other=0.02, per_run_only=True)
    df["cpu_window_ns"] = (df["proc_end_ns"] - df["proc_start_ns"]).astype(float)
    row = one(df)
    assert row["measure"] == "cpu" and row["measure_reason"] == "container"
    assert abs(row["change"] - (TRUE_RATIO - 1)) < 0.01
    assert abs(one(df, measure="wall")["change"] - (TRUE_RATIO - 1)) > 0.05  # wall is off
    # a container side that mostly sleeps keeps its wall time, as a local one does
    sleepy = table(other=0.02, per_run_only=True, waits=3.0, shares=(1.0, 1.0))
    sleepy["cpu_window_ns"] = (sleepy["proc_end_ns"] - sleepy["proc_start_ns"]).astype(float)
    assert one(sleepy)["measure"] == "wall"
    # local runs (no window) on the same quiet host: wall time, as before
    assert one(table(other=0.02, shares=(1.0, 1.0)))["measure_reason"] == "quiet"
