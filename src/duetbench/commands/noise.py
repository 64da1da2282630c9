"""`duet noise`: a seeded noisy neighbour in the foreground.

Until the noise package is split (its command moves here), the parser and the command
are those of :mod:`duetbench.noise`.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from ..noise import register_cli

    register_cli(sub)


def run(args: argparse.Namespace) -> int:
    from ..noise import run_noise_cli

    return run_noise_cli(args)
