"""ResultsStore's own API, without executing anything: where files go, run records in and out,
host files, the cluster log. (tests/test_store.py: journal, resume, lock, atomic writes;
tests/test_damage.py: every kind of damage.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duetbench.errors import ResultsDirError
from duetbench.records import RunRecord, SideRecord
from duetbench.schema import RunStatus, SideStatus
from duetbench.store import ResultsStore
from duetbench.store.layout import host_file_name

PLAN = [{"run_id": "b.aduet.000"}, {"run_id": "b.aduet.001"}, {"run_id": "b.seqn.000.A"}]


def record(run_id: str, status: str = RunStatus.OK, **extra: object) -> RunRecord:
    sides = {
        n: SideRecord(n, cpus=(i,), status=SideStatus.OK, start_ns=10, end_ns=20, iterations=1)
        for i, n in enumerate("AB")
    }
    data = RunRecord(
        run_id, "b", "aduet", status, suite="s", rep=0, order="AB", host="h", sides=sides
    ).to_json()
    return RunRecord.from_json({**data, **extra})


def commit(store: ResultsStore, rec: RunRecord) -> Path:
    tmp = store.new_run_dir(rec.run_id)
    for name in rec.sides:
        (tmp / name).mkdir()
        (tmp / name / "iterations.csv").write_text("iteration,start_ns,end_ns\n0,10,20\n")
    return store.commit_run(tmp, rec)


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    return ResultsStore.create(tmp_path / "my results" / "exp", {"name": "exp", "seed": 3}, PLAN)


def test_a_new_store_has_the_documented_layout(store: ResultsStore):
    root = store.root
    assert sorted(p.name for p in root.iterdir()) == [
        "experiment.json",
        "hosts",
        "journal.jsonl",
        "runs",
    ]
    exp = json.loads((root / "experiment.json").read_text())
    assert (exp["name"], exp["seed"], exp["plan"]) == ("exp", 3, PLAN)
    assert store.plan() == PLAN and store.plan_ids() == {r["run_id"] for r in PLAN}
    assert store.has_experiment() and not ResultsStore(root.parent).has_experiment()
    assert store.table_path == root / "iterations.parquet"
    assert store.run_json_path("b.aduet.000") == root / "runs" / "b.aduet.000" / "run.json"
    assert store.cluster_log_path == root / "cluster.jsonl"


def test_a_committed_record_reads_back_with_its_file_list(store: ResultsStore):
    rec = record("b.aduet.000", future_key=[1, 2])
    final = commit(store, rec)
    assert final == store.run_dir("b.aduet.000") and final.is_dir()
    back = store.read_run("b.aduet.000")
    assert back is not None and back.files is not None
    assert sorted(back.files) == ["A/iterations.csv", "B/iterations.csv"]
    assert back == rec.with_files(back.files)  # nothing lost, unknown keys included
    assert back.extra == {"future_key": [1, 2]}
    assert [e["run_id"] for e in store.journal()] == ["b.aduet.000"]
    assert store.finished()["b.aduet.000"]["status"] == "ok"
    assert store.usable_runs() == [("b.aduet.000", back)]


def test_an_interrupted_run_is_kept_but_not_journaled(store: ResultsStore):
    commit(store, record("b.aduet.001", RunStatus.INTERRUPTED))
    assert store.journal() == [] and store.finished() == {}
    ((rid, rec),) = store.usable_runs()
    assert (rid, rec.status) == ("b.aduet.001", "interrupted")


def test_an_unusable_run_json_reads_as_none_without_an_error(store: ResultsStore):
    commit(store, record("b.aduet.000"))
    store.run_json_path("b.aduet.000").write_text('{"run_id": "b.aduet.000"}')
    assert store.read_run("b.aduet.000") is None
    assert list(store.runs()) == [("b.aduet.000", None)]
    run, problem = store.check_run("b.aduet.000", None)
    assert run is None and "lacks 'status', 'benchmark', 'method', 'sides'" in str(problem)


def test_host_files_are_named_safely_and_read_by_host_name(store: ResultsStore):
    store.write_host("rack 1/node:7", {"host": "rack 1/node:7", "cores": 4})
    assert host_file_name("rack 1/node:7") == "rack_1_node_7.json"
    assert (store.root / "hosts" / "rack_1_node_7.json").is_file()
    assert store.has_host("rack 1/node:7") and not store.has_host("other")
    assert store.hosts() == {"rack 1/node:7": {"host": "rack 1/node:7", "cores": 4}}


def test_the_cluster_log_skips_lines_it_cannot_read(store: ResultsStore):
    assert store.cluster_events() == []
    store.log_cluster_event({"event": "worker_joined", "host": "h"})
    with open(store.cluster_log_path, "ab") as f:
        f.write(b"\xff not json\n[1, 2]\n")
    store.log_cluster_event({"event": "lost", "host": "h"})
    events = store.cluster_events()
    assert [e["event"] for e in events] == ["worker_joined", "lost"]
    assert all(isinstance(e["ns"], int) for e in events)


def test_every_finished_status_is_journaled_and_never_executed_again(store: ResultsStore):
    statuses = {
        "b.aduet.000": RunStatus.FAILED,
        "b.aduet.001": RunStatus.HUNG,
        "b.seqn.000.A": RunStatus.TIMEOUT,
    }
    for rid, status in statuses.items():
        commit(store, record(rid, status))
    assert {rid: e["status"] for rid, e in store.finished().items()} == statuses
    assert [rid for rid, _ in store.usable_runs()] == sorted(statuses)
    assert store.run_ids() == sorted(statuses)


def test_a_run_directory_that_is_not_in_the_plan_is_named_not_skipped(store: ResultsStore):
    commit(store, record("b.aduet.000"))
    stranger = store.root / "runs" / "other.aduet.000"
    stranger.mkdir()
    (stranger / "run.json").write_text("{}")
    with pytest.raises(ResultsDirError, match=r"runs/other\.aduet\.000 is not a run of this"):
        store.usable_runs()
