"""What earlier experiments say about the next one: the :class:`Prior` of a benchmark x
method on one host (docs/history.md, "Priors"), one value for every use.

:func:`duetbench.history.priors` computes it from a results repository; the stopping
rule decides with its spread and shape (:mod:`.prior_intervals`, :mod:`.guards`;
docs/adaptive.md, "Stopping with the repository's priors"), ``method: auto`` scores a
method with its spread and machine seconds per repetition without a pilot
(:mod:`.method_choice`; "Choosing from the repository"), and `duet plan --repo` plans
with its cost model and predicts the stop of the rule with the same prior ("Cost model
and planning"). :class:`HostPriors` is what a command reads for the stopping rules of
one experiment: this host's priors in a repository, and where they came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..analysis.costs import STAT_FACTOR, CostModel
from ..errors import AnalysisError
from .guards import ShapePrior

__all__ = ["HostPriors", "Prior"]


@dataclass(frozen=True)
class Prior:
    """The priors of one benchmark x method on one host (docs/history.md, "Priors").

    ``sd``: the spread of its run values (log scale) pooled over ``experiments``
    experiments with each one's mean removed, ``df`` its degrees of freedom (None and 0:
    the experiments give no estimate), from ``runs`` run values; ``shape``: their serial
    correlation and skewness (the guards' prior; None: too few runs, or a stops.json of
    an older release); ``seconds_per_run``: machine seconds of one repetition (a seqn
    one: A and B; None: not known). The rest says where it came from -- the series and
    host fingerprint, the experiments of the window (``window``, oldest first) and those
    left out (``skipped``) -- and what a run costs besides (``duet history show``, the
    cost model :meth:`cost_model`); a prior made by hand or read back from stops.json
    leaves them empty."""

    sd: float | None
    df: int
    runs: int = 0
    experiments: int = 0
    shape: ShapePrior | None = None
    seconds_per_run: float | None = None
    suite: str = ""
    benchmark: str = ""
    method: str = ""
    host: str = ""  # fingerprint
    window: tuple[int, ...] = ()
    iterations: float | None = None  # mean pairs per run
    seconds_per_iteration: float | None = None
    seconds_fixed: float | None = None
    warmup: int | None = None
    left_out_share: float | None = None
    unbalanced_share: float | None = None
    within_runs: float | None = None
    stat_factor: float = STAT_FACTOR["median"]
    skipped: tuple[tuple[int, str], ...] = field(default=())  # (experiment, why left out)

    def __post_init__(self) -> None:
        sd_ok = self.sd is None or (math.isfinite(self.sd) and self.sd >= 0.0)
        if not sd_ok or int(self.df) < (0 if self.sd is None else 1):
            raise ValueError(f"a prior needs a finite sd >= 0 with df >= 1, got {self}")
        sec = self.seconds_per_run
        if sec is not None and not (math.isfinite(sec) and sec > 0.0):
            raise ValueError(f"a prior needs machine seconds > 0 per run, got {self}")

    @property
    def has_spread(self) -> bool:
        """Whether it has a spread: what the stopping rule needs."""
        return self.sd is not None and self.df >= 1

    @property
    def usable(self) -> bool:
        """Whether it can plan and score a method: a spread and machine seconds per run."""
        return self.has_spread and self.seconds_per_run is not None

    @property
    def score(self) -> float:
        """``method: auto``'s score, ``sd^2 x seconds_per_run``: the variance of the mean
        after one machine-second, as a pilot's runs would give it."""
        if not self.usable:
            raise AnalysisError(f"{self._name()}: the prior has no spread and machine time")
        return float(self.sd) ** 2 * float(self.seconds_per_run)  # type: ignore[arg-type]

    def _name(self) -> str:
        return f"{self.benchmark} [{self.method}]" if self.benchmark else "a prior"

    def cost_model(self) -> CostModel:
        """The prior as the cost model planning uses: the run-value variance ``sd^2`` at
        the pairs per run seen, split into between- and within-run parts as
        :func:`~duetbench.analysis.costs.estimate_costs` does."""
        if not self.usable:
            raise AnalysisError(
                f"{self._name()}: the repository has no spread and cost "
                "for it on this host (needs an experiment with at least 2 runs)"
            )
        var = float(self.sd) ** 2  # type: ignore[arg-type]
        i0 = float(self.iterations or 1.0)
        within = float(self.within_runs or 0.0)
        between = max(0.0, var - self.stat_factor * within / i0)
        return CostModel(
            suite=self.suite,
            benchmark=self.benchmark,
            method=self.method,
            runs=self.df + 1,
            iterations=i0,
            run_var=var,
            between_runs=between,
            within_runs=within if between > 0 else var * i0 / self.stat_factor,
            stat_factor=self.stat_factor,
            warmup=int(self.warmup or 0),
            seconds_per_run=float(self.seconds_per_run),  # type: ignore[arg-type]
            seconds_per_iteration=float(self.seconds_per_iteration or 0.0),
            seconds_fixed=float(self.seconds_fixed or 0.0),
        )

    def to_json(self) -> dict[str, Any]:
        """The whole prior (`duet history show --format json`)."""
        shape = self.shape
        return {
            "suite": self.suite,
            "benchmark": self.benchmark,
            "method": self.method,
            "host": self.host,
            "experiments": list(self.window),
            "runs": self.runs,
            "sd": self.sd,
            "df": self.df,
            "iterations": self.iterations,
            "seconds_per_run": self.seconds_per_run,
            "seconds_per_iteration": self.seconds_per_iteration,
            "seconds_fixed": self.seconds_fixed,
            "warmup": self.warmup,
            "left_out_share": self.left_out_share,
            "unbalanced_share": self.unbalanced_share,
            "serial_r": None if shape is None else shape.r,
            "skew": None if shape is None else shape.skew,
            "shape_runs": 0 if shape is None else shape.runs,
            "skipped": [{"experiment": e, "why": w} for e, w in self.skipped],
        }

    def stops_json(self) -> dict[str, object]:
        """What a stopping rule decided with (stops.json ``priors``): read back by
        :meth:`from_stops_json` when an experiment is resumed or analysed."""
        out: dict[str, object] = {
            "sd": self.sd,
            "df": int(self.df),
            "experiments": int(self.experiments),
            "runs": int(self.runs),
        }
        if self.shape is not None:
            out["shape"] = self.shape.to_json()
        if self.seconds_per_run is not None:
            out["seconds_per_run"] = self.seconds_per_run
        return out

    @classmethod
    def from_stops_json(cls, d: object) -> Prior | None:
        """The prior of a stops.json ``priors`` entry (None: no spread recorded)."""
        if not isinstance(d, dict) or d.get("sd") is None or not d.get("df"):
            return None
        sec = d.get("seconds_per_run")
        known = isinstance(sec, (int, float)) and math.isfinite(sec) and sec > 0
        return cls(
            float(d["sd"]),
            int(d["df"]),
            runs=int(d.get("runs") or 0),
            experiments=int(d.get("experiments") or 0),
            shape=ShapePrior.from_json(d.get("shape")),
            seconds_per_run=float(sec) if known else None,
        )


@dataclass(frozen=True, eq=False)
class HostPriors:
    """This host's priors in a results repository, for the stopping rules of one
    experiment (`duet run --repo`, `duet gate`, `duet bisect`): ``priors`` per (benchmark,
    method), each with a spread; where they came from is stops.json's ``history``."""

    priors: Mapping[tuple[str, str], Prior]
    repository: str = ""
    host: str = ""  # fingerprint
    last: int = 0  # experiments in each window

    def source(self) -> dict[str, object]:
        return {"repository": self.repository, "host": self.host, "last": int(self.last)}

    @classmethod
    def from_stops(cls, stops: object) -> HostPriors | None:
        """The priors a stops.json document's rules decided with (None: none): a resumed
        experiment keeps those it started with, so it reaches the decisions it would have."""
        h = stops.get("history") if isinstance(stops, dict) else None
        if not isinstance(h, dict) or not h:
            return None
        found: dict[tuple[str, str], Prior] = {}
        for entry in (stops.get("stops") or {}).values():  # type: ignore[union-attr]
            for bench, d in (entry.get("priors") or {}).items():
                prior = Prior.from_stops_json(d)
                if prior is not None:
                    found[(str(bench), str(entry.get("method")))] = prior
        return cls(
            found, str(h.get("repository", "")), str(h.get("host", "")), int(h.get("last") or 0)
        )
