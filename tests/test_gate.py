"""`duet gate` on a git repository the test creates: a workload whose work is a
constant in a file (a sleep, so the answer does not depend on this machine's load),
built by a command, compared base against head (docs/history.md, "Gate")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFIG = """experiment:
  name: gate
  repetitions: {aduet: 1}
benchmarks:
  work:
    iterations: 10
    command: "sleep $(cat build/work.txt)"
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(tmp: Path, ms: list[float]) -> Path:
    """One commit per entry of ``ms`` (the workload's milliseconds: a sleep read from work.txt)."""
    repo = tmp / "my repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    (repo / "duet.yml").write_text(CONFIG)
    for i, v in enumerate(ms):
        (repo / "work.txt").write_text(f"{v / 1000}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}: {v} ms")
        git(repo, "tag", f"c{i}")
    return repo


BUILD = "mkdir -p build && cp work.txt build/"


def duet(
    cwd: Path, *args: object, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_gate_exits_1_for_a_slower_head_0_for_an_unchanged_one_and_writes_the_summary(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, [100.0, 110.0, 110.0])
    summary = tmp_path / "summary.md"
    out = tmp_path / "results"
    slower = duet(
        repo,
        "gate",
        "--base",
        "c0",
        "--head",
        "c1",
        "--build",
        BUILD,
        "duet.yml",
        "-o",
        out,
        "--max-runs",
        "30",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert slower.returncode == 1, slower.stdout + slower.stderr
    text = summary.read_text()
    assert "REGRESSION" in text and "slower" in text and "%" in text
    same = duet(
        repo,
        "gate",
        "--base",
        "c1",
        "--head",
        "c2",
        "--build",
        BUILD,
        "duet.yml",
        "-o",
        out,
        "--threshold",
        "5%",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no regression" in summary.read_text() and "equivalent" in summary.read_text()
    # the worktrees are gone and git no longer lists them
    assert git(repo, "worktree", "list").count("\n") == 0
    assert len(list(out.iterdir())) == 2


def test_gate_build_failure_is_a_clear_error_and_leaves_no_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, [5.0, 5.0])
    p = duet(
        repo,
        "gate",
        "--base",
        "c0",
        "--head",
        "c1",
        "--build",
        "echo broken; exit 7",
        "duet.yml",
        "-o",
        tmp_path / "r",
    )
    assert p.returncode == 2 and "exited with 7" in p.stderr and "broken" in p.stderr
    assert "Traceback" not in p.stderr
    assert git(repo, "worktree", "list").count("\n") == 0
    bad = duet(repo, "gate", "--base", "nope", "--head", "c1", "duet.yml", "-o", tmp_path / "r")
    assert bad.returncode == 2 and "'nope' is not a commit" in bad.stderr


def test_bisect_candidates_skip_and_never_guess() -> None:
    from duetbench.ci.bisect import next_candidate

    assert next_candidate(9, -1, 8, set()) == 3
    assert next_candidate(9, 3, 8, {5}) == 4  # the nearest untested, the earlier on a tie
    assert next_candidate(9, 3, 5, {4}) is None


def test_bisect_finds_the_commit_that_made_it_slower(tmp_path: Path) -> None:
    # c0 good ... c4 at 100 ms, c5 .. c7 at 130 ms: c5 is the first bad commit (a large
    # step and threshold, so that the equal commits are settled on a busy machine too)
    repo = make_repo(tmp_path, [100.0] * 5 + [130.0] * 3)
    # the build fails at c3, the first midpoint: it is skipped, never guessed
    build = BUILD + ' && ! git log -1 --format=%s | grep -q "commit 3:"'
    p = duet(
        repo,
        "bisect",
        "--good",
        "c0",
        "--bad",
        "c7",
        "--build",
        build,
        "duet.yml",
        "-o",
        tmp_path / "r",
        "--max-runs",
        "30",
        "--threshold",
        "10%",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    c5 = git(repo, "rev-parse", "c5")
    assert f"first bad commit: {c5}" in p.stdout
    assert "skip build failed" in p.stdout
    assert "slower" in p.stdout.split("first bad commit:")[1]
    assert git(repo, "worktree", "list").count("\n") == 0


def test_gate_interrupted_during_a_build_removes_its_worktrees(tmp_path: Path) -> None:
    import signal
    import time

    repo = make_repo(tmp_path, [5.0, 5.0])
    marker = tmp_path / "building"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "duetbench",
            "gate",
            "--base",
            "c0",
            "--head",
            "c1",
            "--build",
            f"touch '{marker}'; sleep 60",
            "duet.yml",
            "-o",
            str(tmp_path / "r"),
        ],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60  # only catches a hang
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    assert git(repo, "worktree", "list").count("\n") == 2  # base and head are checked out
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert git(repo, "worktree", "list").count("\n") == 0
