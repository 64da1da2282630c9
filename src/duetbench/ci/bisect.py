"""`duet bisect`: which commit between a good and a bad revision made it slower.

Every step builds the candidate and compares it (B) with the known-good build (A) on
this machine, measured until sure (docs/adaptive.md): ``slower`` marks it bad;
``equivalent``, ``faster`` or ``no change detected`` good. ``inconclusive`` -- the stopping rule kept
measuring until its budget or ``max_runs`` ended it -- and a failed or timed-out
build skip the candidate: bisect never guesses; so does a candidate that does not run (a
python benchmark that cannot import in its tree, every run failing on its side B). A
known-good tree that does not run is an error (exit 2) naming the cause.
docs/history.md, "Bisect".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.model import Experiment
from ..errors import DuetError
from ..micro.api import MicroError
from .gate import RunsFailed, compare_trees, gate_name, tree_experiment
from .trees import BuildError, Trees, git, resolve

__all__ = ["BisectResult", "Step", "bisect", "next_candidate"]

GOOD_VERDICTS = ("equivalent", "faster", "no change detected", "same", "same (below threshold)")


@dataclass(frozen=True)
class Step:
    """One candidate: its verdict (or why it was skipped) and its interval."""

    commit: str
    subject: str
    outcome: str  # bad | good | skip
    verdict: str  # slower, equivalent, ..., inconclusive, build failed
    change: float | None = None
    low: float | None = None
    high: float | None = None
    runs: int = 0
    results: str = ""
    why: str = ""


@dataclass(frozen=True)
class BisectResult:
    good: str
    bad: str
    first_bad: str | None  # None: skipped candidates leave it open
    candidates: tuple[str, ...]  # the commits it may be (one when found)
    steps: tuple[Step, ...] = field(default_factory=tuple)

    def step_of(self, commit: str) -> Step | None:
        return next((s for s in self.steps if s.commit == commit and s.outcome == "bad"), None)


def next_candidate(n: int, lo: int, hi: int, skipped: set[int]) -> int | None:
    """The untested index strictly between ``lo`` (good) and ``hi`` (bad) nearest their
    midpoint (None: all skipped)."""
    mid = (lo + hi) // 2
    order = sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i))
    return next((i for i in order if i not in skipped), None)


def _candidate_only(exc: MicroError | RunsFailed) -> bool:
    """Only side B (the candidate) failed: skip it; side A is the known-good tree, whose
    failure every step would repeat."""
    if isinstance(exc, RunsFailed):
        return exc.sides == frozenset({"B"})
    return exc.side == "B"


def _worst_row(rows: Any) -> dict[str, Any]:
    rank = {"slower": 0, "inconclusive": 1, "no data": 2}
    records = rows.to_dict("records")
    return min(records, key=lambda r: rank.get(str(r["verdict"]), 3))


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def bisect(
    exp: Experiment,
    *,
    good: str,
    bad: str,
    build: str | None,
    out_dir: Path,
    repo: str | Path = ".",
    build_timeout: float | None = None,
    on_step: Callable[[Step], None] | None = None,
    record: Callable[[Path, Path, Path], None] | None = None,
) -> BisectResult:
    """Search the first-parent history from ``good`` (exclusive) to ``bad``."""
    with Trees(repo) as trees:
        good_c, bad_c = resolve(trees.repo, good), resolve(trees.repo, bad)
        if good_c == bad_c:
            raise DuetError(
                f"--good {good!r} and --bad {bad!r} are the same commit ({good_c[:10]}); give "
                "--good an earlier revision known to be fast"
            )
        listed = git(trees.repo, "rev-list", "--first-parent", "--reverse", f"{good_c}..{bad_c}")
        commits = listed.split()
        if not commits or commits[-1] != bad_c:
            raise DuetError(
                f"{bad!r} is not a descendant of {good!r} along first parents; give --good an "
                "ancestor of --bad"
            )
        good_tree = trees.checkout(good_c, "good")
        try:
            trees.build(good_tree, build, timeout=build_timeout)
        except BuildError as exc:
            raise DuetError(f"the known-good revision {good!r} does not build: {exc}") from None
        steps: list[Step] = []
        lo, hi, skipped = -1, len(commits) - 1, set()
        measured_bad: Step | None = None

        def measure(i: int) -> Step:
            commit = commits[i]
            subject = git(trees.repo, "log", "-1", "--format=%s", commit)
            tree = trees.checkout(commit, f"c{i}")
            try:
                try:
                    trees.build(tree, build, timeout=build_timeout)
                except BuildError as exc:
                    return Step(commit, subject, "skip", "build failed", why=str(exc))
                name = gate_name(exp.name, good_c, commit).replace("-gate-", "-bisect-")
                title = f"duet bisect: {commit[:10]} against {good_c[:10]}"
                try:
                    res = compare_trees(tree_experiment(exp, good_tree, tree, name), out_dir, title)
                except (MicroError, RunsFailed) as exc:
                    if not _candidate_only(exc):
                        raise DuetError(
                            f"the known-good revision {good!r} does not run: {exc}"
                        ) from None
                    return Step(commit, subject, "skip", "does not run", why=str(exc))
                if res.interrupted:
                    raise KeyboardInterrupt
                if record is not None:
                    record(res.root, good_tree, tree)
                if res.rows is None or res.rows.empty:
                    return Step(commit, subject, "skip", "no data", results=str(res.root))
                row = _worst_row(res.rows)
                verdict = str(row["verdict"])
                outcome = (
                    "bad" if verdict == "slower" else "good" if verdict in GOOD_VERDICTS else "skip"
                )
                return Step(
                    commit,
                    subject,
                    outcome,
                    verdict,
                    _num(row.get("change")),
                    _num(row.get("ci_low")),
                    _num(row.get("ci_high")),
                    int(row.get("runs") or 0),
                    str(res.root),
                    str(row.get("explanation") or ""),
                )
            finally:
                trees.remove(tree)

        while True:
            i = next_candidate(len(commits), lo, hi, skipped)
            if i is None:
                break
            step = measure(i)
            steps.append(step)
            if on_step is not None:
                on_step(step)
            if step.outcome == "bad":
                hi, measured_bad = i, step
            elif step.outcome == "good":
                lo = i
            else:
                skipped.add(i)
        if measured_bad is None or measured_bad.commit != commits[hi]:
            # the first bad commit is --bad itself: measure it for its interval
            step = measure(hi)
            steps.append(step)
            if on_step is not None:
                on_step(step)
        open_range = [commits[j] for j in range(lo + 1, hi + 1)]
        last = next((s for s in reversed(steps) if s.commit == commits[hi]), None)
        found = last is not None and last.outcome == "bad" and hi == lo + 1
        return BisectResult(
            good_c,
            bad_c,
            commits[hi] if found else None,
            tuple(open_range),
            tuple(steps),
        )
