"""Change detection along the series, with stated error rates (docs/history.md).

Paired series (:func:`detect_paired`): a step between adjacent versions is a change
when its log ratio differs from 0 by more than ``z`` standard errors (two-sided
level ``alpha``) and by at least ``min_change``. The standard error is the direct
comparison's own, widened by the between-experiment spread the neighbouring steps
show (a robust estimate from the ``window`` steps on each side), so a machine whose
duets vary more from day to day than their intervals say does not raise alarms. A
change immediately undone by the next step (same size, opposite sign) is a spike:
one version that measured slow, not a change. A step that is one experiment's and
carries that experiment's own ``slower``/``faster`` verdict (a stopping rule's interval
or a fixed-n verdict's, :class:`~duetbench.history.series.Evidence`) is a change on
that evidence when its interval, widened by the same between-experiment spread, still
excludes 0; otherwise it is tested as above.

Absolute series (:func:`detect_absolute`): a scan from the oldest version on. At
each version the medians of the ``window`` levels before and after are compared,
corrected for a linear drift (the median of the level-to-level differences), and
scaled by a robust noise estimate from the same differences. A change needs
``min_segment`` versions on each side (so a single spike cannot move a median) and
must be the strongest candidate within ``min_segment - 1`` versions; the scan
restarts its left window at each accepted change.

Both decide about a version from the versions within ``window`` (+ ``min_segment``)
of it only: once that many newer versions exist, adding more never moves or removes
the change (``Change.final``).

:func:`detect_series` combines them: a change of the paired series is reported with
the direct comparison as evidence; a change of the absolute series is reported only
where no direct comparison covers it (where one does and saw no change, the move is
machine drift and listed as dismissed). User marks are honoured: an excluded version
is left out of both series (the steps around it are joined), a marked change is
reported whatever the detection says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np
import pandas as pd

from ..analysis.distributions import norm_isf, t_isf
from ..schema import Verdict
from ._db import HistoryError
from .findings import (
    Change,
    ChangeReport,
    DetectionSettings,
    Dismissed,
    EnvironmentChange,
    Spike,
    signed_pct,
)
from .fingerprint import differences
from .repository import Filters, Mark, Repository
from .series import Evidence, Level, Series, SeriesKey, Step, build_series, order_versions

MAD_SCALE = 1.4826  # MAD -> standard deviation of a normal
REPORT_CONFIDENCE = 0.95


# ---------------------------------------------------------------------- paired series
@dataclass(frozen=True)
class _Hit:
    index: int  # index of the first bad version's point (step or level)
    version: str
    log_change: float
    se: float
    z: float
    final: bool
    evidence: str
    experiments: tuple[int, ...] = ()
    #: the interval reported (log), when not log_change +- z x se: a verdict's own
    bounds: tuple[float, float] | None = None


def _local_se(d: np.ndarray, se: np.ndarray, i: int, window: int) -> float:
    """Step i's standard error, at least its neighbours' typical one, widened by the
    between-experiment spread the neighbours show."""
    lo, hi = max(0, i - window), min(len(d), i + window + 1)
    idx = np.r_[lo:i, i + 1 : hi]
    if len(idx) < 4:
        return float(se[i])
    typical = float(np.median(se[idx] ** 2))
    tau2 = _hidden_spread(d, se, i, window)
    # a standard error from a few runs is itself noisy: one far below its neighbours'
    # (comparisons of the same benchmark on the same machine) is not trusted
    return float(np.sqrt(max(se[i] ** 2, typical) + tau2))


def detect_paired(
    steps: Sequence[Step], settings: DetectionSettings | None = None
) -> tuple[list[_Hit], list[tuple[int, float, str]]]:
    """Changes (and spikes: index, size, evidence) of a paired series (see the module doc)."""
    st = settings or DetectionSettings()
    n = len(steps)
    if n == 0:
        return [], []
    d = np.array([s.log_ratio for s in steps])
    se = np.array([max(s.se, 1e-12) for s in steps])
    s_loc = np.array([_local_se(d, se, i, st.window) for i in range(n)])
    # each step's standard error is estimated from its runs: Student's t, not the normal
    dof = np.array([max(1, s.runs - len(s.experiments)) for s in steps], dtype=float)
    crit = t_isf(st.alpha / 2, dof)
    cand = (np.abs(d / s_loc) >= crit) & (np.abs(np.expm1(d)) >= st.min_change)
    # a step whose experiment decided `slower` or `faster` is a change on that evidence
    # when its neighbours' spread confirms it; else its runs are re-tested as above
    accepted = np.zeros(n, dtype=bool)
    bounds: dict[int, tuple[float, float]] = {}
    context = d.copy()  # the neighbours as their runs measured them
    for i, s in enumerate(steps):
        judged = _on_evidence(s, context, se, i, st)
        if judged is None or not judged.accepted or abs(np.expm1(judged.estimate)) < st.min_change:
            continue
        d[i], s_loc[i], crit[i] = judged.estimate, judged.se, judged.critical
        bounds[i] = (judged.low, judged.high)
        accepted[i] = cand[i] = True
    z = d / s_loc
    hits: list[_Hit] = []
    spikes: list[tuple[int, float, str]] = []

    def undone(i: int, j: int) -> bool:
        """Steps i and j = i + 1 are adjacent, j undoes i (the smaller of the two is more
        than half the larger, opposite sign), and the level after j is not distinguishable
        from the level before i."""
        if j >= n or i < 0 or steps[j].before != steps[i].after or np.sign(d[j]) == np.sign(d[i]):
            return False
        if min(abs(d[i]), abs(d[j])) <= max(abs(d[i]), abs(d[j])) / 2:
            return False
        net = d[i] + d[j]
        return bool(
            abs(net) / np.hypot(s_loc[i], s_loc[j]) < min(crit[i], crit[j])
            or abs(np.expm1(net)) < st.min_change
        )

    def spike(i: int) -> None:
        s, nxt = steps[i], steps[i + 1]
        spikes.append(
            (
                i,
                float(np.expm1(d[i])),
                f"{s.before} -> {s.after} {signed_pct(np.expm1(d[i]))}, then {nxt.before} -> "
                f"{nxt.after} {signed_pct(np.expm1(d[i + 1]))}: back to the level before",
            )
        )

    i = 0
    while i < n:
        if not cand[i]:
            i += 1
            continue
        s = steps[i]
        adjacent = i + 1 < n and steps[i + 1].before == s.after
        if undone(i, i + 1):
            spike(i)
            i += 2
            continue
        if (not spikes or spikes[-1][0] != i - 1) and undone(i - 1, i) and not cand[i - 1]:
            spike(i - 1)
            i += 1
            continue
        after = ""
        if adjacent:
            after = f"; next step {signed_pct(steps[i + 1].change)}"
        verdicts = ", ".join(sorted(set(s.verdicts))) or "n/a"
        how = f"z = {z[i]:.1f}, {s.runs} runs"
        if accepted[i] and s.evidence is not None:
            how = _evidence_text(s.evidence, s.runs, bounds[i])
        hits.append(
            _Hit(
                index=i,
                version=s.after,
                log_change=float(d[i]),
                se=float(s_loc[i]),
                z=float(z[i]),
                final=adjacent and i + st.window < n,
                evidence=(
                    f"direct comparison {s.before} -> {s.after}: {signed_pct(np.expm1(d[i]))} "
                    f"({how}, experiment(s) "
                    f"{', '.join(f'#{e}' for e in s.experiments)}, verdict {verdicts}){after}"
                ),
                experiments=s.experiments,
                bounds=bounds.get(i),
            )
        )
        i += 1
    return hits, spikes


_CHANGED = (Verdict.SLOWER, Verdict.FASTER)


def _decided(s: Step, st: DetectionSettings) -> bool:
    """Whether the step carries its experiment's own verdict of a change (``slower`` or
    ``faster``, beyond the experiment's threshold) that detection judges it by, instead
    of re-testing its runs: a stopping rule's (its run count depends on the values, so a
    t test of its runs would not hold; the rule had decided), or a fixed-n verdict at a
    practical threshold above 0."""
    ev = s.evidence
    return (
        st.use_evidence
        and ev is not None
        and ev.verdict in _CHANGED
        # a fixed-n verdict without a threshold is the t test of the same runs at a laxer
        # level: re-tested at alpha (valid for a fixed n), not taken at 1 - confidence
        and (ev.basis == "rule" or ev.threshold > 0)
        and bool(np.isfinite(ev.log_low + ev.log_high))
    )


@dataclass(frozen=True)
class _Judged:
    """A step judged on its experiment's own verdict (log scale)."""

    estimate: float
    se: float  # the interval's half-width / z, widened
    critical: float  # z at the verdict's confidence
    low: float  # the widened interval
    high: float
    accepted: bool


def _on_evidence(
    s: Step, d: np.ndarray, se: np.ndarray, i: int, st: DetectionSettings
) -> _Judged | None:
    """A step judged on its own verdict (None: it carries no ``slower``/``faster``
    verdict; its runs are re-tested).

    The experiment's interval at its confidence c, half-width h (log), is read as
    +- z_c x (h / z_c) around its estimate. The spread its neighbours show beyond their
    own standard errors (between-experiment variation no interval sees, tau) widens it:
    each end moves out by z_c (sqrt((h / z_c)^2 + tau^2) - h / z_c). The step is a
    change when the widened interval still excludes 0 on the side of its verdict (and,
    as every change, its estimate is at least ``min_change``). With no hidden spread
    that is the verdict itself: at most ``1 - c`` of the steps without a change are
    taken for one, the nominal rate of the rule (or of the fixed-n interval), and far
    fewer at a threshold above 0."""
    if not _decided(s, st):
        return None
    ev = s.evidence
    assert ev is not None
    q = float(norm_isf((1 - ev.confidence) / 2))
    half = (ev.log_high - ev.log_low) / 2
    own = max(half / q, 1e-12)
    s_ev = float(np.hypot(own, np.sqrt(_hidden_spread(d, se, i, st.window))))
    extra = q * (s_ev - own)
    low, high = ev.log_low - extra, ev.log_high + extra
    ok = low > 0 if ev.verdict == Verdict.SLOWER else high < 0
    return _Judged(ev.estimate, s_ev, q, low, high, bool(ok))


def _hidden_spread(d: np.ndarray, se: np.ndarray, i: int, window: int) -> float:
    """The variance between experiments that the neighbouring steps (``window`` on each
    side) show beyond their own standard errors (0 with fewer than 4 neighbours)."""
    lo, hi = max(0, i - window), min(len(d), i + window + 1)
    idx = np.r_[lo:i, i + 1 : hi]
    if len(idx) < 4:
        return 0.0
    typical = float(np.median(se[idx] ** 2))
    spread = MAD_SCALE * np.median(np.abs(d[idx] - np.median(d[idx])))
    return max(0.0, float(spread**2) - typical)


def _evidence_text(ev: Evidence, runs: int, bounds: tuple[float, float]) -> str:
    how = "stopping rule" if ev.basis == "rule" else "fixed-n verdict"
    widened = ""
    if bounds[1] - bounds[0] - (ev.log_high - ev.log_low) > 1e-3:  # at least 0.1 % wider
        widened = (
            f"; widened by the neighbours' spread to "
            f"[{signed_pct(np.expm1(bounds[0]))}, {signed_pct(np.expm1(bounds[1]))}]"
        )
    return (
        f"{ev.verdict} by its {how}, {ev.confidence * 100:g} % interval "
        f"[{signed_pct(np.expm1(ev.log_low))}, {signed_pct(np.expm1(ev.log_high))}]"
        f"{widened}, {runs} runs"
    )


# ---------------------------------------------------------------------- absolute series
def median3(y: np.ndarray) -> np.ndarray:
    """Running median of three (the ends kept): removes single spikes, keeps steps sharp."""
    if len(y) < 3:
        return y.copy()
    out = y.copy()
    out[1:-1] = np.median(np.stack([y[:-2], y[1:-1], y[2:]]), axis=0)
    return out


def _scan_stat(
    y: np.ndarray, smooth: np.ndarray, i: int, lo: int, st: DetectionSettings
) -> tuple[float, float] | None:
    """(difference of the smoothed means after and before i, its z), or None."""
    n = len(y)
    a, b = max(lo, i - st.window), min(n, i + st.window)
    left, right = smooth[a:i], smooth[i:b]
    if len(left) < st.min_segment or len(right) < st.min_segment:
        return None
    diffs = np.diff(y[a:b])
    sigma = MAD_SCALE * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2)
    sigma = max(sigma, 1e-9)
    delta = float(right.mean() - left.mean())
    return delta, delta / (sigma * np.sqrt(1 / len(left) + 1 / len(right)))


def _locate(smooth: np.ndarray, a: int, b: int, m: int) -> int:
    """Where in ``smooth[a:b]`` one step fits best (the two-segment least-squares split)."""
    seg = smooth[a:b]
    ks = np.arange(m, len(seg) - m + 1)
    if len(ks) == 0:
        return a + len(seg) // 2
    csum = np.cumsum(seg)
    total = csum[-1]
    left_mean = csum[ks - 1] / ks
    right_mean = (total - csum[ks - 1]) / (len(seg) - ks)
    score = np.abs(right_mean - left_mean) * np.sqrt(ks * (len(seg) - ks))
    return a + int(ks[int(np.argmax(score))])


def detect_absolute(
    levels: Sequence[Level], settings: DetectionSettings | None = None
) -> list[_Hit]:
    """Changes of an absolute series (see the module doc)."""
    st = settings or DetectionSettings()
    y = np.array([lv.log_ns for lv in levels], dtype=float)
    smooth = median3(y)
    n = len(y)
    hits: list[_Hit] = []
    last = 0
    reach = st.window // 2
    for i in range(st.min_segment, n - st.min_segment + 1):
        here = _scan_stat(y, smooth, i, last, st)
        if here is None:
            continue
        delta, zi = here
        if abs(zi) < st.z_absolute or abs(np.expm1(delta)) < st.min_change:
            continue
        rivals = [
            _scan_stat(y, smooth, j, last, st) for j in range(i - reach, i + reach + 1) if j != i
        ]
        if any(r is not None and abs(r[0]) > abs(delta) for r in rivals):
            continue
        if hits and i <= hits[-1].index:
            continue
        k = _locate(smooth, max(last, i - st.window), min(n, i + st.window), st.min_segment)
        if k != i:
            at_k = _scan_stat(y, smooth, k, last, st)
            if at_k is None or abs(at_k[1]) < st.z_absolute:
                continue
            i, (delta, zi) = k, at_k
        n_left = i - max(last, i - st.window)
        n_right = min(n, i + st.window) - i
        hits.append(
            _Hit(
                index=i,
                version=levels[i].version,
                log_change=delta,
                se=abs(delta / zi),
                z=zi,
                final=i + st.window + reach + 1 <= n,
                evidence=(
                    f"absolute series: the {n_left} versions before {levels[i].version} and "
                    f"the {n_right} from it on differ by {signed_pct(np.expm1(delta))} "
                    f"(z = {zi:.1f}, spikes removed by a running median of three)"
                ),
                experiments=levels[i].experiments,
            )
        )
        last = i
    return hits


# ---------------------------------------------------------------------- combination
def _hit_change(s: Series, h: _Hit, before: str | None, source: str, evidence: str) -> Change:
    """The change a detector's hit ``h`` of series ``s`` reports (``source``: paired or
    absolute)."""
    c, lo, hi = _interval(h)
    return Change(
        s.key,
        h.version,
        before,
        c,
        lo,
        hi,
        source,
        h.final,
        evidence,
        h.experiments,
        h.z,
        commit=s.commits.get(h.version, (None, None))[0],
    )


def _interval(h: _Hit) -> tuple[float, float, float]:
    if h.bounds is not None:  # a verdict's own interval (widened by the neighbours' spread)
        return (
            float(np.expm1(h.log_change)),
            float(np.expm1(h.bounds[0])),
            float(np.expm1(h.bounds[1])),
        )
    q = float(norm_isf((1 - REPORT_CONFIDENCE) / 2))
    return (
        float(np.expm1(h.log_change)),
        float(np.expm1(h.log_change - q * h.se)),
        float(np.expm1(h.log_change + q * h.se)),
    )


def detect_series(
    s: Series, marks: Sequence[Mark] = (), settings: DetectionSettings | None = None
) -> tuple[list[Change], list[Spike], list[Dismissed]]:
    """Changes, spikes and dismissed moves of one series (see the module doc)."""
    st = settings or DetectionSettings()
    pos = {v: i for i, v in enumerate(s.versions)}
    prev = {v: (s.versions[i - 1] if i else None) for v, i in pos.items()}
    p_hits, p_spikes = detect_paired(s.steps, st)
    a_hits = detect_absolute(s.levels, st)
    changes: dict[str, Change] = {}
    for h in p_hits:
        changes[h.version] = _hit_change(s, h, prev.get(h.version), "paired", h.evidence)
    steps_into = {st_.after: st_ for st_ in s.steps}
    dismissed: list[Dismissed] = []
    for h in a_hits:
        near = [v for v in changes if abs(pos[v] - pos[h.version]) <= 1]
        if near:
            continue
        c, lo, hi = _interval(h)
        direct = steps_into.get(h.version)
        if direct is not None:
            dismissed.append(
                Dismissed(
                    s.key,
                    h.version,
                    c,
                    f"the absolute series moved {signed_pct(c)} at {h.version}, but the direct "
                    f"comparison {direct.before} -> {direct.after} measured "
                    f"{signed_pct(direct.change)}: machine drift, not the program",
                )
            )
            continue
        why = f"{h.evidence}; no direct comparison of {prev.get(h.version)} and {h.version}"
        changes[h.version] = _hit_change(s, h, prev.get(h.version), "absolute", why)
    for m in marks:
        if m.kind != "change" or not m.applies_to(*_key4(s.key)) or m.version not in pos:
            continue
        if m.version in changes:
            old = changes[m.version]
            changes[m.version] = _replace_marked(old, m.note)
            continue
        changes[m.version] = _marked_change(s, m, prev.get(m.version), steps_into, st)
    spikes = [
        Spike(s.key, s.steps[i].after, size, ev, s.steps[i].experiments) for i, size, ev in p_spikes
    ]
    ordered = sorted(changes.values(), key=lambda c: pos[c.first_bad])
    return ordered, spikes, dismissed


def _key4(k: SeriesKey) -> tuple[str, str, str, str]:
    return k.suite, k.benchmark, k.method, k.host


def _replace_marked(c: Change, note: str) -> Change:
    from dataclasses import replace

    return replace(c, marked=note, evidence=c.evidence + f"; marked by a user: {note}")


def _marked_change(
    s: Series, m: Mark, last_good: str | None, steps_into: dict[str, Step], st: DetectionSettings
) -> Change:
    step = steps_into.get(m.version)
    q = float(norm_isf((1 - REPORT_CONFIDENCE) / 2))
    if step is not None:
        c = step.change
        lo, hi = np.expm1(step.log_ratio - q * step.se), np.expm1(step.log_ratio + q * step.se)
        exps = step.experiments
        size = f"direct comparison {step.before} -> {step.after}: {signed_pct(c)}"
    else:
        y = {lv.version: lv.log_ns for lv in s.levels}
        i = s.versions.index(m.version)
        before = [y[v] for v in s.versions[max(0, i - st.window) : i] if v in y]
        after = [y[v] for v in s.versions[i : i + st.window] if v in y]
        c = float(np.expm1(np.median(after) - np.median(before))) if before and after else np.nan
        lo = hi = np.nan
        exps = ()
        size = (
            f"absolute series: medians before/after differ by {signed_pct(c)}"
            if np.isfinite(c)
            else ""
        )
    return Change(
        s.key,
        m.version,
        last_good,
        float(c),
        float(lo),
        float(hi),
        "marked",
        True,
        f"marked by a user: {m.note}" + (f"; {size}" if size else ""),
        exps,
        None,
        m.note,
        s.commits.get(m.version, (None, None))[0],
    )


def environment_changes(
    results: pd.DataFrame, host_facts: dict[str, dict[str, Any]]
) -> list[EnvironmentChange]:
    """Where a (suite, benchmark, method) moved to another host fingerprint, in adding order."""
    out = []
    if results.empty:
        return out
    for (suite, bench, method), rows in results.groupby(
        ["suite", "benchmark", "method"], sort=True
    ):
        seen: str | None = None
        for _eid, g in rows.sort_values("experiment_id").groupby("experiment_id", sort=True):
            hosts = sorted(set(g["host"]))
            if seen is not None and seen not in hosts:
                new = hosts[0]
                diff = differences(host_facts.get(seen, {}), host_facts.get(new, {}))
                out.append(
                    EnvironmentChange(
                        str(suite),
                        str(bench),
                        str(method),
                        str(g["version_b"].iloc[0]),
                        seen,
                        new,
                        tuple((k, a, b) for k, (a, b) in diff.items()),
                    )
                )
            seen = hosts[-1] if seen not in hosts else seen
    return out


def detect_changes(
    repo: Repository,
    *,
    since: str | None = None,
    settings: DetectionSettings | None = None,
    **filters: Unpack[Filters],
) -> ChangeReport:
    """``duet history changes``: changes of every series (:class:`Filters`; ``since``:
    only changes from that version on)."""
    st = settings or DetectionSettings()
    results = repo.results(**filters)
    known = {v.label: v for v in repo.versions()}
    if since is not None and since not in known:
        raise HistoryError(
            f"version '{since}' is not in {repo.location}; `duet history list` shows the versions"
        )
    marks = repo.marks(filters.get("benchmark"))
    all_series = build_series(results, repo.run_values(), known, marks)
    order = {v: i for i, v in enumerate(order_versions(known, known))}
    changes, spikes, dismissed = [], [], []
    for s in all_series:
        c, sp, di = detect_series(s, marks, st)
        changes += c
        spikes += sp
        dismissed += di
    if since is not None:
        start = order[since]
        changes = [c for c in changes if order[c.first_bad] >= start]
        spikes = [x for x in spikes if order[x.version] >= start]
        dismissed = [x for x in dismissed if order[x.version] >= start]
    facts = {h.fingerprint: dict(h.facts) for h in repo.hosts()}
    env = environment_changes(results, facts)
    if since is not None:
        env = [e for e in env if order.get(e.version, -1) >= order[since]]
    return ChangeReport(tuple(changes), tuple(spikes), tuple(dismissed), tuple(env), st)
