"""``design: balanced``: every repetition pinned to a host computed from the seed, and
re-pinned when a host leaves (docs/cluster.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from ...plan import RunSpec, seed_key
from ...schema import Method


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
        runs_per_rep[(s.benchmark, s.method)] = 2 if s.method == Method.SEQN else 1
    load = dict.fromkeys(names, 0)
    where: dict[tuple[str, str, int], str] = {}
    for key in sorted(groups):
        bench, method = key
        reps = sorted(groups[key])
        rng = np.random.default_rng([seed, seed_key("balanced", bench, method)])
        n, h = len(reps), len(names)
        tiebreak = {name: int(i) for i, name in zip(rng.permutation(h), names, strict=True)}
        by_load = sorted(names, key=lambda x: (load[x], tiebreak[x]))
        extra = set(by_load[: n % h])
        slots = [x for x in names for _ in range(n // h + (x in extra))]
        for rep, i in zip(reps, rng.permutation(len(slots)), strict=True):
            where[(bench, method, rep)] = slots[int(i)]
            load[slots[int(i)]] += runs_per_rep[key]
    return {s.run_id: where[(s.benchmark, s.method, s.rep)] for s in specs}


def repin(
    pins: dict[str, str], pending: Iterable[RunSpec], gone: set[str], alive: list[str]
) -> tuple[dict[str, str], int, int]:
    """New pins for the pending runs of hosts that left the balanced design.

    A repetition's runs (both seqn sides) move together to the alive host with the fewest
    pending runs. Returns (run id -> new host, runs moved, seqn repetitions whose A and B
    now run on different hosts)."""
    pending = list(pending)
    load = Counter(pins[s.run_id] for s in pending if pins[s.run_id] in alive)
    groups: dict[tuple[str, str, int], list[RunSpec]] = {}
    for s in pending:
        if pins.get(s.run_id) in gone:
            groups.setdefault((s.benchmark, s.method, s.rep), []).append(s)
    moves: dict[str, str] = {}
    split = 0
    for key in sorted(groups):
        target = min(alive, key=lambda x: (load[x], x))
        for s in groups[key]:
            moves[s.run_id] = target
        load[target] += len(groups[key])
        if key[1] == Method.SEQN and len(groups[key]) == 1:
            split += 1
    return moves, sum(len(g) for g in groups.values()), split
