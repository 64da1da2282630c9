"""Run an experiment's plan on this machine, one run at a time, resumable."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config.limits import HostCpus, check_cpus_here
from ..config.model import Experiment
from ..errors import DuetError, ResultsDirError
from ..execute.base import get_executor
from ..hosts import detect_host, host_name, run_artifacts
from ..plan import RunSpec, make_plan
from ..proctools.guarded import Guarded, run_captured
from ..records import RunRecord
from ..store import ResultsStore, is_empty_dir
from .adaptive import StopTracker

if TYPE_CHECKING:
    from ..adaptive.prior import HostPriors


class Observer(Protocol):
    def experiment_started(
        self, store: ResultsStore, plan: list[RunSpec], todo: list[RunSpec]
    ) -> None: ...
    def run_started(self, spec: RunSpec) -> None: ...
    def run_finished(self, spec: RunSpec, record: RunRecord) -> None: ...
    def experiment_finished(self, summary: ExperimentSummary) -> None: ...


class NullObserver:
    def experiment_started(
        self, store: ResultsStore, plan: list[RunSpec], todo: list[RunSpec]
    ) -> None:
        pass

    def run_started(self, spec: RunSpec) -> None:
        pass

    def run_finished(self, spec: RunSpec, record: RunRecord) -> None:
        pass

    def experiment_finished(self, summary: ExperimentSummary) -> None:
        pass


@dataclass
class ExperimentSummary:
    root: Path
    planned: int
    skipped: int  # already finished before this invocation (resume)
    statuses: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False
    all_cores_busy: bool = False
    elapsed_s: float = 0.0
    recovered: list[str] = field(default_factory=list)
    # runs on a cluster: per-host counts and health (schedule.cluster.host_health), and notes
    # for the user (hosts excluded or flagged, runs lost to dead workers)
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # adaptive experiments: planned runs left out because their benchmark x method stopped
    stopped_early: int = 0
    # planned runs not run because their benchmark x method's first runs all failed
    # (docs/results.md, "Runs that fail")
    not_run: int = 0
    adaptive: bool = False
    # runs not started because the next one would have ended after the deadline
    out_of_time: int = 0


@dataclass(frozen=True)
class Deadline:
    """Start no run that would end after ``at`` (``time.monotonic()``): a run is expected
    to take as long as the mean of this invocation's last :data:`RECENT` runs (the
    machine's pace now; the pytest plugin's runs take fewer samples once they run slow),
    ``first_run_s`` before the first (the pytest plugin's budget: docs/pytest.md,
    "Cost"). The first
    ``floor_runs`` runs -- the fewest that give an answer -- may end as late as
    ``late_at`` (the tolerance the budget was promised with)."""

    at: float
    first_run_s: float
    floor_runs: int = 0
    late_at: float | None = None

    #: what the next run will take, where the caller knows better (the pytest plugin's
    #: pace: fewer samples after a slow run); None from it: the runs' mean
    predict: Callable[[], float | None] | None = None

    #: how many of the latest runs predict the next one
    RECENT = 3

    def allows(self, durations: list[float]) -> bool:
        recent = durations[-self.RECENT :]
        expected = sum(recent) / len(recent) if recent else self.first_run_s
        told = self.predict() if self.predict is not None else None
        if told is not None:
            expected = told
        end = self.at
        if len(durations) < self.floor_runs and self.late_at is not None:
            end = max(end, self.late_at)
        return time.monotonic() + expected <= end


def results_root(exp: Experiment, out_dir: str | Path) -> Path:
    """``out_dir/<name>`` as an absolute path, made once where an experiment is opened.

    Every path handed on from here (run and side directories, ``$DUET_OUTPUT_DIR``,
    ``$DUET_SYNC_DIR``, ``$$``, the paths in run.json) is absolute: a side runs in its own
    working directory, where a path relative to the directory `duet` was started in
    points elsewhere.
    """
    name = exp.name
    if not name or name in (".", "..") or "\0" in name or Path(name).name != name:
        # the config loader refuses such names (docs/config.md); an Experiment built in code
        # must not write outside -o either
        raise ResultsDirError(
            f"the experiment name {name!r} is not a single directory name; use letters, digits "
            "and _ . + - (docs/config.md, `name`)"
        )
    return Path(out_dir).resolve() / name


def open_store(
    exp: Experiment, out_dir: Path, plan_all: list[RunSpec], resume: bool
) -> ResultsStore:
    root = results_root(exp, out_dir)
    if not resume:
        return ResultsStore.create(root, exp.to_dict(), [r.to_dict() for r in plan_all])
    if not ResultsStore(root).has_experiment():
        if root.exists() and not is_empty_dir(root):
            raise ResultsDirError(
                f"--resume: {root} exists but holds no experiment.json; it is not a "
                "duetbench results directory"
            )
        return ResultsStore.create(root, exp.to_dict(), [r.to_dict() for r in plan_all])
    store = ResultsStore.open(root, writable=True)
    stored = {r["run_id"]: r for r in store.plan()}
    changed = [
        r.run_id
        for r in plan_all
        if r.run_id not in stored or _comparable(stored[r.run_id]) != _comparable(r.to_dict())
    ]
    if not changed and _stops_of(store.experiment().get("config") or {}) != _stops_of(
        exp.to_dict()
    ):
        raise ResultsDirError(
            f"--resume: the stopping rule (stop: / --until / --threshold / --budget) differs "
            f"from the one {root} was started with; resume with the same rule, or write the "
            "new experiment to another directory with -o (docs/adaptive.md)"
        )
    if changed or len(stored) != len(plan_all):
        raise ResultsDirError(
            f"--resume: the config no longer matches the experiment in {root} "
            f"({len(changed) or abs(len(stored) - len(plan_all))} planned run(s) differ, e.g. "
            f"{(changed or ['the number of runs'])[0]}). Resume with the same config and seed, or write the "
            "new experiment to another directory with -o."
        )
    return store


def _stops_of(config: dict[str, Any]) -> Any:
    import json

    stops = {b.get("name"): b.get("stop") for b in config.get("benchmarks") or []}
    return json.loads(json.dumps(stops, default=str))


def _comparable(d: dict[str, Any]) -> Any:
    import json

    # hang_timeout only decides when a run is given up: it may change between resumes
    d = {k: v for k, v in d.items() if k not in ("executor", "base_dir", "hang_timeout")}
    return json.loads(json.dumps(d, default=str))


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside: SIGTERM raises KeyboardInterrupt, so a stopped `duet run` ends as a
    Ctrl-C does (outside the main thread: unchanged)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def _background(command: str | None, cwd: str) -> Iterator[None]:
    """A command that lives for the experiment (e.g. a noisy neighbour); always stopped,
    with its whole process group, also when duet run is killed (proctools/guarded.py)."""
    if not command:
        yield
        return
    proc = Guarded(["/bin/sh", "-c", command], cwd=cwd or None)
    try:
        yield
    finally:
        proc.stop()


def record_host(
    store: ResultsStore, exp: Experiment, host: str | None = None, executor: Any = None
) -> None:
    host = host or host_name()
    if store.has_host(host):
        return
    info = detect_host()
    info["host"] = host
    info["artifacts"] = run_artifacts(exp.artifacts)
    if executor is not None:
        info.update(executor.host_info(exp.artifacts))
    store.write_host(host, info)


#: Bytes of the setup command's output kept to show the end of it when it fails.
SETUP_OUTPUT_KEPT = 64 * 1024


def run_setup_command(command: str | None, cwd: str) -> None:
    """The experiment's `setup:`; a failure stops the experiment before any run (nothing is lost).

    Like every command duet starts, it runs in its own process group that Ctrl-C, SIGTERM
    and a crash of duet run take down with it (proctools/guarded.py)."""
    if not command:
        return
    with sigterm_as_interrupt():
        p = run_captured(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            merge_stderr=True,
            stdout_limit=SETUP_OUTPUT_KEPT,
            keep_stdout="tail",
        )
    if p.returncode != 0:
        tail = "\n".join(p.stdout.strip().splitlines()[-5:])
        raise DuetError(
            f"the experiment's setup command `{command}` exited with {p.returncode}; no run was "
            f"started. Fix it (or remove `setup:`) and run again. Its last output:\n{tail}"
        )


def run_teardown_command(command: str | None, cwd: str) -> None:
    if command:
        run_captured(["/bin/sh", "-c", command], cwd=cwd, stdout_limit=0, stderr_limit=0)


def resume_notes(store: ResultsStore) -> list[str]:
    """What ``--resume`` repaired (store.prepare_resume), for the closing summary."""
    notes = [
        f"run {rid} was damaged ({why}); it was set aside in runs/.superseded/ and executed again"
        for rid, why in store.damaged.items()
    ]
    notes += [f"{what}: set aside in runs/.superseded/" for what in store.moved_aside]
    return notes


def run_experiment(
    exp: Experiment,
    out_dir: str | Path,
    *,
    resume: bool = False,
    only: list[str] | None = None,
    observer: Observer | None = None,
    priors: HostPriors | None = None,
    deadline: Deadline | None = None,
) -> ExperimentSummary:
    """Execute (or resume) ``exp`` into ``out_dir/<name>``; every finished run is kept exactly once.

    ``priors``: this host's priors in a results repository, for the stopping rules and
    the method choice (``duet run --repo``; StopTracker.use_priors).
    The experiment directory is locked first of all: a second `duet run` on it refuses at once
    (store/lock.py). ``deadline``: the runs that would end after it are not started
    (``summary.out_of_time`` counts them)."""
    # the name is checked (and the root made absolute) before anything is created
    with ResultsStore.lock(results_root(exp, out_dir)):
        return _run_locked(exp, out_dir, resume, only, observer or NullObserver(), priors, deadline)


def _run_locked(
    exp: Experiment,
    out_dir: str | Path,
    resume: bool,
    only: list[str] | None,
    observer: Observer,
    priors: HostPriors | None = None,
    deadline: Deadline | None = None,
) -> ExperimentSummary:
    plan_all = make_plan(exp)
    plan = make_plan(exp, only) if only else plan_all
    executor = get_executor(exp.executor, settings=exp.to_dict().get("container"))
    here = HostCpus(executor.host, executor.host_cpus)
    check_cpus_here(((b.name, b.cpus) for b in exp.benchmarks), here, exp.source)
    base_dir = str(Path(exp.source).resolve().parent) if exp.source else os.getcwd()
    # the experiment's setup may build what the runs need (e.g. a container image): first of all
    run_setup_command(exp.setup, base_dir)
    try:
        # before anything is written: e.g. a missing container image is a config error
        executor.start_experiment(plan)
        store = open_store(exp, Path(out_dir), plan_all, resume)
    except BaseException:
        run_teardown_command(exp.teardown, base_dir)
        raise
    recovered = store.prepare_resume() if resume else []
    finished = store.finished()
    todo = [r for r in plan if r.run_id not in finished]
    summary = ExperimentSummary(
        root=store.root, planned=len(plan), skipped=len(plan) - len(todo), recovered=recovered
    )
    summary.notes += resume_notes(store)
    tracker = StopTracker.for_experiment(store, exp, plan_all)
    if tracker.active:
        if priors is not None:
            tracker.use_priors(priors)
        tracker.replay(set(finished))  # --resume: the decisions the finished runs gave
        tracker.write()
    t0 = time.monotonic()
    with sigterm_as_interrupt():
        try:
            record_host(store, exp, executor.host, executor)
            observer.experiment_started(store, plan, todo)
            with _background(exp.background, base_dir):
                durations: list[float] = []
                for spec in todo:
                    if deadline is not None and not deadline.allows(durations):
                        summary.out_of_time += 1
                        continue
                    if tracker.skips(spec):  # its benchmark x method has stopped
                        if tracker.failed_out(spec):
                            summary.not_run += 1
                        else:
                            summary.stopped_early += 1
                        run_skipped = getattr(observer, "run_skipped", None)
                        if run_skipped is not None:
                            run_skipped(spec)
                        continue
                    observer.run_started(spec)
                    tmp = store.new_run_dir(spec.run_id)
                    began = time.monotonic()
                    outcome = executor.execute(spec, tmp)
                    durations.append(time.monotonic() - began)
                    record = outcome.record.relocated(tmp, store.run_dir(spec.run_id))
                    store.commit_run(tmp, record)
                    status = record.status
                    summary.statuses[status] = summary.statuses.get(status, 0) + 1
                    summary.all_cores_busy |= record.all_cores_busy
                    observer.run_finished(spec, record)
                    if tracker.observe(spec, record):
                        tracker.write()
                    if outcome.exception is not None:
                        raise outcome.exception
        except KeyboardInterrupt:
            summary.interrupted = True
        finally:
            tracker.write()
            summary.notes += tracker.failure_notes()
            summary.adaptive = tracker.active
            executor.end_experiment()
            run_teardown_command(exp.teardown, base_dir)
            summary.elapsed_s = time.monotonic() - t0
            observer.experiment_finished(summary)
    return summary
