"""The verdict table on a console narrower than it wants: names and verdicts stay readable."""

from __future__ import annotations

import io

from rich.console import Console

from duetbench.report.tables import Column, Table
from duetbench.report.terminal import print_verdicts


def _wide_table(name: str) -> Table:
    cols = (
        Column("benchmark", "benchmark"),
        Column("method", "method"),
        *(Column(k, k) for k in ("mean A", "mean B", "change")),
        Column("ci", "CI"),
        *(Column(k, k) for k in ("p (rank)", "runs", "pairs", "time")),
        Column("verdict", "verdict", kind="verdict"),
    )
    row = {
        "benchmark": name,
        "method": "sduet",
        "mean A": "4.501 ms",
        "mean B": "7.853 ms",
        "change": "+81.14 %",
        "ci": "[-98.97 %, +31900.40 %]",
        "p (rank)": "0.5",
        "runs": "2",
        "pairs": "6",
        "time": "cpu",
        "verdict": "no change detected (±31900.4 %)",
    }
    return Table("verdicts", "t", cols, (row,))


def _shown(table: Table, width: int) -> str:
    out = io.StringIO()
    print_verdicts(table, Console(file=out, width=width, force_terminal=False))
    return out.getvalue()


def test_a_table_wider_than_the_console_keeps_the_benchmark_names() -> None:
    # beside other work the table grows a `time` column: the names must not become "…"
    shown = _shown(_wide_table("ab"), 140)
    assert "benchmark" in shown and "│ ab " in shown, shown
    assert all(len(line) <= 140 for line in shown.splitlines())
    long = "x" * 24
    shown = _shown(_wide_table(long), 140)
    assert long in shown, shown  # up to 30 characters stay on one line
    assert "no change" in shown and "detected" in shown  # the verdict wraps, not vanishes
