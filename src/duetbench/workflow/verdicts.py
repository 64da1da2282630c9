"""The verdicts of a results directory, judged and rendered as `duet compare` shows them.

Every command that ends with a verdict table (`duet compare`, `run`, `micro`, the pytest
plugin) goes through :func:`judge` -- with the options the results directory recorded
(its seed, `measure:` and `threshold:`) unless the caller gives its own -- and
:func:`render`."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DuetError
from ..text import visible

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..options import CompareOptions
    from ..verdicts import VerdictTable

#: what a results directory records for its analysis: the experiment's seed, the config's
#: `measure:` and `threshold:` (a command line that names none of them gets these)
RECORDED = ("seed", "measure", "threshold")


def judge(root: Path, **options: Any) -> VerdictTable:
    """The verdict table of results directory ``root``: `duet compare`'s defaults, the
    options the directory recorded, then ``options`` (None values left out)."""
    from ..dataset import open_dataset
    from ..verdicts import default_options, verdicts

    dataset = open_dataset(root)
    given = {k: v for k, v in options.items() if v is not None}
    return verdicts(dataset, default_options(dataset, **given))


def with_recorded(
    opts: CompareOptions, dataset: Dataset, given: Collection[str] = ()
) -> CompareOptions:
    """``opts`` with what the results directory recorded (:data:`RECORDED`) for every
    option the caller did not give (``given``: the names it did)."""
    recorded = {"seed": dataset.seed, "measure": dataset.measure, "threshold": dataset.threshold}
    return replace(opts, **{k: v for k, v in recorded.items() if k not in given})


def render(
    table: VerdictTable, fmt: str, output: Path | None = None, *, verbose: bool = False
) -> None:
    """The verdict table in ``fmt`` (table, json, markdown): to ``output`` or stdout
    (``verbose``: every note in full under the terminal table)."""
    from ..report.json_docs import compare_doc, dumps
    from ..report.markdown import compare_markdown
    from ..report.tables import verdict_table
    from ..report.terminal import print_verdicts
    from .output import write_output

    if fmt == "json":
        write_output(dumps(compare_doc(table)), output)
    elif fmt == "markdown":
        write_output(compare_markdown(verdict_table(table)), output)
    else:
        print_verdicts(verdict_table(table), verbose=verbose)


def render_text(table: VerdictTable, fmt: str) -> str:
    """What :func:`render` prints, as text."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        render(table, fmt)
    return buf.getvalue()


def print_after_run(root: Path) -> None:
    """The verdict table `duet compare` prints, at the end of a run of an experiment."""
    try:
        table = judge(root)
    except DuetError as exc:
        print(f"duet: cannot compare yet: {visible(str(exc), lines=True)}", file=sys.stderr)
        return
    if len(table.rows):
        render(table, "table")
