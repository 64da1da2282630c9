"""One module per `duet` command.

Each module has ``register(subparsers) -> None``, which adds the command's parser and
imports nothing but argparse and ``duetbench.options`` (so `duet --help` starts fast),
and ``run(args) -> int``, which turns the arguments into typed options, calls one
library function and hands the result to a renderer in ``duetbench.report``; its
heavy imports are inside. ``duetbench.cli`` builds the parser from :data:`COMMANDS`.
"""

from __future__ import annotations

#: The commands, in the order `duet --help` lists them (a module of this package each).
COMMANDS = (
    "run",
    "micro",
    "plan",
    "process",
    "compare",
    "evaluate",
    "report",
    "hosts",
    "noise",
    "history",
    "dashboard",
    "gate",
    "bisect",
    "help",
)
