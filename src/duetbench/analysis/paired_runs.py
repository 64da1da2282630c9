"""Run-level values and pair log ratios from an iterations table.

The same pipeline as :func:`duetbench.analysis.compare` with the same options (the
measure -- wall or CPU time -- and the unbalanced runs it leaves out, warm-up, pairing -- by iteration index for seqn and sduet, by
overlap for aduet --, the run statistic of each run's pair log ratios, ``auto`` chosen
per benchmark x method, runs with far too few pairs left out), returned per run
instead of per group: the values every interval of a verdict rests on, and the values
the stopping rule decides on (docs/statistics.md, "Verdicts").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from duetbench.options import CompareOptions

from ._table import Iterations, group_codes
from .compare import filtered, options, run_level, unit_extras
from .pairing import pair_rows

__all__ = ["KEY", "PairedRuns", "paired_runs", "run_level_values"]

KEY = ("suite", "benchmark", "method")


@dataclass(frozen=True, eq=False)
class PairedRuns:
    """Per run: its key, value and pairs; per pair: its run's position and log ratio.

    ``runs`` has the ``by`` keys, ``host``, ``run``, ``value`` (log B/A), ``pairs``,
    ``run_stat`` (the statistic of the value) and ``kept`` (False: too few pairs to
    count, as `duet compare` leaves it out), in canonical order."""

    runs: pd.DataFrame
    pair_run: np.ndarray  # index into ``runs`` of every pair
    log_ratio: np.ndarray  # log(d_B / d_A) of every pair


def paired_runs(df: pd.DataFrame, opts: CompareOptions | None = None, **kw: object) -> PairedRuns:
    """Pairs and run values of every run of ``df`` under ``opts`` (default:
    :class:`CompareOptions`; keywords replace its fields, as for ``compare``). The values
    are log ratios whatever ``opts.test`` says."""
    opts = replace(options(opts, kw), test="ratio")
    it = Iterations.from_frame(df, extra_unit_columns=unit_extras(opts))
    itf = filtered(it, opts)
    pairs = pair_rows(itf, opts.min_overlap, opts.overlap_rate)
    gcode_u, gkeys = group_codes(itf.units, opts.by)
    rv, sparse = run_level(itf, pairs, gcode_u, len(gkeys), opts)
    keys = itf.units.iloc[rv.unit].reset_index(drop=True)
    cols = [c for c in (*opts.by, "host", "run") if c in keys.columns]
    runs = keys[list(dict.fromkeys(cols))].copy()
    runs["value"] = rv.value
    runs["pairs"] = rv.pairs
    runs["run_stat"] = rv.stat if rv.stat is not None else opts.run_stat
    runs["kept"] = ~sparse
    position = np.full(itf.n_units, -1, dtype=np.int64)
    position[rv.unit] = np.arange(len(rv.unit))
    a = itf.duration[pairs.a].astype(np.float64)
    b = itf.duration[pairs.b].astype(np.float64)
    return PairedRuns(runs, position[pairs.unit], np.log(b / a))


def run_level_values(
    df: pd.DataFrame,
    opts: CompareOptions | None = None,
    *,
    by: Sequence[str] = KEY,
    **kw: object,
) -> dict[tuple[object, ...], np.ndarray]:
    """Run values (log ratios) of every ``by`` group, in run order: what :func:`decide`
    takes, and what `duet compare`'s interval of the group averages (the same options;
    runs left out for too few pairs are not among them)."""
    opts = options(opts, kw)
    if tuple(opts.by) != tuple(by):
        opts = replace(opts, by=tuple(by))
    runs = paired_runs(df, opts).runs
    runs = runs.loc[runs["kept"].to_numpy(dtype=bool)].sort_values([*by, "run"], kind="stable")
    return {
        (key if isinstance(key, tuple) else (key,)): grp["value"].to_numpy()
        for key, grp in runs.groupby(list(by), sort=True, observed=True)
    }
