"""The coordinator: in the ``duet run`` process, hands the plan's runs to the fleet's hosts
(at most one in flight per host, plan order as priority), commits what comes back, and
retries attempts lost with their worker (docs/cluster.md)."""

from __future__ import annotations

import bisect
import time
from contextlib import suppress
from typing import Any

from ...config.model import Experiment
from ...errors import DuetError
from ...plan import RunSpec
from ...records import RunRecord
from ...schema import RunStatus
from ...store import ResultsStore
from ..adaptive import StopTracker
from ..inline import Observer
from .connect import RESOURCE
from .design import balanced_assignment, repin
from .fleet import POLL_S, Attempt, Fleet, Host
from .health import host_health
from .session import Session
from .worker import abort_session, execute_on_worker, host_command

#: ``design: balanced``: seconds a host may be without a worker before its runs move.
HOST_GRACE_S = 30.0
#: Consecutive lost attempts (worker died / task raised) after which a host gets no more runs.
QUARANTINE_AFTER = 3


class NoHosts(DuetError):
    """No usable host for a while with runs still to go."""


def lost_record(spec: RunSpec, host: str, executor: str, message: str) -> RunRecord:
    """The record of a run lost on every attempt without a result: interrupted, no sides."""
    now = time.time_ns()
    return RunRecord(
        **spec.record_fields(),
        host=host,
        executor=executor,
        status=RunStatus.INTERRUPTED,
        message=message,
        start_ns=now,
        end_ns=now,
    )


class Coordinator:
    def __init__(
        self,
        client: Any,
        exp: Experiment,
        store: ResultsStore,
        plan_all: list[RunSpec],
        todo: list[RunSpec],
        observer: Observer,
        session: Session,
        address: str,
        wait_workers: float,
    ) -> None:
        self.client = client
        self.exp = exp
        self.store = store
        self.plan_all = plan_all
        self.todo = todo
        self.observer = observer
        self.session = session
        self.summary = session.summary
        self.address = address
        self.wait_workers = wait_workers
        self.fleet = Fleet(client, exp, session, probe_priority=len(plan_all) + 1)
        self.pending: list[RunSpec] = sorted(todo, key=lambda r: r.index)
        self.lost: dict[str, list[str]] = {}  # run id -> hosts it was lost on
        self.pins: dict[str, str] = {}  # design: balanced: run id -> host
        self.pinned_hosts: set[str] = set()
        self.max_retries = max(1, exp.retries)
        self.container = exp.to_dict().get("container")
        self._no_host_since: float | None = None
        #: measuring until sure (docs/adaptive.md): decides after every run, in plan order
        self.tracker: StopTracker | None = None

    # ------------------------------------------------------------------ main loop
    def run(self, plan: list[RunSpec]) -> None:
        self.session.event(
            "session",
            address=self.address,
            design=self.exp.design,
            retries=self.max_retries,
            requirements=dict(self.exp.hosts),
            todo=len(self.todo),
        )
        self.fleet.wait_for_hosts(self.wait_workers, self.address)
        if self.exp.design == "balanced":
            self.assign()
        self.observer.experiment_started(self.store, plan, self.todo)
        while self.pending or self.fleet.busy_attempts():
            self.collect(POLL_S)
            self.poll_workers()
            if self.exp.design == "balanced":
                self.repin()
            self.dispatch()
            self.check_starvation()
        self.teardown()

    def poll_workers(self) -> None:
        for a in self.fleet.poll():
            self.orphaned(a)

    def check_starvation(self) -> None:
        if self.fleet.usable_hosts() or not self.pending:
            self._no_host_since = None
            return
        now = time.monotonic()
        if self._no_host_since is None:
            self._no_host_since = now
        elif now - self._no_host_since > self.wait_workers:
            raise NoHosts(
                f"no usable host for {self.wait_workers:g} s with {len(self.pending)} run(s) to go; "
                "start workers and continue with `--resume`"
            )

    # ------------------------------------------------------------------ balanced design
    def assign(self) -> None:
        names = sorted(h.name for h in self.fleet.usable_hosts())
        self.pins = balanced_assignment(self.plan_all, names, self.exp.seed)
        self.pinned_hosts = set(names)
        self.session.event("assignment", design="balanced", hosts=names, pins=self.pins)

    def repin(self) -> None:
        """Move the pending runs of hosts gone for HOST_GRACE_S (or quarantined)."""
        now = time.monotonic()
        hosts = self.fleet.hosts
        gone = {
            n
            for n in self.pinned_hosts
            if (h := hosts.get(n)) is None
            or h.quarantined
            or (not h.workers and h.gone_since is not None and now - h.gone_since > HOST_GRACE_S)
        }
        alive = sorted(h.name for h in self.fleet.usable_hosts())
        if not gone or not alive:
            return
        self.pinned_hosts -= gone
        alive = [a for a in alive if a in self.pinned_hosts] or alive
        moves, moved, split = repin(self.pins, self.pending, gone, alive)
        self.pins.update(moves)
        self.session.note(
            f"host(s) {', '.join(sorted(gone))} left the balanced design; {moved} run(s) moved to "
            f"{', '.join(alive)}"
            + (f"; {split} seqn repetition(s) now have A and B on different hosts" if split else "")
        )
        self.session.event("repin", gone=sorted(gone), pins=moves)

    # ------------------------------------------------------------------ dispatch
    def choose(self, spec: RunSpec, idle: list[Host]) -> Host | None:
        if self.exp.design == "balanced":
            pin = self.pins.get(spec.run_id)
            return next((h for h in idle if h.name == pin), None)
        avoid = set(self.lost.get(spec.run_id, ()))
        cands = [h for h in idle if h.name not in avoid]
        if not cands:
            others = [h for h in self.fleet.usable_hosts() if h.name not in avoid]
            if others:
                return None  # wait for another host rather than retry where it was lost
            cands = idle
        return min(cands, key=lambda h: (h.idle_since, h.name)) if cands else None

    def dispatch(self) -> None:
        idle = [h for h in self.fleet.usable_hosts() if h.busy is None]
        i = 0
        while idle and i < len(self.pending):
            spec = self.pending[i]
            if self.tracker is not None and self.tracker.skips(spec):  # its rule stopped it
                self.pending.pop(i)
                if self.tracker.failed_out(spec):  # its first runs all failed
                    self.summary.not_run += 1
                else:
                    self.summary.stopped_early += 1
                run_skipped = getattr(self.observer, "run_skipped", None)
                if run_skipped is not None:
                    run_skipped(spec)
                continue
            h = self.choose(spec, idle)
            if h is None:
                i += 1
                continue
            self.pending.pop(i)
            idle.remove(h)
            self.submit(spec, h)

    def submit(self, spec: RunSpec, h: Host) -> None:
        worker = h.workers[0]
        payload = {
            "spec": spec.to_dict(),
            "executor": self.exp.executor,
            "container": self.container,
            "token": self.session.token,
            "setup": self.exp.setup if not h.setup_done else None,
        }
        fut = self.client.submit(
            execute_on_worker,
            payload,
            key=self.session.key("run"),
            workers=[worker],
            allow_other_workers=False,
            resources={RESOURCE: 1},
            priority=len(self.plan_all) - spec.index,
            pure=False,
        )
        fut.add_done_callback(self.session.on_done)
        number = len(self.lost.get(spec.run_id, ())) + 1
        h.busy = Attempt(spec, h.name, worker, number, fut, time.monotonic())
        self.session.event(
            "dispatched", run_id=spec.run_id, host=h.name, worker=worker, attempt=number
        )
        self.observer.run_started(spec)

    # ------------------------------------------------------------------ results
    def collect(self, timeout: float) -> None:
        """Wait up to ``timeout`` for a run (or a probe) to come back; handle what came."""
        attempts = {id(a.future): a for a in self.fleet.busy_attempts()}
        probes = self.fleet.pending_probes()
        futures = [a.future for a in attempts.values()] + [w.probe for w in probes.values()]
        if not any(f.done() for f in futures):
            self.session.wake.wait(timeout)  # set by every future's done-callback
        self.session.wake.clear()
        for fut in futures:
            if not fut.done():
                continue
            if id(fut) in probes:
                self.fleet.probe_done(probes[id(fut)])
                continue
            a = attempts[id(fut)]
            if fut.status == "finished":
                try:
                    res = fut.result(timeout=30)
                except Exception as exc:  # noqa: BLE001 - result lost with its worker
                    self.attempt_lost(a, f"its result could not be fetched ({exc!r})")
                    continue
                self.attempt_done(a, res)
            elif fut.status == "error":
                self.attempt_lost(a, f"the task raised on the worker: {fut.exception()!r}")
            else:
                self.attempt_lost(a, f"the task was {fut.status}")

    def orphaned(self, a: Attempt) -> None:
        """An attempt whose worker left: its result if it finished just before, else lost."""
        res = None
        if a.future.status == "finished":
            with suppress(Exception):
                res = a.future.result(timeout=5)
        if res is not None:
            self.attempt_done(a, res)
            return
        self.client.cancel([a.future])
        self.attempt_lost(a, "its worker died or left while it ran")

    def attempt_done(self, a: Attempt, res: dict[str, Any]) -> None:
        h = self.fleet.hosts[a.host]
        h.busy = None
        h.idle_since = time.monotonic()
        h.ran = True
        a.future.release()
        setup = res.get("setup")
        if setup is not None:
            h.setup_done = True
            if setup.get("exit_code") != 0:
                self.session.note(
                    f"setup on host {h.name} exited with {setup.get('exit_code')}: "
                    f"{setup.get('stderr', '')[-200:]}"
                )
        if res.get("error"):
            self.attempt_lost(a, f"the executor stopped with {res['error']}", res)
            return
        h.consecutive_faults = 0
        record = self.relocated(a.spec, res)
        self.store.commit_run_contents(a.spec.run_id, res["files"], record)
        roundtrip = time.monotonic() - a.dispatched
        self.attempt_event(
            "done",
            a,
            status=record.status,
            execute_s=round(res.get("execute_s", 0.0), 6),
            roundtrip_s=round(roundtrip, 6),  # submit -> committed: execute_s + scheduling
        )
        self.finished(a.spec, record, h)

    def attempt_event(self, kind: str, a: Attempt, **fields: Any) -> None:
        """An event of an attempt in cluster.jsonl: the run, the host, the attempt's number."""
        self.session.event(kind, run_id=a.spec.run_id, host=a.host, attempt=a.number, **fields)

    def relocated(self, spec: RunSpec, res: dict[str, Any]) -> RunRecord:
        """The worker's run record naming the run's directory in this results directory."""
        record = RunRecord.from_json(res["record"])
        if res.get("run_dir"):
            record = record.relocated(res["run_dir"], self.store.run_dir(spec.run_id))
        return record

    def finished(self, spec: RunSpec, record: RunRecord, h: Host | None) -> None:
        status = record.status
        if h is not None:
            h.counts[status] += 1
        self.summary.statuses[status] = self.summary.statuses.get(status, 0) + 1
        self.summary.all_cores_busy |= record.all_cores_busy
        self.observer.run_finished(spec, record)
        if self.tracker is not None and self.tracker.observe(spec, record):
            self.tracker.write()

    def attempt_lost(self, a: Attempt, reason: str, res: dict[str, Any] | None = None) -> None:
        h = self.fleet.hosts[a.host]
        if h.busy is a:
            h.busy = None
            h.idle_since = time.monotonic()
        h.counts[RunStatus.LOST] += 1
        h.consecutive_faults += 1
        if h.consecutive_faults >= QUARANTINE_AFTER and not h.quarantined:
            h.quarantined = True
            self.session.note(
                f"host {h.name} lost {h.consecutive_faults} runs in a row (worker deaths or "
                "errors); it gets no more runs in this experiment"
            )
            self.session.event("quarantined", host=h.name)
        tried = self.lost.setdefault(a.spec.run_id, [])
        tried.append(h.name)
        self.attempt_event("lost", a, worker=a.worker, reason=reason)
        if len(tried) <= self.max_retries:
            bisect.insort(self.pending, a.spec, key=lambda r: r.index)
            return
        # out of retries: keep what we know as an interrupted run (not journaled; --resume redoes it)
        message = f"lost {len(tried)} time(s) on host(s) {', '.join(tried)}: {reason}"
        if res is not None:
            record = self.relocated(a.spec, res).with_status(RunStatus.INTERRUPTED, message)
            self.store.commit_run_contents(a.spec.run_id, res["files"], record)
        else:
            record = lost_record(a.spec, h.name, self.exp.executor, message)
            self.store.commit_run(self.store.new_run_dir(a.spec.run_id), record)
        self.session.note(f"run {a.spec.run_id} {message}; `--resume` runs it again")
        self.finished(a.spec, record, None)

    # ------------------------------------------------------------------ the end
    def teardown(self) -> None:
        if not self.exp.teardown:
            return
        futs = []
        for h in self.fleet.hosts.values():
            if h.ran and self.fleet.usable(h):
                futs.append(
                    self.client.submit(
                        host_command,
                        self.exp.teardown,
                        self.plan_all[0].base_dir if self.plan_all else "",
                        key=self.session.key("teardown"),
                        workers=[h.workers[0]],
                        resources={RESOURCE: 1},
                        pure=False,
                    )
                )
        deadline = time.monotonic() + 120
        while futs and not all(f.done() for f in futs) and time.monotonic() < deadline:
            time.sleep(0.05)

    def abort(self) -> None:
        """Ctrl-C/SIGTERM: stop this session's runs on every worker; their results are dropped."""
        with suppress(Exception):
            self.client.run(abort_session, self.session.token, on_error="ignore")
        futs = [a.future for a in self.fleet.busy_attempts()]
        futs += [w.probe for w in self.fleet.pending_probes().values()]
        with suppress(Exception):
            self.client.cancel(futs)

    def report(self) -> None:
        """Per host: eligibility, counts and health into the summary; flagged hosts noted."""
        hosts = self.fleet.hosts
        counts = {n: dict(h.counts) for n, h in hosts.items() if h.eligible}
        health = host_health(counts)
        for n, h in sorted(hosts.items()):
            entry = {
                "eligible": h.eligible,
                "reasons": h.reasons,
                "quarantined": h.quarantined,
                "counts": dict(h.counts),
                **health.get(n, {}),
            }
            self.summary.hosts[n] = entry
            if entry.get("flagged"):
                self.session.note(f"host {n} looks unhealthy: {entry['reason']} (see `duet hosts`)")
