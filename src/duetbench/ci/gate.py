"""`duet gate`: does head make the program slower than base, on this machine, now?

Both revisions are checked out as git worktrees and built; the config's benchmarks then
run as a duet comparison with A = the base tree and B = the head tree, measured until
sure (docs/adaptive.md; by default ``--until decided --threshold 2%``). How a config
refers to the tree: docs/history.md, "Gate". A ``harness: python`` benchmark runs in
each tree too: its interpreter, target and paths are taken inside the tree, the tree is
first on its ``sys.path`` unless the config names paths, and it is calibrated (as `duet
run` and `duet micro` do) before the first run. A benchmark whose every run failed is an
error naming the cause (:class:`RunsFailed`, exit 2), never "inconclusive".
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.model import Benchmark, Experiment, MicroSide, MicroSpec, Side
from ..errors import DuetError, ExitCode
from ..schedule.adaptive import FAILED_RUNS_STOP
from ..schema import Verdict
from .defaults import GATE_THRESHOLD, GATE_UNTIL

if TYPE_CHECKING:
    from ..adaptive.prior import HostPriors

__all__ = [
    "GateResult",
    "RunsFailed",
    "compare_trees",
    "exit_code_of",
    "gate_markdown",
    "in_tree",
    "judge",
    "micro_in_tree",
    "priors_summary",
    "runs_failed",
    "tree_experiment",
]

#: the placeholder of a tree's path in commands, workdirs and env values
TREE = "{tree}"


def _sub(text: str | None, tree: Path) -> str | None:
    return None if text is None else text.replace(TREE, str(tree))


def in_tree(side: Side, tree: Path) -> Side:
    """``side`` run in ``tree``: ``{tree}`` replaced by its path, a relative (or no)
    workdir taken inside the tree, and ``$DUET_TREE`` set to it."""
    workdir = _sub(side.workdir, tree)
    if not workdir or not Path(workdir).is_absolute():
        workdir = str(tree / (workdir or ""))
    env = tuple((k, _sub(v, tree) or "") for k, v in side.env if k != "DUET_TREE")
    return replace(
        side,
        command=_sub(side.command, tree) or "",
        sync_command=_sub(side.sync_command, tree),
        setup=_sub(side.setup, tree),
        teardown=_sub(side.teardown, tree),
        workdir=workdir,
        env=(*env, ("DUET_TREE", str(tree))),
    )


def _inside(path: str, tree: Path) -> str:
    """``path`` with ``{tree}`` replaced, a relative one taken inside ``tree``."""
    text = path.replace(TREE, str(tree))
    return os.path.abspath(os.path.join(tree, text))


def micro_side_in_tree(side: MicroSide, tree: Path) -> MicroSide:
    """A python benchmark's side run from ``tree``: ``{tree}`` replaced in its interpreter,
    target and paths; a relative interpreter path (``.venv/bin/python``), a file or
    directory target and relative paths taken inside the tree; no paths: the tree itself,
    so each side imports its own tree's code (an interpreter named without a ``/``, such as
    ``python3``, is looked up on PATH, as `duet micro` does)."""
    from ..micro.api import resolve_target

    python = side.python.replace(TREE, str(tree))
    if "/" in python:
        python = _inside(python, tree)
    target = resolve_target(side.target.replace(TREE, str(tree)), tree)
    paths = tuple(_inside(p, tree) for p in side.paths) or (str(tree),)
    return replace(side, python=python, target=target, paths=paths)


def micro_in_tree(spec: MicroSpec, trees: dict[str, Path]) -> MicroSpec:
    """``spec`` with each side in its tree (``trees``: side -> tree), not yet calibrated."""
    sides = tuple((pair, micro_side_in_tree(s, trees[pair])) for pair, s in spec.sides)
    return replace(spec, sides=sides, evaluations=None, calibrations=(), inproc_command=None)


def with_gate_stop(
    exp: Experiment,
    *,
    until: str | None = None,
    threshold: str | None = None,
    budget: str | None = None,
    max_runs: str | None = None,
) -> Experiment:
    """``exp`` with the stopping rule of a gate's (and a bisect's) comparisons: ``until``,
    else decided; at ``threshold``, else the config's `stop: threshold`, else 2 % (without
    a threshold `equivalent` cannot be decided); ``budget`` and ``max_runs`` as the
    command line gives them (None: the config's)."""
    from ..config.stop import with_stop_overrides

    has_threshold = any(b.stop is not None and b.stop.threshold > 0 for b in exp.benchmarks)
    return with_stop_overrides(
        exp,
        until=until or GATE_UNTIL,
        threshold=threshold or (None if has_threshold else GATE_THRESHOLD),
        budget=budget,
        max_runs=max_runs,
    )


def tree_experiment(exp: Experiment, a_tree: Path, b_tree: Path, name: str) -> Experiment:
    """``exp`` with side A of every benchmark in ``a_tree`` and side B in ``b_tree``
    (a benchmark without B runs A's definition in both)."""
    benches: list[Benchmark] = []
    for b in exp.benchmarks:
        a_side = b.side("A")
        b_side = a_side if b.aa else b.side("B")
        micro = b.micro
        if micro is not None:
            micro = micro_in_tree(micro, {"A": a_tree, "B": b_tree})
        benches.append(
            replace(
                b,
                aa=False,
                sides=(("A", in_tree(a_side, a_tree)), ("B", in_tree(b_side, b_tree))),
                micro=micro,
            )
        )
    return replace(exp, name=name, benchmarks=tuple(benches))


@dataclass(frozen=True, eq=False)
class GateResult:
    """One comparison of two trees: its results directory, verdict rows and exit code."""

    root: Path
    rows: Any  # pandas.DataFrame: `duet compare`'s rows with the adaptive decisions
    exit_code: int
    interrupted: bool
    markdown: str
    table: Any = None  # report.tables.Table: the verdict table, for a terminal
    #: what the repository's priors did (:func:`priors_summary`): a heading, then one line
    #: per benchmark x method; empty without ``--repo``
    priors: tuple[str, ...] = ()


def exit_code_of(verdicts: list[str]) -> int:
    """1 (regression) when any verdict is slower, else 3 when any is inconclusive (or
    nothing was measured), else 0."""
    if Verdict.SLOWER in verdicts:
        return ExitCode.REGRESSION
    if not verdicts or any(v in (Verdict.INCONCLUSIVE, Verdict.NO_DATA) for v in verdicts):
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


#: A gate stops once this many runs of one benchmark x method have failed without a
#: usable one: a broken benchmark is an error at once, not after ``max_runs`` failures.
#: The scheduler's rule for every command (docs/results.md, "Runs that fail").
FAIL_FAST_RUNS = FAILED_RUNS_STOP


class RunsFailed(DuetError):
    """Every run of a benchmark failed: the gate (or a bisect step) is broken, which no
    number of runs can decide, so it is an error (exit 2), never "inconclusive".
    ``sides``: the sides that failed by themselves (not stopped because the other did)."""

    def __init__(self, message: str, sides: frozenset[str]) -> None:
        super().__init__(message)
        self.sides = sides


def _tail(text: str, lines: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def runs_failed(root: Path) -> RunsFailed | None:
    """The error of results directory ``root`` when some benchmark x method has finished
    runs and not one usable (ok or timed out with iterations), naming the first failed
    run's cause: its message, each failed side's exit status and the end of its stderr."""
    from ..schema import USABLE_STATUSES, SideStatus
    from ..store import ResultsStore

    store = ResultsStore.open(root)
    groups: dict[tuple[str, str], list[Any]] = {}
    for _rid, run in store.runs():
        if run is not None and run.finished:
            groups.setdefault((run.benchmark, run.method), []).append(run)
    for (bench, method), runs in sorted(groups.items()):
        if any(r.status in USABLE_STATUSES for r in runs):
            continue
        first = min(runs, key=lambda r: r.run_id)
        failed = {n: s for n, s in first.sides.items() if s.status == SideStatus.FAILED}
        lines = [
            f"every run of benchmark '{bench}' ({method}) failed -- {len(runs)} of "
            f"{len(runs)}, so there is nothing to compare; the first, {first.run_id}: "
            f"{first.status}, {first.message or 'no message'}"
        ]
        for name, side in sorted(failed.items()):
            said = _tail(side.stderr_tail)
            lines.append(
                f"side {name} exited with {side.exit_code}"
                + (f"; its stderr ends:\n{said}" if said else "; it wrote nothing to stderr")
            )
        lines.append(
            "(side A runs the --base or --good revision, B the --head or candidate). Fix the "
            f"benchmark or the build, then run again; the runs are in {root}"
        )
        return RunsFailed("\n".join(lines), frozenset(failed) or frozenset(first.sides))
    return None


class _FailFast:
    """An observer (around ``inner``) that raises :class:`RunsFailed` once
    :data:`FAIL_FAST_RUNS` runs of a benchmark x method failed and none was usable; the
    run is committed before the observer sees it, so nothing finished is lost."""

    def __init__(self, inner: Any) -> None:
        from ..schedule.inline import NullObserver

        self.inner = inner if inner is not None else NullObserver()
        self.root: Path | None = None
        self.counts: dict[tuple[str, str], tuple[int, int]] = {}

    def experiment_started(self, store: Any, plan: Any, todo: Any) -> None:
        self.root = Path(store.root)
        self.inner.experiment_started(store, plan, todo)

    def run_started(self, spec: Any) -> None:
        self.inner.run_started(spec)

    def run_skipped(self, spec: Any) -> None:
        skipped = getattr(self.inner, "run_skipped", None)
        if skipped is not None:
            skipped(spec)

    def run_finished(self, spec: Any, record: Any) -> None:
        from ..schema import USABLE_STATUSES

        self.inner.run_finished(spec, record)
        key = (str(record.benchmark), str(record.method))
        ok, failed = self.counts.get(key, (0, 0))
        if record.status in USABLE_STATUSES:
            ok += 1
        elif record.finished:
            failed += 1
        self.counts[key] = (ok, failed)
        if not ok and failed >= FAIL_FAST_RUNS and self.root is not None:
            error = runs_failed(self.root)
            if error is not None:
                raise error

    def experiment_finished(self, summary: Any) -> None:
        self.inner.experiment_finished(summary)


def compare_trees(
    exp: Experiment,
    out_dir: Path,
    title: str,
    *,
    observer: Any = None,
    priors: HostPriors | None = None,
) -> GateResult:
    """Run ``exp`` (already pointing at its trees, with its stopping rules) and judge it.

    Python benchmarks are calibrated first (a side that cannot import or run its target:
    a :class:`~duetbench.micro.api.MicroError` naming it); a benchmark whose every run
    failed raises :class:`RunsFailed`, as soon as :data:`FAIL_FAST_RUNS` of its runs
    did. ``priors``: this runner's priors in a results repository, for the stopping
    rules, as `duet run --repo` passes them (docs/adaptive.md, "Stopping with the
    repository's priors")."""
    from ..micro.experiment import calibrate_experiment
    from ..schedule.inline import run_experiment

    exp = calibrate_experiment(exp, base=Path.cwd())  # its paths are absolute (in the trees)
    summary = run_experiment(exp, out_dir, observer=_FailFast(observer), priors=priors)
    if summary.interrupted:
        return GateResult(summary.root, None, ExitCode.INTERRUPTED, True, "")
    failed = runs_failed(summary.root)
    if failed is not None:
        raise failed
    threshold = max((b.stop.threshold for b in exp.benchmarks if b.stop), default=0.0)
    return judge(summary.root, title, threshold)


def judge(root: Path, title: str, threshold: float = 0.0) -> GateResult:
    """The gate's answer for results directory ``root``: the verdicts every command shows
    (an adaptive experiment's: its stopping rule's) at ``threshold``, the exit status and
    the Markdown summary."""
    from ..dataset import open_dataset
    from ..report.markdown import compare_markdown
    from ..report.tables import verdict_table
    from ..verdicts import default_options, verdicts

    dataset = open_dataset(root)
    table = verdicts(dataset, default_options(dataset, threshold=threshold))
    prior_lines = tuple(priors_summary(dataset.stops))
    if table.rows.empty:
        md = f"## {title}\n\nno usable runs\n"
        return GateResult(root, None, ExitCode.INCONCLUSIVE, False, md, priors=prior_lines)
    code = exit_code_of(table.verdict_list())
    shown = verdict_table(table)
    md = gate_markdown(title, code, table.rows, compare_markdown(shown), prior_lines)
    return GateResult(root, table.rows, code, False, md, shown, prior_lines)


_PRIORS_DOC = "docs/adaptive.md, 'Stopping with the repository's priors'"


def priors_summary(stops: Any) -> list[str]:
    """What the results repository's priors did in the comparison whose stops.json is
    ``stops`` (empty when it was run without ``--repo``): a heading naming the
    repository and this runner's host fingerprint, then per benchmark x method whether
    its stopping rule used the spread of earlier experiments (and of how many), had none
    to use (a first gate on this runner), or dropped them because the check found these
    runs noisier (docs/history.md, "Gates feed the repository")."""
    if not isinstance(stops, dict) or not isinstance(stops.get("history"), dict):
        return []
    src = stops["history"]
    host = str(src.get("host") or "?")[:12]
    lines = [
        f"priors from {src.get('repository')} (this runner: host {host}; the last "
        f"{src.get('last')} experiments of each benchmark)"
    ]
    for _key, entry in sorted((stops.get("stops") or {}).items()):
        if not isinstance(entry, dict) or entry.get("stopped") == "not chosen":
            continue
        method = str(entry.get("method"))
        given = entry.get("priors") or {}
        for bench, d in sorted((entry.get("decisions") or {}).items()):
            p = given.get(bench)
            if not isinstance(p, dict):
                what = (
                    "none -- no earlier experiment of it on this runner; this one is the "
                    "first the next gate can use"
                )
            else:
                earlier = (
                    f"{p.get('experiments')} earlier experiment(s) on this runner "
                    f"({p.get('runs')} runs, sd {float(p.get('sd') or 0.0) * 100:.2f} %)"
                )
                used = d.get("prior_used") if isinstance(d, dict) else None
                if used is True:
                    what = f"used -- the spread of {earlier}"
                elif used is False:
                    what = (
                        f"dropped by the check -- these runs did not match the spread of "
                        f"{earlier} (noisier, or serially correlated), so the rule decided "
                        f"without it ({_PRIORS_DOC})"
                    )
                else:
                    what = f"not used (no runs) -- {earlier} were available"
            lines.append(f"{bench} ({method}): {what}")
    return lines


_OUTCOME = {
    ExitCode.OK: "no regression",
    ExitCode.REGRESSION: "REGRESSION",
    ExitCode.INCONCLUSIVE: Verdict.INCONCLUSIVE.value,
}


def outcome(title: str, code: int) -> str:
    """The summary's first line: the title and what the gate decided."""
    return f"{title}: {_OUTCOME.get(ExitCode(code), str(code))}"


def reasons(rows: Any) -> list[tuple[str, str, str, str]]:
    """Per benchmark and method: (benchmark, method, verdict, why (not) significant)."""
    out = []
    for r in rows.to_dict("records"):
        why = r.get("explanation") or ""
        lo, hi = r.get("ci_low"), r.get("ci_high")
        if not why and lo is not None and not (isinstance(lo, float) and math.isnan(lo)):
            why = f"interval [{lo * 100:+.2f} %, {hi * 100:+.2f} %]"
        out.append((str(r["benchmark"]), str(r["method"]), str(r["verdict"]), why))
    return out


def gate_markdown(
    title: str, code: int, rows: Any, table_md: str, priors: Sequence[str] = ()
) -> str:
    """The summary: outcome, the verdict table, per benchmark why (not) significant, and
    what the repository's priors did (``priors``: :func:`priors_summary`'s lines)."""
    from ..report.formatting import md_heading, md_text

    verdict = _OUTCOME.get(ExitCode(code), str(code))
    lines = [f"## {md_heading(title)}: {verdict}", "", table_md.strip(), ""]
    for bench, method, verdict_text, why in reasons(rows):
        lines.append(
            f"- **{md_text(bench)}** ({md_text(method)}): {verdict_text} -- {md_text(why)}"
        )
    if priors:
        lines += ["", md_text(priors[0][:1].upper() + priors[0][1:]) + ":", ""]
        lines += [f"- {md_text(line)}" for line in priors[1:]]
    return "\n".join(lines) + "\n"


def gate_name(exp_name: str, base: str, head: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return f"{exp_name}-gate-{base[:8]}-{head[:8]}-{stamp}"
