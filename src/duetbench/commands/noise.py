"""``duet noise``: run a seeded noisy neighbour in the foreground (docs/noise.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING

from ..noise import DEFAULT_OFF_RANGE, DEFAULT_ON_RANGE, patterns

if TYPE_CHECKING:
    from ..noise import NoisyNeighbour

SCHEDULE_HORIZON_S = 300.0  # --print-schedule without --duration


def _parse_cpus(text: str) -> list[int]:
    cpus: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                lo, hi = part.split("-")
                cpus.extend(range(int(lo), int(hi) + 1))
            elif part.strip():
                cpus.append(int(part))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected a CPU list like 0,1 or 0-3, got {text!r}"
        ) from exc
    return cpus


def _parse_range(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(":"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected LOW:HIGH seconds, got {text!r}") from exc
    return lo, hi


DESCRIPTION = (
    "Run reproducible on/off interference (a noisy neighbour) until --duration "
    "ends or Ctrl-C/SIGTERM; every process it started is gone when it returns. "
    "It stays in the caller's session so that, with sched_autogroup, it competes "
    "with the benchmark task for task. Patterns: "
    + "; ".join(f"{k}: {v}" for k, v in patterns().items())
)


def register(p: argparse.ArgumentParser) -> None:
    names = patterns()
    p.add_argument(
        "--pattern",
        choices=list(names),
        default="cpu",
        help="what the bursts do, see above (default: cpu)",
    )
    p.add_argument("--seed", type=int, default=0, help="seeds the on/off schedule (default 0)")
    p.add_argument(
        "--duration", default=None, help="how long to run, e.g. 90s or 5m (default: until Ctrl-C)"
    )
    p.add_argument("--intensity", type=float, default=1.0, help="load in (0, 1] (default 1.0)")
    p.add_argument(
        "--cpus", type=_parse_cpus, default=None, help="CPUs to load, e.g. 0,1 (default: all)"
    )
    p.add_argument(
        "--on", dest="on_range", type=_parse_range, default=DEFAULT_ON_RANGE,
        metavar="LOW:HIGH", help="range of on-period lengths in seconds (default 0.5:3)",
    )  # fmt: skip
    p.add_argument(
        "--off", dest="off_range", type=_parse_range, default=DEFAULT_OFF_RANGE,
        metavar="LOW:HIGH", help="range of off-period lengths in seconds (default 0.5:3)",
    )  # fmt: skip
    p.add_argument(
        "--backend",
        choices=["auto", "stress-ng", "python"],
        default="auto",
        help="what produces the load (default: auto, stress-ng when installed, else python)",
    )
    p.add_argument(
        "--print-schedule",
        action="store_true",
        help=f"print the schedule (over --duration, else {SCHEDULE_HORIZON_S:g} s) and exit "
        "without running",
    )


def run(args: argparse.Namespace) -> int:
    """The ``duet noise`` command. Raises :class:`DuetError` on bad arguments."""
    from ..noise import NoisyNeighbour
    from ..units import duration

    seconds = None if args.duration is None else duration(args.duration, "--duration")
    neighbour = NoisyNeighbour(
        args.pattern,
        seed=args.seed,
        cpus=args.cpus,
        intensity=args.intensity,
        duration=seconds,
        on_range=args.on_range,
        off_range=args.off_range,
        backend=args.backend,
    )
    if args.print_schedule:
        _print_schedule(neighbour, seconds if seconds is not None else SCHEDULE_HORIZON_S)
    else:
        _run_in_foreground(neighbour)
    return 0


def _print_schedule(neighbour: NoisyNeighbour, horizon: float) -> None:
    print(f"# pattern={neighbour.pattern} seed={neighbour.seed} horizon={horizon:g}s")
    print("period,start_s,on_s,off_s,kind,load")
    t = 0.0
    for i, b in enumerate(neighbour.bursts(horizon)):
        print(f"{i},{t:.3f},{b.on_s:.3f},{b.off_s:.3f},{b.kind},{b.load:.3f}")
        t += b.on_s + b.off_s


class _Terminated(Exception):
    pass


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated(signum)


def _run_in_foreground(neighbour: NoisyNeighbour) -> None:
    """Until ``duration`` ends or SIGINT/SIGTERM/SIGHUP; the neighbour is stopped either way."""
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, _raise_terminated)
    d = neighbour.duration
    until = f"for {d:g} s" if d is not None else "until Ctrl-C"
    try:
        with neighbour:
            print(
                f"duet noise: pattern {neighbour.pattern}, seed {neighbour.seed}, backend "
                f"{neighbour.backend}, CPUs {','.join(map(str, neighbour.cpus))}, {until} "
                f"(process group {neighbour.pgid})",
                file=sys.stderr,
                flush=True,
            )
            neighbour.wait()
    except (KeyboardInterrupt, _Terminated):
        pass
    finally:
        for sig, prev in previous.items():
            signal.signal(sig, prev)
