"""The evaluation's former home, kept for scripts that import it from here (docs of
duetbench 0.1): the evaluation is :mod:`duetbench.analysis.evaluate`, its input
:func:`duetbench.dataset.open_dataset`, its JSON document
:mod:`duetbench.report.json_docs`."""

from __future__ import annotations

from ..analysis.evaluate import TABLE_COLUMNS, TABLES, Evaluation, evaluate
from ..dataset import open_dataset as load_for_evaluation
from .json_docs import JSON_SCHEMA

__all__ = [
    "JSON_SCHEMA",
    "TABLES",
    "TABLE_COLUMNS",
    "Evaluation",
    "evaluate",
    "load_for_evaluation",
]
