"""The vocabulary of duetbench, defined once: methods, sides, run statuses, verdicts, and
the columns of the iterations table (the contract between `parse` and `analysis`,
docs/results.md, "The iterations table").

The enums are :class:`enum.StrEnum`: each member *is* its string, so JSON, CSV and
Parquet files hold the same text as ever and compare equal to plain strings. Code that
puts a value into a DataFrame or a file name uses ``.value`` (a plain ``str``).

Words: a *side* is A or B (the table column that names it is called ``pair`` for
historical reasons); a *pair* is a matched couple of iterations, one of A and one of B.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Method(StrEnum):
    """How the two sides run: seqn one after the other, aduet and sduet at once, inproc
    in one process (docs/config.md)."""

    SEQN = "seqn"  # sequential: A and B in separate runs
    ADUET = "aduet"  # both sides at once, unsynchronized
    SDUET = "sduet"  # both sides at once, every iteration started together
    INPROC = "inproc"  # duet micro only: both sides in one process, samples alternating

    @property
    def is_duet(self) -> bool:
        return self in DUET_METHODS


#: The method names, in the order duetbench lists them.
METHODS: tuple[str, ...] = tuple(m.value for m in Method)
#: The methods that run A and B at the same time.
DUET_METHODS = frozenset({Method.ADUET, Method.SDUET})


class SideName(StrEnum):
    """One of the two versions compared: A (the baseline) or B (the change)."""

    A = "A"
    B = "B"

    @property
    def other(self) -> SideName:
        return SideName.B if self is SideName.A else SideName.A


#: Side names in order.
SIDES: tuple[str, ...] = tuple(s.value for s in SideName)


class RunStatus(StrEnum):
    """How a run ended (run.json ``status``; docs/results.md, "run.json")."""

    OK = "ok"
    FAILED = "failed"  # a side exited non-zero, its setup failed, or a result file is missing
    TIMEOUT = "timeout"  # the run's `timeout` passed; both sides were stopped
    HUNG = "hung"  # every running side idled for `hang_timeout`
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM, a bug, or lost on every cluster attempt
    LOST = "lost"  # a cluster attempt whose worker died: counted per host, never in run.json


#: Runs that ended by themselves: journaled, never executed again by ``--resume``.
FINISHED_STATUSES = frozenset({RunStatus.OK, RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.HUNG})
#: Runs whose iterations are analysed: a timed-out run keeps the iterations it finished.
USABLE_STATUSES = frozenset({RunStatus.OK, RunStatus.TIMEOUT})
#: Outcomes that count against a host's health on a cluster (everything but ok).
HOST_FAILURE_STATUSES = frozenset(set(RunStatus) - {RunStatus.OK})


class SideStatus(StrEnum):
    """How one side of a run ended (run.json ``sides.<A|B>.status``)."""

    OK = "ok"
    FAILED = "failed"
    TERMINATED = "terminated"  # stopped by the executor (timeout, hang, Ctrl-C)


class Verdict(StrEnum):
    """What every command says about B against A (docs/statistics.md, "Verdicts"): the
    interval of the change against 0 and the practical threshold t."""

    SLOWER = "slower"  # the interval lies above 0 and above +t
    FASTER = "faster"  # below 0 and below -t
    #: t = 0: the interval holds 0 -- B equals A within the interval's bounds (the ``within``
    #: of the JSON): "equal within X %" when narrow, "cannot tell" when wide
    NO_CHANGE = "no change detected"
    EQUIVALENT = "equivalent"  # t > 0: the interval lies inside (-t, +t): equal within t
    INCONCLUSIVE = "inconclusive"  # t > 0, neither: the interval is too wide to tell
    NO_DATA = "no data"
    # what results of earlier releases say (a results repository keeps them)
    SAME = "same"
    BELOW_THRESHOLD = "same (below threshold)"

    @property
    def is_same(self) -> bool:
        """Neither slower nor faster, and measured: no alarm."""
        return self not in (Verdict.SLOWER, Verdict.FASTER, Verdict.NO_DATA)


#: Verdict texts in order.
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)


# ---------------------------------------------------------------------- the iterations table

Dtype = Literal["str", "int64", "Int64", "float64", "bool"]  # Int64: integers, empty allowed


@dataclass(frozen=True)
class ColumnSpec:
    """One column of the iterations table.

    ``core``: every table `duet process` writes has it, and the core columns come first,
    in the order of :data:`COLUMNS`; otherwise the column is *optional* (added when known).
    ``reserved``: `duet process` sets it itself; a harness's column of that name is kept as
    ``harness_<name>``. ``required``: a table from another tool must have it
    (``start_ns``/``end_ns`` may be replaced by ``duration_ns``).
    """

    name: str
    dtype: Dtype
    doc: str
    core: bool = False
    reserved: bool = False
    required: bool = False


COLUMNS: tuple[ColumnSpec, ...] = (
    ColumnSpec("experiment", "str", "experiment name", core=True, reserved=True),
    ColumnSpec("host", "str", "host the run executed on", core=True, reserved=True),
    ColumnSpec("suite", "str", "suite, or the harness's name", core=True, reserved=True),
    ColumnSpec(
        "benchmark",
        "str",
        "benchmark name; `name:workload` when one result file holds several workloads, or "
        "the workload alone when the plan says each workload is a benchmark of its own "
        "(`workload_benchmarks`: the pytest plugin's runs, one folder per test; docs/pytest.md)",
        core=True,
        required=True,
    ),
    ColumnSpec(
        "method",
        "str",
        "`seqn`, `aduet`, `sduet` or `inproc` (micro benchmarks: both sides in one process, "
        "whose run directory holds one side directory, `A/`, with both sides' samples; "
        "docs/micro.md)",
        core=True,
        reserved=True,
        required=True,
    ),
    ColumnSpec(
        "run",
        "int64",
        "repetition index within (benchmark, method); seqn A and B of one repetition share it",
        core=True,
        reserved=True,
        required=True,
    ),
    ColumnSpec(
        "pair",
        "str",
        "the side, `A` or `B` (the column keeps its historical name; a *pair* is a matched "
        "couple of iterations)",
        core=True,
        reserved=True,
        required=True,
    ),
    ColumnSpec(
        "order",
        "str",
        "launch order `AB`/`BA` of a duet run, empty for seqn",
        core=True,
        reserved=True,
    ),
    ColumnSpec("iteration", "int64", "0-based index within (run, side)", core=True, required=True),
    ColumnSpec(
        "start_ns", "int64", "iteration start, ns since the Unix epoch", core=True, required=True
    ),
    ColumnSpec(
        "end_ns", "int64", "iteration end, ns since the Unix epoch", core=True, required=True
    ),
    ColumnSpec(
        "duration_ns",
        "int64",
        "from a monotonic clock where the harness has one; the time per loop / operation "
        "where the harness reports one (pyperf: its value, with the whole measurement in "
        "`raw_ns`; JMH: per operation), so it may be shorter than `end_ns - start_ns` "
        "([parsers.md](parsers.md))",
        core=True,
    ),
    ColumnSpec("run_id", "str", "the run's directory name under `runs/`", reserved=True),
    ColumnSpec(
        "proc_start_ns",
        "int64",
        "start of the side's process (or container exec), from run.json",
        reserved=True,
    ),
    ColumnSpec("proc_end_ns", "int64", "end of the side's process, from run.json", reserved=True),
    ColumnSpec("cpu", "str", 'CPUs the side was pinned to (`""`: not pinned)', reserved=True),
    ColumnSpec(
        "synthetic_ts",
        "bool",
        "timestamps laid end to end from durations (JMH, hyperfine): not usable for aduet overlaps",
        reserved=True,
    ),
    ColumnSpec(
        "warmup",
        "bool",
        "the config's `warmup:` marks this iteration; `duet compare` drops it by default",
        reserved=True,
    ),
    ColumnSpec(
        "other_work",
        "bool",
        "other work kept at least 0.25 CPU busy during the run (run.json `other_load`); "
        "duets of such runs measured by wall time use the run statistic `means` under "
        "`--run-stat auto`",
        reserved=True,
    ),
    ColumnSpec(
        "cpu_ns",
        "Int64",
        "CPU time of the iteration (empty: not measured): the built-in harness's `wait4` "
        "usage (in a container: its control group's CPU time around the iteration), the "
        "micro worker's process CPU time, or what a harness reports; "
        "`--measure cpu` compares it instead of the wall time "
        "([statistics.md](statistics.md#beside-other-work-cpu-time))",
    ),
    ColumnSpec(
        "runq_ns",
        "Int64",
        "time the iteration was ready to run but waited for a CPU (the scheduler's run "
        "delay; empty: not measured); with `cpu_ns` it says whether the side was CPU-bound",
    ),
    ColumnSpec(
        "other_cpus",
        "float64",
        "CPUs other work kept busy during the run (run.json `other_load`, processes + "
        "steal; empty: not measured)",
        reserved=True,
    ),
    ColumnSpec(
        "cpu_share",
        "float64",
        "the side's CPU time over its wall time in the run (run.json `cpu_s`; containers: "
        "over `cpu_window_ns`; empty: not measured): the per-run correction where "
        "iterations have no `cpu_ns`",
        reserved=True,
    ),
    ColumnSpec(
        "busy_share",
        "float64",
        "the side's CPU time and run delay over its wall time in the run (run.json `cpu_s`, "
        "`runq_s`; empty: not measured): near 1 for a CPU-bound side",
        reserved=True,
    ),
    ColumnSpec(
        "cpu_window_ns",
        "float64",
        "the wall time `cpu_share` and `busy_share` were measured over when it is not the "
        "side's process's (empty): in containers its iterations' own window less its waits "
        "at the sduet handshake (run.json `sides.<X>.window`)",
        reserved=True,
    ),
    ColumnSpec(
        "unbalanced",
        "bool",
        "a duet run beside other work whose sides got unequal shares of a CPU "
        "([statistics.md](statistics.md#notes)): left out where the wall time is compared",
        reserved=True,
    ),
)

COLUMN: dict[str, ColumnSpec] = {c.name: c for c in COLUMNS}
#: Columns every table `duet process` writes has, in this order.
CORE_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.core)
#: Columns `duet process` adds when it knows them.
OPTIONAL_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if not c.core)
#: Columns `duet process` sets itself; a harness's column of the same name becomes harness_<name>.
RESERVED_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.reserved)
#: Columns a table from another tool needs (start_ns, end_ns: or duration_ns).
REQUIRED_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.required)
#: Prefixes of the column families `duet process` adds (documented in docs/results.md).
COLUMN_FAMILIES: dict[str, str] = {
    "host_": "host facts (`hosts/<host>.json`) joined per host",
    "artifact_": "the first line of each artifact command's output, per host",
    "harness_": "a harness's own column whose name is reserved",
}
