"""`duet gate` and `duet bisect` with `harness: python` benchmarks (each side in its own
tree's interpreter and code), and gates whose every run failed: an error naming the
cause, never "inconclusive" (docs/history.md, "Gate")."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from duetbench.ci.bisect import _candidate_only
from duetbench.ci.gate import RunsFailed, micro_side_in_tree
from duetbench.config.model import MicroSide
from duetbench.micro.api import MicroError
from helpers import git, new_git_repo

WORK = """def work():
    s = 0
    for i in range({n}):
        s += i * i
    return s
"""

PY_CONFIG = """experiment:
  name: py
  repetitions: {sduet: 1}     # samples in lockstep, as duet micro does by default
benchmarks:
  work:
    harness: python
    target: work:work          # work.py of each tree: the tree is first on sys.path
    python: .venv/bin/python   # each tree's own venv, made by --build
    time_budget: 0.05s
"""


def make_repo(tmp: Path, config: str, files: list[dict[str, str]]) -> Path:
    """A repository (path with a space) with ``config`` and one commit per entry of
    ``files`` (file name -> text), tagged c0, c1, ..."""
    repo = tmp / "my repo"
    new_git_repo(repo)
    (repo / "duet.yml").write_text(config)
    for i, commit in enumerate(files):
        for name, text in commit.items():
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
        git(repo, "tag", f"c{i}")
    return repo


def duet(cwd: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "GITHUB_STEP_SUMMARY": ""},
    )


def test_python_sides_are_taken_inside_their_tree(tmp_path: Path) -> None:
    tree = tmp_path / "a tree"
    (tree / "benches").mkdir(parents=True)
    (tree / "benches" / "b.py").write_text("def f(): pass\n")
    side = MicroSide(python=".venv/bin/python", target="benches/b.py:f", paths=("src",))
    got = micro_side_in_tree(side, tree)
    assert got.python == str(tree / ".venv" / "bin" / "python")
    assert got.target == f"{tree / 'benches' / 'b.py'}:f"
    assert got.paths == (str(tree / "src"),)
    # no paths: the tree itself; a name without "/" is looked up on PATH; a module target
    # and an absolute interpreter stay as they are; {tree} is replaced everywhere
    plain = micro_side_in_tree(MicroSide(python="python3", target="work:f"), tree)
    assert (plain.python, plain.target, plain.paths) == ("python3", "work:f", (str(tree),))
    fixed = micro_side_in_tree(
        MicroSide(python=sys.executable, target="m:f", paths=("{tree}/lib",)), tree
    )
    assert fixed.python == sys.executable and fixed.paths == (str(tree / "lib"),)


def test_a_python_benchmark_gate_runs_each_tree_and_says_slower(tmp_path: Path) -> None:
    # B does three times the work: slower by far more than any load on this machine
    repo = make_repo(
        tmp_path,
        PY_CONFIG,
        [{"work.py": WORK.format(n=20_000)}, {"work.py": WORK.format(n=60_000)}],
    )
    out = tmp_path / "results"
    build = f"{sys.executable} -m venv --without-pip .venv"
    p = duet(repo, "gate", "--base", "c0", "--head", "c1", "--build", build, "duet.yml",
             "-o", out, "--max-runs", "16", "--threshold", "10%")  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    assert "REGRESSION" in p.stdout and "slower" in p.stdout
    # each side ran its own tree's venv with its own tree first on sys.path
    (root,) = out.iterdir()
    run = json.loads(next((root / "runs").glob("*/run.json")).read_text())
    commands = {s["pair"]: s["command"] for s in run["spec"]["sides"]}
    for pair, tree in (("A", "base"), ("B", "head")):
        argv = shlex.split(commands[pair])
        assert argv[0].endswith(f"/{tree}/.venv/bin/python")
        assert argv[argv.index("--path") + 1].endswith(f"/{tree}")
    assert git(repo, "worktree", "list").count("\n") == 0


def test_a_gate_whose_every_run_failed_is_an_error_naming_the_cause(tmp_path: Path) -> None:
    config = """experiment:
  name: broken
  repetitions: {aduet: 1}
benchmarks:
  tool:
    iterations: 2
    command: "echo 'cannot open data.bin' >&2; exit 3"
"""
    repo = make_repo(tmp_path, config, [{"a.txt": "a"}, {"a.txt": "b"}])
    p = duet(repo, "gate", "--base", "c0", "--head", "c1", "duet.yml",
             "-o", tmp_path / "r", "--max-runs", "50")  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    assert "every run of benchmark 'tool' (aduet) failed -- 3 of 3" in p.stderr
    # it stopped after 3 failed runs, not after max_runs, and kept them
    (root,) = (tmp_path / "r").iterdir()
    assert len(list((root / "runs").iterdir())) == 3 and str(root) in p.stderr
    assert "exited with 3" in p.stderr and "cannot open data.bin" in p.stderr
    assert "Traceback" not in p.stderr and "inconclusive" not in p.stdout + p.stderr
    assert git(repo, "worktree", "list").count("\n") == 0


def test_a_python_target_that_does_not_import_in_head_is_an_error(tmp_path: Path) -> None:
    config = PY_CONFIG.replace("python: .venv/bin/python", f"python: {sys.executable}")
    repo = make_repo(
        tmp_path,
        config,
        [{"work.py": WORK.format(n=1000)}, {"work.py": "import no_such_module_here\n"}],
    )
    p = duet(repo, "gate", "--base", "c0", "--head", "c1", "duet.yml", "-o", tmp_path / "r")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "side B" in p.stderr and "no_such_module_here" in p.stderr
    assert "Traceback" not in p.stderr


def test_bisect_stops_with_an_error_when_the_good_tree_does_not_run(tmp_path: Path) -> None:
    config = """experiment:
  name: bis
  repetitions: {aduet: 1}
benchmarks:
  tool:
    iterations: 2
    command: "sh ./run.sh"
"""
    good = "echo 'missing input' >&2; exit 5\n"
    repo = make_repo(tmp_path, config, [{"run.sh": good}, {"a": "1"}, {"a": "2"}])
    p = duet(repo, "bisect", "--good", "c0", "--bad", "c2", "duet.yml",
             "-o", tmp_path / "r", "--max-runs", "3")  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    assert "known-good revision 'c0' does not run" in p.stderr
    assert "missing input" in p.stderr and "Traceback" not in p.stderr


def test_bisect_skips_a_candidate_only_when_its_own_side_failed() -> None:
    # side B is the candidate: skipped as a failed build is; side A is the known-good
    # tree, whose failure every step would repeat: an error
    assert _candidate_only(RunsFailed("x", frozenset({"B"})))
    assert not _candidate_only(RunsFailed("x", frozenset({"A", "B"})))
    assert not _candidate_only(RunsFailed("x", frozenset({"A"})))
    b, a, unknown = MicroError("b"), MicroError("a"), MicroError("?")
    b.side, a.side = "B", "A"
    assert _candidate_only(b) and not _candidate_only(a) and not _candidate_only(unknown)
