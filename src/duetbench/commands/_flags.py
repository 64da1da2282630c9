"""Flags several commands share that are not analysis options (those are ``_options.py``;
`duet gate` and `duet bisect`'s trees are ``_trees.py``): the results repository, the
versions an experiment compared, ``--last``, ``--format``, ``--only``, ``--keep-unbalanced``,
durations, where the sides run; and the rule that a flag which does nothing without
another is an error (:func:`refuse_unused`).

Imports argparse and the base layer only, not even ``options.py`` (its dataclasses add
about 10 ms to a start: docs/measurements/cli-startup.md); what the flags select is read
by ``duetbench.workflow`` when a command runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import DuetError
from ..units import duration

#: where the sides of `duet run` and `duet plan` run
EXECUTORS = ("local", "docker", "podman")
#: the environment variable that names the results repository of `duet history` and `duet
#: dashboard` when --repo is not given (`duet run`, `gate`, `bisect` and `plan` read no
#: environment: there --repo changes what the command does, so it is only ever typed)
REPO_ENV = "DUET_HISTORY"
#: `--last N` (the priors from the last N experiments) when not given
DEFAULT_LAST = 10
#: the one help text of --repo; each command appends what it does with the repository
REPO_HELP = "the results repository: a file (SQLite) or a postgresql:// URL"


def add_format_flag(p: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """``--format``: how the command prints its result; the first format is the default."""
    p.add_argument(
        "--format",
        choices=list(formats),
        default=formats[0],
        help=f"output format: {', '.join(formats)} (default: {formats[0]})",
    )


def add_keep_unbalanced(p: argparse.ArgumentParser) -> None:
    """``--keep-unbalanced``: an analysis option of every command that shows verdicts."""
    p.add_argument(
        "--keep-unbalanced",
        action="store_true",
        help="keep duet runs whose sides got unequal CPU shares where wall time is compared "
        "(default: left out; docs/statistics.md, section Notes)",
    )


def parse_duration(text: str, flag: str) -> float:
    """A duration flag (``600``, ``90s``, ``10m``): :func:`duetbench.units.duration`, the
    parser and range of the config's durations (1 ms to 30 days)."""
    return duration(text, flag)


def add_repo_flag(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = f" (default: ${REPO_ENV})",
    *,
    alias: bool = False,
) -> None:
    """``--repo REPO``, the results repository (docs/history.md), with ``what`` the command
    does with it. ``alias``: ``--history REPO`` is accepted too (hidden: the name these
    commands gave the repository in earlier releases)."""
    p.add_argument("--repo", dest="repo", metavar="REPO", help=REPO_HELP + what)
    if alias:
        p.add_argument("--history", dest="repo", metavar="REPO", help=argparse.SUPPRESS)


def add_last_flag(
    p: argparse.ArgumentParser | argparse._ArgumentGroup, when: str, of: str = ""
) -> None:
    """``--last N``: the priors from the last N experiments (``of``: of what), ``when`` it
    applies (it is an error otherwise, :func:`refuse_unused`)."""
    p.add_argument(
        "--last",
        type=int,
        default=None,
        metavar="N",
        help=f"{when}: the priors from the last N experiments{of} (default {DEFAULT_LAST})",
    )


def last_experiments(args: argparse.Namespace) -> int:
    """--last, or its default; at least 1."""
    last = DEFAULT_LAST if args.last is None else int(args.last)
    if last < 1:
        raise DuetError(f"--last must be at least 1 (experiments), got {last}")
    return last


def add_version_flags(p: argparse.ArgumentParser) -> None:
    """--versions / --git: which versions the experiment compared."""
    p.add_argument(
        "--versions",
        dest="versions",
        action="append",
        metavar="LABEL|A=..,B=..",
        help="the versions the experiment compared: one label for both sides (v1.4.2), or "
        "each side's, A=v1.4.1,B=v1.4.2 (repeatable: --versions A=v1.4.1 --versions B=v1.4.2)",
    )
    p.add_argument(
        "--git",
        metavar="CHECKOUT",
        type=Path,
        help="read commits and dates from this git checkout: the labels are git revisions "
        "there (default: HEAD, labelled by `git describe --tags --always`)",
    )


def add_run_repo_flags(p: argparse.ArgumentParser) -> None:
    """`duet run ... --repo REPO --versions A=..,B=..`: add the experiment afterwards;
    with a stopping rule, stop with the priors of its earlier experiments too."""
    add_repo_flag(
        p,
        ": with a stopping rule (--until), stop with the spread of this host's earlier "
        "experiments in it, and let --method auto choose from them without a pilot "
        "(docs/adaptive.md); with --versions or --git, add the experiment to it afterwards",
        alias=True,
    )
    add_last_flag(p, "with --repo and a stopping rule")
    add_version_flags(p)


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """The duet.yml, which of its benchmarks (--only) and where its sides run
    (--executor): what `duet run` runs and `duet plan` plans."""
    p.add_argument("config", type=Path, help="the duet.yml")
    p.add_argument(
        "--only",
        action="append",
        metavar="BENCH",
        help="only this benchmark (repeatable, or comma-separated; default: every benchmark)",
    )
    p.add_argument(
        "--executor",
        choices=list(EXECUTORS),
        help="where the sides run (default: the config's executor, else local)",
    )


def split_only(only: list[str] | None) -> list[str] | None:
    """``--only a,b --only c`` -> ``[a, b, c]`` (None: every benchmark)."""
    if not only:
        return None
    return [x for o in only for x in o.split(",") if x]


def repo_location(args: argparse.Namespace) -> str:
    """--repo, else $DUET_HISTORY (a file path as typed, or a URL)."""
    loc = args.repo or os.environ.get(REPO_ENV)
    if not loc:
        raise DuetError(
            f"name the results repository with --repo FILE (or a postgresql:// URL), "
            f"or set {REPO_ENV}"
        )
    return str(loc)


def refuse_unused(rules: Iterable[tuple[str, object, bool, str]]) -> None:
    """A flag that does nothing without another is an error, not silently ignored.

    ``rules``: (flag, its value, whether it does something, what it needs): a flag given
    (its value neither None nor False) that does nothing is refused, naming what it needs.
    """
    for flag, value, used, needs in rules:
        if value is not None and value is not False and not used:
            raise DuetError(f"{flag} does nothing without {needs}")
