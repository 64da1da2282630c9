"""The notes under a verdict, once for every format (terminal, Markdown, HTML, JSON).

A verdict can be computed correctly from data that cannot carry it. Each row of
`duet compare` gets the warnings that apply to it (codes in JSON ``rows[].warnings``,
sentences in the notes of every format; docs/statistics.md, section Notes):

- ``runs_lost``: runs that contributed no pair, or far fewer than the others;
- ``unkept_overlap``: aduet, a large share of the overlap time lies in pairs the
  filter drops (overlap rate <= m), so the kept pairs may be a biased selection;
- ``unpaired_disagrees``: the paired estimate points one way, a significant unpaired
  test (pooled U test and side means) the other;
- ``all_cores_busy``: duets that held every core of their host (run.json);
- ``unsynchronised``: sduet runs whose sides never reached the handshake (run.json);
- ``other_load``: other processes (or the hypervisor's steal) kept a share of a CPU busy
  during the runs (run.json ``other_load``, execute/loadwatch.py);
- ``unbalanced``: duet runs left out of the analysis because other work took more of one
  side's CPU than of the other's (records.RunRecord.unbalanced).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..records import OTHER_WORK

if TYPE_CHECKING:
    import pandas as pd

    from ..dataset import Dataset, RunFlags

#: an aduet result gets a note when at least this share of its overlap time lies in
#: pairs the filter drops
UNKEPT_OVERLAP_NOTE = 0.5
#: a result gets a note when other work kept at least this many CPUs busy, on average
#: over its runs (a busy process beside the duet takes 0.5-1; a quiet VM 0.01-0.05)
OTHER_LOAD_NOTE = OTHER_WORK
#: every warning code, in the order notes list them
WARNINGS = (
    "runs_lost",
    "unkept_overlap",
    "unpaired_disagrees",
    "all_cores_busy",
    "unsynchronised",
    "other_load",
    "unbalanced",
)


def _row_keys(rows: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    return [k for k in ("suite", "benchmark", "method") if k in table.columns and k in rows.columns]


def runs_in_table(rows: pd.DataFrame, table: pd.DataFrame) -> Mapping[Any, int]:
    """Runs of each row's group in the iterations table (to count runs lost to pairing)."""
    keys = _row_keys(rows, table)
    if table.empty or rows.empty or not keys:
        return {}
    have = table.groupby(keys, observed=True)["run"].nunique()
    return {(k if isinstance(k, tuple) else (k,)): int(v) for k, v in have.items()}


def row_warnings(
    r: Mapping[str, Any],
    total_runs: int,
    flags: RunFlags | None,
    min_overlap: float,
) -> list[tuple[str, str]]:
    """``(code, sentence)`` of every warning that applies to one row of `duet compare`."""
    out: list[tuple[str, str]] = []
    name = f"{r['benchmark']} {r['method']}"
    aduet = r["method"] == "aduet"
    used = int(r.get("runs") or 0)
    if total_runs and used < total_runs:
        why = (
            f"had no iteration pair overlapping by more than m = {min_overlap:g}"
            if aduet
            else "had no pair of iterations"
        )
        if int(r.get("runs_few_pairs") or 0):
            why += " or far fewer pairs than the others (--min-run-pairs)"
        hint = (
            " (lower --min-overlap; with --overlap-rate thesis, A's and B's iterations "
            "must be of similar length)"
            if aduet
            else ""
        )
        out.append(
            (
                "runs_lost",
                f"{name}: {total_runs - used} of {total_runs} runs {why} and were left out{hint}",
            )
        )
    unkept = r.get("unkept_overlap")
    if aduet and unkept is not None and unkept == unkept and unkept >= UNKEPT_OVERLAP_NOTE:
        out.append(
            (
                "unkept_overlap",
                f"{name}: {unkept:.0%} of the time A and B overlapped lies in pairs the "
                f"overlap filter drops (rate <= m = {min_overlap:g}); the kept pairs may not "
                "represent the runs: check the sides' iteration lengths, or use sduet "
                "(docs/statistics.md, section Notes)",
            )
        )
    if r.get("unpaired_disagrees") is True or r.get("unpaired_disagrees") == 1:
        out.append(
            (
                "unpaired_disagrees",
                f"{name}: the paired estimate ({_pct(r.get('change'))}) points the other way "
                f"from the unpaired comparison (mean A {_ms(r.get('mean_a_ns'))}, mean B "
                f"{_ms(r.get('mean_b_ns'))}, pooled U test p = {_p(r.get('u_p_value', r.get('p_value')))}): the "
                "pairs cannot be trusted; likely interference that hit one side only "
                "(docs/statistics.md, section Notes)",
            )
        )
    if flags is not None and flags.all_cores_busy:
        out.append(
            (
                "all_cores_busy",
                f"{name}: {flags.all_cores_busy} run(s) used every core of their host"
                + (f" (placement {'/'.join(flags.placements)})" if flags.placements else "")
                + ", so the OS and any other task ran beside the benchmark; on a busy machine "
                "prefer a host with a CPU to spare (docs/config.md, `cpus`)",
            )
        )
    if flags is not None and flags.unsynchronised:
        out.append(
            (
                "unsynchronised",
                f"{name}: {flags.unsynchronised} run(s) were unsynchronised: no side ever "
                "reached the sduet handshake, so they ran as unsynchronized duets; give the "
                "benchmark a `sync_command` (docs/sync.md)",
            )
        )
    if flags is not None and flags.other_load:
        procs = sum(p for p, _ in flags.other_load) / len(flags.other_load)
        steal = sum(s for _, s in flags.other_load) / len(flags.other_load)
        if procs + steal >= OTHER_LOAD_NOTE:
            most = max(p + s for p, s in flags.other_load)
            what = "other processes" if procs >= steal else "the hypervisor (steal time)"
            tail = (
                "A and B ran one after the other, so it lands in the interval as noise"
                if r["method"] == "seqn"
                else "A and B took turns in one process, so it hits both alike and lands in "
                "the interval as noise"
                if r["method"] == "inproc"
                else "a duet on a host without a spare CPU may not share it evenly between A "
                "and B: on 2 CPUs beside one busy process, duets gave wrong verdicts where "
                "seqn stayed right (docs/performance.md, section Placement); rerun on a "
                "quieter host or compare with seqn"
            )
            if r.get("run_stat") == "means" and r["method"] != "seqn":
                tail += (
                    "; each run is summarized by its sides' mean durations (run statistic "
                    "`means`), which time-sliced interference does not bias"
                )
            out.append(
                (
                    "other_load",
                    f"{name}: other work kept {procs + steal:.2f} CPU(s) busy on average during "
                    f"its {len(flags.other_load)} run(s) (other processes {procs:.2f}, "
                    f"hypervisor steal {steal:.2f}; the most in one run {most:.2f}), mostly "
                    f"{what}; {tail} (docs/statistics.md, section Notes)",
                )
            )
    if flags is not None and flags.unbalanced:
        out.append(("unbalanced", _unbalanced_sentence(name, flags)))
    if flags is not None and flags.same_cpus:
        a, b = flags.same_cpus
        out.append(
            (
                "same_cpus",
                f"{name}: in all {flags.runs} runs A ran on CPU {a} and B on CPU {b} (placement "
                "shared, the scheduler's choice), so a difference between those two CPUs "
                "cannot be told apart from one between A and B -- virtual CPUs can differ by "
                'tens of percent for seconds at a time (docs/performance.md, "Unequal '
                'virtual CPUs"); with `cpus: pinned` each side gets each CPU in half the '
                "runs (docs/statistics.md, section Notes)",
            )
        )
    return out


def _unbalanced_sentence(name: str, flags: RunFlags) -> str:
    k, n = len(flags.unbalanced), flags.runs
    a, b, load = max(flags.unbalanced, key=lambda x: abs(math.log(x[0] / x[1])))
    left = "no run was left to compare" if k >= n else f"the verdict rests on the other {n - k}"
    return (
        f"{name}: {k} of {n} runs were left out as unbalanced: other work took more of one "
        f"side's CPU than of the other's (the worst run: A ran {a:.0%} of its time, B "
        f"{b:.0%}, beside {load:.2f} busy CPU(s)), so interference did not hit both alike "
        f"and would have shifted B/A by about {math.exp(abs(math.log(a / b))) - 1:.0%}; {left}; "
        "rerun on a "
        "quieter host, or use seqn (docs/statistics.md, section Notes)"
    )


def warnings_by_row(
    rows: pd.DataFrame, dataset: Dataset, min_overlap: float
) -> list[tuple[dict[str, Any], list[tuple[str, str]]]]:
    """Every row (as a dict, in the order given) with its warnings."""
    keys = _row_keys(rows, dataset.table)
    have = runs_in_table(rows, dataset.table)
    out = []
    for r in rows.to_dict("records"):
        total = have.get(tuple(r[k] for k in keys), 0) if keys else 0
        flags = dataset.run_flags.get((str(r["benchmark"]), str(r["method"])))
        out.append((r, row_warnings(r, total, flags, min_overlap)))
    return out


def verdict_notes(rows: pd.DataFrame, dataset: Dataset, min_overlap: float) -> list[str]:
    """The sentences of every warning of ``rows``, row by row."""
    return [text for _r, ws in warnings_by_row(rows, dataset, min_overlap) for _c, text in ws]


def _pct(x: Any) -> str:
    return "-" if x is None or x != x else f"{x * 100:+.1f} %"


def _ms(x: Any) -> str:
    return "-" if x is None or x != x else f"{x / 1e6:.3g} ms"


def _p(x: Any) -> str:
    return "-" if x is None or x != x else f"{x:.2g}"
