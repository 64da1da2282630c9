"""Host health: hosts whose runs fail far more often than the others' (docs/cluster.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...schema import HOST_FAILURE_STATUSES, RunStatus


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
    per = {
        h: (sum(c.values()), sum(c.get(k, 0) for k in HOST_FAILURE_STATUSES))
        for h, c in counts.items()
    }
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
        lost = counts[h].get(RunStatus.LOST, 0)
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
