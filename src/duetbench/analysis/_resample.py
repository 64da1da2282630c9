"""Bootstrap resampling of means for many groups at once (internal).

The statistic of every interval engine is the mean of a group's run-level values,
so one bootstrap replicate of a group with ``n`` values is the sum of ``n`` values
drawn uniformly with replacement. Two devices make that cheap in numpy without
changing the resampling distribution:

* **k-sum tables.** The sum of ``k`` independent draws equals one draw from the
  table of all ``n**k`` ordered k-sums (for ``n <= 20``, ``k = 3``: 8000 entries,
  cache-resident). A replicate of 20 values is 6 table draws of 3 values + 1 of 2.
* **Several draws per random number.** One uniform double ``u`` (53 random bits)
  yields several table indices: ``v = floor(u * m**p)`` is uniform on
  ``[0, m**p)`` and its ``p`` base-``m`` digits are independent uniform indices.
  Draws are packed while ``m**p <= 2**39``, so ``v`` rests on 53 random bits for
  at most 39 bits of outcome: every outcome's probability is within 1e-4
  (relative) of exactly uniform -- far below the Monte Carlo error of any
  bootstrap.

Every group draws from its own generator, and every operation is elementwise or
reduces one group's own numbers in a fixed order, so a group's replicates do not
depend on which other groups are computed alongside.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_TABLE_LIMIT = 8192  # entries of a k-sum table (64 KiB of float64)
_BITS_PER_DOUBLE = 39.0  # leaves >= 14 bits of slack for the last index of a double
_SHRINK = 1.0 - 2.0**-44  # keeps floor(u * m) < m under rounding
_BLOCK = 32


def table_order(n: int) -> int:
    """How many values one table draw sums (k) for groups of ``n`` values."""
    for k in (3, 2):
        if k <= n and n**k <= _TABLE_LIMIT:
            return k
    return 1


def _per_double(m: int) -> int:
    if m <= 1:
        return 64
    return max(1, int(_BITS_PER_DOUBLE // math.log2(m)))


def _ksum_table(d: np.ndarray, k: int, out: np.ndarray | None = None) -> np.ndarray:
    """(G, n**k) table of ordered k-sums of the rows of ``d`` (G, n).

    Entry ``i1 * n**(k-1) + ... + ik`` is ``((d[i1] + d[i2]) + ...) + d[ik]``.
    """
    g, n = d.shape
    if out is None:
        out = np.empty((g, n**k))
    if k == 1:
        out[:] = d
        return out
    prev = _ksum_table(d, k - 1)
    np.add(prev[:, :, None], d[:, None, :], out=out.reshape(g, n ** (k - 1), n))
    return out


class _Stream:
    """Table draws of one kind: ``count`` indices into a table of ``m`` per group.

    A double ``u`` gives ``per`` indices at once: ``v = floor(u * m**per)`` is uniform
    on ``[0, m**per)`` (``m**per <= 2**39``), and its base-``m`` digits are the indices.
    Digit ``p`` of double ``f`` is index ``p * doubles + f`` of its group, whatever
    the number of groups decoded together.
    """

    def __init__(self, count: int, m: int, groups: int = 1) -> None:
        self.count = count
        self.m = m
        self.per = _per_double(m)
        self.doubles = -(-count // self.per)
        self.scale = float(m**self.per) * _SHRINK
        shape = (groups, self.doubles)
        self.tmp = np.empty(shape, dtype=np.int64)
        self.index = np.empty((groups, self.per, self.doubles), dtype=np.int64)

    def indices(self, u: np.ndarray) -> np.ndarray:
        """Indices (G, count) from uniforms ``u`` (G, doubles), G <= ``groups``."""
        gb = u.shape[0]
        tmp, index = self.tmp[:gb], self.index[:gb]
        v = index[:, self.per - 1]  # v ends as the last digit
        np.multiply(u, self.scale, out=v, casting="unsafe")  # truncation = floor (>= 0)
        for p in range(self.per - 1):
            div = self.m ** (self.per - 1 - p)
            np.floor_divide(v, div, out=index[:, p])
            np.multiply(index[:, p], div, out=tmp)
            np.subtract(v, tmp, out=v)
        return index.reshape(gb, -1)[:, : self.count]


def resample_sums(
    d: np.ndarray, generators: Sequence[np.random.Generator], resamples: int, squares: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Bootstrap sums of resampled values for groups of equal size.

    ``d`` is (G, n): one row per group (centered values are best for precision).
    Returns ``S`` (G, B) -- each replicate's sum of ``n`` values drawn with
    replacement from its row -- and, with ``squares``, the matching sums of squares.
    Group ``i`` draws from ``generators[i]`` only.
    """
    g_total, n = d.shape
    b = int(resamples)
    sums = np.zeros((g_total, b))
    sq = np.zeros((g_total, b)) if squares else None
    if n == 0 or g_total == 0:
        return sums, sq
    k = table_order(n)
    q, r = divmod(n, k)
    block = _BLOCK  # groups per block: tables (64 KiB each for n = 20) stay cache-sized
    main = _Stream(b * q, n**k)
    rest = _Stream(b, n**r, groups=block) if r else None
    u = np.empty((block, main.doubles + (rest.doubles if rest else 0)))
    n_stats = 2 if squares else 1
    buf_k = [np.empty((block, n**k)) for _ in range(n_stats)]
    buf_r = [np.empty((block, n**r)) for _ in range(n_stats)] if r else None
    for g0 in range(0, g_total, block):
        g1 = min(g_total, g0 + block)
        gb = g1 - g0
        rows = [d[g0:g1]] + ([d[g0:g1] ** 2] if squares else [])
        # per statistic: the k-sum tables, the r-sum tables and the output rows
        tabs = [
            (
                _ksum_table(x, k, buf_k[s][:gb]),
                _ksum_table(x, r, buf_r[s][:gb]) if buf_r is not None else None,
            )
            for s, x in enumerate(rows)
        ]
        outs = [sums] + ([sq] if squares else [])  # type: ignore[list-item]
        for i in range(gb):
            generators[g0 + i].random(out=u[i])
        # the short remainder streams of the block are decoded together
        idx_rest = rest.indices(u[:gb, main.doubles :]) if rest else None
        for i in range(gb):
            g = g0 + i
            idx = main.indices(u[i : i + 1, : main.doubles]).reshape(q, b)
            for (t_k, t_r), out in zip(tabs, outs, strict=True):
                vals = t_k[i][idx]
                acc = out[g]
                # rows added in order: ((v0 + v1) + v2) + ..., whatever the block
                np.copyto(acc, vals[0])
                for j in range(1, q):
                    acc += vals[j]
                if idx_rest is not None and t_r is not None:
                    acc += t_r[i][idx_rest[i]]
    return sums, sq
