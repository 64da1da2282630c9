"""What the dashboard shows, gathered once from the results repository.

Everything here is read through the history API (``Repository``, ``series``,
``detect_changes``) and arranged per benchmark page and per series; the renderers
(:mod:`.pages`, :mod:`.figures`) only format it.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..history import (
    Change,
    ChangeReport,
    DetectionSettings,
    Dismissed,
    EnvironmentChange,
    ExperimentInfo,
    HostInfo,
    Mark,
    Repository,
    Series,
    SeriesKey,
    Spike,
    StoredVersion,
    Summary,
    detect_changes,
    series,
)
from ..history.series import order_versions

#: where the benchmark pages go, relative to the site root
PAGES_DIR = "b"


@dataclass(frozen=True)
class ReportLink:
    """Where an experiment's ``duet report`` is: ``href`` when there is one to link to,
    else ``hint`` says how to make it (or why there is none)."""

    href: str | None
    hint: str


@dataclass(frozen=True)
class ExperimentView:
    info: ExperimentInfo
    when_ns: int  # when it ran (started), else when it was added
    report: ReportLink


@dataclass(frozen=True)
class Latest:
    """The newest comparison of a series (A/A when both sides ran one version)."""

    version_a: str
    version_b: str
    change: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str
    experiment_id: int


@dataclass(frozen=True)
class SeriesView:
    series: Series
    host_names: tuple[str, ...]
    changes: tuple[Change, ...]
    spikes: tuple[Spike, ...]
    dismissed: tuple[Dismissed, ...]
    environment: tuple[EnvironmentChange, ...]  # moves onto or off this machine
    marks: tuple[Mark, ...]
    latest: Latest | None
    #: (version, "arrived" | "left"): the first version measured on this machine after a
    #: move onto it, or the version at which the benchmark moved away
    moves: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> SeriesKey:
        return self.series.key

    @property
    def host_label(self) -> str:
        names = ", ".join(self.host_names) or "host"
        return f"{names} ({self.key.host[:8]})"


@dataclass(frozen=True)
class BenchmarkView:
    suite: str
    benchmark: str
    page: str  # path of its page relative to the site root
    series: tuple[SeriesView, ...]
    experiments: tuple[int, ...]

    @property
    def title(self) -> str:
        return (
            self.benchmark if self.suite in ("", "default") else f"{self.suite} / {self.benchmark}"
        )


@dataclass(frozen=True)
class SiteData:
    location: str
    summary: Summary
    benchmarks: tuple[BenchmarkView, ...]
    experiments: Mapping[int, ExperimentView]
    versions: Mapping[str, StoredVersion]
    version_order: Mapping[str, int]
    version_dates: Mapping[str, tuple[int, bool]]  # label -> (ns, is the commit date)
    hosts: Mapping[str, HostInfo]  # fingerprint -> host
    host_names: Mapping[str, tuple[str, ...]]  # fingerprint -> host names seen
    report: ChangeReport

    @property
    def empty(self) -> bool:
        return not self.benchmarks

    def all_series(self) -> list[SeriesView]:
        return [s for b in self.benchmarks for s in b.series]


def page_name(suite: str, benchmark: str) -> str:
    """A file name safe on every file system and URL for any benchmark name: a readable
    slug plus a hash of the exact (suite, benchmark)."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"{suite}-{benchmark}".lower()).strip("-")[:48].strip("-")
    digest = hashlib.sha256(f"{suite}\0{benchmark}".encode()).hexdigest()[:10]
    return f"{PAGES_DIR}/{slug or 'benchmark'}-{digest}.html"


def report_link(source: str | None) -> ReportLink:
    """The experiment's ``duet report``: ``<source>/report.html`` when it exists."""
    if not source or source.startswith("<"):
        return ReportLink(None, "added from an iterations table: no results directory")
    if re.match(r"^https?://", source):
        return ReportLink(source.rstrip("/") + "/report.html", "")
    path = Path(source)
    report = path / "report.html"
    if report.is_file():
        return ReportLink(report.resolve().as_uri(), "")
    if path.is_dir():
        q = shlex.quote(str(path))
        return ReportLink(None, f"no report yet: duet report {q} -o {shlex.quote(str(report))}")
    if path.is_file():
        return ReportLink(
            None, f"no report yet: duet report {shlex.quote(str(path))} -o report.html"
        )
    return ReportLink(None, f"{source} is not on this machine")


def _latest(rows: pd.DataFrame, order: Mapping[str, int]) -> Latest | None:
    if rows.empty:
        return None
    best = max(
        rows.itertuples(index=False),
        key=lambda r: (
            order.get(r.version_b, -1),
            r.version_a != r.version_b,
            int(r.experiment_id),
        ),
    )
    return Latest(
        str(best.version_a),
        str(best.version_b),
        _num(best.change),
        _num(best.ci_low),
        _num(best.ci_high),
        str(best.verdict),
        int(best.experiment_id),
    )


def _moves(
    env: tuple[EnvironmentChange, ...], host: str, rows: pd.DataFrame | None
) -> tuple[tuple[str, str], ...]:
    """Where a series starts on this machine after a move (the first experiment there
    measured its A side too) or stops because the benchmark moved away."""
    out = []
    for e in env:
        if e.after == host and rows is not None:
            first = rows[rows["version_b"] == e.version].sort_values("experiment_id")
            out.append((str(first["version_a"].iloc[0]) if len(first) else e.version, "arrived"))
        elif e.before == host:
            out.append((e.version, "left"))
    return tuple(out)


def _num(x: object) -> float | None:
    try:
        f = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


def gather(repo: Repository, settings: DetectionSettings | None = None) -> SiteData:
    """Read everything the dashboard shows from ``repo``."""
    summary = repo.summary()
    known = {v.label: v for v in summary.versions}
    order = {v: i for i, v in enumerate(order_versions(known, known))}
    report = detect_changes(repo, settings=settings)
    all_series = series(repo)
    results = repo.results()
    marks = repo.marks()
    host_names: dict[str, set[str]] = {}
    for e in summary.experiments:
        for name, fp in e.hosts:
            host_names.setdefault(fp, set()).add(name)
    names = {fp: tuple(sorted(n)) for fp, n in host_names.items()}
    experiments = {
        e.id: ExperimentView(e, int(e.started_ns or e.added_ns), report_link(e.source))
        for e in summary.experiments
    }
    dates: dict[str, tuple[int, bool]] = {}
    for e in experiments.values():
        for v in (e.info.version_a, e.info.version_b):
            if v not in dates or e.when_ns < dates[v][0]:
                dates[v] = (e.when_ns, False)
    for v in known.values():
        if v.commit_ns is not None:
            dates[v.label] = (int(v.commit_ns), True)

    by_key: dict[SeriesKey, pd.DataFrame] = {}
    if not results.empty:
        for k, g in results.groupby(["suite", "benchmark", "host", "method"], sort=False):
            by_key[SeriesKey(*map(str, k))] = g
    views: dict[tuple[str, str], list[SeriesView]] = {}
    for s in all_series:
        k = s.key
        env = tuple(
            e
            for e in report.environment
            if (e.suite, e.benchmark, e.method) == (k.suite, k.benchmark, k.method)
            and k.host in (e.before, e.after)
        )
        views.setdefault((k.suite, k.benchmark), []).append(
            SeriesView(
                series=s,
                host_names=names.get(k.host, ()),
                changes=tuple(c for c in report.changes if c.key == k),
                spikes=tuple(x for x in report.spikes if x.key == k),
                dismissed=tuple(x for x in report.dismissed if x.key == k),
                environment=env,
                moves=_moves(env, k.host, by_key.get(k)),
                marks=tuple(
                    m
                    for m in marks
                    if m.applies_to(k.suite, k.benchmark, k.method, k.host)
                    and (m.version in s.versions or m.version in s.excluded)
                ),
                latest=_latest(by_key.get(k, pd.DataFrame()), order),
            )
        )
    exps_of: dict[tuple[str, str], set[int]] = {}
    for r in results.itertuples(index=False):
        exps_of.setdefault((str(r.suite), str(r.benchmark)), set()).add(int(r.experiment_id))
    benchmarks = tuple(
        BenchmarkView(
            suite,
            bench,
            page_name(suite, bench),
            tuple(sorted(v, key=lambda x: (x.key.method, x.host_label, x.key.host))),
            tuple(sorted(exps_of.get((suite, bench), ()))),
        )
        for (suite, bench), v in sorted(views.items())
    )
    return SiteData(
        location=repo.location,
        summary=summary,
        benchmarks=benchmarks,
        experiments=experiments,
        versions=known,
        version_order=order,
        version_dates=dates,
        hosts={h.fingerprint: h for h in summary.hosts},
        host_names=names,
        report=report,
    )
