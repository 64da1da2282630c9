"""The JSON documents of `duet compare`, `duet evaluate` and `duet hosts`, and their
schemas (docs/results.md, docs/evaluate.md).

Numbers are written as they are computed (the renderers format them with
``report/formatting.py``); NaN and infinity become ``null``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from .._version import __version__
from ..analysis.evaluate import TABLE_COLUMNS, TABLES, Evaluation
from ..dataset import Dataset
from ..schema import Verdict
from ..verdicts import VerdictTable
from .formatting import num
from .notes import WARNINGS, warnings_by_row
from .tables import excluded, sort_rows

COMPARE_SCHEMA_ID = "duetbench.compare/1"
EVALUATE_SCHEMA_ID = "duetbench.evaluate/1"
S, N, INT, B = "string", "number", "integer", "boolean"


def dumps(doc: dict[str, Any]) -> str:
    """A document as duet writes it: indented, one trailing newline."""
    return json.dumps(doc, indent=2, default=str) + "\n"


# ---------------------------------------------------------------------- compare


def _num(x: Any) -> float | int | None:
    if x is None:
        return None
    try:
        if isinstance(x, int | bool):
            return int(x)
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def compare_doc(verdicts: VerdictTable) -> dict[str, Any]:
    """The `duet compare --format json` document (schema: data/compare.schema.json); rows
    in the order every other format shows them (methods as seqn, aduet, sduet, inproc)."""
    rows, dataset, opts = verdicts.rows, verdicts.dataset, verdicts.options
    out_rows = []
    keys = [k for k in ("suite", "benchmark", "method") if k in rows]
    warned = warnings_by_row(sort_rows(rows, keys), dataset, opts.min_overlap)
    for r, warnings in warned:
        out_rows.append(
            {
                "suite": r.get("suite"),
                "benchmark": str(r["benchmark"]),
                "method": str(r["method"]),
                "host": r.get("host"),
                "verdict": str(r["verdict"]),
                "change": _num(r.get("change")),
                "ci_low": _num(r.get("ci_low")),
                "ci_high": _num(r.get("ci_high")),
                "ci_width": _num(r.get("ci_width")),
                "within": _num(r.get("within")),
                "p_value": _num(r.get("p_value")),
                "p_value_test": r.get("p_value_test") or None,
                "u_p_value": _num(r.get("u_p_value")),
                "rank_p_value": _num(r.get("rank_p_value")),
                "runs": int(r.get("runs") or 0),
                "runs_few_pairs": int(r.get("runs_few_pairs") or 0),
                "pairs": int(r.get("pairs") or 0),
                "mean_a_ns": _num(r.get("mean_a_ns")),
                "mean_b_ns": _num(r.get("mean_b_ns")),
                "clustered_by": r.get("clustered_by"),
                "run_stat": str(r.get("run_stat") or opts.run_stat),
                "calibrated": bool(r.get("calibrated", True)),
                "unkept_overlap": _num(r.get("unkept_overlap")),
                "warnings": [c for c in WARNINGS if c in {code for code, _ in warnings}],
            }
        )
        if isinstance(r.get("measure"), str):  # docs/statistics.md, "Beside other work"
            out_rows[-1].update(
                measure=str(r["measure"]),
                measure_reason=str(r.get("measure_reason") or ""),
                measure_source=str(r.get("measure_source") or ""),
                runs_unbalanced=int(r.get("runs_unbalanced") or 0),
                runs_corrected=int(r.get("runs_corrected") or 0),
            )
        if r.get("stop"):  # an adaptive experiment (docs/adaptive.md)
            out_rows[-1]["stop"] = str(r["stop"])
            out_rows[-1]["explanation"] = str(r.get("explanation") or "")
    words = [r["verdict"] for r in out_rows]
    return {
        "schema": COMPARE_SCHEMA_ID,
        "tool": "duetbench",
        "version": __version__,
        "source": dataset.source,
        "experiment": dataset.experiment,
        "settings": opts.settings(),
        "rows": out_rows,
        "summary": {
            Verdict.SLOWER.value: words.count(Verdict.SLOWER),
            Verdict.FASTER.value: words.count(Verdict.FASTER),
            "no_change": words.count(Verdict.NO_CHANGE),
            Verdict.EQUIVALENT.value: words.count(Verdict.EQUIVALENT),
            Verdict.INCONCLUSIVE.value: words.count(Verdict.INCONCLUSIVE),
            # neither slower nor faster, and measured (earlier releases' `same`)
            Verdict.SAME.value: sum(
                w not in (Verdict.SLOWER, Verdict.FASTER, Verdict.NO_DATA) for w in words
            ),
            "no_data": words.count(Verdict.NO_DATA),
        },
        "problems": list(dataset.problems),
        "excluded": excluded(dataset, rows),
        "notes": [text for _r, warnings in warned for _c, text in warnings],
    }


# ---------------------------------------------------------------------- evaluate


def _jsonable(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return num(v)
    if isinstance(v, str):
        return v
    if v is pd.NA or v is pd.NaT:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return str(v)


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN -> None, numpy scalars -> Python."""
    cols = list(df.columns)
    return [
        {c: _jsonable(v) for c, v in zip(cols, row, strict=True)}
        for row in df.itertuples(index=False, name=None)
    ]


def evaluate_doc(ev: Evaluation, dataset: Dataset) -> dict[str, Any]:
    """The `duet evaluate --format json` document (schema :data:`JSON_SCHEMA`)."""
    return {
        "schema": EVALUATE_SCHEMA_ID,
        "tool": "duetbench",
        "version": __version__,
        "source": dataset.source,
        "experiment": dataset.experiment,
        "settings": ev.settings.settings(),
        "aa_benchmarks": list(ev.aa_benchmarks),
        "tables": {name: records(t) for name, t in ev.tables().items()},
        "problems": [*dataset.problems, *ev.problems],
        "excluded": excluded(dataset, ev.verdicts),
    }


def _row_schema(cols: dict[str, str], extra: bool) -> dict[str, Any]:
    props = {c: {"type": [t, "null"] if t in (N, S) else t} for c, t in cols.items()}
    return {
        "type": "object",
        "required": list(cols),
        "properties": props,
        "additionalProperties": extra,
    }


#: JSON Schema (draft 2020-12) of :func:`evaluate_doc`'s document.
JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://duetbench.invalid/schemas/evaluate-1.json",
    "title": "duet evaluate --format json",
    "type": "object",
    "required": ["schema", "tool", "version", "source", "settings", "aa_benchmarks", "tables"],
    "properties": {
        "schema": {"const": EVALUATE_SCHEMA_ID},
        "tool": {"const": "duetbench"},
        "version": {"type": "string"},
        "source": {"type": "string"},
        "experiment": {"type": ["string", "null"]},
        "settings": {
            "type": "object",
            "required": ["test", "confidence", "min_overlap", "slowdowns", "min_overlaps"],
        },
        "aa_benchmarks": {"type": "array", "items": {"type": "string"}},
        "tables": {
            "type": "object",
            "required": list(TABLES),
            "properties": {
                name: {"type": "array", "items": _row_schema(cols, name == "hosts")}
                for name, cols in TABLE_COLUMNS.items()
            },
            "additionalProperties": False,
        },
        "problems": {"type": "array", "items": {"type": "string"}},
        "excluded": {"type": "object"},
    },
}
