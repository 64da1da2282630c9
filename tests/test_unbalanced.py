"""Duet runs whose sides did not get the same share of the CPU: their ratio moves by the
shares, not by the program, so they must not pass for a measurement of it.

Beside one busy process on a 2-CPU host, the scheduler lets the intruder share a CPU with
one side more than with the other; that side's iterations stretch and B/A moves by the
log ratio of the sides' CPU shares (docs/statistics.md, section Notes, `unbalanced`).
Every local side records the CPU time it used (run.json ``sides.<X>.cpu_s``); a duet run
beside other work whose shares differ is left out of the analysis and named under the
verdict, and a benchmark left without a run says ``no data``, never a verdict.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest
from tests.helpers import recorded_as_is, run_duet

from duetbench.process import process
from duetbench.records import (
    UNBALANCED_LOAD,
    UNBALANCED_MIN_S,
    UNBALANCED_SHARE,
    RunRecord,
    SideRecord,
)


def _run(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "duet.yml"
    cfg.write_text(text)
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    return tmp_path / "res" / "t"


def _shares(run_json: Path) -> dict[str, float]:
    run = json.loads(run_json.read_text())
    return {n: s["cpu_s"] / ((s["end_ns"] - s["start_ns"]) / 1e9) for n, s in run["sides"].items()}


def test_every_local_side_records_the_cpu_time_it_used(tmp_path: Path) -> None:
    """A side that computes gets a large share of a CPU, one that sleeps almost none, with
    the built-in harness (one process per iteration) and with a harness that loops itself
    (what it ran before the go is not counted)."""
    busy = tmp_path / "busy.py"
    busy.write_text(
        "import sys, time\n"
        "e = time.process_time() + float(sys.argv[1])\n"
        "while time.process_time() < e:\n    pass\n"
    )
    asleep = tmp_path / "asleep.py"
    asleep.write_text("import sys, time\ntime.sleep(float(sys.argv[1]))\n")
    # the interpreter itself without site-packages' start-up hooks, not a `python3` on PATH
    # that may be a shell shim: pyenv's shim and a .pth importing certifi cost a sleeping
    # side 50-130 ms of CPU time per start, a third of what the test bounds
    py = f"{sys.executable} -S"
    out = " && echo iteration,duration_ns > out.csv && echo 0,600000000 >> out.csv"
    root = _run(
        tmp_path,
        "experiment: {name: t, seed: 3, repetitions: {aduet: 1, seqn: 1}}\n"
        "defaults: {iterations: 2}\n"
        "benchmarks:\n"
        f"  builtin:\n    A: {{command: {py} {busy} 0.3}}\n"
        f"    B: {{command: {py} {asleep} 0.3}}\n"
        "  external:\n    harness: generic\n    results: [out.csv]\n"
        f"    A: {{command: {json.dumps(f'{py} {busy} 0.6' + out)}}}\n"
        f"    B: {{command: {json.dumps(f'{py} {asleep} 0.6' + out)}}}\n",
    )
    runs = sorted((root / "runs").glob("*/run.json"))
    assert len(runs) == 2 * (1 + 2)
    for run_json in runs:
        run = json.loads(run_json.read_text())
        for side, share in _shares(run_json).items():
            # busy: ~1 on a quiet host, less when other work shares the CPU; asleep: ~0
            assert (share > 0.05) if side == "A" else (share < 0.15), (run_json, side, share)
            assert share < 1.3, (run_json, side, share)  # one thread cannot use more
            s = run["sides"][side]
            if "external" in run_json.parent.name:
                # the harness's processes' run delay: with the CPU time it fills the wall
                # time of a side that computes, whatever else runs on the host
                wall = (s["end_ns"] - s["start_ns"]) / 1e9
                busy = (s["cpu_s"] + s["runq_s"]) / wall
                assert (busy > 0.75) if side == "A" else (busy < 0.5), (run_json, side, busy)
    # the built-in harness: CPU time and run delay per iteration
    table = process(root).table
    builtin = table.loc[table["benchmark"] == "builtin"]
    assert builtin["cpu_ns"].notna().all() and builtin["runq_ns"].notna().all()
    busy = (builtin["cpu_ns"] + builtin["runq_ns"]) / builtin["duration_ns"]
    on_a = builtin["pair"] == "A"
    assert (busy[on_a] > 0.85).all() and (busy[on_a] < 1.05).all(), busy[on_a].tolist()
    asleep_cpu = builtin.loc[~on_a, "cpu_ns"] / builtin.loc[~on_a, "duration_ns"]
    assert (asleep_cpu < 0.3).all(), asleep_cpu.tolist()


def _record(shares: dict[str, float], load: float | None, method: str = "aduet") -> RunRecord:
    sides = {
        n: SideRecord(name=n, start_ns=0, end_ns=2 * 10**9, cpu_s=2.0 * s)
        for n, s in shares.items()
    }
    other = None if load is None else {"processes": load, "steal": 0.0}
    return RunRecord(
        "r", "b", method, "ok", sides=sides, other_load=other, start_ns=0, end_ns=2 * 10**9
    )


@pytest.mark.parametrize(
    "shares, load, unbalanced",
    [
        ({"A": 0.5, "B": 0.9}, 0.8, True),  # the intruder sat beside A
        ({"A": 0.9, "B": 0.5}, UNBALANCED_LOAD, True),
        ({"A": 0.5, "B": 0.9}, 0.05, False),  # quiet: B sleeps more, which is its work
        ({"A": 0.5, "B": 0.9}, None, False),  # not measured (containers, older results)
        ({"A": 0.6, "B": 0.6 * math.exp(UNBALANCED_SHARE * 0.9)}, 0.9, False),  # both alike
        ({"A": 0.6 * math.exp(UNBALANCED_SHARE * 1.1), "B": 0.6}, 0.9, True),
        ({"A": 0.5}, 0.9, False),  # seqn: one side
    ],
)
def test_a_duet_run_is_unbalanced_when_other_work_took_one_sides_cpu(shares, load, unbalanced):
    rec = _record(shares, load, "aduet" if len(shares) == 2 else "seqn")
    assert rec.unbalanced is unbalanced
    # a run too short for /proc/stat's ticks to tell other work from the kernel's
    short = dataclasses.replace(rec, end_ns=int(UNBALANCED_MIN_S * 0.9e9))
    assert short.unbalanced is False
    if unbalanced:
        assert rec.imbalance == pytest.approx(math.log(shares["A"] / shares["B"]))
    # run.json keeps the measure as written
    back = RunRecord.from_json(rec.to_json(), "run.json")
    assert back.cpu_shares == pytest.approx(rec.cpu_shares)


def _tilt(root: Path, run_json: Path, a: float, b: float, load: float) -> None:
    """Rewrite a run as if other work had kept ``load`` CPUs busy and the sides had got
    ``a`` and ``b`` of a CPU, and record the files as the run's own."""
    run = json.loads(run_json.read_text())
    run["other_load"] = {"processes": load, "steal": 0.0}
    for name, share in (("A", a), ("B", b)):
        s = run["sides"][name]
        s["cpu_s"] = share * (s["end_ns"] - s["start_ns"]) / 1e9
    run_json.write_text(json.dumps(run))
    recorded_as_is(root, run_json.parent.name)


def test_unbalanced_runs_are_left_out_and_named_under_the_verdict(tmp_path: Path) -> None:
    root = _run(
        tmp_path,
        "experiment: {name: t, seed: 4, repetitions: {aduet: 3}}\n"
        "defaults: {iterations: 4}\n"
        "benchmarks:\n"
        "  all:\n    A: {command: 'sleep 0.1'}\n    B: {command: 'sleep 0.2'}\n"
        "  one:\n    A: {command: 'sleep 0.1'}\n    B: {command: 'sleep 0.2'}\n"
        "  quiet:\n    A: {command: 'sleep 0.1'}\n    B: {command: 'sleep 0.2'}\n",
    )
    runs = {
        b: sorted((root / "runs").glob(f"{b}.aduet.*/run.json")) for b in ("all", "one", "quiet")
    }
    for run_json in runs["all"]:
        _tilt(root, run_json, 0.45, 0.90, 0.85)  # every run beside an intruder on A's CPU
    _tilt(root, runs["one"][0], 0.90, 0.60, 0.70)
    for run_json in runs["one"][1:]:  # beside other work too, but balanced: kept
        _tilt(root, run_json, 0.70, 0.71, 0.70)
    for run_json in runs["quiet"]:
        _tilt(root, run_json, 0.45, 0.90, 0.03)  # unequal shares, but nothing else ran

    rep = process(root)  # every run is in the table, the unbalanced ones marked
    assert rep.runs_excluded == {}
    marked = rep.table.loc[rep.table["unbalanced"]].groupby("benchmark")["run"].nunique()
    assert marked.to_dict() == {"all": 3, "one": 1}

    shown = run_duet("compare", str(root), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    rows = {r["benchmark"]: r for r in doc["rows"]}
    assert rows["all"]["verdict"] == "no data" and rows["all"]["runs"] == 0
    assert "unbalanced" in rows["all"]["warnings"]
    assert rows["one"]["runs"] == 2 and "unbalanced" in rows["one"]["warnings"]
    assert "unbalanced" not in rows["quiet"]["warnings"] and rows["quiet"]["runs"] == 3
    assert doc["excluded"]["runs"] == {"unbalanced": 4}
    # sides that sleep are not CPU-bound: CPU time cannot correct them, so they are left out
    assert rows["all"]["measure"] == "wall" and rows["all"]["measure_reason"] == "not-cpu-bound"
    assert rows["all"]["runs_unbalanced"] == 3 and rows["one"]["runs_unbalanced"] == 1
    notes = "\n".join(doc["notes"])
    assert "all aduet: 3 of 3 runs were left out as unbalanced" in notes
    assert "a side was not CPU-bound" in notes
    assert "A ran 45% of its time, B 90%" in notes and "no run was left to compare" in notes
    assert "about 100%" in notes  # B/A would have read twice what it is
    assert "one aduet: 1 of 3 runs were left out" in notes
    assert "the verdict rests on the other 2" in notes
    # kept on request (--keep-unbalanced, an analysis option): every run back, no note
    kept = run_duet("compare", str(root), "--format", "json", "--keep-unbalanced")
    again = json.loads(kept.stdout)
    assert again["excluded"]["runs"] == {} and all(r["runs"] == 3 for r in again["rows"])
    assert not any("unbalanced" in r["warnings"] for r in again["rows"])

    # under the table one line for the kind, naming both rows; every sentence with -v
    table = run_duet("compare", str(root), env={"COLUMNS": "250"})
    assert table.returncode == 0, table.stderr
    assert "no data" in table.stdout
    lines = [ln for ln in table.stdout.splitlines() if "unbalanced:" in ln]
    assert len(lines) == 1 and "all aduet (3 of 3 runs), one aduet (1 of 3 runs)" in lines[0]
    verbose = run_duet("compare", str(root), "-v", env={"COLUMNS": "250"})
    assert "3 of 3 runs were left out as unbalanced" in verbose.stdout
    markdown = run_duet("compare", str(root), "--format", "markdown")
    assert markdown.returncode == 0 and "unbalanced: all aduet" in markdown.stdout
