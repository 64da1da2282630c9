"""`duet compare` and `duet process`: the verdict table in the terminal, JSON and Markdown."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..atomic import write_atomic
from ..errors import DuetError
from ..store import ResultsStore
from .formatting import md_cell, md_text, rich_text

if TYPE_CHECKING:  # pandas is imported where it is used: `duet --help` must start fast
    import pandas as pd

SCHEMA_ID = "duetbench.compare/1"
VERDICT_STYLE = {
    "slower": "bold red",
    "faster": "bold green",
    "same": "white",
    "same (below threshold)": "dim",
    "no data": "yellow",
}


@dataclass
class Loaded:
    table: pd.DataFrame
    source: str
    experiment: str | None = None
    seed: int = 0
    problems: list[str] = field(default_factory=list)
    excluded: dict[str, Any] = field(default_factory=dict)


def load_input(path: Path) -> Loaded:
    """A results directory (processed on the fly) or an iterations table."""
    from ..process import load, process

    path = Path(path)
    if path.is_dir():
        rep = process(path)
        exp = ResultsStore.open(path).experiment()
        excluded = {
            "runs": rep.runs_excluded,
            "iterations": rep.iterations_excluded,
            "timed_out_runs_used": rep.runs_partial,
        }
        return Loaded(
            rep.table, str(path), exp.get("name"), int(exp.get("seed") or 0), rep.problems, excluded
        )
    df = load(path)
    exp_name = str(df["experiment"].iloc[0]) if "experiment" in df.columns and len(df) else None
    return Loaded(df, str(path), exp_name, 0)


def parse_threshold(text: str) -> float:
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise DuetError(f"--threshold {text!r}: write a relative change like 1% or 0.01") from None
    if value < 0:
        raise DuetError("--threshold must not be negative")
    return value


def parse_warmup(text: str | None) -> int | str | None:
    if text is None or text == "config":
        return None
    if text == "half":
        return "half"
    try:
        n = int(text)
    except ValueError:
        raise DuetError(
            f"--warmup {text!r}: use a number of iterations, 'half', or 'config'"
        ) from None
    if n < 0:
        raise DuetError("--warmup must not be negative")
    return n


def apply_config_warmup(df: pd.DataFrame) -> pd.DataFrame:
    """Drop the iterations the config marked as warm-up (the `warmup` column of `duet process`)."""
    if "warmup" in df.columns:
        df = df.loc[~df["warmup"].astype(bool)]
    return df


def run_compare(loaded: Loaded, args: argparse.Namespace) -> pd.DataFrame:
    from ..analysis import compare

    warmup = parse_warmup(args.warmup)
    df = loaded.table
    if warmup is None:
        df = apply_config_warmup(df)
        warmup = 0
    seed = args.seed if args.seed is not None else loaded.seed
    return compare(
        df,
        test=args.test,
        interval=args.interval,
        confidence=args.confidence,
        resamples=args.resamples,
        threshold=parse_threshold(args.threshold),
        min_overlap=args.min_overlap,
        run_stat=args.run_stat,
        warmup=warmup,
        winsorize=args.winsorize,
        seed=seed,
        cluster_by=args.cluster_by,
        overlap_rate=args.overlap_rate,
        min_run_pairs=args.min_run_pairs,
    )


def lost_run_notes(rows: pd.DataFrame, table: pd.DataFrame, min_overlap: float) -> list[str]:
    """Runs that contributed no pair (aduet: no overlap above m) are left out of a test: say so."""
    if table.empty or rows.empty:
        return []
    keys = [k for k in ("suite", "benchmark", "method") if k in table.columns and k in rows.columns]
    have = table.groupby(keys, observed=True)["run"].nunique()
    notes = []
    for r in rows.to_dict("records"):
        total = (
            int(have.get(tuple(r[k] for k in keys), 0))
            if len(keys) > 1
            else int(have.get(r[keys[0]], 0))
        )
        used = int(r.get("runs") or 0)
        if total and used < total:
            why = (
                f"had no iteration pair overlapping by more than m = {min_overlap:g}"
                if r["method"] == "aduet"
                else "had no pair of iterations"
            )
            if int(r.get("runs_few_pairs") or 0):
                why += " or far fewer pairs than the others (--min-run-pairs)"
            hint = (
                " (lower --min-overlap; with --overlap-rate thesis, A's and B's iterations "
                "must be of similar length)"
                if r["method"] == "aduet"
                else ""
            )
            notes.append(
                f"{r['benchmark']} {r['method']}: {total - used} of {total} runs {why} and were "
                f"left out{hint}"
            )
    return notes


def _num(x: Any) -> float | int | None:
    if x is None:
        return None
    try:
        if isinstance(x, int | bool):
            return int(x)
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def to_json_doc(rows: pd.DataFrame, loaded: Loaded, args: argparse.Namespace) -> dict[str, Any]:
    out_rows = []
    for r in rows.to_dict("records"):
        row = {
            "suite": r.get("suite"),
            "benchmark": str(r["benchmark"]),
            "method": str(r["method"]),
            "host": r.get("host"),
            "verdict": str(r["verdict"]),
            "change": _num(r.get("change")),
            "ci_low": _num(r.get("ci_low")),
            "ci_high": _num(r.get("ci_high")),
            "ci_width": _num(r.get("ci_width")),
            "p_value": _num(r.get("p_value")),
            "rank_p_value": _num(r.get("rank_p_value")),
            "runs": int(r.get("runs") or 0),
            "runs_few_pairs": int(r.get("runs_few_pairs") or 0),
            "pairs": int(r.get("pairs") or 0),
            "mean_a_ns": _num(r.get("mean_a_ns")),
            "mean_b_ns": _num(r.get("mean_b_ns")),
            "clustered_by": r.get("clustered_by"),
            "calibrated": bool(r.get("calibrated", True)),
        }
        out_rows.append(row)
    verdicts = [r["verdict"] for r in out_rows]
    return {
        "schema": SCHEMA_ID,
        "tool": "duetbench",
        "version": __version__,
        "source": loaded.source,
        "experiment": loaded.experiment,
        "settings": {
            "test": args.test,
            "interval": args.interval,
            "confidence": args.confidence,
            "resamples": args.resamples,
            "threshold": parse_threshold(args.threshold),
            "min_overlap": args.min_overlap,
            "overlap_rate": args.overlap_rate,
            "min_run_pairs": args.min_run_pairs,
            "run_stat": args.run_stat,
            "warmup": args.warmup if args.warmup is not None else "config",
            "winsorize": bool(args.winsorize),
            "seed": int(args.seed if args.seed is not None else loaded.seed),
            "cluster_by": args.cluster_by,
        },
        "rows": out_rows,
        "summary": {
            "slower": verdicts.count("slower"),
            "faster": verdicts.count("faster"),
            "same": sum(v.startswith("same") for v in verdicts),
            "no_data": verdicts.count("no data"),
        },
        "problems": list(loaded.problems),
        "excluded": loaded.excluded,
        "notes": lost_run_notes(rows, loaded.table, args.min_overlap),
    }


def _pct(x: Any, signed: bool = True) -> str:
    v = _num(x)
    if v is None:
        return "-"
    return f"{v * 100:+.2f} %" if signed else f"{v * 100:.2f} %"


def _time(ns: Any) -> str:
    v = _num(ns)
    if v is None:
        return "-"
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= div:
            return f"{v / div:.3f} {unit}"
    return f"{v:.0f} ns"


def _p(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "-"
    return f"{v:.3g}" if v >= 0.001 else "<0.001"


def verdict_p(r: dict[str, Any], test: str) -> Any:
    """The p-value that goes with the verdict's test: the pooled U test's for
    ``utest-pooled``, else the signed-rank test's of the run values."""
    return r.get("p_value") if test == "utest-pooled" else r.get("rank_p_value")


def _row_cells(r: dict[str, Any]) -> list[str]:
    ci = (
        f"[{_pct(r.get('ci_low'))}, {_pct(r.get('ci_high'))}]"
        if _num(r.get("ci_low")) is not None
        else "-"
    )
    name = str(r["benchmark"]) + (f" @{r['host']}" if r.get("host") else "")
    return [
        name,
        str(r["method"]),
        _time(r.get("mean_a_ns")),
        _time(r.get("mean_b_ns")),
        _pct(r.get("change")),
        ci,
        _p(verdict_p(r, str(r.get("test")))),
        str(int(r.get("runs") or 0)),
        str(int(r.get("pairs") or 0)),
        str(r["verdict"]),
    ]


HEADERS = [
    "benchmark",
    "method",
    "mean A",
    "mean B",
    "change",
    "CI",
    "p (rank)",
    "runs",
    "pairs",
    "verdict",
]


def render_terminal(
    rows: pd.DataFrame, loaded: Loaded, args: argparse.Namespace, console: Any = None
) -> None:
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # CI logs: do not squeeze the table into 80 columns
            console = Console(width=max(console.width, 140))
    conf = f"{args.confidence * 100:g} %"
    title = (
        f"{rich_text(loaded.experiment or loaded.source)}: {_test_label(args.test)}, {conf} "
        f"{args.interval} interval; "
        "change = B vs A, + means B slower" + _threshold_text(args)
    )
    table = Table(title=title, title_justify="left")
    for h in HEADERS:
        table.add_column(
            h,
            justify="right" if h not in ("benchmark", "method", "verdict") else "left",
            no_wrap=h != "benchmark",
        )
    for r in rows.to_dict("records"):
        cells = [rich_text(c) for c in _row_cells(r)]
        style = VERDICT_STYLE.get(cells[-1], "white")
        cells[-1] = f"[{style}]{cells[-1]}[/]"
        table.add_row(*cells)
    console.print(table)
    col = rows["clustered_by"] if "clustered_by" in rows.columns else []
    clustered = sorted({str(c) for c in col if isinstance(c, str) and c and c != "run"})
    if clustered:
        console.print(
            f"[cyan]runs span several hosts: intervals resample {rich_text(', '.join(clustered))}s "
            "(clustered bootstrap)[/]"
        )
    for note in lost_run_notes(rows, loaded.table, args.min_overlap):
        console.print(f"[yellow]note:[/] {rich_text(note)}")
    _print_problems(console, loaded)


def _excluded(loaded: Loaded) -> str:
    """What `duet process` left out, e.g. ``1 failed run(s), 6 filler iteration(s)``."""
    runs = loaded.excluded.get("runs") or {}
    its = loaded.excluded.get("iterations") or {}
    return ", ".join(
        [f"{n} {k} run(s)" for k, n in sorted(runs.items())]
        + [f"{n} {k} iteration(s)" for k, n in sorted(its.items())]
    )


def _threshold_text(args: argparse.Namespace) -> str:
    t = parse_threshold(args.threshold)
    return f", threshold {t * 100:g} %" if t else ""


def _print_problems(console: Any, loaded: Loaded) -> None:
    excluded = _excluded(loaded)
    if excluded:
        console.print(f"[dim]excluded: {excluded}[/]")
    if loaded.excluded.get("timed_out_runs_used"):
        console.print(
            f"[dim]{loaded.excluded['timed_out_runs_used']} timed-out run(s): their finished "
            "iterations are used[/]"
        )
    for p in loaded.problems:
        console.print(f"[yellow]problem:[/] {rich_text(p)}")


def _test_label(test: str) -> str:
    if test == "utest-pooled":
        return "utest-pooled test (not calibrated: p (rank) is the pooled U test's)"
    return f"{test} test"


def render_markdown(rows: pd.DataFrame, loaded: Loaded, args: argparse.Namespace) -> str:
    lines = [
        f"### duetbench: {md_text(loaded.experiment or loaded.source)}",
        "",
        f"{_test_label(args.test)}, {args.confidence * 100:g} % {args.interval} interval; "
        f"change = B vs A, positive = B slower{_threshold_text(args)}.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    icons = {"slower": "🔴 slower", "faster": "🟢 faster"}
    for r in rows.to_dict("records"):
        cells = _row_cells(r)
        cells[0] = md_text(cells[0])  # benchmark (@host): user text
        cells[-1] = icons.get(cells[-1], cells[-1])
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    notes = lost_run_notes(rows, loaded.table, args.min_overlap)
    if notes:  # as in the terminal: what a verdict leaves out
        lines += ["", "Notes:", *[f"- {md_text(n)}" for n in notes]]
    if _excluded(loaded):
        lines += ["", f"Excluded: {md_text(_excluded(loaded))}."]
    if loaded.problems:
        lines += ["", "Problems:", *[f"- {md_text(p)}" for p in loaded.problems]]
    return "\n".join(lines) + "\n"


def add_compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--test",
        choices=["ratio", "diff", "utest", "utest-pooled"],
        default="ratio",
        help="what drives the verdict (default: ratio CI test); utest: signed-rank test of "
        "the run values (needs >= 6 runs at 95 %%); utest-pooled: the thesis's U test of all "
        "iterations, NOT calibrated (docs/statistics.md)",
    )
    p.add_argument(
        "--interval",
        choices=["t", "bca", "percentile", "studentized"],
        default="t",
        help="interval over run-level values (default: Student-t); bca, percentile and "
        "studentized are NOT calibrated up to 20 runs: 7-26 %% false alarms at a nominal "
        "5 %% (docs/statistics.md)",
    )
    p.add_argument("--resamples", type=int, default=9999, help="bootstrap resamples (default 9999)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--threshold", default="0", help="practical threshold, e.g. 1%% (default 0)")
    p.add_argument(
        "--min-overlap",
        type=float,
        default=0.4,
        help="aduet pairing: minimum overlap rate m (default 0.4)",
    )
    p.add_argument(
        "--overlap-rate",
        choices=["shorter", "thesis"],
        default="shorter",
        help="aduet pairing: overlap relative to the shorter iteration (default), or the "
        "thesis's min(ov/d_A, ov/d_B), which drops pairs of very different length",
    )
    p.add_argument(
        "--min-run-pairs",
        type=float,
        default=0.25,
        help="leave out runs with fewer pairs than this share of their group's median run "
        "(default 0.25; 0 keeps every run)",
    )
    p.add_argument(
        "--run-stat",
        choices=["median", "mean", "trimmed", "min"],
        default="median",
        help="how a run's pairs are summarized (default median; min compares the "
        "sides' minima, for microbenchmarks)",
    )
    p.add_argument(
        "--warmup",
        default=None,
        help="iterations dropped per run and side: N, half, or config (default)",
    )
    p.add_argument(
        "--winsorize", action="store_true", help="winsorize each run's series (duet paper 7.1)"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="bootstrap seed (default: the experiment's seed)"
    )
    p.add_argument(
        "--cluster-by",
        choices=["host", "run"],
        default=None,
        help="resampling unit (default: host when runs span several hosts, else run)",
    )


def cmd_compare(args: argparse.Namespace) -> int:
    if not 0 < args.confidence < 1:
        raise DuetError("--confidence must be between 0 and 1, e.g. 0.95")
    if not 0 <= args.min_overlap < 1:
        raise DuetError("--min-overlap must be in [0, 1), e.g. 0.4")
    if args.resamples < 1:
        raise DuetError("--resamples must be positive")
    parse_threshold(args.threshold)
    parse_warmup(args.warmup)
    loaded = load_input(args.source)
    rows = run_compare(loaded, args)
    if args.format == "json":
        out = json.dumps(to_json_doc(rows, loaded, args), indent=2)
    elif args.format == "markdown":
        out = render_markdown(rows, loaded, args)
    else:
        out = None
        render_terminal(rows, loaded, args)
    if out is not None:
        if args.output:
            write_atomic(args.output, out + ("" if out.endswith("\n") else "\n"))
        else:
            sys.stdout.write(out + ("" if out.endswith("\n") else "\n"))
    if args.fail_on_regression and (rows["verdict"] == "slower").any():
        return 1
    return 0


def cmd_process(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..process import process, save

    rep = process(args.source)
    console = Console(stderr=True)
    out = args.output or ResultsStore(Path(args.source)).table_path
    save(rep.table, out)
    console.print(f"{len(rep.table)} iterations from {rep.runs_used} runs -> {rich_text(out)}")
    runs = ", ".join(f"{n} {k}" for k, n in sorted(rep.runs_excluded.items()))
    its = ", ".join(f"{n} {k}" for k, n in sorted(rep.iterations_excluded.items()))
    if runs or its:
        console.print(
            f"excluded: {runs + ' run(s)' if runs else ''}{'; ' if runs and its else ''}"
            f"{its + ' iteration(s)' if its else ''}"
        )
    for p in rep.problems:
        console.print(f"[yellow]problem:[/] {rich_text(p)}")
    return 0


def print_verdicts_after_run(root: Path) -> None:
    """The same verdict table `duet compare` prints, at the end of `duet run`."""
    parser = argparse.ArgumentParser()
    add_compare_options(parser)
    args = parser.parse_args([])
    try:
        loaded = load_input(root)
        if loaded.table.empty:
            return
        rows = run_compare(loaded, args)
    except DuetError as exc:
        print(f"duet: cannot compare yet: {exc}", file=sys.stderr)
        return
    render_terminal(rows, loaded, args)


def register_cli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="verdicts: is B slower or faster than A, by how much",
        description="Compare B against A per benchmark and method.",
    )
    p.add_argument(
        "source", type=Path, help="results directory, or an iterations table (.parquet/.csv)"
    )
    p.add_argument("--format", choices=["table", "json", "markdown"], default="table")
    p.add_argument("-o", "--output", type=Path, help="write JSON/Markdown here instead of stdout")
    p.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when any verdict is 'slower'"
    )
    add_compare_options(p)
    p.set_defaults(func=cmd_compare)

    q = sub.add_parser("process", help="raw runs -> the iterations table (Parquet or CSV)")
    q.add_argument("source", type=Path, help="results directory (results/<experiment>)")
    q.add_argument(
        "-o",
        "--output",
        type=Path,
        help="iterations.parquet or .csv (default: inside the results dir)",
    )
    q.set_defaults(func=cmd_process)
