"""Seeded synthetic iterations tables (for tests, benchmarks and documentation).

The model is multiplicative (log scale), after METHODS.md 5.3 and Bakshy &
Frachtenberg's random effects: an iteration of side X in run r on host h takes

    mean_ns * exp(host_h + run_{r,X} + noise_{r,X,k}) * outlier * (1 + slowdown if X = B)

* ``run_sd``: run effect. Sequential (seqn) sides are separate runs and draw
  independent run effects; the two sides of a duet run share one.
* ``iter_sd``: independent per-iteration noise of each side.
* ``shared_sd``: per-iteration interference that hits both sides of a duet
  iteration alike (a noisy neighbour); seqn sides draw it independently.
* ``outlier_p``: chance that an iteration of one side is ``outlier_factor`` slower.
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
    log_a = (host_eff + run_a)[:, None] + shared_a + rng.normal(0.0, iter_sd, (n_units, i_n))
    log_b = (
        (host_eff + host_b + run_b)[:, None] + shared_b + rng.normal(0.0, iter_sd, (n_units, i_n))
    )
    dur = np.stack([np.exp(log_a), np.exp(log_b) * (1.0 + slowdown)], axis=1)  # (U, 2, I)
    if outlier_p:
        hit = rng.random(dur.shape) < outlier_p
        dur = np.where(hit, dur * outlier_factor, dur)
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
        "method": (um[u_idx], list(methods)),
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
    df = pd.DataFrame(cols)
    return df
