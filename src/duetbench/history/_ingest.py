"""An experiment made ready for the repository: its table, records and analysis.

Reads a results directory through :func:`~duetbench.dataset.open_dataset` (or takes an
iterations table from another tool), then asks the verdicts every command shows
(:func:`duetbench.verdicts.verdicts`), grouped by (suite, benchmark, method, host
fingerprint): the verdict rows with intervals -- an adaptive experiment's from its
stopping rule -- and the run-level values behind them (docs/statistics.md, "Verdicts").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..adaptive.results import entry_for, stop_entries, stop_rule
from ..analysis._table import Iterations
from ..analysis.compare import CompareOptions, filtered, unit_extras
from ..analysis.paired_runs import paired_runs
from ..dataset import Dataset, RunFlags, open_dataset
from ..errors import DuetError
from ..options import MEASURES
from ..process import validate_table
from ..store import ResultsStore
from ..verdicts import rule_options, verdicts
from ._db import HistoryError
from .fingerprint import HostFingerprint, fingerprint

FP_COLUMN = "host_fingerprint"
SERIES_BY = ("suite", "benchmark", "method", FP_COLUMN)


@dataclass(frozen=True, eq=False)
class ExperimentData:
    """What the repository keeps of one experiment, before analysis."""

    uid: str  # identity: equal for the same experiment added twice
    name: str
    source: str
    table: pd.DataFrame  # the iterations table, as `duet process` writes it
    hosts: Mapping[str, HostFingerprint]  # host name -> fingerprint
    host_records: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    started_ns: int | None = None
    seed: int | None = None
    tool_version: str | None = None
    config: Mapping[str, Any] | None = None
    runs: tuple[Mapping[str, Any], ...] = ()
    aa_benchmarks: frozenset[str] = frozenset()  # benchmarks without a B side: B = A's version
    problems: tuple[str, ...] = ()
    #: what the verdicts read beside the table (a results directory's): its run flags, and
    #: stops.json of an adaptive experiment
    run_flags: Mapping[tuple[str, str], RunFlags] = field(default_factory=dict)
    stops: Mapping[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class Analysis:
    """``results``: one row per series key (compare's columns + side levels);
    ``run_values``: one row per run (log ratio B/A, pairs, each side's median)."""

    results: pd.DataFrame
    run_values: pd.DataFrame
    options: CompareOptions


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()


def load_results_dir(root: Path) -> ExperimentData:
    """A results directory of ``duet run`` (read through the store and the parsers)."""
    store = ResultsStore.open(root)
    exp = store.experiment()
    dataset = open_dataset(root)
    if dataset.table.empty:
        raise HistoryError(
            f"{root} has no usable iterations; nothing to add. Check its runs with `duet process`"
        )
    records = store.hosts()
    hosts = {name: fingerprint(rec) for name, rec in records.items()}
    for name in dataset.table["host"].astype(str).unique():
        hosts.setdefault(name, fingerprint({"host_name": name}))
    runs = tuple(run.to_json() for _rid, run in store.runs() if run is not None)
    config = exp.get("config") or {}
    aa = frozenset(
        str(b.get("name")) for b in config.get("benchmarks", []) or [] if b.get("aa") is True
    )
    identity = {k: exp.get(k) for k in ("name", "seed", "started_ns", "plan")}
    return ExperimentData(
        uid="run:" + hashlib.sha256(_canonical(identity)).hexdigest(),
        name=str(exp.get("name") or root.name),
        source=str(root.resolve()),
        table=dataset.table.drop(columns=["aa"], errors="ignore"),
        hosts=hosts,
        host_records=records,
        started_ns=exp.get("started_ns"),
        seed=exp.get("seed"),
        tool_version=exp.get("version"),
        config=config,
        runs=runs,
        aa_benchmarks=aa,
        problems=tuple(dataset.problems),
        run_flags=dataset.run_flags,
        stops=dataset.stops,
    )


def load_table(
    table: pd.DataFrame | str | Path,
    *,
    name: str | None = None,
    host_records: Mapping[str, Mapping[str, Any]] | None = None,
) -> ExperimentData:
    """An iterations table (DataFrame, .parquet or .csv) from duetbench or another tool.

    ``host_records`` (host name -> ``hosts/<host>.json``-like facts) give the fingerprints;
    without them a host's ``host_*`` columns are used, and failing those its name.
    """
    if isinstance(table, str | Path):
        from ..process import load

        source = str(Path(table).resolve())
        df = load(table)
    else:
        source = "<table>"
        df = validate_table(table)
    if df.empty:
        raise HistoryError(f"{source}: the iterations table is empty; nothing to add")
    records = {k: dict(v) for k, v in (host_records or {}).items()}
    hosts: dict[str, HostFingerprint] = {}
    for host, rows in df.groupby(df["host"].astype(str), sort=True):
        rec = records.get(host)
        if rec is None:
            first = rows.iloc[0]
            rec = {
                c[len("host_") :]: _plain(first[c]) for c in rows.columns if c.startswith("host_")
            }
            rec = {k: v for k, v in rec.items() if v is not None and k != "fingerprint"}
            if not rec:
                rec = {"host_name": host}
        hosts[host] = fingerprint(rec)
    digest = hashlib.sha256(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    digest.update(_canonical(sorted(map(str, df.columns))))
    return ExperimentData(
        uid="table:" + digest.hexdigest(),
        name=name or (Path(source).stem if source != "<table>" else "table"),
        source=source,
        table=df,
        hosts=hosts,
        host_records=records,
    )


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v


def analyse(data: ExperimentData, options: CompareOptions | None = None) -> Analysis:
    """The verdicts every command shows (:func:`duetbench.verdicts.verdicts`) per series
    key, and the run-level values behind them.

    ``options.warmup == 0`` drops the iterations the config marks as warm-up, as ``duet
    compare`` does by default; another value replaces the config's warm-up. The seed is
    the experiment's unless ``options`` gives one (other than 0), as in `duet compare`.
    """
    opts = options or CompareOptions(measure=_measure(data.config))
    if options is None:  # an adaptive experiment: the options its rule's run values used
        opts = rule_options(data.stops, opts)
    if opts.seed == 0 and data.seed:
        opts = replace(opts, seed=int(data.seed))
    opts = CompareOptions.create(**{**opts.__dict__, "by": SERIES_BY})
    df = data.table
    if opts.warmup == 0 and "warmup" in df.columns:
        df = df.loc[~df["warmup"].astype(bool)]
    df = df.assign(**{FP_COLUMN: df["host"].astype(str).map(lambda h: data.hosts[h].fingerprint)})
    dataset = Dataset(
        df, data.source, data.name, opts.seed, data.problems, {}, data.host_records,
        data.run_flags, data.stops,
    )  # fmt: skip
    try:
        results = verdicts(dataset, opts).rows
        runs = paired_runs(df, opts).runs
        itf = filtered(Iterations.from_frame(df, extra_unit_columns=unit_extras(opts)), opts)
    except DuetError as exc:
        raise HistoryError(f"{data.source}: cannot analyse the experiment: {exc}") from None
    per_run = _run_table(itf, runs)
    results = _with_basis(results, data.stops)
    results = results.merge(_levels(per_run), on=list(SERIES_BY), how="left")
    return Analysis(results=results, run_values=per_run, options=replace(opts))


def _with_basis(rows: pd.DataFrame, stops: Mapping[str, Any] | None) -> pd.DataFrame:
    """``rows`` with what each verdict rests on (schema 3): ``basis`` ``rule`` where an
    adaptive experiment's stopping rule gave the row its interval (``stop_reason``: why
    it stopped; ``confidence``/``threshold``: the rule's), else ``fixed`` (the fixed-n
    verdict's own confidence and threshold)."""
    out = rows.copy()
    entries = stop_entries(stops)
    basis, reason, conf, thr = [], [], [], []
    stopped = out["stop"] if "stop" in out.columns else pd.Series([""] * len(out), index=out.index)
    for (_, r), stop in zip(out.iterrows(), stopped, strict=True):
        entry = entry_for(entries, str(r["benchmark"]), str(r["method"]))
        if entry is not None and isinstance(stop, str) and stop:
            rule = stop_rule(entry)
            basis.append("rule")
            reason.append(stop)
            conf.append(float(rule.confidence))
            thr.append(float(rule.threshold))
        else:
            basis.append("fixed")
            reason.append(None)
            conf.append(_plain(r.get("confidence")))
            thr.append(_plain(r.get("threshold")))
    out["basis"], out["stop_reason"] = basis, reason
    out["confidence"], out["threshold"] = conf, thr
    return out


def _measure(config: Mapping[str, Any] | None) -> str:
    """The config's `measure:` (auto when it says none, and for a table)."""
    value = (config or {}).get("measure")
    return value if isinstance(value, str) and value in MEASURES else "auto"


def _run_table(itf: Iterations, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its keys, log(B/A) run value (NaN where the verdict leaves the run
    out), pairs, and each side's median."""
    sides = pd.DataFrame({"unit": itf.unit, "side": itf.side, "d": itf.duration})
    med = sides.groupby(["unit", "side"])["d"].median().unstack("side")
    med = med.reindex(columns=[0, 1])
    units = itf.units.copy()
    units["median_a_ns"] = med[0].reindex(units.index).to_numpy()
    units["median_b_ns"] = med[1].reindex(units.index).to_numpy()
    keys = ["host", *SERIES_BY, "run"]
    values = runs[[*keys, "value", "pairs", "kept"]].copy()
    values.loc[~values["kept"].to_numpy(dtype=bool), "value"] = np.nan
    units = units.merge(values.drop(columns="kept"), on=keys, how="left")
    units["pairs"] = units["pairs"].fillna(0).astype(np.int64)
    keep = ["host", *SERIES_BY, "run", "value", "pairs", "median_a_ns", "median_b_ns"]
    return units[keep].sort_values([*SERIES_BY, "host", "run"]).reset_index(drop=True)


def _levels(per_run: pd.DataFrame) -> pd.DataFrame:
    """Per series key: mean and standard error over runs of log(median duration) per side."""
    rows = []
    for key, g in per_run.groupby(list(SERIES_BY), sort=True):
        row = dict(zip(SERIES_BY, key, strict=True))
        for side in ("a", "b"):
            x = np.log(g[f"median_{side}_ns"].dropna().to_numpy(dtype=float))
            x = x[np.isfinite(x)]
            row[f"level_{side}"] = float(x.mean()) if len(x) else np.nan
            row[f"level_{side}_se"] = (
                float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else np.nan
            )
        rows.append(row)
    cols = [*SERIES_BY, "level_a", "level_a_se", "level_b", "level_b_se"]
    return pd.DataFrame(rows, columns=cols)
