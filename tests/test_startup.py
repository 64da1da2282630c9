"""`duet --help` and `duet COMMAND --help` start about as fast as Python itself: building
the parser imports argparse-level modules only (each command's heavy imports wait until
it runs), so a typo or a look at the flags costs a fraction of a second, not the second
that importing pandas, pydantic and yaml takes (docs/performance.md, "Command-line
start-up").

The time is judged as a ratio to a bare interpreter's start (`python -c pass`) measured
beside it in interleaved rounds, so a busy machine slows both alike; the median ratio
of the rounds is judged, and a batch spoiled by a burst of other work is measured again.
Both start as an installed duetbench does, from compiled bytecode (kept in a temporary
directory, ``PYTHONPYCACHEPREFIX``, even where the environment says not to write it).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duetbench.commands import COMMANDS

#: modules `duet --help` must not import (each costs 0.1-0.5 s)
HEAVY = ("numpy", "pandas", "pyarrow", "pydantic", "yaml", "rich", "scipy", "dask")
#: the goal: every --help within this many times a bare interpreter's start
RATIO = 6.0
#: the helps measured: the program's and the commands whose modules had heavy imports
HELPS = ([], ["run"], ["micro"], ["compare"], ["report"], ["gate"], ["bisect"], ["history"])
ROUNDS = 7
BATCHES = 3


def test_building_the_parser_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from duetbench.cli import build_parser\n"
        "build_parser()\n"
        f"print(' '.join(sorted(m for m in sys.modules if m.partition('.')[0] in {HEAVY!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def _seconds(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def _median_ratios(env: dict[str, str]) -> dict[str, float]:
    """Per help: the median over interleaved rounds of its time / a bare start's beside it
    (which of the two goes first alternates)."""
    bare = [sys.executable, "-c", "pass"]
    ratios: dict[str, list[float]] = {}
    for i in range(ROUNDS):
        for words in HELPS:
            duet = [sys.executable, "-m", "duetbench", *words, "--help"]
            if i % 2:
                b, d = _seconds(bare, env), _seconds(duet, env)
            else:
                d, b = _seconds(duet, env), _seconds(bare, env)
            ratios.setdefault(" ".join(["duet", *words]), []).append(d / b)
    return {k: statistics.median(v) for k, v in ratios.items()}


@pytest.fixture
def bytecode(tmp_path: Path) -> dict[str, str]:
    """The environment of an installed duetbench: modules load from compiled bytecode."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}


def test_every_help_starts_within_six_times_a_bare_interpreter(bytecode: dict[str, str]) -> None:
    assert set(w[0] for w in HELPS if w) <= set(COMMANDS)
    for words in HELPS:  # bytecode written, the file cache warm; a broken help fails here
        _seconds([sys.executable, "-m", "duetbench", *words, "--help"], bytecode)
    _seconds([sys.executable, "-c", "pass"], bytecode)
    best: dict[str, float] = {}
    for _ in range(BATCHES):
        for k, v in _median_ratios(bytecode).items():
            best[k] = min(best.get(k, v), v)
        if max(best.values()) <= RATIO:
            break
    print(
        "median ratio to `python -c pass`: " + ", ".join(f"{k} {v:.1f}x" for k, v in best.items())
    )
    slow = {k: round(v, 1) for k, v in best.items() if v > RATIO}
    assert not slow, f"--help slower than {RATIO}x a bare interpreter's start: {slow}"
