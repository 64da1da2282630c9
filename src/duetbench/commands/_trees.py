"""What `duet gate` and `duet bisect` share on the command line: the git trees, their
build, the stopping rule of a comparison and the results repository it starts from.

Imports nothing heavy at module level (`duet --help` builds both parsers)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..ci.defaults import GATE_THRESHOLD, GATE_UNTIL
from ._flags import add_last_flag, add_repo_flag, last_experiments, parse_duration, refuse_unused

if TYPE_CHECKING:
    from ..adaptive.prior import HostPriors
    from ..config.model import Experiment


def add_tree_options(p: argparse.ArgumentParser) -> None:
    """The options `duet gate` and `duet bisect` share."""
    p.add_argument("config", type=Path, help="the duet.yml (docs/history.md, 'Gate': {tree})")
    p.add_argument(
        "--build",
        metavar="CMD",
        help="build command run in each checked-out tree (default: none, the trees as checked out)",
    )
    p.add_argument(
        "--build-timeout",
        metavar="TIME",
        help="with --build: how long one build may take, e.g. 600 or 20m (default: no limit); "
        "a build still running then is stopped (gate: exit 2; bisect: the commit is skipped)",
    )
    p.add_argument(
        "--git",
        metavar="CHECKOUT",
        type=Path,
        default=Path("."),
        help="the git checkout whose revisions are compared (default: .)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("results"),
        help="parent directory of the comparisons' results (default: results/)",
    )
    p.add_argument(
        "--until",
        metavar="GOAL",
        help=f"stopping goal: {GATE_UNTIL} (default) or precise:P (docs/adaptive.md)",
    )
    p.add_argument(
        "--threshold",
        metavar="T",
        help="practical threshold of the verdicts, e.g. 2%% (default: the config's stop: "
        f"threshold, else {GATE_THRESHOLD.replace('%', '%%')}, so that `equivalent` can be "
        "decided)",
    )
    p.add_argument(
        "--budget",
        metavar="TIME",
        help="machine time per benchmark x method, e.g. 10m (default: the config's stop: "
        "budget, else none)",
    )
    p.add_argument(
        "--max-runs",
        metavar="N",
        help="most repetitions per benchmark x method (default: the config's stop: max_runs, "
        "else 50)",
    )
    add_repo_flag(
        p,
        "; a missing file is created. The stopping rule starts from the spread of this "
        "runner's earlier experiments in it, and every comparison is added to it afterwards "
        "(docs/history.md, 'Gates feed the repository')",
        alias=True,
    )
    add_last_flag(p, "with --repo", " of each benchmark on this runner")


def build_timeout(args: argparse.Namespace) -> float | None:
    """--build-timeout in seconds (None: no limit); a bad value is refused before anything
    is checked out."""
    text = args.build_timeout
    return None if text is None else parse_duration(text, "--build-timeout")


def tree_experiment_of(args: argparse.Namespace) -> Experiment:
    """The config loaded for this host, with the gate's stopping rule from --until,
    --threshold, --budget and --max-runs (``ci.gate.with_gate_stop``). Flags that do
    nothing without another are refused first."""
    from ..ci.gate import with_gate_stop
    from ..config import load_config
    from ..workflow.host import this_host_cpus

    refuse_unused(
        [
            ("--last", args.last, bool(args.repo), "--repo REPO"),
            ("--build-timeout", args.build_timeout, bool(args.build), "--build CMD"),
        ]
    )
    exp = load_config(args.config, host_cpus=this_host_cpus())
    return with_gate_stop(
        exp, until=args.until, threshold=args.threshold, budget=args.budget, max_runs=args.max_runs
    )


def repo_priors(args: argparse.Namespace) -> HostPriors | None:
    """--repo REPO: this runner's priors for the stopping rules, read before anything is
    checked out or measured (a repository that cannot be used: exit 2 now, not after the
    gate). A missing repository file is created: a first gate has no priors, and says so."""
    from ..workflow.repository import read_priors

    if not args.repo:
        return None
    return read_priors(args.repo, last_experiments(args), create=True)
