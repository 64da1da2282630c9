from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_duet(
    *args: str, cwd: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env or {})
    e.setdefault("COLUMNS", "200")
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
    )


# Timing in tests (docs: DEVELOPERS.md, "Tests on a busy machine"). CI runs on shared
# machines, so no test asserts how fast anything was: synchronization is judged by the
# order of events (an iteration starts only after the other side ended the one before),
# and every wait has a deadline that only catches a hang -- far longer than anything
# healthy takes on a 2-core machine whose cores are both kept busy. How close the starts
# of a sduet lie, in ms, is measured by benchmarks/sync_alignment.py.
HANG_S = 120.0


def wait_until(cond: Callable[[], object], what: str, timeout: float = HANG_S) -> None:
    """Poll ``cond`` until it is true; fail naming ``what`` if it never is (a hang)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:g} s")
        time.sleep(0.02)


def require_tool(name: str, install: str) -> str:
    """The path of system tool ``name``; a failure (never a skip) naming how to install it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: {install}")
    return path


SETUP_HINT = "scripts/setup-system.sh installs it"


def lockstep_violations(
    a_start: Sequence[int],
    a_end: Sequence[int],
    b_start: Sequence[int],
    b_end: Sequence[int],
    slack_ns: int = 0,
) -> list[tuple[str, int]]:
    """Where the two sides were *not* in lockstep: ``(side, k)`` when that side started
    iteration k+1 before the other side had ended iteration k.

    A sduet guarantees none (the go for k+1 needs both sides' ready, which each sends
    after ending k); two unsynchronized sides of different work per iteration show
    many. ``slack_ns`` absorbs clock resolution (a harness that reads microseconds).
    """
    out = []
    for name, starts, ends in (("A", a_start, b_end), ("B", b_start, a_end)):
        xs, ye = [int(x) for x in starts], [int(y) for y in ends]  # by position
        for k in range(min(len(xs), len(ye)) - 1):
            if xs[k + 1] < ye[k] - slack_ns:
                out.append((name, k))
    return out


def print_start_gaps(gaps_ns: Sequence[float], label: str) -> None:
    """Report (never judge) how far apart the sides' iteration starts were."""
    diffs = [abs(g) for g in gaps_ns]
    print(
        f"\n{label}: |start_A - start_B| median {statistics.median(diffs) / 1e3:.0f} us, "
        f"max {max(diffs) / 1e3:.0f} us"
    )


HOLD_SCRIPT = """import os, sys, time
counter, hold, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(counter, "a") as f:  # one short O_APPEND write: atomic between the sides
    f.write("x\\n")
with open(counter) as f:
    n = sum(1 for _ in f)
while n > limit and os.path.exists(hold):
    time.sleep(0.02)
"""


@dataclass(frozen=True)
class Hold:
    """A benchmark command that counts its calls and, while ``hold`` exists, blocks in
    every call after the first ``limit``: a run is then *in progress* at a known point
    for as long as the test needs, whatever the machine's speed. ``token`` is on its
    command line (see :func:`pids_with`)."""

    command: str
    counter: Path
    hold: Path

    def calls(self) -> int:
        return len(self.counter.read_text().splitlines()) if self.counter.exists() else 0

    def release(self) -> None:
        self.hold.unlink(missing_ok=True)


def make_hold(directory: Path, limit: int, token: str, python: str = "python3") -> Hold:
    script = directory / "hold.py"
    script.write_text(HOLD_SCRIPT)
    counter, hold = directory / "calls.txt", directory / "hold"
    hold.touch()
    return Hold(f"{python} {script} {counter} {hold} {limit} {token}", counter, hold)


def pids_with(token: str) -> list[int]:
    """Live processes whose command line contains ``token`` (zombies excluded)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if token in cmd and ") Z " not in stat and int(d.name) != os.getpid():
            found.append(int(d.name))
    return found


@pytest.fixture
def write_config(tmp_path: Path):
    def write(text: str, name: str = "duet.yml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p

    return write


def pytest_configure(config):
    """A shell starts background jobs (`pytest &`, a CI step's `cmd &`) with SIGINT
    ignored, and an ignored signal stays ignored across exec: every `duet run` and
    noisy neighbour a test starts would then ignore the Ctrl-C the test sends it, and
    wait for its deadline. A *handled* signal is reset to the default in a child, so
    handle it here as an interactive Python does."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session, exitstatus):
    """In CI a skipped test is a failure: container, browser and noise tests must really run there."""
    if not os.environ.get("CI"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        names = ", ".join(getattr(r, "nodeid", "?") for r in skipped[:10])
        if reporter:
            reporter.write_line(
                f"CI: {len(skipped)} test(s) were skipped ({names}); in CI nothing may be skipped"
            )
        session.exitstatus = 1


@pytest.fixture(scope="session")
def quickstart_results(tmp_path_factory) -> Path:
    """The bundled quickstart example, run once per test session (about a minute)."""
    out = tmp_path_factory.mktemp("quickstart")
    r = run_duet(
        "run",
        str(ROOT / "examples" / "quickstart" / "duet.yml"),
        "-o",
        str(out),
        "--no-compare",
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return out / "quickstart"
