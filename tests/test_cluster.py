"""`duet run --cluster`: Dask workers as hosts, exclusive runs, retries after worker deaths,
host requirements, the balanced design, `duet hosts`, and a coordinator crash + resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

import distributed  # noqa: F401  (the test extra installs it; never skipped)
import pytest
from tests.helpers import HANG_S, make_hold, pids_with, run_duet, wait_until

from duetbench.config import loads_config
from duetbench.errors import ConfigError
from duetbench.host_report import hosts_report
from duetbench.plan import make_plan
from duetbench.schedule.cluster import (
    balanced_assignment,
    check_host,
    host_health,
    local_cluster,
    restore_environ,
    run_experiment_cluster,
)
from duetbench.schedule.inline import run_experiment

N_WORKERS = 3


@pytest.fixture(scope="module")
def cluster():
    """Three single-slot worker processes, each counting as its own host (pfx-w0..w2)."""
    from distributed import Client

    prefix = f"t{uuid.uuid4().hex[:6]}"
    before = dict(os.environ)
    cl = local_cluster(N_WORKERS, host_prefix=prefix)
    restore_environ(before)  # the nannies poison this process with OMP_NUM_THREADS=1 & co.
    client = Client(cl, set_as_default=False)
    try:
        yield {"address": cl.scheduler_address, "prefix": prefix, "client": client, "env": before}
    finally:
        pids = list(client.run(os.getpid).values())
        client.close()
        cl.close()
        restore_environ(before)

        def alive() -> list[int]:
            return [p for p in pids if Path(f"/proc/{p}").exists() and ") Z " not in _stat(p)]

        wait_until(lambda: alive() == [], "every Dask worker process gone after the fixture")


def _stat(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""


def _ready(cluster: dict[str, Any]) -> None:
    cluster["client"].wait_for_workers(N_WORKERS, timeout=HANG_S)
    restore_environ(cluster["env"])  # a restarted worker's nanny sets its variables here again


class Recorder:
    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []
        self.summary: Any = None

    def experiment_started(self, store, plan, todo) -> None:
        self.todo = [r.run_id for r in todo]

    def run_started(self, spec) -> None:
        self.started.append(spec.run_id)

    def run_finished(self, spec, record) -> None:
        self.finished.append(spec.run_id)

    def experiment_finished(self, summary) -> None:
        self.summary = summary


def _config(tmp_path: Path, body: str, name: str = "c") -> Any:
    path = tmp_path / "duet.yml"
    path.write_text(f"experiment:\n  name: {name}\n  seed: 7\n" + body)
    from duetbench.config import load_config

    return load_config(path)


def _journal(root: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines() if x]


def _events(root: Path) -> list[dict[str, Any]]:
    path = root / "cluster.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x] if path.exists() else []


def _runs(root: Path) -> dict[str, dict[str, Any]]:
    return {
        p.name: json.loads((p / "run.json").read_text())
        for p in (root / "runs").iterdir()
        if not p.name.startswith(".")
    }


def _no_overlap_per_host(runs: dict[str, dict[str, Any]]) -> None:
    by_host: dict[str, list[tuple[int, int, str]]] = {}
    for rid, r in runs.items():
        by_host.setdefault(r["host"], []).append((r["start_ns"], r["end_ns"], rid))
    for host, spans in by_host.items():
        spans.sort()
        for (_s0, e0, r0), (s1, _e1, r1) in zip(spans, spans[1:], strict=False):
            assert e0 <= s1, f"{host} ran {r0} and {r1} at the same time"


# ----------------------------------------------------------------------------- pure parts


def test_balanced_assignment_spreads_repetitions_and_keeps_seqn_pairs_together():
    exp = loads_config(
        """
experiment: {name: b, seed: 3, repetitions: {seqn: 5, aduet: 4}}
benchmarks:
  x: {command: "true"}
  y: {command: "true"}
"""
    )
    plan = make_plan(exp)
    pins = balanced_assignment(plan, ["h2", "h1"], exp.seed)
    assert pins == balanced_assignment(plan, ["h1", "h2"], exp.seed)  # host order irrelevant
    load = Counter(pins.values())
    assert abs(load["h1"] - load["h2"]) <= 2
    for bench in ("x", "y"):
        a = Counter(pins[f"{bench}.seqn.{r:03d}.A"] for r in range(5))
        for r in range(5):
            assert pins[f"{bench}.seqn.{r:03d}.A"] == pins[f"{bench}.seqn.{r:03d}.B"]
        assert sorted(a.values()) == [2, 3]
        assert sorted(Counter(pins[f"{bench}.aduet.{r:03d}"] for r in range(4)).values()) == [2, 2]
    other = balanced_assignment(make_plan(exp), ["h1", "h2"], exp.seed + 1)
    assert other != pins  # drawn from the seed


def test_check_host_requirements():
    info = {
        "host": "bench-07",
        "cpu_model": "Intel(R) Xeon(R) Gold 6230",
        "cores": 8,
        "cpus_available": list(range(8)),
        "memory_bytes": 16_000_000_000,
        "kernel": "6.1.0-18-amd64",
        "virtualization": "kvm",
        "container_engines": ["podman"],
        "machine": "x86_64",
        "os": "Linux-6.1",
    }
    assert check_host({"cpu_model": ("Xeon.*",), "min_cores": 2, "min_memory_gb": 4}, info) == []
    assert check_host({"container_engine": ("docker", "podman"), "host": ("^bench-",)}, info) == []
    problems = check_host(
        {
            "cpu_model": ("EPYC",),
            "min_cores": 16,
            "max_memory_gb": 8,
            "container_engine": ("docker",),
        },
        info,
    )
    assert len(problems) == 4 and any("EPYC" in p for p in problems)
    with pytest.raises(ConfigError, match="cpu_modl"):
        loads_config(
            "experiment: {name: x, hosts: {cpu_modl: Xeon}}\nbenchmarks: {a: {command: 'true'}}\n"
        )
    exp = loads_config(
        "experiment: {name: x, hosts: {cpu_model: Xeon, min_memory_gb: 4}}\n"
        "benchmarks: {a: {command: 'true'}}\n"
    )
    assert dict(exp.hosts) == {"cpu_model": ("Xeon",), "min_memory_gb": 4.0}


def test_host_health_flags_only_a_host_far_worse_than_the_others():
    good = {"ok": 10}
    flagged = host_health(
        {"a": good, "b": good, "c": good, "bad": {"ok": 6, "failed": 3, "lost": 1}}
    )
    assert [h for h, v in flagged.items() if v["flagged"]] == ["bad"]
    assert "4 of 10" in flagged["bad"]["reason"]
    even = host_health({h: {"ok": 5, "failed": 5} for h in "abcd"})  # the benchmark, not a host
    assert not any(v["flagged"] for v in even.values())
    assert not host_health({"alone": {"failed": 9, "ok": 1}})["alone"]["flagged"]
    assert not host_health({"a": good, "b": {"ok": 9, "failed": 1}})["b"]["flagged"]


# ----------------------------------------------------------------------------- on a cluster

BODY = """
  repetitions: {seqn: 1, aduet: 1, sduet: 1}
defaults:
  iterations: 2
benchmarks:
  s1:
    command: "sleep 0.05"
  s2:
    A: {command: "sleep 0.05"}
    B: {command: "sleep 0.07"}
  bad:
    repetitions: {seqn: 0, aduet: 1, sduet: 0}
    command: sh -c 'exit 3'
  env:
    repetitions: {seqn: 0, aduet: 1, sduet: 0}
    iterations: 1
    command: echo "${OMP_NUM_THREADS:-unset} ${MALLOC_TRIM_THRESHOLD_:-unset}" > env.txt
"""


def test_cluster_run_has_the_layout_of_a_local_run_and_hosts_never_overlap(
    tmp_path, cluster, capsys, monkeypatch
):
    _ready(cluster)
    exp = _config(tmp_path, BODY)
    rec = Recorder()
    summary = run_experiment_cluster(exp, tmp_path / "cl", address=cluster["address"], observer=rec)
    local = run_experiment(exp, tmp_path / "lo")
    root, lroot = tmp_path / "cl" / "c", tmp_path / "lo" / "c"
    plan_ids = [r.run_id for r in make_plan(exp)]

    assert not summary.interrupted and rec.summary is summary
    assert summary.statuses == local.statuses == {"ok": 9, "failed": 1}
    journal = _journal(root)
    assert sorted(e["run_id"] for e in journal) == sorted(plan_ids)  # each run exactly once
    assert sorted(rec.finished) == sorted(plan_ids)
    assert rec.started == plan_ids  # handed out in plan (RMIT) order, each once
    runs, lruns = _runs(root), _runs(lroot)
    assert sorted(runs) == sorted(lruns) == sorted(plan_ids)
    for rid in plan_ids:
        assert list(runs[rid]) == list(lruns[rid])  # same run.json keys
        assert runs[rid]["status"] == lruns[rid]["status"]
        for pair, side in runs[rid]["sides"].items():
            # `ran_on` is there when the watch saw the side running (execute/cpuwatch.py)
            def keys(d: dict) -> list[str]:
                return [k for k in d if k != "ran_on"]

            assert keys(side) == keys(lruns[rid]["sides"][pair])
            # run.json names the side's directory where it is now, not on the worker
            assert side["cwd"] == str((root / "runs" / rid / pair).resolve())
            assert lruns[rid]["sides"][pair]["cwd"] == str((lroot / "runs" / rid / pair).resolve())
        files = sorted(
            str(p.relative_to(root / "runs" / rid)) for p in (root / "runs" / rid).rglob("*")
        )
        lfiles = sorted(
            str(p.relative_to(lroot / "runs" / rid)) for p in (lroot / "runs" / rid).rglob("*")
        )
        assert files == lfiles
    assert sorted(journal[0]) == sorted(_journal(lroot)[0])
    # Dask's nanny sets OMP_NUM_THREADS=1, MALLOC_TRIM_THRESHOLD_... in its workers; runs must
    # not see them (they would behave unlike the same run without --cluster)
    env_txt = (root / "runs" / "env.aduet.000" / "A" / "env.txt").read_text()
    assert env_txt == (lroot / "runs" / "env.aduet.000" / "A" / "env.txt").read_text()
    hosts = sorted(p.stem for p in (root / "hosts").glob("*.json"))
    assert hosts == [f"{cluster['prefix']}-w{i}" for i in range(N_WORKERS)]
    host_keys = {tuple(json.loads(p.read_text())) for p in (root / "hosts").glob("*.json")}
    assert host_keys == {tuple(json.loads(p.read_text())) for p in (lroot / "hosts").glob("*.json")}
    used = Counter(r["host"] for r in runs.values())
    assert len(used) == N_WORKERS and set(used) == set(hosts)
    _no_overlap_per_host(runs)
    # a run that fails for its own reasons is final: dispatched once, never lost or retried
    events = _events(root)
    assert [e["run_id"] for e in events if e["event"] == "dispatched"] == plan_ids
    assert not [e for e in events if e["event"] == "lost"]
    report = hosts_report(root)
    assert [r["health"] for r in report["hosts"]] == ["ok"] * N_WORKERS
    assert sum(r["runs"]["ok"] for r in report["hosts"]) == 9
    r = run_duet("hosts", str(root), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hosts"] == json.loads(json.dumps(report["hosts"]))
    from duetbench.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    assert main(["hosts", str(root)]) == 0
    assert f"{cluster['prefix']}-w0" in capsys.readouterr().out


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_worker_killed_mid_run_is_retried_on_another_host(tmp_path, cluster):
    _ready(cluster)
    token = f"slow-{uuid.uuid4().hex[:8]}"
    hold = make_hold(tmp_path, 0, token)  # every call holds until the killer releases it
    exp = _config(
        tmp_path,
        f"""
  retries: 1
  schedule: sequential
defaults:
  iterations: 1
benchmarks:
  slow:
    repetitions: {{aduet: 1}}
    command: "{hold.command}"
  fast:
    repetitions: {{seqn: 2}}
    command: "sleep 0.05"
""",
    )
    killed: dict[str, Any] = {}

    def killer() -> None:
        try:
            wait_until(lambda: hold.calls() == 2, "both sides of the slow run held")
            pids = pids_with(token)
            driver = _parent(pids[0])
            while "duetbench.execute.driver" not in _cmdline(driver):  # (a shell between)
                driver = _parent(driver)
            worker = _parent(driver)
            env = Path(f"/proc/{driver}/environ").read_bytes().split(b"\0")
            killed["host"] = next(
                e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"DUET_HOST_NAME=")
            )
            killed["workloads"] = pids
            killed["worker"] = worker
            os.kill(worker, signal.SIGKILL)

            def gone() -> bool:
                return not any(Path(f"/proc/{p}").exists() and ") Z " not in _stat(p) for p in pids)

            wait_until(gone, "the killed worker's workloads gone")  # (the hold never ends them)
            killed["workloads_gone"] = True
        except BaseException as exc:  # reported by the main thread
            killed["error"] = repr(exc)
        finally:
            hold.release()  # the retry (and a run never seen) can finish

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    summary = run_experiment_cluster(exp, tmp_path / "res", address=cluster["address"])
    t.join(timeout=HANG_S)
    root = tmp_path / "res" / "c"
    assert "error" not in killed, killed.get("error")
    assert killed.get("workloads_gone"), "the workload outlived its killed worker"
    assert not summary.interrupted
    journal = _journal(root)
    ids = [e["run_id"] for e in journal]
    assert sorted(ids) == sorted(
        [
            "slow.aduet.000",
            "fast.seqn.000.A",
            "fast.seqn.000.B",
            "fast.seqn.001.A",
            "fast.seqn.001.B",
        ]
    )
    assert len(ids) == len(set(ids))
    assert all(e["status"] == "ok" for e in journal)
    slow = _runs(root)["slow.aduet.000"]
    assert slow["host"] != killed["host"]  # retried elsewhere
    lost = [e for e in _events(root) if e["event"] == "lost"]
    assert [(e["run_id"], e["host"]) for e in lost] == [("slow.aduet.000", killed["host"])]
    assert summary.hosts[killed["host"]]["counts"].get("lost") == 1
    report = {r["host"]: r for r in hosts_report(root)["hosts"]}
    assert report[killed["host"]]["runs"]["lost"] == 1
    assert hold.calls() == 4  # 2 sides of the lost try, 2 of the retry
    wait_until(lambda: pids_with(token) == [], "no workload left")
    # the killed worker could not remove its run directory; the retry's worker did
    assert _run_dirs_of(killed["worker"]) == []


def _run_dirs_of(pid: int) -> list[Path]:
    import tempfile

    from duetbench.schedule.cluster.worker import OWNER_FILE

    out = []
    for d in Path(tempfile.gettempdir()).glob("duet-*"):
        with suppress(OSError):
            if (d / OWNER_FILE).read_text().split()[-2] == str(pid):  # pid, start time
                out.append(d)
    return out


def test_run_directories_of_killed_workers_are_swept_and_only_those(tmp_path):
    """A worker killed mid-run leaves its run directory; the next run on the machine
    removes it -- never a live worker's, another machine's (a shared DUET_WORK_DIR) or a
    directory without an owner file."""
    from duetbench.schedule.cluster.worker import OWNER_FILE, _owner, sweep_dead_workers_dirs

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    me = _owner()
    machine = me.rsplit(" ", 2)[0]  # host boot (then pid and start time)
    host, boot = machine.split(" ", 1)
    dead = f"{gone.pid} 123456"  # its start time when it was alive
    dirs = {
        "dead": f"{machine} {dead}",
        "alive": me,
        "elsewhere": f"other-host {boot} {dead}",
        "rebooted": f"{host} another-boot {dead}",
        "no-owner": None,
    }
    for name, owner in dirs.items():
        d = tmp_path / f"duet-abc-{name}-x"
        (d / "run" / "A").mkdir(parents=True)
        if owner is not None:
            (d / OWNER_FILE).write_text(owner + "\n")
    (tmp_path / "unrelated").mkdir()
    (tmp_path / "unrelated" / OWNER_FILE).write_text(f"{machine} {dead}\n")
    removed = sweep_dead_workers_dirs(str(tmp_path))
    assert [d.name for d in removed] == ["duet-abc-dead-x"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [
            "duet-abc-alive-x",
            "duet-abc-elsewhere-x",
            "duet-abc-rebooted-x",
            "duet-abc-no-owner-x",
            "unrelated",
        ]
    )


def test_balanced_design_keeps_each_seqn_repetition_on_one_host(tmp_path, cluster):
    _ready(cluster)
    exp = _config(
        tmp_path,
        """
  design: balanced
  repetitions: {seqn: 3, aduet: 3}
defaults:
  iterations: 1
benchmarks:
  x: {command: "true"}
  y: {command: "true"}
""",
    )
    summary = run_experiment_cluster(exp, tmp_path / "res", address=cluster["address"])
    root = tmp_path / "res" / "c"
    assert summary.statuses == {"ok": 18}
    runs = _runs(root)
    hosts = [f"{cluster['prefix']}-w{i}" for i in range(N_WORKERS)]
    assert runs.keys() == balanced_assignment(make_plan(exp), hosts, exp.seed).keys()
    pins = balanced_assignment(make_plan(exp), hosts, exp.seed)
    assert {rid: r["host"] for rid, r in runs.items()} == pins
    for bench in ("x", "y"):
        for rep in range(3):
            assert (
                runs[f"{bench}.seqn.{rep:03d}.A"]["host"]
                == runs[f"{bench}.seqn.{rep:03d}.B"]["host"]
            )
        # 3 repetitions over 3 hosts: each host runs exactly one A, one B and one duet
        for method_runs in (
            [f"{bench}.seqn.{r:03d}.A" for r in range(3)],
            [f"{bench}.seqn.{r:03d}.B" for r in range(3)],
            [f"{bench}.aduet.{r:03d}" for r in range(3)],
        ):
            assert sorted(runs[rid]["host"] for rid in method_runs) == hosts
    _no_overlap_per_host(runs)


def test_host_requirements_exclude_a_worker(tmp_path, cluster):
    _ready(cluster)
    exp = _config(
        tmp_path,
        """
  hosts: {host: "-w[01]$", min_cores: 1, min_memory_gb: 0.1}
  repetitions: {seqn: 2, aduet: 2}
defaults:
  iterations: 1
benchmarks:
  x: {command: "true"}
""",
    )
    summary = run_experiment_cluster(exp, tmp_path / "res", address=cluster["address"])
    root = tmp_path / "res" / "c"
    excluded = f"{cluster['prefix']}-w2"
    assert summary.statuses == {"ok": 6}
    used = {r["host"] for r in _runs(root).values()}
    assert used == {f"{cluster['prefix']}-w0", f"{cluster['prefix']}-w1"}
    assert not summary.hosts[excluded]["eligible"]
    assert any(excluded in n and "excluded" in n for n in summary.notes)
    rows = {r["host"]: r for r in hosts_report(root)["hosts"]}
    assert rows[excluded]["health"] == "excluded" and "host is" in rows[excluded]["reason"]
    # nothing matches: a clear error, not a hang
    exp2 = _config(
        tmp_path,
        '  hosts: {cpu_model: "no-such-cpu"}\nbenchmarks:\n  x: {command: "true"}\n',
        name="none",
    )
    from duetbench.errors import ExecutorError

    with pytest.raises(ExecutorError, match="no-such-cpu"):
        run_experiment_cluster(exp2, tmp_path / "res", address=cluster["address"])


def test_cli_local_cluster_coordinator_crash_then_resume(tmp_path):
    """`duet run --cluster local:2`, SIGKILLed mid-experiment: no workload survives, and
    `--resume` completes it with every run exactly once."""
    token = f"crash-{uuid.uuid4().hex[:8]}"
    # 2 calls per seqn run: the first 4 calls end, later ones hold; with two workers two
    # runs are in progress when the coordinator is killed, after one or two finished
    hold = make_hold(tmp_path, 4, token)
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        f"""
experiment:
  name: t
  seed: 1
  schedule: sequential
  repetitions: {{seqn: 2, aduet: 3}}
defaults:
  iterations: 2
benchmarks:
  slow:
    command: "{hold.command}"
"""
    )
    out = tmp_path / "res"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "duetbench",
            "run",
            str(cfg),
            "-o",
            str(out),
            "--cluster",
            "local:2",
            "--no-compare",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, COLUMNS="200"),
    )
    journal = out / "t" / "journal.jsonl"
    try:
        wait_until(lambda: hold.calls() == 6, "two runs in progress on the two workers")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    wait_until(lambda: pids_with(token) == [], "no workload left after the coordinator's SIGKILL")
    done_before = {json.loads(x)["run_id"] for x in journal.read_text().splitlines()}
    assert 1 <= len(done_before) <= 2 and all(".seqn." in r for r in done_before)
    hold.release()
    r = run_duet(
        "run", str(cfg), "-o", str(out), "--cluster", "local:2", "--resume", "--no-compare"
    )
    assert r.returncode == 0, r.stderr
    entries = _journal(out / "t")
    ids = [e["run_id"] for e in entries]
    assert len(ids) == len(set(ids)) == 7
    assert set(ids) >= done_before  # kept, not re-run
    assert all(e["status"] == "ok" for e in entries)
    assert sorted(
        p.name for p in (out / "t" / "runs").iterdir() if not p.name.startswith(".")
    ) == sorted(ids)
    _no_overlap_per_host(_runs(out / "t"))
    assert pids_with(token) == []


KILL_WORKER = """
import os, signal
def parent(p):
    return int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
p = os.getppid()
while "duetbench.execute.driver" not in open(f"/proc/{p}/cmdline").read():
    p = parent(p)
os.kill(parent(p), signal.SIGKILL)  # the Dask worker running this run
"""


def test_run_that_keeps_killing_its_worker_is_given_up_after_the_retries(tmp_path, cluster):
    _ready(cluster)
    script = tmp_path / "kill_worker.py"
    script.write_text(KILL_WORKER)
    exp = _config(
        tmp_path,
        f"""
  retries: 1
  schedule: sequential
defaults:
  iterations: 1
benchmarks:
  killer:
    repetitions: {{aduet: 1}}
    command: {sys.executable} {script}
  fine:
    repetitions: {{seqn: 1}}
    command: "true"
""",
    )
    summary = run_experiment_cluster(exp, tmp_path / "res", address=cluster["address"])
    root = tmp_path / "res" / "c"
    assert summary.statuses == {"ok": 2, "interrupted": 1}
    assert {e["run_id"] for e in _journal(root)} == {"fine.seqn.000.A", "fine.seqn.000.B"}
    lost = [e for e in _events(root) if e["event"] == "lost"]
    assert [e["run_id"] for e in lost] == ["killer.aduet.000"] * 2  # 1 try + 1 retry
    assert lost[0]["host"] != lost[1]["host"]  # the retry went to another host
    killer = _runs(root)["killer.aduet.000"]
    assert killer["status"] == "interrupted" and "lost 2 time(s)" in killer["message"]
    assert any("killer.aduet.000" in n and "--resume" in n for n in summary.notes)
    rows = {r["host"]: r for r in hosts_report(root)["hosts"]}
    assert sum(r["runs"]["lost"] for r in rows.values()) == 2
    assert sum(r["runs"]["interrupted"] for r in rows.values()) == 0  # not counted twice


def test_cluster_run_json_keeps_its_keys_and_reads_back_byte_for_byte(tmp_path, cluster):
    """The coordinator relocates the worker's typed run record (records.py) and writes the
    keys, in the order, of the fixtures written before records were typed; a run lost on
    every attempt gets the record it always got."""
    from tests.helpers import RUN_JSON_FIXTURES, as_written, placed, run_json_generator, shape

    from duetbench.config import load_config
    from duetbench.records import RunRecord
    from duetbench.schedule.cluster.coordinator import lost_record

    _ready(cluster)
    cfg = tmp_path / "duet.yml"
    cfg.write_text(run_json_generator().CLUSTER)
    exp = load_config(cfg)
    summary = run_experiment_cluster(exp, tmp_path / "res", address=cluster["address"])
    assert summary.statuses == {"ok": 1}
    path = tmp_path / "res" / "cluster" / "runs" / "d.aduet.000" / "run.json"
    raw = path.read_text()
    assert as_written(RunRecord.from_json(json.loads(raw)).to_json()) == raw
    before = json.loads((RUN_JSON_FIXTURES / "cluster-d.aduet.000.json").read_text())
    assert shape(placed(json.loads(raw))) == shape(before)
    lost = lost_record(make_plan(exp)[0], "h-w0", "local", "lost 1 time(s) on host(s) h-w0: x")
    before = json.loads((RUN_JSON_FIXTURES / "cluster-lost-d.aduet.000.json").read_text())
    assert shape(lost.to_json()) == shape(before)
    assert as_written(RunRecord.from_json(before).to_json()) == as_written(before)
