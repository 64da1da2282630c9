"""How fast the dashboard of a large history opens (docs/performance.md, "Dashboard").

Builds (or reuses, with ``--repo``) a results repository of ``--versions`` versions and
``--benchmarks`` benchmarks: one simulated aduet experiment per pair of adjacent
versions, every benchmark in each, seeded steps of 3-10 % in a third of the benchmarks.
Then ``build_dashboard`` writes the site, and headless Chromium (tests/browser.py)
opens the index ``--repeat`` times, each in a new tab, from file://. For each load it
prints the time from the start of navigation until every trend line is drawn (the
page's ``data-rendered-ms``: ``performance.now()`` when the page's script finished),
the Navigation Timing ``loadEventEnd`` and the wall time seen by the driver; then the
same for one benchmark page (Plotly, 200 versions). Printed, never asserted: the
goal is an index drawn in under 3 s.

    python3 benchmarks/dashboard_scale.py                              # 200 x 50, builds the repository
    python3 benchmarks/dashboard_scale.py --repo /tmp/scale.sqlite     # keep it, reuse it next time
    python3 benchmarks/dashboard_scale.py --versions 40 --benchmarks 10 --repeat 2   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.browser import Browser  # noqa: E402

from duetbench.analysis.simulate import simulate  # noqa: E402
from duetbench.dashboard import build_dashboard  # noqa: E402
from duetbench.history import Repository, Version  # noqa: E402

HOST = {
    "host": "bench-1",
    "cpu_model": "Scale CPU",
    "cores": 2,
    "cpus_available": [0, 1],
    "memory_bytes": 8 << 30,
    "kernel": "6.1.0",
    "machine": "x86_64",
    "virtualization": "none",
    "python": "3.11.7",
}
DAY_NS = 86_400 * 10**9


def levels(versions: int, benchmarks: int, seed: int) -> np.ndarray:
    """Relative level per (benchmark, version): steps of 3-10 % in a third of them."""
    rng = np.random.default_rng(seed)
    out = np.ones((benchmarks, versions))
    for b in range(0, benchmarks, 3):
        for at in rng.choice(np.arange(5, versions - 5), size=2, replace=False):
            out[b, at:] *= 1 + rng.choice([-1, 1]) * rng.uniform(0.03, 0.10)
    return out


def experiment(k: int, lv: np.ndarray, names: list[str], base: np.ndarray) -> pd.DataFrame:
    """Versions k-1 (A) and k (B) of every benchmark, one aduet experiment."""
    ratio = lv[:, k] / lv[:, k - 1]
    parts = []
    same = np.isclose(ratio, 1.0)
    groups = [(np.flatnonzero(same), 0.0)] + [
        (np.array([b]), ratio[b] - 1) for b in np.flatnonzero(~same)
    ]
    for j, (idx, slowdown) in enumerate(groups):
        if len(idx) == 0:
            continue
        parts.append(
            simulate(
                benchmarks=[names[i] for i in idx],
                hosts=[HOST["host"]],
                methods=("aduet",),
                runs=5,
                iterations=6,
                mean_ns=base[idx] * lv[idx, k - 1],
                run_sd=0.004,
                iter_sd=0.01,
                slowdown=float(slowdown),
                seed=k * 1000 + j,
                experiment=f"scale-{k}",
            )
        )
    return pd.concat(parts, ignore_index=True)


def build_repository(path: Path, versions: int, benchmarks: int) -> None:
    lv = levels(versions, benchmarks, seed=7)
    names = [f"bench-{i:02d}" for i in range(benchmarks)]
    base = np.geomspace(2e6, 200e6, benchmarks)
    labels = [
        Version(f"v{i:04d}", f"{i:08x}" + "ab" * 16, 1_700_000_000 * 10**9 + i * DAY_NS)
        for i in range(versions)
    ]
    t = time.monotonic()
    with Repository.open(path) as repo:
        for k in range(1, versions):
            repo.add(
                experiment(k, lv, names, base),
                {"A": labels[k - 1], "B": labels[k]},
                host_records={HOST["host"]: HOST},
            )
            if k % 20 == 0:
                print(f"  added {k}/{versions - 1} experiments ({time.monotonic() - t:.0f} s)")


def load(browser: Browser, url: str) -> dict[str, float]:
    t = time.monotonic()
    browser.open(url)
    drawn = browser.wait_drawn()
    wall = time.monotonic() - t
    nav = browser.js("JSON.stringify(performance.getEntriesByType('navigation')[0].toJSON())")
    nav = json.loads(nav)
    return {
        "drawn_ms": drawn,
        "load_event_ms": round(nav["loadEventEnd"]),
        "dom_content_loaded_ms": round(nav["domContentLoadedEventEnd"]),
        "wall_s": round(wall, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", type=int, default=200)
    ap.add_argument("--benchmarks", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--repo", type=Path, help="repository file to build or reuse")
    ap.add_argument("--out", type=Path, help="site directory (default: a temporary one)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dashboard-scale-"))
    repo = args.repo or tmp / "scale.sqlite"
    if not repo.exists():
        print(f"building {repo}: {args.versions} versions x {args.benchmarks} benchmarks")
        build_repository(repo, args.versions, args.benchmarks)
    out = args.out or tmp / "site"
    t = time.monotonic()
    summary = build_dashboard(repo, out)
    build_s = time.monotonic() - t
    index = out / "index.html"
    print(
        f"site {out}: {summary.benchmarks} benchmark pages, {summary.series} series, "
        f"{summary.versions} versions, {summary.changes} changes found; built in {build_s:.1f} s; "
        f"index.html {index.stat().st_size / 1e3:.0f} kB, site {summary.bytes / 1e6:.1f} MB"
    )
    first_page = sorted(out.glob("b/*.html"))[0]
    results: dict[str, list[dict[str, float]]] = {"index": [], "benchmark page": []}
    with Browser(tmp / "profile") as browser:
        for name, page in (("index", index), ("benchmark page", first_page)):
            for _ in range(args.repeat):
                r = load(browser, page.resolve().as_uri())
                errors = browser.errors()
                if errors:
                    raise SystemExit(f"{name}: errors in the page: {errors}")
                results[name].append(r)
                print(f"  {name}: {r}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, rs in results.items():
        med = statistics.median(r["drawn_ms"] for r in rs)
        print(
            f"{name}: navigation start -> drawn median {med / 1e3:.2f} s "
            f"(range {min(r['drawn_ms'] for r in rs) / 1e3:.2f}-{max(r['drawn_ms'] for r in rs) / 1e3:.2f} s); "
            + ("goal < 3 s" if name == "index" else "")
        )


if __name__ == "__main__":
    main()
