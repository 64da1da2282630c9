"""The verdict table reads the same everywhere: `duet compare` (terminal, Markdown, JSON)
and `duet report` (HTML, Markdown) show the same numbers, digit for digit."""

from __future__ import annotations

import html
import json
import re

import pytest
from tests.helpers import duet_in_process

from duetbench.analysis.simulate import simulate
from duetbench.report import formatting as fmt

Rows = dict[tuple[str, str], list[str]]


def terminal_rows(text: str) -> Rows:
    rows = [
        [c.strip() for c in line.strip().strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│")
    ]
    return {(r[0], r[1]): r for r in rows}


def markdown_rows(text: str) -> Rows:
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    assert lines[0].startswith("| benchmark | method |")
    rows = [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines[1:]]
    for r in rows:
        r[-1] = re.sub(r"^\W+\s", "", r[-1])  # the verdict's icon: "🔴 slower"
    return {(r[0], r[1]): r for r in rows}


def html_rows(text: str) -> Rows:
    table = re.search(r'<table class="verdicts">(.*?)</table>', text, re.S)
    assert table is not None
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        if cells:
            rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return {(r[0], r[1]): r for r in rows}


def json_rows(doc: dict) -> Rows:
    """The JSON's numbers, formatted by the one formatter of every table."""
    out = {}
    for r in doc["rows"]:
        cells = [
            r["benchmark"],
            r["method"],
            fmt.duration(r["mean_a_ns"]),
            fmt.duration(r["mean_b_ns"]),
            fmt.pct(r["change"], signed=True, digits=2),
            fmt.ci(r["ci_low"], r["ci_high"]),
            fmt.pvalue(r["p_value"]),
            str(r["runs"]),
            str(r["pairs"]),
            fmt.verdict_text(r["verdict"], r["within"], doc["settings"]["threshold"]),
        ]
        out[(r["benchmark"], r["method"])] = cells
    return out


@pytest.mark.parametrize("options", [(), ("--threshold", "2%", "--interval", "percentile")])
def test_the_verdict_table_is_the_same_in_every_format(tmp_path, options) -> None:
    # means of 2.5 ms and 1.3 s: durations in two units, with four significant digits
    df = simulate(benchmarks=["fib", "json"], slowdown=0.03, seed=1, mean_ns=[2.5e6, 1.3e9], runs=6)
    table = tmp_path / "t.csv"
    df.to_csv(table, index=False)
    src = str(table)

    r = duet_in_process("compare", src, *options)
    assert r.returncode == 0, r.stderr
    terminal = terminal_rows(r.stdout)
    r = duet_in_process("compare", src, "--format", "markdown", *options)
    assert r.returncode == 0, r.stderr
    markdown = markdown_rows(r.stdout)
    r = duet_in_process("compare", src, "--format", "json", *options)
    assert r.returncode == 0, r.stderr
    from_json = json_rows(json.loads(r.stdout))
    grids = ("--slowdowns", "0,5", "--min-overlap", "0.3,0.5", "--shuffles", "2")
    out = tmp_path / "report.html"
    r = duet_in_process("report", src, "-o", str(out), *grids, *options)
    assert r.returncode == 0, r.stderr
    report = html_rows(out.read_text(encoding="utf-8"))
    r = duet_in_process("report", src, "--format", "markdown", *grids, *options)
    assert r.returncode == 0, r.stderr
    report_md = markdown_rows(r.stdout.split("\n### ")[0])  # the verdict table comes first

    assert len(from_json) == 6
    assert all(re.fullmatch(r"\d\.\d{3} m?s", c) for r in from_json.values() for c in r[2:4])
    for name, rows in (
        ("terminal", terminal),
        ("markdown", markdown),
        ("report HTML", report),
        ("report Markdown", report_md),
    ):
        assert rows == from_json, name
    # one order everywhere: seqn, aduet, sduet within each benchmark
    assert (
        list(terminal)
        == list(report)
        == [(b, m) for b in ("fib", "json") for m in ("seqn", "aduet", "sduet")]
    )


def test_durations_have_four_significant_digits() -> None:
    assert fmt.duration(2_491_234) == "2.491 ms"
    assert fmt.duration(122_003_000) == "122.0 ms"
    assert fmt.duration(1.292e9) == "1.292 s"
    assert fmt.duration(999_960_000) == "1.000 s"  # rounded before the unit is chosen
    assert fmt.duration(9_999_600) == "10.00 ms"
    assert fmt.duration(850) == "850 ns"
    assert fmt.duration(999.6) == "1.000 us"
    assert fmt.duration(-2_491_234) == "-2.491 ms"
    assert fmt.duration(1_234_567_890_123) == "1235 s"
    assert fmt.duration(float("nan")) == fmt.duration(None) == "-"
