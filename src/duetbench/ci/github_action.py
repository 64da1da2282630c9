"""The steps of the GitHub Action (``action.yml`` at the repository root; docs/history.md,
"The GitHub Action").

``python -m duetbench.ci.github_action gate|comment|finish`` runs one step. Each reads
what it needs from the environment -- the action's inputs as ``DUET_ACTION_*`` variables
(``action.yml`` maps them; a composite action gets no ``INPUT_*`` variables), GitHub's
own (``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_EVENT_PATH``, ...) -- and so
runs the same on a runner and in a test with a fake GitHub environment:

- ``gate`` runs ``duet gate`` (base and head default from the pull request), keeps its
  Markdown summary (``duet gate`` appends it to the step summary itself; an error is
  appended here), and writes the outputs ``outcome`` (ok, regression, inconclusive or
  error), ``exit-code``, ``results`` and ``summary``. It always exits 0, so the comment
  and the upload run; ``finish`` fails the job.
- ``comment`` creates or edits **one** pull request comment with ``gh api``: the one
  whose body holds the hidden marker ``<!-- duet-gate-action: KEY -->`` (KEY: the
  ``comment-key`` input, default the config path), so a re-run edits it instead of
  adding another. A token that may not comment (a pull request from a fork) gives a
  warning, never a failed job.
- ``finish`` exits 1 when the outcome is one of ``fail-on`` (default ``regression,error``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_atomic
from ..errors import DuetError, ExitCode
from ..schema import Verdict

__all__ = [
    "OUTCOMES",
    "ActionError",
    "comment_marker",
    "find_comment",
    "gate_argv",
    "main",
    "outcome_of",
    "upsert_comment",
    "write_outputs",
]

#: exit status of `duet gate` -> the action's `outcome` output
OUTCOMES = {
    ExitCode.OK: "ok",
    ExitCode.REGRESSION: "regression",
    ExitCode.INCONCLUSIVE: Verdict.INCONCLUSIVE.value,
}
FAIL_ON_DEFAULT = "regression,error"
#: GitHub refuses comment bodies longer than 65536 characters
MAX_COMMENT = 60_000
SUMMARY_FILE = "duet-gate-summary.md"
PREFIX = "DUET_ACTION_"


class ActionError(DuetError):
    """An input of the action that cannot be used, or a GitHub environment that is missing."""


def _input(env: Mapping[str, str], name: str, default: str = "") -> str:
    return env.get(PREFIX + name.upper().replace("-", "_"), "").strip() or default


def outcome_of(status: int) -> str:
    """The `outcome` output of an exit status of `duet gate`."""
    return OUTCOMES.get(status, "error")  # type: ignore[call-overload]


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _pull_request(env: Mapping[str, str]) -> dict[str, Any]:
    pr = _event(env).get("pull_request")
    return pr if isinstance(pr, dict) else {}


def default_base(env: Mapping[str, str]) -> str:
    """The base revision: the ``base`` input, else the pull request's base commit, else
    ``origin/$GITHUB_BASE_REF``."""
    given = _input(env, "base")
    if given:
        return given
    base = _pull_request(env).get("base")
    sha = base.get("sha") if isinstance(base, dict) else None
    if isinstance(sha, str) and sha:
        return sha
    ref = env.get("GITHUB_BASE_REF", "").strip()
    if ref:
        return f"origin/{ref}"
    raise ActionError(
        "no base revision: this is not a pull request event; give the action `base:` "
        "(e.g. base: origin/main)"
    )


def gate_argv(env: Mapping[str, str], python: str = sys.executable) -> list[str]:
    """The `duet gate` command of the action's inputs."""
    config = _input(env, "config")
    if not config:
        raise ActionError("the action needs `config:`, the duet.yml to gate on")
    argv = [python, "-m", "duetbench", "gate", "--base", default_base(env)]
    argv += ["--head", _input(env, "head", "HEAD"), "-o", _input(env, "results", "duet-results")]
    for name, flag in (
        ("build", "--build"),
        ("threshold", "--threshold"),
        ("budget", "--budget"),
        ("history", "--repo"),  # the input keeps its name: workflows set `history:`
    ):
        value = _input(env, name)
        if value:
            argv += [flag, value]
    return [*argv, config]


def write_outputs(env: Mapping[str, str], values: Mapping[str, str]) -> None:
    """Append step outputs to ``$GITHUB_OUTPUT`` (a random delimiter per value, so no value
    can write another output)."""
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            delimiter = f"duet_{uuid.uuid4().hex}"
            f.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_gate(env: Mapping[str, str]) -> int:
    """The ``gate`` step: run `duet gate`, write the summary file and the outputs."""
    results = Path(_input(env, "results", "duet-results")).resolve()
    summary = results / SUMMARY_FILE
    try:
        argv = gate_argv(env)
    except ActionError as exc:
        status, stdout, stderr = int(ExitCode.USAGE), "", f"duet gate action: {exc}\n"
    else:
        print("+ " + " ".join(argv[2:]), flush=True)
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(env))
        status, stdout, stderr = done.returncode, done.stdout, done.stderr
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    outcome = outcome_of(status)
    lines = [ln for ln in stdout.splitlines() if not ln.startswith("results: ")]
    markdown = "\n".join(lines).strip() + "\n"
    if outcome == "error":
        markdown = (
            f"## duet gate: error (exit status {status})\n\nThe gate did not measure; "
            f"its messages:\n\n```\n{_tail(stderr or stdout)}\n```\n"
        )
        _append(env.get("GITHUB_STEP_SUMMARY"), markdown)
    results.mkdir(parents=True, exist_ok=True)
    write_atomic(summary, markdown)
    write_outputs(
        env,
        {
            "outcome": outcome,
            "exit-code": str(status),
            "results": str(results),
            "summary": str(summary),
        },
    )
    return 0


def comment_marker(key: str) -> str:
    """The hidden first line of the action's comment (``--`` cannot end it early)."""
    return f"<!-- duet-gate-action: {key.replace('--', '- -')} -->"


@dataclass(frozen=True)
class Gh:
    """``gh api`` calls; ``gh``: the command (a fake one in tests)."""

    env: Mapping[str, str]
    gh: str = "gh"

    def api(self, *args: str, body: Mapping[str, Any] | None = None) -> str:
        with tempfile.TemporaryDirectory(prefix="duet-gh-") as tmp:
            argv = [self.gh, "api", *args]
            if body is not None:
                payload = Path(tmp) / "body.json"
                payload.write_text(json.dumps(body), encoding="utf-8")
                argv += ["--input", str(payload)]
            done = subprocess.run(argv, capture_output=True, text=True, env=dict(self.env))
        if done.returncode != 0:
            raise ActionError(f"gh {' '.join(args[:3])} failed: {_tail(done.stderr, 5)}")
        return done.stdout


def _json_values(text: str) -> list[Any]:
    """The JSON documents of ``gh api --paginate`` (one array per page, back to back)."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        value, i = decoder.raw_decode(text, i)
        out.append(value)
    return out


def find_comment(comments: Sequence[Any], marker: str) -> dict[str, Any] | None:
    """The first comment whose body holds ``marker``."""
    for c in comments:
        if isinstance(c, dict) and marker in str(c.get("body") or ""):
            return c
    return None


def upsert_comment(gh: Gh, repo: str, number: int, body: str, marker: str) -> tuple[str, str]:
    """Edit the comment holding ``marker`` on pull request ``number``, or create it:
    (``created`` or ``updated``, its URL)."""
    pages = _json_values(gh.api("--paginate", f"repos/{repo}/issues/{number}/comments"))
    comments = [c for page in pages for c in (page if isinstance(page, list) else [page])]
    text = f"{marker}\n{body}"
    if len(text) > MAX_COMMENT:
        text = text[:MAX_COMMENT] + "\n\n(cut: the whole summary is in the step summary)\n"
    found = find_comment(comments, marker)
    if found is not None:
        doc = gh.api(
            "--method", "PATCH", f"repos/{repo}/issues/comments/{found['id']}", body={"body": text}
        )
        action = "updated"
    else:
        doc = gh.api(
            "--method", "POST", f"repos/{repo}/issues/{number}/comments", body={"body": text}
        )
        action = "created"
    values = _json_values(doc)
    url = values[0].get("html_url", "") if values and isinstance(values[0], dict) else ""
    return action, str(url)


def _pr_number(env: Mapping[str, str]) -> int | None:
    given = _input(env, "pr")
    if given:
        if not given.isdigit():
            raise ActionError(f"pr: {given!r} is not a pull request number")
        return int(given)
    number = _pull_request(env).get("number")
    return number if isinstance(number, int) else None


def run_comment(env: Mapping[str, str]) -> int:
    """The ``comment`` step (see the module doc)."""
    number = _pr_number(env)
    repo = env.get("GITHUB_REPOSITORY", "")
    if number is None or not repo:
        print("::notice::duet gate: not a pull request, no comment written")
        return 0
    summary = Path(_input(env, "summary"))
    if not summary.is_file():
        print(f"::warning::duet gate: no summary at {summary}, no comment written")
        return 0
    body = summary.read_text(encoding="utf-8")
    run_url = ""
    if env.get("GITHUB_SERVER_URL") and env.get("GITHUB_RUN_ID"):
        run_url = f"{env['GITHUB_SERVER_URL']}/{repo}/actions/runs/{env['GITHUB_RUN_ID']}"
        body += f"\n<sub>[workflow run]({run_url}): the results are its artifact.</sub>\n"
    marker = comment_marker(_input(env, "comment-key") or _input(env, "config"))
    try:
        action, url = upsert_comment(Gh(env, _input(env, "gh", "gh")), repo, number, body, marker)
    except (ActionError, OSError, ValueError) as exc:
        print(f"::warning::duet gate: cannot write the pull request comment: {exc}")
        return 0
    print(f"duet gate: comment {action}: {url}")
    write_outputs(env, {"comment-url": url})
    return 0


def run_finish(env: Mapping[str, str]) -> int:
    """The ``finish`` step: exit 1 when the outcome is one of ``fail-on``."""
    outcome = _input(env, "outcome", "error")
    fail_on = {w.strip() for w in _input(env, "fail-on", FAIL_ON_DEFAULT).split(",") if w.strip()}
    known = {OUTCOMES[ExitCode.REGRESSION], OUTCOMES[ExitCode.INCONCLUSIVE], "error", "never"}
    unknown = fail_on - known
    if unknown:
        print(f"::error::fail-on: unknown outcome(s) {', '.join(sorted(unknown))}; use "
              "regression, inconclusive, error (comma-separated) or never")  # fmt: skip
        return 1
    if outcome in fail_on:
        print(f"::error::duet gate: {outcome} (fail-on: {','.join(sorted(fail_on))})")
        return 1
    print(f"duet gate: {outcome}")
    return 0


STEPS = {"gate": run_gate, "comment": run_comment, "finish": run_finish}


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] not in STEPS:
        print(f"usage: python -m duetbench.ci.github_action {'|'.join(STEPS)}", file=sys.stderr)
        return int(ExitCode.USAGE)
    return STEPS[args[0]](os.environ if env is None else env)


if __name__ == "__main__":
    sys.exit(main())
