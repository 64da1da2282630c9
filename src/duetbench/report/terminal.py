"""Tables and notes in the terminal (rich). User text is escaped: a benchmark named
``[red]x`` is shown as it is, never read as markup."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from ..analysis.evaluate import Evaluation
from ..dataset import Dataset
from ..schema import Verdict
from ..text import visible
from . import evaluation_tables as et
from .formatting import rich_text, verdict_word
from .tables import Note, Table, dataset_notes

VERDICT_STYLE = {
    Verdict.SLOWER: "bold red",
    Verdict.FASTER: "bold green",
    Verdict.NO_CHANGE: "white",
    Verdict.EQUIVALENT: "white",
    Verdict.INCONCLUSIVE: "yellow",
    Verdict.NO_DATA: "yellow",
    Verdict.SAME: "white",  # results of earlier releases (a history repository keeps them)
    Verdict.BELOW_THRESHOLD: "dim",
}
HEALTH_STYLE = {"ok": "green", "flagged": "bold red", "excluded": "dim", "quarantined": "red"}
#: how each kind of note starts (rich markup), and how it ends
_NOTE_MARKUP = {
    "info": ("[cyan]", "[/]"),
    "note": ("[yellow]note:[/] ", ""),
    "excluded": ("[dim]", "[/]"),
    "problem": ("[yellow]problem:[/] ", ""),
}


def make_console(*, stderr: bool = False) -> Console:
    """A console; on a pipe (CI logs) at least 140 columns wide, so tables are not squeezed."""
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=max(console.width, 140))
    return console


def rich_table(
    table: Table, *, title: str | None = None, caption: str | None = None, no_wrap: bool = False
) -> RichTable:
    """``table`` as a rich table (``no_wrap``: only the first column and the verdict may
    wrap). The first column (the benchmark) keeps up to 30 characters however wide the
    rest is: a table too wide for the console wraps its verdict and names instead of
    squeezing the names to an ellipsis."""
    t = RichTable(
        title=title, title_justify="left", caption=caption or None, caption_justify="left"
    )
    first = table.columns[0] if table.columns else None
    names = [first.title, *(first.format(r.get(first.key)) for r in table.rows)] if first else []
    name_width = min(30, max(map(len, names), default=0))
    for i, c in enumerate(table.columns):
        t.add_column(
            rich_text(c.title),
            justify="left" if c.left else "right",
            no_wrap=no_wrap and i > 0 and c.kind != "verdict",
            min_width=name_width if i == 0 else None,
        )
    for row in table.rows:
        cells = []
        for c, text in zip(table.columns, table.cells(row), strict=True):
            cell = rich_text(text)
            if c.kind == "verdict":
                cell = f"[{VERDICT_STYLE.get(verdict_word(text), 'white')}]{cell}[/]"
            elif c.kind == "health":  # "flagged: why": the verdict styled, the reason plain
                word, _, why = text.partition(":")
                style = HEALTH_STYLE.get(word, "yellow")
                cell = f"[{style}]{rich_text(word)}[/]" + (f":{rich_text(why)}" if why else "")
            cells.append(cell)
        t.add_row(*cells)
    return t


def print_notes(console: Any, notes: tuple[Note, ...] | list[Note]) -> None:
    for n in notes:
        start, end = _NOTE_MARKUP.get(n.kind, ("", ""))
        console.print(f"{start}{rich_text(n.text)}{end}")


def print_verdicts(table: Table, console: Any = None, verbose: bool = False) -> None:
    """The verdict table of `duet compare` and `duet run`, with its notes: one line per
    kind, or every sentence (``verbose``)."""
    console = console or make_console()
    title = f"{rich_text(table.title)}: {rich_text(table.caption)}"
    console.print(rich_table(table, title=title, no_wrap=True))
    print_notes(console, table.details if verbose and table.details else table.notes)


def print_processed(console: Any, rep: Any, out: Any) -> None:
    """What `duet process` did: iterations written, runs and iterations left out, problems."""
    console.print(f"{len(rep.table)} iterations from {rep.runs_used} runs -> {rich_text(out)}")
    runs = ", ".join(f"{n} {k}" for k, n in sorted(rep.runs_excluded.items()))
    its = ", ".join(f"{n} {k}" for k, n in sorted(rep.iterations_excluded.items()))
    if runs or its:
        console.print(
            f"excluded: {runs + ' run(s)' if runs else ''}{'; ' if runs and its else ''}"
            f"{its + ' iteration(s)' if its else ''}"
        )
    print_notes(console, [Note("problem", p) for p in rep.problems])


#: a table longer than this is printed as plain aligned text: rich lays out every cell
#: (100 000 plan rows took minutes and 0.8 GB), and nobody reads such a table in boxes
PLAIN_ROWS = 2000


def print_titled(table: Table, console: Any = None) -> None:
    """A table under its title (`duet plan`, `duet hosts`)."""
    console = console or make_console()
    if len(table.rows) > PLAIN_ROWS:
        print_plain(table, console)
        return
    console.print(rich_table(table, title=rich_text(table.title)))


def print_plain(table: Table, console: Any) -> None:
    """``table`` as aligned columns of plain text, written at once (a long table)."""
    cells = [[visible(c.title) for c in table.columns]]
    cells += [[visible(text) for text in table.cells(row)] for row in table.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    left = [c.left for c in table.columns]

    def line(row: list[str]) -> str:
        parts = (
            t.ljust(w) if is_left else t.rjust(w)
            for t, w, is_left in zip(row, widths, left, strict=True)
        )
        return "  ".join(parts).rstrip()

    console.print(rich_text(table.title), highlight=False)
    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in cells[1:]]
    console.file.write("\n".join(out) + "\n")


def print_table(console: Any, table: Table) -> None:
    """A heading, then the table with its caption; or the table's ``empty`` text (dim)."""
    if not table.rows and table.empty is not None:
        console.print(f"[dim]{rich_text(table.empty)}[/]")
        return
    console.print()
    console.print(f"[bold]{rich_text(table.heading)}[/]")
    console.print(rich_table(table, caption=rich_text(table.caption)))


def print_evaluation(ev: Evaluation, dataset: Dataset, console: Any = None) -> None:
    """`duet evaluate`'s tables (RQ1-RQ4, the A/A accuracy, the shuffle check)."""
    console = console or make_console()
    c = ev.settings.compare
    aa = rich_text(", ".join(ev.aa_benchmarks)) or "none (use --aa)"
    console.print(
        f"[bold]{rich_text(dataset.name)}[/]: evaluation (thesis ch. 5). "
        f"Tests at {c.confidence * 100:g} % ({c.interval} interval, run statistic "
        f"{c.run_stat}), aduet pairing m = {c.min_overlap:g}. A/A benchmarks: {aa}."
    )
    print_table(console, et.speedup_table(ev))
    print_table(console, et.overlap_table(ev))
    print_table(console, et.cv_table(ev))
    print_table(console, et.precision_table(ev))
    print_table(console, et.tests_table(ev))
    print_table(console, et.aa_table(ev))
    if ev.aa_benchmarks:
        aa_m = et.aa_overlap_table(ev)
        if aa_m.rows:
            print_table(console, aa_m)
    shuffle = et.shuffle_table(ev)
    if shuffle.rows:
        print_table(console, shuffle)
    print_table(console, et.mds_table(ev))
    curve = et.mds_curve_table(ev)
    if curve.rows:
        print_table(console, curve)
    print_notes(console, [Note("problem", p) for p in ev.problems])
    print_notes(console, dataset_notes(dataset))
