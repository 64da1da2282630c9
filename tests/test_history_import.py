"""`duet history import` (docs/history.md, "Importing other tools' results") on files the
real tools write here: pytest-benchmark saved runs of a git repository's commits, an asv
results directory, pyperf JSON; and github-action-benchmark's data.js, built from a
pytest-benchmark run as that action converts it. Workloads sleep a known time, so the
answers do not depend on this machine's load."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from duetbench.history import Repository, detect_changes, series
from duetbench.history.importers import ImportFileError, read

TEST_FILE = """import pathlib, time
MS = float((pathlib.Path(__file__).parent / "work.txt").read_text())

def test_sleep(benchmark):
    benchmark(time.sleep, MS / 1000)
"""
ASV_BENCH = """import os, time
MS = float(open(os.path.join(os.path.dirname(__file__), "..", "work.txt")).read())

def time_sleep():
    time.sleep(MS / 1000)

class TimeParams:
    params = [1, 2]
    param_names = ["n"]
    def time_loop(self, n):
        time.sleep(n * MS / 1000)

def track_answer():
    return 42
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{cmd}: {done.stdout}{done.stderr}"
    return done.stdout


def duet(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def git_repo(root: Path) -> Path:
    root.mkdir()
    run(["git", "init", "-q", "-b", "main"], root)
    run(["git", "config", "user.email", "t@example.invalid"], root)
    run(["git", "config", "user.name", "t"], root)
    return root


def commit(repo: Path, day: int) -> str:
    when = f"2026-01-{day:02d}T12:00:00+00:00"
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    run(["git", "add", "-A"], repo, env)
    run(["git", "commit", "-q", "--allow-empty", "-m", f"day {day}"], repo, env)
    return run(["git", "rev-parse", "HEAD"], repo).strip()


def pytest_benchmark_history(tmp: Path, ms: list[float]) -> tuple[Path, list[str]]:
    """A commit per entry of ``ms`` (the sleep), each measured by pytest-benchmark and
    saved (--benchmark-autosave) into one storage."""
    repo = git_repo(tmp / "proj")
    storage = tmp / "storage dir"
    (repo / "test_work.py").write_text(TEST_FILE)
    shas = []
    for day, v in enumerate(ms, start=1):
        (repo / "work.txt").write_text(f"{v}\n")
        shas.append(commit(repo, day))
        run(
            [sys.executable, "-m", "pytest", "test_work.py", "-q", "-p", "no:cacheprovider",
             "--benchmark-autosave", f"--benchmark-storage=file://{storage}",
             "--benchmark-min-rounds=5", "--benchmark-max-time=0.05"],
            repo,
        )  # fmt: skip
    return storage, shas


def test_pytest_benchmark_runs_round_trip_and_their_change_is_found(tmp_path: Path) -> None:
    storage, shas = pytest_benchmark_history(tmp_path, [5.0, 5.0, 5.0, 25.0, 25.0, 25.0])
    repo = tmp_path / "perf.sqlite"
    done = duet("history", "import", storage, "--repo", repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "imported 6 run(s)" in done.stdout
    again = duet("history", "import", storage, "--repo", repo)  # nothing twice
    assert again.returncode == 0 and "6 run(s) already in the repository" in again.stdout
    saved = sorted(storage.rglob("*.json"))
    assert len(saved) == 6
    with Repository.open(repo, create=False) as r:
        (s,) = series(r, benchmark="test_work.py::test_sleep")
        assert s.key.method == "pytest-benchmark" and not s.steps  # absolute only
        assert list(s.versions) == [sha[:12] for sha in shas]  # commit order
        for level, path in zip(s.levels, saved, strict=True):  # each file's own median
            median = json.loads(path.read_text())["benchmarks"][0]["stats"]["median"]
            assert math.isclose(level.ns, median * 1e9, rel_tol=1e-9)
            assert 0 < level.se < math.inf  # from the IQR and the rounds
        versions = {v.label: v for v in r.versions()}
        assert versions[shas[0][:12]].commit == shas[0]
        assert versions[shas[0][:12]].commit_ns is not None
        # the machine from machine_info went into the fingerprint
        (host,) = r.hosts()
        facts = dict(host.facts)
        assert facts["cores"] == os.cpu_count() and facts["python"] == sys.version.split()[0]
        report = detect_changes(r)
    (change,) = report.changes
    assert change.first_bad == shas[3][:12] and change.source == "absolute"
    # 5 ms -> 25 ms of sleep; on a busy machine a 5 ms sleep took up to 12 ms
    assert change.change > 0.5
    shown = duet("history", "changes", "--repo", repo, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["changes"][0]["first_bad"] == shas[3][:12]
    site = tmp_path / "site"
    built = duet("dashboard", "--repo", repo, "-o", site)
    assert built.returncode == 0, built.stderr
    index = (site / "index.html").read_text()
    assert "test_work.py::test_sleep" in index and "imported" in index


def test_an_asv_results_directory_round_trips(tmp_path: Path) -> None:
    """Two commits measured by `asv run --python=same` (an existing environment): the
    parameterized benchmark expanded as asv names it, track_* left out, the machine of
    machine.json in the fingerprint."""
    proj = git_repo(tmp_path / "asv proj")
    (proj / "benchmarks").mkdir()
    (proj / "benchmarks" / "__init__.py").write_text("")
    (proj / "benchmarks" / "bench_sleep.py").write_text(ASV_BENCH)
    conf = {"version": 1, "project": "sleepy", "project_url": "https://example.invalid/",
            "repo": ".", "branches": ["main"], "environment_type": "existing",
            "benchmark_dir": "benchmarks", "results_dir": "results", "html_dir": "html"}  # fmt: skip
    (proj / "asv.conf.json").write_text(json.dumps(conf))
    (proj / ".gitignore").write_text("results/\n")
    home = tmp_path / "home"  # asv keeps the machine's description in ~/.asv-machine.json
    home.mkdir()
    env = {"HOME": str(home)}
    asv = [sys.executable, "-m", "asv"]
    run([*asv, "machine", "--yes", "--machine", "ci-box", "--cpu", "Test CPU 9000",
         "--num_cpu", "4", "--ram", "8GB", "--arch", "x86_64", "--os", "Linux 6.1"], proj, env)  # fmt: skip
    shas = []
    for day, v in ((1, 5.0), (2, 10.0)):
        (proj / "work.txt").write_text(f"{v}\n")
        shas.append(commit(proj, day))
        run([*asv, "run", "--python=same", "--quick", "--machine", "ci-box",
             "--set-commit-hash", shas[-1]], proj, env)  # fmt: skip
    repo = tmp_path / "perf.sqlite"
    done = duet("history", "import", proj / "results", "--repo", repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not times, left out: bench_sleep.track_answer" in done.stdout
    with Repository.open(repo, create=False) as r:
        names = {b for _, b in r.benchmarks()}
        assert names == {
            "bench_sleep.time_sleep",
            "bench_sleep.TimeParams.time_loop(1)",
            "bench_sleep.TimeParams.time_loop(2)",
        }
        (s,) = series(r, benchmark="bench_sleep.TimeParams.time_loop(2)")
        assert list(s.versions) == [shas[0][:12], shas[1][:12]]
        first, second = (lv.ns for lv in s.levels)
        assert 10e6 <= first and 20e6 <= second  # sleeps never end early
        files = sorted((proj / "results" / "ci-box").glob("*-existing-*.json"))
        asv_values = {
            json.loads(f.read_text())["commit_hash"]: json.loads(f.read_text())["results"][
                "bench_sleep.TimeParams.time_loop"
            ][0][1]
            for f in files
        }
        for got, sha in zip((first, second), shas, strict=True):  # n=2: the second value
            assert math.isclose(got, asv_values[sha] * 1e9, rel_tol=1e-12)
        (host,) = r.hosts()
        facts = dict(host.facts)
        assert facts["cpu_model"] == "Test CPU 9000" and facts["cores"] == 4
        assert facts["memory_gib"] == 8 and facts["kernel"] == "Linux 6.1"
    shown = duet("history", "show", "--repo", repo, "--benchmark", "bench_sleep.time_sleep")
    assert shown.returncode == 0 and shas[1][:12] in shown.stdout


def test_pyperf_json_needs_a_version_and_keeps_its_values(tmp_path: Path) -> None:
    out = tmp_path / "sleep.json"
    run([sys.executable, "-m", "pyperf", "timeit", "--processes", "2", "--values", "3",
         "--loops", "1", "--warmups", "1", "--name", "sleep", "-o", str(out),
         "-s", "import time", "time.sleep(0.002)"], tmp_path)  # fmt: skip
    repo = tmp_path / "perf.sqlite"
    refused = duet("history", "import", out, "--repo", repo)
    assert refused.returncode == 2 and "names no commit; give --label" in refused.stderr
    assert not repo.exists()  # nothing added, nothing created
    done = duet("history", "import", out, "--repo", repo, "--label", "v1.0")
    assert done.returncode == 0, done.stdout + done.stderr
    (run_,) = read(out)
    (result,) = run_.results
    assert result.benchmark == "sleep" and result.samples == 6 and len(result.values_ns) == 6
    assert result.value_ns >= 2e6
    with Repository.open(repo, create=False) as r:
        (s,) = series(r, benchmark="sleep")
        assert s.versions == ("v1.0",) and math.isclose(s.levels[0].ns, result.value_ns)
        table = r.iterations(r.experiments()[0].id)
        assert sorted(table["duration_ns"]) == sorted(round(v) for v in result.values_ns)


def test_github_action_benchmark_data_js(tmp_path: Path) -> None:
    """data.js as the action writes it from pytest-benchmark's JSON (tool 'pytest':
    value = operations per second, unit iter/sec, range = stddev)."""
    storage, shas = pytest_benchmark_history(tmp_path, [5.0, 25.0])
    entries = []
    for sha, path in zip(shas, sorted(storage.rglob("*.json")), strict=True):
        stats = json.loads(path.read_text())["benchmarks"][0]["stats"]
        entries.append(
            {
                "commit": {"id": sha, "timestamp": "2026-01-01T12:00:00Z", "message": "m"},
                "date": 1767268800000,
                "tool": "pytest",
                "benches": [
                    {"name": "test_work.py::test_sleep", "value": 1 / stats["mean"],
                     "unit": "iter/sec", "range": f"stddev: {stats['stddev']}",
                     "extra": f"mean: {stats['mean']} sec\nrounds: {stats['rounds']}"},
                    {"name": "memory", "value": 12, "unit": "MB"},
                ],
            }
        )  # fmt: skip
    doc = {"lastUpdate": 1, "repoUrl": "https://example.invalid/r", "entries": {"Python": entries}}
    data = tmp_path / "data.js"
    data.write_text("window.BENCHMARK_DATA = " + json.dumps(doc, indent=2))
    repo = tmp_path / "perf.sqlite"
    done = duet("history", "import", data, "--repo", repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not times, left out: memory (MB)" in done.stdout
    with Repository.open(repo, create=False) as r:
        (s,) = series(r, benchmark="test_work.py::test_sleep")
        assert s.key.suite == "Python" and len(s.levels) == 2
        assert s.levels[1].ns > 1.5 * s.levels[0].ns
        mean0 = json.loads(sorted(storage.rglob("*.json"))[0].read_text())["benchmarks"][0]
        assert math.isclose(s.levels[0].ns, mean0["stats"]["mean"] * 1e9, rel_tol=1e-9)


@pytest.mark.parametrize(
    ("content", "tool", "said"),
    [
        ('{"benchmarks": [], "version": "1.0"}', "pytest-benchmark", "expected a saved run"),
        ('{"machine_info": {}, "benchmarks": [{"name": "x"}]}', "pytest-benchmark",
         "every benchmark with its stats"),
        ('{"version": "1.0", "benchmarks": [{"metadata": {}, "runs": []}]}', "pyperf",
         "a name in every benchmark's metadata"),
        ('{"entries": {}}', "github-action-benchmark", "starting 'window.BENCHMARK_DATA = '"),
        ("not json at all", None, "not a results file of asv, pytest-benchmark, pyperf"),
        ('{"a": 1}', None, "JSON of no known tool"),
        ('{"commit_hash": "ab12cd3", "results": {}}', "asv", "version 2, result_columns"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_what_it_says_is_refused(
    tmp_path: Path, content: str, tool: str | None, said: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(content)
    if tool == "asv":  # an asv file needs its machine.json beside it
        (tmp_path / "machine.json").write_text('{"machine": "m", "version": 1}')
    with pytest.raises(ImportFileError, match="not|expected|no known"):
        read(path, tool)
    repo = tmp_path / "perf.sqlite"
    args = ["history", "import", path, "--repo", repo] + (["--tool", tool] if tool else [])
    done = duet(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not repo.exists()


#: a deadline that only catches a hang: a FIFO opened for reading blocks until a writer comes
DEADLINE_S = 120


def _import_within_deadline(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "duetbench", "history", "import", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )


@pytest.mark.parametrize("tool", [None, "pyperf", "pytest-benchmark", "asv"])
def test_a_fifo_given_as_the_file_is_refused_not_waited_for(
    tmp_path: Path, tool: str | None
) -> None:
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    repo = tmp_path / "perf.sqlite"
    done = _import_within_deadline(fifo, "--repo", repo, *(["--tool", tool] if tool else []))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "results.json" in done.stderr and "FIFO (named pipe), not a regular file" in done.stderr
    assert not repo.exists()


def test_a_fifo_inside_a_directory_is_refused_not_waited_for(tmp_path: Path) -> None:
    """A directory the importer scans: pytest-benchmark's storage (every *.json below it),
    an asv machine's directory (its result files beside machine.json)."""
    storage = tmp_path / "storage" / "Linux-CPython-3.11-64bit"
    storage.mkdir(parents=True)
    os.mkfifo(storage / "0001_abc.json")
    machine = tmp_path / "asv" / "box"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text('{"machine": "box", "version": 1}')
    os.mkfifo(machine / "ab12cd34-existing-py.json")
    for directory, name in ((tmp_path / "storage", "0001_abc.json"),
                            (tmp_path / "asv", "ab12cd34-existing-py.json")):  # fmt: skip
        repo = tmp_path / "perf.sqlite"
        done = _import_within_deadline(directory, "--repo", repo)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert name in done.stderr and "FIFO (named pipe), not a regular file" in done.stderr
        assert not repo.exists()


@pytest.mark.parametrize("name", ["bench.json", "pyperformance.json"])
def test_the_importer_reads_pyperf_as_duet_run_does(name: str) -> None:
    """One reader of pyperf's JSON (parse/pyperf.py's read_pyperf_file): what `duet history
    import` keeps of a file are the values the parser gives `duet run` (per loop, per inner
    loop), benchmark by benchmark; warm-ups and calibration runs are left out by both."""
    from duetbench.parse.pyperf import parse_pyperf
    from duetbench.parse.registry import SideContext

    path = Path(__file__).parent / "fixtures" / "parsers" / "pyperf" / name
    (run_,) = read(path, "pyperf")
    ctx = SideContext(
        side_dir=path.parent,
        result_files=(Path(name),),
        pair="A",
        benchmark="bench",
        method="aduet",
    )
    rows = parse_pyperf(ctx)
    rows = rows[~rows["filler"]]
    assert {r.benchmark for r in run_.results} == set(rows["workload"])
    for result in run_.results:
        parsed = sorted(rows.loc[rows["workload"] == result.benchmark, "duration_ns"])
        imported = sorted(result.values_ns)
        assert len(parsed) == len(imported) == result.samples > 0
        assert all(abs(p - i) <= 0.5 + 1e-12 * i for p, i in zip(parsed, imported, strict=True))
        assert math.isclose(result.value_ns, sum(imported) / len(imported))
