"""`duet bisect`: which commit between a good and a bad revision made it slower.

Every step builds the candidate and compares it (B) with the known-good build (A) on
this machine, measured until sure (docs/adaptive.md): ``slower`` marks it bad;
``equivalent``, ``faster`` or ``no change detected`` good. A candidate the stopping rule
left ``inconclusive`` (its ``max_runs`` or budget ended a comparison first) is measured
again -- the candidate that splits the range is the one worth the machine time -- and
judged by the same rule on the run values of all its comparisons together (a
confidence sequence is valid at whatever run it is read); only after ``max_looks``
comparisons, or a failed or timed-out build, is it skipped. When the bisect's own
``budget_s`` ends, the range that remains is reported with the evidence of every
commit tested: bisect never guesses. A candidate that does not run (a python
benchmark that cannot import in its tree, every run failing on its side B) is skipped
with the cause; a known-good tree that does not run is an error (exit 2) naming it.
docs/history.md, "Bisect".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.model import Experiment
from ..errors import DuetError
from ..micro.api import MicroError
from ..schema import Verdict
from .defaults import MAX_LOOKS
from .gate import RunsFailed, compare_trees, gate_name, tree_experiment
from .trees import BuildError, Trees, git, resolve

if TYPE_CHECKING:
    from ..adaptive.prior import HostPriors

__all__ = ["BisectResult", "Step", "bisect", "combined_rows", "next_candidate"]

UNDECIDED = (Verdict.INCONCLUSIVE, Verdict.NO_DATA)

GOOD_VERDICTS = (
    Verdict.EQUIVALENT,
    Verdict.FASTER,
    Verdict.NO_CHANGE,
    Verdict.SAME,
    Verdict.BELOW_THRESHOLD,
)


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
    results: str = ""  # the results directories of its comparisons, ", "-separated
    why: str = ""
    looks: int = 1  # comparisons of this candidate (more than one: extended)
    #: with --repo, what the repository's priors did in its verdict: "used", "dropped"
    #: (by the check: these runs were noisier) or "none" (none for it on this runner);
    #: "" without --repo
    prior: str = ""


@dataclass(frozen=True)
class BisectResult:
    good: str
    bad: str
    first_bad: str | None  # None: skipped candidates or the budget leave it open
    candidates: tuple[str, ...]  # the commits it may be (one when found)
    steps: tuple[Step, ...] = field(default_factory=tuple)
    budget_ended: bool = False  # the bisect's budget ended the search
    commits: tuple[str, ...] = ()  # the first-parent history searched, good excluded

    def evidence(self) -> list[Step]:
        """The last step of every commit tested, in history order: what bounds the range."""
        last = {s.commit: s for s in self.steps}
        order = self.commits or tuple(dict.fromkeys(s.commit for s in self.steps))
        return [last[c] for c in order if c in last]

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


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def combined_rows(roots: Sequence[Path]) -> list[dict[str, Any]]:
    """Per benchmark x method: the verdict of its stopping rule on the run values of all
    the comparisons ``roots`` (results directories of one candidate against the good
    build, in the order they ran), taken as one sequence of runs: one comparison's is
    the verdict every command shows; several are read with the confidence sequence
    (valid at whatever run it is read, whichever design the rule had).

    Each comparison's run values are those its rule analysed, made with the analysis
    options of its stops.json (:func:`duetbench.adaptive.results.analysed_values`, as
    every verdict does); the rule (confidence, threshold) is the first comparison's.
    A benchmark without a stopping rule keeps its last comparison's row."""
    import numpy as np

    from ..adaptive.results import analysed_values, entry_for, stop_entries, stop_rule
    from ..adaptive.rules import decide
    from ..adaptive.sequential import Design
    from ..dataset import open_dataset
    from ..verdicts import default_options, rule_options, verdicts

    values: dict[tuple[str, str], list[Any]] = {}
    rules: dict[tuple[str, str], Any] = {}
    seconds: dict[tuple[str, str], float] = {}
    plain: dict[tuple[str, str], dict[str, Any]] = {}
    for root in roots:
        dataset = open_dataset(root)
        table = dataset.table
        if table.empty:
            continue
        entries = stop_entries(dataset.stops)
        opts = rule_options(dataset.stops, default_options(dataset))
        for (bench, method), runs in table.groupby(["benchmark", "method"], observed=True)["run"]:
            key = (str(bench), str(method))
            entry = entry_for(entries, *key)
            if entry is None or entry.get("stopped") == "not chosen":
                continue
            start = int(entry.get("analyse_from") or 0)
            analysed = (entry.get("analysed_runs") or {}).get(key[0])
            if analysed is None:
                analysed = sorted(int(r) for r in runs.unique())[start:]
            values.setdefault(key, []).append(analysed_values(table, *key, analysed, opts))
            rules.setdefault(key, stop_rule(entry, key[0]))
            seconds[key] = seconds.get(key, 0.0) + float(entry.get("seconds") or 0.0)
        if not entries:
            for r in verdicts(dataset).rows.to_dict("records"):
                plain[(str(r["benchmark"]), str(r["method"]))] = r
    out = []
    for key, parts in values.items():
        chosen = np.concatenate(parts)
        rule = rules[key]
        if len(parts) > 1:  # read across comparisons: the confidence sequence, valid at any run
            rule = replace(rule, design=Design.SEQUENCE, max_runs=max(rule.max_runs, len(chosen)))
        d = decide(chosen, rule, seconds=seconds[key])
        out.append(
            {
                "benchmark": key[0],
                "method": key[1],
                "verdict": d.verdict.value if len(chosen) else Verdict.NO_DATA.value,
                "change": d.estimate,
                "ci_low": d.low,
                "ci_high": d.high,
                "runs": d.runs,
                "explanation": d.explanation,
                "looks": len(parts),
                "prior_used": d.prior_used,
            }
        )
    out += [r for k, r in plain.items() if k not in values]
    return out


def _prior_word(used: object) -> str:
    return "used" if used is True else "dropped" if used is False else "none"


def _worst(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rank = {Verdict.SLOWER: 0, Verdict.INCONCLUSIVE: 1, Verdict.NO_DATA: 2}
    return min(rows, key=lambda r: rank.get(str(r["verdict"]), 3))


@dataclass
class _Search:
    """What every candidate's measurement needs: the good build, where results go, the
    limits (see :func:`bisect`)."""

    exp: Experiment
    trees: Trees
    good: str  # commit
    good_tree: Path
    out_dir: Path
    build: str | None
    build_timeout: float | None
    record: Callable[[Path, Path, Path], None] | None
    max_looks: int
    budget_s: float | None
    started: float = field(default_factory=time.monotonic)
    good_label: str = ""  # --good as the user gave it, for messages
    #: --repo: reads the repository's priors for this runner, once per candidate (so
    #: the comparisons ``record`` added before count)
    priors: Callable[[], HostPriors] | None = None

    def over_budget(self) -> bool:
        return self.budget_s is not None and time.monotonic() - self.started >= self.budget_s

    def measure(self, commit: str, index: int) -> Step | None:
        """The candidate's step (None: the budget ended before its first comparison)."""
        subject = git(self.trees.repo, "log", "-1", "--format=%s", commit)
        tree = self.trees.checkout(commit, f"c{index}")
        try:
            try:
                self.trees.build(tree, self.build, timeout=self.build_timeout)
            except BuildError as exc:
                return Step(commit, subject, "skip", "build failed", why=str(exc))
            try:
                roots, rows = self.compare(commit, tree)
            except (MicroError, RunsFailed) as exc:
                if not _candidate_only(exc):
                    raise DuetError(
                        f"the known-good revision {self.good_label or self.good[:10]!r} does not run: {exc}"
                    ) from None
                return Step(commit, subject, "skip", "does not run", why=str(exc))
            if not roots:
                return None
            return self.step(commit, subject, roots, rows)
        finally:
            self.trees.remove(tree)

    def compare(self, commit: str, tree: Path) -> tuple[list[Path], list[dict[str, Any]]]:
        """Compare the candidate with the good build until its rule decides, extending an
        inconclusive comparison up to ``max_looks`` (or the budget): the results
        directories and the verdicts of all of them together."""
        roots: list[Path] = []
        rows: list[dict[str, Any]] = []
        todo = self.exp
        # one set of priors for all of the candidate's comparisons: its extensions, added to
        # the repository by ``record``, are read together with the first (combined_rows),
        # never again as a prior of their own
        priors = None if self.priors is None or self.over_budget() else self.priors()
        while len(roots) < self.max_looks and not self.over_budget():
            name = gate_name(self.exp.name, self.good, commit).replace("-gate-", "-bisect-")
            if roots:
                name += f"-more{len(roots)}"
            title = f"duet bisect: {commit[:10]} against {self.good[:10]}"
            experiment = tree_experiment(todo, self.good_tree, tree, name)
            res = compare_trees(experiment, self.out_dir, title, priors=priors)
            if res.interrupted:
                raise KeyboardInterrupt
            if self.record is not None:
                self.record(res.root, self.good_tree, tree)
            roots.append(res.root)
            rows = combined_rows(roots)
            undecided = {
                str(r["benchmark"]).split(":", 1)[0] for r in rows if r["verdict"] in UNDECIDED
            }
            if not rows or not undecided or any(r["verdict"] == Verdict.SLOWER for r in rows):
                break  # decided; one slower benchmark marks the candidate bad
            # extend: measure again what the rule has not decided yet
            benches = tuple(b for b in self.exp.benchmarks if b.name in undecided)
            if not benches:
                break
            todo = replace(self.exp, benchmarks=benches)
        return roots, rows

    def step(
        self, commit: str, subject: str, roots: list[Path], rows: list[dict[str, Any]]
    ) -> Step:
        where = ", ".join(str(r) for r in roots)
        if not rows:
            return Step(
                commit, subject, "skip", Verdict.NO_DATA.value, results=where, looks=len(roots)
            )
        row = _worst(rows)
        verdict = str(row["verdict"])
        outcome = (
            "bad" if verdict == Verdict.SLOWER else "good" if verdict in GOOD_VERDICTS else "skip"
        )
        why = str(row.get("explanation") or "")
        if outcome == "skip" and self.over_budget():
            why = f"the bisect's budget ended: {why}"
        return Step(
            commit,
            subject,
            outcome,
            verdict,
            _num(row.get("change")),
            _num(row.get("ci_low")),
            _num(row.get("ci_high")),
            int(row.get("runs") or 0),
            where,
            why,
            int(row.get("looks") or len(roots)),
            _prior_word(row.get("prior_used")) if self.priors is not None else "",
        )


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
    max_looks: int = MAX_LOOKS,
    budget_s: float | None = None,
    priors: Callable[[], HostPriors] | None = None,
) -> BisectResult:
    """Search the first-parent history from ``good`` (exclusive) to ``bad``.

    ``max_looks``: comparisons of one candidate (the first and the extensions of an
    inconclusive one) before it is skipped; ``budget_s``: wall-clock seconds the bisect
    may take (None: no limit), checked before every comparison -- when it ends, the
    result holds the range that remains (``budget_ended``). ``priors`` (``--repo``):
    called before each candidate's first comparison, the priors its stopping rules use
    (docs/history.md, "Gates feed the repository")."""
    if max_looks < 1:
        raise DuetError(f"--max-looks must be at least 1, got {max_looks}")
    if budget_s is not None and not budget_s > 0:
        raise DuetError(f"--total-budget must be more than 0 seconds, got {budget_s}")
    started = time.monotonic()
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
        search = _Search(
            exp, trees, good_c, good_tree, out_dir, build, build_timeout, record, max_looks,
            budget_s, started, good, priors,
        )  # fmt: skip
        steps: list[Step] = []
        lo, hi, skipped = -1, len(commits) - 1, set()
        measured_bad: Step | None = None
        ended = False

        def take(i: int) -> Step | None:
            step = search.measure(commits[i], i)
            if step is not None:
                steps.append(step)
                if on_step is not None:
                    on_step(step)
            return step

        while (i := next_candidate(len(commits), lo, hi, skipped)) is not None:
            step = None if search.over_budget() else take(i)
            if step is None:
                ended = True
                break
            if step.outcome == "bad":
                hi, measured_bad = i, step
            elif step.outcome == "good":
                lo = i
            else:
                skipped.add(i)
                ended = ended or search.over_budget()
        if not ended and (measured_bad is None or measured_bad.commit != commits[hi]):
            # the first bad commit is --bad itself: measure it for its interval
            ended = take(hi) is None
        open_range = [commits[j] for j in range(lo + 1, hi + 1)]
        last = next((s for s in reversed(steps) if s.commit == commits[hi]), None)
        found = last is not None and last.outcome == "bad" and hi == lo + 1
        return BisectResult(
            good_c,
            bad_c,
            commits[hi] if found else None,
            tuple(open_range),
            tuple(steps),
            budget_ended=ended and not found,
            commits=tuple(commits),
        )
