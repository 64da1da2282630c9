"""Run one experiment across a fleet of Dask workers (docs/cluster.md).

Every run is a Dask task that needs the worker resource ``duet=1``: a worker
started with ``--resources duet=1`` never executes two runs at once, even when
several coordinators share the cluster (BEEN's exclusive tasks). On top of
that the coordinator (this module, in the ``duet run`` process) keeps at most
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

The worker-side functions run the executor synchronously in the Dask task
thread. That matters: the drivers ask for ``PR_SET_PDEATHSIG``, which fires
when the *thread* that forked them exits. A Dask worker thread only exits
between tasks (shutdown, or a seceded task rejoining), and the executor has
reaped every driver before the task returns, so the signal fires only when the
worker process itself dies -- exactly when the workload must go too. Never call
``secede()`` or move ``execute`` to a short-lived thread here.
"""

from __future__ import annotations

import bisect
import logging
import math
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config.limits import HostCpus, cpus_message, unusable_cpus
from ..config.model import Experiment
from ..errors import DuetError, ExecutorError
from ..execute.guarded import run_captured
from ..hosts import detect_host, host_name, run_artifacts
from ..lock import ExperimentLock
from ..plan import RunSpec, make_plan, stable_key
from ..store import ResultsStore
from .inline import (
    ExperimentSummary,
    NullObserver,
    Observer,
    _sigterm_as_interrupt,
    open_store,
    relocate_paths,
    results_root,
    resume_notes,
)

#: Environment variable naming the host a worker reports (default: its host name). Lets
#: several workers on one machine count as distinct hosts (``local:N``, tests).
HOST_ENV = "DUET_HOST_NAME"
#: Where a worker builds run directories before sending them back (default: the temp dir).
WORK_DIR_ENV = "DUET_WORK_DIR"
#: The worker resource every run needs one unit of.
RESOURCE = "duet"
#: Seconds to wait for the first worker, and for a usable host when none is left.
WAIT_WORKERS_S = float(os.environ.get("DUET_CLUSTER_WAIT", "60"))
#: ``design: balanced``: seconds a host may be without a worker before its runs move.
HOST_GRACE_S = 30.0
#: Consecutive lost attempts (worker died / task raised) after which a host gets no more runs.
QUARANTINE_AFTER = 3
#: Statuses counted against a host's health.
FAILURE_KINDS = ("failed", "timeout", "hung", "lost", "interrupted")
_POLL_S = 0.25  # longest wait for a result before looking at the workers again
_WORKER_POLL_S = 1.0  # how often the worker list is fetched from the scheduler

log = logging.getLogger(__name__)


# ============================================================================ host requirements

#: ``experiment.hosts`` keys -> meaning (docs/cluster.md). Regex keys are searched, case-
#: insensitively, in the detected value; a list means "any of these".
HOST_REQUIREMENTS: dict[str, str] = {
    "host": "regex on the host name",
    "cpu_model": "regex on the CPU model",
    "kernel": "regex on the kernel release",
    "os": "regex on the OS (platform string)",
    "machine": "regex on the architecture (x86_64, aarch64)",
    "virtualization": "regex on the virtualization (none, kvm, docker, ...)",
    "container_engine": "regex on an installed container engine (docker, podman)",
    "min_cores": "at least this many CPUs available to the worker",
    "max_cores": "at most this many CPUs available to the worker",
    "min_memory_gb": "at least this much memory (GB = 10^9 bytes)",
    "max_memory_gb": "at most this much memory (GB = 10^9 bytes)",
}
_REGEX_FIELDS = {
    "host": "host",
    "cpu_model": "cpu_model",
    "kernel": "kernel",
    "os": "os",
    "machine": "machine",
    "virtualization": "virtualization",
    "container_engine": "container_engines",
}


def _cores(info: Mapping[str, Any]) -> int:
    return len(info.get("cpus_available") or []) or int(info.get("cores") or 0)


def check_host(
    requirements: Mapping[str, Any] | Iterable[tuple[str, Any]], info: Mapping[str, Any]
) -> list[str]:
    """Why the host described by ``info`` (hosts/<host>.json) misses ``requirements``; [] = fits."""
    reqs = dict(requirements)
    problems: list[str] = []
    for key, want in sorted(reqs.items()):
        if key in _REGEX_FIELDS:
            value = info.get(_REGEX_FIELDS[key])
            values = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
            if value is None:
                values = []
            pats = [want] if isinstance(want, str) else list(want)
            if not any(re.search(p, v, re.IGNORECASE) for p in pats for v in values):
                shown = ", ".join(values) or "none"
                problems.append(f"{key} is {shown!r}, wanted {' or '.join(map(repr, pats))}")
        elif key in ("min_cores", "max_cores"):
            cores = _cores(info)
            if (key == "min_cores" and cores < want) or (key == "max_cores" and cores > want):
                problems.append(f"{cores} CPUs available, wanted {key.split('_')[0]} {want}")
        elif key in ("min_memory_gb", "max_memory_gb"):
            mem = info.get("memory_bytes")
            gb = mem / 1e9 if mem else None
            if gb is None:
                problems.append(f"memory unknown, wanted {key.split('_')[0]} {want} GB")
            elif (key == "min_memory_gb" and gb < want) or (key == "max_memory_gb" and gb > want):
                problems.append(f"{gb:.1f} GB memory, wanted {key.split('_')[0]} {want} GB")
        else:
            problems.append(
                f"unknown host requirement '{key}' (known: {', '.join(HOST_REQUIREMENTS)})"
            )
    return problems


def cpu_reasons(exp: Experiment, host: str, info: Mapping[str, Any]) -> list[str]:
    """Why ``host`` cannot run a benchmark whose `cpus:` list names CPUs it lacks ([] = it can).

    `duet plan` and `duet run` check the `cpus:` lists against their own host; on a cluster
    each host is checked when its first worker joins.
    """
    usable = info.get("cpus_available")
    if not usable:  # not known: the run itself will tell
        return []
    here = HostCpus(host, usable)
    problems = []
    for bench in exp.benchmarks:
        missing = unusable_cpus(bench.cpus, usable)
        if missing:
            problems.append(cpus_message(bench.name, missing, here))
    return problems


# ============================================================================ balanced design


def balanced_assignment(plan: Iterable[RunSpec], hosts: Iterable[str], seed: int) -> dict[str, str]:
    """Run id -> host for ``design: balanced`` (a host-balanced design, seed 002 sec. 4.2).

    Per benchmark x method, the repetitions are dealt over the hosts as evenly as possible
    (each host gets floor or ceil of reps/hosts); both seqn runs (A and B) of a repetition go
    to the same host, so every host runs A and B equally often and the host effect cancels in
    each pair. Which repetitions go where is drawn from ``(seed, benchmark, method)``; the hosts
    that get one more repetition than the others are the least loaded so far.
    """
    names = sorted(set(hosts))
    if not names:
        return {}
    groups: dict[tuple[str, str], set[int]] = {}
    runs_per_rep: dict[tuple[str, str], int] = {}
    specs = list(plan)
    for s in specs:
        groups.setdefault((s.benchmark, s.method), set()).add(s.rep)
        runs_per_rep[(s.benchmark, s.method)] = 2 if s.method == "seqn" else 1
    load = dict.fromkeys(names, 0)
    where: dict[tuple[str, str, int], str] = {}
    for key in sorted(groups):
        bench, method = key
        reps = sorted(groups[key])
        rng = np.random.default_rng([seed, stable_key("balanced", bench, method)])
        n, h = len(reps), len(names)
        tiebreak = {name: int(i) for i, name in zip(rng.permutation(h), names, strict=True)}
        by_load = sorted(names, key=lambda x: (load[x], tiebreak[x]))
        extra = set(by_load[: n % h])
        slots = [x for x in names for _ in range(n // h + (x in extra))]
        for rep, i in zip(reps, rng.permutation(len(slots)), strict=True):
            where[(bench, method, rep)] = slots[int(i)]
            load[slots[int(i)]] += runs_per_rep[key]
    return {s.run_id: where[(s.benchmark, s.method, s.rep)] for s in specs}


# ============================================================================ host health


def _binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), in logs so large n cannot overflow."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(k, n + 1):
        lpmf = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
        total += math.exp(lpmf + (n - i) * lq)
    return min(1.0, total)


def host_health(
    counts: Mapping[str, Mapping[str, int]], *, alpha: float = 0.01
) -> dict[str, dict[str, Any]]:
    """Per host: runs, failures, failure rate, and whether it is *flagged*.

    ``counts[host]`` maps outcomes (``ok``, ``failed``, ``timeout``, ``hung``, ``lost``, ``interrupted``)
    to how often they happened there; everything but ``ok`` is a failure. A host is flagged
    when it has at least 2 failures and, were it as reliable as the other hosts together
    (their failure rate, smoothed by +0.5/+1), seeing that many failures would have
    probability below ``alpha`` (a one-sided binomial test). A lone host is never flagged:
    there is nothing to compare with, and a benchmark that fails everywhere is not a host
    problem.
    """
    per = {h: (sum(c.values()), sum(c.get(k, 0) for k in FAILURE_KINDS)) for h, c in counts.items()}
    tot_n = sum(n for n, _ in per.values())
    tot_f = sum(f for _, f in per.values())
    out: dict[str, dict[str, Any]] = {}
    for h, (n, f) in per.items():
        n_o, f_o = tot_n - n, tot_f - f
        rate = f / n if n else 0.0
        others = f_o / n_o if n_o else None
        flagged, reason = False, ""
        if f >= 2 and n_o > 0 and others is not None and rate > others:
            p0 = (f_o + 0.5) / (n_o + 1.0)
            pvalue = _binom_sf(f, n, p0)
            if pvalue < alpha:
                flagged = True
                reason = (
                    f"{f} of {n} runs failed or were lost ({rate:.0%}) against {others:.0%} on "
                    f"the other hosts (binomial p = {pvalue:.2g})"
                )
        lost = counts[h].get("lost", 0)
        out[h] = {
            "runs": n,
            "failures": f,
            "lost": lost,
            "failure_rate": rate,
            "others_failure_rate": others,
            "flagged": flagged,
            "reason": reason,
        }
    return out


# ============================================================================ worker side

_INSTANCE = uuid.uuid4().hex  # identifies this worker process in results


def worker_host_name() -> str:
    """The host this process counts as: ``$DUET_HOST_NAME`` or the machine's host name."""
    return os.environ.get(HOST_ENV) or host_name()


def probe_worker(artifacts: list[tuple[str, str]]) -> dict[str, Any]:
    """On a worker: its host name and configuration (hosts/<host>.json), once per worker."""
    host = worker_host_name()
    info = detect_host()
    info["host"] = host
    info["artifacts"] = run_artifacts(artifacts)
    return {"host": host, "info": info, "pid": os.getpid(), "instance": _INSTANCE}


def host_command(command: str, base_dir: str) -> dict[str, Any]:
    """On a worker: the experiment's ``setup``/``teardown`` command (once per host), in its
    own process group that dies with the worker (execute/guarded.py)."""
    cwd = base_dir if base_dir and os.path.isdir(base_dir) else None
    try:
        p = run_captured(["/bin/sh", "-c", command], cwd=cwd, timeout=3600, stdout_limit=0)
    except OSError as exc:
        return {"exit_code": None, "stderr": str(exc)}
    if p.timed_out:
        return {"exit_code": None, "stderr": f"timed out after 3600 s\n{p.stderr}"}
    return {"exit_code": p.returncode, "stderr": p.stderr}


def pack_dir(root: Path) -> list[tuple[str, str, int, bytes | str]]:
    """A directory's contents as ``(relative path, kind, mode, data)`` (see
    :meth:`ResultsStore.commit_run_contents`). FIFOs, sockets and devices are skipped."""
    out: list[tuple[str, str, int, bytes | str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in sorted(dirnames) + sorted(filenames):
            path = base / name
            rel = str(path.relative_to(root))
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", 0, os.readlink(path)))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, "d", stat.S_IMODE(st.st_mode), b""))
            elif stat.S_ISREG(st.st_mode):
                try:
                    out.append((rel, "f", stat.S_IMODE(st.st_mode), path.read_bytes()))
                except OSError:
                    continue
        dirnames[:] = [d for d in dirnames if not os.path.islink(base / d)]
    return out


def dask_worker_environ() -> dict[str, str]:
    """What Dask's nanny puts in a worker's environment when the user did not set it."""
    try:
        import dask
    except ImportError:
        return {}
    cfg = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    env = {k: str(v) for k, v in cfg.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"  # distributed.nanny: a fixed hash seed for its workers
    return env


def strip_dask_environ() -> list[str]:
    """Remove the variables Dask's nanny sets in worker processes (``OMP_NUM_THREADS=1``,
    ``MALLOC_TRIM_THRESHOLD_``, ``PYTHONHASHSEED``...: :func:`dask_worker_environ`) where they
    still hold Dask's value, so a run sees the environment it would see without --cluster.
    Returns the names removed. Set such variables in the benchmark's ``env:`` instead."""
    removed = []
    for key, value in dask_worker_environ().items():
        if key in os.environ and os.environ[key] == value:
            del os.environ[key]
            removed.append(key)
    return removed


def execute_on_worker(payload: dict[str, Any]) -> dict[str, Any]:
    """On a worker (a Dask task holding ``duet=1``): execute one run, return its directory.

    Runs the executor in *this* thread (see the module docstring on PR_SET_PDEATHSIG).
    """
    from ..execute.base import get_executor

    spec = RunSpec.from_dict(payload["spec"])
    host = worker_host_name()
    strip_dask_environ()
    work = os.environ.get(WORK_DIR_ENV) or None
    root = Path(tempfile.mkdtemp(prefix=f"duet-{payload['token']}-{spec.run_id}-", dir=work))
    root = root.resolve()  # DUET_WORK_DIR may be relative: the sides run in other directories
    try:
        setup = None
        if payload.get("setup"):
            setup = host_command(payload["setup"], spec.base_dir)
        executor = get_executor(payload["executor"], host=host, settings=payload.get("container"))
        run_dir = root / "run"
        run_dir.mkdir()
        t0 = time.monotonic()
        outcome = executor.execute(spec, run_dir)
        return {
            "record": outcome.record,
            "run_dir": str(run_dir),  # where the record's paths point on the worker
            "files": pack_dir(run_dir),
            "error": None if outcome.exception is None else repr(outcome.exception),
            "host": host,
            "instance": _INSTANCE,
            "execute_s": time.monotonic() - t0,
            "setup": setup,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def abort_session(token: str) -> int:
    """On a worker (``client.run``): SIGTERM the driver process groups of one coordinator's runs.

    The executor then stops the rest and returns; the coordinator discards the result.
    """
    killed = 0
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and "duetbench.execute.driver" in cmd and f"duet-{token}-" in cmd:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(int(d.name), signal.SIGTERM)
                killed += 1
    return killed


# ============================================================================ the cluster


def local_cluster(
    n_workers: int, *, host_prefix: str | None = None, env: dict[str, str] | None = None
) -> Any:
    """A LocalCluster-equivalent for ``local:N``: N single-thread worker processes (with nannies)
    holding ``duet=1``; worker i reports host ``<host>-w<i>`` so runs spread over them."""
    from distributed import Nanny, Scheduler, SpecCluster

    prefix = host_prefix or worker_host_name()
    workers = {
        f"duet-w{i}": {
            "cls": Nanny,
            "options": {
                "nthreads": 1,
                "resources": {RESOURCE: 1},
                "memory_limit": 0,  # never let Dask kill a worker for its benchmark's memory
                "dashboard": False,
                "silence_logs": logging.ERROR,
                "env": {**(env or {}), HOST_ENV: f"{prefix}-w{i}"},
            },
        }
        for i in range(n_workers)
    }
    scheduler = {
        "cls": Scheduler,
        "options": {"dashboard": False, "dashboard_address": None, "host": "127.0.0.1"},
    }
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR)


def restore_environ(before: Mapping[str, str]) -> None:
    """Undo the variables a Dask nanny set in this process's environment when it spawned."""
    for key in list(os.environ):
        if key not in before:
            del os.environ[key]
    os.environ.update(before)


_LOCAL = re.compile(r"^local(?::(\d+))?$")


@contextmanager
def connect(address: str, *, timeout: float = WAIT_WORKERS_S) -> Iterator[Any]:
    """A Dask client for ``tcp://host:port`` (a running scheduler) or ``local:N``."""
    try:
        from distributed import Client
    except ImportError:
        raise ExecutorError(
            "--cluster needs Dask distributed: pip install 'duetbench[cluster]'"
        ) from None
    m = _LOCAL.match(address.strip())
    if m:
        n = int(m.group(1) or 2)
        if n < 1:
            raise ExecutorError("--cluster local:N needs N >= 1 workers")
        before = dict(os.environ)
        cluster = local_cluster(n)
        restore_environ(before)  # the nannies set their workers' variables in this process too
        try:
            client = Client(cluster, set_as_default=False)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
        return
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ExecutorError(
            f"cannot reach the Dask scheduler at {address} ({exc}). Start one with "
            "`dask scheduler` and workers with `dask worker ADDRESS --nthreads 1 --resources "
            "duet=1`, or try `--cluster local:2`."
        ) from None
    try:
        yield client
    finally:
        client.close()


# ============================================================================ the coordinator


@dataclass
class _Attempt:
    spec: RunSpec
    host: str
    worker: str
    number: int
    future: Any
    dispatched: float = 0.0  # time.monotonic() at submit


@dataclass
class _Worker:
    address: str
    instance: str
    host: str | None = None
    probe: Any = None
    broken: bool = False


@dataclass
class _Host:
    name: str
    info: dict[str, Any]
    eligible: bool
    reasons: list[str]
    workers: list[str] = field(default_factory=list)
    busy: _Attempt | None = None
    setup_done: bool = False
    ran: bool = False
    consecutive_faults: int = 0
    quarantined: bool = False
    gone_since: float | None = None
    idle_since: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)


class _Coordinator:
    def __init__(
        self,
        client: Any,
        exp: Experiment,
        store: ResultsStore,
        plan_all: list[RunSpec],
        plan: list[RunSpec],
        todo: list[RunSpec],
        observer: Observer,
        summary: ExperimentSummary,
        address: str,
        wait_workers: float,
    ) -> None:
        self.client = client
        self.exp = exp
        self.store = store
        self.plan_all = plan_all
        self.plan = plan
        self.todo = todo
        self.observer = observer
        self.summary = summary
        self.address = address
        self.wait_workers = wait_workers
        self.token = uuid.uuid4().hex[:12]
        self.pending: list[RunSpec] = sorted(todo, key=lambda r: r.index)
        self.lost: dict[str, list[str]] = {}
        self.pins: dict[str, str] = {}
        self.pinned_hosts: set[str] = set()
        self.workers: dict[str, _Worker] = {}
        self.hosts: dict[str, _Host] = {}
        self.max_retries = max(1, exp.retries)
        self.container = exp.to_dict().get("container")
        self._keys = 0
        self._last_poll = 0.0
        self._noted: set[str] = set()
        self._no_host_since: float | None = None
        self.started = False
        self._wake = threading.Event()

    # ------------------------------------------------------------------ helpers
    def note(self, text: str, once: str | None = None) -> None:
        if once is not None:
            if once in self._noted:
                return
            self._noted.add(once)
        self.summary.notes.append(text)
        log.info(text)

    def event(self, kind: str, **fields: Any) -> None:
        self.store.log_cluster_event({"event": kind, "session": self.token, **fields})

    def _key(self, what: str) -> str:
        self._keys += 1
        return f"duet-{what}-{self.token}-{self._keys}"

    def _on_done(self, _future: Any) -> None:
        self._wake.set()

    def usable(self, h: _Host) -> bool:
        return h.eligible and not h.quarantined and bool(h.workers)

    # ------------------------------------------------------------------ workers
    def poll_workers(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_poll < _WORKER_POLL_S:
            return
        self._last_poll = now
        info = self.client.scheduler_info()["workers"]
        current: dict[str, str] = {}
        for addr, w in info.items():
            if (w.get("resources") or {}).get(RESOURCE, 0) < 1:
                self.note(
                    f"worker {addr} offers no '{RESOURCE}' resource and gets no runs; start "
                    f"workers with --nthreads 1 --resources {RESOURCE}=1",
                    once=f"nores:{addr}",
                )
                continue
            current[addr] = str(w.get("local_directory") or w.get("id") or "")
        for addr, w in list(self.workers.items()):
            if addr not in current or current[addr] != w.instance:
                self.worker_gone(addr)
        for addr, inst in current.items():
            if addr not in self.workers:
                self.worker_new(addr, inst)

    def worker_new(self, addr: str, instance: str) -> None:
        w = _Worker(addr, instance)
        w.probe = self.client.submit(
            probe_worker,
            list(self.exp.artifacts),
            key=self._key("probe"),
            workers=[addr],
            allow_other_workers=False,
            resources={RESOURCE: 1},
            priority=len(self.plan_all) + 1,
            pure=False,
        )
        w.probe.add_done_callback(self._on_done)
        self.workers[addr] = w

    def probe_done(self, w: _Worker) -> None:
        fut, w.probe = w.probe, None
        try:
            res = fut.result(timeout=30)
        except Exception as exc:  # noqa: BLE001 - a worker that cannot even describe itself
            w.broken = True
            self.note(f"worker {w.address} could not be probed ({exc!r}); it gets no runs")
            self.event("probe_failed", worker=w.address, error=repr(exc))
            return
        name = res["host"]
        w.host = name
        h = self.hosts.get(name)
        if h is None:
            reasons = check_host(self.exp.hosts, res["info"])
            pinned = cpu_reasons(self.exp, name, res["info"])
            h = _Host(name, res["info"], eligible=not (reasons or pinned), reasons=reasons + pinned)
            h.idle_since = time.monotonic()
            self.hosts[name] = h
            if not self.store.host_path(name).exists():
                self.store.write_host(name, res["info"])
            if reasons:
                self.note(
                    f"host {name} excluded by the `hosts:` requirements: {'; '.join(reasons)}"
                )
            if pinned:
                self.note(f"host {name} excluded: {'; '.join(pinned)}")
        h.workers.append(w.address)
        h.gone_since = None
        if len(h.workers) > 1:
            self.note(
                f"host {name} has {len(h.workers)} workers; it still runs one run at a time",
                once=f"multi:{name}",
            )
        self.event(
            "worker_joined",
            worker=w.address,
            host=name,
            pid=res["pid"],
            eligible=h.eligible,
            reasons=h.reasons,
        )

    def worker_gone(self, addr: str) -> None:
        w = self.workers.pop(addr)
        if w.probe is not None:
            self.client.cancel([w.probe])
        self.event("worker_left", worker=addr, host=w.host)
        if w.host is None:
            return
        h = self.hosts[w.host]
        if addr in h.workers:
            h.workers.remove(addr)
        if not h.workers:
            h.gone_since = time.monotonic()
        a = h.busy
        if a is not None and a.worker == addr:
            res = None
            if a.future.status == "finished":  # finished just before the worker went
                with suppress(Exception):
                    res = a.future.result(timeout=5)
            if res is not None:
                self.attempt_done(a, res)
                return
            self.client.cancel([a.future])
            self.attempt_lost(a, "its worker died or left while it ran")

    def wait_for_hosts(self) -> None:
        """The workers present at the start, probed (balanced designs need the whole fleet)."""
        try:
            self.client.wait_for_workers(1, timeout=self.wait_workers)
        except (TimeoutError, OSError):
            raise ExecutorError(
                f"no Dask worker joined {self.address} within {self.wait_workers:g} s; start "
                f"workers with `dask worker {self.address} --nthreads 1 --resources {RESOURCE}=1`"
            ) from None
        self.poll_workers(force=True)
        deadline = time.monotonic() + max(self.wait_workers, 30.0)
        while any(w.probe is not None for w in self.workers.values()):
            if time.monotonic() > deadline:
                if any(h.eligible for h in self.hosts.values()):
                    break  # go with the hosts known; the others join when they answer
                raise ExecutorError(
                    f"no worker answered the host probe within {max(self.wait_workers, 30.0):g} s "
                    "(all busy with another experiment's runs, or duetbench is not installed "
                    "on them?)"
                )
            self.collect(_POLL_S)
            self.poll_workers()
        if not any(h.eligible for h in self.hosts.values()):
            detail = "; ".join(f"{h.name}: {', '.join(h.reasons)}" for h in self.hosts.values())
            raise ExecutorError(
                "no worker's host meets the experiment's `hosts:` requirements and `cpus:` lists "
                f"({detail or 'no host could be probed'}). Relax them or add matching workers."
            )

    # ------------------------------------------------------------------ balanced design
    def assign(self) -> None:
        names = sorted(h.name for h in self.hosts.values() if self.usable(h))
        self.pins = balanced_assignment(self.plan_all, names, self.exp.seed)
        self.pinned_hosts = set(names)
        self.event("assignment", design="balanced", hosts=names, pins=self.pins)

    def repin(self) -> None:
        now = time.monotonic()
        gone = {
            n
            for n in self.pinned_hosts
            if (h := self.hosts.get(n)) is None
            or h.quarantined
            or (not h.workers and h.gone_since is not None and now - h.gone_since > HOST_GRACE_S)
        }
        alive = sorted(h.name for h in self.hosts.values() if self.usable(h))
        if not gone or not alive:
            return
        self.pinned_hosts -= gone
        alive = [a for a in alive if a in self.pinned_hosts] or alive
        load = Counter(self.pins[s.run_id] for s in self.pending if self.pins[s.run_id] in alive)
        groups: dict[tuple[str, str, int], list[RunSpec]] = {}
        for s in self.pending:
            if self.pins.get(s.run_id) in gone:
                groups.setdefault((s.benchmark, s.method, s.rep), []).append(s)
        split = 0
        for key in sorted(groups):
            target = min(alive, key=lambda x: (load[x], x))
            for s in groups[key]:
                self.pins[s.run_id] = target
            load[target] += len(groups[key])
            if key[1] == "seqn" and len(groups[key]) == 1:
                split += 1
        moved = sum(len(g) for g in groups.values())
        self.note(
            f"host(s) {', '.join(sorted(gone))} left the balanced design; {moved} run(s) moved to "
            f"{', '.join(alive)}"
            + (f"; {split} seqn repetition(s) now have A and B on different hosts" if split else "")
        )
        self.event(
            "repin",
            gone=sorted(gone),
            pins={s.run_id: self.pins[s.run_id] for g in groups.values() for s in g},
        )

    # ------------------------------------------------------------------ dispatch
    def choose(self, spec: RunSpec, idle: list[_Host]) -> _Host | None:
        if self.exp.design == "balanced":
            pin = self.pins.get(spec.run_id)
            return next((h for h in idle if h.name == pin), None)
        avoid = set(self.lost.get(spec.run_id, ()))
        cands = [h for h in idle if h.name not in avoid]
        if not cands:
            others = [h for h in self.hosts.values() if self.usable(h) and h.name not in avoid]
            if others:
                return None  # wait for another host rather than retry where it was lost
            cands = idle
        return min(cands, key=lambda h: (h.idle_since, h.name)) if cands else None

    def dispatch(self) -> None:
        idle = [h for h in self.hosts.values() if self.usable(h) and h.busy is None]
        i = 0
        while idle and i < len(self.pending):
            spec = self.pending[i]
            h = self.choose(spec, idle)
            if h is None:
                i += 1
                continue
            self.pending.pop(i)
            idle.remove(h)
            self.submit(spec, h)

    def submit(self, spec: RunSpec, h: _Host) -> None:
        worker = h.workers[0]
        payload = {
            "spec": spec.to_dict(),
            "executor": self.exp.executor,
            "container": self.container,
            "token": self.token,
            "setup": self.exp.setup if not h.setup_done else None,
        }
        fut = self.client.submit(
            execute_on_worker,
            payload,
            key=self._key("run"),
            workers=[worker],
            allow_other_workers=False,
            resources={RESOURCE: 1},
            priority=len(self.plan_all) - spec.index,
            pure=False,
        )
        fut.add_done_callback(self._on_done)
        number = len(self.lost.get(spec.run_id, ())) + 1
        h.busy = _Attempt(spec, h.name, worker, number, fut, time.monotonic())
        self.event("dispatched", run_id=spec.run_id, host=h.name, worker=worker, attempt=number)
        self.observer.run_started(spec)

    # ------------------------------------------------------------------ results
    def collect(self, timeout: float) -> None:
        attempts = {id(h.busy.future): h.busy for h in self.hosts.values() if h.busy is not None}
        probes = {id(w.probe): w for w in self.workers.values() if w.probe is not None}
        futures = [a.future for a in attempts.values()] + [w.probe for w in probes.values()]
        if not any(f.done() for f in futures):
            self._wake.wait(timeout)  # set by every future's done-callback
        self._wake.clear()
        for fut in futures:
            if not fut.done():
                continue
            if id(fut) in probes:
                self.probe_done(probes[id(fut)])
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

    def attempt_done(self, a: _Attempt, res: dict[str, Any]) -> None:
        h = self.hosts[a.host]
        h.busy = None
        h.idle_since = time.monotonic()
        h.ran = True
        a.future.release()
        setup = res.get("setup")
        if setup is not None:
            h.setup_done = True
            if setup.get("exit_code") != 0:
                self.note(
                    f"setup on host {h.name} exited with {setup.get('exit_code')}: {setup.get('stderr', '')[-200:]}"
                )
        if res.get("error"):
            self.attempt_lost(a, f"the executor stopped with {res['error']}", res)
            return
        h.consecutive_faults = 0
        record = self.relocated(a.spec, res)
        self.store.commit_run_contents(a.spec.run_id, res["files"], record)
        roundtrip = time.monotonic() - a.dispatched
        self.event(
            "done",
            run_id=a.spec.run_id,
            host=h.name,
            attempt=a.number,
            status=record["status"],
            execute_s=round(res.get("execute_s", 0.0), 6),
            roundtrip_s=round(roundtrip, 6),  # submit -> committed: execute_s + scheduling
        )
        self.finished(a.spec, record, h)

    def relocated(self, spec: RunSpec, res: dict[str, Any]) -> dict[str, Any]:
        """The worker's run record naming the run's directory in this results directory."""
        record: dict[str, Any] = res["record"]
        if res.get("run_dir"):
            record = relocate_paths(record, res["run_dir"], self.store.runs_dir / spec.run_id)
        return record

    def finished(self, spec: RunSpec, record: dict[str, Any], h: _Host | None) -> None:
        status = record["status"]
        if h is not None:
            h.counts[status] += 1
        self.summary.statuses[status] = self.summary.statuses.get(status, 0) + 1
        self.summary.all_cores_busy |= bool(record.get("all_cores_busy"))
        self.observer.run_finished(spec, record)

    def attempt_lost(self, a: _Attempt, reason: str, res: dict[str, Any] | None = None) -> None:
        h = self.hosts[a.host]
        if h.busy is a:
            h.busy = None
            h.idle_since = time.monotonic()
        h.counts["lost"] += 1
        h.consecutive_faults += 1
        if h.consecutive_faults >= QUARANTINE_AFTER and not h.quarantined:
            h.quarantined = True
            self.note(
                f"host {h.name} lost {h.consecutive_faults} runs in a row (worker deaths or "
                "errors); it gets no more runs in this experiment"
            )
            self.event("quarantined", host=h.name)
        tried = self.lost.setdefault(a.spec.run_id, [])
        tried.append(h.name)
        self.event(
            "lost",
            run_id=a.spec.run_id,
            host=h.name,
            worker=a.worker,
            attempt=a.number,
            reason=reason,
        )
        if len(tried) <= self.max_retries:
            bisect.insort(self.pending, a.spec, key=lambda r: r.index)
            return
        # out of retries: keep what we know as an interrupted run (not journaled; --resume redoes it)
        message = f"lost {len(tried)} time(s) on host(s) {', '.join(tried)}: {reason}"
        if res is not None:
            record = dict(self.relocated(a.spec, res))
            record["status"] = "interrupted"
            record["message"] = message
            self.store.commit_run_contents(a.spec.run_id, res["files"], record)
        else:
            record = _lost_record(a.spec, h.name, self.exp.executor, message)
            self.store.commit_run(self.store.new_run_dir(a.spec.run_id), record)
        self.note(f"run {a.spec.run_id} {message}; `--resume` runs it again")
        self.finished(a.spec, record, None)

    # ------------------------------------------------------------------ main loop
    def run(self) -> None:
        self.event(
            "session",
            address=self.address,
            design=self.exp.design,
            retries=self.max_retries,
            requirements=dict(self.exp.hosts),
            todo=len(self.todo),
        )
        self.wait_for_hosts()
        if self.exp.design == "balanced":
            self.assign()
        self.observer.experiment_started(self.store, self.plan, self.todo)
        self.started = True
        while self.pending or any(h.busy is not None for h in self.hosts.values()):
            self.collect(_POLL_S)
            self.poll_workers()
            if self.exp.design == "balanced":
                self.repin()
            self.dispatch()
            self.check_starvation()
        self.teardown()

    def check_starvation(self) -> None:
        if any(self.usable(h) for h in self.hosts.values()) or not self.pending:
            self._no_host_since = None
            return
        now = time.monotonic()
        if self._no_host_since is None:
            self._no_host_since = now
        elif now - self._no_host_since > self.wait_workers:
            raise _NoHosts(
                f"no usable host for {self.wait_workers:g} s with {len(self.pending)} run(s) to go; "
                "start workers and continue with `--resume`"
            )

    def teardown(self) -> None:
        if not self.exp.teardown:
            return
        futs = []
        for h in self.hosts.values():
            if h.ran and self.usable(h):
                futs.append(
                    self.client.submit(
                        host_command,
                        self.exp.teardown,
                        self.plan_all[0].base_dir if self.plan_all else "",
                        key=self._key("teardown"),
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
            self.client.run(abort_session, self.token, on_error="ignore")
        futs = [h.busy.future for h in self.hosts.values() if h.busy is not None]
        futs += [w.probe for w in self.workers.values() if w.probe is not None]
        with suppress(Exception):
            self.client.cancel(futs)

    def report(self) -> None:
        counts = {n: dict(h.counts) for n, h in self.hosts.items() if h.eligible}
        health = host_health(counts)
        for n, h in sorted(self.hosts.items()):
            entry = {
                "eligible": h.eligible,
                "reasons": h.reasons,
                "quarantined": h.quarantined,
                "counts": dict(h.counts),
                **health.get(n, {}),
            }
            self.summary.hosts[n] = entry
            if entry.get("flagged"):
                self.note(f"host {n} looks unhealthy: {entry['reason']} (see `duet hosts`)")


class _NoHosts(DuetError):
    pass


def _lost_record(spec: RunSpec, host: str, executor: str, message: str) -> dict[str, Any]:
    now = time.time_ns()
    return {
        "run_id": spec.run_id,
        "benchmark": spec.benchmark,
        "suite": spec.suite,
        "method": spec.method,
        "rep": spec.rep,
        "order": spec.order,
        "host": host,
        "executor": executor,
        "status": "interrupted",
        "message": message,
        "spec": spec.to_dict(),
        "sides": {},
        "all_cores_busy": False,
        "start_ns": now,
        "end_ns": now,
    }


def run_experiment_cluster(
    exp: Experiment,
    out_dir: str | Path,
    *,
    address: str,
    resume: bool = False,
    only: list[str] | None = None,
    observer: Observer | None = None,
    wait_workers: float | None = None,
) -> ExperimentSummary:
    """Execute (or resume) ``exp`` on the Dask cluster at ``address`` (or ``local:N``) into
    ``out_dir/<name>``; the results directory is the same as :func:`inline.run_experiment`'s
    (plus ``cluster.jsonl``), and every finished run is kept exactly once. The experiment
    directory is locked before the cluster is contacted (lock.py)."""
    with ExperimentLock.acquire(results_root(exp, out_dir)):
        return _run_cluster_locked(
            exp,
            out_dir,
            address=address,
            resume=resume,
            only=only,
            observer=observer,
            wait_workers=wait_workers,
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
    with _sigterm_as_interrupt():
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
                coord = _Coordinator(
                    client, exp, store, plan_all, plan, todo, observer, summary, address, wait_s
                )
                try:
                    coord.run()
                except KeyboardInterrupt:
                    summary.interrupted = True
                    coord.abort()
                except _NoHosts as exc:
                    summary.interrupted = True
                    coord.note(str(exc))
                except OSError as exc:
                    from distributed.comm import CommClosedError

                    if not isinstance(exc, CommClosedError):
                        raise
                    summary.interrupted = True
                    coord.note(
                        f"lost the connection to the Dask scheduler ({exc!r}); runs finished so "
                        "far are kept; continue with `--resume`"
                    )
                finally:
                    coord.report()
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
