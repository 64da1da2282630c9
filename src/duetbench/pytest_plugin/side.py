"""A side's pytest process under ``--duet-*`` (:class:`SidePlugin`), and the single-side
table of plain ``pytest`` (:class:`SinglePlugin`); docs/pytest.md.

A side runs the user's own pytest command line (without the ``--duet-*`` options), so
every fixture, conftest, mark and option applies; the instruction in ``$DUET_PYTEST``
says what to do with the tests it selects:

- ``calibrate``: every test that uses the ``benchmark`` fixture; each call is
  calibrated, and at the end ``out`` (a JSON file) gets what was calibrated, every
  selected test's outcome and how long it took (passed, failed with the reason,
  skipped), the collection errors, and the rootdir and inifile this pytest used;
- ``run``: the tests of the run's plan (``tests``: node id, samples, output folder), in
  the plan's order; each test's call takes its samples into its folder under
  ``$DUET_OUTPUT_DIR``. Both sides take the same samples of the same tests in the same
  order, so under sduet sample *k* of each test starts on both sides together. A test
  that is not there, fails or takes no samples ends the side at once (its folder's
  ``micro-error.json`` says why) and releases the other side from the lockstep: a run
  whose sides disagree about which sample is which is worth nothing.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from . import fixture

#: the exit status of a side whose run broke off (pytest's own "tests failed")
BROKEN_OFF = 1


def write_json(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def _message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:  # the exception's line and where it was raised
        said = f"{crash.message.splitlines()[0] if crash.message else ''} ({crash.path}:{crash.lineno})"
    else:
        text = str(report.longreprtext or "").strip().splitlines()
        said = text[-1] if text else ""
    return f"{report.when}: {said}"


class SidePlugin:
    def __init__(self, instruction: dict[str, Any]) -> None:
        self.ins = instruction
        self.selected: list[str] = []
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.collect_errors: list[str] = []
        #: run mode: the plan's tests, in order (node id -> its entry)
        self.plan: dict[str, dict[str, Any]] = {
            t["nodeid"]: t for t in instruction.get("tests") or []
        }
        self.order = {nodeid: i for i, nodeid in enumerate(self.plan)}
        self.broken: str | None = None

    # ------------------------------------------------------------------ selection
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.ins["mode"] == "run":
            keep = sorted(
                (i for i in items if i.nodeid in self.plan), key=lambda i: self.order[i.nodeid]
            )
        else:
            keep = [i for i in items if "benchmark" in getattr(i, "fixturenames", ())]
        chosen = {id(i) for i in keep}
        drop = [i for i in items if id(i) not in chosen]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
        self.selected = [i.nodeid for i in keep]
        if self.ins["mode"] == "run":
            missing = [n for n in self.plan if n not in self.selected]
            if missing:
                self._break_off(
                    session, missing[0], "collect",
                    f"test {missing[0]} was not collected: the side's tests differ from A's",
                )  # fmt: skip

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = str(report.longreprtext or "").strip().splitlines()
            last = next((ln for ln in reversed(text) if ln.strip()), "")
            self.collect_errors.append(f"{report.nodeid or '.'}: {last.strip()}")

    # ------------------------------------------------------------------ outcomes
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.outcomes.setdefault(
            report.nodeid, {"outcome": "passed", "message": "", "duration_s": 0.0}
        )
        entry["duration_s"] += float(report.duration or 0.0)
        if report.failed and entry["outcome"] != "failed":
            entry.update(outcome="failed", message=_message(report))
        elif report.skipped and entry["outcome"] == "passed":
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
            entry.update(outcome="skipped", message=str(reason))
        if self.ins["mode"] != "run" or report.nodeid not in self.plan:
            return
        if report.failed or report.skipped:
            why = "failed" if report.failed else "was skipped"
            self._break_off(None, report.nodeid, report.when, f"{why}: {entry['message']}")
        elif report.when == "teardown" and report.nodeid not in fixture.STATE.records:
            self._break_off(
                None, report.nodeid, "sample",
                "the test did not call the benchmark fixture in this run",
            )  # fmt: skip

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.broken is not None:  # after the report of the test that broke the run
            pytest.exit(f"duet: this side's run broke off: {self.broken}", returncode=BROKEN_OFF)

    def _break_off(self, session: Any, nodeid: str, phase: str, message: str) -> None:
        """End this side's run: the test's folder says why, the other side is released
        from the lockstep, and the session stops (at once when ``session`` is given,
        else after this test's reports)."""
        if self.broken is not None:
            return
        self.broken = f"{nodeid}: {message}"
        output = os.environ.get("DUET_OUTPUT_DIR")
        entry = self.plan.get(nodeid)
        if output and entry is not None:
            folder = os.path.join(output, entry["dir"])
            os.makedirs(folder, exist_ok=True)
            error = os.path.join(folder, "micro-error.json")
            if not os.path.exists(error):  # the fixture's own report of a failing call stays
                side = os.environ.get("DUET_PAIR", "?")
                doc = {"format": 1, "side": side, "phase": phase, "status": "failed",
                       "summary": message, "last_line": message}  # fmt: skip
                write_json(error, doc)
        fixture.sampling.say_done(fixture.helpers, os.environ)
        if session is not None:
            pytest.exit(f"duet: this side's run broke off: {self.broken}", returncode=BROKEN_OFF)

    # ------------------------------------------------------------------ the end
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write what this side found, then end the process at once: every fixture has
        been torn down and every file written, and the session's summary -- which
        nobody reads, and which some plugins make expensive (hypothesis imports most of
        itself there: about 1 s) -- would be paid again in every run. A session that
        ended otherwise (a usage or collection error) ends as pytest ends it, with
        pytest's own message."""
        self._finish(session)
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(BROKEN_OFF if self.broken is not None or session.testsfailed else 0)

    def _finish(self, session: pytest.Session) -> None:
        if self.ins["mode"] == "calibrate":
            config = session.config
            doc = {
                "format": 2,
                "selected": self.selected,
                "outcomes": self.outcomes,
                "records": fixture.STATE.records,
                "collect_errors": self.collect_errors,
                "rootdir": str(config.rootpath),
                "inifile": str(config.inipath or ""),
            }
            write_json(str(self.ins["out"]), doc)
            return
        if self.broken is None:  # the last sample of the last test was taken
            fixture.sampling.say_done(fixture.helpers, os.environ)


class SinglePlugin:
    """Plain ``pytest`` without pytest-benchmark: ``--benchmark-skip``/``--benchmark-only``,
    and the table at the end of the session."""

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        settings = fixture.STATE.single
        for item in items:
            bench = "benchmark" in getattr(item, "fixturenames", ())
            if bench and settings.get("skip"):
                item.add_marker(
                    pytest.mark.skip(reason="Skipping benchmark (--benchmark-skip active).")
                )
            elif not bench and settings.get("only"):
                item.add_marker(
                    pytest.mark.skip(reason="Skipping non-benchmark (--benchmark-only active).")
                )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = fixture.stats_lines(fixture.STATE.stats)
        if not lines:
            return
        terminalreporter.section("benchmark (duetbench, one side; docs/pytest.md)")
        for line in lines:
            terminalreporter.write_line(line)
