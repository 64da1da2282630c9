"""The runs of an experiment that did not end well, for the exit status of every command
that runs one."""

from __future__ import annotations

from pathlib import Path

from ..config.model import Experiment


def runs_not_ok(root: Path, exp: Experiment, only: list[str] | None) -> dict[str, str]:
    """The experiment's finished runs (this invocation's and earlier ones) that are not ok."""
    from ..plan import make_plan
    from ..schema import RunStatus
    from ..store import ResultsStore

    ids = {r.run_id for r in make_plan(exp, only)}
    finished = ResultsStore.open(root).finished()
    return {
        rid: str(e.get("status"))
        for rid, e in sorted(finished.items())
        if rid in ids and e.get("status") != RunStatus.OK
    }
