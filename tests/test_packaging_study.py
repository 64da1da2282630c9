"""The case study's script (benchmarks/packaging_study.py, docs/case-studies/packaging.md)
in a short version: packaging 25.0 and 26.0 from PyPI in their own virtual environments,
each pair measured by duet micro, pyperf and pytest-benchmark.

Slow tier: it installs three environments from the package index (about a minute) and
measures for a few minutes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

STUDY = Path(__file__).resolve().parent.parent / "benchmarks" / "packaging_study.py"
FUNCTIONS = {"requirement", "version_parse", "version_str", "specifierset"}


@pytest.mark.slow
def test_a_short_packaging_study_gives_every_tool_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "study.json"
    done = subprocess.run(
        [sys.executable, str(STUDY), "--work", str(tmp_path / "pkg work"), "--conditions",
         "quiet", "--budget", "8s", "--no-timeit", "--json", str(out)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["budget"] == "8s" and "--conditions quiet" in doc["command"]
    for pair in ("25.0 -> 26.0", "A/A 26.0"):
        got = doc["quiet"][pair]
        for tool in ("duet", "pyperf", "pytest"):
            assert set(got[tool]) == FUNCTIONS, (pair, tool, got[tool])
            assert got[f"{tool}_s"] > 0  # the machine time each tool took
        for fn in FUNCTIONS:
            verdicts = ("faster", "slower", "no change detected")  # no threshold: never equal
            assert got["duet"][fn]["verdict"] in verdicts, got["duet"][fn]
            assert got["pytest"][fn]["ratio"] > 0 and got["pytest"][fn]["rounds"][0] >= 5
    # SpecifierSet parsing became 2.3-2.4x faster in 26.0 (every run of the case study,
    # every condition, every tool): far beyond any noise of this machine
    assert doc["quiet"]["25.0 -> 26.0"]["duet"]["specifierset"]["verdict"] == "faster"
    assert doc["quiet"]["25.0 -> 26.0"]["pytest"]["specifierset"]["ratio"] < 0.8
    assert "| 25.0 -> 26.0 | specifierset |" in done.stdout
