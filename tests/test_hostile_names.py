"""Names nobody checked (from another tool's iterations table) in everything duet shows:
HTML and `<!--<script>` in the report and the dashboard (every plot drawn in Chromium, no
script run), escape sequences, carriage returns and right-to-left overrides in terminal
and Markdown output (shown as escapes, never sent raw), 10 kB names; labels holding
control characters refused."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from tests.browser import CHROMIUM, Browser
from tests.helpers import SETUP_HINT, run_duet

from duetbench.analysis.simulate import simulate
from duetbench.dashboard.model import page_name
from duetbench.history import Repository, Version
from duetbench.text import visible

ESC_NAME = "esc \x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[2K\x1b[1A gone"
NAMES = [
    "<!--<script>",
    '<img src=x onerror="window.__pwned=1">',
    "</script><script>window.__pwned=2</script>",
    ESC_NAME,
    "rtl \u202egnp.exe",
    "cr\roverwritten",
    "long " + "x" * 10_000,
]
DRAWN = """JSON.stringify((() => {
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return {
    plots: plots.length,
    drawn: Number(document.body.getAttribute('data-plots')),
    errors: document.body.getAttribute('data-plot-errors'),
    without_traces: plots.filter(p => p.querySelectorAll('.trace').length === 0).length,
    pwned: window.__pwned === undefined ? null : window.__pwned,
    scripts: document.scripts.length,
    text: document.body.innerText,
  };
})())"""


def raw_controls(text: str) -> list[str]:
    """Characters a terminal would act on: controls but the line end, format characters."""
    return sorted({repr(c) for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile names")
    df = simulate(benchmarks=NAMES, methods=("aduet",), runs=3, iterations=6, seed=3)
    df.to_parquet(d / "table.parquet")
    repo = d / "perf.sqlite"
    with Repository.open(repo) as r:
        for k in range(2):
            table = simulate(
                benchmarks=NAMES, methods=("aduet",), runs=3, iterations=6, seed=10 + k
            )
            r.add(table, {"A": Version(f"v{k}"), "B": Version(f"v{k + 1}")}, name=f"h{k}")
    return d


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"chromium is not installed: apt-get install chromium ({SETUP_HINT})")
    with Browser(tmp_path_factory.mktemp("chromium") / "profile") as b:
        yield b


def test_visible_shows_controls_and_keeps_text() -> None:
    assert visible("plain név 名前 👨\u200d👩") == "plain név 名前 👨\u200d👩"
    assert visible(ESC_NAME) == (
        "esc \\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 \\x1b[2K\\x1b[1A gone"
    )
    assert visible("rtl \u202egnp") == "rtl \\u202egnp"
    assert visible("a\tb\nc\rd") == "a b c\\x0dd"
    assert visible("a\tb\nc\rd", lines=True) == "a\tb\nc\\x0dd"
    assert visible("bytes \udcff") == "bytes \\udcff"  # an undecodable file name


def test_terminal_and_markdown_output_hold_no_raw_control_characters(hostile: Path) -> None:
    table, repo = str(hostile / "table.parquet"), str(hostile / "perf.sqlite")
    commands = [
        ("compare", table),
        ("compare", table, "--format", "markdown"),
        ("report", table, "--format", "markdown"),
        ("evaluate", table),
        ("history", "list", "--repo", repo),
        ("history", "list", "--repo", repo, "--format", "markdown"),
        ("history", "changes", "--repo", repo),
        ("history", "show", "--repo", repo, "--benchmark", ESC_NAME),
        ("history", "show", "--repo", repo, "--benchmark", ESC_NAME, "--format", "markdown"),
    ]
    for args in commands:
        r = run_duet(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert raw_controls(r.stdout + r.stderr) == [], args
    shown = run_duet("compare", table).stdout
    assert "\\x1b[31mred" in shown and "\\u202egnp.exe" in shown  # shown, not dropped
    # an error message naming a hostile name
    r = run_duet("history", "show", "--repo", repo, "--benchmark", "\x1b[2Jmissing")
    assert r.returncode == 2 and "\\x1b[2Jmissing" in r.stderr
    assert raw_controls(r.stderr) == []


def test_labels_with_control_characters_are_refused(hostile: Path, tmp_path: Path) -> None:
    table, repo = str(hostile / "table.parquet"), str(tmp_path / "r.sqlite")
    for label in ("v1\x1b[31m", "v\u202e1", "v1\x07"):
        r = run_duet("history", "add", table, "--repo", repo, "--versions", label)
        assert r.returncode == 2 and "control characters" in r.stderr, r.stderr
        assert raw_controls(r.stderr) == []
    assert not Path(repo).exists()
    shared = str(hostile / "perf.sqlite")
    r = run_duet(
        "history", "mark", "--repo", shared, "--benchmark", "<!--<script>", "--at", "v1",
        "--change", "--note", "new \x1b[8mcompiler",
    )  # fmt: skip
    assert r.returncode == 2 and "control characters" in r.stderr, r.stderr


def test_report_renders_every_plot_and_runs_no_script(
    hostile: Path, tmp_path: Path, browser: Browser
) -> None:
    out = tmp_path / "report.html"
    r = run_duet("report", str(hostile / "table.parquet"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    browser.events.clear()
    browser.open(out.resolve().as_uri())
    browser.wait_drawn()
    s = json.loads(browser.js(DRAWN))
    figures = browser.js("window.__duetFigs.length")
    assert s["plots"] == figures == s["drawn"] and figures >= 2 * len(NAMES)
    assert (s["errors"], s["without_traces"], s["pwned"]) == ("0", 0, None)
    assert browser.errors() == []
    for name in NAMES:  # every name shown as text
        assert visible(name)[:60] in s["text"], name[:60]


def test_dashboard_renders_every_plot_and_runs_no_script(
    hostile: Path, tmp_path: Path, browser: Browser
) -> None:
    site = tmp_path / "site"
    r = run_duet("dashboard", "--repo", str(hostile / "perf.sqlite"), "-o", str(site))
    assert r.returncode == 0, r.stderr
    assert raw_controls(r.stdout + r.stderr) == []
    browser.events.clear()
    browser.open((site / "index.html").as_uri())
    browser.wait_drawn()
    index = json.loads(browser.js(DRAWN))
    assert (index["errors"], index["pwned"]) == ("0", None)
    for name in NAMES:
        assert visible(name)[:60] in index["text"], name[:60]
        browser.open((site / page_name("suite0", name)).as_uri())
        browser.wait_drawn()
        s = json.loads(browser.js(DRAWN))
        assert s["plots"] >= 1 and s["plots"] == s["drawn"], name[:60]
        assert (s["errors"], s["without_traces"], s["pwned"]) == ("0", 0, None), name[:60]
        assert visible(name)[:60] in s["text"]
    assert browser.errors() == []
