"""The synchronous-duet handshake: every iteration of A and B starts together.

Language-neutral: the protocol only uses named pipes (FIFOs) in one *sync
directory*, so harnesses in any language (and in separate containers that
bind-mount the directory) can take part. See ``docs/sync.md`` for the protocol,
byte by byte.

Executor side (one coordinator per sduet run)::

    with SyncCoordinator.create(run_tmp / "sync") as coord:   # creates the FIFOs, starts the thread
        env_a = {**os.environ, **coord.env("A")}             # DUET_SYNC_DIR, DUET_PAIR
        ...start both sides..., and when a side's process exits:
        coord.side_finished("A")
    coord.go_events  # when each go was sent, and to which sides

Harness side (one call before each iteration; a no-op outside a sduet)::

    import duetbench.sync
    for i in range(n):
        duetbench.sync.wait()
        ...timed iteration...
    duetbench.sync.done()

Shell and C harnesses use ``duet_sync.sh`` and ``duet_sync.h`` from this
package (:func:`helper_path`); anything that can run a command can use
``python -m duetbench.sync wait``.

Modules: ``protocol`` (names, lines, errors), ``client`` (the harness side),
``coordinator`` (the executor side), ``cli`` (``python -m duetbench.sync``).
"""

from .cli import main
from .client import SyncClient, done, helper_path, wait
from .coordinator import GoEvent, SyncCoordinator
from .protocol import DEFAULT_TIMEOUT_S, ENV_DIR, ENV_PAIR, ENV_TIMEOUT, SyncError, SyncTimeout

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ENV_DIR",
    "ENV_PAIR",
    "ENV_TIMEOUT",
    "GoEvent",
    "SyncClient",
    "SyncCoordinator",
    "SyncError",
    "SyncTimeout",
    "done",
    "helper_path",
    "main",
    "wait",
]
