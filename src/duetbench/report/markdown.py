"""Tables as GitHub-flavoured Markdown: `duet compare --format markdown` and `duet report
--format markdown` ($GITHUB_STEP_SUMMARY). User text is escaped: names render as the
same text, never as emphasis, links, HTML or extra table cells."""

from __future__ import annotations

import shlex

from .._version import __version__
from ..analysis.evaluate import Evaluation
from ..schema import Verdict
from ..verdicts import VerdictTable
from . import evaluation_tables as et
from .formatting import md_cell, md_code, md_heading, md_text, verdict_word
from .tables import Note, Table, verdict_table

VERDICT_ICONS = {Verdict.SLOWER: "🔴 ", Verdict.FASTER: "🟢 "}


def table_lines(table: Table) -> list[str]:
    """The table's header, alignment row and rows."""
    out = [
        "| " + " | ".join(md_cell(c.title) for c in table.columns) + " |",
        "|" + "|".join("---" if c.left else "---:" for c in table.columns) + "|",
    ]
    for row in table.rows:
        cells = []
        for c, text in zip(table.columns, table.cells(row), strict=True):
            if c.kind == "verdict":
                text = VERDICT_ICONS.get(verdict_word(text), "") + text
            elif c.kind == "text":
                text = md_text(text)  # user text: benchmark, host and suite names
            cells.append(md_cell(text))
        out.append("| " + " | ".join(cells) + " |")
    return out


def notes_lines(notes: tuple[Note, ...] | list[Note]) -> list[str]:
    """Notes as a list, problems last under their own heading."""
    out = []
    other = [n for n in notes if n.kind != "problem"]
    problems = [n for n in notes if n.kind == "problem"]
    if other:
        out += ["", *[f"- {md_text(n.text)}" for n in other]]
    if problems:
        out += ["", "Problems:", *[f"- {md_text(n.text)}" for n in problems]]
    return out


def compare_markdown(table: Table) -> str:
    """`duet compare --format markdown`: the verdict table under a heading."""
    lines = [
        f"### duetbench: {md_text(table.title)}",
        "",
        f"{table.caption}.",
        "",
        *table_lines(table),
        *notes_lines(table.notes),
    ]
    return "\n".join(lines) + "\n"


def _section(table: Table, details: bool = False) -> list[str]:
    if details:
        return [
            "",
            f"<details><summary>{md_heading(table.title)}</summary>",
            "",
            *table_lines(table),
            "",
            "</details>",
        ]
    return ["", f"### {md_heading(table.title)}", "", *table_lines(table)]


def report_markdown(ev: Evaluation, vt: VerdictTable) -> str:
    """The report's tables and verdicts in Markdown ($GITHUB_STEP_SUMMARY)."""
    dataset = vt.dataset
    verdicts = verdict_table(vt)
    out = [
        f"## duetbench report: {md_text(dataset.name)}",
        "",
        f"{verdicts.caption}.",
        "",
        *table_lines(verdicts),
    ]
    speedup = et.speedup_table(ev)
    if speedup.rows:
        out += _section(speedup)
    out += _section(et.tests_table(ev))
    aa = et.aa_table(ev)
    if ev.aa_benchmarks and aa.rows:
        out += _section(aa)
    mds = et.mds_table(ev)
    if mds.rows:
        out += _section(mds)
    precision = et.precision_table(ev)
    if precision.rows:
        out += _section(precision, details=True)
    overlap = et.overlap_table(ev)
    if overlap.rows:
        out += _section(overlap, details=True)
    shuffle = et.shuffle_table(ev)
    if shuffle.rows:
        out += _section(shuffle, details=True)
    notes = [n for n in verdicts.notes if n.kind != "info"]
    out += notes_lines(notes + [Note("problem", p) for p in ev.problems])
    command = md_code(f"duet report {shlex.quote(str(dataset.source))}")
    out += ["", f"<sub>duetbench {__version__}; full report: {command}</sub>"]
    return "\n".join(out) + "\n"


def tables_markdown(title: str, tables: list[Table]) -> str:
    """`duet history ... --format markdown`: a heading, then each table (or its ``empty``
    text) under its own heading, with its caption and notes."""
    out = [f"## {md_heading(title)}"]
    for t in tables:
        out += ["", f"### {md_heading(t.heading)}", ""]
        if not t.rows and t.empty is not None:
            out.append(f"_{md_text(t.empty)}_")
            continue
        if t.caption:
            out += [md_text(t.caption), ""]
        out += [*table_lines(t), *notes_lines(t.notes)]
    return "\n".join(out) + "\n"
