"""No container outlives ``duet run`` (docs/containers.md): labels, the guard, reaping.

- every container duet starts carries :func:`labels` naming its owner (the pid and
  start time of ``duet run``), host and session;
- a :class:`ContainerGuard` process (``container_guard.sh``, in its own session)
  removes the session's containers once its pipe from ``duet run`` closes, however
  ``duet run`` ended;
- :func:`reap_dead_owners` removes containers of this host whose owner is gone (the
  container executor calls it before an experiment).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from ..proctools.procfs import gone, start_time
from .container_engine import Engine, engine_run


@dataclass(frozen=True)
class Owner:
    """Who started a container: ``duet run``'s pid and start time, host and session."""

    pid: int
    start: str
    host: str
    session: str


def labels(owner: Owner, experiment: str, run_id: str, pair: str, *, remove: bool) -> list[str]:
    """``--label`` options for a container of ``owner`` (empty names are left out)."""
    values = {
        "duetbench": "1",
        "duetbench.owner": str(owner.pid),
        "duetbench.owner_start": owner.start,
        "duetbench.host": owner.host,
        "duetbench.session": owner.session,
        "duetbench.remove": "1" if remove else "0",
    }
    if experiment:
        values["duetbench.experiment"] = experiment
    if run_id:
        values["duetbench.run"] = run_id
    if pair:
        values["duetbench.pair"] = pair
    out = []
    for k, v in values.items():
        out += ["--label", f"{k}={v}"]
    return out


def reap_dead_owners(engine: Engine, host: str) -> list[str]:
    """Remove containers of ``host`` whose ``duet run`` is gone; return their names.

    Containers kept on purpose (``remove_containers: false``) are only stopped.
    """
    ps = engine_run(
        engine(
            "ps", "-a", "-q", "--filter", "label=duetbench=1",
            "--filter", f"label=duetbench.host={host}",
        ),
        shield=False,
    )  # fmt: skip
    ids = ps.stdout.split()
    if ps.returncode != 0 or not ids:
        return []
    info = engine_run(engine("inspect", "--format", "{{.Name}}\t{{json .Config.Labels}}", *ids))
    remove, stop = [], []
    for line in info.stdout.splitlines():
        name, _, labels_text = line.partition("\t")
        try:
            found = json.loads(labels_text) or {}
        except json.JSONDecodeError:
            continue
        try:
            owner = int(found.get("duetbench.owner", ""))
        except ValueError:
            continue
        start = found.get("duetbench.owner_start")  # none: a container of an older duet
        if not gone(owner, start if start is not None else start_time(owner)):
            continue
        (remove if found.get("duetbench.remove", "1") == "1" else stop).append(name.lstrip("/"))
    if remove:
        engine_run(engine.rm(*remove))
    if stop:
        engine_run(engine.stop(1, *stop))
    return remove


class ContainerGuard:
    """The guard process of one session (``container_guard.sh``; see its header)."""

    def __init__(self, script: str, session: str, engine: Engine) -> None:
        self._proc = subprocess.Popen(
            ["/bin/sh", script, session, engine.kind, "--", *engine.argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def watch(self, pid: int) -> None:
        """Tell the guard about an engine client (``run``) that may still create a container."""
        stdin = self._proc.stdin
        if stdin is None:
            return
        try:
            stdin.write(f"wait {pid}\n".encode())
            stdin.flush()
        except OSError:
            pass

    def close(self) -> None:
        """Close the guard's pipe: it sweeps the session's containers (normally none) and exits."""
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:  # it finishes on its own; it is in its own session
            pass
