"""The tables of the evaluation (`duet evaluate`, `duet report`), one builder each.

Each builder takes the :class:`~duetbench.analysis.evaluate.Evaluation` and returns a
:class:`~duetbench.report.tables.Table`; the terminal, Markdown and HTML renderers
choose which of them to show (the HTML draws some as figures instead).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..analysis.evaluate import Evaluation
from . import formatting as fmt
from .tables import Column, Table, bench_label, sort_rows

KEY = ["host", "suite", "benchmark", "method"]
_BENCH = Column("benchmark", "benchmark")
_METHOD = Column("method", "method")


def _bench_method(multi: bool) -> tuple[Column, Column]:
    """The benchmark (with its host when runs span several) and method columns of
    :meth:`Table.listing` over records of ``KEY``."""
    return (
        Column("benchmark", "benchmark", get=lambda r: bench_label(r, multi)),
        Column("method", "method", get=lambda r: str(r["method"])),
    )


def multi_host(ev: Evaluation) -> bool:
    """Whether the runs span several hosts (benchmarks are then labelled with theirs)."""
    return ev.tests["host"].nunique() > 1 if not ev.tests.empty else False


def _wide(
    df: pd.DataFrame, index: list[str], column: str, value: str
) -> tuple[list[float], list[tuple[tuple[Any, ...], dict[float, Any]]]]:
    """Rows of ``index`` keys with ``{column value: value}``, for tables with a grid axis."""
    cols = sorted({float(x) for x in df[column]}) if not df.empty else []
    rows = []
    for key, g in sort_rows(df, index).groupby(index, sort=False, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        rows.append((key_t, {float(c): v for c, v in zip(g[column], g[value], strict=True)}))
    return cols, rows


def _grid_columns(cols: list[float], kind: str, title: str = "m={}%") -> list[Column]:
    """One column per grid value (m or s), titled by it, values in whole percent."""
    return [
        Column(f"g{i}", title.format(f"{c * 100:g}"), kind, digits=0) for i, c in enumerate(cols)
    ]


def speedup_table(ev: Evaluation) -> Table:
    """RQ1: runtime speedup of the duets over seqn."""
    span = "process lifetimes" if ev.settings.span == "process" else "iteration spans"
    columns = (
        *_bench_method(multi_host(ev)),
        Column("seqn_cost_ns", "seqn cost", "duration"),
        Column("duet_cost_ns", "duet cost", "duration"),
        Column("speedup", "speedup", "times"),
        Column(
            "runs",
            "runs seqn/duet",
            "text",
            align="right",
            get=lambda r: f"{r['seqn_runs']}/{r['duet_runs']}",
        ),
    )
    return Table.listing(
        "speedup",
        "Runtime speedup over seqn (eq. 5.1; 2.00x is the limit)",
        columns,
        sort_rows(ev.speedup, KEY).to_dict("records"),
        label="RQ1",
        caption=f"cost per repetition from the {span}",
        empty="RQ1: needs seqn and duet runs",
    )


def overlap_table(ev: Evaluation) -> Table:
    """RQ2: relative overlap time of aduet runs per minimum overlap ratio m."""
    multi = multi_host(ev)
    cols, wide = _wide(
        ev.overlap, ["host", "suite", "benchmark"], "min_overlap", "relative_overlap_time"
    )
    rows = tuple(
        {
            "benchmark": bench_label({"host": key[0], "benchmark": key[2]}, multi),
            **{f"g{i}": vals.get(c) for i, c in enumerate(cols)},
        }
        for key, vals in wide
    )
    return Table(
        name="overlap",
        label="RQ2",
        title="Relative overlap time of aduet runs by minimum overlap ratio m (eq. 5.2)",
        caption="share of A's and B's iteration time spent in pairs overlapping by more than m",
        columns=(_BENCH, *_grid_columns(cols, "pct")),
        rows=rows,
        empty="RQ2: no aduet runs",
    )


def precision_table(ev: Evaluation) -> Table:
    """Observed precision per machine-second of each method (docs/adaptive.md)."""
    columns = (
        *_bench_method(False),
        Column("runs", "runs", "count"),
        Column(
            "seconds_per_run",
            "machine time/run",
            "duration",
            get=lambda r: r["seconds_per_run"] * 1e9,
        ),
        Column("run_sd", "run SD (log)", "pct", digits=2),
        Column("half_width_per_hour", "+- after 1 h", "pct", digits=2),
    )
    return Table.listing(
        "precision",
        "Precision per machine-second of each method",
        columns,
        sort_rows(ev.precision, ["suite", "benchmark", "method"]).to_dict("records"),
        caption="+- after 1 h: relative half-width of a 95 % interval after one machine-hour "
        "of that method at its observed spread and cost (lower is better; docs/adaptive.md)",
    )


def cv_table(ev: Evaluation) -> Table:
    """RQ3: coefficient of variation of the iteration times, per side."""
    records: list[dict[str, Any]] = []
    if not ev.cv.empty:
        cvw = ev.cv.pivot_table(
            index=KEY, columns="pair", values=["cv", "mean_ns"], aggfunc="first"
        ).reset_index()
        cvw.columns = ["_".join(str(x) for x in c if x) for c in cvw.columns]
        records = sort_rows(cvw, KEY).to_dict("records")
    columns = (
        *_bench_method(multi_host(ev)),
        Column("mean_a", "mean A", "duration", get=lambda r: r.get("mean_ns_A")),
        Column("cv_a", "CV A", "pct", digits=1, get=lambda r: r.get("cv_A")),
        Column("mean_b", "mean B", "duration", get=lambda r: r.get("mean_ns_B")),
        Column("cv_b", "CV B", "pct", digits=1, get=lambda r: r.get("cv_B")),
    )
    return Table.listing(
        "cv",
        "Coefficient of variation of iteration times (4.3.1)",
        columns,
        records,
        label="RQ3",
        caption="std / mean per side",
    )


def tests_table(ev: Evaluation) -> Table:
    """RQ3: change, CI, relative CI width and verdict of every test."""
    multi = multi_host(ev)
    by_test = {k: g for k, g in ev.tests.groupby("test")} if not ev.tests.empty else {}
    idx = {
        test: {tuple(r[k] for k in KEY): r for r in g.to_dict("records")}
        for test, g in by_test.items()
    }
    rows = []
    for r in sort_rows(by_test.get("ratio", pd.DataFrame(columns=KEY)), KEY).to_dict("records"):
        k = tuple(r[c] for c in KEY)
        d = idx.get("diff", {}).get(k, {})
        u = idx.get("utest", {}).get(k, {})
        rows.append(
            {
                "benchmark": bench_label(r, multi),
                "method": str(r["method"]),
                "ratio_change": r["change"],
                "ratio_ci": (r["ci_low"], r["ci_high"]),
                "ratio_width": r["ci_width"],
                "ratio": r["verdict"],
                "diff_change": d.get("change"),
                "diff_width": d.get("ci_width"),
                "diff": d.get("verdict"),
                "u_p": u.get("rank_p_value"),
                "u": u.get("verdict"),
            }
        )
    return Table(
        name="tests",
        label="RQ3",
        title="Relative CI width and verdict of every test (+ = B slower)",
        caption="ratio: width of the CI of the geometric-mean ratio; diff: CI width / mean A; "
        "U: signed-rank test of the run values",
        columns=(
            _BENCH,
            _METHOD,
            Column("ratio_change", "ratio change", "signed_pct"),
            Column("ratio_ci", "ratio CI", "ci"),
            Column("ratio_width", "ratio width", "pct", digits=2),
            Column("ratio", "ratio", "verdict"),
            Column("diff_change", "diff change", "signed_pct"),
            Column("diff_width", "diff width", "pct", digits=2),
            Column("diff", "diff", "verdict"),
            Column("u_p", "U p", "pvalue"),
            Column("u", "U", "verdict"),
        ),
        rows=tuple(rows),
    )


def aa_table(ev: Evaluation) -> Table:
    """RQ3: the share of A/A benchmarks judged same, per method and test."""
    names = ", ".join(ev.aa_benchmarks)
    grp = ["host", "suite", "method"]
    rows = []
    if ev.aa_benchmarks:
        for k, g in sort_rows(ev.aa, grp).groupby(grp, sort=False):
            cells = {r["test"]: (r["same"], r["benchmarks"]) for r in g.to_dict("records")}
            rows.append(
                {
                    **dict(zip(grp, map(str, k), strict=True)),
                    "ratio": cells.get("ratio"),
                    "diff": cells.get("diff"),
                    "utest": cells.get("utest"),
                }
            )
    return Table(
        name="aa",
        label="RQ3",
        title=f"A/A: benchmarks judged same ({names})",
        caption="share of the A/A benchmarks judged neither slower nor faster: the higher, the fewer false "
        "alarms (thesis fig. 5.6, 5.7)",
        columns=(
            Column("host", "host"),
            Column("suite", "suite"),
            Column("method", "method"),
            Column("ratio", "ratio", "share"),
            Column("diff", "diff", "share"),
            Column("utest", "U test", "share"),
        ),
        rows=tuple(rows),
        empty=None
        if ev.aa_benchmarks
        else "RQ3 A/A accuracy: no A/A benchmarks (a benchmark without B in duet.yml; "
        "for a table, say --aa)",
    )


def aa_overlap_table(ev: Evaluation) -> Table:
    """RQ3: A/A, aduet: the share judged same per minimum overlap ratio m."""
    cols, wide = _wide(ev.aa_by_overlap, ["host", "suite", "test"], "min_overlap", "share_same")
    rows = tuple(
        {
            "host": str(key[0]),
            "suite": str(key[1]),
            "test": str(key[2]),
            **{f"g{i}": vals.get(c) for i, c in enumerate(cols)},
        }
        for key, vals in wide
    )
    return Table(
        name="aa_by_overlap",
        label="RQ3",
        title="A/A, aduet: share judged neither slower nor faster, by minimum overlap ratio m (fig. 5.4)",
        columns=(
            Column("host", "host"),
            Column("suite", "suite"),
            Column("test", "test"),
            *_grid_columns(cols, "pct"),
        ),
        rows=rows,
    )


def shuffle_table(ev: Evaluation) -> Table:
    """The duet paper's shuffle check: ratio-test CI width, paired vs re-paired at random."""
    sh = ev.shuffle.loc[ev.shuffle["test"] == "ratio"] if not ev.shuffle.empty else ev.shuffle
    columns = (
        *_bench_method(multi_host(ev)),
        Column("runs", "runs", "count"),
        Column("width_paired", "width paired", "pct", digits=2),
        Column("width_shuffled", "width shuffled", "pct", digits=2),
        Column("width_ratio", "ratio", "ratio"),
    )
    return Table.listing(
        "shuffle",
        "Shuffle check (duet paper RQ2): ratio-test CI width, runs paired vs re-paired at random",
        columns,
        sort_rows(sh, KEY).to_dict("records"),
        caption="ratio > 1: pairing A and B of the same run cancels interference they share",
    )


def mds_table(ev: Evaluation) -> Table:
    """RQ4: the minimal detectable slowdown of every benchmark, method and test."""
    multi = multi_host(ev)
    slowdowns = ev.settings.slowdowns
    largest = fmt.pct_g(max(slowdowns))
    rows = []
    for _, g in sort_rows(ev.mds, KEY).groupby(KEY, sort=False):
        recs = {r["test"]: r for r in g.to_dict("records")}
        first = next(iter(recs.values()))
        rows.append(
            {
                "benchmark": bench_label(first, multi),
                "aa": "yes" if first["aa"] else "",
                "method": str(first["method"]),
                **{t: recs.get(t, {}).get("mds") for t in ("ratio", "diff", "utest")},
            }
        )
    return Table(
        name="mds",
        label="RQ4",
        title="Minimal detectable slowdown: smallest s from which every larger s is detected "
        "slower (4.4)",
        caption=f"B slowed down by s = {', '.join(f'{s * 100:g}' for s in slowdowns)} %",
        columns=(
            _BENCH,
            Column("aa", "A/A"),
            _METHOD,
            *(
                Column(t, title, "pct", missing=f"> {largest}")
                for t, title in (("ratio", "ratio"), ("diff", "diff"), ("utest", "U test"))
            ),
        ),
        rows=tuple(rows),
    )


def mds_curve_table(ev: Evaluation) -> Table:
    """RQ4: the share of (A/A) benchmarks detected slower per slowdown s."""
    curve = ev.mds_curve
    if ev.aa_benchmarks and not curve.empty:
        curve = curve.loc[curve["aa"].astype(bool)]
    cols, wide = _wide(curve, ["host", "suite", "method", "test"], "slowdown", "share_slower")
    keys = ("host", "suite", "method", "test")
    rows = tuple(
        {
            **dict(zip(keys, map(str, key), strict=True)),
            **{f"g{i}": vals.get(c) for i, c in enumerate(cols)},
        }
        for key, vals in wide
    )
    who = "A/A benchmarks" if ev.aa_benchmarks else "benchmarks"
    return Table(
        name="mds_curve",
        label="RQ4",
        title=f"Share of {who} detected slower (%) when B is slowed down by s (fig. 5.8, 5.9)",
        columns=(*(Column(k, k) for k in keys), *_grid_columns(cols, "percent", "{}%")),
        rows=rows,
    )
