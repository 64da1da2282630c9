"""JMH JSON results (``-rf json -rff result.json``).

The file is an array with one entry per benchmark (and parameter combination
and mode). ``primaryMetric.rawData`` holds, per fork, the score of every
measurement iteration (warm-up iterations are not recorded); ``sample`` mode
holds ``rawDataHistogram`` instead (per fork, per iteration, ``[value,
count]`` pairs, summarised here by their weighted mean). ``scoreUnit`` is a
time per operation (``ms/op``: ``avgt``, ``sample``, ``ss``) or operations per
time (``ops/s``: ``thrpt``).

Each iteration's score becomes the time of one operation: ``duration_ns`` (int,
rounded to the nearest ns) and ``ns_per_op`` (float, unrounded). JMH records
no timestamps, so the rows are duration-only (the processing step lays them
end to end and marks them ``synthetic_ts``).

JMH writes NaN / infinities as strings (``"NaN"``); an iteration without a
finite time per operation is kept as a failed row (``exit_code`` 1).
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._many import parse_each
from ._util import (
    build_frame,
    load_json,
    plain_value,
    round_ns,
    to_decimal,
)
from .registry import SideContext

#: JMH's short time-unit labels (TimeValue) in nanoseconds.
_UNIT_NS = {
    "ns": Decimal(1),
    "us": Decimal(1_000),
    "µs": Decimal(1_000),
    "ms": Decimal(1_000_000),
    "s": Decimal(1_000_000_000),
    "sec": Decimal(1_000_000_000),
    "min": Decimal(60_000_000_000),
    "hr": Decimal(3_600_000_000_000),
    "h": Decimal(3_600_000_000_000),
    "day": Decimal(86_400_000_000_000),
}


def parse_jmh(ctx: SideContext) -> pd.DataFrame:
    """One duration-only row per measurement iteration of every benchmark in the JMH file(s)."""
    return parse_each(ctx, ("*.json",), "JMH JSON (-rf json)", _parse_file)


def _parse_file(path: Path) -> pd.DataFrame:
    # JMH before 1.21 did not escape strings, and its pretty-printer put raw line ends
    # after the commas inside them (a @Param value "1,2"): accept those
    doc = load_json(path, strict=False)
    if not isinstance(doc, list):
        raise ResultFileError(path, "not a JMH JSON result: expected an array of benchmark results")
    if not doc:
        raise ResultFileError(
            path, "no benchmark results (an empty array): every benchmark failed, or none ran"
        )
    rows: list[dict[str, Any]] = []
    for b, entry in enumerate(doc):
        where = f"[{b}]"
        if not isinstance(entry, dict) or "benchmark" not in entry or "primaryMetric" not in entry:
            raise ResultFileError(path, f"entry {where} has no 'benchmark' / 'primaryMetric'")
        metric = entry["primaryMetric"]
        if not isinstance(metric, dict):
            raise ResultFileError(path, f"{where}.primaryMetric is not an object")
        unit = metric.get("scoreUnit")
        if not isinstance(unit, str):
            raise ResultFileError(path, f"{where}.primaryMetric has no 'scoreUnit'")
        params = {_untidy(k): _untidy(v) for k, v in (entry.get("params") or {}).items()}
        name = _untidy(entry["benchmark"])
        workload = name
        if params:
            workload += "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
        scores = _scores(path, where, metric)
        if not scores:
            raise ResultFileError(
                path,
                f"{where} ({name}) has no raw data: rerun JMH without -Djmh.json.rawData=false "
                "(the per-iteration scores are needed, not the summary)",
            )
        for fork, iteration, score in scores:
            ns_per_op = _ns_per_op(path, f"{where} fork {fork} iteration {iteration}", score, unit)
            failed = ns_per_op is None
            row: dict[str, Any] = {
                "workload": workload,
                # an iteration without a finite time per op (no operation finished: a NaN
                # avgt score, 0 ops/s) is kept as a failed row, excluded and counted later
                "duration_ns": 0 if ns_per_op is None else round_ns(ns_per_op),
                "exit_code": 1 if failed else 0,
                "ns_per_op": float("nan") if ns_per_op is None else float(ns_per_op),
                "score": float(score),
                "score_unit": unit,
                "mode": entry.get("mode"),
                "fork": fork,
                "fork_iteration": iteration,
                "threads": plain_value(entry.get("threads")),
            }
            for key, value in params.items():
                row[f"param_{key}"] = plain_value(value)
            rows.append(row)
    return build_frame(rows, path)


def _scores(path: Path, where: str, metric: dict[str, Any]) -> list[tuple[int, int, Decimal]]:
    """(fork, iteration, score) of every measurement iteration, in execution order."""
    out: list[tuple[int, int, Decimal]] = []
    if "rawData" in metric:
        forks = metric["rawData"]
        if not isinstance(forks, list) or not all(isinstance(f, list) for f in forks):
            raise ResultFileError(path, f"{where}.primaryMetric.rawData is not a list of lists")
        for f, scores in enumerate(forks):
            for i, score in enumerate(scores):
                out.append((f, i, _score(score, path, f"{where}.rawData[{f}][{i}]")))
        return out
    if "rawDataHistogram" in metric:
        forks = metric["rawDataHistogram"]
        if not isinstance(forks, list):
            raise ResultFileError(path, f"{where}.primaryMetric.rawDataHistogram is not a list")
        for f, iterations in enumerate(forks):
            if not isinstance(iterations, list):
                raise ResultFileError(path, f"{where}.rawDataHistogram[{f}] is not a list")
            for i, histogram in enumerate(iterations):
                total, count = Decimal(0), Decimal(0)
                for pair in histogram if isinstance(histogram, list) else [None]:
                    if not isinstance(pair, list) or len(pair) != 2:
                        raise ResultFileError(
                            path,
                            f"{where}.rawDataHistogram[{f}][{i}] is not a list of [value, count]",
                        )
                    value = to_decimal(pair[0], path, None, f"{where}.rawDataHistogram value")
                    n = to_decimal(pair[1], path, None, f"{where}.rawDataHistogram count")
                    total += value * n
                    count += n
                # no sample in the iteration (an operation longer than the iteration): NaN
                out.append((f, i, total / count if count > 0 else Decimal("NaN")))
        return out
    raise ResultFileError(
        path, f"{where}.primaryMetric has neither 'rawData' nor 'rawDataHistogram'"
    )


def _untidy(value: Any) -> Any:
    """A string as JMH meant it: JMH < 1.21 put raw line ends (and indentation) after
    commas and brackets inside strings when pretty-printing."""
    return re.sub(r"[ \t]*\n\s*", "", value) if isinstance(value, str) else plain_value(value)


def _score(value: Any, path: Path, what: str) -> Decimal:
    """A score; JMH writes NaN and infinities as the strings "NaN", "+INF", "-INF"."""
    if isinstance(value, str) and value.strip() in ("NaN", "+INF", "-INF", "INF"):
        return Decimal("NaN")
    return to_decimal(value, path, None, what)


def _ns_per_op(path: Path, where: str, score: Decimal, unit: str) -> Decimal | None:
    """Nanoseconds per operation, or None when the score gives no finite time."""
    left, sep, right = unit.partition("/")
    if sep and right == "op" and left in _UNIT_NS:  # time per operation
        if not score.is_finite():
            return None
        if score < 0:
            raise ResultFileError(path, f"{where}: negative time {score} {unit}")
        return score * _UNIT_NS[left]
    if sep and left == "ops" and right in _UNIT_NS:  # operations per time
        if not score.is_finite() or score == 0:
            return None
        if score < 0:
            raise ResultFileError(path, f"{where}: throughput {score} {unit} is negative")
        return _UNIT_NS[right] / score
    raise ResultFileError(
        path,
        f"{where}: score unit '{unit}' is not a time per op or ops per time (e.g. 'ms/op', 'ops/s')",
    )
