"""duet micro's worker as a subprocess, in interpreters without duetbench.

Each test runs ``duetbench/micro/worker.py`` under ``/usr/bin/python3`` (Debian's
3.11, no duetbench installed) and under the Python running the tests, with
``PYTHONPATH`` removed, against the known-work package of ``examples/micro``
(version A does the base work, version B a known multiple of it). Ratios are
taken pairwise, sample k of B over sample k of A in a synchronous duet, with
loose bounds: nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
from tests.helpers import run_duet as run_cli

from duetbench.errors import ResultFileError
from duetbench.micro import (
    MicroError,
    calibrate,
    discover,
    evaluation_mismatches,
    worker_command,
    worker_path,
)
from duetbench.parse import micro as micro_format
from duetbench.parse.micro import parse_micro
from duetbench.parse.registry import SideContext
from duetbench.process import process
from duetbench.sync import SyncCoordinator

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "micro"
SYSTEM_PYTHON = "/usr/bin/python3"
PYTHONS = [
    pytest.param(SYSTEM_PYTHON, id="debian-python3"),
    pytest.param(sys.executable, id="python3"),
]
SUITE_BENCH = "bench_known.TimeKnown.time_work('{variant}', '100us')"
HELPERS = ("worker.py", "calibration.py", "discovery.py", "handshake.py")
SIDE_TIMEOUT_S = 120  # catches a hang, never a slow machine
RUNS = 4  # lockstep runs per known ratio, CPUs balanced between the sides


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a side: no PYTHONPATH (the worker needs no duetbench), no duet."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("DUET_")}
    env.update(extra)
    return env


def run_worker(
    python: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, str(worker_path()), *args],
        env=env or clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=SIDE_TIMEOUT_S,
    )


def side_rows(directory: Path, pair: str = "A") -> pd.DataFrame:
    ctx = SideContext(side_dir=directory, result_files=(), pair=pair, benchmark="b", method="sduet")
    return parse_micro(ctx)


@pytest.fixture
def known(tmp_path: Path) -> Path:
    """A copy of examples/micro in a directory whose name has a space."""
    dest = tmp_path / "known work"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_system_python_has_no_duetbench() -> None:
    """The premise of these tests: the Debian interpreter cannot import duetbench."""
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import duetbench"], env=clean_env(), capture_output=True, text=True
    )
    assert done.returncode != 0 and "No module named 'duetbench'" in done.stderr


def test_worker_files_are_standard_library_and_python38_syntax() -> None:
    for name in HELPERS:
        source = (worker_path().parent / name).read_text()
        tree = ast.parse(source, filename=name, feature_version=(3, 8))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{name}: relative import (cannot run outside the package)"
                assert not (node.module or "").startswith("duetbench"), name
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("duetbench") for a in node.names), name


def test_worker_and_parser_agree_on_the_file_format() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_micro_worker_under_test", worker_path())
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert worker.ERROR_FILE == micro_format.ERROR_FILE
    for name in ("SAMPLES_FILE", "META_FILE", "COLUMNS", "PAIRED_COLUMNS", "FORMAT_VERSION"):
        assert getattr(worker.sampling, name) == getattr(micro_format, name), name


# ------------------------------------------------------------------ discovery


@pytest.mark.parametrize("python", PYTHONS)
def test_asv_suite_params_expand_to_one_benchmark_per_combination(python: str, known: Path) -> None:
    found = discover(python, str(known / "asv_suite" / "benchmarks"), paths=[known / "v_a"])
    by_name = {b.name: b for b in found}
    combos = [
        f"bench_known.TimeKnown.time_work({v!r}, {s!r})"
        for v in ("aa", "p10", "x2")
        for s in ("5us", "100us")
    ]
    runnable = [b.name for b in found if b.runnable]
    assert runnable == [*combos, "bench_known.TimeCached.time_sum", "bench_known.time_module_level"]
    first = by_name[combos[0]]
    assert first.params == ("'aa'", "'5us'") and first.param_names == ("variant", "size")
    assert first.timeout_s == 60 and first.kind == "time"
    assert by_name["bench_known.time_module_level"].hints == {"number": 10}
    skipped = {b.name: b.skip_reason for b in found if not b.runnable}
    assert set(skipped) == {
        "bench_known.mem_list",
        "bench_known.peakmem_list",
        "bench_known.track_steps",
    }
    assert "peak memory" in skipped["bench_known.peakmem_list"]


@pytest.mark.parametrize("python", PYTHONS)
def test_asv_setup_and_setup_cache_run_for_the_chosen_combination(
    python: str, known: Path, tmp_path: Path
) -> None:
    suite = str(known / "asv_suite" / "benchmarks")
    for bench in (SUITE_BENCH.format(variant="p10"), "bench_known.TimeCached.time_sum"):
        out = tmp_path / "out"
        done = run_worker(
            python, suite, "--benchmark", bench, "--path", str(known / "v_b"),
            "--output", str(out), "--samples", "3", "--min-sample-time", "0.0002",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        rows = side_rows(out)
        assert (~rows["filler"]).sum() == 3
        assert set(rows["workload"]) == {bench}


def test_bench_file_and_pytest_benchmark_style(known: Path) -> None:
    found = discover(sys.executable, str(known / "bench_known.py"), paths=[known / "v_a"])
    assert [(b.name, b.kind) for b in found] == [
        ("bench_100us", "bench"),
        ("bench_5us", "bench"),
        ("test_5ms", "pytest-benchmark"),
    ]
    cal = calibrate(sys.executable, found[2].target, "test_5ms", paths=[known / "v_a"])
    assert cal.evaluations >= 1 and cal.per_evaluation_ns is not None


def test_module_targets_and_unknown_names(known: Path, tmp_path: Path) -> None:
    found = discover(SYSTEM_PYTHON, "knownver:x2_100us", paths=[known / "v_b"])
    assert [(b.name, b.kind) for b in found] == [("x2_100us", "function")]
    done = run_worker(
        SYSTEM_PYTHON, "knownver:aa_5us", "--path", str(known / "v_a"),
        "--benchmark", "nothing", "--output", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2
    assert "has no benchmark 'nothing'; it has: aa_5us" in done.stderr
    with pytest.raises(MicroError, match="has no attribute 'nope'"):
        discover(SYSTEM_PYTHON, "knownver:nope", paths=[known / "v_a"])


# ------------------------------------------------------------------ measuring


def start_duet(
    tmp_path: Path,
    python: str,
    sides: dict[str, tuple[str, str | None, Path]],
    *,
    evaluations: int,
    samples: int,
    warmup: int = 1,
    cpus: dict[str, int] | None = None,
) -> tuple[dict[str, subprocess.CompletedProcess[str]], SyncCoordinator]:
    """Both sides at once under a real sduet coordinator; each exit reported to it
    (``cpus``: the CPU each side is pinned to, as `cpus: pinned` does)."""
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    with SyncCoordinator.create(tmp_path / "sync") as coord:
        procs = {
            pair: subprocess.Popen(
                worker_command(
                    python,
                    target,
                    benchmark=bench,
                    paths=[path],
                    evaluations=evaluations,
                    samples=samples,
                    warmup=warmup,
                    output=tmp_path / f"out {pair}",
                ),  # fmt: skip
                env=clean_env(**coord.env(pair), DUET_SYNC_TIMEOUT="60"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for pair, (target, bench, path) in sides.items()
        }
        for pair, cpu in (cpus or {}).items():
            os.sched_setaffinity(procs[pair].pid, {cpu})

        def reap(pair: str) -> None:
            try:
                out, err = procs[pair].communicate(timeout=SIDE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                procs[pair].kill()
                out, err = procs[pair].communicate()
            results[pair] = subprocess.CompletedProcess([], procs[pair].returncode, out, err)
            coord.side_finished(pair)

        threads = [threading.Thread(target=reap, args=(p,)) for p in sides]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return results, coord


def run_duet(
    tmp_path: Path,
    python: str,
    sides: dict[str, tuple[str, str | None, Path]],
    *,
    evaluations: int,
    samples: int,
    cpus: dict[str, int] | None = None,
) -> tuple[dict[str, pd.DataFrame], SyncCoordinator]:
    """A duet in which both sides succeed: their rows, and the coordinator's record."""
    results, coord = start_duet(
        tmp_path, python, sides, evaluations=evaluations, samples=samples, cpus=cpus
    )
    for pair, done in results.items():
        assert done.returncode == 0, f"side {pair}: {done.stderr}"
        assert done.stdout == "", f"side {pair} printed on stdout"
    return {pair: side_rows(tmp_path / f"out {pair}", pair) for pair in sides}, coord


def assert_lockstep(coord: SyncCoordinator, rows: dict[str, pd.DataFrame]) -> None:
    """Timing-free: every sample of every side starts after its go and before the next go."""
    gos = coord.go_times_ns
    assert all(set(e.pairs) == set(rows) for e in coord.go_events), "a go released one side only"
    for pair, df in rows.items():
        starts = df.sort_values("iteration")["start_ns"].tolist()
        assert len(starts) == len(gos), f"side {pair}: {len(starts)} samples, {len(gos)} gos"
        for k, start in enumerate(starts):
            assert gos[k] <= start, f"side {pair} started sample {k} before its go"
            if k + 1 < len(gos):
                assert start < gos[k + 1], f"side {pair} started sample {k} after go {k + 1}"


def ratios(rows: dict[str, pd.DataFrame]) -> tuple[float, float]:
    """B/A of the fastest samples, and the median of the pairwise (sample k) ratios."""
    a = rows["A"].loc[~rows["A"]["filler"]].set_index("iteration")["ns_per_evaluation"]
    b = rows["B"].loc[~rows["B"]["filler"]].set_index("iteration")["ns_per_evaluation"]
    assert list(a.index) == list(b.index)
    return b.min() / a.min(), statistics.median((b / a).tolist())


def _sides(known: Path, variant: str, suite: bool) -> dict[str, tuple[str, str | None, Path]]:
    if suite:
        target, bench = str(known / "asv_suite" / "benchmarks"), SUITE_BENCH.format(variant=variant)
    else:
        target, bench = f"knownver:{variant}_100us", None
    return {"A": (target, bench, known / "v_a"), "B": (target, bench, known / "v_b")}


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize(("variant", "low", "high"), [("x2", 1.41, 2.83), ("aa", 0.71, 1.41)])
@pytest.mark.parametrize("suite", [False, True], ids=["function", "asv-suite"])
def test_known_ratio_measured_in_lockstep(
    python: str, variant: str, low: float, high: float, suite: bool, known: Path, tmp_path: Path
) -> None:
    sides = _sides(known, variant, suite)
    target, bench, path = sides["A"]
    evaluations = calibrate(python, target, bench, paths=[path]).evaluations
    # Four runs, each side pinned to each CPU in two of them, as `cpus: pinned` balances its
    # draw: this VM's two virtual CPUs are not alike -- two identical loops pinned one to
    # each ran 1.0x to 1.47x apart in CPU time, in states that last seconds (the host's other
    # tenants), and one unpinned A/A run read 0.667. Balanced, such a slow CPU slows A in
    # half the runs and B in the other half, and the geometric mean cancels it.
    cpus = sorted(os.sched_getaffinity(0))[:2]
    fastest, pairwise = [], []
    for k in range(RUNS if len(cpus) == 2 else 1):
        pins = {"A": cpus[k % 2], "B": cpus[1 - k % 2]} if len(cpus) == 2 else None
        out = tmp_path / f"run {k}"
        out.mkdir()
        rows, coord = run_duet(out, python, sides, evaluations=evaluations, samples=40, cpus=pins)
        for df in rows.values():
            assert set(df["evaluations"]) == {evaluations}  # B was told A's count: equal work
            assert df["harness_warmup"].sum() == 1 and not df["calibration"].any()
        assert_lockstep(coord, rows)
        f, p = ratios(rows)
        fastest.append(f)
        pairwise.append(p)
    # The minimum (Chen & Revels: timing noise only adds): on this shared 2-core VM, with
    # other tenants keeping it at load 12, single samples vary by 100 % and more, and
    # the pairwise median strayed to 1.6 and 2.3 for a 2x pair; the minima stayed 1.88-2.07.
    # Runs of 40 samples, no interval: on a quiet machine single lockstep runs read 2.21
    # for 2x and 0.886 for A/A once each (docs/micro.md, "Measured here"), and beside two
    # busy loops A/A read 0.829 once (a loop shares one side's CPU more); the bounds, the
    # geometric middles, catch a wrong count (1x or 4x for 2x, 2x for A/A) or a swapped
    # side (0.5x), the accuracy is duet micro's tests'.
    ratio = statistics.geometric_mean(fastest)
    kind = "suite" if suite else "function"
    print(
        f"\n{variant} ({python}, {kind}): B/A fastest {ratio:.3f} "
        f"(runs {', '.join(f'{f:.3f}' for f in fastest)}), "
        f"pairwise median {statistics.geometric_mean(pairwise):.3f}"
    )
    assert low < ratio < high


def test_a_side_failing_in_setup_does_not_hold_the_other(known: Path, tmp_path: Path) -> None:
    sides = _sides(known, "aa", suite=True)
    sides["B"] = (sides["B"][0], SUITE_BENCH.format(variant="aa"), known / "nowhere")  # no knownver
    results, coord = start_duet(tmp_path, SYSTEM_PYTHON, sides, evaluations=3, samples=6)
    assert results["B"].returncode == 1 and "import failed" in results["B"].stderr
    assert results["A"].returncode == 0, results["A"].stderr
    assert (~side_rows(tmp_path / "out A")["filler"]).sum() == 6
    assert len(coord.go_times_ns) == 7 and all(e.pairs == ("A",) for e in coord.go_events)


def test_calibrating_side_waits_for_no_one_and_marks_its_trials(
    known: Path, tmp_path: Path
) -> None:
    """Without --evaluations the worker calibrates itself; trials are filler rows, not handshaken."""
    out = tmp_path / "out"
    done = run_worker(
        SYSTEM_PYTHON, "knownver:aa_5us", "--path", str(known / "v_a"), "--output", str(out),
        "--samples", "5", "--warmup", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = side_rows(out)
    phases = list(zip(rows["calibration"], rows["harness_warmup"], rows["filler"], strict=True))
    n_cal = int(rows["calibration"].sum())
    assert n_cal >= 1 + 3  # at least one growth trial and the three confirmations
    assert (
        phases
        == [(True, False, True)] * n_cal + [(False, True, True)] * 2 + [(False, False, False)] * 5
    )
    meta = json.loads((out / micro_format.META_FILE).read_text())
    measured = rows.loc[~rows["filler"], "evaluations"]
    assert set(measured) == {meta["calibration"]["evaluations"]} and not meta["calibration"]["told"]
    assert meta["python"]["executable"] == SYSTEM_PYTHON and meta["gc_disabled"]


GC_PROBE = """
import gc, os
SEEN = []

def bench_probe():
    SEEN.append(gc.isenabled())

def teardown():
    with open(os.environ["GC_PROBE_OUT"], "w") as f:
        f.write(",".join(str(int(s)) for s in SEEN))
"""


@pytest.mark.parametrize(("flags", "enabled"), [((), "0"), (("--keep-gc",), "1")])
def test_gc_is_off_during_samples_unless_kept(
    tmp_path: Path, flags: tuple[str, ...], enabled: str
) -> None:
    bench = tmp_path / "bench_gc.py"
    bench.write_text(GC_PROBE)
    probe = tmp_path / "probe.txt"
    done = run_worker(
        SYSTEM_PYTHON, str(bench), "--evaluations", "3", "--samples", "2", "--warmup", "0",
        "--output", str(tmp_path / "out"), *flags, env=clean_env(GC_PROBE_OUT=str(probe)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = probe.read_text().split(",")
    assert len(seen) == 6 and set(seen) == {enabled}  # every evaluation of both samples
    meta = json.loads((tmp_path / "out" / micro_format.META_FILE).read_text())
    assert meta["gc_disabled"] is (enabled == "0")


def test_user_prints_go_to_stderr_and_relative_paths_work(known: Path, tmp_path: Path) -> None:
    bench = known / "bench_noisy.py"
    bench.write_text("print('imported')\n\ndef bench_noisy():\n    print('called')\n")
    done = run_worker(
        SYSTEM_PYTHON, "known work/bench_noisy.py", "--evaluations", "2", "--samples", "2",
        "--output", "out dir", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "imported" in done.stderr and "called" in done.stderr
    assert (~side_rows(tmp_path / "out dir")["filler"]).sum() == 2


def test_budget_stops_the_samples(known: Path, tmp_path: Path) -> None:
    done = run_worker(
        SYSTEM_PYTHON, "knownver:aa_5us", "--path", str(known / "v_a"), "--budget", "0.2",
        "--evaluations", "10", "--warmup", "0", "--output", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / micro_format.META_FILE).read_text())
    assert meta["samples"] is None and meta["budget_s"] == 0.2
    assert len(side_rows(tmp_path)) >= 1


@pytest.mark.parametrize("python", PYTHONS)
def test_samples_record_their_cpu_time_and_run_delay(
    python: str, known: Path, tmp_path: Path
) -> None:
    """Around every sample the worker reads the process's CPU time and its run delay
    (docs/statistics.md, "Beside other work: CPU time"): for a function that computes,
    the two fill the sample's wall time however busy the machine is."""
    done = run_worker(
        python, "knownver:x2_100us", "--path", str(known / "v_a"), "--samples", "6",
        "--evaluations", "20", "--warmup", "1", "--output", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = side_rows(tmp_path)
    measured = rows.loc[~rows["filler"]]
    assert len(measured) == 6 and measured["cpu_ns"].notna().all()
    assert measured["runq_ns"].notna().all()  # Linux: /proc/thread-self/schedstat
    busy = (measured["cpu_ns"] + measured["runq_ns"]) / measured["duration_ns"]
    assert ((busy > 0.8) & (busy < 1.3)).all(), busy.tolist()


# ------------------------------------------------------------------ errors

BROKEN = """
class TimeBroken:
    params = [1, 2]

    def setup(self, n):
        if n == 2:
            raise ValueError("cannot set up n=2")

    def time_it(self, n):
        pass


class TimeNotHere:
    def setup(self):
        raise NotImplementedError

    def time_never(self):
        pass


def time_raises():
    raise KeyError("inside the function")
"""


def assert_reported(
    done: subprocess.CompletedProcess[str], out: Path, side: str, bench: str, phase: str, last: str
) -> None:
    """The error names the side, the benchmark and the traceback's last line, twice."""
    expected = f"side {side}, benchmark {bench!r}: {phase} failed: {last}"
    assert expected in done.stderr
    doc = json.loads((out / micro_format.ERROR_FILE).read_text())
    assert (doc["side"], doc["benchmark"], doc["phase"], doc["last_line"]) == (
        side,
        bench,
        phase,
        last,
    )
    with pytest.raises(ResultFileError, match=f"side {side}, benchmark"):
        side_rows(out, side)


@pytest.mark.parametrize("python", PYTHONS)
def test_import_error_names_side_benchmark_and_last_line(
    python: str, known: Path, tmp_path: Path
) -> None:
    out = tmp_path / "B"
    done = run_worker(
        python, str(known / "bench_known.py"), "--benchmark", "bench_5us", "--output", str(out),
        env=clean_env(DUET_PAIR="B"),
    )  # fmt: skip
    assert done.returncode == 1
    assert_reported(
        done, out, "B", "bench_5us", "import", "ModuleNotFoundError: No module named 'knownver'"
    )
    assert 'bench_known.py", line' in done.stderr  # where the import failed


@pytest.mark.parametrize("python", PYTHONS)
def test_exception_in_setup_of_one_combination(python: str, tmp_path: Path) -> None:
    (tmp_path / "bench_broken.py").write_text(BROKEN)
    out = tmp_path / "A"
    target = str(tmp_path / "bench_broken.py")
    ok = run_worker(python, target, "--benchmark", "TimeBroken.time_it(1)", "--samples", "1",
                    "--output", str(tmp_path / "ok"), env=clean_env(DUET_PAIR="A"))  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    done = run_worker(python, target, "--benchmark", "TimeBroken.time_it(2)", "--output", str(out),
                      env=clean_env(DUET_PAIR="A"))  # fmt: skip
    assert done.returncode == 1
    assert_reported(
        done, out, "A", "TimeBroken.time_it(2)", "setup", "ValueError: cannot set up n=2"
    )


def test_exception_in_the_function_while_sampling(tmp_path: Path) -> None:
    (tmp_path / "bench_broken.py").write_text(BROKEN)
    out = tmp_path / "B"
    done = run_worker(
        SYSTEM_PYTHON, str(tmp_path / "bench_broken.py"), "--benchmark", "time_raises",
        "--evaluations", "5", "--output", str(out), env=clean_env(DUET_PAIR="B"),
    )  # fmt: skip
    assert done.returncode == 1
    assert_reported(done, out, "B", "time_raises", "sample", "KeyError: 'inside the function'")


def test_setup_raising_not_implemented_skips(tmp_path: Path) -> None:
    (tmp_path / "bench_broken.py").write_text(BROKEN)
    done = run_worker(
        SYSTEM_PYTHON, str(tmp_path / "bench_broken.py"), "--benchmark", "TimeNotHere.time_never",
        "--output", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 4
    assert "setup skipped: NotImplementedError" in done.stderr


def test_api_errors_carry_the_workers_message(known: Path) -> None:
    with pytest.raises(MicroError, match=r"side \?, benchmark 'bench_5us': import failed: "
                       r"ModuleNotFoundError: No module named 'knownver'"):  # fmt: skip
        calibrate(SYSTEM_PYTHON, str(known / "bench_known.py"), "bench_5us")
    with pytest.raises(MicroError, match="does not exist or is not on PATH"):
        discover(str(known / "no-such-python"), "knownver")


# ------------------------------------------------------------------ duet run


def entry_point_shim(directory: Path) -> Path:
    """A dist-info that registers the micro parser, as `pip install -e .` does from pyproject.

    An editable install made before the parser existed has no entry point for it; this
    directory on PYTHONPATH adds one (a duplicate of the same target is harmless).
    """
    info = directory / "duetbench_micro_shim-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: duetbench-micro-shim\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(
        "[duetbench.parsers]\nmicro = duetbench.parse.micro:parse_micro\n"
    )
    return directory


def test_duet_run_with_the_worker_as_external_harness(
    known: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every method runs the worker as a harness that loops by itself; sduet: one go per sample."""
    sides = {}
    for pair, version in (("A", "v_a"), ("B", "v_b")):
        argv = worker_command(
            SYSTEM_PYTHON, "knownver:x2_5us", paths=[known / version], evaluations=5, samples=8
        )
        command = json.dumps(shlex.join(argv))  # a JSON string is a YAML scalar
        sides[pair] = f"    {pair}:\n      command: {command}\n      sync_command: {command}\n"
    config = tmp_path / "duet.yml"
    config.write_text(
        "experiment:\n  name: micro\n  repetitions: {seqn: 1, aduet: 1, sduet: 1}\n"
        "  timeout: 2m\n  default_artifacts: false\n"
        "benchmarks:\n  x2:\n    harness: micro\n    env: {PYTHONPATH: ''}\n"
        + sides["A"]
        + sides["B"]
    )
    shim = entry_point_shim(tmp_path / "shim")
    pythonpath = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH", "")) if p)
    done = run_cli(
        "run", str(config), "-o", str(tmp_path / "results"), env={"PYTHONPATH": pythonpath}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    monkeypatch.syspath_prepend(str(shim))
    report = process(tmp_path / "results" / "micro")
    table = report.table
    assert report.problems == [] and report.iterations_excluded == {"filler": 6}  # warm-ups
    assert table.groupby(["method", "pair"]).size().to_dict() == {
        (m, p): 8 for m in ("aduet", "seqn", "sduet") for p in "AB"
    }
    assert set(table["evaluations"]) == {5} and evaluation_mismatches(table) == []
    sduet = json.loads(
        next((tmp_path / "results" / "micro" / "runs").glob("x2.sduet.*/run.json")).read_text()
    )
    assert sduet["sync"]["go_count"] == 9  # the warm-up and eight samples, each after one go
