"""Never silently wrong: configs whose labels would not be true are refused,
sduet runs that never synchronized say so, and `duet compare` notes a verdict whose data
cannot carry it (docs/statistics.md, section Notes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.conftest import run_duet

from duetbench.analysis import compare
from duetbench.analysis.compare import labelled, unpaired_disagrees
from duetbench.analysis.stats import GroupedU
from duetbench.config import loads_config
from duetbench.dataset import Dataset, RunFlags
from duetbench.errors import ConfigError
from duetbench.options import CompareOptions
from duetbench.report.json_docs import compare_doc
from duetbench.report.notes import verdict_notes
from duetbench.verdicts import VerdictTable

# ------------------------------------------------------------------ config: labels that would lie

NATIVE = """
experiment: {{name: t, repetitions: {{seqn: 1, aduet: 1, sduet: {sduet}}}}}
benchmarks:
  ext:
    harness: {harness}
    command: run-it
    results: [out.csv]
{extra}
"""


@pytest.mark.parametrize("harness", ["generic", "hyperfine", "dacapo"])
def test_native_sduet_of_a_harness_that_never_waits_is_refused(harness):
    with pytest.raises(ConfigError) as e:
        loads_config(NATIVE.format(sduet=2, harness=harness, extra=""))
    msg = str(e.value)
    assert "'ext'" in msg and "sync_command" in msg and "docs/sync.md" in msg
    assert "self_sync" in msg and "sduet: 0" in msg


@pytest.mark.parametrize(
    ("harness", "extra"),
    [
        ("generic", "    sync_command: run-it --sync"),
        ("generic", "    self_sync: true"),
        ("pyperf", ""),  # duet's pyperf shim synchronizes unmodified scripts
        ("pyperformance", ""),
    ],
)
def test_native_sduet_is_accepted_where_the_sides_do_wait(harness, extra):
    exp = loads_config(NATIVE.format(sduet=2, harness=harness, extra=extra))
    assert exp.benchmarks[0].reps("sduet") == 2


def test_self_sync_makes_the_command_its_own_sduet_command():
    exp = loads_config(NATIVE.format(sduet=1, harness="generic", extra="    self_sync: true"))
    assert exp.benchmarks[0].side("A").sync_command == "run-it"


def test_an_external_harness_without_sduet_runs_needs_no_sync_command():
    loads_config(NATIVE.format(sduet=0, harness="generic", extra=""))


THESIS_BUSY = """
duetbench:
  name: t
  duets: [ext]
ext:
  harness: {harness}
  busy_shorter_side: true
  A: {{run: "a"}}
  B: {{run: "b"}}
{results}
"""


def test_busy_shorter_side_needs_the_built_in_harness_in_both_formats():
    with pytest.raises(ConfigError, match="'ext' sets `busy_shorter_side`.*built-in harness"):
        loads_config(NATIVE.format(sduet=0, harness="generic", extra="    busy_shorter_side: true"))
    with pytest.raises(ConfigError, match="'ext' sets `busy_shorter_side`.*built-in harness"):
        loads_config(THESIS_BUSY.format(harness="generic", results="  results: [out.csv]"))
    with pytest.raises(ConfigError, match="line 1: key .defaults.busy_shorter_side."):
        loads_config(
            "defaults: {busy_shorter_side: true}\n"
            + NATIVE.format(sduet=0, harness="hyperfine", extra="")
        )
    # the built-in harness honours it
    exp = loads_config(
        "experiment: {name: t}\nbenchmarks:\n  b: {command: x, busy_shorter_side: true}\n"
    )
    assert exp.benchmarks[0].busy_shorter_side
    exp = loads_config(THESIS_BUSY.format(harness="command", results=""))
    assert exp.benchmarks[0].busy_shorter_side


# ------------------------------------------------------------------ run time: unsynchronised


def test_a_sduet_run_that_never_reaches_the_handshake_is_marked_and_noted(tmp_path: Path):
    """A `sync_command` that does not wait (the harness ignores $DUET_SYNC_DIR): the runs
    finish, run.json says they were unsynchronised, and compare notes it."""
    script = tmp_path / "harness.sh"
    script.write_text(
        "#!/bin/sh\n"
        "echo iteration,start_ns,end_ns > out.csv\n"
        "for i in 0 1 2; do s=$(date +%s%N); sleep 0.01; e=$(date +%s%N); "
        "echo $i,$s,$e >> out.csv; done\n"
    )
    script.chmod(0o755)
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment: {name: t, seed: 1, repetitions: {aduet: 0, seqn: 0, sduet: 2}}\n"
        "benchmarks:\n  ext:\n    harness: generic\n"
        f"    command: {script}\n    sync_command: {script}\n    results: [out.csv]\n"
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    root = tmp_path / "res" / "t"
    for rep in range(2):
        run = json.loads((root / "runs" / f"ext.sduet.{rep:03d}" / "run.json").read_text())
        assert run["status"] == "ok" and run["sync"] == {"go_count": 0, "unsynchronised": True}
        assert run["message"].startswith("unsynchronised: no side ever reached")
    r = run_duet("compare", str(root), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (row,) = doc["rows"]
    assert "unsynchronised" in row["warnings"]
    assert any("2 run(s) were unsynchronised" in n and "sync_command" in n for n in doc["notes"])
    r = run_duet("compare", str(root))
    assert "unsynchronised" in r.stdout


# ------------------------------------------------------------------ compare notes


def aduet_table(ratio: float, runs: int = 4, iters: int = 12, a_ns: int = 10_000_000):
    """aduet runs whose A and B iterate back to back from the same start, B ``ratio`` times
    as long: with the thesis's overlap rate no pair reaches m = 0.4 once ratio >= 2.5."""
    rows = []
    rng = np.random.default_rng(3)
    for r in range(runs):
        t0 = 1_700_000_000_000_000_000 + r * 10**11
        for pair, d0, n in (("A", a_ns, iters), ("B", int(a_ns * ratio), int(iters / ratio))):
            t = t0
            for i in range(n):
                d = int(d0 * (1 + 0.01 * rng.standard_normal()))
                rows.append(
                    dict(host="h", suite="s", benchmark="b", method="aduet", run=r, pair=pair, iteration=i,
                         start_ns=t, end_ns=t + d, duration_ns=d)
                )  # fmt: skip
                t += d
    return pd.DataFrame(rows)


def doc_of(rows: pd.DataFrame, ds: Dataset) -> dict:
    """The JSON document of ``rows`` (of ``compare``, maybe edited) read from ``ds``."""
    return compare_doc(VerdictTable(labelled(rows), CompareOptions.create(), ds))


def test_overlap_the_filter_drops_is_noted_with_its_share():
    df = aduet_table(3.0)
    thesis = CompareOptions.create(overlap_rate="thesis")
    rows = compare(df, thesis)
    assert rows["unkept_overlap"].iloc[0] == pytest.approx(1.0)
    notes = verdict_notes(rows, Dataset(df, "t.csv"), 0.4)
    assert any("100% of the time A and B overlapped" in n for n in notes), notes
    # relative to the shorter iteration the same pairs are kept: nothing to note
    rows = compare(df, CompareOptions.create())
    assert rows["unkept_overlap"].iloc[0] < 0.5
    assert rows["change"].iloc[0] == pytest.approx(2.0, rel=0.05)
    doc = doc_of(rows, Dataset(df, "t.csv"))
    assert doc["rows"][0]["warnings"] == [] and doc["notes"] == []


def _u(pvalue: float, estimate: float) -> GroupedU:
    one = np.array([1.0])
    return GroupedU(u_a=one - estimate, pvalue=np.array([pvalue]), n_a=one, n_b=one)


@pytest.mark.parametrize(
    ("change", "low", "high", "p", "est", "mean_b", "expected"),
    [
        (-0.30, -0.40, -0.20, 1e-4, 0.8, 34.0, True),  # the aduet: "faster" vs U slower
        (-0.02, -0.30, 0.25, 1e-4, 0.8, 34.0, False),  # interval wider than the means differ
        (-0.02, -0.05, 0.01, 1e-4, 0.8, 34.0, True),  # estimate the other way, means far apart
        (-0.30, -0.40, -0.20, 0.20, 0.8, 34.0, False),  # the U test is not significant
        (0.45, 0.40, 0.50, 1e-4, 0.8, 34.0, False),  # both say slower
        (-0.30, -0.40, -0.20, 1e-4, 0.8, 20.0, False),  # U and the means disagree themselves
        (0.30, 0.20, 0.40, 1e-4, 0.2, 15.0, True),  # mirrored: paired slower, unpaired faster
    ],
)
def test_a_paired_estimate_against_a_significant_unpaired_test(
    change, low, high, p, est, mean_b, expected
):
    got = unpaired_disagrees(
        np.array([change]),
        np.array([low]),
        np.array([high]),
        _u(p, est),
        np.array([23.3]),
        np.array([mean_b]),
        0.05,
    )
    assert bool(got[0]) is expected


def test_every_warning_has_its_sentence_and_json_code():
    df = aduet_table(2.0)
    rows = compare(df, CompareOptions.create()).assign(unpaired_disagrees=True)
    flags = {("b", "aduet"): RunFlags(all_cores_busy=4, placements=("shared",))}
    ds = Dataset(df, "t.csv", run_flags=flags)
    doc = doc_of(rows, ds)
    assert doc["rows"][0]["warnings"] == ["unpaired_disagrees", "all_cores_busy"]
    assert len(doc["notes"]) == 2
    assert "points the other way" in doc["notes"][0]
    assert "4 run(s) used every core of their host (placement shared)" in doc["notes"][1]
    assert verdict_notes(rows, ds, 0.4) == doc["notes"]


def test_other_load_during_the_runs_is_noted_with_what_it_was():
    df = aduet_table(2.0)
    rows = compare(df, CompareOptions.create())
    busy = ((0.62, 0.01), (0.70, 0.02), (0.55, 0.0))  # a busy process beside the duet
    quiet = ((0.03, 0.01), (0.02, 0.0), (0.05, 0.02))
    for loads, noted in ((busy, True), (quiet, False), (((0.0, 0.4),), True)):
        ds = Dataset(df, "t.csv", run_flags={("b", "aduet"): RunFlags(other_load=loads)})
        doc = doc_of(rows, ds)
        assert (doc["rows"][0]["warnings"] == ["other_load"]) is noted, loads
        if loads is busy:
            (note,) = doc["notes"]
            assert "other work kept 0.63 CPU(s) busy on average during its 3 run(s)" in note
            assert "the most in one run 0.72" in note and "mostly other processes" in note
        if len(loads) == 1:
            assert "mostly the hypervisor (steal time)" in doc["notes"][0]


def test_other_load_beside_inproc_runs_is_noise_not_an_uneven_share():
    """inproc: one process takes turns with A and B, so the note does not send the user
    to seqn for an uneven share, as it does for a duet."""
    df = aduet_table(1.5).assign(method="inproc")
    busy = ((0.9, 0.0), (0.95, 0.0))
    rows = compare(df, CompareOptions.create())
    ds = Dataset(df, "t.csv", run_flags={("b", "inproc"): RunFlags(other_load=busy)})
    (note,) = doc_of(rows, ds)["notes"]
    assert "took turns in one process, so it hits both alike" in note
    assert "compare with seqn" not in note
