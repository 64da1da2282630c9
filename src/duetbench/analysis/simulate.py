"""Seeded synthetic iterations tables (for tests, benchmarks and documentation).

The model is multiplicative (log scale), after the base model of docs/statistics.md
("Calibration of every option") and Bakshy & Frachtenberg's random effects: an iteration of side X in run r on host h takes

    mean_ns * exp(host_h + run_{r,X} + noise_{r,X,k}) * outlier * (1 + slowdown if X = B)

* ``run_sd``: run effect. Sequential (seqn) sides are separate runs and draw
  independent run effects; the two sides of a duet run share one.
* ``iter_sd``: independent per-iteration noise of each side.
* ``shared_sd``: per-iteration interference that hits both sides of a duet
  iteration alike (a noisy neighbour); seqn sides draw it independently.
* ``outlier_p``: chance that an iteration of one side is ``outlier_factor`` slower.
* ``iter_df``: when > 0, the iteration noise is Student-t with ``iter_df`` degrees
  of freedom and scale ``iter_sd`` (heavy tails) instead of normal, clipped to
  +-20 (a factor of e**20) so that durations stay within int64 nanoseconds.
* ``shift_p``, ``shift``: chance that one side's whole run (one process: its memory
  layout, its CPU) is ``shift`` slower; independent per side, so no method cancels it.
* ``drift``: the machine slows down by this share from the first run of the
  experiment to the last; the runs execute in random order (as the ``rmit``
  schedule does), the sides of a duet run at the same time, seqn sides apart.
* ``host_sd``: host effect on both sides; ``host_b_sd``: a host effect on B only
  (e.g. CPU asymmetry) -- the between-host variance that clustering must see. Both
  are drawn per (benchmark, host), so benchmarks are independent experiments.

Timestamps: seqn runs A, then B; duet sides start together; aduet sides iterate
independently (so they drift apart), sduet iterations start together. Gaps
between iterations are ``gap_ns`` times Uniform(0.5, 1.5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

_EPOCH = 1_700_000_000_000_000_000


def _strings(codes: np.ndarray, categories: Sequence[str], categorical: bool) -> pd.Series:
    """A text column from codes: categorical, or pandas' default string dtype."""
    cat = pd.Categorical.from_codes(codes, categories=list(categories))
    if categorical:
        return pd.Series(cat)
    try:  # fast path: decode the dictionary in Arrow
        import pyarrow as pa

        arr = pa.DictionaryArray.from_arrays(
            pa.array(codes.astype(np.int32)), pa.array(list(categories), type=pa.string())
        )
        return pd.Series(arr.cast(pa.string()).to_pandas())
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return pd.Series(cat).astype(str)


def simulate(
    *,
    benchmarks: int | Sequence[str] = 1,
    suites: int = 1,
    hosts: int | Sequence[str] = 1,
    methods: Sequence[str] = ("seqn", "aduet", "sduet"),
    runs: int = 10,
    iterations: int = 30,
    mean_ns: float | Sequence[float] = 100e6,
    run_sd: float = 0.03,
    iter_sd: float = 0.01,
    shared_sd: float = 0.0,
    outlier_p: float = 0.0,
    outlier_factor: float = 1.5,
    slowdown: float = 0.0,
    iter_df: float = 0.0,
    shift_p: float = 0.0,
    shift: float = 0.1,
    drift: float = 0.0,
    host_sd: float = 0.0,
    host_b_sd: float = 0.0,
    gap_ns: float = 1e6,
    startup_ns: float = 50e6,
    seed: int = 0,
    experiment: str = "sim",
    categorical: bool = False,
) -> pd.DataFrame:
    """A seeded iterations table (schema of ``duetbench.schema``) -- see the module doc.

    Adds ``proc_start_ns``/``proc_end_ns`` (each side's process lifetime:
    ``startup_ns`` before the first and after the last iteration).
    """
    rng = np.random.default_rng(seed)
    bnames = (
        [f"bench{i:03d}" for i in range(benchmarks)]
        if isinstance(benchmarks, int)
        else list(benchmarks)
    )
    hnames = [f"host{i}" for i in range(hosts)] if isinstance(hosts, int) else list(hosts)
    nb, nh, nm = len(bnames), len(hnames), len(methods)
    means = np.broadcast_to(np.asarray(mean_ns, dtype=np.float64), (nb,))
    n_units = nb * nh * nm * runs
    i_n = iterations
    # unit axes: (benchmark, host, method, run)
    ub = np.repeat(np.arange(nb), nh * nm * runs)
    uh = np.tile(np.repeat(np.arange(nh), nm * runs), nb)
    um = np.tile(np.repeat(np.arange(nm), runs), nb * nh)
    ur = np.tile(np.arange(runs), nb * nh * nm)
    is_seqn = np.asarray(methods, dtype=object)[um] == "seqn"
    is_sduet = np.asarray(methods, dtype=object)[um] == "sduet"
    host_eff = rng.normal(0.0, host_sd, (nb, nh))[ub, uh] if host_sd else np.zeros(n_units)
    host_b = rng.normal(0.0, host_b_sd, (nb, nh))[ub, uh] if host_b_sd else np.zeros(n_units)
    run_a = rng.normal(0.0, run_sd, n_units)
    run_b = np.where(is_seqn, rng.normal(0.0, run_sd, n_units), run_a)
    shared_a = rng.normal(0.0, shared_sd, (n_units, i_n)) if shared_sd else np.zeros((n_units, i_n))
    shared_b = (
        np.where(is_seqn[:, None], rng.normal(0.0, shared_sd, (n_units, i_n)), shared_a)
        if shared_sd
        else shared_a
    )

    def noise() -> np.ndarray:
        if iter_df > 0:  # kept within e**+-20 so that durations stay int64 nanoseconds
            return np.clip(iter_sd * rng.standard_t(iter_df, (n_units, i_n)), -20.0, 20.0)
        return rng.normal(0.0, iter_sd, (n_units, i_n))

    log_a = (host_eff + run_a)[:, None] + shared_a + noise()
    log_b = (host_eff + host_b + run_b)[:, None] + shared_b + noise()
    dur = np.stack([np.exp(log_a), np.exp(log_b) * (1.0 + slowdown)], axis=1)  # (U, 2, I)
    if outlier_p:
        hit = rng.random(dur.shape) < outlier_p
        dur = np.where(hit, dur * outlier_factor, dur)
    if shift_p:
        dur = dur * np.where(rng.random((n_units, 2, 1)) < shift_p, 1.0 + shift, 1.0)
    if drift:
        # position of each side's run in the experiment; duet sides run together
        pos = rng.random((n_units, 2))
        pos[:, 1] = np.where(is_seqn, pos[:, 1], pos[:, 0])
        dur = dur * (1.0 + drift) ** pos[:, :, None]
    dur = np.rint(dur * means[ub][:, None, None]).astype(np.int64)
    gaps = np.rint(gap_ns * rng.uniform(0.5, 1.5, dur.shape)).astype(np.int64)
    # run start times: units one after another, far apart
    unit_span = (dur.sum(axis=(1, 2)) + gaps.sum(axis=(1, 2)) + 4 * int(startup_ns)).astype(
        np.int64
    )
    t0 = _EPOCH + np.cumsum(unit_span) - unit_span + int(startup_ns)
    start = np.empty_like(dur)
    # independent sides: start_k = t0 + sum_{j<k} (d_j + gap_j)
    step = dur + gaps
    start[:] = t0[:, None, None] + np.cumsum(step, axis=2) - step
    # seqn: B starts after A's process ends
    a_end = start[:, 0, -1] + dur[:, 0, -1]
    start[:, 1, :] += np.where(is_seqn, a_end - t0 + 2 * int(startup_ns), 0)[:, None]
    if is_sduet.any():
        s_idx = np.flatnonzero(is_sduet)
        d_s, g_s = dur[s_idx], gaps[s_idx].max(axis=1)
        st = np.empty((len(s_idx), i_n), dtype=np.int64)
        st[:, 0] = t0[s_idx]
        for k in range(1, i_n):
            st[:, k] = st[:, k - 1] + d_s[:, :, k - 1].max(axis=1) + g_s[:, k - 1]
        start[s_idx] = st[:, None, :]
    end = start + dur
    return _frame(
        start,
        end,
        rng,
        unit_axes=(ub, uh, um, ur),
        names=(bnames, hnames, list(methods)),
        is_seqn=is_seqn,
        suites=suites,
        experiment=experiment,
        categorical=categorical,
        startup_ns=startup_ns,
    )


def _frame(
    start: np.ndarray,
    end: np.ndarray,
    rng: np.random.Generator,
    *,
    unit_axes: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    names: tuple[list[str], list[str], list[str]],
    is_seqn: np.ndarray,
    suites: int,
    experiment: str,
    categorical: bool,
    startup_ns: float,
) -> pd.DataFrame:
    """The iterations table of ``start``/``end`` (units x 2 sides x iterations, int64 ns)."""
    ub, uh, um, ur = unit_axes
    bnames, hnames, mnames = names
    n_units, _, i_n = start.shape
    dur = end - start
    nb = len(bnames)
    order_ab = (rng.random(n_units) < 0.5).astype(np.int64)  # 0: AB, 1: BA
    n_rows = n_units * 2 * i_n
    u_idx = np.repeat(np.arange(n_units), 2 * i_n)
    side = np.tile(np.repeat(np.arange(2), i_n), n_units)
    # order: AB / BA for duet runs, the side ("A" / "B") for seqn
    order = np.where(is_seqn[u_idx], 2 + side, order_ab[u_idx])
    bench_suite = np.arange(nb) % max(suites, 1)
    text = {
        "experiment": (np.zeros(n_rows, dtype=np.int64), [experiment]),
        "host": (uh[u_idx], hnames),
        "suite": (bench_suite[ub[u_idx]], [f"suite{i}" for i in range(max(suites, 1))]),
        "benchmark": (ub[u_idx], bnames),
        "method": (um[u_idx], mnames),
    }
    cols: dict[str, object] = {k: _strings(c, cats, categorical) for k, (c, cats) in text.items()}
    cols["run"] = ur[u_idx].astype(np.int64)
    cols["pair"] = _strings(side, ["A", "B"], categorical)
    cols["order"] = _strings(order, ["AB", "BA", "A", "B"], categorical)
    cols["iteration"] = np.tile(np.arange(i_n, dtype=np.int64), n_units * 2)
    cols["start_ns"] = start.reshape(-1)
    cols["end_ns"] = end.reshape(-1)
    cols["duration_ns"] = dur.reshape(-1)
    proc_start = start[:, :, 0] - int(startup_ns)
    proc_end = end[:, :, -1] + int(startup_ns)
    cols["proc_start_ns"] = np.repeat(proc_start.reshape(-1), i_n)
    cols["proc_end_ns"] = np.repeat(proc_end.reshape(-1), i_n)
    return pd.DataFrame(cols)


# -- interference on a timeline ------------------------------------------------------


class _Speed:
    """Piecewise-constant slowness of many lanes (a lane: one side of one run).

    Lane ``l`` takes ``factor[l, j]`` ns per ns of work between ``edge[l, j]`` and
    ``edge[l, j + 1]`` (``edge[l, 0] = 0``), and 1 after the last edge. ``work[l, j]``
    is the work done by ``edge[l, j]``. All lanes are searched at once through
    composite keys (lane offset + value).
    """

    def __init__(self, edge: np.ndarray, factor: np.ndarray) -> None:
        n_lanes, k = factor.shape
        self.edge = edge  # (L, K + 1)
        self.factor = np.concatenate([factor, np.ones((n_lanes, 1))], axis=1)  # (L, K + 1)
        seg_work = np.diff(edge, axis=1) / factor
        self.work = np.concatenate([np.zeros((n_lanes, 1)), np.cumsum(seg_work, axis=1)], axis=1)
        self.k1 = k + 1
        self.span = float(max(edge[:, -1].max(), self.work[:, -1].max())) * 4.0 + 1.0

    def _find(self, table: np.ndarray, lane: np.ndarray, value: np.ndarray) -> np.ndarray:
        """Flat index of the last breakpoint at or below ``value`` in each lane."""
        off = np.arange(len(table), dtype=np.float64)[:, None] * self.span
        flat = (table + off).ravel()
        pos = np.searchsorted(flat, value + lane * self.span, side="right") - 1
        return np.maximum(pos, lane * self.k1)

    def time_of_work(self, lane: np.ndarray, w: np.ndarray) -> np.ndarray:
        """When lane ``lane`` (started at time 0) has done ``w`` ns of work."""
        j = self._find(self.work, lane, w)
        return self.edge.ravel()[j] + (w - self.work.ravel()[j]) * self.factor.ravel()[j]

    def work_at(self, lane: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Work lane ``lane`` has done by time ``t``."""
        j = self._find(self.edge, lane, t)
        return self.work.ravel()[j] + (t - self.edge.ravel()[j]) / self.factor.ravel()[j]


def _slow_periods(
    rng: np.random.Generator,
    n: int,
    horizon: float,
    slow_share: float,
    period_ns: float,
    shared: float,
    slow_factor: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` interference processes, each seen by two lanes (A, B).

    Alternating normal and slow periods (exponential lengths, mean ``period_ns`` when
    slow, long-run share ``slow_share`` of time slow). A slow period hits both lanes
    with probability ``shared``, else one lane chosen at random. Returns the edges
    (n, K + 1) and the factors of each lane (n, 2, K).
    """
    if slow_share <= 0.0:
        return np.zeros((n, 2)) + [0.0, horizon], np.ones((n, 2, 1))
    normal_ns = period_ns * (1.0 - slow_share) / slow_share
    k = int(np.ceil(2.0 * horizon / (period_ns + normal_ns))) + 16
    first_slow = rng.random(n) < slow_share
    slow = (np.arange(k)[None, :] % 2 == 0) == first_slow[:, None]  # alternate
    lengths = rng.exponential(1.0, (n, k)) * np.where(slow, period_ns, normal_ns)
    edge = np.concatenate([np.zeros((n, 1)), np.cumsum(lengths, axis=1)], axis=1)
    both = rng.random((n, k)) < shared
    which = rng.random((n, k)) < 0.5  # the lane hit by a one-sided period: A if True
    hit = np.stack([both | which, both | ~which], axis=1) & slow[:, None, :]
    return edge, np.where(hit, slow_factor, 1.0)


def simulate_interference(
    *,
    ratio: float | Sequence[float] = 1.0,
    benchmarks: int = 1,
    methods: Sequence[str] = ("aduet",),
    runs: int = 10,
    iterations: int = 30,
    mean_ns: float = 10e6,
    iter_sd: float = 0.02,
    run_sd: float = 0.0,
    side_run_sd: float = 0.0,
    slow_share: float = 0.3,
    slow_factor: float = 2.0,
    period_ns: float = 50e6,
    shared: float = 1.0,
    gap_ns: float = 0.2e6,
    startup_ns: float = 50e6,
    seed: int = 0,
    experiment: str = "sim",
    categorical: bool = False,
) -> pd.DataFrame:
    """Runs laid out on a timeline where interference slows the sides down.

    Every iteration of A has work ``mean_ns * exp(noise)`` (``iter_sd``; B's is
    ``ratio`` times that: the true B/A ratio, per benchmark when a sequence), done at
    full speed except in *slow periods*, in which a side takes ``slow_factor`` times
    as long. Slow periods alternate with normal ones (exponential lengths, mean
    ``period_ns`` when slow, ``slow_share`` of the time slow); each hits both sides
    of a duet run with probability ``shared`` (shared interference: a noisy
    neighbour on every core) and otherwise one side chosen at random (one-sided
    interference: a task sharing one side's CPU). Run effects: ``run_sd`` on both
    sides of a duet run (independent for the two seqn runs), ``side_run_sd`` on each
    side independently. Gaps between iterations are work of ``gap_ns``.

    aduet sides iterate independently (their iterations drift apart); sduet sides
    start every iteration together; a seqn repetition runs A, then B, each under its
    own interference. ``benchmarks`` experiments per ratio value.
    """
    rng = np.random.default_rng(seed)
    ratios = np.atleast_1d(np.asarray(ratio, dtype=np.float64))
    nb = len(ratios) * benchmarks
    bench_ratio = np.repeat(ratios, benchmarks)
    bnames = [f"bench{i:04d}" for i in range(nb)]
    nm, i_n = len(methods), iterations
    n_units = nb * nm * runs
    ub = np.repeat(np.arange(nb), nm * runs)
    um = np.tile(np.repeat(np.arange(nm), runs), nb)
    ur = np.tile(np.arange(runs), nb * nm)
    mnames = np.asarray(methods, dtype=object)
    is_seqn, is_sduet = mnames[um] == "seqn", mnames[um] == "sduet"
    run_a = rng.normal(0.0, run_sd, n_units)
    run_b = np.where(is_seqn, rng.normal(0.0, run_sd, n_units), run_a)
    run_eff = np.stack([run_a, run_b], axis=1) + rng.normal(0.0, side_run_sd, (n_units, 2))
    work = mean_ns * np.exp(run_eff[:, :, None] + rng.normal(0.0, iter_sd, (n_units, 2, i_n)))
    work[:, 1, :] *= bench_ratio[ub][:, None]
    gaps = gap_ns * rng.uniform(0.5, 1.5, (n_units, 2, i_n))
    horizon = float((work + gaps).sum(axis=2).max()) * max(slow_factor, 1.0) * 1.05 + 1.0
    # two processes per unit: a duet's sides share the first, seqn's B uses the second
    edge, factor = _slow_periods(
        rng, 2 * n_units, horizon, slow_share, period_ns, shared, slow_factor
    )
    edge2, factor2 = edge.reshape(n_units, 2, -1), factor.reshape(n_units, 2, 2, -1)
    lane_edge = np.where(is_seqn[:, None, None], edge2, edge2[:, :1, :]).reshape(2 * n_units, -1)
    lane_factor = np.stack(
        [factor2[:, 0, 0], np.where(is_seqn[:, None], factor2[:, 1, 1], factor2[:, 0, 1])], axis=1
    ).reshape(2 * n_units, -1)
    speed = _Speed(lane_edge, lane_factor)
    lane = np.arange(2 * n_units).reshape(n_units, 2)
    step = work + gaps
    w0 = np.cumsum(step, axis=2) - step  # work done when iteration k starts
    lanes = np.broadcast_to(lane[:, :, None], work.shape)
    t_start = speed.time_of_work(lanes.ravel(), w0.ravel()).reshape(work.shape)
    t_end = speed.time_of_work(lanes.ravel(), (w0 + work).ravel()).reshape(work.shape)
    if is_sduet.any():
        t_start, t_end = _synchronized(speed, lane, work, gaps, is_sduet, t_start, t_end)
    # lay the runs out one after another; seqn's B after A's process
    t_start, t_end = np.rint(t_start).astype(np.int64), np.rint(t_end).astype(np.int64)
    a_span = t_end[:, 0, -1] + 2 * int(startup_ns)
    b_shift = np.where(is_seqn, a_span, 0)
    t_start[:, 1, :] += b_shift[:, None]
    t_end[:, 1, :] += b_shift[:, None]
    unit_span = t_end.max(axis=(1, 2)) + 4 * int(startup_ns)
    t0 = _EPOCH + np.cumsum(unit_span) - unit_span + int(startup_ns)
    return _frame(
        t_start + t0[:, None, None],
        t_end + t0[:, None, None],
        rng,
        unit_axes=(ub, np.zeros(n_units, dtype=np.int64), um, ur),
        names=(bnames, ["host0"], list(methods)),
        is_seqn=is_seqn,
        suites=1,
        experiment=experiment,
        categorical=categorical,
        startup_ns=startup_ns,
    )


def _synchronized(
    speed: _Speed,
    lane: np.ndarray,
    work: np.ndarray,
    gaps: np.ndarray,
    is_sduet: np.ndarray,
    t_start: np.ndarray,
    t_end: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """sduet: iteration k of both sides starts after both ended k - 1 (plus a gap)."""
    s = np.flatnonzero(is_sduet)
    ls = lane[s].ravel()
    t = np.zeros(len(s))
    t_start, t_end = t_start.copy(), t_end.copy()
    for k in range(work.shape[2]):
        t2 = np.repeat(t, 2)
        w_end = speed.work_at(ls, t2) + work[s, :, k].ravel()
        end = speed.time_of_work(ls, w_end).reshape(len(s), 2)
        t_start[s, :, k] = t[:, None]
        t_end[s, :, k] = end
        t = end.max(axis=1) + gaps[s, :, k].max(axis=1)
    return t_start, t_end
