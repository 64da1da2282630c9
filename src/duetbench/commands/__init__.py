"""One module per `duet` command.

Each module has ``DESCRIPTION`` (and ``EPILOG``, when it has one: exit statuses,
examples) for its parser, ``register(parser) -> None``, which adds the command's
arguments and imports nothing but argparse, ``duetbench.options`` and this package's
private helpers (``_flags.py``, ``_options.py``, ``_trees.py``), so that `duet COMMAND
--help` starts fast, and ``run(args) -> int``, which turns the arguments into typed options, calls the
library (the steps several commands share are ``duetbench.workflow``) and hands the
result to a renderer in ``duetbench.report``; its heavy imports are inside. No command
module imports another (tests/test_layering.py). ``duetbench.cli`` builds the parser
from :data:`COMMANDS` (:func:`add_command` each), and :data:`SUMMARY` lists them for
`duet --help` without importing any.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

#: Each command's one line in `duet --help`, in the order it lists them (a module of this
#: package each; its ``register`` gives its parser this help).
SUMMARY = {
    "run": "run an experiment from a duet.yml",
    "micro": "microbenchmarks: Python functions or an asv suite, A against B",
    "plan": "print the plan of an experiment without running it",
    "process": "raw runs -> the iterations table (Parquet or CSV)",
    "compare": "verdicts: is B slower or faster than A, by how much",
    "evaluate": "evaluate the methods: speedup, overlaps, CV, CI widths, A/A, MDS, shuffle check",
    "report": "one self-contained HTML report (or Markdown for $GITHUB_STEP_SUMMARY)",
    "hosts": "the hosts of an experiment: configuration, runs per status, health",
    "noise": "run a seeded noisy neighbour in the foreground",
    "history": "the results repository across versions: add, import, list, show, changes, "
    "mark, remove",
    "dashboard": "a static site of a results repository (open site/index.html offline)",
    "gate": "CI gate: is head slower than base? (git worktrees, built, measured until sure)",
    "bisect": "which commit made it slower (git history, each step measured until sure)",
    "help": "read the documentation: duet help TOPIC [SECTION] (no TOPIC: the list)",
}
#: The commands, in the order `duet --help` lists them.
COMMANDS = tuple(SUMMARY)


def add_command(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """Add the command ``name`` to ``sub`` (an argparse subparsers object), built from its
    module: the parser with its line of :data:`SUMMARY`, ``DESCRIPTION`` and ``EPILOG``,
    its arguments (``register``) and its handler (``func``: ``run``)."""
    # an ImportError here is a bug in duetbench: it propagates, no command is dropped
    module = importlib.import_module(f"{__name__}.{name}")
    p = sub.add_parser(
        name,
        help=SUMMARY[name],
        description=getattr(module, "DESCRIPTION", None),
        epilog=getattr(module, "EPILOG", None),
    )
    module.register(p)
    p.set_defaults(func=module.run)
    return p
