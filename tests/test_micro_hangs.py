"""`duet micro` and functions that never return: listing and calibration are bounded by
the budget and stopped by the hang detection with a message naming the function; a
signal that ends duet (SIGTERM, SIGHUP, SIGINT) ends its worker too, in every phase; a
`--samples` far beyond the budget is refused before any run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import HANG_S, run_duet

from duetbench.micro.api import MicroError, calibrate, discover
from duetbench.micro.request import SETUP_MIN_S, MicroRequest

HANGS = '''
import os, signal, sys, time

def _mark():
    marker = os.environ.get("HANG_MARKER")
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\\n")

if os.environ.get("HANG_AT") == "import" and "--list" in sys.argv:
    _mark()
    time.sleep(10_000)

def spin():
    _mark()
    while True:
        pass

def sleepy():
    _mark()
    time.sleep(10_000)

def stopped():
    _mark()
    os.kill(os.getpid(), signal.SIGSTOP)

def later():
    """Quick while listed and calibrated; in a run (DUET_OUTPUT_DIR set) it never returns."""
    if os.environ.get("DUET_OUTPUT_DIR") and os.environ.get("HANG_AT") == "run":
        _mark()
        while True:
            pass
    sum(range(50))
'''


@pytest.fixture
def hangs(tmp_path: Path) -> Path:
    d = tmp_path / "hang src"
    d.mkdir()
    (d / "hangs.py").write_text(HANGS)
    return d


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


def _pids(marker: Path) -> list[int]:
    return [int(x) for x in marker.read_text().split()] if marker.exists() else []


def _assert_gone(pids: list[int], what: str) -> None:
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    for p in left:  # never leave them to the next test
        os.kill(p, signal.SIGKILL)
    assert left == [], f"{what}: worker(s) {left} outlived duet"


@pytest.mark.parametrize(
    ("function", "why"),
    [("spin", "did not finish within 6 s"), ("sleepy", "stopped as hung"), ("stopped", "hung")],
)
def test_calibration_is_stopped_and_named(
    hangs: Path, tmp_path: Path, monkeypatch, function: str, why: str
) -> None:
    marker = tmp_path / "pids"
    monkeypatch.setenv("HANG_MARKER", str(marker))
    with pytest.raises(MicroError) as err:
        calibrate(sys.executable, f"hangs:{function}", paths=[hangs], timeout_s=6, idle_s=3)
    assert why in str(err.value) and f"calibrate hangs:{function}" in str(err.value)
    _assert_gone(_pids(marker), function)


def test_a_module_that_hangs_at_import_is_stopped_and_named(
    hangs: Path, tmp_path: Path, monkeypatch
) -> None:
    marker = tmp_path / "pids"
    monkeypatch.setenv("HANG_MARKER", str(marker))
    monkeypatch.setenv("HANG_AT", "import")
    with pytest.raises(MicroError) as err:
        discover(sys.executable, "hangs:spin", paths=[hangs], timeout_s=60, idle_s=3)
    assert "list the benchmarks of hangs:spin" in str(err.value) and "hung" in str(err.value)
    _assert_gone(_pids(marker), "listing")


def test_the_budget_bounds_listing_and_calibration() -> None:
    def request(budget: float) -> MicroRequest:
        return MicroRequest.create(
            target="m:f", asv=None, a_target=None, b_target=None, a_python=None,
            b_python=None, a_paths=None, b_paths=None, budget_s=budget,
        )  # fmt: skip

    assert request(5).setup_timeout_s == SETUP_MIN_S  # a floor: interpreters start slowly
    assert request(1800).setup_timeout_s == 1800


def test_samples_far_beyond_the_budget_are_refused(hangs: Path) -> None:
    r = run_duet(
        "micro", "hangs:later", "--a-path", str(hangs), "--b-path", str(hangs),
        "--samples", "1000000000", "--budget", "5s", "--runs", "2", "-o", str(hangs / "out"),
    )  # fmt: skip
    assert r.returncode == 2 and "far beyond --budget 5 s" in r.stderr, r.stderr
    assert "--samples" in r.stderr and not (hangs / "out").exists()


@pytest.mark.parametrize(
    ("phase", "sig"),
    [
        ("import", signal.SIGTERM),
        ("calibrate", signal.SIGTERM),
        ("calibrate", signal.SIGHUP),
        ("run", signal.SIGTERM),
        ("run", signal.SIGHUP),
    ],
    ids=lambda x: getattr(x, "name", x),
)
def test_a_signal_in_any_phase_ends_the_worker(
    hangs: Path, tmp_path: Path, phase: str, sig: signal.Signals
) -> None:
    marker = tmp_path / "pids"
    function = {"import": "later", "calibrate": "spin", "run": "later"}[phase]
    env = {**os.environ, "HANG_MARKER": str(marker), "HANG_AT": phase}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "duetbench", "micro", f"hangs:{function}",
            "--a-path", str(hangs), "--b-path", str(hangs), "--runs", "2", "--budget", "20s",
            "-o", str(tmp_path / "out"),
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + HANG_S
        while not _pids(marker):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"the {phase} phase was never reached"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err
    _assert_gone(_pids(marker), f"{phase}, {sig.name}")
