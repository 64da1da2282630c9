"""pyperf scripts as they are, through the real CLI: a team's existing pyperf benchmarks
run under duet without a change to them.

- an unmodified pyperformance benchmark (the `pyperformance` package's own
  ``bm_nbody/run_benchmark.py``) runs with seqn, aduet and sduet in one `duet run`,
  side A under Debian's /usr/bin/python3 and side B under this interpreter; under
  sduet duet's pyperf shim makes every warm-up and value of both sides start after
  the same handshake (checked by the order of events, not by timing);
- the iteration duration is pyperf's own time per loop;
- a loop-count mismatch between A and B is a clear error (exit 2);
- examples/pyperformance runs from a read-only checkout (nothing written into it).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from tests.helpers import ROOT, run_duet

from duetbench.errors import ResultFileError
from duetbench.parse.pyperf import check_loops
from duetbench.process import process, validate_table
from duetbench.sync import helper_path

SYSTEM_PYTHON = Path("/usr/bin/python3")
PYPERF_EXAMPLE = ROOT / "examples" / "pyperformance"
SHIM_LOG = "pyperf-sync.csv"


def _pyperformance_benchmark(name: str) -> Path:
    try:
        import pyperformance
    except ImportError:
        pytest.fail(
            "needs pyperformance (in the `test` extra): python3 -m pip install pyperformance"
        )
    path = Path(pyperformance.__file__).parent / "data-files" / "benchmarks" / name
    assert (path / "run_benchmark.py").is_file(), f"pyperformance has no {name}"
    return path / "run_benchmark.py"


def _pyperf_lib(tmp_path: Path) -> Path:
    """A directory holding only pyperf, for /usr/bin/python3 (which has none)."""
    import pyperf

    lib = tmp_path / "py lib"
    lib.mkdir()
    (lib / "pyperf").symlink_to(Path(pyperf.__file__).parent)
    return lib


def _q(path: Path | str) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def _ns(value: Any, factor: int = 1) -> int:
    """pyperf's JSON number (seconds) x factor as ns, exactly, half to even."""
    d = Decimal(repr(value)) * factor * 1_000_000_000
    return int(d.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def _shim_log(side_dir: Path) -> list[dict[str, int]]:
    with open(side_dir / SHIM_LOG, newline="") as fh:
        return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _write_config(tmp_path: Path, benchmarks: dict[str, Any], **experiment: Any) -> Path:
    cfg = {
        "experiment": {"seed": 16, "schedule": "rmit", "timeout": "120s", **experiment},
        "defaults": {"harness": "pyperf", "warmup": 0},
        "benchmarks": benchmarks,
    }
    path = tmp_path / "duet.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_unmodified_pyperformance_benchmark_all_methods_sduet_synchronized(
    tmp_path: Path,
) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.fail("needs Debian's /usr/bin/python3 (side A): apt-get install python3")
    script = _pyperformance_benchmark("bm_nbody")
    work = tmp_path / "my work"
    work.mkdir()
    lib = _pyperf_lib(work)
    # 2 worker processes x (1 warm-up + 3 values) of 2 loops; B does 4x A's work per loop,
    # so without the handshake A would run far ahead. No --inherit-environ: the shim
    # passes the handshake's variables to pyperf's workers itself.
    args = "--processes 2 --values 3 --warmups 1 --loops 2 --quiet"
    out = '-o "$DUET_OUTPUT_DIR/result.json"'
    config = _write_config(
        work,
        {
            "nbody": {
                "A": {
                    "command": f"{_q(SYSTEM_PYTHON)} {_q(script)} --iterations 1000 {args} {out}",
                    "env": {"PYTHONPATH": str(lib)},
                },
                "B": {
                    "command": f"{_q(sys.executable)} {_q(script)} --iterations 4000 {args} {out}"
                },
            }
        },
        name="pyperf-sduet",
        repetitions={"seqn": 1, "aduet": 1, "sduet": 1},
    )
    results = tmp_path / "the results"
    r = run_duet("run", str(config), "-o", str(results), "--no-compare", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    root = results / "pyperf-sduet"
    runs = root / "runs"

    # outside sduet the shim is not there: no handshake, no log
    for run_dir in (runs / "nbody.seqn.000.A", runs / "nbody.seqn.000.B", runs / "nbody.aduet.000"):
        assert list(run_dir.rglob(SHIM_LOG)) == [], run_dir

    # sduet: every warm-up and value of both sides passed the coordinator, in lockstep
    sduet = runs / "nbody.sduet.000"
    record = json.loads((sduet / "run.json").read_text())
    assert record["status"] == "ok", record
    assert record["sync"]["go_count"] == 8  # 2 workers x (1 warm-up + 3 values)
    logs = {pair: _shim_log(sduet / pair) for pair in ("A", "B")}
    for pair, log in logs.items():
        doc = json.loads((sduet / pair / "result.json").read_text())
        runs_json = doc["benchmarks"][0]["runs"]
        measured = sum(
            len(run.get("warmups", [])) + len(run.get("values", [])) for run in runs_json
        )
        assert len(log) == measured == 8, (pair, log)
        assert len({row["pid"] for row in log}) == 2  # both worker processes took part
        assert [row["index"] for row in log] == [0, 1, 2, 3] * 2
        assert {row["loops"] for row in log} == {2}
    for k in range(8):
        a, b = logs["A"][k], logs["B"][k]
        # neither side got go k before both had said ready k: each value k of A started
        # after B reached its handshake k and vice versa (causal order, no time limits)
        assert max(a["ready_ns"], b["ready_ns"]) <= min(a["go_ns"], b["go_ns"]), k
        for log in (logs["A"], logs["B"]):
            if k + 1 < len(log):  # and before the next handshake of its side
                assert log[k]["go_ns"] <= log[k + 1]["ready_ns"]

    # the iteration duration is pyperf's time per loop; the raw value is kept
    table = process(root).table
    for method in ("seqn", "aduet", "sduet"):
        for pair in ("A", "B"):
            rows = table[(table["method"] == method) & (table["pair"] == pair)]
            run_id = "nbody.sduet.000" if method == "sduet" else f"nbody.{method}.000"
            if method == "seqn":
                run_id += f".{pair}"
            doc = json.loads((runs / run_id / pair / "result.json").read_text())
            values = [v for run in doc["benchmarks"][0]["runs"] for v in run.get("values", [])]
            assert len(values) == 6
            assert rows["duration_ns"].tolist() == [_ns(v) for v in values], (method, pair)
            assert rows["raw_ns"].tolist() == [_ns(v, 2) for v in values]
            assert set(rows["loops"]) == {2}

    # and the whole chain answers
    r = run_duet("compare", str(root), "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr


def test_loop_count_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    script = _pyperformance_benchmark("bm_richards")
    base = f"{_q(sys.executable)} {_q(script)} --processes 1 --values 2 --warmups 1 --quiet"
    out = '-o "$DUET_OUTPUT_DIR/result.json"'
    config = _write_config(
        tmp_path,
        {
            "richards": {
                "harness": "pyperformance",
                "A": {"command": f"{base} --loops 1 {out}"},
                "B": {"command": f"{base} --loops 2 {out}"},
            }
        },
        name="loops",
        repetitions={"seqn": 1, "aduet": 0, "sduet": 0},
    )
    results = tmp_path / "results"
    r = run_duet("run", str(config), "-o", str(results), "--no-compare", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    root = results / "loops"
    for command in (("process", str(root), "-o", str(tmp_path / "t.csv")), ("compare", str(root))):
        r = run_duet(*command)
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        message = r.stderr
        assert "benchmark 'richards'" in message
        assert "side A ran 1 loop per value, side B 2 loops" in message
        assert "--loops 2" in message
    assert not (tmp_path / "t.csv").exists()


def _table(loops_a: list[Any], loops_b: list[Any], runs: list[int]) -> pd.DataFrame:
    rows = []
    for pair, loops in (("A", loops_a), ("B", loops_b)):
        for i, (n, run) in enumerate(zip(loops, runs, strict=True)):
            rows.append(
                {
                    "benchmark": "nbody",
                    "method": "sduet",
                    "run": run,
                    "pair": pair,
                    "iteration": i,
                    "duration_ns": 1000,
                    "loops": n,
                }
            )
    return pd.DataFrame(rows)


def test_check_loops() -> None:
    assert check_loops(_table([4, 4, 8, 8], [4, 4, 8, 8], [0, 0, 1, 1])) == []
    # calibrated per run: the same on both sides of run 0, not of run 1
    (msg,) = check_loops(_table([4, 4, 8, 8], [4, 4, 16, 16], [0, 0, 1, 1]))
    assert msg.startswith("benchmark 'nbody': side A ran 8 loops per value, side B 16 loops")
    assert "(sduet run 1; 1 of 2 runs differ)" in msg
    assert "`--loops 16`" in msg
    # rows of other harnesses have no loop count: not checked
    other = _table([None, None], [None, None], [0, 0])
    assert check_loops(other) == []
    assert check_loops(other.drop(columns=["loops"])) == []


def test_a_saved_table_with_mismatched_loops_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    _table([2, 2], [4, 4], [0, 0]).to_csv(path, index=False)
    with pytest.raises(ResultFileError, match="side A ran 2 loops per value, side B 4 loops"):
        validate_table(pd.read_csv(path), path)
    r = run_duet("compare", str(path))
    assert r.returncode == 2 and "table.csv" in r.stderr, r.stderr


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(folder))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    st = folder.lstat()
    out["."] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _chmod_tree(folder: Path, *, writable: bool) -> None:
    for dirpath, _, filenames in os.walk(folder):
        for p in [Path(dirpath), *(Path(dirpath) / f for f in filenames)]:
            if p.is_symlink():
                continue
            mode = p.stat().st_mode
            p.chmod(mode | stat.S_IWUSR if writable else mode & ~0o222)


def test_example_runs_from_a_read_only_checkout(tmp_path: Path) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.fail("needs Debian's /usr/bin/python3 (side A): apt-get install python3")
    _pyperformance_benchmark("bm_richards")
    example = tmp_path / "read only" / "pyperformance"
    shutil.copytree(
        PYPERF_EXAMPLE, example, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    # one benchmark of each of the example's configs, cut down to the fastest settings
    own = yaml.safe_load((example / "duet.yml").read_text())
    suite = yaml.safe_load((example / "duet.pyperformance.yml").read_text())
    tiny = " --processes 1 --warmups 1 --values 2 --loops 1"
    benchmarks = {"json": own["benchmarks"]["json"], "richards": suite["benchmarks"]["richards"]}
    for bench in benchmarks.values():
        for side in ("A", "B"):
            command = bench[side]["command"].replace(
                " --processes 3 --values 3 --warmups 1 --loops 1", ""
            )
            bench[side]["command"] = command.replace(" --quiet", " --quiet" + tiny)
    suite["experiment"].update(name="ro-example", repetitions={"seqn": 1, "aduet": 1, "sduet": 1})
    suite["benchmarks"] = benchmarks
    (example / "duet.tiny.yml").write_text(yaml.safe_dump(suite, sort_keys=False))

    # read-only as a checkout can be; tests run as root, who may write anyway, so what
    # counts is the comparison of the folder before and after
    _chmod_tree(example, writable=False)
    before = _snapshot(example)
    try:
        elsewhere = tmp_path / "cwd"
        elsewhere.mkdir()
        r = run_duet(
            "run", str(example / "duet.tiny.yml"), "-o", "results", "--no-compare",
            cwd=elsewhere, timeout=300,
        )  # fmt: skip
        after = _snapshot(example)
    finally:
        _chmod_tree(example, writable=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert after == before, sorted(set(after.items()) ^ set(before.items()))

    root = elsewhere / "results" / "ro-example"
    report = process(root)
    assert report.problems == []
    table = report.table
    for bench in ("json", "richards"):
        for method in ("seqn", "aduet", "sduet"):
            for pair in ("A", "B"):
                rows = table[
                    (table["benchmark"] == bench)
                    & (table["method"] == method)
                    & (table["pair"] == pair)
                ]
                assert len(rows) == 2, (bench, method, pair)
        sduet = root / "runs" / f"{bench}.sduet.000"
        assert json.loads((sduet / "run.json").read_text())["sync"]["go_count"] == 3
        for pair in ("A", "B"):
            assert len(_shim_log(sduet / pair)) == 3  # 1 warm-up + 2 values, each synchronized
            assert (sduet / pair / ".interp" / f"python-{pair}").is_symlink()


def test_shim_is_installed_with_the_package() -> None:
    shim = helper_path("pyperf")
    assert (shim / "sitecustomize.py").is_file()
    assert sorted(p.name for p in shim.iterdir() if p.suffix == ".py") == ["sitecustomize.py"]


def _shim_env(coord: Any, pair: str, out: Path, extra_path: str = "") -> dict[str, str]:
    path = str(helper_path("pyperf")) + (os.pathsep + extra_path if extra_path else "")
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": path,
        "DUET_OUTPUT_DIR": str(out),
        **coord.env(pair),
    }


def test_shim_synchronizes_python_m_pyperf_timeit(tmp_path: Path) -> None:
    # `python -m pyperf` looks pyperf up before importing it: the shim must still patch it
    from duetbench.sync import SyncCoordinator

    argv = ["-m", "pyperf", "timeit", "-p", "2", "-n", "2", "-w", "1", "-l", "10", "-q"]
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        procs = {}
        for pair in ("A", "B"):
            out = tmp_path / pair
            out.mkdir()
            stmt = "sum(range(100))" if pair == "A" else "sum(range(4000))"
            procs[pair] = subprocess.Popen(
                [sys.executable, *argv, stmt, "-o", str(out / "r.json")],
                env=_shim_env(coord, pair, out),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        for pair, proc in procs.items():
            _, err = proc.communicate(timeout=120)
            coord.side_finished(pair)
            assert proc.returncode == 0, err
    assert coord.protocol_errors == []
    events = coord.go_events
    assert len(events) == 6 and all(set(e.pairs) == {"A", "B"} for e in events)
    for pair in ("A", "B"):
        assert len(_shim_log(tmp_path / pair)) == 6  # 2 workers x (1 warm-up + 2 values)


def test_shim_keeps_the_sitecustomize_it_hides_and_is_idle_outside_sduet(tmp_path: Path) -> None:
    other = tmp_path / "site dir"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import os\nos.environ['HIDDEN_SITECUSTOMIZE'] = 'ran'\n"
    )
    code = (
        "import os, sys, pyperf; "
        "print(os.environ.get('HIDDEN_SITECUSTOMIZE'), "
        "getattr(pyperf, '_duetbench_pyperf_shim', False))"
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(helper_path("pyperf")), str(other)]),
    }
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ran", "False"]  # no DUET_SYNC_DIR: pyperf untouched
    r = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "DUET_SYNC_DIR": str(tmp_path), "DUET_PAIR": "A"},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ran", "True"]


def test_a_side_can_keep_the_shim_away(tmp_path: Path) -> None:
    # a script that does the handshake itself sets DUET_PYPERF_SHIM=0 for its side
    script = _pyperformance_benchmark("bm_richards")
    cmd = (
        f"{_q(sys.executable)} {_q(script)} --processes 1 --values 1 --warmups 0 --loops 1 "
        '--quiet -o "$DUET_OUTPUT_DIR/result.json"'
    )
    config = _write_config(
        tmp_path,
        {
            "richards": {
                "A": {"command": cmd},
                "B": {"command": cmd, "env": {"DUET_PYPERF_SHIM": "0"}},
            }
        },
        name="optout",
        repetitions={"seqn": 0, "aduet": 0, "sduet": 1},
    )
    r = run_duet("run", str(config), "-o", str(tmp_path / "res"), "--no-compare", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    sduet = tmp_path / "res" / "optout" / "runs" / "richards.sduet.000"
    assert len(_shim_log(sduet / "A")) == 1
    assert not (sduet / "B" / SHIM_LOG).exists()


def test_shim_refuses_a_pyperf_it_does_not_know(tmp_path: Path) -> None:
    # a pyperf without the internals the shim wraps must fail loudly, never run unsynchronized
    fake = tmp_path / "fakepyperf"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '9.0'\n")
    (fake / "_runner.py").write_text("class Runner:\n    pass\n")
    (fake / "_worker.py").write_text("class WorkerTask:\n    pass\n")
    spec = importlib.util.spec_from_file_location(
        "_shim_under_test", helper_path("pyperf") / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    sys.path.insert(0, str(tmp_path))
    try:
        import fakepyperf  # type: ignore[import-not-found]

        with pytest.raises(shim.ShimError, match=r"pyperf 9\.0 lacks .*_set_args"):
            shim.patch_pyperf(fakepyperf, {"DUET_SYNC_DIR": str(tmp_path)})
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("fakepyperf")]:
            del sys.modules[name]
