"""A local runner for a composite GitHub Action (``action.yml``), as the GitHub runner runs
it: each step's ``if:``, its ``env:`` with ``${{ }}`` expressions, ``run:`` under bash
with a fresh ``$GITHUB_OUTPUT`` per step, step outputs, and the action's outputs.

A ``uses:`` step is recorded with its evaluated ``with:`` (it is another action, not
run here). The expression language is the part of GitHub's that actions use in
practice: literals, the contexts ``inputs``, ``steps.<id>.outputs``, ``github``, ``env``,
``runner``, ``== != && || !``, parentheses and ``always() success() failure()
cancelled()``; anything else raises, so an action this runner cannot read fails its
test instead of being run wrongly.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|!|\(|\))"
    r"|(?P<num>-?\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*(?:\(\))?))"
)
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class ExpressionError(Exception):
    """An expression this runner does not understand."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out, i = [], 0
    text = text.strip()
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None or m.end() == i:
            raise ExpressionError(f"cannot read {text[i:]!r} in {text!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        i = m.end()
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def _truthy(v: Any) -> bool:
    return v not in (None, "", False, 0)


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass
class _Parser:
    tokens: list[tuple[str, str]]
    context: dict[str, Any]
    status: str  # success | failure
    pos: int = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def parse(self) -> Any:
        value = self.or_()
        if self.pos != len(self.tokens):
            raise ExpressionError(f"unexpected {self.peek()!r}")
        return value

    def or_(self) -> Any:
        left = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            left = left if _truthy(left) else right
        return left

    def and_(self) -> Any:
        left = self.cmp()
        while self.peek() == "&&":
            self.take()
            right = self.cmp()
            left = right if _truthy(left) else left
        return left

    def cmp(self) -> Any:
        left = self.unary()
        while self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.unary()
            equal = _text(left).lower() == _text(right).lower()
            left = equal if op == "==" else not equal
        return left

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not _truthy(self.unary())
        return self.atom()

    def atom(self) -> Any:
        kind, text = self.take()
        if text == "(":
            value = self.or_()
            if self.take()[1] != ")":
                raise ExpressionError("missing )")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r}")
        if text.endswith("()"):
            functions = {
                "always()": True,
                "success()": self.status == "success",
                "failure()": self.status == "failure",
                "cancelled()": False,
            }
            if text not in functions:
                raise ExpressionError(f"unknown function {text}")
            return functions[text]
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        parts = text.split(".")
        if parts[0] not in self.context:
            raise ExpressionError(f"unknown context {parts[0]!r}")
        value: Any = self.context[parts[0]]
        for p in parts[1:]:
            value = value.get(p) if isinstance(value, dict) else None
        return value


def evaluate(text: str, context: dict[str, Any], status: str = "success") -> Any:
    """The value of one expression (without ``${{ }}``)."""
    return _Parser(_tokens(text), context, status).parse()


def substitute(text: str, context: dict[str, Any], status: str = "success") -> str:
    """``text`` with every ``${{ expression }}`` replaced by its value."""
    return _EXPR.sub(lambda m: _text(evaluate(m.group(1), context, status)), text)


def read_outputs(path: Path) -> dict[str, str]:
    """A ``$GITHUB_OUTPUT`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            j = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
            i += 1
        else:
            i += 1
    return out


@dataclass
class ActionRun:
    """What one run of the action did."""

    outputs: dict[str, str]
    steps: dict[str, dict[str, Any]]  # id -> {"outcome", "outputs"}
    ran: list[str]  # names of the steps run
    skipped: list[str]
    uses: list[tuple[str, dict[str, str]]]  # recorded `uses:` steps
    failed: bool
    log: str = ""
    returncodes: dict[str, int] = field(default_factory=dict)


def run_action(
    action_dir: Path,
    inputs: dict[str, str],
    env: dict[str, str],
    github: dict[str, Any],
    work: Path,
    cwd: Path,
) -> ActionRun:
    """Run the composite action in ``action_dir`` with ``inputs`` (defaults from
    action.yml), the process environment ``env`` and the ``github`` context."""
    doc = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    assert doc["runs"]["using"] == "composite", "only composite actions run here"
    context: dict[str, Any] = {"github": github, "env": env, "runner": {"temp": str(work)}}
    declared = doc.get("inputs") or {}
    unknown = set(inputs) - set(declared)
    assert not unknown, f"inputs the action does not declare: {unknown}"
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in inputs:
            values[name] = inputs[name]
        else:
            assert not spec.get("required") or "default" in spec, f"input {name} is required"
            values[name] = substitute(str(spec.get("default", "")), context)
    context["inputs"] = values
    context["steps"] = {}
    status = "success"
    result = ActionRun({}, context["steps"], [], [], [], False)
    for i, step in enumerate(doc["runs"]["steps"]):
        name = str(step.get("name") or step.get("id") or f"step {i}")
        condition = str(step.get("if", "success()"))
        condition = condition[3:-2] if condition.strip().startswith("${{") else condition
        if not _truthy(evaluate(condition, context, status)):
            result.skipped.append(name)
            continue
        result.ran.append(name)
        step_env = dict(env)
        step_env["GITHUB_ACTION_PATH"] = str(action_dir)
        for key, value in (step.get("env") or {}).items():
            step_env[key] = substitute(str(value), context, status)
        outputs: dict[str, str] = {}
        if "uses" in step:
            with_ = {
                k: substitute(str(v), context, status) for k, v in (step.get("with") or {}).items()
            }
            result.uses.append((str(step["uses"]), with_))
            code = 0
        else:
            assert step.get("shell") == "bash", f"step {name}: a composite step needs shell: bash"
            out_file = work / f"output-{i}"
            out_file.write_text("")
            step_env["GITHUB_OUTPUT"] = str(out_file)
            script = work / f"step-{i}.sh"
            script.write_text(substitute(str(step["run"]), context, status))
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=cwd,
                env=step_env,
                capture_output=True,
                text=True,
            )
            code = done.returncode
            result.log += f"--- {name} (exit {code})\n{done.stdout}{done.stderr}"
            outputs = read_outputs(out_file)
        result.returncodes[name] = code
        if "id" in step:
            context["steps"][step["id"]] = {
                "outcome": "success" if code == 0 else "failure",
                "outputs": outputs,
            }
        if code != 0:
            status = "failure"
    result.failed = status == "failure"
    for name, spec in (doc.get("outputs") or {}).items():
        result.outputs[name] = substitute(str(spec.get("value", "")), context, status)
    return result


def fake_gh(bin_dir: Path, state: Path, log: Path) -> Path:
    """A ``gh`` on PATH that records its arguments (one JSON line each in ``log``) and
    keeps pull request comments in ``state`` for ``gh api`` list, POST and PATCH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(
        f"""#!{os.environ.get("DUET_TEST_PYTHON") or __import__("sys").executable}
import json, os, re, sys
args = sys.argv[1:]
state_path, log_path = {str(state)!r}, {str(log)!r}
with open(log_path, "a") as f:
    f.write(json.dumps({{"args": args, "token": os.environ.get("GH_TOKEN", "")}}) + "\\n")
state = json.load(open(state_path)) if os.path.exists(state_path) else {{"next": 100, "comments": []}}
if not args or args[0] != "api":
    sys.exit("fake gh: only `gh api` is known")
method, endpoint, body = "GET", None, None
i = 1
while i < len(args):
    a = args[i]
    if a in ("--method", "-X"):
        method = args[i + 1]; i += 2
    elif a == "--input":
        body = json.load(open(args[i + 1])); i += 2
    elif a == "--paginate":
        i += 1
    elif a.startswith("-"):
        sys.exit("fake gh: unknown flag " + a)
    else:
        endpoint = a; i += 1
m = re.fullmatch(r"repos/([^/]+/[^/]+)/issues/(\\d+)/comments", endpoint or "")
e = re.fullmatch(r"repos/([^/]+/[^/]+)/issues/comments/(\\d+)", endpoint or "")
def url(c):
    return "https://github.invalid/" + c["repo"] + "/pull/" + str(c["pr"]) + "#issuecomment-" + str(c["id"])
if m and method == "GET":
    found = [c for c in state["comments"] if c["repo"] == m.group(1) and c["pr"] == int(m.group(2))]
    for k in range(0, max(len(found), 1), 2):  # pages of two, as --paginate prints them
        print(json.dumps([dict(c, html_url=url(c)) for c in found[k:k + 2]]))
elif m and method == "POST":
    c = {{"id": state["next"], "repo": m.group(1), "pr": int(m.group(2)), "body": body["body"]}}
    state["next"] += 1
    state["comments"].append(c)
    print(json.dumps(dict(c, html_url=url(c))))
elif e and method == "PATCH":
    c = next((c for c in state["comments"] if c["id"] == int(e.group(2))), None)
    if c is None:
        sys.exit("fake gh: HTTP 404 Not Found")
    c["body"] = body["body"]
    print(json.dumps(dict(c, html_url=url(c))))
else:
    sys.exit("fake gh: unexpected " + method + " " + str(endpoint))
json.dump(state, open(state_path, "w"))
""",
        encoding="utf-8",
    )
    gh.chmod(0o755)
    return gh
