"""Where a command's document goes: a file (written atomically) or standard output."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write_output(text: str, path: Path | None) -> None:
    """``text`` (ending in a newline) to ``path``, or to stdout when there is none."""
    from ..atomic import write_atomic

    text = text if text.endswith("\n") else text + "\n"
    if path:
        write_atomic(path, text)
    else:
        sys.stdout.write(text)


def print_tables(tables: Sequence[Any], title: str | None = None) -> None:
    """Tables (``report.tables.Table``) on the terminal, each with its notes under it,
    after ``title`` in bold."""
    from ..report.formatting import rich_text
    from ..report.terminal import make_console, print_notes, print_table

    console = make_console()
    if title:
        console.print(f"[bold]{rich_text(title)}[/]")
    for t in tables:
        print_table(console, t)
        print_notes(console, t.notes)
