"""What an iteration's time is: its wall time, or its CPU time where other work on the
host time-sliced the sides (docs/statistics.md, "Beside other work: CPU time").

On a host without a spare CPU, other processes take turns with the sides, and unevenly:
a run's error in log(B/A) is then log(share_A / share_B), the sides' shares of a CPU.
An iteration's CPU time does not count the turns of others, so for a CPU-bound side it
is the time the iteration would have taken alone. Where the table has it (``cpu_ns``:
the built-in harness, the micro worker, a harness that reports it) it is used per
iteration; where a harness reports none, each iteration is credited with its side's
CPU time per iteration in the run (``cpu_share`` times the side's window over its
iterations), so the run's value is the ratio of the sides' CPU time per iteration.

A side is *CPU-bound* when it was ready to run nearly all along: its CPU time plus the
time it waited for a CPU (``runq_ns``, or ``busy_share`` per run) is at least
``BUSY_MIN`` of its wall time, and it used one CPU at a time (CPU time at most
``PARALLEL_MAX`` of the wall time). A side that waits for I/O, sleeps, or waits at a
handshake between its iterations is not: CPU time would hide exactly what it waits for.

``measure``: ``wall`` compares wall times (duet runs whose sides got unequal shares of a
CPU beside other work -- ``unbalanced`` -- are left out unless ``keep_unbalanced``);
``cpu`` compares CPU times wherever the table has them; ``auto`` (the default) compares
CPU times in a group (a benchmark x method) when any of its runs had other work beside
it, or when it is a duet in containers (its CPU time measured within the iterations'
window), and both sides are CPU-bound; wall times otherwise -- so local runs on a quiet
host are measured exactly as before. The choice is made per group, and the verdict table says
which (column ``measure``) and why (``measure_reason``).

What CPU time does not see: interference through memory bandwidth, caches or the CPU's
frequency slows the CPU time too; pairing A with B still cancels what hits both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from duetbench import records
from duetbench.options import CompareOptions

from ._table import Iterations, group_codes

#: other work kept at least this many CPUs busy during a run: it may have time-sliced
#: the sides (records.UNBALANCED_LOAD; a quiet VM reads 0.00-0.05)
LOADED_CPUS = 0.1
#: ... or the sides waited for a CPU this share of their iterations' time (median)
LOADED_RUNQ = 0.02
#: (CPU time + run delay) / wall time at least this: ready to run all along
BUSY_MIN = 0.9
#: CPU time / wall time at most this: one CPU at a time (a parallel side's CPU time
#: is not its wall time)
PARALLEL_MAX = 1.1
#: a side's rows with a CPU time (per iteration or per run) for it to be measured by it
COVERED = 0.95
#: a run's CPU time is credited to its side's iterations only when their wall times fill
#: FILL_MIN to FILL_MAX of the side's window (records.py: the container executor says so
#: per run in run.json)
FILL_MIN, FILL_MAX = records.FILL_MIN, records.FILL_MAX

#: measure_reason codes (docs/statistics.md, "Beside other work: CPU time")
REASONS = {
    "asked": "asked for",
    "quiet": "no other work beside the runs",
    "other-work": "beside other work; both sides CPU-bound",
    "container": "a duet in containers, both sides CPU-bound: their CPU time within the "
    "iterations (docs/containers.md, CPU time)",
    "no-cpu-time": "no CPU time measured (older results, or a run the harness did not place in time)",
    "not-cpu-bound": "a side was not CPU-bound (it waited or slept)",
    "cpu-bound-unknown": "no run delay measured: whether the sides were CPU-bound is unknown",
    "parallel": "a side ran on more than one CPU at a time",
    "not-filled": "the harness's iterations do not fill its runs (a long start-up, or "
    "times it did not measure itself): its CPU time is not theirs",
}


@dataclass(frozen=True, eq=False)
class MeasureChoice:
    """Per group (``by`` of the options, in group-code order): the measure and why."""

    measure: np.ndarray  # "wall" | "cpu" (object)
    reason: np.ndarray  # a key of REASONS (object)
    #: where the CPU time of a "cpu" group came from: "iteration", "run" (the share
    #: correction), or "iteration+run"; "" for wall groups
    source: np.ndarray
    #: the sides' CPU-boundness: min over A and B of the median (CPU + run delay) / wall
    busy: np.ndarray
    #: runs whose sides got unequal CPU shares beside other work: left out (wall groups)
    unbalanced_left_out: np.ndarray
    #: ... and corrected (measured by CPU time: cpu groups)
    unbalanced_corrected: np.ndarray
    #: per unit (run): measured by CPU time
    unit_cpu: np.ndarray


def _aux(it: Iterations, name: str) -> np.ndarray:
    col = it.aux.get(name)
    return np.full(len(it.unit), np.nan) if col is None else col


def _window(it: Iterations) -> np.ndarray:
    """Per row: the wall time its side's ``cpu_share`` was measured over -- its iterations'
    own window less its handshake waits (``cpu_window_ns``, containers), else its process's
    lifetime (``proc_end_ns - proc_start_ns``)."""
    own = _aux(it, "cpu_window_ns")
    return np.where(np.isnan(own), _aux(it, "proc_end_ns") - _aux(it, "proc_start_ns"), own)


def row_cpu(it: Iterations) -> np.ndarray:
    """Per row: its CPU time (``cpu_ns``), else the CPU time per iteration of its side in
    its run (the side's CPU time -- its share of a CPU times its window, :func:`_window`
    -- over the side's iterations in the table), else NaN.

    A run's CPU time is one number per side: in an aduet run whose sides differ in
    length the longer side runs its last iterations alone, and in a sduet run the shorter
    side waits at every handshake, so the share is not the same all along. Each
    iteration is therefore credited with the side's CPU time per iteration, which is
    exact when the iterations do the same work and the harness spends little CPU time
    outside them (a start-up counts: it moves the ratio towards 1 by its share). Not
    for sduet over a process's lifetime: a side that waits (or spins) at the handshake
    spends CPU time there; a container side's window leaves its waits out."""
    cpu = _aux(it, "cpu_ns")
    share = _aux(it, "cpu_share")
    if np.isnan(share).all():
        return cpu
    _starts, lengths = it.series_bounds()
    per_run = share * _window(it) / np.repeat(lengths, lengths)
    per_run[~run_filled(it)] = np.nan
    # a sduet side waits for the other at every handshake, and a harness may spin there:
    # its CPU time over the run is not its iterations' (only per iteration counts)
    waits = it.unit_method()[it.unit] == "sduet" if len(it.unit) else np.zeros(0, dtype=bool)
    per_run[waits & np.isnan(_aux(it, "cpu_window_ns"))] = np.nan
    return np.where(np.isnan(cpu), per_run, cpu)


def run_filled(it: Iterations) -> np.ndarray:
    """Per row: its side's iterations fill its run's window (``FILL_MIN`` to ``FILL_MAX``
    of it), so the run's CPU time may be credited to them; True where no window is
    known (nothing to credit) -- see :func:`row_cpu`."""
    n = len(it.unit)
    if n == 0:
        return np.zeros(0, dtype=bool)
    window = _window(it)
    starts, lengths = it.series_bounds()
    total = np.add.reduceat(it.duration.astype(np.float64), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        fill = np.repeat(total, lengths) / window
    bad = (fill < FILL_MIN) | (fill > FILL_MAX)  # NaN (no window): not bad
    return ~bad


def row_busy(it: Iterations) -> np.ndarray:
    """Per row: (CPU time + run delay) / wall time, per iteration where both are
    measured, else the side's ``busy_share`` in the run, else NaN."""
    cpu, runq = _aux(it, "cpu_ns"), _aux(it, "runq_ns")
    dur = it.duration.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_iteration = np.where(dur > 0, (cpu + runq) / dur, np.nan)
    return np.where(np.isnan(per_iteration), _aux(it, "busy_share"), per_iteration)


def choose(it: Iterations, gcode_u: np.ndarray, ng: int, opts: CompareOptions) -> MeasureChoice:
    """The measure of every group (see the module docstring)."""
    n = len(it.unit)
    g = gcode_u[it.unit] if n else np.zeros(0, dtype=np.int64)
    cpu = row_cpu(it)
    dur = it.duration.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        parallel = np.where(dur > 0, cpu / dur, np.nan)
        waited = np.where(dur > 0, _aux(it, "runq_ns") / dur, np.nan)
    frame = pd.DataFrame(
        {
            "g": g,
            "side": it.side,
            "has_cpu": ~np.isnan(cpu),
            "unfilled": np.isnan(_aux(it, "cpu_ns")) & ~run_filled(it),
            "per_iteration": ~np.isnan(_aux(it, "cpu_ns")),
            "busy": row_busy(it),
            "parallel": parallel,
            "waited": waited,
            "other": _aux(it, "other_cpus"),
            # a CPU share measured over the iterations' window: a duet in containers
            "contained": ~np.isnan(_aux(it, "cpu_window_ns")),
        }
    )
    by_side = frame.groupby(["g", "side"], sort=True)
    covered = by_side["has_cpu"].mean().unstack(fill_value=0.0).reindex(range(ng), fill_value=0.0)
    busy = by_side["busy"].median().unstack().reindex(range(ng))
    par = by_side["parallel"].median().unstack().reindex(range(ng))
    for table in (covered, busy, par):
        for side in (0, 1):
            if side not in table.columns:
                table[side] = np.nan if table is not covered else 0.0
    has_cpu = (covered[0].to_numpy() >= COVERED) & (covered[1].to_numpy() >= COVERED)
    unfilled = frame.groupby("g", sort=True)["unfilled"].any().reindex(range(ng))
    unfilled = unfilled.fillna(False).to_numpy(dtype=bool) & ~has_cpu
    busy_min = np.fmin(busy[0].to_numpy(), busy[1].to_numpy())
    par_max = np.fmax(par[0].to_numpy(), par[1].to_numpy())
    by_group = frame.groupby("g", sort=True)
    other = by_group["other"].max().reindex(range(ng)).to_numpy()
    waited_med = by_group["waited"].median().reindex(range(ng)).to_numpy()
    unbalanced = _aux_bool(it, "unbalanced")
    loaded = (np.nan_to_num(other, nan=0.0) >= LOADED_CPUS) | (
        np.nan_to_num(waited_med, nan=0.0) >= LOADED_RUNQ
    )
    if unbalanced.any():
        loaded |= np.bincount(g[unbalanced], minlength=ng) > 0
    # a container's wall time moves with its engine's processes and the host's other
    # tenants where its cgroup's CPU time does not: CPU time wherever it describes the
    # iterations (docs/containers.md, "CPU time")
    contained = by_group["contained"].all().reindex(range(ng)).fillna(False)
    contained = contained.to_numpy(dtype=bool)
    watched = loaded | contained

    measure = np.full(ng, "wall", dtype=object)
    reason = np.full(ng, "asked", dtype=object)
    if opts.measure == "cpu":
        measure[has_cpu] = "cpu"
        reason[~has_cpu] = "no-cpu-time"
        reason[unfilled] = "not-filled"
    elif opts.measure == "auto":
        with np.errstate(invalid="ignore"):
            bound = busy_min >= BUSY_MIN
            serial = ~(par_max > PARALLEL_MAX)
        reason[:] = "quiet"
        reason[watched & ~has_cpu] = "no-cpu-time"
        reason[watched & unfilled] = "not-filled"
        todo = watched & has_cpu
        reason[todo & np.isnan(busy_min)] = "cpu-bound-unknown"
        reason[todo & ~np.isnan(busy_min) & ~bound] = "not-cpu-bound"
        reason[todo & bound & ~serial] = "parallel"
        ok = todo & bound & serial
        measure[ok] = "cpu"
        reason[ok & loaded] = "other-work"
        reason[ok & ~loaded] = "container"

    is_cpu = measure == "cpu"
    per_it = frame.groupby("g", sort=True)["per_iteration"].agg(["any", "all"]).reindex(range(ng))
    source = np.full(ng, "", dtype=object)
    any_it = per_it["any"].fillna(False).to_numpy(dtype=bool)
    all_it = per_it["all"].fillna(False).to_numpy(dtype=bool)
    source[is_cpu & all_it] = "iteration"
    source[is_cpu & ~any_it] = "run"
    source[is_cpu & any_it & ~all_it] = "iteration+run"

    unit_unbalanced = np.zeros(it.n_units, dtype=bool)
    if unbalanced.any():
        unit_unbalanced[np.unique(it.unit[unbalanced])] = True
    runs_unbalanced = np.bincount(gcode_u[unit_unbalanced], minlength=ng) if ng else np.zeros(0)
    keep = opts.keep_unbalanced
    left_out = np.where(is_cpu | keep, 0, runs_unbalanced).astype(np.int64)
    corrected = np.where(is_cpu, runs_unbalanced, 0).astype(np.int64)
    unit_cpu = is_cpu[gcode_u] if len(gcode_u) else np.zeros(0, dtype=bool)
    return MeasureChoice(measure, reason, source, busy_min, left_out, corrected, unit_cpu)


def _aux_bool(it: Iterations, name: str) -> np.ndarray:
    col = it.aux.get(name)
    return np.zeros(len(it.unit), dtype=bool) if col is None else col.astype(bool)


def measured(it: Iterations, opts: CompareOptions) -> Iterations:
    """``it`` with every group's durations in its measure, the unbalanced runs of wall
    groups left out (unless ``keep_unbalanced``), and the choice in ``it.measure``."""
    gcode_u, gkeys = group_codes(it.units, opts.by)
    choice = choose(it, gcode_u, len(gkeys), opts)
    cpu_rows = choice.unit_cpu[it.unit] if len(it.unit) else np.zeros(0, dtype=bool)
    out = it
    if cpu_rows.any():
        cpu = row_cpu(it)
        duration = np.where(cpu_rows, cpu, it.duration.astype(np.float64))
        out = out.with_duration(duration)
        lost = cpu_rows & np.isnan(cpu)  # a row without CPU time in a measured side
        if lost.any():
            out = out.take(~lost)
    if not opts.keep_unbalanced:
        drop = _aux_bool(out, "unbalanced") & ~(
            choice.unit_cpu[out.unit] if len(out.unit) else np.zeros(0, dtype=bool)
        )
        if drop.any():
            out = out.take(~drop)
    return out.with_measure(choice)
