"""Run one experiment across a fleet of Dask workers (docs/cluster.md).

Every run is a Dask task that needs the worker resource ``duet=1``: a worker
started with ``--resources duet=1`` never executes two runs at once, even when
several coordinators share the cluster (BEEN's exclusive tasks). On top of
that the coordinator (coordinator.py, in the ``duet run`` process) keeps at most
one run in flight per *host* and decides which host runs what:

- it probes every worker once (host name, ``hosts.detect_host()`` + the
  artifact commands) and writes ``hosts/<host>.json``; ``experiment.hosts``
  requirements exclude the hosts that do not match (BEEN's host restrictions);
- it hands the next run of the plan, in plan (RMIT) order, to an idle host,
  pinned to that host's worker (``workers=[address]``), with the plan position
  as the Dask priority; ``design: balanced`` pins every repetition to a host
  computed from the seed (:func:`balanced_assignment`);
- the worker executes the run with the local (or container) executor into a
  temporary directory and returns its contents; the coordinator commits them
  through the same :class:`ResultsStore` (atomic rename, journal);
- a run whose worker dies (or whose task raises) is an attempt *lost*: it goes
  back to the queue and runs on another host, at most ``max(1, retries)`` times;
  a run that fails for its own reasons (status ``failed``/``timeout``/``hung``) is final;
- host health (:func:`host_health`) flags hosts whose runs fail far more often
  than the others'; scheduling events go to ``cluster.jsonl``.

Modules: requirements.py (host checks), design.py (balanced assignment), health.py
(host health), worker.py (what runs on the workers), connect.py (the Dask cluster),
session.py, fleet.py (workers and hosts seen) and coordinator.py (dispatch, results,
retries). Why the executor runs in the Dask task thread: worker.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...config.model import Experiment
from ...errors import ExecutorError
from ...plan import RunSpec, make_plan
from ...store import ResultsStore
from ..adaptive import StopTracker
from ..inline import (
    ExperimentSummary,
    NullObserver,
    Observer,
    open_store,
    results_root,
    resume_notes,
    sigterm_as_interrupt,
)
from .connect import RESOURCE, WAIT_WORKERS_S, connect, local_cluster, restore_environ
from .coordinator import Coordinator, NoHosts
from .design import balanced_assignment
from .health import host_health
from .requirements import HOST_REQUIREMENTS, check_host, cpu_reasons
from .session import Session
from .worker import HOST_ENV, WORK_DIR_ENV, execute_on_worker, worker_host_name

if TYPE_CHECKING:
    from ...adaptive.prior import HostPriors

__all__ = [
    "HOST_ENV",
    "HOST_REQUIREMENTS",
    "RESOURCE",
    "WAIT_WORKERS_S",
    "WORK_DIR_ENV",
    "balanced_assignment",
    "check_host",
    "connect",
    "cpu_reasons",
    "execute_on_worker",
    "host_health",
    "local_cluster",
    "restore_environ",
    "run_experiment_cluster",
    "worker_host_name",
]


def run_experiment_cluster(
    exp: Experiment,
    out_dir: str | Path,
    *,
    address: str,
    resume: bool = False,
    only: list[str] | None = None,
    observer: Observer | None = None,
    wait_workers: float | None = None,
    priors: HostPriors | None = None,
) -> ExperimentSummary:
    """Execute (or resume) ``exp`` on the Dask cluster at ``address`` (or ``local:N``) into
    ``out_dir/<name>``; the results directory is the same as :func:`inline.run_experiment`'s
    (plus ``cluster.jsonl``), and every finished run is kept exactly once. The experiment
    directory is locked before the cluster is contacted (store/lock.py)."""
    with ResultsStore.lock(results_root(exp, out_dir)):
        return _run_cluster_locked(
            exp,
            out_dir,
            address=address,
            resume=resume,
            only=only,
            observer=observer,
            wait_workers=wait_workers,
            priors=priors,
        )


def _run_cluster_locked(
    exp: Experiment,
    out_dir: str | Path,
    *,
    address: str,
    resume: bool,
    only: list[str] | None,
    observer: Observer | None,
    wait_workers: float | None,
    priors: HostPriors | None = None,
) -> ExperimentSummary:
    observer = observer or NullObserver()
    wait_s = WAIT_WORKERS_S if wait_workers is None else wait_workers
    if exp.background:
        raise ExecutorError(
            "`background:` is not supported with --cluster (a noisy neighbour would have to run "
            "on every host); start it on the hosts yourself or run without --cluster"
        )
    plan_all = make_plan(exp)
    plan = make_plan(exp, only) if only else plan_all
    t0 = time.monotonic()
    summary: ExperimentSummary | None = None
    with sigterm_as_interrupt():
        try:
            with connect(address, timeout=wait_s) as client:
                store = open_store(exp, Path(out_dir), plan_all, resume)
                recovered = store.prepare_resume() if resume else []
                finished = store.finished()
                todo = [r for r in plan if r.run_id not in finished]
                summary = ExperimentSummary(
                    root=store.root,
                    planned=len(plan),
                    skipped=len(plan) - len(todo),
                    recovered=recovered,
                )
                summary.notes += resume_notes(store)
                session = Session(store, summary)
                coord = Coordinator(
                    client, exp, store, plan_all, todo, observer, session, address, wait_s
                )
                tracker = StopTracker.for_experiment(store, exp, plan_all)
                if tracker.active and priors is not None:
                    tracker.use_priors(priors)
                tracker.replay(set(finished))  # also counts failed runs (docs/results.md)
                tracker.write()
                coord.tracker = tracker
                summary.adaptive = tracker.active
                try:
                    _coordinate(coord, plan, summary)
                finally:
                    tracker.write()
                    summary.notes += tracker.failure_notes()
        except KeyboardInterrupt:
            if summary is not None:
                summary.interrupted = True
            else:
                raise
        finally:
            if summary is not None:
                summary.elapsed_s = time.monotonic() - t0
                observer.experiment_finished(summary)
    assert summary is not None
    return summary


def _coordinate(coord: Coordinator, plan: list[RunSpec], summary: ExperimentSummary) -> None:
    """Run the coordinator; Ctrl-C, no usable host and a lost scheduler end the session
    with the finished runs kept (``--resume`` continues)."""
    try:
        coord.run(plan)
    except KeyboardInterrupt:
        summary.interrupted = True
        coord.abort()
    except NoHosts as exc:
        summary.interrupted = True
        coord.session.note(str(exc))
    except OSError as exc:
        from distributed.comm import CommClosedError

        if not isinstance(exc, CommClosedError):
            raise
        summary.interrupted = True
        coord.session.note(
            f"lost the connection to the Dask scheduler ({exc!r}); runs finished so "
            "far are kept; continue with `--resume`"
        )
    finally:
        coord.report()
