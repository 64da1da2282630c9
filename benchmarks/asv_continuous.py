"""asv's own verdicts on a real library's asv suite, to set beside duet's.

The companion of ``asv_real_suite.py``: the same two cdflib sdists (downloaded with pip,
a package registry is all it needs), but measured by airspeed velocity itself with
``asv continuous``. asv wants a git repository, so the script builds one in a
temporary directory: version A's tree committed and tagged ``v<A>``, then B's tree
committed on top and tagged ``v<B>`` (setuptools_scm finds its version in the tags).
The sdist's ``asv.conf.json`` is kept, with ``repo`` ".", a virtualenv for this
interpreter's Python, branch ``main`` and a one-wheel build command. asv's machine file
goes to a temporary ``HOME`` (``asv machine --yes``): nothing asks questions and the
real ``~/.asv-machine.json`` is left alone. asv builds each version's wheel, installs
it (numpy from the registry) and runs the suite of the working tree (B's). The
verdicts go to stdout as Markdown; if asv fails, the script exits 1 with its output's tail.

    python benchmarks/asv_continuous.py                          # cdflib 1.3.1 -> 1.3.2, --factor 1.1
    python benchmarks/asv_continuous.py --a 1.3.0 --b 1.3.1 --factor 1.05 --bench epoch_encode
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path

from asv_real_suite import sdist  # noqa: E402  (this script's directory is on sys.path)

BRANCH = "main"
NEEDED = ("benchmarks", "asv.conf.json")
# asv 0.6's default build ("python -m build", then "python -m pip wheel -w {build_cache_dir}
# {build_dir}") leaves the wheels of the dependencies (numpy) in the build cache too, and asv
# then stops: "Found multiple wheels ... Cannot decide correct one". One wheel, no deps:
BUILD = ["python -m pip wheel --no-deps -w {build_cache_dir} {build_dir}"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# asv's "Change" column: what each mark means (asv/commands/compare.py)
VERDICTS = {
    "-": "improved",
    "+": "worsened",
    "": "not significantly changed",
    "!": "worsened (fails in B)",
    "*": "improved (fails in A only)",
    "x": "not comparable (benchmark changed)",
}


@dataclass(frozen=True)
class Row:
    """One line of asv's comparison table."""

    benchmark: str
    mark: str
    before: str
    after: str
    ratio: str

    @property
    def failed(self) -> bool:
        return "failed" in (self.before, self.after)

    @property
    def verdict(self) -> str:
        text = VERDICTS.get(self.mark, f"asv mark {self.mark!r}")
        if self.mark == "" and self.ratio.startswith("~"):
            text += " (beyond the factor, not statistically significant)"
        if self.mark == "" and self.failed:
            text = "failed"
        return text


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its stdout."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {shlex.join(args)} failed:\n{done.stderr}")
    return done.stdout


def replace_tree(repo: Path, tree: Path) -> None:
    """Make the working tree of ``repo`` a copy of ``tree`` (its .git stays)."""
    for child in repo.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(tree, repo, symlinks=True, dirs_exist_ok=True)


def commit_version(repo: Path, tree: Path, message: str, tag: str) -> None:
    """Commit ``tree`` as the next state of ``repo`` and tag it."""
    replace_tree(repo, tree)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", message)
    git(repo, "tag", "-a", tag, "-m", message)


def make_repo(package: str, versions: list[tuple[str, Path]], into: Path) -> tuple[Path, list[str]]:
    """A git repository with one tagged commit per (version, tree), in order; its tags."""
    repo = into / package
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch", BRANCH)
    git(repo, "config", "user.name", "duetbench asv_continuous")
    git(repo, "config", "user.email", "asv-continuous@duetbench.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    git(repo, "config", "tag.gpgsign", "false")
    tags = []
    for version, tree in versions:
        tag = f"v{version}"
        commit_version(repo, tree, f"{package} {version} (sdist)", tag)
        tags.append(tag)
    with (repo / ".git" / "info" / "exclude").open("a") as f:
        f.write(".asv/\n")  # asv's environments and results, kept out of `git status`
    return repo, tags


def write_config(repo: Path) -> Path:
    """Rewrite the sdist's asv.conf.json for this repository and interpreter."""
    from asv.util import load_json  # asv's reader: the file has // comments

    path = repo / "asv.conf.json"
    conf = load_json(str(path), js_comments=True)
    conf.update(
        repo=".",
        dvcs="git",
        branches=[BRANCH],
        environment_type="virtualenv",
        pythons=[f"{sys.version_info.major}.{sys.version_info.minor}"],
        build_command=BUILD,
    )
    path.write_text(json.dumps(conf, indent=4) + "\n")
    return path


def asv_env(home: Path) -> dict[str, str]:
    """The environment for asv: a temporary HOME, this interpreter first on PATH."""
    env = dict(os.environ)
    env["HOME"] = str(home)  # ~/.asv-machine.json lands here
    bindir = str(Path(sys.executable).parent)  # python3.X itself, not a pyenv shim
    env["PATH"] = os.pathsep.join(x for x in (bindir, env.get("PATH")) if x)
    env.pop("PYTHONPATH", None)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``, stdout and stderr merged into one text."""
    return subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, check=False,
    )  # fmt: skip


def parse_table(output: str) -> list[Row]:
    """The rows of the comparison table ``asv continuous`` prints (tabulate, github)."""
    rows = []
    in_table = False
    for line in ANSI.sub("", output).splitlines():
        line = line.strip()
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if "Benchmark (Parameter)" in cells:
            in_table = True
            continue
        if not in_table or len(cells) != 5 or set("".join(cells)) <= set("-: "):
            continue
        mark, before, after, ratio, name = cells
        rows.append(Row(name, mark, before, after, ratio))
    return rows


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(ANSI.sub("", text).splitlines()[-lines:])


def fail(message: str, output: str) -> int:
    print(f"error: {message}\n--- last lines of asv's output ---\n{tail(output)}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--package", default="cdflib")
    p.add_argument("--a", default="1.3.1", help="version A (asv's 'before')")
    p.add_argument("--b", default="1.3.2", help="version B (asv's 'after')")
    p.add_argument("--factor", default="1.1", help="asv's --factor (default 1.1, asv's own)")
    p.add_argument("--bench", metavar="REGEX", help="passed to asv as -b REGEX: only these")
    p.add_argument(
        "--keep", action="store_true", help="keep the temporary directory, asv's output in it"
    )
    args = p.parse_args(argv)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="asv-continuous-"))
    try:
        a = sdist(args.package, args.a, tmp / "a", NEEDED)
        b = sdist(args.package, args.b, tmp / "b", NEEDED)
        repo, (tag_a, tag_b) = make_repo(args.package, [(args.a, a), (args.b, b)], tmp)
        write_config(repo)
        (tmp / "home").mkdir()
        env = asv_env(tmp / "home")
        asv = [sys.executable, "-m", "asv"]
        machine = run([*asv, "machine", "--yes"], repo, env)
        if machine.returncode != 0:
            return fail("`asv machine --yes` failed", machine.stdout)
        cmd = [*asv, "continuous", "--factor", args.factor, "--no-only-changed", "--show-stderr"]
        cmd += ["-b", args.bench] if args.bench else []
        cmd += [tag_a, tag_b]
        asv_started = time.perf_counter()
        done = run(cmd, repo, env)
        asv_seconds = time.perf_counter() - asv_started
        output = done.stdout
        (tmp / "asv-output.txt").write_text(output)
    finally:
        if args.keep:
            print(f"kept {tmp} (git repository, .asv/, asv-output.txt)", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    # asv continuous exits 1 both when it fails and when something got worse
    judged = any(m in output for m in ("PERFORMANCE DECREASED", "PERFORMANCE INCREASED",
                                       "BENCHMARKS NOT SIGNIFICANTLY CHANGED"))  # fmt: skip
    rows = parse_table(output)
    if not judged or (done.returncode != 0 and "PERFORMANCE DECREASED" not in output):
        return fail(f"`asv continuous` exited {done.returncode} without a verdict", output)
    if not rows:
        return fail("`asv continuous` printed no comparison table", output)
    total = time.perf_counter() - started
    print(
        f"{args.package} {args.a} (A, tag {tag_a}) -> {args.b} (B, tag {tag_b}), "
        f"asv {installed_version('asv')} continuous --factor {args.factor}\n"
    )
    print("| benchmark | asv's verdict | before (A) | after (B) | ratio B/A |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| `{r.benchmark}` | {r.verdict} | {r.before} | {r.after} | {r.ratio} |")
    print(f"\nwall time: {total:.0f} s in all, {asv_seconds:.0f} s of it in `asv continuous`")
    print(f"command (in the temporary git repository): `{shlex.join(cmd)}`")
    if any(r.failed for r in rows):
        return fail("some benchmarks failed under asv", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
