"""The iterations table as sorted numpy arrays (internal).

Every analysis step works on :class:`Iterations`: one row per iteration, sorted by
(unit, side, iteration), where a *unit* is one run of one benchmark with one method
on one host -- the unit of resampling (docs/statistics.md, "The two CI tests"). Key columns are
factorized once, run-length first, so a table in its natural order (runs stored
contiguously, as the parsers write it) costs one comparison pass per key column.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, overload

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from duetbench.errors import AnalysisError
from duetbench.schema import METHODS

from ._threads import thread_map

#: Columns that identify a run, in this order; ``experiment`` is optional.
UNIT_COLUMNS = ("experiment", "host", "suite", "benchmark", "method", "run")
#: Columns every analysis needs.
REQUIRED_COLUMNS = (
    "host",
    "suite",
    "benchmark",
    "method",
    "run",
    "pair",
    "iteration",
    "start_ns",
    "end_ns",
    "duration_ns",
)
_TIME_COLUMNS = ("start_ns", "end_ns", "duration_ns")

THREADED_ROWS = 100_000  # from this many rows, independent steps run on threads
SIDE_A = 0
SIDE_B = 1


def require_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise :class:`AnalysisError` naming the columns ``what`` needs but ``df`` lacks."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise AnalysisError(
            f"{what} needs the column(s) {', '.join(missing)} in the iterations table "
            f"(it has: {', '.join(map(str, df.columns))})"
        )


def _arrow_backed(dtype: object) -> bool:
    return isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
    )


def _change_rows(s: pd.Series) -> np.ndarray:
    """Rows ``i >= 1`` whose value differs from row ``i - 1`` (missing values differ)."""
    n = len(s)
    if n < 2:
        return np.zeros(0, dtype=np.int64)
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        return np.flatnonzero(codes[1:] != codes[:-1]) + 1
    arr = s.array
    if isinstance(arr, np.ndarray) or s.dtype.kind in "biufmM":
        v = s.to_numpy()
        return np.flatnonzero(np.asarray(v[1:] != v[:-1], dtype=bool)) + 1
    if _arrow_backed(s.dtype):
        # Arrow's kernels, without pandas' conversion of the full boolean result
        col = arr.__arrow_array__()
        ne = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        if ne.null_count:
            ne = pc.fill_null(ne, True)
        return np.asarray(pc.indices_nonzero(ne), dtype=np.int64) + 1
    # other extension arrays: their own vectorized comparison
    out = arr[1:] != arr[:-1]
    if hasattr(out, "to_numpy"):
        out = out.to_numpy(dtype=bool, na_value=True)
    return np.flatnonzero(np.asarray(out, dtype=bool)) + 1


@dataclass(frozen=True, eq=False)
class Segments:
    """Stretches of rows with equal key columns, and each key column per stretch."""

    starts: np.ndarray  # first row of each stretch
    lengths: np.ndarray  # rows of each stretch
    codes: dict[str, np.ndarray]  # per column: code of its value in each stretch
    uniques: dict[str, pd.Index]  # per column: the sorted distinct values


def _values_at(col: pd.Series, pos: np.ndarray) -> object:
    """Values of ``col`` at positions ``pos``: few of them one by one (cheaper than a
    take on a chunked Arrow column), many with a take."""
    if isinstance(col.dtype, np.dtype):
        return col.to_numpy()[pos]
    if len(pos) <= 256:
        return pd.array([col.iat[int(i)] for i in pos], dtype=col.dtype)
    return col.array.take(pos)


def segments(df: pd.DataFrame, columns: Sequence[str]) -> Segments:
    """Run-length split of ``df`` on ``columns`` and the columns' codes per stretch."""
    n = len(df)

    first = np.zeros(1 if n else 0, dtype=np.int64)

    def column(c: str) -> tuple[np.ndarray, np.ndarray, pd.Index]:
        """The column's own stretches (usually far fewer than the combined ones) and
        the code of each of them."""
        own = np.concatenate([first, _change_rows(df[c])])
        code, uniq = pd.factorize(_values_at(df[c], own), sort=True, use_na_sentinel=False)
        return own, np.asarray(code, dtype=np.int64), pd.Index(uniq)

    # columns on threads when the table is large (Arrow and numpy release the GIL)
    found = thread_map(column, columns, threads=None if n >= THREADED_ROWS else 1)
    starts = np.unique(np.concatenate([own for own, _, _ in found]))
    lengths = np.diff(starts, append=n)
    codes: dict[str, np.ndarray] = {}
    uniques: dict[str, pd.Index] = {}
    for c, (own, code, uniq) in zip(columns, found, strict=True):
        codes[c] = code[np.searchsorted(own, starts, side="right") - 1] if n else code
        uniques[c] = uniq
    return Segments(starts, lengths, codes, uniques)


def combine_codes(
    codes: Sequence[np.ndarray], sizes: Sequence[int], order: str = "sorted"
) -> tuple[np.ndarray, np.ndarray]:
    """Code of each combination of per-column codes, and the first item of each code.

    ``order="sorted"`` numbers combinations in key order, ``"first"`` in order of
    first appearance.
    """
    m = len(codes[0]) if codes else 0
    if not codes:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    total = 1
    for z in sizes:
        total *= max(int(z), 1)
    if total < 2**62:
        key = np.zeros(m, dtype=np.int64)
        for c, z in zip(codes, sizes, strict=True):
            key = key * max(int(z), 1) + c
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    else:  # pragma: no cover - astronomically many key combinations
        stacked = np.stack(codes, axis=1)
        uniq, first, inv = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    if order == "first":
        rank = np.empty(len(first), dtype=np.int64)
        by_first = np.argsort(first, kind="stable")
        rank[by_first] = np.arange(len(first))
        return rank[inv], first[by_first]
    return inv, first


def _int_column(df: pd.DataFrame, name: str) -> np.ndarray:
    s = df[name]
    if s.dtype.kind in "iu":
        return s.to_numpy(dtype=np.int64)
    try:
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise AnalysisError(f"column '{name}' must hold integers (nanoseconds)") from exc
    if not np.all(np.isfinite(v)):
        raise AnalysisError(f"column '{name}' has missing values; every iteration needs it")
    return v.astype(np.int64)


def stable_key(names: Sequence[str], values: Sequence[object]) -> str:
    """A process-independent text key of a group (used to derive its random stream)."""
    parts = []
    for n, v in zip(names, values, strict=True):
        if isinstance(v, np.generic):
            v = v.item()
        parts.append(f"{n}={v}")
    return "\x1f".join(parts)


_SFC64_WARMUP = 12  # outputs numpy's own SFC64 seeding discards


def _group_state(seed: int, key: str, purpose: str) -> dict[str, object]:
    """SFC64 state of a group's stream: three words of BLAKE2b(seed, purpose, key)
    (little-endian) and a counter of 1."""
    words = np.empty(4, dtype=np.uint64)
    state = {"bit_generator": "SFC64", "state": {"state": words}, "has_uint32": 0, "uinteger": 0}
    _set_words(words, seed, key, purpose)
    return state


def _set_words(words: np.ndarray, seed: int, key: str, purpose: str) -> None:
    digest = hashlib.blake2b(f"{int(seed)}\x1d{purpose}\x1e{key}".encode(), digest_size=24).digest()
    words[:3] = np.frombuffer(digest, dtype="<u8")
    words[3] = 1


def _start(gen: np.random.Generator, state: dict[str, object]) -> np.random.Generator:
    """``gen`` at the start of the stream of ``state``: set, then warmed up."""
    gen.bit_generator.state = state
    gen.bit_generator.random_raw(_SFC64_WARMUP)
    return gen


def group_generator(seed: int, key: str, purpose: str) -> np.random.Generator:
    """The random generator of one group: from the seed and a stable hash of its key.

    Python's ``hash`` is salted per process, so the key is hashed with BLAKE2b; the
    stream of a group therefore does not depend on which other groups exist. The bit
    generator is SFC64 (a small chaotic counter generator that passes PractRand and
    TestU01's BigCrush): its uniform doubles cost about 30 % less than PCG64's here,
    and the bootstrap spends a fifth of its time drawing them. Its state is three
    words of ``BLAKE2b(seed, purpose, key)`` and a counter of 1, warmed up by 12
    outputs as numpy's own seeding does (setting a state costs a twentieth of a
    ``SeedSequence``).
    """
    return _start(np.random.Generator(np.random.SFC64(0)), _group_state(seed, key, purpose))


class GroupStreams(Sequence[np.random.Generator]):
    """The generators of groups ``keys`` (:func:`group_generator`), made on access.

    Every access returns a fresh generator at the start of the group's stream;
    :meth:`fill` draws a group's first uniforms through a generator reused by the
    calling thread, which is much cheaper than making one per group.
    """

    def __init__(self, seed: int, keys: Sequence[str], purpose: str) -> None:
        self._seed, self._keys, self._purpose = seed, list(keys), purpose
        self._reused = threading.local()

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, i: int) -> np.random.Generator: ...
    @overload
    def __getitem__(self, i: slice) -> GroupStreams: ...
    def __getitem__(self, i: int | slice) -> np.random.Generator | GroupStreams:
        if isinstance(i, slice):
            return GroupStreams(self._seed, self._keys[i], self._purpose)
        return group_generator(self._seed, self._keys[i], self._purpose)

    def fill(self, i: int, out: np.ndarray) -> None:
        """``out[:] = group_generator(...)[i].random(len(out))``, without making one."""
        reused = getattr(self._reused, "parts", None)
        if reused is None:  # this thread's generator and its state record, set in place
            state = _group_state(self._seed, "", self._purpose)
            gen = np.random.Generator(np.random.SFC64(0))
            reused = self._reused.parts = (gen, state, state["state"]["state"])  # type: ignore[index]
        gen, state, words = reused
        _set_words(words, self._seed, self._keys[i], self._purpose)
        _start(gen, state).random(out=out)


@dataclass(frozen=True, eq=False)
class Iterations:
    """Iterations as arrays, sorted by (unit, side, iteration)."""

    unit: np.ndarray  # int64 code into ``units``
    side: np.ndarray  # int8, SIDE_A or SIDE_B
    iteration: np.ndarray  # int64
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    duration: np.ndarray  # int64 ns (float64 after winsorizing)
    row: np.ndarray  # int64 position of the row in the source frame
    synthetic: np.ndarray | None  # bool per row, or None when the column is absent
    warmup: np.ndarray | None  # bool per row: marked as warm-up (column ``warmup``), or None
    units: pd.DataFrame  # one row per unit code: the unit key columns
    unit_columns: tuple[str, ...]
    unit_rank: np.ndarray  # per unit: rank in sorted key order (canonical order)
    #: bool per row: its run had other work beside it (column ``other_work``), or None
    other_work: np.ndarray | None = None
    #: per row, the optional columns of :data:`AUX_COLUMNS` the table has (float64, NaN
    #: where empty; ``unbalanced`` bool): what the measure choice needs (measure_choice.py)
    aux: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: the measure of every group once chosen (measure.MeasureChoice; None before)
    measure: Any = None

    @property
    def n_units(self) -> int:
        return len(self.units)

    def with_duration(self, duration: np.ndarray) -> Iterations:
        """The same rows with other durations (e.g. CPU times: measure_choice.py)."""
        return replace(self, duration=duration)

    def with_measure(self, choice: Any) -> Iterations:
        return replace(self, measure=choice)

    def unit_method(self) -> np.ndarray:
        """Method name of every unit (object array)."""
        return self.units["method"].to_numpy(dtype=object)

    def take(self, mask_or_index: np.ndarray) -> Iterations:
        """A subset of the rows (keeps the sort order when given a mask or sorted index)."""
        return replace(
            self,
            unit=self.unit[mask_or_index],
            side=self.side[mask_or_index],
            iteration=self.iteration[mask_or_index],
            start=self.start[mask_or_index],
            end=self.end[mask_or_index],
            duration=self.duration[mask_or_index],
            row=self.row[mask_or_index],
            synthetic=None if self.synthetic is None else self.synthetic[mask_or_index],
            warmup=None if self.warmup is None else self.warmup[mask_or_index],
            other_work=None if self.other_work is None else self.other_work[mask_or_index],
            aux={k: v[mask_or_index] for k, v in self.aux.items()},
        )

    @cached_property
    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self._series_bounds()

    def series_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Start index and length of every (unit, side) series (computed once)."""
        return self._bounds

    def _series_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.unit)
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        key = self.unit * 2 + self.side
        boundary = np.empty(n, dtype=bool)
        boundary[0] = True
        np.not_equal(key[1:], key[:-1], out=boundary[1:])
        starts = np.flatnonzero(boundary)
        lengths = np.diff(np.append(starts, n))
        return starts, lengths

    def paired_series(
        self, unit_mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Runs (where ``unit_mask``) with both sides: A start, A length, B start, B length.

        Rows are sorted by (unit, side, iteration), so a run's A series is directly
        followed by its B series.
        """
        starts, lens = self.series_bounds()
        empty = np.zeros(0, dtype=np.int64)
        if len(starts) < 2:
            return empty, empty, empty, empty
        su, ss = self.unit[starts], self.side[starts]
        a_ser = np.flatnonzero(unit_mask[su[:-1]] & (ss[:-1] == SIDE_A))
        b_ser = a_ser + 1
        both = (su[b_ser] == su[a_ser]) & (ss[b_ser] == SIDE_B)
        a_ser, b_ser = a_ser[both], b_ser[both]
        return starts[a_ser], lens[a_ser], starts[b_ser], lens[b_ser]

    def position_in_series(self) -> tuple[np.ndarray, np.ndarray]:
        """0-based position of each row within its series, and the series length."""
        starts, lengths = self.series_bounds()
        pos = np.arange(len(self.unit), dtype=np.int64) - np.repeat(starts, lengths)
        return pos, np.repeat(lengths, lengths)

    @classmethod
    def from_frame(cls, df: pd.DataFrame, extra_unit_columns: Sequence[str] = ()) -> Iterations:
        """Validate and convert an iterations table (see ``duetbench.schema``)."""
        if not isinstance(df, pd.DataFrame):
            raise AnalysisError("the analysis expects an iterations table (a pandas DataFrame)")
        require_columns(df, REQUIRED_COLUMNS, "the analysis")
        unit_cols = [c for c in UNIT_COLUMNS if c in df.columns]
        for c in extra_unit_columns:
            if c not in unit_cols:
                require_columns(df, [c], "grouping")
                unit_cols.append(c)
        n = len(df)
        seg = segments(df, [*unit_cols, "pair"])
        pair_vals = np.asarray(seg.uniques["pair"].astype(str))
        bad = sorted(set(pair_vals) - {"A", "B"})
        if bad:
            raise AnalysisError(f"column 'pair' must be 'A' or 'B', found {bad[:5]}")
        methods = np.asarray(seg.uniques["method"].astype(str))
        badm = sorted(set(methods) - set(METHODS))
        if badm:
            raise AnalysisError(
                f"column 'method' must be one of {', '.join(METHODS)}, found {badm[:5]}"
            )
        # units numbered in order of first appearance: tables stored run by run
        # are then already sorted and need no permutation
        seg_unit, first = combine_codes(
            [seg.codes[c] for c in unit_cols],
            [len(seg.uniques[c]) for c in unit_cols],
            order="first",
        )
        units = pd.DataFrame(
            {c: seg.uniques[c].take(seg.codes[c][first]) for c in unit_cols}
        ).reset_index(drop=True)
        seg_side = (pair_vals == "B").astype(np.int8)[seg.codes["pair"]]
        # per row, from its stretch (a repeat is far cheaper than a gather by row)
        unit = np.repeat(seg_unit, seg.lengths) if n else np.zeros(0, dtype=np.int64)
        side = np.repeat(seg_side, seg.lengths) if n else np.zeros(0, dtype=np.int8)
        iteration = _int_column(df, "iteration")
        if n and iteration.min() < 0:
            raise AnalysisError("column 'iteration' must be >= 0 (0-based index within a run)")
        start = _int_column(df, "start_ns")
        end = _int_column(df, "end_ns")
        duration = _int_column(df, "duration_ns")
        synthetic = warmup = other_work = None
        if "other_work" in df.columns:
            other_work = df["other_work"].fillna(False).to_numpy(dtype=bool)
        aux = {c: _aux_column(df[c], c) for c in AUX_COLUMNS if c in df.columns}
        if "synthetic_ts" in df.columns:
            synthetic = df["synthetic_ts"].fillna(False).to_numpy(dtype=bool)
        if "warmup" in df.columns:
            warmup = df["warmup"].fillna(False).to_numpy(dtype=bool)
        row = np.arange(n, dtype=np.int64)
        order = None
        if not _stretches_sorted(seg_unit * 2 + seg_side, seg.starts, iteration):
            order = _sort_order(unit, side, iteration)
        if order is not None:
            unit, side, iteration = unit[order], side[order], iteration[order]
            start, end, duration, row = start[order], end[order], duration[order], row[order]
            if synthetic is not None:
                synthetic = synthetic[order]
            if warmup is not None:
                warmup = warmup[order]
            if other_work is not None:
                other_work = other_work[order]
            aux = {k: v[order] for k, v in aux.items()}
        if "run" in units.columns:
            units["run"] = units["run"].astype(np.int64)
        return cls(
            unit=unit,
            side=side,
            iteration=iteration,
            start=start,
            end=end,
            duration=duration,
            row=row,
            synthetic=synthetic,
            warmup=warmup,
            units=units,
            unit_columns=tuple(unit_cols),
            unit_rank=canonical_rank(units),
            other_work=other_work,
            aux=aux,
        )


#: optional per-row columns the measure choice reads (analysis/measure_choice.py), and the run
#: statistic ``auto`` (``evaluations``: duet micro's samples, run_statistics.py)
AUX_COLUMNS = (
    "cpu_ns",
    "runq_ns",
    "cpu_share",
    "busy_share",
    "other_cpus",
    "unbalanced",
    "proc_start_ns",
    "proc_end_ns",
    "cpu_window_ns",
    "evaluations",
)


def _aux_column(col: pd.Series, name: str) -> np.ndarray:
    """An optional column as float64 with NaN where empty (``unbalanced``: bool)."""
    if name == "unbalanced":
        return col.fillna(False).to_numpy(dtype=bool)
    try:
        return pd.to_numeric(col, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise AnalysisError(f"column {name!r} must hold numbers (or be empty)") from None


def _stretches_sorted(keys: np.ndarray, starts: np.ndarray, iteration: np.ndarray) -> bool:
    """Rows are in (unit, side, iteration) order: stretch keys (unit * 2 + side) rise
    from stretch to stretch, and iterations rise within every stretch."""
    if len(keys) > 1 and not np.all(keys[1:] > keys[:-1]):
        return False
    rising = iteration[1:] > iteration[:-1]
    rising[starts[1:] - 1] = True  # a stretch's first row may start lower
    return bool(rising.all())


def _sort_order(unit: np.ndarray, side: np.ndarray, iteration: np.ndarray) -> np.ndarray | None:
    """Permutation sorting by (unit, side, iteration), or None when already sorted."""
    n = len(unit)
    if n < 2:
        return None
    width = int(iteration.max()) + 1
    n_keys = (int(unit.max()) + 1) * 2
    if n_keys * width < 2**62:
        key = (unit * 2 + side) * width + iteration
        if np.all(key[1:] > key[:-1]):
            return None
        order = np.argsort(key, kind="stable")
        ks = key[order]
        dup = ks[1:] == ks[:-1]
    else:
        order = np.lexsort((iteration, side, unit))
        u, s, i = unit[order], side[order], iteration[order]
        dup = (u[1:] == u[:-1]) & (s[1:] == s[:-1]) & (i[1:] == i[:-1])
    if np.any(dup):
        k = int(np.flatnonzero(dup)[0])
        raise AnalysisError(
            "the iterations table has the same iteration twice in one run and side "
            f"(iteration {int(iteration[order][k])}); each (run, pair, iteration) must be unique"
        )
    return order


def _factorized(units: pd.DataFrame, cols: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    codes, sizes = [], []
    for c in cols:
        col = units[c]
        vals = col.to_numpy() if isinstance(col.dtype, np.dtype) else col.array
        code, uniq = pd.factorize(vals, sort=True, use_na_sentinel=False)
        codes.append(np.asarray(code, dtype=np.int64))
        sizes.append(len(uniq))
    return combine_codes(codes, sizes)


def group_codes(units: pd.DataFrame, by: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Group code of every unit (sorted key order) and the table of group keys."""
    by = list(by)
    if not by:
        return np.zeros(len(units), dtype=np.int64), pd.DataFrame(index=pd.RangeIndex(1))
    if len(units) == 0:
        return np.zeros(0, dtype=np.int64), units[by].iloc[:0].reset_index(drop=True)
    code, first = _factorized(units, by)
    keys = units[by].iloc[first].reset_index(drop=True)
    return code, keys


def canonical_rank(units: pd.DataFrame) -> np.ndarray:
    """Rank of every unit in sorted key order (independent of the table's row order)."""
    if len(units) == 0:
        return np.zeros(0, dtype=np.int64)
    code, _ = _factorized(units, list(units.columns))
    return code
