"""`duet micro` end to end on the known-work package of examples/micro.

Version B of ``knownver`` does an exact multiple of version A's work, so the
expected ratio is known. The estimates are the minimum-based ones `duet micro`
uses by default (the minimum of samples is what load cannot lower); nothing here
depends on how fast the machine is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from tests.conftest import run_duet

from duetbench.cli import main
from duetbench.micro.calibration import Calibration
from duetbench.micro.request import MicroRequest, build_experiment, run_time_s, side_target
from duetbench.store import ResultsStore

TIMEOUT_S = 900  # catches a hang, never a slow machine


def micro(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`duet micro`, every run kept (what these tests check is the measurement: a busy
    machine makes sduet runs unbalanced, which the analysis would leave out)."""
    return run_duet("micro", *args, "--keep-unbalanced", cwd=cwd, timeout=TIMEOUT_S, env=env)


def test_known_2x_measured_with_each_method(known: Path) -> None:
    done = micro(
        "knownver:x2_100us",
        "--a-path", "v_a", "--b-path", "v_b",  # relative, from the working directory
        "--method", "sduet", "--method", "aduet", "--method", "seqn",
        "--runs", "12", "--samples", "300", "--format", "json",
        cwd=known,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {r["run_stat"] for r in doc["rows"]} == {"min"}  # the micro default
    ratios = {r["method"]: 1 + r["change"] for r in doc["rows"]}
    assert set(ratios) == {"sduet", "aduet", "seqn"}
    print(f"known 2x: {ratios}")
    # The goal: 2.0 within 3 %. 12 runs (seqn: 6 of each side) read 1.99-2.05 with
    # every method in 10 of 10 tries on 2026-11-26, 4 of them beside two busy loops
    # (docs/micro.md, "Measured here"). The duets hold it on a VM whose two vCPUs run at
    # different speeds too (their sides swap CPUs, docs/micro.md, "Placement"); seqn
    # times A and B at different moments: on such a VM 6 runs of it read 1.82-2.10, so its
    # bound is wider: it catches a wrong count or a lost side, not a slow vCPU.
    # On 2026-11-29 the same VM, quiet, read aduet 2.05-2.16, sduet 1.99-2.09 and seqn
    # 1.76-1.98 in three tries of this test, on this code and on the code before it (and
    # sduet 1.936 in a CI run: its runs' minima 1.82-2.08): its vCPUs' speeds then moved
    # within a run faster than the sides swap CPUs (seqn, whose sides never meet, 1.66 in
    # a CI run). So here the bounds catch a wrong count, a lost side or a swapped ratio,
    # not a slow vCPU: 2.0 within 10 % (seqn 25 %).
    for method in ("aduet", "sduet"):
        assert ratios[method] == pytest.approx(2.0, rel=0.10), (method, ratios)
    assert ratios["seqn"] == pytest.approx(2.0, rel=0.25), ratios
    assert {r["verdict"] for r in doc["rows"]} == {"slower"}
    # pinned duets took turns on both CPUs (docs/micro.md, "Placement")
    metas = list((known / "results" / "micro" / "runs").glob("*/*/micro-meta.json"))
    swaps = [json.loads(m.read_text()).get("cpu_swap") for m in metas]
    assert len(swaps) == 2 * 2 * 12 + 12 and all(s is None or s["error"] is None for s in swaps)
    assert sum(s is not None for s in swaps) == 2 * 2 * 12  # the duets; seqn runs one side
    # a normal results directory: duet compare reads it, with the same default
    again = run_duet(
        "compare", str(known / "results" / "micro"), "--format", "json", "--keep-unbalanced"
    )
    assert again.returncode == 0, again.stderr
    assert {r["run_stat"] for r in json.loads(again.stdout)["rows"]} == {"min"}


def test_a_a_says_same_and_compare_takes_the_micro_default(known: Path) -> None:
    done = micro(
        "knownver:aa_100us", "--a-path", "v_a", "--b-path", "v_a",
        "--runs", "6", "--samples", "40", "--name", "aa", "--format", "table",
        cwd=known,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    root = known / "results" / "aa"
    # a 99.9 % interval: a true A/A is called slower or faster in 1 of 1000 experiments
    out = run_duet(
        "compare", str(root), "--format", "json", "--confidence", "0.999", "--keep-unbalanced"
    )
    doc = json.loads(out.stdout)
    assert [r["verdict"] for r in doc["rows"]] == ["no change detected"]
    config = ResultsStore.open(root).experiment()["config"]
    assert [b["aa"] for b in config["benchmarks"]] == [True]  # one tree on both sides
    median = run_duet("compare", str(root), "--format", "json", "--run-stat", "median")
    assert json.loads(median.stdout)["settings"]["run_stat"] == "median"  # a flag wins


def test_asv_suite_one_benchmark_per_parameter_combination(known: Path) -> None:
    done = micro(
        "--asv", "asv_suite/benchmarks", "--a-path", "v_a", "--b-path", "v_b",
        "-k", "TimeKnown", "--runs", "1", "--samples", "3", "--method", "aduet",
        "--format", "json",
        cwd=known,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = sorted(r["benchmark"] for r in json.loads(done.stdout)["rows"])
    expected = sorted(
        f"bench_known.TimeKnown.time_work-{v}-{s}"
        for v in ("aa", "p10", "x2")
        for s in ("5us", "100us")
    )
    assert names == expected
    config = ResultsStore.open(known / "results" / "micro").experiment()["config"]
    workers = {b["micro"]["sides"][0][1]["benchmark"] for b in config["benchmarks"]}
    assert "bench_known.TimeKnown.time_work('x2', '100us')" in workers


def test_import_error_in_one_side_names_side_benchmark_and_last_line(
    known: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken tree"
    broken.mkdir()
    (broken / "knownver.py").write_text("raise RuntimeError('half-built checkout')\n")
    done = micro(
        "knownver:x2_100us", "--a-path", "v_a", "--b-path", str(broken), "--samples", "3",
        cwd=known,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    err = done.stderr
    assert "side B" in err and "x2_100us" in err
    assert "RuntimeError: half-built checkout" in err
    assert "Traceback" not in err  # a message, not a crash
    assert not (known / "results" / "micro").exists()  # nothing ran


def test_exception_in_setup_of_side_a_is_an_error_before_any_run(known: Path) -> None:
    bench = known / "bench_setup.py"
    bench.write_text(
        "import knownver\n\n"
        "class TimeIt:\n"
        "    def setup(self):\n"
        "        if knownver.FACTORS['x2'] == (1, 1):\n"
        "            raise ValueError('no fixture for version A')\n\n"
        "    def time_it(self):\n"
        "        knownver.aa_5us()\n"
    )
    done = micro("bench_setup.py", "--a-path", "v_a", "--b-path", "v_b", cwd=known)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "side A" in done.stderr and "TimeIt.time_it" in done.stderr
    assert "ValueError: no fixture for version A" in done.stderr


def test_two_implementations_in_one_tree(known: Path) -> None:
    done = micro(
        "--a", "knownver:aa_100us", "--b", "knownver:x2_100us", "--a-path", "v_b",
        "--b-path", "v_b", "--runs", "2", "--samples", "30", "--format", "json",
        cwd=known,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["benchmark"] == "aa_100us"
    # B timed the other implementation (2x the work): about 2x (2 runs are too few for a
    # verdict; sduet reads 2x as up to 2.35 on a quiet 2-CPU host, docs/micro.md,
    # "Measured here"); the accuracy is the known-2x test's. Swapped targets read ~0.5
    assert 1.6 < 1 + row["change"] < 2.6


@pytest.mark.parametrize("method", ["sduet", "inproc"])
def test_resume_reuses_the_stored_calibration(known: Path, tmp_path: Path, method: str) -> None:
    """A module that logs every calibration it takes part in: --resume adds none, and
    the resumed run gets the command of the first (inproc: the one timing both sides)."""
    log = tmp_path / "calibrations.log"
    for version in ("v_a", "v_b"):
        source = known / version / "knownver.py"
        source.write_text(
            "import os as _os, sys as _sys\n"
            "if '--calibrate-only' in _sys.argv:\n"
            "    with open(_os.environ['CAL_LOG'], 'a') as _f:\n"
            f"        _f.write('{version}\\n')\n" + source.read_text()
        )
    env = {"CAL_LOG": str(log)}
    args = ("knownver:p3_100us", "--a-path", "v_a", "--b-path", "v_b", "--runs", "2",
            "--method", method)  # fmt: skip
    first = micro(*args, "--samples", "5", cwd=known, env=env)
    assert first.returncode == 0, first.stderr
    assert sorted(log.read_text().split()) == ["v_a", "v_b"]
    root = known / "results" / "micro"
    store = ResultsStore.open(root)
    (stored,) = store.micro_calibrations().values()
    evaluations = Calibration.from_json(json.loads(stored["A"])).evaluations
    # lose one finished run, as if interrupted before it, and resume
    lost = sorted(store.run_ids())[-1]
    shutil.rmtree(store.run_dir(lost))
    journal = root / "journal.jsonl"
    journal.write_text(
        "".join(line for line in journal.read_text().splitlines(True) if lost not in line)
    )
    again = micro(*args, "--samples", "5", "--resume", cwd=known, env=env)
    assert again.returncode == 0, again.stderr
    assert sorted(log.read_text().split()) == ["v_a", "v_b"]  # no new calibration
    spec = json.loads((store.run_dir(lost) / "run.json").read_text())["spec"]
    assert f"--evaluations {evaluations}" in spec["sides"][0]["command"]
    assert ("--pair-target" in spec["sides"][0]["command"]) == (method == "inproc")
    shown = run_duet("compare", str(root), "--format", "json", "--keep-unbalanced")
    assert json.loads(shown.stdout)["rows"][0]["runs"] == 2, shown.stderr


def test_budget_is_per_benchmark_and_method_split_over_runs() -> None:
    """--budget means what it means for duet run: machine time per benchmark x method."""
    request = MicroRequest.create(
        target="m:f", asv=None, a_target=None, b_target=None, a_python=None, b_python=None,
        a_paths=None, b_paths=None, methods=["sduet", "seqn"], budget_s=60.0, runs=5,
    )  # fmt: skip
    # 60 s / 5 runs = 12 s a run, less its start-up, whatever the benchmarks and methods
    assert run_time_s(request) == pytest.approx(12.0 - 0.5)
    tiny = replace(request, budget_s=0.01)
    assert run_time_s(tiny) > 0  # never zero, however small the budget


def _trees(root: Path) -> None:
    """hidmod.py inside two source trees only, B's doing twice A's work."""
    for side, steps in (("a", 2000), ("b", 4000)):
        tree = root / f"tree {side}"
        tree.mkdir(parents=True)
        (tree / "hidmod.py").write_text(
            "def bench_steps():\n"
            "    x = 1\n"
            f"    for _ in range({steps}):\n"
            "        x = (x * 5 + 1) & 0xFFFF\n"
            "    return x\n"
        )


def test_a_file_target_is_taken_from_each_sides_tree(tmp_path: Path) -> None:
    _trees(tmp_path)
    request = MicroRequest.create(
        target="hidmod.py:bench_steps", asv=None, a_target=None, b_target=None,
        a_python=None, b_python=None, a_paths=["tree a"], b_paths=["tree b"],
    )  # fmt: skip
    assert side_target(request, "A", tmp_path) == str(tmp_path / "tree a" / "hidmod.py") + (
        ":bench_steps"
    )
    assert side_target(request, "B", tmp_path) == str(tmp_path / "tree b/hidmod.py:bench_steps")
    # one in the working directory wins: both sides take it
    (tmp_path / "hidmod.py").write_text("def bench_steps():\n    return 1\n")
    for pair in "AB":
        assert side_target(request, pair, tmp_path) == str(tmp_path / "hidmod.py:bench_steps")
    assert side_target(replace(request, a_target="m:f"), "A", tmp_path) == "m:f"  # a module


def test_a_target_found_nowhere_names_the_side_and_the_paths_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _trees(tmp_path)
    (tmp_path / "tree a" / "hidmod.py").unlink()
    monkeypatch.chdir(tmp_path)
    status = main(["micro", "hidmod.py", "--a-path", "tree a", "--b-path", "tree b"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "side A: hidmod.py: no such file or directory" in err
    assert f"{tmp_path / 'hidmod.py'}, {tmp_path / 'tree a' / 'hidmod.py'}" in err
    assert "side ?" not in err and "Traceback" not in err


def test_duet_micro_times_the_file_of_each_tree(tmp_path: Path) -> None:
    """`duet micro hidmod.py --a-path a --b-path b` with the file only in the trees: a target
    file is looked for in each side's tree, not in the current directory."""
    _trees(tmp_path)
    done = micro(
        "hidmod.py", "--a-path", "tree a", "--b-path", "tree b", "--method", "seqn",
        "--runs", "2", "--samples", "10", "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["benchmark"] == "bench_steps"
    store = ResultsStore.open(tmp_path / "results" / "micro")
    commands = {}
    for run_id in store.run_ids():  # seqn: one side per run
        (side,) = json.loads((store.run_dir(run_id) / "run.json").read_text())["spec"]["sides"]
        commands[side["pair"]] = side["command"]
    assert str(tmp_path / "tree a" / "hidmod.py") in commands["A"], commands
    assert str(tmp_path / "tree b" / "hidmod.py") in commands["B"], commands


def test_stored_calibration_is_used_instead_of_calibrating(known: Path) -> None:
    """build_experiment with a stored calibration: the count comes from it."""
    stored_a = {
        "evaluations": 7, "told": False, "target_ns": 1_000_000, "per_evaluation_ns": 1.5e5,
        "resolution_ns": 30, "timer_overhead_ns": 30.0, "call_overhead_ns": 40.0,
    }  # fmt: skip
    request = MicroRequest.create(
        target="knownver:x2_100us", asv=None, a_target=None, b_target=None,
        a_python=None, b_python=None, a_paths=[str(known / "v_a")],
        b_paths=[str(known / "v_b")], samples=4,
    )  # fmt: skip
    text = json.dumps(stored_a)
    exp = build_experiment(request, stored={"x2_100us": {"A": text, "B": text}})
    (bench,) = exp.benchmarks
    assert bench.micro is not None and bench.micro.evaluations == 7
    for _, side in bench.sides:
        assert "--evaluations 7" in side.command and "--samples 4" in side.command
        # 7 x 150 us a sample: 50 samples are 52 ms, so the 0.1 s floor of a CPU period
        assert "--swap-every 0.1 " in side.command
    unswapped = build_experiment(
        replace(request, cpu_swap=False), stored={"x2_100us": {"A": text, "B": text}}
    )
    assert unswapped.benchmarks[0].micro.cpu_swap is False  # type: ignore[union-attr]
    assert all("--swap-every" not in s.command for _, s in unswapped.benchmarks[0].sides)


# ------------------------------------------------------------------ harness: python in duet.yml


def write_config(directory: Path, benchmarks: str) -> Path:
    config = directory / "duet.yml"
    config.write_text(
        "experiment:\n  name: mixed\n  repetitions: {sduet: 2, aduet: 0, seqn: 0}\n"
        "  default_artifacts: false\nbenchmarks:\n" + benchmarks
    )
    return config


def test_python_benchmarks_and_commands_in_one_experiment(known: Path) -> None:
    config = write_config(
        known,
        "  x2:\n    harness: python\n    target: knownver:x2_100us\n    iterations: 40\n"
        "    A: {path: v_a}\n    B: {path: v_b}\n"
        "  suite:\n    harness: micro\n    target: asv_suite/benchmarks\n"
        "    benchmark: \"bench_known.TimeKnown.time_work('aa', '5us')\"\n"
        "    time_budget: 0.2s\n    A: {path: [v_a]}\n    B: {path: [v_b]}\n"
        "  shell:\n    command: 'true'\n    iterations: 3\n",
    )
    done = run_duet("run", str(config), "-o", str(known / "out"), cwd=known.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    root = known / "out" / "mixed"
    out = run_duet("compare", str(root), "--format", "json", "--keep-unbalanced")
    rows = {r["benchmark"]: r for r in json.loads(out.stdout)["rows"]}
    assert set(rows) == {"x2", "suite", "shell"}
    # the python benchmark measured B's doubled work as clearly slower (the last row:
    # sduet, which read 2x as up to 2.35 on a quiet 2-CPU host and 3.01 beside three
    # other test suites, docs/measurements/micro-known-answers.md); a lost or swapped
    # side would read 1x or 0.5x
    assert 1.5 < 1 + rows["x2"]["change"] < 4.0
    assert rows["x2"]["verdict"] != "faster"
    assert set(ResultsStore.open(root).micro_calibrations()) == {"x2", "suite"}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "  f:\n    harness: python\n    command: ./bench\n    target: m:f\n",
            "`command` has no place",
        ),
        ("  f:\n    harness: python\n    A: {path: a}\n", "has no `target` for side A"),
        ("  f:\n    command: ./bench\n    target: m:f\n", "`target` is for `harness: python`"),
        ("  f:\n    command: ./bench\n    A: {python: p}\n", "`A.python` is for `harness: python`"),
        (
            "  f:\n    command: ./bench\n    cpu_swap: false\n",
            "`cpu_swap` is for `harness: python`",
        ),
    ],
)
def test_python_benchmark_config_errors(tmp_path: Path, entry: str, message: str) -> None:
    from duetbench.config import load_config
    from duetbench.errors import ConfigError

    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_config(write_config(tmp_path, entry))


def test_a_small_budget_still_gives_every_run_ten_samples(known: Path) -> None:
    """The run time comes from the budget, but never below 10 samples of the slower side."""
    stored_b = {
        "evaluations": 1, "told": False, "target_ns": 1_000_000, "per_evaluation_ns": 4e7,
        "resolution_ns": 30, "timer_overhead_ns": 30.0, "call_overhead_ns": 40.0,
    }  # fmt: skip
    stored_a = {**stored_b, "per_evaluation_ns": 2e7}
    request = MicroRequest.create(
        target="knownver:x2_5ms", asv=None, a_target=None, b_target=None,
        a_python=None, b_python=None, a_paths=[str(known / "v_a")],
        b_paths=[str(known / "v_b")], budget_s=1.0, runs=10,
    )  # fmt: skip
    stored = {"x2_5ms": {"A": json.dumps(stored_a), "B": json.dumps(stored_b)}}
    (bench,) = build_experiment(request, stored=stored).benchmarks
    # 1 s / 10 runs would be 0.05 s; B's 40 ms samples x 10 = 0.4 s
    assert "--budget 0.4" in bench.side("A").command


def test_duet_run_resume_takes_the_calibration_from_the_results_directory(
    known: Path, tmp_path: Path
) -> None:
    """prepare_experiment (what `duet run` calls): --resume reads experiment.json's calibration."""
    from duetbench.config import load_config
    from duetbench.micro.experiment import prepare_experiment

    config = write_config(
        known,
        "  x2:\n    harness: python\n    target: knownver:x2_100us\n    iterations: 5\n"
        "    A: {path: v_a}\n    B: {path: v_b}\n",
    )
    exp = load_config(config)
    stored = {
        "evaluations": 777, "told": False, "target_ns": 1_000_000, "per_evaluation_ns": 8e4,
        "resolution_ns": 30, "timer_overhead_ns": 30.0, "call_overhead_ns": 40.0,
    }  # fmt: skip
    (bench,) = exp.benchmarks
    assert bench.micro is not None
    text = json.dumps(stored)
    calibrated = replace(bench, micro=replace(bench.micro, calibrations=(("A", text), ("B", text))))
    ResultsStore.create(
        tmp_path / "out" / "mixed", replace(exp, benchmarks=(calibrated,)).to_dict(), []
    )
    resumed = prepare_experiment(exp, tmp_path / "out", resume=True)
    assert "--evaluations 777" in resumed.benchmarks[0].side("B").command
    fresh = prepare_experiment(exp, tmp_path / "elsewhere", resume=True)  # nothing stored there
    assert "--evaluations 777" not in fresh.benchmarks[0].side("B").command


def test_asv_modules_that_fail_to_import_are_named_and_fail_a_gate(known: Path) -> None:
    """docs/micro.md: a suite module is never silently dropped; --fail-on-regression fails
    on a broken suite."""
    (known / "asv_suite" / "benchmarks" / "broken_mod.py").write_text(
        "import module_that_is_not_there\n\ndef time_x():\n    pass\n"
    )
    args = (
        "--asv", "asv_suite/benchmarks", "--a-path", "v_a", "--b-path", "v_b",
        "-k", "*time_work('aa', '5us')", "--runs", "1", "--samples", "3", "--method", "aduet",
    )  # fmt: skip
    done = micro(*args, cwd=known)
    assert done.returncode == 0, done.stderr
    assert "broken_mod" in done.stderr and "No module named 'module_that_is_not_there'" in (
        done.stderr.replace("\n", " ")
    )
    failing = micro(*args, "--fail-on-regression", "--name", "gate", cwd=known)
    assert failing.returncode == 1 and "failed to import" in failing.stderr, failing.stderr


@pytest.mark.parametrize("name", ["<script>", "x$(touch X)", "dot..", "a/b", "", "x" * 101])
def test_a_name_that_cannot_name_the_results_directory_is_refused(
    tmp_path: Path, name: str
) -> None:
    """--name follows the rule of a config's experiment name (it names OUTPUT/<name>)."""
    r = micro("m:f", "--name", name, "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2 and "--name" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "X").exists() and not (tmp_path / "out").exists()
