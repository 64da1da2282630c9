"""The terminal while an experiment runs: a progress bar with ETA and a closing summary."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..plan import RunSpec
from ..records import RunRecord, SideRecord
from ..schedule.inline import ExperimentSummary
from ..schema import RunStatus
from ..store import ResultsStore
from .formatting import rich_text

STATUS_STYLE = {
    RunStatus.OK: "green",
    RunStatus.FAILED: "red",
    RunStatus.TIMEOUT: "yellow",
    RunStatus.HUNG: "dark_orange",
    RunStatus.INTERRUPTED: "magenta",
}


def _iterations(side: SideRecord | None) -> str:
    return "-" if side is None or side.iterations is None else str(side.iterations)


class RichObserver:
    """Progress bar (runs done/total, elapsed, ETA, current benchmark and method); ``-v``: a line per run."""

    def __init__(
        self, console: Console | None = None, verbose: bool = False, resume: str | None = None
    ) -> None:
        self.console = console or Console(stderr=True)
        self.verbose = verbose
        self.resume = resume  # the command that continues the experiment, as typed
        self.progress: Progress | None = None
        self.task: Any = None
        self._t_run: dict[str, float] = {}

    def experiment_started(
        self, store: ResultsStore, plan: list[RunSpec], todo: list[RunSpec]
    ) -> None:
        done = len(plan) - len(todo)
        if done:
            self.console.print(
                f"[bold]resuming[/] {rich_text(store.root)}: {done} of {len(plan)} runs "
                "already finished"
            )
        else:
            self.console.print(f"[bold]duet run[/] {len(plan)} runs -> {rich_text(store.root)}")
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
            refresh_per_second=4,
        )
        self.progress.start()
        self.task = self.progress.add_task("starting", total=len(plan), completed=done)

    def run_started(self, spec: RunSpec) -> None:
        self._t_run[spec.run_id] = time.monotonic()
        if self.progress is not None:
            self.progress.update(
                self.task,
                description=f"{rich_text(spec.benchmark)} [cyan]{spec.method}[/] #{spec.rep}",
            )

    def run_finished(self, spec: RunSpec, record: RunRecord) -> None:
        status = str(record.status)
        if self.progress is not None:
            self.progress.advance(self.task)
        if self.verbose or status != RunStatus.OK:
            style = STATUS_STYLE.get(status, "white")
            if spec.harness == "command":
                its = "iterations " + "/".join(
                    _iterations(record.sides.get(name)) for name in spec.side_names
                )
            else:
                its = f"harness {spec.harness}"
            order = f" {spec.order}" if spec.order else ""
            msg = f" - {record.message}" if record.message else ""
            line = (
                f"[{style}]{status:<11}[/] {rich_text(spec.run_id)}{order} {rich_text(its)} "
                f"({time.monotonic() - self._t_run.pop(spec.run_id, time.monotonic()):.1f} s)"
                f"{rich_text(msg)}"
            )
            (self.progress.console if self.progress else self.console).print(line, highlight=False)

    def run_skipped(self, spec: RunSpec) -> None:
        """A planned run left out: its benchmark x method stopped (docs/adaptive.md)."""
        if self.progress is not None:
            self.progress.advance(self.task)

    def experiment_finished(self, summary: ExperimentSummary) -> None:
        if self.progress is not None:
            self.progress.stop()
        print_summary(self.console, summary, self.resume)


def print_summary(console: Console, summary: ExperimentSummary, resume: str | None = None) -> None:
    """The line after the progress bar; when interrupted, the command that continues
    (``resume``: the command line as typed, with --resume)."""
    parts = [
        f"[{STATUS_STYLE.get(k, 'white')}]{v} {k}[/]" for k, v in sorted(summary.statuses.items())
    ]
    ran = ", ".join(parts) if parts else "no run executed"
    skipped = f"; {summary.skipped} already finished" if summary.skipped else ""
    stopped = getattr(summary, "stopped_early", 0)
    if stopped:
        skipped += f"; {stopped} planned runs not needed (measured until sure: stops.json)"
    late = getattr(summary, "out_of_time", 0)
    if late:
        skipped += f"; {late} planned runs not started: the budget was spent"
    not_run = getattr(summary, "not_run", 0)
    if not_run:
        skipped += f"; {not_run} planned runs not run (their benchmark's first runs failed)"
    head = "[magenta bold]interrupted[/]" if summary.interrupted else "[bold]done[/]"
    console.print(
        f"{head} in {summary.elapsed_s:.1f} s: {ran}{skipped}. "
        f"Results: [bold]{rich_text(summary.root)}[/]"
    )
    # duets that held every core are noted under the verdict table (all_cores_busy), once
    for note in getattr(summary, "notes", []) or []:
        console.print(f"[yellow]note:[/] {rich_text(note)}")
    if summary.interrupted:
        command = resume or (
            f"duet run CONFIG -o {shlex.quote(str(summary.root.parent))} --resume"
            " (CONFIG: the experiment's duet.yml)"
        )
        # soft_wrap: a path or command is never broken by rich, so it pastes whole
        console.print(f"Continue with: {rich_text(command)}", highlight=False, soft_wrap=True)


def print_runs_not_ok(console: Console, root: Path, bad: dict[str, str]) -> None:
    """One line at the very end: how many runs did not end well, and where to read why."""
    counts: dict[str, int] = {}
    for status in bad.values():
        counts[status] = counts.get(status, 0) + 1
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    first = ResultsStore(root).run_json_path(next(iter(bad)))
    console.print(
        f"[red bold]{len(bad)} run(s) did not end well[/] ({kinds}; failed and hung runs are "
        "not analysed, timed-out runs keep their finished iterations). Why: `message` in each "
        f"run's run.json, e.g. {escape(str(first))}. Exit status 4.",
        highlight=False,
        soft_wrap=True,  # the path pastes whole, however long
    )
