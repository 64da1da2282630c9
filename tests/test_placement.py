"""`cpus:` placement (docs/config.md, `cpus`): pinned, shared, auto, a CPU list; what the
sides really get, and run.json's `placement`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.conftest import run_duet

from duetbench.config import loads_config
from duetbench.errors import ConfigError
from duetbench.execute.placement import resolve_placement
from duetbench.plan import SideSpec, make_plan


def side(slot: int | None) -> SideSpec:
    return SideSpec(name="A", command="true", cpu_slot=slot)


@pytest.mark.parametrize(
    ("host", "kind", "cpus"),
    [([0], "shared", (0,)), ([0, 1], "shared", (0, 1)), ([0, 1, 2], "pinned", (1, 2))],
)
def test_auto_shares_on_at_most_two_cpus_and_pins_with_one_free_above(host, kind, cpus):
    p = resolve_placement("auto", host)
    assert (p.kind, p.cpus) == (kind, cpus)
    assert p.every_core == (len(host) <= 2)


def test_pinned_gives_each_slot_its_own_cpu_and_shared_gives_every_side_all():
    pinned = resolve_placement("pinned", [0, 1, 2, 3])
    assert [pinned.side_cpus(side(s)) for s in (0, 1)] == [[1], [2]]  # CPU 0 left free
    assert not pinned.every_core
    on_two = resolve_placement("pinned", [4, 7])
    assert [on_two.side_cpus(side(s)) for s in (0, 1)] == [[4], [7]] and on_two.every_core
    shared = resolve_placement("shared", [0, 1, 2, 3])
    assert [shared.side_cpus(side(s)) for s in (0, 1, None)] == [[1, 2, 3]] * 3
    none = resolve_placement("none", [0, 1, 2])  # the older word: no affinity set at all
    assert none.kind == "shared" and none.side_cpus(side(0)) == [] and not none.every_core
    assert not resolve_placement("shared", [0, 1]).restricts([0, 1])  # no cpuset needed
    assert resolve_placement("shared", [0, 1, 2]).restricts([0, 1, 2])
    assert resolve_placement("pinned", [0, 1]).restricts([0, 1])
    listed = resolve_placement((3, 5), [0, 1, 2, 3, 4, 5])
    assert listed.kind == "pinned" and [listed.side_cpus(side(s)) for s in (0, 1)] == [[3], [5]]


NATIVE = """
experiment: {{name: p, repetitions: {{seqn: 2, aduet: 2}}}}
benchmarks:
  b:
    cpus: {cpus}
    A: {{command: "a"}}
    B: {{command: "b"}}
"""

THESIS = """
duetbench:
  name: p
  duets: [b]
b:
  cpus: {cpus}
  duet_repetitions: 2
  A: {{run: "a"}}
  B: {{run: "b"}}
  results: [out.csv]
"""


@pytest.mark.parametrize("fmt", [NATIVE, THESIS])
@pytest.mark.parametrize("word", ["pinned", "shared", "auto", "none", "Shared"])
def test_both_config_formats_take_every_placement_word(fmt, word):
    exp = loads_config(fmt.format(cpus=word))
    assert exp.benchmarks[0].cpus == word.lower()
    slots = {s.cpu_slot for r in make_plan(exp) for s in r.sides}
    assert slots == ({None} if word.lower() in ("shared", "none") else {0, 1})


@pytest.mark.parametrize("fmt", [NATIVE, THESIS])
def test_an_unknown_placement_word_names_the_choices(fmt):
    with pytest.raises(ConfigError, match="auto, pinned, shared"):
        loads_config(fmt.format(cpus="spread"))


AFFINITY = (
    'python3 -c \'import os; open(os.environ["DUET_OUTPUT_DIR"] + "/aff", "a")'
    '.write(" ".join(map(str, sorted(os.sched_getaffinity(0)))) + "\\n")\''
)


@pytest.mark.parametrize("word", ["pinned", "shared", "auto"])
def test_run_records_the_placement_and_the_sides_run_where_it_says(tmp_path: Path, word):
    cfg = tmp_path / "duet.yml"
    cfg.write_text(
        "experiment: {name: t, seed: 5, repetitions: {seqn: 2, aduet: 1}}\n"
        "defaults: {iterations: 2}\n"
        f"benchmarks:\n  b:\n    cpus: {word}\n    command: {json.dumps(AFFINITY)}\n"
    )
    r = run_duet("run", str(cfg), "-o", str(tmp_path / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    host = sorted(os.sched_getaffinity(0))
    expected = resolve_placement(word, host)
    runs = tmp_path / "res" / "t" / "runs"
    seen = 0
    for run_json in runs.glob("*/run.json"):
        run = json.loads(run_json.read_text())
        assert run["placement"] == expected.kind
        assert run["all_cores_busy"] == (run["method"] != "seqn" and expected.every_core)
        assert set(run["other_load"]) == {"processes", "steal"}  # measured by every local run
        for name, rec in run["sides"].items():
            lines = (run_json.parent / name / "aff").read_text().split("\n")[:-1]
            assert len(lines) == 2
            for line in lines:  # what the workload itself was allowed to run on
                assert [int(c) for c in line.split()] == rec["cpus"]
                seen += 1
            if expected.kind == "shared":
                assert tuple(rec["cpus"]) == expected.cpus
            else:
                assert len(rec["cpus"]) == 1 and rec["cpus"][0] in expected.cpus
    assert seen == 2 * (2 * 2 + 2)


_BUSY = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"


def test_other_load_counts_what_others_ran_and_not_what_the_run_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """execute/loadwatch.py: a busy process that is not the run's counts as other load
    (a real one: on a busy machine the figure only grows); the run's own CPU time is
    taken off the host's busy time, and steal is counted apart (a fake /proc/stat)."""
    from duetbench.execute import loadwatch

    watch = loadwatch.LoadWatch.start()
    assert watch is not None  # Linux: /proc/stat is readable
    other = subprocess.Popen([sys.executable, "-c", _BUSY.format(s=5)])
    try:
        time.sleep(1.0)
        load = watch.finish()
    finally:
        other.kill()
        other.wait()
    assert load is not None and load["processes"] > 0.4, load  # ~1 CPU, less when busy

    stat = tmp_path / "stat"
    hz = float(loadwatch.CLK_TCK)
    own = iter([10.0, 11.5])  # the run's sides used 1.5 CPU-seconds
    clock = iter([100.0, 102.0])  # in 2 seconds

    def write(busy_s: float, steal_s: float) -> None:
        # cpu user nice system idle iowait irq softirq steal
        t = [busy_s * hz - 30, 10, 10, 5000, 7, 5, 5, steal_s * hz]
        stat.write_text("cpu  " + " ".join(str(int(x)) for x in t) + "\ncpu0 1 2 3\n")

    monkeypatch.setattr(loadwatch, "PROC_STAT", stat)
    monkeypatch.setattr(loadwatch, "own_cpu_seconds", lambda: next(own))
    monkeypatch.setattr(loadwatch, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    write(50.0, 3.0)
    watch = loadwatch.LoadWatch.start()
    assert watch is not None
    write(52.5, 3.4)  # 2.5 CPU-seconds busy, 1.5 of them the run's; 0.4 stolen
    assert watch.finish() == {"processes": 0.5, "steal": 0.2}
    stat.write_text("not a stat file\n")
    assert loadwatch.host_cpu_seconds() is None
