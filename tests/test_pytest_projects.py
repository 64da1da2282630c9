"""The pytest plugin on material shaped like real projects (docs/pytest.md, "Real
projects"): two releases unpacked side by side, each with its own pytest.ini or
pyproject.toml and conftest, and the tests in a third folder; a flat-layout git project
whose addopts carry pytest-xdist's ``-n auto``, ``--benchmark-*`` options and
``--doctest-modules``; a src layout with its configuration in setup.cfg; every entry
form (``--duet-a/--duet-b``, ``--duet-against``, ``--duet-a-python``).

The code under test is the known-work package of examples/micro (in v_b, ``p10_*`` does
1.10x the work of v_a's, ``aa_*`` the same), so directions are known on a busy machine
too. Every session runs with ``-W error::ResourceWarning``: duetbench must leave no pipe
or file to the garbage collector (a project's ``filterwarnings = error`` turns that into
errors)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from duetbench.schema import Verdict
from helpers import git, new_git_repo

MICRO = Path(__file__).resolve().parent.parent / "examples" / "micro"

#: a suite with fixtures of every scope (each logs its set-ups per process), a
#: parametrized benchmark(fn), pedantic with its default single round, and a test that
#: is no benchmark
SUITE = """
import os
import knownver
import pytest


def log(what):
    folder = os.environ.get("FIXTURE_LOG")
    if folder:
        with open(os.path.join(folder, str(os.getpid())), "a") as f:
            f.write(what + "\\n")


@pytest.fixture(scope="session")
def steps():
    log("session")
    return dict(knownver.WORK)


@pytest.fixture(scope="module")
def table(steps):
    log("module")
    return sorted(steps)


@pytest.fixture
def known(table):
    log("function")
    return lambda name: getattr(knownver, name)


@pytest.mark.parametrize("variant", ["p10", "aa"])
def test_known(benchmark, known, variant):
    fn = known(f"{variant}_100us")
    assert benchmark(fn) == knownver.spin(fn.steps)


def test_once(benchmark, steps):
    benchmark.pedantic(knownver.x2_5ms)


def test_plain(steps):
    assert steps["aa_5us"] == 100
"""


#: a fixed design, with a budget long enough for it on a loaded machine: the budget's
#: own arithmetic is tests/test_pytest_design.py's
FIXED = ("--duet-runs", "3", "--duet-samples", "30", "--duet-budget", "10m")


def run_pytest(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-m", "pytest", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
    )


def verdicts_of(report: Path) -> dict[str, dict[str, object]]:
    return {str(r["benchmark"]): r for r in json.loads(report.read_text())["rows"]}


def known_tree(folder: Path, version: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(MICRO / version / "knownver.py", folder / "knownver.py")
    return folder


def test_two_releases_side_by_side_with_their_own_configs_and_the_suite_outside_both(
    tmp_path: Path,
) -> None:
    """`pytest suite --duet-a A --duet-b B` from the folder above three: A and B each
    with a configuration of their own (filterwarnings = error, addopts, a conftest that
    would break the session), the tests in neither. Both sides use the rootdir and
    inifile of the folder the user runs from, not a side tree's (and say so); every run
    is one pytest process per side with each fixture set up as its scope says; the
    directory keeps the threshold, so `duet compare` of it later gives the same table."""
    top = tmp_path / "two releases"
    a, b = known_tree(top / "A", "v_a"), known_tree(top / "B", "v_b")
    (a / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\naddopts = -x\n")
    (b / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--strict-markers"\n')
    for tree in (a, b):  # a conftest pytest must not load from a side tree
        (tree / "conftest.py").write_text("raise RuntimeError('a side tree conftest was loaded')\n")
    (top / "suite").mkdir()
    (top / "suite" / "test_known.py").write_text(SUITE)
    logs = tmp_path / "fixture log"
    logs.mkdir()
    report = tmp_path / "verdicts.json"
    done = run_pytest(
        top, "suite", "--duet-a", "A", "--duet-b", "B", *FIXED,
        "--duet-threshold", "3%", "--duet-format", "json", "--duet-report", str(report),
        env={"FIXTURE_LOG": str(logs)},
    )  # fmt: skip
    text = done.stdout + done.stderr
    assert done.returncode in (0, 1), text
    assert "ResourceWarning" not in text and "Traceback" not in text
    for side in "AB":
        assert f"duet: side {side}'s pytest: rootdir {top}, inifile none" in done.stdout
    rows = verdicts_of(report)
    assert set(rows) == {
        "test_known.test_known-p10",
        "test_known.test_known-aa",
        "test_known.test_once",
    }
    p10 = rows["test_known.test_known-p10"]
    assert float(p10["change"]) > 0.03 and p10["verdict"] != Verdict.FASTER.value  # type: ignore[arg-type]
    assert rows["test_known.test_known-aa"]["verdict"] not in (
        Verdict.SLOWER.value,
        Verdict.FASTER.value,
    )
    # x2_5ms does 2x the work in v_b: pedantic's single round is sampled like benchmark(fn)
    assert float(rows["test_known.test_once"]["change"]) > 0.5  # type: ignore[arg-type]
    # fixtures as their scope says, in every side process: one session and one module
    # set-up, one function set-up per test that asks for it (the two test_known)
    per_process = [f.read_text().split() for f in logs.iterdir()]
    assert len(per_process) == 2 + 2 * 3  # the calibration's two, and 3 runs' two
    for lines in per_process:
        assert sorted(lines) == ["function", "function", "module", "session"], lines
    # later, `duet compare` of the directory: the same verdicts (the threshold was kept)
    results = next((top / "results").iterdir())
    later = subprocess.run(
        [sys.executable, "-m", "duetbench", "compare", str(results), "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert later.returncode == 0, later.stderr
    doc = json.loads(later.stdout)
    again = {str(r["benchmark"]): r for r in doc["rows"]}
    assert {k: r["verdict"] for k, r in again.items()} == {k: r["verdict"] for k, r in rows.items()}
    assert doc["settings"]["threshold"] == 0.03


def test_a_flat_git_project_whose_addopts_carry_xdist_against_its_previous_commit(
    tmp_path: Path,
) -> None:
    """A flat layout (the package at the root), pyproject.toml's addopts with ``-n auto``,
    ``--benchmark-disable`` and ``--doctest-modules``: the plugin turns pytest-xdist off
    for the session and its sides (and says so) and runs `--duet-against HEAD~1`."""
    repo = new_git_repo(tmp_path / "flat project")
    (repo / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'addopts = "-n auto --benchmark-disable --doctest-modules -p no:cacheprovider"\n'
        'testpaths = ["tests"]\n'
    )
    (repo / "tests").mkdir()
    (repo / "tests" / "test_known.py").write_text(SUITE)
    for version in ("v_a", "v_b"):
        known_tree(repo, version)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", version)
    report = tmp_path / "v.json"
    done = run_pytest(
        repo, "tests", "-k", "once", "--duet-against", "HEAD~1", "--duet-path", ".", *FIXED,
        "--duet-format", "json", "--duet-report", str(report),
    )  # fmt: skip
    text = done.stdout + done.stderr
    assert done.returncode == 0, text
    assert "pytest-xdist's -n/--dist is off for this session" in done.stdout
    (row,) = verdicts_of(report).values()
    assert row["benchmark"] == "test_known.test_once" and float(row["change"]) > 0.5  # type: ignore[arg-type]
    listed = git(repo, "worktree", "list")
    assert len(listed.splitlines()) == 1  # the worktree of HEAD~1 is gone


def test_a_src_layout_configured_in_setup_cfg_with_another_interpreter(tmp_path: Path) -> None:
    """A src layout configured in setup.cfg, the old release unpacked next to it, side A
    given its interpreter by a path with a space (``--duet-a-python``)."""
    project = tmp_path / "src project"
    known_tree(project / "src", "v_b")
    old = known_tree(tmp_path / "old release" / "src", "v_a")
    (project / "setup.cfg").write_text("[tool:pytest]\naddopts = -p no:cacheprovider\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_known.py").write_text(SUITE)
    python = tmp_path / "my python" / "python3"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    report = tmp_path / "v.json"
    done = run_pytest(
        project, "tests/test_known.py", "-k", "known", "--duet-a", str(old), "--duet-b", "src",
        "--duet-a-python", str(python), *FIXED, "--duet-format", "json",
        "--duet-report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"inifile {project / 'setup.cfg'}" in done.stdout
    rows = verdicts_of(report)
    assert float(rows["test_known.test_known-p10"]["change"]) > 0.03  # type: ignore[arg-type]
    results = next((project / "results").iterdir())
    run = next((results / "runs").glob("tests.sduet.*"))
    meta = json.loads((run / "A" / "t000" / "micro-meta.json").read_text())
    assert meta["paths"] == [str(old)]


def test_a_test_failing_in_one_run_fails_that_run_only(tmp_path: Path) -> None:
    """A test that passes the calibration and fails on side B of one run (a flaky test):
    that run is failed with the test and its exception, both sides leave the lockstep
    at once, the other runs give the verdicts, exit status 1 (some runs failed)."""
    top = tmp_path / "flaky"
    known_tree(top / "A", "v_a")
    known_tree(top / "B", "v_b")
    (top / "suite").mkdir()
    (top / "suite" / "test_flaky.py").write_text(
        "import os\nimport knownver\n\n"
        "def test_first(benchmark):\n    benchmark(knownver.aa_100us)\n\n"
        "def test_flaky(benchmark):\n"
        "    if os.environ.get('DUET_PAIR') == 'B' and os.environ.get('DUET_REP') == '1':\n"
        "        raise RuntimeError('flaky on the second run')\n"
        "    benchmark(knownver.p10_100us)\n\n"
        "def test_last(benchmark):\n    benchmark(knownver.aa_5us)\n"
    )
    report = tmp_path / "v.json"
    done = run_pytest(
        top, "suite", "--duet-a", "A", "--duet-b", "B", "--duet-runs", "4", "--duet-samples",
        "20", "--duet-budget", "10m", "--duet-format", "json", "--duet-report", str(report),
    )  # fmt: skip
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "some runs failed" in done.stdout and "Traceback" not in done.stdout
    results = next((top / "results").iterdir())
    record = json.loads((results / "runs" / "tests.sduet.001" / "run.json").read_text())
    assert record["status"] == "failed"
    assert "flaky on the second run" in record["message"]
    rows = verdicts_of(report)
    assert {r["runs"] for r in rows.values()} == {3}
