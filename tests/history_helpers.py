"""Shared helpers of the tests/test_history_*.py files: cheap experiments and repositories."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

from duetbench.analysis.simulate import simulate
from duetbench.history import Repository, Version

HOST = {
    "host": "ci-1",
    "cpu_model": "Test CPU 9000",
    "cores": 2,
    "cpus_available": [0, 1],
    "memory_bytes": 8 << 30,
    "kernel": "6.1.0-test",
    "machine": "x86_64",
    "virtualization": "none",
    "python": "3.11.7",
}

TINY_CONFIG = """\
experiment:
  name: tiny
  seed: 3
  repetitions: {aduet: 3}
  timeout: 60s
defaults:
  iterations: 4
benchmarks:
  same:
    command: "%(py)s -c 'sum(range(20000))'"
  ab:
    A: {command: "%(py)s -c 'sum(range(20000))'"}
    B: {command: "%(py)s -c 'sum(range(40000))'"}
"""


def tiny_config(directory: Path) -> Path:
    path = directory / "duet.yml"
    path.write_text(textwrap.dedent(TINY_CONFIG) % {"py": sys.executable})
    return path


def sim_experiment(
    index: int,
    *,
    mean_ns: float = 20e6,
    slowdown: float = 0.0,
    benchmarks: tuple[str, ...] = ("parse",),
    runs: int = 6,
    host: str = "ci-1",
) -> pd.DataFrame:
    """A small seeded aduet experiment: B ``slowdown`` slower than A (mean ``mean_ns``)."""
    df = simulate(
        benchmarks=list(benchmarks),
        hosts=[host],
        methods=("aduet",),
        runs=runs,
        iterations=8,
        mean_ns=mean_ns,
        run_sd=0.004,
        iter_sd=0.01,
        slowdown=slowdown,
        seed=1000 + index,
        experiment=f"sim-{index}",
    )
    return df


def build_history(
    repo: Repository,
    levels: list[float],
    *,
    host_records: dict[str, dict] | None = None,
    start: int = 0,
) -> None:
    """Versions v<start>.. with relative ``levels``; experiment k compares v(k-1) with v(k)."""
    base = 20e6
    for k in range(1, len(levels)):
        i = start + k
        df = sim_experiment(i, mean_ns=base * levels[k - 1], slowdown=levels[k] / levels[k - 1] - 1)
        repo.add(
            df,
            {"A": Version(f"v{i - 1:03d}"), "B": Version(f"v{i:03d}")},
            host_records=host_records or {"ci-1": HOST},
        )


def levels_with_steps(n: int, steps: dict[int, float]) -> list[float]:
    out, level = [], 1.0
    for i in range(n):
        level *= 1 + steps.get(i, 0.0)
        out.append(level)
    return out


def assert_same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    key = ["benchmark", "method", "run", "pair", "iteration"]
    a = a.sort_values(key).reset_index(drop=True)
    b = b.sort_values(key).reset_index(drop=True)
    assert list(a.columns) == list(b.columns)

    def text(s: pd.Series) -> np.ndarray:  # missing values compare equal, whatever the dtype
        return s.astype(object).where(s.notna(), "<missing>").astype(str).to_numpy(dtype=object)

    for c in a.columns:
        assert np.array_equal(text(a[c]), text(b[c])), c


def wait_for(path: Path, proc: subprocess.Popen, deadline_s: float) -> None:
    """Wait until a hooked `history add` (``proc``) reaches the step that creates ``path``."""
    deadline = time.monotonic() + deadline_s
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the add ended before {path.name}: {proc.stderr.read()}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def tables(tmp_path: Path, n: int) -> list[Path]:
    """``n`` simulated experiments as Parquet tables, in paths with a space."""
    out = []
    for i in range(n):
        p = tmp_path / f"exp {i}.parquet"
        sim_experiment(i, benchmarks=("parse", "render")).to_parquet(p)
        out.append(p)
    return out
