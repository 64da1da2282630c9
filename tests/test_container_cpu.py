"""Container sides measured over their iterations' own window (execute/container_cpu.py,
docs/containers.md "CPU time").

Each cause of the wrong answers container duets gave before, with hand-built samples of
known truth: a container's CPU time counted the harness's start-up and the `exec`s
around it, the end of a side's window was its `exec`'s end, the engine's own processes
beside the run were other work, and a sduet side spinning for its go spent CPU time that
is no iteration's.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from duetbench.analysis import compare
from duetbench.execute.container_cpu import (
    CpuSampler,
    Curve,
    Iterations,
    Samples,
    run_window,
    side_window,
)
from duetbench.execute.hang import CgroupCpu
from duetbench.records import RunRecord, SideRecord

MS = 1_000_000
T0 = 1_800_000_000 * 1_000_000_000  # a wall-clock time, ns


def rate_curve(segments: list[tuple[int, float]]) -> callable:
    """A cumulative CPU-time function of time from (length ns, CPUs busy) segments."""

    def at(t: int) -> int:
        done, start = 0.0, T0
        for length, rate in segments:
            if t <= start:
                break
            done += rate * (min(t, start + length) - start)
            start += length
        return round(done)

    return at


def sampled(sides: dict[str, callable], host: callable, period: int = 10 * MS, span: int = 0):
    """Samples every ``period`` ns over ``span`` ns, as CpuSampler takes them."""
    s = Samples(tuple(sides))
    for t in range(T0, T0 + span + 1, period):
        s.t.append(t)
        s.host.append(host(t))
        s.steal.append(0)
        s.own.append(0)
        for side, f in sides.items():
            s.usage[side].append(f(t))
            s.seen_cpu[side].append(f(t))
            s.seen_delay[side].append(0)
    return s


def test_curve_reads_between_and_beyond_its_readings() -> None:
    c = Curve([(10, 100), (0, 0), (20, None), (30, 300)])
    assert c.at(5) == 50 and c.at(20) == 200 and c.at(-5) == 0 and c.at(99) == 300
    assert c.delta(10, 30) == 200 and not Curve([(0, None)])


def test_a_side_is_measured_over_its_iterations_not_its_start_up_or_exec() -> None:
    """A harness computes 300 ms before its first iteration (a JVM's start-up), then 12
    iterations of 22 ms of CPU each, then its exec ends 80 ms later: its group's CPU time
    from the go to its end is the start-up's too; within its iterations it is theirs."""
    spans = [(T0 + 300 * MS + k * 22 * MS, T0 + 300 * MS + (k + 1) * 22 * MS) for k in range(12)]
    usage = rate_curve([(300 * MS, 1.0), (12 * 22 * MS, 1.0), (80 * MS, 0.0)])
    s = sampled({"A": usage}, usage, period=7 * MS, span=700 * MS)
    w = side_window(s, "A", Iterations(tuple(spans), 12 * 22 * MS))
    assert w["iterations"] == 12 and w["start_ns"] == spans[0][0] and w["end_ns"] == spans[-1][1]
    # read between samples 7 ms apart: off by at most a few ms at the window's ends
    assert w["iterations_cpu_s"] == pytest.approx(0.264, abs=0.004)
    assert w["cpu_s"] == pytest.approx(0.264, abs=0.004)
    whole = usage(T0 + 700 * MS) / 1e9  # what run.json's cpu_s counts: start-up included
    assert whole == pytest.approx(0.564, abs=1e-6)
    times = SideRecord("A", window=w).window_times()
    assert times is not None and times.cpu == pytest.approx(0.264, abs=0.004)
    assert times.busy / times.span == pytest.approx(1.0, abs=1e-6)  # they fill it


def test_the_run_delay_is_the_threads_delay_per_cpu_second() -> None:
    """A process per iteration lives shorter than the thread sampling: the delay seen on
    the threads caught still gives the group's delay per CPU second."""
    usage = rate_curve([(500 * MS, 0.5)])
    s = sampled({"A": usage}, usage, span=500 * MS)
    s.seen_cpu["A"] = [None if v is None else v // 3 for v in s.usage["A"]]  # a third seen
    s.seen_delay["A"] = [None if v is None else v // 3 for v in s.usage["A"]]  # waited as long
    w = side_window(s, "A", Iterations(((T0, T0 + 500 * MS),), 500 * MS))
    assert w["runq_s"] == pytest.approx(w["cpu_s"], rel=1e-3)
    s.seen_cpu["A"] = [0 for _ in s.t]  # nothing seen: unknown, not zero
    assert side_window(s, "A", Iterations(((T0, T0 + 500 * MS),), 500 * MS))["runq_s"] is None


def test_a_sduet_side_spinning_for_its_go_is_not_credited_its_waits() -> None:
    """A does 10 ms per iteration, B 20 ms; A spins at the handshake for the other 10 ms.
    Its group's CPU time over its window is B's; within its iterations it is half, and the
    coordinator's readings at ready and go say how long it waited (and spun)."""
    a_spans, b_spans = [], []
    waits = []
    for k in range(10):
        go = T0 + k * 21 * MS
        a_spans.append((go, go + 10 * MS))
        b_spans.append((go, go + 20 * MS))
        if k:  # A's ready after iteration k-1, then its go now
            ready = T0 + (k - 1) * 21 * MS + 10 * MS + 200_000  # the coordinator reads late
            waits.append((ready, go))
    a = rate_curve([(210 * MS, 1.0)])  # busy all along: working or spinning
    b = rate_curve([(210 * MS, 1.0)])
    s = sampled({"A": a, "B": b}, lambda t: a(t) + b(t), span=210 * MS)
    s.waits["A"] = [(r, a(r), g, a(g)) for r, g in waits]
    wa = side_window(s, "A", Iterations(tuple(a_spans), 100 * MS))
    wb = side_window(s, "B", Iterations(tuple(b_spans), 200 * MS))
    assert wa["cpu_s"] == pytest.approx(wb["cpu_s"] - 0.01, abs=1e-3)  # spinning
    assert wa["iterations_cpu_s"] == pytest.approx(0.100, abs=1e-3)
    assert wb["iterations_cpu_s"] == pytest.approx(0.200, abs=1e-3)
    assert wa["wait_s"] == pytest.approx(9 * 0.0108, abs=1e-6) and wa["wait_cpu_s"] > 0.09


def test_the_engine_beside_the_run_is_no_other_work_but_a_busy_process_is() -> None:
    """A quiet host: the sides compute on both CPUs; after the shorter side's last
    iteration its exec ends and conmon/runc work 50 ms (0.6 CPU) -- outside the overlap."""
    a = rate_curve([(264 * MS, 1.0)])
    b = rate_curve([(290 * MS, 1.0)])
    engine = rate_curve([(264 * MS, 0.0), (50 * MS, 0.6)])
    s = sampled({"A": a, "B": b}, lambda t: a(t) + b(t) + engine(t), period=5 * MS, span=400 * MS)
    wins = {
        "A": side_window(s, "A", Iterations(((T0, T0 + 264 * MS),), 264 * MS)),
        "B": side_window(s, "B", Iterations(((T0, T0 + 290 * MS),), 290 * MS)),
    }
    run = run_window(s, wins, duet=True)
    assert run is not None and run["end_ns"] == T0 + 264 * MS  # the overlap
    assert run["other_load"]["processes"] < 0.01 and run["other_load"]["steal"] == 0.0
    assert run["cpu_s"] == {"A": pytest.approx(0.264, abs=0.002), "B": pytest.approx(0.264)}
    # the whole run would have seen the engine as other work
    assert (engine(T0 + 400 * MS) / 0.4e9) > 0.05
    # one busy process beside the sides: about one CPU of other work
    busy = rate_curve([(400 * MS, 1.0)])
    s = sampled({"A": a, "B": b}, lambda t: a(t) + b(t) + busy(t), period=5 * MS, span=400 * MS)
    run = run_window(s, wins, duet=True)
    assert run is not None and run["other_load"]["processes"] == pytest.approx(1.0, abs=0.01)
    # no overlap: no run window
    late = {"A": wins["A"], "B": {**wins["B"], "start_ns": T0 + 300 * MS}}
    assert run_window(s, late, duet=True) is None


def _run(
    whole: tuple[float, float], window: tuple[float, float] | None, other: float, wother: float
) -> RunRecord:
    """A container duet of 1 s whose sides used ``whole`` CPU seconds from their go to
    their end; over the window (0.5 s) ``window``."""
    sides = {
        n: SideRecord(n, status="ok", start_ns=T0, end_ns=T0 + 10**9, cpu_s=c)
        for n, c in zip("AB", whole, strict=True)
    }
    win = None
    if window is not None:
        win = {
            "start_ns": T0,
            "end_ns": T0 + 500 * MS,
            "cpu_s": dict(zip("AB", window, strict=True)),
            "other_load": {"processes": wother, "steal": 0.0},
        }
    return RunRecord(
        run_id="b.aduet.000",
        benchmark="b",
        method="aduet",
        status="ok",
        sides=sides,
        other_load={"processes": other, "steal": 0.0},
        window=win,
        start_ns=T0 - 2 * 10**9,  # the containers' start
        end_ns=T0 + 3 * 10**9,
    )


def test_balance_and_other_work_are_judged_over_the_window() -> None:
    """The issue's quiet host: whole-run shares differ by the exec's end and the engine
    reads as other work; over the window the sides are even and nothing else ran."""
    old = _run((0.9, 0.7), None, 0.3, 0.0)
    assert old.unbalanced and old.other_cpus == 0.3
    new = _run((0.9, 0.7), (0.5, 0.49), 0.3, 0.01)
    assert not new.unbalanced and new.other_cpus == 0.01 and not new.beside_other_work
    assert new.cpu_shares == {"A": pytest.approx(1.0), "B": pytest.approx(0.98)}
    # beside a busy process the window still finds an uneven run
    busy = _run((0.9, 0.7), (0.35, 0.25), 0.3, 0.9)
    assert busy.unbalanced and math.isclose(busy.imbalance, math.log(0.35 / 0.25))
    back = RunRecord.from_json(new.to_json())  # run.json keeps it
    assert back == new and list(new.to_json()).index("window") == 14


def table(method: str, *, spin: float = 0.0, fill: float = 1.0) -> pd.DataFrame:
    """Container duets beside a busy process, credited per run from their window: A does
    10 ms of CPU per iteration, B 20 ms; each gets a drawn share of a CPU. A sduet side
    spins at the handshake (``spin`` of its window's CPU): its window's iterations' CPU
    time leaves it out."""
    rng = np.random.default_rng(4)
    rows = []
    for r in range(6):
        for side, work in (("A", 10e6), ("B", 20e6)):
            share = rng.uniform(0.4, 0.9)
            t = T0 + r * 10**9
            for i in range(8):
                wall = work / share
                rows.append(
                    dict(host="h", suite="s", benchmark="b", method=method, run=r, pair=side,
                         iteration=i, start_ns=int(t), end_ns=int(t + wall),
                         duration_ns=int(wall * fill), other_cpus=0.9, other_work=True,
                         unbalanced=True, proc_start_ns=int(T0 + r * 10**9 - 5e8),
                         proc_end_ns=int(t + 8 * wall + 3e8))
                )  # fmt: skip
                t += wall
            span = 8 * work / share
            for row in rows[-8:]:  # process.side_shares of the window
                row["cpu_share"] = 8 * work / span
                row["busy_share"] = 1.0
                row["cpu_window_ns"] = span
                row["cpu_ns"], row["runq_ns"] = pd.NA, pd.NA
    df = pd.DataFrame(rows)
    for c in ("cpu_ns", "runq_ns"):
        df[c] = pd.array(df[c], dtype="Int64")
    return df


@pytest.mark.parametrize("method", ["aduet", "sduet", "seqn"])
def test_the_window_credits_each_iteration_its_cpu_time(method: str) -> None:
    """Over the window (not the process's life, which holds a start-up and the exec's
    end) every method is corrected, sduet too: the window's CPU time leaves its waits out."""
    (row,) = compare(table(method)).to_dict("records")
    assert row["measure"] == "cpu" and row["measure_source"] == "run"
    assert abs(row["change"] - 1.0) < 0.005 and row["runs"] == 6
    assert row["runs_unbalanced"] == 0 and row["runs_corrected"] == 6


def test_times_the_harness_did_not_measure_itself_are_not_credited() -> None:
    (row,) = compare(table("aduet", fill=1.5)).to_dict("records")
    assert row["measure"] == "wall" and row["measure_reason"] == "not-filled"


def test_the_sampler_reads_groups_host_and_handshake(tmp_path: Path) -> None:
    """CpuSampler on groups it can read: a sample at the go, one when due, a forced one,
    and the group's CPU time at a side's ready and at its go."""
    usage = tmp_path / "cpuacct.usage"
    (tmp_path / "tasks").write_text("")
    usage.write_text("1000\n")
    sampler = CpuSampler({"A": CgroupCpu(usage, 1e-9)})
    sampler.tick(force=True)  # before the go: nothing
    assert sampler.samples.t == []
    sampler.start()
    usage.write_text("5000\n")
    sampler.handshake("ready", ("A",))
    usage.write_text("7000\n")
    sampler.handshake("go", ("A", "B"))
    sampler.tick(force=True)
    s = sampler.samples
    assert s.usage["A"] == [1000, 7000] and len(s.t) == len(s.host) == len(s.own) == 2
    assert s.t[0] <= s.t[1] and s.own[0] <= s.own[1]
    ((ready_t, ready_u, go_t, go_u),) = s.waits["A"]
    assert (ready_u, go_u) == (5000, 7000) and ready_t <= go_t
    assert sampler.delay_seconds("A") is None  # no thread to read: unknown


def test_a_sduet_side_that_starts_late_after_its_go_did_not_run_in_between() -> None:
    """Beside a busy process a side often gets its go while another task has its CPU: it
    starts its iteration milliseconds later, its CPU time flat until then. Read at the go,
    the iteration's CPU time is exact; a line from the go to the next sample would credit
    it the flat stretch's share."""
    go, late = T0 + 10 * MS, 4 * MS
    a = rate_curve([(10 * MS + late, 0.0), (22 * MS, 1.0), (30 * MS, 0.0)])
    s = sampled({"A": a}, a, period=10 * MS, span=70 * MS)
    span = (go + late, go + late + 22 * MS)
    ready = span[1] + MS // 10  # it says ready as its iteration ends
    s.waits["A"] = [(T0, a(T0), go, a(go)), (ready, a(ready), T0 + 60 * MS, a(T0 + 60 * MS))]
    w = side_window(s, "A", Iterations((span,), 22 * MS))
    assert w["iterations_cpu_s"] == pytest.approx(0.022, abs=1e-4)
    # without the go's reading, the line from the go to the next sample misses part of it
    s.waits["A"] = [(ready, a(ready), T0 + 60 * MS, a(T0 + 60 * MS))]
    assert side_window(s, "A", Iterations((span,), 22 * MS))["iterations_cpu_s"] < 0.021


def test_each_run_says_where_its_cpu_time_is_not_its_iterations(tmp_path: Path) -> None:
    """run.json per side: the window as the side's parser reads its results; a harness
    whose times add up to more than they span (values per inner loop) keeps its numbers
    and says why they are not its iterations'; one that gives durations only has none."""
    from duetbench.execute.container_cpu import with_windows

    usage = rate_curve([(400 * MS, 1.0)])
    s = sampled({"A": usage, "B": usage}, lambda t: 2 * usage(t), span=400 * MS)
    for side, rows in (
        (
            "A",
            [
                f"{(T0 + k * 30 * MS) / 1e9:.6f},{(T0 + (k + 1) * 30 * MS) / 1e9:.6f},1"
                for k in range(10)
            ],
        ),
        ("B", ["90000000"] * 10),  # 90 ms each, 10 of them: more than the run lasted
    ):
        (tmp_path / side).mkdir()
        header = "start,end,x" if side == "A" else "duration_ns"
        (tmp_path / side / "out.csv").write_text("\n".join([header, *rows]) + "\n")
    record = RunRecord(
        run_id="b.aduet.000",
        benchmark="b",
        method="aduet",
        status="ok",
        sides={n: SideRecord(n, status="ok", result_files=("out.csv",)) for n in "AB"},
    )
    out = with_windows(record, "generic", tmp_path, s)
    a, b = out.sides["A"].window, out.sides["B"].window
    assert a["iterations"] == 10 and "why" not in a
    assert a["iterations_cpu_s"] == pytest.approx(0.3, abs=0.002)
    assert "durations only" in b["why"] and "cpu_s" not in b
    assert out.window is None  # a duet needs both sides' windows
    # the same results with each time tripled: more than they span
    rows = [
        f"{(T0 + k * 30 * MS) / 1e9:.6f},{(T0 + k * 30 * MS + 90 * MS) / 1e9:.6f},1"
        for k in range(10)
    ]
    (tmp_path / "A" / "out.csv").write_text("\n".join(["start,end,x", *rows]) + "\n")
    a = with_windows(record, "generic", tmp_path, s).sides["A"].window
    assert "did not measure them in its own process" in a["why"] and a["cpu_s"] > 0
