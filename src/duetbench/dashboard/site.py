"""``build_dashboard``: the static site of a results repository, written atomically.

The site is built in a temporary directory beside the target and put in its place
in one step (:func:`duetbench.atomic.replace_directory`), so a reader or a static
host sees the old site or the new one. A directory that exists and was not written
by the dashboard (no ``.duet-dashboard.json`` in it) is never replaced.

Layout::

    index.html                  benchmarks, trends, latest verdicts, regressions, drift
    b/<name>-<hash>.html        one page per (suite, benchmark)
    assets/plotly.min.js        plotly.js, once for the whole site
    assets/dashboard.js|css     the filter and plot drawing; the style
    .duet-dashboard.json        marks the directory as a dashboard (what and when)
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atomic import replace_directory
from ..errors import DuetError
from ..history import DetectionSettings, Repository
from .model import PAGES_DIR, SiteData, gather
from .pages import benchmark_page, index_page

MARKER = ".duet-dashboard.json"
ASSETS = ("dashboard.js", "dashboard.css")


class DashboardError(DuetError):
    """An output directory the dashboard cannot write (exists and is not a dashboard...)."""


@dataclass(frozen=True)
class DashboardSummary:
    """What :func:`build_dashboard` wrote."""

    directory: Path
    index: Path
    benchmarks: int  # benchmark pages
    series: int
    figures: int  # Plotly figures over all benchmark pages
    versions: int
    experiments: int
    changes: int
    regressions: int
    environment_drift: int
    files: int
    bytes: int

    @property
    def empty(self) -> bool:
        return self.benchmarks == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "index": str(self.index),
            "benchmarks": self.benchmarks,
            "series": self.series,
            "figures": self.figures,
            "versions": self.versions,
            "experiments": self.experiments,
            "changes": self.changes,
            "regressions": self.regressions,
            "environment_drift": self.environment_drift,
            "files": self.files,
            "bytes": self.bytes,
        }


def _target(out: Path) -> Path:
    """The directory to replace: absolute, a symlink's target (the link itself stays)."""
    target = Path(os.path.realpath(out)) if out.is_symlink() else Path(os.path.abspath(out))
    cwd = Path(os.getcwd())
    if not target.name or cwd == target or target in cwd.parents:
        raise DashboardError(
            f"cannot write the dashboard to {out}: it is the current directory or holds it, "
            "and the site directory is replaced as a whole; give a new directory (e.g. -o site)"
        )
    return target


def _check_target(out: Path) -> None:
    out = _target(out)
    if not out.exists():
        return
    if not out.is_dir():
        raise DashboardError(f"cannot write the dashboard to {out}: it is a file; give a directory")
    if any(out.iterdir()) and not (out / MARKER).is_file():
        raise DashboardError(
            f"{out} exists and was not written by `duet dashboard` (it has no {MARKER}); "
            "give a new or empty directory, or remove this one"
        )


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def build_dashboard(
    repo: str | Path | Repository,
    out_dir: str | Path,
    *,
    title: str | None = None,
    settings: DetectionSettings | None = None,
) -> DashboardSummary:
    """Write the dashboard of ``repo`` (a Repository, or its path / URL: it must exist)
    to the directory ``out_dir`` (created, or replaced if it is an earlier dashboard).

    ``title``: the site's title (default: "duetbench dashboard: <repository name>");
    ``settings``: the change detection's settings (default: ``DetectionSettings()``,
    the same as ``duet history changes``). Raises :class:`DashboardError` (a
    DuetError) for an output directory it must not replace, and the history API's
    ``HistoryError`` for a missing or damaged repository.
    """
    out = Path(out_dir).expanduser()
    _check_target(out)
    if isinstance(repo, Repository):
        return _build(repo, out, title, settings)
    with Repository.open(repo, create=False) as opened:
        return _build(opened, out, title, settings)


def _build(
    repo: Repository, out: Path, title: str | None, settings: DetectionSettings | None
) -> DashboardSummary:
    site = gather(repo, settings)
    title = title or f"duetbench dashboard: {repo.name}"
    target = _target(out)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DashboardError(f"cannot create {target.parent}: {exc.strerror or exc}") from None
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        tmp.mkdir()
        figures = _write_site(tmp, site, title)
        files = [p for p in tmp.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        _check_target(out)  # still ours (another program may have used the name meanwhile)
        replace_directory(tmp, target)
    except OSError as exc:
        raise DashboardError(
            f"cannot write the dashboard to {out}: {exc.strerror or exc}"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    views = site.all_series()
    return DashboardSummary(
        directory=out,
        index=out / "index.html",
        benchmarks=len(site.benchmarks),
        series=len(views),
        figures=figures,
        versions=len(site.summary.versions),
        experiments=len(site.summary.experiments),
        changes=len(site.report.changes),
        regressions=len(site.report.regressions),
        environment_drift=len(site.report.environment),
        files=len(files),
        bytes=size,
    )


def _write_site(root: Path, site: SiteData, title: str) -> int:
    assets = root / "assets"
    assets.mkdir()
    package = resources.files(__package__) / "assets"
    for name in ASSETS:
        (assets / name).write_bytes((package / name).read_bytes())
    (root / "index.html").write_text(index_page(site, title), encoding="utf-8")
    figures = 0
    if site.benchmarks:
        (assets / "plotly.min.js").write_text(_plotly_js(), encoding="utf-8")
        (root / PAGES_DIR).mkdir()
        for b in site.benchmarks:
            text, n = benchmark_page(site, b, title)
            (root / b.page).write_text(text, encoding="utf-8")
            figures += n
    marker = {
        "generator": f"duetbench {__version__}",
        "repository": site.location,
        "built_ns": time.time_ns(),
        "benchmarks": len(site.benchmarks),
    }
    (root / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return figures
