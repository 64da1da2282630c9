"""Seeded run-level values for the stopping study and the tests (vectorized).

Every experiment is a sequence of runs; each run has ``iterations`` pairs of A and B
iterations, and its value is the median of the pairs' log ratios, as ``duet compare``
computes it (the default run statistic). Log-scale model of an iteration of side X
in run r: ``run_{r,X} + noise_{r,X,k}`` (+ ``log(1 + change)`` on B):

* ``normal``: run effects N(0, run_sd), iteration noise N(0, iter_sd).
* ``heavy``: run effects and iteration noise Student-t with 3 degrees of freedom
  (scaled to the same SDs), and 2 % of iterations 1.5x slower on one side.
* ``shifts``: ``normal`` plus run-level shifts: each side of each run lands in a slow
  state (+2 run_sd) with probability 0.25 (random initial state: layout, frequency).
* ``drift``: the machine's speed follows a random walk over time (steps of run_sd/2
  per run); the two runs of a seqn repetition run back to back in random order, so a
  repetition sees the walk's step between them with a random sign; and the run noise
  grows slowly from 1x to 3x its SD over 50 runs (a neighbour arriving).

``method="seqn"``: A and B are separate runs (independent run effects). A duet
(``"duet"``) shares the run effect and the drift between its sides, keeping only
``duet_share`` of the run SD independent per side.
"""

from __future__ import annotations

import numpy as np

from duetbench.errors import AnalysisError

NOISE_MODELS = ("normal", "heavy", "shifts", "drift")
__all__ = ["NOISE_MODELS", "run_values"]


def _t3(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_t(3, shape) / np.sqrt(3.0)  # unit variance


def run_values(
    model: str,
    experiments: int,
    runs: int,
    *,
    change: float = 0.0,
    seed: int = 0,
    iterations: int = 20,
    run_sd: float = 0.03,
    iter_sd: float = 0.01,
    method: str = "seqn",
    duet_share: float = 0.2,
) -> np.ndarray:
    """Run-level values (log ratios), ``experiments x runs``, of one noise model."""
    if model not in NOISE_MODELS:
        raise AnalysisError(f"noise model must be one of {', '.join(NOISE_MODELS)}, got {model!r}")
    if method not in ("seqn", "duet"):
        raise AnalysisError(f"method must be 'seqn' or 'duet', got {method!r}")
    rng = np.random.default_rng(seed)
    e, n, i = experiments, runs, iterations
    heavy = model == "heavy"
    draw = (lambda s: _t3(rng, s)) if heavy else (lambda s: rng.standard_normal(s))
    scale = np.ones(n)
    if model == "drift":
        scale = 1.0 + 2.0 * np.arange(n) / 49.0
    own = 1.0 if method == "seqn" else duet_share
    run_a = draw((e, n)) * run_sd * own * scale
    run_b = draw((e, n)) * run_sd * own * scale
    if model == "shifts":
        run_a = run_a + 2.0 * run_sd * (rng.random((e, n)) < 0.25)
        run_b = run_b + 2.0 * run_sd * (rng.random((e, n)) < 0.25)
    if model == "drift" and method == "seqn":
        step = rng.standard_normal((e, n)) * run_sd / 2.0
        sign = np.where(rng.random((e, n)) < 0.5, 1.0, -1.0)  # B after A, or A after B
        run_b = run_b + sign * step
    log_a = run_a[:, :, None] + draw((e, n, i)) * iter_sd
    log_b = run_b[:, :, None] + draw((e, n, i)) * iter_sd + np.log1p(change)
    if heavy:
        log_a = log_a + np.log(1.5) * (rng.random((e, n, i)) < 0.02)
        log_b = log_b + np.log(1.5) * (rng.random((e, n, i)) < 0.02)
    return np.median(log_b - log_a, axis=2)
