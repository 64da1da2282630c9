"""Every table duet shows, described once: columns with their kind, rows of raw values.

A :class:`Table` is built once per result by the builders below (the verdict table of
`duet compare`, `duet run`, `duet report`; the tables of the evaluation) and rendered
by ``report/terminal.py`` (rich), ``report/markdown.py`` and ``report/html/``. Rows
hold raw values; a column's ``kind`` selects the formatter (``formatting.cell``), so
the same number reads the same in every format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..options import CompareOptions
from ..schema import Verdict
from . import formatting as fmt
from .notes import summary_notes, verdict_notes

if TYPE_CHECKING:
    import pandas as pd

    from ..dataset import Dataset
    from ..verdicts import VerdictTable

#: Display order of methods and tests (rows are sorted by it, not alphabetically).
METHOD_ORDER = {"seqn": 0, "aduet": 1, "sduet": 2, "inproc": 3}
TEST_ORDER = {"ratio": 0, "diff": 1, "utest": 2, "utest-pooled": 3}
_LEFT_KINDS = ("text", "verdict", "health")


@dataclass(frozen=True)
class Column:
    """A column: ``key`` of the row value, ``title``, ``kind`` (``formatting.KINDS``),
    ``align`` ("left" / "right"; default: left for text and verdicts), ``digits``, the
    text of a ``missing`` value, and ``get``: how :meth:`Table.listing` reads the value
    from an item (None: the item's entry ``key`` of a mapping, else its attribute)."""

    key: str
    title: str
    kind: str = "text"
    align: str = ""
    digits: int | None = None
    missing: str = "-"
    get: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)

    @property
    def left(self) -> bool:
        return (self.align or ("left" if self.kind in _LEFT_KINDS else "right")) == "left"

    def format(self, value: Any) -> str:
        return fmt.cell(self.kind, value, digits=self.digits, missing=self.missing)

    def value(self, item: Any) -> Any:
        """This column's raw value of ``item`` (see ``get``)."""
        if self.get is not None:
            return self.get(item)
        return item.get(self.key) if isinstance(item, Mapping) else getattr(item, self.key)


@dataclass(frozen=True)
class Note:
    """A line under a table. ``kind``: ``info`` (how to read it), ``note`` (data left
    out of a test), ``excluded`` (runs and iterations not analysed) or ``problem``."""

    kind: str
    text: str


@dataclass(frozen=True)
class Table:
    """A table to render: ``name`` (an id), ``title``, ``columns``, ``rows`` (raw values by
    column key), a ``caption``, ``notes``, a short ``label`` the terminal puts before the
    title ("RQ1"), and ``empty``: what to show instead of a table without rows (None:
    the empty table)."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[dict[str, Any], ...]
    caption: str = ""
    notes: tuple[Note, ...] = ()
    label: str = ""
    empty: str | None = None
    #: the long form of the notes, one sentence per row and kind (``-v``, the HTML report)
    details: tuple[Note, ...] = ()

    def cells(self, row: dict[str, Any]) -> list[str]:
        """The row's cells as text (not escaped)."""
        return [c.format(row.get(c.key)) for c in self.columns]

    @property
    def heading(self) -> str:
        return f"{self.label}  {self.title}" if self.label else self.title

    @classmethod
    def listing(
        cls, name: str, title: str, columns: Sequence[Column], items: Iterable[Any], **kw: Any
    ) -> Table:
        """A table of one row per item, each cell read by its column (:meth:`Column.value`)."""
        columns = tuple(columns)
        rows = tuple({c.key: c.value(item) for c in columns} for item in items)
        return cls(name=name, title=title, columns=columns, rows=rows, **kw)


# ---------------------------------------------------------------------- helpers


def sort_rows(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows ordered by the keys, methods as seqn, aduet, sduet, inproc and tests as ratio, diff, U."""
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


def bench_label(row: dict[str, Any], multi_host: bool) -> str:
    """The benchmark, and its host when runs span several."""
    name = str(row["benchmark"])
    return f"{name} @{row['host']}" if multi_host and row.get("host") else name


def test_label(test: str) -> str:
    if test == "utest-pooled":
        return "utest-pooled test (not calibrated: p (rank) is the pooled U test's)"
    return f"{test} test"


#: what the mean columns are, in every caption: not the change's statistic
MEANS_NOTE = "mean A/B: every analysed iteration, unpaired"


def verdict_caption(opts: CompareOptions) -> str:
    """How to read the verdict table: test, interval, sign of the change, threshold."""
    threshold = f", threshold {opts.threshold * 100:g} %" if opts.threshold else ""
    return (
        f"{test_label(opts.test)}, {opts.confidence * 100:g} % {opts.interval} interval; "
        f"change = B vs A, + means B slower{threshold}; {MEANS_NOTE}"
    )


def adaptive_caption(opts: CompareOptions) -> str:
    """How to read the verdict table of an adaptive experiment (docs/adaptive.md)."""
    return (
        f"measured until sure: the stopping rule's {opts.confidence * 100:g} % interval, "
        "valid at its stop (runs = runs done; no p-value goes with it); change = B vs A, "
        f"+ means B slower; {MEANS_NOTE}"
    )


# ---------------------------------------------------------------------- notes


def excluded(dataset: Dataset, rows: pd.DataFrame | None = None) -> dict[str, Any]:
    """What was left out: the dataset's runs and iterations, and the runs the analysis of
    ``rows`` left out as unbalanced (their ``runs_unbalanced``)."""
    out = dict(dataset.excluded)
    left = 0
    if rows is not None and "runs_unbalanced" in rows:
        left = int(rows["runs_unbalanced"].fillna(0).sum())
    if left:
        out["runs"] = {**(out.get("runs") or {}), "unbalanced": left}
    return out


def dataset_notes(dataset: Dataset, rows: pd.DataFrame | None = None) -> list[Note]:
    """What was excluded while reading the dataset (and by the analysis of ``rows``), and
    the problems found."""
    left = excluded(dataset, rows)
    runs = left.get("runs") or {}
    its = left.get("iterations") or {}
    parts = [f"{n} {k} run(s)" for k, n in sorted(runs.items())] + [
        f"{n} {k} iteration(s)" for k, n in sorted(its.items())
    ]
    out = [Note("excluded", f"excluded: {', '.join(parts)}")] if parts else []
    partial = left.get("timed_out_runs_used")
    if partial:
        out.append(
            Note("excluded", f"{partial} timed-out run(s): their finished iterations are used")
        )
    return out + [Note("problem", p) for p in dataset.problems]


# ---------------------------------------------------------------------- the verdict table

VERDICT_COLUMNS = (
    Column("benchmark", "benchmark"),
    Column("method", "method"),
    Column("mean_a_ns", "mean A", "duration"),
    Column("mean_b_ns", "mean B", "duration"),
    Column("change", "change", "signed_pct"),
    Column("ci", "CI", "ci"),
    Column("p", "p (rank)", "pvalue"),
    Column("runs", "runs", "count"),
    Column("pairs", "pairs", "count"),
    Column("verdict", "verdict", "verdict"),
)


def verdict_rows(rows: pd.DataFrame) -> tuple[dict[str, Any], ...]:
    """The raw values of the verdict table, in display order (rows of
    :func:`duetbench.verdicts.verdicts`)."""
    out = []
    for r in sort_rows(rows, [k for k in ("suite", "benchmark", "method") if k in rows]).to_dict(
        "records"
    ):
        out.append(
            {
                "benchmark": str(r["benchmark"]) + (f" @{r['host']}" if r.get("host") else ""),
                "method": str(r["method"]),
                "mean_a_ns": r.get("mean_a_ns"),
                "mean_b_ns": r.get("mean_b_ns"),
                "change": r.get("change"),
                "ci": (r.get("ci_low"), r.get("ci_high")),
                "p": r.get("p_value"),
                "runs": int(r.get("runs") or 0),
                "pairs": int(r.get("pairs") or 0),
                "verdict": fmt.verdict_text(r["verdict"], r.get("within"), r.get("threshold")),
                "measure": str(r.get("measure") or "wall"),
            }
        )
        if "stop" in rows:
            out[-1]["stop"] = str(r.get("stop") or "")
    return tuple(out)


def verdict_table(verdicts: VerdictTable) -> Table:
    """The verdict table of `duet compare` (and of every command that shows verdicts):
    one row per benchmark and method, with its notes."""
    rows, dataset, opts = verdicts.rows, verdicts.dataset, verdicts.options
    col = rows["clustered_by"] if "clustered_by" in rows.columns else []
    clustered = sorted({str(c) for c in col if isinstance(c, str) and c and c != "run"})
    notes = []
    if clustered:
        notes.append(
            Note(
                "info",
                f"runs span several hosts: intervals resample {', '.join(clustered)}s "
                "(clustered bootstrap)",
            )
        )
    details = list(notes)
    notes += [Note("note", n) for n in summary_notes(rows, dataset, opts.min_overlap)]
    details += [Note("note", n) for n in verdict_notes(rows, dataset, opts.min_overlap)]
    columns, caption = VERDICT_COLUMNS, verdict_caption(opts)
    if "measure" in rows and (rows["measure"] == "cpu").any():  # which rows compare CPU time
        columns = (*columns[:-1], Column("measure", "time"), columns[-1])
    if verdicts.adaptive:  # an adaptive experiment: the interval its stopping used
        columns = (*columns[:-1], Column("stop", "stop"), columns[-1])
        caption = adaptive_caption(opts)
        for r in rows.to_dict("records"):
            text = str(r.get("explanation") or "")
            if text and (
                r.get("verdict") == Verdict.INCONCLUSIVE or text.startswith("method auto")
            ):
                note = Note("note", f"{r['benchmark']} {r['method']}: {r['explanation']}")
                notes.append(note)
                details.append(note)
    return Table(
        name="verdicts",
        title=dataset.name,
        columns=columns,
        rows=verdict_rows(rows),
        caption=caption,
        notes=(*notes, *dataset_notes(dataset, rows)),
        details=(*details, *dataset_notes(dataset, rows)),
    )


# ---------------------------------------------------------------------- duet plan, duet hosts


FORECAST_COLUMNS = (
    Column("benchmark", "benchmark"),
    Column("method", "method"),
    Column("iterations", "iterations/run", "count"),
    Column("runs", "runs", "count", missing="out of reach"),
    Column("runs_range", "runs, 90 % range"),
    Column("time_ns", "machine time", "duration"),
    Column("half_width", "+- at that many runs", "pct", digits=2),
    Column("best_iterations", "best iterations/run", "count"),
    Column("best_runs", "runs then", "count", missing="out of reach"),
    Column("best_time_ns", "machine time then", "duration"),
    Column("fixed_runs", "fixed runs", "count"),
    Column("fixed_time_ns", "their machine time", "duration"),
    Column("fixed_reach", "+- reached (95 % sure)", "pct", digits=2),
    Column("fixed_probability", "P(goal reached)", "pct", digits=0),
    Column("evidence", "from"),
)


def forecast_table(
    title: str, goal: str, rows: Sequence[dict[str, Any]], source: str, *, fixed_only: bool = False
) -> Table:
    """`duet plan --precision / --detect`: predicted runs, iterations and machine time
    per benchmark x method (docs/adaptive.md, "Cost model and planning"); columns no row
    has a value in are left out."""
    planned = not fixed_only  # a goal's columns (else the fixed ones only)

    def shown(c: Column) -> bool:
        if c.key.startswith("fixed_"):
            return any(r.get(c.key) is not None for r in rows)
        return planned or c.key in ("benchmark", "method", "evidence")

    columns = tuple(c for c in FORECAST_COLUMNS if shown(c))
    return Table(
        name="forecast",
        title=title,
        columns=columns,
        rows=tuple(rows),
        caption=f"goal: {goal}; predicted from the runs in {source} (cost model) with "
        "their iterations per run; the range: what the spread of so few runs leaves open "
        "(90 %); best iterations/run: the cost model's optimum, and the runs and time then; "
        "fixed runs (no stop:): the precision they reach with 95 % probability, and the "
        "probability of reaching the goal",
    )


_PLAN_KEYS = ("index", "run", "benchmark", "method", "rep", "sides", "slots", "harness")


def plan_table(exp: Any, plan: Sequence[Any]) -> Table:
    """`duet plan`: every planned run with its sides in launch order and CPU slots."""
    rows = []
    for r in plan:
        # sides in launch order: "A" or "B" for a seqn run, "AB"/"BA" for a duet
        slots = " ".join(f"{s.pair}:{'-' if s.cpu_slot is None else s.cpu_slot}" for s in r.sides)
        rows.append(
            {
                "index": str(r.index),
                "run": r.run_id,
                "benchmark": r.benchmark,
                "method": r.method,
                "rep": str(r.rep),
                "sides": "".join(r.pairs),
                "slots": slots,
                "harness": r.harness,
            }
        )
    titles = ("#", "run", "benchmark", "method", "rep", "sides", "cpu slots", "harness")

    return Table(
        name="plan",
        title=f"{exp.name}: {len(plan)} runs, schedule {exp.schedule}, seed {exp.seed}, "
        f"executor {exp.executor}",
        columns=tuple(Column(k, t) for k, t in zip(_PLAN_KEYS, titles, strict=True)),
        rows=tuple(rows),
    )


#: the run statuses `duet hosts` shows as columns
HOST_STATUS_COLUMNS = ("ok", "failed", "timeout", "hung", "lost")


def hosts_table(report: dict[str, Any]) -> Table:
    """`duet hosts`: configuration, runs per status and health of every host."""
    rows = []
    for r in report["hosts"]:
        cfg, runs = r["config"], r["runs"]
        rows.append(
            {
                "host": r["host"],
                "cpu": cfg["cpu_model"] or "-",
                "cpus": cfg["cpus_available"] or cfg["cores"] or "-",
                "mem": "-" if cfg["memory_gb"] is None else f"{cfg['memory_gb']:g}",
                "kernel": cfg["kernel"] or "-",
                "virt": cfg["virtualization"] or "-",
                "engines": ", ".join(map(str, cfg["container_engines"] or [])) or "-",
                **{s: runs[s] for s in HOST_STATUS_COLUMNS},
                "health": r["health"] + (f": {r['reason']}" if r["reason"] else ""),
            }
        )
    columns = (
        Column("host", "host"),
        Column("cpu", "CPU"),
        Column("cpus", "CPUs"),
        Column("mem", "mem GB"),
        Column("kernel", "kernel"),
        Column("virt", "virt"),
        Column("engines", "engines"),
        *(Column(s, s, "count") for s in HOST_STATUS_COLUMNS),
        Column("health", "health", "health"),
    )
    return Table(
        name="hosts",
        title=f"{report['experiment']}: {len(report['hosts'])} host(s)",
        columns=columns,
        rows=tuple(rows),
    )
