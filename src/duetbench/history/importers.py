"""Other tools' results as absolute series (docs/history.md, "Importing other tools' results").

A team that switches to duetbench brings years of results; each importer reads one
tool's files into :class:`ImportedRun` values -- one version on one machine, with one
:class:`ImportedResult` per benchmark: its central value per call in ns (the tool's own:
a median, or pyperf's mean), the standard error of its logarithm where the tool's
figures give one, and the raw values where the file keeps them:

- **asv**: a results directory (``results/<machine>/<hash>-<env>.json`` with
  ``machine.json``; ``benchmarks.json`` says which benchmarks time), a machine's
  directory or one result file: versions from ``commit_hash`` and ``date``, the machine
  from ``machine.json``, parameterized benchmarks expanded as asv names them
  (``mod.Class.time_x(10, 'a')``), only ``time_*`` benchmarks (``track_``/``mem_`` are no
  times);
- **pytest-benchmark**: a saved run (``.benchmarks/<machine>/NNNN_*.json``), a directory
  of them, or a ``--benchmark-json`` file: versions from ``commit_info``, the machine
  from ``machine_info``, the median of each test;
- **pyperf**: a JSON file of ``pyperf`` (``-o``) or pyperformance: every benchmark's
  values over all runs (their mean, as pyperf reports it); the machine from its
  metadata; no commit, so the version is given;
- **github-action-benchmark**: its ``data.js`` (``window.BENCHMARK_DATA = {...}``): every
  entry's commits, each a version; times in ``ns/iter``, ``s``, ``ms``, ``us``, ``ns``
  or rates (``iter/sec``, ``ops/sec``: time = 1 / rate); no machine information.

A file that is not what it says is refused with what was expected; nothing is added.
:meth:`duetbench.history.Repository.add_imported` stores a run as an experiment of one
version (A = B) whose rows are points of the absolute series only -- no paired step.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .import_files import (
    check_file,
    commit_version,
    iso_ns,
    memory_bytes,
    need,
    positive,
    python_version,
    read_json,
    read_text,
    whole_number,
)
from .imported import TOOLS, ImportedResult, ImportedRun, ImportFileError
from .versions import Version

__all__ = ["TOOLS", "ImportFileError", "ImportedRun", "detect", "read", "with_version"]
#: two-sided 99 % normal quantile (asv's stats_ci_99)
_Z99 = 2.5758293035489


def _run(
    path: Path,
    tool: str,
    *,
    host: Mapping[str, Any],
    results: Iterable[ImportedResult],
    skipped: Iterable[str] = (),
    where: str = "",
    notes: Iterable[str] = (),
    **kw: Any,
) -> ImportedRun:
    """The run read from the file at ``path``: the host facts it states (None: not
    stated, left out), its ``notes`` and one on the benchmarks ``skipped`` as not times
    (``where``: which part of the file, default its name)."""
    skipped = list(skipped)
    if skipped:
        notes = (*notes, f"{where or path.name}: not times, left out: {', '.join(skipped)}")
    return ImportedRun(
        tool=tool,
        source=str(path.resolve()),
        host={k: v for k, v in host.items() if v is not None},
        results=tuple(results),
        notes=tuple(notes),
        **kw,
    )


#: the standard error of a median is about this times that of a mean (normal data)
_MEDIAN_SE = 1.2533


# ---------------------------------------------------------------------- asv

_ASV = "asv results"


def _asv_dirs(path: Path) -> tuple[Path, list[Path]]:
    """(machine.json's directory, result files) of a results dir, a machine dir or a file
    (any file found is read, and refused when it is no regular file)."""
    if not path.is_dir():
        check_file(path, _ASV)  # before its machine.json is looked for
        return path.parent, [path]
    if (path / "machine.json").exists():
        return path, sorted(p for p in path.glob("*.json") if p.name != "machine.json")
    raise ImportFileError(f"{path}: not an asv machine directory (no machine.json)")


def read_asv(path: Path) -> list[ImportedRun]:
    """An asv results directory (with a directory per machine), a machine's directory, or
    one result file (see the module doc)."""
    if path.is_dir() and not (path / "machine.json").exists():
        machines = sorted(d for d in path.iterdir() if (d / "machine.json").exists())
        need(
            bool(machines),
            path,
            "asv results directory",
            "a directory per machine with machine.json",
        )
        return [run for d in machines for run in read_asv(d)]
    directory, files = _asv_dirs(path)
    machine = read_json(directory / "machine.json", "asv machine.json")
    need(isinstance(machine, dict) and "machine" in machine, directory / "machine.json",
          "asv machine.json", "an object with 'machine'")  # fmt: skip
    kinds = _asv_benchmarks(directory.parent / "benchmarks.json")
    runs = []
    for f in files:
        runs.append(_asv_file(f, machine, kinds))
    return runs


def _asv_benchmarks(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (type, unit) from benchmarks.json (empty when there is none)."""
    if not path.exists():
        return {}
    doc = read_json(path, "asv benchmarks.json")
    need(isinstance(doc, dict), path, "asv benchmarks.json", "an object")
    return {
        k: (str(v.get("type")), str(v.get("unit")))
        for k, v in doc.items()
        if isinstance(v, dict) and "type" in v
    }


def _asv_file(
    path: Path, machine: Mapping[str, Any], kinds: Mapping[str, tuple[str, str]]
) -> ImportedRun:
    doc = read_json(path, _ASV)
    need(
        isinstance(doc, dict) and isinstance(doc.get("results"), dict) and "commit_hash" in doc,
        path, _ASV, "an asv result file (commit_hash, results)",
    )  # fmt: skip
    columns = doc.get("result_columns")
    version_field = doc.get("version")
    need(isinstance(columns, list) and version_field == 2, path, _ASV,
          "a result file of asv 0.5 or later (version 2, result_columns)")  # fmt: skip
    col = {name: i for i, name in enumerate(columns)}
    date = doc.get("date")
    when = int(date) * 1_000_000 if isinstance(date, int | float) else None
    results: list[ImportedResult] = []
    skipped: list[str] = []
    started: list[int] = []
    for name, row in sorted(doc["results"].items()):
        kind, unit = kinds.get(
            name, ("time" if name.split(".")[-1].startswith("time_") else "", "seconds")
        )
        if kind != "time" or unit != "seconds":
            skipped.append(name)
            continue
        need(isinstance(row, list), path, _ASV, f"a list of columns for {name}")
        values = row[col["result"]] if len(row) > col["result"] else None
        values = values if isinstance(values, list) else [values]
        params = row[col["params"]] if "params" in col and len(row) > col["params"] else []
        combos = _asv_combos(params)
        if len(combos) != len(values):
            combos = (
                [()] * len(values) if len(values) == 1 else [(str(i),) for i in range(len(values))]
            )
        ci_a = _column(row, col, "stats_ci_99_a", len(values))
        ci_b = _column(row, col, "stats_ci_99_b", len(values))
        q25 = _column(row, col, "stats_q_25", len(values))
        q75 = _column(row, col, "stats_q_75", len(values))
        repeat = _column(row, col, "stats_repeat", len(values))
        samples = _column(row, col, "samples", len(values))
        if (
            "started_at" in col
            and len(row) > col["started_at"]
            and isinstance(row[col["started_at"]], int | float)
        ):
            started.append(int(row[col["started_at"]]) * 1_000_000)
        for i, (combo, value) in enumerate(zip(combos, values, strict=True)):
            v = positive(value)
            if v is None:  # a failed or skipped combination (asv writes null or NaN)
                continue
            se = None
            lo, hi = positive(ci_a[i]), positive(ci_b[i])
            n = whole_number(repeat[i]) or 1
            if lo is not None and hi is not None and hi > lo:
                se = math.log(hi / lo) / (2 * _Z99)
            elif positive(q25[i]) and positive(q75[i]) and n > 1 and q75[i] > q25[i]:
                se = math.log(q75[i] / q25[i]) / 1.349 * _MEDIAN_SE / math.sqrt(n)
            raw = samples[i] if isinstance(samples[i], list) else []
            label = f"{name}({', '.join(combo)})" if combo else name
            results.append(
                ImportedResult(
                    label,
                    v * 1e9,
                    se,
                    len(raw) or n,
                    tuple(x * 1e9 for x in raw if positive(x)),
                )
            )
    need(bool(results) or bool(skipped), path, _ASV, "at least one benchmark result")
    host = {
        "cpu_model": machine.get("cpu"),
        "cores": whole_number(machine.get("num_cpu")),
        "memory_bytes": memory_bytes(machine.get("ram")),
        "kernel": machine.get("os"),
        "machine": machine.get("arch"),
        "python": python_version(doc.get("python")),
    }
    return _run(
        path,
        "asv",
        host=host,
        results=results,
        skipped=skipped,
        suite="asv",
        version=commit_version(doc.get("commit_hash"), when, path, _ASV),
        host_name=str(machine.get("machine")),
        started_ns=min(started) if started else None,
    )


def _column(row: list[Any], col: Mapping[str, int], name: str, n: int) -> list[Any]:
    if name not in col or len(row) <= col[name] or not isinstance(row[col[name]], list):
        return [None] * n
    values = row[col[name]]
    return values if len(values) == n else [None] * n


def _asv_combos(params: Any) -> list[tuple[str, ...]]:
    """asv's parameter combinations, in its order (itertools.product of the lists)."""
    if not isinstance(params, list) or not params:
        return [()]
    combos: list[tuple[str, ...]] = [()]
    for values in params:
        if not isinstance(values, list):
            return [()]
        combos = [c + (str(v),) for c in combos for v in values]
    return combos


# ---------------------------------------------------------------------- pytest-benchmark

_PB = "pytest-benchmark"


def read_pytest_benchmark(path: Path) -> list[ImportedRun]:
    """A saved run, a ``--benchmark-json`` file, or a directory of saved runs
    (``.benchmarks``: every ``*.json`` below it, in name order)."""
    if path.is_dir():
        files = sorted(path.rglob("*.json"))
        need(bool(files), path, "pytest-benchmark storage", "saved runs (*.json) below it")
        return [_pb_file(f) for f in files]
    return [_pb_file(path)]


def _pb_file(path: Path) -> ImportedRun:
    doc = read_json(path, _PB)
    need(
        isinstance(doc, dict)
        and isinstance(doc.get("benchmarks"), list)
        and isinstance(doc.get("machine_info"), dict),
        path, _PB, "a saved run (machine_info, benchmarks)",
    )  # fmt: skip
    results = []
    for b in doc["benchmarks"]:
        stats = b.get("stats") if isinstance(b, dict) else None
        need(isinstance(stats, dict), path, _PB, "every benchmark with its stats")
        median = positive(stats.get("median"))
        need(median is not None, path, _PB, f"a positive median for {b.get('fullname')}")
        rounds = whole_number(stats.get("rounds")) or 1
        iqr = positive(stats.get("iqr"))
        se = None
        if iqr is not None and rounds > 1:  # robust: the IQR as a standard deviation
            se = iqr / 1.349 / median * _MEDIAN_SE / math.sqrt(rounds)
        data = stats.get("data") if isinstance(stats.get("data"), list) else []
        results.append(
            ImportedResult(
                str(b.get("fullname") or b.get("name")),
                median * 1e9,  # type: ignore[operator]
                se,
                rounds,
                tuple(x * 1e9 for x in data if positive(x)),
            )
        )
    info = doc["machine_info"]
    cpu = info.get("cpu") if isinstance(info.get("cpu"), dict) else {}
    commit = doc.get("commit_info") if isinstance(doc.get("commit_info"), dict) else {}
    when = iso_ns(commit.get("time")) or iso_ns(commit.get("author_time"))
    version = None
    if commit.get("id") and not commit.get("dirty"):  # a dirty tree is no commit
        version = commit_version(commit.get("id"), when, path, _PB)
    host = {
        "cpu_model": cpu.get("brand_raw") or info.get("processor"),
        "cores": whole_number(cpu.get("count")),
        "kernel": info.get("release"),
        "machine": info.get("machine"),
        "python": python_version(info.get("python_version")),
    }
    notes = ()
    if commit.get("dirty"):
        notes = (f"{path.name}: measured on a tree with uncommitted changes (dirty)",)
    return _run(
        path,
        _PB,
        host=host,
        results=results,
        notes=notes,
        suite=str(commit.get("project") or _PB),
        version=version,
        host_name=str(info.get("node") or "pytest-benchmark"),
        started_ns=iso_ns(doc.get("datetime")),
    )


# ---------------------------------------------------------------------- pyperf

_PP = "pyperf"


def read_pyperf(path: Path) -> list[ImportedRun]:
    """A pyperf JSON file, read by the parser `duet run` reads it with
    (:func:`duetbench.parse.pyperf.read_pyperf_file`): every benchmark in seconds, the
    mean of its values over all runs."""
    from ..errors import ResultFileError
    from ..parse.pyperf import read_pyperf_file

    try:
        file = read_pyperf_file(path)
    except ResultFileError as exc:
        raise ImportFileError(str(exc)) from None
    meta = file.metadata
    results, skipped = [], []
    for b in file.benchmarks:
        need(b.name is not None, path, _PP, "a name in every benchmark's metadata")
        name = str(b.name)
        if b.unit != "second":
            skipped.append(name)
            continue
        values = [float(v) for r in b.runs for v in r.values if v > 0]
        if not values:  # calibration runs only
            continue
        arr = np.array(values, dtype=float) * 1e9
        mean = float(arr.mean())
        se = float(arr.std(ddof=1) / math.sqrt(len(arr)) / mean) if len(arr) > 1 else None
        results.append(ImportedResult(name, mean, se, len(arr), tuple(arr.tolist())))
    need(bool(results), path, _PP, "at least one benchmark with values in seconds")
    host = {
        "cpu_model": meta.get("cpu_model_name"),
        "cores": whole_number(meta.get("cpu_count")),
        "kernel": meta.get("platform"),
        "python": python_version(meta.get("python_version")),
    }
    when = iso_ns(meta.get("commit_date"))
    version = (
        commit_version(meta.get("commit_id"), when, path, _PP) if meta.get("commit_id") else None
    )
    return [
        _run(
            path,
            _PP,
            host=host,
            results=results,
            skipped=skipped,
            suite=_PP,
            version=version,
            host_name=str(meta.get("hostname") or "pyperf"),
            started_ns=iso_ns(meta.get("date")),
        )
    ]


# ---------------------------------------------------------------------- github-action-benchmark

_GA = "github-action-benchmark data.js"
_PREFIX = re.compile(r"^\s*window\.BENCHMARK_DATA\s*=\s*")
#: unit -> seconds per unit of a time, or None for a rate (time = 1 / rate)
_UNITS: dict[str, float | None] = {
    "ns/iter": 1e-9, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0,
    "sec": 1.0, "seconds": 1.0, "iter/sec": None, "ops/sec": None, "op/s": None,
}  # fmt: skip


def read_data_js(path: Path) -> list[ImportedRun]:
    text = read_text(path, _GA)
    m = _PREFIX.match(text)
    need(m is not None, path, _GA, "text starting 'window.BENCHMARK_DATA = '")
    assert m is not None
    try:
        doc = json.loads(text[m.end() :].strip().rstrip(";"))
    except ValueError as exc:
        raise ImportFileError(f"{path}: not a {_GA} file (its object is not JSON: {exc})") from None
    need(isinstance(doc, dict) and isinstance(doc.get("entries"), dict), path, _GA,
          "an object with 'entries'")  # fmt: skip
    runs = []
    for suite, items in doc["entries"].items():
        need(isinstance(items, list), path, _GA, f"a list of runs for entry {suite!r}")
        for item in items:
            need(isinstance(item, dict) and isinstance(item.get("benches"), list)
                  and isinstance(item.get("commit"), dict), path, _GA,
                  "runs with commit and benches")  # fmt: skip
            commit = item["commit"]
            when = iso_ns(commit.get("timestamp"))
            results, skipped = [], []
            for b in item["benches"]:
                unit = str(b.get("unit", "")).strip()
                value = positive(b.get("value"))
                if unit not in _UNITS or value is None:
                    skipped.append(f"{b.get('name')} ({unit or 'no unit'})")
                    continue
                scale = _UNITS[unit]
                ns = (1.0 / value if scale is None else value * scale) * 1e9
                results.append(ImportedResult(str(b.get("name")), ns, _range_se(b, value), 1))
            if not results:
                continue
            date = item.get("date")
            runs.append(
                _run(
                    path,
                    "github-action-benchmark",
                    host={},
                    results=results,
                    skipped=skipped,
                    where=f"{suite} {commit.get('id', '')[:12]}",
                    suite=str(suite),
                    version=commit_version(commit.get("id"), when, path, _GA),
                    host_name="github-action-benchmark",
                    started_ns=int(date) * 1_000_000 if isinstance(date, int | float) else None,
                )
            )
    need(bool(runs), path, _GA, "at least one run with a time")
    return runs


def _range_se(bench: Mapping[str, Any], value: float) -> float | None:
    """The relative spread of ``range`` ('stddev: 0.01', '± 3') as a log standard error;
    rounds are not recorded, so this is the spread of one value (a bound)."""
    m = re.search(r"([\d.]+(?:e-?\d+)?)", str(bench.get("range") or ""))
    spread = positive(m.group(1)) if m else None
    return spread / value if spread is not None else None


# ---------------------------------------------------------------------- dispatch

READERS = {
    "asv": read_asv,
    "pytest-benchmark": read_pytest_benchmark,
    "pyperf": read_pyperf,
    "github-action-benchmark": read_data_js,
}


def detect(path: Path) -> str:
    """Which tool wrote ``path`` (a clear error when none did)."""
    if path.is_dir():
        if (path / "machine.json").exists() or any(
            (d / "machine.json").exists() for d in path.iterdir() if d.is_dir()
        ):
            return "asv"
        if any(path.rglob("*.json")):
            return "pytest-benchmark"
        raise ImportFileError(
            f"{path}: a directory of no known tool (asv results with machine.json, or "
            "pytest-benchmark saved runs); give --tool"
        )
    if not path.exists():
        raise ImportFileError(f"{path} does not exist")
    text = read_text(path, "results")  # a FIFO or a device is refused here, never opened
    if _PREFIX.match(text):
        return "github-action-benchmark"
    try:
        doc = json.loads(text)
    except ValueError:
        raise ImportFileError(
            f"{path}: not a results file of asv, pytest-benchmark, pyperf (JSON) or "
            "github-action-benchmark (data.js)"
        ) from None
    if isinstance(doc, dict):
        if "commit_hash" in doc and "results" in doc:
            return "asv"
        if "machine_info" in doc and "benchmarks" in doc:
            return "pytest-benchmark"
        if "benchmarks" in doc and "version" in doc:
            return "pyperf"
    raise ImportFileError(
        f"{path}: JSON of no known tool (asv: commit_hash and results; pytest-benchmark: "
        "machine_info and benchmarks; pyperf: version and benchmarks); give --tool"
    )


def read(path: str | Path, tool: str | None = None) -> list[ImportedRun]:
    """The runs in ``path`` (``tool``: one of :data:`TOOLS`, else detected)."""
    p = Path(path)
    if not p.exists():
        raise ImportFileError(f"{p} does not exist")
    if tool is None:
        tool = detect(p)
    if tool not in READERS:
        raise ImportFileError(f"unknown tool {tool!r}; use one of {', '.join(TOOLS)}")
    return READERS[tool](p)


def with_version(runs: Iterable[ImportedRun], version: Version | None) -> list[ImportedRun]:
    """``runs`` with ``version`` for those without one; every run needs a version."""
    from dataclasses import replace

    runs = list(runs)
    if version is not None:
        if len(runs) > 1:
            raise ImportFileError(
                f"--label names one version, but there are {len(runs)} runs (each with its "
                "commit); leave --label out"
            )
        return [replace(r, version=version) for r in runs]
    for r in runs:
        if r.version is None:
            raise ImportFileError(
                f"{r.source}: the {r.tool} file names no commit; give --label LABEL "
                "(or --git CHECKOUT for a commit)"
            )
    return runs
