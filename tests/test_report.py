"""`duet report`: the self-contained HTML file in headless Chromium, and the Markdown variant.

The browser is driven through the DevTools protocol over a pipe
(``--remote-debugging-pipe``: commands on fd 3, replies on fd 4, NUL-terminated JSON),
so one launch gives JavaScript exceptions and console errors as events, every network
request, the DOM after the plots are drawn, real render timings and a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from tests.browser import CHROMIUM, Browser
from tests.helpers import HANG_S, ROOT, SETUP_HINT, duet_in_process

from duetbench.analysis.evaluate import evaluate
from duetbench.analysis.simulate import simulate
from duetbench.dataset import Dataset
from duetbench.report.html import ReportOptions, render_html, render_markdown
from duetbench.verdicts import verdicts

ARTIFACTS = ROOT / "test-artifacts"
DOM_SUMMARY = """JSON.stringify((() => {
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return {
    figs: window.__duetFigs ? window.__duetFigs.length : -1,
    plots: plots.length,
    main_svgs: document.querySelectorAll('.js-plotly-plot .main-svg').length,
    without_svg: plots.filter(p => !p.querySelector('.main-svg')).length,
    without_traces: plots.filter(p => p.querySelectorAll('.trace').length === 0).map(p => p.id),
    titled: plots.filter(p => (p.querySelector('.gtitle') || {}).textContent).length,
    drawn: document.body.getAttribute('data-plots'),
    plot_errors: document.body.getAttribute('data-plot-errors'),
    rendered_ms: Number(document.body.getAttribute('data-rendered-ms')),
    sections: Array.from(document.querySelectorAll('main > section')).map(s => s.id),
    first_table: (document.querySelector('main section table') || {}).className,
  };
})())"""


def load_in_chromium(html: Path, tmp: Path, shot: str) -> dict[str, Any]:
    """Open ``html``; wait until every plot is drawn; return the DOM summary and timings."""
    browser = Browser(tmp / f"profile-{shot}", size=(1400, 3000))
    try:
        t0 = time.monotonic()
        browser.open(html.resolve().as_uri())
        deadline = time.monotonic() + HANG_S
        while True:
            if browser.js("document.body && document.body.getAttribute('data-rendered-ms')"):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"plots never finished drawing; errors: {browser.errors()}")
            time.sleep(0.05)
        wall = time.monotonic() - t0
        summary = json.loads(browser.js(DOM_SUMMARY))
        summary["wall_s"] = wall
        m = browser.metrics()
        # CPU time of the page's main thread: what the render costs on an idle machine
        summary["main_thread_cpu_s"] = m.get("ThreadTime")
        summary["script_s"] = m.get("ScriptDuration")
        ARTIFACTS.mkdir(exist_ok=True)
        png = browser.send("Page.captureScreenshot", {"format": "png"})["data"]
        (ARTIFACTS / f"{shot}.png").write_bytes(base64.b64decode(png))
        height = browser.js("document.documentElement.scrollHeight")
        full = browser.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": 1400, "height": height, "scale": 1},
            },
        )["data"]
        (ARTIFACTS / f"{shot}-full.png").write_bytes(base64.b64decode(full))
        summary["errors"] = browser.errors()
        summary["requests"] = browser.requests()
        return summary
    finally:
        browser.close()


def check_rendered(s: dict[str, Any]) -> None:
    assert s["errors"] == [], s["errors"]
    remote = [u for u in s["requests"] if not u.startswith(("file:", "data:", "about:", "blob:"))]
    assert remote == [], f"the report fetched {remote}"
    assert s["figs"] > 0 and s["plots"] == s["figs"] and s["drawn"] == str(s["figs"])
    assert s["plot_errors"] == "0"
    assert s["without_svg"] == 0 and s["main_svgs"] >= s["plots"]
    assert s["without_traces"] == [], s["without_traces"]
    assert s["titled"] == s["plots"]  # every plot has a title


def test_quickstart_report_is_offline_small_and_renders(quickstart_results, tmp_path) -> None:
    out = tmp_path / "report.html"
    t = time.monotonic()
    r = duet_in_process("report", str(quickstart_results), "-o", str(out))
    build_s = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    size = out.stat().st_size
    assert size < 10e6
    # self-contained: Plotly inline, nothing loaded from elsewhere
    assert "Plotly.newPlot" in text and "plotly.js v" in text
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|@import|url\(\s*['\"]?https?:", text)
    s = load_in_chromium(out, tmp_path, "report-quickstart")
    check_rendered(s)
    assert s["sections"][0] == "verdicts" and s["first_table"] == "verdicts"
    for sec in (
        "intervals",
        "timelines",
        "distributions",
        "mds",
        "overlap",
        "speedup",
        "accuracy",
        "hosts",
    ):
        assert sec in s["sections"]
    timing = {
        "report_bytes": size,
        "build_s": round(build_s, 2),
        "render_ms_in_page": s["rendered_ms"],
        "navigate_to_drawn_s": round(s["wall_s"], 2),
        "main_thread_cpu_s": round(s["main_thread_cpu_s"] or -1, 2),
        "script_s": round(s["script_s"] or -1, 2),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "plots": s["plots"],
    }
    (ARTIFACTS / "report-timing.json").write_text(json.dumps(timing, indent=2) + "\n")
    # how fast it draws is reported, not asserted (docs/performance.md has the figures);
    # load_in_chromium fails if the plots never finish drawing
    print(f"\nHTML report of the quickstart: {timing}")


def test_report_of_a_multi_host_table_renders(tmp_path) -> None:
    """Another shape: 11 benchmarks on 2 hosts, no process lifetimes, no config warm-up."""
    df = simulate(benchmarks=11, hosts=2, runs=3, iterations=8, seed=4).drop(
        columns=["proc_start_ns", "proc_end_ns"]
    )
    loaded = verdicts(Dataset(df, "simulated", "sim", 0))
    ev = evaluate(df, aa=True, slowdowns=[0.0, 0.05, 0.1], shuffles=2, verdicts=loaded.rows)
    html = render_html(ev, loaded, ReportOptions(timeline_runs=1, timeline_iterations=5))
    out = tmp_path / "multi.html"
    out.write_text(html, encoding="utf-8")
    s = load_in_chromium(out, tmp_path, "report-multi-host")
    check_rendered(s)
    # one timeline and one distribution per benchmark and host
    assert html.count(": iterations of A and B over time") == 22
    assert "bench000 @host1" in html


def test_markdown_report(quickstart_results) -> None:
    r = duet_in_process("report", str(quickstart_results), "--format", "markdown")
    assert r.returncode == 0, r.stderr
    md = r.stdout
    assert md.startswith("## duetbench report: quickstart")
    # a `time` column before the verdict where rows compare CPU time (beside other work)
    header = "| benchmark | method | mean A | mean B | change | CI | p (rank) | runs | pairs |"
    assert re.search(re.escape(header) + r"( time \|)? verdict \|", md), md
    for part in (
        "### Runtime speedup over seqn",
        "### Relative CI width and verdict of every test",
        "### A/A: benchmarks judged same (arith-aa)",
        "### Minimal detectable slowdown",
        "Relative overlap time of aduet runs",
        "Shuffle check",
    ):
        assert part in md
    assert md.count("| arith-aa | seqn |") >= 2 and "<script" not in md


def test_markdown_of_a_table_without_duets() -> None:
    df = simulate(benchmarks=2, methods=("seqn",), runs=4, iterations=5, seed=2)
    ev = evaluate(df, slowdowns=[0.0, 0.1], shuffles=2)
    md = render_markdown(ev, verdicts(Dataset(df, "t.csv", None, 0)))
    assert "Runtime speedup" not in md and "overlap" not in md
    assert "| bench000 | seqn |" in md


@pytest.fixture(autouse=True, scope="module")
def _chromium_present() -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"chromium is not installed: apt-get install chromium ({SETUP_HINT})")
