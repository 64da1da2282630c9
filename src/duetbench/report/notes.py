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
- ``cpu_time``: other work time-sliced the sides, and the row compares CPU times
  instead of wall times (analysis/measure_choice.py), correcting its unbalanced runs;
- ``unbalanced``: duet runs left out of the analysis because other work took more of one
  side's CPU than of the other's and CPU time could not correct them
  (records.RunRecord.unbalanced; the sides were not CPU-bound, or had no CPU time).

Under a table every kind is said once, in one line naming its rows
(:func:`summary_notes`); the sentences per row are in the JSON ``notes`` and under the
table with ``-v`` (:func:`verdict_notes`).
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
    "cpu_time",
    "unbalanced",
    "same_cpus",
)

#: the one-line reading of each kind under a table: what it means for the rows named
SUMMARIES = {
    "runs_lost": "some runs gave no usable pairs and were left out",
    "unkept_overlap": "most of the overlap time lies in pairs the overlap filter drops: the "
    "kept pairs may be biased",
    "unpaired_disagrees": "the paired estimate contradicts the unpaired comparison: likely "
    "interference that hit one side only",
    "all_cores_busy": "the duets used every core, so the OS and any other task ran beside them",
    "unsynchronised": "sduet runs never reached the handshake and ran unsynchronized",
    "other_load": "other work kept CPUs busy during the runs, and wall time was compared",
    "cpu_time": "other work time-sliced the sides: compared by CPU time, which it does not bias",
    "unbalanced": "runs were left out: other work took one side's CPU more than the other's, "
    "which wall time cannot carry",
    "same_cpus": "A and B ran on the same two CPUs in every run: a CPU difference reads as "
    "an A/B difference",
}
NOTES_DOC = "docs/statistics.md, section Notes"


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
    total_runs -= int(r.get("runs_unbalanced") or 0)  # left out before pairing, said below
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
    out.extend(_other_work_warnings(name, r, flags))
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


def _other_work_warnings(
    name: str, r: Mapping[str, Any], flags: RunFlags | None
) -> list[tuple[str, str]]:
    """The warnings of one row about other work on the host: CPU time compared instead of
    wall time, the load beside the runs, the unbalanced runs left out."""
    out: list[tuple[str, str]] = []
    by_cpu = r.get("measure") == "cpu"
    corrected = int(r.get("runs_corrected") or 0)
    if by_cpu and r.get("measure_reason") == "other-work":
        out.append(
            (
                "cpu_time",
                f"{name}: other work time-sliced the sides, so each iteration's CPU time was "
                f"compared instead of its wall time ({_source_text(r.get('measure_source'))}"
                f"{f'; {corrected} unbalanced run(s) corrected, not left out' if corrected else ''}"
                "); CPU time does not count other tasks' turns, but it is slowed like wall "
                "time by interference through caches, memory bandwidth or CPU frequency "
                '(docs/statistics.md, section "Beside other work: CPU time")',
            )
        )
    if flags is not None and flags.other_load and not by_cpu:
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
            why = _WALL_WHY.get(str(r.get("measure_reason") or ""))
            if why:
                tail += f"; wall time was compared because {why}"
            out.append(
                (
                    "other_load",
                    f"{name}: other work kept {procs + steal:.2f} CPU(s) busy on average during "
                    f"its {len(flags.other_load)} run(s) (other processes {procs:.2f}, "
                    f"hypervisor steal {steal:.2f}; the most in one run {most:.2f}), mostly "
                    f"{what}; {tail} (docs/statistics.md, section Notes)",
                )
            )
    left_out = int(r.get("runs_unbalanced") or 0) if "runs_unbalanced" in r else None
    if flags is not None and flags.unbalanced and (left_out is None or left_out > 0):
        out.append(("unbalanced", _unbalanced_sentence(name, flags, r)))
    return out


#: why a row beside other work kept its wall time (measure.REASONS, in a sentence)
_WALL_WHY = {
    "no-cpu-time": "no CPU time was measured (containers, older results)",
    "not-cpu-bound": "a side was not CPU-bound (it waited or slept), which CPU time would hide",
    "cpu-bound-unknown": "no run delay was measured, so whether the sides were CPU-bound is "
    "unknown (--measure cpu compares CPU time anyway)",
    "parallel": "a side ran on more than one CPU at a time",
    "not-filled": "the harness's iterations do not fill its runs (a long start-up, or times "
    "it did not measure itself, such as values per inner loop), so its run's CPU time "
    "cannot be credited to them",
}


def _source_text(source: Any) -> str:
    if source == "run":
        return "per run: each iteration's wall time times its side's share of a CPU in the run"
    if source == "iteration+run":
        return "per iteration where measured, else per run from the side's share of a CPU"
    return "measured per iteration"


def _unbalanced_sentence(name: str, flags: RunFlags, r: Mapping[str, Any]) -> str:
    k, n = len(flags.unbalanced), flags.runs
    if "runs_unbalanced" in r:
        k = int(r.get("runs_unbalanced") or 0)
    a, b, load = max(flags.unbalanced, key=lambda x: abs(math.log(x[0] / x[1])))
    left = "no run was left to compare" if k >= n else f"the verdict rests on the other {n - k}"
    why = _WALL_WHY.get(str(r.get("measure_reason") or ""), "wall time was compared")
    return (
        f"{name}: {k} of {n} runs were left out as unbalanced: other work took more of one "
        f"side's CPU than of the other's (the worst run: A ran {a:.0%} of its time, B "
        f"{b:.0%}, beside {load:.2f} busy CPU(s)), so interference did not hit both alike "
        f"and would have shifted B/A by about {math.exp(abs(math.log(a / b))) - 1:.0%}; "
        f"CPU time could not correct them: {why}; {left}; rerun on a quieter host, or use "
        "seqn (docs/statistics.md, section Notes)"
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


def summary_notes(rows: pd.DataFrame, dataset: Dataset, min_overlap: float) -> list[str]:
    """One line per kind of warning among ``rows``: the rows it applies to, what it means
    for them, and where the docs explain it (``-v`` and the JSON give every sentence)."""
    named: dict[str, list[str]] = {}
    have = runs_in_table(rows, dataset.table)
    keys = _row_keys(rows, dataset.table)
    for r, ws in warnings_by_row(rows, dataset, min_overlap):
        total = have.get(tuple(r[k] for k in keys), 0) if keys else 0
        for code, _text in ws:
            tag = _tag(code, r, total)
            named.setdefault(code, []).append(
                f"{r['benchmark']} {r['method']}" + (f" ({tag})" if tag else "")
            )
    out = []
    for code in WARNINGS:
        names = named.get(code)
        if not names:
            continue
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        out.append(f"{code}: {shown} -- {SUMMARIES[code]} ({NOTES_DOC})")
    return out


def _tag(code: str, r: Mapping[str, Any], total: int) -> str:
    """The few words a one-line note says of one row: how many runs, how much load."""
    used, left_out = int(r.get("runs") or 0), int(r.get("runs_unbalanced") or 0)
    if code == "runs_lost":
        return f"{total - left_out - used} of {total - left_out} runs"
    if code == "unbalanced":
        return f"{left_out} of {total} runs"
    if code == "cpu_time" and int(r.get("runs_corrected") or 0):
        return f"{int(r['runs_corrected'])} unbalanced runs corrected"
    return ""


def _pct(x: Any) -> str:
    return "-" if x is None or x != x else f"{x * 100:+.1f} %"


def _ms(x: Any) -> str:
    return "-" if x is None or x != x else f"{x / 1e6:.3g} ms"


def _p(x: Any) -> str:
    return "-" if x is None or x != x else f"{x:.2g}"
