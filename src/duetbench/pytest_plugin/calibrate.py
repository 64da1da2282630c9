"""The calibration pass of ``pytest --duet-*`` (docs/pytest.md, "A against B", step 1).

One pytest process per side -- the two at the same time, as the runs will run them --
runs every selected test that uses the ``benchmark`` fixture with all its fixtures; each
call is calibrated as duet micro's worker calibrates (docs/micro.md, "Calibration").
What comes back (:class:`Found`): the tests on both sides, each side's calibration of
each, the notes (tests skipped or on one side only), the configuration each side's
pytest used (rootdir, inifile), and what a run will cost besides its samples (the
processes, collection, fixtures and the tests' own code: :attr:`Found.overhead_s`).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DuetError
from .design import TestCost
from .names import ENV, PLUGIN

#: characters of a side's output kept to show why it failed
OUTPUT_TAIL = 3000
#: seconds the executor adds to each run besides the sides' pytest processes (its driver
#: processes, the handshake's set-up, committing the run to the results directory)
EXECUTOR_RUN_S = 0.3


@dataclass(frozen=True)
class Side:
    name: str  # A or B
    python: str
    paths: tuple[str, ...]


@dataclass
class Found:
    """What the calibration passes found."""

    tests: list[str]  # node ids on both sides, in A's order
    calibrations: dict[str, dict[str, dict[str, Any]]]  # nodeid -> side -> record
    notes: list[str] = field(default_factory=list)
    #: per side: its pytest's rootdir and inifile ("" when none)
    config: dict[str, dict[str, str]] = field(default_factory=dict)
    #: seconds a run costs besides its samples (the slower side's)
    overhead_s: float = 0.0
    #: seconds the calibration took (both sides at once)
    elapsed_s: float = 0.0

    def evaluations(self, nodeid: str) -> int:
        """The evaluations per sample both sides are told: A's calibration (1 when every
        sample is one call after its own setup)."""
        a = self.calibrations[nodeid]["A"]
        return 1 if a.get("setup") else int(a["calibration"]["evaluations"])

    def cost(self, nodeid: str, name: str, min_sample_s: float) -> TestCost:
        """One sample's cost on the slower side (the runs are in lockstep)."""
        cal = self.calibrations[nodeid]
        setup = bool(cal["A"].get("setup"))
        per_eval = max(
            float(c["calibration"].get("per_evaluation_ns") or 0.0) for c in cal.values()
        )
        sample = self.evaluations(nodeid) * per_eval / 1e9
        if not setup:
            sample = max(sample, min_sample_s)
        prepare = max(float(c.get("prepare_s") or 0.0) for c in cal.values())
        return TestCost(name, sample, prepare)


def pytest_argv(python: str, args: list[str]) -> list[str]:
    """A side's pytest command line: the user's arguments, this plugin, no cache."""
    return [python, "-m", "pytest", *args, "-p", PLUGIN, "-p", "no:cacheprovider", "-q"]


def _start(
    side: Side, args: list[str], cwd: Path, env: dict[str, str], ins: dict[str, Any], log: Path
) -> subprocess.Popen[bytes]:
    env = {**env, ENV: json.dumps(ins), "DUET_PAIR": side.name}
    with open(log, "wb") as out:
        try:
            return subprocess.Popen(
                pytest_argv(side.python, args),
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise DuetError(f"side {side.name}: cannot run {side.python}: {exc}") from None


def _said(log: Path) -> str:
    text = log.read_text(encoding="utf-8", errors="replace")
    return text[-OUTPUT_TAIL:]


def _pytest_errors(text: str) -> list[str]:
    """pytest's own error lines (``ERROR: file or directory not found: x``, a collection
    error's ``E   ...``), in order, without repeats."""
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("ERROR:") or s.startswith("E   ") or s.startswith("ERROR "):
            if s not in lines:
                lines.append(s)
    return lines


def run_calibration(
    sides: tuple[Side, Side],
    args: list[str],
    cwd: Path,
    env: dict[str, str],
    settings: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """Both sides' calibration processes, at the same time: each side's calibration file
    (raises DuetError, with pytest's own message, when a side could not collect)."""
    docs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="duet-pytest-") as tmp:
        procs = {}
        started = {}
        for side in sides:
            started[side.name] = time.time()
            out = Path(tmp) / f"calibration-{side.name}.json"
            ins = {"mode": "calibrate", "out": str(out), "paths": list(side.paths),
                   "side": side.name, **settings}  # fmt: skip
            log = Path(tmp) / f"output-{side.name}.txt"
            procs[side.name] = (_start(side, args, cwd, env, ins, log), out, log)
        ended: dict[str, float] = {}
        try:
            while len(ended) < len(procs):  # each process's end, exit included
                for name, (proc, _, _) in procs.items():
                    if name not in ended and proc.poll() is not None:
                        ended[name] = time.time()
                time.sleep(0.01)
        finally:
            for proc, _, _ in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        for side in sides:
            proc, out, log = procs[side.name]
            said = _said(log)
            if not out.is_file():
                errors = _pytest_errors(said)
                if errors:
                    raise DuetError(f"side {side.name}'s pytest: " + "\n  ".join(errors))
                raise DuetError(
                    f"side {side.name}: pytest ended (exit status {proc.returncode}) before "
                    f"calibrating; is duetbench installed in {side.python}? Its output:\n{said}"
                )
            docs[side.name] = json.loads(out.read_text(encoding="utf-8"))
            docs[side.name]["wall_s"] = ended[side.name] - started[side.name]
            if docs[side.name].get("collect_errors"):
                raise DuetError(
                    f"side {side.name}'s pytest could not collect the tests:\n  "
                    + "\n  ".join(docs[side.name]["collect_errors"])
                )
    return docs


def calibrate(
    sides: tuple[Side, Side],
    args: list[str],
    cwd: Path,
    env: dict[str, str],
    settings: dict[str, Any],
) -> Found:
    """Calibrate every benchmark test on both sides (see the module doc)."""
    start = time.monotonic()
    docs = run_calibration(sides, args, cwd, env, settings)
    elapsed = time.monotonic() - start
    failed = [
        f"{nodeid} (side {name}): {o['message']}"
        for name, doc in docs.items()
        for nodeid, o in doc["outcomes"].items()
        if o["outcome"] == "failed"
    ]
    if failed:
        raise DuetError(
            "benchmark tests failed before any run, fix them first:\n  " + "\n  ".join(failed)
        )
    notes = _left_out(docs)
    a, b = docs["A"]["records"], docs["B"]["records"]
    tests = [n for n in a if n in b]
    if not tests:
        raise DuetError(
            "no benchmark test ran on both sides: no test uses the benchmark fixture "
            "(pytest-benchmark's) in what this command line selects"
            + ("; " + "; ".join(notes) if notes else "")
        )
    found = Found(tests, {n: {"A": a[n], "B": b[n]} for n in tests}, notes, elapsed_s=elapsed)
    found.config = {
        name: {"rootdir": str(doc.get("rootdir") or ""), "inifile": str(doc.get("inifile") or "")}
        for name, doc in docs.items()
    }
    found.overhead_s = max(_overhead(doc, tests) for doc in docs.values()) + EXECUTOR_RUN_S
    return found


def _overhead(doc: dict[str, Any], tests: list[str]) -> float:
    """Seconds of a side's pytest process besides its benchmark calls: interpreter,
    pytest, collection, fixtures, the tests' own code -- what every run pays again. The
    calls of tests left out are left out too (a run does not run them)."""
    wall = float(doc.get("wall_s") or 0.0)
    calls = sum(float(doc["records"][n].get("call_s") or 0.0) for n in tests)
    others = sum(
        float(o.get("duration_s") or 0.0)
        for nodeid, o in doc["outcomes"].items()
        if nodeid not in tests
    )
    return max(0.0, wall - calls - others)


def _left_out(docs: dict[str, dict[str, Any]]) -> list[str]:
    """Notes on the tests skipped on a side or found on one side only."""
    notes = []
    skipped: dict[str, list[str]] = {}
    for name, doc in docs.items():
        for nodeid, o in doc["outcomes"].items():
            if o["outcome"] == "skipped":
                skipped.setdefault(nodeid, []).append(name)
    for nodeid, names in skipped.items():
        where = "both sides" if len(names) == 2 else f"side {names[0]}"
        reason = docs[names[0]]["outcomes"][nodeid]["message"].removeprefix("Skipped: ")
        notes.append(f"{nodeid}: skipped on {where} ({reason}); left out")
    a, b = docs["A"]["records"], docs["B"]["records"]
    for nodeid in docs["A"]["selected"]:
        if nodeid in a and nodeid not in b and nodeid not in docs["B"]["selected"]:
            notes.append(f"{nodeid}: side B has no such test; left out")
    for nodeid in docs["B"]["selected"]:
        if nodeid in b and nodeid not in docs["A"]["selected"]:
            notes.append(f"{nodeid}: side A has no such test; left out")
    return notes
