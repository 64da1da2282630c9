"""Revisions as temporary git worktrees, built with the user's command.

Every worktree lives under one temporary directory that :class:`Trees` removes (and
unregisters from git) when it closes -- also on Ctrl-C or an error.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import DuetError
from ..proctools.guarded import run_captured

__all__ = ["BuildError", "Trees", "git", "resolve"]

#: bytes of a failed build's output kept to show its end
_BUILD_OUTPUT = 64 * 1024


class BuildError(DuetError):
    """The build command failed in a tree (`duet gate`: exit 2; `duet bisect`: skip)."""


def git(repo: Path, *args: str) -> str:
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise DuetError(f"git {' '.join(args)} failed in {repo}: {p.stderr.strip()}")
    return p.stdout.strip()


def resolve(repo: Path, rev: str) -> str:
    """The full commit hash of ``rev`` (a clear error for a name git does not know)."""
    p = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise DuetError(
            f"{rev!r} is not a commit of the git repository {repo}; give a branch, tag or "
            "commit (for origin/main in CI, fetch it first: git fetch origin main)"
        )
    return p.stdout.strip()


class Trees:
    """Worktrees of one repository in a temporary directory (a context manager)."""

    def __init__(self, repo: str | Path = ".") -> None:
        start = Path(repo).resolve()
        p = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            raise DuetError(f"{start} is not inside a git repository (duet gate/bisect need one)")
        self.repo = Path(p.stdout.strip())
        self.root = Path(tempfile.mkdtemp(prefix="duet-trees-"))
        self.trees: list[Path] = []

    def checkout(self, rev: str, name: str) -> Path:
        """A detached worktree of ``rev`` at ``<tmp>/<name>``."""
        path = self.root / name
        git(self.repo, "worktree", "add", "--detach", "--force", str(path), resolve(self.repo, rev))
        self.trees.append(path)
        return path

    def build(self, tree: Path, command: str | None, *, timeout: float | None = None) -> None:
        """Run the build command in ``tree``; a failure or timeout is a :class:`BuildError`."""
        if not command:
            return
        p = run_captured(
            ["/bin/sh", "-c", command],
            cwd=str(tree),
            merge_stderr=True,
            stdout_limit=_BUILD_OUTPUT,
            keep_stdout="tail",
            timeout=timeout,
        )
        if p.returncode != 0:
            tail = "\n".join(p.stdout.strip().splitlines()[-5:])
            why = "timed out" if p.returncode is None else f"exited with {p.returncode}"
            raise BuildError(
                f"the build command `{command}` {why} in {tree.name}; its last output:\n{tail}"
            )

    def remove(self, tree: Path) -> None:
        subprocess.run(
            ["git", "-C", str(self.repo), "worktree", "remove", "--force", str(tree)],
            capture_output=True,
        )
        shutil.rmtree(tree, ignore_errors=True)
        if tree in self.trees:
            self.trees.remove(tree)

    def close(self) -> None:
        for tree in list(self.trees):
            self.remove(tree)
        shutil.rmtree(self.root, ignore_errors=True)
        subprocess.run(["git", "-C", str(self.repo), "worktree", "prune"], capture_output=True)

    def __enter__(self) -> Trees:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
