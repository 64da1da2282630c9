"""`duet run` on local processes: all three methods, overlap and alignment, timeouts, failures,
crash + resume. These are the done-when checks of the core runner issue."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
from tests.helpers import (
    lockstep_violations,
    make_hold,
    pids_with,
    print_start_gaps,
    run_duet,
    wait_until,
)

from duetbench.config import loads_config
from duetbench.plan import make_plan

WORK = "python3 -c 'import sys; sum(i*i for i in range(int(sys.argv[1])))'"


def small_config(tmp_path: Path, body: str, name: str = "t") -> Path:
    cfg = tmp_path / "duet.yml"
    cfg.write_text(f"experiment:\n  name: {name}\n  seed: 3\n" + body)
    return cfg


def read_iters(run_dir: Path, pair: str) -> pd.DataFrame:
    return pd.read_csv(run_dir / pair / "iterations.csv")


def test_all_methods_complete_with_overlap_and_alignment(tmp_path):
    cfg = small_config(
        tmp_path,
        f"""
  repetitions: {{seqn: 2, aduet: 2, sduet: 2}}
  timeout: 60s
defaults:
  iterations: 8
benchmarks:
  aa:
    command: {WORK} 60000
  ab:
    A: {{command: "{WORK} 60000"}}
    B: {{command: "{WORK} 90000"}}
""".replace("{WORK}", WORK),
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "res" / "t"
    journal = [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]
    plan = json.loads((root / "experiment.json").read_text())["plan"]
    assert sorted(e["run_id"] for e in journal) == sorted(p["run_id"] for p in plan)
    assert len(plan) == 2 * (2 * 2 + 2 + 2)
    assert all(e["status"] == "ok" for e in journal)
    assert list((root / "hosts").glob("*.json"))
    for run_id in (p["run_id"] for p in plan):
        run = json.loads((root / "runs" / run_id / "run.json").read_text())
        assert run["status"] == "ok"
        for pair, side in run["sides"].items():
            assert side["iterations"] == 8
            it = read_iters(root / "runs" / run_id, pair)
            assert len(it) == 8 and (it.duration_ns > 0).all()
            assert (it.start_ns.diff().dropna() > 0).all()
        if run["method"] == "seqn":
            continue
        a, b = read_iters(root / "runs" / run_id, "A"), read_iters(root / "runs" / run_id, "B")
        # the two sides really ran at the same time: each started before the other ended
        # (by how much they overlap depends on how evenly the machine's load hits them)
        assert a.start_ns.min() < b.end_ns.max() and b.start_ns.min() < a.end_ns.max()
        # cpus: auto -- pinned (each side its own CPU) above two usable CPUs, shared on two
        cpus_a, cpus_b = set(run["sides"]["A"]["cpus"]), set(run["sides"]["B"]["cpus"])
        if run["placement"] == "pinned":
            assert len(os.sched_getaffinity(0)) > 2 and cpus_a != cpus_b
        else:
            assert run["placement"] == "shared" and cpus_a == cpus_b
        if run["method"] == "sduet":
            print_start_gaps((b.start_ns - a.start_ns).tolist(), f"sduet {run_id}")
            assert run["sync"]["go_count"] == 8
            # iteration k+1 of one side starts only after both ended iteration k (1 ms:
            # a row's end is its start plus the monotonic duration, not a second clock read)
            assert lockstep_violations(a.start_ns, a.end_ns, b.start_ns, b.end_ns, 1_000_000) == []


def test_same_seed_same_plan_rmit_and_balance():
    text = """
experiment: {name: p, seed: 11, repetitions: {seqn: 3, aduet: 6, sduet: 5}}
benchmarks:
  x: {command: "true"}
  y: {command: "true"}
"""
    p1 = [r.to_dict() for r in make_plan(loads_config(text))]
    p2 = [r.to_dict() for r in make_plan(loads_config(text))]
    assert p1 == p2
    p3 = [r.to_dict() for r in make_plan(loads_config(text.replace("seed: 11", "seed: 12")))]
    assert [r["run_id"] for r in p1] != [r["run_id"] for r in p3]
    # rmit interleaves benchmarks and methods
    seq = [(r["benchmark"], r["method"]) for r in p1]
    assert seq != sorted(seq)
    # orders and CPU slots are balanced per benchmark x method
    for bench in ("x", "y"):
        for method, n in (("aduet", 6), ("sduet", 5)):
            runs = [r for r in p1 if r["benchmark"] == bench and r["method"] == method]
            orders = [r["order"] for r in runs]
            assert abs(orders.count("AB") - orders.count("BA")) <= n % 2
            a_slots = [next(s["cpu_slot"] for s in r["sides"] if s["pair"] == "A") for r in runs]
            assert abs(a_slots.count(0) - a_slots.count(1)) <= n % 2
            assert [s["pair"] for s in runs[0]["sides"]] == list(runs[0]["order"])
    # --only keeps every draw of the kept benchmark
    only = [r.to_dict() for r in make_plan(loads_config(text), ["y"])]
    assert only == [r for r in p1 if r["benchmark"] == "y"]


def test_sequential_schedule_keeps_declaration_order():
    text = """
experiment: {name: p, schedule: sequential, repetitions: {seqn: 1, aduet: 1}}
benchmarks:
  x: {command: "true"}
  y: {command: "true"}
"""
    ids = [r.run_id for r in make_plan(loads_config(text))]
    assert ids == [
        "x.seqn.000.A",
        "x.seqn.000.B",
        "x.aduet.000",
        "y.seqn.000.A",
        "y.seqn.000.B",
        "y.aduet.000",
    ]


def test_hang_is_stopped_by_timeout_and_failure_is_recorded(tmp_path):
    token = f"hang-{uuid.uuid4().hex[:8]}"
    cfg = small_config(
        tmp_path,
        f"""
  schedule: sequential
  repetitions: {{aduet: 1}}
  kill_grace: 1s
benchmarks:
  hangs:
    timeout: 2s
    iterations: 2
    command: "python3 -c 'import time; time.sleep(3600)' {token}"
  fails:
    iterations: 3
    command: sh -c 'echo boom >&2; exit 7'
  fine:
    iterations: 2
    command: "true"
""",
    )
    # the hang sleeps an hour: without the timeout run_duet's own deadline would fail
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 4, r.stderr  # finished, some runs failed (README, "Exit status")
    assert "2 run(s) did not end well (1 failed, 1 timeout" in " ".join(r.stderr.split())
    root = tmp_path / "res" / "t"
    status = {
        e["run_id"]: e["status"]
        for e in map(json.loads, (root / "journal.jsonl").read_text().splitlines())
    }
    assert status == {
        "hangs.aduet.000": "timeout",
        "fails.aduet.000": "failed",
        "fine.aduet.000": "ok",
    }
    # SIGKILLed when duet run returned; give the kernel its moment to finish the exit
    wait_until(lambda: pids_with(token) == [], "the timed-out workload gone")
    failed = json.loads((root / "runs" / "fails.aduet.000" / "run.json").read_text())
    side = failed["sides"]["A"]
    assert side["exit_code"] == 7 and "boom" in side["stderr_tail"]
    assert "exited with 7" in failed["message"]


def test_sigkill_mid_experiment_then_resume_completes_exactly_once(tmp_path):
    token = f"resume-{uuid.uuid4().hex[:8]}"
    # 3 calls per side and run: the two seqn runs of rep 0 finish, the 7th call (the
    # first of slow.seqn.001.A) holds, so that run is in flight when duet run is killed
    hold = make_hold(tmp_path, 6, token)
    cfg = small_config(
        tmp_path,
        f"""
  schedule: sequential
  repetitions: {{seqn: 2, aduet: 2, sduet: 1}}
defaults:
  iterations: 3
benchmarks:
  slow:
    command: "{hold.command}"
""",
    )
    out = tmp_path / "res"
    env = dict(os.environ, COLUMNS="200")
    proc = subprocess.Popen(
        [sys.executable, "-m", "duetbench", "run", str(cfg), "-o", str(out), "--no-compare"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    journal = out / "t" / "journal.jsonl"
    try:
        wait_until(lambda: hold.calls() == 7, "the third run in progress")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    wait_until(lambda: pids_with(token) == [], "no workload left after the SIGKILL of duet run")
    done_before = {json.loads(x)["run_id"] for x in journal.read_text().splitlines()}
    assert done_before == {"slow.seqn.000.A", "slow.seqn.000.B"}
    hold.release()
    # without --resume the directory is never overwritten
    r = run_duet("run", str(cfg), "-o", str(out), "--no-compare")
    assert r.returncode == 2 and "--resume" in r.stderr
    r = run_duet("run", str(cfg), "-o", str(out), "--resume", "--no-compare")
    assert r.returncode == 0, r.stderr
    entries = [json.loads(x) for x in journal.read_text().splitlines()]
    ids = [e["run_id"] for e in entries]
    assert len(ids) == len(set(ids)) == 7
    runs = sorted(p.name for p in (out / "t" / "runs").iterdir() if not p.name.startswith("."))
    assert runs == sorted(ids)
    for rid in ids:
        assert json.loads((out / "t" / "runs" / rid / "run.json").read_text())["status"] == "ok"
    # the runs finished before the crash were kept, not re-executed: after the 7 calls
    # before the kill, 3 per side of the 5 runs left (2 seqn, 2 aduet and 1 sduet)
    first = {e["run_id"]: e["start_ns"] for e in entries}
    assert all(first[r] < entries[len(done_before)]["start_ns"] for r in done_before)
    assert hold.calls() == 7 + 3 * (1 + 1 + 2 * 2 + 2)
    assert pids_with(token) == []


def test_external_harness_generic_results_are_collected(tmp_path):
    script = tmp_path / "harness.sh"
    script.write_text(
        "#!/bin/sh\n"
        "echo iteration,start_ns,end_ns > out.csv\n"
        "for i in 0 1 2 3; do s=$(date +%s%N); sleep 0.02; e=$(date +%s%N); echo $i,$s,$e >> out.csv; done\n"
    )
    script.chmod(0o755)
    cfg = small_config(
        tmp_path,
        f"""
  repetitions: {{seqn: 1, aduet: 1}}
benchmarks:
  ext:
    harness: generic
    command: {script}
    results: [out.csv]
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "res" / "t"
    run = json.loads((root / "runs" / "ext.aduet.000" / "run.json").read_text())
    assert run["status"] == "ok"
    assert run["sides"]["A"]["result_files"] == ["out.csv"]
    assert run["sides"]["A"]["cwd"].endswith("/A")  # a private working directory per side


def test_results_may_name_the_side_directory(tmp_path):
    cfg = small_config(
        tmp_path,
        """
  repetitions: {aduet: 1}
benchmarks:
  ext:
    harness: generic
    workdir: .
    command: "printf 'start_ns,end_ns\\n1,2\\n' > $DUET_OUTPUT_DIR/r.csv"
    results: [$DUET_OUTPUT_DIR/r.csv]
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "res" / "t" / "runs" / "ext.aduet.000" / "run.json").read_text())
    assert run["status"] == "ok", run["message"]
    assert run["sides"]["B"]["result_files"] == ["r.csv"]


def test_missing_result_file_marks_run_failed(tmp_path):
    cfg = small_config(
        tmp_path,
        """
  repetitions: {aduet: 1}
benchmarks:
  ext:
    harness: generic
    command: "true"
    results: [nothere.csv]
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 4, r.stderr
    run = json.loads((tmp_path / "res" / "t" / "runs" / "ext.aduet.000" / "run.json").read_text())
    assert run["status"] == "failed" and "nothere.csv" in run["message"]


# B's iteration: wait until A has ended two more iterations (A's iterations.csv, one
# row each, two more lines) than when it began; then B can only finish if A goes on
WAIT_FOR_TWO_OF_A = (
    "sh -c 'f=../A/iterations.csv; until [ -f $f ]; do sleep 0.01; done; n=$(wc -l < $f); "
    "while [ $(wc -l < $f) -lt $((n + 2)) ]; do sleep 0.01; done'"
)


def test_busy_shorter_side_marks_filler(tmp_path):
    cfg = small_config(
        tmp_path,
        f"""
  repetitions: {{aduet: 1}}
benchmarks:
  uneven:
    iterations: 4
    busy_shorter_side: true
    A: {{command: "sleep 0.02"}}
    B: {{command: "{WAIT_FOR_TWO_OF_A}"}}
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    a = read_iters(tmp_path / "res" / "t" / "runs" / "uneven.aduet.000", "A")
    b = read_iters(tmp_path / "res" / "t" / "runs" / "uneven.aduet.000", "B")
    # B's 4 iterations needed 8 iterations of A: A went on past its 4 as filler
    assert (a.filler == 0).sum() == 4 and (a.filler == 1).sum() >= 4
    assert a.filler.tolist() == sorted(a.filler.tolist())  # the filler comes after
    assert (b.filler == 0).sum() == 4 and len(b) == 4
    # A kept iterating until B finished: an iteration of A began during B's last one
    assert a.start_ns.max() > b.start_ns.max()


def test_environment_and_private_dirs(tmp_path):
    cfg = small_config(
        tmp_path,
        """
  repetitions: {aduet: 1}
benchmarks:
  env:
    iterations: 1
    env: {MYVAR: hello}
    command: sh -c 'echo "$MYVAR $DUET_PAIR $DUET_RUN $DUET_METHOD $DUET_OUTPUT_DIR" > seen.txt'
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    for pair in "AB":
        seen = (
            (tmp_path / "res" / "t" / "runs" / "env.aduet.000" / pair / "seen.txt")
            .read_text()
            .split()
        )
        assert seen[:4] == ["hello", pair, "env.aduet.000", "aduet"]
        assert seen[4].endswith(f"/{pair}")


def test_experiment_setup_runs_first_and_its_failure_stops_everything(tmp_path):
    cfg = small_config(
        tmp_path,
        """
  repetitions: {aduet: 1}
  setup: "echo built > built.txt"
  teardown: "echo gone > torn.txt"
benchmarks:
  uses-setup:
    iterations: 1
    workdir: .
    command: cat built.txt
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    run = json.loads(
        (tmp_path / "res" / "t" / "runs" / "uses-setup.aduet.000" / "run.json").read_text()
    )
    assert run["status"] == "ok" and (tmp_path / "torn.txt").exists()
    bad = small_config(
        tmp_path,
        """
  repetitions: {aduet: 1}
  setup: "echo cannot build; exit 3"
benchmarks:
  x: {command: "true"}
""",
        name="bad",
    )
    r = run_duet("run", str(bad), "-o", str(tmp_path / "res2"), "--no-compare")
    assert r.returncode == 2 and "exited with 3" in r.stderr and "cannot build" in r.stderr
    assert not (tmp_path / "res2").exists()


def test_builtin_harness_commands_do_not_see_the_sync_dir(tmp_path):
    """The built-in harness syncs itself; a command that syncs too would break the alignment."""
    cfg = small_config(
        tmp_path,
        """
  repetitions: {sduet: 1}
benchmarks:
  s:
    iterations: 2
    command: sh -c 'test -z "$DUET_SYNC_DIR" && test -n "$DUET_PAIR"'
""",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "res" / "t" / "runs" / "s.sduet.000" / "run.json").read_text())
    assert run["status"] == "ok", run["message"]
    assert run["sync"]["go_count"] == 2


THESIS_SYNC_HARNESS = """import os, sys, time
from pathlib import Path
from duetbench.sync import SyncClient

sync_dir, out, n, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
# the thesis tool's way: the barrier's name comes as an argument ($$), not from the env
client = SyncClient(Path(sync_dir), os.environ["DUET_PAIR"], None) if sync_dir != "-" else None
rows = []
for i in range(n):
    ready = time.time_ns()
    if client is not None:
        client.wait()
    start = time.time_ns()
    time.sleep(seconds)
    rows.append(f"{i},{ready},{start},{time.time_ns()}")
if client is not None:
    client.done()
with open(out, "w") as f:
    f.write("iteration,ready_ns,start_ns,end_ns\\n" + "\\n".join(rows) + "\\n")
with open("sync_arg.txt", "w") as f:
    f.write(sync_dir + "\\n" + os.environ.get("DUET_SYNC_DIR", "") + "\\n")
"""


def test_thesis_format_syncduet_starts_every_iteration_together(tmp_path):
    """The thesis format's synchronized duet: `syncduet_run_base` with `$$` (the barrier
    the thesis tool passed) in a `duetbench:` config, run by the local executor. Judged
    without timing: no side starts iteration k before both sides were ready for it."""
    harness = tmp_path / "harness.py"
    harness.write_text(THESIS_SYNC_HARNESS)
    cfg = tmp_path / "thesis.duet.yml"
    cfg.write_text(
        f"""duetbench:
  name: thesis-sync
  seed: 7
  executor: local
  artifacts: {{}}
  syncduet_repetitions: 2
  duet_repetitions: 1
  results: [out.csv]
  run_base: {sys.executable} {harness} - out.csv
  syncduet_run_base: {sys.executable} {harness} $$ out.csv
  timeout: 120
  duets: [naps]
naps:
  A: {{run: "6 0.01"}}
  B: {{run: "6 0.04"}}
"""
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "res" / "thesis-sync"
    entries = [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]
    assert sorted(e["run_id"] for e in entries) == [
        "naps.aduet.000",
        "naps.sduet.000",
        "naps.sduet.001",
    ]
    assert all(e["status"] == "ok" for e in entries), entries
    for run_id in ("naps.sduet.000", "naps.sduet.001"):
        run = json.loads((root / "runs" / run_id / "run.json").read_text())
        assert run["spec"]["harness"] == "generic" and run["sync"]["go_count"] == 6
        rows = {p: pd.read_csv(root / "runs" / run_id / p / "out.csv") for p in "AB"}
        for p in "AB":
            assert rows[p].iteration.tolist() == list(range(6))
            arg, env_dir = (root / "runs" / run_id / p / "sync_arg.txt").read_text().split("\n")[:2]
            assert arg == env_dir and arg.endswith("/.sync")  # $$ became the sync directory
        a, b = rows["A"], rows["B"]
        both_ready = pd.concat([a.ready_ns, b.ready_ns], axis=1).max(axis=1)
        for x in (a, b):  # go k needs both readies: nobody starts before the slower one
            assert (x.start_ns >= both_ready).all(), (x.start_ns - both_ready).tolist()
        assert lockstep_violations(a.start_ns, a.end_ns, b.start_ns, b.end_ns) == []
        print_start_gaps((b.start_ns - a.start_ns).tolist(), f"thesis sduet {run_id}")
    # the aduet run used run_base (no barrier): A, sleeping a quarter of B, runs ahead
    a, b = (pd.read_csv(root / "runs" / "naps.aduet.000" / p / "out.csv") for p in "AB")
    assert (root / "runs" / "naps.aduet.000" / "A" / "sync_arg.txt").read_text() == "-\n\n"
    assert lockstep_violations(a.start_ns, a.end_ns, b.start_ns, b.end_ns) != []
