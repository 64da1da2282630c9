"""The results directory: ResultsStore (journal, damage checks, resume), the experiment lock
(two `duet run` on one directory), and atomic writes of every file duet writes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from tests.helpers import duet_in_process, run_duet

from duetbench.atomic import write_atomic
from duetbench.cli import main
from duetbench.errors import DuetError, ResultsDirError
from duetbench.records import RunRecord
from duetbench.store import ExperimentLock, ResultsStore
from duetbench.store.layout import LOCK_FILE as LOCK_NAME

PLAN = [{"run_id": f"b.aduet.{i:03d}"} for i in range(4)]
CSV_HEADER = "iteration,start_ns,end_ns,duration_ns,filler,exit_code\n"
DEADLINE_S = 180  # only catches hangs


def commit(store: ResultsStore, run_id: str, status: str = "ok", rows: int = 3) -> Path:
    """A run as an executor leaves it: side directories with files, then commit_run."""
    tmp = store.new_run_dir(run_id)
    for pair in "AB":
        (tmp / pair).mkdir()
        lines = [f"{i},{1000 * i},{1000 * i + 500},500,0,0\n" for i in range(rows)]
        (tmp / pair / "iterations.csv").write_text(CSV_HEADER + "".join(lines))
        (tmp / pair / "stdout.log").write_text(f"side {pair}\n")
    record = {
        "run_id": run_id,
        "status": status,
        "benchmark": "b",
        "method": "aduet",
        "rep": int(run_id.rsplit(".", 1)[1]),
        "order": "AB",
        "host": "h",
        "spec": {"harness": "command"},
        "sides": {p: {"start_ns": 0, "end_ns": 1000 * rows, "cpus": [0]} for p in "AB"},
    }
    return store.commit_run(tmp, RunRecord.from_json(record))


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    s = ResultsStore.create(tmp_path / "exp", {"name": "exp", "seed": 1}, PLAN)
    for r in PLAN[:3]:
        commit(s, r["run_id"])
    return s


def journal_lines(store: ResultsStore) -> list[bytes]:
    return store.journal_path.read_bytes().splitlines(keepends=True)


# ---------------------------------------------------------------------- ResultsStore


def test_commit_records_every_file_and_journals_the_run_json_digest(store):
    run = json.loads((store.runs_dir / "b.aduet.000" / "run.json").read_text())
    assert sorted(run["files"]) == [
        "A/iterations.csv",
        "A/stdout.log",
        "B/iterations.csv",
        "B/stdout.log",
    ]
    assert run["files"]["A/stdout.log"]["bytes"] == len("side A\n")
    entries = store.journal()
    assert [e["run_id"] for e in entries] == ["b.aduet.000", "b.aduet.001", "b.aduet.002"]
    assert all(len(e["run_sha256"]) == 64 for e in entries)
    assert [rid for rid, _ in store.usable_runs()] == [e["run_id"] for e in entries]
    assert not list(store.runs_dir.glob(".tmp-*"))


def test_create_refuses_a_directory_with_content_but_not_a_left_lock_file(tmp_path):
    root = tmp_path / "exp"
    root.mkdir()
    (root / LOCK_NAME).write_text("{}")  # a `duet run` killed right after locking
    ResultsStore.create(root, {"name": "exp", "seed": 1}, PLAN)
    with pytest.raises(ResultsDirError, match="not empty"):
        ResultsStore.create(root, {"name": "exp", "seed": 1}, PLAN)


def test_open_for_reading_writes_nothing(store):
    (store.root / "journal.jsonl").unlink()
    before = sorted(p.name for p in store.root.iterdir())
    assert len(ResultsStore.open(store.root).usable_runs()) == 3
    assert sorted(p.name for p in store.root.iterdir()) == before


def test_torn_last_journal_line_is_cut_and_its_run_taken_from_its_directory(store):
    """A crash while appending the third entry: readers ignore the torn line (the run's
    directory is complete), --resume cuts it and journals the run once, on a line of its own."""
    lines = journal_lines(store)
    store.journal_path.write_bytes(b"".join(lines[:2]) + lines[2][:40])
    assert [e["run_id"] for e in store.journal()] == ["b.aduet.000", "b.aduet.001"]
    assert len(store.usable_runs()) == 3  # the run is complete: it counts
    assert store.prepare_resume() == ["b.aduet.002"]
    data = store.journal_path.read_bytes()
    assert data.endswith(b"\n")
    entries = [json.loads(x) for x in data.splitlines()]  # every line whole
    assert sorted(e["run_id"] for e in entries) == ["b.aduet.000", "b.aduet.001", "b.aduet.002"]
    commit(store, "b.aduet.003")  # the next entry starts its own line
    assert [e["run_id"] for e in store.journal()][-1] == "b.aduet.003"
    assert len(store.journal()) == 4


def test_a_complete_last_entry_that_lost_its_newline_is_kept(store):
    store.journal_path.write_bytes(store.journal_path.read_bytes().rstrip(b"\n"))
    assert len(store.journal()) == 3
    assert store.prepare_resume() == []
    commit(store, "b.aduet.003")
    assert [e["run_id"] for e in store.journal()] == [r["run_id"] for r in PLAN]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"status": "ok"}', "has no run_id"),
        (b'{"run_id": "b.aduet.000", "status": "exploded"}', "status 'exploded'"),
        (b'{"run_id": "zzz.seqn.000.A", "status": "ok"}', "not in this experiment's plan"),
    ],
)
def test_a_damaged_journal_line_is_an_error_naming_the_line(store, line, why):
    lines = journal_lines(store)
    lines.insert(1, line + b"\n")
    store.journal_path.write_bytes(b"".join(lines))
    for read in (store.usable_runs, store.finished, store.prepare_resume):
        with pytest.raises(ResultsDirError, match=f"line 2: .*{why}") as exc:
            read()
        assert "Delete that line" in str(exc.value)


def test_resume_sets_a_damaged_run_aside_and_it_is_executed_again(store):
    (store.runs_dir / "b.aduet.001" / "B" / "iterations.csv").write_text(CSV_HEADER)
    with pytest.raises(ResultsDirError, match=r"run b\.aduet\.001: .*B/iterations\.csv has"):
        store.usable_runs()
    assert store.prepare_resume() == []
    assert list(store.damaged) == ["b.aduet.001"]
    assert "b.aduet.001" not in store.finished()  # so the runner executes it again
    assert list((store.runs_dir / ".superseded").glob("b.aduet.001.*.damaged"))
    with pytest.raises(ResultsDirError, match="has not executed it again yet"):
        store.usable_runs()
    commit(store, "b.aduet.001")
    assert "b.aduet.001" in store.finished()
    assert len(store.usable_runs()) == 3
    statuses = [e["status"] for e in store.journal() if e["run_id"] == "b.aduet.001"]
    assert statuses == ["ok", "damaged", "ok"]


def test_an_unjournaled_unfinished_or_foreign_run_is_set_aside_on_resume(store):
    tmp = store.new_run_dir("b.aduet.003")
    (tmp / "half").write_text("x")
    commit(store, "b.aduet.003", status="interrupted")
    (store.runs_dir / "stray.txt").write_text("x")
    with pytest.raises(ResultsDirError, match=r"runs/stray\.txt is not a run"):
        store.usable_runs()
    assert store.prepare_resume() == []
    assert store.moved_aside == ["runs/stray.txt is not a run of this experiment"]
    assert sorted(p.name for p in store.runs_dir.iterdir() if p.name[0] != ".") == [
        "b.aduet.000",
        "b.aduet.001",
        "b.aduet.002",
    ]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda s: s.experiment_path.write_text("[]"), "experiment.json is not a JSON object"),
        (lambda s: s.experiment_path.write_bytes(b"\xff"), "experiment.json is not valid JSON"),
        (lambda s: (s.hosts_dir / "h.json").write_text('"h"'), "h.json is not a JSON object"),
        (lambda s: (s.hosts_dir / "h.json").write_text("{"), "h.json is not valid JSON"),
    ],
)
def test_damaged_json_files_are_results_dir_errors(store, damage, why):
    damage(store)
    with pytest.raises(ResultsDirError, match=why):
        ResultsStore.open(store.root).hosts()
    with pytest.raises(ResultsDirError, match=why):
        ResultsStore.open(store.root, writable=True).prepare_resume()


def test_an_unreadable_results_root_is_a_results_dir_error(store, monkeypatch, capsys):
    """Tests run as root, who can read anything: the refusal of the file system is simulated."""
    real_stat, real_listdir = os.stat, os.listdir
    inside = str(store.root)

    def refuse(fn):
        def wrapped(path, *a, **kw):
            if str(path).startswith(inside):
                raise PermissionError(13, "Permission denied", str(path))
            return fn(path, *a, **kw)

        return wrapped

    monkeypatch.setattr(os, "stat", refuse(real_stat))
    assert main(["process", str(store.root)]) == 2
    assert "Permission denied" in capsys.readouterr().err
    monkeypatch.setattr(os, "stat", real_stat)
    monkeypatch.setattr(os, "listdir", refuse(real_listdir))
    for args in (["process", str(store.root)], ["compare", str(store.root)]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "cannot read" in err and "Permission denied" in err


# ---------------------------------------------------------------------- the lock


def test_a_held_lock_is_refused_naming_the_holder_and_free_after_release(tmp_path):
    root = tmp_path / "res" / "exp"
    first = ExperimentLock.acquire(root)
    assert first.held
    with pytest.raises(ResultsDirError) as exc:
        ExperimentLock.acquire(root)
    msg = str(exc.value)
    assert f"pid {os.getpid()}" in msg and "started" in msg and "command:" in msg
    first.release()
    assert not root.exists()  # it held nothing but the lock: removed with what it created
    assert tmp_path.exists() and not (tmp_path / "res").exists()
    with ExperimentLock.acquire(root):
        (root / "experiment.json").write_text("{}")
    assert (root / LOCK_NAME).exists()  # a directory with content keeps its lock file
    ExperimentLock.acquire(root).release()


def test_a_directory_that_is_not_ours_gets_no_lock_file(tmp_path):
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "mine.txt").write_text("x")
    lock = ExperimentLock.acquire(tmp_path / "exp")
    assert not lock.held and not (tmp_path / "exp" / LOCK_NAME).exists()


def test_a_sigkilled_holder_leaves_no_stuck_lock(tmp_path):
    root = tmp_path / "exp"
    code = (
        "import sys, time\n"
        "from duetbench.store import ExperimentLock\n"
        "ExperimentLock.acquire(sys.argv[1])\n"
        "print('locked', flush=True)\n"
        "time.sleep(600)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ResultsDirError, match=f"pid {holder.pid}"):
            ExperimentLock.acquire(root)
    finally:
        holder.kill()
        holder.wait(timeout=DEADLINE_S)
    with ExperimentLock.acquire(root) as lock:
        assert lock.held
        assert json.loads((root / LOCK_NAME).read_text())["pid"] == os.getpid()


# ---------------------------------------------------------------------- two `duet run`

GATED = """
experiment:
  name: g
  seed: 2
  schedule: sequential
  repetitions: {{seqn: 1, aduet: 1}}
defaults:
  iterations: 2
  timeout: 300s
benchmarks:
  quick:
    command: "true"
  gated:
    command: "while [ ! -e '{gate}' ]; do sleep 0.02; done"
"""


def gated_config(tmp_path: Path) -> tuple[Path, Path]:
    """An experiment whose `gated` runs wait until the test opens the gate (a file)."""
    gate = tmp_path / "gate open"
    cfg = tmp_path / "duet.yml"
    cfg.write_text(GATED.format(gate=gate))
    return cfg, gate


class Duet:
    """`duet run` in the background; its stderr goes to a file (a full pipe would block it)."""

    def __init__(self, *args: str | Path) -> None:
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "duetbench", "run", *map(str, args), "--no-compare"],
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            env=dict(os.environ, COLUMNS="200"),
        )
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self) -> int:
        return self.proc.wait(timeout=DEADLINE_S)

    def stderr(self) -> str:
        self.err.seek(0)
        return " ".join(self.err.read().split())  # one line: rich wraps long messages


def wait_for(cond, what: str, poll_s: float = 0.05) -> None:
    end = time.monotonic() + DEADLINE_S
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(poll_s)


def assert_each_run_once(root: Path) -> None:
    entries = [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]
    plan = [r["run_id"] for r in json.loads((root / "experiment.json").read_text())["plan"]]
    assert sorted(e["run_id"] for e in entries) == sorted(plan)  # each exactly once
    assert {e["status"] for e in entries} == {"ok"}


def assert_refused_naming(proc: Duet, holder: Duet) -> None:
    rc = proc.wait()
    err = proc.stderr()
    assert rc == 2, err
    assert "in use by another `duet run`" in err and f"pid {holder.pid}" in err, err
    assert "duetbench run" in err and "started" in err, err  # its command line and start


@pytest.mark.parametrize(
    ("first", "second"), [("create", "create"), ("resume", "resume"), ("create", "resume")]
)
def test_two_duet_run_started_together_one_refuses_naming_the_other(tmp_path, first, second):
    cfg, gate = gated_config(tmp_path)
    out = tmp_path / "res"
    flags = {"create": [], "resume": ["--resume"]}
    a = Duet(cfg, "-o", out, *flags[first])
    b = Duet(cfg, "-o", out, *flags[second])
    # the one holding the lock waits at the gate, so the other must finish first: by refusing
    wait_for(lambda: a.poll() is not None or b.poll() is not None, "one of the two to stop")
    loser, winner = (a, b) if a.poll() is not None else (b, a)
    assert_refused_naming(loser, winner)
    gate.touch()
    assert winner.wait() == 0, winner.stderr()
    assert_each_run_once(out / "g")


def test_a_second_duet_run_leaves_the_first_ones_run_in_flight_alone(tmp_path):
    """Started seconds apart, the second used to delete the first's in-flight run directory."""
    cfg, gate = gated_config(tmp_path)
    out = tmp_path / "res"
    first = Duet(cfg, "-o", out)
    runs = out / "g" / "runs"
    wait_for(lambda: list(runs.glob(".tmp-gated.*")), "the first's gated run to be in flight")
    in_flight = list(runs.glob(".tmp-gated.*"))
    # readers are not blocked, and read what is finished
    r = duet_in_process("process", str(out / "g"), "-o", str(tmp_path / "t.csv"))
    assert r.returncode == 0, r.stderr
    assert set(pd.read_csv(tmp_path / "t.csv")["benchmark"]) == {"quick"}
    assert duet_in_process("compare", str(out / "g")).returncode == 0
    r = duet_in_process("report", str(out / "g"), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0 and (tmp_path / "r.html").stat().st_size > 0, r.stderr
    for flags in ([], ["--resume"]):
        second = Duet(cfg, "-o", out, *flags)
        assert_refused_naming(second, first)
    assert all(p.is_dir() for p in in_flight)  # untouched
    gate.touch()
    assert first.wait() == 0, first.stderr()
    assert_each_run_once(out / "g")


def test_after_a_sigkilled_duet_run_resume_proceeds(tmp_path):
    cfg, gate = gated_config(tmp_path)
    out = tmp_path / "res"
    first = Duet(cfg, "-o", out)
    runs = out / "g" / "runs"
    wait_for(lambda: list(runs.glob(".tmp-gated.*")), "a run in flight")
    first.proc.send_signal(signal.SIGKILL)
    first.wait()
    assert json.loads((out / "g" / LOCK_NAME).read_text())["pid"] == first.pid  # stale, not held
    gate.touch()
    r = run_duet("run", str(cfg), "-o", str(out), "--resume", "--no-compare")
    assert r.returncode == 0, r.stderr
    assert_each_run_once(out / "g")


def test_a_cluster_run_holds_the_lock_too(tmp_path):
    cfg, gate = gated_config(tmp_path)
    out = tmp_path / "res"
    holder = Duet(cfg, "-o", out, "--cluster", "local:1")
    runs = out / "g" / "runs"
    try:
        wait_for(lambda: (out / "g" / "experiment.json").exists(), "the cluster run to start")
        for flags in (["--resume"], ["--resume", "--cluster", "local:1"]):
            assert_refused_naming(Duet(cfg, "-o", out, *flags), holder)
    finally:
        gate.touch()
    assert holder.wait() == 0, holder.stderr()
    assert_each_run_once(out / "g")
    assert not list(runs.glob(".tmp-*"))


# ---------------------------------------------------------------------- atomic writes


def test_write_atomic_replaces_the_file_a_reader_still_holds(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old\n")
    with open(path) as reader:
        write_atomic(path, "new\n")
        assert reader.read() == "old\n"  # the old file, whole
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_write_atomic_that_fails_midway_leaves_the_old_file(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("old\n")

    def writer(p: Path) -> None:
        p.write_text("half of the new ")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_atomic(path, writer)
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]
    with pytest.raises(DuetError, match="cannot write .*No such file"):
        write_atomic(tmp_path / "missing" / "t.csv", "x")


def test_write_atomic_writes_through_a_symlink_and_into_a_fifo(tmp_path):
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    write_atomic(fifo, "through the pipe")
    assert reader.communicate(timeout=DEADLINE_S)[0] == b"through the pipe"
    assert fifo.is_fifo()


@pytest.fixture(scope="module")
def small_results(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("small")
    cfg = base / "duet.yml"
    cfg.write_text(
        "experiment: {name: s, seed: 4, repetitions: {aduet: 2, sduet: 2}}\n"
        "defaults: {iterations: 3}\n"
        "benchmarks:\n  x:\n    A: {command: 'sleep 0.01'}\n    B: {command: 'sleep 0.02'}\n"
    )
    r = run_duet("run", str(cfg), "-o", str(base / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    return base / "res" / "s"


def test_run_directories_hold_no_handshake_leftovers(small_results):
    """The drivers' done flags (``.done.A``/``.done.B``) are gone once a run is committed."""
    runs = [p for p in (small_results / "runs").iterdir() if not p.name.startswith(".")]
    assert len(runs) == 4
    for run in runs:
        assert not list(run.rglob(".done*")), run
        assert sorted(json.loads((run / "run.json").read_text())["files"]) == sorted(
            p.relative_to(run).as_posix()
            for p in run.rglob("*")
            if p.is_file() and p.name != "run.json"
        )


@pytest.mark.parametrize(
    "args",
    [
        ["process", "-o", "{out}.csv"],
        ["process", "-o", "{out}.parquet"],
        ["compare", "--format", "json", "-o", "{out}.json"],
        ["compare", "--format", "markdown", "-o", "{out}.md"],
        ["evaluate", "--format", "json", "--resamples", "99", "-o", "{out}.json"],
        ["report", "--resamples", "99", "-o", "{out}.html"],
        ["report", "--format", "markdown", "--resamples", "99", "-o", "{out}.md"],
    ],
    ids=lambda a: " ".join(a[:3]),
)
def test_every_output_file_is_replaced_atomically(small_results, tmp_path, capsys, args):
    """A reader of the old file keeps the old file, whole; the path gets the whole new one."""
    argv = [a.format(out=tmp_path / "out") for a in args]
    path = Path(argv[-1])
    path.write_bytes(b"old complete content\n")
    with open(path, "rb") as reader:
        assert main([argv[0], str(small_results), *argv[1:]]) == 0, capsys.readouterr().err
        assert reader.read() == b"old complete content\n"
    assert path.stat().st_size > 100
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def big_results(root: Path, rows: int) -> Path:
    """A results directory whose iterations table takes a while to write."""
    store = ResultsStore.create(root, {"name": "big", "seed": 1}, PLAN[:2])
    for r in PLAN[:2]:
        commit(store, r["run_id"], rows=rows)
    return root


def started_writing(out: Path, before: os.stat_result, proc: subprocess.Popen) -> bool:
    """The output changed (replaced, truncated) or a file appeared beside it, or it ended."""
    try:
        st = os.stat(out)
    except FileNotFoundError:
        return True
    was = (before.st_ino, before.st_size, before.st_mtime_ns)
    changed = (st.st_ino, st.st_size, st.st_mtime_ns) != was
    return changed or len(os.listdir(out.parent)) > 1 or proc.poll() is not None


def test_sigkill_of_duet_process_leaves_the_old_table_or_the_new_one(tmp_path, small_results):
    """SIGKILL at several points of `duet process -o` (before, while and after writing):
    the table is always the old complete file or the new complete one, never a cut one."""
    root = big_results(tmp_path / "big", rows=60_000)
    new = tmp_path / "new.csv"
    assert main(["process", str(root), "-o", str(new)]) == 0
    old = tmp_path / "old.csv"
    assert main(["process", str(small_results), "-o", str(old)]) == 0
    old_bytes, new_bytes = old.read_bytes(), new.read_bytes()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "table.csv"
    rng = random.Random(7)
    outcomes = []
    for attempt in range(8):
        out.write_bytes(old_bytes)
        before = os.stat(out)
        proc = subprocess.Popen(
            [sys.executable, "-m", "duetbench", "process", str(root), "-o", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if attempt % 2:  # at a random moment of its life
            try:
                proc.wait(timeout=rng.uniform(0.0, 6.0))
            except subprocess.TimeoutExpired:
                pass
        else:  # as soon as it starts writing: a temporary file appears, or the table changes
            started = partial(started_writing, out, before, proc)
            wait_for(started, "duet process to start writing", poll_s=0.001)
            time.sleep(rng.choice([0.0, 0.005, 0.02]))
        proc.kill()
        killed = proc.wait(timeout=DEADLINE_S) == -signal.SIGKILL
        data = out.read_bytes()
        assert data in (old_bytes, new_bytes), (
            f"attempt {attempt}: a cut table ({len(data)} bytes; old {len(old_bytes)}, "
            f"new {len(new_bytes)})"
        )
        outcomes.append((killed, data == new_bytes, len(os.listdir(out_dir)) > 1))
        for p in out_dir.iterdir():
            if p != out:
                p.unlink()
    # at least one kill fell while the new table was being written (its temporary file left)
    assert any(killed and not is_new and leftover for killed, is_new, leftover in outcomes), (
        outcomes
    )
    assert len(pd.read_csv(new)) == 2 * 2 * 60_000  # the new one is the whole table
