"""The iterations table: the contract between `parse` and `analysis` (DESIGN.md).

One row per iteration. Times are int64 nanoseconds; start/end since the Unix epoch.
"""

from __future__ import annotations

METHODS = ("seqn", "aduet", "sduet")
PAIRS = ("A", "B")
ORDERS = ("AB", "BA")

#: Columns every iterations table has, in this order.
CORE_COLUMNS = (
    "experiment",  # str: experiment name
    "host",  # str: host the run executed on
    "suite",  # str: suite / parser label
    "benchmark",  # str
    "method",  # str: seqn | aduet | sduet
    "run",  # int64: repetition index within (benchmark, method); seqn A and B of one repetition share it
    "pair",  # str: A | B
    "order",  # str: AB | BA for duet runs; for seqn the side ("A" / "B") -- which ran, not an order
    "iteration",  # int64: 0-based index of the iteration within its (run, pair)
    "start_ns",  # int64
    "end_ns",  # int64
    "duration_ns",  # int64
)

#: Optional columns that the parse step adds when it knows them.
OPTIONAL_COLUMNS = (
    "run_id",  # str: directory name under runs/
    "proc_start_ns",  # int64: the side's process (or container exec) start, from run.json
    "proc_end_ns",  # int64: the side's process end
    "cpu",  # str: CPUs the side was pinned to ("" if not pinned)
    "synthetic_ts",  # bool: start/end reconstructed from durations (no real timestamps)
)

INT_COLUMNS = ("run", "iteration", "start_ns", "end_ns", "duration_ns")
