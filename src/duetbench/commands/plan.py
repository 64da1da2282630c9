"""`duet plan`: the plan of an experiment, without running it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._flags import (
    add_config_flags,
    add_format_flag,
    add_last_flag,
    add_repo_flag,
    last_experiments,
    refuse_unused,
    split_only,
)

DESCRIPTION = (
    "Print every run `duet run` would execute, in order, with each run's "
    "sides, AB/BA order and CPUs, without running anything; with --precision or "
    "--detect, predict the runs and machine time a goal needs from earlier results."
)


def register(p: argparse.ArgumentParser) -> None:
    add_config_flags(p)
    add_format_flag(p, ("table", "json"))
    p.add_argument(
        "--no-cpu-check",
        action="store_true",
        help="do not check `cpus:` lists against this host's CPUs (for a plan of cluster runs)",
    )
    g = p.add_argument_group("predictions (docs/adaptive.md, 'Cost model and planning')")
    goal = g.add_mutually_exclusive_group()
    goal.add_argument(
        "--precision",
        metavar="P",
        help="predict runs and machine time for an interval of +-P, e.g. 1%%",
    )
    goal.add_argument(
        "--detect", metavar="C", help="predict runs for 80 %% power to detect a change C, e.g. 2%%"
    )
    g.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="RESULTS",
        help="earlier results directory (or iterations table) of these benchmarks, whose "
        "spread the predictions use (--precision and --detect need it or --repo)",
    )
    add_repo_flag(
        g,
        ": plan from the priors of each benchmark x method on this host -- spread, machine "
        "time -- of its last experiments (docs/history.md, 'Priors'); a fixed run count then "
        "also states the precision it reaches with 95 %% probability",
        alias=True,
    )
    g.add_argument(
        "--host",
        metavar="FP",
        help="with --repo: plan for the host with this fingerprint (a prefix; default: "
        "this host's; `duet history list` shows them)",
    )
    add_last_flag(g, "with --repo")


def run(args: argparse.Namespace) -> int:
    import json

    from ..config import load_config
    from ..plan import make_plan
    from ..report.tables import plan_table
    from ..report.terminal import make_console, print_titled
    from ..workflow.host import this_host_cpus

    refuse_unused(
        [
            ("--host", args.host, bool(args.repo), "--repo REPO"),
            ("--last", args.last, bool(args.repo), "--repo REPO"),
        ]
    )
    note = (
        "(`duet plan` checks this host; `duet run --cluster` checks each host of the cluster "
        "instead, and `duet plan --no-cpu-check` plans such runs.)"
    )
    host_cpus = None if args.no_cpu_check else this_host_cpus(note)
    exp = load_config(args.config, executor=args.executor, host_cpus=host_cpus)
    if args.repo:
        return history_forecast(args, exp)
    if args.precision or args.detect or args.source:
        return forecast_command(args, exp)
    plan = make_plan(exp, split_only(args.only))
    if args.format == "json":  # one run per line: json's fast encoder (indent is pure Python)
        runs = ",\n".join(json.dumps(r.to_dict()) for r in plan)
        print(f"[\n{runs}\n]" if plan else "[]")
        return 0
    print_titled(plan_table(exp, plan), make_console())
    return 0


def _goal(args: argparse.Namespace) -> tuple[float | None, float | None]:
    from ..config.stop import parse_fraction
    from ..errors import ConfigError

    precision = parse_fraction(args.precision, "--precision") if args.precision else None
    detect = parse_fraction(args.detect, "--detect") if args.detect else None
    if (precision is not None and precision <= 0) or (detect is not None and detect <= 0):
        raise ConfigError("--precision / --detect must be more than 0 %, e.g. 1%")
    return precision, detect


def history_forecast(args: argparse.Namespace, exp: Any) -> int:
    """`duet plan --repo REPO [--precision P | --detect C]`: from the priors."""
    import json

    from ..adaptive.forecast import forecast
    from ..errors import ConfigError
    from ..history import Repository, fingerprint, priors
    from ..hosts import detect_host
    from ..report.tables import forecast_table
    from ..report.terminal import make_console, print_titled

    if args.source:
        raise ConfigError("give --from RESULTS or --repo REPO, not both")
    last = last_experiments(args)
    precision, detect = _goal(args)
    host = args.host or fingerprint(detect_host()).fingerprint
    with Repository.open(args.repo, create=False) as repo:
        location = repo.location
        found = [p for p in priors(repo, host=host, last=last) if p.usable]
    hosts = {p.host for p in found}
    if len(hosts) > 1:
        raise ConfigError(
            f"--host {host} matches {len(hosts)} hosts in {location} "
            f"({', '.join(sorted(h[:12] for h in hosts))}); give more of the fingerprint"
        )
    models = {(p.benchmark, p.method): p.cost_model() for p in found}
    evidence = {
        (p.benchmark, p.method): f"{p.experiments} experiments, {p.runs} runs (df {p.df})"
        for p in found
    }
    # the priors themselves, shape and all: the forecast predicts the stop of the rule
    # `duet run --repo` stops with (docs/history.md, "Priors")
    priors = {(p.benchmark, p.method): p for p in found}
    rows = forecast(
        exp,
        precision=precision,
        detect=detect,
        only=split_only(args.only),
        models=models,
        evidence=evidence,
        priors=priors,
        missing=f"no earlier experiments on host {host[:12]} in the repository: "
        "run a pilot, e.g. --max-runs 5",
    )
    goal = (
        f"interval within +-{args.precision}"
        if precision is not None
        else f"80 % power to detect {args.detect}"
        if detect is not None
        else "the config's runs"
    )
    source = f"{location}, host {host[:12]}, last {last} experiments"
    if args.format == "json":
        doc = {"goal": goal, "source": source, "host": host, "rows": rows}
        print(json.dumps(doc, indent=2))
        return 0
    table = forecast_table(
        exp.name, goal, rows, source, fixed_only=precision is None and detect is None
    )
    print_titled(table, make_console())
    return 0


def forecast_command(args: argparse.Namespace, exp: Any) -> int:
    """`duet plan --precision P | --detect C --from RESULTS`."""
    import json

    from ..errors import ConfigError

    if not (args.precision or args.detect) or not args.source:
        raise ConfigError(
            "predictions need a goal and earlier runs: duet plan duet.yml --precision 1% "
            "--from results/OLD (or --detect 2%, or --repo REPO)"
        )
    precision, detect = _goal(args)
    from ..adaptive.forecast import forecast
    from ..dataset import open_dataset
    from ..report.tables import forecast_table
    from ..report.terminal import make_console, print_titled

    dataset = open_dataset(args.source)
    rows = forecast(
        exp, dataset.table, precision=precision, detect=detect, only=split_only(args.only)
    )
    goal = (
        f"interval within +-{args.precision}"
        if precision is not None
        else f"80 % power to detect {args.detect}"
    )
    if args.format == "json":
        print(json.dumps({"goal": goal, "source": str(args.source), "rows": rows}, indent=2))
        return 0
    print_titled(forecast_table(exp.name, goal, rows, str(args.source)), make_console())
    return 0
