"""Is B slower than A? The one answer every command gives (docs/statistics.md, "Verdicts").

:func:`verdicts` turns a :class:`~duetbench.dataset.Dataset` (a results directory or
an iterations table) and :class:`~duetbench.options.CompareOptions` into a
:class:`VerdictTable`: one row per benchmark x method with its change, interval and
verdict. `duet compare`, `duet run` (the table at its end), `duet micro`, `duet gate`,
`duet bisect`, `duet history add` (and so the dashboard), `duet evaluate` and `duet
report` all call it and only render what it returns; the stopping rule of an adaptive
experiment computes its run values with the same function
(:func:`duetbench.adaptive.results.analysed_values`). It owns every choice that changes
a number:

- the run statistic of each row (``--run-stat auto``: ``min`` for duet micro's samples,
  the median for their inproc runs, ``means`` for duets beside other work, the median
  otherwise: ``analysis.run_statistics.auto_statistics``);
- the measure (wall or CPU time: the config's ``measure:`` unless the options say) and
  which runs count: warm-up, duet runs left out as unbalanced where wall time is
  compared (``options.keep_unbalanced``), runs with far too few pairs;
- fixed-n or the stopping rule's interval: an adaptive experiment's rows carry the
  interval its rule stopped on, from the run values of the runs it took, with the
  analysis options written to ``stops.json``;
- the threshold and the verdict words (``no change detected``, ``equivalent``,
  ``inconclusive``: analysis.stats.verdicts);
- what every number is: ``p_value`` is the p-value of the verdict's own test
  (``p_value_test`` names it; none for a stopping rule's interval), ``u_p_value`` the
  pooled U test's, ``mean_a_ns``/``mean_b_ns`` each side's mean over all its analysed
  iterations (unpaired, so they may disagree with the paired change: a note says when);
- the rows the notes read (``runs_unbalanced``, ``runs_corrected``, the measure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .analysis import compare
from .analysis.compare import labelled
from .dataset import Dataset
from .options import CompareOptions
from .schema import Verdict

__all__ = ["ROW_COLUMNS", "VerdictTable", "verdicts"]

#: the columns of every row (an adaptive experiment's add ``stop`` and ``explanation``)
ROW_COLUMNS = (
    "suite",
    "benchmark",
    "method",
    "mean_a_ns",
    "mean_b_ns",
    "change",
    "ci_low",
    "ci_high",
    "ci_width",
    "within",
    "p_value",
    "p_value_test",
    "u_p_value",
    "u_statistic",
    "rank_p_value",
    "runs",
    "runs_few_pairs",
    "pairs",
    "clusters",
    "verdict",
    "test",
    "interval",
    "confidence",
    "threshold",
    "run_stat",
    "clustered_by",
    "overlap_rate",
    "calibrated",
    "unkept_overlap",
    "unpaired_disagrees",
)


@dataclass(frozen=True, eq=False)
class VerdictTable:
    """The verdicts of a dataset: ``rows`` (:data:`ROW_COLUMNS`, one per benchmark x
    method, sorted), the ``options`` that made them, the ``dataset`` they were made of
    (what the notes also read), and whether the rows carry a stopping rule's decisions
    (``adaptive``)."""

    rows: pd.DataFrame
    options: CompareOptions
    dataset: Dataset
    adaptive: bool = False

    @property
    def slower(self) -> bool:
        """Whether any verdict is ``slower`` (a regression)."""
        return (
            bool((self.rows["verdict"] == Verdict.SLOWER.value).any()) if len(self.rows) else False
        )

    def verdict_list(self) -> list[str]:
        return [str(v) for v in self.rows["verdict"]] if len(self.rows) else []


def verdicts(dataset: Dataset, options: CompareOptions | None = None) -> VerdictTable:
    """The verdict of every benchmark x method of ``dataset`` (see the module doc).

    ``options``: the analysis (default: :func:`default_options`). An empty table gives
    no rows.
    """
    opts = (options if options is not None else default_options(dataset)).checked()
    if dataset.table.empty:
        rows = pd.DataFrame({c: pd.Series(dtype=object) for c in ROW_COLUMNS})
        return VerdictTable(rows, opts, dataset)
    rows = compare(dataset.table, opts)
    adaptive = bool(dataset.stops) and not rows.empty
    if adaptive:
        from .adaptive.results import adaptive_rows  # the stopping rules: only where they ran

        rows = adaptive_rows(rows, dataset.table, dataset.stops, rule_options(dataset.stops, opts))
        adaptive = "stop" in rows.columns
    return VerdictTable(_labelled(rows), opts, dataset, adaptive)


def default_options(dataset: Dataset, **kw: object) -> CompareOptions:
    """`duet compare`'s options for ``dataset``: the experiment's seed and the config's
    ``measure:`` and ``threshold:`` (keywords replace any field)."""
    recorded = {"seed": dataset.seed, "measure": dataset.measure, "threshold": dataset.threshold}
    return CompareOptions.create(**{**recorded, **kw})


def rule_options(stops: Mapping[str, Any] | None, opts: CompareOptions) -> CompareOptions:
    """``opts`` with the analysis options the stopping rule made its run values with
    (stops.json ``analysis``; results of earlier releases have none: ``opts``)."""
    recorded = dict((stops or {}).get("analysis") or {})
    if not recorded:
        return opts
    return CompareOptions.create(**{**vars(opts), **recorded})


def _labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with every number named (:func:`duetbench.analysis.compare.labelled`), in
    the columns of :data:`ROW_COLUMNS`, sorted by benchmark and method."""
    out = labelled(rows)
    for c in ROW_COLUMNS:
        if c not in out.columns:
            out[c] = np.nan
    extra = [c for c in out.columns if c not in ROW_COLUMNS]
    return out[[*ROW_COLUMNS, *extra]].sort_values(
        ["benchmark", "method"], kind="stable", ignore_index=True
    )
