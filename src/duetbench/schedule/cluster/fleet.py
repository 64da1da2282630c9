"""The workers and hosts a coordinator sees: joining (probed once, checked against the
host requirements), leaving, and which hosts may get runs."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...config.model import Experiment
from ...errors import ExecutorError
from ...plan import RunSpec
from .connect import RESOURCE
from .requirements import check_host, cpu_reasons
from .session import Session
from .worker import probe_worker

POLL_S = 0.25  # longest wait for a result before looking at the workers again
_WORKER_POLL_S = 1.0  # how often the worker list is fetched from the scheduler


@dataclass
class Attempt:
    """One attempt to execute a run on a host's worker."""

    spec: RunSpec
    host: str
    worker: str
    number: int
    future: Any
    dispatched: float = 0.0  # time.monotonic() at submit


@dataclass
class Worker:
    address: str
    instance: str
    host: str | None = None
    probe: Any = None  # the future of its host probe, until it answers


@dataclass
class Host:
    name: str
    info: dict[str, Any]
    eligible: bool
    reasons: list[str]
    workers: list[str] = field(default_factory=list)
    busy: Attempt | None = None
    setup_done: bool = False
    ran: bool = False
    consecutive_faults: int = 0
    quarantined: bool = False
    gone_since: float | None = None
    idle_since: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)


class Fleet:
    def __init__(self, client: Any, exp: Experiment, session: Session, probe_priority: int) -> None:
        self.client = client
        self.exp = exp
        self.session = session
        self.probe_priority = probe_priority  # probes go before every run
        self.workers: dict[str, Worker] = {}
        self.hosts: dict[str, Host] = {}
        self._last_poll = 0.0

    @staticmethod
    def usable(h: Host) -> bool:
        return h.eligible and not h.quarantined and bool(h.workers)

    def usable_hosts(self) -> list[Host]:
        return [h for h in self.hosts.values() if self.usable(h)]

    def busy_attempts(self) -> list[Attempt]:
        return [h.busy for h in self.hosts.values() if h.busy is not None]

    def pending_probes(self) -> dict[int, Worker]:
        """id(probe future) -> worker, for the probes not answered yet."""
        return {id(w.probe): w for w in self.workers.values() if w.probe is not None}

    # ------------------------------------------------------------------ joining and leaving
    def poll(self, force: bool = False) -> list[Attempt]:
        """Fetch the worker list (at most every second unless ``force``): probe new workers,
        forget gone ones. Returns the attempts whose worker left while they ran."""
        now = time.monotonic()
        if not force and now - self._last_poll < _WORKER_POLL_S:
            return []
        self._last_poll = now
        info = self.client.scheduler_info()["workers"]
        current: dict[str, str] = {}
        for addr, w in info.items():
            if (w.get("resources") or {}).get(RESOURCE, 0) < 1:
                self.session.note(
                    f"worker {addr} offers no '{RESOURCE}' resource and gets no runs; start "
                    f"workers with --nthreads 1 --resources {RESOURCE}=1",
                    once=f"nores:{addr}",
                )
                continue
            current[addr] = str(w.get("local_directory") or w.get("id") or "")
        orphans = []
        for addr, w in list(self.workers.items()):
            if addr not in current or current[addr] != w.instance:
                orphan = self._worker_gone(addr)
                if orphan is not None:
                    orphans.append(orphan)
        for addr, inst in current.items():
            if addr not in self.workers:
                self._worker_new(addr, inst)
        return orphans

    def _worker_new(self, addr: str, instance: str) -> None:
        w = Worker(addr, instance)
        w.probe = self.client.submit(
            probe_worker,
            list(self.exp.artifacts),
            key=self.session.key("probe"),
            workers=[addr],
            allow_other_workers=False,
            resources={RESOURCE: 1},
            priority=self.probe_priority,
            pure=False,
        )
        w.probe.add_done_callback(self.session.on_done)
        self.workers[addr] = w

    def probe_done(self, w: Worker) -> None:
        """A worker answered its probe: its host is recorded (hosts/<host>.json), checked
        against the requirements, and the worker counts for it."""
        fut, w.probe = w.probe, None
        try:
            res = fut.result(timeout=30)
        except Exception as exc:  # noqa: BLE001 - a worker that cannot even describe itself
            self.session.note(f"worker {w.address} could not be probed ({exc!r}); it gets no runs")
            self.session.event("probe_failed", worker=w.address, error=repr(exc))
            return
        name = res["host"]
        w.host = name
        h = self.hosts.get(name) or self._host_joined(name, res["info"])
        h.workers.append(w.address)
        h.gone_since = None
        if len(h.workers) > 1:
            self.session.note(
                f"host {name} has {len(h.workers)} workers; it still runs one run at a time",
                once=f"multi:{name}",
            )
        self.session.event(
            "worker_joined",
            worker=w.address,
            host=name,
            pid=res["pid"],
            eligible=h.eligible,
            reasons=h.reasons,
        )

    def _host_joined(self, name: str, info: dict[str, Any]) -> Host:
        reasons = check_host(self.exp.hosts, info)
        pinned = cpu_reasons(self.exp, name, info)
        h = Host(name, info, eligible=not (reasons or pinned), reasons=reasons + pinned)
        h.idle_since = time.monotonic()
        self.hosts[name] = h
        store = self.session.store
        if not store.has_host(name):
            store.write_host(name, info)
        if reasons:
            self.session.note(
                f"host {name} excluded by the `hosts:` requirements: {'; '.join(reasons)}"
            )
        if pinned:
            self.session.note(f"host {name} excluded: {'; '.join(pinned)}")
        return h

    def _worker_gone(self, addr: str) -> Attempt | None:
        w = self.workers.pop(addr)
        if w.probe is not None:
            self.client.cancel([w.probe])
        self.session.event("worker_left", worker=addr, host=w.host)
        if w.host is None:
            return None
        h = self.hosts[w.host]
        if addr in h.workers:
            h.workers.remove(addr)
        if not h.workers:
            h.gone_since = time.monotonic()
        a = h.busy
        return a if a is not None and a.worker == addr else None

    # ------------------------------------------------------------------ the start
    def wait_for_hosts(self, wait_workers: float, address: str) -> None:
        """The workers present at the start, probed (balanced designs need the whole fleet)."""
        try:
            self.client.wait_for_workers(1, timeout=wait_workers)
        except (TimeoutError, OSError):
            raise ExecutorError(
                f"no Dask worker joined {address} within {wait_workers:g} s; start "
                f"workers with `dask worker {address} --nthreads 1 --resources {RESOURCE}=1`"
            ) from None
        self.poll(force=True)
        limit = max(wait_workers, 30.0)
        deadline = time.monotonic() + limit
        while any(w.probe is not None for w in self.workers.values()):
            if time.monotonic() > deadline:
                if any(h.eligible for h in self.hosts.values()):
                    break  # go with the hosts known; the others join when they answer
                raise ExecutorError(
                    f"no worker answered the host probe within {limit:g} s "
                    "(all busy with another experiment's runs, or duetbench is not installed "
                    "on them?)"
                )
            self.collect_probes(POLL_S)
            self.poll()
        if not any(h.eligible for h in self.hosts.values()):
            detail = "; ".join(f"{h.name}: {', '.join(h.reasons)}" for h in self.hosts.values())
            raise ExecutorError(
                "no worker's host meets the experiment's `hosts:` requirements and `cpus:` lists "
                f"({detail or 'no host could be probed'}). Relax them or add matching workers."
            )

    def collect_probes(self, timeout: float) -> None:
        """Wait up to ``timeout`` for a probe to answer; handle the answered ones."""
        probes = self.pending_probes()
        if not any(w.probe.done() for w in probes.values()):
            self.session.wake.wait(timeout)
        self.session.wake.clear()
        for w in probes.values():
            if w.probe is not None and w.probe.done():
                self.probe_done(w)
