"""Methods study: seqn, aduet and sduet against pyperf and hyperfine.

For each workload (the known-answer C workloads of ``examples/workloads``) and each
condition (``quiet``: no neighbour of ours, the machine as it is; ``noisy``: a seeded
:class:`duetbench.noise.NoisyNeighbour` ``cpu`` pattern in this session), every method
and tool measures the same cases with the **same wall-clock budget** per case and try:

* cases: A/A (``aa``), B with +1 / +3 / +5 % operations (``p1``, ``p3``, ``p5``) and B
  with 2x operations (``x2``, the duet paper's RQ4 design; duetbench methods only);
* duetbench: seqn, aduet and sduet in one RMIT-shuffled experiment per block
  (``run_experiment`` -> ``process`` -> ``compare``, ratio test, Student-t, 95 %), plus
  aduet with ``busy_shorter_side`` on the slowdown cases (for the bias);
* peers: ``pyperf command`` (A, then B, then ``pyperf compare_to``) and
  ``hyperfine -N`` (both commands in one call; verdict: do mean +- stddev separate),
  pinned to CPU 0 like duetbench's seqn runs.

Budget: first the per-iteration time is measured for one process alone (``t1``) and for
two processes side by side (``t2``, as in a duet), under the block's condition. With a
budget of ``S`` seconds per case and try and ``R`` repetitions per try, seqn runs
``S / (2 R t1)`` iterations per side and run (A then B), a duet ``S / (R t2)`` per side
(both at once), and pyperf / hyperfine ``R * seqn iterations`` per command. Each try is
``R`` repetitions of the block's experiment (which has ``R * rounds`` repetitions;
try ``k`` is repetitions ``k R .. (k + 1) R - 1``); the peers run once per try.

Then the real-interpreter comparison: ``/usr/bin/python3`` (Debian's 3.11.2) against
the ``python3`` on ``PATH`` on ``examples/pyperformance/bm_float.py`` (pyperf's harness),
with each duetbench method and with pyperf itself.

    python benchmarks/methods_study.py --quick --json quick.json       # 3-7 minutes (load)
    python benchmarks/methods_study.py --json study.json               # the real study
    python benchmarks/methods_study.py --smoke --json smoke.json       # < 1 minute, tests
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from duetbench.analysis import compare, runtime_speedup
from duetbench.config import loads_config
from duetbench.noise import NoisyNeighbour
from duetbench.process import process
from duetbench.schedule.inline import run_experiment

REPO = Path(__file__).resolve().parent.parent
WORKLOAD_DIR = REPO / "examples" / "workloads"
WORKLOAD = WORKLOAD_DIR / "workload"
PYPERF_EXAMPLE = REPO / "examples" / "pyperformance"

METHODS = ("seqn", "aduet", "sduet")
TOOLS = ("pyperf", "hyperfine")
ALL_METHODS = (*METHODS, *TOOLS)
#: ``case -> factor`` on B's operation count; ``aa`` is A/A.
CASES: dict[str, float] = {"aa": 1.0, "p1": 1.01, "p3": 1.03, "p5": 1.05, "x2": 2.0}
SLOWDOWNS = ("p1", "p3", "p5")
PEER_CASES = ("aa", *SLOWDOWNS)
#: Operation counts for ~0.15 s on the project's VM (examples/workloads/README.md).
OPS: dict[str, int] = {"int": 75_000_000, "float": 55_000_000, "linear": 60_000_000,
                       "random": 1_000_000}  # fmt: skip
CONFIDENCE = 0.95


# --------------------------------------------------------------------------------------
# Budget


@dataclass(frozen=True)
class Budget:
    """Iteration counts that give every method the same wall-clock seconds per case/try."""

    seconds: float  # per case and try, for every method and tool
    reps: int  # repetitions per try (duetbench), worker processes (pyperf)
    t_single_s: float  # one iteration, one process alone
    t_pair_s: float  # one iteration, two processes side by side (a duet)
    seqn_iterations: int  # per side and run: A run, then B run
    duet_iterations: int  # per side and run, both sides at once
    peer_runs: int  # per command for pyperf and hyperfine (= reps * seqn_iterations)

    @property
    def pyperf_processes(self) -> int:
        return self.reps

    @property
    def pyperf_values(self) -> int:
        return self.seqn_iterations


def compute_budget(seconds: float, reps: int, t_single_s: float, t_pair_s: float) -> Budget:
    """Iterations per run for ``seconds`` of wall clock per method, case and try.

    seqn: a repetition is an A run then a B run on one core, so ``seconds = reps * 2 *
    n_seqn * t_single``. A duet runs both sides at once: ``seconds = reps * n_duet *
    t_pair``. The peers run all of A then all of B: ``reps * n_seqn`` runs per command.
    Every count is at least 1.
    """
    if seconds <= 0 or reps < 1 or t_single_s <= 0 or t_pair_s <= 0:
        raise ValueError("seconds, reps and the iteration times must be positive")
    n_seqn = max(1, round(seconds / (2 * reps * t_single_s)))
    n_duet = max(1, round(seconds / (reps * t_pair_s)))
    return Budget(
        seconds=float(seconds),
        reps=int(reps),
        t_single_s=float(t_single_s),
        t_pair_s=float(t_pair_s),
        seqn_iterations=n_seqn,
        duet_iterations=n_duet,
        peer_runs=reps * n_seqn,
    )


# --------------------------------------------------------------------------------------
# Verdicts of the peer tools


@dataclass
class PeerResult:
    """One peer-tool comparison of A with B. ``change`` = mean B / mean A - 1."""

    tool: str
    verdict: str  # same | slower | faster | error
    change: float
    mean_a_s: float
    mean_b_s: float
    runs_a: int
    runs_b: int
    welch_p: float = math.nan  # Welch t-test on the raw times (reference only)
    welch_ci_low: float = math.nan  # 95 % Welch interval of (mean B - mean A) / mean A
    welch_ci_high: float = math.nan
    welch_verdict: str = ""
    reported: str = ""  # the tool's own words (pyperf compare_to line)
    wall_s: float = math.nan

    @property
    def welch_ci_width(self) -> float:
        return self.welch_ci_high - self.welch_ci_low


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Welch's t-test and 95 % interval of (mean b - mean a) / mean a: (p, low, high)."""
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    if len(xa) < 2 or len(xb) < 2:
        return math.nan, math.nan, math.nan
    va, vb = xa.var(ddof=1) / len(xa), xb.var(ddof=1) / len(xb)
    se = math.sqrt(va + vb)
    diff = xb.mean() - xa.mean()
    if se == 0:
        return (1.0 if diff == 0 else 0.0), diff / xa.mean(), diff / xa.mean()
    df = (va + vb) ** 2 / (va**2 / (len(xa) - 1) + vb**2 / (len(xb) - 1))
    p = float(2 * stats.t.sf(abs(diff / se), df))
    h = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se
    m = xa.mean()
    return p, (diff - h) / m, (diff + h) / m


def _interval_verdict(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "no data"
    if low > 0:
        return "slower"
    if high < 0:
        return "faster"
    return "same"


def hyperfine_verdict(data: Mapping[str, Any]) -> PeerResult:
    """A hyperfine ``--export-json`` of two commands (A first) -> a verdict.

    hyperfine 1.15 reports mean +- stddev per command (no interval, no test). The verdict
    is ``slower``/``faster`` when the two mean +- stddev intervals do not overlap, else
    ``same``; a reported ``ci``/``confidence_interval`` field (newer versions) is used
    instead when present. A Welch test on the raw ``times`` is added for reference.
    """
    results = list(data.get("results") or [])
    if len(results) != 2:
        raise ValueError(f"expected 2 results in hyperfine JSON, got {len(results)}")
    a, b = results
    ma, mb = float(a["mean"]), float(b["mean"])
    sa, sb = float(a.get("stddev") or 0.0), float(b.get("stddev") or 0.0)
    ci_key = next((k for k in ("ci", "confidence_interval") if k in a and k in b), None)
    if ci_key:
        (la, ha), (lb, hb) = a[ci_key], b[ci_key]
    else:
        la, ha, lb, hb = ma - sa, ma + sa, mb - sb, mb + sb
    verdict = "slower" if lb > ha else "faster" if hb < la else "same"
    ta, tb = a.get("times") or [], b.get("times") or []
    p, lo, hi = welch(ta, tb)
    return PeerResult(
        tool="hyperfine",
        verdict=verdict,
        change=mb / ma - 1.0,
        mean_a_s=ma,
        mean_b_s=mb,
        runs_a=len(ta),
        runs_b=len(tb),
        welch_p=p,
        welch_ci_low=lo,
        welch_ci_high=hi,
        welch_verdict=_interval_verdict(lo, hi),
        reported=f"{ma * 1e3:.2f} +- {sa * 1e3:.2f} ms -> {mb * 1e3:.2f} +- {sb * 1e3:.2f} ms",
    )


_PYPERF_LINE = re.compile(
    r"Mean \+- std dev: \[(?P<a>[^\]]*)\] .*? -> \[(?P<b>[^\]]*)\] .*?: "
    r"(?P<what>(?P<x>[0-9.]+)x (?P<dir>slower|faster)|no change|[^\n]*)"
)


def parse_pyperf_compare(text: str) -> tuple[str, str]:
    """``pyperf compare_to -v A.json B.json`` output -> (verdict, the tool's line).

    pyperf prints ``Mean +- std dev: [a] ... -> [b] ...: 1.03x slower`` and, with ``-v``,
    ``Significant (t=...)`` or ``Not significant!``; without ``-v`` a non-significant
    benchmark is ``hidden because not significant``. Its significance test is a
    two-sample t-test on the values (pyperf ``is_significant``).
    """
    m = _PYPERF_LINE.search(text)
    line = m.group(0) if m else ""
    if "Not significant" in text or "hidden because not significant" in text:
        return "same", line or "not significant"
    if "Significant" in text and m:
        if m.group("dir") == "slower":
            return "slower", line
        if m.group("dir") == "faster":
            return "faster", line
        return "same", line
    if m and m.group("what") == "no change":
        return "same", line
    raise ValueError(f"cannot read a verdict from pyperf compare_to output: {text!r}")


def _pyperf_raw_values(path: Path) -> list[float]:
    """Raw seconds of every value (value x loops x inner loops) of a pyperf JSON file."""
    import pyperf

    out: list[float] = []
    suite = pyperf.BenchmarkSuite.load(str(path))
    for bench in suite.get_benchmarks():
        for run in bench.get_runs():
            loops = run.get_loops() * run.get_inner_loops()
            out.extend(v * loops for v in run.values)
    return out


def pyperf_verdict(a_json: Path, b_json: Path, compare_text: str | None = None) -> PeerResult:
    """Compare two pyperf JSON files with ``pyperf compare_to`` (run unless given)."""
    if compare_text is None:
        proc = subprocess.run(
            [sys.executable, "-m", "pyperf", "compare_to", "-v", str(a_json), str(b_json)],
            capture_output=True,
            text=True,
            check=False,
        )
        compare_text = proc.stdout + proc.stderr
    verdict, line = parse_pyperf_compare(compare_text)
    va, vb = _pyperf_raw_values(a_json), _pyperf_raw_values(b_json)
    ma, mb = statistics.fmean(va), statistics.fmean(vb)
    p, lo, hi = welch(va, vb)
    return PeerResult(
        tool="pyperf",
        verdict=verdict,
        change=mb / ma - 1.0,
        mean_a_s=ma,
        mean_b_s=mb,
        runs_a=len(va),
        runs_b=len(vb),
        welch_p=p,
        welch_ci_low=lo,
        welch_ci_high=hi,
        welch_verdict=_interval_verdict(lo, hi),
        reported=line,
    )


# --------------------------------------------------------------------------------------
# Summaries (pure)


def true_change(case: str) -> float:
    return CASES[case.removesuffix("-bss")] - 1.0


def smallest_detected(verdicts: Mapping[str, str]) -> str:
    """The smallest of +1/+3/+5 % from which every larger one is ``slower`` (the MDS of docs/statistics.md, "Evaluation helpers").

    ``verdicts`` maps ``p1``/``p3``/``p5`` to a verdict; missing cases count as not
    detected. Returns ``"+1%"``, ``"+3%"``, ``"+5%"`` or ``">5%"``.
    """
    best = ">5%"
    for case in reversed(SLOWDOWNS):
        if verdicts.get(case) != "slower":
            break
        best = f"+{round(true_change(case) * 100)}%"
    return best


def _nanmedian(xs: Sequence[float]) -> float:
    vals = [v for v in map(_num, xs) if math.isfinite(v)]
    return statistics.median(vals) if vals else math.nan


def _nanmean(xs: Sequence[float]) -> float:
    vals = [v for v in map(_num, xs) if math.isfinite(v)]
    return statistics.fmean(vals) if vals else math.nan


def summarize_method(tries: Sequence[Mapping[str, Any]], *, bss: bool = False) -> dict[str, Any]:
    """Aggregate one method's tries of one block.

    Each try maps ``case -> {"change", "ci_width", "verdict"}`` (and ``p1-bss`` etc. for
    aduet with busy_shorter_side). Returns counts (false alarms on A/A, detections per
    slowdown), the median relative CI width over the same-length cases (aa, p1, p3, p5)
    and over A/A alone, the mean bias per slowdown case, the measured 2x ratio and the
    smallest slowdown detected in each try.
    """
    n = len(tries)

    def cases(case: str) -> list[Mapping[str, Any]]:
        return [t[case] for t in tries if case in t]

    out: dict[str, Any] = {"tries": n}
    aa = cases("aa")
    out["aa_tries"] = len(aa)
    out["false_alarms"] = sum(1 for r in aa if r["verdict"] in ("slower", "faster"))
    out["width_aa"] = _nanmedian([r["ci_width"] for r in aa])
    out["width"] = _nanmedian([t[c]["ci_width"] for t in tries for c in PEER_CASES if c in t])
    for case in SLOWDOWNS:
        rs = cases(case)
        out[f"detected_{case}"] = sum(1 for r in rs if r["verdict"] == "slower")
        out[f"tries_{case}"] = len(rs)
        out[f"bias_{case}"] = _nanmean([_num(r["change"]) - true_change(case) for r in rs])
        if bss:
            rb = cases(f"{case}-bss")
            out[f"bias_{case}_bss"] = _nanmean([_num(r["change"]) - true_change(case) for r in rb])
    out["wrong_direction"] = sum(1 for c in SLOWDOWNS for r in cases(c) if r["verdict"] == "faster")
    out["slowdown_tries"] = sum(len(cases(c)) for c in SLOWDOWNS)
    x2 = cases("x2")
    out["ratio_x2"] = _nanmean([1.0 + _num(r["change"]) for r in x2])
    if bss:
        out["ratio_x2_bss"] = _nanmean([1.0 + _num(r["change"]) for r in cases("x2-bss")])
    smallest = [smallest_detected({c: t[c]["verdict"] for c in SLOWDOWNS if c in t}) for t in tries]
    out["smallest_per_try"] = smallest
    out["smallest"] = _majority_smallest(smallest)
    return out


def _majority_smallest(per_try: Sequence[str]) -> str:
    """The smallest slowdown detected in at least half of the tries."""
    if not per_try:
        return "n/a"
    order = ["+1%", "+3%", "+5%", ">5%"]
    for level in order[:-1]:
        hits = sum(1 for s in per_try if s in order and order.index(s) <= order.index(level))
        if 2 * hits >= len(per_try):
            return level
    return ">5%"


def _num(x: Any) -> float:
    """A float; None (NaN in JSON) and non-numbers become NaN."""
    try:
        return float(x) if x is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _fmt_pct(x: Any, digits: int = 2) -> str:
    v = _num(x)
    return f"{v * 100:+.{digits}f}" if math.isfinite(v) else "-"


def _fmt(x: Any, spec: str = ".3f", scale: float = 1.0) -> str:
    v = _num(x) * scale
    return format(v, spec) if math.isfinite(v) else "-"


TABLE_COLUMNS = (
    "workload", "cond", "method", "CI width %", "seqn/this", "A/A alarms",
    "+1%", "+3%", "+5%", "said faster", "smallest", "bias +1/+3/+5 %", "bias bss", "2x ratio",
    "speedup", "wall s",
)  # fmt: skip


def table_rows(study: Mapping[str, Any]) -> list[list[str]]:
    """The printed table's rows (strings), one per block and method, then the interpreters."""
    rows: list[list[str]] = []
    for block in study.get("blocks", []):
        ms = block["methods"]
        seqn_w = _num(ms.get("seqn", {}).get("width"))
        for m in ALL_METHODS:
            s = ms.get(m)
            if s is None:
                continue
            w = _num(s.get("width"))
            ratio = seqn_w / w if math.isfinite(seqn_w) and math.isfinite(w) and w > 0 else math.nan
            biases = "/".join(_fmt_pct(s.get(f"bias_{c}", math.nan)) for c in SLOWDOWNS)
            bss = (
                "/".join(_fmt_pct(s.get(f"bias_{c}_bss", math.nan)) for c in SLOWDOWNS)
                if "bias_p1_bss" in s
                else ""
            )
            ratio_x2 = _fmt(s.get("ratio_x2", math.nan))
            if "ratio_x2_bss" in s:
                ratio_x2 += f" ({_fmt(s['ratio_x2_bss'])})"
            peer_note = "*" if m in TOOLS else ""
            rows.append(
                [
                    block["workload"],
                    block["condition"],
                    m,
                    _fmt(w, ".2f", 100) + peer_note,
                    _fmt(ratio, ".2f") + peer_note,
                    f"{s['false_alarms']}/{s['aa_tries']}",
                    *(f"{s[f'detected_{c}']}/{s[f'tries_{c}']}" for c in SLOWDOWNS),
                    f"{s.get('wrong_direction', 0)}/{s.get('slowdown_tries', 0)}",
                    s["smallest"],
                    biases,
                    bss,
                    ratio_x2,
                    _fmt(s.get("speedup", math.nan), ".2f"),
                    _fmt(s.get("wall_s", math.nan), ".0f"),
                ]
            )
    interp = study.get("interpreters")
    if interp:
        for m in ALL_METHODS:
            r = interp.get("methods", {}).get(m)
            if r is None:
                continue
            rows.append(
                [
                    "py 3.11.2 vs 3.11.7",
                    "quiet",
                    m,
                    _fmt(r.get("ci_width"), ".2f", 100) + ("*" if m in TOOLS else ""),
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    f"{r.get('verdict', '?')} {_fmt_pct(r.get('change', math.nan), 1)}%",
                    "",
                    "",
                    "",
                    "",
                    _fmt(r.get("wall_s", math.nan), ".0f"),
                ]
            )
    return rows


def resummarize(study: dict[str, Any]) -> dict[str, Any]:
    """Recompute every block's per-method summary from its stored tries (in place).

    For JSON written by an earlier version of this script; measured extras (speedup,
    wall time, projections) are kept.
    """
    for block in study.get("blocks", []):
        tries = block.get("tries") or {}
        for m, old in block.get("methods", {}).items():
            if m in tries:
                old.update(summarize_method(tries[m], bss=(m == "aduet")))
    return study


def markdown_table(study: Mapping[str, Any]) -> str:
    """:func:`table_rows` as a Markdown table."""
    lines = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * len(TABLE_COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(study)]
    return "\n".join(lines) + "\n"


def build_table(study: Mapping[str, Any]) -> Any:
    """A rich Table of :func:`table_rows`."""
    from rich.table import Table

    table = Table(
        title="Methods study: equal wall-clock budget per method, case and try",
        caption=(
            "CI width: median relative 95 % CI width (ratio test) over aa/p1/p3/p5 tries; "
            "* peers: Welch interval on their raw times (their own verdict: pyperf's t-test, "
            "hyperfine's mean +- sd overlap). Detections k/n over tries; smallest: "
            "detected in >= half the tries; said faster: a slowdown called faster. bias = "
            "measured - true change (bss: aduet with busy_shorter_side). speedup: aduet/sduet pairs per second over seqn's. "
            "Interpreter rows: verdict and change of B (3.11.7) against A (3.11.2)."
        ),
    )
    for col in TABLE_COLUMNS:
        table.add_column(col, overflow="fold")
    for row in table_rows(study):
        table.add_row(*row)
    return table


# --------------------------------------------------------------------------------------
# Running things


def host_description() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        autogroup = "?"
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sched_autogroup_enabled": autogroup,
        "hyperfine": _version(["hyperfine", "--version"]),
        "pyperf": _pyperf_version(),
        "stress_ng": _version(["stress-ng", "--version"]),
    }


def _version(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def _pyperf_version() -> str:
    try:
        import pyperf

        return str(pyperf.__version__)
    except ImportError:
        return ""


def ensure_workload() -> Path:
    subprocess.run(["sh", str(WORKLOAD_DIR / "setup.sh")], check=True, capture_output=True)
    return WORKLOAD


def _pin(cpu: int) -> Any:
    def fn() -> None:
        os.sched_setaffinity(0, {cpu})

    return fn


def calibrate(kind: str, ops: int, tmp: Path, iterations: int) -> tuple[float, float]:
    """Median seconds per iteration: one process alone on CPU 0, two side by side.

    ``iterations`` per setting, measured in alternating chunks of 3 (alone, pair, alone,
    ...) so that a load change during the calibration hits both settings alike.
    """

    def times(path: Path) -> list[float]:
        df = pd.read_csv(path)
        return list((df["end_ns"] - df["start_ns"]) / 1e9)

    chunk = min(3, iterations)
    argv = [str(WORKLOAD), kind, str(ops), str(chunk), "-o"]
    env = {k: v for k, v in os.environ.items() if k != "DUET_SYNC_DIR"}
    ncpu = os.cpu_count() or 1
    single: list[float] = []
    pair: list[float] = []
    for _ in range(max(1, iterations // chunk)):
        p = tmp / "cal-single.csv"
        subprocess.run([*argv, str(p)], preexec_fn=_pin(0), env=env, check=True,
                       capture_output=True)  # fmt: skip
        single += times(p)
        paths = [tmp / "cal-pair0.csv", tmp / "cal-pair1.csv"]
        procs = [
            subprocess.Popen(
                [*argv, str(path)], preexec_fn=_pin(cpu % ncpu), env=env, stdout=subprocess.DEVNULL
            )  # fmt: skip
            for cpu, path in enumerate(paths)
        ]
        for pr in procs:
            pr.wait()
        pair += times(paths[0]) + times(paths[1])
    return statistics.median(single), statistics.median(pair)


def workload_command(kind: str, ops: int) -> str:
    # The built-in harness does the sduet handshake itself; the workload must not do it
    # again (it would, seeing DUET_SYNC_DIR; see the report of this study in
    # docs/performance.md). `env -u` costs the same on every side and method.
    return f"env -u DUET_SYNC_DIR {WORKLOAD} {kind} {ops}"


def block_config(
    name: str,
    kind: str,
    ops: int,
    budget: Budget,
    rounds: int,
    seed: int,
    *,
    cases: Sequence[str] = tuple(CASES),
    bss_cases: Sequence[str] = ("p5", "x2"),
) -> str:
    """The duet.yml of one block: per case a seqn benchmark and a duet benchmark.

    duetbench sets ``iterations`` per benchmark, not per method, so every case is two
    benchmarks, ``<case>.s`` (seqn) and ``<case>.d`` (aduet, sduet); ``<case>-bss.d``
    is aduet with ``busy_shorter_side``. The analysis relabels them to ``<case>``.
    """
    reps = budget.reps * rounds
    # the longest run: a 2x case; allow for a heavily loaded machine
    per_run = 2 * max(budget.seqn_iterations * budget.t_single_s,
                      budget.duet_iterations * budget.t_pair_s)  # fmt: skip
    timeout = max(60, int(10 * per_run))
    lines = [
        "experiment:",
        f"  name: {name}",
        f"  seed: {seed}",
        "  schedule: rmit",
        f"  timeout: {timeout}s",
        "  default_artifacts: false",
        "defaults:",
        "  cpus: auto",
        "  warmup: 0",
        "benchmarks:",
    ]
    for case in cases:
        factor = CASES[case]
        a = workload_command(kind, ops)
        b = workload_command(kind, round(ops * factor))
        sides = "command: " + a if case == "aa" else f"A: {{command: {a}}}\n    B: {{command: {b}}}"
        variants = [
            (f"{case}.s", budget.seqn_iterations, f"{{seqn: {reps}, aduet: 0, sduet: 0}}", False),
            (f"{case}.d", budget.duet_iterations, f"{{seqn: 0, aduet: {reps}, sduet: {reps}}}", False),
        ]  # fmt: skip
        if case in bss_cases:
            variants.append(
                (
                    f"{case}-bss.d",
                    budget.duet_iterations,
                    f"{{seqn: 0, aduet: {reps}, sduet: 0}}",
                    True,
                )
            )
        for bench, iters, rep, bss in variants:
            lines += [
                f"  {bench}:",
                f"    iterations: {iters}",
                f"    repetitions: {rep}",
                f"    busy_shorter_side: {str(bss).lower()}",
                f"    {sides}",
            ]
    return "\n".join(lines) + "\n"


def relabel(df: pd.DataFrame) -> pd.DataFrame:
    """``aa.s`` / ``aa.d`` -> ``aa``; ``p1-bss.d`` -> ``p1-bss``."""
    out = df.copy()
    out["benchmark"] = out["benchmark"].astype(str).str.replace(r"\.[sd]$", "", regex=True)
    return out


def method_wall_s(df: pd.DataFrame) -> dict[str, float]:
    """Seconds of measurement per method (sum over runs of the sides' process span)."""
    spans = df.groupby(["method", "run_id"]).agg(
        s=("proc_start_ns", "min"), e=("proc_end_ns", "max")
    )
    spans["d"] = (spans["e"] - spans["s"]) / 1e9
    return {str(m): float(v) for m, v in spans.groupby(level="method")["d"].sum().items()}


def duet_results(df: pd.DataFrame, reps: int, rounds: int) -> dict[str, list[dict[str, Any]]]:
    """Per method, one dict per try: ``case -> {change, ci_low, ci_high, ci_width, verdict}``."""
    out: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
    for k in range(rounds):
        sub = df[(df["run"] >= k * reps) & (df["run"] < (k + 1) * reps)]
        tries: dict[str, dict[str, Any]] = {m: {} for m in METHODS}
        if not sub.empty:
            res = compare(sub, test="ratio", interval="t", confidence=CONFIDENCE, seed=k)
            for row in res.itertuples(index=False):
                tries[str(row.method)][str(row.benchmark)] = {
                    "change": float(row.change),
                    "ci_low": float(row.ci_low),
                    "ci_high": float(row.ci_high),
                    "ci_width": float(row.ci_width),
                    "verdict": str(row.verdict),
                    "runs": int(row.runs),
                }
        for m in METHODS:
            out[m].append(tries[m])
    return out


def pooled_results(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """All repetitions of a block together (``rounds`` x the try budget)."""
    res = compare(df, test="ratio", interval="t", confidence=CONFIDENCE)
    out: dict[str, dict[str, Any]] = {}
    for row in res.itertuples(index=False):
        out.setdefault(str(row.method), {})[str(row.benchmark)] = {
            "change": float(row.change),
            "ci_width": float(row.ci_width),
            "verdict": str(row.verdict),
            "runs": int(row.runs),
        }
    return out


def speedups(df: pd.DataFrame, budget: Budget) -> dict[str, float]:
    """Pairs per second of aduet/sduet over seqn, on the same-length cases.

    ``runtime_speedup`` (docs/statistics.md, "Evaluation helpers": mean seqn cost per repetition / mean duet cost per
    repetition) assumes equal iterations per run; here a duet run has
    ``duet_iterations`` per side against seqn's ``seqn_iterations``, so the per-pair
    speedup is that value x duet_iterations / seqn_iterations.
    """
    same = df[df["benchmark"].isin(PEER_CASES)]
    rs = runtime_speedup(same)
    scale = budget.duet_iterations / budget.seqn_iterations
    out: dict[str, float] = {}
    for m, grp in rs.groupby("method"):
        out[str(m)] = float(np.nanmean(grp["speedup"].to_numpy(dtype=float))) * scale
    return out


def run_pyperf_pair(
    cmd_a: Sequence[str],
    cmd_b: Sequence[str],
    budget: Budget,
    tmp: Path,
    tag: str,
) -> PeerResult:
    """``pyperf command`` for A, then for B (same processes and values), then compare_to."""
    files = []
    t0 = time.monotonic()
    for side, cmd in (("A", cmd_a), ("B", cmd_b)):
        path = tmp / f"{tag}-pyperf-{side}.json"
        path.unlink(missing_ok=True)
        argv = [
            "taskset", "-c", "0", sys.executable, "-m", "pyperf", "command", "--quiet",
            "-p", str(budget.pyperf_processes), "-n", str(budget.pyperf_values),
            "-w", "0", "-l", "1", "-o", str(path), "--", *cmd,
        ]  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True)
        files.append(path)
    wall = time.monotonic() - t0
    res = pyperf_verdict(files[0], files[1])
    res.wall_s = wall
    return res


def run_hyperfine_pair(
    cmd_a: Sequence[str],
    cmd_b: Sequence[str],
    budget: Budget,
    tmp: Path,
    tag: str,
) -> PeerResult:
    """``hyperfine -N`` with both commands (all of A, then all of B), pinned to CPU 0."""
    path = tmp / f"{tag}-hyperfine.json"
    argv = [
        "taskset", "-c", "0", "hyperfine", "-N", "--style", "none",
        "--runs", str(budget.peer_runs), "--export-json", str(path),
        "-n", "A", shlex.join(cmd_a), "-n", "B", shlex.join(cmd_b),
    ]  # fmt: skip
    t0 = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True)
    res = hyperfine_verdict(json.loads(path.read_text()))
    res.wall_s = time.monotonic() - t0
    return res


def _peer_entry(r: PeerResult) -> dict[str, Any]:
    return {
        "change": r.change,
        "ci_width": r.welch_ci_width,  # Welch interval on the raw times, for comparison
        "verdict": r.verdict,
        "welch_verdict": r.welch_verdict,
        "welch_p": r.welch_p,
        "reported": r.reported,
        "runs": r.runs_a,
        "wall_s": r.wall_s,
    }


@dataclass
class StudyConfig:
    workloads: list[str]
    conditions: list[str]
    budget_s: float
    rounds: int
    reps: int
    calibration_iterations: int
    interp_budget_s: float
    interpreters: bool
    seed: int
    ops_scale: float = 1.0
    cases: tuple[str, ...] = tuple(CASES)
    bss_cases: tuple[str, ...] = ("p5", "x2")
    mode: str = "full"
    keep: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _log(msg: str) -> None:
    print(f"[{dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _condition(cond: str, seed: int) -> AbstractContextManager[Any]:
    if cond == "noisy":
        return NoisyNeighbour("cpu", seed=seed)
    return nullcontext()


def run_block(cfg: StudyConfig, kind: str, cond: str, index: int, tmp: Path) -> dict[str, Any]:
    """One workload under one condition: calibrate, the duetbench experiment, the peers."""
    ops = max(1000, round(OPS[kind] * cfg.ops_scale))
    bdir = tmp / f"{kind}-{cond}"
    bdir.mkdir(parents=True, exist_ok=True)
    seed = cfg.seed + 100 * index
    block: dict[str, Any] = {"workload": kind, "condition": cond, "ops": ops, "seed": seed}
    t_block = time.monotonic()
    with _condition(cond, seed) as noise:
        if noise is not None:
            block["noise"] = {
                "pattern": "cpu",
                "seed": seed,
                "backend": noise.backend,
                "cpus": list(noise.cpus),
                "on_range_s": list(noise.on_range),
                "off_range_s": list(noise.off_range),
            }
        t1, t2 = calibrate(kind, ops, bdir, cfg.calibration_iterations)
        budget = compute_budget(cfg.budget_s, cfg.reps, t1, t2)
        block["budget"] = asdict(budget)
        _log(
            f"{kind}/{cond}: t1={t1 * 1e3:.0f} ms t2={t2 * 1e3:.0f} ms -> seqn {budget.seqn_iterations} "
            f"it/side/run, duets {budget.duet_iterations}, peers {budget.peer_runs} runs/command"
        )
        # duetbench: one RMIT experiment with rounds x reps repetitions
        text = block_config(
            f"{kind}-{cond}", kind, ops, budget, cfg.rounds, seed,
            cases=cfg.cases, bss_cases=cfg.bss_cases,
        )  # fmt: skip
        (bdir / "duet.yml").write_text(text)
        exp = loads_config(text, bdir / "duet.yml")
        t0 = time.monotonic()
        summary = run_experiment(exp, bdir / "results")
        block["duetbench_elapsed_s"] = time.monotonic() - t0
        block["duetbench_statuses"] = summary.statuses
        block["all_cores_busy"] = summary.all_cores_busy
        rep = process(summary.root)
        block["process_problems"] = rep.problems[:10]
        df = relabel(rep.table)
        # peers, one call per try and case
        peers: dict[str, list[dict[str, Any]]] = {t: [] for t in TOOLS}
        for k in range(cfg.rounds):
            tries: dict[str, dict[str, Any]] = {t: {} for t in TOOLS}
            for case in (c for c in PEER_CASES if c in cfg.cases):
                cmd_a = [str(WORKLOAD), kind, str(ops)]
                cmd_b = [str(WORKLOAD), kind, str(round(ops * CASES[case]))]
                tag = f"r{k}-{case}"
                for tool, fn in (("pyperf", run_pyperf_pair), ("hyperfine", run_hyperfine_pair)):
                    try:
                        tries[tool][case] = _peer_entry(fn(cmd_a, cmd_b, budget, bdir, tag))
                    except (subprocess.CalledProcessError, ValueError, OSError) as exc:
                        tries[tool][case] = {"verdict": "error", "error": str(exc),
                                             "change": math.nan, "ci_width": math.nan}  # fmt: skip
            for t in TOOLS:
                peers[t].append(tries[t])
    block["elapsed_s"] = time.monotonic() - t_block
    tries_by_method = duet_results(df, cfg.reps, cfg.rounds)
    tries_by_method.update(peers)
    walls = method_wall_s(df[df["benchmark"].isin(PEER_CASES)])
    sp = speedups(df, budget)
    methods: dict[str, Any] = {}
    for m in ALL_METHODS:
        s = summarize_method(tries_by_method[m], bss=(m == "aduet"))
        if m in METHODS:
            n_cases = sum(1 for c in PEER_CASES if c in cfg.cases)
            s["wall_s"] = walls.get(m, math.nan) / (cfg.rounds * n_cases)
            s["speedup"] = sp.get(m, math.nan)
        else:
            s["wall_s"] = _nanmean(
                [
                    t[c].get("wall_s", math.nan)
                    for t in tries_by_method[m]
                    for c in PEER_CASES
                    if c in t
                ]
            )
        methods[m] = s
    block["methods"] = methods
    block["tries"] = tries_by_method
    block["pooled"] = pooled_results(df)
    return block


# --------------------------------------------------------------------------------------
# The real interpreters


def _real_python(cmd: str) -> str:
    out = subprocess.run(
        [cmd, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def interp_setup(tmp: Path) -> tuple[Path, Path, Path]:
    """Links python-A (/usr/bin/python3), python-B (python3 on PATH) and pyperf into tmp."""
    import pyperf

    d = tmp / "interp"
    (d / "lib").mkdir(parents=True, exist_ok=True)
    a, b = d / "python-A", d / "python-B"
    for link, target in ((a, _real_python("/usr/bin/python3")),
                         (b, _real_python(shutil.which("python3") or "python3"))):  # fmt: skip
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    lib = d / "lib" / "pyperf"
    lib.unlink(missing_ok=True)
    lib.symlink_to(Path(pyperf.__file__).parent)
    return a, b, d / "lib"


def run_interpreters(cfg: StudyConfig, tmp: Path) -> dict[str, Any]:
    """bm_float.py under Debian's 3.11.2 (A) and pyenv's 3.11.7 (B): each method and pyperf."""
    script = PYPERF_EXAMPLE / "bm_float.py"
    if not script.exists():
        raise FileNotFoundError(f"{script} is missing (examples/pyperformance)")
    a, b, lib = interp_setup(tmp)
    env = {**os.environ, "PYTHONPATH": str(lib)}
    versions = {
        side: subprocess.run([str(p), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
        for side, p in (("A", a), ("B", b))
    }  # fmt: skip
    # per-value time (raw = value x loops) of B, one worker
    cal = tmp / "interp" / "cal.json"
    cal.unlink(missing_ok=True)
    subprocess.run(
        [str(b), str(script), "--quiet", "-p", "1", "-n", "3", "-w", "1", "-o", str(cal)],
        env=env, check=True, capture_output=True, preexec_fn=_pin(0),
    )  # fmt: skip
    t_value = statistics.median(_pyperf_raw_values(cal))
    reps = cfg.reps
    n_s = max(1, round(cfg.interp_budget_s / (2 * reps * t_value)))
    n_d = 2 * n_s
    out: dict[str, Any] = {
        "A": f"/usr/bin/python3 ({versions['A']})",
        "B": f"python3 on PATH ({versions['B']}, {os.readlink(b)})",
        "benchmark": "examples/pyperformance/bm_float.py",
        "t_value_s": t_value,
        "seqn_values": n_s,
        "duet_values": n_d,
        "reps": reps,
    }
    inherit = "--inherit-environ DUET_SYNC_DIR,DUET_PAIR,DUET_SYNC_TIMEOUT"

    def cmd(py: Path, n: int) -> str:
        return (f"{py} {script} --quiet {inherit} -p 1 -n {n} -w 1 "
                f'-o "$DUET_OUTPUT_DIR/result.json"')  # fmt: skip

    text = f"""experiment:
  name: interpreters
  seed: {cfg.seed + 7}
  schedule: rmit
  timeout: 10m
  default_artifacts: false
defaults:
  harness: pyperf
  suite: pyperf
  warmup: 0
  workdir: {PYPERF_EXAMPLE}
  env: {{PYTHONPATH: {lib}}}
benchmarks:
  float.s:
    repetitions: {{seqn: {reps}, aduet: 0, sduet: 0}}
    A: {{command: '{cmd(a, n_s)}'}}
    B: {{command: '{cmd(b, n_s)}'}}
  float.d:
    repetitions: {{seqn: 0, aduet: {reps}, sduet: {reps}}}
    A: {{command: '{cmd(a, n_d)}'}}
    B: {{command: '{cmd(b, n_d)}'}}
"""
    d = tmp / "interp"
    (d / "duet.yml").write_text(text)
    exp = loads_config(text, d / "duet.yml")
    t0 = time.monotonic()
    summary = run_experiment(exp, d / "results")
    out["duetbench_elapsed_s"] = time.monotonic() - t0
    out["statuses"] = summary.statuses
    rep = process(summary.root)
    out["process_problems"] = rep.problems[:10]
    df = relabel(rep.table)
    res = compare(df, test="ratio", interval="t", confidence=CONFIDENCE)
    walls = method_wall_s(df)
    methods: dict[str, Any] = {}
    for row in res.itertuples(index=False):
        methods[str(row.method)] = {
            "change": float(row.change),
            "ci_low": float(row.ci_low),
            "ci_high": float(row.ci_high),
            "ci_width": float(row.ci_width),
            "verdict": str(row.verdict),
            "runs": int(row.runs),
            "wall_s": walls.get(str(row.method), math.nan),
        }
    # pyperf itself: A then B, same number of values as seqn, then compare_to
    files = []
    t0 = time.monotonic()
    for side, py in (("A", a), ("B", b)):
        path = d / f"pyperf-{side}.json"
        path.unlink(missing_ok=True)
        subprocess.run(
            ["taskset", "-c", "0", str(py), str(script), "--quiet", "-p", str(reps),
             "-n", str(n_s), "-w", "1", "-o", str(path)],
            env=env, check=True, capture_output=True, cwd=PYPERF_EXAMPLE,
        )  # fmt: skip
        files.append(path)
    pr = pyperf_verdict(files[0], files[1])
    pr.wall_s = time.monotonic() - t0
    methods["pyperf"] = _peer_entry(pr)
    out["methods"] = methods
    return out


# --------------------------------------------------------------------------------------
# Main


MODES: dict[str, dict[str, Any]] = {
    # the real study: ~20-25 minutes on the 2-vCPU VM at load ~10 (iterations ~60 ms)
    "full": dict(workloads=["int", "float"], conditions=["quiet", "noisy"], budget_s=6.0,
                 rounds=1, reps=4, calibration_iterations=12, interp_budget_s=16.0,
                 ops_scale=0.4, bss_cases=("p5", "x2")),
    # a smoke run of the whole pipeline, 3-7 minutes on the shared VM
    "quick": dict(workloads=["int"], conditions=["quiet", "noisy"], budget_s=2.0, rounds=1,
                  reps=3, calibration_iterations=6, interp_budget_s=4.0, bss_cases=("x2",)),
    # for the tests: very few, very short iterations; < 1 minute
    "smoke": dict(workloads=["int"], conditions=["quiet"], budget_s=0.2, rounds=1, reps=2,
                  calibration_iterations=3, interp_budget_s=0.3, ops_scale=0.1,
                  cases=("aa", "p5"), bss_cases=()),
}  # fmt: skip


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="a ~2-3 minute smoke run")
    g.add_argument("--smoke", action="store_true", help="< 1 minute, for tests (tiny workloads)")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--from-json", type=Path, default=None,
                   help="print the table of an earlier run's JSON; run nothing")  # fmt: skip
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--rounds", type=int, default=None, help="tries per block (default by mode)")
    p.add_argument("--reps", type=int, default=None, help="repetitions per try")
    p.add_argument("--budget", type=float, default=None,
                   help="wall-clock seconds per method, case and try")  # fmt: skip
    p.add_argument("--workloads", default=None, help="comma list of int,float,linear,random")
    p.add_argument("--conditions", default=None, help="comma list of quiet,noisy")
    p.add_argument("--no-interpreters", action="store_true", help="skip the Python comparison")
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--keep", type=Path, default=None, help="keep the raw results in this directory")
    return p.parse_args(argv)


def make_config(args: argparse.Namespace) -> StudyConfig:
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    d = dict(MODES[mode])
    if args.rounds is not None:
        d["rounds"] = args.rounds
    if args.reps is not None:
        d["reps"] = args.reps
    if args.budget is not None:
        d["budget_s"] = args.budget
    if args.workloads:
        d["workloads"] = [w for w in args.workloads.split(",") if w]
    if args.conditions:
        d["conditions"] = [c for c in args.conditions.split(",") if c]
    for w in d["workloads"]:
        if w not in OPS:
            raise SystemExit(f"unknown workload {w!r}; choose from {', '.join(OPS)}")
    for c in d["conditions"]:
        if c not in ("quiet", "noisy"):
            raise SystemExit(f"unknown condition {c!r}; choose quiet or noisy")
    return StudyConfig(
        interpreters=not args.no_interpreters, seed=args.seed, mode=mode, keep=args.keep, **d
    )


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(float(x)) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, Path):
        return str(x)
    return x


def run_study(cfg: StudyConfig) -> dict[str, Any]:
    ensure_workload()
    study: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/methods_study.py", *sys.argv[1:]]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": host_description(),
        "load_before": list(os.getloadavg()),
        "config": {k: v for k, v in asdict(cfg).items() if k != "keep"},
        "blocks": [],
    }
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="methods-study-", dir=cfg.keep))
    try:
        index = 0
        for kind in cfg.workloads:
            for cond in cfg.conditions:
                _log(f"block {kind}/{cond}")
                try:
                    study["blocks"].append(run_block(cfg, kind, cond, index, tmp))
                except Exception as exc:  # keep the other blocks
                    _log(f"block {kind}/{cond} failed:\n{traceback.format_exc()}")
                    study.setdefault("errors", []).append(f"{kind}/{cond}: {exc!r}")
                index += 1
        if cfg.interpreters:
            _log("interpreters")
            try:
                study["interpreters"] = run_interpreters(cfg, tmp)
            except Exception as exc:
                _log(f"interpreters failed:\n{traceback.format_exc()}")
                study.setdefault("errors", []).append(f"interpreters: {exc!r}")
    finally:
        if cfg.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    study["elapsed_s"] = time.monotonic() - t0
    study["load_after"] = list(os.getloadavg())
    return _jsonable(study)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        study = resummarize(json.loads(args.from_json.read_text()))
    else:
        study = run_study(make_config(args))
        if args.json:
            args.json.write_text(json.dumps(study, indent=1))
    if args.markdown:
        print(markdown_table(study), end="")
    else:
        from rich.console import Console

        Console(width=240).print(build_table(study))
    print(
        f"elapsed {study['elapsed_s']:.0f} s; load average before "
        f"{', '.join(f'{x:.2f}' for x in study['load_before'])}, after "
        f"{', '.join(f'{x:.2f}' for x in study['load_after'])}"
    )
    return 1 if study.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
