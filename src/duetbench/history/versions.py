"""Which versions of the program an experiment compared: labels, git commits, dates."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..text import control_characters
from ._db import HistoryError

SIDES = ("A", "B")


@dataclass(frozen=True)
class Version:
    """A version of the program under test: ``label`` (unique in a repository), and the git
    commit and its committer date (ns since the epoch) where known."""

    label: str
    commit: str | None = None
    commit_ns: int | None = None

    def __post_init__(self) -> None:
        if not self.label or self.label != self.label.strip() or "\n" in self.label:
            raise HistoryError(
                f"version label {self.label!r} is empty or has surrounding spaces/newlines; "
                "use a tag, branch or build name such as v1.4.2"
            )
        refuse_control_characters(f"version label {self.label!r}", self.label)


def refuse_control_characters(what: str, text: str) -> None:
    """A label kept in the repository and shown in terminals, CI logs and the dashboard
    holds no control characters (escape sequences, bidirectional overrides)."""
    bad = control_characters(text)
    if bad:
        raise HistoryError(
            f"{what} holds control characters ({', '.join(bad)}); they would reach every "
            "terminal and log that shows it. Use printable text"
        )


def parse_versions(items: Iterable[str]) -> dict[str, Version]:
    """Labels as users type them: ``A=v1.3`` and ``B=v1.4``, or one ``v1.4`` for both sides
    (an experiment that measured one version, e.g. an A/A run)."""
    out: dict[str, Version] = {}
    for item in items:
        side, eq, label = item.partition("=")
        if eq and side.strip() in SIDES:
            key = side.strip()
            if key in out:
                raise HistoryError(f"version of side {key} given twice ({item!r})")
            out[key] = Version(label.strip())
        elif eq:
            raise HistoryError(
                f"version {item!r}: write A=LABEL or B=LABEL (sides are A and B), or one LABEL "
                "for both sides"
            )
        else:
            if out:
                raise HistoryError(
                    f"version {item!r}: a single label names both sides; do not mix it with "
                    "A=... / B=..."
                )
            out = {"A": Version(item.strip()), "B": Version(item.strip())}
    return out


def complete_versions(versions: Mapping[str, Version] | Version | str) -> dict[str, Version]:
    """Both sides' versions from what the caller gave (one version = both sides)."""
    if isinstance(versions, str):
        versions = Version(versions)
    if isinstance(versions, Version):
        return {"A": versions, "B": versions}
    missing = [s for s in SIDES if s not in versions]
    if missing:
        raise HistoryError(
            f"the version of side {' and '.join(missing)} is missing; name both, e.g. "
            "--version A=v1.3 --version B=v1.4 (or one label when A and B are the same version)"
        )
    extra = sorted(set(versions) - set(SIDES))
    if extra:
        raise HistoryError(f"unknown side(s) {extra}; sides are A and B")
    return {s: versions[s] for s in SIDES}


def version_from_git(checkout: str | Path, rev: str = "HEAD", label: str | None = None) -> Version:
    """The commit and committer date of ``rev`` in a git checkout; the label defaults to
    ``git describe --tags --always`` (a tag where there is one, else the short hash)."""
    path = Path(checkout)
    if not path.exists():
        raise HistoryError(f"git checkout {path} does not exist")
    sha, date = _git(path, "log", "-1", "--format=%H %ct", rev).split()
    if label is None:
        label = _git(path, "describe", "--tags", "--always", rev)
    return Version(label, commit=sha, commit_ns=int(date) * 1_000_000_000)


def _git(path: Path, *args: str) -> str:
    try:
        p = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise HistoryError("reading a version from git needs the git program on PATH") from None
    except subprocess.TimeoutExpired:
        raise HistoryError(f"git {' '.join(args)} in {path} did not answer within 60 s") from None
    if p.returncode != 0:
        raise HistoryError(
            f"cannot read the version from the git checkout {path} "
            f"(git {' '.join(args)}: {p.stderr.strip() or p.returncode})"
        )
    return p.stdout.strip()
