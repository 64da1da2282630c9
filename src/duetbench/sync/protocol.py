"""The wire protocol of the handshake (docs/sync.md, "Protocol"): names, lines, errors.

Shared by the harness side (``client.py``) and the executor side (``coordinator.py``).
"""

from __future__ import annotations

import re

from ..errors import DuetError

#: Environment variable: the sync directory (unset or empty = not a sduet, wait() is a no-op).
ENV_DIR = "DUET_SYNC_DIR"
#: Environment variable: this side's name (``A`` or ``B``).
ENV_PAIR = "DUET_PAIR"
#: Environment variable: seconds a side waits for *go* before failing (``0`` = forever).
ENV_TIMEOUT = "DUET_SYNC_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
#: Environment variable: how a side waits for *go*: ``spin`` (default: keeps its CPU
#: busy, so the other side is timed beside a busy CPU all through the iteration) or
#: ``block`` (sleeps in poll()); docs/sync.md, "Waiting: fill, spin or block".
ENV_WAIT = "DUET_SYNC_WAIT"
#: ``fill`` (the micro worker's default: the benchmark's own calls, then polling) is a
#: spinning wait for a client that has no benchmark of its own to call
WAIT_MODES = ("spin", "block", "fill")
DEFAULT_WAIT = "spin"

READY_NAME = "ready"
GO_PREFIX = "go."
GO_LINE = b"go\n"
DONE_WORD = "done"

_PAIR_RE = re.compile(r"[A-Za-z0-9_-]{1,32}")  # a line stays far below PIPE_BUF (atomic writes)


class SyncError(DuetError):
    """The handshake cannot proceed: bad environment, no coordinator, coordinator gone."""


class SyncTimeout(SyncError):
    """No *go* arrived within ``DUET_SYNC_TIMEOUT`` seconds."""


def parse_wait(text: str | None) -> bool:
    """Whether ``DUET_SYNC_WAIT`` (``None``/empty: the default) asks for a spinning wait."""
    mode = (text or "").strip() or DEFAULT_WAIT
    if mode not in WAIT_MODES:
        raise SyncError(f"{ENV_WAIT}={text!r} must be 'fill', 'spin' or 'block' (docs/sync.md)")
    return mode != "block"


def check_pair(pair: str) -> str:
    """``pair`` if it is a valid side name (its line must fit in one atomic pipe write)."""
    if not _PAIR_RE.fullmatch(pair):
        raise SyncError(
            f"invalid side name {pair!r} (set {ENV_PAIR} to A or B; "
            "allowed: 1-32 of A-Z a-z 0-9 _ -)"
        )
    return pair
