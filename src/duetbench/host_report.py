"""`duet hosts` as a library: which hosts ran an experiment, their configuration, the runs
they executed per status, and their health."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .schedule.cluster import host_health
from .schema import RunStatus
from .store import ResultsStore

SCHEMA_ID = "duetbench.hosts/1"
#: the run counts of every host, in this order (JSON ``runs``)
STATUSES: tuple[str, ...] = tuple(s.value for s in RunStatus)


def _overlaps(intervals: list[tuple[int, int, str]]) -> list[tuple[str, str]]:
    """Pairs of runs whose [start, end] intervals intersect (should never happen on one host)."""
    out = []
    latest: tuple[int, str] | None = None
    for start, end, rid in sorted(intervals):
        if latest is not None and start < latest[0]:
            out.append((latest[1], rid))
        if latest is None or end > latest[0]:
            latest = (end, rid)
    return out


def hosts_report(root: Path) -> dict[str, Any]:
    """Everything `duet hosts` shows, as plain data (the JSON output)."""
    root = Path(root)
    store = ResultsStore.open(root)
    exp = store.experiment()
    configs = store.hosts()
    events = store.cluster_events()
    counts: dict[str, Counter[str]] = {}
    intervals: dict[str, list[tuple[int, int, str]]] = {}
    lost_on: set[tuple[str, str]] = set()
    excluded: dict[str, list[str]] = {}
    quarantined: set[str] = set()
    workers: dict[str, set[str]] = {}
    for e in events:
        kind, host = e.get("event"), e.get("host")
        if host is None:
            continue
        if kind == "lost":
            counts.setdefault(host, Counter())[RunStatus.LOST.value] += 1
            lost_on.add((e.get("run_id", ""), host))
        elif kind == "worker_joined":
            workers.setdefault(host, set()).add(str(e.get("worker")))
            if not e.get("eligible", True):
                excluded[host] = list(e.get("reasons") or [])
        elif kind == "quarantined":
            quarantined.add(host)
    for rid, run in store.runs():
        if run is None:
            continue
        host = run.host or "unknown"
        status = str(run.status)
        if status == RunStatus.INTERRUPTED and (rid, host) in lost_on:
            continue  # an attempt already counted as lost
        counts.setdefault(host, Counter())[status] += 1
        if run.start_ns and run.end_ns:
            intervals.setdefault(host, []).append((run.start_ns, run.end_ns, rid))
    health = host_health({h: dict(c) for h, c in counts.items() if h not in excluded})
    rows = []
    for host in sorted(set(configs) | set(counts) | set(excluded)):
        cfg = configs.get(host, {})
        mem = cfg.get("memory_bytes")
        overlaps = _overlaps(intervals.get(host, []))
        c = counts.get(host, Counter())
        hh = health.get(host, {})
        if host in excluded:
            verdict = "excluded"
        elif hh.get("flagged"):
            verdict = "flagged"
        elif host in quarantined:
            verdict = "quarantined"
        elif overlaps:
            verdict = "overlapping runs"
        else:
            verdict = "ok"
        rows.append(
            {
                "host": host,
                "config": {
                    "cpu_model": cfg.get("cpu_model"),
                    "cores": cfg.get("cores"),
                    "cpus_available": len(cfg.get("cpus_available") or []) or None,
                    "memory_gb": round(mem / 1e9, 1) if mem else None,
                    "kernel": cfg.get("kernel"),
                    "os": cfg.get("os"),
                    "machine": cfg.get("machine"),
                    "virtualization": cfg.get("virtualization"),
                    "container_engines": cfg.get("container_engines"),
                },
                "workers": sorted(workers.get(host, ())),
                "runs": {s: c.get(s, 0) for s in STATUSES}
                | {k: v for k, v in c.items() if k not in STATUSES},
                "failure_rate": hh.get("failure_rate"),
                "others_failure_rate": hh.get("others_failure_rate"),
                "health": verdict,
                "reason": (
                    "; ".join(excluded[host])
                    if host in excluded
                    else hh.get("reason")
                    or (
                        f"{len(overlaps)} pair(s) of runs overlapped in time, e.g. "
                        f"{overlaps[0][0]} and {overlaps[0][1]}"
                        if overlaps
                        else (
                            "lost several runs in a row; got no more runs"
                            if host in quarantined
                            else ""
                        )
                    )
                ),
                "overlapping_runs": [list(p) for p in overlaps],
            }
        )
    return {
        "schema": SCHEMA_ID,
        "experiment": exp.get("name"),
        "results": str(root),
        "cluster": bool(events),
        "hosts": rows,
    }
