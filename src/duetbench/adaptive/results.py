"""The verdicts of an adaptive experiment (docs/adaptive.md, "Analysing an adaptive experiment").

An experiment stopped by its rule must be analysed with the interval the stopping
used: the fixed-n t interval of `duet compare` would be peeking. :func:`adaptive_rows`
replaces, for every benchmark x method of ``stops.json``, the change, interval and
verdict of `duet compare`'s rows by the decision of the same rule on the same
run-level values (in run order), and adds the stop reason and what it would take to
decide. Pure: the caller reads stops.json (``ResultsStore.stops``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.paired_runs import paired_runs
from .rules import StopRule, decide, with_first_look

__all__ = ["adaptive_rows", "explain", "stop_entries"]


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


def _entry_for(entries: dict[tuple[str, str], Mapping[str, Any]], bench: str, method: str) -> Any:
    if (bench, method) in entries:
        return entries[(bench, method)]
    base = bench.split(":", 1)[0]  # a workload of a multi-workload suite: bench:workload
    return entries.get((base, method))


def _values_by_run(table: pd.DataFrame, *, run_stat: str) -> dict[tuple[str, str], pd.Series]:
    """Run values per (benchmark, method), indexed by run number, in run order."""
    runs = paired_runs(table, run_stat=run_stat).runs.sort_values(
        ["benchmark", "method", "run"], kind="stable"
    )
    return {
        (str(b), str(m)): pd.Series(grp["value"].to_numpy(), index=grp["run"].to_numpy())
        for (b, m), grp in runs.groupby(["benchmark", "method"], sort=True, observed=True)
    }


def adaptive_rows(
    rows: pd.DataFrame, table: pd.DataFrame, stops: Mapping[str, Any] | None, *, run_stat: str
) -> pd.DataFrame:
    """`duet compare`'s rows with the adaptive decisions (unchanged without stops.json)."""
    entries = stop_entries(stops)
    if not entries or rows.empty:
        return rows
    values = _values_by_run(table, run_stat=run_stat)
    out = rows.copy()
    for col, default in (("stop", ""), ("explanation", "")):
        if col not in out.columns:
            out[col] = default
    out["stop"] = out["stop"].astype(object)
    out["explanation"] = out["explanation"].astype(object)
    drop: list[Any] = []
    for i, r in out.iterrows():
        bench, method = str(r["benchmark"]), str(r["method"])
        entry = _entry_for(entries, bench, method)
        vals = values.get((bench, method))
        if entry is None or vals is None:
            continue
        stopped = entry.get("stopped")
        if stopped == "not chosen":  # method auto: another method measured this benchmark
            drop.append(i)
            continue
        # method auto: runs before a switch stay out; the pilot counts, first looked at
        # with as many runs after it
        rule = with_first_look(_rule(entry), int(entry.get("first_look") or 0))
        start = int(entry.get("analyse_from") or 0)
        analysed = (entry.get("analysed_runs") or {}).get(bench)
        if analysed is not None:  # the runs the rule took, whatever else finished
            chosen = vals.loc[vals.index.isin([int(x) for x in analysed])].to_numpy()
        else:  # results of releases before analysed_runs
            chosen = vals.to_numpy()[start:]
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
