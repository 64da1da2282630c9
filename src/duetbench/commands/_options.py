"""The analysis options on the command line: flags whose defaults come from
``duetbench.options``, and their conversion to typed, validated options (the flags that
are no analysis options, ``--format`` among them, are ``_flags.py``).

``compare_options(args)`` (and the evaluate / report equivalents) is the only place an
``argparse.Namespace`` becomes options; below ``commands/`` no code sees arguments.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DuetError, OptionError
from ..options import (
    CLUSTER_BY,
    CONFIG_WARMUP,
    DEFAULT_MIN_OVERLAPS,
    INPROC_RUN_STAT,
    INTERVALS,
    MEASURES,
    MICRO_RUN_STAT,
    OVERLAP_RATES,
    RUN_STATS,
    SPANS,
    TESTS,
    CompareOptions,
    EvaluateOptions,
    ReportOptions,
    threshold_help,
)
from ..units import percentage
from ._flags import add_format_flag, add_keep_unbalanced

if TYPE_CHECKING:
    from ..dataset import Dataset

_C = CompareOptions()
_E = EvaluateOptions()
_R = ReportOptions()


@contextmanager
def flag_errors() -> Iterator[None]:
    """An invalid option is reported under its flag's name (``--min-overlap``)."""
    try:
        yield
    except OptionError as exc:
        raise exc.as_flag() from None


# ---------------------------------------------------------------------- parsing text


def add_threshold(p: argparse.ArgumentParser) -> None:
    """``--threshold`` of a command that reads a results directory: the practical
    threshold of the verdicts (docs/statistics.md), by default its config's `threshold:`
    (None here; `duet micro` and the pytest plugin: ``options.SHARED_FLAGS``)."""
    p.add_argument("--threshold", default=None, help=threshold_help(recorded=True))


def parse_threshold(text: str) -> float:
    """``1%`` or ``0.01`` -> 0.01 (:func:`duetbench.units.percentage`: the range of the
    config's `threshold:` and of `duet run --threshold`)."""
    return percentage(text, "--threshold")


def parse_warmup(text: str | None) -> int | str | None:
    """``N``, ``half`` or ``config`` (None: the rows the table marks as warm-up)."""
    if text is None or text == CONFIG_WARMUP:
        return None
    if text == "half":
        return "half"
    try:
        n = int(text)
    except ValueError:
        raise DuetError(
            f"--warmup {text!r}: use a number of iterations, 'half', or 'config'"
        ) from None
    if n < 0:
        raise DuetError("--warmup must not be negative")
    return n


def parse_grid(text: str, *, percent: bool, what: str) -> tuple[float, ...]:
    """``'0:15:1'`` (start:stop:step, stop included) or ``'0,1,2,5'`` -> sorted values.

    With ``percent`` the numbers are percentages (``5`` = 0.05).
    """
    t = text.strip().replace("%", "")
    scale = 0.01 if percent else 1.0
    try:
        if ":" in t:
            parts = [float(p) for p in t.split(":")]
            if len(parts) == 2:
                parts.append(1.0 if percent else 0.1)
            if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
                raise ValueError
            n = math.floor((parts[1] - parts[0]) / parts[2] + 1e-9) + 1
            if n > 10_000:
                raise DuetError(f"{what} {text!r}: more than 10000 values; use a larger step")
            vals = [parts[0] + i * parts[2] for i in range(n)]
        else:
            vals = [float(p) for p in t.split(",") if p.strip()]
    except ValueError:
        raise DuetError(
            f"{what} {text!r}: give start:stop:step (stop included) or a list a,b,c"
        ) from None
    if not vals:
        raise DuetError(f"{what} {text!r}: no values")
    return tuple(sorted({round(v * scale, 10) for v in vals}))


def parse_min_overlaps(values: list[str] | None) -> tuple[float, tuple[float, ...]]:
    """`duet evaluate --min-overlap`: a single m (the pairing) and/or a grid (the tables)."""
    pairing, grid = _C.min_overlap, _E.min_overlaps
    for v in values or []:
        vals = parse_grid(v, percent=False, what="--min-overlap")
        if any(not 0 <= x < 1 for x in vals):
            raise DuetError(f"--min-overlap {v!r}: m must lie in [0, 1), e.g. 0.4")
        if ":" in v or "," in v:
            grid = vals
        else:
            pairing = vals[0]
    return pairing, grid


def parse_aa(text: str | None) -> bool | tuple[str, ...] | None:
    """``--aa``: no value or ``all`` -> every benchmark; ``a,b`` -> those."""
    if text is None:
        return None
    if text in ("*", "all"):
        return True
    return tuple(x.strip() for x in text.split(",") if x.strip())


# ---------------------------------------------------------------------- flags


def add_source_arguments(
    p: argparse.ArgumentParser, *, formats: tuple[str, ...], output: str
) -> None:
    """The arguments of a command that reads a results directory or a table: its source,
    --format, -o."""
    p.add_argument(
        "source", type=Path, help="results directory, or an iterations table (.parquet/.csv)"
    )
    add_format_flag(p, formats)
    p.add_argument("-o", "--output", type=Path, help=output)


def _choice(
    p: argparse.ArgumentParser, flag: str, choices: tuple[str, ...], default: object, help: str
) -> None:
    p.add_argument(flag, choices=list(choices), default=default, help=help)


def _number(p: argparse.ArgumentParser, flag: str, default: float, help: str) -> None:
    """A number flag; ``{}`` in ``help`` is its default."""
    kind = int if isinstance(default, int) else float
    p.add_argument(flag, type=kind, default=default, help=help.format(f"{default:g}"))


def add_compare_options(p: argparse.ArgumentParser, *, min_overlap: bool = True) -> None:
    """The options of `duet compare` (``min_overlap=False``: the caller adds its own)."""
    _choice(
        p,
        "--test",
        TESTS,
        _C.test,
        "what drives the verdict (default: ratio CI test); utest: signed-rank test of "
        "the run values (needs >= 6 runs at 95 %%); utest-pooled: the thesis's U test of all "
        "iterations, NOT calibrated (docs/statistics.md)",
    )
    _choice(
        p,
        "--interval",
        INTERVALS,
        _C.interval,
        "interval over run-level values (default: Student-t); bca, percentile and "
        "studentized are NOT calibrated up to 20 runs: 7-26 %% false alarms at a nominal "
        "5 %% (docs/statistics.md)",
    )
    _number(p, "--resamples", _C.resamples, "bootstrap resamples (default {})")
    _number(p, "--confidence", _C.confidence, "confidence level (default {})")
    add_threshold(p)
    if min_overlap:
        _number(
            p, "--min-overlap", _C.min_overlap, "aduet pairing: minimum overlap rate m (default {})"
        )
    _choice(
        p,
        "--overlap-rate",
        OVERLAP_RATES,
        _C.overlap_rate,
        "aduet pairing: overlap relative to the shorter iteration (default), or the "
        "thesis's min(ov/d_A, ov/d_B), which drops pairs of very different length",
    )
    _number(
        p,
        "--min-run-pairs",
        _C.min_run_pairs,
        "leave out runs with fewer pairs than this share of their group's median run "
        "(default {}; 0 keeps every run)",
    )
    _choice(
        p,
        "--run-stat",
        RUN_STATS,
        None,
        f"how a run's pairs are summarized (default: {MICRO_RUN_STAT} for micro benchmarks, "
        f"which compares the sides' minima, {INPROC_RUN_STAT} for their inproc runs, "
        f"{_C.run_stat} for the others: the median of the "
        "pairs' log ratios, or `means` (the sides' mean durations) for duets that ran beside "
        "other work; docs/statistics.md, 'Run statistics beside other work')",
    )
    _choice(
        p,
        "--measure",
        MEASURES,
        None,
        "what an iteration's time is: wall, cpu, or auto: CPU time for CPU-bound sides of "
        "runs beside other work, wall time otherwise (default: the config's `measure:`, "
        "else auto; docs/statistics.md, 'Beside other work: CPU time')",
    )
    add_keep_unbalanced(p)
    p.add_argument(
        "--warmup",
        default=None,
        help="iterations dropped per run and side: N, half, or config (default)",
    )
    p.add_argument(
        "--winsorize", action="store_true", help="winsorize each run's series (duet paper 7.1)"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="bootstrap seed (default: the experiment's seed)"
    )
    _choice(
        p,
        "--cluster-by",
        CLUSTER_BY,
        _C.cluster_by,
        "resampling unit (default: host when runs span several hosts, else run)",
    )


def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    """The options of `duet compare` plus the evaluation's grids."""
    add_compare_options(p, min_overlap=False)
    p.add_argument(
        "--min-overlap",
        action="append",
        metavar="M|START:STOP:STEP",
        help=f"a single m (e.g. 0.4) sets the aduet pairing of every test (default "
        f"{_C.min_overlap:g}); a range or list (0.1:0.9:0.1, or 0.2,0.4,0.6) sets the m of the "
        f"overlap and A/A-vs-m tables (default {_grid_text(DEFAULT_MIN_OVERLAPS, 1)}); repeat "
        "to give both",
    )
    p.add_argument(
        "--slowdowns",
        default=_grid_text(_E.slowdowns, 100),
        metavar="START:STOP:STEP",
        help="slowdowns s of the MDS in percent, stop included, or a list 0,1,2,5 (default "
        f"{_grid_text(_E.slowdowns, 100)})",
    )
    p.add_argument(
        "--aa",
        nargs="?",
        const="*",
        default=None,
        metavar="BENCH[,BENCH]",
        help="treat these benchmarks as A/A experiments ('all', or no value after the "
        "source: every benchmark); a results directory knows its A/A benchmarks (no B side "
        "in duet.yml)",
    )
    _number(
        p,
        "--shuffles",
        _E.shuffles,
        "random re-pairings averaged by the shuffle check (default {})",
    )
    _choice(
        p,
        "--span",
        SPANS,
        _E.span,
        "runtime speedup from process lifetimes (default) or the span of the iterations",
    )


def add_report_options(p: argparse.ArgumentParser) -> None:
    """What the report's timelines draw, then the options of `duet evaluate`."""
    _number(
        p,
        "--timeline-runs",
        _R.timeline_runs,
        "duet runs per benchmark and method drawn in the timelines (default {})",
    )
    _number(
        p,
        "--timeline-iterations",
        _R.timeline_iterations,
        "at most this many iterations per side of a run in the timelines (default {})",
    )
    add_evaluate_options(p)


def _grid_text(values: tuple[float, ...], scale: float) -> str:
    """An evenly spaced grid as START:STOP:STEP (``scale``: 100 for percent)."""
    v = [round(x * scale, 10) for x in values]
    step = round(v[1] - v[0], 10) if len(v) > 1 else 1
    return f"{v[0]:g}:{v[-1]:g}:{step:g}"


# ---------------------------------------------------------------------- arguments -> options


def compare_options(
    args: argparse.Namespace, *, min_overlap: float | None = None
) -> CompareOptions:
    """`duet compare`'s options from its arguments (the seed: 0 when not given; the
    command replaces it by the experiment's, :func:`with_recorded`)."""
    with flag_errors():
        return CompareOptions.create(
            test=args.test,
            interval=args.interval,
            confidence=args.confidence,
            resamples=args.resamples,
            threshold=parse_threshold(
                f"{_C.threshold:g}" if args.threshold is None else args.threshold
            ),
            min_overlap=args.min_overlap if min_overlap is None else min_overlap,
            run_stat=args.run_stat or _C.run_stat,
            warmup=parse_warmup(args.warmup),
            winsorize=args.winsorize,
            seed=args.seed if args.seed is not None else 0,
            cluster_by=args.cluster_by,
            overlap_rate=args.overlap_rate,
            min_run_pairs=args.min_run_pairs,
            measure=args.measure or _C.measure,
            keep_unbalanced=args.keep_unbalanced,
        )


def evaluate_options(args: argparse.Namespace) -> EvaluateOptions:
    """`duet evaluate`'s options from its arguments."""
    pairing, grid = parse_min_overlaps(args.min_overlap)
    slowdowns = parse_grid(args.slowdowns, percent=True, what="--slowdowns")
    if min(slowdowns) < 0:
        raise DuetError(
            f"--slowdowns {args.slowdowns!r}: give slowdowns >= 0 in percent, e.g. 0:15:1"
        )
    with flag_errors():
        return EvaluateOptions.create(
            compare_options(args, min_overlap=pairing),
            aa=parse_aa(args.aa),
            slowdowns=slowdowns,
            min_overlaps=grid,
            shuffles=args.shuffles,
            span=args.span,
        )


def report_options(args: argparse.Namespace) -> ReportOptions:
    """`duet report`'s options from its arguments."""
    evaluate = evaluate_options(args)
    with flag_errors():
        return ReportOptions.create(
            evaluate,
            timeline_runs=args.timeline_runs,
            timeline_iterations=args.timeline_iterations,
        )


def given_recorded(args: argparse.Namespace) -> frozenset[str]:
    """Which of the options a results directory records (the seed, ``measure``,
    ``threshold``) the command line gave: the others come from the directory."""
    from ..workflow.verdicts import RECORDED

    return frozenset(name for name in RECORDED if getattr(args, name, None) is not None)


def with_recorded(
    opts: CompareOptions, args: argparse.Namespace, dataset: Dataset
) -> CompareOptions:
    """``opts`` with what the results directory recorded -- the experiment's seed, the
    config's ``measure:`` and ``threshold:`` -- where the command line gave none."""
    from ..workflow.verdicts import with_recorded as recorded

    return recorded(opts, dataset, given_recorded(args))
