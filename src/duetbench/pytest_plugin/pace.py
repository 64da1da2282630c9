"""The runs' pace (docs/pytest.md, "Cost"): a run slower than planned makes the next
take fewer samples of every test, so the session keeps its runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .design import Design, paced_share

__all__ = ["Pacer"]


class Pacer:
    """The runs' pace (docs/pytest.md, "Cost"): after every run, the share of the
    planned samples the next one takes (:func:`~.design.paced_share`), written to
    ``path`` before the next run starts; both sides of a run read it at their first
    test, so they take the same samples. An observer of the runs around ``inner``."""

    def __init__(self, inner: Any, path: Path, design: Design) -> None:
        self.inner, self.path, self.design = inner, path, design
        self.share = 1.0
        self.shares: list[float] = []  # the share of each run, in order
        self.slowest = 1.0  # the most a run took over its prediction
        self.per_share_s: float | None = None  # the last run's sampling, per whole share
        self._started = 0.0
        self.write(1.0)

    def write(self, share: float) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"share": share}))
        os.replace(tmp, self.path)
        self.share = share

    def experiment_started(self, store: Any, plan: Any, todo: Any) -> None:
        self.inner.experiment_started(store, plan, todo)

    def run_started(self, spec: Any) -> None:
        self._started = time.monotonic()
        self.inner.run_started(spec)

    def run_finished(self, spec: Any, record: Any) -> None:
        took = time.monotonic() - self._started
        d = self.design
        predicted = d.overhead_s + self.share * (d.run_s - d.overhead_s)
        self.slowest = max(self.slowest, took / predicted if predicted > 0 else 1.0)
        self.shares.append(self.share)
        if took > d.overhead_s:
            self.per_share_s = (took - d.overhead_s) / self.share
        self.write(paced_share(took, self.share, d))
        self.inner.run_finished(spec, record)

    def predict(self) -> float | None:
        """What the next run will take at its share, at the last run's pace (None before
        the first run): what the deadline expects (schedule/inline.py)."""
        if self.per_share_s is None:
            return None
        return self.design.overhead_s + self.share * self.per_share_s

    def experiment_finished(self, summary: Any) -> None:
        self.inner.experiment_finished(summary)

    def note(self) -> str | None:
        """What the pace did, when it took fewer samples than planned."""
        paced = [s for s in self.shares if s < 1.0]
        if not paced:
            return None
        lo, hi = min(paced), max(paced)
        took = f"{lo:.0%}" if round(lo, 2) == round(hi, 2) else f"{lo:.0%}-{hi:.0%}"
        return (
            f"the runs took up to {self.slowest:.1f}x the time planned (the machine was "
            f"busier than during the calibration): {len(paced)} of {len(self.shares)} runs "
            f'took {took} of the planned samples, to keep the pace (docs/pytest.md, "Cost")'
        )
