"""The tables of `duet history list | show | changes | marks`, described once
(:class:`~duetbench.report.tables.Table`), and their JSON documents.

The terminal (``terminal.print_table``), Markdown (``markdown.table_lines``) and JSON
renderings read the same rows, so the three formats agree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .tables import Column, Note, Table

if TYPE_CHECKING:
    from ..history import ChangeReport, ExperimentInfo, Mark, Prior, Series, Summary


def _when(ns: int | None) -> str | None:
    if ns is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(ns) / 1e9))


def _short(sha: str | None) -> str | None:
    return sha[:12] if sha else None


# ---------------------------------------------------------------------- duet history list


def added_table(info: ExperimentInfo, location: str) -> Table:
    """`duet history add`: the experiment that was added."""
    return Table(
        name="added",
        title=f"added experiment #{info.id} '{info.name}' to {location}",
        columns=_EXPERIMENT_COLUMNS,
        rows=(_experiment_row(info),),
    )


_EXPERIMENT_COLUMNS = (
    Column("id", "#", "count"),
    Column("name", "experiment"),
    Column("version_a", "A"),
    Column("version_b", "B"),
    Column("hosts", "hosts"),
    Column("started", "started"),
    Column("added", "added"),
    Column("source", "source"),
)


def _experiment_row(e: ExperimentInfo) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "version_a": e.version_a,
        "version_b": e.version_b,
        "hosts": ", ".join(f"{name} ({fp[:8]})" for name, fp in e.hosts),
        "started": _when(e.started_ns),
        "added": _when(e.added_ns),
        "source": e.source,
    }


def summary_tables(summary: Summary) -> list[Table]:
    """`duet history list`: versions, experiments, hosts, benchmarks."""
    versions = Table(
        name="versions",
        title=f"{len(summary.versions)} version(s)",
        columns=(
            Column("label", "version"),
            Column("commit", "commit"),
            Column("date", "commit date"),
            Column("first_seen", "first seen"),
        ),
        rows=tuple(
            {
                "label": v.label,
                "commit": _short(v.commit),
                "date": _when(v.commit_ns),
                "first_seen": _when(v.first_seen_ns),
            }
            for v in summary.versions
        ),
        empty="no versions yet: add an experiment (duet history add RESULTS --repo FILE ...)",
    )
    experiments = Table(
        name="experiments",
        title=f"{len(summary.experiments)} experiment(s)",
        columns=_EXPERIMENT_COLUMNS,
        rows=tuple(_experiment_row(e) for e in summary.experiments),
        empty="no experiments",
    )
    hosts = Table(
        name="hosts",
        title=f"{len(summary.hosts)} host fingerprint(s)",
        columns=(Column("fingerprint", "fingerprint"), Column("machine", "machine")),
        rows=tuple({"fingerprint": h.fingerprint, "machine": h.describe()} for h in summary.hosts),
        empty="no hosts",
    )
    benchmarks = Table(
        name="benchmarks",
        title=f"{len(summary.benchmarks)} benchmark(s)",
        columns=(Column("suite", "suite"), Column("benchmark", "benchmark")),
        rows=tuple({"suite": s, "benchmark": b} for s, b in summary.benchmarks),
        empty="no benchmarks",
    )
    return [versions, experiments, hosts, benchmarks]


# ---------------------------------------------------------------------- duet history show


def series_tables(all_series: Sequence[Series]) -> list[Table]:
    """`duet history show`: per series, each version with its paired step and its
    absolute level."""
    out = []
    for s in all_series:
        steps = {st.after: st for st in s.steps}
        chain = {p.version: p for p in s.chain()}
        levels = {lv.version: lv for lv in s.levels}
        rows = []
        for v in s.versions:
            st, cp, lv = steps.get(v), chain.get(v), levels.get(v)
            commit = s.commits.get(v, (None, None))[0]
            z95 = 1.959963984540054
            rows.append(
                {
                    "version": v,
                    "commit": _short(commit),
                    "before": st.before if st else None,
                    "step": st.change if st else None,
                    "step_ci": (_rel(st.log_ratio - z95 * st.se), _rel(st.log_ratio + z95 * st.se))
                    if st
                    else None,
                    "runs": st.runs if st else None,
                    "level": cp.relative if cp else None,
                    "time": lv.ns if lv else None,
                    "experiments": ", ".join(
                        f"#{i}"
                        for i in sorted(
                            {*(st.experiments if st else ()), *(lv.experiments if lv else ())}
                        )
                    ),
                }
            )
        notes = []
        if s.excluded:
            notes.append(Note("note", f"excluded by a mark: {', '.join(s.excluded)}"))
        out.append(
            Table(
                name="series",
                title=str(s.key),
                columns=(
                    Column("version", "version"),
                    Column("commit", "commit"),
                    Column("before", "compared with"),
                    Column("step", "step", "signed_pct"),
                    Column("step_ci", "95% CI", "ci"),
                    Column("runs", "runs", "count"),
                    Column("level", "paired level", "signed_pct"),
                    Column("time", "median time", "duration"),
                    Column("experiments", "experiments"),
                ),
                rows=tuple(rows),
                caption="step: the direct comparison with the version before (the paired "
                "series); paired level: relative to the start of its chain; median time: "
                "the absolute series (carries the machine's drift)",
                notes=tuple(notes),
            )
        )
    return out


def priors_table(priors: Sequence[Prior], last: int) -> Table:
    """`duet history show`: what the last experiments say about the next one, per
    benchmark x method on a host (history/priors.py; docs/history.md, "Priors")."""
    rows = []
    skipped = []
    for p in priors:
        rows.append(
            {
                "series": f"{_bench(p.suite, p.benchmark)} [{p.method}, host {p.host[:8]}]",
                "experiments": p.experiments,
                "runs": p.runs,
                "sd": None if p.sd is None else math.expm1(p.sd),
                "df": p.df,
                "per_run": None if p.seconds_per_run is None else p.seconds_per_run * 1e9,
                "per_iteration": None
                if p.seconds_per_iteration is None
                else p.seconds_per_iteration * 1e9,
                "warmup": p.warmup,
                "left_out": p.left_out_share,
                "unbalanced": p.unbalanced_share,
            }
        )
        skipped += [f"#{e} ({why})" for e, why in p.skipped if not why.startswith("older")]
    notes = (Note("note", "left out by marks: " + ", ".join(skipped)),) if skipped else ()
    return Table(
        name="priors",
        title=f"priors: the last {last} experiments of each",
        columns=(
            Column("series", "series"),
            Column("experiments", "experiments", "count"),
            Column("runs", "runs", "count"),
            Column("sd", "run spread (sd)", "pct", digits=2),
            Column("df", "df", "count"),
            Column("per_run", "machine time/run", "duration"),
            Column("per_iteration", "per iteration", "duration"),
            Column("warmup", "warm-up", "count"),
            Column("left_out", "runs left out", "pct", digits=1),
            Column("unbalanced", "of them unbalanced", "pct", digits=1),
        ),
        rows=tuple(rows),
        caption="run spread: the sd of the run values pooled over the experiments, each "
        "experiment's own mean removed (df: its degrees of freedom); what `duet plan "
        "--repo` plans with",
        notes=notes,
    )


def _rel(log_ratio: float) -> float:
    return math.expm1(log_ratio)


# ---------------------------------------------------------------------- duet history changes


def changes_tables(report: ChangeReport) -> list[Table]:
    """`duet history changes`: the changes, then spikes, moves dismissed as drift, and
    environment changes."""
    changes = Table(
        name="changes",
        title=f"{len(report.changes)} change(s), {len(report.regressions)} regression(s)",
        columns=(
            Column("benchmark", "benchmark"),
            Column("method", "method"),
            Column("host", "host"),
            Column("first_bad", "first bad"),
            Column("last_good", "last good"),
            Column("change", "change", "signed_pct"),
            Column("ci", "95% CI", "ci"),
            Column("direction", "verdict", "verdict"),
            Column("source", "found in"),
            Column("final", "final"),
            Column("evidence", "evidence"),
        ),
        rows=tuple(
            {
                "benchmark": _bench(c.key.suite, c.key.benchmark),
                "method": c.key.method,
                "host": c.key.host[:8],
                "first_bad": c.first_bad,
                "last_good": c.last_good,
                "change": c.change,
                "ci": (c.ci_low, c.ci_high),
                "direction": c.direction,
                "source": c.source,
                "final": "yes" if c.final else "provisional",
                "evidence": c.evidence + (f" (marked: {c.marked})" if c.marked else ""),
            }
            for c in report.changes
        ),
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
    environment = Table(
        name="environment",
        title=f"{len(report.environment)} environment change(s) (never a regression)",
        columns=(
            Column("benchmark", "benchmark"),
            Column("method", "method"),
            Column("version", "from version"),
            Column("before", "host before"),
            Column("after", "host after"),
            Column("differences", "what differs"),
        ),
        rows=tuple(
            {
                "benchmark": _bench(e.suite, e.benchmark),
                "method": e.method,
                "version": e.version,
                "before": e.before[:8],
                "after": e.after[:8],
                "differences": "; ".join(f"{k}: {a} -> {b}" for k, a, b in e.differences),
            }
            for e in report.environment
        ),
    )
    return [changes, *(t for t in (spikes, dismissed, environment) if t.rows)]


def _moves_table(name: str, title: str, moves: Any, why: tuple[str, str], **kw: Any) -> Table:
    """Moves of a series that are not changes (spikes, drift): benchmark, method,
    version, change and the attribute ``why[0]`` that says why (titled ``why[1]``)."""
    attr, heading = why
    return Table(
        name=name,
        title=title,
        columns=(
            Column("benchmark", "benchmark"),
            Column("method", "method"),
            Column("version", "version"),
            Column("change", "change", "signed_pct"),
            Column(attr, heading),
        ),
        rows=tuple(
            {
                "benchmark": _bench(m.key.suite, m.key.benchmark),
                "method": m.key.method,
                "version": m.version,
                "change": m.change,
                attr: getattr(m, attr),
            }
            for m in moves
        ),
        **kw,
    )


def _bench(suite: str, benchmark: str) -> str:
    return benchmark if not suite else f"{suite}/{benchmark}"


# ---------------------------------------------------------------------- marks


def marks_table(marks: Sequence[Mark]) -> Table:
    """`duet history marks`: the user marks."""
    return Table(
        name="marks",
        title=f"{len(marks)} mark(s)",
        columns=(
            Column("id", "#", "count"),
            Column("benchmark", "benchmark"),
            Column("version", "version"),
            Column("kind", "kind"),
            Column("scope", "applies to"),
            Column("note", "note"),
            Column("created", "created"),
        ),
        rows=tuple(
            {
                "id": m.id,
                "benchmark": m.benchmark,
                "version": m.version,
                "kind": m.kind,
                "scope": ", ".join(
                    f"{k} {v}"
                    for k, v in (("suite", m.suite), ("method", m.method), ("host", m.host))
                    if v
                )
                or "all",
                "note": m.note,
                "created": _when(m.created_ns),
            }
            for m in marks
        ),
        empty="no marks",
    )


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
    return {
        "id": m.id,
        "benchmark": m.benchmark,
        "version": m.version,
        "kind": m.kind,
        "note": m.note,
        "suite": m.suite,
        "method": m.method,
        "host": m.host,
        "created_ns": m.created_ns,
    }


def experiment_json(e: ExperimentInfo) -> dict[str, Any]:
    return {
        "id": e.id,
        "uid": e.uid,
        "name": e.name,
        "source": e.source,
        "added_ns": e.added_ns,
        "started_ns": e.started_ns,
        "version_a": e.version_a,
        "version_b": e.version_b,
        "table_hash": e.table_hash,
        "hosts": [{"host": n, "fingerprint": fp} for n, fp in e.hosts],
    }


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
