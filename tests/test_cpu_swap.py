"""Pinned micro sides take turns on both CPUs (docs/micro.md, "Placement").

A virtual CPU can be slower than its neighbour for seconds; a side pinned to it for a
whole run reads that as a change. The executor names each side's CPU and the other's
(``DUET_CPU_SWAP``), and duet micro's worker moves between them on a shared clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from duetbench.execute.placement import resolve_placement
from duetbench.micro import worker_path
from duetbench.micro.cpuswap import ENV_SWAP, CpuSwap
from duetbench.plan import SideSpec

MICRO = Path(__file__).resolve().parents[1] / "examples" / "micro"


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def test_sides_move_together_each_onto_the_cpu_the_other_left() -> None:
    clock = Clock()
    placed: dict[str, list[int]] = {"A": [], "B": []}
    sides = {
        name: CpuSwap(cpus, 0.1, lambda _pid, cpus, n=name: placed[n].append(*cpus), clock)
        for name, cpus in (("A", (3, 5)), ("B", (5, 3)))
    }
    for t_ms in (0, 40, 99, 100, 150, 200, 250, 310, 420):
        clock.ns = t_ms * 1_000_000
        for swap in sides.values():
            swap.place()
        assert placed["A"][-1] != placed["B"][-1]  # never on one CPU
    # a move only when the period changes: 0-99 ms on the own CPU, then every 100 ms
    assert placed == {"A": [3, 5, 3, 5, 3], "B": [5, 3, 5, 3, 5]}
    assert sides["A"].to_json() == {"cpus": [3, 5], "period_s": 0.1, "moves": 4, "error": None}


def test_a_refused_move_ends_the_swapping_and_is_recorded() -> None:
    clock = Clock()
    calls: list[set[int]] = []

    def setter(_pid: int, cpus: set[int]) -> None:
        calls.append(cpus)
        if 1 in cpus:
            raise OSError(22, "Invalid argument")

    swap = CpuSwap((0, 1), 0.5, setter, clock)
    swap.place()
    clock.ns = 600_000_000
    swap.place()
    clock.ns = 1_200_000_000
    swap.place()  # no further attempt
    assert calls == [{0}, {1}]
    assert swap.moves == 0
    assert swap.error == "cannot move to CPU 1: Invalid argument"


@pytest.mark.parametrize(
    ("value", "period", "expected"),
    [
        ("2,7", 0.1, (2, 7)),
        (" 2,7 ", 0.1, (2, 7)),
        ("2,7", 0.0, None),  # the worker was not asked to swap
        ("2,7", None, None),
        ("", 0.1, None),
        ("2,2", 0.1, None),
        ("2", 0.1, None),
        ("2,7,9", 0.1, None),
        ("a,b", 0.1, None),
        ("-1,3", 0.1, None),
    ],
)
def test_from_env(value: str, period: float | None, expected: tuple[int, int] | None) -> None:
    swap = CpuSwap.from_env({ENV_SWAP: value}, period)
    assert (swap.cpus if swap else None) == expected


def side(name: str, slot: int | None) -> SideSpec:
    return SideSpec(name=name, command="true", cpu_slot=slot)


def test_executor_names_both_cpus_only_for_a_pinned_pair() -> None:
    pinned = resolve_placement("pinned", [0, 1, 2])  # CPU 0 is left to the OS
    assert pinned.swap_env([side("A", 1), side("B", 0)]) == {"A": "2,1", "B": "1,2"}
    assert resolve_placement("shared", [0, 1]).swap_env([side("A", 0), side("B", 1)]) == {}
    assert pinned.swap_env([side("A", 0)]) == {}  # one process (inproc): nothing to swap with
    assert resolve_placement([4], [0, 4]).swap_env([side("A", 0), side("B", 1)]) == {}


def cpus_here() -> list[int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.fail("this test needs two usable CPUs (CI machines have them)")
    return cpus[:2]


def test_worker_runs_half_its_samples_on_each_cpu(tmp_path: Path) -> None:
    """A real worker told to swap every 20 ms: it moves, and its own affinity says where."""
    own, other = cpus_here()
    argv = [sys.executable, str(worker_path()), "knownver:aa_100us"]
    argv += ["--path", str(MICRO / "v_a"), "--output", str(tmp_path)]
    argv += ["--samples", "150", "--evaluations", "4", "--swap-every", "0.02"]
    env = {**os.environ, ENV_SWAP: f"{own},{other}"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "micro-meta.json").read_text())
    swap = meta["cpu_swap"]
    assert swap["cpus"] == [own, other] and swap["error"] is None
    assert swap["moves"] >= 2  # 150 samples of >= 4 x ~50 us: at least 30 ms


def test_worker_without_the_flag_stays_put(tmp_path: Path) -> None:
    own, other = cpus_here()
    argv = [sys.executable, str(worker_path()), "knownver:aa_100us"]
    argv += ["--path", str(MICRO / "v_a"), "--output", str(tmp_path), "--samples", "5"]
    env = {**os.environ, ENV_SWAP: f"{own},{other}"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "cpu_swap" not in json.loads((tmp_path / "micro-meta.json").read_text())
