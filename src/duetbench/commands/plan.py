"""`duet plan`: the plan of an experiment, without running it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config.limits import HostCpus

EXECUTORS = ("local", "docker", "podman")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="print the plan of an experiment without running it")
    p.add_argument("config", type=Path)
    p.add_argument("--only", action="append", metavar="BENCH")
    p.add_argument("--executor", choices=list(EXECUTORS))
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument(
        "--no-cpu-check",
        action="store_true",
        help="do not check `cpus:` lists against this host's CPUs (for a plan of cluster runs)",
    )


def split_only(only: list[str] | None) -> list[str] | None:
    """``--only a,b --only c`` -> ``[a, b, c]`` (None: every benchmark)."""
    if not only:
        return None
    return [x for o in only for x in o.split(",") if x]


def this_host_cpus(note: str = "") -> HostCpus:
    """The CPUs this host offers, to check a config's ``cpus:`` lists against."""
    from ..config.limits import HostCpus
    from ..hosts import available_cpus, host_name

    return HostCpus(host_name(), available_cpus(), note)


def run(args: argparse.Namespace) -> int:
    import json

    from ..config import load_config
    from ..plan import make_plan
    from ..report.tables import plan_table
    from ..report.terminal import make_console, print_titled

    note = (
        "(`duet plan` checks this host; `duet run --cluster` checks each host of the cluster "
        "instead, and `duet plan --no-cpu-check` plans such runs.)"
    )
    host_cpus = None if args.no_cpu_check else this_host_cpus(note)
    exp = load_config(args.config, executor=args.executor, host_cpus=host_cpus)
    plan = make_plan(exp, split_only(args.only))
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in plan], indent=2))
        return 0
    print_titled(plan_table(exp, plan), make_console())
    return 0
