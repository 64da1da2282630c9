"""``python -m duetbench.sync {wait,done,path,coordinate}`` (docs/sync.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from .client import done, helper_path, wait
from .coordinator import SyncCoordinator
from .protocol import SyncError, SyncTimeout


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m duetbench.sync {wait,done,path,coordinate}``.

    Exit status: 0 go (or no sduet), 1 timeout, 2 any other error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m duetbench.sync",
        description="Synchronous-duet handshake (see docs/sync.md).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("wait", help="signal ready and block until go (no-op without DUET_SYNC_DIR)")
    sub.add_parser("done", help="tell the coordinator this side will not iterate any more")
    p_path = sub.add_parser(
        "path", help="print the path of the shell or C helper, or of the pyperf shim's directory"
    )
    p_path.add_argument("kind", choices=["sh", "h", "pyperf"])
    p_coord = sub.add_parser(
        "coordinate",
        help="run a coordinator in the foreground until every side is done "
        "(for trying a harness by hand, or in a helper container)",
    )
    p_coord.add_argument("directory", type=Path)
    p_coord.add_argument("--pairs", default="A,B", help="comma-separated side names (A,B)")
    args = parser.parse_args(argv)
    try:
        if args.command == "wait":
            wait()
        elif args.command == "done":
            done()
        elif args.command == "path":
            print(helper_path(args.kind))
        else:
            pairs = [p for p in args.pairs.split(",") if p]
            signal.signal(signal.SIGTERM, _interrupt)
            with SyncCoordinator.create(args.directory, pairs) as coord:
                try:
                    coord.wait_finished()
                except KeyboardInterrupt:
                    pass
                for event in coord.go_events:
                    print(event.index, event.epoch_ns, ",".join(event.pairs))
    except SyncTimeout as exc:
        print(f"duet-sync: {exc}", file=sys.stderr)
        return 1
    except SyncError as exc:
        print(f"duet-sync: {exc}", file=sys.stderr)
        return 2
    return 0
