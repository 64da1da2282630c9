"""The CI examples (examples/ci/): the GitHub Actions and GitLab CI jobs' commands, run
here on a repository the test creates, as the CI runner would run them."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import git

CI = Path(__file__).resolve().parent.parent / "examples" / "ci"


def _checkout(tmp: Path) -> Path:
    """A clone whose origin/main is the base and whose HEAD adds an unchanged commit."""
    origin = tmp / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    for r in (origin,):
        git(r, "config", "user.email", "t@example.invalid")
        git(r, "config", "user.name", "t")
    shutil.copy(CI / "Makefile.example", origin / "Makefile")
    (origin / "work.txt").write_text("0.1\n")
    (origin / "examples" / "ci").mkdir(parents=True)
    shutil.copy(CI / "duet.yml", origin / "examples" / "ci" / "duet.yml")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "base")
    clone = tmp / "pr checkout"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    git(clone, "config", "user.email", "t@example.invalid")
    git(clone, "config", "user.name", "t")
    (clone / "README").write_text("a change that does not touch the program\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "docs only")
    return clone


def _github_commands() -> list[str]:
    doc = yaml.safe_load((CI / "github-with-cli.yml").read_text())
    runs = [s["run"] for s in doc["jobs"]["gate"]["steps"] if "run" in s]
    return [r for r in runs if "duet" in r]


def _gitlab_commands() -> list[str]:
    doc = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    return [c for c in doc["perf-gate"]["script"] if not c.startswith("pip ")]


def _history_of(command: str) -> str:
    """The --repo REPO of a `duet gate` command."""
    words = shlex.split(command)
    return words[words.index("--repo") + 1]


def _cache_steps(name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A GitHub workflow's cache restore step, its gate step and its cache save step."""
    steps = yaml.safe_load((CI / name).read_text())["jobs"]["gate"]["steps"]
    (gate,) = [
        s for s in steps if s.get("run", "").startswith("duet gate") or s.get("uses") == "./"
    ]
    at = steps.index(gate)
    (restore,) = [s for s in steps[:at] if s.get("uses", "").startswith("actions/cache/restore@")]
    (save,) = [s for s in steps[at:] if s.get("uses", "").startswith("actions/cache/save@")]
    return restore, gate, save


def _github_cached() -> list[str]:
    return _cache_steps("github-with-cli.yml")[0]["with"]["path"].split()


def _gitlab_cached() -> list[str]:
    return [
        str(p).rstrip("/")
        for p in yaml.safe_load((CI / "gitlab-ci.yml").read_text())["perf-gate"]["cache"]["paths"]
    ]


def test_the_ci_jobs_cache_the_repository_their_gate_adds_to() -> None:
    """What the gate reads and adds to is what the job keeps between runs: the SQLite file
    and the tables beside it (docs/history.md, "The repository"). GitHub's cache restores
    and saves them (also after a failed gate) under one key per run that the restore's
    prefix finds; GitLab caches them, also after a failed gate."""
    for name in ("github-with-cli.yml", "github-with-action.yml"):
        restore, gate, save = _cache_steps(name)
        history = gate["with"]["history"] if "with" in gate else _history_of(gate["run"])
        paths = restore["with"]["path"].split()
        assert paths == save["with"]["path"].split() == [history, f"{history}-tables"], name
        assert restore["with"]["key"] == save["with"]["key"]
        assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])
        assert save["if"] == "always()"
    job = yaml.safe_load((CI / "gitlab-ci.yml").read_text())["perf-gate"]
    (gate_command,) = [c for c in job["script"] if c.startswith("duet gate")]
    history = _history_of(gate_command)
    assert _gitlab_cached() == [history, f"{history}-tables"]
    assert job["cache"]["when"] == "always"


@pytest.mark.parametrize(
    ("commands", "cached"),
    [(_github_commands, _github_cached), (_gitlab_commands, _gitlab_cached)],
    ids=["github", "gitlab"],
)
def test_the_ci_jobs_commands_gate_a_pull_request(tmp_path: Path, commands, cached) -> None:  # type: ignore[no-untyped-def]
    if shutil.which("make") is None:
        pytest.fail("make is needed by the CI examples")
    clone = _checkout(tmp_path)
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(summary),
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "GITHUB_BASE_REF": "main",
    }
    cmds = commands()
    assert any(c.startswith("duet gate") for c in cmds)
    for cmd in cmds:
        local = re.sub(r"^duet ", f"{sys.executable} -m duetbench ", cmd)
        p = subprocess.run(
            ["/bin/sh", "-c", local], cwd=clone, env=env, capture_output=True, text=True
        )
        if not cmd.startswith("duet gate"):
            assert p.returncode == 0, p.stderr
            continue
        # an unchanged program: no regression, or (on a very busy machine) inconclusive
        assert p.returncode in (0, 3), p.stdout + p.stderr
        assert "duet gate: HEAD" in p.stdout and "REGRESSION" not in p.stdout
        assert (clone / "results").is_dir()
    assert "duet gate" in summary.read_text()
    # the next job: a fresh checkout with only what the job caches restored; its gate
    # starts from the spread the first measured on this machine (at most 10 runs here,
    # to bound the test)
    (tmp_path / "next job").mkdir()
    job = _checkout(tmp_path / "next job")
    for path in cached():
        src, dst = clone / path, job / path
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    (gate,) = [c for c in cmds if c.startswith("duet gate")]
    local = re.sub(r"^duet ", f"{sys.executable} -m duetbench ", gate) + " --max-runs 10"
    p = subprocess.run(["/bin/sh", "-c", local], cwd=job, env=env, capture_output=True, text=True)
    assert p.returncode in (0, 3), p.stdout + p.stderr
    (second,) = (job / "results").iterdir()
    stops = json.loads((second / "stops.json").read_text())
    assert stops["history"]["repository"].endswith(_history_of(gate))
    entry = stops["stops"]["bench/aduet"]
    assert entry["priors"]["bench"]["experiments"] == 1
    assert entry["decisions"]["bench"]["prior_used"] in (True, False)  # False: dropped
    assert "bench (aduet): used -- the spread of 1 earlier" in p.stdout or (
        "bench (aduet): dropped by the check" in p.stdout
    ), p.stdout
    assert "Priors from" in summary.read_text()
    assert git(clone, "worktree", "list").count("\n") == 0
    assert git(job, "worktree", "list").count("\n") == 0
