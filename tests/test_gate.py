"""`duet gate` on a git repository the test creates: a workload whose work is a
constant in a file (a sleep, so the answer does not depend on this machine's load),
built by a command, compared base against head (docs/history.md, "Gate")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git, new_git_repo

CONFIG = """experiment:
  name: gate
  repetitions: {aduet: 1}
benchmarks:
  work:
    iterations: 10
    command: "sleep $(cat build/work.txt)"
"""


def make_repo(tmp: Path, ms: list[float]) -> Path:
    """One commit per entry of ``ms`` (the workload's milliseconds: a sleep read from work.txt)."""
    repo = tmp / "my repo"
    new_git_repo(repo)
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


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (OSError, IndexError):
        return False


def _start_gate(repo: Path, tmp: Path, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "duetbench",
            "gate",
            "--base",
            "c0",
            "--head",
            "c1",
            *map(str, args),
        ],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    import time

    deadline = time.monotonic() + 120  # only catches a hang
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("phase", "sig"),
    [
        ("checkout", signal.SIGTERM),
        ("build", signal.SIGTERM),
        ("build", signal.SIGHUP),
        ("measure", signal.SIGTERM),
        ("measure", signal.SIGHUP),
    ],
    ids=lambda x: getattr(x, "name", x),
)
def test_a_signal_in_any_phase_leaves_no_worktree_directory_or_process(
    tmp_path: Path, phase: str, sig: signal.Signals
) -> None:
    """CI cancels a job with SIGTERM: the gate ends as on Ctrl-C (exit 130), its worktrees
    unregistered, its temporary directory gone, the command it was in (a git hook, the
    build, a benchmark) stopped."""
    import time

    repo = make_repo(tmp_path, [5.0, 5.0])
    tmp, marker, pids = tmp_path / "tmp", tmp_path / "reached", tmp_path / "pids"
    tmp.mkdir()
    blocker = f"echo $$ >> '{pids}'; touch '{marker}'; exec sleep 600"
    if phase == "checkout":  # git runs the post-checkout hook inside `git worktree add`
        hook = repo / ".git" / "hooks" / "post-checkout"
        hook.write_text(f"#!/bin/sh\n{blocker}\n")
        hook.chmod(0o755)
    config = tmp_path / "block.yml"
    command = blocker if phase == "measure" else "sleep $(cat build/work.txt)"
    config.write_text(CONFIG.replace('"sleep $(cat build/work.txt)"', repr(command)))
    build = blocker if phase == "build" else BUILD
    proc = _start_gate(repo, tmp, "--build", build, config, "-o", tmp_path / "r")
    try:
        _wait_for(marker, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert git(repo, "worktree", "list").count("\n") == 0, git(repo, "worktree", "list")
    assert list(tmp.iterdir()) == []
    started = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in started if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert left == [], f"{phase}: {left} outlived the gate"


def test_a_killed_gates_leftovers_are_removed_by_the_next_gate(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, [5.0, 5.0])
    tmp, marker = tmp_path / "tmp", tmp_path / "building"
    tmp.mkdir()
    proc = _start_gate(repo, tmp, "--build", f"touch '{marker}'; sleep 600", "duet.yml")
    _wait_for(marker, proc)
    proc.kill()  # SIGKILL: nothing can clean up
    proc.communicate()
    assert git(repo, "worktree", "list").count("\n") == 2
    (left,) = tmp.iterdir()
    assert left.name.startswith("duet-trees-")
    again = _start_gate(repo, tmp, "--build", "exit 3", "duet.yml")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 2 and "exited with 3" in err, err
    assert git(repo, "worktree", "list").count("\n") == 0
    assert list(tmp.iterdir()) == []


def test_build_timeout_and_bad_revisions(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, [5.0, 5.0])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    slow = _start_gate(repo, tmp, "--build", "sleep 600", "--build-timeout", "1s", "duet.yml")
    _, err = slow.communicate(timeout=120)
    assert slow.returncode == 2 and "did not finish within 1 s" in err, err
    assert git(repo, "worktree", "list").count("\n") == 0 and list(tmp.iterdir()) == []
    for command in ("gate", "bisect"):
        for bad in ("0", "-5", "nan", "soon"):
            extra = ("--good", "c0", "--bad", "c1") if command == "bisect" else ()
            p = duet(repo, command, *extra, "--build-timeout", bad, "duet.yml")
            assert p.returncode == 2 and "--build-timeout" in p.stderr, (command, bad, p.stderr)
            assert "Traceback" not in p.stderr
    same = duet(repo, "bisect", "--good", "c1", "--bad", "c1", "duet.yml")
    assert same.returncode == 2 and "are the same commit" in same.stderr, same.stderr


def test_uncommitted_changes_are_named_not_silently_left_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, [5.0, 5.0])
    clean = duet(repo, "gate", "--base", "c0", "--build", "exit 3", "duet.yml")
    assert clean.returncode == 2 and "uncommitted" not in clean.stderr
    (repo / "work.txt").write_text("0.5\n")  # a change not committed
    dirty = duet(repo, "gate", "--base", "c0", "--build", "exit 3", "duet.yml")
    assert dirty.returncode == 2 and "uncommitted changes (e.g. work.txt)" in dirty.stderr
    assert git(repo, "rev-parse", "HEAD")[:10] in dirty.stderr


SHORT = """experiment:
  name: gate
  repetitions: {aduet: 1}
benchmarks:
  work:
    iterations: 3
    command: "sleep $(cat build/work.txt)"
"""


def test_bisect_extends_an_inconclusive_candidate_instead_of_skipping_it(tmp_path: Path) -> None:
    # c0 at 50 ms, c1 .. c3 at 65 ms. At --max-runs 4 every comparison ends inconclusive
    # (the confidence sequence first looks at 5 runs): the candidate that splits the
    # range, c1, is measured again and judged on the runs of both comparisons, never
    # skipped (slower candidates only: an equivalent one takes many runs on a busy machine)
    repo = make_repo(tmp_path, [50.0] + [65.0] * 3)
    (repo / "duet.yml").write_text(SHORT)
    p = duet(
        repo,
        "bisect",
        "--good",
        "c0",
        "--bad",
        "c3",
        "--build",
        BUILD,
        "duet.yml",
        "-o",
        tmp_path / "r",
        "--max-runs",
        "4",
        "--threshold",
        "10%",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    c1 = git(repo, "rev-parse", "c1")
    assert f"first bad commit: {c1}" in p.stdout
    assert " skip " not in p.stdout
    step = p.stdout.splitlines()[0]
    assert step.startswith(f"{c1[:10]} bad  slower +") and " comparisons)" in step, p.stdout
    # every comparison of the candidates is kept, the extensions named -more1, ...
    assert any(d.name.endswith("-more1") for d in (tmp_path / "r").iterdir())


def test_a_bisect_whose_budget_ends_prints_the_range_left_with_its_evidence(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, [50.0] * 2 + [65.0] * 3)
    (repo / "duet.yml").write_text(SHORT)
    p = duet(
        repo,
        "bisect",
        "--good",
        "c0",
        "--bad",
        "c4",
        "--build",
        BUILD,
        "duet.yml",
        "-o",
        tmp_path / "r",
        "--max-runs",
        "5",
        "--threshold",
        "10%",
        "--total-budget",
        "1s",  # over after the first comparison, of c2 (5 runs)
    )
    assert p.returncode == 3, p.stdout + p.stderr
    out = p.stdout
    commits = [git(repo, "rev-parse", f"c{i}") for i in range(1, 5)]
    evidence = out.split("evidence, against the good build")[1]
    # the one candidate measured, with its verdict and interval: c2 is slower (the range
    # left is c1..c2), or on a machine too busy for 5 runs to decide, inconclusive
    (line,) = [x for x in evidence.splitlines() if x.startswith(commits[1][:10])]
    assert "[" in line and "%" in line and "(5 runs)" in line, out
    left = commits[:2] if " bad  slower " in line else commits
    assert "skip inconclusive" in line or left == commits[:2], out
    head = f"the first bad commit is one of these {len(left)} (the --total-budget ended; never"
    assert head in out
    listed = out.split(head)[1].split("evidence")[0]
    assert [x.strip() for x in listed.splitlines()[1:] if x.strip()] == left
    assert "(--bad) not measured" in evidence
    assert "Traceback" not in p.stderr
    assert git(repo, "worktree", "list").count("\n") == 0
