"""What `duet compare`, `duet evaluate` and `duet report` read: a results directory or a
table.

:func:`open_dataset` accepts a results directory (processed on the fly, as `duet
process` does, with what was excluded and why) or an iterations table
(``.parquet`` / ``.csv``), and returns a :class:`Dataset`: the table plus what the
renderers say about it (its name, its seed, the problems found while reading it).
Files of a results directory are read through :class:`~duetbench.store.ResultsStore`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .store import ResultsStore

if TYPE_CHECKING:  # pandas is imported where it is used: `duet --help` must start fast
    import pandas as pd


@dataclass(frozen=True)
class RunFlags:
    """Usable runs of one benchmark and method that the verdict's notes must mention:
    duets that held every core (run.json ``all_cores_busy``), sduet runs whose sides never
    reached the handshake (``sync``, docs/sync.md), how the runs were placed, the other
    work beside them, and the duet runs left out as unbalanced (records.RunRecord)."""

    all_cores_busy: int = 0
    unsynchronised: int = 0
    placements: tuple[str, ...] = ()  # run.json `placement` values seen, sorted
    #: run.json `other_load` of the runs that measured it: (processes, steal) CPUs each
    other_load: tuple[tuple[float, float], ...] = ()
    #: usable runs (the unbalanced ones included)
    runs: int = 0
    #: the unbalanced runs (left out of the analysis unless kept): (share A, share B, other
    #: CPUs) each
    unbalanced: tuple[tuple[float, float, float], ...] = ()
    #: shared duets whose sides ran on the same two CPUs in every usable run (at least
    #: SAME_CPUS_RUNS): (A's CPU, B's CPU); () otherwise (records.RunRecord.main_cpus)
    same_cpus: tuple[int, ...] = ()


def run_flags(store: ResultsStore) -> dict[tuple[str, str], RunFlags]:
    """:class:`RunFlags` of every (benchmark, method) with a flagged or placed usable run."""
    from .schema import USABLE_STATUSES

    runs: dict[tuple[str, str], int] = {}
    busy: dict[tuple[str, str], int] = {}
    unsync: dict[tuple[str, str], int] = {}
    placed: dict[tuple[str, str], set[str]] = {}
    loads: dict[tuple[str, str], list[tuple[float, float]]] = {}
    unbalanced: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    mains: dict[tuple[str, str], list[tuple[int, int] | None]] = {}
    for _rid, run in store.runs():
        if run is None or run.status not in USABLE_STATUSES:
            continue
        key = (run.benchmark, run.method)
        runs[key] = runs.get(key, 0) + 1
        busy[key] = busy.get(key, 0) + int(run.all_cores_busy)
        unsync[key] = unsync.get(key, 0) + int(run.unsynchronised)
        if run.placement:
            placed.setdefault(key, set()).add(run.placement)
        mains.setdefault(key, []).append(run.main_cpus)
        load = run.other_load_cpus
        if load is not None:
            loads.setdefault(key, []).append(load)
        if run.unbalanced:  # left out or corrected: the analysis says which (measure_choice.py)
            shares = run.cpu_shares
            unbalanced.setdefault(key, []).append((shares["A"], shares["B"], run.other_cpus or 0.0))
    same = {k: _same_cpus(m) for k, m in mains.items()}
    return {
        k: RunFlags(
            busy[k],
            unsync[k],
            tuple(sorted(placed.get(k, ()))),
            tuple(loads.get(k, ())),
            runs[k],
            tuple(unbalanced.get(k, ())),
            same[k],
        )
        for k in busy
        if busy[k] or unsync[k] or placed.get(k) or loads.get(k) or unbalanced.get(k) or same[k]
    }


#: usable runs, all on the same two CPUs, from which a shared duet gets the `same_cpus` note
SAME_CPUS_RUNS = 4


def _same_cpus(mains: list[tuple[int, int] | None]) -> tuple[int, ...]:
    """(A's CPU, B's CPU) when every run ran its sides apart on those same two CPUs."""
    first = mains[0] if len(mains) >= SAME_CPUS_RUNS and len(set(mains)) == 1 else None
    return first if first is not None else ()


@dataclass(frozen=True, eq=False)
class Dataset:
    """An iterations table and where it came from.

    ``source``: the path as the user gave it; ``experiment``: the experiment's name
    (None for a table without an ``experiment`` column); ``seed``: the experiment's seed
    (0 for a table), the default bootstrap seed; ``problems``: result files that could
    not be read, one line each; ``excluded``: runs and iterations left out by status or
    reason (``{"runs": {status: n}, "iterations": {why: n}, "timed_out_runs_used": n}``);
    ``hosts``: the host records of a results directory (``hosts/<host>.json``);
    ``run_flags``: per (benchmark, method), the usable runs whose run.json says the
    verdict may not carry (:class:`RunFlags`; empty for a table).

    The table of a results directory has a boolean ``aa`` column: the runs of
    benchmarks without a B side in duet.yml (A/A experiments), from the plan.
    """

    table: pd.DataFrame
    source: str
    experiment: str | None = None
    seed: int = 0
    problems: tuple[str, ...] = ()
    excluded: Mapping[str, Any] = field(default_factory=dict)
    hosts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    run_flags: Mapping[tuple[str, str], RunFlags] = field(default_factory=dict)
    #: stops.json of an adaptive experiment (docs/adaptive.md); None for a fixed plan
    stops: Mapping[str, Any] | None = None
    #: the config's `measure:` (docs/statistics.md, "Beside other work: CPU time")
    measure: str = "auto"
    #: the config's `threshold:` (the practical threshold its verdicts were given with)
    threshold: float = 0.0

    @property
    def name(self) -> str:
        """The experiment's name, or the source's path when the table has none."""
        return self.experiment or self.source


def open_dataset(path: str | Path) -> Dataset:
    """A results directory (processed on the fly) or an iterations table (.parquet/.csv)."""
    from .process import load, process

    path = Path(path)
    if path.is_dir():
        rep = process(path)
        store = ResultsStore.open(path)
        exp = store.experiment()
        excluded = {
            "runs": rep.runs_excluded,
            "iterations": rep.iterations_excluded,
            "timed_out_runs_used": rep.runs_partial,
        }
        return Dataset(
            _with_aa_column(rep.table, aa_flags(store)),
            str(path),
            exp.get("name"),
            int(exp.get("seed") or 0),
            tuple(rep.problems),
            excluded,
            store.hosts(),
            run_flags(store),
            store.stops(),
            _measure(exp),
            _threshold(exp),
        )
    df = load(path)
    exp_name = str(df["experiment"].iloc[0]) if "experiment" in df.columns and len(df) else None
    return Dataset(df, str(path), exp_name, 0)


def _measure(exp: Mapping[str, Any]) -> str:
    """The config's `measure:` from experiment.json (``auto`` for older results)."""
    from .options import MEASURES

    config = exp.get("config")
    value = config.get("measure") if isinstance(config, Mapping) else None
    return value if value in MEASURES else "auto"


def _threshold(exp: Mapping[str, Any]) -> float:
    """The config's `threshold:` from experiment.json (0 for older results)."""
    config = exp.get("config")
    value = config.get("threshold") if isinstance(config, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0.0 <= value < 1.0 else 0.0


def aa_flags(store: ResultsStore) -> dict[str, bool]:
    """``run_id -> aa`` (an A/A experiment: no B side in duet.yml) from the plan, and from
    run.json for runs the plan does not list."""
    out: dict[str, bool] = {}
    for spec in store.plan():
        out[str(spec["run_id"])] = bool(spec.get("aa", False))
    for rid, run in store.runs():
        if rid not in out and run is not None:
            out[rid] = bool(run.spec.get("aa", False))
    return out


def _with_aa_column(df: pd.DataFrame, flags: dict[str, bool]) -> pd.DataFrame:
    if "run_id" not in df.columns or not len(df):
        return df
    df = df.copy()
    df["aa"] = df["run_id"].astype(str).map(flags).fillna(False).astype(bool)
    return df
