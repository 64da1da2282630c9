"""The verdicts of an adaptive experiment (docs/adaptive.md, "Analysing an adaptive experiment").

An experiment stopped by its rule must be analysed with the interval the stopping
used: the fixed-n t interval of `duet compare` would be peeking. :func:`adaptive_rows`
replaces, for every benchmark x method of ``stops.json``, the change, interval and
verdict of `duet compare`'s rows by the decision of the same rule on the same
run-level values -- those of the runs the rule took, computed by
:func:`analysed_values` as the scheduler computed them -- and adds the stop reason and
what it would take to decide. Pure: the caller reads stops.json
(``ResultsStore.stops``); :func:`duetbench.verdicts.verdicts` is the one caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.paired_runs import run_level_values
from ..options import CompareOptions
from .prior import Prior
from .rules import StopRule, decide, with_first_look

__all__ = [
    "adaptive_rows",
    "analysed_values",
    "entry_for",
    "explain",
    "stop_entries",
    "stop_rule",
]


def explain(decision: Any, stopped: str | None) -> str:
    """The decision's explanation, saying which limit ended it when one did."""
    text = str(decision.explanation)
    if stopped not in ("max_runs", "budget") or decision.stop:
        return text
    rest = text.split(": ", 1)[1] if ": " in text else text
    return f"{decision.verdict.value} ({stopped} reached first): {rest}"


def stop_entries(stops: Mapping[str, Any] | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(benchmark, method) -> its stops.json entry."""
    if not stops:
        return {}
    out = {}
    for entry in (stops.get("stops") or {}).values():
        if isinstance(entry, Mapping) and "benchmark" in entry and "method" in entry:
            out[(str(entry["benchmark"]), str(entry["method"]))] = entry
    return out


def _rule(entry: Mapping[str, Any]) -> StopRule:
    s = dict(entry.get("stop") or {})
    return StopRule.create(
        until=s.get("until", "precise"),
        precision=s.get("precision"),
        threshold=s.get("threshold") or 0.0,
        budget_s=s.get("budget_s"),
        max_runs=s.get("max_runs", 50),
        min_runs=s.get("min_runs", 3),
        design=s.get("design", "sequence"),
    )


def entry_for(entries: dict[tuple[str, str], Mapping[str, Any]], bench: str, method: str) -> Any:
    if (bench, method) in entries:
        return entries[(bench, method)]
    base = bench.split(":", 1)[0]  # a workload of a multi-workload suite: bench:workload
    return entries.get((base, method))


def stop_rule(entry: Mapping[str, Any], bench: str | None = None) -> StopRule:
    """The rule a stops.json entry decided with (its pilot counted: ``first_look``); with
    ``bench``, that table benchmark's prior spread from the repository, if it had one
    (``priors``; docs/adaptive.md, "Stopping with the repository's priors")."""
    rule = with_first_look(_rule(entry), int(entry.get("first_look") or 0))
    if bench is not None:
        prior = Prior.from_stops_json((entry.get("priors") or {}).get(bench))
        if prior is not None:
            rule = replace(rule, prior=prior)
    return rule


def analysed_values(
    table: pd.DataFrame, bench: str, method: str, runs: Sequence[int], opts: CompareOptions
) -> np.ndarray:
    """The run values the stopping rule decided ``bench`` x ``method`` on: those of its
    analysed runs (stops.json ``analysed_runs``), in run order, computed from those runs
    alone with ``opts`` -- as the scheduler's :class:`StopTracker` computes them."""
    sel = (
        (table["benchmark"].astype(str) == bench).to_numpy()
        & (table["method"].astype(str) == method).to_numpy()
        & table["run"].isin([int(r) for r in runs]).to_numpy()
    )
    if not sel.any():
        return np.zeros(0)
    values = run_level_values(table.loc[sel], opts, by=("benchmark", "method"))
    return values.get((bench, method), np.zeros(0))


def adaptive_rows(
    rows: pd.DataFrame,
    table: pd.DataFrame,
    stops: Mapping[str, Any] | None,
    opts: CompareOptions,
) -> pd.DataFrame:
    """`duet compare`'s rows with the adaptive decisions (unchanged without stops.json):
    the interval the stopping rule used, on the run values it used (``opts``)."""
    entries = stop_entries(stops)
    if not entries or rows.empty:
        return rows
    out = rows.copy()
    for col, default in (("stop", ""), ("explanation", "")):
        if col not in out.columns:
            out[col] = default
    out["stop"] = out["stop"].astype(object)
    out["explanation"] = out["explanation"].astype(object)
    runs_of = {
        (str(b), str(m)): sorted(int(r) for r in g.unique())
        for (b, m), g in table.groupby(["benchmark", "method"], observed=True)["run"]
    }
    drop: list[Any] = []
    for i, r in out.iterrows():
        bench, method = str(r["benchmark"]), str(r["method"])
        entry = entry_for(entries, bench, method)
        if entry is None or (bench, method) not in runs_of:
            continue
        stopped = entry.get("stopped")
        if stopped == "not chosen":  # method auto: another method measured this benchmark
            drop.append(i)
            continue
        # method auto: runs before a switch stay out; the pilot counts, first looked at
        # with as many runs after it
        start = int(entry.get("analyse_from") or 0)
        analysed = (entry.get("analysed_runs") or {}).get(bench)
        if analysed is None:  # results of releases before analysed_runs: by position
            analysed = runs_of[(bench, method)][start:]
        chosen = analysed_values(table, bench, method, analysed, opts)
        rule = stop_rule(entry, bench)
        d = decide(chosen, rule, seconds=float(entry.get("seconds") or 0.0))
        out.at[i, "change"] = d.estimate
        out.at[i, "ci_low"] = d.low if np.isfinite(d.low) else np.nan
        out.at[i, "ci_high"] = d.high if np.isfinite(d.high) else np.nan
        width = d.high - d.low
        out.at[i, "ci_width"] = width if np.isfinite(width) else np.nan
        out.at[i, "verdict"] = d.verdict.value
        out.at[i, "runs"] = d.runs + start  # runs done (a pilot's included)
        out.at[i, "stop"] = stopped or ("running" if not d.stop else d.reason.value)
        choice = (entry.get("auto") or {}).get("choice")
        text = explain(d, stopped)
        if choice:
            text = f"method auto chose {choice.get('explanation')}; {text}"
        out.at[i, "explanation"] = text
    return out.drop(index=drop).reset_index(drop=True)
