"""The steps every command that works with a results repository shares (docs/history.md):
the priors of this host's earlier experiments for a stopping rule, adding a finished
experiment, the versions it compared. `duet run`, `gate`, `bisect` and `history add` call
these with plain values (the command line's flags stay in ``commands/``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DuetError

if TYPE_CHECKING:
    from ..adaptive.prior import HostPriors
    from ..history import ExperimentInfo, Version


def read_priors(location: str, last: int, *, create: bool = False) -> HostPriors:
    """This host's priors in the repository at ``location``: per benchmark x method the
    :class:`~duetbench.adaptive.prior.Prior` of its last ``last`` experiments (those with
    a spread), for its stopping rule and ``method: auto``, and where they came from.
    ``create`` (a gate, a bisect): a missing repository file is created (empty: no priors
    yet) rather than refused; a file that is not a repository is refused either way,
    before anything is measured."""
    from ..adaptive.prior import HostPriors
    from ..history import Repository, fingerprint
    from ..history.priors import host_priors
    from ..hosts import detect_host

    if last < 1:
        raise DuetError(f"--last must be at least 1 (experiments), got {last}")
    host = fingerprint(detect_host()).fingerprint
    with Repository.open(location, create=create) as repo:
        found = host_priors(repo, host, last)
        where = repo.location
    return HostPriors(found, str(where), host, int(last))


def add_experiment(
    location: str, root: Path, versions: dict[str, Version]
) -> tuple[ExperimentInfo, str]:
    """Add the finished experiment (or comparison) at ``root`` to the repository at
    ``location``: what was added, and the repository's location to show."""
    from ..history import Repository

    with Repository.open(location) as repo:
        return repo.add(root, versions), repo.location


def versions_of(labels: list[str] | None, git: Path | None) -> dict[str, Version]:
    """The A and B versions an experiment compared: ``labels`` (``v1.4.2`` for both sides,
    or ``A=v1.4.1,B=v1.4.2``; each may hold several, comma-separated) read as revisions of
    the ``git`` checkout when there is one, else its HEAD."""
    from ..history import parse_versions, version_from_git
    from ..history.versions import SIDES, complete_versions

    items = [x.strip() for v in labels or [] for x in v.split(",") if x.strip()]
    if not items and git is None:
        raise DuetError(
            "say which versions the experiment compared: --versions v1.4.2 (both sides), "
            "--versions A=v1.4.1,B=v1.4.2, or --git CHECKOUT (its HEAD)"
        )
    if git is None:
        return complete_versions(parse_versions(items))
    if not items:
        v = version_from_git(git)
        return {s: v for s in SIDES}
    named = complete_versions(parse_versions(items))
    return {s: version_from_git(git, rev=v.label, label=v.label) for s, v in named.items()}


def tree_versions(a_tree: Path, b_tree: Path) -> dict[str, Version]:
    """The versions a comparison of two git trees measured: A the commit checked out in
    ``a_tree``, B in ``b_tree`` (labelled by `git describe --tags --always`)."""
    from ..history.versions import version_from_git

    return {"A": version_from_git(a_tree), "B": version_from_git(b_tree)}
