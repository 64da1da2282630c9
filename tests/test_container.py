"""The container executor with podman: all methods, sduet across a C and a shell harness,
timeouts, failures, Ctrl-C and SIGKILL without leftovers, resume, kept containers, the
thesis format. The test image is a busybox-static rootfs imported with `podman import`
(no registry, no network)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from tests.helpers import (
    EXAMPLE_SH,
    HANG_S,
    ROOT,
    SETUP_HINT,
    assert_nothing_left,
    containers,
    lockstep_violations,
    podman,
    print_start_gaps,
    require_tool,
    run_duet,
    unique,
    wait_until,
)
from tests.helpers import container_config as config

from duetbench.process import process

pytestmark = pytest.mark.container

EXAMPLE_C = ROOT / "examples" / "sync" / "harness.c"


def run_json(root: Path, run_id: str) -> dict:
    return json.loads((root / "runs" / run_id / "run.json").read_text())


def read_iters(root: Path, run_id: str, pair: str) -> pd.DataFrame:
    return pd.read_csv(root / "runs" / run_id / pair / "iterations.csv")


# sh loop: a few ms of CPU in busybox ash
SPIN = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"


def _cpu_set(listed: str) -> frozenset[int]:
    """The CPUs of a Cpus_allowed_list value such as ``0-1,3``."""
    out: set[int] = set()
    for part in listed.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def test_all_methods_in_containers(tmp_path: Path, image: str) -> None:
    name = unique("cmeth")
    data = tmp_path / "data"
    data.mkdir()
    (data / "input.txt").write_text("from-the-host\n")
    spin_a, spin_b = SPIN.format(n=8000), SPIN.format(n=8000)
    seen = (
        'echo "$MYVAR $DUET_PAIR $DUET_METHOD $DUET_ITERATION $(cat /data/input.txt) '
        '$(grep Cpus_allowed_list /proc/self/status | cut -f2)" >> "$DUET_OUTPUT_DIR/seen.txt"'
    )
    cfg = config(
        tmp_path,
        name,
        image,
        {"m": {"A": {"command": f"{seen}; {spin_a}"}, "B": {"command": f"{seen}; {spin_b}"}}},
        {"iterations": 6, "env": {"MYVAR": "hello"}, "mounts": ["./data:/data:ro"]},
        schedule="sequential",
        repetitions={"seqn": 1, "aduet": 1, "sduet": 1},
        timeout="120s",
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "res" / name
    journal = [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]
    assert sorted(e["run_id"] for e in journal) == [
        "m.aduet.000",
        "m.sduet.000",
        "m.seqn.000.A",
        "m.seqn.000.B",
    ]
    assert all(e["status"] == "ok" for e in journal), journal
    for e in journal:
        run = run_json(root, e["run_id"])
        assert run["executor"] == "podman" and run["container"]["removed"] is True
        # the containers' CPU time and run delay come from their cgroups, and what else ran
        # is measured (docs/containers.md, "CPU time")
        assert set(run["other_load"]) == {"processes", "steal"}, run
        for pair, side in run["sides"].items():
            assert side["cpu_s"] > 0 and side["runq_s"] >= 0, (pair, side)
            assert side["iterations"] == 6 and side["clock"] == "epochrealtime"
            assert side["container"]["image"] == image and side["container"]["image_id"]
            it = read_iters(root, e["run_id"], pair)
            assert len(it) == 6 and (it.duration_ns > 0).all() and (it.exit_code == 0).all()
            assert (it.start_ns.diff().dropna() > 0).all()
            lines = (root / "runs" / e["run_id"] / pair / "seen.txt").read_text().splitlines()
            assert [ln.split()[:5] for ln in lines] == [
                ["hello", pair, run["method"], str(i), "from-the-host"] for i in range(6)
            ]
            # the container runs on the side's CPUs (its cpuset, or all of a shared 2-CPU host)
            assert {_cpu_set(ln.split()[5]) for ln in lines} == {frozenset(side["cpus"])}
        if run["method"] == "seqn":
            continue
        cpus_a, cpus_b = set(run["sides"]["A"]["cpus"]), set(run["sides"]["B"]["cpus"])
        assert (cpus_a != cpus_b) if run["placement"] == "pinned" else (cpus_a == cpus_b)
        a, b = read_iters(root, e["run_id"], "A"), read_iters(root, e["run_id"], "B")
        # the two sides ran at the same time: each started before the other ended
        assert a.start_ns.min() < b.end_ns.max() and b.start_ns.min() < a.end_ns.max()
        # the gate: the loop, exec'd into the container before the go, starts after it
        for pair, it in (("A", a), ("B", b)):
            assert int(it.start_ns[0]) >= run["sides"][pair]["start_ns"], pair
        print_start_gaps((b.start_ns - a.start_ns).tolist(), f"container {e['run_id']}")
        if run["method"] == "sduet":  # synchronized (different work: the next test)
            assert run["sync"]["go_count"] == 6
            assert lockstep_violations(a.start_ns, a.end_ns, b.start_ns, b.end_ns, 1000) == []
    host = json.loads(next((root / "hosts").glob("*.json")).read_text())
    img = host["container"]["images"][image]
    assert img["id"] and img["artifacts"]["uname"]["exit_code"] == 0
    assert "Linux" in img["artifacts"]["uname"]["stdout"]
    table = process(root).table
    assert len(table) == 6 * 6  # 6 sides (seqn A, seqn B, 2 aduet, 2 sduet) x 6 iterations
    assert_nothing_left(name)


def test_sduet_c_and_shell_harnesses_across_containers(tmp_path: Path, image: str) -> None:
    require_tool("gcc", f"apt-get install gcc libc6-dev ({SETUP_HINT})")
    name = unique("csync")
    bin_dir = tmp_path / "h"
    bin_dir.mkdir()
    subprocess.run(
        [
            "gcc", "-O2", "-Wall", "-Werror", "-static",
            "-I", str(ROOT / "src" / "duetbench" / "sync"),
            "-o", str(bin_dir / "harness"), str(EXAMPLE_C),
        ],
        check=True,
    )  # fmt: skip
    shutil.copy(EXAMPLE_SH, bin_dir / "harness.sh")
    cfg = config(
        tmp_path,
        name,
        image,
        {
            "cs": {
                "A": {"command": "/h/harness /tmp/out.csv 12 3000000"},
                "B": {"command": "sh /h/harness.sh /tmp/out.csv 12 20000"},
            }
        },
        {
            "harness": "generic",
            "self_sync": True,  # both harnesses wait at the handshake themselves
            "mounts": [f"{bin_dir}:/h:ro"],
            "results": ["/tmp/out.csv"],
        },
        repetitions={"sduet": 1},
        timeout="120s",
    )
    out = tmp_path / "res"
    r = run_duet("run", str(cfg), "-o", str(out), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = out / name
    run = run_json(root, "cs.sduet.000")
    assert run["status"] == "ok", run["message"]
    assert run["sync"]["go_count"] >= 12
    for side in run["sides"].values():
        assert side["result_files"] == ["results/out.csv"]
    table = process(root).table  # the generic parser, from the copied-out out.csv
    a = table[table.pair == "A"].sort_values("iteration")
    b = table[table.pair == "B"].sort_values("iteration")
    assert len(a) == len(b) == 12
    # B (shell) does several times A's (C) work per iteration: unsynchronized, A would
    # start its iterations before B ended the one before
    print(f"\nmedian iteration: A {a.duration_ns.median() / 1e6:.1f} ms, B "
          f"{b.duration_ns.median() / 1e6:.1f} ms")  # fmt: skip
    print_start_gaps((b.start_ns.to_numpy() - a.start_ns.to_numpy()).tolist(), "C and shell")
    # no side starts iteration k+1 before both finished iteration k (the shell reads
    # microseconds: 1 us of slack)
    assert lockstep_violations(a.start_ns, a.end_ns, b.start_ns, b.end_ns, 1000) == []
    assert_nothing_left(name)


def test_timeout_failure_missing_results_leave_nothing(tmp_path: Path, image: str) -> None:
    name = unique("cfail")
    hang = 'trap "echo term >> /tmp/r.txt; exit 0" TERM; echo partial > /tmp/r.txt; sleep 3600 & wait $!'
    cfg = config(
        tmp_path,
        name,
        image,
        {
            "hangs": {
                "timeout": "3s",
                "harness": "generic",
                "command": hang,
                "results": ["/tmp/r.txt"],
            },
            "fails": {
                "iterations": 3,
                "A": {"command": "sh -c 'echo boom >&2; exit 7'"},
                "B": {"command": "true"},
            },
            "missing": {"harness": "generic", "command": "true", "results": ["nothere.csv"]},
            "nostart": {  # B's container cannot start (its mount source does not exist)
                "iterations": 2,
                "command": "true",
                "B": {"mounts": [f"{tmp_path}/no-such-dir:/x"]},
            },
        },
        schedule="sequential",
        repetitions={"aduet": 1},
        kill_grace="2s",
    )
    # the hang sleeps an hour: without the timeout run_duet's own deadline would fail
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 4, r.stderr  # finished, runs failed (README, "Exit status")
    root = tmp_path / "res" / name
    status = {
        e["run_id"]: e["status"]
        for e in map(json.loads, (root / "journal.jsonl").read_text().splitlines())
    }
    assert status == {
        "hangs.aduet.000": "timeout",
        "fails.aduet.000": "failed",
        "missing.aduet.000": "failed",
        "nostart.aduet.000": "failed",
    }
    hangs = run_json(root, "hangs.aduet.000")
    for pair, side in hangs["sides"].items():
        assert side["status"] == "terminated"
        assert side["result_files"] == ["results/r.txt"]  # copied out after the timeout
        # the workload got SIGTERM inside the container and had its grace to write
        text = (root / "runs" / "hangs.aduet.000" / pair / "results" / "r.txt").read_text()
        assert text.split() == ["partial", "term"]
    fails = run_json(root, "fails.aduet.000")
    side = fails["sides"]["A"]
    assert side["exit_code"] == 7 and "boom" in side["stderr_tail"]
    assert side["iterations"] == 0
    assert "iteration 0: command exited with 7" in fails["message"]
    assert fails["sides"]["B"]["status"] == "ok" and fails["sides"]["B"]["iterations"] == 3
    missing = run_json(root, "missing.aduet.000")
    assert "nothere.csv" in missing["message"]
    assert missing["sides"]["A"]["missing_results"] == ["nothere.csv"]
    nostart = run_json(root, "nostart.aduet.000")
    assert nostart["sides"]["B"]["status"] == "failed"
    assert "did not start" in nostart["message"] and "no-such-dir" in nostart["message"]
    assert_nothing_left(name)


# Counts its calls in /ctl/calls and, while /ctl/hold exists, blocks in every call
# after the first LIMIT: a run is then in progress at a known point for as long as the
# test needs (tests/conftest.py's make_hold, for a busybox container).
HOLD_SH = (
    "echo x >> /ctl/calls; n=$(wc -l < /ctl/calls); "
    'while [ "$n" -gt {limit} ] && [ -e /ctl/hold ]; do sleep 0.05; done'
)


def test_ctrl_c_and_sigkill_leave_nothing_then_resume(tmp_path: Path, image: str) -> None:
    name = unique("ckill")
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    (ctl / "hold").touch()
    calls = ctl / "calls"

    def n_calls() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    # 4 calls per side and run: slow.seqn.000.A finishes, then every call holds
    cfg = config(
        tmp_path,
        name,
        image,
        {"slow": {"command": HOLD_SH.format(limit=4)}},
        {"iterations": 4, "mounts": [f"{ctl}:/ctl"]},
        schedule="sequential",
        repetitions={"seqn": 1, "aduet": 2},
    )
    out = tmp_path / "res"
    journal = out / name / "journal.jsonl"
    argv = [sys.executable, "-m", "duetbench", "run", str(cfg), "-o", str(out), "--no-compare"]
    env = dict(os.environ, COLUMNS="200")

    def start(*extra: str) -> subprocess.Popen:
        log = open(tmp_path / "stderr.log", "ab")
        return subprocess.Popen([*argv, *extra], stdout=subprocess.DEVNULL, stderr=log, env=env)

    # 1. SIGKILL of duet run while a run is in progress (slow.seqn.000.B, in its first call)
    proc = start()
    try:
        wait_until(lambda: n_calls() == 5, "the second run in progress")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert_nothing_left(name)
    assert [json.loads(x)["run_id"] for x in journal.read_text().splitlines()] == [
        "slow.seqn.000.A"
    ]

    # 2. Ctrl-C (SIGINT) of a resumed run while its first run is in progress
    proc = start("--resume")
    try:
        wait_until(lambda: n_calls() == 6, "the resumed run in progress")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=HANG_S) == 130, (tmp_path / "stderr.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_nothing_left(name)
    assert len(journal.read_text().splitlines()) == 1

    # 3. resume to the end: every run exactly once, all ok
    (ctl / "hold").unlink()
    r = run_duet("run", str(cfg), "-o", str(out), "--resume", "--no-compare", env=env)
    assert r.returncode == 0, r.stderr
    entries = [json.loads(x) for x in journal.read_text().splitlines()]
    ids = [e["run_id"] for e in entries]
    assert (
        sorted(ids)
        == sorted(set(ids))
        == [
            "slow.aduet.000",
            "slow.aduet.001",
            "slow.seqn.000.A",
            "slow.seqn.000.B",
        ]
    )
    assert all(e["status"] == "ok" for e in entries)
    assert n_calls() == 6 + 4 + 2 * 2 * 4  # the runs killed and interrupted did not count
    assert_nothing_left(name)


def test_remove_containers_false_keeps_them(tmp_path: Path, image: str) -> None:
    name = unique("ckeep")
    cfg = config(
        tmp_path,
        name,
        image,
        {"k": {"command": "true"}},
        {"iterations": 2},
        repetitions={"aduet": 1},
        remove_containers=False,
    )
    try:
        r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
        assert r.returncode == 0, r.stderr
        run = run_json(tmp_path / "res" / name, "k.aduet.000")
        assert run["status"] == "ok" and run["container"]["removed"] is False
        kept = sorted(containers("duetbench.experiment", name))
        assert kept == sorted(s["container"]["name"] for s in run["sides"].values())
        states = podman("inspect", "--format", "{{.State.Status}}", *kept)
        assert set(states.stdout.split()) == {"exited"}  # kept, but not running
        # their owner is gone, but reaping (at the start of every experiment) keeps them
        from duetbench.execute.container import ContainerExecutor

        reaped = ContainerExecutor(engine="podman").reap_dead_owners()
        assert not set(kept) & set(reaped)
        assert sorted(containers("duetbench.experiment", name)) == kept
    finally:
        left = containers("duetbench.experiment", name)
        if left:
            podman("rm", "-f", "-t", "0", *left)
    assert_nothing_left(name)


def test_leftovers_of_dead_owners_are_reaped(tmp_path: Path, image: str) -> None:
    from duetbench.execute.container import ContainerExecutor
    from duetbench.execute.container_cleanup import proc_start as _proc_start

    token = unique("creap")
    ex = ContainerExecutor(engine="podman")
    dead = subprocess.Popen(["true"])
    dead.wait()

    def make(suffix: str, owner: int, start: str, remove: str) -> str:
        cname = f"{token}-{suffix}"
        labels = {
            "duetbench": "1",
            "duetbench.owner": str(owner),
            "duetbench.owner_start": start,
            "duetbench.host": ex.host,
            "duetbench.remove": remove,
            "duetbench.experiment": token,
        }
        args = [x for k, v in labels.items() for x in ("--label", f"{k}={v}")]
        podman("create", "--name", cname, *args, image, "true", check=True)
        return cname

    try:
        gone = make("dead", dead.pid, "1", "1")
        kept = make("kept", dead.pid, "1", "0")
        mine = make("live", os.getpid(), _proc_start(os.getpid()), "1")
        reaped = ex.reap_dead_owners()
        assert gone in reaped
        assert sorted(containers("duetbench.experiment", token)) == sorted([kept, mine])
    finally:
        left = containers("duetbench.experiment", token)
        if left:
            podman("rm", "-f", *left)


def test_thesis_format_runs_unchanged(tmp_path: Path, image: str) -> None:
    name = unique("cthesis")
    cfg = tmp_path / "thesis.duet.yml"
    cfg.write_text(
        f"""duetbench:
  name: {name}
  seed: 42
  schedule: randomized_interleaving_trials
  duet_repetitions: 1
  sequential_repetitions: 1
  docker_command: podman
  artifacts: {{uname: uname -a}}
  image: {image}
  results: [/tmp/results.csv]
  run_base: sh /opt/duet/harness.sh /tmp/results.csv
  timeout: 120
  duets: [spin]
spin:
  A: {{run: "5 3000"}}
  B: {{run: "5 6000"}}
"""
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "res" / name
    entries = [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]
    assert sorted(e["run_id"] for e in entries) == [
        "spin.aduet.000",
        "spin.seqn.000.A",
        "spin.seqn.000.B",
    ]
    assert all(e["status"] == "ok" for e in entries), entries
    run = run_json(root, "spin.aduet.000")
    assert run["executor"] == "podman" and run["spec"]["harness"] == "generic"
    table = process(root).table
    assert len(table) == 4 * 5
    assert_nothing_left(name)


def test_config_errors_stop_before_anything_runs(tmp_path: Path, image: str) -> None:
    name = unique("cerr")
    cfg = config(tmp_path, name, image, {"b": {"command": "true"}}, repetitions={"aduet": 1})
    text = cfg.read_text().replace(image, "localhost/duetbench-no-such-image:0")
    cfg.write_text(text)
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 2 and "could not be pulled" in r.stderr, r.stderr
    assert not (tmp_path / "res" / name).exists()  # nothing written: fix the image, run again
    cfg.write_text(text.replace("  image: localhost/duetbench-no-such-image:0\n", ""))
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 2 and "has no `image:`" in r.stderr, r.stderr
    assert_nothing_left(name)


def test_executor_alone_as_a_cluster_worker_uses_it(tmp_path: Path, image: str) -> None:
    """No start/end_experiment around the run (schedule/cluster.py): checks, guard and
    cleanup happen per run."""
    from duetbench.config import load_config
    from duetbench.execute.base import get_executor
    from duetbench.plan import make_plan

    name = unique("capi")
    cfg = config(tmp_path, name, image, {"w": {"command": "true"}}, {"iterations": 3})
    exp = load_config(cfg)
    spec = next(r for r in make_plan(exp) if r.method == "aduet")
    executor = get_executor("podman", settings=exp.to_dict()["container"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    outcome = executor.execute(spec, run_dir)
    assert outcome.exception is None
    assert outcome.record.status == "ok", outcome.record.message
    assert all(s.iterations == 3 for s in outcome.record.sides.values())
    assert executor._guard is None  # ended with the run
    assert not list(run_dir.rglob(".gate"))
    assert_nothing_left(name)


def test_container_run_json_keeps_its_keys_and_reads_back_byte_for_byte(
    tmp_path: Path, image: str
) -> None:
    """The container executor adds its facts to the typed run record (records.py): run.json
    has the keys, in the order, of the fixtures written before records were typed."""
    from tests.helpers import RUN_JSON_FIXTURES, as_written, placed, shape

    from duetbench.records import RunRecord

    name = unique("rec")
    benchmarks = {"c": {"A": {"command": "true"}, "B": {"command": "sleep 0.01"}}}
    cfg = config(
        tmp_path, name, image, benchmarks, {"iterations": 2}, repetitions={"seqn": 1, "aduet": 1}
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    runs = sorted((tmp_path / "res" / name / "runs").glob("*/run.json"))
    assert [p.parent.name for p in runs] == ["c.aduet.000", "c.seqn.000.A", "c.seqn.000.B"]
    for path in runs:
        raw = path.read_text()
        data = json.loads(raw)
        assert as_written(RunRecord.from_json(data).to_json()) == raw
        before = json.loads((RUN_JSON_FIXTURES / f"podman-{path.parent.name}.json").read_text())
        assert shape(placed(data)) == shape(before), path.parent.name
    assert_nothing_left(name)
