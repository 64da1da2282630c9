"""One end-to-end smoke test per `duet` command, for the fast tier (DEVELOPERS.md, "Test
tiers"): each runs the real command line on a tiny experiment and checks the answer's
shape, not its numbers. They need nothing beyond pip and git (no apt package), so the
fast tier runs from a fresh clone in a fresh virtual environment; the thorough tests of
each command are in its own module.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.helpers import run_duet

TINY = """\
experiment:
  name: tiny
  seed: 1
  repetitions: {seqn: 2, aduet: 2, sduet: 2}
  timeout: 60s
  default_artifacts: false
defaults:
  iterations: 3
benchmarks:
  same:
    command: "true"
  ab:
    A: {command: "sleep 0.002"}
    B: {command: "sleep 0.004"}
"""


def ok(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    done = run_duet(*args, **kw)  # type: ignore[arg-type]
    assert done.returncode == 0, f"duet {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`duet run` of a tiny experiment (the run smoke test checks its output)."""
    d = tmp_path_factory.mktemp("smoke dir")  # a space, as users have them
    (d / "duet.yml").write_text(TINY)
    done = ok("run", str(d / "duet.yml"), "-o", str(d / "results"))
    (d / "run.out").write_text(done.stdout)
    return d / "results" / "tiny"


@pytest.mark.smoke("run")
def test_run(tiny: Path) -> None:
    shown = (tiny.parent.parent / "run.out").read_text()
    for word in ("benchmark", "verdict", "same", "ab"):
        assert word in shown, shown
    assert len(list((tiny / "runs").glob("*/run.json"))) == 2 * (2 * 2 + 2 + 2)


@pytest.mark.smoke("plan")
def test_plan(tiny: Path) -> None:
    runs = json.loads(ok("plan", str(tiny.parent.parent / "duet.yml"), "--format", "json").stdout)
    assert len(runs) == 2 * (2 * 2 + 2 + 2)
    assert {r["run_id"] for r in runs} == {p.name for p in (tiny / "runs").iterdir()}


@pytest.mark.smoke("process")
def test_process(tiny: Path, tmp_path: Path) -> None:
    import pandas as pd

    ok("process", str(tiny), "-o", str(tmp_path / "t.parquet"))
    table = pd.read_parquet(tmp_path / "t.parquet")
    assert set(table["benchmark"]) == {"same", "ab"}


@pytest.mark.smoke("compare")
def test_compare(tiny: Path) -> None:
    doc = json.loads(ok("compare", str(tiny), "--format", "json").stdout)
    assert {(r["benchmark"], r["method"]) for r in doc["rows"]} == {
        (b, m) for b in ("same", "ab") for m in ("seqn", "aduet", "sduet")
    }


@pytest.mark.smoke("evaluate")
def test_evaluate(tiny: Path) -> None:
    done = ok("evaluate", str(tiny), "--format", "json", "--resamples", "199",
              "--slowdowns", "0,5", "--aa", "same")  # fmt: skip
    assert json.loads(done.stdout)


@pytest.mark.smoke("report")
def test_report(tiny: Path, tmp_path: Path) -> None:
    ok("report", str(tiny), "-o", str(tmp_path / "r.html"), "--resamples", "199",
       "--slowdowns", "0,5")  # fmt: skip
    assert "<html" in (tmp_path / "r.html").read_text(encoding="utf-8")[:2000].lower()


@pytest.mark.smoke("hosts")
def test_hosts(tiny: Path) -> None:
    doc = json.loads(ok("hosts", str(tiny), "--format", "json").stdout)
    assert doc["hosts"], doc


@pytest.mark.smoke("noise")
def test_noise() -> None:
    done = ok("noise", "--print-schedule", "--duration", "5", "--seed", "3")
    assert done.stdout.strip()


@pytest.mark.smoke("history")
def test_history(tiny: Path, tmp_path: Path) -> None:
    repo = str(tmp_path / "perf repo.sqlite")
    ok("history", "add", str(tiny), "--repo", repo, "--versions", "A=v1,B=v2")
    doc = json.loads(ok("history", "list", "--repo", repo, "--format", "json").stdout)
    assert [e["name"] for e in doc["experiments"]] == ["tiny"]


@pytest.mark.smoke("dashboard")
def test_dashboard(tiny: Path, tmp_path: Path) -> None:
    repo = str(tmp_path / "perf.sqlite")
    ok("history", "add", str(tiny), "--repo", repo, "--versions", "v1")
    ok("dashboard", "--repo", repo, "-o", str(tmp_path / "site"))
    assert (tmp_path / "site" / "index.html").is_file()


@pytest.mark.smoke("micro")
def test_micro(tmp_path: Path) -> None:
    for side, steps in (("a", 200), ("b", 400)):
        tree = tmp_path / side
        tree.mkdir()
        (tree / "smokemod.py").write_text(
            f"def bench_loop():\n    x = 0\n    for i in range({steps}):\n        x += i\n"
        )
    done = ok("micro", "smokemod:bench_loop", "--a-path", "a", "--b-path", "b",
              "--method", "seqn", "--runs", "2", "--samples", "5", "--format", "json",
              cwd=tmp_path)  # fmt: skip
    (row,) = json.loads(done.stdout)["rows"]
    assert row["benchmark"] == "bench_loop"


def _git_repo(tmp_path: Path, waits: list[str]) -> Path:
    """A repository whose commit i builds a benchmark that sleeps waits[i] seconds."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)

    git("init", "-q", "-b", "main")
    (repo / "duet.yml").write_text(
        "experiment:\n  name: g\n  repetitions: {aduet: 1}\n"
        "benchmarks:\n  work:\n    iterations: 3\n    command: sleep $(cat build/w.txt)\n"
    )
    for i, wait in enumerate(waits):
        (repo / "w.txt").write_text(wait + "\n")
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", f"c{i}")
        git("tag", f"c{i}")
    return repo


BUILD = "mkdir -p build && cp w.txt build/w.txt"


@pytest.mark.smoke("gate")
def test_gate(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path, ["0.01", "0.03"])
    done = run_duet("gate", "--base", "c0", "--head", "c1", "--build", BUILD,
                    str(repo / "duet.yml"),
                    "--git", str(repo), "-o", str(tmp_path / "out"), "--max-runs", "6",
                    cwd=tmp_path)  # fmt: skip
    assert done.returncode in (1, 3), done.stdout + done.stderr  # regression, or undecided
    assert "duet gate: c1" in done.stdout and "##" not in done.stdout  # a table, no Markdown


@pytest.mark.smoke("bisect")
def test_bisect(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path, ["0.01", "0.01", "0.03"])
    done = run_duet("bisect", "--good", "c0", "--bad", "c2", "--build", BUILD,
                    str(repo / "duet.yml"),
                    "--git", str(repo), "-o", str(tmp_path / "out"), "--max-runs", "6",
                    cwd=tmp_path)  # fmt: skip
    assert done.returncode in (0, 3), done.stdout + done.stderr
    assert "first bad commit" in done.stdout or "one of" in done.stdout, done.stdout
