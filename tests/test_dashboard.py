"""`duet dashboard` (duetbench.dashboard): the static site of a results repository.

A repository is built through the history API from seeded simulated experiments (and
one real `duet run` with its `duet report`), the site is rendered, and headless
Chromium (tests/browser.py) opens it from file://: no console errors, no network,
plots drawn, navigation index -> benchmark page -> back, the host/method filter,
hover texts, hostile names shown as text. Screenshots are kept in
``$DUET_TEST_ARTIFACTS/dashboard`` (default ``test-artifacts/dashboard`` in the
repository); the test prints where.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from tests.browser import CHROMIUM, Browser
from tests.helpers import ROOT, run_duet
from tests.history_helpers import HOST, tiny_config

from duetbench.analysis.simulate import simulate
from duetbench.atomic import replace_directory
from duetbench.dashboard import DashboardError, build_dashboard
from duetbench.dashboard import site as site_module
from duetbench.dashboard.model import page_name, report_link
from duetbench.history import HistoryError, Repository, Version
from duetbench.options import CompareOptions

ARTIFACTS = Path(os.environ.get("DUET_TEST_ARTIFACTS") or ROOT / "test-artifacts") / "dashboard"
HOSTILE = (
    '<img src=x onerror="window.__pwned=1">\'"&amp; </script><script>window.__pwned=2</script>'
    " %{x} ${x}"
)
HOSTILE_VERSION = '<i>v9</i>"&'
HOSTILE_NOTE = '<img src=x onerror="window.__pwned=3"> new compiler'
HOST2 = {**HOST, "host": "ci-2", "cpu_model": "Test CPU 7000"}
HOST3 = {**HOST, "host": "ci-3", "cpu_model": "Test CPU 9900", "kernel": "6.8.0"}
T0 = 1_700_000_000 * 10**9  # commit dates: one day apart
VERSIONS = [
    Version(f"v{i:03d}", f"{i:02d}" + "c0ffee" * 6 + f"{i:02d}", T0 + i * 86_400 * 10**9)
    for i in range(12)
]


def _table(
    index: int,
    benchmarks: list[str],
    hosts: list[str],
    methods: tuple[str, ...],
    level: float,
    slowdown: float,
):
    return simulate(
        benchmarks=benchmarks,
        hosts=hosts,
        methods=methods,
        runs=5,
        iterations=6,
        mean_ns=20e6 * level,
        run_sd=0.004,
        iter_sd=0.01,
        slowdown=slowdown,
        seed=500 + index,
        experiment=f"dash-{index}",
    )


def _add(repo: Repository, df, a: Version, b: Version, records: dict) -> None:
    repo.add(df, {"A": a, "B": b}, host_records=records)


def build_repository(path: Path, tiny: Path | None) -> None:
    """parse: 12 versions on two hosts x two methods, +6 % at v006; render: moves from
    ci-1 to another machine at v005; the hostile benchmark: 3 versions; solo: one version
    with a hostile label; marks with a hostile note; the tiny real experiment."""
    with Repository.open(path) as repo:
        level = 1.0
        for k in range(1, 12):
            step = 0.06 if k == 6 else 0.0
            df = _table(k, ["parse"], ["ci-1", "ci-2"], ("aduet", "seqn"), level, step)
            _add(repo, df, VERSIONS[k - 1], VERSIONS[k], {"ci-1": HOST, "ci-2": HOST2})
            level *= 1 + step
        for k in range(1, 8):
            host, rec = ("ci-1", HOST) if k < 5 else ("ci-3", HOST3)
            df = _table(100 + k, ["render"], [host], ("aduet",), 1.5, 0.0)
            _add(repo, df, VERSIONS[k - 1], VERSIONS[k], {host: rec})
        for k in range(1, 3):
            df = _table(200 + k, [HOSTILE], ["ci-1"], ("aduet",), 0.5, 0.0)
            _add(repo, df, VERSIONS[k - 1], VERSIONS[k], {"ci-1": HOST})
        solo = Version(HOSTILE_VERSION)
        _add(
            repo, _table(300, ["solo"], ["ci-1"], ("aduet",), 2.0, 0.0), solo, solo, {"ci-1": HOST}
        )
        repo.mark("parse", "v006", "change", HOSTILE_NOTE)
        repo.mark("render", "v002", "exclude", "built <without> -O2")
        if tiny is not None:
            # every run (CPU-bound sides on a busy machine may be unbalanced)
            keep = CompareOptions(keep_unbalanced=True)
            repo.add(tiny, {"A": VERSIONS[10], "B": VERSIONS[11]}, options=keep)


@pytest.fixture(scope="module")
def tiny_with_report(tmp_path_factory) -> Path:
    """A real `duet run` experiment and its `duet report`."""
    d = tmp_path_factory.mktemp("tiny run")  # a space, as users have them
    r = run_duet("run", str(tiny_config(d)), "-o", str(d / "res"), "--no-compare")
    assert r.returncode == 0, r.stderr
    res = d / "res" / "tiny"
    r = run_duet("report", str(res), "-o", str(res / "report.html"), "--keep-unbalanced")
    assert r.returncode == 0, r.stderr
    return res


@pytest.fixture(scope="module")
def site(tmp_path_factory, tiny_with_report: Path) -> Path:
    d = tmp_path_factory.mktemp("dash")
    build_repository(d / "perf.sqlite", tiny_with_report)
    summary = build_dashboard(d / "perf.sqlite", d / "site")
    assert summary.benchmarks == 6 and summary.index == d / "site" / "index.html"
    assert summary.regressions >= 1 and summary.environment_drift == 1
    return d / "site"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    assert Path(CHROMIUM).exists(), "the dashboard tests need chromium (CI installs it)"
    with Browser(tmp_path_factory.mktemp("chromium") / "profile") as b:
        yield b


def _checked(browser: Browser, site: Path) -> None:
    errors = browser.errors()
    assert errors == [], errors
    foreign = [
        u
        for u in browser.requests()
        if not u.startswith(("data:", "about:", "blob:"))
        and not (
            u.startswith("file:") and Path(_path_of(u)).resolve().is_relative_to(site.resolve())
        )
    ]
    assert foreign == [], f"the site fetched {foreign}"


def _path_of(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


def _shot(browser: Browser, name: str) -> None:
    path = browser.screenshot(ARTIFACTS / f"{name}.png")
    print(f"\nscreenshot: {path}")


PLOTS = """JSON.stringify((() => {
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return {
    plots: plots.length,
    blocks: document.querySelectorAll('section.series-block').length,
    without_svg: plots.filter(p => !p.querySelector('.main-svg')).length,
    without_traces: plots.filter(p => p.querySelectorAll('.trace').length === 0).length,
    drawn: document.body.getAttribute('data-plots'),
    errors: document.body.getAttribute('data-plot-errors'),
  };
})())"""

ROWS = """JSON.stringify(Array.from(document.querySelectorAll('tr.row')).map(r => ({
  name: r.dataset.name, method: r.dataset.method, host: r.dataset.host, hidden: r.hidden,
  spark: r.querySelectorAll('svg.spark polyline, svg.spark circle').length,
})))"""


def _select(browser: Browser, which: str, value: str) -> None:
    browser.js(
        f"(() => {{ const s = document.querySelector('select[data-filter={which}]'); "
        f"s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()"
    )


def test_site_layout_plotly_once_and_offline(site: Path) -> None:
    plotly = list(site.rglob("plotly*.js"))
    assert plotly == [site / "assets" / "plotly.min.js"]
    pages = sorted(site.glob("b/*.html"))
    assert len(pages) == 6
    for p in [site / "index.html", *pages]:
        text = p.read_text(encoding="utf-8")
        assert p.stat().st_size < 500_000, p  # plotly.js is not inlined
        assert "https://" not in re.sub(r'href="https?://[^"]*report\.html"', "", text)
        scripts = re.findall(r'<script[^>]*src="([^"]+)"', text)
        want = (
            ["assets/dashboard.js"]
            if p.parent == site
            else [
                "../assets/plotly.min.js",
                "../assets/dashboard.js",
            ]
        )
        assert scripts == want, (p, scripts)
    assert all(re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{10}\.html", p.name) for p in pages)
    marker = json.loads((site / ".duet-dashboard.json").read_text())
    assert marker["benchmarks"] == 6


def test_index_benchmark_page_and_back_in_chromium(site: Path, browser: Browser) -> None:
    browser.events.clear()
    browser.open((site / "index.html").as_uri())
    assert browser.wait_drawn("index.html") > 0
    rows = json.loads(browser.js(ROWS))
    # parse: 2 hosts x 2 methods; render: 2 machines; hostile; solo; tiny: same + ab
    assert len(rows) == 10
    assert all(r["spark"] >= 1 for r in rows), rows
    assert browser.js("document.body.getAttribute('data-plots')") == str(len(rows))
    text = browser.js("document.body.innerText")
    assert "Environment drift" in text and "render" in text
    _shot(browser, "index")

    # the filter hides rows: one method, then one host
    _select(browser, "method", "seqn")
    rows = json.loads(browser.js(ROWS))
    assert {r["method"] for r in rows if not r["hidden"]} == {"seqn"}
    assert sum(not r["hidden"] for r in rows) == 2
    fp2 = next(r["host"] for r in rows if not r["hidden"] and r["host"] != rows[0]["host"])
    _select(browser, "host", fp2)
    rows = json.loads(browser.js(ROWS))
    assert [(r["method"], r["host"]) for r in rows if not r["hidden"]] == [("seqn", fp2)]
    assert "1 of 10 shown" in browser.js("document.querySelector('.shown').textContent")
    _shot(browser, "index-filtered")
    _select(browser, "host", "")

    # to the page of parse (the filter travels along), then back
    parse = page_name("suite0", "parse")
    browser.navigating(
        "Array.from(document.querySelectorAll('tr.row')).find(r => !r.hidden && "
        "r.dataset.name === 'suite0 / parse').querySelector('a').click()"
    )
    browser.wait_drawn(parse)
    s = json.loads(browser.js(PLOTS))
    assert s["plots"] == s["blocks"] == 4 and s["drawn"] == "4" and s["errors"] == "0"
    assert s["without_svg"] == 0 and s["without_traces"] == 0
    visible = browser.js(
        "Array.from(document.querySelectorAll('section.series-block')).filter(b => !b.hidden)"
        ".map(b => b.dataset.method)"
    )
    assert visible == ["seqn", "seqn"]  # #method=seqn came along
    # hover shows version, commit, date and host
    hover = browser.js(
        """(() => {
      const gd = document.querySelector('section.series-block:not([hidden]) .js-plotly-plot');
      const i = gd.data.findIndex(t => (t.name || '').startsWith('paired series'));
      Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: 6}]);
      return gd.querySelector('.hoverlayer').textContent;
    })()"""
    )
    v = VERSIONS[6]
    assert "v006" in hover and v.commit[:12] in hover, hover
    assert "committed 2023-11-20" in hover and "ci-" in hover, hover
    page = browser.js("document.body.innerText")
    assert "v006" in page and "+6." in page  # the detected change, with its size
    assert HOSTILE_NOTE in page  # the mark's note, as text
    assert (
        browser.js("window.__pwned === undefined && document.querySelectorAll('img').length") == 0
    )
    _shot(browser, "benchmark-parse")

    browser.back()
    browser.wait_drawn("index.html")
    assert browser.js("document.querySelector('select[data-filter=method]').value") == "seqn"
    rows = json.loads(browser.js(ROWS))
    assert sum(not r["hidden"] for r in rows) == 2
    _checked(browser, site)


def test_environment_drift_marks_and_report_links(
    site: Path, browser: Browser, tiny_with_report: Path
) -> None:
    browser.events.clear()
    browser.open((site / page_name("suite0", "render")).as_uri())
    browser.wait_drawn()
    s = json.loads(browser.js(PLOTS))
    assert s["plots"] == 2 and s["without_traces"] == 0
    text = browser.js("document.body.innerText")
    assert "Environment drift (not a regression)" in text
    assert "cpu_model Test CPU 9000 -> Test CPU 9900" in text
    assert "v002 excluded by a user" in text and "built <without> -O2" in text
    # drift is drawn apart from changes: purple lines, and no change was reported for it
    assert browser.js("document.querySelectorAll('.drift-box').length") == 1
    assert "No change detected in this series." in text
    _shot(browser, "benchmark-render-drift")

    browser.open((site / page_name("command", "ab")).as_uri())
    browser.wait_drawn()
    href = browser.js("document.querySelector('#experiments a').href")
    assert href == (tiny_with_report / "report.html").as_uri()
    assert "added from an iterations table" not in browser.js("document.body.innerText")
    browser.navigating("document.querySelector('#experiments a').click()")
    title = browser.wait_for(
        "location.href.endsWith('report.html') && document.readyState === 'complete' && "
        "document.title",
        "opening the experiment's report",
    )
    assert "duetbench report" in title
    assert browser.errors() == []
    browser.events.clear()  # the report is outside the site: its requests are its own
    browser.open((site / page_name("suite0", "parse")).as_uri())
    browser.wait_drawn()
    assert "added from an iterations table" in browser.js("document.body.innerText")
    _checked(browser, site)


def test_hostile_names_are_shown_as_text(site: Path, browser: Browser) -> None:
    browser.events.clear()
    browser.open((site / "index.html").as_uri())
    browser.wait_drawn()
    names = browser.js("Array.from(document.querySelectorAll('td.name a')).map(a => a.textContent)")
    assert f"suite0 / {HOSTILE}" in names
    _select(browser, "method", "")
    browser.js(
        "(() => { const i = document.querySelector('input[data-filter=q]'); "
        f"i.value = {json.dumps(HOSTILE[:12])}; i.dispatchEvent(new Event('input')); }})()"
    )
    rows = json.loads(browser.js(ROWS))
    assert [r["name"] for r in rows if not r["hidden"]] == [f"suite0 / {HOSTILE}".lower()]
    browser.navigating(
        "Array.from(document.querySelectorAll('tr.row')).find(r => !r.hidden)"
        ".querySelector('a').click()"
    )
    browser.wait_drawn(page_name("suite0", HOSTILE))
    assert browser.js("document.querySelector('h1').textContent") == f"suite0 / {HOSTILE}"
    assert browser.js("document.title").startswith(f"suite0 / {HOSTILE}")
    assert browser.js("window.__pwned === undefined") is True
    assert browser.js("document.querySelectorAll('img, i').length") == 0
    assert json.loads(browser.js(PLOTS))["without_traces"] == 0
    _shot(browser, "benchmark-hostile")

    # one version, with a hostile label: a point, no steps, the label as text
    browser.open((site / page_name("suite0", "solo")).as_uri())
    browser.wait_drawn()
    text = browser.js("document.body.innerText")
    assert "Only one version so far" in text and HOSTILE_VERSION in text
    ticks = browser.js(
        "Array.from(document.querySelectorAll('.xtick text')).map(t => t.textContent)"
    )
    assert ticks == [HOSTILE_VERSION]
    assert json.loads(browser.js(PLOTS))["without_traces"] == 0
    assert browser.js("window.__pwned === undefined && document.querySelectorAll('i').length") == 0
    _shot(browser, "benchmark-one-version")
    _checked(browser, site)


def test_empty_repository(tmp_path: Path, browser: Browser) -> None:
    Repository.open(tmp_path / "empty.sqlite").close()
    summary = build_dashboard(str(tmp_path / "empty.sqlite"), tmp_path / "site")
    assert summary.empty and summary.series == 0
    browser.events.clear()
    browser.open((tmp_path / "site" / "index.html").as_uri())
    browser.wait_drawn()
    assert "holds no experiments" in browser.js("document.body.innerText")
    _shot(browser, "index-empty")
    assert browser.errors() == []


def test_rebuild_replaces_the_site_in_one_step(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "perf.sqlite"
    with Repository.open(repo) as r:
        _add(
            r,
            _table(1, ["parse"], ["ci-1"], ("aduet",), 1.0, 0.0),
            VERSIONS[0],
            VERSIONS[1],
            {"ci-1": HOST},
        )
    out = tmp_path / "my site"
    build_dashboard(repo, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    with Repository.open(repo) as r:
        _add(
            r,
            _table(2, ["lex"], ["ci-1"], ("aduet",), 1.0, 0.0),
            VERSIONS[1],
            VERSIONS[2],
            {"ci-1": HOST},
        )
    calls = []

    def broken(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed while writing the second page")
        return real(*args, **kw)

    real = site_module.benchmark_page
    monkeypatch.setattr(site_module, "benchmark_page", broken)
    with pytest.raises(RuntimeError, match="second page"):
        build_dashboard(repo, out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # the old site, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "my site",
        "perf.sqlite",
        "perf.sqlite-tables",
    ]

    monkeypatch.setattr(site_module, "benchmark_page", real)
    summary = build_dashboard(repo, out)
    assert summary.benchmarks == 2 and len(list(out.glob("b/*.html"))) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "my site",
        "perf.sqlite",
        "perf.sqlite-tables",
    ]


def test_refuses_to_replace_what_is_not_a_dashboard(tmp_path: Path) -> None:
    repo = tmp_path / "perf.sqlite"
    Repository.open(repo).close()
    mine = tmp_path / "docs"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(DashboardError, match="not written by `duet dashboard`"):
        build_dashboard(repo, mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(DashboardError, match="is a file"):
        build_dashboard(repo, tmp_path / "file")
    with pytest.raises(HistoryError, match="does not exist"):
        build_dashboard(tmp_path / "missing.sqlite", tmp_path / "out")
    assert not (tmp_path / "missing.sqlite").exists() and not (tmp_path / "out").exists()
    (tmp_path / "empty").mkdir()
    build_dashboard(repo, tmp_path / "empty")  # an empty directory is fine
    cwd = os.getcwd()
    try:  # a relative path, from another working directory
        os.chdir(tmp_path)
        build_dashboard("perf.sqlite", "relative/site")
        os.chdir(tmp_path / "empty")  # never the directory a shell is in: it would vanish
        for here in (".", "..", str(tmp_path)):
            with pytest.raises(DashboardError, match="current directory"):
                build_dashboard(repo, here)
    finally:
        os.chdir(cwd)
    assert (tmp_path / "relative" / "site" / "index.html").is_file()


@pytest.mark.parametrize("exchange", [True, False])
def test_replace_directory(tmp_path: Path, monkeypatch, exchange: bool) -> None:
    import duetbench.atomic as atomic

    if not exchange:  # where renameat2 is missing: rename aside, then into place
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    target = tmp_path / "site"
    for content in ("one", "two"):
        new = tmp_path / f".site.new-{content}"
        (new / "sub").mkdir(parents=True)
        (new / "sub" / "f.txt").write_text(content)
        replace_directory(new, target)
        assert (target / "sub" / "f.txt").read_text() == content
        assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_report_links(tmp_path: Path) -> None:
    assert report_link("<table>").href is None
    assert "iterations table" in report_link("<table>").hint
    assert report_link("https://ci.example/r/42/").href == "https://ci.example/r/42/report.html"
    d = tmp_path / "res dir"
    d.mkdir()
    hint = report_link(str(d)).hint
    assert report_link(str(d)).href is None and hint == (
        f"no report yet: duet report '{d}' -o '{d}/report.html'"
    )
    (d / "report.html").write_text("<html></html>")
    assert report_link(str(d)).href == (d / "report.html").as_uri()
    assert "not on this machine" in report_link(str(tmp_path / "gone")).hint


def test_page_names_are_safe_and_distinct() -> None:
    names = {page_name(s, b) for s, b in [("a", "x/y"), ("a", "x y"), ("a/x", "y"), ("", "..")]}
    assert len(names) == 4
    for n in names:
        assert re.fullmatch(r"b/[a-z0-9-]+-[0-9a-f]{10}\.html", n), n


def test_json_in_a_script_element_cannot_close_it() -> None:
    from duetbench.report.html.page import script_json

    text = script_json({"a": "</script><!-- & -->", "b": float("nan"), "c": [1.5, float("inf")]})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!-- & -->", "b": None, "c": [1.5, None]}
