"""Typed, validated options of `duet compare`, `duet evaluate` and `duet report`, and
the flags `duet micro` and the pytest plugin share (:data:`SHARED_FLAGS`).

Every option of the analysis commands lives here once: its default, its allowed
values and the check that turns a value into a valid one (:meth:`CompareOptions.create`
and friends raise :class:`~duetbench.errors.OptionError`). The command line reads its
defaults from these dataclasses (``duetbench.commands._options``), the library
functions take them (``duetbench.analysis.compare``, ``duetbench.analysis.evaluate``),
and the JSON documents write :meth:`CompareOptions.settings` as their ``settings``.

Pure Python: no numpy or pandas import, so `duet --help` stays fast. Numbers from
numpy are accepted (``numbers.Integral`` / ``numbers.Real`` cover numpy scalars).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from .errors import OptionError
from .units import PERCENTAGE_RANGE, ValueTextError, percentage

#: ratio and diff: confidence-interval tests (docs/statistics.md, "The two CI tests"); utest:
#: signed-rank test of the run values (calibrated); utest-pooled: the thesis's
#: Mann-Whitney U test of all iterations (not calibrated).
TESTS = ("ratio", "diff", "utest", "utest-pooled")
CI_TESTS = ("ratio", "diff")
U_TESTS = ("utest", "utest-pooled")
_TEST_ALIASES = {"difference": "diff", "utest-thesis": "utest-pooled"}
INTERVALS = ("t", "bca", "percentile", "studentized")
RUN_STATS = ("auto", "median", "mean", "trimmed", "min", "means")
#: what an iteration's time is (docs/statistics.md, "Beside other work: CPU time"): wall
#: time, CPU time, or ``auto``: CPU time for CPU-bound sides of runs beside other work
MEASURES = ("auto", "wall", "cpu")
OVERLAP_RATES = ("shorter", "thesis")
WEIGHTS = ("poisson", "uniform")
SPANS = ("process", "iterations")
CLUSTER_BY = ("host", "run")  # what the command line offers; the library takes any column

DEFAULT_BY = ("suite", "benchmark", "method")
DEFAULT_MIN_OVERLAP = 0.4
DEFAULT_OVERLAP_RATE = "shorter"
DEFAULT_MIN_RUN_PAIRS = 0.25
#: ``cluster_by`` value that never clusters: every run is a resampling unit.
NO_CLUSTERING = "run"
#: The slowdowns s of the minimal detectable slowdown: 0, 1, ..., 15 %.
DEFAULT_SLOWDOWNS = tuple(round(i / 100, 10) for i in range(16))
#: The minimum overlap ratios of the overlap and A/A-by-m tables: 0, 0.1, ..., 0.9.
DEFAULT_MIN_OVERLAPS = tuple(round(i / 10, 10) for i in range(10))

#: Iterations dropped per run and side: a count, ``"half"``, or ``None`` for the rows
#: the table marks as warm-up (its ``warmup`` column: the config's ``warmup:``).
Warmup = int | Literal["half"] | None
CONFIG_WARMUP = "config"  # how ``warmup=None`` is written in settings and on the command line


# ---------------------------------------------------------------------- checks


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _number(x: object, option: str, problem: str, ok: Any, label: str | None = None) -> float:
    """``x`` as a float for which ``ok`` holds, else :class:`OptionError`."""
    if not isinstance(x, bool) and x is not None:
        try:
            v = float(x)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
        else:
            if ok(v):
                return v
    raise OptionError(option, problem, x, label=label)


def _choice(x: object, allowed: tuple[str, ...], option: str, label: str | None = None) -> str:
    if not isinstance(x, str) or x not in allowed:
        raise OptionError(option, f"must be one of {', '.join(allowed)}", x, label=label)
    return x


def check_confidence(confidence: object) -> float:
    return _number(
        confidence, "confidence", "must be between 0 and 1 (e.g. 0.95)", lambda c: 0 < c < 1
    )


def check_resamples(resamples: object) -> int:
    if not _is_int(resamples) or int(resamples) < 2:  # type: ignore[call-overload]
        raise OptionError("resamples", "must be an integer >= 2 (e.g. 9999)", resamples)
    return int(resamples)  # type: ignore[call-overload]


def check_threshold(threshold: object) -> float:
    """The practical threshold: a fraction (or ``"2%"``) in the range of every percentage,
    :data:`duetbench.units.PERCENTAGE_RANGE`."""
    try:
        return percentage(threshold)
    except ValueTextError:
        raise OptionError("threshold", f"must lie {PERCENTAGE_RANGE}", threshold) from None


def check_min_overlap(m: object) -> float:
    return _number(
        m,
        "min_overlap",
        "must be a number in [0, 1) (e.g. 0.4)",
        lambda v: 0 <= v < 1,
        "minimum overlap",
    )


def check_overlap_rate(definition: object) -> str:
    return _choice(definition, OVERLAP_RATES, "overlap_rate", "overlap rate")


def check_min_run_pairs(share: object) -> float:
    return _number(
        share,
        "min_run_pairs",
        "must be a number in [0, 1] (a share of the median run's pairs)",
        lambda v: 0 <= v <= 1,
    )


def check_seed(seed: object) -> int:
    if not _is_int(seed) or int(seed) < 0:  # type: ignore[call-overload]
        raise OptionError("seed", "must be a non-negative integer", seed)
    return int(seed)  # type: ignore[call-overload]


def check_warmup(warmup: object) -> Warmup:
    """A count >= 0, ``"half"``, or ``None`` (``"config"``): the rows marked ``warmup``."""
    if warmup is None or warmup == CONFIG_WARMUP:
        return None
    if warmup == "half":
        return "half"
    if not _is_int(warmup) or int(warmup) < 0:  # type: ignore[call-overload]
        raise OptionError(
            "warmup",
            "must be a number of iterations >= 0, 'half', or None ('config': the rows the "
            "table marks as warm-up)",
            warmup,
            label="warm-up",
        )
    return int(warmup)  # type: ignore[call-overload]


def _grid(values: object, option: str, problem: str, ok: Any) -> tuple[float, ...]:
    """Sorted distinct floats of a scalar or a (1-D) sequence, each passing ``ok``."""
    items: Iterable[object] = (
        [values] if isinstance(values, numbers.Real) else values  # type: ignore[assignment]
    )
    try:
        out = tuple(sorted({float(x) for x in items}))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise OptionError(option, problem, values) from None
    if not out or not all(ok(x) for x in out):
        raise OptionError(option, problem, values)
    return out


# ---------------------------------------------------------------------- options


#: `duet compare`'s run statistic for micro benchmarks (``harness: micro``) when
#: ``--run-stat`` is not given (docs/micro.md, "Statistics"); others use ``run_stat``.
MICRO_RUN_STAT = "min"
#: ... and for their inproc runs, whose pairs are neighbours in one process
#: (docs/micro.md, "In one process: inproc").
INPROC_RUN_STAT = "median"


@dataclass(frozen=True)
class CompareOptions:
    """Options of :func:`duetbench.analysis.compare` (see there) and `duet compare`.

    Build with :meth:`create`, which validates every field once; the defaults are those
    of `duet compare`, except ``seed``, which the command line takes from the
    experiment.
    """

    test: str = "ratio"
    interval: str = "t"
    confidence: float = 0.95
    resamples: int = 9999
    threshold: float = 0.0
    min_overlap: float = DEFAULT_MIN_OVERLAP
    run_stat: str = "auto"
    warmup: Warmup = None
    winsorize: bool = False
    seed: int = 0
    cluster_by: str | None = None
    by: tuple[str, ...] = DEFAULT_BY
    weights: str = "poisson"
    overlap_rate: str = DEFAULT_OVERLAP_RATE
    min_run_pairs: float = DEFAULT_MIN_RUN_PAIRS
    measure: str = "auto"
    #: keep duet runs whose sides got unequal CPU shares where wall time is compared
    #: (they are left out by default: docs/statistics.md, "Notes")
    keep_unbalanced: bool = False

    @classmethod
    def create(cls, **kw: object) -> CompareOptions:
        """Options from keyword arguments (the field names), checked and normalized."""
        unknown = sorted(set(kw) - {f.name for f in fields(cls)})
        if unknown:
            raise OptionError(unknown[0], "is not an option of compare", kw[unknown[0]])
        return cls(**kw).checked()  # type: ignore[arg-type]

    def checked(self) -> CompareOptions:
        """These options validated and normalized (``create`` calls it)."""
        test = _TEST_ALIASES.get(str(self.test), self.test)
        interval = self.interval.lower() if isinstance(self.interval, str) else self.interval
        by = (self.by,) if isinstance(self.by, str) else tuple(self.by)
        if self.cluster_by is not None and not isinstance(self.cluster_by, str):
            raise OptionError("cluster_by", "must be a column name, 'run' or None", self.cluster_by)
        return replace(
            self,
            test=_choice(test, TESTS, "test"),
            interval=_choice(interval, INTERVALS, "interval"),
            confidence=check_confidence(self.confidence),
            resamples=check_resamples(self.resamples),
            threshold=check_threshold(self.threshold),
            min_overlap=check_min_overlap(self.min_overlap),
            run_stat=_choice(self.run_stat, RUN_STATS, "run_stat", "run statistic"),
            warmup=check_warmup(self.warmup),
            winsorize=bool(self.winsorize),
            seed=check_seed(self.seed),
            by=by,
            weights=_choice(self.weights, WEIGHTS, "weights"),
            overlap_rate=check_overlap_rate(self.overlap_rate),
            min_run_pairs=check_min_run_pairs(self.min_run_pairs),
            measure=_choice(self.measure, MEASURES, "measure"),
            keep_unbalanced=bool(self.keep_unbalanced),
        )

    @property
    def value_test(self) -> str:
        """The test whose run values are built: the U tests rank log ratios."""
        return "diff" if self.test == "diff" else "ratio"

    @property
    def cluster_column(self) -> str | None:
        """Column whose values are resampled as clusters (None: runs)."""
        if self.cluster_by is None:
            return "host"
        if self.cluster_by == NO_CLUSTERING:
            return None
        return self.cluster_by

    def settings(self) -> dict[str, Any]:
        """The ``settings`` block of `duet compare --format json` (docs/results.md)."""
        return {
            "test": self.test,
            "interval": self.interval,
            "confidence": float(self.confidence),
            "resamples": int(self.resamples),
            "threshold": float(self.threshold),
            "min_overlap": float(self.min_overlap),
            "overlap_rate": self.overlap_rate,
            "min_run_pairs": float(self.min_run_pairs),
            "run_stat": self.run_stat,
            "measure": self.measure,
            "keep_unbalanced": bool(self.keep_unbalanced),
            "warmup": CONFIG_WARMUP if self.warmup is None else self.warmup,
            "winsorize": bool(self.winsorize),
            "seed": int(self.seed),
            "cluster_by": self.cluster_by,
        }


#: Which benchmarks are A/A experiments: None (the table's ``aa`` column), True (all),
#: False (none), or their names.
AA = bool | tuple[str, ...] | None


def _aa(aa: object) -> AA:
    if aa is None or isinstance(aa, bool):
        return aa
    names = (aa,) if isinstance(aa, str) else aa
    try:
        return tuple(sorted({str(x) for x in names}))  # type: ignore[union-attr]
    except TypeError:
        raise OptionError("aa", "must be None, True, False or benchmark names", aa) from None


@dataclass(frozen=True)
class EvaluateOptions:
    """Options of :func:`duetbench.analysis.evaluate.evaluate` and `duet evaluate`.

    ``compare``: the options of every test (``compare.test`` drives the verdict table);
    ``aa``: which benchmarks are A/A experiments; ``slowdowns``: the s of the minimal
    detectable slowdown (fractions); ``min_overlaps``: the m of the overlap and
    A/A-by-m tables; ``shuffles``: random re-pairings of the shuffle check; ``span``:
    the runtime speedup from the sides' ``process`` lifetimes or their ``iterations``.
    """

    compare: CompareOptions = field(default_factory=CompareOptions)
    aa: AA = None
    slowdowns: tuple[float, ...] = DEFAULT_SLOWDOWNS
    min_overlaps: tuple[float, ...] = DEFAULT_MIN_OVERLAPS
    shuffles: int = 10
    span: str = "process"

    @classmethod
    def create(cls, compare: CompareOptions | None = None, **kw: Any) -> EvaluateOptions:
        """Options from ``compare`` (or the compare keywords among ``kw``) and the rest."""
        own = {f.name for f in fields(cls)} - {"compare"}
        compare_kw = {k: v for k, v in kw.items() if k not in own}
        if compare is not None and compare_kw:
            raise OptionError(
                next(iter(compare_kw)), "is given twice (also in compare=)", compare_kw
            )
        base = compare if compare is not None else CompareOptions.create(**compare_kw)
        return cls(compare=base.checked(), **{k: v for k, v in kw.items() if k in own}).checked()

    def checked(self) -> EvaluateOptions:
        shuffles = self.shuffles
        if not _is_int(shuffles) or int(shuffles) < 1:  # type: ignore[call-overload]
            raise OptionError("shuffles", "must be a positive integer", shuffles)
        return replace(
            self,
            aa=_aa(self.aa),
            slowdowns=_grid(
                self.slowdowns,
                "slowdowns",
                "must be non-negative fractions, e.g. 0, 0.01, ..., 0.15",
                lambda s: s >= 0 and math.isfinite(s),
            ),
            min_overlaps=_grid(
                self.min_overlaps,
                "min_overlaps",
                "must lie in [0, 1), e.g. 0.1, ..., 0.9 (minimum overlap ratios)",
                lambda m: 0 <= m < 1,
            ),
            shuffles=int(shuffles),  # type: ignore[call-overload]
            span=_choice(self.span, SPANS, "span"),
        )

    def settings(self) -> dict[str, Any]:
        """The ``settings`` block of `duet evaluate --format json` (docs/evaluate.md)."""
        return {
            **self.compare.settings(),
            "shuffles": self.shuffles,
            "span": self.span,
            "slowdowns": list(self.slowdowns),
            "min_overlaps": list(self.min_overlaps),
        }


@dataclass(frozen=True)
class ReportOptions:
    """Options of `duet report`: the evaluation's, and what the timelines draw."""

    evaluate: EvaluateOptions = field(default_factory=EvaluateOptions)
    #: duet runs per benchmark and method drawn in the timelines
    timeline_runs: int = 2
    #: at most this many iterations per side of a run in the timelines
    timeline_iterations: int = 100
    #: the page title (default: "duetbench report: <experiment>")
    title: str | None = None

    @classmethod
    def create(cls, evaluate: EvaluateOptions | None = None, **kw: Any) -> ReportOptions:
        return cls(evaluate=(evaluate or EvaluateOptions()).checked(), **kw).checked()

    def checked(self) -> ReportOptions:
        for name in ("timeline_runs", "timeline_iterations"):
            v = getattr(self, name)
            if not _is_int(v) or int(v) < 0:
                raise OptionError(name, "must be an integer >= 0", v)
        return self


# ---------------------------------------------------------------------- shared flags


def threshold_help(*, recorded: bool = False) -> str:
    """The help of ``--threshold`` wherever verdicts are given (docs/statistics.md);
    ``recorded``: of a results directory, whose config's `threshold:` is the default."""
    return (
        "practical threshold, from 0%% to below 100%%, e.g. 1%% (default "
        + ("the config's `threshold:`, else " if recorded else "")
        + f"{CompareOptions.threshold:g}): an interval inside +-threshold is `equivalent`, "
        "one reaching beyond it but not wholly beyond is `inconclusive`, never `slower`"
    )


#: The flags `duet micro` (``--NAME``) and the pytest plugin (``--duet-NAME``) share,
#: declared once (docs/micro.md, docs/pytest.md): NAME -> argparse keywords, help
#: included. Not here: --method (the plugin has no ``inproc``: each side is its own pytest
#: process), --budget (micro's is per benchmark x method, the plugin's the whole
#: session's) and --runs (the plugin fits its runs to the session's budget).
SHARED_FLAGS: dict[str, dict[str, Any]] = {
    **{
        f"{side}-python": {
            "metavar": "PYTHON",
            "help": f"side {side.upper()}'s interpreter (default: the one running this command)",
        }
        for side in "ab"
    },
    "samples": {"metavar": "N", "type": int, "help": "samples per run (instead of the budget)"},
    "min-sample-time": {
        "metavar": "TIME",
        "default": "1ms",
        "help": "calibration: the shortest sample (default 1ms)",
    },
    "keep-gc": {"action": "store_true", "help": "leave the GC on during samples"},
    "no-cpu-swap": {
        "dest": "cpu_swap",
        "action": "store_false",
        # micro swaps every 50 samples, the plugin every 0.1 s
        "help": "keep each side on its own CPU for a whole run (default: the two sides swap "
        "CPUs during a run, docs/micro.md, 'Placement')",
    },
    "seed": {"metavar": "N", "type": int, "default": 0, "help": "seed of the plan (default 0)"},
    "output": {
        "metavar": "OUTPUT",
        "type": Path,
        "default": Path("results"),
        "help": "parent directory of the results (default: results/); the experiment goes "
        "to OUTPUT/<experiment name>",
    },
    "format": {
        "choices": ("table", "json", "markdown"),
        "default": "table",
        "help": "output format: table, json, markdown (default: table)",
    },
    "threshold": {
        "metavar": "T",
        "default": f"{CompareOptions.threshold:g}",
        "help": threshold_help(),
    },
    "fail-on-regression": {
        "action": "store_true",
        "help": "exit 1 when any verdict is 'slower'",
    },
}


def shared_flag(name: str, prefix: str = "") -> dict[str, Any]:
    """The argparse keywords of the shared flag ``--{prefix}NAME``
    (:data:`SHARED_FLAGS`); its ``dest`` is prefixed alike (``duet-``: ``duet_cpu_swap``),
    so a pytest option never takes another plugin's name."""
    kw = dict(SHARED_FLAGS[name])
    if "dest" in kw:
        kw["dest"] = prefix.replace("-", "_") + kw["dest"]
    return kw
