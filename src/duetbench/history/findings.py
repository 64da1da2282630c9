"""What change detection finds, and the settings it uses (frozen values with ``to_json``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..analysis.distributions import norm_isf
from ..schema import Verdict
from ._db import HistoryError
from .series import SeriesKey


@dataclass(frozen=True)
class DetectionSettings:
    """``alpha``: two-sided level per step of the paired series; ``alpha_absolute``: the
    same for the absolute scan; ``min_change``: smallest relative change reported;
    ``window``: versions on each side used for local noise and medians;
    ``min_segment``: versions a level must hold to count (absolute series);
    ``use_evidence``: judge a step that carries its experiment's own verdict and interval
    (a stopping rule's, or a fixed-n verdict's) on that, instead of re-testing its runs
    at ``alpha``."""

    alpha: float = 0.002
    alpha_absolute: float = 0.0002
    min_change: float = 0.01
    window: int = 10
    min_segment: int = 3
    use_evidence: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1 or not 0 < self.alpha_absolute < 1:
            raise HistoryError("alpha must be in (0, 1), e.g. 0.001")
        if self.min_change < 0:
            raise HistoryError("min_change must be >= 0 (a fraction: 0.01 = 1 %)")
        if self.window < 2 or self.min_segment < 2 or self.min_segment > self.window:
            raise HistoryError("need window >= min_segment >= 2")

    @property
    def z(self) -> float:
        return float(norm_isf(self.alpha / 2))

    @property
    def z_absolute(self) -> float:
        return float(norm_isf(self.alpha_absolute / 2))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Change:
    """A change of a series: the first version that shows it, its size (relative, positive =
    slower) with a 95 % interval, where it was found, and the evidence in words."""

    key: SeriesKey
    first_bad: str
    last_good: str | None
    change: float
    ci_low: float
    ci_high: float
    source: str  # paired | absolute | marked
    final: bool
    evidence: str
    experiments: tuple[int, ...] = ()
    z: float | None = None
    marked: str | None = None  # the note of a user mark at this version
    commit: str | None = None

    @property
    def direction(self) -> str:
        return Verdict.SLOWER.value if self.change > 0 else Verdict.FASTER.value

    @property
    def regression(self) -> bool:
        return self.change > 0

    def to_json(self) -> dict[str, Any]:
        return {
            **self.key.to_json(),
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "commit": self.commit,
            "change": _finite(self.change),
            "ci_low": _finite(self.ci_low),
            "ci_high": _finite(self.ci_high),
            "direction": self.direction,
            "source": self.source,
            "final": self.final,
            "z": _finite(self.z),
            "marked": self.marked,
            "experiments": list(self.experiments),
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class Spike:
    """One version measured slow (or fast) and the next back: not a change."""

    key: SeriesKey
    version: str
    change: float
    evidence: str
    experiments: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            **self.key.to_json(),
            "version": self.version,
            "change": _finite(self.change),
            "evidence": self.evidence,
            "experiments": list(self.experiments),
        }


@dataclass(frozen=True)
class Dismissed:
    """A move of the absolute series that a direct comparison shows was not the program."""

    key: SeriesKey
    version: str
    change: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            **self.key.to_json(),
            "version": self.version,
            "change": _finite(self.change),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class EnvironmentChange:
    """A benchmark moved to a machine with another fingerprint: drift, never a regression."""

    suite: str
    benchmark: str
    method: str
    version: str
    before: str
    after: str
    differences: tuple[tuple[str, Any, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "benchmark": self.benchmark,
            "method": self.method,
            "version": self.version,
            "host_before": self.before,
            "host_after": self.after,
            "differences": {k: [a, b] for k, a, b in self.differences},
        }


@dataclass(frozen=True)
class ChangeReport:
    """``duet history changes``: everything found, with the settings used."""

    changes: tuple[Change, ...]
    spikes: tuple[Spike, ...] = ()
    dismissed: tuple[Dismissed, ...] = ()
    environment: tuple[EnvironmentChange, ...] = ()
    settings: DetectionSettings = field(default_factory=DetectionSettings)

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.regression)

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_json(),
            "changes": [c.to_json() for c in self.changes],
            "spikes": [s.to_json() for s in self.spikes],
            "dismissed": [d.to_json() for d in self.dismissed],
            "environment": [e.to_json() for e in self.environment],
        }


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def signed_pct(x: float) -> str:
    """A relative change as `+1.2 %` (the findings' explanations)."""
    return f"{x * 100:+.1f} %"
