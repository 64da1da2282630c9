"""The tables of `duet history list | show | changes | marks`, described once
(:class:`~duetbench.report.tables.Table`), and their JSON documents.

The terminal (``terminal.print_table``), Markdown (``markdown.table_lines``) and JSON
renderings read the same rows, so the three formats agree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .tables import Column, Note, Table

if TYPE_CHECKING:
    from ..history import ChangeReport, ExperimentInfo, Mark, Prior, Series, Summary
    from ..history.series import ChainPoint, Level, Step


def _when(ns: int | None) -> str | None:
    if ns is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(ns) / 1e9))


def _short(sha: str | None) -> str | None:
    return sha[:12] if sha else None


# ---------------------------------------------------------------------- duet history list


def _of(obj: Any, attr: str) -> Any:
    """``obj``'s attribute, None without ``obj``."""
    return None if obj is None else getattr(obj, attr)


def _bench(suite: str, benchmark: str) -> str:
    return benchmark if not suite else f"{suite}/{benchmark}"


def _key_bench(x: Any) -> str:
    """The benchmark of a finding keyed by its series (``x.key``)."""
    return _bench(x.key.suite, x.key.benchmark)


def added_table(info: ExperimentInfo, location: str) -> Table:
    """`duet history add`: the experiment that was added."""
    title = f"added experiment #{info.id} '{info.name}' to {location}"
    return Table.listing("added", title, _EXPERIMENT_COLUMNS, (info,))


_EXPERIMENT_COLUMNS = (
    Column("id", "#", "count"),
    Column("name", "experiment"),
    Column("version_a", "A"),
    Column("version_b", "B"),
    Column("hosts", "hosts", get=lambda e: ", ".join(f"{n} ({fp[:8]})" for n, fp in e.hosts)),
    Column("started", "started", get=lambda e: _when(e.started_ns)),
    Column("added", "added", get=lambda e: _when(e.added_ns)),
    Column("source", "source"),
)

_VERSION_COLUMNS = (
    Column("label", "version"),
    Column("commit", "commit", get=lambda v: _short(v.commit)),
    Column("date", "commit date", get=lambda v: _when(v.commit_ns)),
    Column("first_seen", "first seen", get=lambda v: _when(v.first_seen_ns)),
)


def summary_tables(summary: Summary) -> list[Table]:
    """`duet history list`: versions, experiments, hosts, benchmarks."""
    return [
        Table.listing(
            "versions",
            f"{len(summary.versions)} version(s)",
            _VERSION_COLUMNS,
            summary.versions,
            empty="no versions yet: add an experiment (duet history add RESULTS --repo FILE ...)",
        ),
        Table.listing(
            "experiments",
            f"{len(summary.experiments)} experiment(s)",
            _EXPERIMENT_COLUMNS,
            summary.experiments,
            empty="no experiments",
        ),
        Table.listing(
            "hosts",
            f"{len(summary.hosts)} host fingerprint(s)",
            (
                Column("fingerprint", "fingerprint"),
                Column("machine", "machine", get=lambda h: h.describe()),
            ),
            summary.hosts,
            empty="no hosts",
        ),
        Table.listing(
            "benchmarks",
            f"{len(summary.benchmarks)} benchmark(s)",
            (
                Column("suite", "suite", get=itemgetter(0)),
                Column("benchmark", "benchmark", get=itemgetter(1)),
            ),
            summary.benchmarks,
            empty="no benchmarks",
        ),
    ]


# ---------------------------------------------------------------------- duet history show

_Z95 = 1.959963984540054


@dataclass(frozen=True)
class _VersionRow:
    """A version of a series: its paired step (None at a chain's start), its point on the
    paired chain, its absolute level and its commit."""

    version: str
    commit: str | None
    step: Step | None
    point: ChainPoint | None
    level: Level | None


def _step_ci(r: _VersionRow) -> tuple[float, float] | None:
    st = r.step
    if st is None:
        return None
    return (_rel(st.log_ratio - _Z95 * st.se), _rel(st.log_ratio + _Z95 * st.se))


def _row_experiments(r: _VersionRow) -> str:
    ids = {*(r.step.experiments if r.step else ()), *(r.level.experiments if r.level else ())}
    return ", ".join(f"#{i}" for i in sorted(ids))


_SERIES_COLUMNS = (
    Column("version", "version"),
    Column("commit", "commit", get=lambda r: _short(r.commit)),
    Column("before", "compared with", get=lambda r: _of(r.step, "before")),
    Column("step", "step", "signed_pct", get=lambda r: _of(r.step, "change")),
    Column("step_ci", "95% CI", "ci", get=_step_ci),
    Column("runs", "runs", "count", get=lambda r: _of(r.step, "runs")),
    Column("level", "paired level", "signed_pct", get=lambda r: _of(r.point, "relative")),
    Column("time", "median time", "duration", get=lambda r: _of(r.level, "ns")),
    Column("experiments", "experiments", get=_row_experiments),
)


def series_tables(all_series: Sequence[Series]) -> list[Table]:
    """`duet history show`: per series, each version with its paired step and its
    absolute level."""
    out = []
    for s in all_series:
        steps = {st.after: st for st in s.steps}
        chain = {p.version: p for p in s.chain()}
        levels = {lv.version: lv for lv in s.levels}
        versions = [
            _VersionRow(
                v, s.commits.get(v, (None, None))[0], steps.get(v), chain.get(v), levels.get(v)
            )
            for v in s.versions
        ]
        notes = []
        if s.excluded:
            notes.append(Note("note", f"excluded by a mark: {', '.join(s.excluded)}"))
        out.append(
            Table.listing(
                "series",
                str(s.key),
                _SERIES_COLUMNS,
                versions,
                caption="step: the direct comparison with the version before (the paired "
                "series); paired level: relative to the start of its chain; median time: "
                "the absolute series (carries the machine's drift)",
                notes=tuple(notes),
            )
        )
    return out


def _per_ns(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e9


_PRIOR_COLUMNS = (
    Column(
        "series",
        "series",
        get=lambda p: f"{_bench(p.suite, p.benchmark)} [{p.method}, host {p.host[:8]}]",
    ),
    Column("experiments", "experiments", "count"),
    Column("runs", "runs", "count"),
    Column("sd", "run spread (sd)", "pct", digits=2, get=lambda p: _of_rel(p.sd)),
    Column("df", "df", "count"),
    Column("per_run", "machine time/run", "duration", get=lambda p: _per_ns(p.seconds_per_run)),
    Column(
        "per_iteration",
        "per iteration",
        "duration",
        get=lambda p: _per_ns(p.seconds_per_iteration),
    ),
    Column("warmup", "warm-up", "count"),
    Column("left_out", "runs left out", "pct", digits=1, get=lambda p: p.left_out_share),
    Column("unbalanced", "of them unbalanced", "pct", digits=1, get=lambda p: p.unbalanced_share),
)


def priors_table(priors: Sequence[Prior], last: int) -> Table:
    """`duet history show`: what the last experiments say about the next one, per
    benchmark x method on a host (history/priors.py; docs/history.md, "Priors")."""
    skipped = [
        f"#{e} ({why})" for p in priors for e, why in p.skipped if not why.startswith("older")
    ]
    notes = (Note("note", "left out by marks: " + ", ".join(skipped)),) if skipped else ()
    return Table.listing(
        "priors",
        f"priors: the last {last} experiments of each",
        _PRIOR_COLUMNS,
        priors,
        caption="run spread: the sd of the run values pooled over the experiments, each "
        "experiment's own mean removed (df: its degrees of freedom); what `duet plan "
        "--repo` plans with",
        notes=notes,
    )


def _rel(log_ratio: float) -> float:
    return math.expm1(log_ratio)


def _of_rel(log_ratio: float | None) -> float | None:
    return None if log_ratio is None else math.expm1(log_ratio)


# ---------------------------------------------------------------------- duet history changes

_CHANGE_COLUMNS = (
    Column("benchmark", "benchmark", get=_key_bench),
    Column("method", "method", get=lambda c: c.key.method),
    Column("host", "host", get=lambda c: c.key.host[:8]),
    Column("first_bad", "first bad"),
    Column("last_good", "last good"),
    Column("change", "change", "signed_pct"),
    Column("ci", "95% CI", "ci", get=lambda c: (c.ci_low, c.ci_high)),
    Column("direction", "verdict", "verdict"),
    Column("source", "found in"),
    Column("final", "final", get=lambda c: "yes" if c.final else "provisional"),
    Column(
        "evidence",
        "evidence",
        get=lambda c: c.evidence + (f" (marked: {c.marked})" if c.marked else ""),
    ),
)

_ENVIRONMENT_COLUMNS = (
    Column("benchmark", "benchmark", get=lambda e: _bench(e.suite, e.benchmark)),
    Column("method", "method"),
    Column("version", "from version"),
    Column("before", "host before", get=lambda e: e.before[:8]),
    Column("after", "host after", get=lambda e: e.after[:8]),
    Column(
        "differences",
        "what differs",
        get=lambda e: "; ".join(f"{k}: {a} -> {b}" for k, a, b in e.differences),
    ),
)


def changes_tables(report: ChangeReport) -> list[Table]:
    """`duet history changes`: the changes, then spikes, moves dismissed as drift, and
    environment changes."""
    changes = Table.listing(
        "changes",
        f"{len(report.changes)} change(s), {len(report.regressions)} regression(s)",
        _CHANGE_COLUMNS,
        report.changes,
        empty="no changes found",
    )
    spikes = _moves_table(
        "spikes",
        f"{len(report.spikes)} spike(s): one version off, the next back (not changes)",
        report.spikes,
        ("evidence", "evidence"),
        empty=None,
    )
    dismissed = _moves_table(
        "dismissed",
        f"{len(report.dismissed)} move(s) of the absolute series dismissed as machine drift",
        report.dismissed,
        ("reason", "why"),
    )
    environment = Table.listing(
        "environment",
        f"{len(report.environment)} environment change(s) (never a regression)",
        _ENVIRONMENT_COLUMNS,
        report.environment,
    )
    return [changes, *(t for t in (spikes, dismissed, environment) if t.rows)]


def _moves_table(name: str, title: str, moves: Any, why: tuple[str, str], **kw: Any) -> Table:
    """Moves of a series that are not changes (spikes, drift): benchmark, method,
    version, change and the attribute ``why[0]`` that says why (titled ``why[1]``)."""
    columns = (
        Column("benchmark", "benchmark", get=_key_bench),
        Column("method", "method", get=lambda m: m.key.method),
        Column("version", "version"),
        Column("change", "change", "signed_pct"),
        Column(*why),
    )
    return Table.listing(name, title, columns, moves, **kw)


# ---------------------------------------------------------------------- marks


def _mark_scope(m: Mark) -> str:
    given = (("suite", m.suite), ("method", m.method), ("host", m.host))
    return ", ".join(f"{k} {v}" for k, v in given if v) or "all"


_MARK_COLUMNS = (
    Column("id", "#", "count"),
    Column("benchmark", "benchmark"),
    Column("version", "version"),
    Column("kind", "kind"),
    Column("scope", "applies to", get=_mark_scope),
    Column("note", "note"),
    Column("created", "created", get=lambda m: _when(m.created_ns)),
)


def marks_table(marks: Sequence[Mark]) -> Table:
    """`duet history marks`: the user marks."""
    return Table.listing("marks", f"{len(marks)} mark(s)", _MARK_COLUMNS, marks, empty="no marks")


def strict_json(doc: Any) -> Any:
    """``doc`` with every NaN or infinity as None (JSON has no NaN: a level measured by
    one experiment has no standard error), numpy scalars as Python numbers."""
    if isinstance(doc, dict):
        return {k: strict_json(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [strict_json(v) for v in doc]
    if isinstance(doc, float) or type(doc).__module__ == "numpy":
        try:
            f = float(doc)
        except (TypeError, ValueError):
            return doc
        if isinstance(doc, int) or (hasattr(doc, "dtype") and doc.dtype.kind in "iu"):
            return int(doc)
        return f if math.isfinite(f) else None
    return doc


def mark_json(m: Mark) -> dict[str, Any]:
    """A mark's JSON: every field by name."""
    return asdict(m)


def experiment_json(e: ExperimentInfo) -> dict[str, Any]:
    """An experiment's JSON: every field by name, a host as ``{host, fingerprint}``."""
    return {**asdict(e), "hosts": [{"host": n, "fingerprint": fp} for n, fp in e.hosts]}


def summary_json(summary: Summary, location: str) -> dict[str, Any]:
    return {
        "repository": location,
        "versions": [
            {
                "label": v.label,
                "commit": v.commit,
                "commit_ns": v.commit_ns,
                "first_seen_ns": v.first_seen_ns,
            }
            for v in summary.versions
        ],
        "experiments": [experiment_json(e) for e in summary.experiments],
        "hosts": [{"fingerprint": h.fingerprint, "facts": dict(h.facts)} for h in summary.hosts],
        "benchmarks": [{"suite": s, "benchmark": b} for s, b in summary.benchmarks],
    }
