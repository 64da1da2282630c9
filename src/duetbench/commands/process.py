"""`duet process`: raw runs -> the iterations table (Parquet or CSV)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", type=Path, help="results directory (results/<experiment>)")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        help="iterations.parquet or .csv (default: inside the results dir)",
    )


def run(args: argparse.Namespace) -> int:
    from ..process import process, save
    from ..report.terminal import make_console, print_processed
    from ..store import ResultsStore

    rep = process(args.source)
    out = args.output or ResultsStore(Path(args.source)).table_path
    save(rep.table, out)
    print_processed(make_console(stderr=True), rep, out)
    return 0
