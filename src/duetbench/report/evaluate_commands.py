"""`duet evaluate` (RQ1-RQ4 tables in the terminal or as JSON) and `duet report` (HTML/Markdown).

Both read a results directory or an iterations table, run
:func:`duetbench.report.evaluate.evaluate` and present the result; the HTML and
Markdown renderings live in :mod:`duetbench.report.html`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..atomic import write_atomic
from ..errors import DuetError
from . import formatting as fmt
from .compare_cli import (
    VERDICT_STYLE,
    Loaded,
    parse_threshold,
    parse_warmup,
)
from .evaluate import (
    DEFAULT_MIN_OVERLAPS,
    Evaluation,
    evaluate,
    load_for_evaluation,
    parse_grid,
    to_json_doc,
)
from .formatting import rich_text

METHOD_ORDER = {"seqn": 0, "aduet": 1, "sduet": 2}
TEST_ORDER = {"ratio": 0, "diff": 1, "utest": 2, "utest-pooled": 3}


# ---------------------------------------------------------------------- options


def _overlap_args(values: list[str] | None) -> tuple[float, tuple[float, ...]]:
    pairing, grid = 0.4, DEFAULT_MIN_OVERLAPS
    for v in values or []:
        vals = parse_grid(v, percent=False, what="--min-overlap")
        if any(not 0 <= x < 1 for x in vals):
            raise DuetError(f"--min-overlap {v!r}: m must lie in [0, 1), e.g. 0.4")
        if ":" in v or "," in v:
            grid = vals
        else:
            pairing = vals[0]
    return pairing, grid


def _aa_arg(text: str | None) -> bool | list[str] | None:
    if text is None:
        return None
    if text in ("*", "all"):
        return True
    return [x.strip() for x in text.split(",") if x.strip()]


def run_evaluation(loaded: Loaded, args: argparse.Namespace) -> Evaluation:
    if not 0 < args.confidence < 1:
        raise DuetError("--confidence must be between 0 and 1, e.g. 0.95")
    if args.resamples < 1:
        raise DuetError("--resamples must be positive")
    if args.shuffles < 1:
        raise DuetError("--shuffles must be positive")
    pairing, grid = _overlap_args(args.min_overlap)
    slowdowns = parse_grid(args.slowdowns, percent=True, what="--slowdowns")
    if loaded.table.empty:
        raise DuetError(f"{loaded.source}: no iterations to evaluate (did every run fail?)")
    return evaluate(
        loaded.table,
        aa=_aa_arg(args.aa),
        slowdowns=slowdowns,
        min_overlaps=grid,
        test=args.test,
        interval=args.interval,
        confidence=args.confidence,
        resamples=args.resamples,
        threshold=parse_threshold(args.threshold),
        min_overlap=pairing,
        overlap_rate=args.overlap_rate,
        min_run_pairs=args.min_run_pairs,
        run_stat=args.run_stat,
        warmup=parse_warmup(args.warmup),
        winsorize=args.winsorize,
        seed=args.seed if args.seed is not None else loaded.seed,
        cluster_by=args.cluster_by,
        shuffles=args.shuffles,
        span=args.span,
    )


# ---------------------------------------------------------------------- terminal


def sort_rows(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows ordered by the keys, methods as seqn, aduet, sduet."""
    if df.empty:
        return df
    d = df.copy()
    sort = []
    for k in keys:
        if k in ("method", "test"):
            order = METHOD_ORDER if k == "method" else TEST_ORDER
            d[f"_{k}"] = d[k].map(order).fillna(9)
            sort.append(f"_{k}")
        else:
            sort.append(k)
    return d.sort_values(sort, kind="stable").drop(
        columns=[c for c in ("_method", "_test") if c in d]
    )


def mds_text(v: Any, largest: float) -> str:
    x = fmt.num(v)
    return f"> {largest * 100:g} %" if x is None else f"{x * 100:g} %"


def bench_label(r: dict[str, Any], multi_host: bool) -> str:
    """The benchmark (and its host when runs span several), escaped for rich markup."""
    name = str(r["benchmark"])
    return rich_text(f"{name} @{r['host']}" if multi_host and r.get("host") else name)


def _multi_host(ev: Evaluation) -> bool:
    return ev.tests["host"].nunique() > 1 if not ev.tests.empty else False


def wide(
    df: pd.DataFrame, index: list[str], column: str, value: str
) -> tuple[list[float], list[tuple[tuple[Any, ...], dict[float, Any]]]]:
    """Rows of ``index`` keys with ``{column value: value}``, for tables with a grid axis."""
    cols = sorted({float(x) for x in df[column]}) if not df.empty else []
    rows = []
    for key, g in sort_rows(df, index).groupby(index, sort=False, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        rows.append((key_t, {float(c): v for c, v in zip(g[column], g[value], strict=True)}))
    return cols, rows


def render_terminal(ev: Evaluation, loaded: Loaded, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=max(console.width, 140))
    st = ev.settings
    multi = _multi_host(ev)
    conf = f"{st['confidence'] * 100:g} %"
    console.print(
        f"[bold]{rich_text(loaded.experiment or loaded.source)}[/]: evaluation (thesis ch. 5). "
        f"Tests at {conf} ({st['interval']} interval, run statistic {st['run_stat']}), "
        f"aduet pairing m = {st['min_overlap']:g}. A/A benchmarks: "
        f"{rich_text(', '.join(ev.aa_benchmarks)) or 'none (use --aa)'}."
    )

    def table(title: str, caption: str | None = None) -> Table:
        """Print the heading (full width) now; the caller fills and prints the table."""
        console.print()
        console.print(f"[bold]{title}[/]")
        return Table(caption=caption, caption_justify="left")

    # RQ1
    t = table(
        "RQ1  Runtime speedup of the duets over seqn (eq. 5.1; 2.00x is the limit)",
        f"cost per repetition from the {'process lifetimes' if st['span'] == 'process' else 'iteration spans'}",
    )
    for h in ("benchmark", "method", "seqn cost", "duet cost", "speedup", "runs seqn/duet"):
        t.add_column(h, justify="left" if h in ("benchmark", "method") else "right")
    for r in sort_rows(ev.speedup, ["host", "suite", "benchmark", "method"]).to_dict("records"):
        t.add_row(
            bench_label(r, multi),
            str(r["method"]),
            fmt.duration(r["seqn_cost_ns"]),
            fmt.duration(r["duet_cost_ns"]),
            fmt.times(r["speedup"]),
            f"{r['seqn_runs']}/{r['duet_runs']}",
        )
    console.print(t if ev.speedup.shape[0] else "[dim]RQ1: needs seqn and duet runs[/]")

    # RQ2
    cols, rows = wide(
        ev.overlap, ["host", "suite", "benchmark"], "min_overlap", "relative_overlap_time"
    )
    if rows:
        t = table(
            "RQ2  Relative overlap time of aduet runs by minimum overlap ratio m (eq. 5.2)",
            "share of A's and B's iteration time spent in pairs overlapping by more than m",
        )
        t.add_column("benchmark")
        for c in cols:
            t.add_column(f"m={c * 100:g}%", justify="right")
        for key, vals in rows:
            t.add_row(
                bench_label({"host": key[0], "benchmark": key[2]}, multi),
                *[fmt.pct(vals.get(c), digits=0) for c in cols],
            )
        console.print(t)
    else:
        console.print("[dim]RQ2: no aduet runs[/]")

    # RQ3: CV
    t = table("RQ3  Coefficient of variation of iteration times (4.3.1)", "std / mean per side")
    for h in ("benchmark", "method", "mean A", "CV A", "mean B", "CV B"):
        t.add_column(h, justify="left" if h in ("benchmark", "method") else "right")
    cvw = (
        ev.cv.pivot_table(
            index=["host", "suite", "benchmark", "method"],
            columns="pair",
            values=["cv", "mean_ns"],
            aggfunc="first",
        ).reset_index()
        if not ev.cv.empty
        else pd.DataFrame()
    )
    if not cvw.empty:
        cvw.columns = ["_".join(str(x) for x in c if x) for c in cvw.columns]
        for r in sort_rows(cvw, ["host", "suite", "benchmark", "method"]).to_dict("records"):
            t.add_row(
                bench_label(r, multi),
                str(r["method"]),
                fmt.duration(r.get("mean_ns_A")),
                fmt.pct(r.get("cv_A")),
                fmt.duration(r.get("mean_ns_B")),
                fmt.pct(r.get("cv_B")),
            )
    console.print(t)

    # RQ3: tests
    t = table(
        "RQ3  Tests of B against A: change, CI and relative CI width (+ = B slower)",
        "ratio: width of the CI of the geometric-mean ratio; diff: CI width / mean A",
    )
    for h in (
        "benchmark",
        "method",
        "ratio change",
        "ratio CI",
        "ratio width",
        "ratio",
        "diff width",
        "diff",
        "U p",
        "U",
    ):
        t.add_column(h, justify="left" if h in ("benchmark", "method") else "right")
    by_test = {k: g for k, g in ev.tests.groupby("test")} if not ev.tests.empty else {}
    base = by_test.get("ratio", pd.DataFrame())
    key = ["host", "suite", "benchmark", "method"]
    idx = {
        test: {tuple(r[k] for k in key): r for r in g.to_dict("records")}
        for test, g in by_test.items()
    }

    def verdict(v: str) -> str:
        return f"[{VERDICT_STYLE.get(v, 'white')}]{v}[/]"

    for r in sort_rows(base, key).to_dict("records"):
        k = tuple(r[c] for c in key)
        d = idx.get("diff", {}).get(k, {})
        u = idx.get("utest", {}).get(k, {})
        t.add_row(
            bench_label(r, multi),
            str(r["method"]),
            fmt.pct(r["change"], signed=True, digits=2),
            fmt.ci(r["ci_low"], r["ci_high"]),
            fmt.pct(r["ci_width"], digits=2),
            verdict(str(r["verdict"])),
            fmt.pct(d.get("ci_width"), digits=2),
            verdict(str(d.get("verdict", "-"))),
            fmt.pvalue(u.get("rank_p_value")),
            verdict(str(u.get("verdict", "-"))),
        )
    console.print(t)

    # RQ3: A/A
    if ev.aa_benchmarks:
        t = table(
            "RQ3  A/A: benchmarks judged 'same' (fig. 5.6, 5.7)",
            f"A/A benchmarks: {rich_text(', '.join(ev.aa_benchmarks))}",
        )
        for h in ("host", "suite", "method", "ratio", "diff", "U test"):
            t.add_column(h, justify="left" if h in ("host", "suite", "method") else "right")
        grp = ["host", "suite", "method"]
        for k, g in sort_rows(ev.aa, grp).groupby(grp, sort=False):
            cells = {r["test"]: fmt.share(r["same"], r["benchmarks"]) for r in g.to_dict("records")}
            t.add_row(
                *map(rich_text, k),
                cells.get("ratio", "-"),
                cells.get("diff", "-"),
                cells.get("utest", "-"),
            )
        console.print(t)
        cols, rows = wide(ev.aa_by_overlap, ["host", "suite", "test"], "min_overlap", "share_same")
        if rows:
            t = table("RQ3  A/A, aduet: share judged 'same' by minimum overlap ratio m (fig. 5.4)")
            for h in ("host", "suite", "test"):
                t.add_column(h)
            for c in cols:
                t.add_column(f"m={c * 100:g}%", justify="right")
            for key_t, vals in rows:
                t.add_row(*map(rich_text, key_t), *[fmt.pct(vals.get(c), digits=0) for c in cols])
            console.print(t)
    else:
        console.print(
            "[dim]RQ3 A/A accuracy: no A/A benchmarks (a benchmark without B in duet.yml; "
            "for a table, say --aa)[/]"
        )

    # shuffle check
    sh = ev.shuffle.loc[ev.shuffle["test"] == "ratio"] if not ev.shuffle.empty else ev.shuffle
    if not sh.empty:
        t = table(
            "Shuffle check (duet paper RQ2): ratio-test CI width, runs paired vs re-paired at random",
            "ratio > 1: pairing A and B of the same run cancels interference they share",
        )
        for h in ("benchmark", "method", "runs", "width paired", "width shuffled", "ratio"):
            t.add_column(h, justify="left" if h in ("benchmark", "method") else "right")
        for r in sort_rows(sh, key).to_dict("records"):
            t.add_row(
                bench_label(r, multi),
                str(r["method"]),
                str(r["runs"]),
                fmt.pct(r["width_paired"], digits=2),
                fmt.pct(r["width_shuffled"], digits=2),
                fmt.ratio(r["width_ratio"]),
            )
        console.print(t)

    # RQ4
    largest = max(st["slowdowns"])
    t = table(
        "RQ4  Minimal detectable slowdown: smallest s from which every larger s is "
        "detected slower (4.4)",
        f"B slowed down by s = {', '.join(f'{s * 100:g}' for s in st['slowdowns'])} %",
    )
    for h in ("benchmark", "A/A", "method", "ratio", "diff", "U test"):
        t.add_column(h, justify="left" if h in ("benchmark", "A/A", "method") else "right")
    grp = ["host", "suite", "benchmark", "method"]
    for _, g in sort_rows(ev.mds, grp).groupby(grp, sort=False):
        recs = {r["test"]: r for r in g.to_dict("records")}
        first = next(iter(recs.values()))
        t.add_row(
            bench_label(first, multi),
            "yes" if first["aa"] else "",
            str(first["method"]),
            *[mds_text(recs.get(x, {}).get("mds"), largest) for x in ("ratio", "diff", "utest")],
        )
    console.print(t)
    curve = ev.mds_curve
    if ev.aa_benchmarks and not curve.empty:
        curve = curve.loc[curve["aa"].astype(bool)]
    cols, rows = wide(curve, ["host", "suite", "method", "test"], "slowdown", "share_slower")
    if rows:
        who = "A/A benchmarks" if ev.aa_benchmarks else "benchmarks"
        t = table(
            f"RQ4  Share of {who} detected slower (%) when B is slowed down by s (fig. 5.8, 5.9)"
        )
        for h in ("host", "suite", "method", "test"):
            t.add_column(h)
        for c in cols:
            t.add_column(f"{c * 100:g}%", justify="right")
        for key_t, vals in rows:
            v = [fmt.num(vals.get(c)) for c in cols]
            t.add_row(*map(rich_text, key_t), *["-" if x is None else f"{x * 100:.0f}" for x in v])
        console.print(t)
    for p in ev.problems:
        console.print(f"[yellow]problem:[/] {rich_text(p)}")
    from .compare_cli import _print_problems

    _print_problems(console, loaded)


# ---------------------------------------------------------------------- commands


def _write(out: str, path: Path | None) -> None:
    text = out if out.endswith("\n") else out + "\n"
    if path:
        write_atomic(path, text)
    else:
        sys.stdout.write(text)


def cmd_evaluate(args: argparse.Namespace) -> int:
    loaded = load_for_evaluation(args.source)
    ev = run_evaluation(loaded, args)
    if args.format == "json":
        doc = to_json_doc(
            ev,
            source=loaded.source,
            experiment=loaded.experiment,
            problems=loaded.problems,
            excluded=loaded.excluded,
        )
        _write(json.dumps(doc, indent=2), args.output)
    else:
        render_terminal(ev, loaded)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .html import ReportOptions, render_html, render_markdown

    loaded = load_for_evaluation(args.source)
    ev = run_evaluation(loaded, args)
    opts = ReportOptions(
        timeline_runs=args.timeline_runs, timeline_iterations=args.timeline_iterations
    )
    if args.format == "markdown":
        _write(render_markdown(ev, loaded), args.output)
        return 0
    html = render_html(ev, loaded, opts)
    out = Path(args.output) if args.output else Path("report.html")
    write_atomic(out, html)
    size = out.stat().st_size
    print(f"report: {out} ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0
