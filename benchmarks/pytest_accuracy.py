"""Accuracy of the pytest plugin on known ratios (docs/measurements/pytest-accuracy.md).

The code under test is the known-work package of ``examples/micro``: in ``v_b``,
``aa_*`` does the work of ``v_a``'s, ``p10_*`` 1.10x and ``x2_*`` 2x. A suite of 12
tests times them four ways -- ``benchmark(fn)``, ``benchmark.pedantic(fn)`` with its
default single round, ``benchmark.pedantic`` with a setup and 50 rounds, and a test
whose function comes through function-, module- and session-scoped fixtures -- and
each try runs it once with ``pytest --duet-a v_a --duet-b v_b`` at the plugin's
defaults (the 60 s budget).

**The reference** is measured in the same study, in one process: both versions
imported apart (``v_a/knownver.py`` and ``v_b/knownver.py`` as two modules), their
functions timed alternately (A B, B A, ...), 1 ms samples, the median of the pairs'
ratios -- what "B is 1.10x slower" means for the code itself, without the processes,
pytest or duetbench around it. A try's error is its ratio over the reference's.

Conditions: ``quiet`` (the machine as it is) and ``one`` (one busy Python loop beside
the session, benchmarks/busy_loops.py). ``--waits fill,spin`` runs every try once with
each way a sduet side waits for its go (``DUET_SYNC_WAIT``, docs/sync.md, "Waiting:
fill, spin or block"), interleaved.

    python benchmarks/pytest_accuracy.py --tries 3 --conditions quiet,one --json out.json
    python benchmarks/pytest_accuracy.py --waits fill,spin --tries 3 --json out.json
    python benchmarks/pytest_accuracy.py --quick       # one try, quiet, 30 s budget
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from busy_loops import busy_loops

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "micro"
VARIANTS = {"aa": 1.0, "p10": 1.10, "x2": 2.0}

SUITE = """
import knownver
import pytest


@pytest.fixture(scope="session")
def work():
    return dict(knownver.WORK)


@pytest.fixture(scope="module")
def names(work):
    return sorted(work)


@pytest.fixture
def function_of(names):
    return lambda name: getattr(knownver, name)


@pytest.mark.parametrize("variant", ["aa", "p10", "x2"])
def test_call(benchmark, variant):
    benchmark(getattr(knownver, variant + "_100us"))


@pytest.mark.parametrize("variant", ["aa", "p10", "x2"])
def test_pedantic_one(benchmark, variant):
    benchmark.pedantic(getattr(knownver, variant + "_100us"))


@pytest.mark.parametrize("variant", ["aa", "p10", "x2"])
def test_pedantic_rounds(benchmark, variant):
    fn = getattr(knownver, variant + "_5ms")
    benchmark.pedantic(lambda x: fn(), setup=lambda: ((1,), {}), rounds=50)


@pytest.mark.parametrize("variant", ["aa", "p10", "x2"])
def test_fixtures(benchmark, function_of, work, variant):
    benchmark(function_of(variant + "_100us"))
"""

#: test kind -> the function size it times
SIZES = {"call": "100us", "pedantic_one": "100us", "pedantic_rounds": "5ms", "fixtures": "100us"}


def load(version: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        f"knownver_{version}", EXAMPLE / version / "knownver.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_calls(fn: Any, n: int) -> int:
    start = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return time.perf_counter_ns() - start


def reference(pairs: int = 300) -> dict[tuple[str, str], float]:
    """(variant, size) -> B's time over A's, both versions in this process, alternating."""
    a, b = load("v_a"), load("v_b")
    out = {}
    for variant in VARIANTS:
        for size in ("100us", "5ms"):
            fa, fb = getattr(a, f"{variant}_{size}"), getattr(b, f"{variant}_{size}")
            per = time_calls(fa, 3) / 3
            n = max(1, round(1e6 / per))  # about 1 ms a sample
            ratios = []
            for i in range(pairs):
                first, second = (fa, fb) if i % 2 == 0 else (fb, fa)
                t1, t2 = time_calls(first, n), time_calls(second, n)
                ta, tb = (t1, t2) if i % 2 == 0 else (t2, t1)
                ratios.append(tb / ta)
            out[(variant, size)] = statistics.median(ratios)
    return out


def session(budget: str, wait: str = "") -> tuple[dict[str, dict[str, Any]], float]:
    """One duet session of the suite: its rows by test name, and its wall time."""
    with tempfile.TemporaryDirectory(prefix="pytest-accuracy-") as tmp:
        root = Path(tmp)
        (root / "suite").mkdir()
        (root / "suite" / "test_known.py").write_text(SUITE)
        report = root / "v.json"
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "suite", "-p", "no:cacheprovider",
             "--duet-a", str(EXAMPLE / "v_a"), "--duet-b", str(EXAMPLE / "v_b"),
             "--duet-budget", budget, "--duet-format", "json", "--duet-report", str(report)],
            cwd=root, capture_output=True, text=True,
            env={**os.environ, "DUET_SYNC_WAIT": wait} if wait else None,
        )  # fmt: skip
        wall = time.monotonic() - start
        if not report.is_file():
            raise SystemExit(f"the session failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        rows = {str(r["benchmark"]): r for r in json.loads(report.read_text())["rows"]}
        return rows, wall


def parse_with_json(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """``ap``'s arguments with a study's ``--json`` (write the records) and ``--from-json``
    (print the table of an earlier one)."""
    ap.add_argument("--json", type=Path)
    ap.add_argument("--from-json", type=Path, help="print the table of an earlier --json")
    return ap.parse_args()


def kind_and_variant(name: str) -> tuple[str, str]:
    # test_known.test_pedantic_one-p10 -> ("pedantic_one", "p10")
    test = name.split(".", 1)[1].removeprefix("test_")
    kind, _, variant = test.rpartition("-")
    return kind, variant


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--conditions", default="quiet,one")
    ap.add_argument("--budget", default="60s")
    ap.add_argument("--waits", default="", help="e.g. fill,spin: DUET_SYNC_WAIT of the sessions")
    ap.add_argument("--quick", action="store_true")
    args = parse_with_json(ap)
    if args.from_json:
        summarize(json.loads(args.from_json.read_text())["records"])
        return
    if args.quick:
        args.tries, args.conditions, args.budget = 1, "quiet", "30s"
    records: list[dict[str, Any]] = []
    refs: list[dict[str, float]] = []
    waits = args.waits.split(",") if args.waits else [""]
    for condition in args.conditions.split(","):
        for t in range(args.tries):
            with busy_loops(condition):
                ref = reference()
                sessions = {
                    wait: session(args.budget, wait)
                    for wait in (waits if t % 2 == 0 else waits[::-1])
                }
            refs.append({f"{v}_{s}": r for (v, s), r in ref.items()})
            for wait, (rows, wall) in sessions.items():
                keep(records, rows, ref, wall, condition + (f"/{wait}" if wait else ""), t)
    summarize(records)
    if args.json:
        doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "load": os.getloadavg(), "budget": args.budget, "references": refs, "records": records}  # fmt: skip
        args.json.write_text(json.dumps(doc, indent=1))


def keep(
    records: list[dict[str, Any]],
    rows: dict[str, dict[str, Any]],
    ref: dict[tuple[str, str], float],
    wall: float,
    condition: str,
    t: int,
) -> None:
    """One session's rows as records, each printed."""
    for name, row in sorted(rows.items()):
        kind, variant = kind_and_variant(name)
        truth = ref[(variant, SIZES[kind])]
        measured = 1.0 + float(row["change"])
        records.append({
            "condition": condition, "try": t, "kind": kind, "variant": variant,
            "reference": truth, "measured": measured, "error": measured / truth - 1.0,
            "ci_low": 1.0 + float(row["ci_low"]), "ci_high": 1.0 + float(row["ci_high"]),
            "verdict": row["verdict"], "runs": row["runs"], "wall_s": wall,
        })  # fmt: skip
        print(
            f"{condition:6} try {t}  {kind:16} {variant:4} reference {truth:.3f}  "
            f"measured {measured:.3f} [{1 + float(row['ci_low']):.3f}, "
            f"{1 + float(row['ci_high']):.3f}]  error {measured / truth - 1:+.1%}  "
            f"{row['verdict']}  ({row['runs']} runs, session {wall:.0f} s)",
            flush=True,
        )


def summarize(records: list[dict[str, Any]]) -> None:
    print(
        "\n| condition | test | ratio | reference (median of tries) | measured (tries) | runs | worst error | within 3 % | interval holds the reference |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["condition"], r["kind"], r["variant"]) for r in records})
    for condition, kind, variant in keys:
        rs = [
            r
            for r in records
            if (r["condition"], r["kind"], r["variant"]) == (condition, kind, variant)
        ]
        ref = statistics.median(r["reference"] for r in rs)
        measured = ", ".join(f"{r['measured']:.3f}" for r in rs)
        worst = max((r["error"] for r in rs), key=abs)
        within = sum(abs(r["error"]) <= 0.03 for r in rs)
        covered = sum(r["ci_low"] <= r["reference"] <= r["ci_high"] for r in rs)
        runs = ", ".join(str(r["runs"]) for r in rs)
        print(
            f"| {condition} | {kind} | {VARIANTS[variant]:.2f}x | {ref:.3f} | {measured} | {runs} | {worst:+.1%} | {within} of {len(rs)} | {covered} of {len(rs)} |"
        )
    by_ratio(records)


def by_ratio(records: list[dict[str, Any]]) -> None:
    """Per condition and known ratio, all test kinds and tries together."""
    print("\n| condition | ratio | rows | mean error | within 3 % | interval holds the reference |")
    print("|---|---|---|---|---|---|")
    for condition in sorted({r["condition"] for r in records}):
        for variant in VARIANTS:
            rs = [r for r in records if r["condition"] == condition and r["variant"] == variant]
            if not rs:
                continue
            within = sum(abs(r["error"]) <= 0.03 for r in rs)
            covered = sum(r["ci_low"] <= r["reference"] <= r["ci_high"] for r in rs)
            print(
                f"| {condition} | {VARIANTS[variant]:.2f}x | {len(rs)} | "
                f"{statistics.mean(r['error'] for r in rs):+.1%} | {within} of {len(rs)} | "
                f"{covered} of {len(rs)} |"
            )


if __name__ == "__main__":
    main()
