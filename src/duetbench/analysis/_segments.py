"""Per-segment statistics on flat arrays (internal).

A *segment* is a contiguous slice ``values[start:start + length]`` (a run's pairs, a
group's run values...). Everything here is vectorized over segments, and the result
for one segment depends only on that segment's values -- never on its neighbours --
so adding a group never changes another group's numbers by a rounding bit.
"""

from __future__ import annotations

import numpy as np

_MIN_WIDTH = 8


def bounds_from_codes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each stretch of equal values (equal codes contiguous)."""
    n = len(codes)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    boundary = np.empty(n, dtype=bool)
    boundary[0] = True
    np.not_equal(codes[1:], codes[:-1], out=boundary[1:])
    starts = np.flatnonzero(boundary)
    return starts, np.diff(np.append(starts, n))


def _width_classes(lengths: np.ndarray) -> np.ndarray:
    """Padded row width of each segment: the next power of two (at least 8)."""
    w = np.maximum(lengths, _MIN_WIDTH).astype(np.int64)
    return (1 << np.ceil(np.log2(w)).astype(np.int64)).astype(np.int64)


def sort_segments(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sort every segment in place of a copy; segments must tile ``values`` in order.

    Segments of similar length are padded to a common power-of-two width and sorted
    as the rows of one matrix, which numpy sorts with SIMD kernels.
    """
    out = np.empty_like(values)
    if len(values) == 0:
        return out
    if values.dtype.kind == "f":
        pad = np.inf
    else:
        pad = np.iinfo(values.dtype).max
    widths = _width_classes(lengths)
    for w in np.unique(widths):
        segs = np.flatnonzero(widths == w)
        seg_len = lengths[segs]
        seg_start = starts[segs]
        total = int(seg_len.sum())
        mat = np.full((len(segs), int(w)), pad, dtype=values.dtype)
        rows = np.repeat(np.arange(len(segs)), seg_len)
        offs = np.arange(total) - np.repeat(np.cumsum(seg_len) - seg_len, seg_len)
        src = np.repeat(seg_start, seg_len) + offs
        mat[rows, offs] = values[src]
        mat.sort(axis=1)
        out[src] = mat[rows, offs]
    return out


def segment_sum(
    values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, *, tiles: bool = False
) -> np.ndarray:
    """Sum of each segment (empty segments give 0).

    ``tiles=True`` promises that the segments cover ``values`` in order without gaps
    (faster). The summation order of a segment depends only on this flag and the
    segment itself.
    """
    if tiles:
        if len(starts) == 0:
            return np.zeros(0)
        return np.add.reduceat(values, starts)
    seg = np.repeat(np.arange(len(starts)), lengths)
    src = np.repeat(starts, lengths) + (
        np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    )
    return np.bincount(seg, weights=values[src], minlength=len(starts))


def segment_mean(
    values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, *, tiles: bool = False
) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return segment_sum(values, starts, lengths, tiles=tiles) / lengths


def segment_median(
    sorted_values: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """Median of each (already sorted) segment; NaN for empty segments."""
    out = np.full(len(starts), np.nan)
    ok = lengths > 0
    s, n = starts[ok], lengths[ok]
    lo = sorted_values[s + (n - 1) // 2].astype(np.float64)
    hi = sorted_values[s + n // 2].astype(np.float64)
    out[ok] = (lo + hi) / 2.0
    return out


def trim_counts(lengths: np.ndarray, proportion: float) -> np.ndarray:
    """How many values ``scipy.stats.trim_mean`` cuts from each end."""
    return (proportion * lengths.astype(np.float64)).astype(np.int64)


def segment_trimmed_mean(
    sorted_values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, proportion: float
) -> np.ndarray:
    """Trimmed mean of each sorted segment, as ``scipy.stats.trim_mean``."""
    cut = trim_counts(lengths, proportion)
    kept = lengths - 2 * cut
    return segment_mean(sorted_values, starts + cut, np.maximum(kept, 0))
