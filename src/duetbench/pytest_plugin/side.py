"""A side's pytest process under ``--duet-*`` (:class:`SidePlugin`), and the single-side
table of plain ``pytest`` (:class:`SinglePlugin`); docs/pytest.md.

A side runs the user's own pytest command line (without the ``--duet-*`` options), so
every fixture, conftest, mark and option applies; the instruction in ``$DUET_PYTEST``
says which tests to run:

- ``calibrate``: every test that uses the ``benchmark`` fixture; each call is
  calibrated, and at the end ``out`` (a JSON file) gets what was calibrated and every
  selected test's outcome (passed, failed with the reason, skipped);
- ``run``: the one test ``nodeid``; its call samples into ``$DUET_OUTPUT_DIR``. A test
  that is not there leaves ``micro-error.json`` saying so.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from . import fixture


def _write_json(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


class SidePlugin:
    def __init__(self, instruction: dict[str, Any]) -> None:
        self.ins = instruction
        self.selected: list[str] = []
        self.outcomes: dict[str, dict[str, str]] = {}

    def _wanted(self, item: pytest.Item) -> bool:
        if self.ins["mode"] == "run":
            return item.nodeid == self.ins.get("nodeid")
        names = getattr(item, "fixturenames", ())
        only = self.ins.get("nodeids")
        return "benchmark" in names and (only is None or item.nodeid in only)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep = [i for i in items if self._wanted(i)]
        drop = [i for i in items if not self._wanted(i)]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
        self.selected = [i.nodeid for i in keep]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.outcomes.setdefault(report.nodeid, {"outcome": "passed", "message": ""})
        if report.failed and entry["outcome"] != "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            if crash is not None:  # the exception's line and where it was raised
                said = f"{crash.message.splitlines()[0]} ({crash.path}:{crash.lineno})"
            else:
                text = str(report.longreprtext or "").strip().splitlines()
                said = text[-1] if text else ""
            entry.update(outcome="failed", message=f"{report.when}: {said}")
        elif report.skipped and entry["outcome"] == "passed":
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
            entry.update(outcome="skipped", message=str(reason))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.ins["mode"] == "calibrate":
            doc = {
                "format": 1,
                "selected": self.selected,
                "outcomes": self.outcomes,
                "records": fixture.STATE.records,
            }
            _write_json(str(self.ins["out"]), doc)
            return
        nodeid = self.ins.get("nodeid")
        output = os.environ.get("DUET_OUTPUT_DIR")
        if output and nodeid not in self.selected:
            message = f"test {nodeid} was not collected: the side's tests differ from A's"
            _write_json(
                os.path.join(output, "micro-error.json"),
                {"format": 1, "side": os.environ.get("DUET_PAIR", "?"), "phase": "collect",
                 "status": "failed", "summary": message, "last_line": message},
            )  # fmt: skip


class SinglePlugin:
    """Plain ``pytest`` without pytest-benchmark: the table at the end of the session."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = fixture.stats_lines(fixture.STATE.stats)
        if not lines:
            return
        terminalreporter.section("benchmark (duetbench, one side; docs/pytest.md)")
        for line in lines:
            terminalreporter.write_line(line)
