"""The Dask cluster: a local one for ``local:N``, or a client of a running scheduler."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ...errors import ExecutorError
from .worker import HOST_ENV, worker_host_name

#: The worker resource every run needs one unit of.
RESOURCE = "duet"
#: Seconds to wait for the first worker, and for a usable host when none is left.
WAIT_WORKERS_S = float(os.environ.get("DUET_CLUSTER_WAIT", "60"))


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
