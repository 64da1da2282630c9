"""The evaluation of a results directory or table, beside the verdicts every command
shows: what `duet evaluate` prints and `duet report` draws."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DuetError

if TYPE_CHECKING:
    from ..analysis.evaluate import Evaluation
    from ..options import EvaluateOptions
    from ..verdicts import VerdictTable


def evaluate_source(
    source: Path, opts: EvaluateOptions, given: Collection[str] = ()
) -> tuple[Evaluation, VerdictTable]:
    """Open ``source``, ask its verdicts (the ones every command shows; the options it
    recorded where ``given`` names none, :func:`~duetbench.workflow.verdicts.with_recorded`)
    and evaluate it; the evaluation reads the dataset as the verdicts analysed it
    (``VerdictTable.dataset``)."""
    from ..analysis.evaluate import evaluate
    from ..dataset import open_dataset
    from ..verdicts import verdicts
    from .verdicts import with_recorded

    dataset = open_dataset(source)
    if dataset.table.empty:
        raise DuetError(f"{dataset.source}: no iterations to evaluate (did every run fail?)")
    opts = replace(opts, compare=with_recorded(opts.compare, dataset, given))
    table = verdicts(dataset, opts.compare)
    if table.dataset.table.empty:
        raise DuetError(f"{dataset.source}: no iterations to evaluate (every run left out)")
    return evaluate(dataset.table, opts, verdicts=table.rows), table
