"""Parser plugins: one function per harness output format.

A parser is a plain function ``parse(ctx: SideContext) -> pandas.DataFrame``.
It reads the result files of *one side of one run* and returns one row per
iteration with at least ``start_ns`` and ``end_ns`` (int64 ns since the epoch)
-- or ``duration_ns`` only, for formats without timestamps, see below. It may
add ``iteration`` (0-based; assigned in row order when absent), ``duration_ns``
(computed as end - start when absent), ``filler`` (bool, excluded from
analysis) and any extra columns of its own.

Formats that record durations but no absolute times (JMH, hyperfine) return
``duration_ns`` only; the processing step lays the iterations end to end from
the side's process start and marks them ``synthetic_ts`` -- usable for seqn
and sduet, not for aduet overlaps.

A malformed or truncated file raises :class:`duetbench.errors.ResultFileError`
naming the file and line. Parsers are registered under the entry-point group
``duetbench.parsers`` (name = value of ``harness:``/``suite:`` in duet.yml)::

    [project.entry-points."duetbench.parsers"]
    mysuite = "mypackage.parsers:parse_mysuite"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DuetError
from .names import ALIASES


@dataclass(frozen=True)
class SideContext:
    """Everything a parser may need about one side of one run."""

    side_dir: Path  # runs/<run-id>/<pair>/
    result_files: tuple[Path, ...]  # the collected `results:` paths (files or dirs) inside side_dir
    pair: str  # "A" | "B"
    benchmark: str
    method: str  # seqn | aduet | sduet
    run: Mapping[str, Any] = field(default_factory=dict)  # run.json contents
    artifacts: Mapping[str, str] = field(default_factory=dict)  # host artifact name -> output text

    @property
    def proc_start_ns(self) -> int | None:
        side = self.run.get("sides", {}).get(self.pair, {})
        return side.get("start_ns")

    @property
    def proc_end_ns(self) -> int | None:
        side = self.run.get("sides", {}).get(self.pair, {})
        return side.get("end_ns")


Parser = Callable[[SideContext], pd.DataFrame]


def available_parsers() -> dict[str, Parser]:
    """All registered parsers by name (entry points of group ``duetbench.parsers``)."""
    found: dict[str, Parser] = {}
    for ep in entry_points(group="duetbench.parsers"):
        try:
            found[ep.name] = ep.load()
        except Exception as exc:  # a broken third-party plugin must not break the others
            found[ep.name] = _broken(ep.name, exc)
    return found


def _broken(name: str, exc: Exception) -> Parser:
    def parse(ctx: SideContext) -> pd.DataFrame:
        raise DuetError(f"parser plugin '{name}' failed to load: {exc}")

    return parse


def get_parser(name: str) -> Parser:
    """The parser registered under ``name``; a clear error listing the known ones otherwise."""
    parsers = available_parsers()
    key = ALIASES.get(name, name)
    if key not in parsers:
        known = ", ".join(sorted(parsers))
        raise DuetError(
            f"no result parser named '{name}'. Known parsers: {known}. "
            "Set `harness:` (or the thesis `suite:`) to one of them, or install a package "
            "that registers one under the entry-point group 'duetbench.parsers'."
        )
    return parsers[key]
