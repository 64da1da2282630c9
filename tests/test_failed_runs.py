"""A benchmark whose runs all fail: its first 3 runs, then the rest are not run, in
`duet run` with a fixed plan and measured until sure, and on --resume (docs/results.md,
"Runs that fail"; `duet gate` and `duet bisect`: tests/test_gate.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from duetbench.config import load_config
from duetbench.schedule.adaptive import FAILED_RUNS_STOP
from duetbench.schedule.inline import NullObserver, run_experiment

WORK = r"""
import os, sys
if sys.argv[1] == "broken":
    sys.stderr.write("cannot open the input\n")
    sys.exit(3)
with open(os.path.join(os.environ["DUET_OUTPUT_DIR"], "it.csv"), "w") as f:
    f.write("duration_ns\n" + "".join(f"{10_000_000 + i}\n" for i in range(5)))
"""


def _config(tmp: Path, stop: str) -> Path:
    (tmp / "work.py").write_text(WORK)
    cmd = f"{sys.executable} {tmp / 'work.py'}"

    def bench(name: str) -> str:
        return f"""  {name}:
    harness: generic
    repetitions: {{aduet: 8}}
    A: {{command: "{cmd} {name}", results: [it.csv]}}
    B: {{command: "{cmd} {name}", results: [it.csv]}}
"""

    cfg = tmp / "duet.yml"
    cfg.write_text(
        f"experiment:\n  name: fails\n  seed: 3\n  measure: wall\n{stop}benchmarks:\n"
        + bench("broken")
        + bench("fine")
    )
    return cfg


class _StopAfter(NullObserver):
    def __init__(self, runs: int) -> None:
        self.left = runs

    def run_finished(self, spec: object, record: object) -> None:
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def _statuses(root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (root / "journal.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out.setdefault(rec["run_id"].split(".")[0], []).append(rec["status"])
    return out


def test_a_fixed_plan_stops_a_benchmark_after_its_first_three_failed_runs(tmp_path: Path) -> None:
    exp = load_config(_config(tmp_path, ""))
    summary = run_experiment(exp, tmp_path / "out")
    runs = _statuses(summary.root)
    assert runs["broken"] == ["failed"] * FAILED_RUNS_STOP  # 3 of its 8, then no more
    assert runs["fine"] == ["ok"] * 8  # the other benchmark runs all its repetitions
    assert summary.not_run == 8 - FAILED_RUNS_STOP and summary.stopped_early == 0
    (note,) = [n for n in summary.notes if "broken" in n]
    assert "first 3 runs failed" in note and "other 5 planned runs were not run" in note
    assert "side A exited with 3 (cannot open the input)" in note


def test_measured_until_sure_the_same_and_resume_keeps_it(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "  stop: {until: decided, threshold: 5%, max_runs: 8}\n")
    exp = load_config(cfg)
    cut = run_experiment(exp, tmp_path / "out", observer=_StopAfter(4))
    assert cut.interrupted
    again = run_experiment(exp, tmp_path / "out", resume=True)
    runs = _statuses(again.root)
    assert runs["broken"] == ["failed"] * FAILED_RUNS_STOP
    stops = json.loads((again.root / "stops.json").read_text())["stops"]
    broken = next(v for v in stops.values() if v["benchmark"] == "broken")
    assert broken["stopped"] == "failed" and len(broken["skipped"]) == 8 - FAILED_RUNS_STOP
    assert any("benchmark 'broken' (aduet)" in n for n in again.notes)
