"""Where a run's sides run on this host: the `cpus:` setting resolved (docs/config.md, `cpus`).

``pinned``: each side on its own CPU (the plan draws which slot side A gets, balanced);
``shared``: every side free to use all the benchmark's CPUs, so the scheduler spreads
other tasks over both sides alike; ``auto``: ``shared`` on a host with at most two usable
CPUs, ``pinned`` above (docs/performance.md, section Placement); a CPU list: pinned to
those CPUs; ``none``: shared without setting any affinity at all (the sides inherit
duet's own, no CPU is left free; containers get no ``--cpuset-cpus``). Where the host
has more CPUs than a duet needs, the first usable CPU is left free for the OS and the
drivers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..plan import SideSpec

PINNED = "pinned"
SHARED = "shared"
#: `cpus:` words (a CPU list is the other form); ``none`` is the older name of ``shared``
CPU_WORDS = ("auto", PINNED, SHARED, "none")
#: `auto` pins on hosts with more usable CPUs than this, and shares on the others
AUTO_SHARED_UP_TO = 2


@dataclass(frozen=True)
class Placement:
    """The resolved placement: its kind, the benchmark's CPUs here, and whether a duet on
    them holds every core of the host (run.json ``all_cores_busy``)."""

    kind: str  # PINNED | SHARED
    cpus: tuple[int, ...]
    every_core: bool

    def restricts(self, host_cpus: Sequence[int]) -> bool:
        """Whether the sides run on fewer CPUs than ``host_cpus`` (a container needs a cpuset)."""
        return bool(self.cpus) and (self.kind == PINNED or set(self.cpus) != set(host_cpus))

    def side_cpus(self, side: SideSpec) -> list[int]:
        """The CPUs ``side`` may run on ([] = this process's own affinity, unchanged)."""
        if not self.cpus:
            return []
        if self.kind == SHARED or side.cpu_slot is None:
            return list(self.cpus)
        return [self.cpus[side.cpu_slot % len(self.cpus)]]

    def swap_env(self, sides: Sequence[SideSpec]) -> dict[str, str]:
        """``DUET_CPU_SWAP=own,other`` for each side of a pinned pair on two CPUs, which a
        side that can move itself uses to take turns on both (docs/config.md, "Benchmark keys";
        duet micro's worker does, docs/micro.md, "Placement"); {} for any other run."""
        if self.kind != PINNED or len(sides) != 2:
            return {}
        own = [self.side_cpus(side) for side in sides]
        if any(len(cpus) != 1 for cpus in own) or own[0] == own[1]:
            return {}
        return {
            side.name: f"{mine[0]},{theirs[0]}"
            for side, mine, theirs in zip(sides, own, reversed(own), strict=True)
        }


def resolve_placement(policy: str | Sequence[int], host_cpus: Sequence[int]) -> Placement:
    """The placement of a benchmark with `cpus: policy` on a host whose usable CPUs are ``host_cpus``."""
    host = list(host_cpus)
    if isinstance(policy, str):
        if policy == "none":
            return Placement(SHARED, (), False)
        word = policy
        if word == "auto":
            word = SHARED if len(host) <= AUTO_SHARED_UP_TO else PINNED
        if word not in (PINNED, SHARED):
            raise ValueError(f"unknown cpus policy {policy!r}")
        cpus = host[1:] if len(host) > 2 else host
    else:
        word = PINNED
        cpus = [c for c in policy if c in host] or list(policy)
    every = bool(cpus) and len(cpus) >= len(host) and len(host) <= 2
    return Placement(word, tuple(cpus), every)
