"""`duet compare` gives the numbers it gave before the verdicts had one engine.

tests/fixtures/golden/iterations.csv is the iterations table of a real experiment (two
sleep benchmarks, every method, 3 runs each, run beside other work on a busy 2-CPU
machine; host facts dropped, benchmark `aa` marked as run without other work so both
run statistics of `auto` are used; two of its duet runs are unbalanced).
compare-before.json is what `duet compare --format json` said of it, with three sets
of flags, at the commit before the one verdict engine (5309e41). Every number must be
the same; the words changed by design (docs/statistics.md, "Verdicts": `same` is now
`no change detected`), and `p_value` moved to `u_p_value`.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
BEFORE = json.loads((GOLDEN / "compare-before.json").read_text())
NUMBERS = ("change", "ci_low", "ci_high", "ci_width", "mean_a_ns", "mean_b_ns", "rank_p_value")
#: the words of then -> the words of now, without a threshold
WORDS = {"same": "no change detected", "slower": "slower", "faster": "faster", "no data": "no data"}


def compare_json(*args: str) -> dict[str, Any]:
    from duetbench.cli import main

    out = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": "200"}), redirect_stdout(out):
        rc = main(["compare", str(GOLDEN / "iterations.csv"), "--format", "json", *args])
    assert rc == 0, out.getvalue()
    return json.loads(out.getvalue())


@pytest.mark.parametrize("flags", sorted(BEFORE["variants"]))
def test_compare_gives_the_numbers_it_gave_before(flags: str) -> None:
    now = {(r["benchmark"], r["method"]): r for r in compare_json(*flags.split())["rows"]}
    before = BEFORE["variants"][flags]
    assert len(now) == len(before) == 6
    for old in before:
        new = now[(old["benchmark"], old["method"])]
        for key in NUMBERS:
            if old[key] is None:
                assert new[key] is None, (flags, old, key)
            else:
                assert new[key] == pytest.approx(old[key], rel=1e-12, abs=0), (flags, old, key)
        assert new["u_p_value"] == pytest.approx(old["p_value"], rel=1e-12), (flags, old)
        for key in ("runs", "runs_few_pairs", "pairs", "run_stat", "measure"):
            assert new[key] == old[key], (flags, old, key)
        assert new["verdict"] == WORDS[old["verdict"]], (flags, old, new["verdict"])


def test_the_golden_table_uses_both_statistics_and_leaves_unbalanced_runs_out() -> None:
    """What the fixture covers: not every row alike."""
    rows = BEFORE["variants"][""]
    assert {r["run_stat"] for r in rows} == {"median", "means"}
    assert {r["verdict"] for r in rows} >= {"same", "slower", "no data"}
    kept = BEFORE["variants"]["--keep-unbalanced --run-stat median"]
    assert sum(r["runs"] for r in kept) > sum(r["runs"] for r in rows)
