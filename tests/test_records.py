"""Run records (records.py): run.json read and written back byte for byte, with the keys the
executors wrote before records were typed (tests/fixtures/run_json, from every executor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers import (
    RUN_JSON_FIXTURES,
    as_written,
    placed,
    run_duet,
    run_json_generator,
    shape,
)

from duetbench.errors import ResultsDirError
from duetbench.records import RunRecord, SideRecord
from duetbench.schema import RunStatus, SideStatus

FIXTURE_FILES = sorted(RUN_JSON_FIXTURES.glob("*.json"))


def test_the_fixtures_cover_every_executor_and_outcome():
    names = {p.stem for p in FIXTURE_FILES}
    assert {n.split("-")[0] for n in names} == {"local", "podman", "cluster"}
    statuses = {json.loads(p.read_text())["status"] for p in FIXTURE_FILES}
    assert statuses == {"ok", "failed", "timeout", "hung", "interrupted"}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_run_json_of_every_executor_reads_and_writes_back_byte_for_byte(path: Path):
    raw = path.read_text()
    record = RunRecord.from_json(json.loads(raw))
    assert as_written(record.to_json()) == raw
    assert record.status in set(RunStatus)
    assert all(s.status in set(SideStatus) for s in record.sides.values())


def test_a_local_experiment_writes_run_json_with_the_keys_of_before(tmp_path: Path):
    """The local executor builds its records as frozen dataclasses now: every run.json it
    writes still has the keys, in the order, that the fixtures (written by duetbench
    before records were typed) have, and reads back byte for byte."""
    config = tmp_path / "duet.yml"
    config.write_text(run_json_generator().LOCAL)
    r = run_duet("run", str(config), "-o", str(tmp_path / "out"), "--no-compare")
    assert r.returncode == 4, r.stderr  # a failed, a timed-out and a hung run
    runs = sorted((tmp_path / "out" / "local" / "runs").glob("*/run.json"))
    assert len(runs) == 7
    for run_json in runs:
        raw = run_json.read_text()
        data = json.loads(raw)
        assert as_written(RunRecord.from_json(data).to_json()) == raw
        before = json.loads((RUN_JSON_FIXTURES / f"local-{run_json.parent.name}.json").read_text())
        assert shape(placed(data)) == shape(before), run_json.parent.name
        assert data["status"] == before["status"]


def test_unknown_keys_of_another_version_are_kept_where_they_were():
    data = json.loads((RUN_JSON_FIXTURES / "local-ok.aduet.000.json").read_text())
    files = data.pop("files")
    data["from_the_future"] = {"x": 1}
    data["files"] = files
    data["sides"]["A"]["gpu"] = "none"
    record = RunRecord.from_json(data)
    assert record.extra == {"from_the_future": {"x": 1}}
    assert record.sides["A"].extra == {"gpu": "none"}
    assert as_written(record.to_json()) == as_written(data)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: [], "is not a JSON object"),
        (lambda d: {k: v for k, v in d.items() if k != "status"}, "lacks 'status'"),
        (lambda d: {**d, "sides": []}, "wrong type (key 'sides')"),
        (lambda d: {**d, "sides": {"A": "ok"}}, "wrong type (key 'sides')"),
        (lambda d: {**d, "spec": None}, "wrong type (key 'spec')"),
        (lambda d: {**d, "all_cores_busy": "yes"}, "wrong type (key 'all_cores_busy')"),
        (lambda d: {**d, "start_ns": 1.5}, "wrong type (key 'start_ns')"),
        (lambda d: {**d, "sides": {"A": {"cpus": "0,1"}}}, "wrong type (key 'cpus')"),
        (lambda d: {**d, "sides": {"A": {"iterations": True}}}, "wrong type (key 'iterations')"),
        (lambda d: {**d, "files": ["A/x"]}, "wrong type (key 'files')"),
    ],
)
def test_a_record_that_is_not_a_run_record_is_a_results_dir_error(damage, message):
    data = json.loads((RUN_JSON_FIXTURES / "local-ok.seqn.000.A.json").read_text())
    with pytest.raises(ResultsDirError) as err:
        RunRecord.from_json(damage(data), "runs/x/run.json")
    assert str(err.value).startswith("runs/x/run.json ") and message in str(err.value)


def test_records_are_values_changed_by_copy():
    side = SideRecord("A", status=SideStatus.OK, iterations=3)
    run = RunRecord("b.aduet.000", "b", "aduet", RunStatus.OK, sides={"A": side})
    failed = run.with_status(RunStatus.FAILED, "side A: exited 1")
    assert (run.status, failed.status, failed.message) == ("ok", "failed", "side A: exited 1")
    with pytest.raises(AttributeError):
        run.status = RunStatus.HUNG  # type: ignore[misc]
    data = failed.to_json()
    assert data["sides"]["A"]["pair"] == "A" and data["status"] == "failed"
    assert "sync" not in data and "container" not in data and "files" not in data


def test_relocation_changes_paths_but_not_what_the_command_printed(tmp_path: Path):
    old, new = tmp_path / "runs" / ".tmp-r-1", tmp_path / "runs" / "r"
    side = SideRecord(
        "A",
        cwd=str(old / "A"),
        message=f"result file(s) not found: {old}/A/out.csv",
        stderr_tail=f"cannot open {old}/A/x",
    )
    run = RunRecord("r", "b", "aduet", "failed", sides={"A": side}).relocated(old, new)
    moved = run.sides["A"]
    assert moved.cwd == str(new / "A")
    assert moved.message == f"result file(s) not found: {new}/A/out.csv"
    assert moved.stderr_tail == f"cannot open {old}/A/x"
