"""Shared duets whose sides ran on the same two CPUs in every run (docs/statistics.md,
section Notes, `same_cpus`).

Virtual CPUs can differ in speed by tens of percent for seconds at a time
(docs/performance.md, "Unequal virtual CPUs"). With `cpus: shared` the scheduler places
the sides; if A ran on one CPU and B on the other in every run, such a difference reads
as one between A and B. The local executor records where each side of a shared duet ran
(run.json ``sides.<X>.ran_on``) and the verdict names the confound.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from tests.helpers import run_duet

from duetbench.dataset import SAME_CPUS_RUNS, RunFlags, _same_cpus
from duetbench.execute.cpuwatch import CpuWatch
from duetbench.records import RunRecord, SideRecord, main_cpu
from duetbench.report.notes import row_warnings

BUSY = "import time\ne = time.process_time() + 0.6\nwhile time.process_time() < e:\n    pass\n"


def test_a_shared_duet_records_where_each_side_ran(tmp_path: Path, write_config) -> None:
    """Real runs: every duet side was seen on CPUs of this host; seqn runs are not watched."""
    busy = write_config(BUSY, "busy.py")
    cfg = write_config(
        "experiment: {name: t, seed: 4, repetitions: {aduet: 2, seqn: 1}}\n"
        "defaults: {iterations: 1, warmup: 0, cpus: shared}\n"
        f"benchmarks:\n  b:\n    command: python3 '{busy}'\n"
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    host = set(os.sched_getaffinity(0))
    seen = 0
    for run_json in (tmp_path / "res" / "t" / "runs").glob("*/run.json"):
        run = json.loads(run_json.read_text())
        assert run["placement"] == "shared"
        for side in run["sides"].values():
            if run["method"] == "seqn":
                assert "ran_on" not in side
                continue
            ran_on = {int(c): n for c, n in side["ran_on"].items()}
            assert set(ran_on) <= host and sum(ran_on.values()) >= 1  # 0.6 s at 5 looks a second
            seen += 1
        record = RunRecord.from_json(run)  # read back as written
        for name, side in run["sides"].items():
            want = {int(c): n for c, n in side["ran_on"].items()} if "ran_on" in side else None
            assert record.sides[name].ran_on == want
    assert seen == 4


def test_the_watch_counts_running_processes_of_each_group_only() -> None:
    """A busy child in its own process group is counted for its side; a sleeping one not."""
    import subprocess
    import sys
    import time

    busy = subprocess.Popen([sys.executable, "-c", BUSY], process_group=0)
    asleep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"], process_group=0)
    try:
        time.sleep(0.3)  # both interpreters started: the sleeper is asleep
        watch = CpuWatch({"A": busy.pid, "B": asleep.pid}, period=0.05)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            watch.tick()
            time.sleep(0.01)
        a = watch.ran_on("A")
        assert a is not None and set(a) <= set(os.sched_getaffinity(0)) and sum(a.values()) >= 3
        assert watch.ran_on("B") is None
    finally:
        for p in (busy, asleep):
            p.kill()
            p.wait()


def test_the_main_cpu_is_the_one_seen_most_and_ties_have_none() -> None:
    assert main_cpu({0: 3, 1: 9}) == 1
    assert main_cpu({0: 4, 1: 4}) is None
    assert main_cpu(None) is None and main_cpu({}) is None


def _run(a: dict[int, int] | None, b: dict[int, int] | None) -> RunRecord:
    sides = {n: SideRecord(name=n, status="ok", ran_on=r) for n, r in (("A", a), ("B", b))}
    return RunRecord(
        run_id="b.aduet.000",
        benchmark="b",
        method="aduet",
        rep=0,
        status="ok",
        sides=sides,
        placement="shared",
    )


def test_main_cpus_only_when_the_sides_ran_apart() -> None:
    assert _run({0: 5, 1: 1}, {1: 6}).main_cpus == (0, 1)
    assert _run({0: 5}, {0: 6}).main_cpus is None  # both on CPU 0: nothing to confound
    assert _run({0: 5}, None).main_cpus is None  # B never seen running


def test_ran_on_survives_run_json_and_a_damaged_one_is_ignored() -> None:
    run = _run({0: 5, 1: 1}, {1: 6})
    back = RunRecord.from_json(json.loads(json.dumps(run.to_json())))
    assert back.sides["A"].ran_on == {0: 5, 1: 1} and back.main_cpus == (0, 1)
    d = run.to_json()
    for bad in ({"x": 1}, {"0": -1}, {"0": 1.5}, [0, 1], "0"):
        d["sides"]["A"]["ran_on"] = bad
        assert RunRecord.from_json(d).sides["A"].ran_on is None


@pytest.mark.parametrize(
    ("mains", "flag"),
    [
        ([(0, 1)] * SAME_CPUS_RUNS, (0, 1)),
        ([(1, 0)] * (SAME_CPUS_RUNS + 2), (1, 0)),
        ([(0, 1)] * (SAME_CPUS_RUNS - 1), ()),  # too few runs to say
        ([(0, 1), (1, 0)] + [(0, 1)] * SAME_CPUS_RUNS, ()),  # each side had each CPU
        ([(0, 1)] * SAME_CPUS_RUNS + [None], ()),  # a run without the record: unknown
    ],
)
def test_same_cpus_needs_every_run_on_the_same_two(mains, flag) -> None:
    assert _same_cpus(mains) == flag


def test_the_note_names_the_cpus_and_the_remedy() -> None:
    flags = dataclasses.replace(RunFlags(), runs=4, same_cpus=(0, 1), placements=("shared",))
    row = {"benchmark": "b", "method": "aduet", "runs": 4}
    (note,) = [s for code, s in row_warnings(row, 4, flags, 0.5) if code == "same_cpus"]
    assert "in all 4 runs A ran on CPU 0 and B on CPU 1" in note
    assert "cpus: pinned" in note and "Unequal virtual CPUs" in note
    assert not [c for c, _ in row_warnings(row, 4, RunFlags(), 0.5) if c == "same_cpus"]
