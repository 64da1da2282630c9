"""The examples under examples/: every config keeps planning, and what can run here runs.

- every `*duet*.yml` plans with `--executor local` (the suites' jars and images are not here);
- examples/pyperformance in miniature, locally and in Podman (both interpreters, all methods);
- examples/dacapo/callback/DuetCallback.java against a stand-in DaCapo harness API.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.helpers import ROOT, SETUP_HINT, lockstep_violations, require_tool, run_duet

from duetbench.config import load_config
from duetbench.parse.registry import get_parser
from duetbench.process import process

EXAMPLES = ROOT / "examples"
CONFIGS = sorted(p for p in EXAMPLES.rglob("*.yml") if "duet" in p.name)
IMAGE_RECIPES = ("Dockerfile", "Containerfile", "build-image.sh")
PYPERF_EXAMPLE = EXAMPLES / "pyperformance"
SYSTEM_PYTHON = Path("/usr/bin/python3")


def test_every_suite_has_an_example() -> None:
    names = {p.parent.name for p in CONFIGS}
    assert {"renaissance", "dacapo", "scalabench", "speccpu", "pyperformance"} <= names


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_config_plans(config: Path) -> None:
    """`duet plan --executor local` accepts every example, whatever executor it names."""
    r = run_duet("plan", str(config), "--executor", "local", "--format", "json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan, f"{config}: empty plan"
    exp = load_config(config)
    assert {run["benchmark"] for run in plan} == {b.name for b in exp.benchmarks}
    for bench in exp.benchmarks:
        if bench.harness != "command":  # an external harness: its parser must be registered
            get_parser(bench.harness)
        if any(side.image for _, side in bench.sides):
            folder = config.parent
            assert any((folder / name).exists() for name in IMAGE_RECIPES), (
                f"{config} uses an image but {folder} says nowhere how to build it "
                f"(none of {', '.join(IMAGE_RECIPES)})"
            )


def test_examples_readme_lists_every_example() -> None:
    text = (EXAMPLES / "README.md").read_text()
    for folder in sorted({p.parent for p in CONFIGS}):
        assert f"{folder.name}/" in text, f"examples/README.md does not mention {folder.name}/"


def _tiny_pyperf_config(tmp_path: Path) -> Path:
    """examples/pyperformance/duet.yml cut down to one benchmark and the fastest settings."""
    cfg = yaml.safe_load((PYPERF_EXAMPLE / "duet.yml").read_text())
    exp = cfg["experiment"]
    exp["name"] = "pyperf-tiny"
    exp["repetitions"] = {"seqn": 1, "aduet": 1, "sduet": 1}
    exp["timeout"] = "60s"
    exp["setup"] = f"sh {PYPERF_EXAMPLE / 'setup.sh'} check"
    cfg["defaults"]["workdir"] = str(PYPERF_EXAMPLE)  # the sides' `sh setup.sh` runs there
    bench = cfg["benchmarks"]["json"]
    for side in ("A", "B"):
        # 1 worker process: 1 warm-up + 2 values of 1 loop each
        bench[side]["command"] += " --processes 1 --warmups 1 --values 2 --loops 1"
    cfg["benchmarks"] = {"json": bench}
    path = tmp_path / "duet.yml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_pyperf_example_runs_both_interpreters(tmp_path: Path) -> None:
    if not SYSTEM_PYTHON.exists():
        pytest.fail("needs Debian's /usr/bin/python3 (side A): apt-get install python3")
    config = _tiny_pyperf_config(tmp_path)
    out = tmp_path / "results"
    r = run_duet("run", str(config), "-o", str(out), "--no-compare", timeout=540)
    assert r.returncode == 0, r.stdout + r.stderr
    root = out / "pyperf-tiny"

    report = process(root)
    assert report.problems == []
    table = report.table
    assert set(table["suite"]) == {"pyperf"}
    assert set(table["workload"]) == {"json"}
    assert not table["synthetic_ts"].any()  # pyperf's run dates place the values
    for method in ("seqn", "aduet", "sduet"):
        for pair in ("A", "B"):
            rows = table[(table["method"] == method) & (table["pair"] == pair)]
            assert len(rows) == 2, (method, pair, len(rows))  # 2 values; the warm-up is filler
            assert (rows["duration_ns"] > 0).all()
            assert (rows["end_ns"] > rows["start_ns"]).all()
    assert report.iterations_excluded.get("filler") == 6  # 1 warm-up in each of the 6 side-runs

    # sduet: every warm-up and value of both sides went through the barrier together
    sduet = json.loads((root / "runs" / "json.sduet.000" / "run.json").read_text())
    assert sduet["status"] == "ok"
    assert sduet["sync"]["go_count"] == 3

    # side A really ran /usr/bin/python3, side B the default python3
    seqn_a = json.loads((root / "runs" / "json.seqn.000.A" / "A" / "result.json").read_text())
    seqn_b = json.loads((root / "runs" / "json.seqn.000.B" / "B" / "result.json").read_text())
    expected_a = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert seqn_a["metadata"]["python_version"].startswith(expected_a + " ")
    default = shutil.which("python3")
    assert default is not None
    expected_b = subprocess.run(
        [default, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert seqn_b["metadata"]["python_version"].startswith(expected_b + " ")


@pytest.mark.container
def test_pyperf_podman_example_runs(tmp_path: Path) -> None:
    """duet.podman.yml in miniature: the minimal image with both interpreters and pyperf
    in it, nothing of this machine mounted but the example folder."""
    if not SYSTEM_PYTHON.exists():
        pytest.fail("needs Debian's /usr/bin/python3 (side A): apt-get install python3")
    require_tool("podman", f"apt-get install podman runc ({SETUP_HINT})")
    require_tool("busybox", f"apt-get install busybox-static ({SETUP_HINT})")
    text = (PYPERF_EXAMPLE / "duet.podman.yml").read_text()
    assert "/root" not in text and "pyenv" not in text and "site-packages" not in text
    cfg = yaml.safe_load(text)
    exp = cfg["experiment"]
    exp["name"] = "pyperf-podman-tiny"
    exp["repetitions"] = {"seqn": 1, "aduet": 1, "sduet": 1}
    exp["setup"] = f"sh {PYPERF_EXAMPLE / 'build-image.sh'}"
    mounts = cfg["defaults"]["mounts"]
    cfg["defaults"]["mounts"] = [m.replace(".:/bench", f"{PYPERF_EXAMPLE}:/bench") for m in mounts]
    bench = cfg["benchmarks"]["json"]
    for side in ("A", "B"):
        bench[side]["command"] += " --processes 1 --warmups 1 --values 2 --loops 1"
    cfg["benchmarks"] = {"json": bench}
    config = tmp_path / "duet.podman.yml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))

    # the executor checks the images before the experiment's setup runs: build it first
    subprocess.run(
        ["sh", str(PYPERF_EXAMPLE / "build-image.sh")], check=True, capture_output=True, timeout=300
    )
    out = tmp_path / "results"
    r = run_duet("run", str(config), "-o", str(out), "--no-compare", timeout=540)
    assert r.returncode == 0, r.stdout + r.stderr
    root = out / "pyperf-podman-tiny"
    report = process(root)
    assert report.problems == []
    table = report.table
    for method in ("seqn", "aduet", "sduet"):
        for pair in ("A", "B"):
            rows = table[(table["method"] == method) & (table["pair"] == pair)]
            assert len(rows) == 2, (method, pair, len(rows))
    sduet = json.loads((root / "runs" / "json.sduet.000" / "run.json").read_text())
    assert sduet["executor"] == "podman"
    assert sduet["sync"]["go_count"] == 3
    # side A ran Debian's interpreter, copied into the image as python-A
    seqn_a = json.loads((root / "runs" / "json.seqn.000.A" / "A" / "result.json").read_text())
    assert seqn_a["metadata"]["python_executable"] == "/usr/local/bin/python-A"
    expected_a = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert seqn_a["metadata"]["python_version"].startswith(expected_a + " ")


# ----------------------------------------------------------------------------- DaCapo callback

# Just enough of DaCapo's harness API (org.dacapo.harness.Callback as in 9.12-MR1 and
# later) to compile examples/dacapo/callback/DuetCallback.java and drive it the way the
# harness does: start(benchmark), the timed iteration, stop(duration ms), complete(...).
_STUB_ARGS = """
package org.dacapo.harness;
public class CommandLineArgs {}
"""
_STUB_CALLBACK = """
package org.dacapo.harness;
public class Callback {
  protected final CommandLineArgs args;
  boolean warm = true;
  public Callback(CommandLineArgs args) { this.args = args; }
  public boolean isWarmup() { return warm; }
  public void start(String benchmark) {}
  public void stop(long duration) {}
  public void complete(String benchmark, boolean valid) {}
  public void setWarmupForTest(boolean w) { warm = w; }
}
"""
_FAKE_HARNESS = """
public class FakeHarness {
  public static void main(String[] argv) {
    int n = Integer.parseInt(argv[0]);
    long work = Long.parseLong(argv[1]);
    DuetCallback cb = new DuetCallback(new org.dacapo.harness.CommandLineArgs());
    long sink = 0;
    for (int i = 0; i < n; i++) {
      cb.setWarmupForTest(i < n - 1);
      cb.start("fake");
      long t0 = System.currentTimeMillis();
      for (long k = 0; k < work; k++) { sink += k ^ (sink >>> 3); }
      cb.stop(System.currentTimeMillis() - t0);
      cb.complete("fake", true);
    }
    System.out.println(sink);
  }
}
"""


def test_dacapo_callback_writes_parser_csv_and_synchronizes(tmp_path: Path) -> None:
    require_tool("javac", f"apt-get install default-jdk-headless ({SETUP_HINT})")
    src = tmp_path / "src"
    (src / "org" / "dacapo" / "harness").mkdir(parents=True)
    (src / "org" / "dacapo" / "harness" / "CommandLineArgs.java").write_text(_STUB_ARGS)
    (src / "org" / "dacapo" / "harness" / "Callback.java").write_text(_STUB_CALLBACK)
    (src / "FakeHarness.java").write_text(_FAKE_HARNESS)
    shutil.copy(EXAMPLES / "dacapo" / "callback" / "DuetCallback.java", src)
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "-Xlint:all", "-Werror", "-d", str(classes), *map(str, src.rglob("*.java"))],
        check=True,
        capture_output=True,
        timeout=120,
    )
    iterations = 5
    # a small JVM (one GC thread, C1 only, 64 MB heap): six of them on a busy 2-core machine
    command = (
        f"java -Xshare:auto -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx64m "
        f"-Dduet.results=results.csv -cp {classes} FakeHarness {iterations} 3000000"
    )
    config = tmp_path / "duet.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "experiment": {
                    "name": "dacapo-callback",
                    "seed": 1,
                    "repetitions": {"seqn": 1, "aduet": 1, "sduet": 1},
                    "timeout": "120s",
                },
                "benchmarks": {
                    "fake": {
                        "harness": "dacapo",
                        "command": command,
                        "results": ["results.csv"],
                        "self_sync": True,
                    }
                },
            }
        )
    )
    out = tmp_path / "results"
    r = run_duet("run", str(config), "-o", str(out), "--no-compare", timeout=540)
    assert r.returncode == 0, r.stdout + r.stderr
    root = out / "dacapo-callback"
    report = process(root)
    assert report.problems == []
    table = report.table
    assert not table["synthetic_ts"].any()  # start_unix is there: real timestamps
    for method in ("seqn", "aduet", "sduet"):
        for pair in ("A", "B"):
            rows = table[(table["method"] == method) & (table["pair"] == pair)]
            assert list(rows["iteration"]) == list(range(iterations))
            warm = [str(v).lower() for v in rows["harness_warmup"]]
            assert warm == ["true"] * (iterations - 1) + ["false"]
            assert set(rows["workload"]) == {"fake"}
            # the callback's nanoTime window encloses the harness's own: at least its
            # milliseconds (each of its two clock reads truncates less than 1 ms)
            assert (rows["duration_ns"] / 1e6 > rows["total_ms"] - 1).all()
            assert (rows["duration_ns"] > 0).all()
    sduet = json.loads((root / "runs" / "fake.sduet.000" / "run.json").read_text())
    assert sduet["status"] == "ok"
    assert sduet["sync"]["go_count"] == iterations
    # synchronized: no side starts iteration k+1 before the other ended iteration k (the
    # start is the callback's currentTimeMillis: 1 ms of slack)
    sd = table[table["method"] == "sduet"].sort_values("iteration")
    a, b = (sd[sd["pair"] == p] for p in "AB")
    assert lockstep_violations(a.start_ns, a.end_ns, b.start_ns, b.end_ns, 1_000_000) == []
