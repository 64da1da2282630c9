"""Every command answers "is B slower?" the same way (docs/statistics.md, "Verdicts").

Five real results directories -- a plain experiment, one measured beside a busy
process, one with unbalanced runs, an adaptive one (made by `duet gate`), a `duet
micro` one -- each read by `duet compare`, `duet evaluate`, `duet report`, `duet history
add` (what `duet history` shows), `duet dashboard` and the gate's judgement: every one
must show the same change, interval and verdict for every benchmark and method. The
runs are sleeps and tiny Python functions; nothing here depends on how fast the
machine is.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from tests.helpers import recorded_as_is, run_duet

from duetbench.ci.gate import ExitCode, exit_code_of, judge
from duetbench.dashboard.model import gather
from duetbench.history import Repository
from duetbench.records import RunRecord
from duetbench.report import formatting as fmt

Key = tuple[str, str]  # benchmark, method
Row = tuple[float | None, float | None, float | None, str]  # change, low, high, verdict

PLAIN = """\
experiment: {name: plain, seed: 5, repetitions: {seqn: 2, sduet: 3}}
defaults: {iterations: 5}
benchmarks:
  ab: {A: {command: "sleep 0.01"}, B: {command: "sleep 0.013"}}
  aa: {command: "sleep 0.01"}
"""
#: runs of at least 0.3 s: shorter ones are never unbalanced (records.UNBALANCED_MIN_S)
BUSY = """\
experiment: {name: busy, seed: 6, repetitions: {aduet: 3, sduet: 3}}
defaults: {iterations: 4}
benchmarks:
  ab: {A: {command: "sleep 0.08"}, B: {command: "sleep 0.1"}}
"""
GATE = """\
experiment: {name: gated, seed: 7, repetitions: {sduet: 1}}
benchmarks:
  work: {iterations: 5, command: "sleep $(cat build/work.txt)"}
"""
MICRO = """\
def fa():
    return sum(range(300))


def fb():
    return sum(range(450))
"""


def duet(*args: object) -> tuple[int, str]:
    """`duet ARGS` in this process (a subprocess costs seconds of start-up)."""
    from duetbench.cli import main

    out = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": "250"}), redirect_stdout(out):
        rc = main([str(a) for a in args])
    return rc, out.getvalue()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _tilt(root: Path, run_json: Path, *, load: float, shares: tuple[float, float] | None) -> None:
    """Rewrite a run as if other work had kept ``load`` CPUs busy (and, with ``shares``,
    its sides had got those shares of a CPU), recorded as the run's own files."""
    run = json.loads(run_json.read_text())
    run["other_load"] = {"processes": load, "steal": 0.0}
    for name, share in zip("AB", shares or (), strict=False):
        s = run["sides"][name]
        s["cpu_s"] = share * (s["end_ns"] - s["start_ns"]) / 1e9
    run_json.write_text(json.dumps(run))
    recorded_as_is(root, run_json.parent.name)


def _run(config: Path, out: Path) -> None:
    r = run_duet("run", str(config), "-o", str(out), "--no-compare")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("one verdict")
    out = base / "results"
    dirs: dict[str, Path] = {}

    (base / "plain.yml").write_text(PLAIN)
    _run(base / "plain.yml", out)
    dirs["plain"] = out / "plain"

    # beside a busy process; where the host's load was not measured as other work (a
    # quiet moment), the runs say it was, so the analysis's choice for it is exercised
    (base / "busy.yml").write_text(BUSY)
    loop = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
    try:
        _run(base / "busy.yml", out)
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    dirs["busy"] = out / "busy"
    for run_json in sorted(dirs["busy"].glob("runs/*/run.json")):
        load = json.loads(run_json.read_text()).get("other_load") or {}
        if sum(load.values()) < 0.5:
            _tilt(dirs["busy"], run_json, load=0.8, shares=None)

    # the same runs, one more of them unbalanced: other work took more of A's CPU than of
    # B's (beside the busy loop some may be unbalanced already)
    dirs["unbalanced"] = base / "unbalanced" / "busy"
    shutil.copytree(dirs["busy"], dirs["unbalanced"])
    aduets = sorted(dirs["unbalanced"].glob("runs/ab.aduet.*/run.json"))
    balanced = [p for p in aduets if not RunRecord.from_json(json.loads(p.read_text())).unbalanced]
    _tilt(dirs["unbalanced"], (balanced or aduets)[0], load=0.8, shares=(0.45, 0.9))

    # adaptive: `duet gate` over a head 30 % slower, measured until decided
    repo = base / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    (repo / "duet.yml").write_text(GATE)
    for i, ms in enumerate((10, 13)):
        (repo / "work.txt").write_text(f"{ms / 1000}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"c{i}")
        _git(repo, "tag", f"c{i}")
    # beside a busy process, where the stopping rule took the median and the table the
    # means of the same runs before they asked one function
    loop = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
    try:
        gate = subprocess.run(
            [sys.executable, "-m", "duetbench", "gate", "--base", "c0", "--head", "c1",
             "duet.yml", "--build", "mkdir -p build && cp work.txt build/",
             "-o", str(base / "gates"), "--max-runs", "12"],
            cwd=repo, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    assert gate.returncode in (ExitCode.REGRESSION, ExitCode.INCONCLUSIVE), gate.stderr
    (dirs["adaptive"],) = [p for p in (base / "gates").iterdir() if p.is_dir()]
    (dirs["adaptive"] / "gate-exit").write_text(str(gate.returncode))

    # duet micro: B does 1.5x A's work; seqn (run statistic min) and inproc (median), which
    # are never unbalanced (one side a run, or one process)
    (base / "bench_mod.py").write_text(MICRO)
    micro = run_duet(
        "micro", "--a", "bench_mod:fa", "--b", "bench_mod:fb", "--method", "seqn",
        "--method", "inproc", "--runs", "8", "--samples", "40", "--name", "micro",
        "-o", str(out), "--format", "json", cwd=base, timeout=900,
    )  # fmt: skip
    assert micro.returncode == 0, micro.stderr
    dirs["micro"] = out / "micro"
    return dirs


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _row(r: dict[str, Any]) -> Row:
    return (_num(r["change"]), _num(r["ci_low"]), _num(r["ci_high"]), str(r["verdict"]))


def _same(got: dict[Key, Row], want: dict[Key, Row], who: str) -> None:
    assert set(got) == set(want), (who, sorted(got), sorted(want))
    for key, (change, low, high, verdict) in want.items():
        g = got[key]
        assert g[3] == verdict, (who, key, g, want[key])
        for a, b in zip(g[:3], (change, low, high), strict=True):
            assert (a is None) == (b is None), (who, key, g, want[key])
            if a is not None:
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (who, key, g, want[key])


def _table_lines(markdown: str) -> list[str]:
    """The rows of the first Markdown table (the verdict table)."""
    lines = markdown.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| benchmark |"))
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("| "):
            break
        rows.append(ln)
    return rows


@pytest.mark.parametrize("name", ["plain", "busy", "unbalanced", "adaptive", "micro"])
def test_every_command_shows_the_same_change_interval_and_verdict(
    results: dict[str, Path], tmp_path: Path, name: str
) -> None:
    root = results[name]
    rc, out = duet("compare", root, "--format", "json")
    assert rc == 0, out
    doc = json.loads(out)
    want = {(r["benchmark"], r["method"]): _row(r) for r in doc["rows"]}
    assert want, doc

    # duet evaluate: its verdict table
    grids = ("--slowdowns", "0,10", "--min-overlap", "0.4,0.6", "--shuffles", "1")
    rc, out = duet("evaluate", root, "--format", "json", *grids)
    assert rc == 0, out
    ev = json.loads(out)["tables"]["verdicts"]
    _same({(r["benchmark"], r["method"]): _row(r) for r in ev}, want, "evaluate")

    # duet report: its verdict table shows compare's rows, cell by cell
    rc, md = duet("compare", root, "--format", "markdown")
    assert rc == 0, md
    rc, report = duet("report", root, "--format", "markdown", *grids)
    assert rc == 0, report
    assert _table_lines(report) == _table_lines(md), (report, md)

    # the gate's judgement (an adaptive experiment's: the exit status duet gate gave)
    gate = judge(root, "gate", 0.0)
    got = {(str(r["benchmark"]), str(r["method"])): _row(r) for r in gate.rows.to_dict("records")}
    _same(got, want, "gate")
    assert gate.exit_code == exit_code_of([v[3] for v in want.values()])
    if name == "adaptive":
        assert int((root / "gate-exit").read_text()) == gate.exit_code
        stops = json.loads((root / "stops.json").read_text())["stops"]
        runs = [json.loads(p.read_text()) for p in root.glob("runs/*/run.json")]
        if any(sum((r.get("other_load") or {}).values()) >= 0.25 for r in runs):
            # beside other work the duet's runs are summarized by their means, in the
            # rule's run values as in the table
            assert {r["run_stat"] for r in doc["rows"] if r["runs"]} == {"means"}, doc["rows"]
        for entry in stops.values():  # the rule decided on the interval every command shows
            (decision,) = entry["decisions"].values()
            key = (entry["benchmark"], entry["method"])
            _same({key: _row({**decision, "change": decision["estimate"],
                              "ci_low": decision["low"], "ci_high": decision["high"]})},
                  {key: want[key]}, "stops.json")  # fmt: skip
            assert not (entry["stopped"] == "decided" and decision["verdict"] == "inconclusive")

    # duet history add: what `duet history` and the dashboard read
    db = tmp_path / "history.db"
    rc, out = duet("history", "add", root, "--repo", db, "--versions", "A=v1,B=v2")
    assert rc == 0, out
    with Repository.open(str(db)) as repo:
        stored = repo.results()
        got = {(str(r["benchmark"]), str(r["method"])): _row(r) for _, r in stored.iterrows()}
        _same(got, want, "history")
        site = gather(repo)
    latest = {
        (v.key.benchmark, v.key.method): (
            v.latest.change,
            v.latest.ci_low,
            v.latest.ci_high,
            v.latest.verdict,
        )
        for v in site.all_series()
        if v.latest is not None
    }
    _same(latest, want, "dashboard")
    rc, out = duet("dashboard", "--repo", db, "-o", tmp_path / "site")
    assert rc == 0, out
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    for change, _low, _high, verdict in want.values():
        shown = re.escape(fmt.pct(change, signed=True))
        assert re.search(shown + r".{0,200}?" + re.escape(verdict), index, re.S), (
            shown,
            verdict,
        )


def test_a_micro_experiment_is_analysed_with_its_own_statistic_everywhere(
    results: dict[str, Path],
) -> None:
    """The rule that micro benchmarks compare the sides' minima (inproc: the median)
    belongs to the analysis, not to `duet compare`: `duet evaluate` and the history used
    the median for them."""
    rc, out = duet("compare", results["micro"], "--format", "json")
    rows = {r["method"]: r for r in json.loads(out)["rows"]}
    assert rows["seqn"]["run_stat"] == "min" and rows["inproc"]["run_stat"] == "median"
    # inproc times both in one process, alternately: B's 1.5x work is `slower` on any
    # machine. seqn times them in turns in separate processes: on a CI machine whose vCPU
    # ran one process 1.7x slower than the next (min of 40 samples, CPU time and wall
    # alike), 4 run pairs read [-11 %, +161 %]: never the wrong direction
    assert rows["inproc"]["verdict"] == "slower"
    assert rows["seqn"]["verdict"] in ("slower", "no change detected"), rows["seqn"]
    # the other statistic gives other numbers: the comparison above is not vacuous
    rc, out = duet("compare", results["micro"], "--format", "json", "--run-stat", "median")
    median = {r["method"]: r for r in json.loads(out)["rows"]}
    assert median["seqn"]["change"] != rows["seqn"]["change"]


def test_beside_other_work_every_command_uses_the_means_and_leaves_unbalanced_runs_out(
    results: dict[str, Path],
) -> None:
    rc, out = duet("compare", results["busy"], "--format", "json")
    busy_doc = json.loads(out)
    busy = {r["method"]: r for r in busy_doc["rows"]}
    assert {r["run_stat"] for r in busy.values() if r["runs"]} == {"means"}
    before = busy_doc["excluded"]["runs"].get("unbalanced", 0)
    rc, out = duet("compare", results["unbalanced"], "--format", "json")
    doc = json.loads(out)
    assert doc["excluded"]["runs"]["unbalanced"] == before + 1
    rows = {r["method"]: r for r in doc["rows"]}
    assert "unbalanced" in rows["aduet"]["warnings"]
    # kept on request: an analysis option like any other
    rc, out = duet("compare", results["unbalanced"], "--format", "json", "--keep-unbalanced")
    kept = json.loads(out)
    assert kept["excluded"]["runs"] == {} and kept["settings"]["keep_unbalanced"] is True
    assert {r["method"]: r["runs"] for r in kept["rows"]} == {"aduet": 3, "sduet": 3}


def test_a_rule_that_decides_on_the_last_allowed_run_says_decided(tmp_path: Path) -> None:
    """The run that decides may also be the last one max_runs allows: the table's `stop`
    then says `decided` (the rule's verdict stands), not `max_runs` beside `slower`."""
    from duetbench.config import load_config
    from duetbench.plan import make_plan
    from duetbench.schedule.adaptive import StopTracker, stop_key

    cfg = tmp_path / "last.yml"
    cfg.write_text(
        "experiment:\n  name: last\n  repetitions: {aduet: 6}\n"
        "  stop: {until: decided, threshold: 2%, max_runs: 6}\n"
        "benchmarks:\n  b: {command: 'true'}\n"
    )
    exp = load_config(cfg)
    tracker = StopTracker.for_experiment(None, exp, make_plan(exp))  # type: ignore[arg-type]
    st = tracker.states[stop_key("b", "aduet")]
    st.values = {"b": [0.30, 0.32, 0.29, 0.31, 0.30, 0.31]}
    st.reps = 6  # the decision and max_runs at once
    assert tracker.decide(st) and st.stopped == "decided"
    assert st.decisions["b"].verdict == "slower"
    # a rule still undecided at max_runs stops for max_runs
    st.stopped, st.values = None, {"b": [0.05, -0.04, 0.06, -0.05, 0.04, -0.03]}
    assert tracker.decide(st) and st.stopped == "max_runs"
