"""Error rates of change detection on seeded synthetic histories (docs/performance.md).

Every cell: ``--histories`` histories of ``--versions`` versions with three steps of
+-size at random versions (at least 6 apart), observed as a repository would observe
them (duetbench.history.synthetic: a direct comparison of every pair of adjacent
versions, and one absolute measurement per version). A detection is correct when it
names the true first bad version exactly. Scenarios:

- quiet: direct comparisons with sd 0.4 % (their intervals say so), absolute sd 1 %
- noisy: sd 0.8 % + 0.6 % between experiments that the intervals do not show, absolute 3 %
- drift: quiet, and the machine gets 0.3 % slower per version (absolute series only)
- spikes: no steps; three single versions off by 5-20 % -- every detection is false

Candidates: duetbench (both series, the default), duetbench on the absolute series
alone, and where installed ruptures (PELT, l2 cost, BIC-type penalty from a robust
noise estimate) and Apache Otava (E-divisive means with a t-test, window 30,
p < 0.001) on the absolute series and on the chained paired series. Otava pins its
own numpy and scipy, so run it from a separate virtual environment:

    python3 benchmarks/change_detection_study.py              # 100 histories per cell
    python3 benchmarks/change_detection_study.py --quick      # 20, a minute

``--sweep`` answers a narrower question: how precise must each direct comparison be
for duetbench's detection to reach precision and recall >= 0.9 at 3 % steps on a
noisy machine (absolute series 3 %)? It varies the comparisons' 95 % interval width
(``paired_sd`` = width / (2 x 1.96)) and the between-experiment spread the intervals
do not show (as a multiple of ``paired_sd``):

    python3 benchmarks/change_detection_study.py --sweep      # 100 histories per cell

``--stopped`` is the case of steps that carry their experiment's own verdict
(docs/history.md, "Change detection"): every direct comparison is measured run by run
until a stopping rule stops it (duetbench.history.synthetic.stopped_series), on a
shared machine whose run spread differs from one comparison to the next. Two rules:
`duet gate`'s (``until: decided``, threshold 2 %, a confidence sequence, at most 20
runs) and a fixed-n verdict of 3 runs (95 % t interval, threshold 0). For each,
detection judging a step on its verdict (the default) and re-testing its runs only
(``use_evidence=False``, the detection before schema 3): precision / recall, the
recall among the steps the rule stopped early (before its last run), and the rate at
which steps without a change (A/A, histories without any step) become changes, beside
the rule's nominal rate (1 - confidence):

    python3 benchmarks/change_detection_study.py --stopped    # 100 histories per cell
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duetbench.history.changes import DetectionSettings, detect_series  # noqa: E402
from duetbench.history.series import Series  # noqa: E402
from duetbench.history.synthetic import (  # noqa: E402
    History,
    absolute_only,
    random_steps,
    synthetic_series,
)

SCENARIOS: dict[str, dict[str, float]] = {
    "quiet": {"paired_sd": 0.004, "absolute_sd": 0.01},
    "noisy": {"paired_sd": 0.008, "paired_extra_sd": 0.006, "absolute_sd": 0.03},
    "drift": {"paired_sd": 0.004, "absolute_sd": 0.01, "drift": 0.003},
}
SIZES = (0.01, 0.02, 0.03, 0.05, 0.10)
SPIKE_SIZES = (0.05, 0.08, 0.12, 0.20)

Detector = Callable[[Series], set[int]]


def ours(settings: DetectionSettings) -> Detector:
    def run(s: Series) -> set[int]:
        pos = {v: i for i, v in enumerate(s.versions)}
        return {pos[c.first_bad] for c in detect_series(s, settings=settings)[0]}

    return run


def ours_absolute(settings: DetectionSettings) -> Detector:
    def run(s: Series) -> set[int]:
        return ours(settings)(absolute_only(s))

    return run


def _absolute(s: Series) -> np.ndarray:
    return np.array([lv.log_ns for lv in s.levels])


def _chain(s: Series) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum([st.log_ratio for st in s.steps])])


def _sigma(y: np.ndarray) -> float:
    d = np.diff(y)
    return max(1.4826 * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2), 1e-9)


def ruptures_pelt(values: Callable[[Series], np.ndarray]) -> Detector | None:
    try:
        import ruptures
    except ImportError:
        return None

    def run(s: Series) -> set[int]:
        y = values(s)
        penalty = 2 * _sigma(y) ** 2 * np.log(len(y))
        bkps = (
            ruptures.Pelt(model="l2", min_size=2, jump=1).fit(y.reshape(-1, 1)).predict(pen=penalty)
        )
        return {b for b in bkps if b < len(y)}

    return run


def otava(values: Callable[[Series], np.ndarray]) -> Detector | None:
    try:
        from otava.analysis import compute_change_points
    except ImportError:
        return None

    def run(s: Series) -> set[int]:
        y = list(values(s))
        cps, _ = compute_change_points(y, window_len=30, max_pvalue=0.001)
        return {int(c.index) for c in cps}

    return run


def histories(scenario: str, size: float, count: int, versions: int):
    for k in range(count):
        rng = np.random.default_rng([k, round(size * 1000), len(scenario)])
        if scenario == "spikes":
            at = [a for a, _ in random_steps(rng, versions, 3, 1.0)]
            spikes = tuple((a, float(size * rng.choice([-1.0, 1.0]))) for a in at)
            h = History(versions=versions, spikes=spikes, **SCENARIOS["quiet"])
        else:
            h = History(
                versions=versions, steps=random_steps(rng, versions, 3, size), **SCENARIOS[scenario]
            )
        yield h, synthetic_series(h, k * 7919 + round(size * 1000) * 31 + len(scenario))


def score(
    detect: Detector, scenario: str, size: float, count: int, versions: int
) -> tuple[float, float, int]:
    tp = fp = fn = 0
    for h, s in histories(scenario, size, count, versions):
        found = detect(s)
        true = {a for a, _ in h.steps}
        tp, fp, fn = tp + len(found & true), fp + len(found - true), fn + len(true - found)
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    return precision, recall, fp


#: --sweep: 95 % interval widths of one direct comparison, and hidden spread / paired_sd
SWEEP_WIDTHS = (0.01, 0.015, 0.02, 0.03, 0.04)
SWEEP_HIDDEN = (0.0, 0.5, 1.0, 2.0)
SWEEP_SIZES = (0.03, 0.05)


def sweep(count: int, versions: int, st: DetectionSettings) -> None:
    """Precision / recall of duetbench's detection against the comparisons' precision."""
    detect = ours(st)
    print(
        f"# sweep: {count} histories x {versions} versions per cell, 3 steps each, "
        "absolute series sd 3 %\n"
    )
    print(
        "| 95 % CI width | hidden spread | "
        + " | ".join(f"{s:.0%} P / R" for s in SWEEP_SIZES)
        + " |"
    )
    print("|---|---|" + "---|" * len(SWEEP_SIZES))
    for width in SWEEP_WIDTHS:
        sd = width / (2 * 1.96)
        for hidden in SWEEP_HIDDEN:
            cells = []
            for size in SWEEP_SIZES:
                tp = fp = fn = 0
                for k in range(count):
                    rng = np.random.default_rng([k, round(size * 1000), round(width * 1e4)])
                    h = History(
                        versions=versions,
                        steps=random_steps(rng, versions, 3, size),
                        paired_sd=sd,
                        paired_extra_sd=hidden * sd,
                        absolute_sd=0.03,
                    )
                    found = detect(synthetic_series(h, k * 7919 + round(hidden * 10)))
                    true = {a for a, _ in h.steps}
                    tp += len(found & true)
                    fp += len(found - true)
                    fn += len(true - found)
                p = tp / (tp + fp) if tp + fp else float("nan")
                cells.append(f"{p:.2f} / {tp / (tp + fn):.2f}")
            print(f"| {width:.1%} | {hidden:g} x sd | " + " | ".join(cells) + " |")


STOPPED_SIZES = (0.02, 0.04, 0.08)
#: (name, StopRule keywords, run spread per comparison: log-uniform between, basis)
STOPPED_RULES = (
    (
        "gate: until decided, threshold 2 %, max 20 runs",
        {"until": "decided", "threshold": 0.02, "max_runs": 20},
        (0.003, 0.02),
        "rule",
    ),
    (
        "fixed-n: 3 runs, 95 % t interval, threshold 2 %",
        {
            "until": "decided",
            "threshold": 0.02,
            "design": "group",
            "groups": 1,
            "min_runs": 3,
            "max_runs": 3,
        },
        (0.002, 0.01),
        "fixed",
    ),
    (
        "fixed-n: 3 runs, 95 % t interval, threshold 0 (re-tested: the verdict is not used)",
        {"until": "decided", "design": "group", "groups": 1, "min_runs": 3, "max_runs": 3},
        (0.002, 0.01),
        "fixed",
    ),
)


def stopped(count: int, versions: int) -> None:
    """Detection on steps stopped by a rule: judged on their verdicts, or re-tested."""
    from duetbench.adaptive.rules import StopRule
    from duetbench.history.synthetic import stopped_series

    print(f"# stopped steps: {count} histories x {versions} versions per cell, 3 steps each\n")
    for name, kw, spread, basis in STOPPED_RULES:
        rule = StopRule.create(**kw)
        print(f"## {name}; run spread {spread[0]:.1%}-{spread[1]:.1%} per comparison\n")
        print(
            "| detection | "
            + " | ".join(f"{s:.0%} P / R (early-stopped R)" for s in STOPPED_SIZES)
            + " | A/A steps that became changes |"
        )
        print("|---|" + "---|" * (len(STOPPED_SIZES) + 1))
        for label, st in (
            ("on the step's verdict", DetectionSettings()),
            ("re-testing its runs", DetectionSettings(use_evidence=False)),
        ):
            cells = []
            for size in STOPPED_SIZES:
                tp = fp = fn = early = early_found = 0
                for k in range(count):
                    rng = np.random.default_rng([k, round(size * 1000), 28])
                    h = History(versions=versions, steps=random_steps(rng, versions, 3, size))
                    s = stopped_series(h, rule, spread, k * 7919 + round(size * 1000), basis)
                    found = ours(st)(s)
                    true = {a for a, _ in h.steps}
                    tp += len(found & true)
                    fp += len(found - true)
                    fn += len(true - found)
                    for a in true:
                        step = s.steps[a - 1]
                        if step.runs < rule.max_runs:
                            early += 1
                            early_found += a in found
                p = tp / (tp + fp) if tp + fp else float("nan")
                er = f"{early_found / early:.2f} of {early}" if early else "none"
                cells.append(f"{p:.2f} / {tp / (tp + fn):.2f} ({er})")
            false = steps = 0
            for k in range(count):
                h = History(versions=versions)
                s = stopped_series(h, rule, spread, 104729 + k, basis)
                false += len(ours(st)(s))
                steps += len(s.steps)
            nominal = 1 - rule.confidence
            aa = f"{false} of {steps} = {false / steps:.2%} (nominal {nominal:.0%})"
            print(f"| {label} | " + " | ".join(cells) + f" | {aa} |")
        print()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="20 histories per cell")
    ap.add_argument("--histories", type=int, default=100)
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--sweep", action="store_true", help="precision / recall against CI width")
    ap.add_argument(
        "--stopped", action="store_true", help="steps stopped by a rule, judged on their verdicts"
    )
    args = ap.parse_args()
    count = 20 if args.quick else args.histories
    st = DetectionSettings()
    if args.sweep:
        sweep(count, args.versions, st)
        return
    if args.stopped:
        stopped(count, args.versions)
        return
    candidates: dict[str, Detector | None] = {
        "duetbench (paired + absolute)": ours(st),
        "duetbench, absolute series only": ours_absolute(st),
        "ruptures PELT, absolute series": ruptures_pelt(_absolute),
        "ruptures PELT, chained paired series": ruptures_pelt(_chain),
        "otava, absolute series": otava(_absolute),
        "otava, chained paired series": otava(_chain),
    }
    print(
        f"# {count} histories x {args.versions} versions per cell, 3 steps each; "
        f"settings {st.to_json()}\n"
    )
    for name, detect in candidates.items():
        if detect is None:
            print(f"## {name}: not installed, skipped\n")
            continue
        t0 = time.perf_counter()
        print(f"## {name}\n")
        print("| scenario | " + " | ".join(f"{s:.0%} P / R" for s in SIZES) + " |")
        print("|---|" + "---|" * len(SIZES))
        for scenario in SCENARIOS:
            cells = []
            for size in SIZES:
                p, r, _ = score(detect, scenario, size, count, args.versions)
                cells.append(f"{p:.2f} / {r:.2f}")
            print(f"| {scenario} | " + " | ".join(cells) + " |")
        false = [score(detect, "spikes", s, count, args.versions)[2] for s in SPIKE_SIZES]
        spikes = ", ".join(f"{s:.0%}: {f}" for s, f in zip(SPIKE_SIZES, false, strict=True))
        print(f"\nfalse changes in {count} histories with 3 isolated spikes each: {spikes}")
        print(f"({time.perf_counter() - t0:.0f} s)\n")


if __name__ == "__main__":
    main()
