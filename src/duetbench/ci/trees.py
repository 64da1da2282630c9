"""Revisions as temporary git worktrees, built with the user's command.

Every worktree lives under one temporary directory that :class:`Trees` removes (and
unregisters from git) when it closes -- on an error, on Ctrl-C, and on SIGTERM or SIGHUP
(which the command line turns into the same interrupt), in every phase: checkout, build,
measuring. A gate killed outright (SIGKILL, out of memory) cannot clean up: its directory
holds an owner file (this machine, its pid and start time, as the cluster's run
directories do), and the next :class:`Trees` on the machine removes the directories of
owners that are gone and prunes git's record of their worktrees.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from ..errors import DuetError
from ..proctools.guarded import run_captured
from ..proctools.procfs import boot_id, gone, start_time

__all__ = ["BuildError", "Trees", "git", "resolve", "sweep_dead_trees"]

#: bytes of a failed build's output kept to show its end
_BUILD_OUTPUT = 64 * 1024
#: the temporary directories' prefix, and the file naming their owner (the format of the
#: cluster's run directories: "host boot pid start")
PREFIX = "duet-trees-"
OWNER_FILE = ".duet-gate-owner"


class BuildError(DuetError):
    """The build command failed in a tree (`duet gate`: exit 2; `duet bisect`: skip)."""


def git(repo: Path, *args: str) -> str:
    """Run git in its own process group (a checkout runs the repository's hooks: they are
    stopped with it when duet is interrupted); its output."""
    p = run_captured(["git", "-C", str(repo), *args], stdout_limit=1 << 28, grace=2.0)
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


def _machine() -> str:
    return f"{socket.gethostname()} {boot_id()}"


def sweep_dead_trees(base: str | Path | None = None) -> list[Path]:
    """Remove the temporary directories of gates and bisects of this machine that were
    killed (their owner is gone), with the worktrees in them; return them."""
    me = _machine()
    removed = []
    try:
        candidates = [d for d in Path(base or tempfile.gettempdir()).iterdir()]
    except OSError:
        return removed
    for d in candidates:
        if not d.name.startswith(PREFIX):
            continue
        try:
            lines = (d / OWNER_FILE).read_text().splitlines()
            machine, pid, start = lines[0].rsplit(" ", 2)
        except (OSError, IndexError, ValueError):
            continue  # not ours to judge (another user's, or being created)
        if machine != me or not pid.isdigit() or not gone(int(pid), start):
            continue
        shutil.rmtree(d, ignore_errors=True)
        if len(lines) > 1:
            _forget(Path(lines[1]), d)
        if not d.exists():
            removed.append(d)
    return removed


def _forget(repo: Path, under: Path) -> None:
    """Drop git's records of ``repo``'s worktrees under ``under`` (removed already); a
    checkout cut short left its record locked, which ``prune`` alone keeps."""
    p = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"], capture_output=True, text=True
    )
    places = (under, under.resolve())  # git may keep the path with symlinks resolved
    for line in p.stdout.splitlines():
        path = line.removeprefix("worktree ")
        if path != line and any(Path(path).is_relative_to(u) for u in places):
            subprocess.run(
                ["git", "-C", str(repo), "worktree", "unlock", path], capture_output=True
            )
    subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)


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
        sweep_dead_trees()
        self.trees: list[Path] = []
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
        try:
            pid = os.getpid()
            owner = f"{_machine()} {pid} {start_time(pid)}\n{self.repo}\n"
            (self.root / OWNER_FILE).write_text(owner)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def checkout(self, rev: str, name: str) -> Path:
        """A detached worktree of ``rev`` at ``<tmp>/<name>``."""
        path = self.root / name
        commit = resolve(self.repo, rev)
        self.trees.append(path)  # before git starts: an interrupted checkout is removed too
        git(self.repo, "worktree", "add", "--detach", "--force", str(path), commit)
        return path

    def uncommitted(self) -> list[str]:
        """The files of the repository's own checkout with changes not committed (a gate
        of ``HEAD`` measures the commit without them)."""
        p = subprocess.run(
            ["git", "-C", str(self.repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        )
        return [line[3:] for line in p.stdout.splitlines() if len(line) > 3]

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
            why = (
                f"did not finish within {timeout:g} s (--build-timeout)"
                if p.returncode is None
                else f"exited with {p.returncode}"
            )
            raise BuildError(
                f"the build command `{command}` {why} in {tree.name}; its last output:\n{tail}"
            )

    def remove(self, tree: Path) -> None:
        """Remove a worktree and git's record of it (also one whose checkout was cut short:
        git keeps such a worktree locked, so unlock it first)."""
        for args in (("unlock", str(tree)), ("remove", "--force", "--force", str(tree))):
            subprocess.run(["git", "-C", str(self.repo), "worktree", *args], capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
        if tree in self.trees:
            self.trees.remove(tree)

    def close(self) -> None:
        for tree in list(self.trees):
            self.remove(tree)
        shutil.rmtree(self.root, ignore_errors=True)
        _forget(self.repo, self.root)

    def __enter__(self) -> Trees:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
