"""schema.py: the vocabulary is defined once, and docs/results.md describes the same columns."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from duetbench.process import validate_table
from duetbench.schema import (
    COLUMN_FAMILIES,
    COLUMNS,
    CORE_COLUMNS,
    FINISHED_STATUSES,
    HOST_FAILURE_STATUSES,
    METHODS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    RESERVED_COLUMNS,
    SIDES,
    USABLE_STATUSES,
    VERDICTS,
    Method,
    RunStatus,
    SideName,
    Verdict,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def _doc_rows() -> list[tuple[str, str, str, str]]:
    text = DOC.read_text()
    section = text.split("## The iterations table", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \|([^|]*)\|([^|]*)\| (.*) \|$", section, re.M)
    return [(n, t.strip(), k.strip(), m.strip()) for n, t, k, m in rows]


def test_docs_results_md_lists_every_column_as_schema_describes_it():
    def kind(c):
        parts = ["core" if c.core else "optional"]
        parts += ["required"] * c.required + ["reserved"] * c.reserved
        return ", ".join(parts)

    expected = [(c.name, c.dtype, kind(c), c.doc) for c in COLUMNS]
    expected += [(f"{p}*", "", "optional", d) for p, d in COLUMN_FAMILIES.items()]
    assert _doc_rows() == expected


def test_the_column_groups_come_from_the_one_list():
    assert CORE_COLUMNS == (
        "experiment",
        "host",
        "suite",
        "benchmark",
        "method",
        "run",
        "pair",
        "order",
        "iteration",
        "start_ns",
        "end_ns",
        "duration_ns",
    )
    assert set(CORE_COLUMNS) | set(OPTIONAL_COLUMNS) == {c.name for c in COLUMNS}
    assert not set(CORE_COLUMNS) & set(OPTIONAL_COLUMNS)
    assert REQUIRED_COLUMNS == (
        "benchmark",
        "method",
        "run",
        "pair",
        "iteration",
        "start_ns",
        "end_ns",
    )
    assert {"run_id", "warmup", "synthetic_ts", "pair", "method"} <= set(RESERVED_COLUMNS)
    assert "benchmark" not in RESERVED_COLUMNS and "iteration" not in RESERVED_COLUMNS


def test_a_table_from_another_tool_gets_the_core_columns_in_order():
    df = pd.DataFrame(
        {
            "iteration": [0, 0],
            "pair": ["B", "A"],
            "duration_ns": [5, 4],
            "run": [0, 0],
            "method": ["seqn", "seqn"],
            "benchmark": ["x", "x"],
        }
    )
    out = validate_table(df)
    assert list(out.columns[: len(CORE_COLUMNS)]) == list(CORE_COLUMNS)
    for c in COLUMNS:
        if c.name in out.columns and c.dtype == "int64":
            assert out[c.name].dtype == "int64", c.name


def test_the_enums_are_the_strings_of_the_files():
    assert METHODS == ("seqn", "aduet", "sduet", "inproc") and tuple(Method) == METHODS
    assert SIDES == ("A", "B") and SideName.A.other == "B"
    assert VERDICTS == (
        "slower",
        "faster",
        "no change detected",
        "equivalent",
        "inconclusive",
        "no data",
        "same",  # what results of earlier releases say
        "same (below threshold)",
    )
    # no alarm: neither slower nor faster, and measured
    assert Verdict.EQUIVALENT.is_same and Verdict.INCONCLUSIVE.is_same
    assert Verdict.NO_CHANGE.is_same and Verdict.BELOW_THRESHOLD.is_same
    assert not Verdict.SLOWER.is_same and not Verdict.NO_DATA.is_same
    assert [s.value for s in RunStatus] == [
        "ok",
        "failed",
        "timeout",
        "hung",
        "interrupted",
        "lost",
    ]
    assert f"{RunStatus.HUNG}" == "hung" and str(Method.SDUET) == "sduet"
    assert {Method.ADUET: 1}["aduet"] == 1  # a member is its string, also as a key


def test_the_status_sets_are_what_the_journal_and_the_analysis_use():
    assert FINISHED_STATUSES == {"ok", "failed", "timeout", "hung"}
    assert USABLE_STATUSES == {"ok", "timeout"}
    assert HOST_FAILURE_STATUSES == {"failed", "timeout", "hung", "interrupted", "lost"}
    assert USABLE_STATUSES <= FINISHED_STATUSES
    assert not Method.SEQN.is_duet and Method.ADUET.is_duet and Method.SDUET.is_duet
    assert not Method.INPROC.is_duet  # one process: the sides take turns
