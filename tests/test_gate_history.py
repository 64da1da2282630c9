"""`duet gate --repo` and `duet bisect --repo` (docs/history.md, "Gates feed the
repository"): each comparison starts from the spread of this runner's earlier experiments
in the results repository and is added to it afterwards.

The workload reports its own iteration times (a `harness: generic` side copying a table
the test wrote into each commit, drawn from a seeded generator), so the run values, and
with them every stopping decision, are the same on a quiet and on a busy machine."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

from helpers import git, new_git_repo, run_duet

CONFIG = """experiment: {name: gate, measure: wall}
benchmarks:
  work:
    harness: generic
    repetitions: {seqn: 1}
    A: {command: "cp runs/$DUET_REP.csv it.csv", results: [it.csv]}
"""

#: run-level noise of each side (log scale): the run values' spread is about 1.4 %
RUN_SD = 0.01


def make_repo(tmp: Path, factors: list[float]) -> Path:
    """One commit per entry of ``factors`` (tagged c0, c1, ...): the program's iteration
    time (10 ms x factor) per run, each run shifted by its own seeded noise."""
    repo = tmp / "my repo"
    new_git_repo(repo)
    (repo / "duet.yml").write_text(CONFIG)
    (repo / "runs").mkdir()
    for i, factor in enumerate(factors):
        rng = random.Random(f"commit {i}")
        for rep in range(80):
            ns = int(1e7 * factor * (1 + rng.gauss(0, RUN_SD)))
            (repo / "runs" / f"{rep}.csv").write_text("duration_ns\n" + f"{ns}\n" * 9)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {i}: x{factor}")
        git(repo, "tag", f"c{i}")
    return repo


def duet(
    cwd: Path, *args: object, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_duet(*map(str, args), cwd=cwd, env=env)


def gate(
    repo: Path, base: str, head: str, out: Path, *extra: object, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any]]:
    """`duet gate` base -> head at threshold 3 %: its output, stops.json, and the entry of
    the one benchmark."""
    p = duet(
        repo, "gate", "--base", base, "--head", head, "duet.yml", "-o", out,
        "--threshold", "3%", "--max-runs", "60", *extra, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    (root,) = out.iterdir()
    stops = json.loads((root / "stops.json").read_text())
    return p, stops, stops["stops"]["work/seqn"]


def experiments(repo: Path, location: str) -> list[tuple[str, str]]:
    """The (A, B) versions of the repository's experiments, in the order they were added
    (``location`` as typed, relative to ``repo``)."""
    from duetbench.history import Repository

    with Repository.open(repo / location, create=False) as r:
        return [(e.version_a, e.version_b) for e in sorted(r.experiments(), key=lambda e: e.id)]


def test_a_gate_adds_itself_and_the_next_gate_on_the_runner_stops_from_its_spread(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, [1.0, 1.0, 1.0])
    history = "../perf history.sqlite"  # relative, as typed in a CI job; not there yet
    summary = tmp_path / "summary.md"

    # the first gate: no priors (and it says so); the repository is created and holds it
    p, stops, entry = gate(repo, "c0", "c1", tmp_path / "first", "--repo", history)
    assert stops["history"]["repository"].endswith("perf history.sqlite")
    assert stops["history"]["last"] == 10 and len(stops["history"]["host"]) >= 8
    assert "priors" not in entry and entry["decisions"]["work"]["prior_used"] is None
    assert "work (seqn): none -- no earlier experiment of it on this runner" in p.stdout
    assert "added to" in p.stderr and "(c0 vs c1)" in p.stderr
    assert experiments(repo, history) == [("c0", "c1")]

    # the next gate, without the repository and with it: the same run values (they do
    # not depend on this machine), no more runs to the same verdict with the priors (the
    # saving of `decided` is modest: docs/measurements/gate-with-history.md)
    _, plain, alone = gate(repo, "c1", "c2", tmp_path / "without")
    assert "history" not in plain and "priors" not in alone
    p, stops, entry = gate(
        repo, "c1", "c2", tmp_path / "with", "--repo", history,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    prior = entry["priors"]["work"]
    assert prior["experiments"] == 1 and prior["runs"] == first_runs(tmp_path / "first")
    assert prior["df"] == prior["runs"] - 1
    decision = entry["decisions"]["work"]
    assert decision["prior_used"] is True and decision["verdict"] == "equivalent"
    assert alone["decisions"]["work"]["verdict"] == "equivalent"
    assert entry["stopped"] == alone["stopped"] == "decided"
    assert entry["runs"] <= alone["runs"], (entry["runs"], alone["runs"])
    assert "work (seqn): used -- the spread of 1 earlier experiment(s) on this runner" in p.stdout
    assert "Priors from" in summary.read_text() and "used" in summary.read_text()
    assert experiments(repo, history) == [("c0", "c1"), ("c1", "c2")]
    assert git(repo, "worktree", "list").count("\n") == 0


def first_runs(root_parent: Path) -> int:
    (root,) = root_parent.iterdir()
    return int(json.loads((root / "stops.json").read_text())["stops"]["work/seqn"]["runs"])


def test_a_repository_that_cannot_be_used_is_refused_before_anything_is_measured(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, [1.0, 1.0])
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a database\n" * 100)
    cases = [
        (["--repo", foreign], "is not a duetbench results repository"),
        (["--repo", tmp_path], "is a directory"),
        (["--repo", tmp_path / "missing dir" / "perf.sqlite"], "does not exist"),
        (["--repo", tmp_path / "perf.sqlite", "--last", "0"], "--last must be at least 1"),
    ]
    gate_revs = ["gate", "--base", "c0", "--head", "c1"]
    bisect_revs = ["bisect", "--good", "c0", "--bad", "c1"]
    runs = [(gate_revs, extra, message) for extra, message in cases]
    runs.append((bisect_revs, *cases[0]))
    for revs, extra, message in runs:
        out = tmp_path / "results"
        p = duet(repo, *revs, "duet.yml", "-o", out, *extra)
        assert p.returncode == 2, (revs, extra, p.stdout, p.stderr)
        assert message in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert not out.exists()  # nothing measured
    assert foreign.read_text() == "not a database\n" * 100
    assert git(repo, "worktree", "list").count("\n") == 0


def test_bisect_steps_use_the_priors_of_the_steps_before_them(tmp_path: Path) -> None:
    # c2 made the program 10 % slower; c1 is unchanged. The first candidate (c1) has no
    # priors; it is added, and the next (c2) starts from its spread
    repo = make_repo(tmp_path, [1.0, 1.0, 1.1, 1.1])
    history = tmp_path / "perf.sqlite"
    p = duet(
        repo, "bisect", "--good", "c0", "--bad", "c3", "duet.yml", "-o", tmp_path / "r",
        "--threshold", "3%", "--max-runs", "60", "--repo", history,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    c1, c2 = git(repo, "rev-parse", "c1"), git(repo, "rev-parse", "c2")
    assert f"first bad commit: {c2}" in p.stdout
    lines = p.stdout.splitlines()
    (step1,) = [x for x in lines if x.startswith(f"{c1[:10]} good")]
    assert "priors none" in step1, p.stdout
    (step2,) = [x for x in lines if x.startswith(f"{c2[:10]} bad  slower")][:1]
    assert "priors used" in step2, p.stdout
    roots = sorted((tmp_path / "r").iterdir(), key=lambda d: d.stat().st_mtime)
    docs = [json.loads((d / "stops.json").read_text()) for d in roots]
    assert all(d["history"]["repository"] == str(history) for d in docs)
    assert "priors" not in docs[0]["stops"]["work/seqn"]
    assert docs[1]["stops"]["work/seqn"]["priors"]["work"]["experiments"] == 1
    assert experiments(repo, str(history)) == [("c0", "c1"), ("c0", "c2")]


def test_the_summary_says_per_benchmark_whether_the_priors_were_used_missing_or_dropped() -> None:
    from duetbench.ci.gate import gate_markdown, priors_summary

    prior = {"sd": 0.0123, "df": 20, "experiments": 3, "runs": 23}
    stops = {
        "history": {"repository": "perf.sqlite", "host": "0123456789abcdef", "last": 10},
        "stops": {
            "a/seqn": {
                "method": "seqn",
                "priors": {"a": prior, "b": prior},
                "decisions": {"a": {"prior_used": True}, "b": {"prior_used": False}},
            },
            "c/aduet": {"method": "aduet", "decisions": {"c": {"prior_used": None}}},
            "c/sduet": {"method": "sduet", "stopped": "not chosen", "decisions": {"c": {}}},
        },
    }
    head, *lines = priors_summary(stops)
    assert head == (
        "priors from perf.sqlite (this runner: host 0123456789ab; the last 10 experiments "
        "of each benchmark)"
    )
    assert lines == [
        "a (seqn): used -- the spread of 3 earlier experiment(s) on this runner (23 runs, "
        "sd 1.23 %)",
        "b (seqn): dropped by the check -- these runs did not match the spread of 3 earlier "
        "experiment(s) on this runner (23 runs, sd 1.23 %) (noisier, or serially correlated), "
        "so the rule decided without it (docs/adaptive.md, 'Stopping with the repository's "
        "priors')",
        "c (aduet): none -- no earlier experiment of it on this runner; this one is the first "
        "the next gate can use",
    ]
    # without --repo: nothing; the Markdown summary carries the lines as a list
    assert priors_summary({"stops": stops["stops"]}) == [] == priors_summary(None)
    md = gate_markdown("duet gate: HEAD", 0, _NoRows(), "| t |", [head, *lines])
    assert "Priors from perf.sqlite" in md and "\n- a \\(seqn\\): used" in md


class _NoRows:
    """A verdict table without rows (gate_markdown reads ``to_dict('records')``)."""

    def to_dict(self, orient: str) -> list[dict[str, Any]]:
        return []
