"""Several result files of one side read as one table (the parsers of harnesses that
write a file per benchmark or per invocation)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ._util import concat_frames, find_result_files, renumber_iterations
from .registry import SideContext

__all__ = ["combined", "parse_each"]


def combined(
    frames: Sequence[pd.DataFrame], files: Sequence[Path], ctx: SideContext
) -> pd.DataFrame:
    """Several files' frames as one table (:func:`concat_frames`), their iterations
    numbered on (:func:`renumber_iterations`) when there is more than one."""
    df = concat_frames(frames, files, ctx)
    return renumber_iterations(df) if len(frames) > 1 else df


def parse_each(
    ctx: SideContext,
    patterns: Sequence[str],
    what: str,
    parse_file: Callable[[Path], pd.DataFrame],
) -> pd.DataFrame:
    """``parse_file`` of every result file matching ``patterns`` (:func:`find_result_files`),
    :func:`combined`."""
    files = find_result_files(ctx, tuple(patterns), what=what)
    return combined([parse_file(path) for path in files], files, ctx)
